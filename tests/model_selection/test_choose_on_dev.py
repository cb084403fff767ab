"""choose_on_dev: the one rule of every choice made on dev."""

import warnings

import pytest

from xplant.model_selection import DevChoice, NoDevDataWarning, choose_on_dev


def test_the_best_score_wins_and_ties_keep_the_earliest():
    c = choose_on_dev("k", [1, 2, 3, 4], [0.2, 0.5, 0.5, 0.1], family="decision",
                      criterion="micro_f1", fallback=1)
    assert c.value == 2 and c.on_dev and c.scores == ((1, 0.2), (2, 0.5), (3, 0.5), (4, 0.1))
    assert c.to_dict() == {"name": "k", "family": "decision", "criterion": "micro_f1",
                           "value": 2, "scores": [[1, 0.2], [2, 0.5], [3, 0.5], [4, 0.1]],
                           "on_dev": True}


def test_keep_returns_the_chosen_payload_and_drops_the_others():
    alive = []

    class Model:
        def __init__(self, c):
            self.c = c

    def score(c):
        alive.append(c)
        return {"a": 0.3, "b": 0.9, "c": 0.9, "d": 0.1}[c], Model(c)

    choice = choose_on_dev("grid", ["a", "b", "c", "d"], score, family="ranking",
                           criterion="map", fallback="a", keep=True)
    assert choice.value == "b" and choice.kept.c == "b"        # the tie at 0.9 keeps "b"
    assert alive == ["a", "b", "c", "d"]                       # every candidate scored once
    assert choose_on_dev("k", [1], [0.5], family="decision", criterion="micro_f1",
                         fallback=1).kept is None


def test_without_dev_data_the_fallback_and_one_warning():
    with pytest.warns(NoDevDataWarning, match="k: no labelled dev data"):
        c = choose_on_dev("k", [1, 2], lambda k: 1 / 0, family="decision",
                          criterion="micro_f1", fallback=3, has_dev=False)
    assert c == DevChoice("k", "decision", "micro_f1", 3, (), False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        choose_on_dev("k", [1], None, family="decision", criterion="micro_f1", fallback=1,
                      has_dev=False, warn=False)


@pytest.mark.parametrize("kw, match", [
    (dict(family="other"), "family must be one of"),
    (dict(candidates=[]), "no candidates"),
    (dict(score=[0.1]), "1 scores for 2 candidates"),
    (dict(score=[0.1, float("nan")]), "NaN"),
])
def test_bad_input_is_refused(kw, match):
    args = dict(name="k", candidates=[1, 2], score=[0.1, 0.2], family="decision",
                criterion="micro_f1", fallback=1)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        choose_on_dev(**args)


def test_a_fixed_value_is_recorded_as_given_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = choose_on_dev("k", [3], lambda k: 1 / 0, family="decision", criterion="micro_f1",
                          fallback=1, has_dev=False, fixed=True)    # score never read
    assert (c.value, c.on_dev, c.fixed, c.scores) == (3, False, True, ())
    assert c.to_dict() == {"name": "k", "family": "decision", "criterion": "micro_f1",
                           "value": 3, "scores": [], "on_dev": False, "fixed": True}
    with pytest.raises(ValueError, match="a fixed k is one value, got 2"):
        choose_on_dev("k", [1, 2], None, family="decision", criterion="micro_f1", fallback=1,
                      fixed=True)


def test_dev_usability_by_hand():
    """A dev split guides a choice only through positives on labels with training documents."""
    import numpy as np
    from xplant.model_selection import LOW_DEV_COVERAGE, dev_usability
    freq = [3, 0, 1]
    # 4 positives, 3 on labels 0 and 2 (trained), 1 on label 1 (no training document)
    u = dev_usability(np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0]]), freq)
    assert (u.usable, u.n_positives, u.n_covered, u.coverage, u.low) == (True, 4, 3, 0.75, False)
    # 1 of 3 covered: usable, flagged low; a column past the frequencies (a label outside
    # the training columns) is uncovered
    u = dev_usability(np.array([[0, 1, 0, 1], [1, 0, 0, 0]]), freq)
    assert (u.usable, u.n_covered, u.low) == (True, 1, True) and 1 / 3 < LOW_DEV_COVERAGE
    for Y, reason in ((np.array([[0, 1, 0]]), "none of the dev split's 1 positive labels"),
                      (np.zeros((2, 3)), "no positive label"),
                      (np.zeros((0, 3)), "no documents"), (None, "no dev split")):
        u = dev_usability(Y, freq)
        assert not u.usable and reason in u.reason and u.coverage == 0.0
    assert dev_usability(np.array([[0, 1, 0]])).usable        # no frequencies: every label
