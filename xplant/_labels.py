"""The one check of a multi-label indicator matrix, shared by every part of xplant.

Metrics, MIG, the baselines, the splitters and the neural estimators all take
a label matrix ``Y`` of shape (n_samples, n_labels) with ``Y[i, l] = 1`` when
document ``i`` carries label ``l``. :func:`check_indicator` validates it once,
with the same messages everywhere, and returns canonical CSR (sorted indices,
no duplicates, no stored zeros, all values 1). Callers add only what is
theirs (label lists, "at least one positive").
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ._normal_forms import normalize_label
from ._target_form import _has_column_names, _one_column, _target_form


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
        try:
            Y = np.asarray(Y)
        except ValueError:
            raise ValueError(f"{name} has rows of different lengths, so it is not a matrix; "
                             "binarise label lists with sklearn.preprocessing."
                             "MultiLabelBinarizer(sparse_output=True).") from None
        if Y.dtype == object and Y.ndim >= 1:
            raise ValueError(f"{name} is not a numeric 0/1 matrix (its rows are "
                             f"{type(Y.flat[0]).__name__ if Y.size else 'empty'}); binarise label "
                             "lists with sklearn.preprocessing.MultiLabelBinarizer(sparse_output=True).")
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


def check_targets(Y, *, n_samples=None, label_names=None, name="Y", dtype=np.int64,
                  require_positive=True, classes_1d=False, unknown="error"):
    """The one parser of multi-label targets, used by every estimator.

    The rule follows scikit-learn, so that a target means one thing everywhere:

    - a sparse matrix, an ndarray of 2 dimensions, or a rectangular nested
      list whose values are all 0/1 is an **indicator matrix** (``Y[i, l] = 1``
      when document ``i`` carries label ``l``);
    - a 1-D binary y (ndarray or flat list of 0/1) is **one label column**,
      i.e. the matrix ``y.reshape(-1, 1)``; with two other values ``a < b``
      (binary in scikit-learn's sense) the column is ``y == b``, as
      ``LabelBinarizer`` makes the greater class the positive one;
    - **label lists** are accepted only where they cannot be mistaken for a
      matrix: every row a set, or rows of strings, or rows of different
      lengths (ragged) of integers. They are binarised as
      :class:`sklearn.preprocessing.MultiLabelBinarizer` does: a label maps
      to its column by value, in sorted order, or by its position in
      ``label_names`` when given;
    - anything that could be read both ways (a rectangular list of lists of
      integers other than 0/1) is an error naming ``MultiLabelBinarizer``;
    - a pandas DataFrame is a matrix whose column names are its label
      names (unless ``label_names`` is given);
    - string label names are read in Unicode NFC (:func:`~xplant._normal_forms.normalize_label`),
      so one name typed in two forms is one label; two given names that are
      equal in NFC are refused.

    Parameters
    ----------
    Y : {array-like, sparse matrix} of shape (n_samples, n_labels), 1-D binary y, or label lists
        The target, read by the rule above.
    n_samples : int or None
        Expected number of documents (rows).
    label_names : array-like of shape (n_labels,) or None
        Names of the label columns. For a matrix, one per column; for label
        lists, the label space (every label must be in it, columns follow
        its order). None: ``0..n_labels-1`` for a matrix, the sorted labels
        for label lists.
    name : str, default="Y"
        How messages call the argument.
    dtype : numpy dtype, default=np.int64
        dtype of the returned values.
    require_positive : bool, default=True
        Refuse a target with no positive at all (nothing can be learned).
    classes_1d : bool, default=False
        Accept a 1-D y of more than two classes (a multi-class target) as
        one column per class, sorted, as ``LabelBinarizer`` does (MIG
        scores tokens for any labelling). False: such a y is refused.
    unknown : {"error", "append"}, default="error"
        Label lists holding a label outside ``label_names``: refused, or
        (``"append"``, for scoring a fitted model) given extra columns after
        ``label_names``, sorted, that the model never ranks.

    Returns
    -------
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        Canonical CSR, as :func:`check_indicator` returns it.
    classes : ndarray of shape (n_labels,)
        The label names of the columns (``label_names`` then the appended
        unknown labels).

    Raises
    ------
    ValueError
        For an ambiguous or malformed target, a label outside
        ``label_names``, ``label_names`` of the wrong length or with
        repeated names, a row count other than ``n_samples``, no label
        column, or (``require_positive``) no positive at all. Each message
        names the fix.

    Examples
    --------
    >>> Y, classes = check_targets([[1, 0], [0, 1]])           # a 0/1 matrix
    >>> Y.toarray().tolist(), classes.tolist()
    ([[1, 0], [0, 1]], [0, 1])
    >>> Y, classes = check_targets([{"I10"}, {"J18", "I10"}])  # label lists
    >>> Y.toarray().tolist(), classes.tolist()
    ([[1, 0], [1, 1]], ['I10', 'J18'])
    >>> Y, classes = check_targets([[3], [1, 3]])               # ragged: lists by value
    >>> Y.toarray().tolist(), classes.tolist()
    ([[0, 1], [1, 1]], [1, 3])
    >>> check_targets([[3, 1], [2, 3]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Y is rectangular but holds values other than 0 and 1, ...
    """
    from sklearn.preprocessing import MultiLabelBinarizer
    if Y is None:
        raise ValueError(f"{name} is None: this estimator requires y to be passed, but the target "
                         "y is None; give the label matrix (n_samples, n_labels).")
    names = None
    if label_names is None and _has_column_names(Y):
        label_names = [str(c) for c in Y.columns]    # a DataFrame's columns are its label names
    if label_names is not None:
        names = _label_names_array(label_names)
        if names.ndim != 1 or len(np.unique(names)) != names.shape[0]:
            raise ValueError(f"label_names must be a 1-D sequence of distinct names; got "
                             f"shape {names.shape} with {names.size - len(np.unique(names))} "
                             "repeated.")
    form = _target_form(Y, name)
    if form == "lists":
        rows = [[normalize_label(v) for v in r] for r in Y]
        if n_samples is not None and len(rows) != n_samples:
            raise ValueError(f"X and {name} must have the same number of documents (rows): X has "
                             f"{n_samples}, {name} has {len(rows)}; align them row by row.")
        if names is None:
            mlb = MultiLabelBinarizer(sparse_output=True).fit(rows)
        else:
            known = set(names.tolist())
            extra = {v for r in rows for v in r} - known
            if extra and unknown != "append":
                raise ValueError(f"{name} holds labels that are not in label_names: "
                                 f"{sorted(map(str, extra))[:5]}; add them to label_names.")
            if extra:
                names = np.asarray(list(names) + sorted(extra, key=str))
            mlb = MultiLabelBinarizer(classes=list(names), sparse_output=True).fit(rows)
        out = check_indicator(mlb.transform(rows), name=name, dtype=dtype)
        classes = np.asarray(mlb.classes_) if names is None else names
    else:
        if form == "column":
            Y, col_names = _one_column(np.asarray(Y), name, classes_1d)
            if names is None:
                names = col_names
        out = check_indicator(Y, name=name, n_samples=n_samples, dtype=dtype)
        if names is not None and names.shape[0] != out.shape[1]:
            raise ValueError(f"label_names has {names.shape[0]} names but {name} has "
                             f"{out.shape[1]} columns; give one name per column.")
        classes = names if names is not None else np.arange(out.shape[1])
    if out.shape[1] == 0:
        raise ValueError(f"{name} has no label column; the label space must hold at least one "
                         "label.")
    if require_positive and out.nnz == 0:
        one = (" (its one label column holds one class only)" if out.shape[1] == 1 else "")
        raise ValueError(f"{name} has no positive entry at all{one}, so there is nothing to "
                         "learn; check that the labels were binarised against the right label "
                         "space.")
    return out, classes


#: The prediction form of a model that records none (saved before the rule): CSR.
SPARSE_FORM = {"kind": "sparse"}


def prediction_form(Y):
    """The form in which ``predict`` answers, read from the ``Y`` given to ``fit``.

    The one rule of every multi-label estimator's ``predict``: it answers in
    the kind of target it was fitted on.

    - a **1-D y** (one label column) gives a 1-D array of y's dtype, holding
      y's own two values (the greater one where the label is predicted), as
      a scikit-learn binary classifier does;
    - a **dense** indicator (a 2-D ndarray, a DataFrame, a rectangular list
      of 0/1 rows) gives a dense ndarray of shape (n_samples, n_labels) and
      of that dtype;
    - a **sparse** matrix or **label lists** give a CSR int64 matrix of
      shape (n_samples, n_labels), columns in ``classes_`` order.

    A label space too large for a dense (n, L) array reaches ``fit`` only as
    a sparse matrix or label lists, so its predictions are CSR; a dense
    ``Y`` shows the caller holds (n, L) arrays. ``predict_top_k`` answers
    in (n, k) arrays whatever the form.

    Parameters
    ----------
    Y : {array-like, sparse matrix}, 1-D y, or label lists
        A target that :func:`check_targets` accepts.

    Returns
    -------
    form : dict
        ``{"kind": "column", "dtype": str, "values": [negative, positive]}``,
        ``{"kind": "dense", "dtype": str}`` or ``{"kind": "sparse"}``: plain
        JSON, saved with a model. Give it to :func:`as_prediction_form`.

    Examples
    --------
    >>> prediction_form([[1, 0], [0, 1]])
    {'kind': 'dense', 'dtype': 'int64'}
    >>> prediction_form(np.array([-1, 1, 1]))
    {'kind': 'column', 'dtype': 'int64', 'values': [-1, 1]}
    >>> prediction_form([{"I10"}, {"J18"}])
    {'kind': 'sparse'}
    """
    form = _target_form(Y, "Y")
    if form == "lists" or sp.issparse(Y):
        return dict(SPARSE_FORM)
    y = np.asarray(Y)
    if form == "matrix":
        return {"kind": "dense", "dtype": y.dtype.name}
    values = np.unique(y)
    neg, pos = (0, 1) if np.isin(values, (0, 1)).all() else (values[0], values[-1])
    return {"kind": "column", "dtype": y.dtype.name,
            "values": [np.asarray(neg).item(), np.asarray(pos).item()]}


def as_prediction_form(P, form):
    """0/1 predictions (CSR) in the form of :func:`prediction_form`.

    Parameters
    ----------
    P : scipy.sparse matrix of shape (n_samples, n_labels)
        The predicted labels, 1 where predicted.
    form : dict or None
        What :func:`prediction_form` returned for the ``Y`` of ``fit``;
        None (a model saved before the rule) is the sparse form.

    Returns
    -------
    Y_pred : csr_matrix of int64, ndarray of shape (n_samples, n_labels), or ndarray of shape (n_samples,)
        By the form's kind: ``"sparse"``, ``"dense"`` or ``"column"``.

    Examples
    --------
    >>> P = sp.csr_matrix(np.array([[1], [0]]))
    >>> as_prediction_form(P, {"kind": "column", "dtype": "int64", "values": [-1, 1]}).tolist()
    [1, -1]
    >>> as_prediction_form(P, {"kind": "dense", "dtype": "float64"}).tolist()
    [[1.0], [0.0]]
    """
    P = sp.csr_matrix(P, dtype=np.int64)
    kind = (form or SPARSE_FORM)["kind"]
    if kind == "sparse":
        P.sort_indices()
        return P
    dense = P.toarray()
    if kind == "dense":
        return dense.astype(form["dtype"])
    neg, pos = np.asarray(form["values"], dtype=form["dtype"])
    return np.where(dense[:, 0] != 0, pos, neg).astype(form["dtype"])


def as_score_form(S, form, *, proba=False):
    """Scores (n, L) in the form of :func:`prediction_form`: scikit-learn's binary shapes for a 1-D y.

    Fitted on a 1-D y (one label column), ``decision_function`` answers with
    shape (n_samples,) and ``predict_proba`` with shape (n_samples, 2), the
    columns ``1 - p`` and ``p`` (y's negative, then its positive value), as
    a scikit-learn binary classifier does. Every other form keeps the
    (n_samples, n_labels) scores.

    Parameters
    ----------
    S : ndarray of shape (n_samples, n_labels)
        Decision values or per-label probabilities.
    form : dict or None
        The estimator's ``prediction_form_``.
    proba : bool, default=False
        Whether ``S`` holds probabilities.

    Returns
    -------
    scores : ndarray of shape (n_samples, n_labels), (n_samples,) or (n_samples, 2)

    Examples
    --------
    >>> form = {"kind": "column", "dtype": "int64", "values": [0, 1]}
    >>> as_score_form(np.array([[0.25], [0.5]]), form, proba=True).tolist()
    [[0.75, 0.25], [0.5, 0.5]]
    >>> as_score_form(np.array([[-2.0], [3.0]]), form).tolist()
    [-2.0, 3.0]
    """
    if (form or SPARSE_FORM)["kind"] != "column":
        return S
    s = np.asarray(S)[:, 0]
    return np.column_stack([1 - s, s]) if proba else s


def _label_names_array(label_names):
    """``label_names`` as a 1-D array, string names in NFC; names equal under NFC are refused."""
    raw = list(label_names) if np.ndim(label_names) == 1 else None
    if raw is not None and raw and all(isinstance(v, str) for v in raw):
        names = [normalize_label(v) for v in raw]
        if len(set(names)) < len(names):
            check_label_names(raw)           # repeated or equal in NFC: refused, naming both columns
        return np.asarray(names)
    return np.asarray(label_names)


def check_label_names(names, *, case_insensitive=False, what="label names"):
    """The one rule for label names: distinct in NFC, and free of control characters.

    Label names are compared in Unicode NFC (:func:`~xplant._normal_forms.normalize_label`, the
    form texts are tokenized in), so the same name typed precomposed and
    decomposed collides; and lower-cased too when the loader or the output
    format declares its codes case-insensitive (CodiEsp does): then
    ``X1`` and ``x1`` collide.

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
        character, or collides with another name under the rule in use
        (equal in NFC, and lower-cased where case-insensitive); the message
        names both columns.

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
        key = normalize_label(name)
        key = key.lower() if case_insensitive else key
        if key in seen:
            i = seen[key]
            rule = "once lower-cased (these codes are case-insensitive)" if case_insensitive else \
                "in Unicode NFC (the form texts are read in)" if names[i] != name else "exactly"
            raise ValueError(f"{what} {names[i]!r} (column {i}) and {name!r} (column {j}) are the "
                             f"same label {rule}; merge their columns or rename one")
        seen[key] = j
    return names


def check_class_names(classes, *, case_insensitive=False):
    """Apply :func:`check_label_names` to a fitted label space whose classes are names.

    Integer classes (column indices, no names given) pass unchanged.

    Parameters
    ----------
    classes : array-like of shape (n_labels,)
    case_insensitive : bool, default=False

    Returns
    -------
    classes
        Unchanged.

    Raises
    ------
    ValueError
        See :func:`check_label_names`.

    Examples
    --------
    >>> check_class_names(np.arange(3)).tolist()
    [0, 1, 2]
    >>> check_class_names(np.array(["X1", "x1"]), case_insensitive=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: label names 'X1' (column 0) and 'x1' (column 1) are the same label ...
    """
    arr = np.asarray(classes)
    if arr.dtype.kind not in "iub":
        check_label_names([str(c) for c in arr.tolist()], case_insensitive=case_insensitive)
    return classes


def label_lists(Y, classes):
    """Each document's labels by name: the rows of a CSR indicator read through ``classes``.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        Checked 0/1 targets (:func:`check_targets`).
    classes : array-like of shape (n_labels,)
        The name of each column.

    Returns
    -------
    list of list
        Per document, the names of its positive columns, in column order.

    Examples
    --------
    >>> label_lists(sp.csr_matrix([[1, 0, 1], [0, 0, 0]]), ["A", "B", "C"])
    [['A', 'C'], []]
    """
    names = np.asarray(classes)
    return [names[Y.indices[Y.indptr[i]:Y.indptr[i + 1]]].tolist() for i in range(Y.shape[0])]


def label_frequency(Y):
    """Positive rows per label column: the one count of training positives in xplant.

    Parameters
    ----------
    Y : {ndarray, sparse matrix} of shape (n_samples, n_labels), or 1-D counts
        A label indicator matrix (non-zero = positive), or already the
        per-label counts (returned as int64).

    Returns
    -------
    frequency : ndarray of shape (n_labels,), dtype int64

    Raises
    ------
    ValueError
        For input of more than 2 dimensions, or 1-D input that is not
        non-negative integer counts.

    Examples
    --------
    >>> label_frequency(np.array([[1, 0, 1], [1, 0, 0]])).tolist()
    [2, 0, 1]
    """
    if sp.issparse(Y):
        Y = sp.csc_matrix(Y, copy=True)
        Y.sum_duplicates()
        Y.eliminate_zeros()
        return np.diff(Y.indptr).astype(np.int64)
    arr = np.asarray(Y)
    if arr.ndim == 1:
        if arr.dtype.kind not in "iu" or (arr < 0).any():
            raise ValueError("1-D input must hold non-negative integer counts per label")
        return arr.astype(np.int64)
    if arr.ndim != 2:
        raise ValueError(f"Y must be 2-D (n_samples, n_labels) or 1-D counts; got shape {arr.shape}")
    return np.count_nonzero(arr, axis=0).astype(np.int64)


def label_prior(frequency, n_documents):
    """Smoothed prior of each label: p_l = (f_l + ½) / (N + 1).

    The one label prior of xplant: PLANT's initial label bias is its
    log-odds, and logit adjustment subtracts τ · log p_l. The ½ keeps a
    label with no training positive at a small, finite prior (the
    Krichevsky–Trofimov estimate).

    Parameters
    ----------
    frequency : array-like of int of shape (n_labels,)
        Training documents of each label (:func:`label_frequency`).
    n_documents : int
        Training documents N (>= 1).

    Returns
    -------
    prior : ndarray of float64 of shape (n_labels,), in (0, 1)

    Raises
    ------
    ValueError
        When ``n_documents`` < 1 or a count is negative or above it.

    Examples
    --------
    >>> label_prior([0, 1, 3], 3).tolist()
    [0.125, 0.375, 0.875]
    """
    f = label_frequency(np.asarray(frequency))
    if (not isinstance(n_documents, numbers.Integral) or isinstance(n_documents, bool)
            or n_documents < 1):
        raise ValueError(f"n_documents must be a positive integer, got {n_documents!r}")
    if f.size and f.max() > n_documents:
        raise ValueError(f"a label has {int(f.max())} training documents but n_documents is "
                         f"{n_documents}; give the counts and N of the same training rows")
    return (f + 0.5) / (n_documents + 1.0)


