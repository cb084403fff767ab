"""The one sigmoid: every probability of a logit or a decision value is computed by
xplant._sigmoid.sigmoid, which saturates to 0 and 1 without overflow warnings."""

import warnings

import numpy as np
import pytest

from xplant import _sigmoid


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_logits_give_0_and_1_without_a_warning(dtype):
    z = np.array([[-1e30, -1e4, -1000.0, -800.0, 0.0, 800.0, 1000.0, 1e4, 1e30]], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            p = _sigmoid.sigmoid(z, dtype=dtype)
            scalar = _sigmoid.sigmoid(dtype(-1e4), dtype=dtype)
    assert p.dtype == dtype and p.shape == z.shape
    assert p[0, :4].tolist() == [0.0] * 4 and p[0, 4] == 0.5 and p[0, 5:].tolist() == [1.0] * 4
    assert scalar == 0.0 and np.ndim(scalar) == 0


def test_float32_logits_stay_float32_and_match_the_float64_sigmoid():
    z = np.random.default_rng(0).normal(0, 10, (8, 50)).astype(np.float32)
    p32 = _sigmoid.sigmoid(z, dtype=np.float32)
    assert p32.dtype == np.float32
    np.testing.assert_allclose(p32, _sigmoid.sigmoid(z), rtol=2e-7, atol=1e-38)


def test_every_place_uses_the_one_sigmoid():
    import xplant.fusion
    import xplant.fusion._calibration
    import xplant.linear._base
    assert xplant.fusion.sigmoid is _sigmoid.sigmoid
    assert xplant.fusion._calibration.sigmoid is _sigmoid.sigmoid
    assert xplant.linear._base.sigmoid is _sigmoid.sigmoid     # the sparse rankers' predict_proba
    pytest.importorskip("torch")
    import xplant.neural.classifier._classifier
    import xplant.neural.classifier._network
    assert xplant.neural.classifier._network.sigmoid is _sigmoid.sigmoid
    assert xplant.neural.classifier._classifier.sigmoid is _sigmoid.sigmoid
