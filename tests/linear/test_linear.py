"""Tests of the classical baselines in xplant.linear."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import parallel_config
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC

from xplant.linear import (
    EMPTY_LABEL_SCORE,
    FrequencyPrior,
    OneVsRestLinear,
    check_label_matrix,
    make_tfidf_logistic,
    make_tfidf_ovr,
    predict_top_k,
    top_k_dense,
)


def _problem(n=120, n_features=30, n_labels=6, seed=0):
    """Sparse l2-normalised features; label j fires on features 3j..3j+2."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, n_features)) * (rng.random((n, n_features)) < 0.3)
    Y = np.zeros((n, n_labels), dtype=np.int64)
    for j in range(n_labels):
        Y[:, j] = X[:, 3 * j : 3 * j + 3].sum(axis=1) > 0.5
    X[np.linalg.norm(X, axis=1) == 0, 0] = 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return sp.csr_matrix(X), sp.csr_matrix(Y)


def _stable_top_k(scores, k):
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


# --------------------------------------------------------------------------- label matrix


def test_check_label_matrix_accepts_dense_bool_and_sparse():
    Y = np.array([[1, 0, 1], [0, 1, 0]])
    for form in (Y, Y.astype(bool), sp.csc_matrix(Y), sp.coo_matrix(Y.astype(np.int8))):
        out = check_label_matrix(form)
        assert sp.isspmatrix_csr(out) and out.dtype == np.int64
        np.testing.assert_array_equal(out.toarray(), Y)


@pytest.mark.parametrize(
    "Y, n, match",
    [
        (np.array([[2, 0], [0, 1]]), None, "only 0 and 1"),
        (np.array([1, 0, 1]), None, "2-D"),
        (np.zeros((3, 2)), None, "no positive"),
        (np.ones((3, 2)), 4, r"same number of documents \(rows\): X has 4, Y has 3"),
        (np.ones((3, 0)), None, "no label column"),
    ],
)
def test_check_label_matrix_rejects_bad_input(Y, n, match):
    with pytest.raises(ValueError, match=match):
        check_label_matrix(Y, n)


# --------------------------------------------------------------------------- top-k


