"""The data of a run: its train, dev and test splits, loaded and cut as the run asks.

:func:`load_splits` loads one dataset's three splits (CodiEsp, EURLEX57K,
MIMIC, the user's files or an XC folder), cuts them to a label subset, to
given training rows or to a sample of dev, and attaches the open label
space's catalogue; :func:`first_documents` keeps a split's first documents
(a smoke run). The helpers take rows and label columns of a split, stack
train and dev for a refit, and give what a model reads from a split.
"""

import numpy as np

from ..datasets import take_documents
from .._labels import label_frequency
from .._params import final_step

#: The texts a bundled dataset's job reads where ``--language`` does not say: the
#: documents' language, and the language of the translation its description source reads
#: (None: the documents'), and why (docs/benchmarks/evidence.md, section "Which text
#: each row reads"). CodiEsp: every row reads the Spanish original, the text the
#: CodiEsp-X evidence indexes, so that PLANT plants its label attention from the gold
#: spans and the mention matcher reads its own text (on dev, PLANT fused 51.0 on the
#: Spanish with evidence planting against 41.6 on the English; the SVM 26.2 against
#: 26.0); the description source, whose ICD-10 names are English, reads the English
#: translation (29.7 against 15.4). Both texts joined served every row a little better
#: still, but at 1.6 times PLANT's fit and past the job's 15 minutes and 4 GB.
DATASET_TEXTS = {"codiesp": ("es", "en")}


def load_splits(dataset="codiesp", codes="D", language=None, data_home=None, max_docs=None,
                train_rows=None, dev_docs=None, subset=None, catalogue="default", **source):
    """Train, dev and test Bunches of one dataset (one label space).

    Parameters
    ----------
    dataset : {"codiesp", "eurlex57k", "mimic", "user", "xc"}, default="codiesp"
        ``"user"`` and ``"xc"`` (the user's files, an XC folder) take the
        ``**source`` entries of :func:`xplant.app._sources.data_args_from`
        (``files``, ``fields``, ``upper``, ``random_state``); dev is carved
        out of train when there is no dev file, and dev stands in for test
        when there is no test file (:func:`xplant.app._sources.load_source`).
    codes : str
        CodiEsp only; see :func:`xplant.datasets.load_codiesp`.
    language : {"en", "es", "both"} or None, default=None
        CodiEsp only: the text every row reads (see
        :func:`xplant.datasets.load_codiesp`). None: the dataset's setting,
        :data:`DATASET_TEXTS`: the Spanish original, with the English
        translation as the field the description source reads
        (:func:`read_original`).
    data_home : str or Path or None
        Data folder (required for EURLEX57K; default bundled copy for CodiEsp).
    max_docs : int or None
        Keep only the first documents of each split (a smoke run).
    train_rows : sequence of int or None
        Keep only these training rows (after ``max_docs``), e.g. one of
        :func:`xplant.model_selection.nested_subsamples`. Dev and test stay whole.
    dev_docs : int or None
        Keep a random subset of this many dev documents (seed 0, the same
        subset for every call, in dev order): early stopping and the
        decision rules then see only these, which cuts the per-epoch dev
        pass on a large dev split. Test stays whole. None: all of dev.
    subset : dict or None
        ``{"n_labels": L, "n_docs": N, "random_state": seed}``: a corpus of
        another shape (:func:`xplant.model_selection.frequent_label_subset`,
        applied first): every split keeps the L labels most frequent in
        train and drops the documents left without a label, and train keeps
        a seeded sample of N of its documents (None: all).
    catalogue : str or None, default="default"
        The open label space (``xplant run --labels``): a catalogue name of
        :func:`xplant.datasets.load_catalogue` (``"icd10cm"``,
        ``"icd10pcs"``, ``"eurovoc"``) or a label file, attached to the
        training split as ``catalogue``; the splits themselves keep the
        labels of train and dev (a test code outside them is an extra
        column of test, a miss for every model that cannot rank it).
        ``"default"``: CodiEsp's code-set catalogue (ICD-10-CM for D,
        ICD-10-PCS for P, none for DP), none elsewhere. None or ``"none"``:
        no catalogue. ``"all-splits"`` (CodiEsp only, refused elsewhere):
        the closed space of earlier releases, the codes of all three
        splits, test included (optimistic; no catalogue). A catalogue that
        adds no code to the labels of train and dev is refused
        (:func:`xplant.datasets.open_label_space`), and labels the data
        leave undescribed take the catalogue's texts
        (:func:`described_by_catalogue`).
    **source
        For ``"user"`` and ``"xc"``: the files and how to read them (see
        ``dataset``).

    Returns
    -------
    dict
        ``{"train": Bunch, "dev": Bunch, "test": Bunch}``.
    """
    if catalogue == "all-splits" and dataset != "codiesp":
        raise ValueError(f"catalogue='all-splits' is CodiEsp's closed space (the codes of all "
                         f"three splits); for {dataset!r} it would put test's labels into the "
                         "space. Give a catalogue, or 'none' for the labels of train and dev")
    splits = _narrowed(_load_dataset(dataset, codes, language, data_home, max_docs, catalogue,
                                     source), subset, train_rows, dev_docs)
    # no test information enters a choice or a fit: the test split's evidence is never read
    splits["test"] = without_evidence(splits["test"])
    from ._sources import catalogue_name
    name = catalogue_name(dataset, codes, catalogue)
    if name is not None:
        from ..datasets import load_catalogue, open_label_space
        cat = load_catalogue(name, data_home=data_home,
                             drop_extension=dataset == "codiesp" and codes == "D",
                             upper=bool(source.get("upper", False)))
        open_label_space(splits["train"].label_names, cat)   # refused when it adds no code
        splits["train"] = described_by_catalogue(splits["train"], cat)
        splits["train"].catalogue = cat
    return splits


