"""``xplant run`` over an open label space and the descriptions row, on the toy corpus."""

import json

import numpy as np
import pytest

WORDS = {"A10": ("fever", "cough"), "B20": ("fracture", "femur"), "C30": ("rash", "itch"),
         "D40": ("chest", "pain")}
FAST_PLANT = ["--epochs", "1", "--plant-epochs", "1", "--no-isolate"]


def docs(n, seed):
    """The open-space cases' notes: each label adds its two cue words, then five fillers."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        labels = [str(x) for x in rng.choice(list(WORDS), size=rng.integers(1, 3), replace=False)]
        words = [w for lab in labels for w in WORDS[lab]]
        words += [str(x) for x in rng.choice(["patient", "day", "the", "note", "seen"], 5)]
        out.append({"id": f"s{seed}-{i}", "text": " ".join(rng.permutation(words)),
                    "labels": labels})
    return out


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def described():
    return [{"label": n, "description": " ".join(w)} for n, w in WORDS.items()]


def test_without_unseen_dev_codes_the_channel_takes_the_fallback_and_ranks_by_text(tmp_path):
    """No --dev: dev is carved from train and holds no unseen code. The unseen weights take
    their fallback (weight 1 on ``text``) with a NoDevDataWarning, and each note's suggestions
    start with the code it names, not with the catalogue's first codes."""
    pytest.importorskip("torch")
    from xplant.app.cli import main
    from xplant.model_selection import NoDevDataWarning
    extra = [("E50", "headache migraine"), ("E51", "vomiting nausea"), ("F60", "back pain lumbar"),
             ("F61", "neck stiffness"), ("G70", "dizziness vertigo"), ("G71", "tinnitus ringing"),
             ("H80", "ear infection otitis"), ("H81", "eye redness conjunctivitis"),
             ("J90", "sore throat pharyngitis"), ("K11", "diarrhea gastroenteritis")]
    gold = extra[-4:]
    test = docs(8, 2)
    for i, r in enumerate(test):
        r["text"] += f". The patient reports {gold[i % 4][1]}."
        r["labels"].append(gold[i % 4][0])
    cat = described() + [{"label": c, "description": n} for c, n in extra]
    with pytest.warns(NoDevDataWarning, match="unseen_label_weights: dev cannot choose it"):
        assert main(["run", "--train", write_jsonl(tmp_path / "train.jsonl", docs(40, 0)),
                     "--test", write_jsonl(tmp_path / "test.jsonl", test),
                     "--labels", write_jsonl(tmp_path / "cat.jsonl", cat),
                     "--label-descriptions", write_jsonl(tmp_path / "desc.jsonl", described()),
                     "--models", "plant", "--description-encoder", "none",
                     "--output", str(tmp_path / "run"), "--quiet", *FAST_PLANT]) == 0
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    row = next(m for m in res["models"] if m["name"] == "PLANT fused + descriptions")
    w = row["description_weights"]
    assert (w["weight"], w["near_weight"], w["family_weight"], w["prior_weight"]) == \
        (1.0, 0.0, 0.0, 0.0)
    firsts = [s["suggestions"][0]["label"] for s in row["unseen_suggestions"]]
    assert firsts == [gold[i % 4][0] for i in range(len(firsts))]
    assert all(s["suggestions"][0]["text"] > 0.5 for s in row["unseen_suggestions"])
    assert row["metrics"]["unseen_R@5"] == 1.0


def test_the_descriptions_row_keeps_its_null_probabilities_in_evidence(tmp_path):
    """``prob`` is None for a cosine: evidence.json keeps it as null and the report shows it."""
    from xplant.app.cli import main
    out = tmp_path / "run"
    assert main(["run", "--train", write_jsonl(tmp_path / "train.jsonl", docs(40, 0)),
                 "--dev", write_jsonl(tmp_path / "dev.jsonl", docs(12, 1)),
                 "--test", write_jsonl(tmp_path / "test.jsonl", docs(12, 2)),
                 "--label-descriptions", write_jsonl(tmp_path / "desc.jsonl", described()),
                 "--models", "descriptions", "--description-encoder", "none", "--no-isolate",
                 "--report", "--quiet", "--output", str(out)]) == 0
    row = json.loads((out / "results.json").read_text())["models"][0]
    assert row["name"] == "descriptions" and "evidence_error" not in row
    evidence = json.loads((out / "evidence.json").read_text())
    codes = [c for d in next(iter(evidence.values())) for c in d["codes"]]
    assert codes and all(c["prob"] is None for c in codes)
    assert any(c["spans"] for c in codes)
    assert "has none" not in (out / "report.html").read_text(encoding="utf-8")


def test_evidence_examples_keep_a_model_probability_and_a_missing_one():
    """A model's probability stays a float and a label no probability scored stays None."""
    import scipy.sparse as sp
    from sklearn.utils import Bunch
    from xplant.app._examples import evidence_examples

    class Explains:
        def explain(self, texts, top_labels, top_spans):
            return [{"labels": [{"index": 0, "prob": np.float32(0.25), "spans": []},
                                {"index": 1, "prob": None, "spans": []}]} for _ in texts]

    test = Bunch(Y=sp.csr_matrix(np.array([[1, 0]])), texts=["fever"], ids=["n1"],
                 label_names=np.array(["A10", "B20"]))
    train = Bunch(label_names=np.array(["A10", "B20"]), label_descriptions=["fever", "fracture"])
    codes = evidence_examples(Explains(), test, train)[0]["codes"]
    assert [(c["code"], c["prob"]) for c in codes] == [("A10", 0.25), ("B20", None)]
    assert json.loads(json.dumps(codes))[1]["prob"] is None
