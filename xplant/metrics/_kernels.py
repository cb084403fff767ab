"""Numba kernels for the metrics.

Kernels take plain arrays: a CSR matrix is passed as ``(indptr, indices,
data)``. Validation happens in the public functions, never here. Parallel
kernels use ``prange`` over independent rows (or columns) and each iteration
writes only its own output row.

Ranking order used everywhere: label ``a`` ranks above label ``b`` when
``score[a] > score[b]``, or when the scores are equal and ``a < b`` (lower
label index first). A score of ``-inf`` is never ranked: in a dense row as
in a sparse one (where a missing entry is ``-inf``), it is outside every
top-k and a gold label scored ``-inf`` is a miss.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _better(s1, i1, s2, i2):
    """True when (s1, i1) ranks strictly above (s2, i2)."""
    return s1 > s2 or (s1 == s2 and i1 < i2)


@njit(cache=True)
def _sift_up(hs, hi, pos):
    # Min-heap on rank: the root is the worst kept entry.
    while pos > 0:
        parent = (pos - 1) // 2
        if _better(hs[parent], hi[parent], hs[pos], hi[pos]):
            hs[parent], hs[pos] = hs[pos], hs[parent]
            hi[parent], hi[pos] = hi[pos], hi[parent]
            pos = parent
        else:
            break


@njit(cache=True)
def _sift_down(hs, hi, size, pos):
    while True:
        worst = pos
        left = 2 * pos + 1
        right = left + 1
        if left < size and _better(hs[worst], hi[worst], hs[left], hi[left]):
            worst = left
        if right < size and _better(hs[worst], hi[worst], hs[right], hi[right]):
            worst = right
        if worst == pos:
            break
        hs[worst], hs[pos] = hs[pos], hs[worst]
        hi[worst], hi[pos] = hi[pos], hi[worst]
        pos = worst


@njit(cache=True)
def _heap_offer(hs, hi, size, k, s, j):
    """Offer (s, j) to a heap holding ``size`` of at most ``k``; return new size."""
    if size < k:
        hs[size] = s
        hi[size] = j
        _sift_up(hs, hi, size)
        return size + 1
    if _better(s, j, hs[0], hi[0]):
        hs[0] = s
        hi[0] = j
        _sift_down(hs, hi, size, 0)
    return size


@njit(cache=True)
def _heap_drain(hs, hi, size, out_i, out_s):
    """Write the heap in descending rank order into out_i/out_s[:size]."""
    for pos in range(size - 1, -1, -1):
        out_s[pos] = hs[0]
        out_i[pos] = hi[0]
        last = pos
        hs[0] = hs[last]
        hi[0] = hi[last]
        _sift_down(hs, hi, last, 0)


@njit(cache=True, parallel=True)
def top_k_dense(S, k):
    n, L = S.shape
    out_i = np.full((n, k), -1, dtype=np.int64)
    out_s = np.full((n, k), -np.inf, dtype=np.float64)
    kk = min(k, L)
    for i in prange(n):
        hs = np.empty(kk, dtype=np.float64)
        hi = np.empty(kk, dtype=np.int64)
        size = 0
        for j in range(L):
            if S[i, j] != -np.inf:                 # -inf is never ranked
                size = _heap_offer(hs, hi, size, kk, np.float64(S[i, j]), j)
        _heap_drain(hs, hi, size, out_i[i], out_s[i])
    return out_i, out_s


@njit(cache=True, parallel=True)
def top_k_csr(indptr, indices, data, n, k):
    out_i = np.full((n, k), -1, dtype=np.int64)
    out_s = np.full((n, k), -np.inf, dtype=np.float64)
    for i in prange(n):
        start = indptr[i]
        stop = indptr[i + 1]
        kk = min(k, stop - start)
        hs = np.empty(kk, dtype=np.float64)
        hi = np.empty(kk, dtype=np.int64)
        size = 0
        for p in range(start, stop):
            if data[p] != -np.inf:                 # -inf is never ranked
                size = _heap_offer(hs, hi, size, kk, np.float64(data[p]), np.int64(indices[p]))
        _heap_drain(hs, hi, size, out_i[i], out_s[i])
    return out_i, out_s


@njit(cache=True)
def _contains(sorted_arr, start, stop, x):
    lo = start
    hi = stop
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_arr[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo < stop and sorted_arr[lo] == x


@njit(cache=True, parallel=True)
def hit_weights(top_i, y_indptr, y_indices, weights):
    """gains[i, r] = weights[top_i[i, r]] if that label is true for row i, else 0."""
    n, k = top_i.shape
    out = np.zeros((n, k), dtype=np.float64)
    for i in prange(n):
        a = y_indptr[i]
        b = y_indptr[i + 1]
        for r in range(k):
            lab = top_i[i, r]
            if lab >= 0 and _contains(y_indices, a, b, lab):
                out[i, r] = weights[lab]
    return out


@njit(cache=True)
def _boundary_row(vals, cols, thr, y_indices, a, b, weights):
    """How many of a row's scores equal ``thr``, and the summed weight of the true labels among them.

    The one count of :func:`boundary_stats_dense` and
    :func:`boundary_stats_csr`: ``vals`` are the row's scores, ``cols``
    their labels (None: a dense row, the position is the label; numba
    compiles that case on its own) and the row's true labels are
    ``y_indices[a:b]``.
    """
    c = 0.0
    w = 0.0
    for q in range(vals.shape[0]):
        if vals[q] == thr:
            c += 1.0
            if cols is None:
                j = q
            else:
                j = cols[q]
            if _contains(y_indices, a, b, j):
                w += weights[j]
    return c, w


@njit(cache=True, parallel=True)
def boundary_stats_dense(S, thr, active, y_indptr, y_indices, weights):
    """Per row: how many labels score exactly thr[i], and their summed true weight."""
    n = S.shape[0]
    count = np.zeros(n, dtype=np.float64)
    wsum = np.zeros(n, dtype=np.float64)
    for i in prange(n):
        if active[i]:
            count[i], wsum[i] = _boundary_row(S[i], None, thr[i], y_indices, y_indptr[i],
                                              y_indptr[i + 1], weights)
    return count, wsum


@njit(cache=True, parallel=True)
def boundary_stats_csr(indptr, indices, data, thr, active, y_indptr, y_indices, weights):
    """:func:`boundary_stats_dense` of a CSR score matrix (only stored scores can tie)."""
    n = thr.shape[0]
    count = np.zeros(n, dtype=np.float64)
    wsum = np.zeros(n, dtype=np.float64)
    for i in prange(n):
        if active[i]:
            lo = indptr[i]
            hi = indptr[i + 1]
            count[i], wsum[i] = _boundary_row(data[lo:hi], indices[lo:hi], thr[i], y_indices,
                                              y_indptr[i], y_indptr[i + 1], weights)
    return count, wsum


@njit(cache=True, parallel=True)
def average_ties(gains, top_i, top_s, count, wsum):
    """Replace gains inside each tie group by the group's expected gain.

    Groups lying wholly inside the top-k take their in-list mean. The group
    that holds position k-1 may extend past k; it takes wsum/count, computed
    over the whole row.
    """
    n, k = gains.shape
    out = gains.copy()
    for i in prange(n):
        r = 0
        while r < k and top_i[i, r] >= 0:
            e = r + 1
            while e < k and top_i[i, e] >= 0 and top_s[i, e] == top_s[i, r]:
                e += 1
            if e == k and top_i[i, k - 1] >= 0 and count[i] > 0:
                val = wsum[i] / count[i]
            else:
                tot = 0.0
                for q in range(r, e):
                    tot += gains[i, q]
                val = tot / (e - r)
            for q in range(r, e):
                out[i, q] = val
            r = e
    return out


@njit(cache=True, parallel=True)
def ideal_weights(y_indptr, y_indices, weights, k):
    """Per row, the true labels' weights sorted descending, first k (zero-padded)."""
    n = y_indptr.shape[0] - 1
    out = np.zeros((n, k), dtype=np.float64)
    for i in prange(n):
        a = y_indptr[i]
        b = y_indptr[i + 1]
        m = b - a
        if m == 0:
            continue
        w = np.empty(m, dtype=np.float64)
        for q in range(m):
            w[q] = weights[y_indices[a + q]]
        w = np.sort(w)
        for r in range(min(k, m)):
            out[i, r] = w[m - 1 - r]
    return out


