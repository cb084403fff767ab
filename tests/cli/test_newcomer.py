"""A newcomer's whole flow on tiny files: run, report, fit, predict, evaluate; bad inputs."""

import hashlib
import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from xplant.app.cli import main  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: Each label is written with its own word pair; "0117" keeps its leading zero.
WORDS = {"A10": ("fever", "cough"), "B20": ("fracture", "femur"), "c30": ("rash", "itch"),
         "0117": ("chest", "pain")}
TINY = ["--epochs", "1", "--plant-epochs", "1"]


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


def _write(path, docs):
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    return {"train": _write(d / "train.jsonl", _docs(50, 0)),
            "dev": _write(d / "dev.jsonl", _docs(12, 1)),
            "test": _write(d / "test.jsonl", _docs(12, 2))}


@pytest.fixture(scope="module")
def run(files, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    rc = main(["run", "--train", str(files["train"]), "--dev", str(files["dev"]), "--test",
               str(files["test"]), "--models", "Prior,svm,PLANT", "--output", str(out),
               "--no-isolate", "--report", "--quiet", *TINY])
    assert rc == 0
    return out


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.marks = {}, []
        self._table = self._row = self._cell = self._mark = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "mark":
            self._mark = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "mark" and self._mark is not None:
            self.marks.append("".join(self._mark))
            self._mark = None

    def handle_data(self, data):
        for buf in (self._cell, self._mark):
            if buf is not None:
                buf.append(data)


def _labels(path):
    return [json.loads(line)["labels"] for line in Path(path).read_text().splitlines()]


def test_run_results_inputs_and_prior_by_hand(run, files):
    res = json.loads((run / "results.json").read_text())
    assert [m["name"] for m in res["models"]] == ["frequency prior", "TF-IDF + SVM", "PLANT",
                                                  "PLANT fused", "PLANT fused, α=1"]
    # a user's files without --label-descriptions: the description row is not run, and says so
    plant = next(m for m in res["models"] if m["name"] == "PLANT")
    assert plant["descriptions_row"].startswith("not run: the training split has no label "
                                                "descriptions")
    assert res["designated"]["name"] in {m["name"] for m in res["models"]}
    assert res["split"] == "test" and res["dev_source"] == "file" and not res.get("optimistic")
    for split, path in files.items():
        rec = res["inputs"][split]
        assert rec["path"] == str(path.resolve())
        assert rec["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    # the prior ranks the most frequent training label first: P@1 by hand
    train, test = _labels(files["train"]), _labels(files["test"])
    counts = {lab: sum(lab in row for row in train) for lab in WORDS}
    best = sorted(counts, key=lambda lab: (-counts[lab], sorted(WORDS).index(lab)))[0]
    p1 = np.mean([best in row for row in test])
    assert res["models"][0]["metrics"]["P@1"] == pytest.approx(p1)
    # the SVM reads the label words: every test document's top label is gold
    assert res["models"][1]["metrics"]["P@1"] == 1.0
    from xplant.report import load_per_label
    per = load_per_label(run / "per_label.npz")
    assert list(per["label_names"]) == sorted(WORDS)        # the files' own strings, "0117" kept


def test_run_writes_evidence_the_report_shows(run, files):
    ev = json.loads((run / "evidence.json").read_text())
    assert list(ev) == ["PLANT"]
    test = {json.loads(line)["text"]: json.loads(line)["labels"]
            for line in files["test"].read_text().splitlines()}
    assert 1 <= len(ev["PLANT"]) <= 3
    for doc in ev["PLANT"]:
        assert sorted(doc["gold"]) == sorted(test[doc["text"]])
        for code in doc["codes"]:
            assert code["gold"] == (code["code"] in doc["gold"])
            for s in code["spans"]:
                assert doc["text"][s["start"]:s["end"]] == s["text"]
    page = Page()
    page.feed((run / "report.html").read_text(encoding="utf-8"))
    compact = page.tables["results"]
    assert compact[0] == ["model", "P@1", "P@5", "nDCG@5", "MAP", "micro-F1", "macro-F1",
                          "F1 few", "fit s"]
    res = json.loads((run / "results.json").read_text())
    for row, m in zip(compact[1:], res["models"]):
        same = f" (= {m['same_as']})" if m.get("same_as") else ""     # a repeated row says so
        assert row[0] == m["name"] + same and row[4] == f"{100 * m['metrics']['MAP']:.1f}"
    assert len(page.tables["results-all"][0]) > len(compact[0])
    spans = [s["text"] for d in ev["PLANT"] for c in d["codes"] for s in c["spans"]]
    assert set(spans) <= set(page.marks) and spans
    html = (run / "report.html").read_text(encoding="utf-8")
    assert html.count("unchanged since the run") == 3       # train, dev, test checked by SHA-256


def test_fit_predict_evaluate(files, tmp_path):
    model = tmp_path / "svm"
    assert main(["fit", "--model", "SVM", "--train", str(files["train"]), "--dev",
                 str(files["dev"]), "--output", str(model), "--quiet"]) == 0
    info = json.loads((model / "fit.json").read_text())
    rule = info["decision"]
    assert info["model"] == "svm" and rule["rule"] == info["decision_choice"]["value"]
    pred = tmp_path / "pred.jsonl"
    assert main(["predict", "--model", str(model), "--input", str(files["test"]),
                 "--output", str(pred), "--top-k", "2"]) == 0
    recs = [json.loads(line) for line in pred.read_text().splitlines()]
    gold = _labels(files["test"])
    assert len(recs) == 12
    for rec, labels in zip(recs, gold):
        assert rec["top"][0]["label"] in labels            # the files' own label strings
        if rule["rule"] == "top_k":
            assert len(rec["predicted"]) == rule["k"]
        elif rule["rule"] == "threshold":           # every listed label at or above it, no other
            assert all(p["threshold"] == rule["threshold"] for p in rec["passed"])
            assert {t["label"] for t in rec["top"] if t["score"] >= rule["threshold"]} <= \
                set(rec["predicted"])
        assert all(p["score"] >= p["threshold"] for p in rec["passed"]
                   if p["threshold"] is not None)
    out = tmp_path / "eval.json"
    assert main(["evaluate", "--model", str(model), "--input", str(files["test"]), "--output",
                 str(out), "--quiet"]) == 0
    rep = json.loads(out.read_text())
    assert rep["unknown_labels"] == [] and rep["n_documents"] == 12
    # P@1 from the written predictions, by hand
    assert rep["metrics"]["P@1"] == pytest.approx(
        np.mean([r["top"][0]["label"] in g for r, g in zip(recs, gold)]))
    assert rep["input"]["sha256"] == hashlib.sha256(files["test"].read_bytes()).hexdigest()


def test_fit_from_a_config_file(files, tmp_path, capsys):
    cfg = tmp_path / "svm.yaml"
    cfg.write_text("model: SVM\nparams:\n  C: 2.5\n  min_df: 1\n")
    model = tmp_path / "m"
    assert main(["fit", "--model", str(cfg), "--train", str(files["train"]), "--output",
                 str(model), "--quiet"]) == 0
    from xplant import load_saved
    pipe, _ = load_saved(model)
    # the config's C is kept (no dev grid over C), min_df reaches the TF-IDF step
    assert pipe[-1].C == 2.5 and pipe[0].min_df == 1
    assert "dev_selected" not in json.loads((model / "fit.json").read_text())
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": "svm",\n "params": {"C": 1,}}')
    assert main(["fit", "--model", str(bad), "--train", str(files["train"]), "--output",
                 str(tmp_path / "m2"), "--quiet"]) == 2
    assert "bad.json, line 2, column 20: not valid JSON" in capsys.readouterr().err


def test_evaluate_unknown_labels_are_misses(files, tmp_path):
    model = tmp_path / "prior"
    # xplant train without --config is xplant fit
    assert main(["train", "--model", "prior", "--train", str(files["train"]), "--output",
                 str(model), "--quiet"]) == 0
    f = _write(tmp_path / "new.jsonl", [{"text": "fever", "labels": ["A10", "Z99"]}])
    with pytest.warns(UserWarning, match="1 label.*unknown to the model.*Z99"):
        from xplant.app._fit import evaluate_model
        rep = evaluate_model(model, f, log=lambda *a: None)
    assert rep["unknown_labels"] == ["Z99"]
    # two gold labels, one unknown to the model: only A10 can be found
    from xplant import load_saved
    from xplant._saved import decide, label_names
    prior, decision = load_saved(model)
    predicted = {label_names(prior)[j] for j in decide(prior, ["fever"], decision).indices}
    assert rep["metrics"]["micro_R"] == pytest.approx(("A10" in predicted) / 2)
    assert rep["metrics"]["micro_P"] == pytest.approx(("A10" in predicted) / len(predicted))


def test_no_dev_no_test_is_optimistic_and_carved(files, tmp_path):
    out = tmp_path / "r"
    assert main(["run", "--train", str(files["train"]), "--models", "lr", "--output", str(out),
                 "--no-isolate", "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["split"] == "dev" and res["optimistic"] is True
    assert "iterative-stratified 10%" in res["dev_source"] and "optimistic" in res["test_source"]
    assert res["sizes"] == {"train": 45, "dev": 5, "test": 5}
    # the same seed carves the same dev: resume keeps the finished row
    lines = []
    from xplant.app._job import run_job
    from xplant.app._sources import data_args_from
    run_job(out, data_args_from(train=files["train"]), models=["lr"], isolate=False,
            verbose=0, resume=True, log=lines.append)
    assert any("finished in an earlier run, kept" in line for line in lines)


def test_xc_folder_feature_rows_only(tmp_path):
    import scipy.sparse as sp
    from xplant.datasets import dump_xc
    rng = np.random.default_rng(0)
    Y = (rng.random((40, 3)) < 0.4).astype(np.int64)
    Y[Y.sum(1) == 0, 0] = 1
    X = sp.csr_matrix(np.hstack([Y * 1.0, rng.random((40, 2))]))
    Y = sp.csr_matrix(Y)
    xc = tmp_path / "xc"
    xc.mkdir()
    dump_xc(xc / "train.txt", X[:30], Y[:30])
    dump_xc(xc / "test.txt", X[30:], Y[30:])
    out = tmp_path / "r"
    assert main(["run", "--dataset", f"xc:{xc}", "--models", "prior,svm", "--output",
                 str(out), "--no-isolate", "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["models"][1]["metrics"]["P@1"] == 1.0
    from xplant import load_saved
    svm, _ = load_saved(out / "models" / "TF-IDF_SVM")
    assert [n for n, _ in svm.steps] == ["ovr"]             # no TF-IDF on feature vectors
    with pytest.raises(ValueError, match="'plant' .*reads text.*feature vectors"):
        from xplant.app._job import run_job
        from xplant.app._sources import data_args_from
        run_job(tmp_path / "r2", data_args_from(f"xc:{xc}"), models=["plant"])


def test_models_names_any_case_and_display():
    from xplant.app._rows import parse_models
    assert [r.name for r in parse_models("PRIOR,TF-IDF + lr,plant=false,Omikuji")] == \
        ["prior", "lr", "plant-false", "omikuji"]
    with pytest.raises(ValueError, match="unknown model 'bert'.*svm \\(TF-IDF \\+ SVM\\)"):
        parse_models("bert")
    with pytest.raises(ValueError, match="twice"):
        parse_models("svm,TF-IDF + SVM")


def test_upper(files):
    from xplant.app._sources import data_args_from
    from xplant.app import load_splits
    splits = load_splits(**data_args_from(train=files["train"], upper=True))
    assert list(splits["train"].label_names) == ["0117", "A10", "B20", "C30"]


def _run_cli(args, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "xplant.app.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_piped_logs_plain_and_quiet(files, tmp_path, capfd):
    """``xplant run`` as a piped child process logs plain lines; ``--quiet`` prints nothing.

    The quiet run is in this process, its file descriptors 1 and 2 captured (pipes,
    not a terminal), so that the Rust libraries' own writes to them count too.
    """
    import importlib.util
    trees = ",omikuji" if importlib.util.find_spec("omikuji") else ""   # Rust progress bars
    args = ["run", "--train", str(files["train"]), "--dev", str(files["dev"]), "--test",
            str(files["test"]), "--models", "svm,plant" + trees, "--no-isolate", *TINY]
    loud = _run_cli([*args, "--output", str(tmp_path / "a")], tmp_path)
    assert loud.returncode == 0, loud.stderr
    log = loud.stdout + loud.stderr
    assert "\x1b[" not in log and "\r" not in log
    assert "epoch" in loud.stdout and "PLANT: fit ..." in loud.stdout
    assert "TF-IDF + SVM: fit {'ovr__C': 0.1}: done in" in loud.stdout
    assert "one-vs-rest: 4 labels in 4 batches: 4/4 done" in loud.stdout   # per-label progress
    assert "(step 1 of 2) Processing mig, total=" in loud.stdout              # MIG's time
    capfd.readouterr()
    assert main([*args, "--output", str(tmp_path / "b"), "--quiet"]) == 0
    quiet = capfd.readouterr()
    assert quiet.out == ""
    assert "omikuji" not in quiet.err and "epoch" not in quiet.err


@pytest.mark.parametrize("case", ["missing_file", "missing_field", "empty_split", "all_unseen",
                                  "number_label", "unknown_dataset"])
def test_bad_input_messages(case, files, tmp_path, capsys):
    args = ["run", "--train", str(files["train"]), "--output", str(tmp_path / "r"),
            "--models", "prior", "--no-isolate", "--quiet"]
    bad = tmp_path / "bad.jsonl"
    if case == "missing_file":
        args[2] = str(tmp_path / "nope.jsonl")
        expect = ["nope.jsonl does not exist", "check the path"]
    elif case == "missing_field":
        bad.write_text('{"text": "a", "labels": ["A10"]}\n{"text": "b", "codes": ["A10"]}\n')
        args += ["--test", str(bad)]
        expect = ["bad.jsonl, line 2", "no field 'labels'", "--labels-field"]
    elif case == "empty_split":
        bad.write_text("\n")
        args += ["--test", str(bad)]
        expect = ["bad.jsonl", "test split holds no documents", "add documents"]
    elif case == "all_unseen":
        bad.write_text('{"text": "a", "labels": ["Q1"]}\n{"text": "b", "labels": ["Q2"]}\n')
        args += ["--test", str(bad)]
        expect = ["bad.jsonl", "none of its labels occurs", "lines 1 to 2", "--upper"]
    elif case == "number_label":
        bad.write_text('{"text": "a", "labels": [117]}\n')
        args += ["--test", str(bad)]
        expect = ["bad.jsonl, line 1", "label 117 is a int", "quote"]
    else:
        args = ["run", "--dataset", "pubmed", "--quiet"]
        expect = ["unknown --dataset 'pubmed'", "--train"]
    assert main(args) == 2
    err = capsys.readouterr().err
    for piece in expect:
        assert piece in err, (piece, err)
    assert not (tmp_path / "r").exists()                 # nothing written on bad input


@pytest.mark.parametrize("name, params, dataset, expected", [
    ("plant", {}, "eurlex57k", {"n_candidates": 100}),
    ("plant-false", {}, "codiesp", {"n_candidates": None}),
    ("plant", {"shortlist": None}, "eurlex57k", {"shortlist": None}),
    ("plant", {"n_candidates": 7}, "eurlex57k", {"n_candidates": 7}),
    ("descriptions", {}, "eurlex57k", {}),      # reads text, takes no shortlist
    ("svm", {}, "eurlex57k", {}),
])
def test_only_shortlisted_rows_get_n_candidates(name, params, dataset, expected):
    from xplant.app import build_model, find_row, shortlist_params
    got = shortlist_params(params, find_row(name), dataset)
    assert got == expected
    build_model(name, params=got, verbose=0)      # the row's estimator accepts them


def test_mig_parameters_reach_the_mig_step():
    """``--set mig__top_k=20`` (the size of T_l) reaches MIGRelevance, not the classifier."""
    from xplant.app import build_model
    pipe = build_model("plant", params={"mig__top_k": 20, "planter__max_epochs": 2}, verbose=0)
    assert pipe.named_steps["mig"].top_k == 20
    assert pipe.named_steps["clf"].planter.max_epochs == 2
    assert "mig__top_k" not in pipe.named_steps["clf"].get_params()
    default = build_model("plant", verbose=0)
    assert default.named_steps["mig"].top_k == type(default.named_steps["mig"])().top_k


def test_the_svm_row_is_shared_only_where_it_applies(tmp_path):
    """The SVM row's saved model becomes the neural rows' frozen shortlist, and nothing else."""
    from sklearn.frozen import FrozenEstimator
    from xplant.app._fused import frozen_shortlist, shared_shortlist
    from xplant.app import find_row
    from xplant.linear import make_tfidf_ovr, save_linear
    texts = ["chest pain", "cough fever", "pain in chest", "fever"]
    Y = np.array([[1, 0], [0, 1], [1, 0], [0, 1]])
    path = save_linear(make_tfidf_ovr(min_df=1).fit(texts, Y), tmp_path / "svm")
    entry = {"name": "TF-IDF + SVM", "saved_to": str(path)}
    assert shared_shortlist(entry, {}, has_text=True) == str(path)
    assert shared_shortlist(entry, {}, has_text=False) is None          # XC feature vectors
    assert shared_shortlist(entry, {"max_train_docs": 2}, has_text=True) is None
    assert shared_shortlist({"name": "TF-IDF + LR", "saved_to": "x"}, {}, True) is None
    plant = find_row("plant")
    got = frozen_shortlist({"n_candidates": None}, plant, str(path), {})
    assert isinstance(got["shortlist"], FrozenEstimator) and got["n_candidates"] is None
    assert got["shortlist"].decision_function(["chest pain"]).argmax() == 0   # the saved model
    for params, row, spec in (({"shortlist": None}, plant, {}),           # the user's choice
                              ({}, plant, {"max_train_docs": 2}),
                              ({}, find_row("descriptions"), {})):
        assert frozen_shortlist(params, row, str(path), spec) == params


def test_each_fused_row_reports_its_own_dev_map():
    """The α = 0, fused and α = 1 rows of one fit each carry the dev MAP of their own scores.

    Hand-computed: two dev documents, gold ranked 1st at α = 0 (AP 1), 2nd
    at the fused α (AP 1/2) and 3rd at α = 1 (AP 1/3); the fit's own dev
    MAP (0.77 here) belongs to none of them.
    """
    from types import SimpleNamespace

    import scipy.sparse as sp

    from xplant.app._fused import fusion_rows
    dev_Y = sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0]]))
    ranked = {"alone": [[0.9, 0.2, 0.1], [0.2, 0.9, 0.1]],      # gold first
              "fused": [[0.5, 0.9, 0.1], [0.9, 0.5, 0.1]],      # gold second
              "shortlist": [[0.1, 0.9, 0.5], [0.9, 0.1, 0.5]]}  # gold last
    dev = {a: np.array(s) for a, s in ranked.items()}
    final = SimpleNamespace(fusion_weight_=0.6, n_candidates_=3, shortlist_info_={"C": 1.0},
                            logit_adjustment_=0.25)
    out = {"info": {"dev_MAP": 0.77}}
    fusion_rows(out, final, dev, dev, dev_Y)
    got = [out["info"]["dev_MAP"]] + [v["info"]["dev_MAP"] for v in out["variants"]]
    assert got == pytest.approx([1.0, 0.5, 1 / 3])
    assert [v["info"]["fusion_weight_of_row"] for v in out["variants"]] == [0.6, 1.0]
    # only the fused row carries the fit's logit adjustment; the others are as trained
    assert [out["info"]["logit_adjustment_of_row"]] + [
        v["info"]["logit_adjustment_of_row"] for v in out["variants"]] == [0.0, 0.25, 0.0]


#: What ``xplant run`` sets on a PLANT row of a user's files, and why: its own
#: switches (--epochs, --plant-epochs, --seed), its structure (the shared SVM
#: as a frozen shortlist, every label a candidate, the checkpoint folder) and
#: its output (verbose, and the plain epoch log where stdout is no terminal).
RUN_EXCEPTIONS = {"max_epochs", "random_state", "shortlist", "n_candidates", "checkpoint_dir",
                  "verbose", "planter", "callbacks__print_log__sink", "callbacks__progress"}
PLANTER_EXCEPTIONS = {"max_epochs", "random_state", "verbose", "callbacks__print_log__sink"}


@pytest.mark.parametrize("dataset", ["user", "xc", "eurlex57k"])
def test_a_plant_row_on_other_data_takes_the_estimator_defaults(dataset, tmp_path):
    from xplant.app import build_model, dataset_settings, find_row, shortlist_params
    from xplant.neural import AttentionPlanter, PlantClassifier
    row = find_row("plant")
    params = dataset_settings(shortlist_params({}, row, dataset), row, dataset)
    pipe = build_model("plant", params=params, epochs=7, plant_epochs=3, random_state=5,
                       verbose=1, checkpoint_dir=str(tmp_path))
    clf = pipe.named_steps["clf"]
    got, want = clf.get_params(deep=False), PlantClassifier().get_params(deep=False)
    differ = {k for k in set(got) | set(want) if k != "_params_to_validate"
              and (k not in got or k not in want or got[k] != want[k])}
    assert differ <= RUN_EXCEPTIONS, differ - RUN_EXCEPTIONS
    assert clf.max_epochs == 7 and clf.random_state == 5 and clf.stage1_weight == "dev"
    got = clf.planter.get_params(deep=False)
    want = AttentionPlanter().get_params(deep=False)
    differ = {k for k in set(got) | set(want) if k != "_params_to_validate"
              and (k not in got or k not in want or got[k] != want[k])}
    assert differ <= PLANTER_EXCEPTIONS, differ - PLANTER_EXCEPTIONS
    assert clf.planter.max_epochs == 3


def test_the_bundled_codiesp_job_fixes_stage1_weight_and_plant_false_keeps_zero():
    from xplant.app import dataset_settings, find_row
    from xplant.app._rows import DATASET_ARCHITECTURES, DATASET_SETTINGS
    assert DATASET_SETTINGS == {"codiesp": {"stage1_weight": 0.1}}
    widths = {"module__attention_dim": 64, "module__hidden_dim": 64}
    assert DATASET_ARCHITECTURES == {"codiesp-D": widths}
    plant, false, minilm = find_row("plant"), find_row("plant-false"), find_row("minilm")
    # early stopping waits 10 epochs on CodiEsp, for both word-CNN rows (DATASET_TRAINING)
    wait = {"patience": 10}
    assert dataset_settings({}, plant, "codiesp", "D") == {"stage1_weight": 0.1, **widths, **wait}
    assert dataset_settings({"stage1_weight": 0, "module__hidden_dim": 32}, plant, "codiesp",
                            "D") == {"stage1_weight": 0, "module__hidden_dim": 32,
                                     "module__attention_dim": 64, **wait}     # --set wins
    # the ablation: the same widths, never MIG; the MiniLM row keeps its own widths;
    # CodiEsp-P keeps the estimator's widths (64 lost on its dev split)
    assert dataset_settings({}, false, "codiesp", "D") == {**widths, **wait}
    assert dataset_settings({}, minilm, "codiesp", "D") == {"stage1_weight": 0.1}
    assert dataset_settings({}, plant, "codiesp", "P") == {"stage1_weight": 0.1, **wait}
    assert dataset_settings({}, false, "codiesp", "P") == wait
    from xplant.app import build_model
    assert build_model("plant-false", verbose=0).named_steps["clf"].stage1_weight == 0.0
    built = {name: build_model(name, params=dataset_settings({}, find_row(name), "codiesp", "D"),
                               verbose=0).named_steps["clf"] for name in ("plant", "plant-false")}
    for clf in built.values():
        assert (clf.module__attention_dim, clf.module__hidden_dim) == (64, 64)
        assert clf.patience == 10
    assert built["plant-false"].stage1_weight == 0.0 and built["plant"].stage1_weight == 0.1
