"""Predicting new documents with a saved model (``xplant predict``)."""

import csv
import json
from pathlib import Path


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
    texts : list of str

    Raises
    ------
    ValueError
        A line without the text field, a TSV without a text column, or an
        empty input, with the line number.
    FileNotFoundError
        When ``path`` does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input {path} does not exist")
    ids, texts = [], []
    if path.is_dir():
        for f in sorted(path.glob("*.txt")):
            ids.append(f.stem)
            texts.append(f.read_text(encoding="utf-8"))
    elif path.suffix in (".jsonl", ".json") or path.name.endswith(".jsonl.gz"):
        import gzip
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                rec = json.loads(line)
                if text_field not in rec:
                    raise ValueError(f"{path}, line {n}: no {text_field!r} field")
                ids.append(str(rec.get(id_field, len(ids))))
                texts.append(str(rec[text_field]))
    elif path.suffix == ".tsv":
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t")
            if reader.fieldnames is None or text_field not in reader.fieldnames:
                raise ValueError(f"{path}: the header must name a {text_field!r} column "
                                 f"(and optionally {id_field!r}); got {reader.fieldnames}")
            for n, row in enumerate(reader, 2):
                ids.append(str(row.get(id_field) or len(ids)))
                texts.append(row[text_field] or "")
    else:
        raise ValueError(f"unsupported input {path}: use .jsonl, .tsv or a folder of .txt files")
    if not texts:
        raise ValueError(f"{path} holds no documents")
    return ids, texts


def predict_file(model, input_path, output_path, *, fmt="jsonl", top_k=10, evidence=False,
                 top_spans=3):
    """Predict every document of ``input_path`` and write ``output_path``.

    Parameters
    ----------
    model : str or Path or estimator
        A saved model folder of any kind (see :func:`xplant._saved.load_saved`:
        PLANT, the prior, TF-IDF + linear, trees), or a fitted model.
    input_path, output_path : str or Path
    fmt : {"jsonl", "codiesp"}
        ``jsonl``: per document ``{"id", "top": [{"label", "score"}],
        "predicted": [labels], "decision": {"rule", "k", "threshold"},
        "evidence"?}``. ``codiesp``: the official CodiEsp-D/P submission TSV
        (``articleID<TAB>code``, codes lower-case, ranked best first, the top
        ``top_k`` of each document).
    top_k : int, default=10
    evidence : bool, default=False
        Add attention evidence spans (jsonl only; neural models only).

    Returns
    -------
    int
        Number of documents written.

    Raises
    ------
    ValueError
        ``evidence=True`` with a model that has no attention (linear, trees).
    """
    from ._saved import decide, label_names, load_saved
    from .linear import predict_top_k
    if isinstance(model, (str, Path)):
        clf, decision = load_saved(model)
    else:
        clf = model
        decision = {"rule": getattr(clf, "decision", "top_k"),
                    "k": int(getattr(clf, "k_", top_k)),
                    "threshold": float(getattr(clf, "threshold_", 0.5))}
    if evidence and not hasattr(clf, "explain"):
        raise ValueError(f"evidence spans need a neural model with attention (PLANT, "
                         f"plant=False); {type(clf).__name__} has none: drop --evidence")
    ids, texts = read_documents(input_path)
    names = label_names(clf)
    idx, scores = predict_top_k(clf, texts, min(top_k, len(names)))
    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "codiesp":
        with open(output_path, "w", encoding="utf-8", newline="") as fh:
            for doc_id, row in zip(ids, idx):
                for j in row:
                    if j >= 0:
                        fh.write(f"{doc_id}\t{names[j].lower()}\n")
        return len(ids)
    if fmt != "jsonl":
        raise ValueError(f"unknown format {fmt!r}; use 'jsonl' or 'codiesp'")
    pred = decide(clf, texts, decision)
    ex = clf.explain(texts, top_labels=top_k, top_spans=top_spans) if evidence else None
    with open(output_path, "w", encoding="utf-8") as fh:
        for i, doc_id in enumerate(ids):
            rec = {"id": doc_id,
                   "top": [{"label": names[j], "score": float(s)} for j, s in zip(idx[i], scores[i])],
                   "predicted": [names[j] for j in pred[i].indices],
                   "decision": decision}
            if ex is not None:
                rec["evidence"] = [{"label": str(l["label"]), "spans": l["spans"]}
                                   for l in ex[i]["labels"]]
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return len(ids)
