"""Every label from the candidates' scores: the tail order below each document's candidates.

A shortlisted model scores each document's C candidates; every other label
(the *tail*) scores strictly below the document's lowest candidate, in the
shortlist's order where it ranked the label, then by training frequency.
That is the floor term of :func:`xplant.fusion.fuse` with the factor
:func:`tail_factor`; :func:`dense_scores` gives the (n, L) scores and
:func:`top_k_from_candidates` the top k of the same scores without an
(n, L) array.
"""

import numpy as np

from ._fuse import Source, _lift, fuse

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

    Candidates come first by score; for ``k`` > C the rest follow the
    shortlist's extra ranking, then training frequency, with scores below
    the row's lowest candidate as in :func:`dense_scores` (the same
    :data:`SCORE_FLOOR`, so the scores equal that function's).

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
    order = np.argsort(-cand_scores, axis=1, kind="stable")
    idx = np.take_along_axis(candidates, order, 1)
    sc = np.take_along_axis(cand_scores, order, 1)
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


def map_from_candidates(Y, candidates, cand_scores, rank):
    """MAP of :func:`dense_scores` ``(candidates, cand_scores, rank)`` without the (n, L) array.

    The dense ranking of a row is its C candidates by score (ties: lower
    label index first, as :func:`xplant.metrics.mean_average_precision`),
    then every other label in the fixed tail order ``rank``, strictly below
    them. A gold label of tail rank r therefore sits at position C + r + 1
    whatever the candidates' scores; with h the row's gold candidates and
    p_1 < p_2 < … its gold tail positions,

    .. math::
        |y| \\, AP = \\sum_{\\text{gold cand. at } q} \\frac{\\#\\{\\text{hits} \\le q\\}}{q}
        + h \\sum_j \\frac{1}{p_j} + \\sum_j \\frac{j}{p_j},

    so the tail adds two per-row constants and only the (n, C) candidates
    are sorted. Rows without a gold label are left out (``empty_rows="skip"``).

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
        cand_scores, rank))`` up to floating-point rounding; 0.0 when no row
        has a gold label.

    Examples
    --------
    >>> cand = np.array([[2, 0]]); s = np.array([[0.9, 0.5]])
    >>> rank = tail_order(cand, None, np.array([1, 5, 3, 0]))
    >>> map_from_candidates(np.array([[1, 1, 0, 0]]), cand, s, rank)  # ranks 2, 3: (1/2 + 2/3)/2
    0.5833333333333333
    """
    import scipy.sparse as sp
    Y = sp.csr_matrix(Y, copy=True)
    n, C = candidates.shape
    Y.eliminate_zeros()
    rows = np.repeat(np.arange(n), np.diff(Y.indptr))
    gold = Y.indices
    n_true = np.bincount(rows, minlength=n).astype(np.float64)
    r = rank[rows, gold]
    tail = r >= 0
    pos = (C + r[tail] + 1).astype(np.float64)
    t_rows = rows[tail]
    order = np.lexsort((pos, t_rows))
    pos, t_rows = pos[order], t_rows[order]
    starts = np.searchsorted(t_rows, np.arange(n))
    j = np.arange(len(pos)) - starts[t_rows] + 1.0
    inv = np.bincount(t_rows, weights=1.0 / pos, minlength=n)
    jinv = np.bincount(t_rows, weights=j / pos, minlength=n)
    by = np.argsort(candidates, axis=1, kind="stable")
    cs = np.take_along_axis(candidates, by, 1)
    sc = np.take_along_axis(np.asarray(cand_scores, dtype=np.float64), by, 1)
    by = np.argsort(-sc, axis=1, kind="stable")          # ties keep the lower label first
    cs = np.take_along_axis(cs, by, 1)
    hits = np.asarray(Y[np.arange(n)[:, None], cs].todense(), dtype=np.float64) \
        if n else np.zeros((0, C))
    hits = (hits != 0).astype(np.float64)
    cum = np.cumsum(hits, axis=1)
    head = (hits * cum / np.arange(1, C + 1)).sum(axis=1)
    ap = (head + cum[:, -1] * inv + jinv) if C else jinv
    keep = n_true > 0
    return float(np.mean(ap[keep] / n_true[keep])) if keep.any() else 0.0
