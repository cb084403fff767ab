"""CodiEsp (CLEF eHealth 2020): Spanish clinical cases coded with CIE-10.

Two sources give identical results:

* the compact copy bundled with xplant (``data/codiesp.jsonl.gz``, built by
  ``datasets/build_codiesp.py`` from the official distribution);
* an official distribution folder (``data_home``) in the layout
  ``{split}/{split}D.tsv``, ``{split}P.tsv``, ``{split}X.tsv``,
  ``{split}/text_files/<id>.txt`` (Spanish) and ``text_files_en/<id>.txt``
  (English machine translation, sentence-split).

Both are first read into the same raw records (file contents unchanged); all
normalisation happens afterwards, in one place.

Data: Miranda-Escalada, Gonzalez-Agirre, Armengol-Estapé and Krallinger,
"Overview of automatic clinical coding: annotations, guidelines, and
solutions for non-English clinical cases at CodiEsp track of CLEF eHealth
2020", CLEF 2020. Licence CC BY 4.0; see ``data/CODIESP_SOURCE.txt``.
"""

import functools
import gzip
import json
from importlib import resources
from pathlib import Path

import numpy as np

from .._normal_forms import normalise_code
from ._base import check_split, make_bunch
from ._descriptions import describe_codes
from ._label_space import with_outside_labels

SPLITS = ("train", "dev", "test")
BUNDLED_FILE = "codiesp.jsonl.gz"
_TYPES = {"DIAGNOSTICO": "D", "PROCEDIMIENTO": "P"}


def _read_tsv(path, n_fields):
    """Rows of a CodiEsp TSV file, each a list of ``n_fields`` strings."""
    rows = []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != n_fields:
                raise ValueError(
                    f"{path}, line {lineno}: expected {n_fields} tab-separated fields, "
                    f"found {len(fields)}: {line!r}"
                )
            rows.append(fields)
    return rows


def read_official(data_home):
    """Read an official CodiEsp distribution folder into raw records.

    Parameters
    ----------
    data_home : str or Path
        Folder holding ``train/``, ``dev/`` and ``test/`` in the official layout.

    Returns
    -------
    list of dict
        One record per document, splits in the order train, dev, test and
        documents sorted by id: ``split``, ``id``, ``text_es`` and ``text_en``
        (file contents, unchanged), ``D`` and ``P`` (codes as in the files)
        and ``X`` (rows ``[type, code, evidence, positions]`` as in the file).

    Raises
    ------
    FileNotFoundError
        If a split folder or file is missing.
    ValueError
        If an annotation names a document that has no text file.
    """
    root = Path(data_home)
    out = []
    for split in SPLITS:
        folder = root / split
        es_dir, en_dir = folder / "text_files", folder / "text_files_en"
        for needed in (es_dir, en_dir, folder / f"{split}D.tsv"):
            if not needed.exists():
                raise FileNotFoundError(
                    f"{needed} not found: data_home must be a CodiEsp distribution folder "
                    "with train/, dev/ and test/ in the official layout"
                )
        ids = sorted(p.stem for p in es_dir.glob("*.txt"))
        docs = {}
        for doc_id in ids:
            en_path = en_dir / f"{doc_id}.txt"
            if not en_path.is_file():
                raise FileNotFoundError(f"{en_path} not found (the English text of {doc_id})")
            docs[doc_id] = {
                "split": split,
                "id": doc_id,
                "text_es": (es_dir / f"{doc_id}.txt").read_text(encoding="utf-8-sig"),
                "text_en": en_path.read_text(encoding="utf-8-sig"),
                "D": [],
                "P": [],
                "X": [],
            }
        for kind in ("D", "P"):
            path = folder / f"{split}{kind}.tsv"
            for doc_id, code in _read_tsv(path, 2):
                if doc_id not in docs:
                    raise ValueError(f"{path}: document {doc_id!r} has no text file")
                docs[doc_id][kind].append(code)
        x_path = folder / f"{split}X.tsv"
        if x_path.is_file():
            for doc_id, *row in _read_tsv(x_path, 5):
                if doc_id not in docs:
                    raise ValueError(f"{x_path}: document {doc_id!r} has no text file")
                docs[doc_id]["X"].append(row)
        out.extend(docs[i] for i in ids)
    return out


