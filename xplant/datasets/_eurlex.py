"""EURLEX57K (Chalkidis et al., ACL 2019): EU legal acts with EUROVOC concepts.

Not bundled (59 MB): pass ``data_home``, a folder holding either
``{split}.jsonl.gz`` / ``{split}.jsonl`` (one original JSON record per line)
or ``{split}/<celex_id>.json`` (the original per-document files), and
optionally ``EURLEX57K.json`` (the EUROVOC descriptors).
"""

import functools
import gzip
import json
from pathlib import Path

import numpy as np

from ..model_selection import few_shot_labels, frequent_labels, zero_shot_labels
from ._base import check_split, make_bunch
from ._descriptions import eurovoc_descriptions
from ._label_space import with_outside_labels

SPLITS = ("train", "dev", "test")
SECTIONS = ("title", "header", "recitals", "main_body")


def _iter_split(root, split, max_docs=None):
    """Yield the raw JSON records of one split, sorted by celex_id."""
    for name in (f"{split}.jsonl.gz", f"{split}.jsonl"):
        path = root / name
        if path.is_file():
            opener = gzip.open if name.endswith(".gz") else open
            recs = []
            with opener(path, "rt", encoding="utf-8-sig") as fh:
                for lineno, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        recs.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{path}, line {lineno}: invalid JSON ({exc.msg})") from None
            recs.sort(key=lambda r: r["celex_id"])
            return recs[:max_docs] if max_docs is not None else recs
    folder = root / split
    if folder.is_dir():
        files = sorted(folder.glob("*.json"))
        recs = []
        for path in files:
            with open(path, encoding="utf-8-sig") as fh:
                recs.append(json.load(fh))
        recs.sort(key=lambda r: r["celex_id"])
        return recs[:max_docs] if max_docs is not None else recs
    raise FileNotFoundError(
        f"no {split}.jsonl.gz, {split}.jsonl or {split}/ folder in {root}: data_home must hold "
        "the EURLEX57K distribution (JSON lines per split, or a folder of per-document JSON files)"
    )


def _concepts(rec, where):
    concepts = rec.get("concepts")
    if not isinstance(concepts, list) or not all(isinstance(c, str) for c in concepts):
        raise ValueError(f"{where}: 'concepts' must be a list of strings (EUROVOC ids)")
    return [c.strip() for c in concepts]


@functools.lru_cache(maxsize=4)
def _split_concepts(root):
    """Each split's concept lists, read once per folder (the splits present)."""
    root = Path(root)
    per_split = {}
    for split in SPLITS:
        try:
            recs = _iter_split(root, split)
        except FileNotFoundError:
            continue
        per_split[split] = tuple(tuple(_concepts(r, f"{split} {r.get('celex_id')}")) for r in recs)
    if not per_split:
        raise FileNotFoundError(
            f"no EURLEX57K split found in {root}: data_home must hold train.jsonl.gz, dev.jsonl.gz, "
            "test.jsonl.gz (or .jsonl) or train/, dev/, test/ folders of per-document JSON files"
        )
    return per_split


def _label_space(root, split, label_space):
    """A split's columns (the space, then its own concepts outside it) and train counts."""
    per_split = _split_concepts(str(root))
    known = ("train", "dev") if label_space == "train+dev" else SPLITS
    space = sorted({c for s in known for cs in per_split.get(s, ()) for c in cs})
    names, _ = with_outside_labels(space, [c for cs in per_split.get(split, ()) for c in cs])
    index = {n: j for j, n in enumerate(names)}
    train_counts = np.zeros(len(names), dtype=np.int64)
    for cs in per_split.get("train", ()):
        for c in set(cs):
            train_counts[index[c]] += 1
    return names, len(space), train_counts, tuple(per_split)


#: The label spaces of :func:`load_eurlex57k`.
LABEL_SPACES = ("train+dev", "all-splits")


def _text(rec, sections):
    parts = []
    for name in sections:
        value = rec.get(name) or ""
        if isinstance(value, list):
            value = "\n".join(v.strip() for v in value if v and v.strip())
        value = value.strip()
        if value:
            parts.append(value)
    return "\n".join(parts)


