"""``xplant run`` on any data source: the main job's protocol, the run folder's files.

The machinery is :func:`xplant.app._run.run_models`; this module picks the
data (:mod:`xplant.app._sources`), the rows (:mod:`xplant.app._rows`), records the
inputs and writes what the report needs.
"""

import json
import time
from pathlib import Path

#: Measured cost of the word-CNN neural rows on one CPU core (docs/results.md,
#: EURLEX57K, 512 tokens: one 5,000-document epoch about 6 minutes, one pass
#: over 6,000 dev documents about 3 minutes).
TRAIN_SECONDS_PER_DOC_EPOCH = 6 * 60 / 5000
DEV_SECONDS_PER_DOC = 3 * 60 / 6000

#: Estimates above this many seconds are printed before the run starts.
WARN_ABOVE_SECONDS = 3600


def estimate_neural_seconds(n_train, n_dev, epochs, plant_epochs):
    """Rough single-core seconds of one word-CNN neural row (Stage 1 + Stage 2, dev passes).

    From the EURLEX57K measurements in ``docs/results.md``: training costs
    about 0.072 s per document and epoch, a dev pass about 0.03 s per
    document. Early stopping can end a fit sooner; other jobs on the same
    cores make it slower.

    Examples
    --------
    >>> round(estimate_neural_seconds(45000, 6000, 40, 10) / 3600, 1)
    47.5
    """
    train = (epochs + plant_epochs) * n_train * TRAIN_SECONDS_PER_DOC_EPOCH
    return train + (epochs + plant_epochs) * n_dev * DEV_SECONDS_PER_DOC


def _hours(seconds):
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds / 60:.0f} minutes" if seconds >= 60 else f"{seconds:.0f} seconds"


def describe(data_args, splits):
    """The ``results.json`` record of the data: source, how dev and test were made, input files."""
    kind = data_args["dataset"]
    record = {"dataset": kind, "split": "test", "data_home": data_args.get("data_home")}
    if kind == "codiesp":
        record["dataset_args"] = {k: data_args.get(k) for k in ("codes", "language", "max_docs")}
        return record
    if kind in ("user", "xc"):
        from ._sources import load_source
        _, notes = load_source(data_args)
        record["inputs"] = notes["inputs"]
        record["dev_source"] = notes["dev"]
        record["test_source"] = notes["test"]
        if notes["test"] != "file":
            record["split"] = "dev"
            record["optimistic"] = True
    record["dataset_args"] = {k: v for k, v in data_args.items() if k not in ("dataset",)}
    record["sizes"] = {s: int(b.Y.shape[0]) for s, b in splits.items()}
    record["n_labels"] = int(splits["train"].Y.shape[1])
    return record


def model_specs(rows, features=False):
    """``run_models`` specs of rows (see :func:`xplant.app._rows.parse_models`).

    Raises
    ------
    ValueError
        A row that reads text on a feature-only dataset, or a row whose
        optional package is missing.
    """
    import importlib.util
    from ._rows import find_row
    specs, names = [], {r.name for r in rows}
    for row in rows:
        if row.base is not None:         # fitted as its base row, which yields it
            if row.base in names:
                continue
            names.add(row.base)
            row = find_row(row.base)
        if features and row.needs_text:
            raise ValueError(f"model {row.name!r} ({row.display}) reads text, and an XC folder "
                             "holds feature vectors only; choose from prior, svm, lr, omikuji, "
                             "napkinxc, libmultilabel")
        if row.module and importlib.util.find_spec(row.module) is None:
            raise ValueError(f"model {row.name!r} needs the package {row.module}; install it "
                             "(pip install 'xplant[trees]' or 'xplant[libmultilabel]') or leave "
                             "the row out of --models")
        specs.append({"name": row.display})
    return specs


