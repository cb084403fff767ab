"""Shared pieces of the classical baselines: label-matrix checks, top-k.

Every baseline in :mod:`xplant.linear` scores all labels of a document and
ranks them. The helpers here keep that consistent: one way to validate ``Y``,
one tie rule (equal scores rank the lower label index first) and one way to
take the top k scores in row blocks, so that no dense ``(n, L)`` matrix is
held when ``L`` is large.
"""

import importlib

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from .._labels import (as_prediction_form, as_score_form, check_class_names, check_indicator, check_targets,
                       label_frequency, prediction_form)
from .._label_space import LabelSpaceOwner
from .._params import ParamsMixin
from .._sigmoid import sigmoid
from ..metrics._kernels import top_k_dense as top_k_kernel
from ..metrics._validation import check_k as _check_k
from ..metrics._validation import label_scores

# Score budget of one row block, in matrix entries (8 bytes each): 2**24
# entries is 128 MiB of float64, whatever the number of labels.
_BLOCK_ENTRIES = 2**24


def check_label_matrix(Y, n_samples=None):
    """Validate a multi-label indicator matrix and return it as CSR int64.

    Parameters
    ----------
    Y : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Binary indicator matrix: ``Y[i, j] = 1`` when document ``i`` carries
        label ``j``. Dense, boolean and any scipy sparse format are accepted.
    n_samples : int, default=None
        Expected number of rows (the number of documents in ``X``).

    Returns
    -------
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels), dtype int64
        Canonical CSR (sorted indices, no explicit zeros), values all 1.

    Raises
    ------
    ValueError
        If ``Y`` is not 2-D, holds values other than 0 and 1, has a number of
        rows other than ``n_samples``, has no label column, or has no positive
        at all (nothing could be learned).

    Examples
    --------
    >>> import numpy as np
    >>> check_label_matrix(np.array([[1, 0], [0, 1]])).toarray()
    array([[1, 0],
           [0, 1]])
    """
    Y = check_indicator(Y, n_samples=n_samples)
    return check_targets(Y, n_samples=n_samples)[0]   # the shared "no label / no positive" checks


def check_k(k, n_labels):
    """Check that ``k`` is a positive int and return it clipped to ``n_labels``.

    The check is :func:`xplant.metrics._validation.check_k`, shared with the
    metrics; the clip is theirs too (a model ranks at most its ``n_labels``
    labels, so ``k=10**12`` returns every label and allocates no k columns).
    """
    return min(_check_k(k), int(n_labels))


def top_k_dense(scores, k):
    """Top-``k`` labels of each row of a dense score block, with exact ties.

    Parameters
    ----------
    scores : ndarray of shape (n_rows, n_labels)
        Scores, higher is better. Must not hold NaN.
    k : int
        Number of labels to return, ``k >= 1``; more than ``n_labels``
        returns every label.

    Returns
    -------
    indices : ndarray of shape (n_rows, min(k, n_labels)), dtype int64
        Label indices by decreasing score; equal scores rank the lower index
        first (the order of a stable sort of ``-scores``). A ``-inf`` score
        is never ranked: its place is -1.
    values : ndarray of shape (n_rows, min(k, n_labels)), dtype float64
        The matching scores (``-inf`` where the index is -1).

    Notes
    -----
    The selection is the metrics' (:func:`xplant.metrics.top_k_indices`): a
    size-``k`` heap per row, ``O(n_rows * n_labels * log k)``.

    Examples
    --------
    >>> import numpy as np
    >>> idx, val = top_k_dense(np.array([[0.2, 0.5, 0.2, 0.1]]), 2)
    >>> idx.tolist(), val.tolist()
    ([[1, 0]], [[0.5, 0.2]])
    """
    scores = np.asarray(scores, dtype=np.float64)
    n, n_labels = scores.shape
    k = check_k(k, n_labels)
    if n == 0:
        return np.empty((0, k), dtype=np.int64), np.empty((0, k), dtype=np.float64)
    if np.isnan(scores).any():
        raise ValueError("Scores hold NaN; the model produced invalid scores.")
    return top_k_kernel(scores, k)           # the metrics' top-k: one tie rule everywhere


