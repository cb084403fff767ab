"""Scorers: every metric usable in ``cross_val_score`` and ``GridSearchCV``.

A scorer is a callable ``scorer(estimator, X, y) -> float``. It picks the
cheapest route to the numbers it needs:

1. ranking metrics use ``predict_top_k(X, k) -> (indices, scores)`` when the
   estimator (or a Pipeline's final step) has it, so no dense (n, L) matrix;
2. otherwise the first of ``response_method=("decision_function",
   "predict_proba")`` the estimator has (ranking, AUC), or ``predict`` (F1),
   so any classifier works, including
   :class:`~sklearn.multiclass.OneVsRestClassifier`.

``y`` is read by the rule of ``fit`` (:func:`scoring_targets`): a 0/1 matrix
or label lists, binarised through the fitted ``classes_``; a label the model
never saw counts as a miss, never ranked.

Propensity-scored and tail metrics read ``label_frequency_`` and
``n_train_documents_`` from the (final step of the) fitted estimator, unless
they are given as arguments.
"""

import re
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import get_scorer as _sk_get_scorer
from sklearn.pipeline import Pipeline

from .._params import final_step
from ._classification import f1_score, precision_score, recall_score, roc_auc, tail_f1
from ._propensity import inverse_propensity
from ._ranking import (mean_average_precision, ndcg_at_k, precision_at_k, psndcg_at_k, psp_at_k,
                       r_precision_at_k, recall_at_k, sort_top_k)
from ._validation import check_binary, check_k

__all__ = ["get_scorer", "get_scorer_names", "make_xmtc_scorer", "split_metric_name", "XMTCScorer"]

_SCORES = ("decision_function", "predict_proba")

# name -> (function, kind, fixed kwargs); kind: "rank", "ps", "map", "auc", "pred", "tail"
_METRICS = {
    "precision": (precision_at_k, "rank", {}),
    "recall": (recall_at_k, "rank", {}),
    "r_precision": (r_precision_at_k, "rank", {}),
    "ndcg": (ndcg_at_k, "rank", {}),
    "psp": (psp_at_k, "ps", {}),
    "psndcg": (psndcg_at_k, "ps", {}),
    "map": (mean_average_precision, "map", {}),
    "micro_f1": (f1_score, "pred", {"average": "micro"}),
    "macro_f1": (f1_score, "pred", {"average": "per_label"}),
    "macro_f1_harmonic": (f1_score, "pred", {"average": "harmonic"}),
    "micro_precision": (precision_score, "pred", {"average": "micro"}),
    "micro_recall": (recall_score, "pred", {"average": "micro"}),
    "tail_f1": (tail_f1, "tail", {}),
    "macro_auc": (roc_auc, "auc", {"average": "macro"}),
    "micro_auc": (roc_auc, "auc", {"average": "micro"}),
}
_ALIASES = {"mean_average_precision": "map"}
_AT_K = re.compile(r"^(precision|recall|r_precision|ndcg|psp|psndcg)_at_(\d+)$")


def split_metric_name(name):
    """The metric and the cut-off that a scorer name spells.

    The one reading of xplant's metric names: :func:`get_scorer`,
    :func:`make_xmtc_scorer` and the neural estimators' ``scoring`` (their
    early stopping and dev choices) all call it.

    Parameters
    ----------
    name : str
        ``"<metric>_at_<k>"`` for a ranking metric (``precision``,
        ``recall``, ``r_precision``, ``ndcg``, ``psp``, ``psndcg``), or a
        metric's name alone (``"map"``, its alias ``"mean_average_precision"``,
        ``"micro_f1"``...).

    Returns
    -------
    metric : str
        The metric's own name (aliases resolved).
    k : int or None
        The cut-off the name fixes (not checked here: 0 is returned as 0),
        or None.

    Raises
    ------
    ValueError
        For a name that is no xplant metric.

    Examples
    --------
    >>> split_metric_name("ndcg_at_5"), split_metric_name("mean_average_precision")
    (('ndcg', 5), ('map', None))
    """
    match = _AT_K.match(name) if isinstance(name, str) else None
    if match:
        return match.group(1), int(match.group(2))
    metric = _ALIASES.get(name, name) if isinstance(name, str) else name
    if not isinstance(metric, str) or metric not in _METRICS:
        raise ValueError(f"Unknown xplant metric {name!r}; choose one of {sorted(_METRICS)} "
                         "(ranking ones as e.g. 'precision_at_5').")
    return metric, None


