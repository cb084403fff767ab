"""Training subsets: nested low-data subsets, and corpora of a chosen shape."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

__all__ = ["frequent_label_subset", "nested_subsamples"]


def nested_subsamples(n, sizes, random_state=None):
    """Nested random subsets of ``range(n)``, each contained in the next.

    One seeded permutation of the rows is drawn; the subset of size ``s`` is
    its first ``s`` rows. So the subsets are nested, and a larger ``sizes``
    list only appends subsets without changing the smaller ones.

    Parameters
    ----------
    n : int
        Number of training documents.
    sizes : sequence of int
        Subset sizes, each in [1, n], strictly increasing (PLANT's curve uses
        25, 50, 165, 424, 1090, 2802, ...).
    random_state : int, RandomState instance or None, default=None
        Seed of the draw; the same seed gives the same subsets.

    Returns
    -------
    list of ndarray of int64
        Sorted row indices of each subset, in the order of ``sizes``.

    Raises
    ------
    ValueError
        If a size is outside [1, n] or the sizes are not strictly increasing.

    Examples
    --------
    >>> subsets = nested_subsamples(10, [2, 5], random_state=0)
    >>> [len(s) for s in subsets], set(subsets[0]) <= set(subsets[1])
    ([2, 5], True)
    """
    if not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    sizes = list(sizes)
    for s in sizes:
        if not isinstance(s, numbers.Integral) or not 1 <= s <= n:
            raise ValueError(f"each size must be an integer in [1, {n}]; got {s!r}")
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise ValueError(f"sizes must be strictly increasing; got {sizes}")
    perm = check_random_state(random_state).permutation(n).astype(np.int64)
    return [np.sort(perm[:s]) for s in sizes]


def frequent_label_subset(Y_train, n_labels, n_docs=None, random_state=None):
    """The most frequent labels, and a seeded sample of the documents that keep one.

    Builds a smaller corpus of a chosen shape from a larger one: keep the
    ``n_labels`` labels with the most training positives (ties to the lower
    column index), drop the training documents left without any of them,
    and draw ``n_docs`` of the rest at random.

    Parameters
    ----------
    Y_train : {ndarray, sparse matrix} of shape (n_samples, n_all_labels)
        Training label indicator matrix, {0, 1}.
    n_labels : int
        Labels kept, in [1, n_all_labels].
    n_docs : int or None, default=None
        Training documents drawn (at least 1); None, or more than there are
        documents with a kept label, keeps them all.
    random_state : int, RandomState instance or None, default=None
        Seed of the document draw.

    Returns
    -------
    labels : ndarray of int64 of shape (n_labels,)
        Kept columns, ascending.
    rows : ndarray of int64 of shape (min(n_docs, n_with_label),)
        Kept training rows, ascending; each has a kept label.

    Raises
    ------
    ValueError
        If ``n_labels`` or ``n_docs`` is not a positive integer, or
        ``n_labels`` exceeds the number of columns.

    Examples
    --------
    >>> Y = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0]])
    >>> labels, rows = frequent_label_subset(Y, 1)
    >>> labels.tolist(), rows.tolist()
    ([0], [0, 1, 3])
    >>> len(frequent_label_subset(Y, 2, n_docs=2, random_state=0)[1])
    2
    """
    from ._labels import label_frequency
    freq = label_frequency(Y_train)
    if not isinstance(n_labels, numbers.Integral) or not 1 <= n_labels <= len(freq):
        raise ValueError(f"n_labels must be an integer in [1, {len(freq)}] (the number of "
                         f"labels); got {n_labels!r}")
    if n_docs is not None and (not isinstance(n_docs, numbers.Integral) or n_docs < 1):
        raise ValueError(f"n_docs must be a positive integer or None; got {n_docs!r}")
    labels = np.sort(np.lexsort((np.arange(len(freq)), -freq))[:n_labels]).astype(np.int64)
    kept = sp.csr_matrix(Y_train)[:, labels]
    kept.eliminate_zeros()
    rows = np.flatnonzero(np.diff(kept.indptr)).astype(np.int64)
    if n_docs is not None and n_docs < len(rows):
        rows = np.sort(check_random_state(random_state).choice(rows, n_docs, replace=False))
    return labels, rows
