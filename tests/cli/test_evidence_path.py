"""Gold evidence on a user's own files: read, checked, learned from, never read from test.

A toy corpus: labels A10 B20 C30 D40 with two cue words each, and E50, whose
notes say "xerosis cutis" among the other labels' words. Only the cheap rows
run (the frequency prior and the mention matcher), in this process.
"""

import json

import numpy as np
import pytest

from xplant.app.cli import main
from xplant.datasets import read_labelled_texts

CUES = {"A10": ("fever", "cough"), "B20": ("fracture", "femur"), "C30": ("rash", "itch"),
        "D40": ("chest", "pain")}
MENTION = "xerosis cutis"
FAST = ["--no-isolate", "--quiet"]


def _notes(n, seed, *, with_e50=True):
    """Notes with their labels and evidence: each label's first cue word is its mention."""
    rng = np.random.default_rng(seed)
    names = list(CUES)
    out = []
    for i in range(n):
        labels = [names[i % 4]]
        words = list(CUES[labels[0]]) + list(rng.choice(["seen", "today", "the", "day"], 3))
        text = " ".join(rng.permutation(words))
        first = CUES[labels[0]][0]
        evidence = [{"label": labels[0], "spans": [[text.index(first),
                                                      text.index(first) + len(first)]]}]
        if with_e50 and i % 5 == 0:
            start = len(text) + 1
            text += " " + MENTION
            labels.append("E50")
            evidence.append({"label": "E50", "spans": [[start, start + len(MENTION)]]})
        out.append({"id": f"s{seed}-{i}", "text": text, "labels": labels, "evidence": evidence})
    return out


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    return {"train": _write(d / "train.jsonl", _notes(40, 0)),
            "dev": _write(d / "dev.jsonl", _notes(10, 1)),
            "test": _write(d / "test.jsonl", _notes(10, 2))}


def _data(corpus, evidence=True):
    return ["--train", corpus["train"], "--dev", corpus["dev"], "--test", corpus["test"],
            *(["--evidence-field", "evidence"] if evidence else [])]


def _cli(args, capsys):
    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().err


def _metrics(run):
    models = json.loads((run / "results.json").read_text(encoding="utf-8"))["models"]
    return {m["name"]: {k: v for k, v in m.items() if k in ("metrics", "dev_MAP", "rule",
                                                             "threshold", "k")} for m in models}


def _outputs(run):
    """What a run wrote besides ``results.json``: its per-label test figures (arrays) and its
    saved models' files (bytes)."""
    out = {}
    for part in sorted(run.glob("parts/*.npz")) + [run / "per_label.npz"]:
        with np.load(part) as z:
            out[part.relative_to(run).as_posix()] = {k: z[k] for k in z.files}
    for file in sorted(run.glob("models/*/*")):
        out[file.relative_to(run).as_posix()] = file.read_bytes()
    return out


def test_a_label_only_a_training_mention_reaches_is_predicted(corpus, tmp_path, capsys):
    out = tmp_path / "m"
    assert _cli(["fit", "--model", "mentions", *_data(corpus), "--output", out, "--quiet"],
                capsys) == (0, "")
    docs = _write(tmp_path / "new.jsonl", [{"id": "n1", "text": "Today: Xerosis  cutis."},
                                           {"id": "n2", "text": "a femur fracture"}])
    pred = tmp_path / "pred.jsonl"
    assert _cli(["predict", "--model", out, "--input", docs, "--output", pred, "--top-k", "1"],
                capsys)[0] == 0
    rows = [json.loads(line) for line in pred.read_text(encoding="utf-8").splitlines()]
    assert [r["top"][0]["label"] for r in rows] == ["E50", "B20"]


def test_the_run_reports_the_matcher_as_a_row_of_its_own(corpus, tmp_path, capsys):
    run = tmp_path / "R"
    assert _cli(["run", *_data(corpus), "--models", "prior,mentions", "--output", run, *FAST],
                capsys)[0] == 0
    metrics = _metrics(run)
    # every test note's labels are its first cue word's (and E50 by its mention): each is
    # ranked first by the matcher, so MAP and P@1 are 1
    assert metrics["mention matcher"]["metrics"]["MAP"] == pytest.approx(1.0)
    assert metrics["mention matcher"]["metrics"]["P@1"] == pytest.approx(1.0)
    assert metrics["frequency prior"]["metrics"]["MAP"] < 0.7


