import base64
import json
from html.parser import HTMLParser

import numpy as np
import pytest

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

from xplant.report import (  # noqa: E402
    f1_by_frequency,
    highlight_html,
    load_per_label,
    render_report,
    save_per_label,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EVIL = "<script>alert(1)</script>"
TEXT = f"Paciente con fiebre alta. {EVIL} Tos seca & disnea."


class PageParser(HTMLParser):
    """Tables by id (rows of cell texts), tags seen, <mark> texts and the text of .doc blocks."""

    def __init__(self):
        super().__init__()
        self.tags, self.tables, self.marks, self.docs, self.images = [], {}, [], [], []
        self._table = self._row = self._cell = None
        self._mark = self._doc_depth = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "mark":
            self._mark = []
        elif tag == "div" and attrs.get("class") == "doc":
            self._doc_depth = []
        elif tag == "img":
            self.images.append(attrs["src"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "mark" and self._mark is not None:
            self.marks.append("".join(self._mark))
            self._mark = None
        elif tag == "div" and self._doc_depth is not None:
            self.docs.append("".join(self._doc_depth))
            self._doc_depth = None

    def handle_data(self, data):
        for buf in (self._cell, self._mark, self._doc_depth):
            if buf is not None:
                buf.append(data)


def _span(text, word, weight):
    s = text.index(word)
    return {"start": s, "end": s + len(word), "text": word, "weight": weight}


@pytest.fixture()
def run_dir(tmp_path):
    results = {
        "dataset": "codiesp",
        "split": "test",
        "created": "2026-01-01T00:00:00",
        "versions": {"xplant": "0.1.0", "numpy": "2.0"},
        "models": [
            {"name": "PLANT", "params": {"backbone": "cnn"}, "fit_seconds": 12.5, "predict_seconds": 0.4,
             "peak_rss_mb": 900.0, "metrics": {"P@5": 0.41234, "macro_f1": 0.2}, "k": 5, "threshold": 0.31},
            {"name": "plant=False <i>", "params": {}, "fit_seconds": 11.0, "predict_seconds": 0.4,
             "peak_rss_mb": 850.0, "metrics": {"P@5": 0.38, "evidence_f1": 0.1}, "k": 4, "threshold": None},
        ],
    }
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    save_per_label(
        tmp_path / "per_label.npz",
        label_names=["A", "B", "C", "D", "E", "F"],
        train_frequency=[0, 1, 2, 3, 9, 4],
        support=[1, 2, 1, 1, 3, 0],
        f1={"PLANT": [0.0, 0.5, 0.4, 0.8, 0.9, 1.0], "plant=False <i>": [0.0, 0.25, 0.2, 0.2, 0.7, 0.0]},
    )
    codes = [
        {"code": "R50.9", "prob": 0.93, "spans": [_span(TEXT, "fiebre alta", 0.6)], "gold_spans": [_span(TEXT, "fiebre", 1)]},
        {"code": "R05", "prob": 0.71, "spans": [_span(TEXT, "Tos seca", 0.4), _span(TEXT, "alert", 0.01)]},
    ]
    evidence = {
        "PLANT": [{"doc_id": "S0001", "text": TEXT, "codes": codes}, {"doc_id": "S0002", "text": "otro", "codes": []}],
        "plant=False <i>": [{"doc_id": "S0001", "text": TEXT, "codes": codes[:1]}],
    }
    (tmp_path / "evidence.json").write_text(json.dumps(evidence), encoding="utf-8")
    similarity = {
        "groups": [
            {"group": "R50", "labels": ["R50.2", "R50.9"], "n_documents": 7, "similarity": {"PLANT": 0.97, "plant=False <i>": 0.7}},
            {"group": "N20", "labels": ["N20.0", "N20.1"], "n_documents": 3, "similarity": {"PLANT": 0.99, "plant=False <i>": 0.8}},
        ]
    }
    (tmp_path / "similarity.json").write_text(json.dumps(similarity), encoding="utf-8")
    return tmp_path


def test_render_report_tables_escaping_and_pngs(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    path = render_report(run_dir, out=out, examples=1)
    assert path == out / "report.html"
    raw = path.read_text(encoding="utf-8")
    page = PageParser()
    page.feed(raw)

    # full results table (folded): header + one row per model, names escaped, percent
    header, *body = page.tables["results-all"]
    assert header[:4] == ["model", "P@5", "macro_f1", "evidence_f1"]
    assert [r[0] for r in body] == ["PLANT", "plant=False <i>"]
    assert body[0][1:4] == ["41.2", "20.0", "\u2013"] and body[1][6] == "\u2013"  # missing metric, None threshold
    assert header[4:7] == ["rule", "k", "threshold"] and body[0][4] == "top_k"   # no rule: top-k
    # compact table: the headline columns present in the run, percent
    assert page.tables["results"][0] == ["model", "P@5", "fit s"]
    assert page.tables["results"][1][:2] == ["PLANT", "41.2"]
    assert "<i>" not in page.tags and "&lt;i&gt;" in raw

    # F1 by frequency: support-0 label F left out; buckets 0, 1, 2-3, 8-15
    fb = page.tables["f1-by-frequency"]
    assert fb[0] == ["train positives", "labels", "PLANT", "plant=False <i>"]
    assert fb[1:] == [["0", "1", "0.0000", "0.0000"], ["1", "1", "0.5000", "0.2500"],
                      ["2-3", "2", "0.6000", "0.2000"], ["8-15", "1", "0.9000", "0.7000"]]

    # the evil text is shown as text, never as a tag; examples=1 shows one PLANT document
    assert "script" not in page.tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in raw
    assert page.docs == [TEXT, TEXT]
    # the gold span "fiebre" splits the R50.9 mark into two pieces
    assert page.marks.count("fiebre") == 2 and page.marks.count(" alta") == 2
    assert "Tos seca" in page.marks and "alert" in page.marks
    assert "S0002" not in raw

    # similarity table with mean row
    sim = page.tables["similarity"]
    assert sim[1] == ["R50", "R50.2, R50.9", "7", "0.970", "0.700"]
    assert sim[-1] == ["mean", "", "", "0.980", "0.750"]

    # PNGs: real files and embedded copies
    for name in ("f1_by_frequency.png", "similarity.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    assert len(page.images) == 2
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG_MAGIC


def test_render_report_minimal_run_dir_defaults_to_run_dir(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"dataset": "x", "split": "test", "models": [{"name": "m"}]}))
    path = render_report(tmp_path)
    assert path == tmp_path / "report.html"
    page = PageParser()
    page.feed(path.read_text(encoding="utf-8"))
    assert [r[0] for r in page.tables["results"]] == ["model", "m"]
    assert page.images == [] and not (tmp_path / "f1_by_frequency.png").exists()


def test_render_report_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="results.json"):
        render_report(tmp_path)
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        render_report(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"models": [{"name": "m"}]}))
    (tmp_path / "evidence.json").write_text(json.dumps({"m": [{"text": "abc", "codes": [{"code": "X", "spans": [[1, 9]]}]}]}))
    with pytest.raises(ValueError, match="outside the text"):
        render_report(tmp_path)
    with pytest.raises(ValueError, match="examples"):
        render_report(tmp_path, examples=-1)


