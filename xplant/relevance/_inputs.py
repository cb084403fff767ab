"""What MIGRelevance accepts as X: texts, token lists or a document-token matrix."""

import numbers

import numpy as np
import scipy.sparse as sp

from ._corpus import TokenCorpus


def _check_matrix(X):
    """A document-token count matrix, checked as scikit-learn checks arrays.

    Finite, 2-D, at least one document, real (not complex) and non-negative
    counts; scikit-learn's own messages.
    """
    from sklearn.utils.validation import check_array, check_non_negative
    A = check_array(X, accept_sparse=True, dtype=None, ensure_all_finite=True)
    check_non_negative(A, "MIGRelevance (a document-token count matrix)")


def is_count_matrix(X):
    """Whether X is read as a document-token count matrix: sparse, or a numeric ndarray.

    The one test, shared by MIGRelevance and the neural estimators. Such an
    X is then checked as scikit-learn checks arrays (2-D, finite, real,
    non-negative).
    """
    return sp.issparse(X) or (isinstance(X, np.ndarray) and X.dtype.kind in "biufc")


def _input_kind(X):
    """'matrix', 'text' or 'tokens' for an input X; raise on anything else."""
    if is_count_matrix(X):
        _check_matrix(X)
        return "matrix"
    if isinstance(X, str):
        raise TypeError(
            "X must be a list of documents, not a single string; wrap it: [text]."
        )
    if isinstance(X, TokenCorpus):
        raise TypeError("X is already a TokenCorpus; pass the raw texts instead.")
    try:
        n = len(X)
    except TypeError:
        raise TypeError(
            f"X must be a list of texts, a list of token lists, or a document-token "
            f"matrix; got {type(X).__name__}."
        ) from None
    if n == 0:
        raise ValueError("X is empty: at least one document is needed.")
    first = X[0] if not hasattr(X, "iloc") else X.iloc[0]
    if isinstance(first, str):
        return "text"
    if isinstance(first, (list, tuple, np.ndarray)):
        return "tokens"
    raise TypeError(
        "X must be a list of texts (str), a list of token lists (list of str), or a "
        f"document-token matrix; its first item is {type(first).__name__}."
    )


def _raw_texts(X):
    """X as a list of str when it is raw texts (kept by the token corpus), else None."""
    if sp.issparse(X) or getattr(X, "ndim", 1) != 1:
        return None
    texts = list(X)
    return texts if all(isinstance(x, str) for x in texts) else None


def _as_docs(X, kind):
    docs = list(X) if not hasattr(X, "iloc") else X.tolist()
    if kind == "text":
        for i, d in enumerate(docs):
            if not isinstance(d, str):
                raise TypeError(f"X[{i}] is {type(d).__name__}, expected str like X[0].")
    else:
        for i, d in enumerate(docs):
            if isinstance(d, str) or not isinstance(d, (list, tuple, np.ndarray)):
                raise TypeError(f"X[{i}] is {type(d).__name__}, expected a list of tokens.")
    return docs


def _presence(seqs, n_cols):
    """(n_docs, n_cols) int64 CSR token-presence matrix of id sequences."""
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    indptr = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.concatenate(seqs) if seqs else np.zeros(0, np.int64)
    B = sp.csr_matrix(
        (np.ones(indices.shape[0], dtype=np.int64), indices, indptr), shape=(len(seqs), n_cols)
    )
    B.sum_duplicates()
    B.data[:] = 1
    return B


def _drop_columns(M, keep):
    """Copy of CSR ``M`` without the entries of columns where ``keep`` is False."""
    M = M.copy()
    M.data[~keep[M.indices]] = 0
    M.eliminate_zeros()
    return M


def _df_bounds(min_df, max_df, n_docs):
    lo = min_df if isinstance(min_df, numbers.Integral) else min_df * n_docs
    hi = max_df if isinstance(max_df, numbers.Integral) else max_df * n_docs
    return lo, hi
