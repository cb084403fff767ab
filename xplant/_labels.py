"""The one check of a multi-label indicator matrix, shared by every part of xplant.

Metrics, MIG, the baselines, the splitters and the neural estimators all take
a label matrix ``Y`` of shape (n_samples, n_labels) with ``Y[i, l] = 1`` when
document ``i`` carries label ``l``. :func:`check_indicator` validates it once,
with the same messages everywhere, and returns canonical CSR (sorted indices,
no duplicates, no stored zeros, all values 1). Callers add only what is
theirs (label lists, "at least one positive").
"""

import numpy as np
import scipy.sparse as sp


def check_indicator(Y, *, name="Y", n_samples=None, dtype=np.int64):
    """Validate a 0/1 label indicator matrix and return it as canonical CSR.

    Parameters
    ----------
    Y : {array-like, sparse matrix} of shape (n_samples, n_labels)
        0/1 (or boolean) indicators, dense or any scipy sparse format. A
        sparse matrix is read as scipy converts it to CSR: repeated COO
        entries add up (and a sum of 2 is refused); stored zeros are dropped.
    name : str, default="Y"
        How the messages call the argument.
    n_samples : int or None
        Expected number of rows (documents of ``X``).
    dtype : numpy dtype, default=np.int64
        dtype of the returned values.

    Returns
    -------
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        Canonical CSR of ``dtype`` with every stored value 1 and int64
        ``indices`` / ``indptr``. The input is never modified.

    Raises
    ------
    ValueError
        If ``Y`` is a list of strings, is not 2-D, is not numeric or
        boolean, holds NaN or inf or values other than 0 and 1, or has a
        number of rows other than ``n_samples``. Each message says how to fix
        the input.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> Y = sp.csr_matrix((np.array([1, 0, 1]), [1, 2, 0], [0, 2, 3]), shape=(2, 3))
    >>> out = check_indicator(Y)              # the stored zero at (0, 2) is dropped
    >>> out.toarray(), out.nnz, out.indices.dtype
    (array([[0, 1, 0],
           [1, 0, 0]]), 2, dtype('int64'))
    >>> check_indicator([[1, 2]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Y must hold only 0 and 1 (a 0/1 label indicator matrix); found [2]. ...
    """
    if isinstance(Y, (list, tuple)) and len(Y) and isinstance(Y[0], str):
        raise ValueError(f"{name} is a list of strings; give one list of labels per document "
                         "(split joined label strings by their separator first, e.g. "
                         "[s.split('|') for s in labels]) and binarise them with "
                         "sklearn.preprocessing.MultiLabelBinarizer(sparse_output=True).")
    if sp.issparse(Y):
        Y = Y.tocsr()
        data = Y.data
    else:
        Y = np.asarray(Y)
        data = Y
    if Y.ndim != 2:
        raise ValueError(f"{name} must be a 2-D label indicator matrix of shape (n_samples, n_labels); "
                         f"got shape {Y.shape}. For one document use Y.reshape(1, -1); convert label "
                         "lists with sklearn.preprocessing.MultiLabelBinarizer(sparse_output=True).")
    if data.dtype != np.bool_ and data.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold numeric or boolean 0/1 indicators, got dtype {data.dtype}; "
                         "convert label lists with sklearn.preprocessing.MultiLabelBinarizer.")
    if data.dtype.kind == "f" and not np.all(np.isfinite(data)):
        raise ValueError(f"{name} contains NaN or inf; labels must be 0 or 1.")
    if data.dtype != np.bool_ and data.size and not np.all((data == 0) | (data == 1)):
        bad = np.unique(data[(data != 0) & (data != 1)])[:5]
        raise ValueError(f"{name} must hold only 0 and 1 (a 0/1 label indicator matrix); found "
                         f"{bad.tolist()}. Binarise it first, e.g. (Y > 0).astype(np.int64).")
    if n_samples is not None and Y.shape[0] != n_samples:
        raise ValueError(f"X and {name} must have the same number of documents (rows): X has "
                         f"{n_samples}, {name} has {Y.shape[0]}; align them row by row.")
    if sp.issparse(Y):
        out = sp.csr_matrix((data != 0, Y.indices.copy(), Y.indptr.copy()), shape=Y.shape)
        out.sum_duplicates()                  # boolean sum: a duplicate counts once
        out.eliminate_zeros()
    else:
        out = sp.csr_matrix(Y != 0)
    out = sp.csr_matrix((np.ones(out.nnz, dtype=dtype), out.indices, out.indptr), shape=out.shape)
    # scipy may pick int32 indices; the numba kernels take int64 arrays.
    out.indices = out.indices.astype(np.int64, copy=False)
    out.indptr = out.indptr.astype(np.int64, copy=False)
    return out


def check_label_names(names, *, case_insensitive=False, what="label names"):
    """The one rule for label names: distinct, and free of control characters.

    Label names are compared exactly, unless the loader or the output
    format declares its codes case-insensitive (CodiEsp does): then two
    names that are equal once lower-cased collide (``X1`` and ``x1``).

    Parameters
    ----------
    names : sequence of str
        One name per label column.
    case_insensitive : bool, default=False
        Compare the names lower-cased.
    what : str, default="label names"
        How the messages call the names.

    Returns
    -------
    list of str
        The names, unchanged.

    Raises
    ------
    ValueError
        When a name is not a string, holds a control or line-breaking
        character, or collides with another name under the rule in use;
        the message names both columns.

    Examples
    --------
    >>> check_label_names(["R50", "r50"])
    ['R50', 'r50']
    >>> check_label_names(["R50", "r50"], case_insensitive=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: label names 'R50' (column 0) and 'r50' (column 1) are the same label ...
    """
    from ._files import control_characters
    names = list(names)
    seen = {}
    for j, name in enumerate(names):
        if not isinstance(name, str):
            raise ValueError(f"{what} must be strings; column {j} is {type(name).__name__} {name!r}")
        bad = control_characters(name)
        if bad:
            raise ValueError(f"{what}: {name!r} (column {j}) holds control characters {bad}; "
                             "a label name is one line without tabs")
        key = name.lower() if case_insensitive else name
        if key in seen:
            i = seen[key]
            rule = "once lower-cased (these codes are case-insensitive)" if case_insensitive else \
                "exactly"
            raise ValueError(f"{what} {names[i]!r} (column {i}) and {name!r} (column {j}) are the "
                             f"same label {rule}; merge their columns or rename one")
        seen[key] = j
    return names
