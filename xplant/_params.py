"""Parameter values as Python and JSON see them, and their checks (no torch needed).

The one home of parameter validation: every estimator declares its
parameters' valid values in ``_parameter_constraints`` and :func:`check_params`
checks them, with one message form (the owner, the parameter, its value,
what is wrong and what it takes).
"""

import inspect
import numbers

import numpy as np
# scikit-learn's vocabulary of parameter constraints: its module is private, and
# this is xplant's one import of it (a change there is mended here alone)
from sklearn.utils._param_validation import (  # noqa: F401  (re-exported: the vocabulary)
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    RealNotInt,
    StrOptions,
    _Booleans,
    _Constraint,
    _InstancesOf,
    make_constraint,
)


def final_step(estimator, *, with_prefix=False):
    """The model at the end of a Pipeline (nested Pipelines followed), or the estimator itself.

    The one reading of "a Pipeline's last step" in xplant: the model that
    scores labels, takes ``fit``'s keywords and holds ``classes_``.

    Parameters
    ----------
    estimator : estimator or Pipeline
        Fitted or not.
    with_prefix : bool, default=False
        Also return the ``set_params`` / ``fit`` keyword prefix that reaches
        it (``"clf__"``; ``""`` for an estimator that is no Pipeline).

    Returns
    -------
    estimator, or (estimator, str) with ``with_prefix``

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> from sklearn.preprocessing import FunctionTransformer, StandardScaler
    >>> pipe = Pipeline([("f", FunctionTransformer()), ("scale", StandardScaler())])
    >>> type(final_step(pipe)).__name__, final_step(pipe, with_prefix=True)[1]
    ('StandardScaler', 'scale__')
    """
    prefix = ""
    while getattr(estimator, "steps", None):
        name, estimator = estimator.steps[-1]
        prefix += f"{name}__"
    return (estimator, prefix) if with_prefix else estimator


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
    estimator = final_step(estimator)
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


# -- parameter validation: one vocabulary, one check, one message form -----------
#
# An estimator declares the valid values of its parameters in
# ``_parameter_constraints`` (name -> list of constraints, any one of which
# admits a value), in scikit-learn's vocabulary: ``Interval``, ``StrOptions``,
# ``Options``, ``HasMethods``, a type, ``None``, ``"boolean"``, ...; xplant
# adds ``Checked`` for a value that a function of the domain judges.
# :func:`check_params` checks a mapping of name -> value against such a
# declaration.


def int_at_least(low=1):
    """The constraint "an integer >= ``low``" (1: a positive count).

    Parameters
    ----------
    low : int, default=1
        The smallest integer allowed.

    Returns
    -------
    Interval

    Examples
    --------
    >>> try:
    ...     check_params("Planter", {"max_epochs": 0}, {"max_epochs": [int_at_least(1)]})
    ... except ValueError as exc:
    ...     print(exc)
    Planter: max_epochs=0 is out of range; it must be an integer >= 1
    """
    return Interval(numbers.Integral, low, None, closed="left")


def number_at_least(low=0):
    """The constraint "a finite number >= ``low``" (an int or a float; never a bool).

    Parameters
    ----------
    low : float, default=0
        The smallest number allowed.

    Returns
    -------
    Interval
    """
    return Interval(numbers.Real, low, None, closed="left")


def number_above(low=0):
    """The constraint "a finite number > ``low``" (0: a positive number).

    Parameters
    ----------
    low : float, default=0
        The bound, itself refused.

    Returns
    -------
    Interval
    """
    return Interval(numbers.Real, low, None, closed="neither")


