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


def test_tied_candidates_rank_the_lower_label_first_as_the_dense_ranking_does():
    """Equal candidate scores: the lower label first (the metrics' order), not the
    shortlist's order, so ``predict_top_k`` of a shortlisted model equals the top k of
    its dense scores."""
    cand = np.array([[5, 1, 3, 0], [2, 4, 0, 1]])
    cs = np.array([[0.5, 0.5, 0.9, 0.5], [0.3, 0.3, 0.3, 0.3]])
    freq = np.array([4, 3, 2, 1, 0, 5])
    idx, sc = top_k_from_candidates(cand, cs, None, freq, 3)
    assert idx.tolist() == [[3, 0, 1], [0, 1, 2]]          # by hand
    np.testing.assert_array_equal(sc, [[0.9, 0.5, 0.5], [0.3, 0.3, 0.3]])
    out = dense_scores(cand, cs, tail_order(cand, None, freq))
    full, _ = top_k_from_candidates(cand, cs, None, freq, 6)
    np.testing.assert_array_equal(full, np.argsort(-out, 1, kind="stable"))


def _candidates_case(seed):
    """Random gold labels, candidates (C from 1 to L), tail order and candidate scores: tied,
    floored (0 and 1e-30), all above 0.5, or uniform."""
    rng = np.random.default_rng(seed)
    n, L = 40, 30
    C = [1, 4, 7, 30, 29][seed % 5]
    Y = (rng.random((n, L)) < 0.15).astype(int)
    Y[0] = 0                                            # a row without gold: skipped by MAP
    cand = np.stack([rng.permutation(L)[:C] for _ in range(n)])
    extra = np.stack([rng.permutation(L)[:5] for _ in range(n)])
    rank = tail_order(cand, extra, rng.integers(0, 9, L))
    kind = seed % 3
    s = (rng.choice([0.0, 1e-30, 0.2, 0.5, 0.5, 0.9, 1.0], size=(n, C)) if kind == 0 else
         rng.random((n, C)) if kind == 1 else 0.5 + 0.5 * rng.random((n, C)))
    floored = fuse([Source(s, 1.0, None, cand)], min_score=SCORE_FLOOR)
    return Y, cand, s, floored, rank


@pytest.mark.parametrize("seed", range(15))
def test_map_from_candidates_equals_the_dense_map(seed):
    """Oracle: MAP from the (n, C) candidates and the tail order = MAP of the dense scores to
    the last digit, over random labels, candidates, extra rankings, tied and floored scores."""
    from xplant.fusion import map_from_candidates
    from xplant.metrics import mean_average_precision
    Y, cand, s, floored, rank = _candidates_case(seed)
    dense = mean_average_precision(Y, dense_scores(cand, s, rank))
    assert map_from_candidates(Y, cand, floored, rank) == dense
    assert map_from_candidates(sp.csr_matrix(Y), cand, floored, rank) == dense


@pytest.mark.parametrize("seed", range(15))
def test_ranking_from_candidates_is_the_dense_top_k(seed):
    """Oracle: the first k labels of the dense scores, ties to the lower label (the metrics'
    order), for k within the candidates, past them, and past L; the metrics at k agree."""
    from xplant.fusion import ranking_from_candidates
    from xplant.metrics import ndcg_at_k, precision_at_k, recall_at_k, top_k_indices
    Y, cand, s, floored, rank = _candidates_case(seed)
    dense = dense_scores(cand, s, rank)
    C, L = cand.shape[1], rank.shape[1]
    for k in sorted({1, 3, C, C + 1, C + 5, L, L + 4}):
        top = ranking_from_candidates(cand, floored, rank, k)
        np.testing.assert_array_equal(top, top_k_indices(dense, k))
        for metric in (precision_at_k, ndcg_at_k, recall_at_k):
            assert metric(Y, y_top_k=top, k=k) == metric(Y, dense, k=k)
    with pytest.raises(ValueError, match="positive integer"):
        ranking_from_candidates(cand, floored, rank, 0)
    from xplant.fusion import map_from_candidates
    floored[1, 0] = np.nan                            # as the dense metrics refuse NaN
    for read in (lambda: ranking_from_candidates(cand, floored, rank, 3),
                 lambda: map_from_candidates(Y, cand, floored, rank)):
        with pytest.raises(ValueError, match="NaN"):
            read()


def test_ranking_from_candidates_breaks_ties_by_label():
    """Equal candidate scores go to the lower label, as in the dense metrics (not in the
    shortlist's order); the tail follows in its order."""
    from xplant.fusion import ranking_from_candidates
    cand = np.array([[5, 1, 3]])
    s = np.array([[0.5, 0.5, 0.7]])
    rank = tail_order(cand, np.array([[4]]), np.array([0, 0, 9, 0, 0, 0]))
    assert ranking_from_candidates(cand, s, rank, 6).tolist() == [[3, 1, 5, 4, 2, 0]]


@pytest.mark.parametrize("seed", range(15))
@pytest.mark.parametrize("threshold", [0.5, 0.0, 0.95])
def test_counts_above_threshold_equal_the_dense_counts(seed, threshold):
    """Oracle: labels of the dense scores above the threshold, and gold among them, from the
    candidates; the tail counts where every candidate passes (kind 2: all above 0.5)."""
    from xplant.fusion import counts_above
    from xplant.fusion._tail import tail_above
    Y, cand, s, floored, rank = _candidates_case(seed)
    dense = dense_scores(cand, s, rank)
    above = dense > threshold
    assert counts_above(Y, cand, floored, rank, threshold) == (int(above.sum()),
                                                               int(above[Y > 0].sum()))
    tail = above.copy()
    tail[np.arange(len(cand))[:, None], cand] = False
    np.testing.assert_array_equal(tail_above(floored, rank.shape[1], threshold), tail.sum(1))
    if seed % 3 == 2 and threshold == 0.5 and cand.shape[1] < rank.shape[1]:
        assert tail.any()                              # the case the tail count is for


def test_tail_above_by_hand():
    """0.8 · t with t = 1 − (r + 1)/7: 0.686, 0.571 pass 0.5, 0.457 does not."""
    from xplant.fusion._tail import tail_above
    out = tail_above(np.array([[0.9, 0.8], [0.9, 0.3], [1.0, 1.0]]), 6, 0.5)
    assert out.tolist() == [2, 0, 3]                   # 1 · 4/7 > 0.5 > 3/7
    assert tail_above(np.array([[0.9, 0.8]]), 2, 0.5).tolist() == [0]   # no tail


@pytest.mark.parametrize("seed", range(6))
def test_every_label_scores_equal_dense_scores(seed):
    """With every label a candidate, the dense scores from label-ordered scores in place,
    floored at each label's candidate position: dense_scores' bits."""
    from xplant.fusion import every_label_scores
    rng = np.random.default_rng(seed)
    n, L = 20, 17
    cand = np.stack([rng.permutation(L) for _ in range(n)])
    s = rng.choice([0.0, 1e-30, 1e-25, 0.3, 0.3, 0.9], size=(n, L))
    p = np.empty((n, L))
    p[np.arange(n)[:, None], cand] = s                   # the scores in label order
    out = every_label_scores(p, cand)
    want = dense_scores(cand, s, tail_order(cand, None, np.zeros(L)))
    assert out is p and np.array_equal(out.view(np.int64), want.view(np.int64))
