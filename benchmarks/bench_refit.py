"""The refit on train + dev: keep the epoch count chosen on dev, or scale it?

    python benchmarks/bench_refit.py [--row plant] [--max-epochs 60] [--plant-epochs 10]
                                     [--max-docs N] [--output DIR]

A one-time benchmark that decides the default of
:class:`xplant.model_selection.RefitOnDev` (``epochs="fixed"`` or
``"scaled"``) without reading the test split. The official training split of
CodiEsp (bundled) is split, seeded, into train' (2/3) and dev' (1/3). The
row's model (``xplant run``'s own, :func:`xplant.app.build_model`, with the
job's dataset settings) is fitted on train' and chooses everything on dev'
(the epoch, α and the calibration, the shortlist's C, τ, the decision rule);
it is then refitted on train' + dev' with those choices pinned
(:func:`xplant.model_selection.refit_params`), once with the chosen epoch
count and once with it scaled by (n_train' + n_dev') / n_train'. The three
models are scored on the official dev split, which none of them saw: MAP
(the ranking the choices maximise), micro-F1 of each model's decision
rule, and zero R@5 in the full ranking of the dev codes absent from train'
(and of those absent from train' + dev' too, which no variant saw). A
planted row is also scored as the job designates it, fused with the label
descriptions (:class:`xplant.unseen.DescriptionFusion` over the frozen
model, as ``xplant run``'s ``fused + descriptions`` row): the weights are
chosen on dev' for the first fit and kept for the refits, as
``xplant run --refit`` keeps them. It prints a table and writes
``bench_refit.json`` in ``--output``.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

#: The rows of the three models, in order.
VARIANTS = ("no refit", "refit, fixed epochs", "refit, scaled epochs")


def _take(texts, Y, rows):
    return [texts[i] for i in rows], Y[rows]


def split_train(n, fraction=1 / 3, seed=0):
    """Seeded rows of train' and dev' (``fraction`` of the n rows go to dev')."""
    order = np.random.default_rng(seed).permutation(n)
    n_dev = int(round(n * fraction))
    return np.sort(order[n_dev:]), np.sort(order[:n_dev])


def main(argv=None, log=print):
    """Run the benchmark; returns the report (a dict), also written as JSON."""
    from sklearn.base import clone

    from xplant.app import build_model, find_row, load_splits, row_params
    from xplant.metrics import f1_score, group_ranking_metrics, mean_average_precision
    from xplant.model_selection import refit_params

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--row", default="plant", help="an xplant run row (default: plant)")
    ap.add_argument("--codes", default="D", choices=("D", "P"))
    ap.add_argument("--max-epochs", type=int, default=None,
                    help="Stage 2 epoch budget (default: the main job's)")
    ap.add_argument("--plant-epochs", type=int, default=None,
                    help="Stage 1 epochs (default: the main job's)")
    ap.add_argument("--max-docs", type=int, default=None, help="documents per split (smoke)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=JSON",
                    help="a model parameter over the row's (repeatable)")
    ap.add_argument("--output", default=None, help="folder of bench_refit.json")
    args = ap.parse_args(argv)

    splits = load_splits("codiesp", codes=args.codes, language="en", max_docs=args.max_docs)
    train, dev = splits["train"], splits["dev"]        # the test split is not read
    tr, dv = split_train(len(train.texts))
    X_tr, Y_tr = _take(train.texts, train.Y, tr)
    X_dv, Y_dv = _take(train.texts, train.Y, dv)
    row = find_row(args.row)
    params = row_params(dict(_parse_set(v) for v in args.set), row, "codiesp", args.codes)
    budget = {k: v for k, v in (("epochs", args.max_epochs), ("plant_epochs", args.plant_epochs))
              if v is not None}                  # unset: build_model's, the main job's
    model = build_model(row.name, params=params, verbose=0, **budget)
    last = model.steps[-1][0] + "__" if hasattr(model, "steps") else ""
    names = {last + "label_names": [str(n) for n in train.label_names]} \
        if train.get("label_names") is not None else {}

    # the zero-shot groups on the official dev split: codes absent from train' (the
    # group every variant is scored on, as the tables use the official training
    # split), and codes absent from train' + dev' (what a refit never saw either)
    unseen = np.flatnonzero(np.asarray(Y_tr.sum(0)).ravel() == 0)
    unseen_both = np.flatnonzero(np.asarray((Y_tr.sum(0) + Y_dv.sum(0))).ravel() == 0)

    from sklearn.frozen import FrozenEstimator

    from xplant.app import DESCRIPTION_FIELDS
    from xplant.unseen import DescriptionFusion
    fields = {k: train[k] for k in DESCRIPTION_FIELDS if train.get(k) is not None}
    desc = fields.get("label_descriptions")
    described = row.planted and desc is not None and any(d for d in desc)

    def with_descriptions(name, fitted, X, Y, weights=None):
        """The fitted model fused with the descriptions (weights on dev', or pinned), scored;
        ``"weights"`` are those the fitted fusion used."""
        kw = dict(fields, label_names=names.get(last + "label_names"))
        t0 = time.perf_counter()
        if weights is None:
            fused = DescriptionFusion(FrozenEstimator(fitted)).fit(
                X, Y, validation_data=(X_dv, Y_dv), **kw)
        else:
            fused = DescriptionFusion(FrozenEstimator(fitted), **weights).fit(X, Y, **kw)
        return dict(scored(name, fused, time.perf_counter() - t0),
                    weights={"weight": fused.weight_, "seen_weight": fused.seen_weight_})

    def scored(name, fitted, seconds):
        scores = fitted.decision_function(dev.texts)
        row_out = {"variant": name, "seconds": round(seconds, 1),
                   "dev_map": float(mean_average_precision(dev.Y, scores)),
                   "dev_micro_f1": float(f1_score(dev.Y, fitted.predict(dev.texts),
                                                       average="micro")),
                   "dev_zero_r5_full": group_ranking_metrics(dev.Y, scores, unseen)["R@5_full"],
                   "dev_zero_r5_full_both": group_ranking_metrics(
                       dev.Y, scores, unseen_both)["R@5_full"]}
        log(f"{name}: dev MAP {row_out['dev_map']:.4f}, micro-F1 "
            f"{row_out['dev_micro_f1']:.4f}, zero R@5 {row_out['dev_zero_r5_full']:.4f} "
            f"({seconds:.0f} s)")
        return row_out

    t0 = time.perf_counter()
    first = clone(model).fit(X_tr, Y_tr, **{last + "validation_data": (X_dv, Y_dv)}, **names)
    rows = [scored(VARIANTS[0], first, time.perf_counter() - t0)]
    if described:
        rows[0]["descriptions"] = with_descriptions(VARIANTS[0] + " + descriptions", first,
                                                    X_tr, Y_tr)
    final = first.steps[-1][1] if hasattr(first, "steps") else first
    choices = {n: c["value"] for n, c in getattr(final, "dev_choices_", {}).items()}
    report = {"command": " ".join(["python", "benchmarks/bench_refit.py", *(argv or sys.argv[1:])]),
              "row": row.display, "codes": args.codes, "n_train": len(tr), "n_dev": len(dv),
              "n_dev_scored": len(dev.texts), "choices": choices, "variants": rows}
    for variant, epochs in zip(VARIANTS[1:], ("fixed", "scaled")):
        pinned = refit_params(first, epochs=epochs, n_train=len(tr), n_dev=len(dv))
        t0 = time.perf_counter()
        refit = clone(model).set_params(**pinned).fit(X_tr + X_dv, _vstack(Y_tr, Y_dv), **names)
        out = scored(variant, refit, time.perf_counter() - t0)
        out["max_epochs"] = int(pinned.get(last + "max_epochs", 0)) or None
        if described:           # the first fit's weights, kept
            out["descriptions"] = with_descriptions(
                variant + " + descriptions", refit, X_tr + X_dv, _vstack(Y_tr, Y_dv),
                rows[0]["descriptions"]["weights"])
        rows.append(out)
    log(_table(report))
    if args.output:
        folder = Path(args.output)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "bench_refit.json").write_text(json.dumps(report, indent=1, default=str))
    return report


def _parse_set(text):
    name, _, value = text.partition("=")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def _vstack(a, b):
    import scipy.sparse as sp
    return sp.vstack([a, b]).tocsr()


def _table(report):
    lines = [f"{report['row']} on CodiEsp-{report['codes']}: train' {report['n_train']}, "
             f"dev' {report['n_dev']} documents; scored on the official dev split "
             f"({report['n_dev_scored']} documents)",
             "| variant | Stage 2 epochs | dev MAP | dev micro-F1 | zero R@5 (absent from train') "
             "| zero R@5 (absent from train' + dev') | seconds |",
             "|---|---|---|---|---|---|---|"]
    for r in report["variants"]:
        for line in (r, r.get("descriptions")):
            if line is None:
                continue
            zero = [line.get("dev_zero_r5_full"), line.get("dev_zero_r5_full_both")]
            zero = ["–" if z is None or z != z else f"{100 * z:.1f}" for z in zero]
            lines.append(f"| {line['variant']} "
                         f"| {r.get('max_epochs') or report['choices'].get('epoch')} "
                         f"| {100 * line['dev_map']:.2f} | {100 * line['dev_micro_f1']:.2f} "
                         f"| {zero[0]} | {zero[1]} | {line['seconds']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