def _transform_to_final(estimator, X):
    while isinstance(estimator, Pipeline):
        for _, step in estimator.steps[:-1]:
            if step is not None and step != "passthrough":
                X = step.transform(X)
        estimator = estimator.steps[-1][1]
    return estimator, X


def scoring_targets(estimator, y):
    """``y`` read by the rule of ``fit``, through the estimator's fitted ``classes_``.

    A scorer gets ``y`` as the estimator's ``fit`` got it: a 0/1 matrix, or
    label lists (:func:`xplant._labels.check_targets`). Label lists are
    binarised against the fitted ``classes_``; a label the model never saw
    (one only in a validation fold) gets a column after them, which the
    model never ranks, so its gold positives count as misses.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
    y : {array-like, sparse matrix} or label lists

    Returns
    -------
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_classes + n_unknown)
    n_unknown : int
        Columns appended for labels outside ``classes_``.

    Examples
    --------
    >>> from xplant.linear import FrequencyPrior
    >>> prior = FrequencyPrior().fit(np.zeros((2, 1)), [["B"], ["A", "B"]])
    >>> Y, n_unknown = scoring_targets(prior, [["B"], ["Z"]])
    >>> Y.toarray().tolist(), n_unknown
    ([[0, 1, 0], [0, 0, 1]], 1)
    """
    from .._labels import check_targets
    classes = getattr(final_step(estimator), "classes_", None)
    if classes is None or np.ndim(classes) != 1:
        return check_binary(y), 0
    Y, names = check_targets(y, label_names=classes, unknown="append", require_positive=False,
                             dtype=np.int8)
    return Y, len(names) - len(classes)


def _response_scores(estimator, X, response_method):
    """(n, L) scores from the first method of ``response_method`` the estimator has."""
    from ._validation import label_scores
    methods = (response_method,) if isinstance(response_method, str) else tuple(response_method)
    for name in methods:
        if hasattr(estimator, name):
            raw = getattr(estimator, name)(X)
            return raw if hasattr(raw, "tocsr") else label_scores(
                final_step(estimator), raw)
    raise TypeError(f"{type(estimator).__name__} has none of {list(methods)}, so it cannot be "
                    "scored by this metric")


def pad_scores(y_score, n_labels, fill=-np.inf):
    """Scores widened to ``n_labels`` columns for labels outside a model's space.

    The extra columns are labels of the targets that the model cannot rank
    (a test code outside its label space): a sparse matrix is widened (a
    missing entry is never ranked), a dense one gets columns of ``fill``
    (``-inf``: ranked after every scored label). Either way every metric
    counts their positives as misses.

    Parameters
    ----------
    y_score : {ndarray, sparse matrix} of shape (n_samples, m)
        A model's scores.
    n_labels : int
        The targets' width, at least ``m``.
    fill : float, default=-inf
        The dense columns' value (0 for predictions).

    Returns
    -------
    {ndarray of float64, csr_matrix} of shape (n_samples, max(m, n_labels))

    Examples
    --------
    >>> pad_scores(np.array([[0.5, 0.2]]), 3).tolist()
    [[0.5, 0.2, -inf]]
    """
    n, m = y_score.shape
    if n_labels <= m:
        return y_score
    if hasattr(y_score, "tocsr"):
        out = y_score.tocsr(copy=True)
        out.resize((n, n_labels))
        return out
    return np.hstack([np.asarray(y_score, dtype=np.float64), np.full((n, n_labels - m), fill)])


def _pad(matrix, n_unknown, fill):
    """``matrix`` with ``n_unknown`` more columns of ``fill`` (:func:`pad_scores`)."""
    return pad_scores(matrix, matrix.shape[1] + n_unknown, fill)


