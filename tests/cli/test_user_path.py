"""A new user's own files on the command line: readers, outputs, resume, splits, errors.

Each test drives the ``xplant`` commands as a user would, on a toy corpus:
labels A10 B20 C30 D40, each with two cue words; 40 train, 10 dev and 10 test
notes. Only the cheap rows run (the frequency prior, the SVM), in this process.
"""

import json
import shutil

import numpy as np
import pytest

from xplant.app.cli import main
from xplant.datasets import read_labelled_texts

CUES = {"A10": ("fever", "cough"), "B20": ("fracture", "femur"), "C30": ("rash", "itch"),
        "D40": ("chest", "pain")}
FILLER = ("patient", "seen", "today", "the", "note", "day")
FAST = ["--no-isolate", "--quiet"]


def _notes(n, seed):
    rng = np.random.default_rng(seed)
    names = list(CUES)
    out = []
    for i in range(n):
        labels = [names[i % 4]] + ([names[(i + 1) % 4]] if i % 3 == 0 else [])
        words = [w for lab in labels for w in CUES[lab]] + list(rng.choice(FILLER, 4))
        out.append({"id": f"s{seed}-{i}", "text": " ".join(rng.permutation(words)),
                    "labels": labels})
    return out


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    return {"train": _write(d / "train.jsonl", _notes(40, 0)),
            "dev": _write(d / "dev.jsonl", _notes(10, 1)),
            "test": _write(d / "test.jsonl", _notes(10, 2))}


def _data(corpus):
    return ["--train", str(corpus["train"]), "--dev", str(corpus["dev"]),
            "--test", str(corpus["test"])]


def _cli(args, capsys):
    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().err


@pytest.fixture
def svm_model(corpus, tmp_path, capsys):
    out = tmp_path / "svm"
    assert _cli(["fit", "--model", "svm", *_data(corpus), "--output", out, "--quiet"],
                capsys) == (0, "")
    return out


# -- resume with changed data ---------------------------------------------------------------

def test_resume_with_changed_data_refuses_naming_the_file(corpus, tmp_path, capsys):
    run = tmp_path / "R"
    assert _cli(["run", *_data(corpus), "--models", "prior", "--output", run, *FAST],
                capsys)[0] == 0
    _write(corpus["train"], [{**r, "labels": ["C30"]} for r in _notes(40, 0)])
    rc, err = _cli(["run", *_data(corpus), "--models", "prior", "--output", run, "--resume",
                    *FAST], capsys)
    assert rc == 2
    assert f"{corpus['train']} (train) changed since the run" in err and "--overwrite" in err
    # the old row and model are untouched by the refusal; --overwrite refits on the new file
    assert _cli(["run", *_data(corpus), "--models", "prior", "--output", run, "--overwrite",
                 *FAST], capsys)[0] == 0
    from xplant import load_saved
    prior, _ = load_saved(run / "models" / "frequency_prior")
    np.testing.assert_array_equal(prior.label_frequency_, [0, 0, 40, 0])
    saved = json.loads((run / "results.json").read_text())
    from xplant._files import sha256_file
    assert saved["inputs"]["train"]["sha256"] == sha256_file(corpus["train"])


def test_resume_with_the_same_data_reuses_the_part(corpus, tmp_path, capsys, monkeypatch):
    run = tmp_path / "R"
    assert _cli(["run", *_data(corpus), "--models", "prior", "--output", run, *FAST],
                capsys)[0] == 0
    import xplant.app._run as run_mod
    monkeypatch.setattr(run_mod, "_fit_one", lambda *a, **k: pytest.fail("refitted"))
    corpus["train"].touch()                      # a new mtime, the same bytes
    assert _cli(["run", *_data(corpus), "--models", "prior", "--output", run, "--resume",
                 *FAST], capsys)[0] == 0


# -- one output rule: existing files, inputs and run folders are kept ---------------------------

def _predict(model, inp, out, *extra):
    return ["predict", "--model", model, "--input", inp, "--output", out, *extra]


