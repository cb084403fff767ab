"""``--labels CATALOGUE`` on the command line: the catalogue is an input like the data files.

It is used by the rows that rank a catalogue's codes (or refused by those
that cannot), checked before anything is fitted, hashed into the resume key
and recorded under ``inputs``; the messages name the command line's switches.
The toy corpus: labels A10 B20 C30 D40, two cue words each; 40 train, 12 dev
and 12 test notes; a catalogue of those four plus seven codes no training
note carries, each with a two-word name, in the documented label-file format.
"""

import gzip
import json

import numpy as np
import pytest

from xplant.app.cli import main

WORDS = {"A10": ("fever", "cough"), "B20": ("fracture", "femur"), "C30": ("rash", "itch"),
         "D40": ("chest", "pain")}
EXTRA = [("E50", "headache migraine"), ("E51", "vomiting nausea"), ("F60", "back pain lumbar"),
         ("G70", "dizziness vertigo"), ("H80", "ear infection otitis"),
         ("J90", "sore throat pharyngitis"), ("K11", "diarrhea gastroenteritis")]
PLANT = ["--models", "plant", "--description-encoder", "none", "--epochs", "1",
         "--plant-epochs", "1", "--no-isolate", "--quiet"]


def _docs(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        labels = [str(x) for x in rng.choice(list(WORDS), size=rng.integers(1, 3), replace=False)]
        words = [w for lab in labels for w in WORDS[lab]]
        words += [str(x) for x in rng.choice(["patient", "day", "the", "note", "seen"], 5)]
        out.append({"id": f"s{seed}-{i}", "text": " ".join(rng.permutation(words)),
                    "labels": labels})
    return out


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def _known():
    return [{"label": n, "description": " ".join(w)} for n, w in WORDS.items()]


def _catalogue(path, extra=EXTRA):
    return _write(path, _known() + [{"label": c, "description": d} for c, d in extra])


def _files(d, test=None):
    d.mkdir(exist_ok=True)
    return {"train": _write(d / "train.jsonl", _docs(40, 0)),
            "dev": _write(d / "dev.jsonl", _docs(12, 1)),
            "test": _write(d / "test.jsonl", _docs(12, 2) if test is None else test)}


def _data(files):
    return [a for s in ("train", "dev", "test") for a in (f"--{s}", str(files[s]))]


def _cli(args, capsys):
    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().err


def _with(code, name, every, rows):
    """Test notes: every ``every``-th one also states ``name`` and carries ``code``."""
    for i, r in enumerate(rows):
        if i % every == 0:
            r["text"] += " " + name
            r["labels"].append(code)
    return rows


# -- a catalogue promised is used, and recorded as what it is -------------------------------

def test_labels_without_label_descriptions_the_description_row_ranks_the_catalogue(tmp_path,
                                                                                   capsys):
    files = _files(tmp_path / "data", test=_with("E50", "headache migraine", 3, _docs(12, 2)))
    cat = _catalogue(tmp_path / "cat.jsonl")
    out = tmp_path / "run"
    assert _cli(["run", *_data(files), "--labels", cat, *PLANT, "--output", out],
                capsys) == (0, "")
    res = json.loads((out / "results.json").read_text())
    assert res["label_space"]["n_labels"] == 11 and res["label_space"]["catalogue"] == str(cat)
    ranked = {m["name"]: int(m["metrics"]["n_labels"]) for m in res["models"]}
    assert ranked["PLANT fused + descriptions"] == 11
    assert {n for n, v in ranked.items() if v == 4} == {"PLANT", "PLANT fused",
                                                         "PLANT fused, α=1"}
    row = next(m for m in res["models"] if m["name"] == "PLANT fused + descriptions")
    assert "descriptions_row" not in res["models"][0]
    assert row["label_space"]["n_open_labels"] == 11 and row["label_space"]["n_unseen"] == 7
    assert row["metrics"]["unseen_R@5"] == 1.0          # E50, stated by name, is found
    assert {s["label"] for rec in row["unseen_suggestions"] for s in rec["suggestions"][:1]} \
        >= {"E50"}


def test_the_descriptions_row_of_a_run_ranks_the_catalogue_too(tmp_path, capsys):
    """The descriptions row alone (no PLANT), over a --labels catalogue that is also its
    only description source, ranks the catalogue's labels too."""
    files = _files(tmp_path / "data", test=_with("E50", "headache migraine", 3, _docs(12, 2)))
    out = tmp_path / "run"
    assert _cli(["run", *_data(files), "--labels", _catalogue(tmp_path / "cat.jsonl"),
                 "--models", "descriptions", "--description-encoder", "none", "--no-isolate",
                 "--quiet", "--output", out], capsys) == (0, "")
    row = json.loads((out / "results.json").read_text())["models"][0]
    assert row["name"] == "descriptions" and int(row["metrics"]["n_labels"]) == 11
    assert row["label_space"]["n_open_labels"] == 11 and row["metrics"]["unseen_R@5"] == 1.0


def test_fit_descriptions_with_labels_saves_an_open_space_model(tmp_path, capsys):
    files = _files(tmp_path / "data")
    cat = _catalogue(tmp_path / "cat.jsonl")
    model = tmp_path / "model"
    assert _cli(["fit", "--model", "descriptions", "--train", files["train"], "--dev",
                 files["dev"], "--label-descriptions", cat, "--labels", cat, "--output", model,
                 "--quiet"], capsys) == (0, "")
    fit = json.loads((model / "fit.json").read_text())
    assert fit["label_space"]["name"] == "cat.jsonl" and fit["label_space"]["n_open_labels"] == 11
    new = _write(tmp_path / "new.jsonl",
                 [{"id": "n1", "text": "Severe headache and migraine since Monday."}])
    pred = tmp_path / "pred.jsonl"
    assert main(["predict", "--model", str(model), "--input", str(new), "--output", str(pred),
                 "--top-k", "20"]) == 0
    top = json.loads(pred.read_text().splitlines()[0])["top"]
    assert len(top) == 11 and top[0]["label"] == "E50"


@pytest.mark.parametrize("row", ["svm", "prior", "plant"])
def test_fit_refuses_labels_for_a_row_that_cannot_use_a_catalogue(row, tmp_path, capsys):
    files = _files(tmp_path / "data")
    model = tmp_path / "model"
    rc, err = _cli(["fit", "--model", row, *_data(files), "--labels",
                    _catalogue(tmp_path / "cat.jsonl"), "--output", model, "--quiet"], capsys)
    assert rc == 2 and f"the row {row!r}" in err and "cannot use a catalogue" in err
    assert "--model descriptions --labels" in err and not model.exists()


# -- the catalogue is an input: hashed into the resume key, recorded -----------------------

def test_resume_after_the_catalogue_changed_is_refused_naming_it(tmp_path, capsys):
    test = _with("E50", "headache migraine", 3, _docs(12, 2))
    test = _with("G70", "dizziness vertigo", 4, test)
    files = _files(tmp_path / "data", test=test)
    desc = _write(tmp_path / "desc.jsonl", _known())
    cat = _catalogue(tmp_path / "cat.jsonl", EXTRA[:3])
    out = tmp_path / "run"
    args = ["run", *_data(files), "--labels", cat, "--label-descriptions", desc, *PLANT,
            "--output", out]
    assert _cli(args, capsys) == (0, "")
    res = json.loads((out / "results.json").read_text())
    from xplant._files import sha256_file
    assert res["inputs"]["catalogue"] == {"catalogue": "cat.jsonl", "path": str(cat.resolve()),
                                          "sha256": sha256_file(cat),
                                          "bytes": cat.stat().st_size}
    _catalogue(cat, EXTRA[:3] + [("G70", "dizziness vertigo")])      # the user adds a code
    before = (out / "results.json").read_text()
    rc, err = _cli(args + ["--resume"], capsys)
    assert rc == 2
    assert f"the --labels catalogue {cat} (catalogue) changed since the run" in err
    assert (out / "results.json").read_text() == before


def test_a_named_catalogue_joins_the_key_by_its_package_version(tmp_path, monkeypatch):
    """CodiEsp's default catalogue (icd10cm) is keyed by its package's version, so that a
    resumed run refuses the parts fitted before a package upgrade."""
    import importlib.metadata as md
    from xplant.app._parts import _check_resume
    from xplant.app._sources import input_digests
    args = {"dataset": "codiesp", "codes": "D", "catalogue": "default"}
    old = input_digests(args)
    assert old == {"catalogue": f"simple-icd-10-cm {md.version('simple-icd-10-cm')}"}
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "PLANT.json").write_text(json.dumps({"key": {"inputs": old}}))
    real = md.version
    monkeypatch.setattr(md, "version", lambda p: "99.0" if p == "simple-icd-10-cm" else real(p))
    new = input_digests(args)
    assert new == {"catalogue": "simple-icd-10-cm 99.0"}
    with pytest.raises(ValueError, match=r"^the --labels catalogue icd10cm \(catalogue\) "
                                         r"changed since the run"):
        _check_resume(tmp_path, [({"name": "PLANT"}, "PLANT")], new, args)
    _check_resume(tmp_path, [({"name": "PLANT"}, "PLANT")], old, args)       # unchanged: goes on