def described_by_catalogue(bunch, catalogue):
    """A split whose labels the data left undescribed take the catalogue's texts.

    The catalogue's names describe the codes it lists, the known labels
    too: a label the data describe (``--label-descriptions``, a loader's
    titles) keeps its own description, synonyms and parents; one they do
    not describe takes the catalogue's entry; a label the catalogue lacks
    keeps what the data give, or nothing. So ``--labels FILE`` alone is
    enough for the rows that rank labels by their names.

    Parameters
    ----------
    bunch : Bunch
        A split (``label_names``, and the description fields where the data
        give them).
    catalogue : Bunch
        :func:`xplant.datasets.load_catalogue`'s result.

    Returns
    -------
    Bunch
        A new Bunch with ``label_descriptions`` (ndarray of object),
        ``label_synonyms``, ``label_parents`` and ``parent_descriptions``
        over its labels (the data's parent descriptions win); ``bunch``
        itself when the catalogue describes none of its undescribed
        labels. ``bunch`` is never modified.

    Examples
    --------
    >>> from sklearn.utils import Bunch
    >>> cat = Bunch(label_names=np.array(["A1", "B2"]), label_descriptions=["fever", "rash"],
    ...             label_synonyms=[[], ["itch"]], label_parents=[[], ["B"]],
    ...             parent_descriptions={"B": "skin"})
    >>> out = described_by_catalogue(Bunch(label_names=np.array(["B2", "Z9"])), cat)
    >>> out.label_descriptions.tolist(), out.label_synonyms, out.label_parents
    (['rash', ''], [['itch'], []], [['B'], []])
    """
    from sklearn.utils import Bunch
    names = [str(n) for n in bunch.label_names]
    n = len(names)

    def own(key, empty):
        value = bunch.get(key)
        return [empty() for _ in range(n)] if value is None else [v for v in value][:n] + \
            [empty() for _ in range(n - len(value))]

    desc = own("label_descriptions", str)
    syn, parents = own("label_synonyms", list), own("label_parents", list)
    where = {str(c): i for i, c in enumerate(catalogue.label_names)}
    cat_syn = catalogue.get("label_synonyms") or [[] for _ in catalogue.label_names]
    cat_par = catalogue.get("label_parents") or [[] for _ in catalogue.label_names]
    taken = 0
    for j, name in enumerate(names):
        i = where.get(name)
        if i is None or (desc[j] or syn[j]):      # described by the data, or not catalogued
            continue
        desc[j], syn[j] = str(catalogue.label_descriptions[i]), list(cat_syn[i])
        parents[j] = list(parents[j]) or list(cat_par[i])
        taken += 1
    if not taken:
        return bunch
    out = Bunch(**bunch)
    out.update(label_descriptions=np.asarray(desc, dtype=object), label_synonyms=syn,
               label_parents=parents,
               parent_descriptions={**(catalogue.get("parent_descriptions") or {}),
                                    **(bunch.get("parent_descriptions") or {})})
    return out


