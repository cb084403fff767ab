"""DecisionRule: the one decision-rule type, the object form of check_rule's dict."""

import numpy as np
import pytest

from xplant.metrics import DecisionRule, apply_rule, check_rule, choose_rule

S = np.array([[0.9, 0.2, 0.6, 0.05], [0.1, 0.7, 0.4, 0.3], [0.5, 0.5, 0.8, 0.0]])
Y = np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 1, 0]])
RULES = [{"rule": "top_k", "k": 2, "threshold": 0.5, "thresholds": None},
         {"rule": "threshold", "k": 1, "threshold": 0.45, "thresholds": None},
         {"rule": "per_label_threshold", "k": 1, "threshold": 0.5,
          "thresholds": np.array([0.95, 0.1, 0.5, 0.2])}]


@pytest.mark.parametrize("d", RULES, ids=lambda d: d["rule"])
def test_to_dict_from_dict_round_trip_keeps_every_value(d):
    rule = DecisionRule.from_dict(d, n_labels=4)
    back = rule.to_dict()
    assert (back["rule"], back["k"], back["threshold"]) == (d["rule"], d["k"], d["threshold"])
    if d["thresholds"] is None:
        assert back["thresholds"] is None
    else:
        assert back["thresholds"].dtype == np.float64
        np.testing.assert_array_equal(back["thresholds"], d["thresholds"])
    assert DecisionRule.from_dict(back) == rule
    assert {k: v for k, v in back.items() if k != "thresholds"} == \
        {k: v for k, v in check_rule(d).items() if k != "thresholds"}


@pytest.mark.parametrize("d", RULES, ids=lambda d: d["rule"])
def test_apply_is_apply_rule(d):
    got = DecisionRule.from_dict(d).apply(S).toarray()
    np.testing.assert_array_equal(got, apply_rule(S, d).toarray())


def test_apply_by_hand():
    assert DecisionRule("top_k", k=2).apply(S).toarray().tolist() == \
        [[1, 0, 1, 0], [0, 1, 1, 0], [1, 0, 1, 0]]          # row 3: a tie goes to label 0
    assert DecisionRule("threshold", threshold=0.6).apply(S).toarray().tolist() == \
        [[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    per = DecisionRule("per_label_threshold", thresholds=[0.95, 0.1, 0.5, 0.2])
    assert per.apply(S).toarray().tolist() == [[0, 1, 1, 0], [0, 1, 0, 1], [0, 1, 1, 0]]


def test_choose_is_choose_rule_with_its_records():
    want = choose_rule(Y, S, max_k=3, n_folds=2)
    got = DecisionRule.choose(Y, S, max_k=3, n_folds=2)
    assert (got.rule, got.k, got.threshold) == (want["rule"], want["k"], want["threshold"])
    assert {n: c.to_dict() for n, c in got.choices.items()} == \
        {n: c.to_dict() for n, c in want["choices"].items()}


def test_an_invalid_rule_is_refused_by_the_one_check():
    with pytest.raises(ValueError, match="decision rule must be one of"):
        DecisionRule("top-k")
    with pytest.raises(ValueError, match="needs 'thresholds'"):
        DecisionRule.from_dict({"rule": "per_label_threshold", "k": 1, "threshold": 0.5})
    with pytest.raises(ValueError, match="of length 3"):
        DecisionRule.from_dict(RULES[2], n_labels=3)
    with pytest.raises(ValueError, match="columns|length"):
        DecisionRule.from_dict(RULES[2]).apply(S[:, :3])


def test_equality_reads_every_field():
    a = DecisionRule.from_dict(RULES[2])
    b = DecisionRule.from_dict({**RULES[2], "thresholds": [0.95, 0.1, 0.5, 0.25]})
    assert a != b and a == DecisionRule.from_dict(RULES[2])
    assert DecisionRule("threshold", k=1, threshold=0.5) != DecisionRule("top_k", k=1)
