"""Group ranking metrics: hand-computed values and a brute-force oracle."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.metrics import group_ranking_metrics, top_k_indices, xmtc_report


def test_hand_computed():
    # labels 3 and 4 form the group; doc 2 has no gold label in it and is left out
    Y = np.array([[1, 0, 0, 1, 0], [0, 1, 0, 1, 1], [1, 1, 0, 0, 0]])
    S = np.array([[.9, .8, .7, .1, .2],   # group ranking: 4, 3 -> gold 3 at rank 2
                  [.9, .8, .7, .6, .1],   # group ranking: 3, 4 -> both gold
                  [.9, .8, .7, .6, .5]])
    m = group_ranking_metrics(Y, S, [3, 4], k=1)
    assert m["n_documents"] == 2 and m["n_labels"] == 2
    assert m["R@1"] == pytest.approx((0 + 1 / 2) / 2)
    assert m["nDCG@1"] == pytest.approx((0 + 1) / 2)
    assert m["R@1_full"] == 0.0  # label 0 is first in both full rankings
    m5 = group_ranking_metrics(Y, S, np.array([False, False, False, True, True]), k=5)
    assert m5["R@5"] == 1.0 and m5["R@5_full"] == 1.0  # k larger than the group: everything found
    # rank-2 hit of doc 0 in a group of 2: DCG = 1/log2(3), ideal = 1
    assert m5["nDCG@5"] == pytest.approx((1 / np.log2(3) + 1) / 2)


def _brute(Y, S, group, k):
    rec, nd, full = [], [], []
    for y, s in zip(Y, S):
        gold = [j for j in group if y[j]]
        if not gold:
            continue
        order = sorted(group, key=lambda j: (-s[j], j))[:k]
        hits = [1.0 if y[j] else 0.0 for j in order]
        rec.append(sum(hits) / len(gold))
        dcg = sum(h / np.log2(r + 2) for r, h in enumerate(hits))
        nd.append(dcg / sum(1 / np.log2(r + 2) for r in range(min(k, len(gold)))))
        top = sorted(range(len(s)), key=lambda j: (-s[j], j))[:k]
        full.append(sum(1 for j in top if j in gold) / len(gold))
    return np.mean(rec), np.mean(nd), np.mean(full), len(rec)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_brute_force_and_sparse(seed):
    rng = np.random.default_rng(seed)
    Y = (rng.random((40, 25)) < 0.15).astype(np.int64)
    S = rng.random((40, 25))
    group = sorted(rng.choice(25, 7, replace=False).tolist())
    m = group_ranking_metrics(Y, S, group, k=3)
    r, n, f, nd = _brute(Y, S, group, 3)
    assert (m["R@3"], m["nDCG@3"], m["R@3_full"], m["n_documents"]) == pytest.approx((r, n, f, nd))
    assert group_ranking_metrics(sp.csr_matrix(Y), S, group, k=3) == pytest.approx(m)
    t = group_ranking_metrics(Y, None, group, k=3, y_top_k=top_k_indices(S, 3))
    assert t["R@3_full"] == pytest.approx(f) and np.isnan(t["R@3"])


def test_report_zero_group_and_errors():
    Y = np.array([[1, 0, 1], [0, 1, 0]])
    S = np.array([[.1, .9, .8], [.9, .2, .1]])
    r = xmtc_report(Y, S, label_frequency=np.array([3, 2, 0]), n_train_documents=5, ks=(1,))
    assert (r["zero_R@1"], r["zero_nDCG@1"], r["zero_R@1_full"]) == (1.0, 1.0, 0.0)
    empty = group_ranking_metrics(Y, S, [], k=1)
    assert empty["n_documents"] == 0 and np.isnan(empty["R@1"])
    with pytest.raises(ValueError, match="exactly one"):
        group_ranking_metrics(Y, S, [0], y_top_k=np.zeros((2, 1), dtype=int))
    with pytest.raises(ValueError, match="in \\[0, 3\\)"):
        group_ranking_metrics(Y, S, [3])
