"""PlantClassifier's fitted parts: each part's to_dict/from_dict and apply, and saving that walks them."""

import copy

import numpy as np
import pytest
import torch

from xplant.fusion import SCORE_FLOOR, Source, fit_shortlist, fuse, rank_labels, tail_factor
from xplant.metrics import DecisionRule
from xplant.neural import adjust_logits, load_model, log_prior
from xplant.neural.parts._logit_adjustment import LogitAdjustment
from xplant.neural.parts._shortlist_fusion import ShortlistFusion
from xplant.neural.classifier._io import PART_NAMES, UNSAVED_PARTS

LOG_P = np.log(np.array([0.5, 0.25, 0.125, 0.0625]))


def test_logit_adjustment_round_trip_keeps_every_value():
    part = LogitAdjustment(0.75, {0.0: 0.5, 0.25: 0.625, 0.75: 0.7}, LOG_P)
    state = part.to_dict()
    assert state == {"tau": 0.75, "dev_scores": {"0.0": 0.5, "0.25": 0.625, "0.75": 0.7}}
    back = LogitAdjustment.from_dict(state, log_prior=LOG_P)
    assert back == part and back.tau == 0.75 and back.dev_scores == part.dev_scores
    assert LogitAdjustment.from_dict({"tau": 0.0, "dev_scores": None}).dev_scores is None


def test_logit_adjustment_apply_is_z_minus_tau_log_p():
    z = torch.tensor([[1.0, -2.0, 0.5, 0.0]])
    got = LogitAdjustment(0.5, log_prior=LOG_P).apply(z)
    want = z - torch.as_tensor(0.5 * LOG_P, dtype=torch.float32)    # the former arithmetic
    assert got.dtype == torch.float32 and torch.equal(got, want)
    np.testing.assert_allclose(got.numpy(), adjust_logits(z.numpy(), LOG_P, 0.5), rtol=1e-6)
    cand = np.array([[3, 0]])                        # candidate logits: their labels' priors
    got = LogitAdjustment(1.0, log_prior=LOG_P).apply(torch.zeros(1, 2), cand)
    np.testing.assert_array_equal(got.numpy(), np.float32([[-LOG_P[3], -LOG_P[0]]]))
    assert LogitAdjustment(0.0).apply(z) is z          # τ = 0: the logits as they are
    assert torch.equal(LogitAdjustment(0.0, log_prior=LOG_P).apply(z, tau=0.5),
                       LogitAdjustment(0.5, log_prior=LOG_P).apply(z))


def test_logit_adjustment_refuses_what_fit_refuses():
    with pytest.raises(ValueError, match="logit_adjustment"):
        LogitAdjustment.from_dict({"tau": -1, "dev_scores": None})
    with pytest.raises(ValueError, match="dev_scores"):
        LogitAdjustment(0.5, {"x": 0.1})
    with pytest.raises(ValueError, match="number >= 0"):
        LogitAdjustment("dev")


def test_logit_adjustment_choose_fixed_and_without_dev():
    part, scores = LogitAdjustment.choose(0.25, LOG_P)
    assert (part.tau, part.dev_scores, scores) == (0.25, None, None)
    assert part.choice.fixed and part.choice.value == 0.25
    part, _ = LogitAdjustment.choose("dev", LOG_P)
    assert part.tau == 0.0 and part.choice.on_dev is False


@pytest.fixture(scope="module")
def shortlist(make_corpus):
    texts, Y = make_corpus(n_docs=40, n_labels=5, seed=11)
    model, info = fit_shortlist("linear", texts[:30], Y[:30], texts[30:], Y[30:], random_state=0)
    return model, info, texts


def test_shortlist_fusion_round_trip_keeps_every_value(shortlist, tmp_path):
    model, info, texts = shortlist
    part = ShortlistFusion(model, 3, (1.7, -0.4), 0.3, info)
    state = part.to_dict()
    assert state["calibration"] == [1.7, -0.4] and state["fusion_weight"] == 0.3
    assert state["n_candidates"] == 3 and state["info"]["C"] == info["C"]
    back = ShortlistFusion.from_dict(state, model)
    assert back == part and back.calibration == (1.7, -0.4) and back.weight == 0.3
    part.save(tmp_path / "shortlist")
    loaded = ShortlistFusion.load(tmp_path / "shortlist", n_labels=5)
    assert loaded == part and loaded.to_dict() == state
    np.testing.assert_array_equal(rank_labels(loaded.shortlist, texts, 5)[1],
                                  rank_labels(model, texts, 5)[1])
    with pytest.raises(ValueError, match="the model has 6 labels"):
        ShortlistFusion.load(tmp_path / "shortlist", n_labels=6)
    with pytest.raises(ValueError, match="fusion_weight"):
        ShortlistFusion.from_dict(dict(state, fusion_weight=1.5), model)


def test_shortlist_fusion_apply_is_the_fusion_formula():
    rng = np.random.default_rng(0)
    cand = np.array([[2, 0, 4], [1, 3, 0]])
    s, z = rng.normal(size=(2, 3)), rng.normal(size=(2, 3)).astype(np.float32)
    part = ShortlistFusion(None, 3, (2.0, -1.0), 0.4)
    sources = [Source(s, 0.4, (2.0, -1.0), cand), Source(z, 0.6, (1.0, 0.0), cand)]
    np.testing.assert_array_equal(part.apply(s, z, cand), fuse(sources, min_score=SCORE_FLOOR))
    rank = np.array([[5, 0, 5, 1, 5], [2, 5, 0, 5, 1]], dtype=np.int32)
    factor = tail_factor(rank)
    want = fuse(sources, n_labels=5, floor="rest", floor_factor=factor, min_score=SCORE_FLOOR)
    np.testing.assert_array_equal(part.apply(s, z, cand, factor, 5), want)
    p = 0.4 / (1 + np.exp(-(2.0 * s - 1.0))) + 0.6 / (1 + np.exp(-z.astype(np.float64)))
    np.testing.assert_allclose(part.apply(s, z, cand), p, rtol=1e-12)     # by hand