def read_original(bunch):
    """A split read in the original its evidence indexes, its translation kept beside.

    The documents' ``texts`` become the text of its ``evidence_field``
    (CodiEsp's Spanish original beside the English translation), which the
    evidence then indexes (``evidence_field`` None); the translation stays
    as the field ``text_<language>``, named by ``description_field``: the
    text the description source reads, in the language of the label
    descriptions the split carries. A split whose evidence indexes its
    ``texts`` already is returned as it is.

    Parameters
    ----------
    bunch : Bunch
        A split of :func:`xplant.datasets.load_codiesp` with ``language="en"``
        (``record["language"]``, ``evidence_field``, ``evidence_language``).

    Returns
    -------
    Bunch
        A new Bunch; ``bunch`` is not modified. Its ``record["language"]``
        is the original's (``evidence_language``), and
        ``record["description_language"]`` the translation's.

    Examples
    --------
    >>> from sklearn.utils import Bunch
    >>> b = read_original(Bunch(texts=["fever"], text_es=["fiebre"], evidence_field="text_es",
    ...                         evidence_language="es", record={"language": "en"}))
    >>> b.texts, b.text_en, b.description_field, b.evidence_field, b.record["language"]
    (['fiebre'], ['fever'], 'text_en', None, 'es')
    """
    field = bunch.get("evidence_field")
    if not field:
        return bunch
    from sklearn.utils import Bunch
    record = dict(bunch.get("record") or {})
    translation = record.get("language") or "translation"
    record.update(language=bunch.get("evidence_language") or field,
                  description_language=translation,
                  steps=list(record.get("steps", [])) + [
                      f"documents read in the original its evidence indexes, the {translation} "
                      "translation kept beside for the description source"])
    out = Bunch(**{k: v for k, v in bunch.items() if k != field})
    out.update(texts=bunch[field], evidence_field=None, description_field=f"text_{translation}",
               record=record, **{f"text_{translation}": bunch.texts})
    return out


def _load_dataset(dataset, codes, language, data_home, max_docs, catalogue, source):
    """The train, dev and test splits of ``dataset`` as its loader gives them
    (see :func:`load_splits`)."""
    from ..datasets import load_codiesp, load_eurlex57k
    if dataset in ("user", "xc"):
        from ._sources import load_source
        splits, _ = load_source({"dataset": dataset, "data_home": data_home,
                                 "max_docs": max_docs, **source})
    elif dataset == "mimic":
        from ..datasets import load_mimic
        splits = {s: first_documents(load_mimic(data_home, split=s), max_docs)
                  for s in ("train", "dev", "test")}
    elif dataset == "codiesp":
        space = "all-splits" if catalogue == "all-splits" else "train+dev"
        own, described = DATASET_TEXTS["codiesp"] if language is None else (language, None)
        # the setting's Spanish documents come with the English ICD-10 names: loaded in
        # English (its descriptions, the Spanish beside it), then read in the original
        splits = {s: first_documents(load_codiesp(split=s, codes=codes,
                                                  language=described or own,
                                                  data_home=data_home, label_space=space), max_docs)
                  for s in ("train", "dev", "test")}
        if described is not None:
            splits = {s: read_original(b) for s, b in splits.items()}
    elif dataset == "eurlex57k":
        splits = {s: load_eurlex57k(split=s, data_home=data_home, max_docs=max_docs)
                  for s in ("train", "dev", "test")}
    else:
        raise ValueError(f"unknown dataset {dataset!r}; choose 'codiesp', 'eurlex57k', 'mimic', "
                         "'user' or 'xc'")
    return splits


def _narrowed(splits, subset, train_rows, dev_docs):
    """The splits cut to a label subset, to given training rows and to a sample of dev
    (see :func:`load_splits`)."""
    if subset is not None:
        from ..model_selection import frequent_label_subset
        cols, rows = frequent_label_subset(splits["train"].Y, **subset)
        splits["train"] = take_documents(splits["train"], rows)        # each row keeps a label
        splits = {s: _keep_labels(b, cols) for s, b in splits.items()}
    if train_rows is not None:
        splits["train"] = take_documents(splits["train"], np.asarray(train_rows, dtype=np.int64))
    if dev_docs is not None:
        n_dev = splits["dev"].Y.shape[0]
        if not 1 <= int(dev_docs) <= n_dev:
            raise ValueError(f"dev_docs must be between 1 and the {n_dev} dev documents; "
                             f"got {dev_docs!r}")
        rows = np.sort(np.random.default_rng(0).choice(n_dev, int(dev_docs), replace=False))
        splits["dev"] = take_documents(splits["dev"], rows)
    return splits


