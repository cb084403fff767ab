"""Rank labels by the similarity of a document to their descriptions (zero-shot baseline),
and fuse that ranking with a trained model for the labels it has never seen."""

import inspect
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from .._descriptions import check_label_texts, label_documents
from ._base import MultiLabelRankerMixin


def _check_texts(X, name="X"):
    if isinstance(X, str) or not hasattr(X, "__len__"):
        raise ValueError(f"{name} must be a sequence of document strings; got {type(X).__name__}")
    texts = list(X)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"{name}[{i}] is a {type(t).__name__}; DescriptionRanker reads raw texts "
                             "(put it first in a Pipeline, or pass the documents' strings)")
    return texts


class DescriptionRanker(MultiLabelRankerMixin, ClassifierMixin, BaseEstimator):
    """Score each label by the TF-IDF cosine between a document and the label's text.

    A label's text is its description and synonyms (and optionally its
    ancestors' descriptions), so the ranker needs no training document of
    the label: it ranks labels never seen in training, and serves as a
    shortlist source or as a second score in fusion beside a trained model.
    Training documents are used only to fit the TF-IDF weights (together
    with the label texts, so that a description word absent from the
    corpus still counts).

    Parameters
    ----------
    vectorizer : TfidfVectorizer or None, default=None
        Cloned and fitted in ``fit``; None means
        ``TfidfVectorizer(sublinear_tf=True, stop_words="english")``.
        Its rows must be L2-normalised (``norm="l2"``) for the scores to be
        cosines.
    ancestor_depth : int, default=0
        Levels of ancestors whose descriptions join a label's text (see
        :func:`xplant._descriptions.label_documents`); 0 uses the label's
        own description and synonyms only.

    Attributes
    ----------
    classes_ : ndarray of shape (n_labels,)
    n_labels_ : int
    label_frequency_ : ndarray of shape (n_labels,), dtype int64
    n_train_documents_ : int
    vectorizer_ : TfidfVectorizer
        Fitted on the training documents and the label texts.
    label_texts_ : list of str, length n_labels
        The text each label is matched against (``""`` for a label with
        no description, which scores 0 for every document).
    label_matrix_ : csr_matrix of shape (n_labels, n_features), float64
        L2-normalised TF-IDF rows of ``label_texts_``.
    k_ : int
        Labels per document of the default ``predict`` rule: the mean number
        of labels per training document, rounded, at least 1.

    Notes
    -----
    ``score(d, l) = cos(tfidf(d), tfidf(text_l))`` in [0, 1]; scoring n
    documents costs one sparse product, O(nnz(X) * mean postings) time, and
    a dense (n, L) block per row block. Equal scores rank the lower label
    index first. The method is the classical retrieval baseline for
    zero-shot ICD coding (code titles as queries; compare Rios and Kavuluru,
    EMNLP 2018, who learn from the same titles).

    Examples
    --------
    >>> import numpy as np
    >>> texts = ["chest pain and fever", "broken left arm", "fever and cough"]
    >>> Y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])  # label 2 has no training document
    >>> r = DescriptionRanker().fit(texts, Y, label_descriptions=["fever", "fracture of arm", "cough"])
    >>> r.predict_top_k(["a dry cough"], 1)[0].tolist()
    [[2]]
    """

    def __init__(self, vectorizer=None, ancestor_depth=0):
        self.vectorizer = vectorizer
        self.ancestor_depth = ancestor_depth

    def fit(self, X, Y, *, label_descriptions=None, label_synonyms=None, label_parents=None,
            parent_descriptions=None, label_names=None):
        """Fit the TF-IDF weights and vectorise each label's text.

        Parameters
        ----------
        X : sequence of str of length n_samples
            Training documents (raw texts).
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels)
            0/1 labels; used for the label space and frequencies only.
        label_descriptions : sequence of str of length n_labels
            Required; ``""`` where unknown.
        label_synonyms : sequence of list of str of length n_labels, optional
            Each label's synonyms, added to its text.
        label_parents : sequence of list of str of length n_labels, optional
            Needed for ``ancestor_depth > 0``.
        parent_descriptions : dict of str to str, optional
            Descriptions of parents that are not labels (a loader's
            ``parent_descriptions``).
        label_names : sequence of str of length n_labels, optional
            Stored as ``classes_``; lets parents that are labels be found.

        Returns
        -------
        self : DescriptionRanker

        Raises
        ------
        ValueError
            If ``label_descriptions`` is missing, has the wrong length, or no
            label has any text; if synonyms or parents are not lists of
            strings; for a bad ``Y`` or ``ancestor_depth``.
        """
        texts = _check_texts(X)
        Y = self._fit_label_space(Y, len(texts), label_names)
        if not isinstance(self.ancestor_depth, (int, np.integer)) or self.ancestor_depth < 0:
            raise ValueError(f"ancestor_depth must be a non-negative int; got {self.ancestor_depth!r}")
        if label_descriptions is None:
            raise ValueError("DescriptionRanker needs label_descriptions, one string per label: "
                             "fit(X, Y, label_descriptions=data.label_descriptions), or in a Pipeline "
                             "pipe.fit(X, Y, <step>__label_descriptions=...)")
        desc, syn, parents = check_label_texts(self.n_labels_, label_descriptions, label_synonyms, label_parents)
        self.label_texts_ = label_documents(desc, syn, parents, self.classes_ if label_names is not None else None,
                                            parent_descriptions, int(self.ancestor_depth))
        if not any(t.strip() for t in self.label_texts_):
            raise ValueError("no label has a description or synonym; DescriptionRanker has nothing to "
                             "match documents against (install xplant[descriptions] for ICD titles, or "
                             "give a descriptions file)")
        vec = TfidfVectorizer(sublinear_tf=True, stop_words="english") if self.vectorizer is None else clone(self.vectorizer)
        self.vectorizer_ = vec.fit(texts + self.label_texts_)
        self.label_matrix_ = sp.csr_matrix(self.vectorizer_.transform(self.label_texts_), dtype=np.float64)
        self.k_ = max(1, int(round(Y.nnz / max(1, self.n_train_documents_))))
        return self

    def _validate_X(self, X):
        return _check_texts(X)

    def _scores(self, X):
        D = self.vectorizer_.transform(list(X))
        return np.asarray((D @ self.label_matrix_.T).toarray(), dtype=np.float64)

    def _default_rule(self):
        return "k", self.k_

    def decision_function(self, X):
        """Cosine of each document with each label's text.

        Parameters
        ----------
        X : sequence of str of length n_samples
            Raw documents.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_labels), dtype float64
            In [0, 1]; 0 for labels without text. Dense: use
            ``predict_top_k`` for many labels.
        """
        check_is_fitted(self)
        texts = self._validate_X(X)
        return self._scores(texts) if texts else np.zeros((0, self.n_labels_))

    def predict_proba(self, X):
        """The cosines of :meth:`decision_function` (already in [0, 1]).

        Parameters
        ----------
        X : sequence of str of length n_samples
            Raw documents.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_labels), dtype float64
        """
        return self.decision_function(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.sparse = False
        return tags



_DESCRIPTION_PARAMS = ("label_descriptions", "label_synonyms", "label_parents", "parent_descriptions")
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
    dev MAP; with weight 0 the unseen labels rank last.

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
        out = np.array(base, dtype=np.float64, copy=True)
        if self.unseen_.size == 0:
            return out
        seen = np.ones(self.n_labels_, dtype=bool)
        seen[self.unseen_] = False
        floor = out[:, seen].min(axis=1, keepdims=True) if seen.any() else np.zeros((out.shape[0], 1))
        out[:, self.unseen_] = floor + weight * cos[:, self.unseen_]
        return out

    def _validate_X(self, X):
        return _check_texts(X)

    def _scores(self, X):
        X = list(X)
        return self._fuse(_model_scores(self.estimator_, X), self.ranker_.decision_function(X), self.weight_)

    def _default_rule(self):
        return "k", self.k_

    def predict_proba(self, X):
        """Fused scores: the model's for seen labels, ``m + weight_ * cosine`` for unseen ones.

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
