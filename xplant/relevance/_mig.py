"""Exact token-label mutual information gain (MIG) from one sparse product."""

import contextlib
import numbers

import numba
import numpy as np
import scipy.sparse as sp

from .._labels import check_indicator
from . import _kernels

_NORMALIZE = {None: _kernels.NORM_NONE, "joint": _kernels.NORM_JOINT, "label": _kernels.NORM_LABEL}

# Upper bound on the non-zeros of one label block of X^T Y (about 12 bytes
# each in the product, plus the kernels' per-row buffers).
_BLOCK_NNZ = 1 << 24
# Upper bound on the cells of one dense block when positive_only=False and
# top_k=None (8 bytes each).
_BLOCK_DENSE = 1 << 24


@contextlib.contextmanager
def numba_threads(n_jobs):
    """Set numba's thread count for the duration of a ``with`` block.

    Parameters
    ----------
    n_jobs : int or None
        None keeps the current count; -1 uses every thread numba was started
        with; other negative values count back from there, as in joblib.

    Raises
    ------
    ValueError
        If ``n_jobs`` is 0 or not an integer.
    """
    if n_jobs is None:
        yield
        return
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    limit = numba.config.NUMBA_NUM_THREADS
    n = int(n_jobs) if n_jobs > 0 else limit + 1 + int(n_jobs)
    n = min(max(n, 1), limit)
    previous = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def _as_csr(A, name):
    if sp.issparse(A):
        A = sp.csr_matrix(A)
    else:
        A = np.asarray(A)
        if A.dtype == object:
            raise TypeError(f"{name} must be numeric (a sparse matrix or an array), got dtype=object.")
        if A.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional (n_docs, n_columns), got shape {A.shape}.")
        A = sp.csr_matrix(A)
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional, got shape {A.shape}.")
    return A


def count_dtype(n_docs):
    """Integer dtype of the sparse product's counts: int32 while N < 2**31.

    Co-occurrence counts never exceed N, so int32 holds them; the kernels form
    every product of counts in int64.
    """
    return np.int32 if n_docs < np.iinfo(np.int32).max else np.int64


def binarize_tokens(X, dtype=np.int64):
    """Token presence matrix of a document-token matrix.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_docs, V)
        Non-negative counts (or presence flags).

    Returns
    -------
    B : csr_matrix of shape (n_docs, V), of ``dtype`` (int64 by default)
        1 where the token occurs in the document, no explicit zeros, sorted
        indices, no duplicates.

    Raises
    ------
    ValueError
        If X has negative or non-finite entries.
    """
    X = _as_csr(X, "X")
    if X.dtype != object and X.has_canonical_format and np.all(X.data == 1):
        # Already a presence matrix: share its structure.
        return sp.csr_matrix(
            (np.ones(X.nnz, dtype=dtype), X.indices, X.indptr), shape=X.shape, copy=False
        )
    if X.dtype == np.bool_:
        data = X.data.astype(np.int64)
    else:
        data = X.data
        if not np.issubdtype(data.dtype, np.number):
            raise TypeError(f"X must hold numbers, got dtype={data.dtype}.")
        if data.size and (not np.all(np.isfinite(data)) or data.min() < 0):
            raise ValueError(
                "X must hold non-negative finite token counts; found negative or "
                "non-finite entries. Pass a document-token count or presence matrix."
            )
    B = sp.csr_matrix((data, X.indices, X.indptr), shape=X.shape)
    B.sum_duplicates()
    B.data = (B.data != 0).astype(dtype)
    B.eliminate_zeros()
    return B


def binarize_labels(Y, n_docs=None, dtype=np.int64):
    """Validate a {0, 1} label matrix and return it as integer CSR.

    Parameters
    ----------
    Y : {array-like, sparse matrix} of shape (n_docs, L)
        Entries must be 0 or 1 (bool is accepted).
    n_docs : int, optional
        Expected number of rows.

    Returns
    -------
    csr_matrix of shape (n_docs, L), of ``dtype`` (int64 by default)

    Raises
    ------
    ValueError
        If Y has entries other than 0 and 1, or the wrong number of rows
        (:func:`xplant._labels.check_indicator`).
    """
    return check_indicator(Y, n_samples=n_docs, dtype=dtype)


def _check_options(top_k, positive_only, normalize):
    if top_k is not None:
        if not isinstance(top_k, numbers.Integral) or isinstance(top_k, bool) or top_k < 1:
            raise ValueError(f"top_k must be None or a positive integer, got {top_k!r}.")
    if normalize not in _NORMALIZE:
        raise ValueError(f"normalize must be None, 'joint' or 'label', got {normalize!r}.")
    if not isinstance(positive_only, (bool, np.bool_)):
        raise ValueError(f"positive_only must be a bool, got {positive_only!r}.")


