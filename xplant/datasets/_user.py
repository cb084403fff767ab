"""Users' own corpora: JSON lines or TSV files with a text and a labels field."""

import csv
import gzip
import json
import sys
from pathlib import Path

from ._base import make_bunch

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def _open(path):
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _format(path, fmt):
    if fmt != "auto":
        return fmt
    name = Path(path).name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith((".tsv", ".tab", ".txt")):
        return "tsv"
    raise ValueError(f"cannot tell the format of {path}; pass format='jsonl' or format='tsv'")


def _split_cell(value, sep, where, upper):
    """Labels of one cell: a list of strings, or one string split by ``sep``."""
    if value is None:
        return []
    if isinstance(value, str):
        parts = value.split(sep) if sep else [value]
    elif isinstance(value, list):
        parts = []
        for lab in value:
            if not isinstance(lab, str):
                raise ValueError(
                    f"{where}: label {lab!r} is a {type(lab).__name__}; labels must be strings "
                    "(quote codes in the file: a number loses leading and trailing zeros)"
                )
            if sep and sep in lab:
                raise ValueError(
                    f"{where}: label {lab!r} contains the separator {sep!r}; choose another "
                    "separator or remove it from the label"
                )
            parts.append(lab)
    else:
        raise ValueError(
            f"{where}: the labels field must be a list of strings or a {sep!r}-separated string; "
            f"got {type(value).__name__} {value!r}"
        )
    out = [p.strip() for p in parts]
    out = [p.upper() if upper else p for p in out if p]
    return out


def _read_file(path, fmt, text_field, labels_field, id_field, sep, upper):
    rows = []
    with _open(path) as fh:
        if fmt == "jsonl":
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                where = f"{path}, line {lineno}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{where}: invalid JSON ({exc.msg})") from None
                rows.append((obj, where))
        else:
            reader = csv.DictReader(fh, delimiter="\t")
            if reader.fieldnames is None:
                return []
            for obj in reader:
                where = f"{path}, line {reader.line_num}"
                if None in obj:
                    raise ValueError(f"{where}: more fields than the header has")
                rows.append((obj, where))
    out = []
    for i, (obj, where) in enumerate(rows):
        for field in (text_field, labels_field):
            if field not in obj:
                raise ValueError(f"{where}: no field {field!r} (fields: {sorted(obj)})")
        text = obj[text_field]
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise ValueError(f"{where}: the text field {text_field!r} is not a string")
        labels = _split_cell(obj[labels_field], sep, where, upper)
        doc_id = str(obj[id_field]) if id_field is not None else f"{Path(path).name}:{i}"
        out.append((doc_id, text, labels))
    return out


def read_labelled_texts(
    paths_by_split,
    text_field="text",
    labels_field="labels",
    id_field=None,
    sep="|",
    format="auto",
    upper=False,
):
    """Read users' own labelled texts from JSON-lines or TSV files, one label space.

    Parameters
    ----------
    paths_by_split : dict of str to path
        For example ``{"train": "train.jsonl", "dev": "dev.jsonl", "test":
        "test.tsv"}``. All files are read in one call, so every split gets
        the same columns: the sorted union of the labels of all files.
    text_field, labels_field : str, default="text", "labels"
        Field (JSON key or TSV header column) of the text and the labels.
    id_field : str, optional
        Field holding document ids; default ``"<file name>:<row>"``.
    sep : str, default="|"
        Separator of labels given as one string (``"25000|2720"``). In TSV
        files the labels cell is always split by it. In JSON lines the field
        may be a list of strings instead; a listed label that contains
        ``sep`` is an error.
    format : {"auto", "jsonl", "tsv"}, default="auto"
        ``"auto"`` decides by extension (``.jsonl``, ``.json``, ``.ndjson``;
        ``.tsv``, ``.tab``, ``.txt``; each optionally ``.gz``).
    upper : bool, default=False
        Upper-case the labels (for codes that are case-insensitive).

    Returns
    -------
    dict of str to Bunch
        One standard loader Bunch per split (``texts``, ``Y``,
        ``label_names``, ``ids``, ``label_frequency``, ``record``).

    Raises
    ------
    ValueError
        On a missing field, a non-string label (numbers lose zeros: quote
        codes), a listed label containing ``sep``, or invalid JSON; each
        message names the file and line.

    Notes
    -----
    Labels are never split into characters: a bare string is split by
    ``sep`` only (``MultiLabelBinarizer`` fitted on raw strings would make
    ``"25000"`` into ``{"2", "5", "0"}``). TSV cells are read as strings,
    never as numbers. Empty texts stay rows.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "tr.jsonl"), "w").write('{"text": "a", "labels": "25000|2720"}\\n')
    >>> _ = open(os.path.join(d, "te.jsonl"), "w").write('{"text": "b", "labels": ["0117"]}\\n')
    >>> data = read_labelled_texts({"train": os.path.join(d, "tr.jsonl"), "test": os.path.join(d, "te.jsonl")})
    >>> data["train"].label_names.tolist(), data["train"].Y.toarray().tolist()
    (['0117', '25000', '2720'], [[0, 1, 1]])
    """
    if not isinstance(paths_by_split, dict) or not paths_by_split:
        raise ValueError("paths_by_split must be a non-empty dict such as {'train': path, 'test': path}")
    if format not in ("auto", "jsonl", "tsv"):
        raise ValueError(f"format={format!r} is not valid; choose 'auto', 'jsonl' or 'tsv'")
    if sep is not None and not isinstance(sep, str):
        raise ValueError("sep must be a string")
    docs = {}
    for split, path in paths_by_split.items():
        docs[split] = _read_file(
            path, _format(path, format), text_field, labels_field, id_field, sep, upper
        )
    names = sorted({lab for rows in docs.values() for _, _, labs in rows for lab in labs})
    out = {}
    for split, rows in docs.items():
        record = {
            "dataset": "user",
            "source": Path(paths_by_split[split]).name,
            "split": split,
            "label_policy": f"union of the labels of all given files ({', '.join(docs)}), sorted",
            "steps": [f"label strings split by {sep!r}, stripped" + (", upper-cased" if upper else "")],
        }
        out[split] = make_bunch(
            [t for _, t, _ in rows], [labs for _, _, labs in rows], [i for i, _, _ in rows], names, record
        )
    return out