@njit(cache=True)
def _ap_from_positives(pos_s, pos_i, m_total, cand_s, cand_i):
    """Average precision of one row over its full candidate ranking.

    pos_s/pos_i: scores and label ids of the ranked positives, label ids
    ascending. m_total: number of gold labels (the AP denominator).
    cand_s/cand_i: every ranked candidate of the row (positives included);
    cand_i None: the candidate's position is its label id.
    """
    m = pos_s.shape[0]
    if m == 0:
        return 0.0
    order = np.argsort(-pos_s, kind="mergesort")  # stable: ties keep lower id first
    ss = pos_s[order]
    si = pos_i[order]
    diff = np.zeros(m + 1, dtype=np.int64)
    for c in range(cand_s.shape[0]):
        s = cand_s[c]
        if cand_i is None:
            j = c
        else:
            j = cand_i[c]
        lo = 0
        hi = m
        while lo < hi:
            mid = (lo + hi) // 2
            if _better(s, j, ss[mid], si[mid]):
                hi = mid
            else:
                lo = mid + 1
        diff[lo] += 1
    total = 0.0
    run = 0
    for q in range(m):
        run += diff[q]
        total += (q + 1.0) / (run + 1.0)
    return total / m_total


@njit(cache=True)
def _ap_row(vals, cols, y_indices, a, b):
    """Average precision of one row over its full ranking (0 for a row without true labels).

    The one row of :func:`ap_full_dense` and :func:`ap_full_csr`: gathers the
    row's ranked positives (true labels scored above ``-inf``, label ids
    ascending) for :func:`_ap_from_positives`. ``vals`` are the row's scores,
    ``cols`` their labels, sorted (None: a dense row, the position is the
    label; numba compiles that case on its own) and the row's true labels are
    ``y_indices[a:b]``.
    """
    m = b - a
    if m == 0:
        return 0.0
    pos_s = np.empty(m, dtype=np.float64)
    pos_i = np.empty(m, dtype=np.int64)
    c = 0
    if cols is None:
        for q in range(a, b):
            j = y_indices[q]
            if vals[j] != -np.inf:
                pos_s[c] = vals[j]
                pos_i[c] = j
                c += 1
    else:
        for p in range(vals.shape[0]):
            if vals[p] != -np.inf and _contains(y_indices, a, b, cols[p]):
                pos_s[c] = vals[p]
                pos_i[c] = cols[p]
                c += 1
    return _ap_from_positives(pos_s[:c], pos_i[:c], m, vals.astype(np.float64), cols)


