"""PlantClassifier's post-hoc logit adjustment (Menon et al., ICLR 2021)."""

import copy
import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics import f1_score as sk_f1

from xplant.neural import (LOGIT_ADJUSTMENT_GRID, PlantClassifier, adjust_logits,
                           choose_logit_adjustment)
from xplant.neural.parts._logit_adjustment import check_logit_adjustment


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def _hand_log_prior(Y):
    """log((f + 1/2) / (N + 1)), written out from the docstring's formula."""
    Y = sp.csr_matrix(Y)
    f = np.asarray((Y > 0).sum(axis=0)).ravel().astype(float)
    return np.log((f + 0.5) / (Y.shape[0] + 1.0))


def _top_k_micro_f1(Y, scores, max_k):
    """Brute force with scikit-learn: best micro-F1 of top-k over k in 1..max_k (ties: smaller k)."""
    Y = np.asarray(sp.csr_matrix(Y).todense())
    best = None
    for k in range(1, max_k + 1):
        top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        pred = np.zeros_like(Y)
        np.put_along_axis(pred, top, 1, axis=1)
        value = sk_f1(Y, pred, average="micro", zero_division=0)
        if best is None or value > best[0] + 1e-12:
            best = (value, k)
    return best


@pytest.fixture(scope="module")
def corpus(make_corpus):
    texts, Y = make_corpus(n_docs=120, n_labels=10, seed=5)
    Y = Y.tolil()
    Y[:60, 0] = 1                     # a head label in half the documents
    return texts, Y.tocsr()


@pytest.fixture(scope="module")
def fitted(small, corpus):
    """Trained on rows 0..89 with dev rows 90..119 given: every training row counts."""
    texts, Y = corpus
    clf = small(decision__logit_adjustment="dev").fit(texts[:90], Y[:90],
                                           validation_data=(texts[90:], Y[90:]))
    return clf, texts, Y


def _with_tau(clf, tau):
    from xplant.neural.parts._logit_adjustment import LogitAdjustment
    c = copy.deepcopy(clf)
    part = c.parts_["logit_adjustment"]
    c.parts_["logit_adjustment"] = LogitAdjustment(tau, part.dev_scores, part.log_prior)
    return c


def test_adjust_logits_by_hand():
    z = np.array([[1.0, -2.0, 0.5]])
    log_p = np.log([0.5, 0.01, 0.2])
    np.testing.assert_allclose(adjust_logits(z, log_p, 0.5),
                               [[1.0 + 0.5 * 0.6931472, -2.0 + 0.5 * 4.6051702,
                                 0.5 + 0.5 * 1.6094379]], rtol=1e-6)
    np.testing.assert_array_equal(adjust_logits(z, log_p, 0.0), z)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "auto", None])
def test_bad_logit_adjustment_is_refused(bad, small, corpus):
    with pytest.raises(ValueError, match="logit_adjustment"):
        check_logit_adjustment(bad)
    texts, Y = corpus
    with pytest.raises(ValueError, match="logit_adjustment"):
        small(decision__logit_adjustment=bad, max_epochs=1).fit(texts[:20], Y[:20])


def test_choose_logit_adjustment_matches_brute_force():
    """τ = argmax of scikit-learn's micro-F1 at each τ's best k; ties keep the smaller τ."""
    rng = np.random.default_rng(0)
    n, L = 40, 8
    Y = sp.csr_matrix((rng.random((n, L)) < np.linspace(0.6, 0.05, L)).astype(int))
    z = rng.normal(size=(n, L)) + 3 * Y.toarray() * np.linspace(0.2, 1.0, L)
    log_p = _hand_log_prior(Y)
    tau, scores, values = choose_logit_adjustment(
        Y, lambda t: _sigmoid(z - t * log_p), LOGIT_ADJUSTMENT_GRID, max_k=4)
    brute = {t: _top_k_micro_f1(Y, _sigmoid(z - t * log_p), 4)[0] for t in LOGIT_ADJUSTMENT_GRID}
    assert values == pytest.approx(brute, abs=1e-12)
    best = max(brute.values())
    assert tau == min(t for t, v in brute.items() if v >= best - 1e-12)
    np.testing.assert_allclose(scores, _sigmoid(z - tau * log_p))


def test_ties_keep_the_model_as_trained():
    Y = sp.csr_matrix(np.array([[1, 0], [0, 1]]))
    tau, _, values = choose_logit_adjustment(Y, lambda t: np.array([[0.9, 0.1], [0.1, 0.9]]))
    assert tau == 0.0 and len(set(values.values())) == 1


