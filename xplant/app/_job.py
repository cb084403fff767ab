"""``xplant run`` on any data source: the main job's protocol, the run folder's files.

The machinery is :func:`xplant.app._run.run_models`; this module picks the
data (:mod:`xplant.app._sources`), the rows (:mod:`xplant.app._rows`), records the
inputs and writes what the report needs.
"""

import json

import numpy as np
import time

from ._rows import DESCRIPTION_ENCODER, check_description_encoder
from ._build import DEFAULT_EPOCHS, DEFAULT_PLANT_EPOCHS
from ._run import DEFAULT_MODELS

def count_tokens(texts):
    """Word tokens of ``texts`` as the word backbones count them (``\\w+``), each text capped
    at the default ``max_length`` (4096).

    Examples
    --------
    >>> count_tokens(["Fever and dry cough.", "Chest pain"])
    6
    """
    from ..relevance import word_tokens
    return sum(min(len(word_tokens(t, True)), 4096) for t in texts)


def describe(data_args, splits):
    """The ``results.json`` record of the data: source, how dev and test were made, input files."""
    kind = data_args["dataset"]
    record = {"dataset": kind, "split": "test", "data_home": data_args.get("data_home")}
    from ._sources import catalogue_name
    tr = splits["train"] if splits else None
    cat = tr.get("catalogue") if tr is not None else None
    # the closed space of all splits is CodiEsp's alone (data_args_from and load_splits refuse
    # it elsewhere): never recorded for a run that did not use it
    closed = data_args.get("catalogue") == "all-splits" and kind == "codiesp"
    record["label_space"] = {
        "protocol": ("closed: the codes of all splits, test included (optimistic)" if closed else
                     "open: the labels of train and dev, then every other code of the catalogue"
                     if cat is not None else "the labels of train and dev"),
        "catalogue": catalogue_name(kind, data_args.get("codes"), data_args.get("catalogue",
                                                                                 "default")),
        "n_known_labels": None if tr is None else int(tr.Y.shape[1]),
        "n_labels": None if tr is None else int(tr.Y.shape[1] + (0 if cat is None else np.setdiff1d(
            np.asarray(cat.label_names, dtype=str), np.asarray(tr.label_names, dtype=str)).size))}
    from ._sources import run_catalogue
    catalogue = run_catalogue(data_args) if cat is not None else None
    if catalogue is not None:          # an input like the files: what fixes its codes
        record["inputs"] = {"catalogue": {k: v for k, v in catalogue.items() if k != "digest"}}
    if kind == "codiesp":
        record["dataset_args"] = {k: data_args.get(k) for k in ("codes", "language", "max_docs",
                                                                "catalogue")}
        if tr is not None:           # the texts read: the rows', the description source's
            own = tr.get("record") or {}
            record["texts"] = {"documents": own.get("language"), "descriptions": own.get(
                "description_language", own.get("language"))}
        return record
    if kind in ("user", "xc"):
        from ._sources import load_source
        _, notes = load_source(data_args)
        record["inputs"] = {**notes["inputs"], **record.get("inputs", {})}
        record["dev_source"] = notes["dev"]
        record["test_source"] = notes["test"]
        if notes["test"] != "file":
            record["split"] = "dev"
            record["optimistic"] = True
    record["dataset_args"] = {k: v for k, v in data_args.items() if k not in ("dataset",)}
    record["sizes"] = {s: int(b.Y.shape[0]) for s, b in splits.items()}
    record["n_labels"] = int(splits["train"].Y.shape[1])
    return record


def model_specs(rows, features=False, splits=None, source="the training data"):
    """``run_models`` specs of rows (see :func:`xplant.app._rows.parse_models`), checked
    against the data before anything is fitted.

    Parameters
    ----------
    rows : list of Row
    features : bool, default=False
        The data are feature vectors (an XC folder).
    splits : dict or None
        The loaded splits: each row's :attr:`~xplant.app._rows.Row.min_train_docs`
        and :attr:`~xplant.app._rows.Row.needs_descriptions` are checked on
        ``splits["train"]``.
    source : str
        The training file, for the messages.

    Raises
    ------
    ValueError
        A row that reads text on a feature-only dataset, a row whose
        optional package is missing, a row that needs label descriptions
        the data do not give, or fewer training documents than a row needs
        (one message naming every such row and its minimum).
    """
    import importlib.util
    from ._rows import find_row
    if splits is not None:
        _check_rows_fit_data(rows, splits, source)
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