@njit(cache=True, parallel=True)
def ap_full_dense(S, y_indptr, y_indices):
    n = S.shape[0]
    out = np.zeros(n, dtype=np.float64)
    for i in prange(n):
        out[i] = _ap_row(S[i], None, y_indices, y_indptr[i], y_indptr[i + 1])
    return out


@njit(cache=True, parallel=True)
def ap_full_csr(indptr, indices, data, y_indptr, y_indices):
    n = y_indptr.shape[0] - 1
    out = np.zeros(n, dtype=np.float64)
    for i in prange(n):
        lo = indptr[i]
        hi = indptr[i + 1]
        out[i] = _ap_row(data[lo:hi], indices[lo:hi], y_indices, y_indptr[i], y_indptr[i + 1])
    return out


@njit(cache=True, parallel=True)
def positive_mask_csr(indptr, indices, y_indptr, y_indices):
    """For each stored score entry, whether its label is true in its row."""
    n = indptr.shape[0] - 1
    out = np.zeros(indices.shape[0], dtype=np.bool_)
    for i in prange(n):
        a = y_indptr[i]
        b = y_indptr[i + 1]
        for p in range(indptr[i], indptr[i + 1]):
            out[p] = _contains(y_indices, a, b, indices[p])
    return out


@njit(cache=True)
def _auc_one(vals, pos, n_missing, n_missing_pos, n_pos, n_total):
    """Mann-Whitney AUC with tied scores counted as 1/2.

    Missing entries (and stored -inf) form one tie group below every stored
    score. Returns NaN when the column has no positives or no negatives.
    """
    n_neg = n_total - n_pos
    if n_pos == 0 or n_neg == 0:
        return np.nan
    m = vals.shape[0]
    miss = np.float64(n_missing)
    miss_pos = np.float64(n_missing_pos)
    for q in range(m):
        if vals[q] == -np.inf:
            miss += 1.0
            if pos[q]:
                miss_pos += 1.0
    rank_sum = miss_pos * (miss + 1.0) / 2.0
    order = np.argsort(vals)
    q = 0
    # skip the stored -inf entries (already in the missing group)
    while q < m and vals[order[q]] == -np.inf:
        q += 1
    done = miss
    while q < m:
        e = q + 1
        while e < m and vals[order[e]] == vals[order[q]]:
            e += 1
        midrank = done + (e - q + 1.0) / 2.0
        npos = 0.0
        for t in range(q, e):
            if pos[order[t]]:
                npos += 1.0
        rank_sum += npos * midrank
        done += e - q
        q = e
    P = np.float64(n_pos)
    u = rank_sum - P * (P + 1.0) / 2.0
    return u / (P * np.float64(n_neg))


@njit(cache=True, parallel=True)
def auc_columns(indptr, vals, pos, n_missing, n_missing_pos, n_pos, n_total):
    L = indptr.shape[0] - 1
    out = np.empty(L, dtype=np.float64)
    for j in prange(L):
        a = indptr[j]
        b = indptr[j + 1]
        out[j] = _auc_one(vals[a:b], pos[a:b], n_missing[j], n_missing_pos[j], n_pos[j], n_total)
    return out


@njit(cache=True)
def _best_threshold_one(vals, pos, n_pos):
    """Highest-F1 threshold t for the rule ``score >= t``; ties -> larger t.

    Returns (threshold, f1). With no stored entries, returns (inf, 0).
    """
    m = vals.shape[0]
    best_t = np.inf
    best_f = 0.0
    if m == 0 or n_pos == 0:
        return best_t, best_f
    order = np.argsort(-vals, kind="mergesort")
    tp = 0.0
    q = 0
    while q < m:
        t = vals[order[q]]
        e = q
        while e < m and vals[order[e]] == t:
            if pos[order[e]]:
                tp += 1.0
            e += 1
        f = 2.0 * tp / (e + n_pos)
        if f > best_f:
            best_f = f
            best_t = t
        q = e
    return best_t, best_f


@njit(cache=True, parallel=True)
def best_threshold_columns(indptr, vals, pos, n_pos):
    L = indptr.shape[0] - 1
    thr = np.empty(L, dtype=np.float64)
    f1 = np.empty(L, dtype=np.float64)
    for j in prange(L):
        a = indptr[j]
        b = indptr[j + 1]
        t, f = _best_threshold_one(vals[a:b], pos[a:b], n_pos[j])
        thr[j] = t
        f1[j] = f
    return thr, f1
