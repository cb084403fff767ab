"""The main job end to end on a small slice of the bundled CodiEsp data."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from xplant.app._job import run_main_job
from xplant.app._tables import format_table

#: Documents per split of the smoke run (the first of each split).
N_DOCS = 24


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    lines = []
    # TF-IDF alone in the description source, to keep the smoke run short; the sentence
    # encoder runs in tests/cli/test_run_extras.py and tests/unseen/test_encoder.py
    # plant=False too, for the rows the ablation shares; the refit has tests of its own
    # (tests/cli/test_run_refit.py)
    res = run_main_job(out, max_docs=N_DOCS, epochs=1, plant_epochs=1, verbose=0, isolate=False,
                       models=("frequency prior", "TF-IDF + SVM", "plant=False", "PLANT"),
                       refit=False, description_encoder="none", log=lines.append)
    return out, res, "\n".join(lines)


def test_results_json_schema(smoke_run):
    out, res, _ = smoke_run
    data = json.loads((out / "results.json").read_text())
    assert data == json.loads(json.dumps(res, default=float))
    assert {"dataset", "split", "created", "versions", "models"} <= set(data)
    names = [m["name"] for m in data["models"]]
    assert names == ["frequency prior", "TF-IDF + SVM", "plant=False", "plant=False fused",
                     "plant=False fused, α=1", "PLANT", "PLANT fused", "PLANT fused, α=1",
                     "PLANT fused + descriptions", "PLANT fused + descriptions + mentions"]
    # the job's model is the row with the best dev MAP, named once
    best = max((m for m in data["models"] if not m.get("same_as")), key=lambda m: m["dev_MAP"])
    assert data["designated"]["name"] == best["name"]
    assert [m["name"] for m in data["models"] if m.get("designated")] == [best["name"]]
    desc, ment = data["models"][-2:]
    assert desc["description_weight"] >= 0 and desc["description_seen_weight"] >= 0
    assert desc["description_choice"]["name"] == "description_weights"
    assert desc["description_encoder"] == "none"             # as the run was asked
    assert desc["saved_to"] == str(out / "models" / "PLANT_fused_descriptions")
    # CodiEsp-X's training mentions: the same fusion, its mention source last
    assert ment["saved_to"] == str(out / "models" / "PLANT_fused_descriptions_mentions")
    assert ment["description_weights"]["mention_weight"] == ment["mention_choice"]["value"]
    assert {k: ment["description_weights"][k] for k in desc["description_weights"]} == \
        desc["description_weights"]
    # the rows read the Spanish the evidence indexes, the description source the English
    assert ment["mentions"]["text_field"] == "text" and ment["mentions"]["n_patterns"] > 0
    assert data["texts"] == {"documents": "es", "descriptions": "en"}
    for m in data["models"]:
        assert {"name", "params", "fit_seconds", "predict_seconds", "peak_rss_mb", "metrics",
                "k", "threshold"} <= set(m)
        assert 1 <= m["k"] <= 10
        for key in ("P@1", "P@5", "nDCG@5", "MAP", "micro_F1", "macro_F1"):
            assert 0.0 <= m["metrics"][key] <= 1.0
    assert data["models"][1]["dev_selected"]["ovr__C"] in (0.1, 1.0, 10.0)


def test_fused_rows_rescore_one_fit(smoke_run):
    """Each neural row is PLANT alone (α = 0); its fused and α = 1 rows come from the same fit."""
    _, res, _ = smoke_run
    rows = {m["name"]: m for m in res["models"]}
    for base in ("plant=False", "PLANT"):
        own, fused, alone = rows[base], rows[base + " fused"], rows[base + " fused, α=1"]
        alpha = own["fusion_weight"]
        assert 0.0 <= alpha <= 1.0
        assert [own["fusion_weight_of_row"], fused["fusion_weight_of_row"],
                alone["fusion_weight_of_row"]] == [0.0, alpha, 1.0]
        # the fit's logit adjustment, chosen on dev from its grid, is recorded with each row
        assert own["logit_adjustment"] == fused["logit_adjustment"] in (0.0, 0.25, 0.5, 0.75, 1.0)
        assert (own["logit_adjustment_of_row"], fused["logit_adjustment_of_row"],
                alone["logit_adjustment_of_row"]) == (0.0, fused["logit_adjustment"], 0.0)
        assert own["fit_seconds"] == fused["fit_seconds"] == alone["fit_seconds"]
        # CodiEsp: every training or dev code (n_candidates=None), fused with the shortlist
        assert own["params"]["n_candidates"] is None and own["n_candidates"] == 2194
        # the run's fitted SVM row is their shortlist, frozen (not fitted again)
        assert own["shortlist"] == {"frozen": True}
    # α = 1 is the shortlist alone: the SVM row's ranking, for both neural fits
    for base in ("plant=False", "PLANT"):
        for key in ("MAP", "P@1", "nDCG@5"):
            assert rows[base + " fused, α=1"]["metrics"][key] == pytest.approx(
                rows["TF-IDF + SVM"]["metrics"][key])
        # each row's dev MAP is that of its own dev scores, not the fit's:
        # α = 1 ranks dev as the SVM row does, and the dev-chosen α is at
        # least as good on dev as both ends of its grid
        own, fused, alone = rows[base], rows[base + " fused"], rows[base + " fused, α=1"]
        assert alone["dev_MAP"] == pytest.approx(rows["TF-IDF + SVM"]["dev_MAP"])
        assert fused["dev_MAP"] >= max(own["dev_MAP"], alone["dev_MAP"]) - 1e-9


def test_per_label_and_saved_models(smoke_run):
    out, res, _ = smoke_run
    from xplant.neural import load_model
    from xplant.report import load_per_label
    per = load_per_label(out / "per_label.npz")
    L = len(per["train_frequency"])
    assert sorted(per["f1"]) == sorted(m["name"] for m in res["models"])
    assert per["f1"]["PLANT"].shape == (L,) and per["support"].shape == (L,)
    clf = load_model(out / "models" / "PLANT")
    assert clf.n_labels_ == L


def test_table_prints_every_model(smoke_run):
    _, res, text = smoke_run
    table = format_table(res["models"])
    for m in res["models"]:
        assert m["name"] in table
    assert "MAP" in text and "wrote" in text
    # the text each row reads: the Spanish original the coders' evidence indexes, and for
    # the fused rows' description source the English translation beside it
    texts = {m["name"]: m.get("text") for m in res["models"] if not m.get("same_as")}
    assert set(texts.values()) == {"es", "es+en"}
    assert texts["PLANT fused + descriptions"] == texts[
        "PLANT fused + descriptions + mentions"] == "es+en"
    # PLANT reads the Spanish the spans index: it is planted from the evidence
    plant = next(m for m in res["models"] if m["name"] == "PLANT")
    assert plant["stage1_evidence_pairs"] > 0
    _, _, *rows = table.splitlines()
    assert [r.split()[-3] for r in rows if r.startswith("PLANT fused + descriptions")] == \
        ["es+en", "es+en"]


def test_frequency_prior_metrics_by_hand(smoke_run):
    """The prior ranks labels by training frequency: check P@1 against numpy."""
    from xplant.datasets import load_codiesp
    _, res, _ = smoke_run
    tr = load_codiesp("train")
    te = load_codiesp("test")
    freq = np.asarray(tr.Y[:N_DOCS].sum(0)).ravel()
    top = int(np.lexsort((np.arange(len(freq)), -freq))[0])
    p1 = float(te.Y[:N_DOCS, top].toarray().mean())
    assert res["models"][0]["metrics"]["P@1"] == pytest.approx(p1)


def test_predict_cli_jsonl_and_codiesp(smoke_run, tmp_path):
    from xplant.app.cli import main
    out, _, _ = smoke_run
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Patient with fever and cough.", encoding="utf-8")
    (docs / "b.txt").write_text("", encoding="utf-8")
    pred = tmp_path / "pred.jsonl"
    assert main(["predict", "--model", str(out / "models" / "PLANT"), "--input", str(docs),
                 "--output", str(pred), "--top-k", "4", "--evidence"]) == 0
    recs = [json.loads(l) for l in pred.read_text().splitlines()]
    assert [r["id"] for r in recs] == ["a", "b"]
    text = "Patient with fever and cough."
    from xplant.neural import load_model
    clf = load_model(out / "models" / "PLANT")
    assert len(recs[0]["top"]) == 4 and recs[0]["decision"]["rule"] == clf.decision_
    assert recs[0]["decision"]["k"] == clf.k_
    names = [str(c) for c in clf.classes_]
    for rec, row in zip(recs, clf.predict([text, ""])):        # the saved model's own rule
        assert sorted(rec["predicted"]) == sorted(names[j] for j in row.indices)
        assert [p["label"] for p in rec["passed"]] == rec["predicted"]
    for ev in recs[0]["evidence"]:
        for s in ev["spans"]:
            assert text[s["start"]:s["end"]] == s["text"]
    tsv = tmp_path / "sub.tsv"
    argv = ["predict", "--model", str(out / "models" / "PLANT"), "--input", str(docs),
            "--output", str(tsv), "--format", "codiesp", "--top-k", "3"]
    # The saved model carries the loader's label names, so predict answers in
    # ICD codes (I10, R50.9, ...), never in column indices ("1011").
    from xplant.datasets import load_codiesp
    codes = set(load_codiesp("train").label_names.tolist())
    labels = [t["label"] for r in recs for t in r["top"]]
    assert set(labels) <= codes and not any(l.isdigit() for l in labels)
    main(argv)
    rows = [l.split("\t") for l in tsv.read_text().splitlines()]
    assert len(rows) == 6 and rows[0][0] == "a" and rows[0][1] == rows[0][1].lower()
    assert [r[1].upper() for r in rows[:3]] == [t["label"] for t in recs[0]["top"][:3]]


def test_predict_evidence_of_the_descriptions_row(smoke_run, tmp_path, capsys):
    """xplant predict --evidence on the fused + descriptions folder: each label's spans,
    the network's for a seen label (in the Spanish it reads), the best-matching sentences of
    the English translation for an unseen one; each span names the field it indexes. A
    folder of .txt files, one text per document, is refused by name."""
    from xplant import load_saved
    from xplant.app.cli import main
    out, _, _ = smoke_run
    folder = out / "models" / "PLANT_fused_descriptions"
    doc = {"text": "Fiebre y tos. Apendicitis aguda con peritonitis generalizada.",
           "text_en": "Fever and cough. Acute appendicitis with generalized peritonitis."}
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "a", **doc}) + "\n", encoding="utf-8")
    pred = tmp_path / "pred.jsonl"
    assert main(["predict", "--model", str(folder), "--input", str(tmp_path / "docs.jsonl"),
                 "--output", str(pred), "--top-k", "5", "--evidence"]) == 0
    rec = json.loads(pred.read_text().splitlines()[0])
    model = load_saved(folder)
    model = model[0] if isinstance(model, tuple) else model
    ex = model.explain([doc], top_labels=5)[0]["labels"]
    assert [e["label"] for e in rec["evidence"]] == [str(e["label"]) for e in ex] \
        == [t["label"] for t in rec["top"]]
    unseen = set(model.unseen_.tolist())
    for e, ev in zip(ex, rec["evidence"]):
        assert e["source"] == ("descriptions" if e["index"] in unseen else "model")
        assert ev["spans"] == e["spans"]
        for span in ev["spans"]:
            assert span["field"] == ("text_en" if e["source"] == "descriptions" else "text")
            assert doc[span["field"]][span["start"]:span["end"]] == span["text"]
    (tmp_path / "txt").mkdir()
    (tmp_path / "txt" / "a.txt").write_text(doc["text"], encoding="utf-8")
    assert main(["predict", "--model", str(folder), "--input", str(tmp_path / "txt"),
                 "--output", str(tmp_path / "p2.jsonl")]) == 2
    assert "reads the field 'text_en' besides the text" in capsys.readouterr().err


def test_report_cli_renders(smoke_run):
    from xplant.app.cli import main
    out, _, _ = smoke_run
    assert main(["report", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "PLANT" in html and "<table" in html


def test_zero_shot_records_and_a_saved_models_spans(smoke_run):
    """Each row records its zero-shot predictions; a real model explains zero-shot labels."""
    from sklearn.utils import Bunch
    from xplant.app._examples import zero_shot_rows
    from xplant.datasets import load_codiesp
    from xplant.neural import load_model
    from xplant.report import load_per_label
    out, res, _ = smoke_run
    freq = load_per_label(out / "per_label.npz")["train_frequency"]
    zero = np.flatnonzero(freq == 0)
    # the rows over the training columns list their zero-shot codes; the descriptions
    # row ranks the open label space (a catalogue) and lists its unseen codes apart
    closed = [m for m in res["models"] if "label_space" not in m]
    assert [m["name"] for m in res["models"] if m not in closed] == [
        "PLANT fused + descriptions", "PLANT fused + descriptions + mentions"]
    for m in closed:
        z = m["zero_shot"]
        assert z["k"] == m["k"] and z["n_zero_shot_labels"] == zero.size > 0
        assert z["explained"] == (m["name"] not in ("frequency prior", "TF-IDF + SVM"))
        assert z["shown"] == len(z["predictions"]) == min(z["n_predictions"], 20)
        assert z["rule"] == m["rule"]                 # the row's own rule, chosen on dev
        for p in z["predictions"]:
            assert freq[p["label_index"]] == 0 and p["rank"] >= 1
            if m["rule"] == "top_k":
                assert p["rank"] <= m["k"]
            elif m["rule"] == "threshold":
                assert p["score"] >= m["threshold"]
    # the descriptions row's unseen channel: codes no training document carries, each
    # with the note's sentence that matched it (a span of the note, to the character)
    from xplant.datasets import load_codiesp
    te = load_codiesp("test")
    text_of = dict(zip(te.ids[:N_DOCS], te.texts[:N_DOCS]))
    desc = next(m for m in res["models"] if m["name"] == "PLANT fused + descriptions")
    assert "zero_shot" not in desc
    seen_codes = set(np.asarray(load_codiesp("train").label_names)[freq > 0].tolist())
    assert desc["label_space"]["n_open_labels"] > 70_000 and desc["unseen_suggestions"]
    for rec in desc["unseen_suggestions"]:
        assert 1 <= len(rec["suggestions"]) <= 5
        scores = [s["score"] for s in rec["suggestions"]]
        assert scores == sorted(scores, reverse=True)
        for s in rec["suggestions"]:
            assert s["label"] not in seen_codes
            span = s["span"]
            assert text_of[rec["id"]][span["start"]:span["end"]] == span["text"]
            assert 0 <= span["weight"] <= 1
    assert any(s["span"]["weight"] > 0 for rec in desc["unseen_suggestions"]
               for s in rec["suggestions"])
    from xplant.report import render_report
    text = " ".join(render_report(out).read_text(encoding="utf-8").split())
    n_none = sum(m["zero_shot"]["n_predictions"] == 0 for m in closed)
    assert text.count("No zero-shot predictions") == n_none
    # scores that rank a zero-shot label first (as a fused row may): the saved
    # PLANT model's own probability and attention spans for it
    tr, te = load_codiesp("train"), load_codiesp("test")
    train = Bunch(Y=tr.Y[:N_DOCS], label_names=tr.label_names)
    test = Bunch(Y=te.Y[:2, :freq.size], ids=te.ids[:2], texts=te.texts[:2])
    S = np.zeros((2, freq.size))
    S[0, zero[0]] = S[1, zero[-1]] = 1.0
    clf = load_model(out / "models" / "PLANT")
    rec = zero_shot_rows([(S, 1)], clf, test, train)[0]
    assert [(p["doc_id"], p["label_index"], p["rank"]) for p in rec["predictions"]] == \
        [(te.ids[0], zero[0], 1), (te.ids[1], zero[-1], 1)]
    for i, (doc, p) in enumerate(zip(test.texts, rec["predictions"])):
        assert p["gold"] == bool(test.Y[i, p["label_index"]])
        assert p["label"] == str(tr.label_names[p["label_index"]]) and 0 < p["prob"] < 1
        assert p["spans"] and all(doc[s["start"]:s["end"]] == s["text"] for s in p["spans"])


def test_read_documents_errors(tmp_path):
    from xplant.app._predict import read_documents
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"text": "a"}\n{"txt": "b"}\n')
    with pytest.raises(ValueError, match="line 2"):
        read_documents(bad)
    csv_file = tmp_path / "x.csv"
    csv_file.write_text("id,text\n1,a\n")
    with pytest.raises(ValueError, match="cannot tell the format of .*x.csv"):
        read_documents(csv_file)
    tsv = tmp_path / "x.tsv"
    tsv.write_text("id\tbody\n1\ta\n")
    with pytest.raises(ValueError, match="x.tsv, line 1: no field 'text' in the header"):
        read_documents(tsv)


def test_linear_rows_saved_and_predicted_without_pickle(smoke_run, tmp_path):
    """The prior and TF-IDF + SVM rows are saved (JSON + safetensors) and xplant predict reads them."""
    from xplant.app.cli import main
    from xplant.datasets import load_codiesp
    from xplant.linear import predict_top_k
    from xplant import load_saved
    out, res, _ = smoke_run
    lr = next(m for m in res["models"] if m["name"] == "TF-IDF + SVM")
    folder = out / "models" / "TF-IDF_SVM"
    assert lr["saved_to"] == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["arrays.safetensors", "config.json",
                                                        "row.json"]
    model, decision = load_saved(folder)
    # the saved rule is the run's, chosen on dev
    assert (decision["rule"], decision["k"], decision["threshold"]) == \
        (lr["rule"], lr["k"], lr["threshold"])
    assert lr["decision_choice"]["value"] == lr["rule"] == lr["decision"]["rule"]
    te = load_codiesp("test")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in zip(te.ids[:3], te.texts[:3])), encoding="utf-8")
    pred = tmp_path / "pred.jsonl"
    assert main(["predict", "--model", str(folder), "--input", str(docs), "--output", str(pred),
                 "--top-k", "5"]) == 0
    recs = [json.loads(line) for line in pred.read_text().splitlines()]
    idx, _ = predict_top_k(model, te.texts[:3], 5)
    names = [str(c) for c in model[-1].classes_]
    assert [[t["label"] for t in r["top"]] for r in recs] == [[names[j] for j in row] for row in idx]
    from xplant._saved import decide
    want = decide(model, te.texts[:3], decision)
    assert [sorted(r["predicted"]) for r in recs] == \
        [sorted(names[j] for j in row.indices) for row in want]
    prior, _ = load_saved(out / "models" / "frequency_prior")
    np.testing.assert_allclose(prior.predict_proba(["x"])[0],
                               np.asarray(load_codiesp("train").Y[:N_DOCS].sum(0)).ravel() / N_DOCS)


def test_the_descriptions_row_is_saved_and_xplant_predict_answers_as_the_row(smoke_run,
                                                                              tmp_path):
    """models/PLANT_fused_descriptions reproduces its row: the fusion (dev MAP to the last
    bit), the row's dev-chosen rule, a copy of models/PLANT inside; xplant predict reads it."""
    from xplant import load_saved
    from xplant._saved import decide, decision_record
    from xplant.app._rows import saved_row
    from xplant.app.cli import main
    from xplant.datasets import load_codiesp
    from xplant.metrics import mean_average_precision
    from xplant.unseen import DescriptionFusion
    out, res, _ = smoke_run
    row = next(m for m in res["models"] if m["name"] == "PLANT fused + descriptions")
    folder = out / "models" / "PLANT_fused_descriptions"
    assert row["saved_to"] == str(folder) and "not_saved" not in row
    assert saved_row(folder) == "PLANT fused + descriptions"
    model, decision = load_saved(folder)
    assert type(model) is DescriptionFusion
    assert (model.weight_, model.seen_weight_) == (row["description_weight"],
                                                   row["description_seen_weight"])
    assert decision_record(decision) == row["decision"]        # the rule the row reports
    dev, en = load_codiesp("dev", language="es"), load_codiesp("dev", descriptions=False)
    # the row reads the Spanish, its description source the English beside it
    texts = [{"text": t, "text_en": e} for t, e in zip(dev.texts[:N_DOCS], en.texts[:N_DOCS])]
    Y = dev.Y[:N_DOCS]
    # the row ranks the open label space; dev's codes are its first columns
    assert float(mean_average_precision(model.open_targets(Y), model.decision_function(texts))) \
        == row["dev_MAP"]
    for name in ("model.safetensors", "config.json", "shortlist/arrays.safetensors"):
        assert (folder / "estimator" / name).read_bytes() == \
            (out / "models" / "PLANT" / name).read_bytes()
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": str(i), **t}) + "\n"
                            for i, t in enumerate(texts[:3])), encoding="utf-8")
    assert main(["predict", "--model", str(folder), "--input", str(docs),
                 "--output", str(tmp_path / "pred.jsonl"), "--top-k", "5"]) == 0
    recs = [json.loads(l) for l in (tmp_path / "pred.jsonl").read_text().splitlines()]
    names = [str(c) for c in model.classes_]
    scores = model.decision_function(texts[:3])
    want = decide(model, texts[:3], decision)
    for i, rec in enumerate(recs):
        assert rec["decision"] == dict(row["decision"], scale="decision_function")
        assert [t["label"] for t in rec["top"]] == \
            [names[j] for j in model.predict_top_k(texts[i:i + 1], 5)[0][0]]
        row_scores = scores[i].toarray().ravel() if hasattr(scores, "toarray") else scores[i]
        assert [t["score"] for t in rec["top"]] == sorted(row_scores, reverse=True)[:5]
        assert sorted(rec["predicted"]) == sorted(names[j] for j in want[i].indices)


