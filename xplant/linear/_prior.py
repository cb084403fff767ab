"""The trivial baseline: rank labels by their training frequency."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._fitted_parts import FittedFields, PartField
from ._base import MultiLabelRankerMixin, _n_rows


class PriorK(FittedFields):
    """The fitted part ``parts_["model"]`` of a :class:`FrequencyPrior`: its default ``k_``
    (field ``k``, the labels of the default rule).

    The prior itself is the label space's (``prior_`` reads
    ``label_frequency_ / n_train_documents_``).
    """

    FIELDS = ("k",)

    def to_dict(self):
        """``{"k": int}``."""
        return {"k": int(self.k)}

    @classmethod
    def from_dict(cls, state):
        """The part of :meth:`to_dict`'s state (other keys are ignored)."""
        return cls(k=int(state["k"]))


class FrequencyPrior(MultiLabelRankerMixin, ClassifierMixin, BaseEstimator):
    """Score every label by its training frequency, whatever the document.

    The prior ``p_j = n_j / n`` (the share of training documents that carry
    label ``j``) is the score of label ``j`` for every document, so every
    document gets the same ranking: the most frequent labels first, equal
    frequencies by lower label index. A label with no training positive
    scores 0. It is the floor any real model must clear.

    Attributes
    ----------
    parts_ : dict of str to object
        The fitted parts: ``"label_space"`` (:class:`xplant._label_space.LabelSpace`),
        which the label-space attributes and ``prior_`` read, ``"model"``
        (:class:`PriorK`, ``k_``), the decision rule once set, and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict(X)`` (``parts_["decision_rule"]``,
        :class:`xplant.metrics.DecisionRule`): the default rule (Notes)
        until one is set; ``xplant run`` sets the rule it chose on dev, and
        a saved model keeps it.
    classes_ : ndarray of shape (n_labels,)
        Label names passed to ``fit`` as ``label_names``, else ``0..L-1``.
    n_labels_ : int
        Number of labels (columns of ``Y``).
    label_frequency_ : ndarray of shape (n_labels,), dtype int64
        Training positives per label.
    n_train_documents_ : int
        Number of training documents.
    prediction_form_ : dict
        As in :class:`~xplant.linear.OneVsRestLinear`.
    prior_ : ndarray of shape (n_labels,), dtype float64
        ``label_frequency_ / n_train_documents_``.
    k_ : int
        Default number of labels ``predict`` returns: the mean number of
        labels per training document, rounded, at least 1. With a single
        label (a 1-D ``y``) it is 0 or 1, the majority answer, as
        ``DummyClassifier(strategy="prior")`` predicts (0: nothing is
        predicted).

    Notes
    -----
    ``predict(X)`` with no argument predicts the ``k_`` most frequent labels
    for every document; ``predict(X, k=...)`` or ``predict(X, threshold=...)``
    (on the ``predict_proba`` scale) choose another rule.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 0, 1], [0, 0, 1], [0, 1, 1], [1, 0, 0]])
    >>> prior = FrequencyPrior().fit(np.zeros((4, 1)), Y)
    >>> prior.predict_proba(np.zeros((1, 1))).tolist()
    [[0.5, 0.25, 0.75]]
    >>> prior.predict_top_k(np.zeros((2, 1)), 2)[0].tolist()
    [[2, 0], [2, 0]]
    """

    k_ = PartField("model", "k", factory=PriorK, unset=True)

    @property
    def prior_(self):          # documented in Attributes: a view of the label space
        return self.label_frequency_ / float(self.n_train_documents_)

    def fit(self, X, Y, *, label_names=None):
        """Count training positives per label.

        Parameters
        ----------
        X : list of str, or {array-like, sparse matrix} of shape (n_samples, n_features)
            Training documents; only their number is used (an array is
            checked as scikit-learn checks it: finite, 2-D).
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels)
            Binary label indicators.
        label_names : sequence of n_labels names, default=None
            Stored as ``classes_``.

        Returns
        -------
        self : FrequencyPrior
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``Y`` is not a 0/1 matrix with as many rows as ``X``, or has no
            positive at all.
        """
        n = _n_rows(self._check_X(X, reset=True))
        Y = self._fit_label_space(Y, n, label_names)
        mean = int(round(Y.nnz / self.n_train_documents_))
        self.k_ = mean if self.n_labels_ == 1 else max(1, mean)   # one label: the majority
        return self

    def _check_X(self, X, reset):
        """Texts are only counted; an array or sparse matrix is validated as scikit-learn does."""
        if getattr(X, "ndim", 1) == 1 and not isinstance(X, str) and hasattr(X, "__len__") \
                and len(X) and all(isinstance(x, str) for x in X):
            return X                          # raw texts (list, 1-D array, Series)
        return validate_data(self, X, accept_sparse="csr", dtype=None, reset=reset,
                             ensure_all_finite=True)

    def _validate_X(self, X):
        return self._check_X(X, reset=False)

    def _scores(self, X):
        return np.tile(self.prior_, (_n_rows(X), 1))

    def _default_decision_rule(self):
        from ..metrics import DecisionRule
        # k_ = 0: no label
        return DecisionRule("top_k", k=self.k_) if self.k_ else \
            DecisionRule("threshold", threshold=np.inf)

    def predict_proba(self, X):
        """The training prior of every label, for each document.

        Parameters
        ----------
        X : sequence or array-like of length n_samples
            Documents; only their number is used.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_labels), dtype float64
            Every row equals ``prior_``; (n_samples, 2) when fitted on a
            1-D ``y`` (:func:`xplant._labels.as_score_form`).
        """
        check_is_fitted(self)
        return self._score_form(self._scores(self._validate_X(X)), proba=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.classifier_tags.poor_score = True   # the same scores for every document, by design
        return tags
