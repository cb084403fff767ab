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
