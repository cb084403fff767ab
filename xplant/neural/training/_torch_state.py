"""torch's state during a fit: threads, seeds, deterministic CPU kernels, subnormal sweeps.

Shared by AttentionPlanter and PlantClassifier (through the skorch ladder of
``xplant/neural/_base.py``): :func:`set_torch_threads` maps ``n_jobs`` to
torch's threads, :func:`seed_everything` seeds torch and numpy from
``random_state``, :func:`torch_state_restored` gives both back after a fit,
:func:`deterministic_on_cpu` makes a CPU fit repeat exactly, and
:func:`zero_subnormal_state` keeps the optimizer's state out of the slow
subnormal range.
"""

import contextlib
import os

import numpy as np
import torch


def set_torch_threads(n_jobs):
    """Map n_jobs to torch's intra-op threads (None keeps torch's default)."""
    if n_jobs is None:
        return
    n = os.cpu_count() if n_jobs == -1 else int(n_jobs)
    torch.set_num_threads(max(1, n))


@contextlib.contextmanager
def deterministic_on_cpu(device):
    """Run a CPU training loop with torch's deterministic algorithms, then restore the setting.

    With more than one intra-op thread, some of torch's CPU backward
    kernels accumulate in an order that varies from run to run, so two
    fits with the same seed drifted apart from the 7th decimal of a loss
    (measured on CodiEsp-D: Stage 1 at 2 threads). Inside this context
    torch uses its deterministic kernels (``warn_only=True``: an operation
    without one warns instead of failing), and the fit repeats exactly.
    Other devices are left as they are: GPU fits are not deterministic.

    The mode also fills every new tensor with NaN by default
    (``torch.utils.deterministic.fill_uninitialized_memory``), a guard
    against reading memory no kernel wrote; xplant's kernels write every
    element they read, so it is off inside this context (restored after).
    Under torch's profiler the fill was a sixth of a fit's CPU time; on a
    quiet machine the fit's wall time did not change measurably
    (docs/benchmarks/archive/speed.md). The fits stay deterministic: the fill never
    reaches a result.

    Parameters
    ----------
    device : str or torch.device
        The estimator's ``device``; only ``"cpu"`` turns the mode on.
    """
    if torch.device(device).type != "cpu":
        yield
        return
    import torch.utils.deterministic as deterministic
    was = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    deterministic.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was, warn_only=warn_only)
        deterministic.fill_uninitialized_memory = fill


#: optimizer steps between two sweeps of :func:`zero_subnormal_state` (within an epoch)
SUBNORMAL_SWEEP_STEPS = 16

_EXPONENT_BITS = {torch.float32: (torch.int32, 0x7F800000),
                  torch.float64: (torch.int64, 0x7FF0000000000000)}


def zero_subnormal_state(optimizer):
    """Set every subnormal entry of an optimizer's CPU state to zero, in place.

    Adam's first moment of a parameter whose gradient is zero decays by
    ``beta1`` at every step: the moments of an embedding row whose word is
    absent from the recent batches reach the subnormal range (below
    ``torch.finfo(dtype).tiny``) after a few hundred steps and stay there for
    about 150 more. An x86 core computes with subnormal operands through a
    microcode assist that is many times slower than normal arithmetic, and
    ``torch.set_flush_denormal`` cannot fix it from Python: it sets only the
    calling thread's control register, not those of torch's OpenMP threads.
    A fit calls this every :data:`SUBNORMAL_SWEEP_STEPS` steps. An entry it
    zeroes is below 1.2e-38 (float32), so its share of any update is far
    below a weight's last bit.

    The test of each entry reads its exponent bits as an integer (an
    exponent of zero is a subnormal or a zero), so the sweep itself does no
    arithmetic on subnormals. Only float32 and float64 tensors on the CPU
    are swept; the others are left as they are.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        Its ``state`` tensors (for AdamW ``exp_avg`` and ``exp_avg_sq``) are
        changed in place.

    Examples
    --------
    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(3))
    >>> opt = torch.optim.AdamW([w])
    >>> w.grad = torch.ones(3); opt.step()
    >>> _ = opt.state[w]["exp_avg"].copy_(torch.tensor([1e-39, -1e-40, 1e-3]))
    >>> zero_subnormal_state(opt)
    >>> opt.state[w]["exp_avg"]
    tensor([0.0000, 0.0000, 0.0010])
    """
    for state in optimizer.state.values():
        for t in state.values():
            if not torch.is_tensor(t) or t.device.type != "cpu" or t.dtype not in _EXPONENT_BITS \
                    or t.dim() == 0:
                continue
            int_dtype, mask = _EXPONENT_BITS[t.dtype]
            t.masked_fill_(torch.bitwise_and(t.view(int_dtype), mask) == 0, 0.0)


@contextlib.contextmanager
def torch_state_restored():
    """Leave torch's intra-op thread count and global RNG state as they were.

    ``fit`` sets the threads (``n_jobs``) and seeds torch's generator
    (``random_state``) for itself; inside this context both are restored
    afterwards, so a fit changes nothing else in the process.
    """
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)


def seed_everything(random_state):
    seed = 0 if random_state is None else int(random_state)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)
