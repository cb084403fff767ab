"""Nested low-data training subsets (data-efficiency curves)."""

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["nested_subsamples"]


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
