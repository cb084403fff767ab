"""Ranking metrics: small examples worked by hand, a brute-force oracle and edge cases."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import ndcg_score

from xplant.metrics import (
    mean_average_precision,
    ndcg_at_k,
    precision_at_k,
    psndcg_at_k,
    psp_at_k,
    r_precision_at_k,
    recall_at_k,
    sort_top_k,
    top_k_indices,
)

RANKING = [precision_at_k, recall_at_k, r_precision_at_k, ndcg_at_k]


def _ranking_to_scores(ranking, n_labels):
    """Scores that produce exactly this ranking (unranked labels get no score)."""
    s = np.full(n_labels, -np.inf)
    for r, lab in enumerate(ranking):
        s[lab] = len(ranking) - r
    return s


# ---- brute-force oracle -------------------------------------------------------


def _order(row):
    """Ranking of a dense score row by (-score, index), -inf excluded."""
    return [j for j in sorted(range(len(row)), key=lambda j: (-row[j], j)) if row[j] > -np.inf]


def _oracle(Y, S, k, metric, w=None):
    """Per-row values by plain python; None for skipped (empty) rows."""
    vals = []
    for y, s in zip(Y, S):
        true = set(np.flatnonzero(y))
        top = _order(s)[:k]
        hits = [1.0 if j in true else 0.0 for j in top]
        m = len(true)
        disc = [1 / math.log2(r + 2) for r in range(k)]
        if metric == "P":
            vals.append(sum(hits) / k)
        elif metric == "R":
            vals.append(sum(hits) / m if m else None)
        elif metric == "RP":
            vals.append(sum(hits) / min(k, m) if m else None)
        elif metric == "nDCG":
            vals.append(
                sum(h * d for h, d in zip(hits, disc)) / sum(disc[: min(k, m)]) if m else None
            )
        elif metric == "AP":
            full = _order(s)
            if not m:
                vals.append(None)
                continue
            got, tot = 0, 0.0
            for r, j in enumerate(full):
                if j in true:
                    got += 1
                    tot += got / (r + 1)
            vals.append(tot / m)
    return vals


def _mean(vals, skip=True):
    v = [x for x in vals if x is not None] if skip else [0.0 if x is None else x for x in vals]
    return float(np.mean(v))


# ---- small examples worked by hand ---------------------------------------------


def test_both_true_labels_ranked_first_p_at_5_is_0_4_and_the_rest_1():
    y = np.zeros((1, 10), dtype=np.int64)
    y[0, [3, 7]] = 1
    s = _ranking_to_scores([3, 7, 1, 2, 4], 10).reshape(1, -1)
    top = np.array([[3, 7, 1, 2, 4]])
    for kw in (dict(y_score=s), dict(y_top_k=top), dict(y_score=sp.csr_matrix(np.where(np.isinf(s), 0, s)))):
        assert precision_at_k(y, k=5, **kw) == pytest.approx(0.4)
        assert r_precision_at_k(y, k=5, **kw) == pytest.approx(1.0)
        assert recall_at_k(y, k=5, **kw) == pytest.approx(1.0)
        assert ndcg_at_k(y, k=5, **kw) == pytest.approx(1.0)


def test_single_label_ranked_first_ndcg_is_one():
    y = np.zeros((1, 6), dtype=np.int64)
    y[0, 0] = 1
    s = np.array([[0.9, 0.5, 0.4, 0.3, 0.2, 0.1]])
    assert ndcg_at_k(y, s, k=5) == pytest.approx(1.0)
    # the wrong normaliser (ideal over k positions) would give 1 / sum(1/log2(r+1))
    wrong = 1.0 / sum(1 / math.log2(r + 2) for r in range(5))
    assert wrong == pytest.approx(0.339, abs=1e-3)
    assert ndcg_at_k(y, s, k=5) != pytest.approx(wrong)


def test_shuffled_label_order_does_not_corrupt_p_at_1():
    rng = np.random.default_rng(0)
    scores = np.array([0.1, 0.3, 0.95, 0.2, 0.5])  # label 2 is best and true
    y = np.zeros((1, 5), dtype=np.int64)
    y[0, 2] = 1
    for _ in range(5):
        perm = rng.permutation(5)
        assert precision_at_k(y[:, perm], scores[perm].reshape(1, -1), k=1) == 1.0
    # top-k lists returned in the wrong order: re-sorted by score first
    idx = np.array([[4, 1, 2, 3, 0]])
    sc = scores[idx]
    top = sort_top_k(idx, sc)[0]
    assert top[0, 0] == 2
    for j in range(1, 6):
        assert precision_at_k(y, y_top_k=top, k=j) == pytest.approx(1.0 / j)


def test_fewer_than_k_predictions_still_divide_by_k():
    y = np.zeros((1, 8), dtype=np.int64)
    y[0, [1, 2]] = 1
    top = np.array([[1, 2, -1, -1, -1]])
    assert precision_at_k(y, y_top_k=top, k=5) == pytest.approx(2 / 5)
    s = sp.csr_matrix((np.array([0.9, 0.8]), np.array([1, 2]), np.array([0, 2])), shape=(1, 8))
    assert precision_at_k(y, s, k=5) == pytest.approx(2 / 5)
    assert top_k_indices(s, 5).tolist() == [[1, 2]]     # a CSR row ranks its stored entries


def test_psp_at_k_is_a_ratio_of_sums_not_a_mean_of_ratios():
    y = np.ones((1, 6), dtype=np.int64)
    w = np.array([4.0, 5, 6, 1, 2, 3])
    top = np.array([[3, 4, 5]])  # worth 1, 2, 3
    assert psp_at_k(y, y_top_k=top, k=3, inv_propensity=w) == pytest.approx(0.4)
    assert precision_at_k(y, y_top_k=top, k=3) == pytest.approx(1.0)
    assert psp_at_k(y, y_top_k=top, k=3, inv_propensity=w, normalize=False) == pytest.approx(2.0)
    # two documents: best 5 achieved, best 1 with 0 achieved -> 5/6, not mean of ratios 0.5
    y2 = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0]])
    w2 = np.array([5.0, 5, 5, 3, 1, 1])
    top2 = np.array([[0, 1, 2], [4, 5, -1]])
    assert psp_at_k(y2, y_top_k=top2, k=3, inv_propensity=w2 / 1.0) == pytest.approx(
        (5 + 0) / (5 + 1)
    )


def test_empty_rows_are_skipped_or_count_as_zero():
    y = np.array([[1, 0, 0], [0, 0, 0]])
    s = np.array([[0.9, 0.1, 0.0], [0.5, 0.4, 0.3]])
    # P@k counts the empty row as 0 by default
    assert precision_at_k(y, s, k=1) == pytest.approx(0.5)
    assert precision_at_k(y, s, k=1, empty_rows="skip") == pytest.approx(1.0)
    for f in (recall_at_k, r_precision_at_k, ndcg_at_k):
        assert f(y, s, k=1) == pytest.approx(1.0)
        assert f(y, s, k=1, empty_rows="zero") == pytest.approx(0.5)
    assert mean_average_precision(y, s) == pytest.approx(1.0)
    assert mean_average_precision(y, s, empty_rows="zero") == pytest.approx(0.5)
    with pytest.raises(ValueError, match="empty_rows"):
        ndcg_at_k(y, s, k=1, empty_rows="drop")
    with pytest.warns(UndefinedMetricWarning):
        assert ndcg_at_k(np.zeros((2, 3)), s, k=1) == 0.0


# ---- ties ---------------------------------------------------------------------


def test_ties_average_expected_value():
    y = np.array([[0, 0, 1, 1]])
    s = np.ones((1, 4))
    assert precision_at_k(y, s, k=2, ties="average") == pytest.approx(0.5)
    assert precision_at_k(y, s, k=2) == 0.0  # lower index first: labels 0, 1
    assert precision_at_k(y[:, ::-1], s, k=2) == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_ties_average_equals_mean_over_all_orders(seed):
    rng = np.random.default_rng(seed)
    L, k = 6, 3
    y = (rng.random((1, L)) < 0.5).astype(int)
    y[0, 0] = 1
    s = rng.integers(0, 3, size=(1, L)).astype(float)
    w = rng.uniform(1, 5, size=L)
    perms = list(itertools.permutations(range(L)))
    true = set(np.flatnonzero(y[0]))
    m = len(true)
    disc = [1 / math.log2(r + 2) for r in range(k)]
    totals = np.zeros(4)
    for p in perms:
        # a uniformly random order among ties == ties broken by a permuted index
        top = sorted(range(L), key=lambda j: (-s[0, j], p[j]))[:k]
        hits = [1.0 if j in true else 0.0 for j in top]
        totals += [
            sum(hits) / k,
            sum(h * d for h, d in zip(hits, disc)) / sum(disc[: min(k, m)]),
            sum(hits) / m,
            sum(h * w[j] for h, j in zip(hits, top)) / k,
        ]
    expected = totals / len(perms)
    got = [
        precision_at_k(y, s, k=k, ties="average"),
        ndcg_at_k(y, s, k=k, ties="average"),
        recall_at_k(y, s, k=k, ties="average"),
        psp_at_k(y, s, k=k, inv_propensity=w, normalize=False, ties="average"),
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    sparse_got = precision_at_k(y, sp.csr_matrix(s + 1.0), k=k, ties="average")
    assert sparse_got == pytest.approx(expected[0])


def test_ties_average_needs_scores():
    with pytest.raises(ValueError, match="ties='average'"):
        precision_at_k(np.eye(3), y_top_k=np.array([[0], [1], [2]]), k=1, ties="average")


@pytest.mark.parametrize("seed", range(3))
def test_ndcg_average_equals_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = (rng.random((30, 12)) < 0.25).astype(int)
    s = rng.integers(0, 4, size=(30, 12)).astype(float)  # many ties
    for k in (1, 3, 5):
        ours = ndcg_at_k(y, s, k=k, ties="average", empty_rows="zero")
        assert ours == pytest.approx(ndcg_score(y, s, k=k), rel=1e-12)


# ---- brute force over random inputs --------------------------------------------


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("k", [1, 3, 7])
def test_matches_brute_force(seed, k):
    rng = np.random.default_rng(seed)
    n, L = 25, 9
    y = (rng.random((n, L)) < 0.3).astype(np.int64)
    s = rng.integers(0, 5, size=(n, L)).astype(float)
    assert precision_at_k(y, s, k=k) == pytest.approx(_mean(_oracle(y, s, k, "P")))
    assert recall_at_k(y, s, k=k) == pytest.approx(_mean(_oracle(y, s, k, "R")))
    assert r_precision_at_k(y, s, k=k) == pytest.approx(_mean(_oracle(y, s, k, "RP")))
    assert ndcg_at_k(y, s, k=k) == pytest.approx(_mean(_oracle(y, s, k, "nDCG")))
    assert mean_average_precision(y, s) == pytest.approx(_mean(_oracle(y, s, k, "AP")))
    # sparse scores: zeros become missing (-inf) in the oracle
    s_sp = sp.csr_matrix(s)
    s_inf = np.where(s == 0, -np.inf, s)
    assert precision_at_k(y, s_sp, k=k) == pytest.approx(_mean(_oracle(y, s_inf, k, "P")))
    assert ndcg_at_k(y, s_sp, k=k) == pytest.approx(_mean(_oracle(y, s_inf, k, "nDCG")))
    assert mean_average_precision(y, s_sp) == pytest.approx(_mean(_oracle(y, s_inf, k, "AP")))


def test_top_k_indices_dense_and_sparse():
    s = np.array([[0.2, 0.9, 0.9, -1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    assert top_k_indices(s, 3).tolist() == [[1, 2, 0], [0, 1, 2]]
    assert top_k_indices(s, 7).tolist() == [[1, 2, 0, 4, 3], [0, 1, 2, 3, 4]]   # k clipped to L
    csr = sp.csr_matrix(s)
    assert top_k_indices(csr, 4).tolist() == [[1, 2, 0, 3], [-1, -1, -1, -1]]
    # stored explicit zeros are candidates; unsorted indices are fine
    m = sp.csr_matrix((np.array([0.0, 5.0, 0.0]), np.array([4, 2, 1]), np.array([0, 3])), shape=(1, 6))
    assert top_k_indices(m, 4).tolist() == [[2, 1, 4]]      # width: the longest row
    assert top_k_indices(s.astype(np.float32), 2).tolist() == [[1, 2], [0, 1]]


def test_top_k_indices_random_against_argsort():
    rng = np.random.default_rng(5)
    s = rng.integers(0, 6, size=(40, 30)).astype(float)
    expected = np.lexsort((np.tile(np.arange(30), (40, 1)), -s), axis=1)[:, :8]
    np.testing.assert_array_equal(top_k_indices(s, 8), expected)
    np.testing.assert_array_equal(top_k_indices(sp.csr_matrix(s + 1), 8), expected)


def test_map_truncated_and_full():
    y = np.array([[1, 0, 1, 0, 1]])
    s = np.array([[0.9, 0.8, 0.1, 0.7, 0.6]])  # ranking 0, 1, 3, 4, 2
    full = (1 / 1 + 2 / 4 + 3 / 5) / 3
    assert mean_average_precision(y, s) == pytest.approx(full)
    # truncated at 2: only label 0 hit
    assert mean_average_precision(y, y_top_k=np.array([[0, 1]])) == pytest.approx(1 / 3)
    # gold label never ranked (missing from sparse scores) is a miss
    s_sp = sp.csr_matrix(np.array([[0.9, 0.8, 0.0, 0.7, 0.6]]))
    assert mean_average_precision(y, s_sp) == pytest.approx((1 / 1 + 2 / 4) / 3)


def test_psndcg_matches_definition():
    y = np.array([[1, 1, 0, 1], [0, 1, 0, 0]])
    s = np.array([[0.1, 0.9, 0.8, 0.2], [0.3, 0.2, 0.1, 0.0]])
    w = np.array([2.0, 1.5, 7.0, 4.0])
    k = 2
    d = [1, 1 / math.log2(3)]
    # row 0: ranking 1, 2 -> gain 1.5 at r1; ideal weights 4, 2; idcg over 2
    num0 = 1.5 * d[0] / (d[0] + d[1])
    best0 = (4 * d[0] + 2 * d[1]) / (d[0] + d[1])
    # row 1: ranking 0, 1 -> hit at r2 worth 1.5; ideal 1.5 at r1; idcg over 1
    num1 = 1.5 * d[1] / d[0]
    best1 = 1.5
    assert psndcg_at_k(y, s, k=k, inv_propensity=w) == pytest.approx((num0 + num1) / (best0 + best1))
    assert psndcg_at_k(y, s, k=k, inv_propensity=w, normalize=False) == pytest.approx(
        (num0 + num1) / 2
    )


# ---- input validation -----------------------------------------------------------


def test_errors_are_clear():
    y = np.eye(3, dtype=int)
    s = np.eye(3)
    with pytest.raises(ValueError, match="exactly one"):
        precision_at_k(y)
    with pytest.raises(ValueError, match="exactly one"):
        precision_at_k(y, s, y_top_k=np.zeros((3, 5), int))
    with pytest.raises(ValueError, match="shape"):
        precision_at_k(y, np.eye(4))
    with pytest.raises(ValueError, match="0/1"):
        precision_at_k(2 * y, s)
    with pytest.raises(ValueError, match="NaN"):
        precision_at_k(y, np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="positive integer"):
        precision_at_k(y, s, k=0)
    with pytest.raises(ValueError, match=r"at least min\(k, n_labels\)"):
        precision_at_k(y, y_top_k=np.zeros((3, 2), int), k=3)
    with pytest.raises(ValueError, match="repeats"):
        precision_at_k(y, y_top_k=np.array([[0, 0], [1, 2], [2, 1]]), k=2)
    with pytest.raises(ValueError, match="outside"):
        precision_at_k(y, y_top_k=np.array([[0, 3], [1, 2], [2, 1]]), k=2)
    with pytest.raises(ValueError, match="2-D"):
        precision_at_k(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="inv_propensity"):
        psp_at_k(y, s, k=1, inv_propensity=np.ones(2))
    with pytest.raises(ValueError, match="ties"):
        precision_at_k(y, s, ties="random")


def test_inputs_are_not_modified():
    rng = np.random.default_rng(0)
    S = sp.csr_matrix(rng.random((5, 7)))
    Y = sp.csr_matrix((rng.random((5, 7)) < 0.3).astype(np.int64))
    before = [a.copy() for a in (S.data, S.indices, S.indptr, Y.data, Y.indices, Y.indptr)]
    precision_at_k(Y, S, k=3, ties="average")
    mean_average_precision(Y, S)
    after = (S.data, S.indices, S.indptr, Y.data, Y.indices, Y.indptr)
    for a, b in zip(before, after):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