def read_bundled():
    """Read the compact copy of CodiEsp shipped inside the package.

    Returns
    -------
    list of dict
        The same raw records as :func:`read_official` on the distribution it
        was built from.
    """
    ref = resources.files("xplant.datasets").joinpath("data", BUNDLED_FILE)
    with ref.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8-sig") as fh:
        return [json.loads(line) for line in fh]


@functools.lru_cache(maxsize=4)
def _records(data_home, signature):
    recs = read_bundled() if data_home is None else read_official(data_home)
    return tuple(recs)


def _signature(root):
    """Sizes and modification times of the annotation files and text folders."""
    sig = []
    for split in SPLITS:
        for name in (f"{split}D.tsv", f"{split}P.tsv", f"{split}X.tsv", "text_files", "text_files_en"):
            try:
                st = (root / split / name).stat()
                sig.append((st.st_size, st.st_mtime_ns))
            except OSError:
                sig.append(None)
    return tuple(sig)


def _get_records(data_home):
    """Raw records, cached per source; a changed folder is read again."""
    if data_home is None:
        return _records(None, None)
    root = Path(data_home).resolve()
    return _records(str(root), _signature(root))


def _english(text):
    """The sentence-split English translation joined with newlines.

    The official ``text_files_en`` hold one sentence per line; lines are
    joined with ``"\\n"`` after dropping blank lines and line-end spaces.
    """
    return "\n".join(line.rstrip() for line in text.split("\n") if line.strip())


#: The label spaces :func:`load_codiesp` builds (``label_space``).
LABEL_SPACES = ("train+dev", "catalogue", "all-splits")
#: The catalogue of each CodiEsp code set (:func:`xplant.datasets.load_catalogue`).
CODIESP_CATALOGUES = {"D": "icd10cm", "P": "icd10pcs"}


def _label_space(records, codes, splits=SPLITS):
    """Sorted union of the normalised codes of ``splits``, and their kinds."""
    kinds = {}
    for kind in codes:
        for rec in records:
            if rec["split"] not in splits:
                continue
            for code in rec[kind]:
                c = normalise_code(code)
                other = kinds.setdefault(c, kind)
                if other != kind:
                    raise ValueError(
                        f"code {c!r} occurs both as a diagnosis (D) and as a procedure (P); "
                        "with codes='DP' the two code systems must stay distinguishable"
                    )
    names = np.array(sorted(kinds), dtype=str)
    return names, np.array([kinds[n] for n in names], dtype=str)


#: The ``language`` values of :func:`load_codiesp`: the English translation,
#: the Spanish original, both joined.
CODIESP_LANGUAGES = ("en", "es", "both")

#: What joins the English and the Spanish text of a case (``language="both"``).
BOTH_SEPARATOR = "\n\n"