def test_scores_are_the_adjusted_logits(fitted):
    """predict_proba, decision_function, predict_top_k and explain at τ, by hand."""
    clf, texts, Y = fitted
    assert clf.n_train_documents_ == 90
    raw = _with_tau(clf, 0.0)
    z = raw.decision_function(texts[90:])
    log_p = _hand_log_prior(Y[:90])
    adj = _with_tau(clf, 0.75)
    np.testing.assert_allclose(adj.decision_function(texts[90:]), z - 0.75 * log_p,
                               rtol=1e-5, atol=1e-5)
    P = adj.predict_proba(texts[90:])
    np.testing.assert_allclose(P, _sigmoid(z - 0.75 * log_p), rtol=1e-5, atol=1e-6)
    idx, sc = adj.predict_top_k(texts[90:], k=3)
    np.testing.assert_array_equal(idx, np.argsort(-P, 1, kind="stable")[:, :3])
    np.testing.assert_allclose(sc, np.take_along_axis(P, idx, 1), rtol=1e-5)
    ex = adj.explain(texts[90:93], top_labels=2)
    for row, e in zip(P[:3], ex):
        assert [d["index"] for d in e["labels"]] == np.argsort(-row, kind="stable")[:2].tolist()
        np.testing.assert_allclose([d["prob"] for d in e["labels"]],
                                   np.sort(row)[::-1][:2], rtol=1e-5)
    # every logit rises by tau * |log p|: the rarest label most, the head label least
    rare, lift = int(np.argmax(-log_p)), adj.decision_function(texts[90:]) - z
    assert (lift[:, rare] > lift[:, 0]).all() and (lift[:, 0] > 0).all()
    assert ((P[:, rare] > P[:, 0]).sum() >= (z[:, rare] > z[:, 0]).sum())


def test_dev_choice_is_the_brute_force_one(fitted):
    clf, texts, Y = fitted
    assert set(clf.logit_adjustment_dev_) == set(LOGIT_ADJUSTMENT_GRID)
    z = _with_tau(clf, 0.0).decision_function(texts[90:])
    log_p = _hand_log_prior(Y[:90])
    brute = {t: _top_k_micro_f1(Y[90:], _sigmoid(z - t * log_p), 10)   # decision__max_k default
             for t in LOGIT_ADJUSTMENT_GRID}
    assert clf.logit_adjustment_dev_ == pytest.approx({t: v[0] for t, v in brute.items()},
                                                      abs=1e-6)
    best = max(v[0] for v in brute.values())
    tau = min(t for t, v in brute.items() if v[0] >= best - 1e-9)
    assert clf.logit_adjustment_ == tau
    assert clf.k_ == brute[tau][1]            # the decision rule reads the adjusted scores


def test_fixed_value_and_no_dev_data(small, corpus):
    texts, Y = corpus
    clf = small(decision__logit_adjustment=0.3, max_epochs=1).fit(texts[:60], Y[:60],
                                                        validation_data=(texts[60:80], Y[60:80]))
    assert clf.logit_adjustment_ == 0.3 and clf.logit_adjustment_dev_ is None
    no_dev = small(validation_fraction=None, max_epochs=1).fit(texts[:60], Y[:60])
    assert no_dev.logit_adjustment_ == 0.0 and no_dev.logit_adjustment_dev_ is None
    assert clone(clf).get_params()["decision__logit_adjustment"] == 0.3


def test_save_load_keeps_tau_and_older_models_load_without_it(fitted, tmp_path):
    clf, texts, _ = fitted
    clf = _with_tau(clf, 0.5)
    clf.save(tmp_path / "m")
    back = PlantClassifier.load(tmp_path / "m")
    assert back.logit_adjustment_ == 0.5
    assert back.logit_adjustment_dev_ == pytest.approx(clf.logit_adjustment_dev_)
    np.testing.assert_allclose(back.predict_proba(texts[90:]), clf.predict_proba(texts[90:]),
                               rtol=1e-6)
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    del cfg["logit_adjustment"], cfg["logit_adjustment_dev"]
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    old = PlantClassifier.load(tmp_path / "m")
    assert old.logit_adjustment_ == 0.0
    np.testing.assert_allclose(old.predict_proba(texts[90:]),
                               _with_tau(clf, 0.0).predict_proba(texts[90:]), rtol=1e-6)
    cfg["logit_adjustment"] = -1
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="logit_adjustment"):
        PlantClassifier.load(tmp_path / "m")


def test_fused_scores_adjust_the_network_only(small, corpus):
    """With a shortlist: α·σ(s) + (1 − α)·σ(z − τ log p) at each candidate; α = 1 ignores τ."""
    texts, Y = corpus
    clf = small(shortlist="linear", n_candidates=5, decision__logit_adjustment=0.5, fusion=0.4,
                max_epochs=2).fit(texts[:90], Y[:90], validation_data=(texts[90:], Y[90:]))
    assert clf.logit_adjustment_ == 0.5 and clf.fusion_weight_ == 0.4
    X = texts[90:]
    log_p = _hand_log_prior(Y[:90])
    at = clf.fusion_scores(X, (0.0, 0.4, 1.0))
    raw = clf.fusion_scores(X, (0.0, 1.0), logit_adjustment=0.0)
    np.testing.assert_array_equal(at[1.0], raw[1.0])
    docs = clf._docs(X)
    from xplant.neural.classifier._shortlist import shortlist_texts
    cand, _, _ = clf.parts_["shortlist_fusion"].rank(shortlist_texts(X, docs, clf.relevance_),
                                                     clf.n_labels_)
    z = clf._network().candidate_logits(docs, cand, tau=0.0)
    np.testing.assert_allclose(np.take_along_axis(at[0.0], cand, 1),
                               _sigmoid(z - 0.5 * log_p[cand]), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.take_along_axis(raw[0.0], cand, 1), _sigmoid(z),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(clf.predict_proba(X), at[0.4], rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="logit_adjustment"):
        clf.fusion_scores(X, (0.0,), logit_adjustment="dev")