def _evaluate(model, inp, out, *extra):
    return ["evaluate", "--model", model, "--input", inp, "--output", out, "--quiet", *extra]


@pytest.mark.parametrize("command", [_predict, _evaluate])
def test_predict_and_evaluate_keep_existing_files_and_inputs(command, corpus, svm_model,
                                                              tmp_path, capsys):
    before = corpus["train"].read_bytes()
    rc, err = _cli(command(svm_model, corpus["test"], corpus["train"]), capsys)
    assert rc == 2 and "exists; pass --overwrite" in err
    assert corpus["train"].read_bytes() == before
    rc, err = _cli(command(svm_model, corpus["test"], corpus["test"], "--overwrite"), capsys)
    assert rc == 2 and "is the input" in err
    rc, err = _cli(command(svm_model, corpus["test"], svm_model / "out.json", "--overwrite"),
                   capsys)
    assert rc == 2 and "lies inside the input folder" in err
    old = tmp_path / "old.json"
    old.write_text("old")
    assert _cli(command(svm_model, corpus["test"], old, "--overwrite"), capsys)[0] == 0
    assert old.read_text() != "old"


def test_evaluate_keeps_a_runs_results_and_checks_the_output_before_reading(corpus, svm_model,
                                                                        tmp_path, capsys):
    run = tmp_path / "R"
    assert _cli(["run", *_data(corpus), "--models", "prior", "--output", run, *FAST],
                capsys)[0] == 0
    before = (run / "results.json").read_bytes()
    rc, err = _cli(_evaluate(svm_model, corpus["test"], run / "results.json"), capsys)
    assert rc == 2 and "results.json exists; pass --overwrite" in err
    assert (run / "results.json").read_bytes() == before
    # the output is checked before the model is loaded: a missing model is not reached
    rc, err = _cli(_evaluate(tmp_path / "no-model", corpus["test"], corpus["dev"]), capsys)
    assert rc == 2 and "exists; pass --overwrite" in err


def _crash_after_saving(run, corpus, capsys):
    """A run whose SVM row was saved, then the process died before its part was written."""
    assert _cli(["run", *_data(corpus), "--models", "prior,svm", "--output", run, *FAST],
                capsys)[0] == 0
    for f in ("results.json", "per_label.npz", "parts/TF-IDF_SVM.json", "parts/TF-IDF_SVM.npz"):
        (run / f).unlink()
    assert (run / "models" / "TF-IDF_SVM" / "config.json").is_file()


def test_a_crashed_run_folder_is_refused_then_resumed_or_started_afresh(corpus, tmp_path, capsys,
                                                                monkeypatch):
    run = tmp_path / "R"
    _crash_after_saving(run, corpus, capsys)
    rc, err = _cli(["run", *_data(corpus), "--models", "prior,svm", "--output", run, *FAST],
                   capsys)
    assert rc == 2 and "holds an interrupted run" in err and "--resume" in err
    assert "overwrite=True" not in err
    import xplant.app._run as run_mod
    fitted = []
    real = run_mod._fit_one
    monkeypatch.setattr(run_mod, "_fit_one",
                        lambda spec, *a, **k: fitted.append(spec["name"]) or real(spec, *a, **k))
    rc, err = _cli(["run", *_data(corpus), "--models", "prior,svm", "--output", run, "--resume",
                    *FAST], capsys)
    assert (rc, err) == (0, "") and fitted == ["TF-IDF + SVM"]   # its own models/ replaced
    assert [m["name"] for m in json.loads((run / "results.json").read_text())["models"]] == \
        ["frequency prior", "TF-IDF + SVM"]
    _crash_after_saving(tmp_path / "R2", corpus, capsys)
    assert _cli(["run", *_data(corpus), "--models", "prior,svm", "--output", tmp_path / "R2",
                 "--overwrite", *FAST], capsys) == (0, "")


