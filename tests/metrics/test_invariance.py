"""Invariances over random inputs: dense == sparse, label and sample permutations."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from xplant.metrics import (
    f1_score,
    mean_average_precision,
    ndcg_at_k,
    precision_at_k,
    psndcg_at_k,
    psp_at_k,
    r_precision_at_k,
    recall_at_k,
    roc_auc,
)


@st.composite
def problems(draw):
    n = draw(st.integers(1, 12))
    L = draw(st.integers(1, 10))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, L)) < draw(st.floats(0.05, 0.6))).astype(np.int64)
    # integer-valued scores make ties common; all > 0 so sparse keeps every entry
    S = rng.integers(1, draw(st.integers(2, 6)), size=(n, L)).astype(np.float64)
    P = (rng.random((n, L)) < 0.3).astype(np.int64)
    w = rng.uniform(1.0, 10.0, size=L)
    k = draw(st.integers(1, 6))
    return Y, S, P, w, k, rng


def _ranking_values(Y, S, w, k, ties):
    """Every averaged ranking metric; label-permutation safe only with ties='average'."""
    return np.array(
        [
            precision_at_k(Y, S, k=k, ties=ties),
            recall_at_k(Y, S, k=k, ties=ties),
            r_precision_at_k(Y, S, k=k, ties=ties),
            ndcg_at_k(Y, S, k=k, ties=ties, empty_rows="zero"),
            psp_at_k(Y, S, k=k, inv_propensity=w, ties=ties),
            psndcg_at_k(Y, S, k=k, inv_propensity=w, ties=ties),
        ]
    )


def _classification_values(Y, P):
    return np.array(
        [
            f1_score(Y, P),
            f1_score(Y, P, average="per_label"),
            f1_score(Y, P, average="harmonic", labels="all"),
        ]
    )


SETTINGS = settings(max_examples=25, deadline=None)
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")


@SETTINGS
@given(problems())
def test_dense_equals_sparse(problem):
    Y, S, P, w, k, _ = problem
    Ys, Ss, Ps = sp.csr_matrix(Y), sp.csr_matrix(S), sp.csr_matrix(P)
    for ties in ("break", "average"):
        np.testing.assert_allclose(_ranking_values(Y, S, w, k, ties), _ranking_values(Ys, Ss, w, k, ties))
    assert mean_average_precision(Y, S) == mean_average_precision(Ys, Ss)
    np.testing.assert_allclose(_classification_values(Y, P), _classification_values(Ys, Ps))
    if 0 < Y.sum() < Y.size:
        assert roc_auc(Y, S, average="micro") == roc_auc(Ys, Ss, average="micro")
    if any(0 < c < Y.shape[0] for c in Y.sum(0)):
        assert roc_auc(Y, S) == roc_auc(Ys, Ss)


@SETTINGS
@given(problems())
def test_label_permutation_invariance(problem):
    Y, S, P, w, k, rng = problem
    perm = rng.permutation(Y.shape[1])
    # tie-breaking by label index depends on column order; the tie average does not
    np.testing.assert_allclose(
        _ranking_values(Y, S, w, k, "average"),
        _ranking_values(Y[:, perm], S[:, perm], w[perm], k, "average"),
        rtol=1e-10,
    )
    # continuous scores (no ties): every rule is invariant, MAP included
    Sc = S + rng.random(S.shape) * 0.5
    np.testing.assert_allclose(
        _ranking_values(Y, Sc, w, k, "break"),
        _ranking_values(Y[:, perm], Sc[:, perm], w[perm], k, "break"),
        rtol=1e-10,
    )
    assert np.isclose(mean_average_precision(Y, Sc), mean_average_precision(Y[:, perm], Sc[:, perm]))
    np.testing.assert_allclose(_classification_values(Y, P), _classification_values(Y[:, perm], P[:, perm]))
    if any(0 < c < Y.shape[0] for c in Y.sum(0)):
        assert np.isclose(roc_auc(Y, S).value, roc_auc(Y[:, perm], S[:, perm]).value)


@SETTINGS
@given(problems())
def test_sample_permutation_invariance(problem):
    Y, S, P, w, k, rng = problem
    perm = rng.permutation(Y.shape[0])
    for ties in ("break", "average"):
        np.testing.assert_allclose(
            _ranking_values(Y, S, w, k, ties), _ranking_values(Y[perm], S[perm], w, k, ties), rtol=1e-10
        )
    assert np.isclose(mean_average_precision(Y, S), mean_average_precision(Y[perm], S[perm]))
    np.testing.assert_allclose(_classification_values(Y, P), _classification_values(Y[perm], P[perm]))
    if 0 < Y.sum() < Y.size:
        assert np.isclose(roc_auc(Y, S, average="micro").value, roc_auc(Y[perm], S[perm], average="micro").value)
