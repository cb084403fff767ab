"""Every label from the candidates' scores: the tail order below each document's candidates.

A shortlisted model scores each document's C candidates; every other label
(the *tail*) scores strictly below the document's lowest candidate, in the
shortlist's order where it ranked the label, then by training frequency.
That is the floor term of :func:`xplant.fusion.fuse` with the factor
:func:`tail_factor`; :func:`dense_scores` gives the (n, L) scores, and
:func:`top_k_from_candidates`, :func:`ranking_from_candidates` and
:func:`map_from_candidates` read the same scores' top k and MAP without an
(n, L) array.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ._fuse import Source, _floor_steps, _lift, fuse

#: Candidate probabilities below this are floored. σ underflows to 0 at
#: the −1000 a linear model gives labels it never saw, and no probability
#: lies strictly below 0. A candidate at position j (0-based, of C) of its
#: row whose score is below the floor scores ``SCORE_FLOOR · (1 − (j + 1)/(C + 1))``:
#: positive, below every unfloored candidate, in the shortlist's order. The
#: tail then fits strictly below the lowest candidate, and every score stays
#: a normal float32 (at least 1e-20 / ((C + 1)(L + 1))) for C, L up to 10⁶.
SCORE_FLOOR = 1e-20


def tail_order(candidates, extra, label_frequency):
    """Rank of each label among a row's non-candidates, for dense outputs.

    Parameters
    ----------
    candidates : ndarray of int64 of shape (n, C)
        Each row's candidate labels.
    extra : ndarray of int64 of shape (n, k) or None
        The shortlist's ranking (best first); labels in it that are not
        candidates come first, in its order.
    label_frequency : ndarray of shape (L,)
        Training frequency; the remaining labels follow by decreasing
        frequency (ties: lower index first).

    Returns
    -------
    rank : ndarray of int32 of shape (n, L)
        0, 1, ... over each row's non-candidates; -1 at candidates. int32
        (keys reach 2L) keeps the (n, L) arrays of a dense output at half
        the memory of int64: about 0.1 GB each for the 6,000 EURLEX57K test
        documents.

    Examples
    --------
    >>> tail_order(np.array([[2]]), np.array([[2, 3]]), np.array([5, 9, 1, 0])).tolist()
    [[2, 1, -1, 0]]
    """
    n, L = len(candidates), len(label_frequency)
    by_freq = np.argsort(-np.asarray(label_frequency), kind="stable")
    key = np.empty(L, dtype=np.int32)
    key[by_freq] = np.arange(L) + L
    keys = np.broadcast_to(key, (n, L)).copy()
    rows = np.arange(n)[:, None]
    if extra is not None and extra.size:
        keys[rows, extra] = np.arange(extra.shape[1])[None, :]
    keys[rows, candidates] = -1
    order = np.argsort(keys, axis=1, kind="stable")
    rank = np.empty_like(keys)
    rank[rows, order] = np.arange(L)[None, :] - candidates.shape[1]
    rank[rows, candidates] = -1
    return rank


def tail_factor(rank):
    """t = 1 − (r + 1)/(L + 1) of each label of tail rank r: the floor factor of the tail.

    A label of tail rank r scores m · t, m its row's lowest candidate score
    (:func:`xplant.fusion.fuse` with ``floor="rest"``): strictly below m,
    strictly decreasing in r, and positive.

    Parameters
    ----------
    rank : ndarray of int of shape (n, L)
        :func:`tail_order`'s ranks (-1 at candidates, where t = 1 is not read).

    Returns
    -------
    ndarray of float64 of shape (n, L)

    Examples
    --------
    >>> tail_factor(np.array([[-1, 0, 1]])).tolist()
    [[1.0, 0.75, 0.5]]
    """
    return 1.0 - (rank.astype(np.float64) + 1.0) / (rank.shape[1] + 1.0)


def dense_scores(candidates, cand_scores, rank):
    """(n, L) scores: candidates keep theirs, the rest fall strictly below each row's lowest.

    :func:`xplant.fusion.fuse` of one source, the candidates' scores,
    with the tail as its floor: ``cand_scores`` (n, C) are probabilities
    in [0, 1], in the shortlist's order; those below :data:`SCORE_FLOOR`
    are floored as it says. A non-candidate of tail rank r (from
    :func:`tail_order`) scores ``low · (1 − (r + 1)/(L + 1))`` below its
    row's lowest candidate score ``low``, so its order is kept, no
    non-candidate ties or passes a candidate, and every score stays in
    [0, 1].

    Parameters
    ----------
    candidates : ndarray of int64 of shape (n, C)
        Each row's candidate labels, in the shortlist's order.
    cand_scores : ndarray of shape (n, C)
        Their (fused) probabilities.
    rank : ndarray of int of shape (n, L)
        :func:`tail_order` of the candidates.

    Returns
    -------
    ndarray of float64 of shape (n, L)

    Examples
    --------
    >>> cand = np.array([[2, 0]]); s = np.array([[0.9, 0.5]])
    >>> rank = tail_order(cand, None, np.array([1, 5, 3, 0]))
    >>> out = dense_scores(cand, s, rank)
    >>> np.argsort(-out[0]).tolist(), bool(out[0, 1] < 0.5)
    ([2, 0, 1, 3], True)
    """
    return fuse([Source(cand_scores, 1.0, None, candidates)], n_labels=rank.shape[1],
                floor="rest", floor_factor=tail_factor(rank), min_score=SCORE_FLOOR)


def top_k_from_candidates(candidates, cand_scores, extra, label_frequency, k):
    """Top-``k`` labels and scores of each row without an (n, L) matrix.

    Candidates come first by score, equal scores with the lower label first
    (the order of :func:`dense_scores` and of :mod:`xplant.metrics`); for
    ``k`` > C the rest follow the shortlist's extra ranking, then training
    frequency, with scores below the row's lowest candidate as in
    :func:`dense_scores` (the same :data:`SCORE_FLOOR`, so the scores equal
    that function's).

    Parameters
    ----------
    candidates : ndarray of int64 of shape (n, C)
        Each row's candidate labels, in the shortlist's order.
    cand_scores : ndarray of shape (n, C)
        The candidates' (fused) scores.
    extra : ndarray of int64 of shape (n, m) or None
        The shortlist's ranking beyond the candidates, best first.
    label_frequency : ndarray of shape (L,)
        Training frequency of each label: the order after the extra ranking.
    k : int
        Labels per row.

    Returns
    -------
    indices : ndarray of int64 of shape (n, k)
    scores : ndarray of float64 of shape (n, k)

    Examples
    --------
    >>> idx, sc = top_k_from_candidates(np.array([[2, 0]]), np.array([[0.5, 0.9]]), None,
    ...                                 np.array([1, 5, 3, 0]), 3)
    >>> idx.tolist(), sc.round(3).tolist()
    ([[0, 2, 1]], [[0.9, 0.5, 0.4]])
    """
    cand_scores = _lift(cand_scores, SCORE_FLOOR)
    n, C = cand_scores.shape
    L = len(label_frequency)
    idx, sc = _ranked_candidates(candidates, cand_scores)   # ties: the lower label first
    if k <= C:
        return idx[:, :k].astype(np.int64), sc[:, :k]
    by_freq = np.argsort(-np.asarray(label_frequency), kind="stable")
    ind = np.empty((n, k), dtype=np.int64)
    out = np.empty((n, k), dtype=np.float64)
    for i in range(n):
        seen = set(idx[i].tolist())
        tail = []
        for lab in (list(extra[i]) if extra is not None else []) + list(by_freq):
            if len(tail) == k - C:
                break
            if lab not in seen:
                seen.add(lab)
                tail.append(lab)
        low = sc[i, -1]
        r = np.arange(1, len(tail) + 1, dtype=np.float64)
        ind[i] = np.concatenate([idx[i], tail])
        out[i] = np.concatenate([sc[i], low * (1 - r / (L + 1))])
    return ind, out


def _ranked_candidates(candidates, cand_scores):
    """Each row's candidates in the order of :func:`dense_scores`: by score, ties lower label first.

    The order of :mod:`xplant.metrics` (descending score, equal scores to
    the lower label index). Returns the candidates (n, C) int64 and their
    scores (n, C) float64 in that order. A NaN score raises ValueError, as
    the metrics raise on the dense scores.
    """
    cand_scores = np.asarray(cand_scores, dtype=np.float64)
    if np.isnan(cand_scores).any():
        raise ValueError("cand_scores contains NaN; the candidates' scores must be numbers")
    by = np.argsort(candidates, axis=1, kind="stable")
    cs = np.take_along_axis(np.asarray(candidates, dtype=np.int64), by, 1)
    sc = np.take_along_axis(cand_scores, by, 1)
    by = np.argsort(-sc, axis=1, kind="stable")          # ties keep the lower label first
    return np.take_along_axis(cs, by, 1), np.take_along_axis(sc, by, 1)


def _gold(Y):
    """Gold labels as canonical CSR (duplicates summed, stored zeros dropped), and each entry's row."""
    Y = sp.csr_matrix(Y, copy=True)
    Y.sum_duplicates()
    Y.eliminate_zeros()
    return Y, np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr))


