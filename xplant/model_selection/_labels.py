"""Label-frequency groups: buckets, few-shot and zero-shot labels.

Groups follow Chalkidis et al. 2019 ("Large-Scale Multi-Label Text
Classification on EU Legislation", ACL): frequent labels have more than 50
training documents, few-shot labels 1 to 50, zero-shot labels none.
"""

import numpy as np

from .._frequency_buckets import frequency_bucket_names, frequency_bucket_of
from .._labels import label_frequency

__all__ = [
    "frequent_labels",
    "few_shot_labels",
    "label_frequency",
    "label_frequency_buckets",
    "zero_shot_labels",
]


def label_frequency_buckets(Y_train, edges=(0, 1, 5, 10, 50)):
    """Group labels by their number of training positives.

    Parameters
    ----------
    Y_train : {ndarray, sparse matrix} of shape (n_samples, n_labels), or 1-D counts
        Training label indicator matrix, or the training positives per label.
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
    which = frequency_bucket_of(counts, edges)
    return {name: np.flatnonzero(which == i).astype(np.int64)
            for i, name in enumerate(frequency_bucket_names(edges))}


def frequent_labels(Y_train, threshold=50):
    """Labels with more than ``threshold`` training positives (Chalkidis et al. 2019).

    Parameters
    ----------
    Y_train : {ndarray, sparse matrix} of shape (n_samples, n_labels), or 1-D counts
        Training label indicator matrix, or the training positives per label.
    threshold : int, default=50
        Labels with more positives than this are frequent.

    Returns
    -------
    ndarray of int64
        The frequent labels' column indices, ascending.

    Examples
    --------
    >>> frequent_labels(np.array([0, 51, 50])).tolist()
    [1]
    """
    return np.flatnonzero(label_frequency(Y_train) > threshold).astype(np.int64)


def few_shot_labels(Y_train, max_count=50, min_count=1):
    """Labels with ``min_count`` to ``max_count`` training positives (inclusive).

    Default: 1 to 50, the few-shot group of Chalkidis et al. 2019.

    Parameters
    ----------
    Y_train : {ndarray, sparse matrix} of shape (n_samples, n_labels), or 1-D counts
        Training label indicator matrix, or the training positives per label.
    max_count : int, default=50
        Most training positives of a few-shot label.
    min_count : int, default=1
        Fewest training positives of a few-shot label.

    Returns
    -------
    ndarray of int64
        The few-shot labels' column indices, ascending.

    Examples
    --------
    >>> few_shot_labels(np.array([0, 1, 50, 51])).tolist()
    [1, 2]
    """
    counts = label_frequency(Y_train)
    return np.flatnonzero((counts >= min_count) & (counts <= max_count)).astype(np.int64)


def zero_shot_labels(Y_train):
    """Labels with no training positive (they occur only in evaluation data).

    Parameters
    ----------
    Y_train : {ndarray, sparse matrix} of shape (n_samples, n_labels), or 1-D counts
        As in :func:`few_shot_labels`.

    Returns
    -------
    ndarray of int64 of shape (n_zero_shot,)
        The column indices of the labels without a training positive,
        ascending.

    Examples
    --------
    >>> zero_shot_labels(np.array([[1, 0, 0], [1, 0, 1]])).tolist()   # a training matrix
    [1]
    >>> zero_shot_labels([3, 0, 1, 0]).tolist()                      # or its column counts
    [1, 3]
    """
    return np.flatnonzero(label_frequency(Y_train) == 0).astype(np.int64)
