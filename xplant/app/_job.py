"""``xplant run`` on any data source: the main job's protocol, the run folder's files.

The machinery is :func:`xplant.app._run.run_models`; this module picks the
data (:mod:`xplant.app._sources`), the rows (:mod:`xplant.app._rows`), records the
inputs and writes what the report needs.
"""

import json
import time
from pathlib import Path

def count_tokens(texts):
    """Word tokens of ``texts`` as the word backbones count them (``\\w+``), each text capped
    at the default ``max_length`` (4096).

    Examples
    --------
    >>> count_tokens(["Fever and dry cough.", "Chest pain"])
    6
    """
    from ..relevance._tokenize import _WORD_RE
    return sum(min(len(_WORD_RE.findall(t)), 4096) for t in texts)


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
    for r in rows:
        if r.needs_descriptions and splits["train"].get("label_descriptions") is None:
            raise ValueError(f"model {r.name!r} ({r.display}) ranks labels by their "
                             f"descriptions, and {source} gives none; give them with "
                             "--label-descriptions FILE, or leave the row out of --models")


def run_job(output_dir=None, data_args=None, *, models=None, epochs=None, plant_epochs=None,
            random_state=0, verbose=1, isolate=True, report=False, resume=False, overwrite=False,
            log=print):
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
    overwrite : bool, default=False
        Remove an earlier run's files in ``output_dir`` first
        (:func:`xplant._files.prepare_run_folder`).

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
    record = describe(data_args, splits)
    specs = model_specs(rows, features, splits, (data_args.get("files") or {}).get(
        "train", record["dataset"]))
    check_model_specs(specs, epochs=epochs, plant_epochs=plant_epochs,
                      random_state=random_state, verbose=0)
    data = [data_args.get("data_home")] + [f["path"] for f in record.get("inputs", {}).values()]
    out_dir = prepare_run_folder(output_dir, data=[d for d in data if d], resume=resume,
                                 overwrite=overwrite)
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
    neural = [r for r in rows if r.shortlisted]
    if neural and tr.get("texts") is not None:
        # No time is estimated: one corpus's speed does not carry to another's
        # (labels, lengths, early stopping); each epoch's time prints as it ends.
        log(f"neural rows ({', '.join(r.name for r in neural)}): up to {plant_epochs} Stage 1 "
            f"+ {epochs} Stage 2 epochs over {count_tokens(tr.texts):,} training tokens; each "
            "epoch's time is printed as it ends (lower --epochs, or use --max-docs, for a "
            "quick run)")
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
                          "description": _description(desc, j),
                          "spans": [_span_json(s) for s in lab["spans"]]})
        out.append({"doc_id": str(test.ids[i]), "text": text, "gold": sorted(gold),
                    "codes": codes})
    return out


def _description(descriptions, j):
    """Label ``j``'s description for the run folder's JSON; ``""`` where there is none."""
    if descriptions is None or len(descriptions) <= j:
        return ""
    return str(descriptions[j] or "")


def _span_json(span):
    """An :meth:`~xplant.neural.PlantClassifier.explain` span as plain JSON values."""
    return {"start": int(span["start"]), "end": int(span["end"]),
            "text": None if span["text"] is None else str(span["text"]),
            "weight": float(span["weight"])}


def add_evidence(out_dir, name, docs):
    """Put one row's documents into the run folder's ``evidence.json`` (atomically)."""
    from .._files import write_text
    path = Path(out_dir) / "evidence.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data[name] = docs
    write_text(path, json.dumps(data, ensure_ascii=False))


#: Zero-shot predictions listed per row in the report: the first, in test order.
ZERO_SHOT_SHOWN = 20


