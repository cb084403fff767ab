"""Smoke runs of benchmarks/bench_xmtc.py: a slice of each dataset, tiny budgets."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".." / "shared" / "data" / "eurlex57k"


def _load_script(name="bench_xmtc"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(tmp_path, datasets, models, extra=(), data_home=DATA):
    import torch
    torch.set_num_threads(1)
    bench = _load_script()
    out = tmp_path / "bench"
    # the description source without its sentence encoder: the wiring is what is tested here
    # (tests/unseen/test_encoder.py and tests/cli/test_run_extras.py test the encoder)
    report = bench.main(["--smoke", "--no-isolate", "--threads", "1", "--quiet", "--output", str(out),
                         "--data-home", str(data_home), "--datasets", datasets, "--models", models,
                         "--description-encoder", "none", *extra],
                        log=lambda *a: None)
    return out, report


def _check_outputs(out, report):
    data = json.loads((out / "bench.json").read_text())
    assert data == json.loads(json.dumps(report, default=float))
    md = (out / "bench.md").read_text()
    assert {"cores", "ram_gib"} <= set(data["machine"]) and data["versions"]["numpy"]
    for d in data["datasets"]:
        assert f"## {d['dataset']}" in md
        assert (out / d["dataset"] / "f1_by_frequency.png").read_bytes()[:4] == b"\x89PNG"
        assert (out / d["dataset"] / "results.json").is_file()
        assert not d["failed"]
        for m in d["models"]:
            assert f"| {m['name']} |" in md
            for key in ("P@1", "P@3", "P@5", "nDCG@5", "RP@5", "MAP", "micro_F1", "macro_F1"):
                assert 0.0 <= m["metrics"][key] <= 1.0
            assert m["fit_seconds"] > 0 and m["predict_docs_per_second"] > 0 and m["peak_rss_mb"] > 0
    return data


def test_bench_smoke_core_rows(tmp_path):
    """Prior, SVM, PLANT and MiniLM PLANT on CodiEsp-D."""
    out, report = _run(tmp_path, "codiesp-D", "prior,svm,plant,minilm",
                       extra=("--neural-max-docs", "12", "--neural-max-length", "48",
                              "--dev-docs", "15"))
    data = _check_outputs(out, report)
    names = {d["dataset"]: [m["name"] for m in d["models"]] for d in data["datasets"]}
    assert names["codiesp-D"] == ["frequency prior", "TF-IDF + SVM", "PLANT", "PLANT fused",
                                  "PLANT fused, α=1", "PLANT fused + descriptions",
                                  "PLANT fused + descriptions + mentions",
                                  "PLANT (MiniLM)", "PLANT (MiniLM) fused",
                                  "PLANT (MiniLM) fused, α=1",
                                  "PLANT (MiniLM) fused + descriptions",
                                  "PLANT (MiniLM) fused + descriptions + mentions"]
    d = data["datasets"][0]
    assert d["documents"] == {"train": 20, "dev": 15, "test": 20}      # dev: a random subset
    assert d["budget"]["dev_docs"] == 15
    assert "every choice made on 15 random dev documents" in (out / "bench.md").read_text()
    by_name = {m["name"]: m for m in d["models"]}
    svm, plant = d["models"][1], by_name["PLANT"]
    minilm = next(m for m in d["models"] if m["params"].get("backbone") == "hf")
    # the neural rows are trained with the shortlist and bring their fused rows
    assert {"PLANT fused", "PLANT fused, α=1"} <= set(by_name)
    assert svm["dev_selected"]["ovr__C"] in (0.1, 1.0, 10.0)
    assert plant["budget"] == {"epochs": 1, "plant_epochs": 1, "max_train_docs": 12,
                               "max_length": 48} and plant["budget_limited"]
    assert plant["params"]["module__max_length"] == 48
    assert minilm["budget"]["max_train_docs"] == 8 and minilm["params"]["backbone"] == "hf"
    assert minilm["params"]["module__max_length"] == 64          # the MiniLM row keeps its own budget
    assert "first 12 training documents, 48 tokens per document" in (out / "bench.md").read_text()
    # The prior ranks labels by training frequency (ties by index): P@1 by hand.
    from xplant.datasets import load_codiesp
    freq = np.asarray(load_codiesp("train").Y[:20].sum(0)).ravel()
    top = int(np.lexsort((np.arange(len(freq)), -freq))[0])
    p1 = float(load_codiesp("test").Y[:20, top].toarray().mean())
    assert d["models"][0]["metrics"]["P@1"] == pytest.approx(p1)


def test_bench_subset_prints_its_shape(tmp_path):
    """--top-labels / --subset-docs: the 4 most frequent labels, 10 seeded training documents."""
    logged = []
    bench = _load_script()
    out = tmp_path / "bench"
    report = bench.main(["--smoke", "--no-isolate", "--quiet", "--output", str(out), "--datasets",
                         "codiesp-D", "--models", "prior", "--top-labels", "4", "--subset-docs", "10",
                         "--subset-seed", "2"], log=logged.append)
    d = report["datasets"][0]
    from xplant.datasets import load_codiesp
    full = {s: load_codiesp(s).Y[:20].toarray() for s in ("train", "dev", "test")}  # --smoke: 20
    freq = full["train"].sum(0)
    top = sorted(sorted(range(len(freq)), key=lambda j: (-freq[j], j))[:4])     # column order
    kept = {s: Y[:, top][Y[:, top].any(1)] for s, Y in full.items()}
    assert d["n_labels"] == 4 and d["subset"] == {"n_labels": 4, "n_docs": 10, "random_state": 2}
    assert d["documents"] == {"train": 10, "dev": len(kept["dev"]), "test": len(kept["test"])}
    for s in ("dev", "test"):
        assert d["labels_per_document"][s] == pytest.approx(kept[s].sum() / len(kept[s]), abs=1e-3)
    assert any(f"10 train / {len(kept['dev'])} dev" in line and "4 labels" in line
               and "labels per document" in line for line in logged)
    assert "the 4 most frequent labels, 10 training documents drawn with seed 2" in \
        (out / "bench.md").read_text()
    # the prior ranks the 4 labels by their frequency in the 10 drawn documents: P@1 by hand
    from xplant.model_selection import frequent_label_subset
    cols, rows = frequent_label_subset(full["train"], 4, n_docs=10, random_state=2)
    f10 = full["train"][np.ix_(rows, cols)].sum(0)
    best = int(np.lexsort((np.arange(4), -f10))[0])
    assert d["models"][0]["metrics"]["P@1"] == pytest.approx(kept["test"][:, best].mean())
    with pytest.raises(SystemExit, match="--top-labels"):
        bench.main(["--subset-docs", "10"])


@pytest.mark.slow
def test_bench_smoke_other_rows(tmp_path, eurlex_slice):
    """The other rows (LR, the extras, plant=False, the ablations) on CodiEsp-P and EURLEX57K
    (its first 40 documents per split: --smoke reads 20)."""
    out, report = _run(tmp_path, "codiesp-P,eurlex57k",
                       "lr,napkinxc,omikuji,libmultilabel,plant-false,ablations", data_home=eurlex_slice)
    data = _check_outputs(out, report)
    names = {d["dataset"]: [m["name"] for m in d["models"]] for d in data["datasets"]}
    assert ("eurlex57k" in names) == (DATA / "train.jsonl.gz").is_file()
    if "eurlex57k" in names:  # no ablation rows on EURLEX57K
        assert names["eurlex57k"][0] == "TF-IDF + LR" and names["eurlex57k"][-3:] == [
            "plant=False", "plant=False fused", "plant=False fused, α=1"]
    d = data["datasets"][0]
    names = [m["name"] for m in d["models"]]
    assert names[0] == "TF-IDF + LR" and "plant=False" in names
    assert names[-5:] == ['PLANT planter__target="tf"', 'PLANT planter__criterion__kind="mse"', 'PLANT criterion__loss="bce"',
                          "PLANT criterion__hard_negatives=None", "PLANT criterion__label_smoothing=0"]
    assert len(names) + len(d["skipped"]) == 12     # plant=False adds its two fused rows
    by_name = {m["name"]: m for m in d["models"]}
    assert by_name['PLANT criterion__loss="bce"']["params"]["criterion__loss"] == "bce"
    assert by_name["PLANT criterion__hard_negatives=None"]["params"]["criterion__hard_negatives"] is None


def test_model_specs_extras_and_ablations(monkeypatch):
    bench = _load_script()
    monkeypatch.setattr(bench.importlib.util, "find_spec", lambda name: None)
    kw = dict(epochs=2, plant_epochs=1, minilm_max_docs=5, minilm_epochs=1)
    specs, skipped = bench.model_specs("codiesp-D", bench.ROWS, **kw)
    names = [s["name"] for s in specs]
    assert len(skipped) == 3 and not {"Omikuji", "napkinXC PLT", "LibMultiLabel"} & set(names)
    assert names.count("PLANT") == 1 and names.count("plant=False") == 1
    assert len([n for n in names if n.startswith("PLANT ") and n != "PLANT (MiniLM)"]) == 5
    specs, _ = bench.model_specs("eurlex57k", bench.ROWS, **kw)
    assert not [s for s in specs if s["name"].startswith("PLANT ") and s["name"] != "PLANT (MiniLM)"]
    specs, _ = bench.model_specs("codiesp-D", bench.ROWS, neural_max_docs=100,
                                 neural_max_length=256, **kw)
    by = {s["name"]: s for s in specs}
    for name in ("PLANT", "plant=False", 'PLANT criterion__loss="bce"'):
        assert by[name]["max_train_docs"] == 100 and by[name]["params"]["module__max_length"] == 256
    assert by['PLANT criterion__loss="bce"']["params"]["criterion__loss"] == "bce"
    assert by["PLANT (MiniLM)"]["max_train_docs"] == 5
    assert "grid" not in by["TF-IDF + SVM"]
    specs, _ = bench.model_specs("eurlex57k", ["svm"], svm_grid=[1.0], **kw)
    assert specs[0]["grid"] == {"ovr__C": [1.0]}
    assert by["PLANT (MiniLM)"]["params"]["module__max_length"] == bench.MINILM_MAX_LENGTH
    with pytest.raises(ValueError, match="unknown row"):
        bench.model_specs("codiesp-D", ["bert"], **kw)
    # --set: PlantClassifier overrides of both word-backbone rows; plant=False keeps no anchor
    args = bench.build_parser().parse_args(["--set", "stage1_weight=1", "--set", "scoring=map",
                                            "--set", "planter__max_epochs=3"])
    assert args.set == [("stage1_weight", 1), ("scoring", "map"), ("planter__max_epochs", 3)]
    specs, _ = bench.model_specs("codiesp-D", ["plant", "plant-false"],
                                 neural_params=dict(args.set), **kw)
    assert specs[0]["params"] == {"stage1_weight": 1, "scoring": "map", "planter__max_epochs": 3}
    assert specs[1]["params"]["stage1_weight"] == 0.0 and specs[1]["params"]["scoring"] == "map"
    with pytest.raises(SystemExit):
        bench.build_parser().parse_args(["--set", "stage1_weight"])


def test_bench_evidence_smoke(tmp_path):
    """benchmarks/bench_evidence.py on 12 documents per split, every row kind."""
    import torch
    torch.set_num_threads(1)
    module = _load_script("bench_evidence")
    out = tmp_path / "evidence.json"
    res = module.main(["--max-docs", "12", "--epochs", "1", "--plant-epochs", "1", "--threads", "1",
                       "--rows", "plant,anchored,frozen", "--stage1-weights", "0.5",
                       "--output", str(out)])
    assert list(res) == ["PLANT, paper", "PLANT, stage1_weight=0.5", "PLANT, attention frozen",
                         "MIG only"]
    assert json.loads(out.read_text()).keys() == res.keys()
    pairs = {r["n_pairs"] for r in res.values()}
    assert len(pairs) == 1 and pairs.pop() > 0           # every highlighter scored on the same pairs
    for name, r in res.items():
        assert 0.0 <= r["f1"] <= 1.0 and 0.0 <= r["token_f1"] <= 1.0
        if name != "MIG only":
            assert 0.0 <= r["test_MAP"] <= 1.0 and 0.0 <= r["dev_MAP"] <= 1.0
    with pytest.raises(SystemExit):
        module.main(["--rows", "plant,nonsense"])


def test_keep_labels_restricts_per_label_fields():
    """The subset's label columns carry their names, texts and ancestors (renumbered)."""
    import scipy.sparse as sp
    from sklearn.utils import Bunch
    from xplant.app._splits import _keep_labels
    b = Bunch(texts=["a", "b", "c"], ids=["x", "y", "z"],
              Y=sp.csr_matrix(np.array([[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 1]])),
              label_names=np.array(["A", "B", "C", "D"]), label_synonyms=[["a"], [], ["c"], ["d"]],
              label_ancestor=np.array([-1, 0, 3, -1]), label_frequency=np.array([1, 1, 1, 2]),
              record={"n": 3})
    out = _keep_labels(b, np.array([2, 3]))
    assert out.texts == ["a", "c"] and out.ids == ["x", "z"]          # "b" has neither label
    assert out.Y.toarray().tolist() == [[0, 1], [1, 1]]
    assert out.label_names.tolist() == ["C", "D"] and out.label_synonyms == [["c"], ["d"]]
    assert out.label_ancestor.tolist() == [1, -1]                    # D is now column 1
    assert out.label_frequency.tolist() == [1, 2] and out.record == {"n": 3}