def _label_blocks(row_cost, budget):
    """Split rows 0..L-1 into consecutive blocks of summed cost about ``budget``.

    A block ends at the row where the running cost crosses a multiple of
    ``budget``, so each block costs at most ``budget`` plus one row.
    """
    row_cost = np.asarray(row_cost, dtype=np.int64)
    if row_cost.shape[0] == 0:
        return [(0, 0)]
    start_cost = np.cumsum(row_cost) - row_cost
    block_id = start_cost // max(int(budget), 1)
    cuts = np.flatnonzero(np.diff(block_id)) + 1
    bounds = [0] + cuts.tolist() + [row_cost.shape[0]]
    return list(zip(bounds[:-1], bounds[1:]))


class _Assembler:
    """Collect CSR row blocks and stack them into one (L, V) matrix."""

    def __init__(self, n_cols):
        self.n_cols = n_cols
        self.counts = []
        self.indices = []
        self.data = []

    def add_top_k(self, kernel, n_rows, k, *args):
        """Add the rows of a top-k kernel run on ``n_rows`` rows.

        The one call of both top-k kernels: ``kernel(*args, k, out_tok,
        out_val)`` fills (n_rows, k) outputs and returns each row's count.
        """
        out_tok = np.empty((n_rows, k), dtype=np.int64)
        out_val = np.empty((n_rows, k), dtype=np.float64)
        counts = kernel(*args, k, out_tok, out_val)
        keep = np.arange(out_tok.shape[1])[None, :] < counts[:, None]
        self.counts.append(counts)
        self.indices.append(out_tok[keep])
        self.data.append(out_val[keep])

    def add_csr(self, counts, indices, data):
        self.counts.append(counts)
        self.indices.append(indices)
        self.data.append(data)

    def result(self, n_rows):
        counts = np.concatenate(self.counts) if self.counts else np.zeros(0, np.int64)
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.concatenate(self.indices) if self.indices else np.zeros(0, np.int64)
        data = np.concatenate(self.data) if self.data else np.zeros(0, np.float64)
        if indptr[-1] < np.iinfo(np.int32).max and self.n_cols < np.iinfo(np.int32).max:
            indptr = indptr.astype(np.int32)
            indices = indices.astype(np.int32)
        R = sp.csr_matrix((data, indices, indptr), shape=(n_rows, self.n_cols))
        R.has_sorted_indices = True
        return R


def _score_block(C, df, tterm, freq_blk, n, top_k, positive_only, norm, tab, df_code, df_unique, out):
    """Score one label block of co-occurrence counts and hand it to ``out``."""
    indptr = C.indptr.astype(np.int64, copy=False)
    indices = C.indices
    n11 = C.data
    b = C.shape[0]
    if positive_only:
        if top_k is None:
            counts = _kernels.positive_row_counts(indptr, indices, n11, df, freq_blk, n)
            o_ptr = np.zeros(b + 1, dtype=np.int64)
            np.cumsum(counts, out=o_ptr[1:])
            o_idx = np.empty(o_ptr[-1], dtype=np.int64)
            o_val = np.empty(o_ptr[-1], dtype=np.float64)
            written = _kernels.positive_rows(
                indptr, indices, n11, df, tterm, freq_blk, n, norm, tab, o_ptr, o_idx, o_val
            )
            if np.any(written != counts):
                pos = np.arange(o_ptr[-1]) - np.repeat(o_ptr[:-1], counts)
                keep = pos < np.repeat(written, counts)
                o_idx, o_val = o_idx[keep], o_val[keep]
            out.add_csr(written, o_idx, o_val)
        else:
            out.add_top_k(_kernels.positive_top_k, b, top_k,
                          indptr, indices, n11, df, tterm, freq_blk, n, norm, tab)
    else:
        if top_k is None:
            dense = np.empty((b, df.shape[0]), dtype=np.float64)
            _kernels.all_pairs_dense(
                indptr, indices, n11, df_code, df_unique, freq_blk, n, norm, tab, dense
            )
            D = sp.csr_matrix(dense)
            D.eliminate_zeros()
            out.add_csr(np.diff(D.indptr).astype(np.int64), D.indices.astype(np.int64), D.data)
        else:
            out.add_top_k(_kernels.all_pairs_top_k, b, top_k,
                          indptr, indices, n11, df_code, df_unique, freq_blk, n, norm, tab)


