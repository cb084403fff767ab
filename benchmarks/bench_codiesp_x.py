"""CodiEsp-X (code and evidence span) of a finished ``xplant run`` on CodiEsp, scored once.

Reads the run folder's saved models (``RUN/models/<row>``), predicts the
CodiEsp test split under each model's saved decision rule (chosen on dev by
the run), and takes each predicted code's evidence from the model's
``explain``: the spans whose offsets index the Spanish original, which
CodiEsp-X scores. The test split is read as the run read it (``--language``,
the run's own by default: the dataset's setting reads the Spanish original,
so the matcher's mentions and PLANT's attention spans both index it, and a
description's sentence indexes the English translation beside it, which
CodiEsp-X does not score; with ``--language en`` only the matcher's spans,
``"field": "text_es"``, index the Spanish). A code with no such span has no
evidence. :func:`xplant.evidence.score_evidence` then gives
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
    predicted codes (the saved rule) and each code's spans, each naming the text it indexes.
    Every text of the split goes in: ``text``, and the Spanish original or the English
    translation beside it (``text_es``, ``text_en``) where the split has one."""
    from xplant.app.cli import main
    docs = work / "test.jsonl"
    beside = [f for f in ("text_es", "text_en") if test.get(f) is not None]
    with open(docs, "w", encoding="utf-8") as fh:
        for i, doc_id in enumerate(test.ids):
            fh.write(json.dumps({"id": doc_id, "text": test.texts[i],
                                 **{f: test[f][i] for f in beside}},
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
    from xplant.app import load_splits
    from xplant.datasets import load_codiesp_evidence
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("--rows", nargs="+", default=list(DEFAULT_ROWS))
    p.add_argument("--codes", default="D", choices=("D", "P"))
    p.add_argument("--language", default=None, choices=("en", "es"),
                   help="the text the run read (default: the run's own, from its results.json)")
    p.add_argument("--top-spans", type=int, default=3)
    args = p.parse_args(argv)
    results = json.loads((args.run / "results.json").read_text(encoding="utf-8"))
    language = args.language or results.get("dataset_args", {}).get("language")
    # the test split as the run read it (its evidence is never in it)
    test = load_splits("codiesp", codes=args.codes, language=language, catalogue="none")["test"]
    saved = {m["name"]: m.get("saved_to") for m in results["models"]}
    spanish = "text_es" if test.record["language"] == "en" else "text"
    with tempfile.TemporaryDirectory() as work:
        records = {row: predictions(Path(saved[row]), test, Path(work),
                                    top_spans=args.top_spans) for row in args.rows}
    # the test evidence is read here, once every prediction is written
    gold = [g for g in load_codiesp_evidence("test") if g["kind"] == args.codes]
    for row, recs in records.items():
        print(json.dumps({"row": row, **codiesp_x(recs, test, gold, spanish)}))


if __name__ == "__main__":
    main()