def _row_blocks(n_rows, n_labels, block_entries=_BLOCK_ENTRIES):
    step = max(1, block_entries // max(1, n_labels))
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


def _n_rows(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _take_rows(X, rows):
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def predict_top_k(estimator, X, k):
    """Top-``k`` labels of each document, without an ``(n, L)`` score matrix.

    Parameters
    ----------
    estimator : fitted estimator or :class:`~sklearn.pipeline.Pipeline`
        A multi-label model. If it (or a Pipeline's last step) has its own
        ``predict_top_k(X, k)``, that is used; otherwise scores come from
        ``predict_proba`` or else ``decision_function``, in row blocks. A
        ``predict_proba`` that returns one (n, n_classes) array per label
        (scikit-learn's multi-output classifiers) ranks by each label's
        probability of class 1.
    X : array-like, sparse matrix or sequence of texts
        Input of the estimator (raw texts for a text Pipeline).
    k : int
        Number of labels per document, ``k >= 1`` (clipped to the number of labels).

    Returns
    -------
    indices : ndarray of shape (n_samples, min(k, n_labels)), dtype int64
        Label columns by decreasing score; equal scores rank the lower index
        first.
    scores : ndarray of shape (n_samples, min(k, n_labels)), dtype float64
        The matching scores.

    Raises
    ------
    TypeError
        If the estimator has none of ``predict_top_k``, ``predict_proba`` and
        ``decision_function``.

    Examples
    --------
    >>> import numpy as np
    >>> from xplant.linear import FrequencyPrior
    >>> prior = FrequencyPrior().fit(np.zeros((3, 1)), np.array([[1, 0], [1, 1], [1, 0]]))
    >>> predict_top_k(prior, np.zeros((1, 1)), 2)[0].tolist()
    [[0, 1]]
    """
    final = estimator
    steps = getattr(estimator, "steps", None)
    if steps is not None:
        final = steps[-1][1]
        for _, step in steps[:-1]:
            if step is None or step == "passthrough":
                continue
            X = step.transform(X)
    if hasattr(final, "predict_top_k"):
        return final.predict_top_k(X, k)
    if hasattr(final, "predict_proba"):
        score = final.predict_proba
    elif hasattr(final, "decision_function"):
        score = final.decision_function
    else:
        raise TypeError(
            f"{type(final).__name__} has none of predict_top_k, predict_proba and "
            "decision_function, so its labels cannot be ranked."
        )
    n = _n_rows(X)
    indices, values = [], []
    n_labels = getattr(final, "n_labels_", None)
    # Without a known label count, score 256 rows at a time.
    for rows in _row_blocks(n, n_labels or _BLOCK_ENTRIES // 256):
        block = label_scores(final, score(_take_rows(X, rows)))
        if block.ndim != 2:
            raise ValueError(
                f"{type(final).__name__} returned scores of shape {block.shape}; "
                "expected (n_samples, n_labels)."
            )
        i, v = top_k_dense(block, k)
        indices.append(i)
        values.append(v)
    if not indices:
        return np.empty((0, k), dtype=np.int64), np.empty((0, k), dtype=np.float64)
    return np.vstack(indices), np.vstack(values)


class MultiLabelRankerMixin(LabelSpaceOwner):
    """Top-k ranking and 0/1 prediction from a ``_scores(X)`` method.

    Subclasses set ``classes_``, ``n_labels_``, ``label_frequency_``,
    ``n_train_documents_`` and ``prediction_form_`` in ``fit`` (through
    ``_fit_label_space``), and implement ``_validate_X(X)`` and
    ``_scores(X)`` (a dense float64 ``(n_rows, n_labels)`` block for a block
    of rows); ``_default_decision_rule()`` is the
    :class:`xplant.metrics.DecisionRule` ``predict`` applies until another is
    set, on the scale of :meth:`_rule_scores` (here the top ``k_`` labels).

    The decision rule is a fitted part, ``parts_["decision_rule"]``, as
    PLANT's: ``decision_rule_`` reads it (the default rule while none is
    set) and setting ``decision_rule_`` (``xplant run`` sets the rule it
    chose on dev) stores it, which a saved model keeps. A new ``fit`` drops it.
    """

    # documented in each estimator's Attributes (no docstring here: the docs link none)
    @property
    def decision_rule_(self):
        # the DecisionRule of predict(X), parts_["decision_rule"]: its thresholds read the
        # scale of xplant._saved.score_matrix (predict_proba where the estimator has it, else
        # decision_function); until a rule is set, the estimator's default. Setting it takes
        # a DecisionRule or its dict (check_rule; per-label thresholds one per label).
        check_is_fitted(self)
        rule = self.parts_.get("decision_rule")
        return self._default_decision_rule() if rule is None else rule

    @decision_rule_.setter
    def decision_rule_(self, rule):
        from ..metrics import DecisionRule
        check_is_fitted(self)
        if rule is not None:
            rule = DecisionRule.from_dict(rule.to_dict() if isinstance(rule, DecisionRule)
                                          else rule, self.n_labels_)
        # copy on write, as every view of a part (xplant._fitted_parts.PartField)
        self.parts_ = {**self.parts_, "decision_rule": rule}

    def _default_decision_rule(self):
        """The rule of ``predict`` until one is set: the top ``k_`` labels (the estimators
        with a ``k_``; the others define their own)."""
        from ..metrics import DecisionRule
        return DecisionRule("top_k", k=self.k_)

    def _rule_scores(self, X):
        """Scores of validated rows on the scale of ``decision_rule_``'s thresholds.

        :meth:`_scores`; an estimator whose ``predict_proba`` reads other
        scores than ``_scores`` overrides it.
        """
        return self._scores(X)

    def _fit_label_space(self, Y, n_samples, label_names, *, new_fit=True):
        # the one target parser: a matrix, a 1-D binary y (one label column) or label lists
        if new_fit:
            self.__dict__.pop("parts_", None)       # a new fit: new fitted parts
        Y_given = Y
        Y, classes = check_targets(Y, n_samples=n_samples, label_names=label_names)
        check_class_names(classes)
        n_labels = Y.shape[1]
        self.prediction_form_ = prediction_form(Y_given)   # predict answers in this Y's form
        self.classes_ = classes
        self.n_labels_ = n_labels
        self.label_frequency_ = label_frequency(Y)
        self.n_train_documents_ = int(Y.shape[0])
        return Y

    def _fit_inputs(self, X, Y, label_names):
        """``fit``'s features as CSR float64 (checked, ``n_features_in_`` set) and its parsed ``Y``.

        The one reading of a sparse-feature ranker's training data; ``Y``
        sets the label space (:meth:`_fit_label_space`).
        """
        self.__dict__.pop("parts_", None)           # a new fit: new fitted parts
        X = self._csr_features(X, reset=True)       # n_features_in_: a part's field, for some
        return X, self._fit_label_space(Y, X.shape[0], label_names, new_fit=False)

    def _csr_features(self, X, *, reset=False):
        """``X`` checked as scikit-learn checks it (``reset`` in ``fit``), as CSR float64."""
        return sp.csr_matrix(validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                                           reset=reset))

    def _score_form(self, S, *, proba=False):
        """Scores in the form of the fitted target (:func:`xplant._labels.as_score_form`)."""
        return as_score_form(S, getattr(self, "prediction_form_", None), proba=proba)

    def predict_top_k(self, X, k):
        """Top-``k`` labels of each document, scored in row blocks.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents.
        k : int
            Number of labels per document, ``k >= 1`` (clipped to ``n_labels_``).

        Returns
        -------
        indices : ndarray of shape (n_samples, min(k, n_labels)), dtype int64
            Label columns by decreasing score; equal scores rank the lower
            label index first (a label tree: see its class's Notes).
        scores : ndarray of shape (n_samples, min(k, n_labels)), dtype float64
            The matching scores (the scale of ``decision_function``, or of
            ``predict_proba`` for models without one).
        """
        check_is_fitted(self)
        k = check_k(k, self.n_labels_)
        X = self._validate_X(X)
        n = _n_rows(X)
        indices = np.empty((n, k), dtype=np.int64)
        values = np.empty((n, k), dtype=np.float64)
        for rows in _row_blocks(n, self.n_labels_):
            indices[rows], values[rows] = self._top_k_block(_take_rows(X, rows), k)
        return indices, values

    def _top_k_block(self, X, k):
        """Top-``k`` labels of a block of rows: of :meth:`_scores` (a tree: its own search)."""
        return top_k_dense(self._scores(X), k)

    def predict(self, X, *, k=None, threshold=None):
        """0/1 label predictions by top-k or by a score threshold.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents.
        k : int, default=None
            Predict the ``k`` best-scored labels of each document.
        threshold : float, default=None
            Predict every label whose score (the scale of ``predict_top_k``)
            is at least ``threshold``.

        Returns
        -------
        Y_pred : csr_matrix of int64, ndarray of shape (n_samples, n_labels), or ndarray of shape (n_samples,)
            1 for predicted labels, in the form of the ``Y`` given to
            ``fit`` (``prediction_form_``, :func:`xplant._labels.prediction_form`):
            CSR for a sparse ``Y`` or label lists, a dense array of ``Y``'s
            dtype for a dense ``Y``, ``y``'s values for a 1-D ``y``. With
            neither ``k`` nor ``threshold``, the fitted rule
            ``decision_rule_`` applies, its thresholds on the scale of
            ``predict_proba`` where the estimator has it (its default rule
            until one is set: see the class docstring).

        Raises
        ------
        ValueError
            If both ``k`` and ``threshold`` are given.
        """
        check_is_fitted(self)
        if k is not None and threshold is not None:
            raise ValueError("Give either k or threshold, not both.")
        from ..metrics import DecisionRule
        scores = self._scores                       # an explicit threshold: predict_top_k's scale
        if k is None and threshold is None:
            rule, scores = self.decision_rule_, self._rule_scores
        elif k is not None:
            rule = DecisionRule("top_k", k=check_k(k, self.n_labels_))
        else:
            rule = DecisionRule("threshold", threshold=float(threshold))
        X = self._validate_X(X)
        n = _n_rows(X)
        # the metrics' decision rule: a label never ranked (-1, a -inf or unstored score) is
        # never predicted
        if rule.rule == "top_k":
            k = check_k(rule.k, self.n_labels_)
            Y = DecisionRule("top_k", k=k).apply(None, y_top_k=self.predict_top_k(X, k)[0],
                                                 n_labels=self.n_labels_)
        else:
            parts = [rule.apply(scores(_take_rows(X, rows)))
                     for rows in _row_blocks(n, self.n_labels_)]
            Y = (sp.vstack(parts, format="csr") if parts
                 else sp.csr_matrix((0, self.n_labels_), dtype=np.int64))
        return as_prediction_form(Y, getattr(self, "prediction_form_", None))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True     # a 1-D binary y is one label column
        if tags.classifier_tags is not None:
            tags.classifier_tags.multi_label = True
            tags.classifier_tags.multi_class = False   # labels are 0/1 columns, never {0, 1, 2}
        return tags


def import_optional(module, extra, package=None):
    """Import an optional library; its ImportError names the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{package or module} is needed for this estimator; install it with "
            f"pip install 'xplant[{extra}]'."
        ) from exc


class SparseFeatureRanker(ParamsMixin, MultiLabelRankerMixin, ClassifierMixin, BaseEstimator):
    """The one ``fit`` of the sparse-feature rankers (one-vs-rest and the library wrappers).

    ``fit`` checks the parameters against the class's ``_parameter_constraints``
    (:func:`xplant._params.check_params`) and their relations
    (``_check_relations``), imports the library that ``_requires`` names
    (``(module, extra, package)``), reads the data (:meth:`_fit_inputs`),
    then trains: ``_fit(X, Y, library)``.
    """

    _requires = None

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y, *, label_names=None):
        """Train the model on sparse features and their labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training features (a TF-IDF matrix, say), read as CSR float64.
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels), 1-D binary y, or label lists
            0/1 label indicators (:func:`xplant._labels.check_targets`);
            columns without positives are allowed.
        label_names : sequence of n_labels names, default=None
            Names of ``Y``'s columns, stored as ``classes_``.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            On an invalid parameter (naming it, its value and what it takes),
            parameters that contradict each other, a non-0/1 ``Y``,
            mismatched rows or a ``Y`` without any positive.
        ImportError
            When the model's library, an optional extra, is not installed.
        """
        self._check_relations()
        library = import_optional(*self._requires) if self._requires else None
        X, Y = self._fit_inputs(X, Y, label_names)
        self._fit(X, Y, library)
        return self

    def _check_relations(self):
        """Relations between parameters that the constraints do not state (none here)."""

    def _validate_X(self, X):
        return self._csr_features(X)

    #: what ``_scores`` returns: ``"decision"``, decision values (``decision_function``; and
    #: ``predict_proba``, their sigmoid, where ``_is_logistic``), or ``"proba"``, a model's own
    #: probabilities (``predict_proba`` only)
    _score_kind = "decision"

    def _is_logistic(self):
        return False

    def _has_decision(self):
        return self._score_kind == "decision"

    def _has_proba(self):
        return self._score_kind == "proba" or self._is_logistic()

    @available_if(_has_decision)
    def decision_function(self, X):
        """Decision values of every label (dense).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Features, as in ``fit``.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_labels), dtype float64
            Higher means more likely; labels never seen in training score
            ``EMPTY_LABEL_SCORE``. Dense: use ``predict_top_k`` when the
            label count is large. Shape (n_samples,) when fitted on a 1-D
            ``y`` (:func:`xplant._labels.as_score_form`).
        """
        check_is_fitted(self)
        return self._score_form(self._scores(self._validate_X(X)))

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Per-label probabilities (dense): the model's own, or ``sigmoid(decision_function(X))``.

        A tree's probabilities are 0 at the labels its search did not reach;
        a linear model's are the sigmoid of its decision values (logistic
        loss only).

        Parameters
        ----------
        X : {array-like, sparse matrix}
            Features of shape (n_samples, n_features), as in ``fit``.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_labels), dtype float64
            Independent per-label probabilities (rows need not sum to 1);
            (n_samples, 2) when fitted on a 1-D ``y``
            (:func:`xplant._labels.as_score_form`).
        """
        check_is_fitted(self)
        return self._score_form(self._rule_scores(self._validate_X(X)), proba=True)

    def _rule_scores(self, X):
        scores = self._scores(X)      # probabilities: the model's own, or sigmoid of decision values
        return sigmoid(scores) if self._score_kind == "decision" and self._is_logistic() else scores

    def _fit(self, X, Y, library):  # pragma: no cover - abstract
        raise NotImplementedError
