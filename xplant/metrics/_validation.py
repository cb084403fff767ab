"""Input checks shared by the metrics. They return plain, kernel-ready arrays."""

import numbers

import numpy as np
import scipy.sparse as sp

from .._labels import check_indicator

EMPTY_ROWS = ("skip", "zero")


def check_k(k, name="k", n_labels=None):
    """The one check of a cut-off ``k``: a positive integer (numpy ones too), at most ``n_labels``.

    Parameters
    ----------
    k : int
        The cut-off to check.
    name : str, default="k"
        The parameter's name in the error message.
    n_labels : int, optional
        The number of labels, the largest valid ``k``.

    Returns
    -------
    int
        ``k`` as a Python int.

    Raises
    ------
    ValueError
        If ``k`` is not a positive integer, or exceeds ``n_labels`` when given.
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"{name} must be a positive integer, got {k!r}.")
    if n_labels is not None and k > n_labels:
        raise ValueError(f"{name} must be between 1 and the number of labels ({n_labels}); "
                         f"got {k}.")
    return int(k)


def check_choice(value, options, name):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}.")
    return value


def check_binary(y, name="y_true"):
    """Return y as a canonical CSR indicator matrix (int8 values, int64 indices).

    The check itself is :func:`xplant._labels.check_indicator`, shared with
    the rest of xplant.
    """
    return check_indicator(y, name=name, dtype=np.int8)


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
    if k is not None and a.shape[1] < min(k, n_labels):
        raise ValueError(
            f"{name} has {a.shape[1]} columns but k={k}; pass at least min(k, n_labels) "
            "predictions per row (pad with -1 for 'no prediction')."
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


def label_scores(final, raw):
    """A score block as a float64 (n_rows, n_labels) array.

    A sparse matrix is made dense; a list of per-label (n_rows, n_classes)
    probability arrays (the ``predict_proba`` of scikit-learn's multi-output
    classifiers, e.g. ``RandomForestClassifier`` or
    ``MultiOutputClassifier``) becomes each label's probability of class 1
    (0 for a label whose training column held no 1).
    """
    if sp.issparse(raw):
        return raw.toarray().astype(np.float64)
    if not isinstance(raw, list):
        return np.asarray(raw, dtype=np.float64)
    classes = getattr(final, "classes_", None)
    cols = []
    for j, p in enumerate(raw):
        p = np.asarray(p, dtype=np.float64)
        cl = np.asarray(classes[j]) if classes is not None else np.arange(p.shape[1])
        hit = np.flatnonzero(cl == 1)
        cols.append(p[:, hit[0]] if hit.size else np.zeros(p.shape[0]))
    return np.column_stack(cols) if cols else np.empty((0, 0))