def test_a_folder_the_run_did_not_write_is_never_replaced(corpus, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("x")
    for flag in ([], ["--resume"], ["--overwrite"]):
        rc, err = _cli(["run", *_data(corpus), "--models", "prior", "--output", mine, *flag,
                        *FAST], capsys)
        assert rc == 2 and "holds no run" in err
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    run = tmp_path / "R"
    _crash_after_saving(run, corpus, capsys)
    stray = run / "models" / "TF-IDF_SVM"
    shutil.rmtree(stray)
    stray.mkdir()
    (stray / "notes.txt").write_text("mine")
    rc, err = _cli(["run", *_data(corpus), "--models", "prior,svm", "--output", run, "--resume",
                    *FAST], capsys)
    assert rc == 2 and "not a saved xplant model" in err
    assert (stray / "notes.txt").read_text() == "mine"


# -- TSV rows with fewer cells than the header ---------------------------------------------------

@pytest.mark.parametrize("body, line, cells", [
    ('n1\t"Fever since Monday.\nDry cough."\tR50.9|R05\nn2\tSore throat\tJ02.9\n', 2, 2),
    ("n1\tFever since Monday\tR50.9\nn2 Sore throat and cough R50.9|R05\n", 3, 1),
])
def test_tsv_short_rows_name_file_and_line(tmp_path, capsys, body, line, cells):
    p = tmp_path / "notes.tsv"
    p.write_text("id\ttext\tlabels\n" + body, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"notes.tsv, line {line}: {cells} tab-separated "
                                         r"cell\(s\) but the header has 3"):
        read_labelled_texts({"train": p})
    rc, err = _cli(["fit", "--model", "prior", "--train", p, "--output", tmp_path / "m"], capsys)
    assert rc == 2 and f"notes.tsv, line {line}:" in err and not (tmp_path / "m").exists()


# -- predict reads as fit reads ----------------------------------------------------------------

@pytest.mark.parametrize("text", [["Fever since Monday.", "Dry cough."], {"body": "fever"}, 0,
                                  False])
def test_predict_and_the_training_reader_refuse_a_text_that_is_not_a_string(text, tmp_path,
                                                                            svm_model, capsys):
    p = _write(tmp_path / "new.jsonl", [{"id": "a", "text": "fever"}, {"id": "b", "text": text}])
    out = tmp_path / "pred.jsonl"
    rc, err = _cli(_predict(svm_model, p, out), capsys)
    assert rc == 2 and "new.jsonl, line 2: the text field 'text' must be a string" in err
    assert not out.exists()
    # the training reader refuses the same line with the same message
    _write(p, [{"text": "fever", "labels": ["A10"]}, {"text": text, "labels": ["A10"]}])
    with pytest.raises(ValueError, match="new.jsonl, line 2: the text field 'text' must be a "
                                         "string"):
        read_labelled_texts({"train": p})


@pytest.mark.parametrize("name", ["notes.JSONL", "notes.ndjson", "notes.jsonl.gz", "notes.TSV"])
def test_predict_takes_the_fields_and_extensions_of_fit(name, tmp_path, corpus, capsys):
    rows = [{"key": r["id"], "note": r["text"], "labels": r["labels"]} for r in _notes(40, 0)]
    train = _write(tmp_path / "train.jsonl", rows)
    model = tmp_path / "svm"
    assert _cli(["fit", "--model", "svm", "--train", train, "--text-field", "note",
                 "--output", model, "--quiet"], capsys) == (0, "")
    p = tmp_path / name
    if name.endswith(".TSV"):
        p.write_text("key\tnote\n" + "".join(f"{r['key']}\t{r['note']}\n" for r in rows[:3]),
                     encoding="utf-8")
    elif name.endswith(".gz"):
        import gzip
        p.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows[:3]).encode()))
    else:
        _write(p, rows[:3])
    out = tmp_path / "pred.jsonl"
    rc, err = _cli(_predict(model, p, out), capsys)
    assert rc == 2 and "no field 'text'" in err and "--text-field" in err
    assert _cli(_predict(model, p, out, "--text-field", "note", "--id-field", "key"),
                capsys)[0] == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in got] == ["s0-0", "s0-1", "s0-2"]
    assert [r["top"][0]["label"] for r in got] == [rows[i]["labels"][0] for i in range(3)]


