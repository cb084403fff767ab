"""DeepSpeed on CPU: 2 gloo processes under torchrun against a single-process run.

The 2-process fits of the slow tests run in two torchrun jobs (the fits, then the
resumed fits), shared by a module fixture; the single-process references run in
this process.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("skorch")
if importlib.util.find_spec("deepspeed") is None:
    pytest.skip("deepspeed is not installed (pip install 'xplant[deepspeed]')", allow_module_level=True)

WORKER = Path(__file__).with_name("_ds_worker.py")
REPO = Path(__file__).resolve().parents[2]


def _env():
    env = dict(os.environ, DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1",
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return env


def _one_process(tmp_path, name, *args):
    """The worker's fit under skorch, in this process (no process group): the reference."""
    spec = importlib.util.spec_from_file_location("_ds_worker", WORKER)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    out = tmp_path / f"{name}.json"
    worker.main([str(out), "--strategy", "skorch", *args])
    return json.loads(out.read_text())


def _two_processes(tmp_path, jobs):
    """The worker's fits ``{name: args}`` one after the other in one 2-process torchrun job.

    The processes start once for all fits (their imports are most of a fit's time);
    each fit builds its own DeepSpeed engine. Returns ``{name: what rank 0 wrote}``.
    """
    (tmp_path / "jobs.json").write_text(json.dumps([[str(tmp_path / f"{name}.json"), *args]
                                                    for name, args in jobs.items()]))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--standalone", str(WORKER), "--jobs", str(tmp_path / "jobs.json")]
    proc = subprocess.run(cmd, env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in jobs}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The same tiny PLANT model trained by skorch in one process, 3 epochs."""
    return _one_process(tmp_path_factory.mktemp("ref"), "ref", "--epochs", "3")


STAGE1_DEV = ("--epochs", "3", "--stage1-weight", "dev", "--max-epoch-docs", "24", "--patience", "2")


@pytest.fixture(scope="module")
def deepspeed_fits(tmp_path_factory):
    """Every 2-process fit of the slow tests below, in one torchrun job, then the resumed ones.

    The stage1_weight="dev" fit comes first, as each rank's first fit, since its test
    compares what the ranks predict bit for bit. ``latest`` is each resume checkpoint's
    last epoch before the resumed fits run (in a second job: a resume is a fresh start).
    """
    tmp = tmp_path_factory.mktemp("ds")
    fits = _two_processes(tmp, {
        "ds_dev": ["--zero", "2", "--misled-rank1", *STAGE1_DEV],
        "z2": ["--zero", "2", "--epochs", "3"],
        "gas": ["--zero", "1", "--accumulation", "2", "--epochs", "3"],
        "z3a": ["--zero", "3", "--epochs", "2", "--checkpoint-dir", str(tmp / "ckpt3")],
        "z2a": ["--zero", "2", "--epochs", "2", "--checkpoint-dir", str(tmp / "ckpt2")],
        "ds_sl": ["--zero", "2", "--epochs", "2", "--shortlist", "5"]})
    fits["latest"] = {zero: (tmp / f"ckpt{zero}" / "PlantClassifier" / "latest").read_text().strip()
                      for zero in ("3", "2")}
    from xplant.persistence._codec import STATE_FIELD, read_arrays
    # each checkpoint file, before the resumed fits replace them: is it the codec's state file?
    fits["files"] = {zero: {f.name: STATE_FIELD in read_arrays(f, torch=True, metadata=True)[1]
                            for f in (tmp / f"ckpt{zero}" / "PlantClassifier").rglob("*.pt")}
                     for zero in ("3", "2")}
    fits.update(_two_processes(tmp_path_factory.mktemp("ds_resume"), {
        f"z{zero}b": ["--zero", zero, "--epochs", "3", "--checkpoint-dir", str(tmp / f"ckpt{zero}"),
                      "--resume"] for zero in ("3", "2")}))
    return fits


@pytest.mark.parametrize("sampling", [{}, {"max_docs": 13}, {"min_docs": 40}])
@pytest.mark.parametrize("world,accumulation", [(2, 1), (3, 2)])
def test_ranks_share_every_global_batch_of_one_process(sampling, world, accumulation):
    """Over the ranks and micro-steps, each optimizer step holds exactly the batch that one
    process draws (with epoch sampling too), and the loss weights average to the batch mean."""
    from xplant.neural.batching import LengthBucketSampler
    from xplant.neural.distributed import DistributedBucketSampler
    lengths = np.random.default_rng(3).integers(1, 50, size=23)
    one = LengthBucketSampler(lengths, 6, generator=np.random.default_rng(7), **sampling)
    expected = list(one)
    ranks = [DistributedBucketSampler(lengths, 6, world, r, accumulation=accumulation,
                                      generator=np.random.default_rng(7), min_docs=sampling.get("min_docs"),
                                      max_docs=sampling.get("max_docs")) for r in range(world)]
    steps = [s.epoch_steps() for s in ranks]
    assert [len(s) for s in ranks] == [len(expected) * accumulation] * world
    assert len(steps[0]) == len(expected)
    for b, batch in enumerate(expected):
        sizes = {steps[r][b][0] for r in range(world)}
        assert sizes == {len(batch)}
        docs, mean = [], 0.0          # a per-document value: its length
        for r in range(world):
            for idx, w in steps[r][b][1]:
                docs += idx.tolist() if w else []
                mean += w * lengths[idx].mean() / (world * accumulation)
        assert sorted(docs) == sorted(batch)
        assert mean == pytest.approx(lengths[batch].mean())


def test_deepspeed_callbacks_put_rank0_record_before_the_decisions(tmp_path):
    """Rank 0's record before early stopping, DeepSpeed's checkpoint after it, in place of
    the xplant checkpoint (which cannot hold ZeRO's partitioned optimizer)."""
    from skorch.callbacks import EarlyStopping
    from xplant.neural import PlantClassifier
    from xplant.neural.training._checkpoint import TrainingCheckpoint
    from xplant.neural.distributed import DeepSpeedStrategy
    from xplant.neural.distributed._trainer import DeepSpeedCheckpoint, RankZeroRecord
    clf = PlantClassifier(checkpoint_dir=tmp_path / "own", verbose=0,
                          strategy=DeepSpeedStrategy(config={"checkpoint_dir": str(tmp_path / "ds")}))
    clf.dev_docs_ = [[1, 2]]                    # as inside fit: dev data, so early stopping
    names = [n for n, _ in clf.get_default_callbacks()]
    cbs = dict(clf.get_default_callbacks())
    assert names.index("dev_score") < names.index("rank0_record") < names.index("early_stopping") \
        < names.index("checkpoint")
    assert isinstance(cbs["rank0_record"], RankZeroRecord)
    assert isinstance(cbs["early_stopping"], EarlyStopping)
    assert type(cbs["checkpoint"]) is DeepSpeedCheckpoint
    assert cbs["checkpoint"].folder == tmp_path / "ds" / "PlantClassifier"
    skorch_names = [n for n, _ in clf.set_params(strategy="skorch").get_default_callbacks()]
    assert "rank0_record" not in skorch_names
    assert type(dict(clf.get_default_callbacks())["checkpoint"]) is TrainingCheckpoint
    clf.set_params(strategy="deepspeed")            # no checkpoint_dir in the config: none
    assert "checkpoint" not in dict(clf.get_default_callbacks())


def test_fit_deepspeed_names_where_the_former_keywords_went():
    from xplant.neural.distributed import fit_deepspeed
    with pytest.raises(TypeError, match=r"config, dev_dataset.*DeepSpeedStrategy"):
        fit_deepspeed(None, None, dev_dataset=None, config={})


def _assert_same_model(a, b):
    assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4, abs=1e-6)
    np.testing.assert_allclose(np.array(a["proba"]), np.array(b["proba"]), atol=1e-4)
    for k, v in a["params"].items():
        assert b["params"][k] == pytest.approx(v, rel=1e-4, abs=1e-4), k


