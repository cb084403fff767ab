"""Scores and saved models as a new user meets them: labels a model never saw, predict
records, saved folders, ties from saturated probabilities, corrupt weights, a huge k."""

import json

import numpy as np
import pytest

from xplant.linear import make_tfidf_ovr, predict_top_k, save_linear

CUES = {"A10": ("fever", "chills"), "B20": ("cough", "sputum"), "C30": ("rash", "itch"),
        "D40": ("pain", "ache")}
NAMES = sorted(CUES)


def toy(n, offset=0):
    """Notes labelled A10 B20 C30 D40 in turn, each with one of its label's two cue words."""
    texts, labels = [], []
    for i in range(offset, offset + n):
        lab = NAMES[i % 4]
        texts.append(f"the patient reports {CUES[lab][(i // 4) % 2]} since monday, note {i}")
        labels.append([lab])
    return texts, labels


def write_jsonl(path, texts, labels):
    path.write_text("".join(json.dumps({"id": f"n{i}", "text": t, "labels": l}) + "\n"
                            for i, (t, l) in enumerate(zip(texts, labels))), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def svm(tmp_path_factory):
    """The SVM (TF-IDF + one-vs-rest) on 40 toy notes, saved; (folder, model)."""
    texts, labels = toy(40)
    model = make_tfidf_ovr(min_df=1).fit(texts, labels)
    path = tmp_path_factory.mktemp("svm") / "svm"
    model[-1].decision_rule_ = {"rule": "top_k", "k": 1, "threshold": 0.0}
    save_linear(model, path)
    return path, model


# ---------------------------------------------------------------- labels never seen
def test_evaluate_counts_unseen_labels_as_never_ranked_misses(svm, tmp_path):
    from xplant.app._fit import evaluate_model
    folder, model = svm
    texts, labels = toy(10, offset=40)
    assert [n[0] for n in predict_top_k(model, texts, 1)[0].tolist()] == \
        [NAMES.index(l[0]) for l in labels]               # the SVM ranks each note's label first
    labels = [l + ["E50"] if i % 2 else l for i, l in enumerate(labels)]    # 5 of 10 notes
    test = write_jsonl(tmp_path / "test.jsonl", texts, labels)
    with pytest.warns(UserWarning, match="1 label.*unknown to the model count as misses: E50"):
        report = evaluate_model(folder, test, log=lambda *a: None)
    m = report["metrics"]
    # hand-computed with E50 in y_true and never ranked: notes with E50 find 1 of 2 labels
    assert m["P@1"] == 1.0
    assert m["R@5"] == pytest.approx((5 * 1.0 + 5 * 0.5) / 10)      # 0.75, not 1.0
    assert m["MAP"] == pytest.approx((5 * 1.0 + 5 * 0.5) / 10)      # AP of {X, E50}: (1/1) / 2
    assert m["micro_R"] == pytest.approx(10 / 15)
    assert m["zero_R@5_full"] == 0.0 and m["zero_R@5"] == 0.0       # not 100 %
    assert (m["zero_n_labels"], m["zero_n_documents"]) == (1.0, 5.0)
    assert report["unknown_labels"] == ["E50"]


def test_main_table_shows_zero_shot_recall_in_the_full_ranking_with_the_group_size():
    from xplant.app import markdown_table
    from xplant.app._tables import format_table
    # a group of one unseen label ranked alone is always found: 100 %; in the full ranking 0 %
    metrics = {"zero_R@5": 1.0, "zero_R@5_full": 0.0, "zero_n_labels": 1.0}
    table = format_table([{"name": "prior", "metrics": metrics, "k": 1, "fit_seconds": 0.0}])
    head, _, row = table.splitlines()
    assert "zero R@5" in head and "zero n" in head and "100.0" not in row
    assert row.split()[-5:-3] == ["0.0", "1"]     # then "labels" (nan: none given), rule, fit s
    md = markdown_table([{"name": "prior", "metrics": metrics}], resources=False)
    assert md.splitlines()[-1].endswith("| 0.0 | 1 | - | - |")


# ---------------------------------------------------------------- predict records
def test_predict_records_use_the_rules_scale_and_list_predicted_best_first(tmp_path):
    from xplant.app._predict import predict_file
    from xplant.linear import make_tfidf_logistic
    texts, labels = toy(40)
    lr = make_tfidf_logistic(min_df=1).fit(texts, labels)
    folder = tmp_path / "lr"
    lr[-1].decision_rule_ = {"rule": "threshold", "k": 1, "threshold": 0.2}
    save_linear(lr, folder)
    notes = tmp_path / "notes.jsonl"
    docs = ["fever and cough and rash since monday", "itch", "nothing at all"]
    notes.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                             for i, t in enumerate(docs)), encoding="utf-8")
    out = tmp_path / "pred.jsonl"
    predict_file(folder, notes, out, top_k=4)
    proba = lr.predict_proba(docs)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for i, rec in enumerate(records):
        assert rec["decision"]["scale"] == "probability"
        scores = {t["label"]: t["score"] for t in rec["top"]}
        assert list(scores.values()) == sorted(scores.values(), reverse=True)
        for t in rec["top"]:
            assert t["score"] == pytest.approx(proba[i, NAMES.index(t["label"])])
        # the printed threshold applied to the printed scores selects exactly `predicted`
        assert {l for l, s in scores.items() if s >= 0.2} == set(rec["predicted"])
        assert rec["predicted"] == sorted(rec["predicted"], key=lambda l: -scores[l])
    assert len(records[0]["predicted"]) >= 2         # several labels: the order is tested


