"""Which text serves each row of the CodiEsp job: the Spanish original, the English translation, or both.

CodiEsp ships each clinical case in Spanish and in an English machine
translation. Each row of the job is fitted on the training split and scored
on dev (MAP, percent), as :func:`xplant.app.fit_with_dev` fits it in
``xplant run``, reading

- ``en``: the English translation (the job's text until now);
- ``es``: the Spanish original (the text CodiEsp-X's offsets index);
- ``both``: one text per case, the English then the Spanish joined by a
  blank line (``load_codiesp(language="both")``), so that one model reads
  the two (the alternative, one fit per text fused, doubles every fit; not
  measured).

Each row is fitted as ``xplant run`` fits it: PLANT on a text that holds
the Spanish the offsets index (``es``, and ``both``, whose loader moves the
offsets past the English part) is planted from the training split's gold
evidence (:func:`xplant.app.fit_with_dev`), on ``en`` from MIG. With
``--mig``, PLANT on ``es`` and ``both`` is also fitted planted from MIG
alone, for the planting's own share of the difference.

The mention matcher is not a row here: it reads the text its evidence
indexes, the Spanish one, by construction. The label space is the codes of
train and dev (the known labels); test is not read.

Run: ``python benchmarks/bench_language.py [--rows svm,descriptions,plant]
[--codes D] [--seed 0] [--max-docs N] [--output FILE]``.
"""

import argparse
import json
import time
from pathlib import Path

import torch


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="svm,descriptions,plant")
    p.add_argument("--languages", default="en,es,both")
    p.add_argument("--codes", default="D", choices=["D", "P"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-docs", type=int, default=None,
                   help="first N documents of each split (a smoke run); default all")
    p.add_argument("--epochs", type=int, default=None, help="Stage 2 epochs (default: the job's)")
    p.add_argument("--plant-epochs", type=int, default=None,
                   help="Stage 1 epochs (default: the job's)")
    p.add_argument("--mig", action="store_true",
                   help="also PLANT planted from MIG alone on es and both")
    p.add_argument("--output", help="write the figures as JSON here")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from xplant.app import (build_model, find_row, first_documents, fit_with_dev, row_params,
                            row_scores)
    from xplant.datasets import load_codiesp
    from xplant.metrics import mean_average_precision

    data = {lang: {s: first_documents(load_codiesp(s, codes=args.codes, language=lang),
                                      args.max_docs) for s in ("train", "dev")}
            for lang in args.languages.split(",")}
    # the job's epoch budgets unless given
    budget = {k: v for k, v in (("epochs", args.epochs), ("plant_epochs", args.plant_epochs)) if v}
    results = []
    runs = [(name, lang, False) for name in args.rows.split(",")
            for lang in args.languages.split(",")]
    if args.mig:
        runs += [("plant", lang, True) for lang in args.languages.split(",") if lang != "en"]
    for name, lang, mig_only in runs:
        row = find_row(name)
        tr, dv = data[lang]["train"], data[lang]["dev"]
        t = time.perf_counter()
        model = build_model(name, **budget, random_state=args.seed, verbose=0,
                            params=row_params({}, row, "codiesp", args.codes))
        if mig_only:                 # as fit_with_dev, without the evidence
            model.fit(tr.texts, tr.Y, clf__validation_data=(dv.texts, dv.Y),
                      clf__label_names=[str(n) for n in tr.label_names])
        else:
            fit_with_dev(model, tr, dv)
        seconds = time.perf_counter() - t
        scores, readings = row_scores(model, dv.texts)
        final = model.steps[-1][1] if hasattr(model, "steps") else model
        # a shortlisted PLANT row: the network alone ("PLANT") and fused ("PLANT fused")
        how = ", planted from MIG alone" if mig_only else ""
        named = ({row.display + how: readings["alone"], row.display + " fused" + how: scores}
                 if readings else {row.display + how: scores})
        for shown, s in named.items():
            results.append({"row": shown, "text": lang,
                            "dev_MAP": 100 * mean_average_precision(dv.Y, s),
                            "best_epoch": getattr(final, "best_epoch_", None),
                            "fit_seconds": seconds})
            print(json.dumps(results[-1], default=float), flush=True)
    print(f"CodiEsp-{args.codes} dev MAP (percent), seed {args.seed}; known labels")
    print("| row | " + " | ".join(args.languages.split(",")) + " |")
    print("|---" * (1 + len(args.languages.split(","))) + "|")
    for name in dict.fromkeys(r["row"] for r in results):
        cells = {r["text"]: f"{r['dev_MAP']:.1f}" for r in results if r["row"] == name}
        print(f"| {name} | " + " | ".join(cells.get(l, "—") for l in args.languages.split(","))
              + " |")
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=2, default=float))
    return results


if __name__ == "__main__":
    main()
