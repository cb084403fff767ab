"""Training candidates and the tail below each document's candidates (no torch needed)."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.fusion import (SCORE_FLOOR, Source, dense_scores, fuse, sigmoid, tail_order, top_k_from_candidates,
                           training_candidates)


def test_gold_labels_are_always_training_candidates():
    ranking = np.array([[5, 4, 3, 2, 1, 0], [0, 1, 2, 3, 4, 5]])
    gold = [np.array([0, 1, 2]), np.array([5])]
    out = training_candidates(ranking, gold, 2)
    # more gold labels than C: all gold kept, plus max(1, C // 10) = 1 negative
    assert out[0].tolist() == [0, 1, 2, 5]
    assert out[1].tolist() == [5, 0]


def test_tail_scores_below_candidates_in_shortlist_then_frequency_order():
    cand = np.array([[3, 1], [0, 2]])
    cs = np.array([[0.4, 0.2], [0.9, 0.7]])
    extra = np.array([[4], [1]])
    freq = np.array([1, 0, 9, 3, 2, 8])
    out = dense_scores(cand, cs, tail_order(cand, extra, freq))
    assert np.argsort(-out[0], kind="stable").tolist() == [3, 1, 4, 2, 5, 0]
    assert np.argsort(-out[1], kind="stable").tolist() == [0, 2, 1, 5, 3, 4]
    assert (out[0, [0, 2, 4, 5]] < 0.2).all() and (out[0, [0, 2, 4, 5]] > 0).all()
    idx, sc = top_k_from_candidates(cand, cs, extra, freq, 5)
    np.testing.assert_array_equal(idx, np.argsort(-out, 1, kind="stable")[:, :5])
    np.testing.assert_allclose(sc, np.take_along_axis(out, idx, 1))


def test_zero_candidate_scores_stay_probabilities_above_the_tail():
    """σ(−1000) = 0 at a candidate: every score stays in [0, 1], the tail strictly below."""
    cand = np.array([[3, 1, 0], [0, 2, 4]])
    cs = sigmoid(np.array([[2.0, -1000.0, -1000.0], [-1000.0, 0.5, 1.0]]))
    assert (cs == 0).sum() == 3                       # the underflow the floor is for
    extra = np.array([[4], [1]])
    freq = np.array([1, 0, 9, 3, 2, 8])
    out = dense_scores(cand, cs, tail_order(cand, extra, freq))
    assert out.min() > 0 and out.max() <= 1
    tail = np.ones(out.shape, dtype=bool)
    tail[np.arange(2)[:, None], cand] = False
    for i in range(2):
        assert out[i, tail[i]].max() < out[i, cand[i]].min()
    # floored candidates keep the shortlist's order: positions 1 and 2 of C = 3
    np.testing.assert_allclose(out[0, [1, 0]], [SCORE_FLOOR / 2, SCORE_FLOOR / 4], rtol=1e-12)
    # then the tail, in the shortlist's order, then frequency: 4, then 2, 5
    assert np.argsort(-out[0], kind="stable").tolist() == [3, 1, 0, 4, 2, 5]
    idx, sc = top_k_from_candidates(cand, cs, extra, freq, 6)
    np.testing.assert_array_equal(idx, np.argsort(-out, 1, kind="stable"))
    np.testing.assert_array_equal(sc, np.take_along_axis(out, idx, 1))
    assert np.all(sc.astype(np.float32) > 0)          # predict_proba's dtype keeps them apart from 0


@pytest.mark.parametrize("seed", range(6))
def test_map_from_candidates_equals_the_dense_map(seed):
    """Oracle: MAP from the (n, C) candidates and the tail order = MAP of the dense scores,
    over random labels, candidates, extra rankings, tied and floored scores."""
    from xplant.fusion import map_from_candidates
    from xplant.metrics import mean_average_precision
    rng = np.random.default_rng(seed)
    n, L, C = 40, 30, [1, 4, 7, 30][seed % 4]
    Y = (rng.random((n, L)) < 0.15).astype(int)
    Y[0] = 0                                            # a row without gold: skipped by both
    cand = np.stack([rng.permutation(L)[:C] for _ in range(n)])
    extra = np.stack([rng.permutation(L)[:5] for _ in range(n)])
    rank = tail_order(cand, extra, rng.integers(0, 9, L))
    s = rng.choice([0.0, 1e-30, 0.2, 0.5, 0.5, 0.9], size=(n, C)) if seed % 2 else rng.random((n, C))
    floored = fuse([Source(s, 1.0, None, cand)], min_score=SCORE_FLOOR)
    dense = mean_average_precision(Y, dense_scores(cand, s, rank))
    assert map_from_candidates(Y, cand, floored, rank) == pytest.approx(dense, rel=1e-12, abs=1e-15)
    assert map_from_candidates(sp.csr_matrix(Y), cand, floored, rank) == pytest.approx(dense,
                                                                                      rel=1e-12)
