"""Tests of the optional wrappers (napkinXC, Omikuji, LibMultiLabel)."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.linear import (
    EMPTY_LABEL_SCORE,
    LibMultiLabelLinear,
    NapkinXCPLT,
    OmikujiTrees,
    OneVsRestLinear,
    predict_top_k,
)


def _separable(n=200, n_labels=6, seed=0):
    """Label j owns feature j; each document has 1-2 labels and a little noise."""
    rng = np.random.default_rng(seed)
    Y = np.zeros((n, n_labels), dtype=np.int64)
    Y[np.arange(n), rng.integers(0, n_labels, n)] = 1
    second = rng.random(n) < 0.3
    Y[np.flatnonzero(second), rng.integers(0, n_labels, second.sum())] = 1
    X = np.hstack([Y * 1.0, 0.1 * rng.random((n, 4))])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return sp.csr_matrix(X), sp.csr_matrix(Y)


def _check_ranker(est, X, Y, Y_train):
    idx, scores = est.predict_top_k(X, 3)
    assert idx.shape == (X.shape[0], 3) and idx.dtype == np.int64
    assert np.all(np.diff(scores, axis=1) <= 0)
    # every row's best label is one of its true labels
    hits = np.asarray(Y[np.arange(X.shape[0]), idx[:, 0]]).ravel()
    assert hits.mean() == 1.0
    np.testing.assert_array_equal(predict_top_k(est, X, 3)[0], idx)
    assert est.n_labels_ == Y.shape[1]
    np.testing.assert_array_equal(est.label_frequency_, np.asarray(Y_train.sum(axis=0)).ravel())


def test_napkinxc_plt():
    pytest.importorskip("napkinxc")
    X, Y = _separable()
    est = NapkinXCPLT(n_jobs=1).fit(X[:150], Y[:150])
    _check_ranker(est, X[150:], Y[150:], Y[:150])
    proba = est.predict_proba(X[150:])
    assert proba.shape == (50, 6) and proba.min() >= 0 and proba.max() <= 1
    np.testing.assert_array_equal(est.predict(X[150:]).toarray(), (proba >= 0.5).astype(int))


def test_tree_top_k_fills_unreached_labels_by_training_frequency():
    """Labels the tree search does not reach follow the frequency prior, not index order."""
    from sklearn.utils.validation import validate_data
    from xplant.linear._wrappers import _TreeWrapper

    class Stub(_TreeWrapper):
        def fit(self, X, Y):
            validate_data(self, X, accept_sparse="csr")
            self.n_labels_ = Y.shape[1]
            self.label_frequency_ = np.asarray(Y.sum(0)).ravel()
            return self

        def _native_top_k(self, X, k):        # reaches labels 4 and 2 (tied), then 5
            return [[(4, 0.5), (2, 0.5), (5, 0.25)] for _ in range(X.shape[0])]

    freq = [1, 6, 3, 0, 3, 2, 6]
    Y = np.zeros((6, 7), dtype=np.int64)
    for j, f in enumerate(freq):
        Y[:f, j] = 1
    X = np.ones((2, 3))
    est = Stub().fit(np.ones((6, 3)), Y)
    idx, scores = est.predict_top_k(X, 7)
    proba = est.predict_proba(X)
    # brute force: by score, then training frequency, then index
    expected = sorted(range(7), key=lambda j: (-proba[0, j], -freq[j], j))
    assert expected == [2, 4, 5, 1, 6, 0, 3]
    assert idx.tolist() == [expected] * 2
    np.testing.assert_array_equal(scores, np.take_along_axis(proba, idx, 1))
    assert est.predict_top_k(X, 4)[0].tolist() == [expected[:4]] * 2


@pytest.mark.parametrize("preset", ["parabel", "bonsai"])
def test_omikuji_trees(preset):
    pytest.importorskip("omikuji")
    X, Y = _separable(seed=1)
    est = OmikujiTrees(preset, n_jobs=1).fit(X[:150], Y[:150])
    _check_ranker(est, X[150:], Y[150:], Y[:150])


def test_libmultilabel_linear_matches_xplant_ovr():
    pytest.importorskip("libmultilabel")
    X, Y = _separable(seed=2)
    Y = sp.hstack([Y, sp.csr_matrix((Y.shape[0], 1), dtype=np.int64)]).tocsr()  # an empty label
    lml = LibMultiLabelLinear(options="-s 1 -e 0.00001").fit(X, Y)
    ours = OneVsRestLinear(fit_intercept=False, tol=1e-5, max_iter=100_000, prune_threshold=0,
                           random_state=0).fit(X, Y)
    scores = lml.decision_function(X)
    np.testing.assert_array_equal(scores[:, -1], EMPTY_LABEL_SCORE)
    np.testing.assert_allclose(scores, ours.decision_function(X), atol=1e-3)
    _check_ranker(lml, X, Y, Y)


@pytest.mark.parametrize(
    "module, est, extra",
    [("omikuji", OmikujiTrees(), "trees"), ("napkinxc.models", NapkinXCPLT(), "trees"),
     ("libmultilabel.linear", LibMultiLabelLinear(), "libmultilabel")],
)
def test_missing_extra_names_the_install_command(monkeypatch, module, est, extra):
    monkeypatch.setitem(sys.modules, module, None)  # makes ``import module`` fail
    X, Y = _separable(n=20)
    with pytest.raises(ImportError, match=rf"pip install 'xplant\[{extra}\]'"):
        est.fit(X, Y)


@pytest.mark.parametrize("module, cls, atol", [("napkinxc", NapkinXCPLT, 0.0),
                                               ("omikuji", OmikujiTrees, 1e-6)])
def test_tree_wrappers_pickle_through_their_own_format(module, cls, atol):
    import pickle
    pytest.importorskip(module)
    X, Y = _separable()
    est = cls(n_jobs=1).fit(X[:150], Y[:150])
    back = pickle.loads(pickle.dumps(est))
    # napkinXC's files are its model; Omikuji's format rounds weights in the last float32 place
    np.testing.assert_allclose(back.predict_proba(X[150:]), est.predict_proba(X[150:]),
                               rtol=0, atol=atol)
    if atol == 0:
        np.testing.assert_array_equal(back.predict_top_k(X[150:], 3)[0],
                                      est.predict_top_k(X[150:], 3)[0])
    assert "_native_files" not in vars(back) and back.model_ is not None   # read back whole
    assert back.n_features_in_ == est.n_features_in_ == X.shape[1]
    assert back.parts_["model"] is not est.parts_["model"]     # the part, not the original