# one epoch on 20 documents and 5 labels may predict most labels: the warning
# is right, and beside this test's point
@pytest.mark.filterwarnings("ignore::xplant.neural.DegenerateModelWarning")
def test_bench_plant_row_with_stage1_weight_dev(tmp_path):
    """--set stage1_weight=dev: the row records each candidate and the weight dev chose."""
    import torch
    torch.set_num_threads(1)
    bench = _load_script()
    report = bench.main(["--smoke", "--no-isolate", "--quiet", "--output", str(tmp_path / "b"),
                         "--datasets", "codiesp-D", "--models", "plant", "--top-labels", "5",
                         "--neural-max-length", "48", "--set", "stage1_weight=dev",
                         "--set", "checkpoint_dir=null"], log=lambda *a: None)
    m = report["datasets"][0]["models"][0]
    cands = m["stage1_weight_candidates"]
    assert [c["stage1_weight"] for c in cands] == [0.0, 0.1]
    best = max(cands, key=lambda c: c["dev_map"])
    assert m["stage1_weight_chosen"] == best["stage1_weight"]
    assert m["best_epoch"] == best["best_epoch"] and m["params"]["stage1_weight"] == "dev"


def test_bench_shortlist_fit_smoke(tmp_path):
    """bench_shortlist.py fit on 40 CodiEsp documents: its alpha = 1 row is the SVM's ranking."""
    import torch
    torch.set_num_threads(1)
    module = _load_script("bench_shortlist")
    out = tmp_path / "fit.json"
    res = module.main(["fit", "--dataset", "codiesp", "--max-docs", "40", "--max-epochs", "2",
                       "--plant-epochs", "1", "--n-candidates", "20", "--max-length", "64",
                       "--n-jobs", "1", "--threads", "1", "--output", str(out),
                       "--set", "stage1_weight=0", "--set", "logit_adjustment=dev",
                       "--fusion-forms"])
    assert json.loads(out.read_text()) == json.loads(json.dumps(res, default=float))
    # the other fusion forms agree with the single alpha where they coincide
    forms = res["fusion_forms"]
    single, logit, bucket = (forms[f]["grid"] for f in ("single", "logit", "bucket"))
    assert len(single) == len(logit) == 11 and len(bucket) == 121
    for g, v in single.items():
        assert bucket[f"{g},{g}"] == v        # one alpha for both buckets is the single alpha
    for g in (0.0, 1.0):                      # either end ranks by one model's score alone
        assert logit[g] == pytest.approx(single[g], abs=1e-12)
    assert forms["bucket"]["map"] >= forms["single"]["map"]
    assert forms["single"]["map"] == max(single.values())
    assert forms["single"]["best"] == res["fusion_weight"]   # the fit's own choice on dev
    tau = res["logit_adjustment"]
    assert tau in (0.0, 0.25, 0.5, 0.75, 1.0) and res["logit_adjustment_dev"][tau] == max(
        res["logit_adjustment_dev"].values())
    assert set(res["rows"]) == {"alpha=0", "fused", "alpha=1", "alpha=1, adjusted"} | (
        {"fused, tau=0", "alpha=0, fused tau"} if tau else set())
    # the shortlist's own adjustment, chosen on dev the same way; at tau 0 it is the SVM row
    adj = res["shortlist_adjustment_dev"]
    assert res["shortlist_adjustment"] == min(t for t, v in adj.items() if v == max(adj.values()))
    if res["shortlist_adjustment"] == 0:
        assert res["rows"]["alpha=1, adjusted"] == res["rows"]["alpha=1"]
    # --set reaches the classifier: weight 0 on a word backbone trains at 1e-3 under lr=None
    assert res["params"] == {"stage1_weight": 0, "logit_adjustment": "dev"}
    assert (res["stage1_weight"], res["lr"]) == (0.0, 1e-3)
    assert res["epochs_run"] == len(res["history"]) <= 2
    assert res["budget_limited"] == (res["best_epoch"] == res["epochs_run"])
    # alpha = 1 ranks as the shortlist alone: the SVM (C = 1) fitted on the same training rows
    from xplant.app import load_splits
    from xplant.linear import make_tfidf_ovr
    from xplant.metrics import mean_average_precision, pad_scores
    sp_ = load_splits("codiesp", language="en", max_docs=40)   # as the benchmark reads it
    svm = make_tfidf_ovr(C=1.0, random_state=0).fit(sp_["train"].texts, sp_["train"].Y)
    test = sp_["test"]                          # its codes outside train and dev: misses
    expected = mean_average_precision(test.Y, pad_scores(svm.decision_function(test.texts),
                                                          test.Y.shape[1]))
    assert res["rows"]["alpha=1"]["MAP"] == pytest.approx(expected, abs=1e-9)