class Checked(_Constraint):
    """A value that ``check(value)`` accepts; ``check`` raises its own, more precise error.

    Last in a list of constraints (those before it are tried first).

    For a parameter whose valid values a function of its domain knows (a
    backbone name, a metric name, a shortlist): the declaration names the
    function, and :func:`check_params` calls it, so the message is the
    domain's (``unknown backbone 'x'; ...``).

    Parameters
    ----------
    check : callable
        Called with the value; raises ValueError or TypeError naming the
        parameter when the value is not valid, and returns otherwise.
    description : str
        What the parameter takes, for the messages of the other constraints.
    """

    def __init__(self, check, description):
        super().__init__()
        self.check = check
        self.description = description

    def is_satisfied_by(self, val):
        """Whether ``check`` accepts ``val``; it raises where it does not.

        Parameters
        ----------
        val : object
            The value.

        Returns
        -------
        bool
            True (a refusal is ``check``'s own error).
        """
        self.check(val)
        return True

    def __str__(self):
        return self.description


def _number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _satisfies(constraint, value):
    if isinstance(constraint, Interval) and not _number(value):
        return False                   # a bool is never a number here
    if isinstance(constraint, Options):
        try:
            return constraint.is_satisfied_by(value)
        except TypeError:              # an unhashable value is no option
            return False
    return constraint.is_satisfied_by(value)


def _bound(value):
    """A bound as the message writes it: 0, 0.5, 1e-05 (None: none; an infinite one: none)."""
    if value is None or not np.isfinite(value):
        return None
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _describe(constraint):
    """What ``constraint`` admits, in the message's words."""
    if isinstance(constraint, Interval):
        kind = {numbers.Integral: "an integer", RealNotInt: "a float"}.get(constraint.type,
                                                                          "a number")
        left, right = _bound(constraint.left), _bound(constraint.right)
        left_in = constraint.closed in ("left", "both")
        right_in = constraint.closed in ("right", "both")
        if left is not None and right is not None:
            return f"{kind} in {'[' if left_in else '('}{left}, {right}{']' if right_in else ')'}"
        if left is not None:
            return f"{kind} {'>=' if left_in else '>'} {left}"
        if right is not None:
            return f"{kind} {'<=' if right_in else '<'} {right}"
        return kind
    if isinstance(constraint, _Booleans):
        return "a bool"
    if isinstance(constraint, _InstancesOf):
        name = {numbers.Integral: "int", numbers.Real: "float"}.get(
            constraint.type, constraint.type.__qualname__)
        return f"{'an' if name[0] in 'aeiouAEIO' else 'a'} {name}"
    if isinstance(constraint, Options):
        shown = sorted(constraint.options, key=repr)
        return repr(shown[0]) if len(shown) == 1 else "one of " + ", ".join(map(repr, shown))
    return str(constraint)


def _parts(constraints):
    """The constraints with scikit-learn's composite ones ("verbose", "random_state") opened."""
    out = []
    for c in constraints:
        inner = getattr(c, "_constraints", None)
        out += [c] if isinstance(c, _Booleans) or inner is None else _parts(inner)
    return out


def _why(value, constraints):
    """Why ``value`` fails every one of ``constraints``: NaN, range, option or type."""
    if _number(value) and value != value:
        return "is NaN"
    if _number(value) and abs(value) == np.inf:
        return "is infinite"
    for c in constraints:
        if isinstance(c, Interval) and _number(value) and isinstance(value, c.type):
            return "is out of range"
    for c in constraints:
        if isinstance(c, Options) and isinstance(value, c.type):
            return "is not one of the options"
    return f"has the wrong type ({type(value).__name__})"