# -- a folder of .txt files ---------------------------------------------------------------------

def test_predict_folder_reads_txt_in_any_case_and_drops_the_bom(tmp_path, svm_model,
                                                                       capsys):
    from xplant.app._predict import read_documents
    d = tmp_path / "notes"
    d.mkdir()
    (d / "n1.txt").write_text("fever and cough", encoding="utf-8")
    (d / "N2.TXT").write_text("fracture of the femur", encoding="utf-8")
    (d / "n3.Txt").write_text("rash and itch", encoding="utf-8")
    (d / "n4.txt").write_bytes("\ufeffchest pain".encode("utf-8"))
    assert read_documents(d) == (["N2", "n1", "n3", "n4"], ["fracture of the femur",
                                                            "fever and cough", "rash and itch",
                                                            "chest pain"])
    out = tmp_path / "pred.jsonl"
    assert _cli(_predict(svm_model, d, out), capsys)[0] == 0
    got = {r["id"]: r["top"][0]["label"] for r in map(json.loads, out.read_text().splitlines())}
    assert got == {"N2": "B20", "n1": "A10", "n3": "C30", "n4": "D40"}
    (d / "README.md").write_text("not a note")
    with pytest.warns(UserWarning, match="1 file.* skipped, not .txt: README.md"):
        read_documents(d)


# -- text that cannot be stored, bytes that are not UTF-8 -----------------------------------------

