"""How a multi-label target reads: an indicator matrix, one label column, or label lists.

The rule of :func:`xplant._labels.check_targets` and
:func:`xplant._labels.prediction_form`, apart so that it can be read on its
own: :func:`_target_form` names the form of a target (and refuses one that
could be read two ways), :func:`_one_column` turns a 1-D y into a matrix,
and :func:`_has_column_names` tells a DataFrame whose columns name its
labels.
"""

import numbers

import numpy as np
import scipy.sparse as sp

_LIST_TYPES = (list, tuple, np.ndarray)
_SET_TYPES = (set, frozenset)
_MLB = ("sklearn.preprocessing.MultiLabelBinarizer(sparse_output=True)")


def _is_label(v):
    """A hashable label name: str, or an integer (bool excluded)."""
    return isinstance(v, str) or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))


def _target_form(Y, name):
    """'matrix', 'column' (1-D binary y) or 'lists' for a target; raise when ambiguous.

    The rule of :func:`xplant._labels.check_targets`, apart so that it can be read on its own.
    """
    if sp.issparse(Y):
        return "matrix"
    if isinstance(Y, str):
        raise ValueError(f"{name} is one string; give one row of labels per document.")
    if not isinstance(Y, (list, tuple, np.ndarray)) and hasattr(Y, "__array__"):
        Y = np.asarray(Y)                    # a DataFrame, Series or array-like object
    if isinstance(Y, np.ndarray) and Y.dtype != object:
        return "column" if Y.ndim == 1 else "matrix"
    try:
        rows = list(Y)
    except TypeError:
        raise ValueError(f"{name} must be a 0/1 indicator matrix of shape (n_samples, n_labels) "
                         f"or a list of label lists, got {type(Y).__name__}.") from None
    if not rows:
        raise ValueError(f"{name} is empty; it needs one row per document.")
    if all(isinstance(r, _SET_TYPES) for r in rows):
        return "lists"
    if all(np.isscalar(r) or (isinstance(r, np.ndarray) and r.ndim == 0) for r in rows):
        if any(isinstance(r, str) for r in rows):
            raise ValueError(f"{name} is a list of strings; give one list of labels per document "
                             "(split joined label strings by their separator first, e.g. "
                             f"[s.split('|') for s in labels]), or binarise them with {_MLB}.")
        return "column"
    if not all(isinstance(r, _LIST_TYPES) for r in rows):
        raise ValueError(f"{name} mixes rows of different kinds; give every row as a list of "
                         f"labels, or a 0/1 indicator matrix built with {_MLB}.")
    values = [v for r in rows for v in r]
    if any(isinstance(v, str) for v in values):
        if not all(isinstance(v, str) for v in values):
            raise ValueError(f"{name} mixes string and non-string labels; give every label as a "
                             "string (e.g. [[str(v) for v in row] for row in Y]).")
        return "lists"
    lengths = {len(r) for r in rows}
    if len(lengths) > 1:       # ragged: cannot be a matrix, so label lists by value
        if not all(_is_label(v) for v in values):
            raise ValueError(f"{name} has rows of different lengths with values that are not "
                             f"labels (str or int); binarise the label lists with {_MLB}.")
        return "lists"
    if all(isinstance(v, (bool, np.bool_)) or (isinstance(v, numbers.Real) and v in (0, 1))
           for v in values):
        return "matrix"        # rectangular 0/1: a matrix, as in scikit-learn
    raise ValueError(
        f"{name} is rectangular but holds values other than 0 and 1, so it could be an "
        "indicator matrix or one list of labels per document. Give a 0/1 matrix, or give "
        f"the label lists as sets (e.g. [set(row) for row in Y]) or binarise them with {_MLB}.")


def _one_column(y, name, classes_1d):
    """A 1-D y as a matrix: binary -> one column; multi-class -> one per class (MIG) or error."""
    if y.ndim != 1:
        return y, None
    from sklearn.utils.multiclass import type_of_target
    if y.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} is a 1-D array of {y.dtype} values; "
                         "labels are 0/1.")
    if y.dtype.kind not in "biuf" and y.dtype != object:
        raise ValueError(f"{name} is a 1-D array of {y.dtype} values; give one list of labels per "
                         "document (split joined label strings by their separator first, e.g. "
                         f"[s.split('|') for s in labels]), or binarise them with {_MLB}.")
    y_type = type_of_target(y, input_name=name, raise_unknown=True)
    values = np.unique(y)
    if y_type == "binary" and np.isin(values, (0, 1)).all():
        return y.reshape(-1, 1), None
    if y_type == "binary":
        return (y == values[1]).reshape(-1, 1), None       # the greater value is positive
    if y_type == "multiclass" and classes_1d:
        return y[:, None] == values[None, :], values        # one column per class
    what = "Only binary classification is supported" if y_type.startswith("multiclass") \
        else f"Unknown label type: {y_type}"
    raise ValueError(f"{what} for a 1-D {name}: a multi-label "
                     f"estimator reads it as one label column, and this {name} is {y_type}. Give "
                     "a 0/1 indicator matrix of shape (n_samples, n_labels), e.g. with "
                     "sklearn.preprocessing.LabelBinarizer or MultiLabelBinarizer.")



def _has_column_names(Y):
    """A pandas DataFrame whose columns are names (not its default 0..L-1)."""
    columns = getattr(Y, "columns", None)
    if columns is None or not hasattr(Y, "iloc"):
        return False
    return list(columns) != list(range(len(columns)))
