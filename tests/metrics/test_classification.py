"""F1, AUC, inverse propensities and frequency buckets: small examples worked by hand, and
sklearn as an oracle."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import metrics as skm

from xplant.metrics import (
    bucketed_f1,
    f1_score,
    inverse_propensity,
    label_frequency,
    per_label_scores,
    precision_score,
    recall_score,
    roc_auc,
    tail_f1,
)


def _hit_missed_and_absent_labels():
    """10 docs, labels A, B, C: A 1 TP; B 1 TP + 9 FN; C absent everywhere."""
    Y = np.zeros((10, 3), dtype=np.int64)
    P = np.zeros((10, 3), dtype=np.int64)
    Y[0, 0] = P[0, 0] = 1
    Y[:, 1] = 1
    P[0, 1] = 1
    return Y, P


@pytest.mark.parametrize("fmt", [np.asarray, sp.csr_matrix])
def test_two_macro_f1s_over_all_or_present_labels_and_micro_f1(fmt):
    Y, P = (fmt(a) for a in _hit_missed_and_absent_labels())
    assert f1_score(Y, P, average="per_label", labels="all") == pytest.approx(0.3939, abs=1e-4)
    assert f1_score(Y, P, average="harmonic", labels="all") == pytest.approx(0.4731, abs=1e-4)
    assert f1_score(Y, P, average="per_label", labels="present") == pytest.approx(0.5909, abs=1e-4)
    assert f1_score(Y, P, average="harmonic", labels="present") == pytest.approx(0.7097, abs=1e-4)
    assert f1_score(Y, P) == pytest.approx(0.3077, abs=1e-4)
    # the defaults: micro over all labels, macro over present labels
    assert f1_score(Y, P, average="per_label") == f1_score(Y, P, average="per_label", labels="present")


def test_macro_f1_over_present_labels_by_default_and_zero_division_for_absent_ones():
    Y = np.array([[1, 0], [0, 0]])
    assert f1_score(Y, Y, average="per_label") == 1.0
    assert f1_score(Y, Y, average="per_label", labels="all", zero_division=0.0) == 0.5
    assert f1_score(Y, Y, average="per_label", labels="all", zero_division=1.0) == 1.0
    assert f1_score(Y, Y, average="per_label", labels="all", zero_division=np.nan) == 1.0


def test_macro_auc_excludes_unscorable_labels():
    Y = np.array([[1, 0], [0, 0], [1, 0]])
    S = np.array([[0.9, 0.1], [0.2, 0.3], [0.8, 0.2]])
    for s in (S, sp.csr_matrix(S)):
        r = roc_auc(Y, s, average="macro")
        assert r.value == 1.0 and r.n_excluded == 1
        assert not np.isnan(r.value)
    value, n_excluded = roc_auc(sp.csr_matrix(Y), S)
    assert (value, n_excluded) == (1.0, 1)


def test_inverse_propensity_from_frequencies_or_a_label_matrix():
    f = np.array([1, 10, 100, 0])
    w = inverse_propensity(label_frequency=f, n_train_documents=10_000)
    assert w[0] == pytest.approx(np.log(10_000), rel=1e-12)
    assert w[0] == pytest.approx(9.2103, abs=1e-4)
    assert w[1] == pytest.approx(4.55, abs=5e-3)
    assert w[2] == pytest.approx(2.07, abs=5e-3)
    assert w[3] == pytest.approx(11.87, abs=5e-3)
    assert w[3] == w.max()
    for A, B in [(0.5, 0.4), (0.6, 2.6), (0.3, 7.0)]:
        one = inverse_propensity(label_frequency=np.array([1]), n_train_documents=10_000, A=A, B=B)
        assert one[0] == pytest.approx(np.log(10_000), rel=1e-12)
    # from a training matrix: frequencies and N are read off it
    labels = np.r_[np.zeros(1), np.ones(10), np.full(100, 2)].astype(np.int64)  # 1, 10, 100, 0
    indptr = np.r_[np.arange(112), np.full(10_000 - 111, 111)]
    Y = sp.csr_matrix((np.ones(111, dtype=np.int64), labels, indptr), shape=(10_000, 4))
    np.testing.assert_allclose(inverse_propensity(Y), w, rtol=1e-12)
    np.testing.assert_allclose(inverse_propensity(Y.toarray()), w, rtol=1e-12)
    np.testing.assert_array_equal(label_frequency(Y), [1, 10, 100, 0])
    with pytest.raises(ValueError, match="either"):
        inverse_propensity()
    with pytest.raises(ValueError, match="n_train_documents"):
        inverse_propensity(label_frequency=f)


def test_zero_filling_scales_macro_f1_by_the_present_fraction():
    # small analogue of 4,085 of 8,930 labels present: 9 of 20 here
    rng = np.random.default_rng(0)
    L, n_present = 20, 9
    Y = np.zeros((30, L), dtype=np.int64)
    Y[:, :n_present] = rng.random((30, n_present)) < 0.4
    Y[0, :n_present] = 1
    P = np.zeros_like(Y)
    P[:, :n_present] = rng.random((30, n_present)) < 0.4
    present = f1_score(Y, P, average="per_label", labels="present")
    everything = f1_score(Y, P, average="per_label", labels="all", zero_division=0.0)
    assert everything == pytest.approx(present * n_present / L)
    assert 4085 / 8930 == pytest.approx(0.457, abs=1e-3)


@pytest.mark.parametrize("seed", range(3))
def test_f1_against_sklearn(seed):
    rng = np.random.default_rng(seed)
    Y = (rng.random((40, 12)) < 0.2).astype(int)
    P = (rng.random((40, 12)) < 0.2).astype(int)
    Y[:, 3] = 0  # an absent label
    P[:, 5] = 0  # a never-predicted label
    for zd in (0.0, 1.0):
        assert f1_score(Y, P) == pytest.approx(skm.f1_score(Y, P, average="micro", zero_division=zd))
        assert f1_score(Y, P, average="per_label", labels="all", zero_division=zd) == pytest.approx(
            skm.f1_score(Y, P, average="macro", zero_division=zd)
        )
        present = np.flatnonzero(Y.sum(0))
        assert f1_score(Y, P, average="per_label", zero_division=zd) == pytest.approx(
            skm.f1_score(Y, P, average="macro", labels=present, zero_division=zd)
        )
        assert precision_score(Y, P, average="per_label", labels="all", zero_division=zd) == pytest.approx(
            skm.precision_score(Y, P, average="macro", zero_division=zd)
        )
        assert recall_score(Y, P, average="per_label", labels="all", zero_division=zd) == pytest.approx(
            skm.recall_score(Y, P, average="macro", zero_division=zd)
        )
    assert precision_score(Y, P) == pytest.approx(skm.precision_score(Y, P, average="micro"))
    assert recall_score(Y, P) == pytest.approx(skm.recall_score(Y, P, average="micro"))
    pl = per_label_scores(sp.csr_matrix(Y), sp.csr_matrix(P))
    np.testing.assert_allclose(pl.f1, skm.f1_score(Y, P, average=None, zero_division=0.0))
    np.testing.assert_array_equal(pl.support, Y.sum(0))


def test_labels_train_policy_and_masks():
    Y, P = _hit_missed_and_absent_labels()
    freq = np.array([5, 0, 2])  # label B never seen in training
    # train labels: A and C -> (1 + 0) / 2
    assert f1_score(Y, P, average="per_label", labels="train", label_frequency=freq) == 0.5
    assert f1_score(Y, P, average="per_label", labels=np.array([0, 2])) == 0.5
    assert f1_score(Y, P, average="per_label", labels=np.array([True, False, True])) == 0.5
    with pytest.raises(ValueError, match="label_frequency"):
        f1_score(Y, P, average="per_label", labels="train")
    with pytest.raises(ValueError, match="labels"):
        f1_score(Y, P, labels="some")
    with pytest.raises(ValueError, match="average"):
        f1_score(Y, P, average="macro")
    with pytest.raises(ValueError, match="shape"):
        f1_score(Y, P[:, :2])
    with pytest.raises(ValueError, match="zero_division"):
        f1_score(Y, P, zero_division="warn")


@pytest.mark.parametrize("seed", range(3))
def test_auc_against_sklearn(seed):
    rng = np.random.default_rng(seed)
    n, L = 50, 8
    Y = (rng.random((n, L)) < 0.3).astype(int)
    Y[:, 0] = 0
    Y[:, 1] = 1
    S = np.round(rng.random((n, L)), 1)  # ties
    ok = [j for j in range(L) if 0 < Y[:, j].sum() < n]
    macro = np.mean([skm.roc_auc_score(Y[:, j], S[:, j]) for j in ok])
    r = roc_auc(Y, S)
    assert r.value == pytest.approx(macro) and r.n_excluded == 2
    assert roc_auc(Y, S, average="micro").value == pytest.approx(skm.roc_auc_score(Y.ravel(), S.ravel()))
    # sparse scores: missing entries rank lowest, like -inf (zeros here)
    S_sp = sp.csr_matrix(np.where(rng.random((n, L)) < 0.5, S, 0.0))
    D = S_sp.toarray()
    D[D == 0] = -np.inf
    macro_sp = np.mean([skm.roc_auc_score(Y[:, j], np.nan_to_num(D[:, j], neginf=-1)) for j in ok])
    assert roc_auc(Y, S_sp).value == pytest.approx(macro_sp)
    assert roc_auc(Y, S_sp, average="micro").value == pytest.approx(
        skm.roc_auc_score(Y.ravel(), np.nan_to_num(D.ravel(), neginf=-1))
    )


def test_auc_errors():
    with pytest.raises(ValueError, match="no label"):
        roc_auc(np.zeros((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="average"):
        roc_auc(np.eye(2), np.eye(2), average="weighted")


def test_bucketed_and_tail_f1():
    Y = np.array([[1, 1, 0, 1, 0], [0, 1, 1, 1, 0], [1, 0, 1, 0, 0]])
    P = np.array([[1, 0, 0, 1, 1], [0, 1, 1, 0, 0], [0, 0, 1, 0, 0]])
    freq = np.array([0, 3, 6, 80, 4])
    per = per_label_scores(Y, P).f1
    r = bucketed_f1(Y, P, freq)
    assert r.names == ["0", "1-5", "6-10", "11-50", ">50"]
    # label 4 (freq 4) is absent from Y: left out under labels="present"
    np.testing.assert_allclose(r.f1, [per[0], per[1], per[2], np.nan, per[3]])
    np.testing.assert_array_equal(r.n_labels, [1, 1, 1, 0, 1])
    np.testing.assert_array_equal(r.n_labels_total, [1, 2, 1, 0, 1])
    np.testing.assert_array_equal(r.support, [2, 2, 2, 0, 2])
    r_all = bucketed_f1(Y, P, freq, labels="all")
    assert r_all.f1[1] == pytest.approx((per[1] + 0.0) / 2)
    r2 = bucketed_f1(sp.csr_matrix(Y), sp.csr_matrix(P), freq, edges=(0, 1, 5, 10, 50))
    assert r2.names == ["0", "1", "2-5", "6-10", "11-50", ">50"]
    assert tail_f1(Y, P, freq) == pytest.approx((per[1] + per[2]) / 2)
    assert tail_f1(Y, P, freq, min_frequency=0, max_frequency=10) == pytest.approx(per[:3].mean())
    with pytest.warns(Warning, match="undefined"):
        assert np.isnan(tail_f1(Y, P, freq, min_frequency=11, max_frequency=50))
    with pytest.raises(ValueError, match="increasing"):
        bucketed_f1(Y, P, freq, edges=(5, 1))
    with pytest.raises(ValueError, match="shape"):
        bucketed_f1(Y, P, freq[:3])