def test_highlight_overlaps_and_gold():
    text = "a <b>&c d"
    html = highlight_html(
        text,
        [{"code": "X<1>", "spans": [(0, 5)], "gold_spans": [(2, 5)]}, {"code": "Y", "spans": [{"start": 2, "end": 9}]}],
    )
    assert html == (
        '<mark class="c0" title="X&lt;1&gt;">a </mark>'
        '<mark class="c0" title="X&lt;1&gt;, Y"><span class="gold" title="gold: X&lt;1&gt;">&lt;b&gt;</span></mark>'
        '<mark class="c1" title="Y">&amp;c d</mark>'
    )
    assert highlight_html("plain <x>", []) == "plain &lt;x&gt;"


def test_per_label_round_trip_and_errors(tmp_path):
    p = tmp_path / "per_label.npz"
    save_per_label(p, train_frequency=[1, 2], support=[0, 3], f1={"a__b": [0.5, 1.0], "m": [0.0, 0.25]}, label_names=["X", "Y"])
    z = np.load(p)
    assert sorted(z.files) == ["a__b__f1", "label_names", "m__f1", "support", "train_frequency"]
    got = load_per_label(p)
    assert list(got["f1"]) == ["a__b", "m"]
    np.testing.assert_array_equal(got["f1"]["m"], [0.0, 0.25])
    assert got["label_names"].tolist() == ["X", "Y"] and got["support"].dtype == np.int64
    with pytest.raises(ValueError, match="shape"):
        save_per_label(p, train_frequency=[1, 2], support=[0, 3], f1={"m": [0.5]})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        save_per_label(p, train_frequency=[1, 2], support=[0, 3], f1={"m": [0.5, 2.0]})
    np.savez(tmp_path / "bad.npz", support=np.array([1]))
    with pytest.raises(ValueError, match="train_frequency"):
        load_per_label(tmp_path / "bad.npz")