@pytest.mark.slow
def test_zero2_two_processes_match_single_process(deepspeed_fits, reference):
    got = deepspeed_fits["z2"]
    assert got["world"] == 2
    # MIG computed once on rank 0 and broadcast: both ranks hold the same relevance
    assert len(set(got["relevance_fingerprints"])) == 1
    assert got["epochs"] == [1, 2, 3]
    # the loss decreases and the model is the single-process model
    assert got["train_loss"][-1] < got["train_loss"][0]
    _assert_same_model(reference, got)
    assert got["valid_score"] == pytest.approx(reference["valid_score"])
    # one pass over dev per epoch: the dev scoring's logits give valid_loss, as under skorch,
    # and the trainer's own loss pass never runs
    assert None not in got["valid_loss"]
    assert got["valid_loss"] == pytest.approx(reference["valid_loss"], rel=1e-4)
    assert got["dev_loss_passes"] == 0
    # gathered back into a plain module: prediction needs no DeepSpeed
    assert got["module_type"] == "PlantNet" and not got["param_has_ds"]


@pytest.mark.slow
def test_gradient_accumulation_steps_are_one_process_steps(deepspeed_fits, reference):
    """ZeRO-1 with 2 micro-steps on each of 2 ranks: every optimizer step is still one global
    batch of 8 (4 micro-batches of 2), recorded once, and the model is the one-process model."""
    got = deepspeed_fits["gas"]
    assert got["train_batch_count"] == reference["train_batch_count"] == [6, 6, 6]
    _assert_same_model(reference, got)
    assert got["valid_score"] == pytest.approx(reference["valid_score"])


