"""Scorers in cross_val_score / GridSearchCV, predict_top_k and fitted frequencies."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from xplant.metrics import (
    f1_score,
    get_scorer,
    get_scorer_names,
    inverse_propensity,
    make_xmtc_scorer,
    mean_average_precision,
    ndcg_at_k,
    precision_at_k,
    psp_at_k,
    roc_auc,
)


def _data(n=60, L=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    W = rng.normal(size=(5, L))
    Y = (X @ W + rng.normal(scale=0.5, size=(n, L)) > 0.5).astype(np.int64)
    Y[:, 0] |= Y.sum(1) == 0
    Y[0, :] = 1
    Y[1, :] = 0
    Y[1, 0] = 1
    return X, Y


class TopKOnly(ClassifierMixin, BaseEstimator):
    """An XMTC-style estimator: predict_top_k returns unordered (indices, scores)."""

    def fit(self, X, Y):
        Y = sp.csr_matrix(Y)
        self.inner_ = OneVsRestClassifier(LogisticRegression()).fit(X, Y.toarray())
        self.label_frequency_ = np.diff(Y.tocsc().indptr).astype(np.int64)
        self.n_train_documents_ = Y.shape[0]
        self.classes_ = np.arange(Y.shape[1])
        self.n_top_k_calls_ = 0
        return self

    def predict_top_k(self, X, k):
        self.n_top_k_calls_ += 1
        s = self.inner_.predict_proba(X)
        idx = np.argsort(-s, axis=1, kind="stable")[:, :k]
        rng = np.random.default_rng(0)
        perm = rng.permutation(k)  # deliberately unordered
        idx = idx[:, perm]
        return idx, np.take_along_axis(s, idx, 1)

    def decision_function(self, X):
        raise AssertionError("a ranking scorer must not build dense scores when predict_top_k exists")

    def predict(self, X):
        return self.inner_.predict(X)


def test_cross_val_score_one_vs_rest_precision_at_5():
    X, Y = _data()
    scores = cross_val_score(
        OneVsRestClassifier(LogisticRegression()), X, Y, scoring=get_scorer("precision_at_5"), cv=3
    )
    assert scores.shape == (3,) and np.all((scores > 0) & (scores <= 1))
    # the same numbers by hand
    cv = KFold(3)
    expected = []
    for tr, te in cv.split(X):
        clf = OneVsRestClassifier(LogisticRegression()).fit(X[tr], Y[tr])
        expected.append(precision_at_k(Y[te], clf.predict_proba(X[te]), k=5))
    np.testing.assert_allclose(scores, expected)


def test_sparse_y_and_every_named_scorer_runs():
    X, Y = _data()
    Ysp = sp.csr_matrix(Y)
    clf = OneVsRestClassifier(LogisticRegression()).fit(X, Ysp)
    S = clf.predict_proba(X)
    P = clf.predict(X)
    assert get_scorer("ndcg_at_3")(clf, X, Ysp) == pytest.approx(ndcg_at_k(Y, S, k=3))
    assert get_scorer("map")(clf, X, Ysp) == pytest.approx(mean_average_precision(Y, S))
    assert get_scorer("micro_f1")(clf, X, Ysp) == pytest.approx(f1_score(Y, P))
    assert get_scorer("macro_f1")(clf, X, Y) == pytest.approx(f1_score(Y, P, average="per_label"))
    assert get_scorer("macro_auc")(clf, X, Y) == pytest.approx(roc_auc(Y, S).value)
    freq = Y.sum(0)
    psp = make_xmtc_scorer("psp", k=3, label_frequency=freq, n_train_documents=60)
    w = inverse_propensity(label_frequency=freq, n_train_documents=60)
    assert psp(clf, X, Y) == pytest.approx(psp_at_k(Y, S, k=3, inv_propensity=w))
    with pytest.raises(ValueError, match="label_frequency_"):
        get_scorer("psp_at_5")(clf, X, Y)
    assert callable(get_scorer("accuracy"))  # scikit-learn's names still work
    assert {"precision_at_5", "ndcg_at_5", "psp_at_5", "map", "micro_f1", "macro_f1"} <= set(
        get_scorer_names()
    )
    with pytest.raises(ValueError, match="Unknown"):
        make_xmtc_scorer("precison")


def test_grid_search_uses_scorer():
    X, Y = _data()
    gs = GridSearchCV(
        OneVsRestClassifier(LogisticRegression()),
        {"estimator__C": [0.01, 1.0]},
        scoring={"p5": get_scorer("precision_at_5"), "n3": get_scorer("ndcg_at_3")},
        refit="p5",
        cv=2,
    ).fit(X, Y)
    assert set(gs.cv_results_) >= {"mean_test_p5", "mean_test_n3"}
    assert 0 < gs.best_score_ <= 1


def test_predict_top_k_is_used_and_frequencies_are_read():
    X, Y = _data()
    est = TopKOnly().fit(X, Y)
    S = est.inner_.predict_proba(X)
    assert get_scorer("precision_at_3")(est, X, Y) == pytest.approx(precision_at_k(Y, S, k=3))
    assert est.n_top_k_calls_ == 1
    w = inverse_propensity(Y)
    assert get_scorer("psp_at_3")(est, X, Y) == pytest.approx(psp_at_k(Y, S, k=3, inv_propensity=w))
    # through a Pipeline: earlier steps transform, the final step's predict_top_k ranks
    pipe = make_pipeline(StandardScaler(), TopKOnly()).fit(X, Y)
    Sp = pipe[-1].inner_.predict_proba(pipe[0].transform(X))
    assert get_scorer("ndcg_at_5")(pipe, X, Y) == pytest.approx(ndcg_at_k(Y, Sp, k=5))
    assert get_scorer("psndcg_at_5")(pipe, X, Y) > 0
    scores = cross_val_score(TopKOnly(), X, Y, scoring=get_scorer("psp_at_5"), cv=2)
    assert np.all((scores > 0) & (scores <= 1))
    tail = get_scorer("tail_f1")(est, X, Y)
    assert 0 <= tail <= 1


def test_list_predict_proba_estimators():
    # RandomForest returns predict_proba as a list of (n, 2) arrays for multi-label y
    from sklearn.ensemble import RandomForestClassifier

    X, Y = _data()
    rf = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, Y)
    S = np.stack([p[:, 1] for p in rf.predict_proba(X)], axis=1)
    assert get_scorer("precision_at_3")(rf, X, Y) == pytest.approx(precision_at_k(Y, S, k=3))


def test_one_reading_of_metric_names_for_scorers_and_early_stopping(monkeypatch):
    """get_scorer, make_xmtc_scorer and the neural estimators' scoring read a name through
    split_metric_name: an alias works in all of them, and a name it refuses is refused by all."""
    from xplant import metrics
    from xplant.metrics import _scorer, split_metric_name
    from xplant.neural.training._callbacks import metric_by_name
    assert split_metric_name("precision_at_10") == ("precision", 10)
    assert split_metric_name("mean_average_precision") == ("map", None)
    with pytest.raises(ValueError, match="Unknown xplant metric 'precison_at'"):
        split_metric_name("precison_at")
    X, Y = _data()
    clf = OneVsRestClassifier(LogisticRegression()).fit(X, Y)
    S = clf.predict_proba(X)
    assert get_scorer("mean_average_precision")(clf, X, Y) == pytest.approx(
        mean_average_precision(Y, S))
    assert metric_by_name("mean_average_precision")(Y, S) == pytest.approx(
        mean_average_precision(Y, S))
    assert metric_by_name("ndcg_at_3")(Y, S) == pytest.approx(ndcg_at_k(Y, S, k=3))
    with pytest.raises(ValueError, match="already fixes k"):
        make_xmtc_scorer("ndcg_at_3", k=5)
    with pytest.raises(ValueError, match="not supported for early stopping"):
        metric_by_name("micro_f1")                   # a metric, but not a ranking one
    # patch the one reading: every reader follows it
    monkeypatch.setattr(metrics, "split_metric_name", lambda name: ("precision", 1))
    monkeypatch.setattr(_scorer, "split_metric_name", lambda name: ("precision", 1))
    assert metric_by_name("anything")(Y, S) == pytest.approx(precision_at_k(Y, S, k=1))
    assert get_scorer("anything")(clf, X, Y) == pytest.approx(precision_at_k(Y, S, k=1))