def check_params(owner, params, constraints):
    """Check each value of ``params`` against its declared constraints; raise naming the first bad one.

    The one check of xplant's estimators' parameters: scikit-learn-style
    estimators reach it through :class:`ParamsMixin` (``fit``'s first step),
    the neural estimators with their resolved settings (``module__pool_size``,
    ``criterion__gamma``, ...), the loaders of saved models with what they read.

    Parameters
    ----------
    owner : str or None
        The estimator (or function) whose parameters these are; it starts
        the message.
    params : mapping of str to object
        Parameter name -> value. Names without a declaration are not checked.
    constraints : mapping of str to list or "no_validation"
        Parameter name -> the constraints of which the value must satisfy
        one: scikit-learn's (an ``Interval``, ``StrOptions``, a type, None,
        ``"boolean"``, ``HasMethods``, ...) or :class:`Checked`. An
        ``Interval`` never admits a bool, nor NaN.

    Raises
    ------
    InvalidParameterError
        A ValueError and a TypeError (scikit-learn's class), whose message
        names the owner, the parameter, its value, what is wrong (out of
        range, not one of the options, NaN, infinite, the wrong type) and what the
        parameter takes. A :class:`Checked` constraint raises its own.

    Examples
    --------
    >>> rules = {"loss": [StrOptions({"focal", "bce"})], "gamma": [Interval(numbers.Real, 0, None, closed="left")]}
    >>> check_params("PlantLoss", {"loss": "bce", "gamma": 0.0}, rules)
    >>> try:
    ...     check_params("PlantLoss", {"loss": "hinge", "gamma": -1}, rules)
    ... except ValueError as exc:
    ...     print(exc)
    PlantLoss: loss='hinge' is not one of the options; it must be one of 'bce', 'focal'
    """
    for name, allowed in constraints.items():
        if name not in params or allowed == "no_validation":
            continue
        value = params[name]
        made = [c if isinstance(c, _Constraint) else make_constraint(c) for c in allowed]
        if any(_satisfies(c, value) for c in made):
            continue
        shown = list(dict.fromkeys(_describe(c) for c in _parts(made) if not c.hidden))
        what = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
        raise InvalidParameterError(f"{owner + ': ' if owner else ''}{name}={value!r} "
                                    f"{_why(value, _parts(made))}; it must be {what}")


class ParamsMixin:
    """``_validate_params`` by :func:`check_params`, for a scikit-learn estimator.

    scikit-learn's ``_fit_context`` calls ``_validate_params`` before
    ``fit``; with this mixin first among the bases, the check of an
    estimator's ``get_params(deep=False)`` against its
    ``_parameter_constraints`` is xplant's, with its message form.
    """

    _parameter_constraints = {}

    def _validate_params(self):
        check_params(type(self).__name__, self.get_params(deep=False),
                     self._parameter_constraints)


def check_param(name, value, *, kind=numbers.Real, low=None, high=None, allowed=None,
                low_open=False, none_ok=False):
    """Check one value, as :func:`check_params` checks a declared parameter.

    For a plain function's argument (an estimator declares its parameters
    in ``_parameter_constraints``): the keywords build the constraints.

    Parameters
    ----------
    name : str
        The parameter's name, as the message gives it.
    value : object
        The value to check.
    kind : type, default=numbers.Real
        ``numbers.Real`` or ``numbers.Integral``; a bool is never a number here.
    low, high : float or None, default=None
        Bounds; ``low`` is inclusive unless ``low_open``, ``high`` inclusive;
        without ``high`` any finite or infinite value above ``low`` passes.
    allowed : sequence or None, default=None
        The only values allowed (then ``kind`` and the bounds are not read).
    low_open : bool, default=False
        ``low`` itself is refused.
    none_ok : bool, default=False
        None passes.

    Raises
    ------
    InvalidParameterError
        A ValueError naming the parameter, the value and what it takes (NaN included).

    Examples
    --------
    >>> check_param("alpha", 0.5, low=0.0, high=1.0)
    >>> try:
    ...     check_param("alpha", 2, low=0.0, high=1.0)
    ... except ValueError as exc:
    ...     print(exc)
    alpha=2 is out of range; it must be a number in [0, 1]
    """
    if allowed is not None:
        rule = [Options(object, set(allowed))]
    elif kind is numbers.Integral:     # integers are finite: an absent bound is open
        closed = {(True, True): "both", (True, False): "left", (False, True): "right"}.get(
            (low is not None and not low_open, high is not None), "neither")
        rule = [Interval(kind, low, high, closed=closed)]
    else:                              # no bound: infinities pass, as beyond a given one
        closed = "right" if low_open else "both"
        rule = [Interval(kind, -np.inf if low is None else low,
                         np.inf if high is None else high, closed=closed)]
    check_params(None, {name: value}, {name: rule + ([None] if none_ok else [])})
