"""PLANT against every baseline on EURLEX57K, CodiEsp-D and CodiEsp-P.

One command reproduces the results tables of ``docs/benchmarks/results.md``:

    python benchmarks/bench_xmtc.py --output bench-results          # full run
    python benchmarks/bench_xmtc.py --datasets codiesp-D --models prior,svm
    python benchmarks/bench_xmtc.py --smoke --output smoke-out      # ~1 minute, for tests
    python benchmarks/bench_xmtc.py --datasets codiesp-D --top-labels 45   # a smaller shape

Protocol (the machinery of ``xplant run``, :func:`xplant.app.run_models`):
every model of a dataset sees the same official train / dev / test splits and
the same label space; it is fitted on train in its own child process (its fit
seconds and peak RSS are its own); anything chosen (C of the linear models,
epochs by early stopping on dev MAP, the top-k and threshold decision rules)
is chosen on dev; the test split is scored once with
:func:`xplant.metrics.xmtc_report`.

Rows: the frequency prior; TF-IDF + one-vs-rest squared-hinge SVM (C in
{0.1, 1, 10} on dev); TF-IDF + one-vs-rest logistic regression (C in
{1, 10, 100} on dev); napkinXC PLT, Omikuji (Bonsai) and LibMultiLabel's
linear one-vs-rest when their extras are installed; ``plant=False``
(random-init label-wise attention) and PLANT with the word CNN backbone;
PLANT with the bundled MiniLM-L6 encoder (``backbone="hf"``) on the first
``--minilm-max-docs`` training documents for ``--minilm-epochs`` epochs,
reading ``--minilm-max-length`` tokens per document; and,
on CodiEsp, PLANT's ablation switches (:data:`xplant.app._ablate.ABLATIONS`).

Budgets (documented in the output): the neural rows stop at ``--epochs``
Stage 2 and ``--plant-epochs`` Stage 1 epochs (early stopping on dev MAP
may stop them sooner); ``--dev-docs`` makes every dev choice on a fixed
random subset of dev (a neural row's dev pass each epoch then costs less);
``--neural-max-docs`` and ``--neural-max-length``
cap the training documents and the tokens per document of the word-backbone
neural rows (dev and test stay whole); a row whose best dev epoch is its last one is
flagged ``budget_limited`` (it was still improving). A model that fails is
listed under ``failed`` and the others still run.

Corpora of another shape: ``--top-labels L`` keeps, in every split, the L
labels most frequent in train and drops the documents left without one;
``--subset-docs N`` then keeps a seeded random N of the training documents
(``--subset-seed``; :func:`xplant.model_selection.frequent_label_subset`).
The run prints the shape (documents per split, labels, labels per
document) and records it in ``bench.json``. ``--set NAME=VALUE``
(repeatable) changes one PlantClassifier parameter of the PLANT and
``plant=False`` rows, e.g. ``--set stage1_weight=0`` (``plant=False`` keeps
``stage1_weight=0``); ``planter__<name>`` goes to the Stage 1 planter and
``mig__<name>`` to the MIG step (``--set mig__top_k=20``: the size of each
label's Stage 1 target T_l): one command per switch of
``docs/benchmarks/evidence.md``.

Output, under ``--output``: ``<dataset>/results.json``, ``per_label.npz``,
``report.html`` and ``f1_by_frequency.png`` (F1 against label training
frequency, one line per model; from :func:`xplant.report.render_report`),
and ``bench.json`` / ``bench.md`` with every table, the budgets, the machine
and the package versions.
"""

import argparse
import importlib.util
import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

from xplant.app import MARKDOWN_COLUMNS, ablation_specs, load_splits, markdown_table, run_models

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "eurlex57k"
DATASETS = ("eurlex57k", "codiesp-D", "codiesp-P")

#: Short names of the rows (``--models``), in table order.
ROWS = ("prior", "svm", "lr", "napkinxc", "omikuji", "libmultilabel", "plant-false", "plant",
        "minilm", "ablations")

#: Optional extras: short name -> (model kind, importable module).
OPTIONAL = {"napkinxc": ("napkinXC PLT", "napkinxc"), "omikuji": ("Omikuji", "omikuji"),
            "libmultilabel": ("LibMultiLabel", "libmultilabel")}

