"""Which text serves each row of the CodiEsp job: the Spanish original, the English translation, or both.

CodiEsp ships each clinical case in Spanish and in an English machine
translation. Each row of the job is fitted on the training split and scored
on dev (MAP, percent), as :func:`xplant.app.fit_with_dev` fits it in
``xplant run``, reading

- ``en``: the English translation (the job's text until now);
- ``es``: the Spanish original (the text CodiEsp-X's offsets index);
- ``both``: one text per case, the English then the Spanish joined by a
  blank line, so that one model reads the two (the alternative, one fit per
  text fused, doubles every fit; not measured).

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


def _joined(en, es):
    """A split whose texts are the English and the Spanish of each case, joined."""
    both = type(en)(**en)
    both["texts"] = [a + "\n\n" + b for a, b in zip(en.texts, es.texts)]
    return both


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
    p.add_argument("--output", help="write the figures as JSON here")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from xplant.app import (build_model, dataset_settings, find_row, first_documents, fit_with_dev,
                            row_scores)
    from xplant.app._build import DEFAULT_EPOCHS, DEFAULT_PLANT_EPOCHS
    from xplant.datasets import load_codiesp
    from xplant.metrics import mean_average_precision

    data = {lang: {s: first_documents(load_codiesp(s, codes=args.codes, language=lang),
                                      args.max_docs) for s in ("train", "dev")}
            for lang in ("en", "es")}
    data["both"] = {s: _joined(data["en"][s], data["es"][s]) for s in ("train", "dev")}
    results = []
    for name in args.rows.split(","):
        row = find_row(name)
        for lang in args.languages.split(","):
            tr, dv = data[lang]["train"], data[lang]["dev"]
            t = time.perf_counter()
            model = build_model(name, epochs=args.epochs or DEFAULT_EPOCHS,
                                plant_epochs=args.plant_epochs or DEFAULT_PLANT_EPOCHS,
                                random_state=args.seed, verbose=0,
                                params=dataset_settings({}, row, "codiesp", args.codes))
            fit_with_dev(model, tr, dv)
            seconds = time.perf_counter() - t
            scores, readings = row_scores(model, dv.texts)
            final = model.steps[-1][1] if hasattr(model, "steps") else model
            # a shortlisted PLANT row: the network alone ("PLANT") and fused ("PLANT fused")
            named = ({row.display: readings["alone"], row.display + " fused": scores}
                     if readings else {row.display: scores})
            for display, s in named.items():
                results.append({"row": display, "text": lang,
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
