"""Users' own corpora: JSON lines or TSV files with a text and a labels field.

The one reader of every command's data files (``xplant run``, ``fit``,
``evaluate``, ``predict``): :func:`file_format` tells the format by the
extension, :func:`read_records` decodes (UTF-8, byte-order mark dropped) and
splits the rows, :func:`read_rows` checks each row's fields, and
:func:`read_labelled_texts` makes the labelled splits; :func:`text_value` is
the one rule for a text field, which every reader of text shares.
"""

import gzip
import json
import re
import warnings
import zlib
from pathlib import Path

from .._files import control_characters
from .._normal_forms import normalise_code, normalize_label
from ._base import make_bunch
from ._label_space import with_outside_labels


#: A leading UTF-8 byte-order mark (spreadsheet and Windows exports write one).
_BOM = b"\xef\xbb\xbf"


def _open(path):
    """Open a file (``.gz`` too, any letter case) for reading bytes."""
    path = Path(path)
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _not_utf8(where, line, start):
    """The message for a byte that is not UTF-8 (at ``start`` of ``line``): where, and the fix."""
    col = len(line[:start].decode("utf-8", "replace")) + 1
    return (f"{where}, character {col}: the byte 0x{line[start]:02x} is not UTF-8 (the file "
            "was probably saved as Windows-1252 or Latin-1); save it as UTF-8, for example "
            "with iconv -f cp1252 -t utf-8 OLD > NEW")


def _gzip_error(path, exc):
    """The message of a ``.gz`` file that cannot be decompressed: the file, and the fix."""
    if isinstance(exc, EOFError):
        what = ("the compressed data end before the gzip end marker: the file was cut short "
                "(an interrupted download or copy); fetch or compress it again")
    elif isinstance(exc, gzip.BadGzipFile) and str(exc).startswith("Not a gzipped file"):
        what = ("it is not gzip-compressed, though its name ends in .gz; rename it without "
                ".gz, or compress it with gzip")
    else:
        what = f"the gzip data are damaged ({exc}); fetch or compress the file again"
    return f"{path}: {what}"


def _lines(path):
    """(line number, decoded line without its end) of a UTF-8 text file.

    Lines end at ``\\n`` only (a ``\\r`` before it is removed), so a stray
    carriage return inside a text never splits a row. A leading byte-order
    mark is dropped. Bytes that are not UTF-8, and a ``.gz`` file that is
    cut short or not gzip-compressed, are errors naming the file, the line
    and the fix.
    """
    try:
        yield from _decoded_lines(path)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(_gzip_error(path, exc)) from None