def test_top_k_dense_tie_rule_by_hand():
    scores = np.array([[0.1, 0.3, 0.3, 0.3, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    idx, val = top_k_dense(scores, 2)
    np.testing.assert_array_equal(idx, [[1, 2], [0, 1]])
    np.testing.assert_array_equal(val, [[0.3, 0.3], [1.0, 1.0]])


@pytest.mark.parametrize("k", [1, 3, 7, 8])
def test_top_k_dense_equals_stable_argsort_with_many_ties(k):
    rng = np.random.default_rng(k)
    scores = rng.integers(0, 4, size=(50, 8)).astype(float)
    idx, val = top_k_dense(scores, k)
    expected = _stable_top_k(scores, k)
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_array_equal(val, np.take_along_axis(scores, expected, axis=1))


def test_top_k_dense_checks_k():
    idx, val = top_k_dense(np.zeros((2, 3)), 4)      # k past the labels: every label, no k columns
    assert idx.tolist() == [[0, 1, 2], [0, 1, 2]] and val.shape == (2, 3)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        top_k_dense(np.zeros((2, 3)), 1.5)


# --------------------------------------------------------------------------- frequency prior


def test_frequency_prior_ranking_by_hand():
    # label frequencies: [1, 3, 0, 3, 2] -> ranking 1, 3 (tie: lower index), 4, 0, 2
    Y = np.array([[0, 1, 0, 1, 1], [1, 1, 0, 1, 0], [0, 1, 0, 1, 1], [0, 0, 0, 0, 0]])
    prior = FrequencyPrior().fit(["a", "b", "c", "d"], Y, label_names=list("vwxyz"))
    idx, scores = prior.predict_top_k(["new", "doc"], 5)
    np.testing.assert_array_equal(idx, [[1, 3, 4, 0, 2]] * 2)
    np.testing.assert_allclose(scores[0], [0.75, 0.75, 0.5, 0.25, 0.0])
    np.testing.assert_array_equal(prior.label_frequency_, [1, 3, 0, 3, 2])
    assert prior.label_frequency_.dtype == np.int64
    assert prior.n_train_documents_ == 4 and prior.n_labels_ == 5
    assert list(prior.classes_) == list("vwxyz")
    # 9 positives over 4 documents -> k_ = round(2.25) = 2
    assert prior.k_ == 2
    # a dense Y: predict answers with a dense array of Y's dtype (prediction_form)
    pred = prior.predict(["x"])
    assert isinstance(pred, np.ndarray) and pred.dtype == Y.dtype
    np.testing.assert_array_equal(pred, [[0, 1, 0, 1, 0]])
    np.testing.assert_array_equal(prior.predict(["x"], threshold=0.5), [[0, 1, 0, 1, 1]])


def test_frequency_prior_rejects_empty_Y_and_bad_names():
    with pytest.raises(ValueError, match="no positive"):
        FrequencyPrior().fit(["a", "b"], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="label_names has 2 names but Y has 3 columns"):
        FrequencyPrior().fit(["a", "b"], np.eye(2, 3), label_names=["p", "q"])


# --------------------------------------------------------------------------- one-vs-rest


def test_ovr_logistic_equals_sklearn_one_vs_rest():
    X, Y = _problem()
    ours = OneVsRestLinear("logistic", C=2.0, prune_threshold=0.0, tol=1e-4).fit(X[:90], Y[:90])
    ref = OneVsRestClassifier(LogisticRegression(solver="liblinear", C=2.0, tol=1e-4))
    ref.fit(X[:90], Y[:90].toarray())
    np.testing.assert_allclose(ours.decision_function(X[90:]), ref.decision_function(X[90:]),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X[90:]), ref.predict_proba(X[90:]), atol=1e-9)


@pytest.mark.parametrize("class_weight", [None, "balanced", {0: 0.5, 1: 3.0}])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dcd_squared_hinge_reaches_the_linearsvc_optimum(class_weight, fit_intercept):
    X, Y = _problem(seed=1)
    ours = OneVsRestLinear(C=0.7, class_weight=class_weight, fit_intercept=fit_intercept,
                           tol=1e-9, max_iter=100_000, prune_threshold=0.0, random_state=0)
    ours.fit(X, Y)
    ref = OneVsRestClassifier(LinearSVC(C=0.7, class_weight=class_weight, fit_intercept=fit_intercept,
                                        tol=1e-9, max_iter=100_000, random_state=0))
    ref.fit(X, Y.toarray())
    W_ref = np.vstack([e.coef_.ravel() for e in ref.estimators_]).T
    np.testing.assert_allclose(ours.weights_.toarray(), W_ref, atol=1e-6)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-6)


def test_sklearn_liblinear_solver_matches_dcd():
    X, Y = _problem(seed=2)
    a = OneVsRestLinear(tol=1e-8, max_iter=50_000, prune_threshold=0, solver="dcd", random_state=0)
    b = OneVsRestLinear(tol=1e-8, max_iter=50_000, prune_threshold=0, solver="liblinear",
                        random_state=0)
    np.testing.assert_allclose(a.fit(X, Y).decision_function(X), b.fit(X, Y).decision_function(X),
                               atol=1e-6)


def test_predict_top_k_equals_stable_argsort_of_decision_function():
    X, Y = _problem(n_labels=8)
    clf = OneVsRestLinear(random_state=0).fit(X, Y)
    scores = clf.decision_function(X)
    idx, val = clf.predict_top_k(X, 5)
    np.testing.assert_array_equal(idx, _stable_top_k(scores, 5))
    np.testing.assert_allclose(val, np.take_along_axis(scores, idx, axis=1))
    assert idx.dtype == np.int64 and idx.shape == (X.shape[0], 5)
    # the module-level helper on the estimator and on its fallback path agree
    np.testing.assert_array_equal(predict_top_k(clf, X, 5)[0], idx)
    ref = OneVsRestClassifier(LinearSVC(random_state=0)).fit(X, Y.toarray())
    np.testing.assert_array_equal(predict_top_k(ref, X, 3)[0],
                                  _stable_top_k(ref.decision_function(X), 3))


def test_dense_and_sparse_input_agree():
    X, Y = _problem(seed=3)
    a = OneVsRestLinear(random_state=0).fit(X, Y)
    b = OneVsRestLinear(random_state=0).fit(X.toarray(), Y.toarray().astype(bool))
    np.testing.assert_array_equal(a.weights_.toarray(), b.weights_.toarray())
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X.toarray()))


def test_permuting_label_columns_permutes_scores():
    X, Y = _problem(seed=4, n_labels=7)
    perm = np.array([3, 0, 6, 2, 5, 1, 4])
    for loss in ("squared_hinge", "logistic"):
        a = OneVsRestLinear(loss, tol=1e-6, max_iter=10_000, random_state=0).fit(X, Y)
        b = OneVsRestLinear(loss, tol=1e-6, max_iter=10_000, random_state=0).fit(X, Y[:, perm])
        np.testing.assert_allclose(b.decision_function(X), a.decision_function(X)[:, perm],
                                   atol=1e-5)
        np.testing.assert_array_equal(b.label_frequency_, a.label_frequency_[perm])


