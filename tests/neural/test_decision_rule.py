"""PlantClassifier's decision rule: chosen on dev, kept, saved, applied by predict."""

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.metrics import DECISION_RULES, DecisionRule, apply_rule, select_label_thresholds
from xplant.neural import PlantClassifier, load_model


@pytest.fixture(scope="module")
def chosen(small, make_corpus):
    texts, Y = make_corpus(n_docs=90, n_labels=6, seed=7)
    clf = small(max_epochs=2).fit(texts[:60], Y[:60], validation_data=(texts[60:], Y[60:]),
                                  label_names=[f"C{j}" for j in range(6)])
    return clf, texts, Y


def _own_thresholds(clf, texts):
    """Per-label thresholds that split these texts: each label's median probability."""
    return np.median(clf.predict_proba(texts).astype(np.float64), axis=0)


def _expected(clf, texts):
    """predict's answer, from predict_proba and predict_top_k under the fitted rule."""
    if clf.decision_ == "top_k":
        top = clf.predict_top_k(texts, clf.k_)[0]
        P = np.zeros((len(texts), clf.n_labels_), int)
        np.put_along_axis(P, top, 1, axis=1)
        return P
    return apply_rule(clf.predict_proba(texts), clf.decision_rule_.to_dict()).toarray()


def test_the_rule_is_chosen_on_dev_and_applied_by_predict(chosen):
    clf, texts, _ = chosen
    assert clf.decision == "dev" and clf.decision_ in DECISION_RULES
    rec = clf.dev_choices_["decision"]
    assert rec["value"] == clf.decision_ and rec["on_dev"] is True
    assert rec["family"] == "decision" and rec["criterion"] == "micro_f1"
    scores = dict((r, s) for r, s in rec["scores"])
    assert list(scores) == list(DECISION_RULES)
    assert scores[clf.decision_] == max(scores.values())
    assert (clf.label_thresholds_ is None) == (clf.decision_ != "per_label_threshold")
    np.testing.assert_array_equal(clf.predict(texts[:20]).toarray(), _expected(clf, texts[:20]))


@pytest.mark.parametrize("rule", ["top_k", "threshold"])
def test_predict_applies_its_rule_in_apply_rule(chosen, monkeypatch, rule):
    """PlantClassifier.predict goes through xplant.metrics.apply_rule, the top-k rule with
    the model's own ranking."""
    from xplant.metrics import _decision_rule
    clf, texts, _ = chosen
    kept, seen, apply = clf.decision_rule_, [], _decision_rule.apply_rule
    monkeypatch.setattr(_decision_rule, "apply_rule",
                        lambda s, r, **kw: seen.append((r["rule"], s is None)) or apply(s, r, **kw))
    try:
        clf.parts_["decision_rule"] = DecisionRule(rule, 2, 0.5)
        np.testing.assert_array_equal(clf.predict(texts[:9]).toarray(), _expected(clf, texts[:9]))
    finally:
        clf.parts_["decision_rule"] = kept
    assert seen[0] == (rule, rule == "top_k")


@pytest.mark.parametrize("rule", DECISION_RULES)
def test_each_rule_survives_save_and_load(chosen, tmp_path, rule):
    clf, texts, _ = chosen
    kept = clf.decision_rule_
    own = _own_thresholds(clf, texts[60:])
    try:
        clf.parts_["decision_rule"] = DecisionRule(rule, kept.k, kept.threshold,
                                          own if rule == "per_label_threshold" else None)
        want = _expected(clf, texts[60:])
        np.testing.assert_array_equal(clf.predict(texts[60:]).toarray(), want)
        again = load_model(clf.save(tmp_path / "m"))
        config = json.loads((tmp_path / "m" / "config.json").read_text())
    finally:
        clf.parts_["decision_rule"] = kept
    assert again.decision_rule_ == DecisionRule(rule, kept.k, kept.threshold,
                                                own if rule == "per_label_threshold" else None)
    assert config["rule"] == rule and again.decision_ == rule
    if rule == "per_label_threshold":       # JSON floats: each threshold back bit for bit
        assert config["label_thresholds"] == own.tolist()
        np.testing.assert_array_equal(again.label_thresholds_, own)
        assert 0 < want.sum() < want.size                  # the thresholds decide something
    else:
        assert config["label_thresholds"] is None and again.label_thresholds_ is None
    np.testing.assert_array_equal(again.predict(texts[60:]).toarray(), want)


def test_a_fixed_per_label_rule_is_fitted_on_dev(small, make_corpus):
    texts, Y = make_corpus(n_docs=90, n_labels=6, seed=7)
    clf = small(max_epochs=2, decision="per_label_threshold").fit(
        texts[:60], Y[:60], validation_data=(texts[60:], Y[60:]))
    assert clf.decision_ == "per_label_threshold" and "decision" not in clf.dev_choices_
    dev = clf.predict_proba(texts[60:]).astype(np.float64)
    want = select_label_thresholds(Y[60:], dev, fallback=clf.threshold_, min_positives=5)
    np.testing.assert_allclose(clf.label_thresholds_, want, rtol=1e-6)
    few = np.asarray(sp.csr_matrix(Y[60:]).sum(0)).ravel() < 5
    assert (clf.label_thresholds_[few] == clf.threshold_).all()     # the documented fallback