@pytest.fixture(scope="module")
def fused(small, make_corpus):
    texts, Y = make_corpus(n_docs=90, n_labels=6, seed=5)
    clf = small(shortlist="linear", n_candidates=4, max_epochs=2,
                decision__logit_adjustment="dev").fit(
        texts[:60], Y[:60], validation_data=(texts[60:], Y[60:]))
    return clf, texts


def test_the_fitted_attributes_read_the_parts(fused):
    clf, _ = fused
    assert set(clf.parts_) == set(PART_NAMES) | set(UNSAVED_PARTS)
    rule, tau, fusion = (clf.parts_[n] for n in ("decision_rule", "logit_adjustment",
                                                 "shortlist_fusion"))
    assert isinstance(rule, DecisionRule) and clf.decision_rule_ is rule
    assert (clf.decision_, clf.k_, clf.threshold_) == (rule.rule, rule.k, rule.threshold)
    assert (clf.logit_adjustment_, clf.logit_adjustment_dev_) == (tau.tau, tau.dev_scores)
    np.testing.assert_array_equal(tau.log_prior, log_prior(clf.label_frequency_,
                                                           clf.n_train_documents_))
    assert (clf.shortlist_, clf.n_candidates_, clf.fusion_weight_) == \
        (fusion.shortlist, 4, fusion.weight)
    assert clf.shortlist_calibration_ == fusion.calibration
    # dev_choices_ are the parts' records
    assert clf.dev_choices_["logit_adjustment"] == tau.choice.to_dict()
    assert clf.dev_choices_["fusion"] == fusion.choice.to_dict()
    assert {n: clf.dev_choices_[n] for n in rule.choices} == \
        {n: c.to_dict() for n, c in rule.choices.items()}
    with pytest.raises(AttributeError):
        clf.k_ = 3                                       # read-only: the part is the state


def test_save_and_load_walk_the_parts(fused, tmp_path):
    clf, texts = fused
    back = load_model(clf.save(tmp_path / "m"))
    assert set(back.parts_) == set(clf.parts_)
    for name in PART_NAMES:
        if name == "relevance":                  # an estimator: equal by its fitted MIG
            a, b = back.parts_[name], clf.parts_[name]
            assert (a.relevance_ != b.relevance_).nnz == 0 and a.vocabulary_ == b.vocabulary_
        else:
            assert back.parts_[name] == clf.parts_[name], name
    assert back.parts_["planting"] is None               # the network holds what it planted
    np.testing.assert_array_equal(back.parts_["logit_adjustment"].log_prior,
                                  clf.parts_["logit_adjustment"].log_prior)
    np.testing.assert_array_equal(back.predict(texts[60:]).toarray(),
                                  clf.predict(texts[60:]).toarray())
    # every documented fitted attribute reads a part (that the loader sets parts_ alone:
    # tests/test_persistence.py, test_a_loader_assigns_no_fitted_attribute_but_parts)
    for attr in ("classes_", "n_labels_", "label_frequency_", "n_train_documents_",
                 "scored_labels_", "best_epoch_", "dev_choices_", "stage1_weight_",
                 "stage1_weight_candidates_", "decision_", "k_", "logit_adjustment_",
                 "n_candidates_"):
        assert attr not in vars(back), attr
        assert np.array_equal(np.asarray(getattr(back, attr), dtype=object),
                              np.asarray(getattr(clf, attr), dtype=object)), attr
    assert back.relevance_ is back.parts_["relevance"] and "relevance_" not in vars(back)
    assert back.shortlist_ is back.parts_["shortlist_fusion"].shortlist


def test_a_copy_of_a_part_changes_only_its_copy(fused):
    clf, texts = fused
    c = copy.deepcopy(clf)
    c.parts_["shortlist_fusion"].weight = 1.0              # the shortlist alone
    assert c.parts_["shortlist_fusion"] is not clf.parts_["shortlist_fusion"]
    idx, _ = c.predict_top_k(texts[60:], k=3)
    want, _ = rank_labels(clf.shortlist_, texts[60:], 3)
    np.testing.assert_array_equal(idx, want)


def test_shortlist_fusion_choose_given_chosen_or_fallback():
    from xplant.model_selection import DevChoice
    part = ShortlistFusion(None, 3)
    choice = part.choose((0.3, (1.7, -0.4)), "map", best=lambda: pytest.fail("not chosen"))
    assert (part.weight, part.calibration) == (0.3, (1.7, -0.4)) and choice.fixed
    found = DevChoice("fusion", "ranking", "map", (0.7, (2.0, 0.5)), (((0.7, (2.0, 0.5)), 0.9),))
    assert part.choose("dev", "map", best=lambda: found) is found is part.choice
    assert (part.weight, part.calibration) == (0.7, (2.0, 0.5))
    choice = part.choose("dev", "map")                 # no labelled dev data: the fallback
    assert (part.weight, part.calibration) == (0.5, (1.0, 0.0)) and choice.on_dev is False
    part.choose(0.2, "map")
    assert (part.weight, part.calibration) == (0.2, (1.0, 0.0))
