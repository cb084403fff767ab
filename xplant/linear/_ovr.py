"""One-vs-rest linear models on sparse features, with pruned sparse weights."""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import validate_data

from .._fitted_parts import FittedFields, part_fields
from .._params import StrOptions, int_at_least, number_above, number_at_least
from ._base import SparseFeatureRanker
from ._dcd import dcd_squared_hinge

#: Decision value of a label with no training positive: low, finite, constant.
EMPTY_LABEL_SCORE = -1000.0


class LinearWeights(FittedFields):
    """The fitted model of a :class:`OneVsRestLinear`, its part ``parts_["model"]``.

    Owns ``weights_``, ``intercept_``, ``n_iter_`` and ``n_features_in_``
    (their views) and turns them into a saved folder's arrays and JSON
    (:meth:`to_dict`) and back (:meth:`from_dict`).

    Fields: ``weights`` (pruned, CSR float64 of shape (n_features,
    n_labels)), ``intercept`` (float64, (n_labels,)), ``n_iter`` (solver
    iterations per label, int64) and ``n_features_in`` (features seen by
    ``fit``).
    """

    FIELDS = ("weights", "intercept", "n_iter", "n_features_in")

    def to_dict(self):
        """The state: the weights as CSR arrays (``weights.data``, ``.indices``,
        ``.indptr``) and ``shape``, ``intercept``, ``n_iter``, ``n_features_in``.

        Returns
        -------
        dict of str to ndarray, list or int
        """
        W = sp.csr_matrix(self.weights)
        return {"weights.data": W.data.astype(np.float64),
                "weights.indices": W.indices.astype(np.int64),
                "weights.indptr": W.indptr.astype(np.int64), "shape": list(W.shape),
                "intercept": np.asarray(self.intercept, dtype=np.float64),
                "n_iter": np.asarray(self.n_iter, dtype=np.int64),
                "n_features_in": int(self.n_features_in)}

    @classmethod
    def from_dict(cls, state):
        """The part of a state :meth:`to_dict` gave (other keys are ignored).

        Parameters
        ----------
        state : dict

        Returns
        -------
        LinearWeights
        """
        weights = sp.csr_matrix((state["weights.data"], state["weights.indices"],
                                 state["weights.indptr"]), shape=tuple(state["shape"]))
        return cls(weights=weights, intercept=state["intercept"], n_iter=state["n_iter"],
                   n_features_in=int(state["n_features_in"]))


def _class_weights(class_weight, y_pos, n):
    """(weight of negatives, weight of positives) for one binary problem."""
    if class_weight is None:
        return 1.0, 1.0
    if class_weight == "balanced":
        y = np.zeros(n, dtype=np.int8)
        y[y_pos] = 1
        w = compute_class_weight("balanced", classes=np.array([0, 1]), y=y)
        return float(w[0]), float(w[1])
    return float(class_weight.get(0, 1.0)), float(class_weight.get(1, 1.0))


def _fit_batch(X, sqnorm, positives, labels, seeds, params, n_features):
    """Fit the labels of one batch; return their pruned weights.

    Runs in a joblib worker. ``positives[t]`` are the positive rows of
    ``labels[t]``. Returns a list of ``(label, rows, values, intercept,
    n_iter)``, where ``rows`` index features whose weight survived pruning.
    """
    loss, C, class_weight, fit_intercept, tol, max_iter, solver, threshold = params
    n = X.shape[0]
    out = []
    if solver == "dcd":
        indptr = X.indptr.astype(np.int64, copy=False)
        indices = X.indices.astype(np.int32, copy=False)
        data = X.data.astype(np.float64, copy=False)
        w = np.zeros(n_features + 1)
    for label, pos, seed in zip(labels, positives, seeds):
        c_neg, c_pos = _class_weights(class_weight, pos, n)
        if solver == "dcd":
            n_iter = dcd_squared_hinge(
                indptr, indices, data, sqnorm, pos, C * c_pos, C * c_neg,
                1.0 if fit_intercept else 0.0, tol, max_iter, seed, w,
            )
            coef, intercept = w[:n_features], float(w[n_features])
        else:
            y = np.zeros(n, dtype=np.int64)
            y[pos] = 1
            common = dict(C=C, class_weight=class_weight, fit_intercept=fit_intercept,
                          tol=tol, max_iter=max_iter, random_state=seed)
            if loss == "logistic":
                model = LogisticRegression(solver="liblinear", **common)
            else:
                model = LinearSVC(loss="squared_hinge", dual=True, **common)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(X, y)
            coef = model.coef_.ravel()
            intercept = float(model.intercept_[0]) if fit_intercept else 0.0
            n_iter = int(np.max(model.n_iter_))
        keep = np.flatnonzero(np.abs(coef) > threshold) if threshold > 0 else np.flatnonzero(coef)
        out.append((label, keep.astype(np.int32), coef[keep].copy(), intercept, n_iter))
    return out


