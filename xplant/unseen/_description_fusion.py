"""DescriptionFusion: a trained model for the labels it has seen, descriptions for the rest."""

import inspect
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted

from ..fusion import Source, fuse
from ..linear._base import MultiLabelRankerMixin
from ._description_ranker import DescriptionRanker, _check_texts

#: Weights of the description score tried on dev by ``DescriptionFusion(weight="dev")``.
FUSION_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
#: The weight ``weight="dev"`` takes without labelled dev data (with a
#: ``NoDevDataWarning``): the description cosine added to the floor as it is.
FALLBACK_WEIGHT = 1.0


def _accepts(estimator, name):
    """Whether ``estimator.fit`` takes keyword ``name`` (a Pipeline: its last step)."""
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    try:
        params = inspect.signature(final.fit).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _model_scores(model, X):
    """The model's scores of every label: its probabilities, else its decision values."""
    if hasattr(model, "predict_proba"):
        return np.asarray(model.predict_proba(X), dtype=np.float64)
    return np.asarray(model.decision_function(X), dtype=np.float64)


class DescriptionFusion(MultiLabelRankerMixin, ClassifierMixin, BaseEstimator):
    """A trained model for the labels it has seen, label descriptions for the rest.

    A model trained on ``Y`` cannot rank a label with no training positive.
    This meta-estimator fits it together with a :class:`DescriptionRanker`
    and scores every label with no training positive by
    ``m + weight * cosine(document, description)``, where ``m`` is the
    document's lowest score among the seen labels; the other labels keep the
    model's score (``predict_proba``, else ``decision_function``, so margins
    work too). The weight puts the two scales side by side and is chosen on
    dev MAP; with weight 0 the unseen labels rank last. The formula is a
    member of :func:`xplant.fusion.fuse`: the model on the seen labels
    (weight 1), the cosines on the unseen ones (``weight``), and the unseen
    labels as the floor labels.

    The fused scores rank the labels but are no probabilities (an unseen
    label's reaches 1 + ``weight``), so the estimator offers
    :meth:`decision_function` and no ``predict_proba`` (docs/metrics.md,
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
        data :data:`FALLBACK_WEIGHT`, with a ``NoDevDataWarning``.

    Attributes
    ----------
    estimator_ : fitted estimator
    ranker_ : DescriptionRanker
    weight_ : float
    unseen_ : ndarray of int64
        Labels with no training positive, scored by the descriptions.
    dev_map_ : dict of float to float
        Dev MAP of each weight tried (empty when ``weight`` is a number).
    dev_choice_ : dict
        With ``weight="dev"``: the choice's record
        (:class:`~xplant.model_selection.DevChoice`).
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

    def __init__(self, estimator, ranker=None, weight="dev"):
        self.estimator = estimator
        self.ranker = ranker
        self.weight = weight

    def fit(self, X, Y, *, label_descriptions=None, label_synonyms=None, label_parents=None,
            parent_descriptions=None, label_names=None, validation_data=None, **fit_params):
        """Fit the model and the ranker; choose the weight on dev.

        Parameters
        ----------
        X : sequence of str of length n_samples
            Training documents (raw texts).
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels)
            0/1 training labels, for the model and the label space.
        label_descriptions, label_synonyms, label_parents, parent_descriptions
            As :meth:`DescriptionRanker.fit`; ``label_descriptions`` is required.
        label_names : sequence of str, optional
            Names of ``Y``'s columns, stored as ``classes_``.
        validation_data : tuple (X_dev, Y_dev), optional
            Needed for ``weight="dev"``; also passed to the model when its
            ``fit`` takes it.
        **fit_params
            Passed to the model's ``fit`` as they are (for a Pipeline,
            ``<step>__<param>``).

        Returns
        -------
        self : DescriptionFusion

        Raises
        ------
        ValueError
            A negative weight; and the ranker's errors.

        Warns
        -----
        NoDevDataWarning
            ``weight="dev"`` without labelled ``validation_data``: the weight
            is :data:`FALLBACK_WEIGHT`.
        """
        texts = _check_texts(X)
        self._fit_label_space(Y, len(texts), label_names)
        if self.weight != "dev" and (not isinstance(self.weight, numbers.Real) or self.weight < 0):
            raise ValueError(f"weight must be 'dev' or a non-negative number; got {self.weight!r}")
        desc = dict(label_descriptions=label_descriptions, label_synonyms=label_synonyms,
                    label_parents=label_parents, parent_descriptions=parent_descriptions)
        self.ranker_ = clone(self.ranker) if self.ranker is not None else DescriptionRanker()
        self.ranker_.fit(texts, Y, label_names=label_names, **desc)
        self.estimator_ = clone(self.estimator)
        params = dict(fit_params)
        prefix = self.estimator_.steps[-1][0] + "__" if hasattr(self.estimator_, "steps") else ""
        for name, value in list(desc.items()) + [("validation_data", validation_data),
                                                 ("label_names", label_names)]:
            if value is not None and _accepts(self.estimator_, name):
                params[prefix + name] = value
        self.estimator_.fit(texts, Y, **params)
        self.unseen_ = np.flatnonzero(self.label_frequency_ == 0).astype(np.int64)
        self.k_ = max(1, int(round(sp.csr_matrix(Y).nnz / max(1, self.n_train_documents_))))
        self.dev_map_ = {}
        if self.weight == "dev":
            from ..metrics import mean_average_precision
            from ..model_selection import choose_on_dev
            has_dev = validation_data is not None and sp.csr_matrix(validation_data[1]).nnz > 0
            if has_dev:
                Xd, Yd = validation_data
                base, cos = _model_scores(self.estimator_, Xd), self.ranker_.decision_function(Xd)
            choice = choose_on_dev(
                "description_weight", list(FUSION_WEIGHTS),
                lambda w: mean_average_precision(Yd, self._fuse(base, cos, w)),
                family="ranking", criterion="map", fallback=FALLBACK_WEIGHT, has_dev=has_dev)
            self.dev_map_ = dict(choice.scores)
            self.dev_choice_ = choice.to_dict()
            self.weight_ = float(choice.value)
        else:
            self.weight_ = float(self.weight)
        return self

    def _fuse(self, base, cos, weight):
        """:func:`xplant.fusion.fuse` of the model's scores on the seen labels and the
        weighted cosines on the unseen ones, which start from each document's floor."""
        seen = np.setdiff1d(np.arange(self.n_labels_), self.unseen_)
        base, cos = np.asarray(base, dtype=np.float64), np.asarray(cos, dtype=np.float64)
        sources = [Source(base[:, seen], 1.0, None, seen)]
        if self.unseen_.size:
            sources.append(Source(cos[:, self.unseen_], weight, None, self.unseen_))
        return fuse(sources, n_labels=self.n_labels_, floor=self.unseen_)

    def _validate_X(self, X):
        return _check_texts(X)

    def _scores(self, X):
        X = list(X)
        return self._fuse(_model_scores(self.estimator_, X), self.ranker_.decision_function(X), self.weight_)

    def _default_rule(self):
        return "k", self.k_

    def decision_function(self, X):
        """Fused scores: the model's for seen labels, ``m + weight_ * cosine`` for unseen ones.

        The ranking score (:meth:`predict_top_k` ranks by it); not a
        probability. ``m`` is the document's lowest seen-label score.

        Parameters
        ----------
        X : sequence of str of length n_samples
            Raw documents.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_labels), dtype float64
        """
        check_is_fitted(self)
        texts = self._validate_X(X)
        return self._scores(texts) if texts else np.zeros((0, self.n_labels_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.sparse = False
        return tags
