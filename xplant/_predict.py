"""Predicting new documents with a saved model (``xplant predict``)."""

import csv
import json
from pathlib import Path

from ._files import control_characters

def check_document_ids(ids, where, path):
    """Refuse ids that are repeated or hold control characters.

    Parameters
    ----------
    ids : list of str
    where : list of str
        Where each id was read (``"line 3"``, a file name), for the messages.
    path : str or Path
        The file, for the messages.

    Raises
    ------
    ValueError
        Naming the file, the place and the id: an id holding a control or
        line-breaking character (it would break or forge rows of a TSV
        output), or an id seen before (two documents would merge).
    """
    seen = {}
    for doc_id, loc in zip(ids, where):
        bad = control_characters(doc_id)
        if bad:
            raise ValueError(f"{path}, {loc}: document id {doc_id!r} holds control characters "
                             f"{bad}; ids must be one line without tabs")
        if doc_id in seen:
            raise ValueError(f"{path}, {loc}: document id {doc_id!r} repeats the id of "
                             f"{seen[doc_id]}; ids must be unique within a file")
        seen[doc_id] = loc


def _json_id(value, default, path, n):
    if value is None:
        raise ValueError(f"{path}, line {n}: the document id is null; give a string id or "
                         "leave the field out (the id is then the document's position)")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{path}, line {n}: the document id must be a string or an integer, "
                         f"got {type(value).__name__} {value!r}")
    return str(value)


def read_documents(path, *, text_field="text", id_field="id"):
    """Read documents to predict: JSON lines, TSV, or a folder of ``.txt`` files.

    Parameters
    ----------
    path : str or Path
        - ``*.jsonl``: one JSON object per line with ``text_field`` (and
          optionally ``id_field``);
        - ``*.tsv``: a header row naming ``id`` and ``text`` columns;
        - a folder: every ``*.txt`` file, id = file name without extension,
          sorted by name.

    Returns
    -------
    ids : list of str
        A document without an id gets its position (``"0"``, ``"1"``, ...).
    texts : list of str

    Raises
    ------
    ValueError
        A line without the text field, a TSV without a text column, an
        empty input, a null id, or an id that repeats another or holds a
        control character (see :func:`check_document_ids`), with the line
        number.
    FileNotFoundError
        When ``path`` does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input {path} does not exist")
    ids, texts, where = [], [], []
    if path.is_dir():
        for f in sorted(path.glob("*.txt")):
            ids.append(f.stem)
            where.append(f"file {f.name!r}")
            texts.append(f.read_text(encoding="utf-8"))
    elif path.suffix in (".jsonl", ".json") or path.name.endswith(".jsonl.gz"):
        import gzip
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}, line {n}: not valid JSON ({exc.msg}, column "
                                     f"{exc.colno})") from None
                if not isinstance(rec, dict):
                    raise ValueError(f"{path}, line {n}: expected a JSON object with a "
                                     f"{text_field!r} field, got {type(rec).__name__}")
                if text_field not in rec:
                    raise ValueError(f"{path}, line {n}: no {text_field!r} field")
                ids.append(_json_id(rec[id_field], None, path, n) if id_field in rec
                           else str(len(ids)))
                where.append(f"line {n}")
                texts.append(str(rec[text_field]))
    elif path.suffix == ".tsv":
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t")
            if reader.fieldnames is None or text_field not in reader.fieldnames:
                raise ValueError(f"{path}: the header must name a {text_field!r} column "
                                 f"(and optionally {id_field!r}); got {reader.fieldnames}")
            for row in reader:
                ids.append(str(row.get(id_field) or len(ids)))
                where.append(f"line {reader.line_num}")
                texts.append(row[text_field] or "")
    else:
        raise ValueError(f"unsupported input {path}: use .jsonl, .tsv or a folder of .txt files")
    if not texts:
        raise ValueError(f"{path} holds no documents")
    check_document_ids(ids, where, path)
    return ids, texts


def predict_file(model, input_path, output_path, *, fmt="jsonl", top_k=10, evidence=False,
                 top_spans=3, overwrite=False):
    """Predict every document of ``input_path`` and write ``output_path``.

    Parameters
    ----------
    model : str or Path or PlantClassifier
        A saved model folder (or a fitted classifier).
    input_path, output_path : str or Path
        The output may not be the input (links included) nor lie inside the
        model or input folder; its folder is created if needed.
    fmt : {"jsonl", "codiesp"}
        ``jsonl``: per document ``{"id", "top": [{"label", "score"}],
        "predicted": [labels], "decision": {"rule", "k", "threshold"},
        "evidence"?}``. ``codiesp``: the official CodiEsp-D/P submission TSV
        (``articleID<TAB>code``, codes lower-case, ranked best first, the top
        ``top_k`` of each document); it needs a model with label names.
    top_k : int, default=10
    evidence : bool, default=False
        Add attention evidence spans (jsonl only).
    top_spans : int, default=3
    overwrite : bool, default=False
        Replace an existing output file.

    Returns
    -------
    int
        Number of documents written.

    Raises
    ------
    ValueError
        An unknown format, an output that is the input, a CodiEsp output
        from a model without label names or with names that are equal once
        lower-cased, and any input error of :func:`read_documents`.
    FileExistsError
        When the output exists and ``overwrite`` is False.

    Notes
    -----
    The output is written to a temporary file beside it and renamed into
    place at the end, so an earlier output survives any failure.
    """
    from ._files import atomic_open, check_output
    if fmt not in ("jsonl", "codiesp"):
        raise ValueError(f"unknown format {fmt!r}; use 'jsonl' or 'codiesp'")
    inputs = [input_path] + ([model] if isinstance(model, (str, Path)) else [])
    output_path = check_output(output_path, inputs=inputs, overwrite=overwrite)
    from .neural import load_model
    clf = load_model(model) if isinstance(model, (str, Path)) else model
    names = [str(c) for c in clf.classes_]
    if fmt == "codiesp":
        codes = codiesp_codes(clf.classes_)
    ids, texts = read_documents(input_path)
    idx, scores = clf.predict_top_k(texts, k=top_k)
    if fmt == "codiesp":
        with atomic_open(output_path, "w", newline="") as fh:
            for doc_id, row in zip(ids, idx):
                for j in row:
                    if j >= 0:
                        fh.write(f"{doc_id}\t{codes[j]}\n")
        return len(ids)
    pred = clf.predict(texts)
    ex = clf.explain(texts, top_labels=top_k, top_spans=top_spans) if evidence else None
    with atomic_open(output_path, "w") as fh:
        for i, doc_id in enumerate(ids):
            rec = {"id": doc_id,
                   "top": [{"label": names[j], "score": float(s)} for j, s in zip(idx[i], scores[i])],
                   "predicted": [names[j] for j in pred[i].indices],
                   "decision": {"rule": clf.decision, "k": int(clf.k_),
                                "threshold": float(clf.threshold_)}}
            if ex is not None:
                rec["evidence"] = [{"label": str(l["label"]), "spans": l["spans"]}
                                   for l in ex[i]["labels"]]
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return len(ids)


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
    import numpy as np
    classes = np.asarray(classes)
    if classes.dtype.kind in "iub":
        raise ValueError("this model has no label names (its classes are column indices), so a "
                         "CodiEsp file would list indices as codes; refit it with label names "
                         "(fit(X, Y, label_names=...) or label lists), or use --format jsonl")
    from ._labels import check_label_names
    names = check_label_names([str(c) for c in classes], case_insensitive=True,
                              what="label names (CodiEsp codes)")
    return [n.lower() for n in names]