# ---------------------------------------------------------------- ties from saturated probabilities
def test_ties_from_saturated_probabilities_follow_the_logits(tiny_model, tmp_path):
    torch = pytest.importorskip("torch")
    from xplant.neural import load_model
    path, _ = tiny_model
    clf = load_model(path)                               # a copy: the fixture stays as fitted
    with torch.no_grad():                                # logits = the label biases, exactly
        clf.module_.head_weight.zero_()
        clf.module_.label_bias.copy_(torch.tensor([20.0, 30.0, -5.0, -5.0]))
    z = np.array([20.0, 30.0], dtype=np.float32)
    assert (torch.sigmoid(torch.from_numpy(z)).numpy() == 1.0).all()   # σ ties in float32
    from xplant.metrics import DecisionRule
    clf.parts_["decision_rule"] = DecisionRule("top_k", k=1, threshold=clf.threshold_)   # top-1
    docs = ["fever since monday"]
    assert clf.decision_function(docs)[0, :2].tolist() == [20.0, 30.0]
    idx, p = clf.predict_top_k(docs, 1)
    assert idx.tolist() == [[1]] and p.tolist() == [[1.0]]         # logit 30 first, not column 0
    assert clf.predict(docs).toarray().tolist() == [[0, 1, 0, 0]]
    clf.save(tmp_path / "m")
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"id": "a", "text": docs[0]}) + "\n", encoding="utf-8")
    out = tmp_path / "pred.jsonl"
    from xplant.app.cli import main
    assert main(["predict", "--model", str(tmp_path / "m"), "--input", str(notes),
                 "--output", str(out), "--top-k", "2"]) == 0
    rec = json.loads(out.read_text())
    names = [str(c) for c in clf.classes_]
    assert [t["label"] for t in rec["top"]] == [names[1], names[0]]
    assert rec["predicted"] == [names[1]]
    # xplant evaluate ranks the same way: the gold label of logit 30 is at rank 1
    from xplant.app._fit import evaluate_model
    gold = write_jsonl(tmp_path / "gold.jsonl", docs, [[names[1]]])
    m = evaluate_model(tmp_path / "m", gold, log=lambda *a: None)["metrics"]
    assert (m["P@1"], m["MAP"], m["micro_F1"]) == (1.0, 1.0, 1.0)


# ---------------------------------------------------------------- a corrupt weights file
def _corrupt(file, how):
    data = bytearray(file.read_bytes())
    if how == "half":
        data = data[:len(data) // 2]
    else:                                    # a header byte flipped: its length, or its JSON
        data[0 if how == "length" else 12] ^= 0xFF
    file.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def saved_kinds(svm, tiny_model, tmp_path_factory):
    """One saved folder of each kind, and the weights file inside it: {kind: (folder, file)}."""
    from xplant.linear import FrequencyPrior
    root = tmp_path_factory.mktemp("kinds")
    prior = FrequencyPrior().fit(np.zeros((3, 1)), [["A"], ["A", "B"], ["B"]])
    save_linear(prior, root / "prior")
    plant, _ = tiny_model
    return {"prior": (root / "prior", "arrays.safetensors"),
            "svm": (svm[0], "arrays.safetensors"),
            "plant": (plant, "model.safetensors"),
            "plant relevance": (plant, "relevance/relevance.safetensors")}


@pytest.mark.parametrize("how", ["half", "length", "json"])
@pytest.mark.parametrize("kind", ["prior", "svm", "plant", "plant relevance"])
def test_a_corrupt_weights_file_names_the_file(saved_kinds, kind, how, tmp_path):
    import shutil
    from xplant import load_saved
    folder, name = saved_kinds[kind]
    if kind.startswith("plant"):
        pytest.importorskip("torch")
    copy = tmp_path / "m"
    shutil.copytree(folder, copy)
    _corrupt(copy / name, how)
    size = (copy / name).stat().st_size
    with pytest.raises(ValueError, match=rf"{name.split('/')[-1]} \({size} bytes\) is not a "
                                         r"whole safetensors file: .+save the model again"):
        load_saved(copy)


def test_a_corrupt_checkpoint_and_planting_name_the_file(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file
    from xplant.neural import load_planting
    (tmp_path / "p").mkdir()
    save_file({"w": torch.zeros(40)}, str(tmp_path / "p" / "planted.safetensors"))
    (tmp_path / "p" / "planting.json").write_text("{}")
    _corrupt(tmp_path / "p" / "planted.safetensors", "half")
    with pytest.raises(ValueError, match=r"planted.safetensors \(\d+ bytes\) is not a whole"):
        load_planting(tmp_path / "p")


# ---------------------------------------------------------------- a huge k
@pytest.mark.parametrize("kind", ["prior", "svm", "plant"])
def test_a_huge_k_ranks_every_label_and_allocates_no_k_columns(saved_kinds, kind, tmp_path):
    from xplant import load_saved
    from xplant.app.cli import main
    from xplant.linear import predict_top_k
    if kind == "plant":
        pytest.importorskip("torch")
    folder, _ = saved_kinds[kind]
    model, _ = load_saved(folder)
    n_labels = len(model.steps[-1][1].classes_ if hasattr(model, "steps") else model.classes_)
    idx, scores = predict_top_k(model, ["fever and cough"], 10**12)
    assert idx.shape == scores.shape == (1, n_labels)
    assert sorted(idx[0].tolist()) == list(range(n_labels))
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"id": "a", "text": "fever and cough"}) + "\n", encoding="utf-8")
    out = tmp_path / "pred.jsonl"
    assert main(["predict", "--model", str(folder), "--input", str(notes), "--output", str(out),
                 "--top-k", str(10**12)]) == 0
    assert len(json.loads(out.read_text())["top"]) == n_labels


