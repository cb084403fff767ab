"""Numba kernels for token-label mutual information gain (MIG).

Every kernel takes plain arrays: a CSR matrix is passed as ``indptr``,
``indices`` and ``data``. The parallel kernels run ``prange`` over the rows
(labels) of a block, and each row writes only its own output slice, so no
two threads ever write the same memory. Validation lives in ``_mig.py``.

Counts may arrive as int32 (the sparse product's counts never exceed N) but
every product such as ``N * n11`` is formed in int64, so it never overflows
32-bit integers; int64 products are exact up to N of about 3e9 documents.
The MI itself is a sum of x·log2(x) terms looked up in a table of counts
(``xlogx_table``), in float64.

Normalization codes: 0 = none, 1 = ``"joint"`` (MI / H(T, L)),
2 = ``"label"`` (MI / H(L)).
"""

import numpy as np
from numba import njit, prange

NORM_NONE = 0
NORM_JOINT = 1
NORM_LABEL = 2


#: Largest count whose x·log2(x) is looked up in a table rather than computed.
TABLE_MAX = 1 << 22


def xlogx_table(n_docs):
    """Table of x·log2(x) for x = 0..min(n_docs, TABLE_MAX), float64."""
    size = min(int(n_docs), TABLE_MAX) + 1
    tab = np.arange(size, dtype=np.float64)
    tab[1:] *= np.log2(tab[1:])
    return tab


@njit(cache=True, error_model="numpy")
def _xlogx(x, tab):
    if x < tab.shape[0]:
        return tab[x]
    xf = float(x)
    return xf * np.log2(xf)


@njit(cache=True, error_model="numpy")
def mig_cell(n11, df, freq, n, norm, tab):
    """MIG in bits of one (token, label) 2x2 table, optionally normalized.

    With xlogx(x) = x log2 x, the mutual information of the table is

        N·MI = Σ_ab xlogx(n_ab) − Σ_a xlogx(n_a·) − Σ_b xlogx(n_·b) + xlogx(N),

    which equals Σ_ab n_ab log2(n_ab N / (n_a· n_·b)) (docs/design.md, section
    "Mutual information gain").
    Tables whose counts factorise (n11·N = df·freq, e.g. a token in every
    document or a label on every document) give exactly 0.

    Parameters
    ----------
    n11 : int
        Documents holding the token and the label.
    df : int
        Documents holding the token, n1·.
    freq : int
        Documents holding the label, n·1.
    n : int
        Documents in total, N.
    norm : int
        0 none, 1 MI / H(T, L), 2 MI / H(L).
    tab : ndarray of float64
        ``xlogx_table(n)``; counts past its end are computed directly.

    Returns
    -------
    float
        The (normalized) mutual information, >= 0; 0 for inconsistent counts
        or a zero normalizer.
    """
    return _mi_core(
        n11, df, freq, n, norm, tab, _pair_term(df, n, tab), _pair_term(freq, n, tab), _xlogx(n, tab)
    )


@njit(cache=True, error_model="numpy")
def _pair_term(a, n, tab):
    # xlogx(a) + xlogx(N - a): a margin's part of N·MI.
    return _xlogx(a, tab) + _xlogx(n - a, tab)


@njit(cache=True, error_model="numpy")
def token_terms(df, n, tab):
    """``_pair_term`` of every token's df, shape (V,), float64."""
    out = np.empty(df.shape[0], dtype=np.float64)
    for t in range(df.shape[0]):
        out[t] = _pair_term(df[t], n, tab)
    return out


@njit(cache=True, error_model="numpy")
def _mi_core(n11, df, freq, n, norm, tab, tterm, lterm, hn):
    n10 = df - n11
    n01 = freq - n11
    n00 = n - df - freq + n11
    if n <= 0 or n11 < 0 or n10 < 0 or n01 < 0 or n00 < 0:
        return 0.0  # no such table
    if n11 * n == df * freq:
        return 0.0  # independent: MI is exactly 0
    nf = float(n)
    cells = _xlogx(n11, tab) + _xlogx(n10, tab) + _xlogx(n01, tab) + _xlogx(n00, tab)
    mi = (cells - (tterm + lterm) + hn) / nf
    if mi <= 0.0:
        return 0.0
    if norm == NORM_JOINT:
        h = (hn - cells) / nf
        if h <= 0.0:
            return 0.0
        mi = min(mi / h, 1.0)
    elif norm == NORM_LABEL:
        h = (hn - lterm) / nf
        if h <= 0.0:
            return 0.0
        mi = min(mi / h, 1.0)
    return mi