@pytest.mark.slow
@pytest.mark.parametrize("zero", ["3", "2"])
def test_zero_resume_continues_the_loss_curve(deepspeed_fits, reference, zero):
    """Resume reads DeepSpeed's files, written and read by xplant's state codec (no pickle),
    ZeRO-2 and -3."""
    first, resumed = deepspeed_fits[f"z{zero}a"], deepspeed_fits[f"z{zero}b"]
    assert deepspeed_fits["latest"][zero] == "epoch_2"
    files = deepspeed_fits["files"][zero]      # the module's states and each rank's ZeRO shard
    assert len(files) >= 3 and sum("optim_states" in name for name in files) == 2
    assert all(files.values()), files         # each a safetensors state file: no pickle
    assert first["train_loss"] == pytest.approx(reference["train_loss"][:2], rel=1e-4)
    # epochs 1-2 come from the checkpoint's history, epoch 3 is trained anew
    assert resumed["epochs"] == [1, 2, 3]
    assert resumed["train_loss"][:2] == first["train_loss"]
    _assert_same_model(reference, resumed)
    assert not resumed["param_has_ds"]


@pytest.mark.slow
def test_train_launcher_writes_outputs_on_rank0(tmp_path):
    """``python -m xplant train --config`` on the bundled CodiEsp-P."""
    import json as _json
    cfg = {"dataset": {"loader": "codiesp", "codes": "P", "dev_split": None},
           "estimator": {"class": "PlantClassifier",
                         "params": {"backbone": "cnn", "plant": False, "embedding_dim": 8,
                                    "hidden_dim": 8, "attention_dim": 8, "pool_size": 8,
                                    "max_epochs": 1, "batch_size": 100, "max_length": 64,
                                    "hard_negatives": 20, "validation_fraction": 0.2,
                                    "verbose": 0}},
           "relevance": {"params": {"top_k": 5}},
           "deepspeed": {"zero_optimization": {"stage": 1}},
           "output_dir": str(tmp_path / "run")}
    (tmp_path / "cfg.json").write_text(_json.dumps(cfg))
    proc = subprocess.run([sys.executable, "-m", "xplant", "train", "--config",
                           str(tmp_path / "cfg.json")], env=_env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-6000:]
    out = tmp_path / "run"
    hist = _json.loads((out / "history.json").read_text())
    assert [h["epoch"] for h in hist] == [1] and np.isfinite(hist[0]["train_loss"])
    assert "valid_map" in hist[0]
    run = _json.loads((out / "run.json").read_text())
    assert run["world_size"] == 1 and run["n_train_documents"] == 500
    # saved in xplant's normal format: loads and predicts without DeepSpeed
    from xplant.datasets import load_codiesp
    from xplant.neural import load_model
    clf = load_model(out / "model")
    test = load_codiesp("test", codes="P")
    idx, scores = clf.predict_top_k(test.texts[:3], k=5)
    assert idx.shape == (3, 5) and np.all(np.diff(scores, axis=1) <= 0)
    assert clf.n_labels_ == test.n_space         # the codes of train and dev
    # stage1_weight="dev" (the default) trains each candidate in the one loop, with its own
    # DeepSpeed checkpoints
    assert clf.dev_choices_["stage1_weight"]["on_dev"]
    for w in ("0", "0.1"):
        folder = out / "checkpoints" / "PlantClassifier" / f"stage1_weight={w}"
        assert (folder / "latest").read_text().strip() == "epoch_1"