def load_eurlex57k(
    split="train", data_home=None, sections=SECTIONS, max_docs=None, return_X_y=False,
    label_space="train+dev",
):
    """Load EURLEX57K, 57,000 EU legal acts labelled with EUROVOC concepts.

    Official split: train 45,000, dev 6,000, test 6,000 documents; 4,271
    distinct concepts across all splits (Chalkidis et al., "Large-Scale
    Multi-Label Text Classification on EU Legislation", ACL 2019).

    Parameters
    ----------
    split : {"train", "dev", "test"}, default="train"
        The official split to load.
    data_home : str or Path
        Required: the corpus is not shipped with xplant. A folder with
        ``{split}.jsonl.gz`` (or ``.jsonl``) files, or ``{split}/`` folders
        of per-document ``<celex_id>.json`` files, and ``EURLEX57K.json``
        for the label descriptors.
    sections : sequence of str, default=("title", "header", "recitals", "main_body")
        Text sections to keep, joined with newlines in the order given;
        ``main_body`` paragraphs are joined with newlines too.
    max_docs : int, optional
        Keep only the first ``max_docs`` documents of the split (by
        celex_id). The label space is still that of the whole distribution.
    return_X_y : bool, default=False
        Return ``(texts, Y)`` only.
    label_space : {"train+dev", "all-splits"}, default="train+dev"
        The columns, the same for every split. ``"train+dev"``: the
        concepts of the training and dev splits, sorted, what a user with
        the labelled data knows; a split's concepts outside them (those
        only test holds) follow as extra columns (``n_space``), misses for
        every metric. ``"all-splits"``: the 4,271 concepts of all three
        splits, test included, the space of Chalkidis et al. (2019), whose
        zero-shot labels are those only dev or test hold; it tells a model
        which concepts test holds, so its figures are optimistic. The
        EUROVOC catalogue (:func:`xplant.datasets.load_catalogue`
        ``"eurovoc"``) opens the space to every concept.

    Returns
    -------
    Bunch
        ``texts``, ``Y`` (CSR int64 {0, 1}, shape (n_docs, n_labels)),
        ``label_names`` (EUROVOC concept ids: the label space sorted as
        strings, then this split's concepts outside it), ``n_space`` (int,
        the label space's columns), ``ids``
        (celex ids), ``label_frequency`` (positives in this split),
        ``label_descriptions`` (EUROVOC preferred terms from
        ``EURLEX57K.json``, ``""`` for every label when that file is
        absent), ``label_synonyms`` (its ``alt_labels``), ``label_parents``
        (EUROVOC parent concepts, up to 7, which need not be labels),
        ``label_ancestor`` (index of the nearest ancestor that is a label,
        or -1), ``parent_descriptions``,
        ``label_groups`` (dict ``frequent``/``few``/``zero`` of label
        indices by training frequency: more than 50, 1 to 50, 0, as in
        Chalkidis et al. 2019) and ``record``.

    Raises
    ------
    ValueError
        If ``data_home`` is not given, or for an unknown split, section or
        label space.
    FileNotFoundError
        If the folder has no EURLEX57K split files.

    Notes
    -----
    Documents are sorted by celex_id, so the two layouts give identical
    results. The label space is built from the ``concepts`` of the splits
    present, which needs one pass over all of them (a few seconds, cached
    per folder for the session).
    """
    if data_home is None:
        raise ValueError(
            "EURLEX57K is not bundled with xplant (59 MB): pass data_home=<folder with "
            "train.jsonl.gz/dev.jsonl.gz/test.jsonl.gz or train/ dev/ test/ of per-document "
            "JSON files, and EURLEX57K.json>"
        )
    check_split(split, SPLITS)
    sections = tuple(sections)
    bad = [s for s in sections if s not in SECTIONS]
    if bad or not sections:
        raise ValueError(f"sections={sections!r} is not valid; choose from {SECTIONS}")
    if max_docs is not None and (not isinstance(max_docs, int) or max_docs < 1):
        raise ValueError(f"max_docs must be a positive int or None; got {max_docs!r}")
    if label_space not in LABEL_SPACES:
        raise ValueError(f"label_space={label_space!r} is not valid; choose one of {LABEL_SPACES}")
    root = Path(data_home).resolve()
    names, n_space, train_counts, present = _label_space(str(root), split, label_space)
    recs = _iter_split(root, split, max_docs)
    texts = [_text(r, sections) for r in recs]
    label_lists = [_concepts(r, f"{split} {r.get('celex_id')}") for r in recs]
    record = {
        "dataset": "eurlex57k",
        "source": "data_home folder",
        "split": split,
        "sections": list(sections),
        "max_docs": max_docs,
        "label_space": label_space,
        "label_policy": (
            "the concepts of the train and dev splits, sorted; this split's others after them"
            if label_space == "train+dev" else
            f"union of the concepts of the splits present ({', '.join(present)}), sorted: "
            "closed, it tells the model which concepts test holds"),
        "n_space": n_space,
        "n_outside_space": int(len(names) - n_space),
        "label_groups": "frequent: >50 train docs, few: 1-50, zero: 0 (Chalkidis et al. 2019)",
        "steps": [
            "documents sorted by celex_id",
            "sections stripped and joined with newlines; main_body paragraphs joined with newlines",
        ],
    }
    desc = eurovoc_descriptions(root / "EURLEX57K.json", names)
    record["descriptions"] = desc.pop("record")
    groups = {
        "frequent": frequent_labels(train_counts, 50),
        "few": few_shot_labels(train_counts, 50, 1),
        "zero": zero_shot_labels(train_counts),
    }
    return make_bunch(
        texts,
        label_lists,
        [r["celex_id"] for r in recs],
        names,
        record,
        return_X_y=return_X_y,
        sorted_names=False,              # the space sorted, then the split's others sorted
        label_groups=groups,
        n_space=n_space,
        **desc,
    )