def test_files_without_the_field_give_the_same_results_as_before(corpus, tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    stripped = {s: _write(plain / p.name, [{k: v for k, v in json.loads(line).items()
                                            if k != "evidence"}
                                           for line in p.read_text().splitlines()])
                for s, p in corpus.items()}
    runs = []
    for i, files in enumerate((corpus, stripped)):
        runs.append(tmp_path / f"R{i}")
        assert _cli(["run", *_data(files, evidence=False), "--models", "prior,svm", "--output",
                     runs[-1], *FAST], capsys)[0] == 0
    assert _metrics(runs[0]) == _metrics(runs[1])


@pytest.mark.parametrize("bad, message", [
    ([{"label": "A10", "spans": [[0, 999]]}], "ends after the text"),
    ([{"label": "A10", "spans": [[5, 2]]}], "needs 0 <= start <= end"),
    ([{"label": "Z99", "spans": [[0, 2]]}], "evidence for label 'Z99', which the document does "
                                            "not carry"),
    ({"label": "A10", "spans": [[0, 2]]}, "must be a list of mentions"),
    ([{"label": "A10", "spans": [0, 2]}], "a span is a pair of integers"),
])
def test_each_malformed_evidence_form_stops_with_the_file_the_line_and_the_fix(
        corpus, tmp_path, capsys, bad, message):
    rows = [json.loads(line) for line in corpus["train"].read_text().splitlines()]
    own = rows[6]["labels"][0]                   # C30: bad forms of its own label's evidence
    rows[6]["evidence"] = json.loads(json.dumps(bad).replace("A10", own))
    _write(corpus["train"], rows)
    rc, err = _cli(["run", *_data(corpus), "--models", "prior,mentions", "--output",
                    tmp_path / "R", *FAST], capsys)
    assert rc == 2
    assert f"{corpus['train']}, line 7, field 'evidence'" in err and message in err
    assert not (tmp_path / "R").exists()           # refused before anything was written


def test_evidence_in_a_tsv_file_is_refused(tmp_path):
    tsv = tmp_path / "train.tsv"
    tsv.write_text("text\tlabels\tevidence\nfever\tA10\t[]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="a TSV cell cannot hold; give the documents as JSON"):
        read_labelled_texts({"train": tsv}, evidence_field="evidence")


def test_the_run_never_reads_the_test_evidence(corpus, tmp_path, capsys):
    rows = [json.loads(line) for line in corpus["test"].read_text().splitlines()]
    variants = {"present": rows,
                "deleted": [{k: v for k, v in r.items() if k != "evidence"} for r in rows],
                # codes absent from test gold, and spans outside the text: never read
                "replaced": [dict(r, evidence=[{"label": "Q00", "spans": [[0, 10 ** 6]]}])
                             for r in rows]}
    results, scores = {}, {}
    for name, test_rows in variants.items():
        _write(corpus["test"], test_rows)
        run = tmp_path / name
        assert _cli(["run", *_data(corpus), "--models", "prior,mentions", "--output", run,
                     *FAST], capsys)[0] == 0
        results[name], scores[name] = _metrics(run), _outputs(run)
    assert results["present"] == results["deleted"] == results["replaced"]
    assert "models/mention_matcher/config.json" in scores["present"]
    for name in ("deleted", "replaced"):
        assert scores[name].keys() == scores["present"].keys()
        for key, value in scores["present"].items():
            if isinstance(value, bytes):
                assert value == scores[name][key], key
            else:
                for k, v in value.items():
                    np.testing.assert_array_equal(v, scores[name][key][k])


def test_plant_reading_the_evidence_text_is_planted_from_it(corpus, tmp_path, capsys):
    """Evidence of the text PLANT reads plants Stage 1 (every training note's (note, label)
    pairs with a mention: 40 notes, 8 of them with E50 too); without it, MIG alone."""
    pairs = {}
    for evidence in (True, False):
        run = tmp_path / f"P{evidence}"
        assert _cli(["run", *_data(corpus, evidence=evidence), "--models", "plant", "--epochs",
                     "1", "--plant-epochs", "1", "--output", run, *FAST], capsys)[0] == 0
        models = json.loads((run / "results.json").read_text(encoding="utf-8"))["models"]
        pairs[evidence] = next(m for m in models if m["name"] == "PLANT")["stage1_evidence_pairs"]
    assert pairs == {True: 48, False: 0}
