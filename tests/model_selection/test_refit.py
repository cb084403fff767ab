"""refit_params: a fitted estimator's dev choices as the set_params values that pin them."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from xplant.metrics import DecisionRule, choose_rule
from xplant.model_selection import RefitOnDev, refit_params


def _record(value, on_dev=True):
    return {"name": "x", "family": "ranking", "criterion": "map", "value": value, "scores": [],
            "on_dev": on_dev}


class Chooser(BaseEstimator):
    """A stand-in fitted estimator with the attributes a PlantClassifier's fit leaves."""

    def __init__(self, validation_fraction=0.1):
        self.validation_fraction = validation_fraction

    def fit(self, X, y=None):
        return self


def _fitted():
    est = Chooser()
    est.dev_choices_ = {"epoch": _record(6), "stage1_weight": _record(0.1),
                        "fusion": _record([0.3, [1.7, -0.4]]),
                        "logit_adjustment": _record(0.5), "decision": _record("per_label_threshold"),
                        "k": _record(2), "threshold": _record(0.35)}
    est.decision_rule_ = DecisionRule("per_label_threshold", 2, 0.35, [0.2, 0.35, 0.6])
    return est


def test_every_choice_maps_to_the_value_that_pins_it():
    assert refit_params(_fitted()) == {
        "max_epochs": 6, "patience": None, "stage1_weight": 0.1, "fusion": (0.3, (1.7, -0.4)),
        "decision__logit_adjustment": 0.5, "decision": "per_label_threshold",
        "decision__k": 2, "decision__threshold": 0.35, "decision__thresholds": [0.2, 0.35, 0.6],
        "validation_fraction": None}


def test_scaled_epochs_and_a_pipelines_prefix():
    pipe = Pipeline([("id", FunctionTransformer()), ("clf", _fitted())])
    got = refit_params(pipe, epochs="scaled", n_train=300, n_dev=150)
    assert got["clf__max_epochs"] == 9 and got["clf__patience"] is None     # round(6 * 1.5)
    assert all(k.startswith("clf__") for k in got)
    assert refit_params(_fitted(), epochs="scaled", n_train=1000, n_dev=10)["max_epochs"] == 6


def test_refusals():
    est = _fitted()
    est.dev_choices_["k"] = _record(1, on_dev=False)           # a fallback: nothing to pin
    with pytest.raises(ValueError, match=r"chose \['k'\] without labelled dev data"):
        refit_params(est)
    with pytest.raises(ValueError, match="epochs must be one of"):
        refit_params(_fitted(), epochs="double")
    with pytest.raises(ValueError, match='"scaled" needs n_train'):
        refit_params(_fitted(), epochs="scaled")
    with pytest.raises(ValueError, match="needs validation_data"):
        RefitOnDev(Chooser()).fit([[0.0]], [[1]])
    assert refit_params(Chooser()) == {"validation_fraction": None}   # no choices: as it is


def test_a_fixed_rule_is_taken_as_given():
    Y = np.array([[1, 0, 0], [0, 1, 1]])
    S = np.array([[0.9, 0.1, 0.2], [0.1, 0.8, 0.7]])
    fixed = {"rule": "per_label_threshold", "k": 2, "threshold": 0.35,
             "thresholds": [0.2, 0.35, 0.6]}
    for y, s in ((Y, S), (None, None)):                       # dev data or not: not read
        rule = choose_rule(y, s, rules=("per_label_threshold",), fixed=fixed, warn=True)
        assert rule["rule"] == "per_label_threshold" and rule["k"] == 2
        assert rule["threshold"] == 0.35 and rule["thresholds"].tolist() == [0.2, 0.35, 0.6]
        assert {n: (c.value, c.fixed) for n, c in rule["choices"].items()} == {
            "k": (2, True), "threshold": (0.35, True)}
    with pytest.raises(ValueError, match="fixed rule 'top_k' is not one of rules"):
        choose_rule(Y, S, rules=("threshold",), fixed={"rule": "top_k", "k": 1, "threshold": .5})


def test_the_refit_offers_only_the_score_methods_of_its_estimator():
    """available_if: a ranker without predict_proba gives a refit without it, so that
    scorers and Pipelines see the methods of the estimator; and an estimator that
    chooses nothing on dev is refused before any fit."""
    from xplant.linear import FrequencyPrior
    from xplant.unseen import DescriptionRanker
    ranker = RefitOnDev(DescriptionRanker())
    assert hasattr(ranker, "decision_function") and hasattr(ranker, "predict_top_k")
    assert not hasattr(ranker, "predict_proba")
    prior = RefitOnDev(FrequencyPrior())
    assert hasattr(prior, "predict_proba") and hasattr(prior, "predict")
    X, Y = ["a b", "b c"], np.array([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="FrequencyPrior.fit takes no validation_data"):
        prior.fit(X, Y, validation_data=(X, Y))
    assert not hasattr(prior, "estimator_")      # refused before anything was fitted