@pytest.mark.parametrize("field", ["text", "id", "labels"])
def test_a_lone_surrogate_in_training_data_is_refused_at_reading(field, corpus, tmp_path, capsys):
    rows = _notes(40, 0)
    rows[6] = {**rows[6], field: "half \ud83d emoji" if field != "labels" else ["A\ud83d"]}
    lines = [json.dumps(r) for r in rows]            # ensure_ascii: the escape \ud83d
    corpus["train"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = tmp_path / "R"
    rc, err = _cli(["run", *_data(corpus), "--models", "prior", "--output", run, "--id-field",
                    "id", *FAST], capsys)
    assert rc == 2 and f"train.jsonl, line 7: the field {field!r} holds a lone UTF-16 " \
                       "surrogate" in err
    assert not run.exists()


def test_predict_refuses_a_lone_surrogate_before_scoring(tmp_path, svm_model, capsys):
    p = tmp_path / "new.jsonl"
    p.write_text('{"text": "fever"}\n{"text": "cough \\ud83d"}\n', encoding="utf-8")
    rc, err = _cli(_predict(svm_model, p, tmp_path / "pred.jsonl"), capsys)
    assert rc == 2 and "new.jsonl, line 2: the field 'text' holds a lone UTF-16 surrogate" in err


def test_undecodable_bytes_name_file_line_and_fix(corpus, tmp_path, svm_model, capsys):
    lines = corpus["dev"].read_bytes().splitlines(keepends=True)
    lines[2] = '{"text": "fièvre", "labels": ["A10"]}\n'.encode("cp1252")
    corpus["dev"].write_bytes(b"".join(lines))
    rc, err = _cli(["run", *_data(corpus), "--models", "prior", "--output", tmp_path / "R",
                    *FAST], capsys)
    assert rc == 2
    assert "dev.jsonl, line 3, character 13: the byte 0xe8 is not UTF-8" in err
    assert "save it as UTF-8" in err
    d = tmp_path / "notes"
    d.mkdir()
    (d / "a.txt").write_text("fever", encoding="utf-8")
    (d / "b.txt").write_bytes("chest pain\nfièvre\n".encode("cp1252"))
    rc, err = _cli(_predict(svm_model, d, tmp_path / "pred.jsonl"), capsys)
    assert rc == 2 and "b.txt, line 2, character 3: the byte 0xe8 is not UTF-8" in err


# -- splits checked before anything is fitted ----------------------------------------------------

@pytest.mark.parametrize("split", ["dev", "test"])
def test_a_split_without_labels_is_refused_before_fitting(split, corpus, tmp_path,
                                                                 capsys):
    _write(corpus[split], [{**r, "labels": []} for r in _notes(10, 1)])
    run = tmp_path / "R"
    rc, err = _cli(["run", *_data(corpus), "--models", "prior", "--output", run, *FAST], capsys)
    assert rc == 2 and f"{split}.jsonl: none of the 10 {split} documents" in err
    assert not run.exists()


def test_evaluate_on_a_file_without_labels_is_refused_pointing_to_predict(corpus, svm_model,
                                                                           tmp_path, capsys):
    _write(corpus["test"], [{**r, "labels": []} for r in _notes(10, 2)])
    rc, err = _cli(["evaluate", "--model", svm_model, "--input", corpus["test"], "--quiet"],
                   capsys)
    assert rc == 2 and "test.jsonl: none of the 10 test documents" in err
    assert "xplant predict" in err


# -- rows the data cannot run; messages in the command line's words ------------------------------

def test_tiny_training_data_one_message_before_fitting(corpus, tmp_path, capsys):
    _write(corpus["train"], _notes(3, 0))
    out = tmp_path / "svm"
    rc, err = _cli(["fit", "--model", "svm", "--train", corpus["train"], "--output", out],
                   capsys)
    assert rc == 2
    assert f"{corpus['train']}: 2 training document(s)" in err and "svm needs 10" in err
    assert not out.exists()
    _write(corpus["train"], _notes(1, 0))
    run = tmp_path / "R"
    rc, err = _cli(["run", *_data(corpus), "--models", "prior,svm,lr", "--output", run, *FAST],
                   capsys)
    assert rc == 2 and "1 training document(s)" in err
    assert "svm needs 10, lr needs 10" in err and "prior needs" not in err
    assert not run.exists()                          # nothing fitted, nothing saved


def test_messages_name_command_line_switches_not_python_parameters(corpus, tmp_path, capsys):
    rc, err = _cli(["fit", "--model", "descriptions", "--train", corpus["train"], "--output",
                    tmp_path / "m"], capsys)
    assert rc == 2 and "--label-descriptions FILE" in err and "label_descriptions" not in err
    desc = _write(tmp_path / "labels.JSONL", [{"label": lab, "description": " ".join(words)}
                                              for lab, words in CUES.items()])
    assert _cli(["fit", "--model", "descriptions", "--train", corpus["train"], "--output",
                 tmp_path / "m", "--label-descriptions", desc, "--quiet"], capsys) == (0, "")
    notes = _write(tmp_path / "new.jsonl", [{"id": lab, "text": f"{a} and {b} today"}
                                            for lab, (a, b) in CUES.items()])
    assert _cli(_predict(tmp_path / "m", notes, tmp_path / "p.jsonl"), capsys)[0] == 0
    got = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [(r["id"], r["top"][0]["label"]) for r in got] == [(lab, lab) for lab in CUES]
    csv = tmp_path / "notes.csv"
    csv.write_text("text,labels\nfever,A10\n")
    rc, err = _cli(["run", "--train", csv, "--output", tmp_path / "R", *FAST], capsys)
    assert rc == 2 and "name the file .jsonl" in err and "format=" not in err


# -- also: the time estimate ---------------------------------------------------------------------

def test_no_time_estimate_from_another_corpus(corpus, tmp_path, monkeypatch):
    pytest.importorskip("torch")                    # the PLANT row is built, never fitted
    from xplant.app import _job
    from xplant.app._sources import data_args_from

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr("xplant.app._run.run_models", stop)
    lines = []
    with pytest.raises(Stop):
        _job.run_job(tmp_path / "r", data_args_from(train=corpus["train"], dev=corpus["dev"]),
                     models=["prior", "plant"], epochs=3, plant_epochs=2, log=lines.append)
    tokens = sum(len(r["text"].split()) for r in _notes(40, 0))       # 6 or 8 words each
    assert any(f"up to 2 Stage 1 + 3 Stage 2 epochs over {tokens:,} training tokens" in line
               for line in lines), lines
    assert not any("estimated time" in line or "hours" in line for line in lines)


def test_report_to_another_folder_follows_the_output_rule(corpus, tmp_path, capsys):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    run = tmp_path / "R"
    assert _cli(["run", *_data(corpus), "--models", "prior", "--output", run, *FAST],
                capsys)[0] == 0
    for _ in range(2):                                # the run's own report is rewritten
        assert main(["report", str(run)]) == 0
    out = tmp_path / "shared"
    out.mkdir()
    (out / "report.html").write_text("a colleague's report")
    rc, err = _cli(["report", run, "--out", out], capsys)
    assert rc == 2 and "report.html exists; pass --overwrite" in err
    assert (out / "report.html").read_text() == "a colleague's report"
    assert main(["report", str(run), "--out", str(out), "--overwrite"]) == 0
    assert "<html" in (out / "report.html").read_text()


def test_a_crashed_plant_run_resumes_over_its_saved_model(corpus, tmp_path, capsys):
    pytest.importorskip("torch")
    run = tmp_path / "R"
    tiny = ["--models", "plant", "--epochs", "1", "--plant-epochs", "1", "--output", run, *FAST]
    assert _cli(["run", *_data(corpus), *tiny], capsys)[0] == 0
    for f in (run / "parts").iterdir():               # died after saving models/PLANT
        f.unlink()
    (run / "results.json").unlink()
    assert (run / "models" / "PLANT" / "config.json").is_file()
    assert _cli(["run", *_data(corpus), *tiny], capsys)[0] == 2
    rc, err = _cli(["run", *_data(corpus), *tiny, "--resume"], capsys)
    assert (rc, err) == (0, "")
    names = [m["name"] for m in json.loads((run / "results.json").read_text())["models"]]
    assert names[0] == "PLANT"


def test_ablate_follows_the_run_folder_rule(tmp_path):
    from xplant._outputs import prepare_run_folder
    run = tmp_path / "A"
    (run / "switches" / "parts").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="holds an interrupted run.*--resume"):
        prepare_run_folder(run)
    assert prepare_run_folder(run, resume=True) == run and (run / "switches").is_dir()
    assert prepare_run_folder(run, overwrite=True) == run and not any(run.iterdir())
    with pytest.raises(ValueError, match="pass one of them"):
        prepare_run_folder(run, resume=True, overwrite=True)