@njit(cache=True, error_model="numpy")
def mig_cells(n11, df, freq, n, norm, tab):
    """Vectorised :func:`mig_cell` over equal-length int64 arrays.

    Parameters
    ----------
    n11, df, freq : ndarray of shape (m,), int64
        The counts of each table.
    n : int
        Documents in total.
    norm : int
        Normalization code.
    tab : ndarray of float64
        ``xlogx_table(n)``.

    Returns
    -------
    ndarray of shape (m,), float64
    """
    out = np.empty(n11.shape[0], dtype=np.float64)
    for i in range(n11.shape[0]):
        out[i] = mig_cell(n11[i], df[i], freq[i], n, norm, tab)
    return out


@njit(cache=True, error_model="numpy")
def _kth_smallest(a, kth):
    """The value ``np.partition(a, kth)[kth]`` would hold; ``a`` is reordered.

    Wirth's selection (N. Wirth, *Algorithms + Data Structures = Programs*,
    1976, section 2.3.4) with a median-of-three pivot: linear time on
    average, and runs of equal values split evenly. Written out because
    numba's ``np.partition`` is slow to compile, a cost every fresh
    installation's first fit pays (docs/benchmarks/archive/speed.md).

    Parameters
    ----------
    a : ndarray of float64 of shape (m,)
        No NaN; reordered in place.
    kth : int
        0 <= kth < m.

    Returns
    -------
    float
    """
    lo = 0
    hi = a.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        x, y, z = a[lo], a[mid], a[hi]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
        pivot = y if y > x else x         # the median of the three: a value of a[lo:hi + 1]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while pivot < a[j]:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if j < kth:
            lo = i
        if kth < i:
            hi = j
    return a[kth]


@njit(cache=True, error_model="numpy")
def _select_top_k(tok, val, m, k, out_tok, out_val):
    """Write the top-k of the first ``m`` candidates into the output slices.

    Order: larger value first, ties broken by the smaller token id. The k
    chosen entries are written sorted by token id (canonical CSR order).
    Returns how many were written, ``min(m, k)``.
    """
    if m <= k:
        order = np.argsort(tok[:m])
        for j in range(m):
            out_tok[j] = tok[order[j]]
            out_val[j] = val[order[j]]
        return m
    tmp = val[:m].copy()
    thr = _kth_smallest(tmp, m - k)  # the k-th largest value
    sel_tok = np.empty(k, dtype=np.int64)
    sel_val = np.empty(k, dtype=np.float64)
    n_gt = 0
    n_eq = 0
    for j in range(m):
        if val[j] > thr:
            sel_tok[n_gt] = tok[j]
            sel_val[n_gt] = val[j]
            n_gt += 1
        elif val[j] == thr:
            n_eq += 1
    ties = np.empty(n_eq, dtype=np.int64)
    e = 0
    for j in range(m):
        if val[j] == thr:
            ties[e] = tok[j]
            e += 1
    ties.sort()
    for j in range(k - n_gt):
        sel_tok[n_gt + j] = ties[j]
        sel_val[n_gt + j] = thr
    order = np.argsort(sel_tok)
    for j in range(k):
        out_tok[j] = sel_tok[order[j]]
        out_val[j] = sel_val[order[j]]
    return k


@njit(cache=True, parallel=True, error_model="numpy")
def positive_row_counts(indptr, indices, n11, df, freq, n):
    """Count, per row, the pairs with ``n11 * N > df * freq``.

    Parameters
    ----------
    indptr, indices, n11 : ndarray
        The CSR block of co-occurrence counts, shape (b, V), integer data.
    df : ndarray of shape (V,), int64
    freq : ndarray of shape (b,), int64
        Label frequencies of the block's rows.
    n : int

    Returns
    -------
    ndarray of shape (b,), int64
    """
    b = indptr.shape[0] - 1
    out = np.zeros(b, dtype=np.int64)
    for r in prange(b):
        c = 0
        f = freq[r]
        for p in range(indptr[r], indptr[r + 1]):
            if n11[p] * n > df[indices[p]] * f:
                c += 1
        out[r] = c
    return out


@njit(cache=True, error_model="numpy")
def _positive_row(indptr, indices, n11, r, df, tterm, f, n, norm, tab, k, out_tok, out_val):
    """Row ``r``'s top-k positively associated pairs with a MIG above 0, sorted by token id.

    The one row of :func:`positive_rows` (``k`` its row's slots, so every
    pair) and :func:`positive_top_k`: scans the row's stored pairs, keeps
    those with ``n11 * N > df * f`` and a MIG above 0 (``f`` is the row's
    label frequency), writes the top ``k`` of them (:func:`_select_top_k`)
    into ``out_tok`` and ``out_val`` and returns how many it wrote.
    """
    lterm = _pair_term(f, n, tab)
    hn = _xlogx(n, tab)
    m = indptr[r + 1] - indptr[r]
    tok = np.empty(m, dtype=np.int64)
    val = np.empty(m, dtype=np.float64)
    j = 0
    for p in range(indptr[r], indptr[r + 1]):
        t = indices[p]
        if n11[p] * n > df[t] * f:
            v = _mi_core(n11[p], df[t], f, n, norm, tab, tterm[t], lterm, hn)
            if v > 0.0:
                tok[j] = t
                val[j] = v
                j += 1
    return _select_top_k(tok, val, j, k, out_tok, out_val)


