"""Output folders: they follow the umask, and never hold the inputs they would replace."""

import json
import os
import shutil
import stat

import numpy as np
import pytest

from xplant._outputs import check_holds_no_input, check_model_output, prepare_run_folder

WORDS = {"A10": ("fever", "cough"), "B20": ("fracture", "femur"), "C30": ("rash", "itch"),
         "D40": ("chest", "pain")}


def notes(path, n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        labels = [str(x) for x in rng.choice(list(WORDS), size=rng.integers(1, 3), replace=False)]
        words = [w for lab in labels for w in WORDS[lab]] + ["patient", "seen"]
        rows.append({"id": f"s{seed}-{i}", "text": " ".join(rng.permutation(words)),
                     "labels": labels})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


# ------------------------------------------------------------------------------ the umask
@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_a_fitted_model_folder_follows_the_umask(tmp_path, umask, mask):
    from xplant.app.cli import main
    umask(mask)
    train = notes(tmp_path / "train.jsonl", 40, 0)
    assert main(["fit", "--model", "prior", "--train", str(train), "--output",
                 str(tmp_path / "model"), "--quiet"]) == 0
    assert mode(tmp_path / "model") == 0o777 & ~mask            # 0755 / 0700, never 0700 alone
    for f in (tmp_path / "model").iterdir():                     # arrays.safetensors included
        assert mode(f) == 0o666 & ~mask, f.name


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_cache_entries_and_checkpoints_follow_the_umask(tmp_path, umask, mask):
    from xplant._cache import write_entry
    from xplant.persistence._codec import atomic_folder
    umask(mask)
    entry = write_entry(tmp_path / "cache" / "embeddings" / "e.safetensors",
                        {"embeddings": np.zeros((2, 2), np.float16)})
    assert (mode(entry), mode(entry.parent)) == (0o666 & ~mask, 0o777 & ~mask)
    with atomic_folder(tmp_path / "m") as tmp:                   # every saver writes through it
        from safetensors.numpy import save_file
        save_file({"w": np.zeros(2)}, str(tmp / "w.safetensors"))
        (tmp / "sub").mkdir(mode=0o700)
    assert [mode(p) for p in (tmp_path / "m", tmp_path / "m" / "w.safetensors",
                              tmp_path / "m" / "sub")] == \
        [0o777 & ~mask, 0o666 & ~mask, 0o777 & ~mask]


def test_a_training_checkpoint_follows_the_umask(tmp_path, umask):
    pytest.importorskip("torch")
    from xplant.neural.training._checkpoint import write_checkpoint
    umask(0o022)
    from xplant.neural import PlantClassifier
    clf = PlantClassifier(module__embedding_dim=8, module__hidden_dim=8, module__attention_dim=8,
                          module__pool_size=8, batch_size=8, verbose=0, n_jobs=1, max_epochs=1,
                          module__max_length=32, planter=None)
    texts = [" ".join(WORDS[k]) for k in WORDS] * 3
    clf.fit(texts, [[k] for k in WORDS] * 3)
    ckpt = write_checkpoint(clf, tmp_path / "checkpoints")
    assert mode(ckpt) == 0o755
    assert {mode(p) for p in ckpt.iterdir()} == {0o644}


# -------------------------------------------------------------- --overwrite and the inputs
def test_fit_overwrite_refuses_a_model_folder_that_holds_its_inputs(tmp_path):
    from xplant.app.cli import main
    train = notes(tmp_path / "train.jsonl", 40, 0)
    model = tmp_path / "model"
    assert main(["fit", "--model", "prior", "--train", str(train), "--output", str(model),
                 "--quiet"]) == 0
    shutil.copy(train, model / "train.jsonl")                     # the user keeps them together
    (model / "labels.jsonl").write_text("".join(
        json.dumps({"label": k, "description": " ".join(v)}) + "\n" for k, v in WORDS.items()))
    before = sorted(os.listdir(model))
    assert main(["fit", "--model", "prior", "--train", str(model / "train.jsonl"),
                 "--label-descriptions", str(model / "labels.jsonl"), "--output", str(model),
                 "--overwrite", "--quiet"]) == 2
    assert sorted(os.listdir(model)) == before                    # nothing removed


def test_run_overwrite_and_resume_refuse_a_run_folder_that_holds_its_inputs(tmp_path, capsys):
    from xplant.app.cli import main
    files = {s: notes(tmp_path / f"{s}.jsonl", n, seed)
             for s, n, seed in (("train", 40, 0), ("dev", 12, 1), ("test", 12, 2))}
    run = tmp_path / "run"
    args = ["--models", "prior", "--no-isolate", "--quiet", "--output", str(run)]
    assert main(["run", *sum([[f"--{s}", str(p)] for s, p in files.items()], []), *args]) == 0
    for p in files.values():
        shutil.copy(p, run / "models")
    # the known labels and one code more (a catalogue that adds no code is refused first)
    (run / "parts" / "cat.jsonl").write_text("".join(
        json.dumps({"label": k, "description": " ".join(v)}) + "\n" for k, v in
        [*WORDS.items(), ("E50", ("headache", "migraine"))]))
    inside = sum([[f"--{s}", str(run / "models" / f"{s}.jsonl")] for s in files], [])
    before = sorted(os.listdir(run))
    for how in ("--overwrite", "--resume"):
        assert main(["run", *inside, "--labels", str(run / "parts" / "cat.jsonl"), *args,
                     how]) == 2
        assert "holds the input" in capsys.readouterr().err
        assert sorted(os.listdir(run)) == before and (run / "models" / "train.jsonl").is_file()


def test_an_input_reached_through_a_link_or_dotdot_is_found(tmp_path):
    run = tmp_path / "run"
    (run / "models").mkdir(parents=True)
    data = run / "models" / "train.jsonl"
    data.write_text("{}\n")
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "train.jsonl"
    link.symlink_to(data)                                         # the input, through a link
    with pytest.raises(ValueError, match="holds the input"):
        check_holds_no_input(run, [link])
    with pytest.raises(ValueError, match="holds the input"):      # the output, through a link
        (tmp_path / "run-link").symlink_to(run)
        check_holds_no_input(tmp_path / "run-link", [data])
    with pytest.raises(ValueError, match="holds the input"):      # .. folded
        check_holds_no_input(tmp_path / "elsewhere" / ".." / "run", [data])
    (run / "results.json").write_text("{}")
    with pytest.raises(ValueError, match="holds the input"):
        prepare_run_folder(run, data=[link], resume=True)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "t.jsonl").write_text("{}\n")
    with pytest.raises(ValueError, match="model folder .* holds the input"):
        check_model_output(model, data=[tmp_path / "x" / ".." / "model" / "t.jsonl"],
                           overwrite=True)
    check_holds_no_input(run, [tmp_path / "elsewhere"])           # a sibling is fine
