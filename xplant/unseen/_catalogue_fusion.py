"""DescriptionFusion over an open label space: the labels it knows and a whole catalogue.

With ``fit(..., catalogue=...)`` the output columns of
:class:`~xplant.unseen.DescriptionFusion` are the open label space
(:func:`xplant.datasets.open_label_space`), the seen labels keep the
closed fusion's scores, and every label without a training positive is
scored from its :class:`~xplant.unseen.CatalogueIndex` candidates:

``m(d) + weight * text + near_weight * near + family_weight * family + prior_weight * prior``

(``m(d)`` the document's lowest seen-label score). A label outside a
document's candidates is not ranked for it (a sparse score matrix: missing
means never ranked, which the metrics read as a miss).

The estimator keeps its public methods and delegates to what this module
holds, as scikit-learn's ``_hist_gradient_boosting`` has its grower and
predictor beside the estimator (no mixin):

- :func:`fit_open_space`, the catalogue's share of ``fit``: the open label
  space and its :class:`~xplant.unseen.CatalogueIndex`;
- :class:`OpenSpaceScorer`, a fitted fusion's open space at work: the
  scores of new documents, the choice of the five weights on dev, the
  unseen-code channel and the codes of a new release, from the fields of
  the fitted :class:`~xplant.unseen._fusion_parts.OpenSpace` part (the
  index, the open classes) and the sources it reads.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ._catalogue import SIGNALS, CatalogueIndex
from ._description_ranker import _texts_of

#: The weights of an open-space fusion, in the order of their dev choice's grid.
OPEN_WEIGHTS = ("weight", "seen_weight", "near_weight", "family_weight", "prior_weight")

#: The weights that score only the labels absent from training (the unseen-code channel).
UNSEEN_WEIGHTS = ("weight", "near_weight", "family_weight", "prior_weight")


def unseen_fallback(params, Y_dev, label_frequency, names, fallback):
    """The unseen labels' weights that dev cannot choose, at their fallbacks, warned about.

    Weights that score only the labels without a training document order
    nothing a dev split can judge unless some dev positive is on such a
    label (:func:`~xplant.model_selection.dev_usability` with
    ``labels="unseen"``): every candidate then has one dev score, and the
    first, 0, would win by the tie, leaving the unseen labels in column
    order. Those of ``names`` still to choose (``"dev"`` in ``params``, the
    fusion's ``get_params(deep=False)``) then take their
    fallbacks (:func:`~xplant.model_selection.choose_on_dev` without dev
    data, with a :class:`~xplant.model_selection.NoDevDataWarning` naming
    the reason); the other weights are still chosen on dev.

    Returns
    -------
    dict
        The fixed weights, ``{name: fallback value}``; empty when dev has an
        unseen positive or none of ``names`` is chosen on dev.
    """
    from ..model_selection import choose_on_dev, dev_usability
    usable = dev_usability(Y_dev, label_frequency, labels="unseen")
    todo = [k for k in names if params[k] == "dev"]
    if usable.usable or not todo or not np.any(np.asarray(label_frequency) == 0):
        return {}
    value = {k: fallback[k] for k in todo}
    return choose_on_dev("unseen_label_weights", [value], None, family="ranking",
                         criterion="map", fallback=value, has_dev=False,
                         reason=usable.reason).value


def candidate_scores(signals, weights):
    """A catalogue candidate's own score: ``weight * text + near_weight * near +
    family_weight * family + prior_weight * prior``, float64.

    The unseen labels' source of the open-space fusion (which adds the
    document's floor ``m(d)``) and the order of :meth:`DescriptionFusion.suggest_unseen`.

    Parameters
    ----------
    signals : ndarray of shape (n_candidates, 4)
        :data:`~xplant.unseen._catalogue.SIGNALS` of each candidate.
    weights : sequence of 4 float
        ``weight``, ``near_weight``, ``family_weight``, ``prior_weight``.

    Returns
    -------
    ndarray of float64 of shape (n_candidates,)
    """
    return signals @ np.asarray(weights, dtype=np.float64)


def _model_scores(model, X):
    """The model's scores of every label: its probabilities, else its decision values."""
    if hasattr(model, "predict_proba"):
        return np.asarray(model.predict_proba(X), dtype=np.float64)
    return np.asarray(model.decision_function(X), dtype=np.float64)


def _check_weight(name, value):
    """The one check of a DescriptionFusion weight: ``"dev"`` or a non-negative number
    (a bool is no number, NaN is refused)."""
    if not isinstance(value, (str, bool)) and isinstance(value, numbers.Real) and value >= 0:
        return
    if value != "dev":
        raise ValueError(f"{name} must be 'dev' or a non-negative number; got {value!r}")


def _label_texts(fields, names):
    """Per label: one text (description and synonyms), its names apart (for the encoder),
    and its first parent, from loader fields."""
    from .._descriptions import check_label_texts, label_documents
    desc, syn, parents = check_label_texts(len(names), fields.get("label_descriptions"),
                                           fields.get("label_synonyms"), fields.get("label_parents"))
    return (label_documents(desc, syn), label_documents(desc, syn, joined=False),
            [p[0] if p else "" for p in parents])


def labels_added(estimator):
    """Labels a fitted estimator gained after its fit, its last columns: the codes of new
    catalogue releases (:meth:`DescriptionFusion.add_labels`); 0 for every other model.

    A decision rule chosen before gives them its global threshold
    (:func:`xplant.metrics.check_rule`, ``n_added``).

    Parameters
    ----------
    estimator : fitted estimator
        Any fitted model; a DescriptionFusion's catalogue record counts the
        codes its releases added.

    Returns
    -------
    int
    """
    record = getattr(estimator, "catalogue_record_", None) or {}
    return int(record.get("n_added", 0))


def fit_open_space(params, texts, label_names, fields, catalogue, label_frequency, ranker):
    """The open label space of a fit: ``label_names`` then the catalogue's other codes, indexed.

    Parameters
    ----------
    params : dict
        The fusion's parameters (``get_params(deep=False)``): its
        ``near_weight``, ``family_weight`` and ``prior_weight``, checked
        here, and ``n_candidates``.
    texts : list of str
        The training documents as the description source reads them.
    label_names : sequence of str
        The names of ``Y``'s columns.
    fields : dict
        The label texts ``fit`` was given (``label_descriptions``,
        ``label_synonyms``, ``label_parents``).
    catalogue : Bunch
        :func:`xplant.datasets.load_catalogue`'s result.
    label_frequency : ndarray of int64 of shape (n_labels,)
        Training documents of each label of ``Y``.
    ranker : DescriptionRanker
        The fitted ranker, whose sentence encoder (if any) the index shares.

    Returns
    -------
    catalogue : CatalogueIndex
        The fitted index of the open space.
    open_classes : ndarray of str of shape (n_open,)
    record : dict
        The catalogue's record, the open space's size and the unseen labels' count.
    """
    from ..datasets import open_label_space
    if label_names is None:
        raise ValueError("a catalogue needs label_names: the names of Y's columns, to match "
                         "them with the catalogue's codes")
    for name in ("near_weight", "family_weight", "prior_weight"):
        _check_weight(name, params[name])
    n = params["n_candidates"]
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n_candidates must be a positive integer; got {n!r}")
    names, rows = open_label_space(label_names, catalogue)
    own_texts, own_parts, own_parents = _label_texts(fields, [str(c) for c in label_names])
    cat_texts, cat_parts, cat_parents = _label_texts(catalogue, catalogue.label_names)
    where = {str(c): i for i, c in enumerate(catalogue.label_names)}
    for j, c in enumerate(label_names):        # a known label the data left undescribed
        i = where.get(str(c))
        if i is not None and not own_texts[j]:
            own_texts[j], own_parts[j] = cat_texts[i], cat_parts[i]
            own_parents[j] = own_parents[j] or cat_parents[i]
    frequency = np.zeros(names.size, dtype=np.int64)
    frequency[:label_frequency.size] = label_frequency
    index = CatalogueIndex(
        int(n), encoder=getattr(ranker, "encoder", None),
        encoder_threshold=getattr(ranker, "encoder_threshold", 0.3)).fit(
        texts, names, own_texts + [cat_texts[i] for i in rows],
        own_parents + [cat_parents[i] for i in rows], frequency > 0,
        label_parts=own_parts + [cat_parts[i] for i in rows], label_frequency=frequency)
    record = dict(catalogue.get("record", {}), n_open_labels=int(names.size),
                  n_unseen=int(index.unseen_.size))
    return index, names, record


class OpenSpaceScorer:
    """A fitted DescriptionFusion's open label space at work: scores, dev choice, new codes.

    Parameters
    ----------
    catalogue : CatalogueIndex
        The fitted index of the open space (``catalogue_``); :meth:`add`
        grows it in place.
    open_classes : ndarray of str of shape (n_open,)
        The open space's labels (``open_classes_``).
    model : fitted estimator
        The trained model, which scores the seen labels (it reads the
        documents' text).
    ranker : DescriptionRanker
        The fitted ranker: the description cosines of the seen labels.
    description_field : str or None, default=None
        The documents' field the description source reads; None: their text.
    """

    def __init__(self, catalogue, open_classes, model, ranker, description_field=None):
        self.catalogue = catalogue
        self.open_classes = open_classes
        self.model = model
        self.ranker = ranker
        self.description_field = description_field

    def parts(self, docs):
        """What every open-space score of the checked documents ``docs`` is built from: the
        seen block, the candidates and the layout of the CSR result (which does not depend
        on the weights).

        ``slot`` places each candidate in a padded (n, C) block (C the most
        candidates of a document), the form :func:`xplant.fusion.fuse` takes.
        """
        docs = list(docs)
        base = _model_scores(self.model, _texts_of(docs))
        texts = _texts_of(docs, self.description_field)    # what the description source reads
        cos = self.ranker.decision_function(texts)
        seen = self.catalogue.seen_
        indptr, cols, sig = self.catalogue.candidates(texts, base[:, seen])
        n, n_seen = base.shape[0], seen.size
        counts = np.diff(indptr)
        out_ptr = np.arange(n + 1, dtype=np.int64) * n_seen + indptr
        # row i of the result, before sorting: its seen block, then its candidates
        rows = np.repeat(np.arange(n), n_seen + counts)
        raw_cols = np.concatenate([np.concatenate([seen, cols[indptr[i]:indptr[i + 1]]])
                                   for i in range(n)]) if n else np.zeros(0, np.int64)
        perm = np.lexsort((raw_cols, rows))
        is_seen = np.concatenate([np.r_[np.ones(n_seen, bool), np.zeros(c, bool)] for c in counts]) \
            if n else np.zeros(0, bool)
        slot = (np.repeat(np.arange(n), counts), np.arange(cols.size) - np.repeat(indptr[:-1], counts))
        return {"base": base[:, seen], "cos": cos[:, seen], "indptr": indptr, "cols": cols,
                "sig": sig, "out_ptr": out_ptr, "index": raw_cols[perm], "perm": perm,
                "is_seen": is_seen, "slot": slot, "width": int(counts.max()) if n else 0}

    def scores(self, parts, weight, seen_weight, near_weight, family_weight, prior_weight):
        """CSR (n, n_open) float64 of the fused open-space scores.

        :func:`xplant.fusion.fuse` over a document's seen block and its
        candidates side by side: the model on the seen labels (weight 1),
        the cosines on them (``seen_weight``), and each candidate's
        catalogue score (:func:`candidate_scores` of the four other weights)
        on the floor labels, the candidates.
        """
        from ..fusion import Source, fuse
        base = parts["base"]
        n, n_seen = base.shape
        unseen = np.zeros((n, parts["width"]))
        unseen[parts["slot"]] = candidate_scores(
            parts["sig"], (weight, near_weight, family_weight, prior_weight))
        seen_cols, unseen_cols = np.arange(n_seen), n_seen + np.arange(parts["width"])
        sources = [Source(base, 1.0, None, seen_cols)]
        if seen_weight:
            sources.append(Source(parts["cos"], seen_weight, None, seen_cols))
        sources.append(Source(unseen, 1.0, None, unseen_cols))
        block = fuse(sources, n_labels=n_seen + parts["width"], floor=unseen_cols)
        raw = np.empty(parts["is_seen"].size)
        raw[parts["is_seen"]] = block[:, :n_seen].ravel()
        raw[~parts["is_seen"]] = block[:, n_seen:][parts["slot"]]
        return sp.csr_matrix((raw[parts["perm"]], parts["index"], parts["out_ptr"]),
                             shape=(n, self.open_classes.size))

    def targets(self, Y):
        """``Y`` over the open label space: its columns, then zero columns to the open width
        (:meth:`DescriptionFusion.open_targets`)."""
        Y = sp.csr_matrix(Y, dtype=np.int8)
        width = self.open_classes.size
        if Y.shape[1] < width:
            Y = sp.csr_matrix((Y.data, Y.indices, Y.indptr), shape=(Y.shape[0], width))
        return Y

    def choose_weights(self, params, grids, fallbacks, label_frequency, validation_data):
        """The five weights on dev MAP in the open space, in two stages of one choice.

        First the description weights (``weight`` and ``seen_weight``, the
        hierarchy and prior weights at 0), then the hierarchy and prior
        weights with that pair fixed: 88 + 64 dev scorings where their full
        product would take 5,632 (each a MAP over the dev split's open-space
        scores). The record holds every pair scored, in that order.

        ``params`` are the fusion's parameters (``get_params(deep=False)``: a
        weight or ``"dev"``), ``grids`` and ``fallbacks`` each weight's
        candidates and its value without dev data, ``label_frequency`` the
        training documents of each label of ``Y``. Returns the weights
        chosen, the choice's record (None when no weight is ``"dev"``) and
        the dev MAP of each candidate, keyed by its :data:`OPEN_WEIGHTS`.
        """
        import dataclasses
        from sklearn.model_selection import ParameterGrid
        from ..metrics import mean_average_precision
        from ..model_selection import choose_on_dev, dev_usability
        grid = {k: list(v) if params[k] == "dev" else [float(params[k])]
                for k, v in grids.items()}
        fallback = {k: fallbacks[k] if params[k] == "dev" else grid[k][0] for k in grids}
        keys = OPEN_WEIGHTS
        if all(params[k] != "dev" for k in keys):
            return fallback, None, {}
        has_dev = validation_data is not None and dev_usability(
            validation_data[1], label_frequency).usable
        if has_dev:
            Xd, Yd = list(validation_data[0]), self.targets(validation_data[1])
            parts = self.parts(Xd)
            open_frequency = np.zeros(self.open_classes.size, dtype=np.int64)
            open_frequency[:label_frequency.size] = label_frequency
            fixed = unseen_fallback(params, Yd, open_frequency, UNSEEN_WEIGHTS, fallback)
            grid.update({k: [v] for k, v in fixed.items()})

        def dev_map(c):
            return mean_average_precision(Yd, self.scores(parts, *(c[k] for k in keys)))

        first = {k: (grid[k] if k in keys[:2] else [0.0 if params[k] == "dev" else grid[k][0]])
                 for k in keys}
        scores, value = (), fallback
        for stage in (first, None):
            if stage is None:                    # the second stage: the first's pair fixed
                stage = {k: ([value[k]] if k in keys[:2] else grid[k]) for k in keys}
            cands = sorted(ParameterGrid(stage), key=lambda c: tuple(c[k] for k in keys))
            choice = choose_on_dev("description_weights", cands, dev_map, family="ranking",
                                   criterion="map", fallback=fallback, has_dev=has_dev,
                                   warn=stage is first)
            scores, value = scores + choice.scores, choice.value
            if not has_dev:
                break
        choice = dataclasses.replace(choice, scores=scores)
        dev_maps = {tuple(float(c[k]) for k in keys): v for c, v in choice.scores}
        return choice.value, choice.to_dict(), dev_maps

    def suggest(self, docs, k, weights):
        """Each checked document's best ``k`` unseen codes with the sentence that matched
        (:meth:`DescriptionFusion.suggest_unseen`), ordered by :func:`candidate_scores` of
        ``weights`` (:data:`UNSEEN_WEIGHTS`)."""
        parts = self.parts(docs)
        texts = _texts_of(list(docs), self.description_field)
        indptr, cols, sig = parts["indptr"], parts["cols"], parts["sig"]
        out = []
        for i, text in enumerate(texts):
            a, b = indptr[i], indptr[i + 1]
            s = candidate_scores(sig[a:b], weights)
            top = np.lexsort((cols[a:b], -s))[:k]
            items = []
            for t in top:
                col = int(cols[a + t])
                items.append({"label": str(self.open_classes[col]), "score": float(s[t]),
                              **{name: float(sig[a + t, q]) for q, name in enumerate(SIGNALS)},
                              "span": self.catalogue.best_span(text, col)})
            out.append(items)
        return out

    def add(self, catalogue):
        """Index the codes of a new release that the open space lacks, after the others
        (:meth:`CatalogueIndex.add`); returns them, in their new columns' order
        (:meth:`DescriptionFusion.add_labels` updates the fusion's labels)."""
        have = set(self.open_classes.tolist())
        texts, parts, parents = _label_texts(catalogue, catalogue.label_names)
        new = [i for i, c in enumerate(catalogue.label_names) if str(c) not in have]
        names = np.asarray(catalogue.label_names, dtype=str)[new]
        self.catalogue.add(names, [texts[i] for i in new], [parents[i] for i in new],
                                 [parts[i] for i in new])
        return names