def _check_rows_fit_data(rows, splits, source):
    """Refuse rows that cannot run on the training split, all in one message."""
    n = splits["train"].Y.shape[0]
    short = [r for r in rows if n < r.min_train_docs]
    if short:
        need = ", ".join(f"{r.name} needs {r.min_train_docs}" for r in short)
        raise ValueError(f"{source}: {n} training document(s) (after the dev share, if any, is "
                         f"carved out), too few for: {need}. Give more training documents, or "
                         "leave those rows out of --models (the frequency prior runs on one)")
    from ._splits import has_evidence
    for r in rows:
        if r.needs_evidence and not has_evidence(splits["train"]):
            raise ValueError(f"model {r.name!r} ({r.display}) learns from gold evidence, and "
                             f"{source} gives none; give it with --evidence-field FIELD (JSON "
                             "lines: per document, [{\"label\": ..., \"spans\": [[start, "
                             "end]]}]), or leave the row out of --models")
        if r.needs_descriptions and splits["train"].get("label_descriptions") is None:
            raise ValueError(f"model {r.name!r} ({r.display}) ranks labels by their "
                             f"descriptions, and {source} gives none; give them with "
                             "--label-descriptions FILE (or a --labels catalogue that names "
                             "the labels), or leave the row out of --models")


def run_job(output_dir=None, data_args=None, *, models=None, epochs=None, plant_epochs=None,
            random_state=0, verbose=1, isolate=True, report=False, resume=False, overwrite=False,
            refit=None, description_encoder=DESCRIPTION_ENCODER, log=print):
    """Fit every row on train, choose on dev, score test once; write the run folder.

    Parameters
    ----------
    output_dir : str or Path or None
        Run folder; default ``./xplant-runs/<UTC timestamp>/``.
    data_args : dict or None
        From :func:`xplant.app._sources.data_args_from`; None: CodiEsp-D, English.
    models : sequence of str or None
        Row names (short or display, any case); None: the main job's rows
        (:data:`DEFAULT_MODELS`, and the mention matcher where the training
        split carries gold evidence).
    epochs, plant_epochs : int or None
        Stage 2 and Stage 1 epoch budgets (None: the main job's).
    random_state, verbose, isolate, report, resume
        As in :func:`run_main_job`.
    overwrite : bool, default=False
        Remove an earlier run's files in ``output_dir`` first
        (:func:`xplant._outputs.prepare_run_folder`).
    refit : bool or None, default=None
        Also refit the neural rows, the SVM row and PLANT's ``fused +
        descriptions`` row on train + dev with their dev choices pinned, as
        rows ``"<row> (refit)"`` (:func:`xplant.app.run_models`); the refit
        of the row chosen on dev is then the run's model
        (:func:`xplant.app._results.designate`). None: on for
        :data:`xplant.app._run.REFIT_DATASETS` (CodiEsp, whose CLEF task trained
        on train and dev), off elsewhere, as it doubles the neural rows' cost.
    description_encoder : str or None, default="minilm"
        The description source's sentence encoder (:func:`xplant.app.run_models`):
        ``"minilm"`` (the bundled MiniLM-L6), ``"hf:<folder>"`` (a local Hugging
        Face encoder, e.g. a multilingual one for Spanish), or ``"none"`` / None
        for TF-IDF alone (faster: no encoder to load, no sentence to embed).

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
        on a feature-only dataset, a ``description_encoder`` that is not a
        string or None.
    FileNotFoundError
        A ``description_encoder="hf:<folder>"`` whose folder holds no
        ``config.json``; raised before anything is fitted.
    """
    from ._rows import parse_models
    from ._run import check_model_specs, run_models
    from ._splits import load_splits
    if resume and not output_dir:
        raise ValueError("resume=True needs output_dir: the folder of the interrupted run "
                         "(xplant run --resume --output RUN_DIR)")
    check_description_encoder(description_encoder)
    data_args, refit, epochs, plant_epochs = _job_defaults(data_args, refit, epochs, plant_epochs)
    rows = parse_models(",".join(models or DEFAULT_MODELS))
    _warn_unused_catalogue(rows, data_args)
    start = time.perf_counter()
    splits = load_splits(**data_args)
    from ._rows import find_row
    from ._splits import has_evidence
    if models is None and has_evidence(splits["train"]):   # gold evidence: its own row too
        rows.append(find_row("mentions"))
    record = dict(describe(data_args, splits), refit=bool(refit))
    if refit:
        log("refit: each row is refitted on train + dev with its dev choices fixed "
            "(--no-refit to skip)")
    specs = model_specs(rows, splits["train"].get("texts") is None, splits,
                        (data_args.get("files") or {}).get("train", record["dataset"]))
    check_model_specs(specs, epochs=epochs, plant_epochs=plant_epochs,
                      random_state=random_state, verbose=0)
    out_dir = _job_folder(output_dir, data_args, record, resume=resume, overwrite=overwrite)
    _log_data(log, record, data_args, splits, out_dir, rows, epochs, plant_epochs)
    results = run_models(data_args, specs, out_dir, epochs=epochs, plant_epochs=plant_epochs,
                         random_state=random_state, verbose=verbose, isolate=isolate,
                         splits=splits, record=record, resume=resume, refit=refit,
                         description_encoder=description_encoder, estimate=True, log=log)
    results["wall_seconds"] = time.perf_counter() - start
    _write_results(log, results, out_dir, report)
    return results


