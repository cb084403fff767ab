"""No code from a config, no path from a name, no half-written file, one folder per run."""

import json
import os
import pickle
import subprocess
import sys
import types
from pathlib import Path

import pytest

from xplant._files import atomic_open, check_path_name, remove_tree, replace_folder, write_text
from xplant._outputs import make_unique_folder

REPO = Path(__file__).resolve().parents[2]


class _Payload:
    """Unpickling this writes a marker file: the proof that data ran code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "pwned"))


def _evil(tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "x.joblib"
    path.write_bytes(pickle.dumps(_Payload(marker)))
    return path, marker


# -- data never runs code --------------------------------------------------------------------------

def test_config_relevance_path_never_unpickles(tmp_path):
    pytest.importorskip("torch")
    from xplant.neural.distributed import broadcast_from_rank0
    from xplant.neural.distributed._share import load_saved_relevance
    path, marker = _evil(tmp_path)
    with pytest.raises(ValueError, match="no pickle or joblib"):
        load_saved_relevance(str(path))
    with pytest.raises(ValueError, match="no pickle or joblib"):
        broadcast_from_rank0(path=path)
    assert not marker.exists()


def test_xplant_train_with_a_pickle_relevance_stops_before_loading_it(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from xplant.app.cli import main
    path, marker = _evil(tmp_path)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"loader": "codiesp", "codes": "D"},
                               "relevance": {"path": str(path)}, "output_dir": str(tmp_path / "o"),
                               "estimator": {"params": {"max_epochs": 1}}}))
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="no pickle or joblib"):
        main(["train", "--config", str(cfg)])
    assert not marker.exists()


def test_deepspeed_checkpoint_files_go_through_the_codec_and_unpickle_nothing(tmp_path):
    """DeepSpeed's checkpoint files are written and read by xplant's state codec: a file
    DeepSpeed's own torch.save wrote (a pickle, here with code in it) is refused unread, a
    file naming a class outside DeepSpeed's few state classes is refused, and an object of
    another class is refused before anything is written."""
    import collections
    import json
    torch = pytest.importorskip("torch")
    from safetensors import safe_open
    from xplant.neural.distributed._trainer import _checkpoints_through_the_codec
    from xplant.persistence._codec import STATE_FIELD, write_arrays
    engine = types.SimpleNamespace(checkpoint_engine=types.SimpleNamespace(load=None, save=None))
    _checkpoints_through_the_codec(engine)
    ckpt = engine.checkpoint_engine
    state = {"module": collections.OrderedDict(w=torch.arange(4.0).reshape(2, 2)), "epoch": 3,
             "optimizer": {"state": {0: {"step": torch.tensor(2.0)}}, "shapes": (torch.Size([2]),)},
             "lr": float("inf")}
    good = tmp_path / "good.pt"
    ckpt.save(state, str(good))
    with safe_open(str(good), framework="pt") as fh:         # a safetensors file, no pickle
        assert json.loads(fh.metadata()[STATE_FIELD])["dict"][1] == ["epoch", 3]
    back = ckpt.load(str(good), map_location="cpu")
    assert type(back["module"]) is collections.OrderedDict and back["epoch"] == 3
    assert torch.equal(back["module"]["w"], state["module"]["w"]) and back["lr"] == float("inf")
    assert back["optimizer"]["state"][0]["step"].item() == 2.0       # an int key stays an int
    assert back["optimizer"]["shapes"] == (torch.Size([2]),)
    marker = tmp_path / "marker"
    bad = tmp_path / "mp_rank_00_model_states.pt"
    torch.save({"module": {"w": torch.ones(2)}, "x": _Payload(marker)}, bad)
    with pytest.raises(ValueError, match="not a whole safetensors file"):
        ckpt.load(str(bad))
    forged = tmp_path / "forged.pt"
    write_arrays(forged, {"t0": torch.ones(1)}, metadata={STATE_FIELD: json.dumps(
        {"class": "Popen", "fields": {"dict": []}})})
    with pytest.raises(ValueError, match="names the class 'Popen'"):
        ckpt.load(str(forged))
    with pytest.raises(TypeError, match="cannot write a .*_Payload"):
        ckpt.save({"x": _Payload(marker)}, str(tmp_path / "never.pt"))
    assert not marker.exists() and not (tmp_path / "never.pt").exists()


# -- a name never becomes a path ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["..", ".", "", "  ", "a/b", "a\\b", "../x", "a\tb", "a\nb", "\x00"])
def test_path_names_refused(name):
    with pytest.raises(ValueError, match="cannot be part of a path"):
        check_path_name(name, "model row name")


def _run_folder(tmp_path):
    """A folder that already holds a run: checkpoints/, parts/, results."""
    run = tmp_path / "R"
    (run / "checkpoints" / "PLANT").mkdir(parents=True)
    (run / "parts").mkdir()
    (run / "parts" / "TF-IDF_LR.json").write_text("{}")
    (run / "results.json").write_text('{"models": []}')
    return run


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_run_with_model_dotdot_touches_nothing(tmp_path, capsys):
    from xplant.app.cli import main
    run = _run_folder(tmp_path)
    before = _files(run)
    for extra in ([], ["--resume"]):
        assert main(["run", "--output", str(run), "--models", "..", "--max-docs", "5",
                     *extra]) == 2
        assert _files(run) == before
        assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("specs, match", [
    ([{"name": "frequency prior"}, {"name": "..", "model": "frequency prior"}],
     "cannot be part of a path"),
    ([{"name": "+", "model": "frequency prior"}], "maps to the folder name ''"),
    (["plant=False", {"name": "plant-False", "model": "frequency prior"}],
     "would share the folder 'plant-False'"),
    (["no such model"], "unknown model"),
])
def test_run_models_checks_every_row_before_touching_the_disk(tmp_path, specs, match):
    from xplant.app import run_models
    run = _run_folder(tmp_path)
    before = _files(run)
    with pytest.raises(ValueError, match=match):
        run_models({"dataset": "codiesp", "max_docs": 5}, specs, run, resume=True, isolate=False,
                   verbose=0, log=lambda *a: None)
    assert _files(run) == before


def test_checkpoint_latest_cannot_point_outside(tmp_path):
    pytest.importorskip("torch")
    from xplant.neural.training._checkpoint import read_checkpoint
    ck = tmp_path / "ck"
    ck.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "state.json").write_text("{}")
    for bad in ("../elsewhere", "/etc", "ckpt-0001-abcdef12/../../elsewhere"):
        (ck / "latest").write_text(bad + "\n")
        with pytest.raises(ValueError, match="must name a checkpoint folder"):
            read_checkpoint(ck)


def test_remove_tree_is_contained(tmp_path):
    root = tmp_path / "run" / "checkpoints"
    (root / "m").mkdir(parents=True)
    (tmp_path / "run" / "keep").write_text("x")
    for outside in (root, root / "..", root / "m" / ".." / "..", tmp_path):
        with pytest.raises(ValueError, match="not inside"):
            remove_tree(outside, inside=root)
    assert (tmp_path / "run" / "keep").exists()
    (root / "link").symlink_to(tmp_path / "run")             # a link is removed, not followed
    remove_tree(root / "link", inside=root)
    assert (tmp_path / "run" / "keep").exists() and not (root / "link").exists()
    remove_tree(root / "m", inside=root)
    assert not (root / "m").exists()


# -- outputs never half-written, never the input ----------------------------------------------------

_FSIZE = r"""
import resource, sys
from xplant._files import write_text
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    write_text(sys.argv[1], "x" * 10000)
except OSError as exc:
    print("failed", exc.errno)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics of Linux")
