"""One home of parameter validation: ``_parameter_constraints`` checked by
``xplant._params.check_params``, for every estimator (docs/design.md, "Parameter
validation")."""

import importlib
import math
import numbers

import numpy as np
import pytest
from sklearn.utils._param_validation import generate_invalid_param_val, make_constraint

from xplant._params import (Checked, Interval, InvalidParameterError, StrOptions, _satisfies,
                            check_param, check_params, int_at_least, number_above,
                            number_at_least)
from xplant.linear import LibMultiLabelLinear, NapkinXCPLT, OmikujiTrees, OneVsRestLinear
from xplant.relevance import MIGRelevance

NEURAL = importlib.util.find_spec("torch") is not None and \
    importlib.util.find_spec("skorch") is not None

RULES = {"loss": [StrOptions({"focal", "bce"})], "gamma": [number_at_least(0)],
         "k": [int_at_least(1), None], "share": [Interval(numbers.Real, 0, 0.9, closed="right")],
         "lr": [number_above(0)]}


@pytest.mark.parametrize("name, value, message", [
    ("gamma", -0.5, "Loss: gamma=-0.5 is out of range; it must be a number >= 0"),
    ("k", 0, "Loss: k=0 is out of range; it must be an integer >= 1 or None"),
    ("k", 2.0, r"Loss: k=2.0 has the wrong type \(float\); it must be an integer >= 1 or None"),
    ("k", True, r"Loss: k=True has the wrong type \(bool\)"),
    ("gamma", "2", r"Loss: gamma='2' has the wrong type \(str\); it must be a number >= 0"),
    ("loss", "hinge", "Loss: loss='hinge' is not one of the options; it must be one of 'bce', 'focal'"),
    ("lr", math.nan, "Loss: lr=nan is NaN; it must be a number > 0"),
    ("lr", math.inf, "Loss: lr=inf is infinite; it must be a number > 0"),
    ("share", 0, r"Loss: share=0 is out of range; it must be a number in \(0, 0.9\]"),
    ("share", 0.95, r"Loss: share=0.95 is out of range; it must be a number in \(0, 0.9\]"),
])
def test_one_message_form_names_owner_parameter_value_and_what_it_takes(name, value, message):
    with pytest.raises(InvalidParameterError, match=f"^{message}"):
        check_params("Loss", {name: value}, RULES)


def test_the_error_is_a_value_error_and_a_type_error():
    # scikit-learn's class: what its common checks, and callers catching either, expect
    for kind in (ValueError, TypeError):
        with pytest.raises(kind):
            check_params("Loss", {"gamma": "2"}, RULES)


def test_edges_pass_and_undeclared_names_are_not_read():
    check_params("Loss", {"loss": "bce", "gamma": 0, "k": None, "share": 0.9, "lr": 1e-12,
                          "other": object()}, RULES)
    check_params("Loss", {"gamma": np.float64(0.0), "k": np.int64(1)}, RULES)


def test_checked_raises_its_own_message_and_comes_last():
    def even(v):
        if v % 2:
            raise ValueError(f"n={v} is odd; give an even number")
    rules = {"n": [None, Checked(even, "an even number")]}
    check_params("X", {"n": None}, rules)
    check_params("X", {"n": 4}, rules)
    with pytest.raises(ValueError, match="n=3 is odd"):
        check_params("X", {"n": 3}, rules)


def test_check_param_is_the_same_check_for_one_argument():
    check_param("alpha", 0.0, low=0.0, high=1.0)
    check_param("alpha", math.inf, low=0.0)           # no upper bound: infinities pass
    check_param("n", None, kind=numbers.Integral, low=1, none_ok=True)
    for value, message in [(2, r"alpha=2 is out of range; it must be a number in \[0, 1\]"),
                           (math.nan, "alpha=nan is NaN"),
                           (False, r"alpha=False has the wrong type \(bool\)")]:
        with pytest.raises(ValueError, match=f"^{message}"):
            check_param("alpha", value, low=0.0, high=1.0)
    with pytest.raises(ValueError, match="^fusion='x' is not one of the options; it must be 'dev'$"):
        check_param("fusion", "x", allowed=("dev",))
    with pytest.raises(ValueError, match=r"^n=0 is out of range; it must be an integer > 0"):
        check_param("n", 0, kind=numbers.Integral, low=0, low_open=True)


