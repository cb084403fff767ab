"""xmtc_report: stable keys, values agree with the individual metrics."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.metrics import (
    bucketed_f1,
    f1_score,
    inverse_propensity,
    mean_average_precision,
    ndcg_at_k,
    precision_at_k,
    precision_score,
    psp_at_k,
    r_precision_at_k,
    recall_at_k,
    recall_score,
    top_k_decision,
    top_k_indices,
    xmtc_report,
)

KEYS = ["P@1", "P@3", "P@5", "nDCG@3", "nDCG@5", "R@5", "RP@5", "MAP"]
PS_KEYS = ["PSP@1", "PSP@3", "PSP@5"]
F1_KEYS = ["micro_F1", "macro_F1", "macro_F1_harmonic", "micro_P", "micro_R", "mean_labels_per_doc"]
BUCKET_KEYS = ["F1_frequent", "F1_few", "F1_zero"]
ZERO_KEYS = ["zero_R@5", "zero_nDCG@5", "zero_R@5_full", "zero_n_labels", "zero_n_documents"]


def _data(seed=0):
    rng = np.random.default_rng(seed)
    n, L = 50, 30
    Y = (rng.random((n, L)) < 0.1).astype(np.int64)
    Y[-1] = 0  # an empty row
    S = rng.random((n, L)) + 0.5 * Y
    freq = rng.integers(0, 120, size=L)
    freq[:4] = 0
    return Y, S, freq


def test_report_keys_and_values():
    Y, S, freq = _data()
    P = top_k_decision(S, k=3)
    r = xmtc_report(sp.csr_matrix(Y), S, y_pred=P, label_frequency=freq, n_train_documents=500)
    assert set(r) == set(KEYS + PS_KEYS + F1_KEYS + BUCKET_KEYS + ZERO_KEYS)
    assert all(isinstance(v, float) for v in r.values())
    for key in KEYS + PS_KEYS + F1_KEYS[:-1] + BUCKET_KEYS:
        assert 0.0 <= r[key] <= 1.0, key
    w = inverse_propensity(label_frequency=freq, n_train_documents=500)
    for k in (1, 3, 5):
        assert r[f"P@{k}"] == pytest.approx(precision_at_k(Y, S, k=k))
        assert r[f"PSP@{k}"] == pytest.approx(psp_at_k(Y, S, k=k, inv_propensity=w))
    assert r["nDCG@3"] == pytest.approx(ndcg_at_k(Y, S, k=3))
    assert r["R@5"] == pytest.approx(recall_at_k(Y, S, k=5))
    assert r["RP@5"] == pytest.approx(r_precision_at_k(Y, S, k=5))
    assert r["MAP"] == pytest.approx(mean_average_precision(Y, S))
    assert r["micro_F1"] == pytest.approx(f1_score(Y, P))
    assert r["micro_P"] == pytest.approx(precision_score(Y, P))
    assert r["micro_R"] == pytest.approx(recall_score(Y, P))
    assert r["macro_F1"] == pytest.approx(f1_score(Y, P, average="per_label", labels="present"))
    assert r["macro_F1_harmonic"] == pytest.approx(f1_score(Y, P, average="harmonic"))
    b = bucketed_f1(Y, P, freq, edges=(0, 50))
    assert [r["F1_zero"], r["F1_few"], r["F1_frequent"]] == pytest.approx(list(b.f1))
    assert r["mean_labels_per_doc"] == pytest.approx(3.0)


def test_report_from_top_k_only_and_pred_only():
    Y, S, _ = _data(1)
    top = top_k_indices(S, 10)
    r = xmtc_report(Y, y_top_k=top)
    assert set(r) == set(KEYS)
    assert r["P@5"] == pytest.approx(precision_at_k(Y, S, k=5))
    assert r["MAP"] == pytest.approx(mean_average_precision(Y, y_top_k=top))
    r2 = xmtc_report(Y, y_pred=top_k_decision(S, k=2))
    assert set(r2) == set(F1_KEYS)
    with pytest.raises(ValueError, match="y_score"):
        xmtc_report(Y)
    with pytest.raises(ValueError, match="n_train_documents"):
        xmtc_report(Y, S, label_frequency=np.ones(Y.shape[1]))