def test_an_unknown_rule_is_refused_before_fitting(small, make_corpus):
    texts, Y = make_corpus(n_docs=20, n_labels=4, seed=1)
    clf = small(decision="top-k")
    with pytest.raises(ValueError, match="decision.*per_label_threshold"):
        clf.fit(texts, Y)
    assert not hasattr(clf, "module_")


def test_without_dev_data_the_rule_falls_back_with_the_fits_one_warning(small, make_corpus):
    from xplant.model_selection import NoDevDataWarning
    texts, Y = make_corpus(n_docs=30, n_labels=4, seed=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = small(max_epochs=1, stage1_weight=0.0, validation_fraction=None).fit(texts, Y)
    ours = [w for w in caught if issubclass(w.category, NoDevDataWarning)]
    assert len(ours) == 1 and "decision='top_k'" in str(ours[0].message)
    assert clf.decision_ == "top_k" and clf.label_thresholds_ is None
    assert clf.dev_choices_["decision"]["on_dev"] is False
    assert clf.k_ == max(1, round(sp.csr_matrix(Y).nnz / len(texts)))


def test_the_predict_record_shows_each_label_with_the_threshold_it_passed(chosen, tmp_path):
    from xplant.app._predict import predict_file
    clf, texts, _ = chosen
    kept = clf.decision_rule_
    own = _own_thresholds(clf, texts[60:])
    try:
        clf.parts_["decision_rule"] = DecisionRule("per_label_threshold", kept.k, kept.threshold, own)
        folder = clf.save(tmp_path / "m")
    finally:
        clf.parts_["decision_rule"] = kept
    notes = tmp_path / "notes.jsonl"
    notes.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                             for i, t in enumerate(texts[60:])), encoding="utf-8")
    predict_file(folder, notes, tmp_path / "pred.jsonl", top_k=6)
    recs = [json.loads(line) for line in (tmp_path / "pred.jsonl").read_text().splitlines()]
    P = load_model(folder).predict_proba(texts[60:])
    names = [f"C{j}" for j in range(6)]
    n_passed = 0
    for i, rec in enumerate(recs):
        d = rec["decision"]
        assert d["rule"] == "per_label_threshold" and d["scale"] == "probability"
        assert d["n_label_thresholds"] == int(np.sum(own != clf.threshold_))
        assert d["label_threshold_range"] == [own.min(), own.max()]
        assert [p["label"] for p in rec["passed"]] == rec["predicted"]
        want = {names[j] for j in range(6) if P[i, j] >= own[j]}
        assert set(rec["predicted"]) == want
        for p in rec["passed"]:
            j = names.index(p["label"])
            assert p["threshold"] == own[j] and p["score"] == float(P[i, j]) >= own[j]
        n_passed += len(rec["passed"])
    assert 0 < n_passed < 6 * len(recs)


def test_a_dev_split_whose_labels_lie_outside_training_chooses_nothing(small, make_corpus):
    """Dev positives only on labels without training documents (the top-k rule would take
    k = all labels): every choice takes its fallback and one warning gives the reason, so
    that such a dev split chooses nothing by accident."""
    from xplant.model_selection import NoDevDataWarning
    texts, Y = make_corpus(n_docs=40, n_labels=4, seed=3)
    Y = sp.csr_matrix(Y).tolil()
    Y[:30, 3] = 0                                  # label 3: no training document ...
    Y[30:, :3] = 0                                 # ... and the dev split's only label
    Y[30:, 3] = 1
    Y = Y.tocsr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = small(max_epochs=1, stage1_weight=0.0).fit(
            texts[:30], Y[:30], validation_data=(texts[30:], Y[30:]))
    ours = [str(w.message) for w in caught if issubclass(w.category, NoDevDataWarning)]
    assert len(ours) == 1 and "none of the dev split's 10 positive labels" in ours[0]
    assert clf.dev_choices_["decision"]["on_dev"] is False
    assert clf.k_ == max(1, round(Y[:30].nnz / 30)) < 4


def test_the_end_of_fit_chooses_from_its_inputs_alone():
    """The epoch and the rule are plain functions of what they read: the history's dev
    scores (ties keep the earlier epoch; no early stopping: the last, fixed), and a fixed
    rule is taken as given without scoring dev."""
    from xplant.neural.classifier._final_choices import choose_decision, choose_epoch
    history = [{"valid_map": 0.1}, {"valid_map": 0.3}, {"valid_map": 0.3}, {"valid_map": 0.2}]
    assert choose_epoch(history, "map", patience=6).value == 2
    fixed = choose_epoch(history, "map", patience=None).to_dict()
    assert (fixed["value"], fixed.get("fixed")) == (4, True)
    assert choose_epoch([{"valid_map": None}] * 3, "map", 6).to_dict()["on_dev"] is False

    def never():
        raise AssertionError("a fixed rule reads no dev scores")
    Y = sp.csr_matrix(np.array([[1, 0, 1], [0, 1, 0]]))
    settings = {"max_k": 10, "k": 2, "threshold": 0.4, "thresholds": None}
    rule = choose_decision("threshold", settings, Y, Y, never)
    assert (rule.rule, rule.k, rule.threshold) == ("threshold", 2, 0.4)
    # no labelled dev data: the named rule, k the mean labels per training document
    rule = choose_decision("dev", dict(settings, k=None, threshold=None), Y, None, never)
    assert (rule.rule, rule.k, rule.threshold) == ("top_k", 2, 0.5)