def test_empty_label_columns_get_a_low_constant_score():
    X, Y = _problem(seed=5, n_labels=5)
    Y = sp.hstack([Y[:, :2], sp.csr_matrix((X.shape[0], 1)), Y[:, 2:]]).tocsr()
    clf = OneVsRestLinear(random_state=0).fit(X, Y)
    scores = clf.decision_function(X)
    np.testing.assert_array_equal(scores[:, 2], EMPTY_LABEL_SCORE)
    assert np.isfinite(scores).all() and scores[:, [0, 1, 3, 4, 5]].min() > EMPTY_LABEL_SCORE
    assert clf.weights_[:, 2].nnz == 0 and clf.label_frequency_[2] == 0
    idx, _ = clf.predict_top_k(X, 6)
    np.testing.assert_array_equal(idx[:, -1], 2)
    assert clf.predict(X)[:, 2].nnz == 0


def test_pruning_drops_exactly_the_small_weights():
    X, Y = _problem(seed=6)
    full = OneVsRestLinear(prune_threshold=0.0, random_state=0).fit(X, Y)
    pruned = OneVsRestLinear(prune_threshold=0.05, random_state=0).fit(X, Y)
    W = full.weights_.toarray()
    np.testing.assert_array_equal(pruned.weights_.toarray(), np.where(np.abs(W) > 0.05, W, 0.0))
    np.testing.assert_array_equal(pruned.intercept_, full.intercept_)
    assert pruned.weights_.nnz < full.weights_.nnz


def test_n_jobs_and_backends_do_not_change_the_model():
    X, Y = _problem(seed=7, n_labels=9)
    one = OneVsRestLinear(n_jobs=1, random_state=3).fit(X, Y)
    two = OneVsRestLinear(n_jobs=2, random_state=3).fit(X, Y)
    with parallel_config(backend="loky"):
        loky = OneVsRestLinear(n_jobs=2, random_state=3).fit(X, Y)
    for other in (two, loky):
        np.testing.assert_array_equal(one.weights_.toarray(), other.weights_.toarray())
        np.testing.assert_array_equal(one.intercept_, other.intercept_)


def test_clone_get_params_and_fitted_attributes():
    est = OneVsRestLinear("logistic", 3.0, class_weight="balanced", n_jobs=2, random_state=1)
    params = clone(est).get_params()
    assert params["loss"] == "logistic" and params["C"] == 3.0 and params["n_jobs"] == 2
    X, Y = _problem()
    fitted = est.fit(X, Y)
    assert not hasattr(clone(fitted), "weights_")
    assert fitted.weights_.shape == (X.shape[1], Y.shape[1]) and sp.isspmatrix_csr(fitted.weights_)
    np.testing.assert_array_equal(fitted.classes_, np.arange(Y.shape[1]))
    np.testing.assert_array_equal(fitted.label_frequency_, np.asarray(Y.sum(axis=0)).ravel())
    assert fitted.n_train_documents_ == X.shape[0]
    assert not hasattr(OneVsRestLinear(), "predict_proba")
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict_proba(X), fitted.predict_proba(X))


def test_predict_rules():
    X, Y = _problem(seed=8)
    clf = OneVsRestLinear(random_state=0).fit(X, Y)
    scores = clf.decision_function(X)
    default = clf.predict(X)
    assert sp.isspmatrix_csr(default) and default.dtype == np.int64
    np.testing.assert_array_equal(default.toarray(), (scores >= 0).astype(int))
    np.testing.assert_array_equal(clf.predict(X, threshold=-0.5).toarray(), scores >= -0.5)
    top2 = clf.predict(X, k=2)
    np.testing.assert_array_equal(np.diff(top2.indptr), 2)
    with pytest.raises(ValueError, match="either k or threshold"):
        clf.predict(X, k=2, threshold=0.0)


def test_predict_answers_in_the_form_of_the_fitted_target():
    # one rule (xplant._labels.prediction_form): the same labels in the form of fit's Y
    docs = ["a", "b", "c", "d"]
    dense = np.array([[1, 0, 1], [0, 0, 1], [0, 1, 1], [1, 0, 0]])
    # frequencies 2, 1, 3 of 4 documents; k_ = round(6 / 4) = 2: labels 2 and 0
    want = [[1, 0, 1], [1, 0, 1]]
    out = FrequencyPrior().fit(docs, dense).predict(["q", "r"])
    assert type(out) is np.ndarray and out.dtype == np.int64 and out.tolist() == want
    out = FrequencyPrior().fit(docs, dense.astype(bool)).predict(["q", "r"])
    assert out.dtype == np.bool_ and out.astype(int).tolist() == want
    out = FrequencyPrior().fit(docs, sp.csr_matrix(dense)).predict(["q", "r"])
    assert sp.isspmatrix_csr(out) and out.dtype == np.int64 and out.toarray().tolist() == want
    lists = [{"x", "z"}, {"z"}, {"y", "z"}, {"x"}]
    out = FrequencyPrior().fit(docs, lists).predict(["q", "r"])
    assert sp.isspmatrix_csr(out) and out.toarray().tolist() == want
    # a 1-D y gives y's own values: 3 of 4 documents carry +1, so k_ = 1 predicts it
    y = np.array([1, -1, 1, 1])
    out = FrequencyPrior().fit(docs, y).predict(["q", "r"])
    assert out.shape == (2,) and out.dtype == y.dtype and out.tolist() == [1, 1]
    out = FrequencyPrior().fit(docs, y).predict(["q", "r"], threshold=0.9)
    assert out.tolist() == [-1, -1]


