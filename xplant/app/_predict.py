"""Predicting new documents with a saved model (``xplant predict``)."""

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def read_documents(path, *, text_field="text", id_field="id"):
    """Read documents to predict: a JSON-lines or TSV file, or a folder of ``.txt`` files.

    A file is read by the reader of every command
    (:func:`xplant.datasets._user.read_rows`, the same extensions, fields
    and checks as ``xplant run``, ``fit`` and ``evaluate``), without labels.
    In a folder, each ``.txt`` file (any letter case: ``n1.txt``,
    ``N2.TXT``) is one document, read as UTF-8 with a leading byte-order
    mark dropped; its id is the file name without the extension.

    Parameters
    ----------
    path : str or Path
        A file (``.jsonl``, ``.json``, ``.ndjson``, ``.tsv``, ``.tab``,
        ``.txt``; any case, optionally ``.gz``: a ``.txt`` *file* is a TSV)
        or a folder of ``.txt`` files, sorted by name.
    text_field : str, default="text"
    id_field : str, default="id"
        A row without an id gets its position (``"0"``, ``"1"``, ...).

    Returns
    -------
    ids : list of str
    texts : list of str

    Raises
    ------
    ValueError
        Any input error of the shared reader (invalid JSON or UTF-8, a
        missing text field, a text that is not a string, a short TSV row, a
        bad or repeated id), naming the file and line; an empty input.
    FileNotFoundError
        When ``path`` does not exist.

    Warns
    -----
    UserWarning
        Files in the folder that are not ``.txt`` files (they are skipped).
    """
    from ..datasets import check_document_ids, read_rows, read_text_file
    from ._sources import with_cli_hint
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input {path} does not exist")
    if path.is_dir():
        files = sorted(f for f in path.iterdir() if f.is_file() and not f.name.startswith("."))
        docs = [f for f in files if f.suffix.lower() == ".txt"]
        skipped = [f.name for f in files if f not in docs]
        if skipped:
            import warnings
            warnings.warn(f"{path}: {len(skipped)} file(s) skipped, not .txt: "
                          f"{', '.join(skipped[:10])}{' ...' if len(skipped) > 10 else ''}",
                          UserWarning, stacklevel=2)
        ids, texts = [f.stem for f in docs], [read_text_file(f) for f in docs]
        check_document_ids(ids, [f"{path}, file {f.name!r}" for f in docs], path)
    else:
        try:
            rows = read_rows(path, text_field=text_field, id_field=id_field, positional=str)
        except ValueError as exc:
            raise ValueError(with_cli_hint(str(exc))) from None
        ids, texts = [r[0] for r in rows], [r[1] for r in rows]
    if not texts:
        raise ValueError(f"{path} holds no documents")
    return ids, texts


def with_model_fields(model, path, texts, *, id_field=None):
    """The documents a model reads from ``path``: ``texts``, or records with every field it
    reads besides the text (:func:`xplant._saved.model_fields`: a mention matcher's,
    a description source's).

    Parameters
    ----------
    model : fitted estimator
    path : str or Path
        The input file the texts were read from (each extra field is read
        from it by the same reader, so its errors name the file and line).
    texts : list of str
        The documents' texts, in the file's order.
    id_field : str or None
        As for the texts.

    Returns
    -------
    list of str, or list of dict
        ``{"text": text, <field>: value}`` per document when the model reads
        more fields.

    Raises
    ------
    ValueError
        A folder of ``.txt`` files (one field only), or a document without a
        field the model reads, naming the file, the line and the model's field.
    """
    from .._saved import model_fields
    from ..datasets import read_rows
    fields = model_fields(model)
    if not fields:
        return texts
    path = Path(path)
    why = (f"this model reads the field{'s' if len(fields) > 1 else ''} "
           f"{', '.join(map(repr, fields))} besides the text (a mention matcher: the text its "
           "evidence indexed; a description source: the translation in the descriptions' "
           "language)")
    if path.is_dir():
        raise ValueError(f"{path}: {why}; a folder of .txt files holds one text per document: "
                         "give a JSON lines file with both fields")
    extra = {}
    for field in fields:
        try:
            extra[field] = [r[1] for r in read_rows(path, text_field=field, id_field=id_field,
                                                    positional=str)]
        except ValueError as exc:
            raise ValueError(f"{exc}; {why}") from None
    return [{"text": t, **{f: extra[f][i] for f in fields}} for i, t in enumerate(texts)]