def test_evaluate_reports_the_row_a_folder_reproduces(svm, tmp_path):
    from xplant.app import save_row
    from xplant.app._fit import evaluate_model
    _, model = svm
    save_row(model, model.steps[-1][1], tmp_path / "m", row="TF-IDF + SVM")
    assert json.loads((tmp_path / "m" / "row.json").read_text()) == {"row": "TF-IDF + SVM"}
    texts, labels = toy(8, offset=40)
    lines = []
    report = evaluate_model(tmp_path / "m", write_jsonl(tmp_path / "t.jsonl", texts, labels),
                            log=lines.append)
    assert report["row"] == "TF-IDF + SVM" and "TF-IDF + SVM" in lines[-1]


def test_plant_fused_with_descriptions_is_saved_and_predicts_as_in_memory(tiny_model, make_texts,
                                                                          tmp_path):
    """The run's description row over a PLANT model (frozen), saved as ``xplant run`` saves it:
    xplant predict reads the folder and answers with the in-memory scores and the saved rule."""
    pytest.importorskip("torch")
    from sklearn.frozen import FrozenEstimator
    from xplant import load_saved
    from xplant._saved import decide
    from xplant.app import save_row
    from xplant.app._rows import keep_rule
    from xplant.app.cli import main
    from xplant.unseen import DescriptionFusion
    _, clf = tiny_model
    texts, labels = make_texts()
    names = [str(c) for c in clf.classes_]
    Y = np.array([[n in l for n in names] for l in labels], dtype=np.int64)
    desc = ["signal zero sig0", "signal one sig1", "signal two", "signal three sig3"]
    f = DescriptionFusion(FrozenEstimator(clf), weight=1.0, seen_weight=0.5).fit(
        texts, Y, label_descriptions=desc, label_names=names)
    new = ["sig0 w1 w2 w3", "w4 signal two sig2", "w5"]
    scores = f.decision_function(new)
    rule = {"rule": "threshold", "k": 2, "threshold": float(np.median(scores)), "thresholds": None}
    keep_rule(f, rule)                               # the run's dev-chosen rule, as xplant run
    assert save_row(f, f, tmp_path / "m", row="PLANT fused + descriptions") == \
        {"saved_to": str(tmp_path / "m")}
    assert json.loads((tmp_path / "m" / "row.json").read_text()) == \
        {"row": "PLANT fused + descriptions"}
    g, decision = load_saved(tmp_path / "m")
    np.testing.assert_array_equal(g.decision_function(new), scores)        # to the bit
    assert type(g.estimator_).__name__ == "FrozenEstimator"
    notes = tmp_path / "notes.jsonl"
    notes.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                             for i, t in enumerate(new)), encoding="utf-8")
    assert main(["predict", "--model", str(tmp_path / "m"), "--input", str(notes),
                 "--output", str(tmp_path / "pred.jsonl"), "--top-k", "4"]) == 0
    recs = [json.loads(l) for l in (tmp_path / "pred.jsonl").read_text().splitlines()]
    want = decide(f, new, rule)
    for i, rec in enumerate(recs):
        assert rec["decision"] == {"rule": "threshold", "k": 2, "threshold": rule["threshold"],
                                   "scale": "decision_function"}
        assert [t["score"] for t in rec["top"]] == sorted(scores[i], reverse=True)
        assert sorted(rec["predicted"]) == sorted(names[j] for j in want[i].indices)
        assert all(p["score"] >= rule["threshold"] for p in rec["passed"])
    assert sum(len(r["predicted"]) for r in recs) == int((scores >= rule["threshold"]).sum())
