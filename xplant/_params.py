"""Parameter values as Python and JSON see them, and their checks (no torch needed)."""

import inspect
import numbers

import numpy as np


def fit_accepts(estimator, name):
    """Whether ``estimator.fit`` takes the keyword ``name`` (a Pipeline: its last step's).

    A ``fit`` with ``**kwargs`` takes every name. The one rule for "can this
    fit be given ``validation_data`` / the label descriptions": unlike
    :func:`sklearn.utils.validation.has_fit_parameter`, it counts ``**kwargs``.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> fit_accepts(LogisticRegression(), "sample_weight"), fit_accepts(LogisticRegression(), "validation_data")
    (True, False)
    """
    while hasattr(estimator, "steps"):
        estimator = estimator.steps[-1][1]
    try:
        params = inspect.signature(estimator.fit).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def to_python(value):
    """``value`` with numpy scalars turned into Python ones, inside lists, tuples and dicts too.

    Grids built with ``np.logspace`` or ``np.arange`` give ``np.float64`` and
    ``np.int64`` values; torch and JSON want Python numbers.

    Examples
    --------
    >>> to_python({"lr": np.float64(0.01), "phases": [(np.int64(0), "head", np.float32(1.0))]})
    {'lr': 0.01, 'phases': [(0, 'head', 1.0)]}
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(to_python(v) for v in value)
    if isinstance(value, dict):
        return {k: to_python(v) for k, v in value.items()}
    return value


def check_param(name, value, *, kind=numbers.Real, low=None, high=None, allowed=None,
                low_open=False, none_ok=False):
    """Raise a ValueError naming the parameter and its allowed values.

    Parameters
    ----------
    name : str
        The parameter's name, as the message gives it.
    value : object
        The value to check.
    kind : type, default=numbers.Real
        ``numbers.Real`` or ``numbers.Integral``; a bool is never a number here.
    low, high : float or None, default=None
        Bounds; ``low`` is inclusive unless ``low_open``, ``high`` inclusive.
    allowed : sequence or None, default=None
        The only values allowed (then ``kind`` and the bounds are not read).
    low_open : bool, default=False
    none_ok : bool, default=False
        None passes.

    Raises
    ------
    ValueError
        Naming the parameter, the value and what it takes (NaN included).

    Examples
    --------
    >>> check_param("alpha", 0.5, low=0.0, high=1.0)
    >>> check_param("alpha", 2, low=0.0, high=1.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha=2 is out of range; it must be <= 1.0
    """
    if value is None and none_ok:
        return
    if allowed is not None:
        if value not in allowed:
            raise ValueError(f"{name}={value!r} is not allowed; use one of {list(allowed)}")
        return
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ValueError(f"{name} must be a {'integer' if kind is numbers.Integral else 'number'}, "
                         f"got {value!r}")
    if value != value:                 # NaN passes every range comparison
        raise ValueError(f"{name} is NaN; give a number")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name}={value!r} is out of range; it must be "
                         f"{'>' if low_open else '>='} {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={value!r} is out of range; it must be <= {high}")