def test_run_help_names_the_default_rows():
    """``xplant run --help`` states the rows run without ``--models``: those the job runs."""
    import argparse
    from xplant.app import find_row
    from xplant.app._run import DEFAULT_MODELS
    from xplant.app.cli import build_parser
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    models = next(a for a in sub.choices["run"]._actions if a.dest == "models")
    assert models.help.endswith("; default: prior,svm,plant")
    assert [find_row(m).name for m in DEFAULT_MODELS] == ["prior", "svm", "plant"]


@pytest.mark.parametrize("name", ["svm", "lr"])
def test_linear_rows_are_seeded_by_the_run(name):
    """The linear rows take the run's seed: two fits with it give the same model."""
    from xplant.app import build_model
    texts = [f"w{i % 7} w{i % 5} w{i % 3} x{i % 11}" for i in range(60)]
    rng = np.random.default_rng(0)
    Y = (rng.random((60, 4)) < 0.4).astype(np.int64)
    fits = [build_model(name, random_state=s, verbose=0).set_params(ovr__C=1.0).fit(texts, Y)
            for s in (3, 3)]
    assert fits[0].get_params()["ovr__random_state"] == 3
    z = [f.decision_function(texts) for f in fits]
    np.testing.assert_array_equal(z[0], z[1])


def test_each_saved_folder_records_the_row_it_reproduces(smoke_run):
    """A shortlisted fit's folder answers with fused scores: it says "PLANT fused", and only
    that row points at it; its inner shortlist/ folder is no model of its own."""
    from xplant import load_saved
    from xplant.app._rows import saved_row
    out, res, _ = smoke_run
    rows = {m["name"]: m for m in res["models"]}
    assert saved_row(out / "models" / "PLANT") == "PLANT fused"
    assert saved_row(out / "models" / "plant-False") == "plant=False fused"
    assert saved_row(out / "models" / "TF-IDF_SVM") == "TF-IDF + SVM"
    assert saved_row(out / "models" / "frequency_prior") == "frequency prior"
    for base in ("PLANT", "plant=False"):
        assert "saved_to" not in rows[base] and "saved_to" not in rows[base + " fused, α=1"]
        assert rows[base + " fused"]["saved_to"] == rows[base + " fused"]["saved_to"]
    assert rows["PLANT fused"]["saved_to"] == str(out / "models" / "PLANT")
    # the saved model's own scores are the fused row's: its dev-chosen α, as predict_proba gives
    clf, _ = load_saved(out / "models" / "PLANT")
    assert clf.fusion_weight_ == rows["PLANT fused"]["fusion_weight_of_row"]
    inner = out / "models" / "PLANT" / "shortlist"
    assert inner.is_dir()
    with pytest.raises(ValueError, match="the shortlist inside a saved PLANT model.*pass the "
                                         "model folder"):
        load_saved(inner)