# -- every estimator: each kind of bad value, in fit, naming the parameter ------------
X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.0]])
Y = np.array([[1, 0], [0, 1], [1, 1], [1, 0]])
TEXTS = ["fever and cough", "broken leg", "cough and leg", "fever"]

SKLEARN_STYLE = [
    (MIGRelevance, TEXTS, [({"top_k": 0}, "top_k=0 is out of range"),
                           ({"min_df": 1.5}, "min_df=1.5 is out of range"),
                           ({"lowercase": "yes"}, r"lowercase='yes' has the wrong type \(str\)"),
                           ({"normalize": "token"}, "normalize='token' is not one of the options")]),
    (OneVsRestLinear, X, [({"C": 0.0}, "C=0.0 is out of range; it must be a number > 0"),
                          ({"max_iter": 1.5}, r"max_iter=1.5 has the wrong type \(float\)"),
                          ({"solver": "sag"}, "solver='sag' is not one of the options")]),
    (NapkinXCPLT, X, [({"arity": 1}, "arity=1 is out of range; it must be an integer >= 2"),
                      ({"ensemble": "2"}, r"ensemble='2' has the wrong type \(str\)"),
                      ({"loss": "hinge"}, "loss='hinge' is not one of the options")]),
    (OmikujiTrees, X, [({"beam_size": 0}, "beam_size=0 is out of range"),
                       ({"linear_c": None}, r"linear_c=None has the wrong type \(NoneType\)"),
                       ({"preset": "fasttext"}, "preset='fasttext' is not one of the options")]),
    (LibMultiLabelLinear, X, [({"options": 1}, r"options=1 has the wrong type \(int\)")]),
]


@pytest.mark.parametrize("cls, data, cases", SKLEARN_STYLE, ids=lambda v: getattr(v, "__name__", ""))
def test_sklearn_style_estimators_refuse_bad_values_in_fit(cls, data, cases):
    for params, message in cases:
        est = cls(**params)
        with pytest.raises(ValueError, match=f"^{cls.__name__}: {message}"):
            est.fit(data, Y)                 # before any library import or data reading
        assert not hasattr(est, "classes_") and not hasattr(est, "vocabulary_")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")   # max_iter=1
def test_sklearn_style_estimators_accept_the_edges():
    MIGRelevance(top_k=1, min_df=1, max_df=4, max_length=1).fit(TEXTS, Y)
    MIGRelevance(min_df=0.0, max_df=1.0).fit(TEXTS, Y)
    OneVsRestLinear(C=1e-9, tol=1e-9, max_iter=1, prune_threshold=0, verbose=False,
                    random_state=np.random.RandomState(0)).fit(X, Y)


def _neural():
    if not NEURAL:
        pytest.skip("needs torch and skorch")
    from xplant.neural import AttentionPlanter, PlantClassifier
    return AttentionPlanter, PlantClassifier