def load_codiesp(split="train", codes="D", language="en", data_home=None, return_X_y=False,
                 descriptions=True, label_space="train+dev"):
    """Load CodiEsp, the Spanish clinical coding corpus (CLEF eHealth 2020).

    1,000 clinical case reports: official splits train 500, dev 250, test
    250; 2,557 distinct diagnosis codes (ICD-10-CM, "CodiEsp-D") and 870
    procedure codes (ICD-10-PCS, "CodiEsp-P") across all splits.

    Parameters
    ----------
    split : {"train", "dev", "test"}, default="train"
        The official split to load.
    codes : {"D", "P", "DP"}, default="D"
        Diagnoses, procedures, or both.
    language : {"en", "es", "both"}, default="en"
        ``"es"``: the original Spanish text, unchanged (the CodiEsp-X
        evidence offsets refer to it). ``"en"``: the official machine
        translation, which is sentence-split; its lines are joined with a
        newline. ``"both"``: one text per case, the English (as ``"en"``
        gives it), a blank line, then the Spanish; the evidence offsets
        are moved past the English part, so they index this text. The
        label descriptions are the English ones.
    data_home : str or Path, optional
        An official distribution folder (``{split}/{split}D.tsv``,
        ``{split}P.tsv``, ``{split}X.tsv``, ``text_files/``,
        ``text_files_en/``). By default the compact copy bundled with the
        package is read; both give identical results.
    return_X_y : bool, default=False
        Return ``(texts, Y)`` only.
    descriptions : bool, default=True
        Add the label descriptions, synonyms and hierarchy (below). The
        official code lists ``codiesp-D_codes.tsv`` / ``codiesp-P_codes.tsv``
        (CIE-10-ES, Spanish and English) are used when ``data_home`` (or its
        ``codiesp_codes/`` folder) holds them; otherwise the ICD-10-CM and
        ICD-10-PCS titles of the ``descriptions`` extra (English only), or
        none, and the record says which.
    label_space : {"train+dev", "catalogue", "all-splits"}, default="train+dev"
        The columns, the same for every split. ``"train+dev"``: the codes
        of the training and dev splits, sorted, what a user with the
        labelled data knows. ``"catalogue"``: those, then every other code
        of the code system's catalogue (ICD-10-CM for D, with the
        7th-character extensions dropped as CodiEsp writes them; ICD-10-PCS
        for P; :func:`xplant.datasets.load_catalogue`), as CLEF eHealth 2020
        ranked them; needs the ``descriptions`` extra and ``codes`` "D" or
        "P". ``"all-splits"``: the codes of all three splits, test
        included, the closed space of earlier releases: it tells a model
        which codes test holds, so its figures are optimistic. A split's
        codes outside the space (test codes that are in no catalogue or,
        with ``"train+dev"``, seen in neither train nor dev) are kept as
        extra columns after the space's (``n_space``), so metrics count
        them as misses: a model's (n, n_space) scores rank none of them.

    Returns
    -------
    Bunch
        texts : list of str, length n_docs
            The documents, in the order of ``ids``.
        Y : csr_matrix of shape (n_docs, n_labels), int64 {0, 1}
            Each document's codes.
        label_names : ndarray of str of shape (n_labels,)
            Upper-case codes as written by CodiEsp (``"N44.8"``,
            ``"BW03ZZZ"``): the label space (``label_space``), then this
            split's codes outside it.
        n_known : int
            The first ``n_known`` columns are the codes of the labelled
            splits (all of them with ``"all-splits"``, train and dev
            otherwise); a catalogue's other codes follow them.
        n_space : int
            Columns of the label space, the same in every split;
            ``n_labels - n_space`` are this split's codes outside it.
        catalogue : Bunch or None
            With ``label_space="catalogue"``, the catalogue
            (:func:`xplant.datasets.load_catalogue`).
        label_types : ndarray of str of shape (n_labels,)
            ``"D"`` (ICD-10-CM) or ``"P"`` (ICD-10-PCS) for each label.
        label_descriptions : ndarray of object (str) of shape (n_labels,)
            ``""`` where unknown.
        label_synonyms, label_parents : list of list of str, length n_labels
            Synonyms (ICD-10-CM inclusion terms); parent codes, which need
            not be labels (``I21`` for ``I21.4``; the 4-character prefix of
            a PCS code).
        label_ancestor : ndarray of int64 of shape (n_labels,)
            Index of the nearest ancestor that is a label, or -1.
        parent_descriptions : dict of str to str
            Descriptions of the ancestors that are not labels.
        ids : ndarray of str
            The clinical case ids.
        evidence : list of list of dict, length n_docs
            Each document's CodiEsp-X mentions of the chosen ``codes``,
            ``{"label": code, "spans": [[start, end], ...]}`` in file order
            (a discontinuous mention has several spans), checked by
            :func:`xplant.evidence.check_evidence`; the offsets index the
            Spanish original (its part of ``texts`` for ``"both"``).
        evidence_field : str or None
            None where the offsets index ``texts`` (``language="es"`` or
            ``"both"``); ``"text_es"`` where they index the Spanish
            original beside the English text (``"en"``), then given as
            ``text_es`` (a list of str, one per document).
        label_frequency : ndarray of int64 of shape (n_labels,)
            Positives per label in this split.
        record : dict
            Source, split, label policy and counts; ``record["descriptions"]``
            names the description source, the coverage (share of labels
            with a description) and how many codes took the title of their
            longest existing prefix (CIE-10-ES codes that ICD-10-CM lacks).

    Raises
    ------
    ValueError
        For an unknown ``split``, ``codes`` or ``language``, or if with
        ``codes="DP"`` one code string occurs both as D and as P.

    Notes
    -----
    Codes are strings normalised to upper case and never parsed as numbers.
    With ``codes="DP"`` the two systems stay distinguishable by their form:
    ICD-10-CM codes carry a dot after the third character whenever they are
    longer than three characters, ICD-10-PCS codes never contain a dot. The
    loader checks that no string occurs in both systems and returns each
    label's system in ``label_types``. Documents without any code of the
    chosen kind (65 training documents have no P code) stay rows.

    Examples
    --------
    >>> from xplant.datasets import load_codiesp
    >>> data = load_codiesp("dev")
    >>> len(data.texts), data.Y.shape
    (250, (250, 2194))
    """
    check_split(split, SPLITS)
    if codes not in ("D", "P", "DP"):
        raise ValueError(f"codes={codes!r} is not valid; choose 'D', 'P' or 'DP'")
    if language not in CODIESP_LANGUAGES:
        raise ValueError(f"language={language!r} is not valid; choose one of {CODIESP_LANGUAGES}")
    if label_space not in LABEL_SPACES:
        raise ValueError(f"label_space={label_space!r} is not valid; choose one of {LABEL_SPACES}")
    if label_space == "catalogue" and codes not in CODIESP_CATALOGUES:
        raise ValueError("label_space='catalogue' needs codes='D' (ICD-10-CM) or 'P' (ICD-10-PCS)")
    records = _get_records(data_home)
    label_names, label_types = _label_space(
        records, codes, SPLITS if label_space == "all-splits" else ("train", "dev"))
    catalogue, n_known = None, int(label_names.size)
    if label_space == "catalogue":
        from ._catalogue import load_catalogue, open_label_space
        catalogue = load_catalogue(CODIESP_CATALOGUES[codes], drop_extension=codes == "D")
        label_names, _ = open_label_space(label_names, catalogue)
        label_types = np.full(label_names.size, codes, dtype=str)
    n_space = int(label_names.size)
    own, own_types = _label_space(records, codes, (split,))
    label_names, outside = with_outside_labels(label_names, own)
    label_types = np.concatenate([label_types, own_types[np.isin(own, outside)]])
    docs = [r for r in records if r["split"] == split]
    texts = [_english(r["text_en"]) if language == "en" else r["text_es"] for r in docs]
    if language == "both":
        texts = [_english(r["text_en"]) + BOTH_SEPARATOR + t for r, t in zip(docs, texts)]
    label_lists = [[normalise_code(c) for kind in codes for c in r[kind]] for r in docs]
    source = "bundled copy (xplant/datasets/data/codiesp.jsonl.gz)" if data_home is None else "official distribution folder"
    record = {
        "dataset": "codiesp",
        "source": source,
        "split": split,
        "codes": codes,
        "language": language,
        "label_space": label_space,
        "label_policy": {
            "train+dev": "the codes of the train and dev splits, sorted",
            "catalogue": "the codes of the train and dev splits, sorted, then the other codes of "
                         "the catalogue",
            "all-splits": "union of the codes of all official splits (train, dev, test), sorted: "
                          "closed, it tells the model which codes test holds"}[label_space],
        "n_space": n_space,
        "n_outside_space": int(outside.size),
        "steps": [
            "codes stripped and upper-cased, never parsed as numbers",
            "repeated (document, code) pairs counted once",
            {"en": "English text: sentence lines joined with a newline",
             "es": "Spanish text unchanged (CodiEsp-X offsets refer to it)",
             "both": "English text (sentence lines joined with a newline), a blank line, then "
                     "the Spanish text; CodiEsp-X offsets moved past the English part"}[language],
        ],
        "licence": "CC BY 4.0 (Miranda-Escalada et al., CodiEsp, CLEF eHealth 2020)",
    }
    extra = {}
    if not return_X_y:
        extra.update(_evidence_fields(docs, codes, language, label_lists, data_home, texts))
    if descriptions and not return_X_y:
        systems = ["ICD10-DIAG" if t == "D" else "ICD10-PROC" for t in label_types]
        desc = describe_codes(label_names, systems, data_home=data_home,
                              language="es" if language == "es" else "en")
        record["descriptions"] = desc.pop("record")
        extra.update(desc)
    bunch = make_bunch(
        texts,
        label_lists,
        [r["id"] for r in docs],
        label_names,
        record,
        return_X_y=return_X_y,
        sorted_names=False,
        label_types=label_types,
        **extra,
    )
    if not return_X_y:
        bunch.n_space = n_space
        bunch.n_known = n_known
        bunch.catalogue = catalogue
        if catalogue is not None:
            bunch.record["catalogue"] = dict(catalogue.record)
    return bunch