def test_repeated_rows_are_shown_once(smoke_run):
    """α = 1 of a fit whose shortlist is the run's SVM is the SVM row by construction."""
    _, res, _ = smoke_run
    rows = {m["name"]: m for m in res["models"]}
    for base in ("plant=False", "PLANT"):
        assert rows[base + " fused, α=1"]["same_as"] == "TF-IDF + SVM"
        assert "same_as" not in rows[base] and "same_as" not in rows[base + " fused"]
    lines = format_table(res["models"]).splitlines()
    same = [l for l in lines if "α=1" in l]
    assert len(same) == 2 and all(l.split("  = ")[1] == "TF-IDF + SVM" for l in same)
    assert sum(l.startswith("TF-IDF + SVM") for l in lines) == 1     # its numbers printed once
    from xplant.app import markdown_table
    md = markdown_table(res["models"], resources=False).splitlines()
    assert [l.split(" | ")[1] for l in md if "α=1" in l] == ["= TF-IDF + SVM"] * 2


def test_report_says_which_rows_repeat_and_counts_the_zero_shot_group(smoke_run, tmp_path):
    from xplant.report import render_report
    out, res, _ = smoke_run
    html = render_report(out, out=tmp_path / "report").read_text(encoding="utf-8")
    assert "PLANT fused, α=1 (= TF-IDF + SVM)" in html
    # the zero-shot group's size is a count, not a percentage
    n = next(m for m in res["models"] if m["name"] == "PLANT")["metrics"]["zero_n_labels"]
    assert f"<td>{n:.2f}</td>" in html and f"<td>{100 * n:.1f}</td>" not in html


