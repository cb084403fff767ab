"""Labels never seen in training: the description ranker and fusion, zero-shot group metrics.

Train on train, choose everything on dev (the fusion weight by dev MAP, the
top-k decision's k by dev micro-F1), score test once. Prints, per dataset,
one table of the overall metrics and the zero-shot group's (labels with no
training document): F1 zero, the group's R@5 and nDCG@5 with its labels
ranked alone, and the full-ranking R@5 of its gold labels
(:func:`xplant.metrics.group_ranking_metrics`); then the description
coverage of each label space and the prefix fallbacks.

    python benchmarks/bench_descriptions.py                         # CodiEsp-D (en) and EURLEX57K
    python benchmarks/bench_descriptions.py --datasets codiesp --linear
    python benchmarks/bench_descriptions.py --smoke                 # seconds

``--linear`` adds TF-IDF + logistic regression (C=100, the value ``xplant
run`` chooses on CodiEsp-D dev) with and without the description fusion;
``--plant-epochs N [--stage1-epochs M]`` adds the main job's PLANT
(``xplant run``'s construction) planted with descriptions, fused and not
fused (slow: one CPU fit); ``--hierarchy`` adds the same fit without
``label_parents`` (no query borrowed from a labelled ancestor) and
``--rare-descriptions N`` the same fit with description targets for every
label with up to N training documents, not only the unseen ones; each
row's dev MAP is recorded, so the design is chosen on dev. Every row
also reports the macro-F1 of the rare labels (1-10 training documents,
``F1 1-10``). EURLEX57K is read from ``shared/data/eurlex57k`` beside the
repository checkout (``--eurlex-home``).
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from xplant.datasets import load_codiesp, load_eurlex57k
from xplant.linear import make_tfidf_logistic
from xplant.unseen import DescriptionFusion, DescriptionRanker
from xplant.metrics import (bucketed_f1, mean_average_precision, pad_scores, select_k,
                            top_k_decision, xmtc_report)

EURLEX = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "eurlex57k"
COLUMNS = [("MAP", "MAP"), ("P@5", "P@5"), ("nDCG@5", "nDCG@5"), ("micro_F1", "micro-F1"),
           ("F1_zero", "F1 zero"), ("zero_R@5", "zero R@5"), ("zero_nDCG@5", "zero nDCG@5"),
           ("zero_R@5_full", "zero R@5 full"), ("F1_1-10", "F1 1-10")]


def _desc(d):
    return dict(label_descriptions=d.label_descriptions, label_synonyms=d.label_synonyms,
                label_parents=d.label_parents, label_names=d.label_names)


def _scores(model, texts):
    """Probabilities where the model has them, else its ranking scores (DescriptionRanker and
    DescriptionFusion: cosines and floor + weight · cosine, no probabilities)."""
    return model.predict_proba(texts) if hasattr(model, "predict_proba") else \
        model.decision_function(texts)


def evaluate(name, model, tr, dv, te, fit_kwargs, log, fit_s=None):
    """Fit (unless ``fit_s`` is given: already fitted), choose k on dev, report test."""
    if fit_s is None:
        t0 = time.perf_counter()
        model.fit(tr.texts, tr.Y, **fit_kwargs)
        fit_s = time.perf_counter() - t0
    # test codes outside the label space (train and dev codes) are misses
    S_dev, S_test = _scores(model, dv.texts), pad_scores(_scores(model, te.texts), te.Y.shape[1])
    k = select_k(dv.Y, S_dev)
    y_pred = top_k_decision(S_test, k)
    freq = _test_frequency(tr, te)
    rep = xmtc_report(te.Y, S_test, y_pred=y_pred, label_frequency=freq,
                      n_train_documents=tr.Y.shape[0])
    # the rare labels: 1-10 training documents (macro-F1 over those present in test)
    rare = bucketed_f1(te.Y, y_pred, freq, edges=(0, 10))
    rep["F1_1-10"] = rare.f1[1]
    row = {"name": name, "k": int(k), "fit_seconds": round(fit_s, 1),
           "dev_MAP": float(mean_average_precision(dv.Y, S_dev)),
           "metrics": {key: float(v) for key, v in rep.items()}}
    if getattr(model, "weight_", None) is not None:
        row["fusion_weight"] = model.weight_
    log(f"  {name}: fit {fit_s:.0f} s, k={k}, dev MAP {100 * row['dev_MAP']:.1f}")
    return row


def table(rows):
    head = "| model | dev MAP | " + " | ".join(c for _, c in COLUMNS) + " | k | fit s |"
    lines = [head, "|---|" + "---:|" * (len(COLUMNS) + 3)]
    for r in rows:
        vals = " | ".join(f"{100 * r['metrics'][key]:.1f}" for key, _ in COLUMNS)
        lines.append(f"| {r['name']} | {100 * r['dev_MAP']:.1f} | {vals} | {r['k']} | "
                     f"{r['fit_seconds']:.0f} |")
    return "\n".join(lines)


def _test_frequency(tr, te):
    """Training frequencies over test's columns (its codes outside the space: 0)."""
    freq = np.zeros(te.Y.shape[1], dtype=np.int64)
    freq[:tr.label_frequency.size] = tr.label_frequency
    return freq


