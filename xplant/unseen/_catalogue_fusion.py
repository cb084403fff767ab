"""DescriptionFusion over an open label space: the labels it knows and a whole catalogue.

The catalogue half of :class:`~xplant.unseen.DescriptionFusion`: with
``fit(..., catalogue=...)`` its output columns are the open label space
(:func:`xplant.datasets.open_label_space`), the seen labels keep the
closed fusion's scores, and every label without a training positive is
scored from its :class:`~xplant.unseen.CatalogueIndex` candidates:

``m(d) + weight * text + near_weight * near + family_weight * family + prior_weight * prior``

(``m(d)`` the document's lowest seen-label score). A label outside a
document's candidates is not ranked for it (a sparse score matrix: missing
means never ranked, which the metrics read as a miss).
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ._catalogue import SIGNALS, CatalogueIndex

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


class CatalogueFusionMixin:
    """The open-label-space methods of DescriptionFusion (see the module docstring)."""

    def _fit_catalogue(self, texts, label_names, fields, catalogue):
        from ..datasets import open_label_space
        if label_names is None:
            raise ValueError("a catalogue needs label_names: the names of Y's columns, to match "
                             "them with the catalogue's codes")
        for name in ("near_weight", "family_weight", "prior_weight"):
            _check_weight(name, getattr(self, name))
        n = self.n_candidates
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
        frequency[:self.n_labels_] = self.label_frequency_
        ranker = self.ranker_
        self.catalogue_ = CatalogueIndex(
            int(n), encoder=getattr(ranker, "encoder", None),
            encoder_threshold=getattr(ranker, "encoder_threshold", 0.3)).fit(
            texts, names, own_texts + [cat_texts[i] for i in rows],
            own_parents + [cat_parents[i] for i in rows], frequency > 0,
            label_parts=own_parts + [cat_parts[i] for i in rows], label_frequency=frequency)
        self.open_classes_ = names
        self.catalogue_record_ = dict(catalogue.get("record", {}), n_open_labels=int(names.size),
                                      n_unseen=int(self.catalogue_.unseen_.size))

    def _open_parts(self, X):
        """What every open-space score is built from: the seen block, the candidates and
        the layout of the CSR result (which does not depend on the weights).

        ``slot`` places each candidate in a padded (n, C) block (C the most
        candidates of a document), the form :func:`xplant.fusion.fuse` takes.
        """
        base = self._base_scores(X)
        texts = self._description_texts(list(X))     # what the description source reads
        cos = self.ranker_.decision_function(texts)
        seen = self.catalogue_.seen_
        indptr, cols, sig = self.catalogue_.candidates(texts, base[:, seen])
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

    def _open_scores(self, parts, weight, seen_weight, near_weight, family_weight, prior_weight):
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
                             shape=(n, self.open_classes_.size))

    def _choose_open_weights(self, validation_data):
        """The five weights on dev MAP in the open space, in two stages of one choice.

        First the description weights (``weight`` and ``seen_weight``, the
        hierarchy and prior weights at 0), then the hierarchy and prior
        weights with that pair fixed: 88 + 64 dev scorings where their full
        product would take 5,632 (each a MAP over the dev split's open-space
        scores). The record holds every pair scored, in that order.
        """
        import dataclasses
        from sklearn.model_selection import ParameterGrid
        from ..metrics import mean_average_precision
        from ..model_selection import choose_on_dev, dev_usability
        grids, fallbacks = self._weight_grids()
        grid = {k: list(v) if getattr(self, k) == "dev" else [float(getattr(self, k))]
                for k, v in grids.items()}
        fallback = {k: fallbacks[k] if getattr(self, k) == "dev" else grid[k][0] for k in grids}
        keys = OPEN_WEIGHTS
        if all(getattr(self, k) != "dev" for k in keys):
            self.dev_map_ = {}
            return fallback, None
        has_dev = validation_data is not None and dev_usability(
            validation_data[1], self.label_frequency_).usable
        if has_dev:
            Xd, Yd = list(validation_data[0]), self.open_targets(validation_data[1])
            parts = self._open_parts(Xd)
            open_frequency = np.zeros(self.open_classes_.size, dtype=np.int64)
            open_frequency[:self.label_frequency_.size] = self.label_frequency_
            fixed = unseen_fallback(self.get_params(deep=False), Yd, open_frequency,
                                    UNSEEN_WEIGHTS, fallback)
            grid.update({k: [v] for k, v in fixed.items()})

        def dev_map(c):
            return mean_average_precision(Yd, self._open_scores(parts, *(c[k] for k in keys)))

        first = {k: (grid[k] if k in keys[:2] else [0.0 if getattr(self, k) == "dev" else grid[k][0]])
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
        self.dev_map_ = {tuple(float(c[k]) for k in keys): v for c, v in choice.scores}
        return choice.value, choice.to_dict()

    def predict_top_k(self, X, k):
        """Top-``k`` labels of each document (with a catalogue: over the open label space).

        Parameters
        ----------
        X : sequence of str of length n_samples
            Raw documents.
        k : int
            Labels per document, clipped to ``n_labels_``.

        Returns
        -------
        indices : ndarray of shape (n_samples, k), dtype int64
            Label columns by decreasing score (ties: the lower column); with a
            catalogue a document ranks only its stored labels, and a row
            with fewer than ``k`` of them is padded with -1.
        scores : ndarray of shape (n_samples, k), dtype float64
            The matching scores (``-inf`` where padded).
        """
        if getattr(self, "catalogue_", None) is None:
            return super().predict_top_k(X, k)
        from ..metrics._validation import check_k
        k = min(check_k(k), self.n_labels_)
        S = self.decision_function(X).tocsr()
        idx = np.full((S.shape[0], k), -1, dtype=np.int64)
        val = np.full((S.shape[0], k), -np.inf)
        for i in range(S.shape[0]):
            a, b = S.indptr[i], S.indptr[i + 1]
            order = np.lexsort((S.indices[a:b], -S.data[a:b]))[:k]
            idx[i, :order.size], val[i, :order.size] = S.indices[a:b][order], S.data[a:b][order]
        return idx, val

    def open_targets(self, Y):
        """``Y`` over the open label space: its columns, then zero columns to the open width.

        Parameters
        ----------
        Y : {array-like, sparse matrix} of shape (n, n_labels) or (n, n_open [+ n_outside])
            Labels over the fitted ``classes_`` (padded), or already over
            the open space (columns after it are labels outside it, kept).

        Returns
        -------
        csr_matrix of shape (n, max(n_open, Y's width)), int8
        """
        Y = sp.csr_matrix(Y, dtype=np.int8)
        width = self.open_classes_.size
        if Y.shape[1] < width:
            Y = sp.csr_matrix((Y.data, Y.indices, Y.indptr), shape=(Y.shape[0], width))
        return Y

    def add_labels(self, catalogue):
        """Add the codes of a new catalogue release, with no refitting.

        Each code not yet in the open label space joins it after the
        others, indexed from its name, synonyms and parent
        (:meth:`CatalogueIndex.add`); it has no training positive, so it is
        scored as every unseen label is, with the weights chosen at fit.
        Codes already in the space keep their column and their texts. A
        decision rule chosen before keeps working: under
        ``per_label_threshold`` each added code takes the rule's global
        threshold (:func:`xplant.metrics.check_rule`, ``n_added``), in the
        fusion's own ``decision_rule_`` and in :func:`xplant._saved.decide`
        for a rule held apart from it.

        Parameters
        ----------
        catalogue : Bunch
            :func:`xplant.datasets.load_catalogue` of the release (or any
            Bunch with ``label_names``, ``label_descriptions`` and optionally
            ``label_synonyms`` and ``label_parents``).

        Returns
        -------
        added : ndarray of str
            The new codes, in their new columns' order.

        Raises
        ------
        ValueError
            If the model was fitted without a catalogue.
        """
        if getattr(self, "catalogue_", None) is None:
            raise ValueError("add_labels needs a model fitted with a catalogue "
                             "(fit(..., catalogue=load_catalogue(...)))")
        have = set(self.open_classes_.tolist())
        texts, parts, parents = _label_texts(catalogue, catalogue.label_names)
        new = [i for i, c in enumerate(catalogue.label_names) if str(c) not in have]
        names = np.asarray(catalogue.label_names, dtype=str)[new]
        self.catalogue_.add(names, [texts[i] for i in new], [parents[i] for i in new],
                            [parts[i] for i in new])
        self.open_classes_ = self.classes_ = self.catalogue_.label_names_
        self.n_labels_ = int(self.classes_.size)
        self.label_frequency_ = np.concatenate([self.label_frequency_,
                                                np.zeros(len(new), dtype=np.int64)])
        self.unseen_ = self.catalogue_.unseen_
        self.catalogue_record_ = dict(self.catalogue_record_, n_open_labels=int(self.open_classes_.size),
                                      n_unseen=int(self.catalogue_.unseen_.size),
                                      n_added=int(self.catalogue_record_.get("n_added", 0) + len(new)))
        rule = self.parts_.get("decision_rule")
        if rule is not None:          # a per-label rule gives the new codes its global threshold
            from ..metrics import DecisionRule
            self.decision_rule_ = DecisionRule.from_dict(rule.to_dict(), self.n_labels_,
                                                         n_added=len(new))
        return names

    def suggest_unseen(self, X, k=5):
        """Each document's best codes among those absent from training, with the sentence that matched.

        The unseen-code channel, apart from the main ranking: the
        candidates of :class:`CatalogueIndex`, ordered by
        ``weight * text + near_weight * near + family_weight * family +
        prior_weight * prior`` with the weights chosen at fit (the floor
        ``m(d)`` orders nothing among them): the main ranking's order of the
        unseen labels, without the labels seen in training above them.

        Parameters
        ----------
        X : sequence of str or of dict of length n
            Raw documents (records where ``description_field`` names a
            field of them).
        k : int, default=5
            Codes per document.

        Returns
        -------
        list of list of dict
            Per document, ``{"label", "score", "text", "near", "family",
            "prior", "span": {"start", "end", "text", "weight"}}``
            (``weight`` the sentence's score against the code's names:
            :meth:`CatalogueIndex.best_span`; the offsets index what the
            description source reads, ``description_field`` or the text),
            best first.

        Raises
        ------
        ValueError
            Without a catalogue, or for a ``k`` that is not a positive integer.
        """
        from ..metrics._validation import check_k
        if getattr(self, "catalogue_", None) is None:
            raise ValueError("suggest_unseen needs a model fitted with a catalogue")
        k = check_k(k)
        docs = self._validate_X(X)
        parts = self._open_parts(docs)
        texts = self._description_texts(docs)
        indptr, cols, sig = parts["indptr"], parts["cols"], parts["sig"]
        w = (self.weight_, self.near_weight_, self.family_weight_, self.prior_weight_)
        out = []
        for i, text in enumerate(texts):
            a, b = indptr[i], indptr[i + 1]
            s = candidate_scores(sig[a:b], w)
            top = np.lexsort((cols[a:b], -s))[:k]
            items = []
            for t in top:
                col = int(cols[a + t])
                items.append({"label": str(self.open_classes_[col]), "score": float(s[t]),
                              **{name: float(sig[a + t, q]) for q, name in enumerate(SIGNALS)},
                              "span": self.catalogue_.best_span(text, col)})
            out.append(items)
        return out
