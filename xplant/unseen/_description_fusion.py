"""DescriptionFusion: a trained model for the labels it has seen, descriptions for the rest.

The estimator holds every public method; with a catalogue they delegate to
the open label space's collaborators in :mod:`xplant.unseen._catalogue_fusion`
(:func:`~xplant.unseen._catalogue_fusion.fit_open_space` in ``fit``,
:class:`~xplant.unseen._catalogue_fusion.OpenSpaceScorer` after it).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from .._fitted_parts import PartField, part_fields
from .._params import final_step, fit_accepts
from ..fusion import Source, fuse
from ..linear._base import MultiLabelRankerMixin
from ._catalogue_fusion import (OPEN_WEIGHTS, OpenSpaceScorer, _check_weight, _model_scores,
                                fit_open_space, unseen_fallback)
from ._description_ranker import DescriptionRanker, _check_texts, _texts_of, _TextScorer
from ._fusion_parts import FusionChoices, FusionSources, FusionWeights, OpenSpace

#: Weights of the description score tried on dev by ``DescriptionFusion(weight="dev")``.
FUSION_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
#: The weight ``weight="dev"`` takes without labelled dev data (with a
#: ``NoDevDataWarning``): the description cosine added to the floor as it is.
FALLBACK_WEIGHT = 1.0
#: Weights of the description score added to the seen labels' scores, tried on dev by
#: ``DescriptionFusion(seen_weight="dev")`` together with :data:`FUSION_WEIGHTS` (their product).
SEEN_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5)
#: The seen-label weight ``seen_weight="dev"`` takes without labelled dev data:
#: the seen labels keep the model's scores.
FALLBACK_SEEN_WEIGHT = 0.0
#: Weights of the mention matcher's scores added to the known labels' fused scores, tried on
#: dev by ``DescriptionFusion(mentions=..., mention_weight="dev")`` once the other weights
#: are chosen.
MENTION_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0)
#: The mention weight ``mention_weight="dev"`` takes without labelled dev data: the
#: matcher's reliabilities added as they are.
FALLBACK_MENTION_WEIGHT = 1.0
#: With a catalogue: weights of the ``near`` signal (the model's best score among an
#: unseen label's parent, siblings and children) tried by ``near_weight="dev"``.
NEAR_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
#: With a catalogue: weights of the ``family`` signal (the model's best score in an
#: unseen label's family, the ICD-10 category) tried by ``family_weight="dev"``.
FAMILY_WEIGHTS = (0.0, 0.1, 0.25, 0.5)
#: With a catalogue: weights of the ``prior`` signal (the log-ratio of the label's form,
#: :func:`~xplant.unseen.label_form_prior`, in nats) tried by ``prior_weight="dev"``.
PRIOR_WEIGHTS = (0.0, 0.01, 0.02, 0.04)


class DescriptionFusion(_TextScorer, MultiLabelRankerMixin, ClassifierMixin, BaseEstimator):
    """A trained model for the labels it has seen, label descriptions for the rest.

    A model trained on ``Y`` cannot rank a label with no training positive.
    This meta-estimator fits it together with a :class:`DescriptionRanker`
    and scores every label with no training positive by
    ``m + weight * cosine(document, description)``, where ``m`` is the
    document's lowest score among the seen labels; a seen label scores the
    model's score (``predict_proba``, else ``decision_function``, so margins
    work too) plus ``seen_weight * cosine``. The two weights put the scales
    side by side and are chosen together on dev MAP; with ``weight=0`` the
    unseen labels rank last, with ``seen_weight=0`` the seen labels keep
    the model's order. The formula is a member of :func:`xplant.fusion.fuse`
    with three sources: the model on the seen labels (weight 1), the
    cosines on the seen labels (``seen_weight``) and on the unseen ones
    (``weight``), the unseen labels being the floor labels.

    The fused scores rank the labels but are no probabilities (an unseen
    label's reaches 1 + ``weight``), so the estimator offers
    :meth:`decision_function` and no ``predict_proba`` (:doc:`/guide/metrics`,
    "Scores"). Its constructor follows scikit-learn's meta-estimators
    (``VotingClassifier``, ``StackingClassifier``): the unfitted
    ``estimator`` is stored, and its fitted clone is ``estimator_``.

    Parameters
    ----------
    estimator : estimator or Pipeline
        The trained model (for example ``make_tfidf_logistic()`` or a
        ``MIGRelevance`` → ``PlantClassifier`` Pipeline); cloned in ``fit``.
        When its ``fit`` (a Pipeline's last step's) takes
        ``label_descriptions`` and the other description parameters, they
        are passed on (PLANT plants the unseen labels' attention from them).
    ranker : DescriptionRanker or None, default=None
        Cloned in ``fit``; None means ``DescriptionRanker()``.
    weight : float or "dev", default="dev"
        Scale of the description scores; ``"dev"`` picks the best of
        :data:`FUSION_WEIGHTS` on ``validation_data`` by MAP (ties: the
        smaller weight), a ranking choice of
        :func:`~xplant.model_selection.choose_on_dev`; without labelled dev
        data, or with no dev positive on a label absent from training (the
        weights of the unseen labels would all tie),
        :data:`FALLBACK_WEIGHT`, with a ``NoDevDataWarning``; the hierarchy
        and prior weights then take 0.
    seen_weight : float or "dev", default="dev"
        Scale of the description scores added to the seen labels' scores;
        ``"dev"`` picks it from :data:`SEEN_WEIGHTS` together with
        ``weight`` (every pair of the two grids when both are ``"dev"``) by
        dev MAP, in the same choice (ties: the earlier pair, smaller weights
        first); without labelled dev data :data:`FALLBACK_SEEN_WEIGHT`.
    near_weight : float or "dev", default="dev"
        With a catalogue only: the weight of the ``near`` signal of an
        unseen label (the model's best score among its seen parent,
        siblings and children; :class:`CatalogueIndex`); ``"dev"`` picks
        it from :data:`NEAR_WEIGHTS` in the same choice as the others;
        without labelled dev data 0.
    family_weight : float or "dev", default="dev"
        With a catalogue only: the weight of the ``family`` signal (the
        model's best score in the label's 3-character category), from
        :data:`FAMILY_WEIGHTS`; without labelled dev data 0.
    prior_weight : float or "dev", default="dev"
        With a catalogue only: the weight of the ``prior`` signal (how much
        more often labels of the unseen label's form are used than listed,
        :func:`~xplant.unseen.label_form_prior`), from
        :data:`PRIOR_WEIGHTS`; without labelled dev data 0.
    n_candidates : int, default=100
        With a catalogue only: unseen labels kept per document and signal.
    mentions : MentionMatcher or None, default=None
        A :class:`~xplant.linear.MentionMatcher`, cloned and fitted on the
        training documents and ``fit``'s ``evidence``: its scores, times
        ``mention_weight``, are added to the known labels' fused scores (a
        last source of the fusion). None: no mention source.
    mention_weight : float or "dev", default="dev"
        The matcher's weight; ``"dev"`` picks it from
        :data:`MENTION_WEIGHTS` by dev MAP once the other weights are chosen
        (ties: the smaller weight); without labelled dev data
        :data:`FALLBACK_MENTION_WEIGHT`, with a ``NoDevDataWarning``.
    description_field : str or None, default=None
        The field of each document that the description source (the
        ranker, and with a catalogue its index of unseen codes) reads, when
        the label descriptions are in another language than the text the
        model reads: the documents are then mappings ``{"text": text,
        description_field: that text in the descriptions' language}`` (for
        CodiEsp, the Spanish original and its English translation beside
        the English ICD-10 names). None: every source reads the text.

    Attributes
    ----------
    estimator_ : fitted estimator
    ranker_ : DescriptionRanker
    weight_ : float
        The unseen labels' weight used.
    seen_weight_ : float
        The seen labels' weight used.
    unseen_ : ndarray of int64
        Labels with no training positive, scored by the descriptions.
    dev_map_ : dict of tuple (float, float) to float
        Dev MAP of each ``(weight, seen_weight)`` pair tried (empty when
        neither is ``"dev"``).
    catalogue_ : CatalogueIndex or None
        With a catalogue: the unseen labels of the open space, indexed.
    known_classes_ : ndarray of str
        With a catalogue: the labels of ``Y``, the first columns of ``classes_``.
    near_weight_, family_weight_, prior_weight_ : float
        The hierarchy and prior weights used (0 without a catalogue).
    catalogue_record_ : dict
        With a catalogue: its record, the open space's size and the unseen labels' count.
    dev_choice_ : dict
        With a ``"dev"`` weight: the choice's record
        (:class:`~xplant.model_selection.DevChoice`, named
        ``"description_weights"``, its value ``{"weight", "seen_weight"}``).
    mentions_ : MentionMatcher or None
        The fitted matcher (None without ``mentions``).
    mention_weight_ : float
        Its weight (0 without ``mentions``).
    mention_choice_ : dict or None
        With ``mention_weight="dev"``: the choice's record
        (:class:`~xplant.model_selection.DevChoice`, named ``"mention_weight"``).
    parts_ : dict of str to object
        The fitted parts, which the attributes above read and saving walks:
        ``"label_space"`` (:class:`xplant._label_space.LabelSpace`),
        ``"sources"``, ``"weights"``, ``"open_space"`` and ``"dev_choices"``
        (:mod:`xplant.unseen._fusion_parts`), and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict(X)`` (``parts_["decision_rule"]``,
        :class:`xplant.metrics.DecisionRule`): top-``k_``
        until one is set; ``xplant run`` sets the rule it chose on dev, and
        a saved model keeps it.
    classes_, n_labels_, label_frequency_, n_train_documents_, k_

    Notes
    -----
    A document's seen labels keep their order; unseen ones are interleaved
    by ``weight * cosine``. The weight is chosen on the dev split's own
    unseen labels (labels absent from training that occur in dev), never on
    test.

    Examples
    --------
    >>> import numpy as np
    >>> from xplant.linear import FrequencyPrior
    >>> texts = ["chest pain and fever", "broken left arm", "fever and cough"]
    >>> Y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    >>> f = DescriptionFusion(FrequencyPrior(), weight=1.0).fit(
    ...     texts, Y, label_descriptions=["fever", "fracture of arm", "cough"])
    >>> f.unseen_.tolist(), f.predict_top_k(["a dry cough"], 2)[0].tolist()
    ([2], [[2, 0]])
    """

    # the fitted attributes: views of the fitted parts (_fusion_parts.py); None is a value of
    # mentions_, catalogue_ and mention_choice_ (none fitted), else "not fitted yet"
    estimator_, ranker_ = part_fields("sources", FusionSources, "model", "ranker")
    (weight_, seen_weight_, mention_weight_, near_weight_, family_weight_, prior_weight_,
     k_) = part_fields("weights", FusionWeights, *FusionWeights.FIELDS)
    unseen_, known_classes_, open_classes_, catalogue_record_ = part_fields(
        "open_space", OpenSpace, "unseen", "known_classes", "open_classes", "record")
    dev_map_, dev_choice_ = part_fields("dev_choices", FusionChoices, "dev_map", "weights")
    mentions_, catalogue_, mention_choice_ = (
        PartField("sources", "mentions", factory=FusionSources),
        PartField("open_space", "catalogue", factory=OpenSpace),
        PartField("dev_choices", "mentions", factory=FusionChoices))

    def __init__(self, estimator, ranker=None, weight="dev", seen_weight="dev", near_weight="dev",
                 family_weight="dev", prior_weight="dev", n_candidates=100, mentions=None,
                 mention_weight="dev", description_field=None):
        self.estimator = estimator
        self.ranker = ranker
        self.weight = weight
        self.seen_weight = seen_weight
        self.near_weight = near_weight
        self.family_weight = family_weight
        self.prior_weight = prior_weight
        self.n_candidates = n_candidates
        self.mentions = mentions
        self.mention_weight = mention_weight
        self.description_field = description_field

    def fit(self, X, Y, *, label_descriptions=None, label_synonyms=None, label_parents=None,
            parent_descriptions=None, label_names=None, validation_data=None, catalogue=None,
            evidence=None, **fit_params):
        """Fit the model and the ranker; choose the weight on dev.

        Parameters
        ----------
        X, label_descriptions, label_synonyms, label_parents, parent_descriptions
            As :meth:`DescriptionRanker.fit`; ``label_descriptions`` is required.
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels)
            0/1 training labels, for the model and the label space.
        label_names : sequence of str, optional
            Names of ``Y``'s columns, stored as ``classes_``.
        validation_data : tuple (X_dev, Y_dev), optional
            Needed for ``weight="dev"``; also passed to the model when its
            ``fit`` takes it. With a ``catalogue``, ``Y_dev`` may have the
            open space's width (the labels, then the catalogue's others) or
            ``Y``'s.
        catalogue : Bunch, optional
            A label catalogue (:func:`xplant.datasets.load_catalogue`): the
            open label space is ``label_names`` then the catalogue's other
            codes (:func:`xplant.datasets.open_label_space`), and every label
            without a training positive, of either part, is scored by its
            text and its seen relatives (:class:`CatalogueIndex`). Needs
            ``label_names``.
        evidence : sequence of length n_samples, optional
            The training documents' gold evidence, for ``mentions``
            (:meth:`~xplant.linear.MentionMatcher.fit`); required with it.
        **fit_params
            Passed to the model's ``fit`` as they are (for a Pipeline,
            ``<step>__<param>``).

        Returns
        -------
        self : DescriptionFusion

        Raises
        ------
        ValueError
            A negative weight, ``mentions`` without ``evidence``; and the
            ranker's and the matcher's errors.

        Warns
        -----
        NoDevDataWarning
            ``weight="dev"`` without labelled ``validation_data``, or with
            no dev positive on a label absent from training: the weight is
            :data:`FALLBACK_WEIGHT` (and the catalogue's other unseen-label
            weights 0).
        """
        docs = self._validate_X(X, records=self.mentions is not None)
        texts = _texts_of(docs)
        if self.mentions is not None and evidence is None:
            raise ValueError("mentions needs the training documents' evidence: fit(X, Y, "
                             "evidence=...), one list of {'label', 'spans'} per document")
        self._fit_label_space(Y, len(texts), label_names)
        dev_docs = None
        if validation_data is not None:      # the model and the weights read the dev texts
            dev_docs = self._validate_X(validation_data[0], "X_dev",
                                        records=self.mentions is not None)
            validation_data = (dev_docs, validation_data[1])
        self.mentions_, self.mention_weight_, self.mention_choice_ = None, 0.0, None
        for name in ("weight", "seen_weight", "mention_weight"):
            _check_weight(name, getattr(self, name))
        desc = dict(label_descriptions=label_descriptions, label_synonyms=label_synonyms,
                    label_parents=label_parents, parent_descriptions=parent_descriptions)
        self.ranker_ = clone(self.ranker) if self.ranker is not None else DescriptionRanker()
        described = self._description_texts(docs)     # what the description source reads
        self.ranker_.fit(described, Y, label_names=label_names, **desc)
        self.estimator_ = clone(self.estimator)
        params = dict(fit_params)
        prefix = final_step(self.estimator_, with_prefix=True)[1]
        model_dev = None if dev_docs is None else (_texts_of(dev_docs), validation_data[1])
        for name, value in list(desc.items()) + [("validation_data", model_dev),
                                                 ("label_names", label_names)]:
            if value is not None and fit_accepts(self.estimator_, name):
                params[prefix + name] = value
        self.estimator_.fit(texts, Y, **params)
        self.k_ = max(1, int(round(int(self.label_frequency_.sum()) / max(1, self.n_train_documents_))))
        self.catalogue_ = None
        self.near_weight_ = self.family_weight_ = self.prior_weight_ = 0.0
        if catalogue is not None:
            params = self.get_params(deep=False)
            self.catalogue_, self.open_classes_, self.catalogue_record_ = fit_open_space(
                params, described, label_names, desc, catalogue, self.label_frequency_,
                self.ranker_)
            value, record, self.dev_map_ = self._open_scorer().choose_weights(
                params, *self._weight_grids(), self.label_frequency_, validation_data)
            (self.weight_, self.seen_weight_, self.near_weight_, self.family_weight_,
             self.prior_weight_) = (float(value[k]) for k in OPEN_WEIGHTS)
            if record is not None:
                self.dev_choice_ = record
            # the estimator's columns are the open space from here on
            self.known_classes_ = self.classes_
            self.classes_ = self.open_classes_
            self.n_labels_ = int(self.classes_.size)
            freq = np.zeros(self.n_labels_, dtype=np.int64)
            freq[:self.known_classes_.size] = self.label_frequency_
            self.label_frequency_ = freq
            self.unseen_ = self.catalogue_.unseen_
            return self._fit_mentions(docs, Y, evidence, label_names, validation_data, dev_docs)
        self.unseen_ = np.flatnonzero(self.label_frequency_ == 0).astype(np.int64)
        self.dev_map_ = {}
        grid = {"weight": list(FUSION_WEIGHTS) if self.weight == "dev" else [float(self.weight)],
                "seen_weight": (list(SEEN_WEIGHTS) if self.seen_weight == "dev"
                                else [float(self.seen_weight)])}
        if "dev" in (self.weight, self.seen_weight):
            from sklearn.model_selection import ParameterGrid
            from ..metrics import mean_average_precision
            from ..model_selection import choose_on_dev, dev_usability
            has_dev = validation_data is not None and dev_usability(
                validation_data[1], self.label_frequency_).usable
            fallback = {"weight": FALLBACK_WEIGHT if self.weight == "dev" else grid["weight"][0],
                        "seen_weight": (FALLBACK_SEEN_WEIGHT if self.seen_weight == "dev"
                                        else grid["seen_weight"][0])}
            if has_dev:
                Xd, Yd = validation_data
                base = self._base_scores(Xd)
                cos = self.ranker_.decision_function(self._description_texts(Xd))
                # no dev positive on an unseen label: its weight takes the fallback
                grid.update({k: [v] for k, v in unseen_fallback(
                    self.get_params(deep=False), Yd, self.label_frequency_, ("weight",),
                    fallback).items()})
            # smaller weights first, so that ties keep the smaller pair
            pairs = sorted(ParameterGrid(grid), key=lambda c: (c["weight"], c["seen_weight"]))
            choice = choose_on_dev(
                "description_weights", pairs,
                lambda c: mean_average_precision(Yd, self._fuse(base, cos, c["weight"],
                                                                c["seen_weight"])),
                family="ranking", criterion="map", fallback=fallback, has_dev=has_dev)
            self.dev_map_ = {(float(c["weight"]), float(c["seen_weight"])): v
                             for c, v in choice.scores}
            self.dev_choice_ = choice.to_dict()
            self.weight_ = float(choice.value["weight"])
            self.seen_weight_ = float(choice.value["seen_weight"])
        else:
            self.weight_, self.seen_weight_ = float(self.weight), float(self.seen_weight)
        return self._fit_mentions(docs, Y, evidence, label_names, validation_data, dev_docs)

    def _fit_mentions(self, docs, Y, evidence, label_names, validation_data, dev_docs):
        """The mention source, last: the matcher fitted, its weight chosen on dev MAP with
        every other weight fixed."""
        if self.mentions is None:
            return self
        from ..metrics import mean_average_precision
        from ..model_selection import choose_on_dev, dev_usability
        matcher = clone(self.mentions).fit(docs, Y, evidence=evidence, label_names=label_names)
        has_dev = validation_data is not None and dev_usability(
            validation_data[1], self.label_frequency_).usable
        if self.mention_weight != "dev":
            self.mentions_, self.mention_weight_ = matcher, float(self.mention_weight)
            return self
        if has_dev:
            base = self._scores(dev_docs)          # the fusion so far (no mention source yet)
            extra = matcher.decision_function(dev_docs)
            Yd = (self.open_targets(validation_data[1]) if self.catalogue_ is not None
                  else validation_data[1])
        choice = choose_on_dev(
            "mention_weight", list(MENTION_WEIGHTS),
            lambda w: mean_average_precision(Yd, _add_known(base, extra, w)),
            family="ranking", criterion="map", fallback=FALLBACK_MENTION_WEIGHT, has_dev=has_dev)
        self.mentions_, self.mention_weight_ = matcher, float(choice.value)
        self.mention_choice_ = choice.to_dict()
        return self

    def without_mentions(self):
        """This fitted fusion without its mention source: the same weights, ``mentions_`` None.

        The fusion as it ranked before the matcher's weight was chosen (what
        ``mentions=None`` with these weights gives), for comparing the two or
        saving the one that needs no evidence field.

        Returns
        -------
        DescriptionFusion
            A shallow copy sharing the fitted parts.
        """
        import copy
        out = copy.copy(self)
        out.mentions, out.mentions_, out.mention_weight_ = None, None, 0.0
        out.mention_weight, out.mention_choice_ = 0.0, None
        return out

    def _fuse(self, base, cos, weight, seen_weight=0.0):
        """:func:`xplant.fusion.fuse` of the model's scores on the seen labels (plus the
        cosines weighted by ``seen_weight``) and the weighted cosines on the unseen
        ones, which start from each document's floor."""
        seen = np.setdiff1d(np.arange(self.n_labels_), self.unseen_)
        base, cos = np.asarray(base, dtype=np.float64), np.asarray(cos, dtype=np.float64)
        sources = [Source(base[:, seen], 1.0, None, seen)]
        if seen_weight:
            sources.append(Source(cos[:, seen], seen_weight, None, seen))
        if self.unseen_.size:
            sources.append(Source(cos[:, self.unseen_], weight, None, self.unseen_))
        return fuse(sources, n_labels=self.n_labels_, floor=self.unseen_)

    def _validate_X(self, X, name="X", *, records=True):
        """The documents, checked: strings, or records (``records``; always where
        ``description_field`` names a field of them, which each must hold)."""
        fields = ((self.description_field, "description_field (the description source)"),) \
            if self.description_field is not None else ()
        return _check_texts(X, name, records=records or bool(fields), fields=fields)

    def _description_texts(self, docs):
        """What the description source reads of the checked documents ``docs``: their
        ``description_field``, else their text."""
        return _texts_of(docs, self.description_field)

    def _base_scores(self, X):
        """The model's scores of the checked documents ``X`` (it reads their text)."""
        return _model_scores(self.estimator_, _texts_of(list(X)))

    @staticmethod
    def _weight_grids():
        """The grids of the five weights, and the values taken without dev data."""
        return ({"weight": FUSION_WEIGHTS, "seen_weight": SEEN_WEIGHTS,
                 "near_weight": NEAR_WEIGHTS, "family_weight": FAMILY_WEIGHTS,
                 "prior_weight": PRIOR_WEIGHTS},
                {"weight": FALLBACK_WEIGHT, "seen_weight": FALLBACK_SEEN_WEIGHT,
                 "near_weight": 0.0, "family_weight": 0.0, "prior_weight": 0.0})

    def _open_scorer(self):
        """The fitted open space and the sources it reads, as an :class:`OpenSpaceScorer`."""
        return OpenSpaceScorer(self.catalogue_, self.open_classes_, self.estimator_,
                               self.ranker_, self.description_field)

    def _scores(self, X):
        docs = list(X)
        if getattr(self, "catalogue_", None) is not None:
            scorer = self._open_scorer()
            S = scorer.scores(scorer.parts(docs), self.weight_, self.seen_weight_,
                              self.near_weight_, self.family_weight_, self.prior_weight_)
        else:
            S = self._fuse(self._base_scores(docs),
                           self.ranker_.decision_function(self._description_texts(docs)),
                           self.weight_, self.seen_weight_)
        return self.add_mentions(S, docs)

    def add_mentions(self, scores, X):
        """Scores of this fusion without its mention source, with it added: the last term.

        ``decision_function(X)`` is ``add_mentions(without_mentions().decision_function(X),
        X)``, to the bit; a caller that needs both readings scores the
        catalogue once.

        Parameters
        ----------
        scores : ndarray or csr_matrix of shape (n_samples, n_labels)
            :meth:`without_mentions`' scores of ``X``.
        X : sequence of str or of dict
            The same documents (records, where the matcher reads a field of
            its own).

        Returns
        -------
        ndarray or csr_matrix of shape (n_samples, n_labels)
            ``scores`` plus ``mention_weight_`` times the matcher's scores on
            the known labels; ``scores`` itself without a mention source.
        """
        if getattr(self, "mentions_", None) is None or not self.mention_weight_:
            return scores
        return _add_known(scores, self.mentions_.decision_function(list(X)), self.mention_weight_)

    def decision_function(self, X):
        """Fused scores: the model's plus ``seen_weight_ * cosine`` for seen labels,
        ``m + weight_ * cosine`` for unseen ones.

        The ranking score (:meth:`predict_top_k` ranks by it); not a
        probability. ``m`` is the document's lowest seen-label score.

        Parameters
        ----------
        X : sequence of str of length n_samples
            Raw documents.

        Returns
        -------
        scores : ndarray or csr_matrix of shape (n_samples, n_labels), dtype float64
            Dense without a catalogue. With one, a CSR matrix over the open
            label space: every seen label, and each document's candidates
            among the unseen ones (a label not stored is never ranked).
        """
        return self._text_scores(X)

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
        return self._open_scorer().targets(Y)

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
        names = self._open_scorer().add(catalogue)
        self.open_classes_ = self.classes_ = self.catalogue_.label_names_
        self.n_labels_ = int(self.classes_.size)
        self.label_frequency_ = np.concatenate([self.label_frequency_,
                                                np.zeros(names.size, dtype=np.int64)])
        self.unseen_ = self.catalogue_.unseen_
        record = self.catalogue_record_
        self.catalogue_record_ = dict(record, n_open_labels=int(self.open_classes_.size),
                                      n_unseen=int(self.catalogue_.unseen_.size),
                                      n_added=int(record.get("n_added", 0) + names.size))
        rule = self.parts_.get("decision_rule")
        if rule is not None:          # a per-label rule gives the new codes its global threshold
            from ..metrics import DecisionRule
            self.decision_rule_ = DecisionRule.from_dict(rule.to_dict(), self.n_labels_,
                                                         n_added=names.size)
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
        return self._open_scorer().suggest(self._validate_X(X), k, (
            self.weight_, self.near_weight_, self.family_weight_, self.prior_weight_))

    def explain(self, X, top_labels=5, top_spans=3, *, labels=None):
        """The top labels of each document with the text spans behind their scores.

        A seen label's evidence is the model's own (its ``explain``: for
        PLANT, the spans its label attention points at); a label with no
        training positive, which the descriptions scored, gets the
        sentences that match its description best
        (:meth:`DescriptionRanker.explain`; a code of the catalogue, in an
        open label space, the one sentence that matches its names best,
        :meth:`CatalogueIndex.best_span`). A model without ``explain``
        (a linear model) leaves every label to the descriptions. The model
        is reached through a ``FrozenEstimator`` and a Pipeline's last
        step, which receives the raw texts.

        Parameters
        ----------
        X, top_labels, labels
            As in :meth:`DescriptionRanker.explain`, checked by the same
            code (the same errors).
        top_spans : int, default=3
            Spans kept per label.

        Returns
        -------
        list of dict, one per document
            ``{"labels": [{"label", "index", "score", "prob", "source",
            "spans": [{"start", "end", "text", "weight"}]}]}``, in the
            order of the labels explained: ``score`` is the fused score,
            ``source`` is ``"model"`` (``prob`` is then the model's own
            probability, ``weight`` its span weight) or ``"descriptions"``
            (``prob`` None, ``weight`` a sentence's cosine). With a mention
            source, a known label's matched mentions
            (:meth:`~xplant.linear.MentionMatcher.explain`, ``weight`` the
            matcher's score) rank before the model's spans, ``source``
            then ``"mentions"`` or ``"mentions+model"``. With a mention
            source or a ``description_field``, every span names the text
            field its offsets index (``"field"``: the matcher's
            ``text_field``, ``description_field`` for a description's
            sentence, or ``"text"``).

        Examples
        --------
        Label lists and their codes, R05 (cough) never seen in training:

        >>> from xplant.linear import FrequencyPrior
        >>> f = DescriptionFusion(FrequencyPrior(), weight=1.0, seen_weight=0.0).fit(
        ...     ["chest pain and fever", "broken left arm", "fever and cough"],
        ...     [["R50"], ["S42"], ["R50"]], label_names=["R50", "S42", "R05"],
        ...     label_descriptions=["fever", "fracture of arm", "cough"])
        >>> ex = f.explain(["Seen today. A dry cough at night."], labels=[[2]])[0]["labels"][0]
        >>> ex["label"], ex["source"], ex["prob"], ex["spans"][0]["text"]
        ('R05', 'descriptions', None, 'A dry cough at night.')
        """
        docs, top_spans, scores, chosen = self._explained(X, top_labels, top_spans, labels)
        texts, described = _texts_of(docs), self._description_texts(docs)
        model = _explaining_model(self.estimator_)
        unseen = np.zeros(self.n_labels_, dtype=bool)
        unseen[self.unseen_] = True
        by_model = [cols[~unseen[cols]] if model is not None else cols[:0] for cols in chosen]
        by_text = [np.setdiff1d(cols, m, assume_unique=True) for cols, m in zip(chosen, by_model)]
        found = [{} for _ in texts]
        if model is not None and any(m.size for m in by_model):
            for i, ex in enumerate(model.explain(texts, top_spans=top_spans, labels=by_model)):
                for lab in ex["labels"]:
                    found[i][int(lab["index"])] = dict(lab, source="model")
        # a catalogue's codes (open-space columns past the ranker's labels) are explained by
        # the catalogue's best sentence, the rest by the ranker
        n_ranked = (self.known_classes_.size if getattr(self, "catalogue_", None) is not None
                    else self.n_labels_)
        by_ranker = [cols[cols < n_ranked] for cols in by_text]
        if any(t.size for t in by_ranker):
            for i, ex in enumerate(self.ranker_.explain(described, top_spans=top_spans,
                                                        labels=by_ranker)):
                for lab in ex["labels"]:
                    found[i][int(lab["index"])] = lab
        for i, cols in enumerate(by_text):
            for col in cols[cols >= n_ranked]:
                span = self.catalogue_.best_span(described[i], int(col))
                found[i][int(col)] = {
                    "label": str(self.classes_[col]), "index": int(col), "prob": None,
                    "source": "descriptions", "spans": [span] if span["weight"] > 0 else []}
        if getattr(self, "mentions_", None) is not None and self.mention_weight_:
            self._mention_spans(docs, chosen, found, top_spans)
        if self.description_field is not None:     # two texts: each span names its own
            for labs in found:
                for j, lab in labs.items():
                    field = self.description_field if lab["source"] == "descriptions" else "text"
                    labs[j] = dict(lab, spans=[dict(span, field=span.get("field", field))
                                               for span in lab["spans"]])
        return [{"labels": [dict(found[i][int(j)], score=float(scores[i, j])) for j in cols]}
                for i, cols in enumerate(chosen)]

    def _mention_spans(self, docs, chosen, found, top_spans):
        """The matched mentions of the explained known labels, ranked before the model's
        spans (the coders' own words first), ``top_spans`` in all; each names the text
        field its offsets index (``"field"``)."""
        n_known = self.mentions_.n_labels_
        known = [cols[cols < n_known] for cols in chosen]
        field = self.mentions_.text_field or "text"
        for i, ex in enumerate(self.mentions_.explain(docs, top_spans=top_spans, labels=known)):
            for lab in ex["labels"]:
                if not lab["spans"]:
                    continue
                j = int(lab["index"])
                old = found[i].get(j, {"label": lab["label"], "index": j, "prob": None,
                                       "spans": []})
                own = (self.description_field or "text") if old.get("source") == "descriptions" \
                    else "text"
                spans = [dict(span, field=field) for span in lab["spans"]] + \
                    [dict(span, field=own) for span in old["spans"]]
                found[i][j] = dict(old, spans=spans[:top_spans], source=(
                    "mentions" if old.get("source") in (None, "mentions") else
                    f"mentions+{old['source']}"))


def _add_known(S, extra, weight):
    """``S`` plus ``weight * extra`` on its first ``extra.shape[1]`` columns (the known
    labels): the mention source, the last term of the fusion's weighted sum
    (:func:`xplant.fusion.fuse`). ``S`` dense, or CSR over an open label space, where the
    matcher scores only seen labels, which every row stores."""
    if not weight:
        return S
    extra = np.asarray(extra, dtype=np.float64) * weight
    if sp.issparse(S):
        E = sp.csr_matrix(extra)
        return (S + sp.csr_matrix((E.data, E.indices, E.indptr), shape=S.shape)).tocsr()
    out = np.array(S, dtype=np.float64)
    out[:, :extra.shape[1]] += extra
    return out


def _explaining_model(estimator):
    """The fitted model whose ``explain`` gives a seen label's evidence, or None.

    Looks through a ``FrozenEstimator`` and a Pipeline's last step.
    """
    from sklearn.frozen import FrozenEstimator
    while not hasattr(estimator, "explain"):
        if isinstance(estimator, FrozenEstimator):
            estimator = estimator.estimator
        elif hasattr(estimator, "steps"):
            estimator = final_step(estimator)
        else:
            return None
    return estimator
