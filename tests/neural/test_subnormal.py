"""The optimizer-state sweep that keeps Adam's moments out of the subnormal range."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from xplant.neural import _base  # noqa: E402
from xplant.neural.training._torch_state import SUBNORMAL_SWEEP_STEPS, zero_subnormal_state  # noqa: E402


def _values(np_float, np_int):
    info = np.finfo(np_float)
    smallest = np.array([1], dtype=np_int).view(np_float)[0]           # the smallest subnormal
    largest = np.nextafter(info.tiny, np_float(0))                        # the largest subnormal
    subnormal = [smallest, -smallest, largest, -largest, info.tiny / 3, -info.tiny / 1000]
    kept = [0.0, -0.0, info.tiny, -info.tiny, 1.0, -2.5e-3, info.max, np.inf, -np.inf, np.nan]
    return np.array(subnormal + kept, dtype=np_float), len(subnormal)


@pytest.mark.parametrize("np_float,np_int,dtype", [(np.float32, np.int32, torch.float32),
                                                   (np.float64, np.int64, torch.float64)])
def test_sweep_zeroes_subnormals_and_keeps_every_other_bit(np_float, np_int, dtype):
    values, n_sub = _values(np_float, np_int)
    assert np.all(np.abs(values[:n_sub]) < np.finfo(np_float).tiny) and np.all(values[:n_sub] != 0)
    w = torch.nn.Parameter(torch.ones(len(values), dtype=dtype))
    opt = torch.optim.AdamW([w])
    w.grad = torch.ones_like(w)
    opt.step()
    state = opt.state[w]
    state["exp_avg"].copy_(torch.from_numpy(values))
    state["exp_avg_sq"].copy_(torch.from_numpy(values[::-1].copy()))
    step = state["step"].clone()
    zero_subnormal_state(opt)
    got = state["exp_avg"].numpy()
    assert np.all(got[:n_sub] == 0)
    # every other entry keeps its bits (-0.0 may become +0.0: both have a zero exponent)
    kept_bits = values[n_sub:].view(np_int)
    got_bits = got[n_sub:].view(np_int)
    same = (got_bits == kept_bits) | ((values[n_sub:] == 0) & (got[n_sub:] == 0))
    assert same.all()
    rev = state["exp_avg_sq"].numpy()[::-1]
    assert np.all(rev[:n_sub] == 0) and np.all((rev[n_sub:].view(np_int) == kept_bits)
                                                 | ((values[n_sub:] == 0) & (rev[n_sub:] == 0)))
    assert torch.equal(state["step"], step)                  # a 0-dim counter is left alone


def test_sweep_leaves_other_dtypes_alone():
    w = torch.nn.Parameter(torch.ones(2, dtype=torch.bfloat16))
    opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = torch.ones_like(w)
    opt.step()
    buf = opt.state[w]["momentum_buffer"]
    buf.copy_(torch.tensor([1e-39, 1.0], dtype=torch.bfloat16))
    before = buf.clone()
    zero_subnormal_state(opt)
    assert torch.equal(buf.view(torch.int16), before.view(torch.int16))


def test_a_fit_sweeps_every_sixteenth_step_of_each_epoch(small, make_corpus, monkeypatch):
    calls = []

    def counting(optimizer):
        calls.append(len(optimizer.state))
        zero_subnormal_state(optimizer)

    monkeypatch.setattr(_base, "zero_subnormal_state", counting)
    texts, Y = make_corpus(n_docs=40)
    clf = small(plant=False, max_epochs=2, batch_size=2, n_jobs=1).fit(texts, Y)
    batches = [len(h["batches"]) for h in clf.history]
    assert batches == [18, 18]          # 36 training documents (a tenth is the dev split), 2 a batch
    assert SUBNORMAL_SWEEP_STEPS == 16
    assert len(calls) == sum(b // SUBNORMAL_SWEEP_STEPS for b in batches) == 2
    assert all(n > 0 for n in calls)              # the optimizer had state to sweep
