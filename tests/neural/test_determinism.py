"""CPU fits repeat exactly: torch's deterministic kernels while training."""

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from xplant.neural.training._torch_state import deterministic_on_cpu


@pytest.fixture
def restore_mode():
    was = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    torch.use_deterministic_algorithms(was, warn_only=warn)


@pytest.mark.parametrize("before", [False, True])
def test_cpu_context_turns_the_mode_on_and_restores_it(restore_mode, before):
    torch.use_deterministic_algorithms(before)          # warn_only=False
    import torch.utils.deterministic as deterministic
    assert deterministic.fill_uninitialized_memory
    with deterministic_on_cpu("cpu"):
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert not deterministic.fill_uninitialized_memory   # no NaN fill of new tensors
    assert torch.are_deterministic_algorithms_enabled() is before
    assert not torch.is_deterministic_algorithms_warn_only_enabled()
    assert deterministic.fill_uninitialized_memory               # restored


def test_cpu_context_restores_after_an_error(restore_mode):
    torch.use_deterministic_algorithms(False)
    with pytest.raises(RuntimeError, match="boom"):
        with deterministic_on_cpu(torch.device("cpu")):
            raise RuntimeError("boom")
    assert not torch.are_deterministic_algorithms_enabled()


def test_other_devices_are_left_alone(restore_mode):
    torch.use_deterministic_algorithms(False)
    with deterministic_on_cpu("cuda:0"):              # no GPU needed: nothing runs on it
        assert not torch.are_deterministic_algorithms_enabled()


class _Mode(Callback):
    """Records whether the deterministic mode is on at each epoch end."""

    def initialize(self):
        self.seen = []
        return self

    def on_epoch_end(self, net, **kwargs):
        self.seen.append(torch.are_deterministic_algorithms_enabled())


def test_a_cpu_fit_trains_deterministically_and_repeats_exactly(small, make_corpus, restore_mode):
    torch.use_deterministic_algorithms(False)
    texts, Y = make_corpus(n_docs=40, n_labels=6, seed=3)   # several batches an epoch
    fits = []
    for _ in range(2):
        mode = _Mode()
        clf = small(n_jobs=2, callbacks=[("mode", mode)]).fit(texts, Y)
        assert mode.seen and all(mode.seen)               # on during every Stage 2 epoch
        assert not torch.are_deterministic_algorithms_enabled()   # and off again after fit
        fits.append(clf)
    a, b = (f.module_.state_dict() for f in fits)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    np.testing.assert_array_equal(fits[0].predict_proba(texts), fits[1].predict_proba(texts))
