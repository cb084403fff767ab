"""Shared building blocks of the loaders: label binarisation and the Bunch.

Every loader in :mod:`xplant.datasets` ends in :func:`make_bunch`, so that all
of them return the same shape: ``texts``, a CSR ``Y`` with one fixed label
space, ``label_names``, ``ids``, ``label_frequency`` and a ``record`` of what
was done.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch


def binarize(label_lists, label_names):
    """Turn per-document label lists into a {0, 1} CSR matrix.

    Parameters
    ----------
    label_lists : sequence of sequences of str
        The labels of each document; duplicates within a document count once.
    label_names : ndarray of str of shape (n_labels,)
        The fixed label space, sorted; every label in ``label_lists`` must be
        in it.

    Returns
    -------
    Y : csr_matrix of shape (n_docs, n_labels), dtype int64
        Values 1, sorted indices, no explicit zeros.
    n_duplicates : int
        How many (document, label) pairs were repeated and counted once.

    Raises
    ------
    ValueError
        If a label is not in ``label_names``.

    Examples
    --------
    >>> Y, dup = binarize([["B", "A", "B"], []], np.array(["A", "B"]))
    >>> Y.toarray().tolist(), dup
    ([[1, 1], [0, 0]], 1)
    """
    index = {name: j for j, name in enumerate(label_names)}
    indptr = [0]
    indices = []
    n_duplicates = 0
    for i, labels in enumerate(label_lists):
        try:
            cols = sorted({index[lab] for lab in labels})
        except KeyError as exc:
            raise ValueError(
                f"document {i} has label {exc.args[0]!r}, which is not in the label space"
            ) from None
        n_duplicates += len(labels) - len(cols)
        indices.extend(cols)
        indptr.append(len(indices))
    indices = np.asarray(indices, dtype=np.int64)
    Y = sp.csr_matrix(
        (np.ones(len(indices), dtype=np.int64), indices, np.asarray(indptr, dtype=np.int64)),
        shape=(len(indptr) - 1, len(label_names)),
    )
    Y.has_sorted_indices = True
    return Y, n_duplicates


def make_bunch(texts, label_lists, ids, label_names, record, return_X_y=False, sorted_names=True,
               **extra):
    """Assemble the standard loader output.

    Parameters
    ----------
    texts : list of str
    label_lists : list of list of str
    ids : sequence of str
    label_names : sequence of str
        The fixed label space, unique; sorted unless ``sorted_names=False``
        (an open label space keeps the known labels first, then its
        catalogue's order).
    record : dict
        What was done; counts are added here.
    return_X_y : bool
        Return ``(texts, Y)`` instead of the Bunch.
    sorted_names : bool, default=True
        Require ``label_names`` sorted (else unique only).
    **extra
        More fields for the Bunch (for example ``label_descriptions``).

    Returns
    -------
    Bunch or tuple
        Fields ``texts``, ``Y``, ``label_names``, ``ids``, ``label_frequency``,
        ``record`` and ``extra``.
    """
    label_names = np.asarray(list(label_names), dtype=str)
    if sorted_names and len(label_names) > 1 and not np.all(label_names[:-1] < label_names[1:]):
        raise ValueError("label_names must be sorted and unique")
    if not sorted_names and np.unique(label_names).size != label_names.size:
        raise ValueError("label_names must be unique")
    Y, n_dup = binarize(label_lists, label_names)
    texts = list(texts)
    if len(texts) != Y.shape[0] or len(ids) != Y.shape[0]:
        raise ValueError("texts, labels and ids have different lengths")
    label_frequency = np.bincount(Y.indices, minlength=Y.shape[1]).astype(np.int64)
    record = dict(record)
    record.update(
        n_documents=int(Y.shape[0]),
        n_labels=int(Y.shape[1]),
        n_labels_with_positives=int(np.count_nonzero(label_frequency)),
        n_positives=int(Y.nnz),
        n_documents_without_labels=int(np.count_nonzero(np.diff(Y.indptr) == 0)),
        n_empty_texts=int(sum(1 for t in texts if not t.strip())),
        n_duplicate_labels_removed=int(n_dup) + int(record.get("n_duplicate_labels_removed", 0)),
    )
    if return_X_y:
        return texts, Y
    return Bunch(
        texts=texts,
        Y=Y,
        label_names=label_names,
        ids=np.asarray(list(ids), dtype=str),
        label_frequency=label_frequency,
        record=record,
        **extra,
    )


def check_split(split, allowed):
    """Raise a clear error when ``split`` is not one of ``allowed``."""
    if split not in allowed:
        raise ValueError(f"split={split!r} is not valid; choose one of {list(allowed)}")
    return split


def document_fields(bunch):
    """The per-document fields of a loader Bunch beside ``Y``, ``ids`` and ``X``.

    Parameters
    ----------
    bunch : Bunch
        A loader's output.

    Returns
    -------
    list of str
        Those of ``texts``, ``evidence`` (gold evidence), the text the
        evidence indexes (its ``evidence_field``, where that is not
        ``texts``) and the text the description source reads (its
        ``description_field``: a translation in the label descriptions'
        language) that the Bunch has.
    """
    fields = ["texts", "evidence"]
    for key in ("evidence_field", "description_field"):
        if bunch.get(key) and bunch[key] not in fields:
            fields.append(bunch[key])
    return [f for f in fields if bunch.get(f) is not None]


def take_documents(bunch, rows):
    """The documents ``rows`` of a loader Bunch, every per-document field cut alike.

    Parameters
    ----------
    bunch : Bunch
        A loader's output (``Y``, ``ids`` and :func:`document_fields`, or
        ``X`` for feature vectors).
    rows : array-like of int
        The documents kept, in this order.

    Returns
    -------
    Bunch
        The same fields; ``label_frequency`` recounted on the rows kept.
    """
    out = {**bunch, "Y": bunch.Y[rows], "ids": [bunch.ids[i] for i in rows]}
    for field in document_fields(bunch):
        out[field] = [bunch[field][i] for i in rows]
    if bunch.get("X") is not None:
        out["X"] = bunch.X[rows]
    if "label_frequency" in out:
        out["label_frequency"] = np.bincount(out["Y"].indices, minlength=out["Y"].shape[1]
                                             ).astype(np.int64)
    return Bunch(**out)