# -- refused before anything is fitted ------------------------------------------------------

def test_a_catalogue_adding_no_code_is_refused_before_any_fit(tmp_path, capsys):
    files = _files(tmp_path / "data")
    labels = _write(tmp_path / "labels.jsonl", _known())
    out = tmp_path / "run"
    rc, err = _cli(["run", *_data(files), "--labels", labels, "--label-descriptions", labels,
                    "--models", "svm,plant", "--description-encoder", "none", "--epochs", "1",
                    "--plant-epochs", "1", "--no-isolate", "--output", out], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "label file labels.jsonl: the catalogue adds no code to the 4 known labels" in err
    assert not out.exists()


@pytest.mark.parametrize("label, message", [
    ("   ", "line 5: the label is blank"),
    ("G7\t0", r"line 5: the label 'G7\t0' holds control characters"),
    ("G7\u200b0", r"line 5: the label 'G7\u200b0' holds control characters"),   # format character
])
def test_a_catalogue_code_breaking_the_label_rule_stops_the_run_naming_file_and_line(
        label, message, tmp_path, capsys):
    files = _files(tmp_path / "data")
    cat = _write(tmp_path / "cat.jsonl", _known() + [
        {"label": label, "description": "dizziness vertigo"},
        {"label": "E50", "description": "headache migraine"}])
    out = tmp_path / "run"
    rc, err = _cli(["run", *_data(files), "--labels", cat, "--label-descriptions",
                    _write(tmp_path / "desc.jsonl", _known()), *PLANT, "--output", out], capsys)
    assert rc == 2 and f"{cat}, {message}" in err and not out.exists()


def test_all_splits_is_refused_for_a_users_files(tmp_path, capsys):
    test = _with("E50", "headache", 3, _docs(12, 2))
    files = _files(tmp_path / "data", test=test)
    out = tmp_path / "run"
    rc, err = _cli(["run", *_data(files), "--labels", "all-splits", "--models", "prior",
                    "--no-isolate", "--output", out], capsys)
    assert rc == 2 and not out.exists()
    assert err.startswith("xplant run: error: --labels all-splits is CodiEsp's closed space")
    assert "test split's labels" in err


def test_all_splits_is_refused_for_every_dataset_but_codiesp(tmp_path):
    """--labels all-splits is refused for an XC folder and a named dataset other than
    CodiEsp, from the command line and from the API's load_splits alike."""
    from xplant.app import load_splits
    from xplant.app._sources import data_args_from
    (tmp_path / "train.txt").write_text("1 2 2\n0 0:1.0\n1 1:1.0\n")
    for dataset in (f"xc:{tmp_path}", "mimic"):
        with pytest.raises(ValueError, match="--labels all-splits is CodiEsp's closed space"):
            data_args_from(dataset, data_home=tmp_path, catalogue="all-splits")
    with pytest.raises(ValueError, match="catalogue='all-splits' is CodiEsp's closed space"):
        load_splits("user", files={"train": "t.jsonl"}, catalogue="all-splits")
    assert data_args_from("CodiEsp", catalogue="all-splits")["catalogue"] == "all-splits"


# -- messages name the command line's switches ----------------------------------------------

def test_labels_eurovoc_reads_the_data_home_of_a_users_files(tmp_path, capsys):
    from xplant._files import sha256_file
    files = _files(tmp_path / "data")
    home = tmp_path / "eurlex"
    home.mkdir()
    (home / "EURLEX57K.json").write_text(json.dumps({
        "100": {"label": "headache", "alt_labels": ["migraine"], "parents": []},
        "200": {"label": "vertigo", "alt_labels": [], "parents": ["100"]}}))
    out = tmp_path / "run"
    with pytest.warns(UserWarning, match=r"--labels eurovoc: no row of --models ranks a "
                                         r"catalogue's codes \(prior rank"):
        assert _cli(["run", *_data(files), "--labels", "eurovoc", "--data-home", home,
                     "--models", "prior", "--no-isolate", "--quiet", "--output", out],
                    capsys) == (0, "")
    res = json.loads((out / "results.json").read_text())
    assert res["label_space"]["catalogue"] == "eurovoc" and res["label_space"]["n_labels"] == 6
    assert res["inputs"]["catalogue"]["sha256"] == sha256_file(home / "EURLEX57K.json")


@pytest.mark.parametrize("home", [None, "empty"])
def test_labels_eurovoc_without_its_file_names_data_home(home, tmp_path, capsys):
    files = _files(tmp_path / "data")
    (tmp_path / "empty").mkdir()
    extra = [] if home is None else ["--data-home", tmp_path / home]
    rc, err = _cli(["run", *_data(files), "--labels", "eurovoc", *extra, "--models", "prior",
                    "--no-isolate", "--output", tmp_path / "run"], capsys)
    assert rc == 2 and "--labels eurovoc reads EURLEX57K.json from --data-home DIR" in err
    assert "data_home=" not in err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("split", ["train", "test"])
def test_a_damaged_gzip_input_exits_2_with_one_line_naming_it(split, tmp_path, capsys):
    files = _files(tmp_path / "data")
    raw = files[split].read_bytes()
    gz = tmp_path / "data" / f"{split}.jsonl.gz"
    if split == "train":                       # cut in half: an interrupted download
        data = gzip.compress(raw)
        gz.write_bytes(data[: len(data) // 2])
    else:                                      # a plain JSONL file named .gz
        gz.write_bytes(raw)
    files[split] = gz
    rc, err = _cli(["run", *_data(files), "--models", "prior", "--no-isolate", "--output",
                    tmp_path / "run"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"xplant run: error: {gz}: ")


def test_the_data_describe_their_labels_and_the_catalogue_the_others(tmp_path):
    """--label-descriptions describes some labels; the --labels catalogue describes the
    rest, and the data's own description wins where both have one."""
    from xplant.app import load_splits
    from xplant.app._sources import data_args_from
    files = _files(tmp_path / "data")
    desc = _write(tmp_path / "desc.jsonl", [{"label": "A10", "description": "pyrexia"}])
    cat = _write(tmp_path / "cat.jsonl", _known()[:3] + [
        {"label": "E50", "description": "headache", "parents": ["E"]}])
    tr = load_splits(**data_args_from(train=files["train"], dev=files["dev"],
                                      test=files["test"], label_descriptions=desc,
                                      catalogue=cat))["train"]
    # A10 keeps the data's description; B20, C30 take the catalogue's; D40 (not catalogued)
    # keeps none
    assert tr.label_names.tolist() == ["A10", "B20", "C30", "D40"]
    assert tr.label_descriptions.tolist() == ["pyrexia", "fracture femur", "rash itch", ""]
    assert tr.catalogue.label_names.tolist() == ["A10", "B20", "C30", "E50"]