def predict_file(model, input_path, output_path, *, fmt="jsonl", top_k=10, evidence=False,
                 top_spans=3, overwrite=False, text_field="text", id_field="id"):
    """Predict every document of ``input_path`` and write ``output_path``.

    Parameters
    ----------
    model : str or Path or estimator
        A saved model folder of any kind (see :func:`xplant._saved.load_saved`:
        PLANT, the prior, TF-IDF + linear, trees), or a fitted model.
    input_path, output_path : str or Path
        The output may not be the input (links included) nor lie inside the
        model or input folder; its folder is created if needed.
    fmt : {"jsonl", "codiesp"}
        ``jsonl``: per document ``{"id", "top": [{"label", "score"}],
        "predicted": [labels], "passed": [{"label", "score", "threshold"}],
        "decision": {"rule", "k", "threshold", "scale", ...}, "evidence"?}``.
        ``passed`` holds each predicted label with its score and the
        threshold it passed: the global one, or the label's own under the
        per-label rule; null under the top-k rule, which passes the k best.
        ``decision`` is :func:`xplant._saved.decision_record` (the per-label
        rule adds how many labels have a threshold of their own and their
        range). Every score of a record is on the scale the decision rule
        reads (``decision.scale``: ``"probability"`` where the model has
        probabilities, else ``"decision_function"``), so the printed
        thresholds apply to the printed scores; ``top``, ``predicted`` and
        ``passed`` are best first, in the model's ranking (ties of saturated
        probabilities broken by the logits). ``codiesp``: the
        official CodiEsp-D/P submission TSV (``articleID<TAB>code``, codes
        lower-case, ranked best first, the top ``top_k`` of each document);
        it needs a model with label names.
    top_k : int, default=10
    evidence : bool, default=False
        Add evidence spans (jsonl only): the attention's spans of a neural
        model, the best-matching sentences of the description ranker, both
        of a ``fused + descriptions`` row (its ``explain``).
    top_spans : int, default=3
    overwrite : bool, default=False
        Replace an existing output file.
    text_field, id_field : str
        Fields of the input file (see :func:`read_documents`).

    Returns
    -------
    int
        Number of documents written.

    Raises
    ------
    ValueError
        ``evidence=True`` with a model that has no ``explain`` (linear, trees),
        an unknown format, an output that is the input, a CodiEsp output
        from a model without label names or with names that are equal once
        lower-cased, and any input error of :func:`read_documents`.
    FileExistsError
        When the output exists and ``overwrite`` is False.

    Notes
    -----
    The output is written to a temporary file beside it and renamed into
    place at the end, so an earlier output survives any failure.
    """
    from .._outputs import check_output
    if fmt not in ("jsonl", "codiesp"):
        raise ValueError(f"unknown format {fmt!r}; use 'jsonl' or 'codiesp'")
    inputs = [input_path] + ([model] if isinstance(model, (str, Path)) else [])
    output_path = check_output(output_path, inputs=inputs, overwrite=overwrite)
    from .._params import final_step
    from .._saved import label_names, ranking
    clf, decision = _predictor(model, top_k=top_k, evidence=evidence)
    names = label_names(clf)
    if fmt == "codiesp":
        codes = codiesp_codes(final_step(clf).classes_)
    ids, texts = read_documents(input_path, text_field=text_field, id_field=id_field)
    texts = with_model_fields(clf, input_path, texts, id_field=id_field)
    if fmt == "codiesp":
        _write_codiesp(output_path, ids, ranking(clf, texts, top_k), codes)
        return len(ids)
    _write_jsonl(output_path, clf, ids, texts, decision, names, top_k=top_k, evidence=evidence,
                 top_spans=top_spans)
    return len(ids)


def _predictor(model, *, top_k, evidence):
    """The model of :func:`predict_file` and its decision rule: a saved folder loaded, or a
    fitted model's own rule (``top_k`` where it has none); checked to ``explain`` when
    ``evidence`` is asked for."""
    from .._saved import fitted_decision
    from ..persistence import load_saved
    if isinstance(model, (str, Path)):
        clf, decision = load_saved(model)
    else:
        clf = model
        decision = fitted_decision(clf, default_k=top_k)
    if evidence and not hasattr(clf, "explain"):
        raise ValueError(f"evidence spans need a model with explain (PLANT, plant=False, the "
                         f"description ranker, a fused + descriptions row); "
                         f"{type(clf).__name__} has none: drop --evidence")
    return clf, decision