def _run_blocks(blocks, get_block, df, freq, n, top_k, positive_only, normalize, n_jobs):
    norm = _NORMALIZE[normalize]
    df = np.ascontiguousarray(df, dtype=np.int64)
    freq = np.ascontiguousarray(freq, dtype=np.int64)
    n_cols = df.shape[0]
    if positive_only:
        df_code = df_unique = None
    else:
        df_unique, df_code = np.unique(df, return_inverse=True)
        df_unique = df_unique.astype(np.int64)
        df_code = df_code.astype(np.int64).ravel()
    tab = _kernels.xlogx_table(n)
    tterm = _kernels.token_terms(df, int(n), tab)
    out = _Assembler(n_cols)
    # Label rows differ in cost by orders of magnitude (Zipfian labels): hand
    # them to threads in small dynamic chunks rather than one static split.
    with numba_threads(n_jobs), numba.parallel_chunksize(4):
        for start, stop in blocks:
            C = get_block(start, stop)
            _score_block(
                C, df, tterm, freq[start:stop], int(n), top_k, positive_only, norm, tab,
                df_code, df_unique, out,
            )
            del C
    return out.result(freq.shape[0])


def _blocks_for(row_cost, n_cols, top_k, positive_only, block_nnz):
    if not positive_only and top_k is None:
        rows = max(1, _BLOCK_DENSE // max(n_cols, 1))
        return [(s, min(s + rows, len(row_cost))) for s in range(0, len(row_cost), rows)]
    budget = _BLOCK_NNZ if block_nnz is None else int(block_nnz)
    return _label_blocks(np.minimum(row_cost, n_cols), budget)


def mig_scores(X, Y, *, top_k=None, positive_only=True, normalize=None, n_jobs=None,
               _block_nnz=None):
    """Exact mutual information gain (MIG) between every token and label, in bits.

    For token t and label l, the 2x2 table of document counts is
    n11 = (BᵀY)[t, l], n1. = df(t), n.1 = freq(l), N = n_docs, and::

        MIG[l, t] = sum_ab (n_ab / N) log2(n_ab N / (n_a. n_.b)),  0 log 0 = 0,

    exact, with no smoothing (PLANT, arXiv 2410.23066, Sec. 3; :doc:`/design`,
    section "Mutual information gain").

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_docs, V)
        Document-token counts or presence flags. Counts are binarised: only
        presence matters.
    Y : {array-like, sparse matrix} of shape (n_docs, L)
        Label indicators in {0, 1}.
    top_k : int or None, default=None
        Keep each label's top-k tokens, ties broken by the smaller token id.
        None keeps every pair (see ``positive_only``).
    positive_only : bool, default=True
        Keep only positively associated pairs, n11·N > df(t)·freq(l): tokens
        that signal the label, not tokens that avoid it. The result then
        depends only on the non-zeros of BᵀY.
    normalize : {None, "joint", "label"}, default=None
        None: plain MI. ``"joint"``: MI / H(T, L), as in the authors' code.
        ``"label"``: MI / H(L). A zero normalizer gives 0 (the MI is 0 too).
        Ranking and top-k use the normalized value.
    n_jobs : int or None, default=None
        Numba threads for the kernels; None keeps numba's current setting,
        -1 uses all. The previous setting is restored afterwards.

    Returns
    -------
    scores : csr_matrix of shape (L, V), float64
        MIG in bits (or normalized), with sorted column indices. Only values
        > 0 are stored; absent entries are 0 or were not selected.

        - ``positive_only=True``: the positively associated pairs (all of
          them, or each label's top-k).
        - ``positive_only=False, top_k=k``: each label's top-k over all V
          tokens, pairs that never co-occur included (their MI depends only on
          df(t), freq(l) and N), computed exactly.
        - ``positive_only=False, top_k=None``: every pair, exact; in general
          this is dense (about L·V stored values), built in label blocks.

    Raises
    ------
    ValueError
        If X and Y have different numbers of rows, Y is not {0, 1}, X has
        negative counts, or an option is invalid.

    Notes
    -----
    The co-occurrence counts come from one sparse product, computed over
    blocks of labels so that peak memory is about one block's share of BᵀY
    plus L·k for the result; a dense V×L matrix is never built (except as the
    requested output of ``positive_only=False, top_k=None``, in blocks). Work
    is O(nnz(BᵀY)) for the scores and top-k selection after the product.
    The product's counts are int32 (they never exceed N; int64 from 2**31
    documents) and every product of counts is formed in int64. The MI is
    computed in float64 from a table of x·log2(x) over counts, as
    ``N·MI = Σ xlogx(n_ab) − Σ xlogx(n_a·) − Σ xlogx(n_·b) + xlogx(N)``; factorising
    tables give exactly 0. Agreement with ``sklearn.metrics.mutual_info_score``
    is tested to 1e-12.

    Examples
    --------
    >>> import numpy as np
    >>> from xplant.relevance import mig_scores
    >>> X = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 0], [0, 1, 1]])
    >>> Y = np.array([[1], [1], [0], [0]])
    >>> S = mig_scores(X, Y)
    >>> S.shape, S.indices.tolist()
    ((1, 3), [0])
    >>> round(float(S[0, 0]), 6)  # token 0 occurs exactly with label 0: H(L) = 1 bit
    1.0
    """
    _check_options(top_k, positive_only, normalize)
    B = _as_csr(X, "X")
    dtype = count_dtype(B.shape[0])
    B = binarize_tokens(B, dtype)
    Yc = binarize_labels(Y, n_docs=B.shape[0], dtype=dtype)
    n = B.shape[0]
    df = np.bincount(B.indices, minlength=B.shape[1]).astype(np.int64)
    freq = np.bincount(Yc.indices, minlength=Yc.shape[1]).astype(np.int64)
    YT = Yc.T.tocsr()
    # Upper bound of each label's non-zeros in YᵀB: tokens summed over its docs.
    doc_len = np.diff(B.indptr).astype(np.int64)
    row_cost = YT @ doc_len
    blocks = _blocks_for(row_cost, B.shape[1], top_k, positive_only, _block_nnz)

    def get_block(start, stop):
        return YT[start:stop] @ B

    return _run_blocks(blocks, get_block, df, freq, n, top_k, positive_only, normalize, n_jobs)


def mig_from_counts(C, df, freq, n_docs, *, top_k=None, positive_only=True, normalize=None,
                    n_jobs=None, _block_nnz=None):
    """MIG from accumulated counts: the co-occurrences YᵀB and the margins.

    This is the second half of :func:`mig_scores`; it lets counts gathered
    over document shards (:meth:`MIGRelevance.partial_fit`) give exactly the
    same result as one pass over all documents.

    Parameters
    ----------
    C : sparse matrix of shape (L, V)
        Co-occurrence counts n11 (integers >= 0), labels by tokens.
    df : array-like of shape (V,), int
        Documents holding each token.
    freq : array-like of shape (L,), int
        Documents holding each label.
    n_docs : int
        Documents in total.
    top_k, positive_only, normalize, n_jobs
        As in :func:`mig_scores`.

    Returns
    -------
    csr_matrix of shape (L, V), float64
        As in :func:`mig_scores`.

    Raises
    ------
    ValueError
        If ``C``'s shape is not ``(len(freq), len(df))``, a count is
        negative, a document frequency lies outside [0, ``n_docs``], or an
        option is invalid (as in :func:`mig_scores`).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> C = sp.csr_matrix(np.array([[2, 1, 1]]))
    >>> S = mig_from_counts(C, df=[2, 3, 2], freq=[2], n_docs=4)
    >>> S.indices.tolist(), round(float(S[0, 0]), 6)
    ([0], 1.0)
    """
    _check_options(top_k, positive_only, normalize)
    C = sp.csr_matrix(C)
    df = np.asarray(df, dtype=np.int64).ravel()
    freq = np.asarray(freq, dtype=np.int64).ravel()
    if C.shape != (freq.shape[0], df.shape[0]):
        raise ValueError(
            f"C must have shape (len(freq), len(df)) = ({freq.shape[0]}, {df.shape[0]}), "
            f"got {C.shape}."
        )
    n_docs = int(n_docs)
    if df.size and (df.min() < 0 or df.max() > n_docs):
        raise ValueError("df must lie in [0, n_docs].")
    if freq.size and (freq.min() < 0 or freq.max() > n_docs):
        raise ValueError("freq must lie in [0, n_docs].")
    C.sum_duplicates()
    if C.nnz and C.data.min() < 0:
        raise ValueError("Co-occurrence counts must be non-negative.")
    C = sp.csr_matrix((C.data.astype(count_dtype(n_docs)), C.indices, C.indptr), shape=C.shape)
    row_cost = np.diff(C.indptr).astype(np.int64)
    blocks = _blocks_for(row_cost, C.shape[1], top_k, positive_only, _block_nnz)

    def get_block(start, stop):
        return C[start:stop]

    return _run_blocks(
        blocks, get_block, df, freq, n_docs, top_k, positive_only, normalize, n_jobs
    )