def test_no_data_switch_is_the_bundled_codiesp_job():
    """``xplant run`` with no data switch (``make run``) runs the bundled CodiEsp job."""
    from xplant.app._sources import data_args_from
    args = data_args_from()
    assert args["dataset"] == "codiesp" and args["codes"] == "D" and args["language"] == "en"
    from xplant.app.cli import build_parser
    parsed = build_parser().parse_args(["run"])
    from xplant.app.cli import _data_args
    assert _data_args(parsed)["dataset"] == "codiesp"


# -- one rule for a text field, in every command -----------------------------------------------

#: JSON values that are not text, and how the message names each.
NOT_TEXT = [(None, "got null"), (0, "got a number 0"), (2.5, "got a number 2.5"),
            (False, "got a boolean false"), (["Fever.", "Cough."], "got a list"),
            ({"body": "fever"}, "got an object")]


@pytest.mark.parametrize("value, kind", NOT_TEXT, ids=[k for _, k in NOT_TEXT])
@pytest.mark.parametrize("command", ["run", "fit", "evaluate", "predict"])
def test_every_command_refuses_a_text_that_is_not_a_string(command, value, kind, corpus,
                                                            svm_model, tmp_path, capsys):
    """null, numbers, booleans, lists and objects are refused, naming the file and line,
    before anything is fitted or written; never read as an empty or stringified text."""
    rows = _notes(10, 3)
    rows[2]["text"] = value
    bad = _write(tmp_path / "bad.jsonl", rows)
    out = tmp_path / "out"
    args = {"run": ["run", "--train", bad, "--dev", corpus["dev"], "--test", corpus["test"],
                    "--models", "prior", "--output", out, *FAST],
            "fit": ["fit", "--model", "prior", "--train", bad, "--output", out, "--quiet"],
            "evaluate": _evaluate(svm_model, bad, out),
            "predict": _predict(svm_model, bad, out)}[command]
    rc, err = _cli(args, capsys)
    assert rc == 2 and f"bad.jsonl, line 3: the text field 'text' must be a string, {kind}" in err
    assert not out.exists()


