"""Interrupted runs continue: finished models are kept, neural fits resume from their checkpoint."""

import json

import pytest

pytest.importorskip("torch")

import xplant.app._run as run_mod  # noqa: E402
from xplant.app._job import run_main_job  # noqa: E402
from xplant.app import run_models  # noqa: E402
from xplant.neural.training._checkpoint import TrainingCheckpoint  # noqa: E402

DATA = {"dataset": "codiesp", "codes": "D", "language": "en", "data_home": None, "max_docs": 24}
# PLANT reads the first 64 tokens of each case: resuming does not depend on the length
MODELS = ("frequency prior", {"name": "PLANT", "params": {"module__max_length": 64}})
KW = dict(epochs=3, plant_epochs=1, verbose=0, isolate=False, save_models=False,
          description_encoder="none", log=lambda *a: None)


class Interrupt(Exception):
    pass


def _metrics(res):
    return {m["name"]: m["metrics"] for m in res["models"]}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    import torch
    torch.set_num_threads(1)
    return run_models(DATA, MODELS, tmp_path_factory.mktemp("whole"), **KW)


def test_interrupted_neural_fit_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch,
                                                                    uninterrupted):
    import torch
    torch.set_num_threads(1)
    original = TrainingCheckpoint.on_epoch_end
    seen = []

    def stop_after_two_stage2_epochs(self, net, **kwargs):
        original(self, net, **kwargs)
        if not str(self.folder).endswith("stage1"):
            seen.append(len(net.history))
            if len(net.history) == 2:
                raise Interrupt("killed after Stage 2 epoch 2")

    monkeypatch.setattr(TrainingCheckpoint, "on_epoch_end", stop_after_two_stage2_epochs)
    with pytest.raises(Interrupt):
        run_models(DATA, MODELS, tmp_path, **KW)
    # The prior finished and was recorded; PLANT left an epoch-2 checkpoint.
    assert (tmp_path / "parts" / "frequency_prior.json").is_file()
    assert not (tmp_path / "parts" / "PLANT.json").exists()
    assert any((tmp_path / "checkpoints" / "PLANT").iterdir())
    resumed_epochs = []

    def record(self, net, **kwargs):
        original(self, net, **kwargs)
        resumed_epochs.append((str(self.folder).endswith("stage1"), len(net.history)))

    monkeypatch.setattr(TrainingCheckpoint, "on_epoch_end", record)

    calls = []
    real_fit_one = run_mod._fit_one
    monkeypatch.setattr(run_mod, "_fit_one", lambda spec, *a, **k: calls.append(spec["name"])
                        or real_fit_one(spec, *a, **k))
    res = run_models(DATA, MODELS, tmp_path, resume=True, **KW)
    assert calls == ["PLANT"]                          # the prior was not fitted again
    # Only Stage 2 epoch 3 ran: no Stage 1 again, epochs 1-2 came from the checkpoint.
    assert resumed_epochs == [(False, 3)]
    got, want = _metrics(res), _metrics(uninterrupted)
    # the shortlisted fit's rows, and PLANT's fused model with the label descriptions
    rows = ["frequency prior", "PLANT", "PLANT fused", "PLANT fused, α=1",
            "PLANT fused + descriptions", "PLANT fused + descriptions + mentions"]
    assert list(got) == list(want) == rows
    for name in rows:
        assert {k: v for k, v in got[name].items() if isinstance(v, float)} == pytest.approx(
            {k: v for k, v in want[name].items() if isinstance(v, float)}, nan_ok=True)
    assert not (tmp_path / "checkpoints" / "PLANT").exists()   # removed once finished
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [m["name"] for m in saved["models"]] == rows


def test_resume_refits_a_model_whose_spec_changed(tmp_path, monkeypatch):
    run_models(DATA, ["frequency prior"], tmp_path, **KW)
    calls = []
    real_fit_one = run_mod._fit_one
    monkeypatch.setattr(run_mod, "_fit_one", lambda spec, *a, **k: calls.append(spec)
                        or real_fit_one(spec, *a, **k))
    run_models(DATA, ["frequency prior"], tmp_path, resume=True, **KW)
    assert calls == []
    run_models(DATA, [{"name": "frequency prior", "max_train_docs": 10}], tmp_path,
               resume=True, **KW)
    assert len(calls) == 1
    run_models({**DATA, "max_docs": 20}, ["frequency prior"], tmp_path, resume=True, **KW)
    assert len(calls) == 2


def test_resume_needs_the_run_folder():
    with pytest.raises(ValueError, match="needs output_dir"):
        run_main_job(None, resume=True)