def zero_counts(tr, te):
    unseen = _test_frequency(tr, te) == 0
    test_unseen = unseen & (np.asarray(te.Y.sum(0)).ravel() > 0)
    docs = int(np.count_nonzero(te.Y[:, np.flatnonzero(unseen)].getnnz(1)))
    gold = int(te.Y[:, np.flatnonzero(unseen)].nnz)
    return {"test_labels_unseen_in_train": int(test_unseen.sum()), "test_docs_with_one": docs,
            "test_gold_unseen": gold, "test_gold": int(te.Y.nnz)}


def run_codiesp(args, log):
    tr, dv, te = (load_codiesp(s, language=args.language) for s in ("train", "dev", "test"))
    if args.smoke:
        tr, dv, te = _slice(tr, 80), _slice(dv, 40), _slice(te, 40)
    rows = [evaluate("descriptions", DescriptionRanker(), tr, dv, te, _desc(tr), log),
            evaluate("descriptions + parents", DescriptionRanker(ancestor_depth=1), tr, dv, te,
                     dict(_desc(tr), parent_descriptions=tr.parent_descriptions), log)]
    if args.linear:
        C = 1.0 if args.smoke else 100.0
        rows.append(evaluate(f"TF-IDF + LR (C={C:g})", make_tfidf_logistic(C=C), tr, dv, te,
                             {}, log))
        rows.append(evaluate(f"TF-IDF + LR (C={C:g}) + descriptions", DescriptionFusion(make_tfidf_logistic(C=C)),
                             tr, dv, te, dict(_desc(tr), validation_data=(dv.texts, dv.Y)), log))
    if args.plant_epochs:
        from xplant.app import build_model as _build
        from xplant.app import find_row, row_params

        def build_model(name, **kw):   # as xplant run builds it on CodiEsp (shortlist, settings)
            row = find_row(name)
            kw["params"] = row_params(kw.get("params"), row, "codiesp", "D")
            return _build(name, **kw)

        # the main job's PLANT (xplant run): Stage 2 epochs, Stage 1 epochs, dev MAP, patience 6
        plant = build_model("PLANT", epochs=args.plant_epochs, plant_epochs=args.stage1_epochs,
                            verbose=0, params={"n_jobs": 1})
        fused = DescriptionFusion(plant)
        rows.append(evaluate(f"PLANT ({args.plant_epochs} epochs) planted with descriptions, fused", fused,
                             tr, dv, te, dict(_desc(tr), validation_data=(dv.texts, dv.Y)), log))
        clf = fused.estimator_[-1]
        log(f"  planter: {clf.planter_.n_described_labels_} labels with description targets, "
            f"{clf.planter_.n_borrowed_queries_} borrowed queries; best epoch {clf.best_epoch_}")
        rows.append(evaluate(f"PLANT ({args.plant_epochs} epochs) planted with descriptions, not fused",
                             fused.estimator_, tr, dv, te, {}, log, fit_s=rows[-1]["fit_seconds"]))
        if args.rare_descriptions:   # rare labels' description tokens ranked above their MIG ones
            n = args.rare_descriptions
            fused = DescriptionFusion(build_model(
                "PLANT", epochs=args.plant_epochs, plant_epochs=args.stage1_epochs, verbose=0,
                params={"n_jobs": 1, "planter__description_max_frequency": n}))
            rows.append(evaluate(f"PLANT ({args.plant_epochs} epochs) planted with descriptions "
                                 f"up to {n} documents, fused", fused, tr, dv, te,
                                 dict(_desc(tr), validation_data=(dv.texts, dv.Y)), log))
            log(f"  planter (up to {n} documents): "
                f"{fused.estimator_[-1].planter_.n_described_labels_} labels with description "
                "targets")
            rows.append(evaluate(f"PLANT ({args.plant_epochs} epochs) planted with descriptions "
                                 f"up to {n} documents, not fused", fused.estimator_, tr, dv, te,
                                 {}, log, fit_s=rows[-1]["fit_seconds"]))
        if args.hierarchy:      # the same fit without label_parents: no borrowed queries
            flat = {k: v for k, v in _desc(tr).items() if k != "label_parents"}
            fused = DescriptionFusion(build_model("PLANT", epochs=args.plant_epochs,
                                                  plant_epochs=args.stage1_epochs, verbose=0,
                                                  params={"n_jobs": 1}))
            rows.append(evaluate(f"PLANT ({args.plant_epochs} epochs) planted with descriptions, "
                                 "no hierarchy, fused", fused, tr, dv, te,
                                 dict(flat, validation_data=(dv.texts, dv.Y)), log))
            clf = fused.estimator_[-1]
            log(f"  planter (no hierarchy): {clf.planter_.n_borrowed_queries_} borrowed queries; "
                f"best epoch {clf.best_epoch_}")
            rows.append(evaluate(f"PLANT ({args.plant_epochs} epochs) planted with descriptions, "
                                 "no hierarchy, not fused", fused.estimator_, tr, dv, te, {}, log,
                                 fit_s=rows[-1]["fit_seconds"]))
    return {"dataset": f"codiesp-D ({args.language})", "rows": rows, "zero": zero_counts(tr, te),
            "coverage": {"D": tr.record["descriptions"],
                         "P": load_codiesp("train", codes="P").record["descriptions"]}}