def _evidence_fields(docs, codes, language, label_lists, data_home, texts):
    """The ``evidence`` of the documents (their CodiEsp-X rows of ``codes``), checked, and
    with English text the Spanish original it indexes (``evidence_field``); with both texts
    (``texts`` ending in the Spanish) the offsets moved onto the Spanish part."""
    from ..evidence import check_evidence
    spanish = [r["text_es"] for r in docs]
    source = "the bundled copy" if data_home is None else str(Path(data_home))
    evidence = [[{"label": normalise_code(code), "spans": [list(p) for p in parse_positions(pos)]}
                 for type_, code, _, pos in r["X"] if _TYPES.get(type_) in codes] for r in docs]
    check_evidence(evidence, spanish, label_lists,
                   where=[f"{source}, CodiEsp-X of {r['split']} document {r['id']}" for r in docs])
    if language == "both":          # the Spanish ends each text: what precedes it, the shift
        for text, es, mentions in zip(texts, spanish, evidence):
            shift = len(text) - len(es)
            for m in mentions:
                m["spans"] = [[s + shift, e + shift] for s, e in m["spans"]]
    out = {"evidence": evidence, "evidence_field": "text_es" if language == "en" else None,
           "evidence_language": "es"}
    if language == "en":
        out["text_es"] = spanish
    return out


