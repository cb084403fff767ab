"""Cross-check against napkinXC's metrics (optional: skipped when not installed)."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.metrics import (
    inverse_propensity,
    ndcg_at_k,
    precision_at_k,
    psndcg_at_k,
    psp_at_k,
    recall_at_k,
    top_k_indices,
)

nxc = pytest.importorskip("napkinxc.metrics")


@pytest.mark.parametrize("seed", range(2))
def test_against_napkinxc(seed):
    rng = np.random.default_rng(seed)
    n, L, k = 80, 40, 5
    Y = sp.csr_matrix((rng.random((n, L)) < 0.08).astype(np.float64))
    S = rng.random((n, L)) + 0.3 * Y.toarray()
    top = top_k_indices(S, k)
    rankings = [list(r) for r in top]
    Y_train = sp.csr_matrix((rng.random((300, L)) < 0.1).astype(np.float64))
    w = inverse_propensity(Y_train)
    np.testing.assert_allclose(w, nxc.Jain_et_al_inverse_propensity(Y_train), rtol=1e-12)
    p = nxc.precision_at_k(Y, rankings, k=k)
    r = nxc.recall_at_k(Y, rankings, k=k)
    nd = nxc.ndcg_at_k(Y, rankings, k=k)
    psp = nxc.psprecision_at_k(Y, rankings, w, k=k)
    psn = nxc.psndcg_at_k(Y, rankings, w, k=k)
    psp_raw = nxc.psprecision_at_k(Y, rankings, w, k=k, normalize=False)
    for j in range(1, k + 1):
        assert precision_at_k(Y, S, k=j) == pytest.approx(p[j - 1])
        # napkinXC counts empty rows as 0 in recall and nDCG (zero_division=0)
        assert recall_at_k(Y, S, k=j, empty_rows="zero") == pytest.approx(r[j - 1])
        assert ndcg_at_k(Y, S, k=j, empty_rows="zero") == pytest.approx(nd[j - 1])
        assert psp_at_k(Y, S, k=j, inv_propensity=w) == pytest.approx(psp[j - 1])
        assert psndcg_at_k(Y, S, k=j, inv_propensity=w) == pytest.approx(psn[j - 1])
        assert psp_at_k(Y, S, k=j, inv_propensity=w, normalize=False) == pytest.approx(psp_raw[j - 1])