@pytest.mark.slow
def test_shortlisted_stage2_zero2_matches_single_process(tmp_path, deepspeed_fits):
    """Candidate batches train through get_loss in the DeepSpeed loop as in skorch's.

    It once aborted at process exit ("terminate called without an active
    exception"): the gloo process group's threads were left to the
    interpreter's exit. The worker now ends with ``shutdown_distributed``.
    """
    ref = _one_process(tmp_path, "ref_sl", "--epochs", "2", "--shortlist", "5")
    _assert_same_model(ref, deepspeed_fits["ds_sl"])


@pytest.mark.slow
def test_stage1_weight_dev_and_epoch_sampling_in_the_one_loop(tmp_path, deepspeed_fits):
    """stage1_weight="dev" and iterator_train__max_epoch_docs on two ZeRO-2 processes.

    Both run in skorch's loop as on one process: 24 of the 48 training documents
    per epoch (3 steps of 8), two Stage 2 candidates from the same start, the
    better on dev kept. The weight-0 candidate samples nothing per rank, so it
    is the single-process candidate to 1e-4. Rank 1 is misled (it computes
    1 - MAP for itself): every rank still decides on rank 0's record, so both
    ranks end with the same epochs, the same choice and the same model.
    """
    ref = _one_process(tmp_path, "ref_dev", *STAGE1_DEV)
    got = deepspeed_fits["ds_dev"]
    assert ref["train_batch_count"] == got["train_batch_count"] == [3] * len(got["epochs"])
    cands = got["stage1_weight_candidates"]
    assert [c["stage1_weight"] for c in cands] == [0.0, 0.1]
    assert cands[0]["dev_map"] == pytest.approx(ref["stage1_weight_candidates"][0]["dev_map"],
                                                rel=1e-4)
    assert cands[0]["best_epoch"] == ref["stage1_weight_candidates"][0]["best_epoch"]
    assert cands[0]["epochs"] == ref["stage1_weight_candidates"][0]["epochs"]
    # the choice is the better candidate's, recorded as every dev choice is
    best = max(cands, key=lambda c: c["dev_map"])          # ties keep the earlier
    choice = got["dev_choices"]["stage1_weight"]
    assert choice["value"] == got["stage1_weight_"] == best["stage1_weight"] and choice["on_dev"]
    assert choice["scores"] == [[c["stage1_weight"], c["dev_map"]] for c in cands]
    assert max(v for v in got["valid_score"] if v is not None) == pytest.approx(best["dev_map"])
    assert got["best_epoch"] == best["best_epoch"]
    # rank 1's own reversed scores never reached a decision: both ranks ended alike
    assert got["rank_views"][0] == got["rank_views"][1]


def test_the_train_job_saves_a_planter_through_the_runs_one_saver(tmp_path, make_corpus):
    """``xplant train --config`` with ``estimator.class: AttentionPlanter`` writes the planting
    through ``save_row`` (the run's saver): it loads back to the fitted state, no pickle."""
    import torch
    from xplant.app._rows import save_row
    from xplant.neural import AttentionPlanter, load_planting
    texts, Y = make_corpus(n_docs=24)
    p = AttentionPlanter(max_epochs=1, verbose=0, n_jobs=1, module__embedding_dim=16,
                         module__hidden_dim=16, module__attention_dim=16).fit(texts, Y)
    assert save_row(p, p, tmp_path / "model") == {"saved_to": str(tmp_path / "model")}
    state, meta = load_planting(tmp_path / "model")
    assert meta["n_labels"] == 6 and meta["attention_ndcg"] == p.attention_ndcg_
    for key, value in p.module_.state_dict().items():
        assert torch.equal(state[key], value)
    assert not any(f.suffix in (".pkl", ".joblib") for f in (tmp_path / "model").iterdir())