def test_atomic_write_survives_a_full_disk(tmp_path):
    target = tmp_path / "results.json"
    target.write_text('{"old": true}')
    proc = subprocess.run([sys.executable, "-c", _FSIZE, str(target)], capture_output=True,
                          text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert "failed 27" in proc.stdout, proc.stderr
    assert target.read_text() == '{"old": true}'
    assert os.listdir(tmp_path) == ["results.json"]


def test_atomic_open_leaves_old_file_on_error(tmp_path):
    target = tmp_path / "a.npz"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_open(target, "wb") as fh:
            fh.write(b"new, half")
            raise RuntimeError("killed")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["a.npz"]
    assert write_text(target, "new").read_text() == "new"


def test_replace_folder_keeps_old_until_new_is_in_place(tmp_path, monkeypatch):
    old, new = tmp_path / "model", tmp_path / "model.new"
    old.mkdir()
    (old / "config.json").write_text("old")
    new.mkdir()
    (new / "config.json").write_text("new")
    real = os.replace
    calls = []

    def failing(src, dst):
        calls.append((Path(src).name, Path(dst).name))
        if Path(src) == new:
            raise OSError(28, "No space left on device")
        return real(src, dst)
    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError):
        replace_folder(new, old)
    monkeypatch.setattr(os, "replace", real)
    assert (old / "config.json").read_text() == "old"          # put back
    replace_folder(new, old)
    assert (old / "config.json").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_save_model_overwrite_keeps_the_old_model_on_failure(tiny_model, tmp_path, monkeypatch):
    path, clf = tiny_model
    import shutil
    target = tmp_path / "m"
    shutil.copytree(path, target)
    before = (target / "model.safetensors").read_bytes()
    import xplant.neural.classifier._io as io
    monkeypatch.setattr(io, "_json_params", lambda clf: 1 / 0)      # fail halfway through
    with pytest.raises(ZeroDivisionError):
        clf.save(target, overwrite=True)
    assert (target / "model.safetensors").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m"]


def test_run_output_inside_data_folder_refused(tmp_path):
    from xplant._outputs import prepare_run_folder
    data = tmp_path / "codiesp"
    data.mkdir()
    for out in (data, data / "runs" / "r1"):
        with pytest.raises(ValueError, match="inside the data folder"):
            prepare_run_folder(out, data=[data])
    assert _files(data) == []


# -- one folder per run --------------------------------------------------------------------------------

def test_two_runs_in_the_same_second_get_two_folders(tmp_path, monkeypatch):
    from xplant import _outputs
    a = make_unique_folder(tmp_path, "20261130T101500Z")
    b = make_unique_folder(tmp_path, "20261130T101500Z")
    assert a != b and a.is_dir() and b.is_dir() and b.name == "20261130T101500Z-2"
    monkeypatch.chdir(tmp_path)

    class Frozen(_outputs.datetime):
        @classmethod
        def now(cls, tz=None):
            return _outputs.datetime(2026, 11, 30, 10, 15, 0, tzinfo=tz)
    monkeypatch.setattr(_outputs, "datetime", Frozen)
    first, second = _outputs.prepare_run_folder(None), _outputs.prepare_run_folder(None)
    assert first != second
    assert {first.name, second.name} == {"20261130T101500Z", "20261130T101500Z-2"}
    assert first.parent.name == second.parent.name == "xplant-runs"


def test_named_run_folder_with_results_needs_resume(tmp_path):
    from xplant._outputs import prepare_run_folder
    run = _run_folder(tmp_path)
    with pytest.raises(FileExistsError, match="--resume"):
        prepare_run_folder(run)
    assert prepare_run_folder(run, resume=True) == run
