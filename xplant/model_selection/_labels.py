"""Label-frequency groups: buckets, few-shot and zero-shot labels.

Groups follow Chalkidis et al. 2019 ("Large-Scale Multi-Label Text
Classification on EU Legislation", ACL): frequent labels have more than 50
training documents, few-shot labels 1 to 50, zero-shot labels none.
"""

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = [
    "frequent_labels",
    "few_shot_labels",
    "label_frequency",
    "label_frequency_buckets",
    "zero_shot_labels",
]


def label_frequency(Y_train):
    """Training positives per label.

    Parameters
    ----------
    Y_train : {ndarray, sparse matrix} of shape (n_samples, n_labels), or 1-D counts
        A label indicator matrix, or already the per-label counts.

    Returns
    -------
    ndarray of int64 of shape (n_labels,)

    Examples
    --------
    >>> label_frequency(np.array([[1, 0, 1], [1, 0, 0]])).tolist()
    [2, 0, 1]
    """
    if sp.issparse(Y_train):
        Y = sp.csc_matrix(Y_train, copy=True)
        Y.sum_duplicates()
        Y.eliminate_zeros()
        return np.diff(Y.indptr).astype(np.int64)
    arr = np.asarray(Y_train)
    if arr.ndim == 1:
        if arr.dtype.kind not in "iu" or (arr < 0).any():
            raise ValueError("1-D input must hold non-negative integer counts per label")
        return arr.astype(np.int64)
    if arr.ndim != 2:
        raise ValueError(f"Y_train must be 2-D (n_samples, n_labels) or 1-D counts; got {arr.ndim}-D")
    return np.count_nonzero(arr, axis=0).astype(np.int64)


def label_frequency_buckets(Y_train, edges=(0, 1, 5, 10, 50)):
    """Group labels by their number of training positives.

    Parameters
    ----------
    Y_train : {ndarray, sparse matrix} of shape (n_samples, n_labels), or 1-D counts
    edges : sequence of int, default=(0, 1, 5, 10, 50)
        Increasing upper bounds, each inclusive. The first bucket holds counts
        ``<= edges[0]``, bucket i holds ``edges[i-1] < count <= edges[i]``, and
        a last bucket holds ``count > edges[-1]``.

    Returns
    -------
    dict of str to ndarray of int64
        Bucket name to the label indices in it, in bucket order. Names are
        ``"0"``, ``"1"``, ``"2-5"``, ``"6-10"``, ``"11-50"``, ``">50"`` for the
        default edges. Every label is in exactly one bucket.

    Raises
    ------
    ValueError
        If ``edges`` is empty, not integers, or not strictly increasing.

    Examples
    --------
    >>> b = label_frequency_buckets(np.array([0, 1, 3, 7, 20, 60, 2]))
    >>> {k: v.tolist() for k, v in b.items()}
    {'0': [0], '1': [1], '2-5': [2, 6], '6-10': [3], '11-50': [4], '>50': [5]}
    """
    counts = label_frequency(Y_train)
    edges = list(edges)
    if not edges or not all(isinstance(e, numbers.Integral) for e in edges):
        raise ValueError(f"edges must be a non-empty sequence of integers; got {edges!r}")
    if any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"edges must be strictly increasing; got {edges!r}")
    which = np.searchsorted(np.asarray(edges), counts, side="left")
    names = []
    for i, e in enumerate(edges):
        lo = edges[i - 1] + 1 if i else None
        if lo is None:
            names.append(str(e) if e == 0 else f"<={e}")
        else:
            names.append(str(e) if lo == e else f"{lo}-{e}")
    names.append(f">{edges[-1]}")
    return {name: np.flatnonzero(which == i).astype(np.int64) for i, name in enumerate(names)}


def frequent_labels(Y_train, threshold=50):
    """Labels with more than ``threshold`` training positives (Chalkidis et al. 2019).

    Examples
    --------
    >>> frequent_labels(np.array([0, 51, 50])).tolist()
    [1]
    """
    return np.flatnonzero(label_frequency(Y_train) > threshold).astype(np.int64)


def few_shot_labels(Y_train, max_count=50, min_count=1):
    """Labels with ``min_count`` to ``max_count`` training positives (inclusive).

    Default: 1 to 50, the few-shot group of Chalkidis et al. 2019.

    Examples
    --------
    >>> few_shot_labels(np.array([0, 1, 50, 51])).tolist()
    [1, 2]
    """
    counts = label_frequency(Y_train)
    return np.flatnonzero((counts >= min_count) & (counts <= max_count)).astype(np.int64)


def zero_shot_labels(Y_train):
    """Labels with no training positive (they occur only in evaluation data).

    Examples
    --------
    >>> zero_shot_labels(np.array([[1, 0, 0]])).tolist()
    [1, 2]
    """
    return np.flatnonzero(label_frequency(Y_train) == 0).astype(np.int64)
