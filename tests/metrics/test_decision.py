"""Decision rules and their tuning on dev data."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.metrics import (
    f1_score,
    select_k,
    select_label_thresholds,
    select_threshold,
    threshold_decision,
    top_k_decision,
)


def test_top_k_decision_dense_sparse_and_indices():
    S = np.array([[0.1, 0.7, 0.7, 0.2], [0.0, 0.0, 0.9, 0.0]])
    D = top_k_decision(S, k=2)
    assert D.format == "csr" and D.dtype == np.int64
    assert D.toarray().tolist() == [[0, 1, 1, 0], [1, 0, 1, 0]]
    Dsp = top_k_decision(sp.csr_matrix(S), k=2)
    assert Dsp.toarray().tolist() == [[0, 1, 1, 0], [0, 0, 1, 0]]  # only stored entries
    Dtop = top_k_decision(y_top_k=np.array([[2, 1, 0], [2, -1, -1]]), k=2, n_labels=4)
    assert Dtop.toarray().tolist() == [[0, 1, 1, 0], [0, 0, 1, 0]]
    assert Dtop.has_sorted_indices
    with pytest.raises(ValueError, match="n_labels"):
        top_k_decision(y_top_k=np.array([[0]]), k=1)


def test_threshold_decision_global_and_per_label():
    S = np.array([[0.2, 0.5, 0.9], [0.6, 0.1, 0.4]])
    assert threshold_decision(S, 0.5).toarray().tolist() == [[0, 1, 1], [1, 0, 0]]
    t = np.array([0.7, 0.0, 0.4])
    assert threshold_decision(S, t).toarray().tolist() == [[0, 1, 1], [0, 1, 1]]
    Ssp = sp.csr_matrix(np.array([[0.2, 0.0, 0.9], [0.6, 0.1, 0.0]]))
    # missing entries are never predicted, even with a threshold <= 0
    assert threshold_decision(Ssp, -1.0).toarray().tolist() == [[1, 0, 1], [1, 1, 0]]
    with pytest.raises(ValueError, match="threshold"):
        threshold_decision(S, np.array([0.1, 0.2]))


def _brute_best_k(Y, S, ks):
    vals = [f1_score(Y, top_k_decision(S, k=k)) for k in ks]
    return ks[int(np.argmax(vals))]


@pytest.mark.parametrize("seed", range(3))
def test_select_k_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    Y = (rng.random((40, 15)) < 0.2).astype(int)
    S = Y * rng.random((40, 15)) * 0.8 + rng.random((40, 15)) * 0.6
    ks = list(range(1, 11))
    assert select_k(Y, S, ks) == _brute_best_k(Y, S, ks)
    assert select_k(sp.csr_matrix(Y), sp.csr_matrix(S), ks) == _brute_best_k(Y, S, ks)
    macro = [f1_score(Y, top_k_decision(S, k=k), average="per_label") for k in ks]
    assert select_k(Y, S, ks, metric="macro_f1") == ks[int(np.argmax(macro))]


def test_select_k_ties_go_to_smaller_k():
    Y = np.array([[1, 0, 0, 0]])
    S = np.array([[0.9, 0.0, 0.0, 0.0]])
    # sparse: only one candidate, every k predicts the same single label
    assert select_k(Y, sp.csr_matrix(S), ks=[3, 1, 2]) == 1
    assert select_k(Y, y_top_k=np.array([[0, -1, -1]]), ks=[1, 2, 3]) == 1


@pytest.mark.parametrize("seed", range(3))
def test_select_threshold_is_exact_optimum(seed):
    rng = np.random.default_rng(seed)
    Y = (rng.random((30, 10)) < 0.25).astype(int)
    S = np.round(Y * 0.3 + rng.random((30, 10)) * 0.7, 2)
    t = select_threshold(Y, S)
    best = f1_score(Y, threshold_decision(S, t))
    for c in np.unique(S):
        assert f1_score(Y, threshold_decision(S, c)) <= best + 1e-12
    assert select_threshold(sp.csr_matrix(Y), S) == t
    # given candidates: the best among them
    cand = [0.2, 0.5, 0.8]
    vals = [f1_score(Y, threshold_decision(S, c)) for c in cand]
    assert select_threshold(Y, S, thresholds=cand) == cand[int(np.argmax(vals))]
    t_macro = select_threshold(Y, S, thresholds=cand, metric="macro_f1")
    macro = [f1_score(Y, threshold_decision(S, c), average="per_label") for c in cand]
    assert t_macro == cand[int(np.argmax(macro))]
    with pytest.raises(ValueError, match="no positive"):
        select_threshold(np.zeros((2, 2)), np.ones((2, 2)))


def test_select_label_thresholds_per_label_optimum():
    rng = np.random.default_rng(3)
    Y = (rng.random((40, 6)) < 0.3).astype(int)
    Y[:, 5] = 0  # untunable label -> fallback
    S = np.round(Y * 0.3 + rng.random((40, 6)) * 0.7, 2)
    t = select_label_thresholds(Y, S)
    for j in range(5):
        best = f1_score(Y[:, [j]], threshold_decision(S[:, [j]], t[j]))
        for c in np.unique(S[:, j]):
            assert f1_score(Y[:, [j]], threshold_decision(S[:, [j]], c)) <= best + 1e-12
    assert t[5] == select_threshold(Y, S)
    assert select_label_thresholds(Y, S, fallback=0.5)[5] == 0.5
    np.testing.assert_array_equal(select_label_thresholds(sp.csr_matrix(Y), sp.csr_matrix(S + 1)), t + 1)


# ------------------------------------------------------------------ the rule chosen on dev
from xplant.metrics import DECISION_RULES, apply_rule, check_rule, choose_rule  # noqa: E402


def _scores(rule):
    return dict(rule["choices"]["decision"].scores)


def test_top_k_wins_when_every_document_has_k_labels_at_its_own_scale():
    rng = np.random.default_rng(0)
    n, L = 60, 8
    Y = np.zeros((n, L), int)
    for i in range(n):
        Y[i, rng.choice(L, 2, replace=False)] = 1
    # each document ranks its 2 labels first, but on its own scale: no threshold separates
    scale = rng.uniform(0.1, 1.0, n)[:, None]
    S = scale * np.where(Y == 1, rng.uniform(0.7, 1.0, (n, L)), rng.uniform(0.0, 0.6, (n, L)))
    rule = choose_rule(Y, S, max_k=5)
    assert rule["rule"] == "top_k" and rule["k"] == 2 and rule["thresholds"] is None
    f1 = _scores(rule)
    assert f1["top_k"] == 1.0 and f1["threshold"] < 0.7 and f1["per_label_threshold"] < 0.7
    assert f1_score(Y, apply_rule(S, rule)) == 1.0


def test_a_global_threshold_wins_when_label_counts_vary():
    rng = np.random.default_rng(1)
    n, L = 60, 8
    Y = np.zeros((n, L), int)
    for i in range(n):
        Y[i, rng.choice(L, rng.integers(1, 5), replace=False)] = 1
    S = np.where(Y == 1, rng.uniform(0.55, 1.0, (n, L)), rng.uniform(0.0, 0.5, (n, L)))
    rule = choose_rule(Y, S, max_k=5)
    assert rule["rule"] == "threshold" and rule["thresholds"] is None
    f1 = _scores(rule)
    assert f1["threshold"] > f1["per_label_threshold"] and f1["threshold"] > f1["top_k"] + 0.1
    # refitted on the whole dev: the exact sweep's threshold, which separates every label
    assert rule["threshold"] == S[Y == 1].min()
    assert f1_score(Y, apply_rule(S, rule)) == 1.0


def test_per_label_thresholds_win_when_labels_have_their_own_scales():
    rng = np.random.default_rng(2)
    n, L = 100, 8
    Y = (rng.random((n, L)) < 0.3).astype(int)
    Y[Y.sum(1) == 0, 0] = 1
    scale = np.linspace(0.1, 1.0, L)[None, :]
    S = scale * np.where(Y == 1, rng.uniform(0.55, 1.0, (n, L)), rng.uniform(0.0, 0.5, (n, L)))
    rule = choose_rule(Y, S, max_k=5)
    assert rule["rule"] == "per_label_threshold"
    f1 = _scores(rule)
    assert f1["per_label_threshold"] > max(f1["top_k"], f1["threshold"]) + 0.25
    # refitted on the whole dev: each label's lowest positive, which separates it
    lowest = np.where(Y == 1, S, np.inf).min(axis=0)
    np.testing.assert_array_equal(rule["thresholds"], lowest)
    assert f1_score(Y, apply_rule(S, rule)) == 1.0


def test_cross_fitting_makes_per_label_thresholds_that_only_overfit_lose():
    rng = np.random.default_rng(4)
    n, L = 120, 40
    Y = (rng.random((n, L)) < 0.06).astype(int)
    S = 0.5 * Y + rng.normal(0, 0.35, (n, L))          # one scale for every label, noisy
    t = select_threshold(Y, S)
    own = select_label_thresholds(Y, S, min_positives=1)
    in_sample = {"threshold": f1_score(Y, threshold_decision(S, t)),
                 "per_label_threshold": f1_score(Y, threshold_decision(S, own))}
    # scored on the documents they were fitted on, per-label thresholds look better ...
    assert in_sample["per_label_threshold"] > in_sample["threshold"] + 0.05
    rule = choose_rule(Y, S, max_k=5, min_positives=1)
    f1 = _scores(rule)
    # ... held out, they lose: the global threshold is chosen
    assert rule["rule"] == "threshold" and f1["per_label_threshold"] < f1["threshold"]
    assert f1["threshold"] < in_sample["threshold"] + 1e-12


def _brute_params(Y, S, max_k, min_positives):
    """k, the global threshold and the per-label thresholds by trying every candidate."""
    ks = [f1_score(Y, top_k_decision(S, k)) for k in range(1, max_k + 1)]
    k = 1 + int(np.argmax(ks))                                  # ties: the smaller k
    cands = np.unique(S)[::-1]                                  # ties: the larger threshold
    if Y.sum() == 0:
        t = np.inf
    else:
        t = cands[int(np.argmax([f1_score(Y, threshold_decision(S, c)) for c in cands]))]
    own = np.full(S.shape[1], t)
    for j in range(S.shape[1]):
        if Y[:, j].sum() < min_positives:
            continue
        cj = np.unique(S[:, j])[::-1]
        f = [f1_score(Y[:, [j]], threshold_decision(S[:, [j]], c)) for c in cj]
        if max(f) > 0:
            own[j] = cj[int(np.argmax(f))]
    return k, t, own


@pytest.mark.parametrize("seed", [0, 1])
def test_cross_fitted_scores_match_a_brute_force_oracle(seed):
    rng = np.random.default_rng(seed)
    n, L, folds, min_pos = 23, 5, 3, 2
    Y = (rng.random((n, L)) < 0.35).astype(int)
    S = np.round(0.3 * Y * rng.random((n, L)) + rng.random((n, L)), 2)
    rule = choose_rule(Y, S, max_k=4, n_folds=folds, min_positives=min_pos, random_state=seed)
    # the documented folds: a seeded permutation of the documents, dealt into n_folds
    fold = np.random.default_rng(seed).permutation(n) % folds
    P = {r: np.zeros((n, L), int) for r in DECISION_RULES}
    for f in range(folds):
        fit, held = fold != f, fold == f
        k, t, own = _brute_params(Y[fit], S[fit], 4, min_pos)
        P["top_k"][held] = top_k_decision(S[held], k).toarray()
        P["threshold"][held] = threshold_decision(S[held], t).toarray()
        P["per_label_threshold"][held] = threshold_decision(S[held], own).toarray()
    want = {r: f1_score(Y, P[r]) for r in DECISION_RULES}
    for r, got in rule["choices"]["decision"].scores:
        assert got == pytest.approx(want[r], abs=1e-12)
    assert rule["rule"] == max(DECISION_RULES, key=lambda r: (want[r], -DECISION_RULES.index(r)))
    # then refitted on the whole dev
    k, t, own = _brute_params(Y, S, 4, min_pos)
    assert (rule["k"], rule["threshold"]) == (k, t)
    if rule["rule"] == "per_label_threshold":
        np.testing.assert_array_equal(rule["thresholds"], own)


def test_labels_with_too_few_dev_positives_take_the_global_threshold():
    Y = np.array([[1, 1, 0], [1, 0, 0], [1, 0, 1], [0, 0, 0], [1, 0, 0]])
    S = np.array([[.9, .2, .1], [.8, .1, .2], [.3, .3, .6], [.1, .4, .5], [.6, .0, .3]])
    t = select_threshold(Y, S)
    own = select_label_thresholds(Y, S, min_positives=2)
    # label 0 has 4 dev positives: its own threshold, its lowest positive; labels 1 and 2 have one
    assert own.tolist() == [0.3, t, t]
    assert select_label_thresholds(Y, S, min_positives=1).tolist() == [0.3, 0.2, 0.6]


def test_choose_rule_with_fixed_rules_and_its_records():
    Y = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0]])
    S = np.array([[.9, .2, .1], [.3, .8, .7], [.7, .6, .2]])
    one = choose_rule(Y, S, max_k=2, rules=["threshold"])
    assert one["rule"] == "threshold" and set(one["choices"]) == {"k", "threshold"}
    assert one["threshold"] == select_threshold(Y, S) and one["k"] == select_k(Y, S, ks=[1, 2])
    own = choose_rule(Y, S, rules=["per_label_threshold"], min_positives=1)
    np.testing.assert_array_equal(own["thresholds"], select_label_thresholds(Y, S))
    both = choose_rule(Y, S, rules=["threshold", "top_k"])
    assert [c for c, _ in both["choices"]["decision"].scores] == ["threshold", "top_k"]
    rec = both["choices"]["decision"].to_dict()
    assert rec["name"] == "decision" and rec["family"] == "decision"
    assert rec["criterion"] == "micro_f1" and rec["on_dev"] is True
    for bad, match in ((dict(rules=[]), "rules is empty"), (dict(rules=["top-k"]), "one of"),
                       (dict(n_folds=0), "n_folds"), (dict(min_positives=0), "min_positives")):
        with pytest.raises(ValueError, match=match):
            choose_rule(Y, S, **bad)


def test_choose_rule_without_labelled_dev_data_takes_its_fallback_with_one_warning():
    from xplant.model_selection import NoDevDataWarning
    S = np.array([[.9, .2], [.3, .8]])
    for Y in (None, np.zeros((2, 2), int)):
        with pytest.warns(NoDevDataWarning, match="decision") as caught:
            rule = choose_rule(Y, S)
        assert len([w for w in caught if w.category is NoDevDataWarning]) == 1
        assert (rule["rule"], rule["k"], rule["threshold"]) == ("top_k", 1, 0.5)
        assert all(not c.on_dev and c.scores == () for c in rule["choices"].values())
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rule = choose_rule(None, S, rules=["per_label_threshold"], warn=False,
                           fallback={"rule": "per_label_threshold", "k": 2, "threshold": 0.4,
                                     "thresholds": [0.4, 0.1]})
    assert rule["thresholds"].tolist() == [0.4, 0.1] and "decision" not in rule["choices"]
    with pytest.raises(ValueError, match="not one of rules"):
        choose_rule(None, S, rules=["top_k"], warn=False,
                    fallback={"rule": "threshold", "k": 1, "threshold": 0.5})


def test_apply_rule_and_check_rule():
    S = np.array([[0.9, 0.2, 0.6], [0.1, 0.5, 0.4]])
    base = {"k": 1, "threshold": 0.5, "thresholds": [0.95, 0.1, 0.5]}
    assert apply_rule(S, dict(base, rule="top_k")).toarray().tolist() == [[1, 0, 0], [0, 1, 0]]
    assert apply_rule(S, dict(base, rule="threshold")).toarray().tolist() == [[1, 0, 1], [0, 1, 0]]
    assert apply_rule(S, dict(base, rule="per_label_threshold")).toarray().tolist() == \
        [[0, 1, 1], [0, 1, 0]]
    assert apply_rule(sp.csr_matrix(S), dict(base, rule="per_label_threshold")).toarray().tolist() \
        == [[0, 1, 1], [0, 1, 0]]
    assert check_rule(dict(base, rule="threshold"))["thresholds"] is None
    for bad, match in (({"rule": "top-k", "k": 1, "threshold": 0.5}, "must be one of"),
                       ({"rule": "top_k", "k": 0, "threshold": 0.5}, "positive integer"),
                       ({"rule": "top_k", "k": 1, "threshold": float("nan")}, "a number"),
                       ({"rule": "per_label_threshold", "k": 1, "threshold": 0.5}, "needs"),
                       (dict(base, rule="per_label_threshold", thresholds=[0.1]), "length 3")):
        with pytest.raises(ValueError, match=match):
            apply_rule(S, bad)


def test_apply_rule_takes_a_models_own_ranking_for_the_top_k_rule():
    S = np.array([[0.5, 0.5, 0.1]])                   # a tie the model's ranking breaks otherwise
    rule = {"rule": "top_k", "k": 5, "threshold": 0.5}
    ranked = np.array([[1, 0, -1]])                   # -1: no label ranked
    assert apply_rule(None, rule, y_top_k=ranked, n_labels=3).toarray().tolist() == [[1, 1, 0]]
    assert apply_rule(S, dict(rule, k=1), y_top_k=ranked, n_labels=3).toarray().tolist() == \
        [[0, 1, 0]]
    assert apply_rule(S, dict(rule, rule="threshold"), y_top_k=ranked,
                      n_labels=3).toarray().tolist() == [[1, 1, 0]]
    with pytest.raises(ValueError, match="needs y_score"):
        apply_rule(None, dict(rule, rule="threshold"), y_top_k=ranked, n_labels=3)
    with pytest.raises(ValueError, match="needs n_labels"):
        apply_rule(None, rule, y_top_k=ranked)


def test_every_predict_applies_its_rule_in_apply_rule(monkeypatch):
    """The linear models' predict (both rules) and a saved model's decide go through
    apply_rule, the one place a rule is applied; predict's k and threshold are its names."""
    from xplant import _saved
    from xplant.linear import FrequencyPrior
    from xplant.metrics import _decision_rule
    texts = ["a", "b", "c", "d"]
    Y = sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1]]))
    model = FrequencyPrior().fit(texts, Y)
    seen, apply = [], _decision_rule.apply_rule
    monkeypatch.setattr(_decision_rule, "apply_rule",
                        lambda s, r, **kw: seen.append(r["rule"]) or apply(s, r, **kw))
    assert model.predict(texts[:1], k=2).toarray().tolist() == [[1, 0, 1]]
    assert model.predict(texts[:1], threshold=0.5).toarray().tolist() == [[1, 0, 1]]
    assert model.predict(texts[:1]).toarray().tolist() == [[1, 0, 0]]      # its default: top 1
    decision = _saved.fitted_decision(model)
    assert decision["rule"] == "top_k" and decision["k"] == 1
    assert _saved.decide(model, texts[:1], decision).toarray().tolist() == [[1, 0, 0]]
    assert seen == ["top_k", "threshold", "top_k", "top_k"]
