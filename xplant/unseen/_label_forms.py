"""What a label's name says without its documents: its family and its form.

:func:`label_family` gives the family key of a label (the ICD-10 category
``I21`` of ``I21.A1``, or its parent), which the ``family`` signal of
:class:`~xplant.unseen._catalogue.CatalogueIndex` groups labels by.
:func:`label_forms` reads a label's form (its length, last character, and
whether it is a parent), and :func:`label_form_prior` learns from the rare
labels how much more often a label of each form is used than the label
space lists one: the ``prior`` signal of an unseen label
(:func:`apply_form_prior` for labels added later).
"""

import numpy as np

#: Training documents of the labels whose forms stand in for the unseen labels' in
#: :func:`label_form_prior` (labels seen once or twice: an unseen label is what a rare one
#: would have been without its documents).
RARE_LABEL_DOCS = 2


def label_family(name, parent, family_prefix):
    """The family key of a label: its first ``family_prefix`` characters, else its parent.

    Parameters
    ----------
    name, parent : str
        The label and its parent (``""`` for none).
    family_prefix : int or None
        Characters that make the family; None: the parent is the family.

    Returns
    -------
    str

    Examples
    --------
    >>> label_family("I21.A1", "I21.A", 3), label_family("1204", "100142", None)
    ('I21', '100142')
    """
    if family_prefix:
        return str(name)[:int(family_prefix)]
    return str(parent)


def label_forms(names, parents):
    """Each label's form: its length and last character (letters and digits only), and
    whether a label of the space has it as its parent.

    Parameters
    ----------
    names, parents : sequence of str of shape (n,)
        Labels and their parents (``""`` for none).

    Returns
    -------
    ndarray of str of shape (n, 3)

    Examples
    --------
    >>> label_forms(["N39.4", "N39.41", "N39.3"], ["N39", "N39.4", "N39"]).tolist()
    [['4', '4', 'parent'], ['5', '1', 'leaf'], ['4', '3', 'leaf']]
    """
    has_child = {str(p) for p in parents if p}
    out = []
    for name in names:
        s = "".join(ch for ch in str(name) if ch.isalnum())
        out.append([str(len(s)), s[-1:] if s[-1:].isdigit() else "letter",
                    "parent" if str(name) in has_child else "leaf"])
    return np.asarray(out, dtype=str).reshape(-1, 3)


def label_form_prior(names, parents, frequency, rare=RARE_LABEL_DOCS):
    """The log-ratio of how often a label of each form is used to how often the space lists one.

    A catalogue lists every code a code system allows, most of which a
    coder never uses: ICD-10-CM lists 7-character injury codes by the tens
    of thousands, and a coder picks the "unspecified" (``.9``, ``.0``) or
    leaf code over its parent. The form of a label
    (:func:`label_forms`: its length, last character, and whether it is a
    parent) says how likely an unseen label is a priori. The labels with 1
    to ``rare`` training documents stand in for the unseen ones (an unseen
    label is a rare label that had no document; Good, Biometrika 1953), and
    each form feature adds ``log P(f | rare labels) - log P(f | all
    labels)``, with one added to every count (naive Bayes with Laplace
    smoothing). All zeros when no label is rare.

    Parameters
    ----------
    names, parents : sequence of str of shape (n,)
        The label space and each label's parent (``""`` for none).
    frequency : array-like of int of shape (n,)
        Training documents per label.
    rare : int, default=RARE_LABEL_DOCS
        The rare labels' most training documents.

    Returns
    -------
    values : ndarray of float32 of shape (n,)
        In nats; positive for forms the rare labels have more often than the space.
    table : list of dict of str to float
        Per form feature, the log-ratio of each value: a label added later
        takes the sum of its values' entries (0 for a value not in the table).

    Examples
    --------
    >>> names = ["A1", "A2", "A11", "A12", "A13", "A14"]
    >>> p, table = label_form_prior(names, [""] * 6, [1, 1, 0, 0, 0, 0])
    >>> bool(p[0] > 0 > p[2]), sorted(table[0])     # two-character labels: the rare ones' form
    (True, ['2', '3'])
    """
    forms = label_forms(names, parents)
    frequency = np.asarray(frequency)
    rare_rows = (frequency >= 1) & (frequency <= int(rare))
    table = []
    for f in range(forms.shape[1]):
        values, col = np.unique(forms[:, f], return_inverse=True)
        every = np.bincount(col, minlength=values.size).astype(np.float64)
        used = np.bincount(col[rare_rows], minlength=values.size).astype(np.float64)
        ratio = (np.log((used + 1) / (used.sum() + values.size))
                 - np.log((every + 1) / (every.sum() + values.size))) if rare_rows.any() \
            else np.zeros(values.size)
        table.append({str(v): float(r) for v, r in zip(values, ratio)})
    return apply_form_prior(table, forms), table


def apply_form_prior(table, forms):
    """The prior of labels of the given forms under a fitted table (:func:`label_form_prior`).

    Parameters
    ----------
    table : list of dict of str to float
    forms : ndarray of str of shape (n, n_features)
        :func:`label_forms` of the labels.

    Returns
    -------
    ndarray of float32 of shape (n,)
    """
    out = np.zeros(forms.shape[0], dtype=np.float64)
    for f, entries in enumerate(table):
        out += np.array([entries.get(str(v), 0.0) for v in forms[:, f]], dtype=np.float64)
    return out.astype(np.float32)
