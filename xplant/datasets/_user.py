"""Users' own corpora: JSON lines or TSV files with a text and a labels field."""

import gzip
import json
import unicodedata
import warnings
from pathlib import Path

from .._labels import normalize_label
from ._base import make_bunch


def _open(path):
    """Open a text file (``.gz`` too) as UTF-8; a leading byte-order mark is dropped.

    Lines end at ``\\n`` only (a ``\\r`` before it is removed by the readers),
    so a stray carriage return inside a text never splits a row.
    """
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="\n")
    return open(path, encoding="utf-8-sig", newline="\n")


def _lines(fh):
    """(line number, line without its end) of an open text file."""
    for lineno, line in enumerate(fh, 1):
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        yield lineno, line


def read_records(path, fmt):
    """Rows of a JSON-lines or TSV file as ``(dict, where)``, where = "<file>, line <n>".

    The one reader of xplant's text files. A leading UTF-8 byte-order mark
    (the usual spreadsheet export) is accepted. TSV cells are literal: no
    CSV quoting, so a quote is an ordinary character and a cell cannot hold a
    tab or a line break (give such texts as JSON lines). A TSV's first line
    is its header; blank lines are skipped in both formats.

    Parameters
    ----------
    path : str or Path
    fmt : {"jsonl", "tsv"}

    Returns
    -------
    list of (dict, str)
        Each row's fields and where it was read. A TSV row with fewer cells
        than the header has empty strings for the missing ones.

    Raises
    ------
    ValueError
        Invalid JSON, a JSON line that is not an object, or a TSV row with
        more cells than the header, naming the file and line.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.tsv")
    >>> _ = open(p, "w", encoding="utf-8-sig").write('text\\tlabels\\n"Cough" reported\\tR05\\n')
    >>> [row for row, _ in read_records(p, "tsv")]
    [{'text': '"Cough" reported', 'labels': 'R05'}]
    """
    rows = []
    with _open(path) as fh:
        if fmt == "jsonl":
            for lineno, line in _lines(fh):
                if not line.strip():
                    continue
                where = f"{path}, line {lineno}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{where}: invalid JSON ({exc.msg})") from None
                if not isinstance(obj, dict):
                    raise ValueError(f"{where}: each line must be a JSON object such as "
                                     f'{{"text": ..., "labels": ...}}; got {type(obj).__name__}')
                rows.append((obj, where))
            return rows
        header = None
        for lineno, line in _lines(fh):
            if header is None:
                header = line.split("\t")
                continue
            if not line.strip():
                continue
            where = f"{path}, line {lineno}"
            cells = line.split("\t")
            if len(cells) > len(header):
                raise ValueError(f"{where}: {len(cells)} tab-separated cells but the header has "
                                 f"{len(header)}; a TSV cell cannot hold a tab (give such texts "
                                 "as JSON lines)")
            cells += [""] * (len(header) - len(cells))
            rows.append((dict(zip(header, cells)), where))
    return rows


def control_characters(text):
    """The control, line- and paragraph-separator characters of ``text``, as escapes."""
    return sorted({repr(c)[1:-1] for c in text
                   if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c != "\u200d"})


def check_document_ids(ids, wheres, path):
    """Refuse document ids that repeat within a file or hold control characters.

    Parameters
    ----------
    ids : list of str
    wheres : list of str
        Where each id was read ("<file>, line <n>"), for the messages.
    path : str or Path
        The file, for the messages.

    Raises
    ------
    ValueError
        Naming the file and line: an id holding a control, format or
        line-breaking character (it would break or forge the rows of a TSV
        output), or an id seen before in the file (two documents would merge
        in every output keyed by id, a positional id included).
    """
    seen = {}
    for doc_id, where in zip(ids, wheres):
        bad = control_characters(doc_id)
        if bad:
            raise ValueError(f"{where}: document id {doc_id!r} holds control characters {bad}; "
                             "ids must be one line of printable text")
        if doc_id in seen:
            raise ValueError(f"{where}: document id {doc_id!r} repeats the id of "
                             f"{seen[doc_id]}; ids must be unique within {Path(path).name}")
        seen[doc_id] = where


def _doc_id(obj, id_field, where, default):
    """The id of one row: its ``id_field`` value, or its position where the field is absent."""
    if id_field is None or id_field not in obj or obj[id_field] == "":
        return default
    value = obj[id_field]
    if value is None:
        raise ValueError(f"{where}: the document id {id_field!r} is null; give a string id or "
                         "leave the field out (the id is then '<file name>:<row>')")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{where}: the document id {id_field!r} must be a string or an integer, "
                         f"got {type(value).__name__} {value!r}")
    return str(value)


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
    out = [normalize_label(p.strip()) for p in parts]      # label names in NFC, as texts
    out = [p.upper() if upper else p for p in out if p]
    return out


def _read_file(path, fmt, text_field, labels_field, id_field, sep, upper):
    out, wheres = [], []
    for i, (obj, where) in enumerate(read_records(path, fmt)):
        for field in (text_field, labels_field):
            if field not in obj:
                raise ValueError(f"{where}: no field {field!r} (fields: {sorted(obj)})")
        text = obj[text_field]
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise ValueError(f"{where}: the text field {text_field!r} is not a string")
        labels = _split_cell(obj[labels_field], sep, where, upper)
        doc_id = _doc_id(obj, id_field, where, f"{Path(path).name}:{i}")
        out.append((doc_id, text, labels))
        wheres.append(where)
    check_document_ids([d for d, _, _ in out], wheres, path)
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
        Field holding document ids (a string or an integer). A row without
        it, or with an empty cell, gets ``"<file name>:<row>"``. Ids must be
        unique within a file (a positional id included) and hold no control
        characters; the same id in two splits gets a warning.
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
        codes), a listed label containing ``sep``, invalid JSON, a TSV row
        with more cells than the header, or a null, repeated or
        control-character id; each message names the file and line.

    Warns
    -----
    UserWarning
        When the same document id appears in two splits.

    Notes
    -----
    Labels are never split into characters: a bare string is split by
    ``sep`` only (``MultiLabelBinarizer`` fitted on raw strings would make
    ``"25000"`` into ``{"2", "5", "0"}``). TSV cells are read as strings,
    never as numbers, and literally: no CSV quoting (a quote is text), so a
    cell cannot hold a tab or a line break; give such texts as JSON lines.
    A leading UTF-8 byte-order mark is accepted in both formats. Empty texts
    stay rows.

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
    first_split = {}
    for split, rows in docs.items():
        for doc_id, _, _ in rows:
            other = first_split.setdefault(doc_id, split)
            if other != split:
                warnings.warn(f"document id {doc_id!r} is in both the {other!r} and the {split!r} "
                              "split; check that the splits do not share documents", UserWarning,
                              stacklevel=2)
                break
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