def test_designate_reads_dev_map_only():
    """The job's model: best dev MAP, ties keep the earlier row, rows by construction
    (same_as) are skipped, and test metrics never enter the choice."""
    from xplant.app._results import designate
    res = {"models": [
        {"name": "a", "dev_MAP": 0.30, "metrics": {"MAP": 0.9}},
        {"name": "b", "dev_MAP": 0.40, "metrics": {"MAP": 0.1}},
        {"name": "c", "dev_MAP": 0.40, "metrics": {"MAP": 0.5}},
        {"name": "d", "dev_MAP": 0.99, "same_as": "a", "metrics": {}}]}
    assert designate(res) == "b"
    assert res["designated"]["name"] == "b" and res["designated"]["dev_MAP"] == 0.40
    assert [m["name"] for m in res["models"] if m.get("designated")] == ["b"]
    assert designate({"models": [{"name": "a", "dev_MAP": 0.0}]}) is None


def test_a_description_encoder_folder_that_cannot_load_is_refused_before_fitting(tmp_path):
    from xplant.app._job import run_job
    out = tmp_path / "run"
    with pytest.raises(FileNotFoundError, match=r"--description-encoder hf:.*config\.json"):
        run_job(out, description_encoder=f"hf:{tmp_path}", verbose=0, log=lambda *a: None)
    assert not out.exists()                                   # nothing written, nothing fitted
    with pytest.raises(ValueError, match="description_encoder must be"):
        run_job(out, description_encoder=3, verbose=0, log=lambda *a: None)