def open_space_splits(tr, dv, te, catalogue):
    """A row's train, dev and test splits over the open label space of ``catalogue``.

    For a row that ranks a catalogue's codes itself
    (:attr:`xplant.app._rows.Row.open_space`): the labels of train and dev,
    then the catalogue's other codes (:func:`xplant.datasets.open_label_space`).
    Train's indicator gains a zero column per new code, and its description
    fields the catalogue's entries for them; dev and test are aligned with
    the space (:func:`xplant.datasets.align_label_space`), their labels
    outside it after it.

    Parameters
    ----------
    tr, dv, te : Bunch
        The row's splits (:func:`load_splits`; train's descriptions already
        completed by :func:`described_by_catalogue`).
    catalogue : Bunch
        :func:`xplant.datasets.load_catalogue`'s result.

    Returns
    -------
    tr, dv, te : Bunch
        New Bunches (the given ones are unchanged).
    names : ndarray of str of shape (n_open,)
        The open label space.
    """
    import scipy.sparse as sp
    from sklearn.utils import Bunch
    from ..datasets import align_label_space, open_label_space
    names, rows = open_label_space(tr.label_names, catalogue)
    n_known = tr.Y.shape[1]
    Y = tr.Y.tocsr()
    cat_syn = catalogue.get("label_synonyms") or [[] for _ in catalogue.label_names]
    cat_par = catalogue.get("label_parents") or [[] for _ in catalogue.label_names]

    def own(key, empty):
        value = tr.get(key)
        return [empty() for _ in range(n_known)] if value is None else list(value)[:n_known]

    fields = {
        "label_descriptions": np.asarray(
            own("label_descriptions", str)
            + [str(catalogue.label_descriptions[i]) for i in rows], dtype=object),
        "label_synonyms": own("label_synonyms", list) + [list(cat_syn[i]) for i in rows],
        "label_parents": own("label_parents", list) + [list(cat_par[i]) for i in rows],
        "parent_descriptions": {**(catalogue.get("parent_descriptions") or {}),
                                **(tr.get("parent_descriptions") or {})}}
    train = {k: v for k, v in tr.items() if k != "label_ancestor"}
    train.update(fields, label_names=names,
                 Y=sp.csr_matrix((Y.data, Y.indices, Y.indptr), shape=(Y.shape[0], names.size)),
                 label_frequency=np.concatenate([label_frequency(Y),
                                                 np.zeros(rows.size, dtype=np.int64)]))

    def aligned(split):
        a = align_label_space(names, split.Y, np.asarray(split.label_names).astype(str))
        return Bunch(**{**split, "Y": a.Y, "label_names": a.label_names})

    return Bunch(**train), aligned(dv), aligned(te), names


def first_documents(bunch, n):
    """The first ``n`` documents of a split (a smoke run's data), or the split itself.

    Parameters
    ----------
    bunch : Bunch
        A split of :func:`load_splits` (``Y`` and per-document fields).
    n : int or None
        Documents kept; None keeps them all.

    Returns
    -------
    Bunch
        Its per-document fields cut to the first ``min(n, n_documents)``
        rows, ``label_frequency`` recounted.
    """
    if n is None:
        return bunch
    return take_documents(bunch, np.arange(min(n, bunch.Y.shape[0])))


def without_evidence(bunch):
    """A split without its gold evidence (``evidence`` None): what a run gives its test split.

    The fields a document may carry besides its text (the text the evidence
    indexes, ``evidence_field``) stay: they are input, not gold.
    """
    from sklearn.utils import Bunch
    return Bunch(**{**bunch, "evidence": None}) if bunch.get("evidence") is not None else bunch


def evidence_params(split):
    """The :class:`~xplant.linear.MentionMatcher` parameters that a split sets: ``text_field``
    (the field its evidence indexes, None for ``texts``) and, where its loader knows it,
    ``language`` (``evidence_language``: CodiEsp's Spanish)."""
    params = {"text_field": split.get("evidence_field")}
    if split.get("evidence_language"):
        params["language"] = split.evidence_language
    return params


def has_evidence(bunch):
    """Whether a split carries gold evidence with at least one mention."""
    return bunch.get("evidence") is not None and any(bunch.evidence)


def _keep_labels(bunch, cols):
    """The bunch restricted to label columns ``cols``; documents left without one dropped."""
    Y = bunch.Y[:, cols].tocsr()
    Y.eliminate_zeros()
    rows = np.flatnonzero(np.diff(Y.indptr))
    n_labels = bunch.Y.shape[1]
    from ..datasets import document_fields
    per_doc = {"Y", "label_frequency", "ids", *document_fields(bunch)}
    per_label = {k: v[cols] if isinstance(v, np.ndarray) else [v[j] for j in cols]
                 for k, v in bunch.items()                  # label_names, descriptions...
                 if k not in per_doc and isinstance(v, (np.ndarray, list)) and len(v) == n_labels}
    if bunch.get("evidence") is not None:        # the mentions of the labels kept
        kept = {str(bunch.label_names[j]) for j in cols}
        per_label["evidence"] = [[m for m in doc if str(m["label"]) in kept]
                                 for doc in bunch.evidence]
    if "label_ancestor" in per_label:            # a column index: renumber, -1 if dropped
        new = np.full(n_labels + 1, -1, dtype=np.int64)
        new[cols] = np.arange(len(cols))
        per_label["label_ancestor"] = new[per_label["label_ancestor"]]
    from sklearn.utils import Bunch
    out = take_documents(Bunch(**{**bunch, "Y": Y, **per_label}), rows)
    out.label_frequency = label_frequency(out.Y)
    return out