@pytest.mark.parametrize("value, kind", NOT_TEXT[:2] + NOT_TEXT[4:5])
def test_label_files_take_the_same_rule(value, kind, corpus, tmp_path, capsys):
    """The descriptions of --label-descriptions and a --labels catalogue file: the label and
    the description are text fields; a description left out is an empty one."""
    from xplant.datasets import load_catalogue, read_label_descriptions
    ok = [{"label": "A10", "description": "fever and cough"}, {"label": "B20"}]
    p = _write(tmp_path / "labels.jsonl", ok + [{"label": "C30", "description": value}])
    with pytest.raises(ValueError, match=rf"labels.jsonl, line 3: the text field 'description' "
                                         rf"must be a string, {kind}"):
        read_label_descriptions(p, ["A10", "B20", "C30"])
    with pytest.raises(ValueError, match=r"labels.jsonl, line 3: the text field 'description'"):
        load_catalogue(p)
    rc, err = _cli(["run", *_data(corpus), "--label-descriptions", p, "--models", "prior",
                    "--output", tmp_path / "R", *FAST], capsys)
    assert rc == 2 and "labels.jsonl, line 3: the text field 'description'" in err
    rc, err = _cli(["run", *_data(corpus), "--labels", p, "--models", "prior",
                    "--output", tmp_path / "R2", *FAST], capsys)
    assert rc == 2 and "labels.jsonl, line 3: the text field 'description'" in err
    assert not (tmp_path / "R").exists() and not (tmp_path / "R2").exists()
    _write(p, ok + [{"label": value, "description": "rash"}])
    with pytest.raises(ValueError, match=rf"labels.jsonl, line 3: the label field 'label' "
                                         rf"must be a string, {kind}"):
        read_label_descriptions(p, ["A10", "B20", "C30"])
    d = read_label_descriptions(_write(p, ok), ["A10", "B20"])
    assert d.label_descriptions.tolist() == ["fever and cough", ""]


# -- a dev file that cannot guide a choice -------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "fit"])
def test_a_dev_file_whose_labels_lie_outside_training_is_refused(command, corpus, tmp_path,
                                                                 capsys):
    dev = _write(tmp_path / "dev_other.jsonl",
                 [{**r, "labels": ["Z99"]} for r in _notes(10, 1)])
    out = tmp_path / "out"
    args = ["--train", corpus["train"], "--dev", dev, "--test", corpus["test"],
            "--output", out]
    args = (["run", *args, "--models", "prior", *FAST] if command == "run"
            else ["fit", "--model", "prior", *args, "--quiet"])
    rc, err = _cli(args, capsys)
    assert rc == 2 and "dev_other.jsonl: none of its labels occurs in the training file" in err
    assert "e.g. Z99" in err and "leave --dev out" in err and not out.exists()


def test_a_dev_file_that_covers_few_training_labels_warns_naming_it(corpus, tmp_path, capsys):
    rows = _notes(10, 1)
    rows = [{**r, "labels": ["Z99"]} if i < 7 else r for i, r in enumerate(rows)]
    dev = _write(tmp_path / "dev_few.jsonl", rows)
    with pytest.warns(UserWarning, match=r"dev_few.jsonl: only \d+ of its \d+ positive labels "
                                         r"\(\d+%\) are labels of the training file"):
        rc, _ = _cli(["run", "--train", corpus["train"], "--dev", dev, "--test", corpus["test"],
                      "--models", "prior", "--output", tmp_path / "R", *FAST], capsys)
    assert rc == 0
