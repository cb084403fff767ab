"""Stage 1 planted from the coders' evidence spans against MIG planting, on CodiEsp dev.

The job's PLANT row (:func:`xplant.app.build_model` with CodiEsp's
settings: word CNN, Stage 1 10 epochs, Stage 2 at most 60 with early
stopping on dev MAP) reads the **Spanish** text, the text CodiEsp-X's
offsets index, and is fitted twice per seed on the training split:

- ``MIG``: the planting of today's job, each label's top MIG tokens;
- ``evidence``: the same fit given the training split's gold evidence
  (``clf__evidence``): a (document, code) pair with a mention is planted on
  the tokens inside its spans, above the code's MIG tokens, every other pair
  on MIG (:class:`xplant.neural.AttentionPlanter`).

Each fit reports its dev MAP and the evidence its attention finds on the
dev split, measured as ``docs/benchmarks/evidence.md`` measures it: oracle
codes (every gold (document, code) pair counted as predicted), the top
``--top-spans`` spans of the code's attention per pair, scored by
:func:`xplant.evidence.score_evidence` with its defaults against the dev
split's CodiEsp-X gold. The dev evidence is read for this score only; no
fit reads it. The test split is not read.

Run: ``python benchmarks/bench_evidence_planting.py [--seeds 0,1] [--codes D]
[--max-docs N] [--output FILE]``.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evidence import attention_spans  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="0,1", help="comma-separated random_state values")
    p.add_argument("--codes", default="D", choices=["D", "P"])
    p.add_argument("--epochs", type=int, default=None, help="Stage 2 epochs (default: the job's)")
    p.add_argument("--plant-epochs", type=int, default=None,
                   help="Stage 1 epochs (default: the job's)")
    p.add_argument("--plantings", default="MIG,evidence",
                   help="comma-separated: MIG, evidence (default both)")
    p.add_argument("--top-spans", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-docs", type=int, default=None,
                   help="first N documents of each split (a smoke run); default all")
    p.add_argument("--output", help="write the figures as JSON here")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from xplant.app import build_model, find_row, first_documents, row_params
    from xplant.datasets import load_codiesp, load_codiesp_evidence
    from xplant.evidence import score_evidence
    from xplant.metrics import mean_average_precision

    tr, dv = (first_documents(load_codiesp(s, codes=args.codes, language="es", descriptions=False),
                              args.max_docs) for s in ("train", "dev"))
    kind = {"D": "DIAGNOSTICO", "P": "PROCEDIMIENTO"}[args.codes]
    row_of = {d: i for i, d in enumerate(dv.ids)}
    gold = [g for g in load_codiesp_evidence("dev") if g["type"] == kind and g["id"] in row_of]
    label_index = {str(c).upper(): i for i, c in enumerate(tr.label_names)}
    codes_by_doc = [[] for _ in dv.ids]
    for g in gold:
        if g["code"] in label_index and g["code"] not in codes_by_doc[row_of[g["id"]]]:
            codes_by_doc[row_of[g["id"]]].append(g["code"])
    params = row_params({}, find_row("plant"), "codiesp", args.codes)
    # the job's epoch budgets unless given
    budget = {k: v for k, v in (("epochs", args.epochs), ("plant_epochs", args.plant_epochs)) if v}
    results = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for planting in args.plantings.split(","):
            t = time.perf_counter()
            pipe = build_model("plant", **budget, random_state=seed, verbose=0, params=dict(params))
            extra = {"clf__evidence": tr.evidence} if planting == "evidence" else {}
            pipe.fit(tr.texts, tr.Y, clf__validation_data=(dv.texts, dv.Y),
                     clf__label_names=tr.label_names, **extra)
            seconds = time.perf_counter() - t
            clf = pipe[-1]
            spans = attention_spans(clf, dv.texts, codes_by_doc, label_index, args.top_spans)
            pred = [{"id": d, **c} for d, cs in zip(dv.ids, spans) for c in cs]
            ev = score_evidence(pred, gold, texts=dict(zip(dv.ids, dv.texts)))
            results.append({"seed": seed, "planting": planting,
                            "dev_MAP": mean_average_precision(dv.Y, pipe.predict_proba(dv.texts)),
                            "best_epoch": clf.best_epoch_, "epochs_run": len(clf.history),
                            "attention_ndcg": clf.planter_.attention_ndcg_,
                            "n_evidence_pairs": clf.planter_.n_evidence_pairs_,
                            "fit_seconds": seconds,
                            **{f"evidence_{k}": ev[k]
                               for k in ("precision", "recall", "f1", "hit_rate", "token_f1")}})
            print(json.dumps(results[-1], default=float), flush=True)
    print(f"CodiEsp-{args.codes} dev, Spanish text; evidence: oracle codes, top "
          f"{args.top_spans} spans per code")
    keys = ("dev_MAP", "evidence_precision", "evidence_recall", "evidence_f1", "evidence_hit_rate",
            "evidence_token_f1", "attention_ndcg",
            "best_epoch", "epochs_run", "n_evidence_pairs", "fit_seconds")
    print("| seed | planting | " + " | ".join(keys) + " |")
    print("|---" * (2 + len(keys)) + "|")
    for r in results:
        cells = [f"{r[k]:.4f}" if isinstance(r[k], float) else str(r[k]) for k in keys]
        print(f"| {r['seed']} | {r['planting']} | " + " | ".join(cells) + " |")
    for planting in args.plantings.split(","):
        mine = [r for r in results if r["planting"] == planting]
        print(f"mean over seeds, {planting}: dev MAP {np.mean([r['dev_MAP'] for r in mine]):.4f}, "
              f"evidence F1 {np.mean([r['evidence_f1'] for r in mine]):.4f}")
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=2, default=float))
    return results


if __name__ == "__main__":
    main()