def run_eurlex(args, log):
    home = Path(args.eurlex_home)
    if not (home / "train.jsonl.gz").is_file():
        log(f"EURLEX57K not found in {home}; skipped")
        return None
    m = 2000 if args.smoke else None
    tr, dv, te = (load_eurlex57k(s, home, max_docs=m) for s in ("train", "dev", "test"))
    rows = [evaluate("descriptions", DescriptionRanker(), tr, dv, te, _desc(tr), log)]
    return {"dataset": "eurlex57k", "rows": rows, "zero": zero_counts(tr, te),
            "coverage": {"EUROVOC": tr.record["descriptions"]}}


def _slice(b, n):
    from sklearn.utils import Bunch
    out = Bunch(**b)
    out.texts, out.Y = b.texts[:n], b.Y[:n]
    out.label_frequency = np.asarray(out.Y.sum(0)).ravel()
    return out


def main(argv=None, log=print):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="codiesp,eurlex57k")
    p.add_argument("--language", default="en", choices=("en", "es"))
    p.add_argument("--linear", action="store_true")
    p.add_argument("--plant-epochs", type=int, default=0, help="Stage 2 epochs of the PLANT row (0: no row)")
    p.add_argument("--stage1-epochs", type=int, default=10, help="Stage 1 epochs of the PLANT row")
    p.add_argument("--rare-descriptions", type=int, default=0, metavar="N",
                   help="with --plant-epochs: also PLANT with description targets for labels with "
                        "up to N training documents (planter description_max_frequency)")
    p.add_argument("--hierarchy", action="store_true",
                   help="with --plant-epochs: also the PLANT row fitted without label_parents")
    p.add_argument("--eurlex-home", default=str(EURLEX))
    p.add_argument("--output", default=None, help="write the results as JSON here")
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args(argv)
    results = []
    for name in args.datasets.split(","):
        log(f"## {name}")
        res = run_codiesp(args, log) if name == "codiesp" else run_eurlex(args, log)
        if res is None:
            continue
        results.append(res)
        log(table(res["rows"]))
        log(f"zero-shot: {res['zero']}")
        for space, rec in res["coverage"].items():
            log(f"coverage {space}: {rec}")
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=2, default=float))
    return results


if __name__ == "__main__":
    main()
