"""Frequency buckets: labels grouped by their number of training documents.

The edges (:func:`check_bucket_edges`), the bucket names (``"0"``,
``"1-5"``, ``">50"``...), the bucket of each label's frequency, and the
powers-of-two edges of the reports; shared by the metrics, the splitters
and the reports.
"""

import numpy as np

def check_bucket_edges(edges):
    """Validate frequency-bucket edges: a non-empty, strictly increasing sequence of counts.

    Bucket 0 holds the labels with frequency ``f <= edges[0]``, bucket b
    ``edges[b-1] < f <= edges[b]``, and a last bucket ``f > edges[-1]``
    (see :func:`frequency_bucket_of`).

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ValueError
        If ``edges`` is empty, not 1-D, not whole non-negative numbers, or not
        strictly increasing.
    """
    e = np.asarray(edges)
    if e.ndim != 1 or e.size == 0 or not (np.issubdtype(e.dtype, np.number)
                                          and e.dtype != np.bool_):
        raise ValueError(f"edges must be a non-empty 1-D sequence of counts, got {edges!r}.")
    if np.any(np.diff(e) <= 0) or e[0] < 0 or np.any(e != np.round(e)):
        raise ValueError(f"edges must be strictly increasing non-negative integers, got {edges!r}.")
    return e.astype(np.int64)


def frequency_bucket_names(edges):
    """Names of the ``len(edges) + 1`` frequency buckets: ``"0"``, ``"1-5"``, ``">50"``...

    Examples
    --------
    >>> frequency_bucket_names((0, 1, 5, 10, 50))
    ['0', '1', '2-5', '6-10', '11-50', '>50']
    >>> frequency_bucket_names((0, 1, 3, 7))    # powers of two
    ['0', '1', '2-3', '4-7', '>7']
    """
    e = check_bucket_edges(edges).tolist()
    names = ["0" if e[0] == 0 else f"<={e[0]}"]
    for lo, hi in zip(e[:-1], e[1:]):
        names.append(f"{lo + 1}" if hi == lo + 1 else f"{lo + 1}-{hi}")
    names.append(f">{e[-1]}")
    return names


def frequency_bucket_of(frequency, edges):
    """The bucket index of each label's frequency (``0 .. len(edges)``).

    Examples
    --------
    >>> frequency_bucket_of([0, 1, 3, 7, 60], (0, 1, 5, 10, 50)).tolist()
    [0, 1, 2, 3, 5]
    """
    return np.searchsorted(check_bucket_edges(edges), np.asarray(frequency), side="left")


def power_of_two_edges(max_frequency):
    """Edges 0, 1, 3, 7, 15, ... up to the first that covers ``max_frequency``.

    Examples
    --------
    >>> power_of_two_edges(9)
    (0, 1, 3, 7, 15)
    """
    edges, high = [0], 1
    while edges[-1] < max(int(max_frequency), 0):
        edges.append(high)
        high = 2 * high + 1
    return tuple(edges)