@pytest.mark.parametrize(
    "params, match",
    [
        ({"C": 0.0}, "C"),
        ({"loss": "hinge"}, "loss"),
        ({"prune_threshold": -1.0}, "prune_threshold"),
        ({"loss": "logistic", "solver": "dcd"}, "squared hinge loss only"),
        ({"class_weight": {2: 1.0}}, "keys must be 0"),
    ],
)
def test_parameters_are_validated_in_fit(params, match):
    X, Y = _problem()
    with pytest.raises(ValueError, match=match):
        OneVsRestLinear(**params).fit(X, Y)


def test_feature_count_is_checked_at_predict():
    X, Y = _problem()
    clf = OneVsRestLinear(random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        clf.decision_function(X[:, :5])


# --------------------------------------------------------------------------- pipelines

TEXTS = [
    "tax on imported cheese and milk", "dairy milk quota for farmers", "fishing quota in the north sea",
    "fish stocks and fishing vessels", "customs tax on cheese imports", "milk prices for dairy farms",
    "sea fisheries and vessel licences", "import duties and customs tariffs",
]
LABELS = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0], [0, 0, 1],
                   [1, 0, 0]])


def test_tfidf_pipelines_rank_raw_texts():
    for pipe in (make_tfidf_ovr(C=10.0, min_df=1, random_state=0), make_tfidf_logistic(C=10.0, min_df=1)):
        pipe.fit(TEXTS, LABELS)
        idx, scores = predict_top_k(pipe, ["fishing vessels at sea", "milk from dairy farms"], 1)
        np.testing.assert_array_equal(idx, [[2], [1]])
        Xt = pipe.named_steps["tfidf"].transform(TEXTS)
        np.testing.assert_array_equal(predict_top_k(pipe, TEXTS, 2)[0],
                                      pipe.named_steps["ovr"].predict_top_k(Xt, 2)[0])
    assert pipe.named_steps["tfidf"].sublinear_tf is True
    assert hasattr(pipe, "predict_proba")


def test_predict_top_k_helper_rejects_unrankable_estimators():
    class NoScores:
        def predict(self, X):
            return X

    with pytest.raises(TypeError, match="cannot be ranked"):
        predict_top_k(NoScores(), np.zeros((2, 2)), 1)


def test_predict_top_k_helper_reads_multi_output_predict_proba():
    """scikit-learn's multi-output predict_proba (a list of (n, 2) arrays) ranks by P(class 1)."""
    from sklearn.ensemble import RandomForestClassifier
    rng = np.random.default_rng(0)
    X = rng.random((30, 4))
    Y = (rng.random((30, 5)) < 0.4).astype(int)
    Y[:, 3] = 0                                      # a label with no positive: its column is [0]
    rf = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, Y)
    proba = rf.predict_proba(X)
    P = np.column_stack([p[:, 1] if p.shape[1] == 2 else np.zeros(len(X)) for p in proba])
    idx, scores = predict_top_k(rf, X, 5)
    np.testing.assert_array_equal(idx, np.argsort(-P, 1, kind="stable"))
    np.testing.assert_array_equal(scores, np.take_along_axis(P, idx, 1))
    assert (scores[idx == 3] == 0).all()


def test_frequency_prior_on_one_label_predicts_the_majority(tmp_path):
    from xplant.linear import load_linear, save_linear
    # one label column: k_ = round(share of positives), the majority answer
    docs = ["a", "b", "c", "d"]
    rare = FrequencyPrior().fit(docs, np.array([1, 0, 0, 0]))
    assert rare.k_ == 0 and rare.predict(["q"]).tolist() == [0]
    back = load_linear(save_linear(rare, tmp_path / "prior"))     # k_ and the 1-D form saved
    assert back.k_ == 0 and back.predict(["q", "r"]).tolist() == [0, 0]
    common = FrequencyPrior().fit(docs, np.array([1, 1, 1, 0]))
    assert common.k_ == 1 and common.predict(["q"]).tolist() == [1]
    # predict agrees with the larger of predict_proba's two columns (1 - p, p)
    np.testing.assert_allclose(rare.predict_proba(["q"]), [[0.75, 0.25]])
    # with several labels k_ stays at least 1
    assert FrequencyPrior().fit(docs, np.array([[1, 0], [0, 0], [0, 0], [0, 0]])).k_ == 1