#: Default neural budgets per dataset: Stage 2 epochs, Stage 1 epochs.
#: CodiEsp: the main job's budget. EURLEX57K (45,000 documents): sized to
#: about 2 hours per neural model on 2 CPU cores.
EPOCHS = {"codiesp": (14, 5), "eurlex57k": (5, 2)}
MINILM_MAX_DOCS = 1000
MINILM_EPOCHS = 2
#: Tokens per document MiniLM PLANT reads (the classifier's own default is 4096).
MINILM_MAX_LENGTH = 512

#: The smoke mode: a slice of each split, one epoch, MiniLM on 8 documents.
SMOKE = {"max_docs": 20, "epochs": 1, "plant_epochs": 1, "minilm_max_docs": 8,
         "minilm_epochs": 1, "minilm_max_length": 64}


def machine():
    """Cores, RAM (GiB), platform and processor of this machine."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        ram = float("nan")
    return {"cores": os.cpu_count(), "ram_gib": round(ram, 1), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine()}


def model_specs(dataset, rows, *, epochs, plant_epochs, minilm_max_docs, minilm_epochs,
                minilm_max_length=MINILM_MAX_LENGTH, neural_max_docs=None, neural_max_length=None,
                svm_grid=None, neural_params=None):
    """Model specs of one dataset for :func:`xplant.app.run_models`.

    ``neural_max_docs`` / ``neural_max_length`` budget the word-backbone
    neural rows (PLANT, ``plant=False``, the ablations): they train on the
    first N training documents and read the first M tokens of each document
    (dev and test stay whole). None: all of them, and the classifier's own
    ``max_length``. ``svm_grid``: the C values the SVM row chooses from on
    dev (None: :data:`xplant.app._fit_row.DEV_GRIDS`). ``neural_params``: overrides of
    :class:`~xplant.neural.PlantClassifier` (``planter__<name>`` for its
    planter) for the word-backbone PLANT and ``plant=False`` rows;
    ``plant=False`` keeps ``stage1_weight=0`` whatever they say.

    Returns
    -------
    specs : list of dict
    skipped : list of str
        Rows left out, with the reason (an optional extra not installed).
    """
    specs, skipped = [], []
    neural = {"epochs": epochs, "plant_epochs": plant_epochs}
    extra, word = {}, dict(neural_params or {})
    if neural_max_docs is not None:
        extra["max_train_docs"] = neural["max_train_docs"] = int(neural_max_docs)
    if neural_max_length is not None:
        word["module__max_length"] = neural["max_length"] = int(neural_max_length)
    for row in rows:
        if row == "prior":
            specs.append({"name": "frequency prior", "budget": {}})
        elif row == "svm":
            spec = {"name": "TF-IDF + SVM", "budget": {}}
            if svm_grid is not None:
                spec["grid"] = {"ovr__C": [float(c) for c in svm_grid]}
            specs.append(spec)
        elif row == "lr":
            specs.append({"name": "TF-IDF + LR", "budget": {}})
        elif row in OPTIONAL:
            kind, module = OPTIONAL[row]
            if importlib.util.find_spec(module) is None:
                skipped.append(f"{kind}: {module} not installed (pip install 'xplant[...]' extra)")
            else:
                specs.append({"name": kind, "budget": {}})
        elif row == "plant-false":
            specs.append({"name": "plant=False", "params": {**word, "stage1_weight": 0.0}, **extra,
                          "budget": dict(neural)})
        elif row == "plant":
            specs.append({"name": "PLANT", "params": dict(word), **extra, "budget": dict(neural)})
        elif row == "minilm":
            specs.append({"name": "PLANT (MiniLM)", "model": "PLANT",
                          "params": {"backbone": "hf", "max_epochs": minilm_epochs,
                                     "module__max_length": minilm_max_length},
                          "max_train_docs": minilm_max_docs,
                          "budget": {"epochs": minilm_epochs, "plant_epochs": plant_epochs,
                                     "max_train_docs": minilm_max_docs,
                                     "max_length": minilm_max_length}})
        elif row == "ablations":
            if not dataset.startswith("codiesp"):
                continue  # the ablation switches run on CodiEsp only
            for spec in ablation_specs(prefix="PLANT "):
                if spec["name"] in ("PLANT full", "PLANT plant=False"):
                    continue  # already rows "PLANT" and "plant=False"
                specs.append({**spec, "params": {**spec["params"], **word}, **extra,
                              "budget": dict(neural)})
        else:
            raise ValueError(f"unknown row {row!r}; choose from {ROWS}")
    return specs, skipped


def _data_args(dataset, data_home, max_docs, dev_docs=None, subset=None):
    """Keyword arguments of :func:`xplant.app.load_splits` for one dataset.

    ``subset``: ``{"n_labels", "n_docs", "random_state"}`` of the most
    frequent labels' subset, or None (the whole label space).
    """
    extra = {"subset": dict(subset)} if subset is not None else {}
    if dataset == "eurlex57k":
        return {"dataset": "eurlex57k", "data_home": str(data_home), "max_docs": max_docs,
                "dev_docs": dev_docs, **extra}
    if dataset in ("codiesp-D", "codiesp-P"):
        return {"dataset": "codiesp", "codes": dataset[-1], "language": "en", "max_docs": max_docs,
                "dev_docs": dev_docs, **extra}
    raise ValueError(f"unknown dataset {dataset!r}; choose from {DATASETS}")


def corpus_shape(splits):
    """Documents, labels and labels per document of each split.

    Returns
    -------
    dict
        ``{"documents": {split: n}, "n_labels": L, "labels_per_document":
        {split: mean positives per document}}``.
    """
    return {"documents": {s: len(b.texts) for s, b in splits.items()},
            "n_labels": int(splits["train"].Y.shape[1]),
            "labels_per_document": {s: round(float(b.Y.nnz) / max(1, b.Y.shape[0]), 3)
                                    for s, b in splits.items()}}


def _subset_arg(args):
    if args.top_labels is None:
        if args.subset_docs is not None:
            raise SystemExit("--subset-docs needs --top-labels (the labels the subset keeps)")
        return None
    return {"n_labels": args.top_labels, "n_docs": args.subset_docs,
            "random_state": args.subset_seed}


def run_dataset(dataset, out_dir, args, log=print):
    """Run every row on one dataset; return its section of ``bench.json``."""
    smoke = SMOKE if args.smoke else {}
    max_docs = smoke.get("max_docs", args.max_docs)
    key = "eurlex57k" if dataset == "eurlex57k" else "codiesp"
    epochs = smoke.get("epochs", args.epochs or EPOCHS[key][0])
    plant_epochs = smoke.get("plant_epochs", args.plant_epochs or EPOCHS[key][1])
    minilm_docs = smoke.get("minilm_max_docs", args.minilm_max_docs)
    minilm_epochs = smoke.get("minilm_epochs", args.minilm_epochs)
    minilm_length = smoke.get("minilm_max_length", args.minilm_max_length)
    specs, skipped = model_specs(dataset, args.models, epochs=epochs, plant_epochs=plant_epochs,
                                 minilm_max_docs=minilm_docs, minilm_epochs=minilm_epochs,
                                 minilm_max_length=minilm_length,
                                 neural_max_docs=args.neural_max_docs,
                                 neural_max_length=args.neural_max_length,
                                 svm_grid=args.svm_grid, neural_params=args.set)
    subset = _subset_arg(args)
    data_args = _data_args(dataset, args.data_home, max_docs, args.dev_docs, subset)
    splits = load_splits(**data_args)
    shape = corpus_shape(splits)
    sizes, lpd = shape["documents"], shape["labels_per_document"]
    log(f"\n######## {dataset}" + (f" (subset {subset})" if subset else "")
        + f": {sizes['train']} train / {sizes['dev']} dev / {sizes['test']} test documents, "
        f"{shape['n_labels']} labels, {lpd['train']:.2f} / {lpd['dev']:.2f} / {lpd['test']:.2f} "
        "labels per document")
    budgets = {s["name"]: s.pop("budget") for s in specs}
    res = run_models(data_args, specs, out_dir, epochs=epochs, plant_epochs=plant_epochs,
                     random_state=args.seed, verbose=0 if args.quiet else 1,
                     isolate=not args.no_isolate, save_models=False, num_threads=args.threads,
                     splits=splits, keep_going=True, resume=args.resume, log=log,
                     description_encoder=args.description_encoder,
                     record={"dataset": dataset, "split": "test", "dataset_args": data_args})
    from xplant.app import FUSED_SUFFIXES
    for m in res["models"]:           # a fused row has the budget of the fit it comes from
        base = next((m["name"][:-len(sfx)] for sfx in FUSED_SUFFIXES.values()
                     if m["name"].endswith(sfx)), m["name"])
        m["budget"] = budgets[base]
        ep = m["budget"].get("epochs")
        m["budget_limited"] = bool(ep and m.get("best_epoch") is not None and m["best_epoch"] >= ep)
    (Path(out_dir) / "results.json").write_text(json.dumps(res, indent=2, default=float))
    plot = None
    if res["models"]:
        from xplant.report import render_report
        render_report(out_dir)
        if (Path(out_dir) / "f1_by_frequency.png").is_file():
            plot = f"{Path(out_dir).name}/f1_by_frequency.png"
    return {"dataset": dataset, "documents": sizes, "n_labels": shape["n_labels"],
            "labels_per_document": lpd, "subset": subset,
            "budget": {"epochs": epochs, "plant_epochs": plant_epochs, "max_docs": max_docs,
                       "dev_docs": args.dev_docs,
                       "minilm_max_docs": minilm_docs, "minilm_epochs": minilm_epochs,
                       "minilm_max_length": minilm_length,
                       "neural_max_docs": args.neural_max_docs,
                       "neural_max_length": args.neural_max_length,
                       "neural_params": args.set},
            "models": res["models"], "failed": res.get("failed", []), "skipped": skipped,
            "versions": res["versions"], "plot": plot}


def format_markdown(report):
    """The Markdown of ``bench.md``: one table (and plot) per dataset."""
    m = report["machine"]
    lines = ["# xplant benchmark", "",
             f"Command: `{report['command']}`  ", f"Date: {report['created']}  ",
             f"Machine: {m['cores']} cores, {m['ram_gib']} GiB RAM, {m['platform']}  ",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()), "",
             "Test split, percent. F1 with top-k, k chosen on dev; F1 freq / few / zero: "
             "macro-F1 over labels with >50 / 1-50 / 0 training documents. Fit seconds include "
             "the dev selection; "
             + ("peak RSS of the fitting process (each model in its own process)."
                if report["isolated"] else "peak RSS of the whole run so far (--no-isolate: "
                "not per model).") + "", ""]
    for d in report["datasets"]:
        b = d["budget"]
        lines += [f"## {d['dataset']}", "",
                  f"{d['documents']['train']} train / {d['documents']['dev']} dev / "
                  f"{d['documents']['test']} test documents, {d['n_labels']} labels"
                  + (f", {d['labels_per_document']['train']:.2f} labels per training document"
                     if d.get("labels_per_document") else "")
                  + (f" (the {d['subset']['n_labels']} most frequent labels"
                     + (f", {d['subset']['n_docs']} training documents drawn with seed "
                        f"{d['subset']['random_state']}" if d['subset']['n_docs'] else "")
                     + ", documents without them dropped)" if d.get("subset") else "")
                  + ". Budget: "
                  f"{b['epochs']} Stage 2 epochs, {b['plant_epochs']} Stage 1 epochs"
                  + (f", first {b['neural_max_docs']} training documents" if b.get("neural_max_docs")
                     else "")
                  + (f", {b['neural_max_length']} tokens per document" if b.get("neural_max_length")
                     else "")
                  + "; MiniLM: "
                  f"first {b['minilm_max_docs']} training documents, {b['minilm_epochs']} epochs, "
                  f"{b['minilm_max_length']} tokens per document"
                  + (f"; first {b['max_docs']} documents of each split" if b["max_docs"] else "")
                  + (f"; PLANT and plant=False with {b['neural_params']}" if b.get("neural_params")
                     else "")
                  + (f"; every choice made on {b['dev_docs']} random dev documents"
                     if b.get("dev_docs") else "")
                  + ".", "", markdown_table(d["models"], MARKDOWN_COLUMNS), ""]
        limited = [x["name"] for x in d["models"] if x.get("budget_limited")]
        if limited:
            lines += ["Budget-limited (best dev epoch = last epoch): " + ", ".join(limited) + ".", ""]
        for f in d["failed"]:
            lines += [f"Did not finish: {f['name']} ({f['error']}).", ""]
        for s in d["skipped"]:
            lines += [f"Not run: {s}.", ""]
        if d["plot"]:
            lines += [f"![F1 against label training frequency, {d['dataset']}]({d['plot']})", ""]
    return "\n".join(lines)


def _param(text):
    """``NAME=VALUE`` (VALUE JSON, else a bare string) -> ``(name, value)``."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output", default=None,
                   help="output folder (default ./bench-results/<UTC timestamp>)")
    p.add_argument("--data-home", default=str(DEFAULT_DATA),
                   help="EURLEX57K folder (default: shared/data/eurlex57k beside the checkout)")
    p.add_argument("--datasets", default=",".join(DATASETS),
                   help="comma-separated subset of %(default)s")
    p.add_argument("--models", default=",".join(ROWS),
                   help="comma-separated subset of the rows %(default)s")
    p.add_argument("--epochs", type=int, help="Stage 2 epoch budget (default: 14 CodiEsp, 5 EURLEX57K)")
    p.add_argument("--plant-epochs", type=int, help="Stage 1 epoch budget (default: 5 CodiEsp, 2 EURLEX57K)")
    p.add_argument("--minilm-max-docs", type=int, default=MINILM_MAX_DOCS,
                   help="MiniLM PLANT trains on the first N training documents")
    p.add_argument("--minilm-epochs", type=int, default=MINILM_EPOCHS)
    p.add_argument("--minilm-max-length", type=int, default=MINILM_MAX_LENGTH,
                   help="tokens per document MiniLM PLANT reads")
    p.add_argument("--neural-max-docs", type=int,
                   help="PLANT / plant=False / ablation rows train on the first N training documents")
    p.add_argument("--neural-max-length", type=int,
                   help="tokens per document those rows read (default: the classifier's 4096)")
    p.add_argument("--svm-grid", type=lambda s: [float(c) for c in s.split(",")],
                   help="comma-separated C values the SVM row chooses from on dev "
                        "(default 0.1,1,10)")
    p.add_argument("--set", type=_param, action="append", metavar="NAME=VALUE",
                   help="a PlantClassifier parameter of the PLANT and plant=False rows, VALUE in "
                        "JSON or a bare string (e.g. --set stage1_weight=0 --set "
                        "planter__max_epochs=3 --set scoring=precision_at_5); repeatable; "
                        "plant=False keeps stage1_weight=0")
    p.add_argument("--max-docs", type=int, help="first N documents of each split")
    p.add_argument("--dev-docs", type=int,
                   help="make every dev choice (epochs, C, decision rules) on N random dev "
                        "documents; test stays whole (default: all of dev)")
    p.add_argument("--top-labels", type=int,
                   help="a corpus of another shape: keep the L labels most frequent in train, "
                        "drop the documents left without one (every split)")
    p.add_argument("--subset-docs", type=int,
                   help="with --top-labels: keep a seeded random N of the training documents")
    p.add_argument("--subset-seed", type=int, default=0, help="seed of --subset-docs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, help="torch threads per fit (default: torch's)")
    p.add_argument("--no-isolate", action="store_true", help="fit in this process")
    p.add_argument("--description-encoder", default="minilm", metavar="SPEC",
                   help="sentence encoder of the description source, as xplant run's: minilm "
                        "(default), hf:<folder> or none (TF-IDF alone)")
    p.add_argument("--smoke", action="store_true",
                   help=f"a slice of each dataset and tiny budgets ({SMOKE})")
    p.add_argument("--resume", action="store_true",
                   help="continue the interrupted run in --output: finished rows are kept, "
                        "neural fits continue from their last epoch checkpoint")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv=None, log=print):
    """Run the benchmark; write ``bench.json`` and ``bench.md``; return the report dict."""
    args = build_parser().parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    args.set = dict(args.set) if args.set else None
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for d in datasets:
        if d not in DATASETS:
            raise SystemExit(f"unknown dataset {d!r}; choose from {DATASETS}")
    for m in args.models:
        if m not in ROWS:
            raise SystemExit(f"unknown row {m!r}; choose from {ROWS}")
    _subset_arg(args)                      # --subset-docs without --top-labels: stop now
    if args.resume and not args.output:
        raise SystemExit("--resume needs --output: the folder of the interrupted run")
    out = Path(args.output) if args.output else \
        Path("bench-results") / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    report = {"command": "python benchmarks/bench_xmtc.py " + " ".join(argv or []),
              "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": machine(), "smoke": args.smoke,
              "isolated": not args.no_isolate, "datasets": [], "skipped_datasets": []}
    for d in datasets:
        if d == "eurlex57k" and not (Path(args.data_home) / "train.jsonl.gz").is_file() \
                and not (Path(args.data_home) / "train").is_dir():
            log(f"skipping eurlex57k: no data in {args.data_home} (pass --data-home)")
            report["skipped_datasets"].append(d)
            continue
        report["datasets"].append(run_dataset(d, out / d, args, log=log))
        report["versions"] = report["datasets"][-1]["versions"]
    report.setdefault("versions", {})
    report["wall_seconds"] = time.perf_counter() - start
    (out / "bench.json").write_text(json.dumps(report, indent=2, default=float))
    (out / "bench.md").write_text(format_markdown(report))
    log(format_markdown(report))
    log(f"wrote {out / 'bench.md'} in {report['wall_seconds']:.0f} s")
    return report


if __name__ == "__main__":
    main(__import__("sys").argv[1:])
