"""Numba kernels for token-label mutual information gain (MIG).

Every kernel takes plain arrays: a CSR matrix is passed as ``indptr``,
``indices`` and ``data``. The parallel kernels run ``prange`` over the rows
(labels) of a block, and each row writes only its own output slice, so no
two threads ever write the same memory. Validation lives in ``_mig.py``.

Counts arrive as int64 and are converted to float64 inside the kernels, so
products such as ``N * n11`` never overflow 32-bit integers. The float64
products are exact while they stay below 2**53 (N below about 9.4e7
documents).

Normalization codes: 0 = none, 1 = ``"joint"`` (MI / H(T, L)),
2 = ``"label"`` (MI / H(L)).
"""

import numpy as np
from numba import njit, prange

NORM_NONE = 0
NORM_JOINT = 1
NORM_LABEL = 2


@njit(cache=True, error_model="numpy")
def _cell(nab, na, nb, n):
    # (n_ab / N) * log2(n_ab * N / (n_a * n_b)), times N; 0 log 0 = 0.
    if nab == 0.0:
        return 0.0
    return nab * np.log2((nab * n) / (na * nb))


@njit(cache=True, error_model="numpy")
def _plogp(c, n):
    # -(c / N) log2(c / N), times N.
    if c == 0.0:
        return 0.0
    return -c * np.log2(c / n)


@njit(cache=True, error_model="numpy")
def mig_cell(n11, df, freq, n, norm):
    """MIG in bits of one (token, label) 2x2 table, optionally normalized.

    Parameters
    ----------
    n11 : int
        Documents holding the token and the label.
    df : int
        Documents holding the token, n1..
    freq : int
        Documents holding the label, n.1.
    n : int
        Documents in total, N.
    norm : int
        0 none, 1 MI / H(T, L), 2 MI / H(L).

    Returns
    -------
    float
        The (normalized) mutual information, >= 0; 0 when the normalizer is 0.
    """
    n11f = float(n11)
    n1 = float(df)
    m1 = float(freq)
    nf = float(n)
    if nf <= 0.0:
        return 0.0
    n10 = n1 - n11f
    n01 = m1 - n11f
    n00 = nf - n1 - m1 + n11f
    if n10 < 0.0 or n01 < 0.0 or n00 < 0.0:
        return 0.0  # inconsistent counts: no such table exists
    n0 = nf - n1
    m0 = nf - m1
    mi = (
        _cell(n11f, n1, m1, nf)
        + _cell(n10, n1, m0, nf)
        + _cell(n01, n0, m1, nf)
        + _cell(n00, n0, m0, nf)
    ) / nf
    if mi <= 0.0:
        return 0.0
    if norm == NORM_JOINT:
        h = (_plogp(n11f, nf) + _plogp(n10, nf) + _plogp(n01, nf) + _plogp(n00, nf)) / nf
        if h <= 0.0:
            return 0.0
        mi = mi / h
    elif norm == NORM_LABEL:
        h = (_plogp(m1, nf) + _plogp(m0, nf)) / nf
        if h <= 0.0:
            return 0.0
        mi = mi / h
    return mi


@njit(cache=True, error_model="numpy")
def mig_cells(n11, df, freq, n, norm):
    """Vectorised :func:`mig_cell` over equal-length int64 arrays.

    Parameters
    ----------
    n11, df, freq : ndarray of shape (m,), int64
        The counts of each table.
    n : int
        Documents in total.
    norm : int
        Normalization code.

    Returns
    -------
    ndarray of shape (m,), float64
    """
    out = np.empty(n11.shape[0], dtype=np.float64)
    for i in range(n11.shape[0]):
        out[i] = mig_cell(n11[i], df[i], freq[i], n, norm)
    return out


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
    thr = np.partition(tmp, m - k)[m - k]  # the k-th largest value
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
        The CSR block of co-occurrence counts, shape (b, V), int64 data.
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


@njit(cache=True, parallel=True, error_model="numpy")
def positive_rows(indptr, indices, n11, df, freq, n, norm, out_indptr, out_indices, out_data):
    """Fill every positively associated pair of each row, sorted by token id.

    ``out_indptr`` comes from the cumulative sum of :func:`positive_row_counts`.
    Pairs whose (normalized) MIG is exactly 0 are dropped; the number written
    per row is returned, so the caller can compact the result.
    """
    b = indptr.shape[0] - 1
    written = np.zeros(b, dtype=np.int64)
    for r in prange(b):
        f = freq[r]
        start = out_indptr[r]
        m = out_indptr[r + 1] - start
        tok = np.empty(m, dtype=np.int64)
        val = np.empty(m, dtype=np.float64)
        j = 0
        for p in range(indptr[r], indptr[r + 1]):
            t = indices[p]
            if n11[p] * n > df[t] * f:
                v = mig_cell(n11[p], df[t], f, n, norm)
                if v > 0.0:
                    tok[j] = t
                    val[j] = v
                    j += 1
        order = np.argsort(tok[:j])
        for q in range(j):
            out_indices[start + q] = tok[order[q]]
            out_data[start + q] = val[order[q]]
        written[r] = j
    return written


@njit(cache=True, parallel=True, error_model="numpy")
def positive_top_k(indptr, indices, n11, df, freq, n, norm, k, out_tok, out_val):
    """Top-k positively associated tokens of each row.

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
        f = freq[r]
        m = indptr[r + 1] - indptr[r]
        tok = np.empty(m, dtype=np.int64)
        val = np.empty(m, dtype=np.float64)
        j = 0
        for p in range(indptr[r], indptr[r + 1]):
            t = indices[p]
            if n11[p] * n > df[t] * f:
                v = mig_cell(n11[p], df[t], f, n, norm)
                if v > 0.0:
                    tok[j] = t
                    val[j] = v
                    j += 1
        counts[r] = _select_top_k(tok, val, j, k, out_tok[r], out_val[r])
    return counts


@njit(cache=True, error_model="numpy")
def _full_row(indptr, indices, n11, r, df_code, df_unique, f, n, norm, row):
    # Zero-co-occurrence value of every token: it depends on df alone, so it
    # is computed once per distinct df, then the co-occurring pairs override.
    zero_val = np.empty(df_unique.shape[0], dtype=np.float64)
    for u in range(df_unique.shape[0]):
        zero_val[u] = mig_cell(0, df_unique[u], f, n, norm)
    for t in range(row.shape[0]):
        row[t] = zero_val[df_code[t]]
    for p in range(indptr[r], indptr[r + 1]):
        t = indices[p]
        row[t] = mig_cell(n11[p], df_unique[df_code[t]], f, n, norm)


@njit(cache=True, parallel=True, error_model="numpy")
def all_pairs_dense(indptr, indices, n11, df_code, df_unique, freq, n, norm, out):
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
        _full_row(indptr, indices, n11, r, df_code, df_unique, freq[r], n, norm, out[r])


@njit(cache=True, parallel=True, error_model="numpy")
def all_pairs_top_k(indptr, indices, n11, df_code, df_unique, freq, n, norm, k, out_tok, out_val):
    """Top-k over all V tokens of each row (zero co-occurrence included).

    Tokens with MIG exactly 0 are never selected. Returns the count per row.
    """
    b = indptr.shape[0] - 1
    v_size = df_code.shape[0]
    counts = np.zeros(b, dtype=np.int64)
    for r in prange(b):
        row = np.empty(v_size, dtype=np.float64)
        _full_row(indptr, indices, n11, r, df_code, df_unique, freq[r], n, norm, row)
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