def _fitted_frequency(estimator, kwargs, need_n):
    final = final_step(estimator)
    freq = kwargs.pop("label_frequency", None)
    n_docs = kwargs.pop("n_train_documents", None)
    if freq is None:
        freq = getattr(final, "label_frequency_", None)
    if need_n and n_docs is None:
        n_docs = getattr(final, "n_train_documents_", None)
    if freq is None or (need_n and n_docs is None):
        raise ValueError(
            f"This scorer needs the training label frequencies: the estimator "
            f"{type(final).__name__} has no fitted label_frequency_/n_train_documents_. "
            "Pass label_frequency= and n_train_documents= (or inv_propensity=) to "
            "make_xmtc_scorer."
        )
    return np.asarray(freq), n_docs


@dataclass(eq=False, repr=False)
class XMTCScorer:
    """Scorer ``scorer(estimator, X, y) -> float`` for one xplant metric.

    Build it with :func:`make_xmtc_scorer` or :func:`get_scorer`. Its
    parameters are its fields (a dataclass); two scorers are equal only when
    they are the same object.

    Parameters
    ----------
    metric : str
        A base metric name from :func:`get_scorer_names` without ``_at_k``.
    k : int or None
        Cut-off for ranking metrics; for ``"map"``, ``None`` means the full
        ranking and an int truncates at k.
    response_method : str or tuple of str
        Score method for the scikit-learn route.
    use_top_k : bool
        Use the estimator's ``predict_top_k`` when it has one.
    kwargs : dict
        Extra keyword arguments of the metric (e.g. ``empty_rows``, ``A``,
        ``B``, ``label_frequency``, ``n_train_documents``, ``inv_propensity``).
    """

    metric: str
    k: int | None
    response_method: str | tuple
    use_top_k: bool
    kwargs: dict

    def __repr__(self):
        at = f"_at_{self.k}" if self.k is not None else ""
        return f"XMTCScorer({self.metric}{at})"

    def __call__(self, estimator, X, y_true, sample_weight=None):
        if sample_weight is not None:
            raise ValueError("xplant scorers do not support sample_weight.")
        fn, kind, fixed = _METRICS[self.metric]
        kwargs = {**fixed, **self.kwargs}
        Y, n_unknown = scoring_targets(estimator, y_true)
        unseen = np.zeros(n_unknown, dtype=np.int64)    # labels never seen in training
        if kind == "ps" and "inv_propensity" not in kwargs:
            A = kwargs.pop("A", 0.55)
            B = kwargs.pop("B", 1.5)
            freq, n_docs = _fitted_frequency(estimator, kwargs, need_n=True)
            kwargs["inv_propensity"] = inverse_propensity(
                label_frequency=np.concatenate([freq, unseen]), n_train_documents=int(n_docs),
                A=A, B=B)
        if kind == "tail" and "label_frequency" not in kwargs:
            freq, _ = _fitted_frequency(estimator, kwargs, need_n=False)
            kwargs["label_frequency"] = np.concatenate([freq, unseen])
        if kind in ("rank", "ps"):
            kwargs["k"] = self.k
        if kind in ("rank", "ps", "map") and self.use_top_k and (kind != "map" or self.k):
            final, Xt = _transform_to_final(estimator, X)
            if hasattr(final, "predict_top_k"):
                idx, scores = final.predict_top_k(Xt, self.k)
                top = sort_top_k(idx, scores)[0]
                # the unknown labels are never ranked: -1 where a top-k would reach them
                top = np.hstack([top, np.full((top.shape[0], n_unknown), -1, dtype=np.int64)])
                return float(fn(Y, y_top_k=top, **kwargs))
        if kind in ("pred", "tail"):
            y_pred = _pad(sp.csr_matrix(estimator.predict(X)), n_unknown, 0)
            return float(fn(Y, y_pred, **kwargs))
        S = _pad(_response_scores(estimator, X, self.response_method), n_unknown, -np.inf)
        if kind == "auc":
            return float(fn(Y, S, **kwargs).value)
        return float(fn(Y, S, **kwargs))