def fit_one_vs_rest(X, Y, *, loss="squared_hinge", C=1.0, class_weight=None,
                    fit_intercept=True, tol=0.1, max_iter=1000, prune_threshold=0.01,
                    solver="auto", n_jobs=None, random_state=None, batches_per_job=8,
                    verbose=0):
    """Fit one binary linear model per label; return pruned sparse weights.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), float64
        Features (for example TF-IDF).
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        0/1 label indicators (as returned by ``check_label_matrix``).
    loss, C, class_weight, fit_intercept, tol, max_iter, prune_threshold, solver
        See :class:`OneVsRestLinear`.
    n_jobs : int, default=None
        Number of joblib workers (``None``: 1, or the active
        ``joblib.parallel_config``).
    random_state : int, RandomState or None
        Source of the per-label seeds of the dual solvers.
    batches_per_job : int, default=8
        Labels are split into ``batches_per_job * effective_n_jobs`` batches,
        each one joblib task, so that per-task overhead stays small.
    verbose : int, default=0
        Report finished batches: a tqdm bar on a terminal, one line per
        batch in a file or a pipe (:func:`xplant._progress.steps`).

    Returns
    -------
    weights : scipy.sparse.csr_matrix of shape (n_features, n_labels), float64
        Weights with ``|w| <= prune_threshold`` dropped.
    intercept : ndarray of shape (n_labels,), float64
        Bias of each label; ``EMPTY_LABEL_SCORE`` for labels with no positive.
    n_iter : ndarray of shape (n_labels,), int64
        Solver iterations per label (0 for labels with no positive).
    """
    n, n_features = X.shape
    n_labels = Y.shape[1]
    if solver == "auto":
        solver = "dcd" if loss == "squared_hinge" else "liblinear"
    Yc = Y.tocsc()
    Yc.sort_indices()
    freq = np.diff(Yc.indptr)
    trained = np.flatnonzero(freq > 0)
    seeds = check_random_state(random_state).randint(0, np.iinfo(np.int32).max, size=n_labels)
    # Frequent and rare labels cost differently: deal labels round-robin in
    # order of frequency so that every batch gets a similar mix.
    order = trained[np.argsort(-freq[trained], kind="stable")]
    n_batches = max(1, min(len(order), batches_per_job * effective_n_jobs(n_jobs)))
    batches = [order[b::n_batches] for b in range(n_batches)]
    sqnorm = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    params = (loss, float(C), class_weight, fit_intercept, float(tol), int(max_iter), solver,
              float(prune_threshold))
    results = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
        delayed(_fit_batch)(
            X, sqnorm,
            [Yc.indices[Yc.indptr[j]:Yc.indptr[j + 1]].astype(np.int64) for j in batch],
            batch, seeds[batch], params, n_features,
        )
        for batch in batches
    )
    if verbose:
        from .._progress import steps
        results = steps(results, f"one-vs-rest: {len(order)} labels in {n_batches} batches",
                        total=n_batches, verbose=verbose)
    intercept = np.full(n_labels, EMPTY_LABEL_SCORE)
    n_iter = np.zeros(n_labels, dtype=np.int64)
    rows = [np.empty(0, dtype=np.int32)] * n_labels
    vals = [np.empty(0)] * n_labels
    for batch in results:
        for label, keep, values, b, it in batch:
            rows[label], vals[label], intercept[label], n_iter[label] = keep, values, b, it
    counts = np.array([r.shape[0] for r in rows], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    weights = sp.csc_matrix(
        (np.concatenate(vals), np.concatenate(rows), indptr), shape=(n_features, n_labels)
    ).tocsr()
    return weights, intercept, n_iter


class OneVsRestLinear(SparseFeatureRanker):
    """One binary linear model per label, with sparse pruned weights.

    Each label gets its own L2-regularised linear classifier on the (sparse)
    features, trained in parallel over labels with joblib. Weights whose
    magnitude is at most ``prune_threshold`` are dropped, as in DiSMEC
    (Babbar & Schölkopf, WSDM 2017), and the rest are kept as one sparse
    ``(n_features, n_labels)`` matrix, so that scoring is one sparse product.

    Parameters
    ----------
    loss : {"squared_hinge", "logistic"}, default="squared_hinge"
        ``"squared_hinge"``: L2-loss linear SVM, the XMTC workhorse
        (LIBLINEAR's solver 1, the default of LibMultiLabel and DiSMEC).
        ``"logistic"``: logistic regression; enables ``predict_proba``.
    C : float, default=1.0
        Inverse regularisation strength (loss weight), > 0.
    class_weight : "balanced", dict or None, default=None
        Weights of the negative (key 0) and positive (key 1) rows of each
        binary problem, as scikit-learn's ``class_weight``; ``"balanced"``
        uses ``n / (2 * count)`` per label.
    fit_intercept : bool, default=True
        Append a constant feature of value 1 whose weight is the intercept;
        it is regularised, as in LIBLINEAR's ``-B 1``.
    tol : float, default=0.1
        Stopping tolerance. For the dual solvers it bounds the spread of the
        projected gradient; 0.1 is LIBLINEAR's default for them and is what
        makes one-vs-rest fast at thousands of labels.
    max_iter : int, default=1000
        Maximum number of solver iterations per label.
    prune_threshold : float, default=0.01
        Weights with ``|w| <= prune_threshold`` are set to 0 (DiSMEC's
        Delta = 0.01). ``0`` keeps every non-zero weight.
    solver : {"auto", "dcd", "liblinear"}, default="auto"
        ``"dcd"``: xplant's numba dual coordinate descent (Hsieh et al. 2008),
        squared hinge only; it reads the shared feature matrix in place.
        ``"liblinear"``: scikit-learn's ``LinearSVC(dual=True)`` or
        ``LogisticRegression(solver="liblinear")`` per label; same optimum,
        but each call copies X, which costs ~0.5 s per label at EURLEX57K
        scale. ``"auto"``: ``"dcd"`` for squared hinge, ``"liblinear"`` for
        logistic.
    n_jobs : int, default=None
        Number of joblib workers over label batches. ``None`` means 1 unless
        inside ``joblib.parallel_config``; -1 uses all cores. Threads are
        preferred (both solvers release the GIL); under
        ``joblib.parallel_config(backend="dask")`` or ``"ray"`` the batches
        run on that cluster instead.
    random_state : int, RandomState or None, default=None
        Seeds the order in which the dual solvers visit documents (one seed
        per label, drawn up front, so results do not depend on ``n_jobs``).
    verbose : int, default=0
        1: report the per-label training batch by batch (a tqdm bar on a
        terminal, one line per batch in a log).

    Attributes
    ----------
    weights_ : scipy.sparse.csr_matrix of shape (n_features, n_labels), float64
        Pruned weights.
    intercept_ : ndarray of shape (n_labels,), float64
        Intercepts; ``EMPTY_LABEL_SCORE`` (-1000) for labels with no training
        positive, whose weights are all zero, so their score is that constant.
    n_iter_ : ndarray of shape (n_labels,), int64
        Solver iterations per label.
    parts_ : dict of str to object
        The fitted parts: ``"label_space"`` (:class:`xplant._label_space.LabelSpace`),
        which the label-space attributes read, ``"model"`` (:class:`LinearWeights`:
        ``weights_``, ``intercept_``, ``n_iter_``, ``n_features_in_``), the
        decision rule once set, and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict(X)`` (``parts_["decision_rule"]``,
        :class:`xplant.metrics.DecisionRule`): the default rule (Notes)
        until one is set; ``xplant run`` sets the rule it chose on dev, and
        a saved model keeps it.
    classes_, n_labels_, label_frequency_, n_train_documents_
        Label space, as in the xplant API: label names (or ``0..L-1``),
        number of labels, int64 training positives per label, number of
        training documents.
    n_features_in_ : int
        Number of features seen in ``fit``.
    prediction_form_ : dict
        The form ``predict`` answers in, that of the ``Y`` given to ``fit``
        (:func:`xplant._labels.prediction_form`): dense, CSR, or a 1-D y's
        values.

    Notes
    -----
    ``decision_function(X) = X @ weights_ + intercept_``. ``predict(X)``
    with no argument applies ``decision_rule_``, by default a decision
    value >= 0 (the rule each binary model was trained for; for logistic
    the rule reads probabilities, ``predict_proba >= 0.5``: the same labels
    but for decision values within about 1e-16 below 0, whose sigmoid
    rounds to 0.5);
    ``predict(X, k=...)`` takes the top k and ``predict(X, threshold=...)``
    thresholds the decision value.

    Training costs one solver run per label with a positive; on EURLEX57K
    (45,000 documents, ~40,000 TF-IDF features, 4,271 labels) that is
    0.2-0.5 s per label per core with ``solver="dcd"`` (about 1.5 times
    more with ``fit_intercept=True`` than without), ~22 CPU-minutes in all.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> Y = np.array([[1, 0], [1, 0], [0, 1], [1, 1]])
    >>> clf = OneVsRestLinear(C=10.0, random_state=0).fit(X, Y)
    >>> clf.predict_top_k(np.array([[1.0, 0.0]]), 1)[0].tolist()
    [[0]]
    >>> clf.predict(np.array([[0.0, 1.0]])).tolist()   # a dense Y: a dense answer
    [[0, 1]]
    """

    #: the fitted model's views: parts_["model"], saved and restored whole
    weights_, intercept_, n_iter_, n_features_in_ = part_fields(
        "model", LinearWeights, "weights", "intercept", "n_iter", "n_features_in")

    _parameter_constraints = {
        "loss": [StrOptions({"squared_hinge", "logistic"})],
        "C": [number_above(0)],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "fit_intercept": ["boolean"],
        "tol": [number_above(0)],
        "max_iter": [int_at_least(1)],
        "prune_threshold": [number_at_least(0)],
        "solver": [StrOptions({"auto", "dcd", "liblinear"})],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, loss="squared_hinge", C=1.0, *, class_weight=None, fit_intercept=True,
                 tol=0.1, max_iter=1000, prune_threshold=0.01, solver="auto", n_jobs=None,
                 random_state=None, verbose=0):
        self.loss = loss
        self.C = C
        self.class_weight = class_weight
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.prune_threshold = prune_threshold
        self.solver = solver
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _check_relations(self):
        """``solver="dcd"`` solves the squared hinge only; ``class_weight``'s keys are 0 and 1."""
        if self.solver == "dcd" and self.loss != "squared_hinge":
            raise ValueError(
                'solver="dcd" solves the squared hinge loss only; use solver="liblinear" '
                'or "auto" for loss="logistic".'
            )
        if self.class_weight is not None and self.class_weight != "balanced":
            bad = set(self.class_weight) - {0, 1}
            if bad:
                raise ValueError(
                    f"class_weight keys must be 0 (negatives) and 1 (positives); got {sorted(bad)}."
                )

    def _fit(self, X, Y, library=None):
        """One linear model per label of ``Y`` (:func:`fit_one_vs_rest`)."""
        weights, intercept, n_iter = fit_one_vs_rest(
            X, Y, loss=self.loss, C=self.C, class_weight=self.class_weight,
            fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter,
            prune_threshold=self.prune_threshold, solver=self.solver, n_jobs=self.n_jobs,
            random_state=self.random_state, verbose=self.verbose,
        )
        self.weights_, self.intercept_, self.n_iter_ = weights, intercept, n_iter
        not_converged = int(np.sum(n_iter >= self.max_iter))
        if not_converged:
            warnings.warn(
                f"{not_converged} of {self.n_labels_} labels reached max_iter={self.max_iter} "
                "before converging; raise max_iter or tol.",
                ConvergenceWarning,
            )

    def _validate_X(self, X):
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return X

    def _scores(self, X):
        product = X @ self.weights_
        product = product.toarray() if sp.issparse(product) else np.asarray(product)
        return product + self.intercept_

    def _default_decision_rule(self):
        # decision values >= 0, which is sigmoid >= 0.5 on the probabilities a logistic
        # model's rule reads (_rule_scores)
        from ..metrics import DecisionRule
        return DecisionRule("threshold", threshold=0.5 if self._is_logistic() else 0.0)

    def _is_logistic(self):
        return self.loss == "logistic"
