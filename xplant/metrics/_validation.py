"""Input checks shared by the metrics. They return plain, kernel-ready arrays."""

import numbers

import numpy as np
import scipy.sparse as sp

EMPTY_ROWS = ("skip", "zero")


def check_k(k, name="k"):
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"{name} must be a positive integer, got {k!r}.")
    return int(k)


def check_choice(value, options, name):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}.")
    return value


def check_binary(y, name="y_true"):
    """Return y as a canonical CSR indicator matrix: sorted indices, data all 1.

    Accepts any 0/1 numeric or boolean dense array or sparse matrix of shape
    (n_samples, n_labels). Stored zeros are dropped; dense input is converted
    (it is already (n, L) in memory).
    """
    if sp.issparse(y):
        y = y.tocsr()
        if y.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_samples, n_labels), got shape {y.shape}.")
        data = y.data
        if data.dtype != np.bool_ and data.size and not np.all((data == 0) | (data == 1)):
            raise ValueError(
                f"{name} must hold only 0/1 values (a label indicator matrix); "
                "binarize it first, e.g. (Y > 0).astype(np.int64)."
            )
        out = sp.csr_matrix(
            (np.ones(y.nnz, dtype=np.int8), y.indices.copy(), y.indptr.copy()), shape=y.shape
        )
        if data.size:
            keep = data != 0
            if not np.all(keep):
                out.data = keep.astype(np.int8)
                out.eliminate_zeros()
        if not out.has_canonical_format:
            out.sum_duplicates()
            out.data[:] = 1
    else:
        arr = np.asarray(y)
        if arr.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D (n_samples, n_labels), got shape {arr.shape}; "
                "for one sample use y.reshape(1, -1)."
            )
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_
        ):
            raise ValueError(f"{name} must be numeric or boolean, got dtype {arr.dtype}.")
        if arr.dtype != np.bool_ and not np.all((arr == 0) | (arr == 1)):
            raise ValueError(
                f"{name} must hold only 0/1 values (a label indicator matrix); "
                "binarize it first, e.g. (Y > 0).astype(np.int64)."
            )
        out = sp.csr_matrix(arr != 0, dtype=np.int8)
    out.indptr = out.indptr.astype(np.int64, copy=False)
    out.indices = out.indices.astype(np.int64, copy=False)
    return out


def check_scores(y_score, shape=None, name="y_score"):
    """Return y_score as float (n, L) ndarray or canonical CSR, with no NaN."""
    if sp.issparse(y_score):
        s = y_score.tocsr()
        if not s.has_canonical_format:
            s = s.copy()
            s.sum_duplicates()
        if not np.issubdtype(s.dtype, np.floating):
            s = s.astype(np.float64)
        data = s.data
        if s.indptr.dtype != np.int64 or s.indices.dtype != np.int64:
            # a new matrix object sharing the arrays: never mutate the caller's
            s = sp.csr_matrix((s.data, s.indices, s.indptr), shape=s.shape, copy=False)
            s.indptr = s.indptr.astype(np.int64)
            s.indices = s.indices.astype(np.int64)
    else:
        s = np.asarray(y_score)
        if s.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D (n_samples, n_labels), got shape {s.shape}; "
                "for one sample use y_score.reshape(1, -1)."
            )
        if not (np.issubdtype(s.dtype, np.number) or s.dtype == np.bool_):
            raise ValueError(f"{name} must be numeric, got dtype {s.dtype}.")
        if s.dtype not in (np.float32, np.float64):
            s = s.astype(np.float64)
        s = np.ascontiguousarray(s)
        data = s
    if np.isnan(data).any():
        raise ValueError(f"{name} contains NaN; replace NaN scores (e.g. with -np.inf) first.")
    if shape is not None and s.shape != tuple(shape):
        raise ValueError(
            f"{name} has shape {s.shape} but y_true has shape {tuple(shape)}; "
            "both must be (n_samples, n_labels) over the same label columns."
        )
    return s


def check_top_k(y_top_k, n_samples, n_labels, k, name="y_top_k"):
    """Validate precomputed top-k label indices: int (n, >=k), -1 = no prediction."""
    a = np.asarray(y_top_k)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D int array (n_samples, k), got shape {a.shape}.")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integer label indices, got dtype {a.dtype}.")
    a = a.astype(np.int64, copy=False)
    if a.shape[0] != n_samples:
        raise ValueError(f"{name} has {a.shape[0]} rows but y_true has {n_samples}.")
    if k is not None and a.shape[1] < k:
        raise ValueError(
            f"{name} has {a.shape[1]} columns but k={k}; pass at least k predictions per "
            "row (pad with -1 for 'no prediction')."
        )
    if a.size:
        if a.min() < -1 or a.max() >= n_labels:
            raise ValueError(
                f"{name} holds label indices outside [-1, {n_labels - 1}]; -1 marks "
                "'no prediction', other values index y_true's columns."
            )
        s = np.sort(a, axis=1)
        if np.any((s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)):
            raise ValueError(f"{name} repeats a label within a row; each row must rank distinct labels.")
    return a


def csr_parts(m):
    return m.indptr, m.indices, m.data