def test_missed_by_frequency_by_hand():
    import scipy.sparse as sp
    module = _load_script("bench_shortlist")
    Y = sp.csr_matrix(np.array([[1, 1, 0, 0], [0, 1, 1, 1]]))
    top = np.array([[0, 3], [1, 2]])              # doc 0 misses label 1, doc 1 misses label 3
    got = module.missed_by_frequency(top, Y, np.array([0, 3, 60, 700]))
    assert got == {"0-0": [1, 0], "1-4": [2, 1], "5-9": [0, 0], "10-49": [0, 0],
                   "50-99": [1, 0], "100-499": [0, 0], ">=500": [1, 1]}


def test_bench_shortlist_adjust_rescores_a_saved_fused_model(tmp_path):
    """bench_shortlist.py adjust (on the fit's 40 documents per split): tau = 0 is the saved
    model's own score; dev picks the best tau."""
    import torch
    torch.set_num_threads(1)
    from xplant.app import load_splits
    from xplant.metrics import mean_average_precision, pad_scores
    from xplant.neural import PlantClassifier
    module = _load_script("bench_shortlist")
    splits = load_splits("codiesp", language="en", max_docs=40)   # as the benchmark reads it
    clf = PlantClassifier(shortlist="linear", n_candidates=None, module__max_length=64, max_epochs=1,
                          plant=False, module__embedding_dim=16, module__hidden_dim=16, module__attention_dim=16,
                          module__pool_size=16, verbose=0, n_jobs=1, stage1_weight=0).fit(
        splits["train"].texts, splits["train"].Y,
        validation_data=(splits["dev"].texts, splits["dev"].Y))
    assert clf.logit_adjustment_ == 0.0                   # the default: as trained
    clf.save(tmp_path / "PLANT")
    res = module.main(["adjust", str(tmp_path / "PLANT"), "--dataset", "codiesp", "--max-docs", "40",
                       "--output", str(tmp_path / "adjust.json")])
    assert json.loads((tmp_path / "adjust.json").read_text()) == json.loads(
        json.dumps(res, default=float))
    test = splits["test"]
    own = mean_average_precision(test.Y, pad_scores(clf.predict_proba(test.texts), test.Y.shape[1]))
    assert res["rows"]["fused, tau=0.0"]["MAP"] == pytest.approx(own, abs=1e-6)
    dev = res["dev_micro_f1"]
    assert res["tau_dev"] == min(t for t, v in dev.items() if v == max(dev.values()))
    assert set(res["rows"]) == {f"fused, tau={t}" for t in dev} | {"shortlist alone, its own tau"}