def parse_positions(positions):
    """Parse a CodiEsp-X position field into (start, end) pairs.

    Parameters
    ----------
    positions : str
        ``"start end"``, or ``"start end;start end"`` for a discontinuous
        evidence.

    Returns
    -------
    list of tuple of int
        Character offsets into the Spanish text, end exclusive.

    Raises
    ------
    ValueError
        If a part is not two integers with ``0 <= start <= end``.

    Examples
    --------
    >>> parse_positions("2787 2801;2810 2823")
    [(2787, 2801), (2810, 2823)]
    """
    spans = []
    for part in positions.split(";"):
        bits = part.split()
        try:
            start, end = (int(b) for b in bits)
        except ValueError:
            raise ValueError(f"bad CodiEsp-X position {positions!r}: expected 'start end[;start end]'") from None
        if not 0 <= start <= end:
            raise ValueError(f"bad CodiEsp-X position {positions!r}: need 0 <= start <= end")
        spans.append((start, end))
    return spans


def load_codiesp_evidence(split="train", data_home=None):
    """Load the CodiEsp-X gold evidence of one split.

    Parameters
    ----------
    split : {"train", "dev", "test"}, default="train"
        The official split whose evidence to load.
    data_home : str or Path, optional
        An official distribution folder; by default the bundled copy.

    Returns
    -------
    list of dict
        One dict per row of ``{split}X.tsv``, in file order per document
        (documents sorted by id): ``id`` (article), ``type``
        (``"DIAGNOSTICO"`` or ``"PROCEDIMIENTO"``), ``kind`` (``"D"`` or
        ``"P"``), ``code`` (upper case), ``evidence`` (the reference text)
        and ``spans`` (list of (start, end) character offsets into the
        Spanish text of :func:`load_codiesp` with ``language="es"``).

    Notes
    -----
    For almost all rows ``" ".join(text[s:e] for s, e in spans)`` equals the
    evidence text; in the official data 8 of 18,435 rows differ by a final
    punctuation mark or a space.

    Examples
    --------
    >>> ev = load_codiesp_evidence("train")
    >>> ev[0]["type"], ev[0]["code"], ev[0]["spans"]
    ('PROCEDIMIENTO', 'BW03ZZZ', [(2163, 2171)])
    """
    check_split(split, SPLITS)
    out = []
    for rec in _get_records(data_home):
        if rec["split"] != split:
            continue
        for type_, code, evidence, positions in rec["X"]:
            if type_ not in _TYPES:
                raise ValueError(f"unknown CodiEsp-X type {type_!r} for document {rec['id']}")
            out.append(
                {
                    "id": rec["id"],
                    "type": type_,
                    "kind": _TYPES[type_],
                    "code": normalise_code(code),
                    "evidence": evidence,
                    "spans": parse_positions(positions),
                }
            )
    return out