def _warn_unused_catalogue(rows, data_args):
    """Warn when a catalogue was given (``--labels``) and no row of the run ranks its codes:
    only PLANT's ``fused + descriptions`` row (a planted row) and the ``descriptions`` row
    (:attr:`~xplant.app._rows.Row.open_space`) do; the others rank the labels of train and
    dev."""
    import warnings
    from ._rows import find_row
    catalogue = data_args.get("catalogue", "default")
    if catalogue in (None, "none", "default", "all-splits"):
        return
    used = [find_row(r.base) if r.base else r for r in rows]
    if not any(r.open_space or r.planted for r in used):
        warnings.warn(f"--labels {catalogue}: no row of --models ranks a catalogue's codes "
                      f"({', '.join(r.name for r in rows)} rank the labels of train and dev); "
                      "the catalogue is checked and recorded, and ranked by no row. Add plant "
                      "or descriptions to --models to rank it", UserWarning, stacklevel=3)


def _job_defaults(data_args, refit, epochs, plant_epochs):
    """:func:`run_job`'s data arguments, refit and epoch budgets, the main job's where None
    (refit: on for the datasets of :data:`xplant.app._run.REFIT_DATASETS`)."""
    from ._run import REFIT_DATASETS
    if refit is None:
        refit = data_args is None or data_args.get("dataset") in REFIT_DATASETS
    epochs = DEFAULT_EPOCHS if epochs is None else epochs
    plant_epochs = DEFAULT_PLANT_EPOCHS if plant_epochs is None else plant_epochs
    data_args = dict(data_args or {"dataset": "codiesp", "codes": "D", "language": None,
                                   "data_home": None, "max_docs": None})
    return data_args, refit, epochs, plant_epochs


def _job_folder(output_dir, data_args, record, *, resume, overwrite):
    """:func:`run_job`'s run folder, prepared (:func:`xplant._outputs.prepare_run_folder`)
    outside the data folder and the input files of ``record``."""
    from .._outputs import data_paths, prepare_run_folder
    data = [data_args.get("data_home")] + [f.get("path") for f in record.get("inputs", {}).values()]
    data += data_paths(data_args)            # every file named: the catalogue of --labels too
    return prepare_run_folder(output_dir, data=[d for d in data if d], resume=resume,
                              overwrite=overwrite)


def _log_data(log, record, data_args, splits, out_dir, rows, epochs, plant_epochs):
    """A run's first lines: its data and run folder, its label space, where dev and test
    come from, and the neural rows' epoch budgets."""
    tr, dv, te = splits["train"], splits["dev"], splits["test"]
    name = record["dataset"]
    if name == "codiesp":
        own = tr.get("record") or {}
        reading = own.get("language") or data_args.get("language")
        if own.get("description_language"):       # the dataset's setting: DATASET_TEXTS
            reading += f"; the description source reads the {own['description_language']} text"
        name = f"CodiEsp-{data_args['codes']} ({reading})"
    log(f"{name}: {tr.Y.shape[0]} train / {dv.Y.shape[0]} dev / "
        f"{te.Y.shape[0]} {record['split']} documents, {tr.Y.shape[1]} labels; "
        f"run folder {out_dir}")
    space = record["label_space"]
    if space.get("catalogue"):
        log(f"label space: {space['n_known_labels']:,} labels of train and dev, then the rest of "
            f"{space['catalogue']}: {space['n_labels']:,} labels (the description row ranks them "
            f"all; the others rank the labels of train and dev)")
    for key in ("dev_source", "test_source"):
        if record.get(key, "file") != "file":
            log(record[key])
    neural = [r for r in rows if r.shortlisted]
    if neural and tr.get("texts") is not None:
        # each row's estimated time follows (run_models, estimate=True)
        log(f"neural rows ({', '.join(r.name for r in neural)}): up to {plant_epochs} Stage 1 "
            f"+ {epochs} Stage 2 epochs over {count_tokens(tr.texts):,} training tokens; each "
            "epoch's time is printed as it ends (lower --epochs, or use --max-docs, for a "
            "quick run)")