def run_job(output_dir=None, data_args=None, *, models=None, epochs=None, plant_epochs=None,
            random_state=0, verbose=1, isolate=True, report=False, resume=False, log=print):
    """Fit every row on train, choose on dev, score test once; write the run folder.

    Parameters
    ----------
    output_dir : str or Path or None
        Run folder; default ``./xplant-runs/<UTC timestamp>/``.
    data_args : dict or None
        From :func:`xplant.app._sources.data_args_from`; None: CodiEsp-D, English.
    models : sequence of str or None
        Row names (short or display, any case); None: the main job's rows.
    epochs, plant_epochs : int or None
        Stage 2 and Stage 1 epoch budgets (None: the main job's).
    random_state, verbose, isolate, report, resume
        As in :func:`xplant.app._run.run_main_job`.

    Returns
    -------
    results : dict
        The content of ``results.json``: the main job's schema plus
        ``inputs`` (each input file's path, SHA-256 and size), ``dev_source``,
        ``test_source`` and, without a test file, ``"split": "dev"`` and
        ``"optimistic": true``.

    Raises
    ------
    ValueError
        ``resume=True`` without ``output_dir``, an unknown row, a text row
        on a feature-only dataset.
    """
    from ._rows import parse_models
    from .._files import prepare_run_folder, write_text
    from ._run import (DEFAULT_EPOCHS, DEFAULT_MODELS, DEFAULT_PLANT_EPOCHS, check_model_specs,
                       format_table, load_splits, run_models)
    if resume and not output_dir:
        raise ValueError("resume=True needs output_dir: the folder of the interrupted run "
                         "(xplant run --resume --output RUN_DIR)")
    epochs = DEFAULT_EPOCHS if epochs is None else epochs
    plant_epochs = DEFAULT_PLANT_EPOCHS if plant_epochs is None else plant_epochs
    data_args = dict(data_args or {"dataset": "codiesp", "codes": "D", "language": "en",
                                   "data_home": None, "max_docs": None})
    rows = parse_models(",".join(models or DEFAULT_MODELS))
    start = time.perf_counter()
    splits = load_splits(**data_args)
    features = splits["train"].get("texts") is None
    specs = model_specs(rows, features)
    check_model_specs(specs, epochs=epochs, plant_epochs=plant_epochs,
                      random_state=random_state, verbose=0)
    record = describe(data_args, splits)
    data = [data_args.get("data_home")] + [f["path"] for f in record.get("inputs", {}).values()]
    out_dir = prepare_run_folder(output_dir, data=[d for d in data if d], resume=resume)
    tr, dv, te = splits["train"], splits["dev"], splits["test"]
    name = record["dataset"]
    if name == "codiesp":
        name = f"CodiEsp-{data_args['codes']} ({data_args['language']})"
    log(f"{name}: {tr.Y.shape[0]} train / {dv.Y.shape[0]} dev / "
        f"{te.Y.shape[0]} {record['split']} documents, {tr.Y.shape[1]} labels; "
        f"run folder {out_dir}")
    for key in ("dev_source", "test_source"):
        if record.get(key, "file") != "file":
            log(record[key])
    neural = [r for r in rows if r.needs_text]
    if neural:
        est = estimate_neural_seconds(tr.Y.shape[0], dv.Y.shape[0], epochs, plant_epochs)
        if est > WARN_ABOVE_SECONDS:
            log(f"estimated time: about {_hours(est)} of one CPU core for each of the "
                f"{len(neural)} neural rows ({', '.join(r.name for r in neural)}), from measured "
                "word-CNN speed; early stopping may end sooner. Lower --epochs, use --max-docs, "
                "or leave the neural rows out of --models for a quick run")
    results = run_models(data_args, specs, out_dir, epochs=epochs, plant_epochs=plant_epochs,
                         random_state=random_state, verbose=verbose, isolate=isolate,
                         splits=splits, record=record, resume=resume, log=log)
    results["wall_seconds"] = time.perf_counter() - start
    write_text(out_dir / "results.json", json.dumps(results, indent=2, default=float))
    if results.get("optimistic"):
        log("\nDev split (percent; OPTIMISTIC: dev also chose epochs, C and the decision rule); "
            "F1 with top-k, k chosen on dev by micro-F1:\n")
    else:
        log("\nTest split (percent); F1 with top-k, k chosen on dev by micro-F1:\n")
    log(format_table(results["models"]))
    log(f"\nwrote {out_dir / 'results.json'} in {results['wall_seconds']:.0f} s")
    if report:
        from ..report import render_report
        log(f"wrote {render_report(out_dir)}")
    return results


#: Test documents shown with their evidence in the report.
EXAMPLE_DOCS = 3


def evidence_examples(clf, test, train, n_docs=EXAMPLE_DOCS, top_labels=5, top_spans=3):
    """The first test documents with gold labels: top labels, gold marked, evidence spans.

    Parameters
    ----------
    clf : fitted PlantClassifier
        Anything with ``explain(texts, top_labels, top_spans)``.
    test, train : Bunch
        Splits; ``train.label_descriptions`` (if any) names the labels.

    Returns
    -------
    list of dict
        ``evidence.json`` documents (``docs/evidence.md``): ``{"doc_id",
        "text", "gold": [labels], "codes": [{"code", "prob", "gold",
        "description", "spans"}]}``.
    """
    import numpy as np
    Y = test.Y.tocsr()
    rows = [i for i in range(Y.shape[0]) if Y.indptr[i + 1] > Y.indptr[i]][:n_docs]
    if not rows:
        return []
    names = [str(x) for x in train.label_names]
    desc = train.get("label_descriptions")
    texts = [test.texts[i] for i in rows]
    explained = clf.explain(texts, top_labels=top_labels, top_spans=top_spans)
    out = []
    for i, text, ex in zip(rows, texts, explained):
        gold = {names[j] for j in Y.indices[Y.indptr[i]:Y.indptr[i + 1]]}
        codes = []
        for lab in ex["labels"]:
            j = int(lab["index"])
            codes.append({"code": names[j], "prob": float(lab["prob"]), "gold": names[j] in gold,
                          "description": str(desc[j]) if desc is not None and len(desc) > j
                          else "",
                          "spans": [{k: (float(v) if isinstance(v, (float, np.floating)) else v)
                                     for k, v in s.items()} for s in lab["spans"]]})
        out.append({"doc_id": str(test.ids[i]), "text": text, "gold": sorted(gold),
                    "codes": codes})
    return out


def add_evidence(out_dir, name, docs):
    """Put one row's documents into the run folder's ``evidence.json`` (atomically)."""
    from .._files import write_text
    path = Path(out_dir) / "evidence.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data[name] = docs
    write_text(path, json.dumps(data, ensure_ascii=False))