def _is_gold(Y, rows, candidates):
    """(n, C) bool: whether each candidate is a gold label of its row (``Y`` from :func:`_gold`)."""
    n, L = Y.shape
    keys = np.sort(rows * np.int64(L) + Y.indices)
    if not keys.size:
        return np.zeros(candidates.shape, dtype=bool)
    cells = np.arange(n, dtype=np.int64)[:, None] * L + candidates
    at = np.minimum(np.searchsorted(keys, cells), keys.size - 1)
    return keys[at] == cells


def ranking_from_candidates(candidates, cand_scores, rank, k):
    """The first ``k`` labels of each row of :func:`dense_scores` ``(candidates, cand_scores, rank)``.

    Without the (n, L) array: the candidates by score, then the tail in
    its fixed order ``rank`` (every tail label scores strictly below the
    row's candidates). Equal scores rank the lower label index first, as
    :func:`xplant.metrics.top_k_indices` ranks the dense scores, so a
    metric at k of the dense scores equals the metric of these ranked
    labels (``y_top_k=``) to the last digit. ``k`` > C reads the tail
    from ``rank`` a block of rows at a time, never all of it at once.

    Parameters
    ----------
    candidates : ndarray of int of shape (n, C)
        Each row's candidate labels (distinct).
    cand_scores : ndarray of shape (n, C)
        Their scores, floored as ``dense_scores`` floors them (e.g.
        :func:`xplant.fusion.fuse`'s block with ``min_score=SCORE_FLOOR``).
    rank : ndarray of int of shape (n, L)
        :func:`tail_order` of the candidates.
    k : int
        Labels per row, at least 1; more than L gives all L.

    Returns
    -------
    ndarray of int64 of shape (n, min(k, L))
        Best first.

    Raises
    ------
    ValueError
        If ``k`` is not a positive integer, or a score is NaN.

    Examples
    --------
    >>> cand = np.array([[2, 0]]); s = np.array([[0.5, 0.5]])
    >>> rank = tail_order(cand, None, np.array([1, 5, 3, 0]))
    >>> ranking_from_candidates(cand, s, rank, 3).tolist()     # the tie: label 0 before 2
    [[0, 2, 1]]
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    n, L = rank.shape
    C = candidates.shape[1]
    k = int(min(k, L))
    ranked = _ranked_candidates(candidates, cand_scores)[0]
    if k <= C:
        return np.ascontiguousarray(ranked[:, :k])
    out = np.empty((n, k), dtype=np.int64)
    out[:, :C] = ranked
    step = max(1, (1 << 20) // max(1, L))              # about 1 MB of rank per block
    for lo in range(0, n, step):
        block = rank[lo:lo + step]
        r, lab = np.nonzero((block >= 0) & (block < k - C))
        out[lo + r, C + block[r, lab]] = lab
    return out


def map_from_candidates(Y, candidates, cand_scores, rank):
    """MAP of :func:`dense_scores` ``(candidates, cand_scores, rank)`` without the (n, L) array.

    The dense ranking of a row is its C candidates by score (ties: lower
    label index first, as :func:`xplant.metrics.mean_average_precision`),
    then every other label in the fixed tail order ``rank``, strictly below
    them. A gold label of tail rank r therefore sits at position C + r + 1
    whatever the candidates' scores, and only the (n, C) candidates are
    sorted. Each row's average precision is then summed as
    :func:`~xplant.metrics.mean_average_precision` sums it: over its gold
    labels by position q_1 < q_2 < …, the terms j / q_j added in that
    order, divided by the number of gold labels; rows without a gold label
    are left out (``empty_rows="skip"``). So the result equals the dense
    MAP to the last digit. With every label a candidate (C = L) the
    dense scores are no larger than the candidates' own arrays, so they
    are built (:func:`dense_scores`) and scored by the compiled kernel of
    :func:`~xplant.metrics.mean_average_precision`, the same number
    several times faster.

    Parameters
    ----------
    Y : {ndarray, sparse matrix} of shape (n, L)
        Gold labels, 0/1.
    candidates : ndarray of int of shape (n, C)
        Each row's candidate labels (distinct).
    cand_scores : ndarray of shape (n, C)
        Their scores, as ``dense_scores`` reads them (floored there: pass
        the floored scores, e.g. :func:`xplant.fusion.fuse`'s).
    rank : ndarray of int of shape (n, L)
        :func:`tail_order` of the candidates.

    Returns
    -------
    float
        Equal to ``mean_average_precision(Y, dense_scores(candidates,
        cand_scores, rank))``; 0.0 when no row has a gold label (where that
        function also warns).

    Raises
    ------
    ValueError
        If a score is NaN (as that function raises).

    Examples
    --------
    >>> cand = np.array([[2, 0]]); s = np.array([[0.9, 0.5]])
    >>> rank = tail_order(cand, None, np.array([1, 5, 3, 0]))
    >>> map_from_candidates(np.array([[1, 1, 0, 0]]), cand, s, rank)  # ranks 2, 3: (1/2 + 2/3)/2
    0.5833333333333333
    """
    Y, rows = _gold(Y)
    n, C = candidates.shape
    n_true = np.diff(Y.indptr)
    if C == rank.shape[1]:                # no tail: the dense array is no bigger
        if not n_true.any():
            return 0.0
        from ..metrics import mean_average_precision
        return float(mean_average_precision(Y, dense_scores(candidates, cand_scores, rank),
                                            empty_rows="skip"))
    ranked = _ranked_candidates(candidates, cand_scores)[0]
    hit_rows, hit_at = np.nonzero(_is_gold(Y, rows, ranked))
    r = rank[rows, Y.indices].astype(np.int64)
    tail = r >= 0
    at_rows = np.concatenate([hit_rows, rows[tail]])
    pos = np.concatenate([hit_at + 1, C + r[tail] + 1])      # 1-based positions in the ranking
    order = np.lexsort((pos, at_rows))
    at_rows, pos = at_rows[order], pos[order]
    j = np.arange(len(pos)) - np.searchsorted(at_rows, np.arange(n))[at_rows]   # 0-based
    terms = np.zeros((n, max(1, int(n_true.max(initial=0)))))
    terms[at_rows, j] = (j + 1.0) / pos.astype(np.float64)
    total = np.cumsum(terms, axis=1)[:, -1]      # added in order, as the dense kernel adds them
    keep = n_true > 0
    return float(np.mean(total[keep] / n_true[keep])) if keep.any() else 0.0


def tail_above(cand_scores, n_labels, threshold):
    """How many of each row's tail labels score above ``threshold`` in :func:`dense_scores`.

    A tail label of rank r scores ``low · t_r`` (``low`` the row's lowest
    candidate score, t_r of :func:`tail_factor`), which falls with r: the
    labels above the threshold are the tail ranks 0 … count − 1. Each
    count is found by bisection on those very products, so it equals the
    count of the dense row; the (n, L) scores are never built. The tail
    exceeds the threshold only where every candidate does (``low`` above
    it).

    Parameters
    ----------
    cand_scores : ndarray of shape (n, C)
        The candidates' scores, floored as ``dense_scores`` floors them.
    n_labels : int
        L; each row has L − C tail labels.
    threshold : float
        The rule is ``score > threshold``.

    Returns
    -------
    ndarray of int64 of shape (n,)

    Examples
    --------
    >>> tail_above(np.array([[0.9, 0.8], [0.9, 0.3]]), 6, 0.5).tolist()   # 0.8 · (6/7, 5/7, 4/7, 3/7)
    [2, 0]
    """
    block = np.asarray(cand_scores, dtype=np.float64)
    n, C = block.shape
    m = int(n_labels) - C
    if m <= 0 or not n:
        return np.zeros(n, dtype=np.int64)
    low = block.min(1) if C else np.zeros(n)
    t = tail_factor(np.arange(n_labels)[None, :])[0, :m]
    lo, hi = np.zeros(n, dtype=np.int64), np.full(n, m, dtype=np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        above = open_ & (low * t[np.minimum(mid, m - 1)] > threshold)
        lo = np.where(above, mid + 1, lo)
        hi = np.where(open_ & ~above, mid, hi)


def counts_above(Y, candidates, cand_scores, rank, threshold):
    """Labels of :func:`dense_scores` above ``threshold``, and gold labels among them, in all rows.

    What ``(dense_scores(candidates, cand_scores, rank) > threshold)``
    counts, and its count at the gold cells of ``Y``, from the (n, C)
    candidates (:func:`tail_above` for the tail).

    Parameters
    ----------
    Y, candidates, cand_scores, rank
        As in :func:`map_from_candidates`: gold labels (n, L), each row's
        (n, C) candidates and their floored scores, the tail order (n, L).
    threshold : float
        A score counts when strictly above it (the scale of
        ``cand_scores``).

    Returns
    -------
    n_above : int
        Cells of the dense scores above ``threshold``, in all rows.
    n_gold_above : int
        Those of them that are gold labels in ``Y``.

    Examples
    --------
    >>> cand = np.array([[2, 0]]); s = np.array([[0.9, 0.7]])
    >>> rank = tail_order(cand, None, np.array([1, 5, 3, 0]))   # the tail: 1, then 3
    >>> counts_above(np.array([[0, 1, 1, 0]]), cand, s, rank, 0.5)   # label 1: 0.7 · 4/5
    (3, 2)
    """
    Y, rows = _gold(Y)
    block = np.asarray(cand_scores, dtype=np.float64)
    above = block > threshold
    n_tail = tail_above(block, Y.shape[1], threshold)
    r = rank[rows, Y.indices]
    gold_tail = int(((r >= 0) & (r < n_tail[rows])).sum())
    gold_cand = int((above & _is_gold(Y, rows, candidates)).sum())
    return int(above.sum()) + int(n_tail.sum()), gold_cand + gold_tail


def every_label_scores(p, candidates):
    """:func:`dense_scores` when each row's candidates are every label, in place on ``p``.

    ``p`` (n, L) float64 holds the candidates' scores in label order
    (column l is label l), not in the rows' candidate order: the dense
    scores are then ``p`` itself, except that a score below
    :data:`SCORE_FLOOR` is floored at its label's position j in the row's
    ``candidates`` (:func:`xplant.fusion.fuse`'s ``min_score``). Equal to
    ``dense_scores(candidates, np.take_along_axis(p, candidates, 1), rank)``
    without the permuted copy and the tail's (n, L) arrays.

    Parameters
    ----------
    p : ndarray of float64 of shape (n, L)
        Scores in label order; overwritten.
    candidates : ndarray of int of shape (n, L)
        Each row's candidates: a permutation of the L labels.

    Returns
    -------
    ndarray of float64 of shape (n, L)
        ``p``.

    Examples
    --------
    >>> every_label_scores(np.array([[0.0, 0.9, 0.0]]), np.array([[1, 2, 0]])).tolist()
    [[2.5e-21, 0.9, 5e-21]]
    """
    n, L = p.shape
    steps = _floor_steps(L, SCORE_FLOOR)
    for i in np.flatnonzero((p < SCORE_FLOOR).any(1)):
        labels = np.flatnonzero(p[i] < SCORE_FLOOR)
        where = np.empty(L, dtype=np.int64)
        where[candidates[i]] = np.arange(L)
        p[i, labels] = steps[where[labels]]
    return p
