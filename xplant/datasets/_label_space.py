"""Align evaluation labels to a model's fixed label space, and say what was lost."""

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch


def align_label_space(model_labels, Y, labels):
    """Re-index a label matrix onto a model's label space, keeping unknown labels.

    A model's label space is fixed at fit time (``classes_``). Evaluation
    data may hold labels the model never saw. Those positives are not
    dropped: they are kept in extra columns after the model's own, so that
    recall-type metrics count them as misses (the model never ranks them).

    Parameters
    ----------
    model_labels : array-like of str of shape (n_model_labels,)
        The model's ``classes_``.
    Y : {ndarray, sparse matrix} of shape (n_docs, n_labels)
        Evaluation labels, 0/1.
    labels : array-like of str of shape (n_labels,)
        The names of ``Y``'s columns.

    Returns
    -------
    Bunch
        Y : csr_matrix of shape (n_docs, n_model_labels + n_unknown), int64
            Columns ``[0, n_model_labels)`` follow ``model_labels``; the
            unknown labels follow, in the order of ``labels``.
        label_names : ndarray of str
            ``model_labels``, then the unknown labels.
        n_known : int
            ``n_model_labels``.
        unknown_labels : ndarray of str
            Labels of ``Y`` unknown to the model that have at least one
            positive.
        n_unknown_positives : int
            Positives that the model cannot predict.
        n_docs_with_unknown : int
            Documents with at least one such positive.
        unseen_model_labels : int
            Model labels absent from ``labels``.

    Raises
    ------
    ValueError
        If ``labels`` has duplicates or does not match ``Y``'s width.

    Examples
    --------
    >>> import numpy as np
    >>> r = align_label_space(["A", "B"], np.array([[1, 0, 1], [0, 1, 0]]), ["B", "A", "Z"])
    >>> r.Y.toarray().tolist(), r.label_names.tolist(), r.n_unknown_positives
    ([[0, 1, 1], [1, 0, 0]], ['A', 'B', 'Z'], 1)
    """
    model_labels = np.asarray(model_labels).astype(str)
    labels = np.asarray(labels).astype(str)
    Y = sp.csc_matrix(Y, copy=True)
    Y.eliminate_zeros()
    if Y.shape[1] != len(labels):
        raise ValueError(f"Y has {Y.shape[1]} columns but {len(labels)} label names were given")
    if len(set(labels)) != len(labels):
        raise ValueError("labels has duplicate names")
    index = {n: j for j, n in enumerate(model_labels)}
    if len(index) != len(model_labels):
        raise ValueError("model_labels has duplicate names")
    counts = np.diff(Y.indptr)
    unknown = [j for j, n in enumerate(labels) if n not in index and counts[j] > 0]
    target = np.full(len(labels), -1, dtype=np.int64)
    for j, n in enumerate(labels):
        if n in index:
            target[j] = index[n]
    target[unknown] = len(model_labels) + np.arange(len(unknown))
    coo = Y.tocoo()
    keep = target[coo.col] >= 0
    out = sp.csr_matrix(
        (np.ones(int(keep.sum()), dtype=np.int64), (coo.row[keep], target[coo.col[keep]])),
        shape=(Y.shape[0], len(model_labels) + len(unknown)),
    )
    out.sum_duplicates()
    out.data[:] = 1
    unknown_cols = out[:, len(model_labels):]
    return Bunch(
        Y=out,
        label_names=np.concatenate([model_labels, labels[unknown]]),
        n_known=len(model_labels),
        unknown_labels=labels[unknown],
        n_unknown_positives=int(unknown_cols.nnz),
        n_docs_with_unknown=int(np.count_nonzero(np.diff(unknown_cols.tocsr().indptr))),
        unseen_model_labels=int(len(set(model_labels) - set(labels))),
    )


def with_outside_labels(space, split_labels):
    """A split's columns: the label space, then the split's own labels outside it.

    Every loader builds its label space from what a user can know (the
    labelled training and dev splits, a catalogue) and the same for every
    split; a split's labels outside that space (codes only test holds)
    follow it as extra columns, which no model ranks, so every metric counts
    their positives as misses.

    Parameters
    ----------
    space : array-like of str of shape (n_space,)
        The label space, in its order.
    split_labels : array-like of str
        The labels the split's documents carry (any order, repeats allowed).

    Returns
    -------
    names : ndarray of str of shape (n_space + n_outside,)
        ``space``, then the split's labels outside it, sorted.
    outside : ndarray of str of shape (n_outside,)
        Those labels.

    Examples
    --------
    >>> names, outside = with_outside_labels(["A", "B"], ["Z", "B", "C", "Z"])
    >>> names.tolist(), outside.tolist()
    (['A', 'B', 'C', 'Z'], ['C', 'Z'])
    """
    space = np.asarray(space).astype(str)
    own = np.unique(np.asarray(list(split_labels), dtype=str))
    outside = own[~np.isin(own, space)]
    return np.concatenate([space, outside]), outside