def make_xmtc_scorer(metric, *, k=None, response_method=_SCORES, use_top_k=True, **kwargs):
    """Make a scorer for cross-validation and grid search from an xplant metric.

    Parameters
    ----------
    metric : str
        One of ``"precision"``, ``"recall"``, ``"r_precision"``, ``"ndcg"``,
        ``"psp"``, ``"psndcg"`` (ranking at ``k``), ``"map"``, ``"micro_f1"``,
        ``"macro_f1"`` (per-label, present labels), ``"macro_f1_harmonic"``,
        ``"micro_precision"``, ``"micro_recall"``, ``"tail_f1"``,
        ``"macro_auc"``, ``"micro_auc"``; or a full name such as
        ``"precision_at_5"``.
    k : int, default=None
        Cut-off of the ranking metrics (default 5). For ``"map"``, ``None``
        ranks all labels through ``response_method``; an int truncates at k
        and may use ``predict_top_k``.
    response_method : str or tuple of str, default=("decision_function", "predict_proba")
        How scores are obtained when ``predict_top_k`` is not used: the
        first of these methods the estimator has. F1 metrics always use
        ``predict``.
    use_top_k : bool, default=True
        Use the estimator's ``predict_top_k(X, k)`` when it (or a Pipeline's
        final step) has one; it never builds a dense (n, L) matrix.
    **kwargs
        Passed to the metric (``empty_rows``, ``ties``, ``labels``,
        ``zero_division``...). Propensity metrics also take ``A``, ``B``,
        ``label_frequency``, ``n_train_documents`` or ``inv_propensity``;
        without them the fitted ``label_frequency_`` and
        ``n_train_documents_`` are read from the estimator.

    Returns
    -------
    scorer : XMTCScorer
        A callable ``scorer(estimator, X, y) -> float``; greater is better.

    Raises
    ------
    ValueError
        For an unknown metric or a bad ``k``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.multiclass import OneVsRestClassifier
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1]])
    >>> clf = OneVsRestClassifier(LogisticRegression()).fit(X, Y)
    >>> make_xmtc_scorer("precision", k=1)(clf, X, Y)
    1.0
    """
    name = metric
    metric, fixed = split_metric_name(name)
    if fixed is not None:
        if k is not None and fixed != k:
            raise ValueError(f"metric {name!r} already fixes k; do not pass k={k}.")
        k = fixed
    kind = _METRICS[metric][1]
    if kind in ("rank", "ps"):
        k = check_k(5 if k is None else k)
    elif k is not None:
        if kind != "map":
            raise ValueError(f"metric {metric!r} takes no k.")
        k = check_k(k)
    return XMTCScorer(metric, k, response_method, use_top_k, kwargs)


def get_scorer_names():
    """Names accepted by :func:`get_scorer` besides scikit-learn's own.

    Ranking metrics take any cut-off (``precision_at_3``, ``ndcg_at_10``...);
    the list shows them at 1, 3, 5 and 10.

    Examples
    --------
    >>> "psp_at_5" in get_scorer_names()
    True
    """
    names = []
    for base, (_, kind, _) in _METRICS.items():
        if kind in ("rank", "ps"):
            names += [f"{base}_at_{k}" for k in (1, 3, 5, 10)]
        else:
            names.append(base)
    return sorted(names)


def get_scorer(name):
    """Scorer by name: an xplant metric, else scikit-learn's :func:`~sklearn.metrics.get_scorer`.

    Parameters
    ----------
    name : str or callable
        E.g. ``"precision_at_5"``, ``"ndcg_at_3"``, ``"psp_at_5"``,
        ``"map"``, ``"micro_f1"``, ``"macro_f1"``, ``"macro_auc"``; other
        strings go to scikit-learn; a callable is returned unchanged.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y) -> float``.

    Examples
    --------
    >>> get_scorer("ndcg_at_5")
    XMTCScorer(ndcg_at_5)
    """
    if callable(name):
        return name
    try:
        split_metric_name(name)
    except ValueError:
        return _sk_get_scorer(name)
    return make_xmtc_scorer(name)
