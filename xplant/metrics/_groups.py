"""Ranking metrics of one group of labels (zero-shot, few-shot, ...), defined once."""

import numpy as np
import scipy.sparse as sp

from ._ranking import _top_k, ndcg_at_k, recall_at_k
from ._validation import check_binary, check_k, check_scores, check_top_k


def _group_mask(labels, n_labels):
    labels = np.asarray(labels)
    if labels.dtype == bool:
        if labels.shape != (n_labels,):
            raise ValueError(f"a boolean group mask must have shape ({n_labels},); got {labels.shape}")
        return labels
    labels = labels.astype(np.int64, copy=False).ravel()
    if labels.size and (labels.min() < 0 or labels.max() >= n_labels):
        raise ValueError(f"group label indices must be in [0, {n_labels}); got {labels.min()}..{labels.max()}")
    mask = np.zeros(n_labels, dtype=bool)
    mask[labels] = True
    return mask


def group_ranking_metrics(y_true, y_score=None, labels=None, *, k=5, y_top_k=None):
    """R@k and nDCG@k of one label group, with the group's labels ranked alone.

    For each document with at least one gold label in the group, the ranking
    keeps only the group's labels (``R@k``, ``nDCG@k``); beside them,
    ``R@k_full`` is the share of the document's gold group labels found in
    the top k of the full ranking (all labels competing). Documents without
    a gold label in the group are left out of all three.

    Parameters
    ----------
    y_true : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True labels, 0/1.
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels), default=None
        Needed for the group-restricted ranking.
    labels : array-like of int, or bool mask of shape (n_labels,)
        The group's label columns (for example
        :func:`xplant.model_selection.zero_shot_labels` of the training
        frequencies).
    k : int, default=5
        Cut-off of the three metrics.
    y_top_k : ndarray of shape (n_samples, >=k), int, default=None
        Instead of ``y_score``: the full ranking's top labels. Only
        ``R@k_full`` can then be computed; the restricted metrics are NaN.

    Returns
    -------
    dict
        ``"R@k"``, ``"nDCG@k"``, ``"R@k_full"`` (floats in [0, 1], NaN when
        no document has a gold label in the group), ``"n_documents"`` (the
        documents averaged over) and ``"n_labels"`` (the group's size), with
        k written out (``"R@5"``).

    Raises
    ------
    ValueError
        Without ``y_score`` and ``y_top_k``, with both, or for group indices
        out of range.

    Notes
    -----
    One implementation for every table: it calls :func:`recall_at_k` and
    :func:`ndcg_at_k` on the group's columns, so the conventions (ties broken
    by lower index, ``1/|y|`` recall) are those of the full metrics.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 0, 1], [1, 0, 0]])
    >>> S = np.array([[.9, .8, .1], [.9, .2, .1]])
    >>> m = group_ranking_metrics(Y, S, [2], k=1)   # label 2 ranks last overall, first in its group
    >>> m["R@1"], m["R@1_full"], m["n_documents"]
    (1.0, 0.0, 1)
    """
    if (y_score is None) == (y_top_k is None):
        raise ValueError("give exactly one of y_score and y_top_k")
    k = check_k(k, "k")
    Y = sp.csr_matrix(check_binary(y_true))
    n, L = Y.shape
    mask = _group_mask(labels, L)
    cols = np.flatnonzero(mask)
    Yg = Y[:, cols]
    rows = np.flatnonzero(np.diff(Yg.indptr) > 0)
    out = {f"R@{k}": float("nan"), f"nDCG@{k}": float("nan"), f"R@{k}_full": float("nan"),
           "n_documents": int(rows.size), "n_labels": int(cols.size)}
    if rows.size == 0:
        return out
    if y_score is not None:
        S = check_scores(y_score, Y.shape)
        S = S[rows]
        top = _top_k(S, k)[0]
        Sg = S[:, cols]
        kg = min(k, cols.size)
        out[f"R@{k}"] = recall_at_k(Yg[rows], Sg, k=kg)
        out[f"nDCG@{k}"] = ndcg_at_k(Yg[rows], Sg, k=kg)
    else:
        top = check_top_k(y_top_k, n, L, k)[rows, :k]
    # gold outside the group is removed, so recall counts the group's gold labels only
    Y_only = sp.csr_matrix(Y[rows].multiply(mask[None, :].astype(np.int64)))
    out[f"R@{k}_full"] = recall_at_k(Y_only, y_top_k=top, k=k)
    return out