def _row_splits(spec, data_args, splits=None):
    """The run's splits (loaded when None) and a row's train, dev and test splits: train
    cut to the row's first ``max_train_docs`` documents (``spec``), dev and test whole; a
    row that ranks labels by their descriptions alone reads the splits' translation in
    the descriptions' language (:func:`read_translation`)."""
    if splits is None:
        splits = load_splits(**data_args)
    from ._rows import find_row
    view = read_translation if find_row(spec.get("model", spec["name"])).needs_descriptions \
        else (lambda b: b)
    return splits, view(first_documents(splits["train"], spec.get("max_train_docs"))), \
        view(splits["dev"]), view(splits["test"])


def read_translation(bunch):
    """A split of :func:`read_original` read in its translation: ``texts`` become its
    ``description_field``, the language of its label descriptions (the record says so);
    its evidence, which indexes the original, is dropped. Any other split as it is."""
    field = bunch.get("description_field")
    if not field:
        return bunch
    from sklearn.utils import Bunch
    record = dict(bunch.get("record") or {}, language=bunch.record.get("description_language"))
    return Bunch(**{**{k: v for k, v in bunch.items() if k != field}, "texts": bunch[field],
                    "description_field": None, "evidence": None, "record": record})


def _inputs(bunch, model=None):
    """What a model reads from a split: its texts, or its feature matrix (XC format).

    A model that reads fields of a document besides its text
    (:func:`xplant._saved.model_fields`: a :class:`~xplant.linear.MentionMatcher`
    reading the text its evidence indexes, a description fusion whose
    description source reads a translation) reads records: ``{"text":
    text, <field>: that field's text, ...}``.
    """
    from .._saved import model_fields
    fields = [] if model is None or bunch.get("texts") is None else [
        f for f in model_fields(model) if bunch.get(f) is not None]
    if fields:
        return [{"text": t, **{f: bunch[f][i] for f in fields}}
                for i, t in enumerate(bunch.texts)]
    return bunch.texts if bunch.get("texts") is not None else bunch.X


def text_read(bunch, model=None):
    """Which text a model reads from a split, as the job's table names it.

    The split's language where its reader records one (CodiEsp: ``"en"``,
    the translation, ``"es"``, the original, or ``"both"``), else
    ``"text"``; an XC dataset's ``"features"``. A model that reads other
    fields besides (:func:`xplant._saved.model_fields`) adds their languages: ``"es+en"``
    for a fusion whose description source reads the English translation,
    ``"en+es"`` for one whose matcher reads the Spanish the evidence
    indexes; a mention matcher that reads only its field, that field's.

    Examples
    --------
    >>> from sklearn.utils import Bunch
    >>> text_read(Bunch(texts=["a"], record={"language": "en"}))
    'en'
    """
    if bunch.get("texts") is None:
        return "features"
    record = bunch.get("record") or {}
    own = record.get("language") or "text"
    if model is None:
        return own
    from .._saved import model_fields
    names = {bunch.get("evidence_field"): bunch.get("evidence_language"),
             bunch.get("description_field"): record.get("description_language")}
    read = [names.get(f) or f for f in model_fields(model) if bunch.get(f) is not None]
    from ..linear import MentionMatcher
    final = final_step(model)
    if isinstance(final, MentionMatcher) and read:
        return read[0]
    return "+".join(dict.fromkeys([own, *read]))


def _stack_splits(tr, dv):
    """One Bunch of the train rows then the dev rows (texts or features, labels)."""
    import scipy.sparse as sp
    from sklearn.utils import Bunch
    out = {**tr, "Y": sp.vstack([tr.Y, dv.Y]).tocsr(), "ids": list(tr.ids) + list(dv.ids)}
    from ..datasets import document_fields
    for field in document_fields(tr):       # a field dev lacks is no field of the stack
        out[field] = (list(tr[field]) + list(dv[field]) if dv.get(field) is not None else None)
    if tr.get("X") is not None:
        out["X"] = sp.vstack([tr.X, dv.X]).tocsr()
    return Bunch(**out)