def zero_shot_predictions(y_score, k, train_frequency, y_true=None, *,
                          max_predictions=ZERO_SHOT_SHOWN):
    """The labels never seen in training that each document ranks within its top k.

    Parameters
    ----------
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        The row's scores of the evaluated documents.
    k : int
        The row's decision rule, top-k (chosen on dev); ranks ``1..k``
        count, ties to the lower label index (:func:`xplant.metrics.top_k_indices`).
    train_frequency : array-like of int of shape (n_labels,), or the training indicator matrix
        Zero-shot labels are those with no training positive
        (:func:`xplant.model_selection.zero_shot_labels`, the group of the
        tables' "F1 zero").
    y_true : {ndarray, sparse matrix} of shape (n_samples, n_labels), optional
        Gold labels; marks each prediction correct or not.
    max_predictions : int, default=ZERO_SHOT_SHOWN
        Predictions listed; the counts cover all of them.

    Returns
    -------
    dict
        ``"k"``, ``"n_zero_shot_labels"``, ``"n_predictions"`` (every
        (document, zero-shot label) pair in a top k), ``"n_documents"``
        (documents with at least one), ``"n_correct"`` (None without
        ``y_true``), ``"max_listed"`` (``max_predictions``) and
        ``"predictions"``: the first ``max_predictions``
        pairs in document order, then rank, as ``{"doc": row index,
        "label_index", "rank" (1 = top), "score", "gold" (bool or None)}``.

    Raises
    ------
    ValueError
        If ``k`` or ``max_predictions`` is not a positive integer (0 allowed
        for ``max_predictions``), or the shapes disagree.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[.9, .8, .1], [.2, .1, .7]])
    >>> r = zero_shot_predictions(S, 2, [3, 0, 0], y_true=np.array([[1, 1, 0], [0, 0, 0]]))
    >>> [(p["doc"], p["label_index"], p["rank"], p["gold"]) for p in r["predictions"]]
    [(0, 1, 2, True), (1, 2, 1, False)]
    >>> r["n_correct"], r["n_documents"]
    (1, 2)
    """
    import numpy as np
    import scipy.sparse as sp
    from ..metrics import top_k_indices
    from ..metrics._validation import check_k
    from ..model_selection import zero_shot_labels
    k = check_k(k, "k")
    if isinstance(max_predictions, bool) or not isinstance(max_predictions, int) \
            or max_predictions < 0:
        raise ValueError(f"max_predictions must be a non-negative int, got {max_predictions!r}")
    n_labels = y_score.shape[1] if getattr(y_score, "ndim", 0) == 2 else None
    zero = zero_shot_labels(train_frequency)
    freq_len = np.shape(train_frequency)[-1]
    if n_labels is None or freq_len != n_labels:
        raise ValueError(f"y_score must be 2-D (n_samples, n_labels) with n_labels = "
                         f"{freq_len}, the length of train_frequency; got shape "
                         f"{getattr(y_score, 'shape', None)}")
    is_zero = np.zeros(n_labels, dtype=bool)
    is_zero[zero] = True
    top = top_k_indices(y_score, min(k, n_labels))
    doc, pos = np.nonzero((top >= 0) & is_zero[np.maximum(top, 0)])   # row-major: doc, rank
    labels = top[doc, pos]
    gold = None
    if y_true is not None:
        Y = sp.csr_matrix(y_true)
        if Y.shape[1] != n_labels or Y.shape[0] != top.shape[0]:
            raise ValueError(f"y_true has shape {Y.shape}, expected {(top.shape[0], n_labels)}")
        gold = np.asarray(Y[doc, labels]).ravel() != 0 if doc.size else np.zeros(0, bool)
    dense = not sp.issparse(y_score)
    preds = []
    for t in range(min(max_predictions, doc.size)):
        i, j = int(doc[t]), int(labels[t])
        score = y_score[i, j] if dense else y_score[i].toarray()[0, j]
        preds.append({"doc": i, "label_index": j, "rank": int(pos[t]) + 1,
                      "score": float(score), "gold": None if gold is None else bool(gold[t])})
    return {"k": k, "n_zero_shot_labels": int(zero.size), "n_predictions": int(doc.size),
            "n_documents": int(np.unique(doc).size),
            "n_correct": None if gold is None else int(gold.sum()),
            "max_listed": max_predictions, "predictions": preds}