def _write_results(log, results, out_dir, report):
    """A run's ``results.json``, and its last lines: the results table, the file written
    and, if asked, the report."""
    from .._files import write_text
    from ._tables import format_table
    write_text(out_dir / "results.json", json.dumps(results, indent=2, default=float))
    if results.get("optimistic"):
        log("\nDev split (percent; OPTIMISTIC: dev also chose epochs, C and the decision rule); "
            "F1 under each row's rule (top-k, a global threshold or per-label thresholds, "
            "chosen on dev by cross-fitted micro-F1):\n")
    else:
        log("\nTest split (percent); F1 under each row's rule (top-k, a global threshold or "
            "per-label thresholds, chosen on dev by cross-fitted micro-F1):\n")
    log(format_table(results["models"]))
    log(f"\nwrote {out_dir / 'results.json'} in {results['wall_seconds']:.0f} s")
    if report:
        from ..report import render_report
        log(f"wrote {render_report(out_dir)}")


def run_main_job(output_dir=None, *, codes="D", language=None, data_home=None,
                 models=None, epochs=DEFAULT_EPOCHS, plant_epochs=DEFAULT_PLANT_EPOCHS,
                 random_state=0, verbose=1, isolate=True, max_docs=None, report=False, resume=False,
                 refit=None, description_encoder=DESCRIPTION_ENCODER, log=print):
    """Fit, choose on dev and test every model; write results.json and per_label.npz.

    Parameters
    ----------
    output_dir : str or Path or None
        Run folder; default ``./xplant-runs/<UTC timestamp>/``. Never
        beside the input data.
    codes, data_home
        See :func:`xplant.datasets.load_codiesp`.
    language : {"en", "es", "both"} or None, default=None
        The text every row reads (:func:`xplant.datasets.load_codiesp`);
        None: the dataset's setting
        (:data:`xplant.app._splits.DATASET_TEXTS`), the Spanish original,
        the description source reading the English translation.
    models : sequence of str or None, default=None
        Row names (:data:`DEFAULT_MODELS` and the other rows of ``xplant
        run --models``); None: the main job's rows, :data:`DEFAULT_MODELS`
        and the mention matcher of CodiEsp's gold evidence.
    epochs, plant_epochs : int
        Stage 2 and Stage 1 epoch budgets of the neural models.
    isolate : bool, default=True
        Fit each model in a child process (own fit time and peak RSS).
    max_docs : int or None
        Keep only the first documents of each split (a smoke run, seconds).
    report : bool, default=False
        Also write ``report.html`` (see :func:`xplant.report.render_report`).
    resume : bool, default=False
        Continue an interrupted run in ``output_dir`` (see :func:`run_models`).
    refit : bool or None, default=None
        Refit the rows on train + dev with their choices fixed (:func:`run_job`;
        None: on, CodiEsp's protocol).
    description_encoder : str or None, default="minilm"
        The description source's sentence encoder (:func:`run_job`).

    Returns
    -------
    results : dict
        The content of ``results.json`` (its schema: docs/guide/cli.md,
        section "The run folder").

    Raises
    ------
    ValueError
        ``resume=True`` without ``output_dir``.
    """
    data_args = {"dataset": "codiesp", "codes": codes, "language": language,
                 "data_home": data_home, "max_docs": max_docs}
    return run_job(output_dir, data_args, models=models, epochs=epochs, plant_epochs=plant_epochs,
                   random_state=random_state, verbose=verbose, isolate=isolate, report=report,
                   resume=resume, refit=refit, description_encoder=description_encoder, log=log)