def _write_codiesp(output_path, ids, idx, codes):
    """The CodiEsp submission of :func:`predict_file`: ``id<TAB>code``, best first."""
    from .._files import atomic_open
    with atomic_open(output_path, "w", newline="") as fh:
        for doc_id, row in zip(ids, idx):
            for j in row:
                if j >= 0:
                    fh.write(f"{doc_id}\t{codes[j]}\n")


def _score_row(scores, i):
    """Row ``i`` of :func:`xplant._saved.score_matrix`, indexable by label column.

    A CSR row gives its stored entries only: every label a record lists
    (ranked, or predicted by a rule, which never predicts a missing entry)
    is stored.
    """
    if not sp.issparse(scores):
        return scores[i]
    a, b = scores.indptr[i], scores.indptr[i + 1]
    return dict(zip(scores.indices[a:b].tolist(), scores.data[a:b].tolist()))


def _write_jsonl(output_path, clf, ids, texts, decision, names, *, top_k, evidence, top_spans):
    """The jsonl output of :func:`predict_file`: each document's ranking, its predicted
    labels with the thresholds they passed, the decision rule and, if asked, evidence."""
    from .._files import atomic_open
    from .._saved import decide, decision_record, ranking, score_matrix, score_scale
    scores = score_matrix(clf, texts)               # the scale the decision rule reads
    rule = dict(decision_record(decision), scale=score_scale(clf))
    passed_at = (None if decision["rule"] == "top_k" else decision["thresholds"]
                 if decision["rule"] == "per_label_threshold"
                 else np.full(len(names), decision["threshold"]))
    # one ranking orders both lists (and is the top-k rule): deep enough for every predicted label
    idx = ranking(clf, texts, max(top_k, int(decision["k"]) if decision["rule"] == "top_k" else 1))
    pred = decide(clf, texts, decision, scores=scores, ranked=idx)
    deepest = int(np.diff(pred.indptr).max(initial=0))
    if deepest > idx.shape[1]:
        idx = ranking(clf, texts, deepest)
    ex = clf.explain(texts, top_labels=top_k, top_spans=top_spans) if evidence else None
    with atomic_open(output_path, "w") as fh:
        for i, doc_id in enumerate(ids):
            row = _score_row(scores, i)
            ranked = [int(j) for j in idx[i] if j >= 0]
            chosen = set(pred[i].indices.tolist())
            best_first = [j for j in ranked if j in chosen]
            best_first += sorted(chosen - set(best_first))   # a rule past the ranking: column order
            rec = {"id": doc_id,
                   "top": [{"label": names[j], "score": float(row[j])}
                           for j in ranked[:top_k]],
                   "predicted": [names[j] for j in best_first],
                   "passed": [{"label": names[j], "score": float(row[j]),
                               "threshold": None if passed_at is None else float(passed_at[j])}
                              for j in best_first],
                   "decision": rule}
            if ex is not None:
                rec["evidence"] = [{"label": str(l["label"]), "spans": l["spans"]}
                                   for l in ex[i]["labels"]]
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def codiesp_codes(classes):
    """The CodiEsp spelling (lower case) of a model's label names, checked.

    Parameters
    ----------
    classes : array-like of shape (n_labels,)
        The model's ``classes_``.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        When the model has no label names (integer classes would be written
        as codes), or when names collide once lower-cased (CodiEsp codes
        are case-insensitive), or a name holds a control character.

    Examples
    --------
    >>> codiesp_codes(["R50.9", "N18.6"])
    ['r50.9', 'n18.6']
    """
    classes = np.asarray(classes)
    if classes.dtype.kind in "iub":
        raise ValueError("this model has no label names (its classes are column indices), so a "
                         "CodiEsp file would list indices as codes; refit it with label names "
                         "(fit(X, Y, label_names=...) or label lists), or use --format jsonl")
    from .._labels import check_label_names
    names = check_label_names([str(c) for c in classes], case_insensitive=True,
                              what="label names (CodiEsp codes)")
    return [n.lower() for n in names]
