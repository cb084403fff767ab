"""Decisions: turn scores into label sets, and fit their parameters on dev.

Top-k (:func:`top_k_decision`, each document's k best-scored labels) and
thresholds (:func:`threshold_decision`, one global or one per label); their
parameters are chosen on dev by :func:`select_k`, :func:`select_threshold`
and :func:`select_label_thresholds`. A label is predicted by a threshold
when ``score >= threshold``; missing entries of a sparse score matrix are
never predicted. The rule that picks one of them on dev, and the dict that
records it, are in :mod:`xplant.metrics._decision_rule`.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from . import _kernels as K
from ._classification import _scored_columns, _scored_entries, f1_score
from ._ranking import _top_k
from ._validation import check_binary, check_k, check_scores, check_top_k

__all__ = [
    "top_k_decision",
    "threshold_decision",
    "select_k",
    "select_threshold",
    "select_label_thresholds",
]

_METRICS = {
    "micro_f1": dict(average="micro"),
    "macro_f1": dict(average="per_label"),
    "macro_f1_harmonic": dict(average="harmonic"),
}


def _metric_fn(metric):
    if callable(metric):
        return metric
    if not isinstance(metric, str) or metric not in _METRICS:
        raise ValueError(
            f"metric must be one of {sorted(_METRICS)} or a callable(y_true, y_pred) -> float, "
            f"got {metric!r}."
        )
    kw = _METRICS[metric]
    return lambda yt, yp: f1_score(yt, yp, **kw)


def _rows_to_csr(top, n_labels):
    n = top.shape[0]
    valid = top >= 0
    counts = valid.sum(axis=1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    ordered = np.sort(np.where(valid, top, np.iinfo(np.int64).max), axis=1)
    indices = ordered[np.arange(top.shape[1])[None, :] < counts[:, None]]
    return sp.csr_matrix(
        (np.ones(indices.size, dtype=np.int64), indices, indptr), shape=(n, n_labels)
    )


def top_k_decision(y_score=None, k=5, *, y_top_k=None, n_labels=None):
    """Predict the k best-scored labels of each row.

    Parameters
    ----------
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels), default=None
        Scores (for CSR, only stored entries can be chosen).
    k : int, default=5
        Labels predicted per row.
    y_top_k : ndarray of shape (n_samples, >=k), int, default=None
        Ranked label indices instead of scores (-1 = none); needs ``n_labels``.
    n_labels : int, default=None
        Number of label columns, with ``y_top_k``.

    Returns
    -------
    y_pred : scipy.sparse.csr_matrix of shape (n_samples, n_labels), int64
        0/1 with at most k ones per row; ties go to the lower label index.

    Examples
    --------
    >>> import numpy as np
    >>> top_k_decision(np.array([[0.1, 0.7, 0.7]]), k=2).toarray()
    array([[0, 1, 1]])
    """
    k = check_k(k)
    if (y_score is None) == (y_top_k is None):
        raise ValueError("Pass exactly one of y_score or y_top_k.")
    if y_score is not None:
        S = check_scores(y_score)
        return _rows_to_csr(_top_k(S, k)[0], S.shape[1])
    if n_labels is None:
        raise ValueError("y_top_k needs n_labels (the number of label columns).")
    top = np.asarray(y_top_k)
    top = check_top_k(top, top.shape[0] if top.ndim == 2 else -1, int(n_labels), k)[:, :k]
    return _rows_to_csr(top, int(n_labels))


def _check_threshold(threshold, n_labels):
    t = np.asarray(threshold, dtype=np.float64)
    if t.ndim == 0:
        t = np.full(n_labels, float(t))
    if t.shape != (n_labels,) or np.isnan(t).any():
        raise ValueError(
            f"threshold must be a number or an array of shape ({n_labels},) without NaN, "
            f"got shape {t.shape}."
        )
    return t


def threshold_decision(y_score, threshold):
    """Predict every label whose score is at least the threshold.

    Parameters
    ----------
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        Scores.
    threshold : float or array-like of shape (n_labels,)
        Global or per-label threshold; label l is predicted when
        ``y_score[:, l] >= threshold[l]``. Missing sparse entries and
        ``-inf`` scores never are (they are never ranked).

    Returns
    -------
    y_pred : scipy.sparse.csr_matrix of shape (n_samples, n_labels), int64

    Examples
    --------
    >>> import numpy as np
    >>> threshold_decision(np.array([[0.2, 0.5, 0.9]]), 0.5).toarray()
    array([[0, 1, 1]])
    """
    S = check_scores(y_score)
    t = _check_threshold(threshold, S.shape[1])
    # -inf is never ranked, so never predicted, whatever the threshold
    if sp.issparse(S):
        keep = (S.data >= t[S.indices]) & (S.data != -np.inf)
        out = sp.csr_matrix((keep.astype(np.int64), S.indices.copy(), S.indptr.copy()), shape=S.shape)
        out.eliminate_zeros()
        return out
    return sp.csr_matrix(((S >= t[None, :]) & (S != -np.inf)).astype(np.int64))


def select_k(y_true_dev, y_score_dev=None, ks=range(1, 11), metric="micro_f1", *, y_top_k=None,
             return_choice=False):
    """Choose the top-k decision's k on dev data.

    Parameters
    ----------
    y_true_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True dev labels, 0/1.
    y_score_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels), default=None
        Dev scores of the model whose decision is chosen.
    ks : iterable of int, default=range(1, 11)
        Candidate values.
    metric : {"micro_f1", "macro_f1", "macro_f1_harmonic"} or callable, default="micro_f1"
        Maximised; a callable takes ``(y_true, y_pred)``.
    y_top_k : ndarray of shape (n_samples, >=max(ks)), int, default=None
        Ranked label indices instead of scores.
    return_choice : bool, default=False
        Return the :class:`~xplant.model_selection.DevChoice` record (every
        k's dev score) instead of k.

    Returns
    -------
    k : int
        The best k; ties go to the smaller k (a decision choice of
        :func:`~xplant.model_selection.choose_on_dev`).

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0, 0], [1, 1, 0, 0]])
    >>> S = np.array([[.9, .8, .1, .0], [.8, .9, .0, .1]])
    >>> select_k(Y, S, ks=range(1, 4))
    2
    """
    ks = sorted({check_k(k, "each of ks") for k in ks})
    if not ks:
        raise ValueError("ks is empty; give at least one candidate k.")
    Y = check_binary(y_true_dev, "y_true_dev")
    n, L = Y.shape
    kmax = ks[-1]
    if (y_score_dev is None) == (y_top_k is None):
        raise ValueError("Pass exactly one of y_score_dev or y_top_k.")
    if y_score_dev is not None:
        top = _top_k(check_scores(y_score_dev, Y.shape, "y_score_dev"), kmax)[0]
    else:
        top = check_top_k(y_top_k, n, L, kmax)[:, :kmax]
    if metric == "micro_f1":
        hits = K.hit_weights(top, Y.indptr, Y.indices, np.ones(L))
        tp = np.cumsum(hits.sum(axis=0))
        npred = np.cumsum((top >= 0).sum(axis=0))
        denom = npred + Y.nnz
        f = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
        # a k past the ranked columns predicts nothing more: it scores as the last one
        values = [f[min(k, f.size) - 1] if f.size else 0.0 for k in ks]
    else:
        fn = _metric_fn(metric)
        values = [fn(Y, _rows_to_csr(top[:, :k], L)) for k in ks]
    from .._choice import choose_on_dev
    choice = choose_on_dev("k", [int(k) for k in ks], values, family="decision",
                           criterion=metric if isinstance(metric, str) else "callable",
                           fallback=None)
    return choice if return_choice else int(choice.value)


def _candidate_thresholds(vals):
    u = np.unique(vals)
    if u.size > 101:
        u = np.unique(np.quantile(u, np.linspace(0.0, 1.0, 101)))
    return u


def _exact_threshold(Y, S):
    """The micro-F1-best threshold of the rule ``score >= t`` and its micro-F1.

    Lowering t past a score that no positive holds adds only false
    positives, so the best t is one of the positives' scores (ties: the
    largest). For each such candidate, the positives at or above it come
    from the sorted positive scores and the predictions from the sorted
    scores at or above the lowest positive: one sort of those, not of every
    entry. Without a scored positive: (inf, 0).
    """
    if sp.issparse(S):
        mask = K.positive_mask_csr(S.indptr, S.indices, Y.indptr, Y.indices)
        every, pv = S.data, S.data[mask]
    else:
        rows = np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr))
        every, pv = S, S[rows, Y.indices]
    if pv.size == 0:
        return float("inf"), 0.0
    pv = np.sort(pv.astype(np.float64))
    cand = np.unique(pv)[::-1]                              # from the largest
    tp = pv.size - np.searchsorted(pv, cand, side="left")
    above = np.sort(every[every >= pv[0]].astype(np.float64))
    npred = above.size - np.searchsorted(above, cand, side="left")
    f = 2.0 * tp / (npred + Y.nnz)
    best = int(np.argmax(f))                                # ties: the larger threshold
    return float(cand[best]), float(f[best])


def select_threshold(y_true_dev, y_score_dev, thresholds=None, metric="micro_f1", *,
                     return_choice=False):
    """Choose one global threshold on dev data.

    For ``metric="micro_f1"`` with ``thresholds=None`` the search is exact:
    every distinct dev score is tried, by sorting the scores at or above the
    lowest positive's (O(m log m) for m scored entries at most). Other metrics try ``thresholds``, or by default 101
    quantiles of the distinct dev scores.

    Parameters
    ----------
    y_true_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True dev labels, 0/1.
    y_score_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        Dev scores of the model whose decision is chosen.
    thresholds : array-like of float, default=None
        Candidates.
    metric : {"micro_f1", "macro_f1", "macro_f1_harmonic"} or callable, default="micro_f1"
        Maximised; a callable takes ``(y_true, y_pred)``.
    return_choice : bool, default=False
        Return the :class:`~xplant.model_selection.DevChoice` record instead
        of the threshold. Its scores hold every candidate's dev score, except
        for the exact sweep (``micro_f1`` with ``thresholds=None``), whose
        candidates are every distinct dev score: the record then holds the
        chosen threshold's score alone.

    Returns
    -------
    threshold : float
        The best threshold for the rule ``score >= threshold``; ties go to the
        larger threshold (fewer predictions).

    Raises
    ------
    ValueError
        If ``y_true_dev`` has no positive label.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 0, 1], [0, 1, 0]])
    >>> S = np.array([[.9, .3, .6], [.2, .7, .4]])
    >>> select_threshold(Y, S)
    0.6
    """
    Y = check_binary(y_true_dev, "y_true_dev")
    S = check_scores(y_score_dev, Y.shape, "y_score_dev")
    if Y.nnz == 0:
        raise ValueError("y_true_dev has no positive label; a threshold cannot be tuned on it.")
    from .._choice import choose_on_dev
    name = metric if isinstance(metric, str) else "callable"
    if metric == "micro_f1" and thresholds is None:       # exact
        t, f = _exact_threshold(Y, S)
        cand, values = [float(t)], [float(f)]
    elif metric == "micro_f1":
        vals, pos, _, _, total_pos = _scored_entries(Y, S)
        cand = np.sort(np.asarray(thresholds, dtype=np.float64).ravel())[::-1]
        order = np.argsort(-vals, kind="stable")
        sv = -vals[order]
        cum_pos = np.concatenate([[0], np.cumsum(pos[order])])
        npred = np.searchsorted(sv, -cand, side="right")
        values = 2.0 * cum_pos[npred] / (npred + total_pos)
    else:
        fn = _metric_fn(metric)
        vals = _scored_entries(Y, S)[0]
        cand = (
            _candidate_thresholds(vals)
            if thresholds is None
            else np.asarray(thresholds, dtype=np.float64).ravel()
        )
        cand = np.sort(cand)[::-1]
        values = [fn(Y, threshold_decision(S, t)) for t in cand]
    # candidates from the largest threshold: ties keep it (fewer predictions)
    choice = choose_on_dev("threshold", [float(c) for c in cand], values, family="decision",
                           criterion=name, fallback=None)
    return choice if return_choice else float(choice.value)


def select_label_thresholds(y_true_dev, y_score_dev, *, fallback=None, min_positives=1):
    """Choose one threshold per label, each maximising that label's dev F1.

    One sorted sweep per label (a parallel kernel over the labels), so the
    cost is O(n log n) per label for n dev documents.

    Parameters
    ----------
    y_true_dev, y_score_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        As in :func:`select_threshold`.
    fallback : float, default=None
        Threshold for labels that are not tuned (fewer than
        ``min_positives`` dev positives, or no positive ever scored).
        ``None`` uses :func:`select_threshold`'s global micro-F1 threshold.
    min_positives : int, default=1
        Dev positives a label needs for a threshold of its own.

    Returns
    -------
    thresholds : ndarray of shape (n_labels,), float64
        For the rule ``score >= thresholds[l]``; ties go to the larger threshold.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 0], [0, 1], [1, 0]])
    >>> S = np.array([[.9, .2], [.5, .3], [.6, .1]])
    >>> select_label_thresholds(Y, S)
    array([0.6, 0.3])
    """
    min_positives = check_k(min_positives, "min_positives")
    Y = check_binary(y_true_dev, "y_true_dev")
    S = check_scores(y_score_dev, Y.shape, "y_score_dev")
    indptr, vals, pos, _, _, n_pos = _scored_columns(Y, S)
    thr, f1 = K.best_threshold_columns(indptr, vals, pos, n_pos)
    untuned = (n_pos < min_positives) | (f1 <= 0)
    if untuned.any():
        if fallback is None:
            fallback = select_threshold(Y, S)
        elif not isinstance(fallback, numbers.Real) or np.isnan(fallback):
            raise ValueError(f"fallback must be a number or None, got {fallback!r}.")
        thr[untuned] = float(fallback)
    return thr