def zero_shot_rows(entries, model, test, train, *, top_spans=3):
    """Each row's zero-shot predictions (in its top k) with their evidence spans.

    One ``explain`` call for the rows of one fit (a shortlisted neural fit
    yields three rows); a model without ``explain``, or documents without
    text, give the predictions without spans.

    Parameters
    ----------
    entries : list of (test scores, k)
        One per row, the scores the row is evaluated on and its top-k rule.
    model : fitted estimator
        Its ``explain(texts, top_spans=, labels=)`` gives the spans, if it has one.
    test, train : Bunch
        The evaluated split and the whole training split (its frequencies
        define the zero-shot group, as in the tables); ``train.label_names``
        and ``train.label_descriptions`` (if any) name the labels.
    top_spans : int, default=3

    Returns
    -------
    list of dict
        Per row, the ``"zero_shot"`` record of ``results.json``
        (``docs/evidence.md``): :func:`zero_shot_predictions`'s counts and
        ``"shown"``, ``"explained"`` (bool) and ``"predictions"``:
        ``[{"doc_id", "label", "label_index", "description", "rank",
        "score", "gold", "prob", "spans": [{"start", "end", "text",
        "weight"}]}]``. ``prob`` is the network's own probability of the
        label (None when not explained).
    """
    from .._labels import label_frequency
    freq = label_frequency(train.Y)
    found = [zero_shot_predictions(s, k, freq, test.Y) for s, k in entries]
    names = [str(x) for x in train.label_names]
    desc = train.get("label_descriptions")
    texts = test.get("texts")
    can_explain = hasattr(model, "explain") and texts is not None
    explained = {}
    if can_explain:
        wanted = {}
        for rec in found:
            for p in rec["predictions"]:
                wanted.setdefault(p["doc"], set()).add(p["label_index"])
        docs = sorted(wanted)
        if docs:
            out = model.explain([texts[i] for i in docs], top_spans=top_spans,
                                labels=[sorted(wanted[i]) for i in docs])
            for i, ex in zip(docs, out):
                for lab in ex["labels"]:
                    explained[(i, int(lab["index"]))] = lab
    rows = []
    for rec in found:
        preds = []
        for p in rec["predictions"]:
            j, lab = p["label_index"], explained.get((p["doc"], p["label_index"]))
            preds.append({"doc_id": str(test.ids[p["doc"]]), "label": names[j], "label_index": j,
                          "description": _description(desc, j),
                          "rank": p["rank"], "score": p["score"], "gold": p["gold"],
                          "prob": None if lab is None else float(lab["prob"]),
                          "spans": [] if lab is None else [_span_json(s) for s in lab["spans"]]})
        rows.append({**rec, "shown": len(preds), "explained": can_explain, "predictions": preds})
    return rows


def add_zero_shot(out, model, dev, test, train):
    """Each row's zero-shot record into ``out["info"]`` and its variants', in the fit's process.

    A row without a decision rule yet (the fused rows of a shortlisted fit)
    gets it here, chosen on dev as :func:`xplant.app._run._evaluate` would, so
    the listed predictions are those of the row's own top k. A failure is
    recorded as ``zero_shot_error`` (the report says so); the scores stand.
    """
    from ._run import _choose_rule
    rows = [out] + list(out.get("variants", ()))
    for row in rows:
        if row.get("rule") is None:
            row["rule"] = _choose_rule(dev.Y, row["dev_scores"])
    try:
        records = zero_shot_rows([(r["test_scores"], r["rule"]["k"]) for r in rows], model,
                                 test, train)
    except Exception as exc:
        for row in rows:
            row["info"] = dict(row["info"], zero_shot_error=f"{type(exc).__name__}: {exc}")
        return
    for row, rec in zip(rows, records):
        row["info"] = dict(row["info"], zero_shot=rec)