def test_f1_by_frequency_matches_brute_force():
    rng = np.random.default_rng(0)
    tf = rng.integers(0, 40, size=200)
    sup = rng.integers(0, 3, size=200)
    f1 = rng.random(200)
    rows = f1_by_frequency(tf, sup, {"m": f1})
    assert sum(r["n_labels"] for r in rows) == int((sup > 0).sum())
    for r in rows:
        sel = [f1[i] for i in range(200) if sup[i] > 0 and r["low"] <= tf[i] <= r["high"]]
        assert r["f1"]["m"] == pytest.approx(np.mean(sel))
        assert r["high"] == 0 or r["high"] == 2 * r["low"] - 1


def test_evidence_and_report_never_import_torch(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "results.json").write_text(json.dumps({"dataset": "x", "split": "test", "models": [{"name": "m"}]}))
    save_per_label(tmp_path / "per_label.npz", train_frequency=[1], support=[1], f1={"m": [0.5]})
    code = (
        "import sys; import xplant.evidence as e, xplant.report as r; "
        "e.merge_spans([[0, 1]], [1.0], text='a'); r.render_report(sys.argv[1]); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    root = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "f1_by_frequency.png").read_bytes()[:8] == PNG_MAGIC


def _zero_shot_record(predictions, **counts):
    rec = {"k": 3, "n_zero_shot_labels": 2, "n_predictions": len(predictions), "n_documents": 1,
           "n_correct": sum(bool(p["gold"]) for p in predictions), "max_listed": 20,
           "shown": len(predictions), "explained": True, "predictions": predictions}
    return {**rec, **counts}


def test_zero_shot_section_lists_the_prediction_escaped(run_dir):
    """A known zero-shot prediction: its document, label, gold tick and escaped span text."""
    res = json.loads((run_dir / "results.json").read_text())
    span = _span(TEXT, EVIL, 0.25)
    pred = {"doc_id": "S0001", "label": "Z99<b>", "label_index": 0, "description": "Fiebre & <tos>",
            "rank": 2, "score": 0.61234, "gold": True, "prob": 0.4, "spans": [span]}
    res["models"][0]["zero_shot"] = _zero_shot_record([pred], n_predictions=7, n_documents=4)
    res["models"][1]["zero_shot"] = _zero_shot_record([], n_documents=0)
    (run_dir / "results.json").write_text(json.dumps(res), encoding="utf-8")
    raw = render_report(run_dir).read_text(encoding="utf-8")
    page = PageParser()
    page.feed(raw)
    table = page.tables["zero-shot-0"]
    assert table[0] == ["document", "label", "description", "gold", "rank", "score", "probability",
                        "evidence spans [start, end) (weight)"]
    s = TEXT.index(EVIL)
    assert table[1:] == [["S0001", "Z99<b>", "Fiebre & <tos>", "\u2713", "2", "0.612", "0.400",
                          f"[{s}, {s + len(EVIL)}) \u201c{EVIL}\u201d (0.250)"]]
    assert "zero-shot-1" not in page.tables                     # the second row has none
    assert "script" not in page.tags and "tos" not in page.tags   # (the page has its own <b>)
    assert "Z99&lt;b&gt;" in raw and "Fiebre &amp; &lt;tos&gt;" in raw
    text = " ".join(raw.split())
    assert ("7 zero-shot predictions in the top-k (k = 3) over 4 documents, 1 correct; the first "
            "1 are listed (at most 20 per row).") in text
    assert ("No zero-shot predictions in the top-k (k = 3); 2 labels have no training document."
            in text)
    assert "predates the listing" not in text


def test_zero_shot_section_names_where_the_spans_come_from(run_dir):
    """A label the descriptions scored: no probability, its spans named as description matches."""
    res = json.loads((run_dir / "results.json").read_text())
    span = _span(TEXT, EVIL, 0.25)
    preds = [{"doc_id": "S0001", "label": "Z99", "label_index": 0, "description": "d", "rank": 1,
              "score": 0.5, "gold": False, "prob": None, "evidence": "descriptions",
              "spans": [span]},
             {"doc_id": "S0002", "label": "Z98", "label_index": 1, "description": "e", "rank": 2,
              "score": 0.4, "gold": False, "prob": 0.2, "evidence": "model", "spans": [span]}]
    res["models"][0]["zero_shot"] = _zero_shot_record(preds)
    (run_dir / "results.json").write_text(json.dumps(res), encoding="utf-8")
    page = PageParser()
    page.feed(render_report(run_dir).read_text(encoding="utf-8"))
    s = TEXT.index(EVIL)
    cell = f"[{s}, {s + len(EVIL)}) \u201c{EVIL}\u201d (0.250)"
    rows = page.tables["zero-shot-0"][1:]
    assert [r[6:] for r in rows] == [["\u2013", "sentences matching the description: " + cell],
                                     ["0.200", "attention: " + cell]]


def test_zero_shot_section_old_folder_missing_row_and_bad_record(run_dir):
    # an older run folder: no record anywhere, the page renders with a note
    text = " ".join(render_report(run_dir).read_text(encoding="utf-8").split())
    assert "lists no zero-shot predictions: its results.json predates the listing" in text
    assert "zero-shot-0" not in text
    # one row recorded, the other failed: it says so
    res = json.loads((run_dir / "results.json").read_text())
    pred = {"doc_id": "S9", "label": "Z1", "rank": 1, "score": 0.5, "gold": False, "spans": []}
    res["models"][0]["zero_shot"] = _zero_shot_record([pred], explained=False)
    res["models"][1]["zero_shot_error"] = "RuntimeError: <boom>"
    (run_dir / "results.json").write_text(json.dumps(res), encoding="utf-8")
    raw = render_report(run_dir).read_text(encoding="utf-8")
    page = PageParser()
    page.feed(raw)
    assert page.tables["zero-shot-0"][1] == ["S9", "Z1", "", "\u2717", "1", "0.500", "\u2013", ""]
    text = " ".join(raw.split())
    assert "No evidence spans: this row's model has no explain." in text.replace("<code>", "").replace("</code>", "")
    assert "No zero-shot record for this row (RuntimeError: &lt;boom&gt;)." in text
    # a record that does not follow the schema names the file and the row
    res["models"][0]["zero_shot"]["predictions"][0]["spans"] = [{"start": "1", "end": 2}]
    (run_dir / "results.json").write_text(json.dumps(res), encoding="utf-8")
    with pytest.raises(ValueError, match=r"models\[0\]\.zero_shot\.predictions\[0\].*integer offsets"):
        render_report(run_dir)


def test_run_files_without_their_list_are_refused_naming_it(tmp_path):
    from xplant.report._io import read_results, read_similarity
    (tmp_path / "results.json").write_text('{"models": {}}', encoding="utf-8")
    with pytest.raises(ValueError, match="expected an object with a 'models' list"):
        read_results(tmp_path)
    sim = tmp_path / "similarity.json"
    sim.write_text('[]', encoding="utf-8")                # no object: the one JSON reader says so
    with pytest.raises(ValueError, match=r"similarity\.json: expected a JSON object holding \{groups"):
        read_similarity(sim)
    sim.write_text('{"groups": {}}', encoding="utf-8")
    with pytest.raises(ValueError, match="expected an object with a 'groups' list"):
        read_similarity(sim)
    sim.write_text('{"groups": [{"similarity": {"PLANT": 0.5}}]}', encoding="utf-8")
    assert read_similarity(sim)["groups"][0]["similarity"] == {"PLANT": 0.5}
