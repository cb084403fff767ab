"""The word backbones' dropout: torch's regulariser, its mask drawn from random bits.

``MaskDropout`` must be inverted dropout with rate ``round(p * 65536) / 65536``:
each element kept independently, kept ones scaled by the exact inverse keep
rate, the gradient the same mask, the identity in evaluation, and the same
draw for the same seed at any thread count.
"""
import math

import pytest

torch = pytest.importorskip("torch")

from xplant.neural.backbones import WordEncoder  # noqa: E402
from xplant.neural.backbones._word import MaskDropout  # noqa: E402


@pytest.mark.parametrize("p", [0.2, 0.5, 0.05, 0.9])
def test_keep_rate_and_scale(p):
    torch.manual_seed(1)
    n = 2_000_000
    y = MaskDropout(p).train()(torch.ones(n))
    cut = round(p * 65536)
    keep = 1 - cut / 65536
    kept = y > 0
    # every kept element carries exactly 1 / keep, every other one 0
    assert torch.all(y[kept] == torch.tensor(1 / keep, dtype=torch.float32))
    assert torch.all(y[~kept] == 0)
    # the keep rate: within 5 binomial standard deviations
    rate = kept.double().mean().item()
    assert abs(rate - keep) < 5 * math.sqrt(keep * (1 - keep) / n)
    # expectation preserved: the mean of the output is 1 within the same bound
    assert abs(y.double().mean().item() - 1) < 5 * math.sqrt((1 - keep) / keep / n)


def test_elements_are_independent():
    """The four 16-bit lanes of one 64-bit word, and neighbours, do not move together."""
    torch.manual_seed(2)
    n = 4_000_000
    k = MaskDropout(0.5).train()(torch.ones(n)).gt(0).double()
    z = (k - k.mean()) / k.std()
    for lag in (1, 2, 3, 4, 5):
        corr = (z[:-lag] * z[lag:]).mean().item()
        assert abs(corr) < 5 / math.sqrt(n), (lag, corr)
    # each lane alone keeps half its elements
    lanes = k.view(-1, 4).mean(0)
    assert torch.all((lanes - 0.5).abs() < 5 * math.sqrt(0.25 / (n / 4)))


def test_gradient_is_the_same_mask():
    torch.manual_seed(3)
    x = torch.randn(7, 11, 13, requires_grad=True)
    y = MaskDropout(0.3).train()(x)
    w = torch.randn_like(y)
    (y * w).sum().backward()
    scale = 65536 / (65536 - round(0.3 * 65536))
    mask = (y != 0).float()
    assert torch.allclose(y, x.detach() * mask * scale)
    assert torch.allclose(x.grad, w * mask * scale)


def test_evaluation_zero_rate_and_full_rate():
    x = torch.randn(5, 6)
    assert torch.equal(MaskDropout(0.4).eval()(x), x)
    assert MaskDropout(0.0).train()(x) is x
    assert torch.equal(MaskDropout(1.0).train()(x), torch.zeros_like(x))


def test_same_seed_same_mask_at_any_thread_count():
    before = torch.get_num_threads()
    try:
        masks = []
        for threads in (1, 2, 1):
            torch.set_num_threads(threads)
            torch.manual_seed(7)
            masks.append(MaskDropout(0.2).train()(torch.ones(3, 1000, 64)))
        assert torch.equal(masks[0], masks[1]) and torch.equal(masks[0], masks[2])
        torch.manual_seed(8)
        assert not torch.equal(MaskDropout(0.2).train()(torch.ones(3, 1000, 64)), masks[0])
    finally:
        torch.set_num_threads(before)


def test_odd_sizes_and_the_generator_state():
    """A size that is no multiple of 4 is served, and a draw advances torch's generator."""
    torch.manual_seed(0)
    y = MaskDropout(0.5).train()(torch.ones(3, 5, 7))
    assert y.shape == (3, 5, 7) and set(y.unique().tolist()) <= {0.0, 2.0}
    torch.manual_seed(0)
    first = torch.rand(1)
    torch.manual_seed(0)
    MaskDropout(0.5).train()(torch.ones(3, 5, 7))
    assert not torch.equal(torch.rand(1), first)


def test_word_encoder_uses_it_and_its_rate():
    enc = WordEncoder(50, dropout=0.35)
    assert isinstance(enc.dropout, MaskDropout) and enc.dropout.p == 0.35
    ids = torch.randint(1, 50, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.bool)
    enc.eval()
    assert torch.equal(enc(ids, mask), enc(ids, mask))     # no dropout in evaluation
