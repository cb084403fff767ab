"""One check of label descriptions, synonyms and parents, shared by every estimator.

Loaders return, one entry per label and aligned with ``label_names``:
``label_descriptions`` (a string, ``""`` where unknown), ``label_synonyms``
(a list of strings) and ``label_parents`` (a list of parent identifiers,
which need not be labels). Estimators take them as fit parameters;
:func:`check_label_texts` validates them once, with the same messages
everywhere, and :func:`label_documents` turns them into one short text per
label.
"""

import numpy as np


def _check_string_lists(value, name, n_labels):
    if value is None:
        return [[] for _ in range(n_labels)]
    if isinstance(value, str) or not hasattr(value, "__len__"):
        raise ValueError(f"{name} must be a sequence with one list of strings per label; got "
                         f"{type(value).__name__}")
    if len(value) != n_labels:
        raise ValueError(f"{name} has {len(value)} entries but Y has {n_labels} labels; give one "
                         "entry per label, aligned with label_names (an empty list where unknown)")
    out = []
    for j, entry in enumerate(value):
        if isinstance(entry, str) or not isinstance(entry, (list, tuple, np.ndarray)):
            raise ValueError(f"{name}[{j}] is a {type(entry).__name__}, not a list; each entry must be "
                             f"a list of strings (write [{entry!r}] for a single one, [] for none)")
        items = list(entry)
        for item in items:
            if not isinstance(item, str):
                raise ValueError(f"{name}[{j}] holds {item!r}, a {type(item).__name__}; identifiers and "
                                 "synonyms must be strings")
        out.append(items)
    return out


def check_label_texts(n_labels, label_descriptions=None, label_synonyms=None, label_parents=None):
    """Validate per-label descriptions, synonyms and parents.

    Parameters
    ----------
    n_labels : int
        Number of label columns of ``Y``.
    label_descriptions : sequence of str of length n_labels, optional
        ``""`` (or None) where unknown.
    label_synonyms : sequence of list of str of length n_labels, optional
    label_parents : sequence of list of str of length n_labels, optional
        Parent identifiers; they need not be labels.

    Returns
    -------
    descriptions : list of str, length n_labels
    synonyms : list of list of str, length n_labels
    parents : list of list of str, length n_labels
        Missing arguments give ``""`` and empty lists.

    Raises
    ------
    ValueError
        If a sequence does not have one entry per label, a description is not
        a string, or an entry of synonyms or parents is not a list of strings.

    Examples
    --------
    >>> check_label_texts(2, ["fever", None], None, [["R50"], []])
    (['fever', ''], [[], []], [['R50'], []])
    >>> check_label_texts(2, ["fever"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: label_descriptions has 1 entries but Y has 2 labels; ...
    >>> check_label_texts(1, None, None, ["R50"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: label_parents[0] is a str, not a list; ...
    """
    if label_descriptions is None:
        descriptions = [""] * n_labels
    else:
        if isinstance(label_descriptions, str) or not hasattr(label_descriptions, "__len__"):
            raise ValueError("label_descriptions must be a sequence of strings, one per label; got "
                             f"{type(label_descriptions).__name__}")
        if len(label_descriptions) != n_labels:
            raise ValueError(f"label_descriptions has {len(label_descriptions)} entries but Y has "
                             f"{n_labels} labels; give one string per label, aligned with label_names "
                             "(\"\" where unknown)")
        descriptions = []
        for j, d in enumerate(label_descriptions):
            if d is None:
                d = ""
            if not isinstance(d, str):
                raise ValueError(f"label_descriptions[{j}] is a {type(d).__name__}, not a string "
                                 "(use \"\" where the description is unknown)")
            descriptions.append(d)
    synonyms = _check_string_lists(label_synonyms, "label_synonyms", n_labels)
    parents = _check_string_lists(label_parents, "label_parents", n_labels)
    return descriptions, synonyms, parents


def label_documents(descriptions, synonyms, parents=None, classes=None, parent_descriptions=None,
                    ancestor_depth=0, joined=True):
    """One text per label: its description and synonyms, optionally its ancestors' text.

    Parameters
    ----------
    descriptions : list of str, length n_labels
    synonyms : list of list of str, length n_labels
    parents : list of list of str, length n_labels, optional
        Needed when ``ancestor_depth > 0``.
    classes : sequence of str of length n_labels, optional
        Label identifiers, so that a parent that is itself a label
        contributes its own description.
    parent_descriptions : dict of str to str, optional
        Descriptions of parents that are not labels (a loader's
        ``parent_descriptions``).
    ancestor_depth : int, default=0
        How many levels of ancestors to add (each level's parents are looked
        up among the labels, and then in ``parent_descriptions``; the
        ancestors of a non-label parent are not known and stop the walk).
    joined : bool, default=True
        Join each label's parts into one text; False returns the parts.

    Returns
    -------
    list of str, length n_labels
        Description, synonyms and ancestor descriptions joined by ``" ; "``
        (empty parts left out). With ``joined=False``, a list of the
        non-empty parts per label, in that order.

    Examples
    --------
    >>> label_documents(["Acute MI", "Other"], [["heart attack"], []], [["I21"], []],
    ...                 parent_descriptions={"I21": "Acute myocardial infarction"}, ancestor_depth=1)
    ['Acute MI ; heart attack ; Acute myocardial infarction', 'Other']
    """
    n = len(descriptions)
    texts = [[d] + list(s) for d, s in zip(descriptions, synonyms)]
    if ancestor_depth and parents is not None:
        index = {str(c): j for j, c in enumerate(classes)} if classes is not None else {}
        extra = parent_descriptions or {}
        for j in range(n):
            frontier, seen = list(parents[j]), set()
            for _ in range(ancestor_depth):
                nxt = []
                for p in frontier:
                    if p in seen:
                        continue
                    seen.add(p)
                    if p in index:
                        texts[j].append(descriptions[index[p]])
                        nxt.extend(parents[index[p]])
                    elif p in extra:
                        texts[j].append(extra[p])
                frontier = nxt
    if not joined:
        return [[t for t in parts if t] for parts in texts]
    return [" ; ".join(t for t in parts if t) for parts in texts]