@njit(cache=True, parallel=True, error_model="numpy")
def positive_rows(indptr, indices, n11, df, tterm, freq, n, norm, tab, out_indptr, out_indices, out_data):
    """Fill every positively associated pair of each row, sorted by token id.

    ``tterm`` is ``token_terms(df, n, tab)``.
    ``out_indptr`` comes from the cumulative sum of :func:`positive_row_counts`.
    Pairs whose (normalized) MIG is exactly 0 are dropped; the number written
    per row is returned, so the caller can compact the result.
    """
    b = indptr.shape[0] - 1
    written = np.zeros(b, dtype=np.int64)
    for r in prange(b):
        lo = out_indptr[r]
        hi = out_indptr[r + 1]
        written[r] = _positive_row(indptr, indices, n11, r, df, tterm, freq[r], n, norm, tab,
                                   hi - lo, out_indices[lo:hi], out_data[lo:hi])
    return written


@njit(cache=True, parallel=True, error_model="numpy")
def positive_top_k(indptr, indices, n11, df, tterm, freq, n, norm, tab, k, out_tok, out_val):
    """Top-k positively associated tokens of each row.

    ``tterm`` is ``token_terms(df, n, tab)``.
    Parameters
    ----------
    out_tok : ndarray of shape (b, k), int64
    out_val : ndarray of shape (b, k), float64
        Filled row by row; entries past the returned count are unspecified.

    Returns
    -------
    ndarray of shape (b,), int64
        Entries written per row.
    """
    b = indptr.shape[0] - 1
    counts = np.zeros(b, dtype=np.int64)
    for r in prange(b):
        counts[r] = _positive_row(indptr, indices, n11, r, df, tterm, freq[r], n, norm, tab, k,
                                  out_tok[r], out_val[r])
    return counts


@njit(cache=True, error_model="numpy")
def _full_row(indptr, indices, n11, r, df_code, df_unique, f, n, norm, tab, row):
    # Zero-co-occurrence value of every token: it depends on df alone, so it
    # is computed once per distinct df, then the co-occurring pairs override.
    zero_val = np.empty(df_unique.shape[0], dtype=np.float64)
    lterm = _pair_term(f, n, tab)
    hn = _xlogx(n, tab)
    for u in range(df_unique.shape[0]):
        zero_val[u] = _mi_core(0, df_unique[u], f, n, norm, tab, _pair_term(df_unique[u], n, tab), lterm, hn)
    for t in range(row.shape[0]):
        row[t] = zero_val[df_code[t]]
    for p in range(indptr[r], indptr[r + 1]):
        t = indices[p]
        d = df_unique[df_code[t]]
        row[t] = _mi_core(n11[p], d, f, n, norm, tab, _pair_term(d, n, tab), lterm, hn)


@njit(cache=True, parallel=True, error_model="numpy")
def all_pairs_dense(indptr, indices, n11, df_code, df_unique, freq, n, norm, tab, out):
    """Exact MIG of every (row, token) pair, written into a dense block.

    Parameters
    ----------
    df_code : ndarray of shape (V,), int64
        Index of each token's df in ``df_unique``.
    df_unique : ndarray of shape (U,), int64
        The distinct document frequencies.
    out : ndarray of shape (b, V), float64
    """
    b = indptr.shape[0] - 1
    for r in prange(b):
        _full_row(indptr, indices, n11, r, df_code, df_unique, freq[r], n, norm, tab, out[r])


@njit(cache=True, parallel=True, error_model="numpy")
def all_pairs_top_k(indptr, indices, n11, df_code, df_unique, freq, n, norm, tab, k, out_tok, out_val):
    """Top-k over all V tokens of each row (zero co-occurrence included).

    Tokens with MIG exactly 0 are never selected. Returns the count per row.
    """
    b = indptr.shape[0] - 1
    v_size = df_code.shape[0]
    counts = np.zeros(b, dtype=np.int64)
    for r in prange(b):
        row = np.empty(v_size, dtype=np.float64)
        _full_row(indptr, indices, n11, r, df_code, df_unique, freq[r], n, norm, tab, row)
        m = 0
        for t in range(v_size):
            if row[t] > 0.0:
                m += 1
        tok = np.empty(m, dtype=np.int64)
        val = np.empty(m, dtype=np.float64)
        j = 0
        for t in range(v_size):
            if row[t] > 0.0:
                tok[j] = t
                val[j] = row[t]
                j += 1
        counts[r] = _select_top_k(tok, val, m, k, out_tok[r], out_val[r])
    return counts