def _decoded_lines(path):
    """The lines of :func:`_lines`, decoded (gzip errors are raised as they are)."""
    with _open(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            if lineno == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(_not_utf8(f"{path}, line {lineno}", raw, exc.start)) from None
            if line.endswith("\n"):
                line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
            yield lineno, line


def read_text_file(path):
    """The whole text of one UTF-8 file (a document of a ``.txt`` folder), as it is.

    The same decoding as every other reader: UTF-8, a leading byte-order
    mark dropped, line ends kept.

    Parameters
    ----------
    path : str or Path
        The file to read.

    Returns
    -------
    str
        The decoded text.

    Raises
    ------
    ValueError
        Bytes that are not UTF-8, naming the file, the line and the fix; a
        ``.gz`` file cut short or not gzip-compressed, naming the file.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "n.txt")
    >>> _ = open(p, "wb").write(b"\\xef\\xbb\\xbfFi\\xc3\\xa8vre\\n")
    >>> read_text_file(p)
    'Fièvre\\n'
    """
    try:
        with _open(path) as fh:
            raw = fh.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(_gzip_error(path, exc)) from None
    if raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = raw.rfind(b"\n", 0, exc.start) + 1
        end = raw.find(b"\n", exc.start)
        line = raw[start:] if end < 0 else raw[start:end]
        lineno = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(_not_utf8(f"{path}, line {lineno}", line, exc.start - start)) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(value):
    """True when a JSON value (strings, lists, objects, nested) holds a lone UTF-16 surrogate."""
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return isinstance(value, list) and any(_has_surrogate(v) for v in value)


def read_records(path, fmt):
    """Rows of a JSON-lines or TSV file as ``(dict, where)``, where = "<file>, line <n>".

    The one reader of xplant's text files. Files are UTF-8; a leading
    byte-order mark (the usual spreadsheet export) is accepted. TSV cells
    are literal: no CSV quoting, so a quote is an ordinary character and a
    cell cannot hold a tab or a line break (give such texts as JSON lines).
    A TSV's first line is its header; blank lines are skipped in both
    formats.

    Parameters
    ----------
    path : str or Path
    fmt : {"jsonl", "tsv"}

    Returns
    -------
    list of (dict, str)
        Each row's fields and where it was read.

    Raises
    ------
    ValueError
        Naming the file and line: bytes that are not UTF-8, invalid JSON, a
        JSON line that is not an object, a lone UTF-16 surrogate (the JSON
        escape ``\\ud83d``, half an emoji), or a TSV row with more or fewer
        cells than the header (a spreadsheet's quoted cell that holds a line
        break, or spaces typed instead of a tab); a ``.gz`` file cut short
        or not gzip-compressed (naming the file).

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.tsv")
    >>> _ = open(p, "w", encoding="utf-8-sig").write('text\\tlabels\\n"Cough" reported\\tR05\\n')
    >>> [row for row, _ in read_records(p, "tsv")]
    [{'text': '"Cough" reported', 'labels': 'R05'}]
    """
    rows = []
    if fmt == "jsonl":
        for lineno, line in _lines(path):
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
            if "\\u" in line:          # only an escape can give a lone surrogate
                bad = [k for k, v in obj.items() if _has_surrogate(k) or _has_surrogate(v)]
                if bad:
                    raise ValueError(f"{where}: the field {bad[0]!r} holds a lone UTF-16 "
                                     "surrogate (half of a character such as an emoji, e.g. the escape \\ud83d "
                                     "without its pair); fix or remove the escape")
            rows.append((obj, where))
        return rows
    header = None
    for lineno, line in _lines(path):
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
        if len(cells) < len(header):
            raise ValueError(f"{where}: {len(cells)} tab-separated cell(s) but the header has "
                             f"{len(header)} ({', '.join(header)}); every row needs one cell per "
                             "column, separated by tabs (an empty cell still needs its tab). A "
                             "quoted spreadsheet cell holding a line break, or spaces typed "
                             "instead of a tab, does this; give texts with line breaks as JSON "
                             "lines")
        rows.append((dict(zip(header, cells)), where))
    return rows


def check_document_ids(ids, wheres, path):
    """Refuse document ids that repeat within a file or hold control characters.

    Parameters
    ----------
    ids : list of str
        The document ids, in file order.
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


#: File name endings of each format (any letter case, each optionally ``.gz``).
EXTENSIONS = {"jsonl": (".jsonl", ".json", ".ndjson"), "tsv": (".tsv", ".tab", ".txt")}


def file_format(path, fmt="auto"):
    """The format of a data file: ``fmt``, or by its extension when ``fmt`` is ``"auto"``.

    The one rule for every command that reads a file: JSON lines for
    ``.jsonl``, ``.json``, ``.ndjson``; TSV for ``.tsv``, ``.tab``, ``.txt``;
    any letter case, each optionally ``.gz``.

    Raises
    ------
    ValueError
        An extension that names neither format.

    Examples
    --------
    >>> file_format("notes.JSONL"), file_format("notes.ndjson.gz"), file_format("a.TXT")
    ('jsonl', 'jsonl', 'tsv')
    """
    if fmt != "auto":
        return fmt
    name = Path(path).name.lower().removesuffix(".gz")
    for kind, endings in EXTENSIONS.items():
        if name.endswith(endings):
            return kind
    raise ValueError(f"cannot tell the format of {path} from its extension: name the file "
                     ".jsonl for JSON lines (or .json, .ndjson) or .tsv for tab-separated values "
                     "(or .tab, .txt), optionally followed by .gz; a CSV file must be saved as "
                     "TSV or JSON lines first")


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
    out = [label_name(p, where, upper=upper) for p in parts]
    return [p for p in out if p]


def label_name(value, where, *, upper=False):
    """One label name as a file gives it: the one rule of every reader of labels.

    Stripped, in Unicode NFC (:func:`~xplant._normal_forms.normalize_label`,
    the form texts are read in), upper-cased for case-insensitive codes, and
    refused when it holds a control, format or line-breaking character (a
    tab, a zero-width space): such a name breaks every TSV and JSON output
    keyed by label, and a saved model could not be read back. The labels of
    the documents (:func:`read_labelled_texts`) and the codes of a catalogue
    file (:func:`xplant.datasets.load_catalogue`) both go through here.

    Parameters
    ----------
    value : str
        The label as written in the file.
    where : str
        ``"<file>, line <n>"``, the start of the message.
    upper : bool, default=False
        Upper-case it (:func:`~xplant._normal_forms.normalise_code`).

    Returns
    -------
    str
        The label name; ``""`` for a blank one (each reader decides what a
        blank label means).

    Raises
    ------
    ValueError
        For a control, format or line-breaking character, naming the file,
        the line, the characters and the fix.

    Examples
    --------
    >>> label_name(" r50.9 ", "a.jsonl, line 1", upper=True)
    'R50.9'
    >>> label_name("G7\\u200b0", "cat.jsonl, line 6")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cat.jsonl, line 6: the label ... holds control characters ...; a label name is one line of printable text without tabs (remove the characters from the file)
    """
    name = normalize_label(value.strip())
    bad = control_characters(name)
    if bad:
        raise ValueError(f"{where}: the label {name!r} holds control characters {bad}; a label "
                         "name is one line of printable text without tabs (remove the "
                         "characters from the file)")
    return normalise_code(name) if upper else name


#: How each JSON value that is not a string is named, and how to fix it, in a text field.
_NOT_TEXT = (
    (type(None), "null", 'write "" for an empty text, or leave the row out'),
    (bool, "a boolean", "write the text as a JSON string in quotes"),
    ((int, float), "a number", "write the text as a JSON string in quotes"),
    (list, "a list", "join the list into one string (for example sentences with a newline)"),
    (dict, "an object", "point the reader at the string inside it (for example --text-field)"),
)


def text_value(obj, field, where, *, default=None, what="the text field"):
    """The string of a JSON text field: the one rule of every reader of text.

    A text field holds a string. Every reader of a user's files goes
    through here: the documents of ``xplant run``, ``fit``, ``evaluate``
    and ``predict`` (:func:`read_rows`), label descriptions
    (:func:`xplant.datasets.read_label_descriptions`) and label files of a
    catalogue (:func:`xplant.datasets.load_catalogue`). A value that is
    null, a boolean, a number, a list or an object is refused, never read
    as an empty or a stringified text.

    Parameters
    ----------
    obj : dict
        One decoded JSON-lines row (or TSV row, whose cells are strings).
    field : str
        The field's name.
    where : str
        ``"<file>, line <n>"``, the start of every message.
    default : str or None, default=None
        The value of an optional field that the row leaves out; None: the
        field is required.
    what : str, default="the text field"
        How the message names the field.

    Returns
    -------
    str
        The field's value, unchanged.

    Raises
    ------
    ValueError
        For a required field the row lacks, or a value that is not a
        string, naming the file, the line, the value's JSON kind and the fix.

    Examples
    --------
    >>> text_value({"text": "fever"}, "text", "notes.jsonl, line 1")
    'fever'
    >>> text_value({}, "description", "d.jsonl, line 3", default="")
    ''
    >>> text_value({"text": None}, "text", "notes.jsonl, line 2")
    Traceback (most recent call last):
    ...
    ValueError: notes.jsonl, line 2: the text field 'text' must be a string, got null; write "" for an empty text, or leave the row out
    """
    if field not in obj:
        if default is not None:
            return default
        raise ValueError(f"{where}: no field {field!r} (fields: {sorted(obj)})")
    value = obj[field]
    if isinstance(value, str):
        return value
    kind, fix = next(((k, f) for t, k, f in _NOT_TEXT if isinstance(value, t)),
                     (type(value).__name__, "write it as a string"))
    shown = "" if value is None else f" {json.dumps(value, default=str)[:60]}"
    raise ValueError(f"{where}: {what} {field!r} must be a string, got {kind}{shown}; {fix}")


def read_rows(path, *, text_field="text", labels_field=None, id_field=None, sep="|",
              upper=False, format="auto", positional=None, evidence_field=None):
    """The documents of one file, read by the rules every command shares.

    Parameters
    ----------
    path : str or Path
        JSON lines or TSV (:func:`file_format`).
    text_field : str, default="text"
        The field of the text: a string (``""`` for an empty text). Any
        other value (null, a list, an object, a number, a boolean) is an
        error (:func:`text_value`).
    labels_field : str or None
        The field of the labels (see :func:`read_labelled_texts`); None for
        documents without labels (``xplant predict``).
    id_field : str or None
        The field of the document ids (a string or an integer); a row
        without it, or with an empty value, gets its positional id.
    sep, upper
        As for :func:`read_labelled_texts`.
    format : {"auto", "jsonl", "tsv"}
        The file's format; ``"auto"`` tells it by the extension (``.jsonl``, ``.ndjson``,
        ``.tsv``, optionally gzipped).
    positional : callable or None
        ``positional(row index)`` is the id of a row without one; default
        ``"<file name>:<row>"``.
    evidence_field : str or None, default=None
        The field of each document's gold evidence (JSON lines only): a
        list of ``{"label", "spans": [[start, end], ...]}``, offsets into
        the text field (:func:`xplant.evidence.check_evidence`, which
        checks it against the text and the labels). A row without the
        field, or with null, has none.

    Returns
    -------
    list of tuple
        ``(id, text, labels, where)`` per row, ``labels`` None when
        ``labels_field`` is None; with ``evidence_field`` a fifth item, the
        row's checked evidence (a list of mention dicts, spans of start =
        end dropped).

    Raises
    ------
    ValueError
        Any error of :func:`read_records`, a missing field, a text that is
        not a string, a bad label, a bad or repeated id, an evidence field
        in a TSV file, or malformed evidence, naming the file and line.
    """
    name = Path(path).name
    positional = positional or (lambda i: f"{name}:{i}")
    fmt = file_format(path, format)
    if evidence_field is not None and fmt == "tsv":
        raise ValueError(f"{path}: gold evidence (--evidence-field {evidence_field}) is a list "
                         "of mentions with their spans, which a TSV cell cannot hold; give the "
                         "documents as JSON lines")
    records = read_records(path, fmt)
    fields = [f for f in (text_field, labels_field) if f is not None]
    missing = [f for f in fields if records and f not in records[0][0]]
    if fmt == "tsv" and missing:
        raise ValueError(f"{path}, line 1: no field {missing[0]!r} in the header (fields: "
                         f"{list(records[0][0])}); a .txt file is read as TSV, and a folder of "
                         ".txt files holds one document per file (xplant predict)")
    out = []
    for i, (obj, where) in enumerate(records):
        for field in fields:
            if field not in obj:
                raise ValueError(f"{where}: no field {field!r} (fields: {sorted(obj)})")
        text = text_value(obj, text_field, where)
        labels = None if labels_field is None else _split_cell(obj[labels_field], sep, where,
                                                                 upper)
        row = (_doc_id(obj, id_field, where, positional(i)), text, labels, where)
        if evidence_field is not None:
            from ..evidence import check_evidence
            checked = check_evidence([obj.get(evidence_field)], [text], [labels or []],
                                     where=[f"{where}, field {evidence_field!r}"], upper=upper)[0]
            row += ([{"label": lab, "spans": [list(s) for s in spans]}
                     for lab, spans in checked[0]],)
        out.append(row)
    check_document_ids([r[0] for r in out], [r[3] for r in out], path)
    return out


def read_labelled_texts(
    paths_by_split,
    text_field="text",
    labels_field="labels",
    id_field=None,
    sep="|",
    format="auto",
    upper=False,
    evidence_field=None,
):
    """Read users' own labelled texts from JSON-lines or TSV files, one label space.

    Parameters
    ----------
    paths_by_split : dict of str to path
        For example ``{"train": "train.jsonl", "dev": "dev.jsonl", "test":
        "test.tsv"}``. All files are read in one call, so every split gets
        the same label space: the sorted union of the labels of every file
        but the test file (what a user with the labelled data knows; a
        lone test file is its own space). A test label outside it is an
        extra column of test after the space's (``n_space``), a miss for
        every metric.
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
        ``"auto"`` decides by extension (:func:`file_format`: ``.jsonl``,
        ``.json``, ``.ndjson``; ``.tsv``, ``.tab``, ``.txt``; any letter
        case, each optionally ``.gz``).
    upper : bool, default=False
        Upper-case the labels (for codes that are case-insensitive).
    evidence_field : str or None, default=None
        The field of the documents' gold evidence (JSON lines only; see
        :func:`read_rows`): then each Bunch also has ``evidence`` (per
        document, its mentions) and ``evidence_field`` None (the offsets
        index ``texts``). The ``"test"`` file's evidence is never read (its
        ``evidence`` is None). Without it the files are read exactly as
        before.

    Returns
    -------
    dict of str to Bunch
        One standard loader Bunch per split (``texts``, ``Y``,
        ``label_names``, ``ids``, ``label_frequency``, ``record``), and
        ``n_space`` (int: the label space's columns, the first of
        ``label_names``).

    Raises
    ------
    ValueError
        On bytes that are not UTF-8, a missing field, a text that is not a
        string, a non-string label (numbers lose zeros: quote codes), a
        listed label containing ``sep``, invalid JSON, a lone UTF-16
        surrogate, a TSV row with more or fewer cells than the header, or a
        null, repeated or control-character id; each message names the file
        and line (the rules of :func:`read_rows`, shared by every command).

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
    (['25000', '2720'], [[1, 1]])
    >>> data["test"].label_names.tolist(), data["test"].n_space
    (['25000', '2720', '0117'], 2)
    """
    if not isinstance(paths_by_split, dict) or not paths_by_split:
        raise ValueError("paths_by_split must be a non-empty dict such as {'train': path, 'test': path}")
    if format not in ("auto", "jsonl", "tsv"):
        raise ValueError(f"format={format!r} is not valid; choose 'auto', 'jsonl' or 'tsv'")
    if sep is not None and not isinstance(sep, str):
        raise ValueError("sep must be a string")
    docs, evidence = {}, {}
    for split, path in paths_by_split.items():
        # the test file's evidence is never read, not even checked: no test information
        # enters a fit or a choice, and a run's outputs cannot depend on it
        own = None if split == "test" else evidence_field
        rows = read_rows(path, text_field=text_field, labels_field=labels_field,
                         id_field=id_field, sep=sep, upper=upper, format=format,
                         evidence_field=own)
        docs[split] = [row[:3] for row in rows]
        evidence[split] = None if own is None else [row[4] for row in rows]
    first_split = {}
    for split, rows in docs.items():
        for doc_id, _, _ in rows:
            other = first_split.setdefault(doc_id, split)
            if other != split:
                warnings.warn(f"document id {doc_id!r} is in both the {other!r} and the {split!r} "
                              "split; check that the splits do not share documents", UserWarning,
                              stacklevel=2)
                break
    # the label space: every labelled file but test's (no test information enters it)
    known = [s for s in docs if s != "test"] or list(docs)
    space = sorted({lab for s in known for _, _, labs in docs[s] for lab in labs})
    out = {}
    for split, rows in docs.items():
        names, outside = with_outside_labels(space, [lab for _, _, labs in rows for lab in labs])
        record = {
            "dataset": "user",
            "source": Path(paths_by_split[split]).name,
            "split": split,
            "label_policy": f"union of the labels of {', '.join(known)}, sorted"
                            + ("; this split's others after them" if outside.size else ""),
            "n_space": len(space),
            "n_outside_space": int(outside.size),
            "steps": [f"label strings split by {sep!r}, stripped" + (", upper-cased" if upper else "")],
        }
        extra = {} if evidence_field is None else {"evidence": evidence[split],
                                                   "evidence_field": None}
        out[split] = make_bunch(
            [t for _, t, _ in rows], [labs for _, _, labs in rows], [i for i, _, _ in rows], names,
            record, sorted_names=False, n_space=len(space), **extra)
    return out
