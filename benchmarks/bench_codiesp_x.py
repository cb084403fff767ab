"""CodiEsp-X (code and evidence span) of a finished ``xplant run`` on CodiEsp, scored once.

Reads the run folder's saved models (``RUN/models/<row>``), predicts the
CodiEsp test split under each model's saved decision rule (chosen on dev by
the run), and takes each predicted code's evidence from the model's
``explain``: the mention matcher's matched mentions, whose offsets index the
Spanish original (``"field": "text_es"``); a code with no such span has no
evidence (PLANT's attention spans index the English translation, which
CodiEsp-X does not score). :func:`xplant.evidence.score_evidence` then gives
the official CodiEsp-X micro precision, recall and F1 (a predicted code counts
when one of its spans contains a gold reference of the code with at most 10
characters of slack on each side), beside the codes' own micro P/R/F1
(CodiEsp-D, the rule's predictions). The test evidence is read only here,
after the run wrote its predictions.

Run: ``python benchmarks/bench_codiesp_x.py RUN [--rows "mention matcher (refit)" ...]
[--codes D] [--top-spans 3]``; prints one JSON object per row.
"""

import argparse
import json
from pathlib import Path

import numpy as np

DEFAULT_ROWS = ("mention matcher (refit)", "PLANT fused + descriptions + mentions (refit)")


def predictions(folder, test, work, top_k=40, top_spans=3):
    """``xplant predict --evidence`` of a saved model on the test split: per document, its
    predicted codes (the saved rule) and each code's spans into the Spanish original."""
    from xplant.app.cli import main
    docs = work / "test.jsonl"
    with open(docs, "w", encoding="utf-8") as fh:
        for i, doc_id in enumerate(test.ids):
            fh.write(json.dumps({"id": doc_id, "text": test.texts[i],
                                 "text_es": test.get("text_es", test.texts)[i]},
                                ensure_ascii=False) + "\n")
    out = work / f"{folder.name}.jsonl"
    rc = main(["predict", "--model", str(folder), "--input", str(docs), "--output", str(out),
               "--top-k", str(top_k), "--evidence", "--overwrite"])
    if rc:
        raise SystemExit(rc)
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def codiesp_x(records, test, gold, spanish_field):
    """The codes' micro P/R/F1 (CodiEsp-D/P) and CodiEsp-X's, from ``xplant predict`` records.

    A predicted code's spans are those whose ``field`` is ``spanish_field`` (the text
    CodiEsp-X indexes); a code without one has no evidence.
    """
    from xplant.evidence import score_evidence
    predicted, tp, n_pred = [], 0, 0
    gold_codes = [set(np.asarray(test.label_names)[test.Y[i].indices]) for i in range(len(records))]
    for rec, own in zip(records, gold_codes):
        spans = {lab["label"]: [(s["start"], s["end"]) for s in lab["spans"]
                                if s.get("field", spanish_field) == spanish_field]
                 for lab in rec.get("evidence", [])}
        for code in rec["predicted"]:
            predicted.append({"id": rec["id"], "code": code, "spans": spans.get(code, [])})
        n_pred += len(rec["predicted"])
        tp += len(own & set(rec["predicted"]))
    n_gold = int(test.Y.sum())
    p, r = tp / max(n_pred, 1), tp / max(n_gold, 1)
    x = score_evidence(predicted, gold)
    return {"codes": {"micro_P": p, "micro_R": r, "micro_F1": 2 * p * r / (p + r) if p + r else 0,
                      "n_predicted": n_pred, "n_gold": n_gold},
            "codiesp_x": {"micro_P": x["codiesp_x_precision"], "micro_R": x["codiesp_x_recall"],
                          "micro_F1": x["codiesp_x_f1"],
                          "n_predicted_pairs": x["n_predicted_pairs"],
                          "n_gold_pairs": x["n_gold_pairs"]}}


def main(argv=None):
    import tempfile
    from xplant.datasets import load_codiesp, load_codiesp_evidence
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("--rows", nargs="+", default=list(DEFAULT_ROWS))
    p.add_argument("--codes", default="D", choices=("D", "P"))
    p.add_argument("--language", default="en", choices=("en", "es"))
    p.add_argument("--top-spans", type=int, default=3)
    args = p.parse_args(argv)
    test = load_codiesp("test", codes=args.codes, language=args.language, descriptions=False)
    saved = {m["name"]: m.get("saved_to") for m in json.loads(
        (args.run / "results.json").read_text(encoding="utf-8"))["models"]}
    spanish = "text_es" if args.language == "en" else "text"
    with tempfile.TemporaryDirectory() as work:
        records = {row: predictions(Path(saved[row]), test, Path(work),
                                    top_spans=args.top_spans) for row in args.rows}
    # the test evidence is read here, once every prediction is written
    gold = [g for g in load_codiesp_evidence("test") if g["kind"] == args.codes]
    for row, recs in records.items():
        print(json.dumps({"row": row, **codiesp_x(recs, test, gold, spanish)}))


if __name__ == "__main__":
    main()
