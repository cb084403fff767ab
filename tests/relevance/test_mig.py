"""mig_scores and its kernels against brute-force and scikit-learn oracles."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import entropy
from sklearn.metrics import mutual_info_score

from xplant.relevance import mig_from_counts, mig_scores
from xplant.relevance import _kernels

LN2 = np.log(2.0)


def oracle(X, Y):
    """Dense (L, V) MI in bits from sklearn's mutual_info_score, pair by pair."""
    X = (np.asarray(X) != 0).astype(int)
    Y = np.asarray(Y).astype(int)
    out = np.zeros((Y.shape[1], X.shape[1]))
    for l in range(Y.shape[1]):
        for t in range(X.shape[1]):
            out[l, t] = mutual_info_score(X[:, t], Y[:, l]) / LN2
    return out


def positive_mask(X, Y):
    X = (np.asarray(X) != 0).astype(np.int64)
    Y = np.asarray(Y).astype(np.int64)
    n = X.shape[0]
    n11 = Y.T @ X
    return n11 * n > np.outer(Y.sum(0), X.sum(0))


def random_case(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    v = int(rng.integers(1, 15))
    L = int(rng.integers(1, 6))
    X = rng.poisson(rng.uniform(0.1, 1.5), size=(n, v))  # counts, binarised by mig
    Y = (rng.random((n, L)) < rng.uniform(0.05, 0.7)).astype(int)
    if n > 2:
        X[rng.integers(n)] = 0  # an all-zero document
        Y[rng.integers(n)] = 0  # a document without labels
    X[:, rng.integers(v)] = 0  # a token in no document
    X[:, rng.integers(v)] = 1  # a token in every document
    Y[:, rng.integers(L)] = 1  # a label on every document
    if L > 1:
        Y[:, rng.integers(L)] = 0  # a label on no document
    return X, Y


CASES = [random_case(s) for s in range(25)] + [
    (np.array([[1, 0, 2]]), np.array([[1, 0]])),  # N = 1
    (np.array([[0, 0], [0, 0]]), np.array([[1], [0]])),  # no tokens at all
]


@pytest.mark.parametrize("X, Y", CASES)
def test_all_pairs_match_sklearn_oracle(X, Y):
    S = mig_scores(X, Y, positive_only=False)
    O = oracle(X, Y)
    assert S.shape == O.shape
    np.testing.assert_allclose(S.toarray(), O, rtol=0, atol=1e-12)
    assert S.data.min(initial=1.0) > 0  # only positive values stored


@pytest.mark.parametrize("X, Y", CASES)
def test_positive_only_is_oracle_on_positive_pairs(X, Y):
    S = mig_scores(X, Y).toarray()
    O = oracle(X, Y)
    mask = positive_mask(X, Y)
    np.testing.assert_allclose(S, np.where(mask, O, 0.0), rtol=0, atol=1e-12)
    assert (S >= 0).all()
    assert not S[~mask].any()


def test_constant_token_or_label_has_exactly_zero_mi():
    rng = np.random.default_rng(1)
    X = (rng.random((50, 6)) < 0.4).astype(int)
    Y = (rng.random((50, 3)) < 0.4).astype(int)
    X[:, 2] = 1
    Y[:, 1] = 1
    S = mig_scores(X, Y, positive_only=False).toarray()
    assert (S[:, 2] == 0).all()
    assert (S[1, :] == 0).all()
    assert (S >= 0).all()


def test_independence_gives_exact_zero():
    # n11 * N == df * freq: the 2x2 table factorises, MI is exactly 0.
    X = np.array([[1], [1], [0], [0]])
    Y = np.array([[1], [0], [1], [0]])
    assert mig_scores(X, Y, positive_only=False).nnz == 0


def test_hand_computed_value():
    # Token present in docs {0, 1}, label on docs {0, 2}, N = 4:
    # every cell is 1, each cell contributes (1/4) log2(1 * 4 / (2 * 2)) = 0.
    # Token {0, 1}, label {0, 1}: two cells of 2, each (2/4) log2(2*4/(2*2)) = 0.5.
    X = np.array([[1, 1], [1, 1], [0, 0], [0, 0]])
    Y = np.array([[1], [0], [1], [0]])
    Y2 = np.array([[1], [1], [0], [0]])
    assert mig_scores(X, Y, positive_only=False).nnz == 0
    np.testing.assert_allclose(mig_scores(X, Y2).toarray(), [[1.0, 1.0]], atol=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_row_and_column_permutation_invariance(seed):
    X, Y = random_case(seed + 100)
    rng = np.random.default_rng(seed)
    S = mig_scores(X, Y, positive_only=False).toarray()
    rows = rng.permutation(X.shape[0])
    np.testing.assert_array_equal(mig_scores(X[rows], Y[rows], positive_only=False).toarray(), S)
    labels = rng.permutation(Y.shape[1])
    np.testing.assert_array_equal(mig_scores(X, Y[:, labels], positive_only=False).toarray(), S[labels])
    toks = rng.permutation(X.shape[1])
    np.testing.assert_array_equal(mig_scores(X[:, toks], Y).toarray(), mig_scores(X, Y).toarray()[:, toks])


def brute_top_k(S_dense, k):
    out = np.zeros_like(S_dense)
    for l in range(S_dense.shape[0]):
        cand = [(-v, t) for t, v in enumerate(S_dense[l]) if v > 0]
        for negv, t in sorted(cand)[:k]:
            out[l, t] = -negv
    return out


@pytest.mark.parametrize("positive_only", [True, False])
@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_top_k_matches_brute_force_with_ties(positive_only, k):
    # Few documents and repeated columns: many exact ties.
    rng = np.random.default_rng(k)
    base = (rng.random((12, 5)) < 0.5).astype(int)
    X = base[:, rng.integers(0, 5, size=20)]
    Y = (rng.random((12, 4)) < 0.5).astype(int)
    full = mig_scores(X, Y, positive_only=positive_only).toarray()
    top = mig_scores(X, Y, top_k=k, positive_only=positive_only)
    np.testing.assert_array_equal(top.toarray(), brute_top_k(full, k))
    assert top.has_sorted_indices
    assert all(np.all(np.diff(top.indices[top.indptr[i] : top.indptr[i + 1]]) > 0) for i in range(4))


def test_kth_smallest_equals_numpy_partition():
    # the selection behind every top-k: by hand, then against np.partition on runs of ties,
    # sorted and reversed rows, and constant rows
    a = np.array([0.5, 0.1, 0.9, 0.1, 0.3])
    assert [_kernels._kth_smallest(a.copy(), k) for k in range(5)] == [0.1, 0.1, 0.3, 0.5, 0.9]
    rng = np.random.default_rng(0)
    for trial in range(2000):
        m = int(rng.integers(1, 40))
        a = [rng.random(m), rng.integers(0, 3, m).astype(float),
             np.sort(rng.integers(0, 5, m).astype(float)), np.sort(rng.random(m))[::-1].copy(),
             np.full(m, 0.25)][trial % 5]
        k = int(rng.integers(0, m))
        b = a.copy()
        assert _kernels._kth_smallest(b, k) == np.partition(a, k)[k]
        np.testing.assert_array_equal(np.sort(b), np.sort(a))      # reordered, nothing lost


def test_top_k_tie_break_by_smaller_token_id():
    y = np.array([1, 1, 0, 0, 0, 1])
    strong = y.copy()
    weak = np.array([1, 1, 0, 0, 1, 0])
    X = np.column_stack([weak, weak, strong, weak, weak])  # tokens 0,1,3,4 tie
    S = mig_scores(X, y[:, None], top_k=3)
    assert S.indices.tolist() == [0, 1, 2]
    S = mig_scores(X[:, ::-1], y[:, None], top_k=2)  # strong token is now id 2
    assert S.indices.tolist() == [0, 2]


def test_normalize_variants_match_hand_formulas():
    X, Y = random_case(7)
    mi = mig_scores(X, Y, positive_only=False).toarray()
    B = (X != 0).astype(int)
    n = X.shape[0]
    for norm in ("joint", "label"):
        S = mig_scores(X, Y, positive_only=False, normalize=norm).toarray()
        for l in range(Y.shape[1]):
            p_l = Y[:, l].mean()
            h_l = entropy([p_l, 1 - p_l], base=2)
            for t in range(X.shape[1]):
                p_t = B[:, t].mean()
                h_t = entropy([p_t, 1 - p_t], base=2)
                if norm == "label":
                    expect = mi[l, t] / h_l if h_l > 0 else 0.0
                else:
                    h_joint = h_t + h_l - mi[l, t]
                    expect = mi[l, t] / h_joint if h_joint > 0 else 0.0
                assert S[l, t] == pytest.approx(expect, abs=1e-12), (norm, l, t, n)
    # normalized ranking decides top-k
    Sk = mig_scores(X, Y, top_k=2, normalize="label").toarray()
    np.testing.assert_array_equal(Sk, brute_top_k(mig_scores(X, Y, normalize="label").toarray(), 2))


def _oracle_counts(n11, df, freq, n):
    table = np.array([[n11, df - n11], [freq - n11, n - df - freq + n11]], dtype=np.float64)
    return mutual_info_score(None, None, contingency=table) / LN2


def test_large_counts_do_not_overflow():
    # N * n11 and df * freq exceed 2**31 (and 2**32): int32 arithmetic would wrap.
    n = 3_000_000
    n11 = np.array([70_000, 1_500_000, 2_999_999, 5], dtype=np.int64)
    df = np.array([100_000, 2_000_000, 2_999_999, 2_000_000], dtype=np.int64)
    freq = np.array([90_000, 1_600_000, 2_999_999, 3_000], dtype=np.int64)
    assert ((n11 * n > 2**32) | (df * freq > 2**32)).all()
    got = _kernels.mig_cells(n11, df, freq, n, 0, _kernels.xlogx_table(n))
    expect = [_oracle_counts(*map(int, c), n) for c in zip(n11, df, freq)]
    # Bits, absolute: the x log2 x sums cancel to ~eps * log2(N) at most.
    np.testing.assert_allclose(got, expect, rtol=1e-10, atol=1e-13)
    # Past the table, x log2 x is computed directly: same values.
    direct = _kernels.mig_cells(n11, df, freq, n, 0, _kernels.xlogx_table(10))
    np.testing.assert_allclose(direct, expect, rtol=1e-10, atol=1e-13)
    # The positive-association test uses exact int64 products.
    C = sp.csr_matrix((n11, np.arange(4), [0, 4]), shape=(1, 4))
    counts = _kernels.positive_row_counts(
        C.indptr.astype(np.int64), C.indices.astype(np.int64), n11, df, np.array([freq[0]]), n
    )
    assert counts[0] == sum(int(a) * n > int(b) * int(freq[0]) for a, b in zip(n11, df))


def test_mig_from_counts_large_counts_against_oracle():
    n = 5_000_000
    C = sp.csr_matrix(np.array([[60_000, 0, 2_000_000]], dtype=np.int64))
    df = np.array([80_000, 10, 3_000_000])
    freq = np.array([2_500_000])
    S = mig_from_counts(C, df, freq, n, positive_only=False).toarray()[0]
    expect = [_oracle_counts(int(C[0, t]), int(df[t]), int(freq[0]), n) for t in range(3)]
    np.testing.assert_allclose(S, expect, rtol=1e-10, atol=1e-13)


def test_label_blocks_do_not_change_the_result():
    X, Y = random_case(3)
    for kw in ({}, {"top_k": 2}, {"positive_only": False}, {"positive_only": False, "top_k": 3}):
        a = mig_scores(X, Y, **kw)
        b = mig_scores(X, Y, _block_nnz=1, **kw)
        np.testing.assert_array_equal(a.toarray(), b.toarray())


def test_dense_sparse_bool_and_count_inputs_agree():
    X, Y = random_case(11)
    ref = mig_scores(X, Y, top_k=3).toarray()
    for Xi, Yi in [
        (sp.csr_matrix(X), sp.csr_matrix(Y)),
        (sp.csc_matrix(X), Y.astype(bool)),
        ((X != 0), sp.coo_matrix(Y)),
        (X.astype(np.int32) * 7, Y.astype(np.float32)),
    ]:
        np.testing.assert_array_equal(mig_scores(Xi, Yi, top_k=3).toarray(), ref)


def test_result_format():
    X, Y = random_case(5)
    S = mig_scores(X, Y, top_k=2)
    assert sp.issparse(S) and S.format == "csr" and S.dtype == np.float64
    assert S.shape == (Y.shape[1], X.shape[1])
    assert (np.diff(S.indptr) <= 2).all()


def test_n_jobs_same_result_and_threads_restored():
    X, Y = random_case(2)
    before = numba.get_num_threads()
    a = mig_scores(X, Y, n_jobs=1)
    b = mig_scores(X, Y, n_jobs=-1)
    assert numba.get_num_threads() == before
    np.testing.assert_array_equal(a.toarray(), b.toarray())
    with pytest.raises(ValueError, match="n_jobs"):
        mig_scores(X, Y, n_jobs=0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"Y": np.array([[2], [0]])}, "0 and 1"),
        ({"Y": np.array([[1], [0], [1]])}, "same number of documents"),
        ({"X": np.array([[-1], [1]])}, "non-negative"),
        ({"top_k": 0}, "top_k"),
        ({"normalize": "token"}, "normalize"),
    ],
)
def test_bad_input_raises_clear_errors(kwargs, match):
    args = {"X": np.array([[1], [0]]), "Y": np.array([[1], [0]])}
    args.update(kwargs)
    X, Y = args.pop("X"), args.pop("Y")
    with pytest.raises(ValueError, match=match):
        mig_scores(X, Y, **args)


@pytest.mark.parametrize(
    "shape_x, shape_y", [((3, 0), (3, 2)), ((3, 2), (3, 0)), ((0, 2), (0, 2))]
)
@pytest.mark.parametrize("kw", [{}, {"top_k": 2}, {"positive_only": False}])
def test_degenerate_shapes(shape_x, shape_y, kw):
    S = mig_scores(np.ones(shape_x), np.ones(shape_y), **kw)
    assert S.shape == (shape_y[1], shape_x[1]) and S.nnz == 0


def test_mig_from_counts_validates_its_inputs():
    C = sp.csr_matrix(np.array([[1, 0]]))
    with pytest.raises(ValueError, match="shape"):
        mig_from_counts(C, df=[1, 1, 1], freq=[1], n_docs=2)
    with pytest.raises(ValueError, match="df must lie"):
        mig_from_counts(C, df=[3, 1], freq=[1], n_docs=2)
    with pytest.raises(ValueError, match="non-negative"):
        mig_from_counts(-C, df=[1, 1], freq=[1], n_docs=2)
