"""The Extreme Classification Repository / LibSVM multi-label text format.

One header line ``n_docs n_features n_labels``, then one line per document::

    l1,l2,... f1:v1 f2:v2 ...

Labels and features are 0-based integers; the label field may be empty.
"""

import numpy as np
import scipy.sparse as sp

from sklearn.utils import Bunch


def _parse_labels(text, lineno):
    text = text.strip()
    if not text:
        return []
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise ValueError(f"line {lineno}: bad label {part!r} (labels are non-negative integers)")
        out.append(int(part))
    return out


def load_xc(path, header="auto", n_features=None, n_labels=None, return_X_y=False):
    """Read a multi-label file in the XC-repository (LibSVM-style) format.

    Parameters
    ----------
    path : str or Path
        The file to read.
    header : {"auto", True, False}, default="auto"
        Whether the first line is ``n_docs n_features n_labels``. ``"auto"``:
        yes when it is three integers without ``:``.
    n_features, n_labels : int, optional
        Sizes to use without a header (default: largest index + 1).
    return_X_y : bool, default=False
        Return ``(X, Y)`` only.

    Returns
    -------
    Bunch
        ``X`` (CSR float64 of shape (n_docs, n_features)), ``Y`` (CSR int64
        {0, 1} of shape (n_docs, n_labels)), ``label_names`` (``"0"``,
        ``"1"``, ...), ``ids`` (``"0"``, ``"1"``, ...), ``label_frequency``,
        ``texts`` (None: this format holds features, not text) and ``record``.
        With ``return_X_y=True``: ``(X, Y)``.

    Raises
    ------
    ValueError
        On a malformed line (naming its number), an index beyond the
        header's sizes, or a document count different from the header's.
        Nothing is ever dropped or truncated silently.

    Notes
    -----
    An empty label field is a legal row (a document without labels). Spaces
    after commas (``"3, 7 1:1"``) and a trailing ``\\r`` are accepted.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "toy.txt")
    >>> _ = open(p, "w").write("2 3 4\\n0,3 1:0.5\\n 2:1\\n")
    >>> b = load_xc(p)
    >>> b.Y.toarray().tolist(), b.X.toarray().tolist()
    ([[1, 0, 0, 1], [0, 0, 0, 0]], [[0.0, 0.5, 0.0], [0.0, 0.0, 1.0]])
    """
    with open(path, encoding="utf-8-sig", newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln.rstrip("\r") for ln in lines]
    start = 0
    declared = None
    if lines:
        first = lines[0].split()
        looks = len(first) == 3 and all(t.isdigit() for t in first) and ":" not in lines[0]
        if header is True or (header == "auto" and looks):
            if not looks:
                raise ValueError(f"line 1: expected a header 'n_docs n_features n_labels', got {lines[0]!r}")
            declared = tuple(int(t) for t in first)
            start = 1
    label_rows, feat_idx, feat_val, indptr = [], [], [], [0]
    for lineno, line in enumerate(lines[start:], start + 1):
        tokens = line.split()
        # the label field is everything before the first token with ':'
        cut = next((i for i, t in enumerate(tokens) if ":" in t), len(tokens))
        label_rows.append(_parse_labels(" ".join(tokens[:cut]), lineno))
        for tok in tokens[cut:]:
            if not tok:
                continue
            key, sep, val = tok.partition(":")
            try:
                if not sep or not key.isdigit():
                    raise ValueError
                feat_idx.append(int(key))
                feat_val.append(float(val))
            except ValueError:
                raise ValueError(f"line {lineno}: bad feature {tok!r} (expected index:value)") from None
        indptr.append(len(feat_idx))
    n_docs = len(label_rows)
    max_feat = max(feat_idx, default=-1) + 1
    max_lab = max((max(r) for r in label_rows if r), default=-1) + 1
    if declared is not None:
        if declared[0] != n_docs:
            raise ValueError(f"header declares {declared[0]} documents, file has {n_docs}")
        n_features = declared[1] if n_features is None else n_features
        n_labels = declared[2] if n_labels is None else n_labels
    n_features = max_feat if n_features is None else n_features
    n_labels = max_lab if n_labels is None else n_labels
    if max_feat > n_features:
        raise ValueError(f"feature index {max_feat - 1} is beyond n_features={n_features}")
    if max_lab > n_labels:
        raise ValueError(f"label index {max_lab - 1} is beyond n_labels={n_labels}")
    X = sp.csr_matrix(
        (np.asarray(feat_val, dtype=np.float64), np.asarray(feat_idx, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(n_docs, n_features),
    )
    X.sum_duplicates()
    y_indptr = np.cumsum([0] + [len(set(r)) for r in label_rows]).astype(np.int64)
    y_indices = np.concatenate([np.unique(np.asarray(r, dtype=np.int64)) for r in label_rows] + [np.empty(0, np.int64)])
    Y = sp.csr_matrix((np.ones(len(y_indices), dtype=np.int64), y_indices, y_indptr), shape=(n_docs, n_labels))
    if return_X_y:
        return X, Y
    n_dup = sum(len(r) for r in label_rows) - Y.nnz
    frequency = np.bincount(Y.indices, minlength=n_labels).astype(np.int64)
    record = {
        "dataset": "xc",
        "source": "XC-repository / LibSVM multi-label file",
        "split": None,
        "label_policy": "label ids 0..n_labels-1" + (" (from the header)" if declared else " (largest id + 1)"),
        "header": list(declared) if declared else None,
        "n_documents": n_docs,
        "n_features": int(n_features),
        "n_labels": int(n_labels),
        "n_positives": int(Y.nnz),
        "n_documents_without_labels": int(np.count_nonzero(np.diff(Y.indptr) == 0)),
        "n_duplicate_labels_removed": int(n_dup),
    }
    return Bunch(
        X=X,
        Y=Y,
        texts=None,
        label_names=np.arange(n_labels).astype(str),
        ids=np.arange(n_docs).astype(str),
        label_frequency=frequency,
        record=record,
    )


def dump_xc(path, X, Y):
    """Write features and labels in the XC-repository (LibSVM-style) format.

    Parameters
    ----------
    path : str or Path
        The file to write (replaced if it exists).
    X : {ndarray, sparse matrix} of shape (n_docs, n_features)
        Feature values; zeros are not written.
    Y : {ndarray, sparse matrix} of shape (n_docs, n_labels), values 0/1
        Label indicator matrix; each row's positive columns are written as its labels.

    Notes
    -----
    Writes the header ``n_docs n_features n_labels``; a document without
    labels gets an empty label field. Values use ``repr`` precision, so
    :func:`load_xc` reads back exactly what was written.

    Raises
    ------
    ValueError
        If X and Y have different numbers of rows or Y is not 0/1.
    """
    X = sp.csr_matrix(X)
    Y = sp.csr_matrix(Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    Y.eliminate_zeros()
    if Y.nnz and not np.all(Y.data == 1):
        raise ValueError("Y must contain only 0 and 1")
    X.sort_indices()
    Y.sort_indices()
    from .._files import atomic_open
    with atomic_open(path, "w", newline="\n") as fh:
        fh.write(f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n")
        for i in range(X.shape[0]):
            labs = ",".join(str(j) for j in Y.indices[Y.indptr[i] : Y.indptr[i + 1]])
            feats = " ".join(
                f"{j}:{float(v)!r}"
                for j, v in zip(X.indices[X.indptr[i] : X.indptr[i + 1]], X.data[X.indptr[i] : X.indptr[i + 1]])
            )
            fh.write(f"{labs} {feats}".rstrip() + "\n" if feats else labs + "\n")