@pytest.mark.parametrize("params, message", [
    ({"criterion__gamma": -1.0}, "criterion__gamma=-1.0 is out of range; it must be a number >= 0"),
    ({"module__pool_size": 0}, "module__pool_size=0 is out of range; it must be an integer >= 1"),
    ({"module__head": "deep"}, "module__head='deep' is not one of the options"),
    ({"decision__max_k": 2.5}, r"decision__max_k=2.5 has the wrong type \(float\)"),
    ({"decision__logit_adjustment": -1}, "decision__logit_adjustment=-1 is out of range; it must "
                                         "be 'dev' or a number >= 0"),
    ({"optimizer__weight_decay": -0.1}, "optimizer__weight_decay=-0.1 is out of range"),
    ({"iterator_train__min_epoch_docs": 0}, "iterator_train__min_epoch_docs=0 is out of range"),
    ({"lr": "fast"}, r"lr='fast' has the wrong type \(str\); it must be a number > 0 or None"),
    ({"stage1_weight": "auto"}, "stage1_weight='auto' is not one of the options"),
    ({"planter": 3}, r"planter=3 has the wrong type \(int\)"),
    ({"validation_fraction": 1.0}, r"validation_fraction=1.0 is out of range; it must be a "
                                   r"number in \(0, 0.9\] or None"),
])
def test_plant_classifier_refuses_bad_values_before_fitting(params, message):
    _refused_before_fitting(_neural()[1], params, message)


@pytest.mark.parametrize("params, message", [
    ({"criterion__kind": "listnet"}, "criterion__kind='listnet' is not one of the options"),
    ({"criterion__k": 0}, "criterion__k=0 is out of range"),
    ({"n_negatives": -1}, "n_negatives=-1 is out of range; it must be an integer >= 0"),
    ({"warmup": 1.5}, r"warmup=1.5 is out of range; it must be a number in \[0, 1\]"),
    ({"module__dropout": "0.1"}, r"module__dropout='0.1' has the wrong type \(str\)"),
    ({"lr": "fast"}, r"lr='fast' has the wrong type \(str\); it must be a number > 0 or None"),
])
def test_attention_planter_refuses_bad_values_before_fitting(params, message):
    _refused_before_fitting(_neural()[0], params, message)


def _refused_before_fitting(cls, params, message):
    """``cls(**params).fit`` raises ``message``, named by the class, before any fitting."""
    est = cls(**params)
    with pytest.raises(ValueError, match=f"^{cls.__name__}: {message}"):
        est.fit(TEXTS, Y)
    assert not hasattr(est, "relevance_") and not est.initialized_


def test_neural_estimators_accept_the_edges():
    AttentionPlanter, PlantClassifier = _neural()
    PlantClassifier(lr=None, module__dropout=0.0, validation_fraction=0.9, patience=1,
                    criterion__label_smoothing=0.5, criterion__gamma=0, stage1_weight=0,
                    decision__logit_adjustment="dev", decision__max_k=1, n_candidates=1,
                    shortlist_cv=2, criterion__hard_negatives=None, planter=None,
                    iterator_train__min_epoch_docs=1, iterator_train__max_epoch_docs=1,
                    module__max_length=None, callbacks__unfreeze__phases=[(0, "head", 0.0)]
                    )._check_params()
    AttentionPlanter(module__dropout=1.0, warmup=0, n_negatives=0, validation_fraction=None,
                     criterion__kind="mse", optimizer__lr=1e-6)._check_params()


def _estimators():
    out = [MIGRelevance(), OneVsRestLinear(), NapkinXCPLT(), OmikujiTrees(), LibMultiLabelLinear()]
    if NEURAL:
        from xplant.neural import AttentionPlanter, PlantClassifier
        out += [AttentionPlanter(), PlantClassifier()]
    return out


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_every_declared_constraint_refuses_what_it_leaves_out(est):
    """For each declared range and option list, a value just outside it is refused by name."""
    neural = hasattr(est, "resolved_params")
    for name, allowed in est._parameter_constraints.items():
        if allowed == "no_validation":
            continue
        made = [make_constraint(c) if not isinstance(c, Checked) else c for c in allowed]
        for c in made:
            if isinstance(c, Checked):
                continue
            try:
                bad = generate_invalid_param_val(c)
            except NotImplementedError:
                continue
            if any(_satisfies(other, bad) for other in made if not isinstance(other, Checked)):
                continue
            trial = type(est)(**{name: bad}) if not neural else type(est)().set_params(**{name: bad})
            check = trial._check_params if neural else trial._validate_params
            with pytest.raises(ValueError, match=f"^{type(est).__name__}: {name}="):
                check()
