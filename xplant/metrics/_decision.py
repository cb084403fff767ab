"""Decision rules: turn scores into label sets, and choose them on dev.

Three candidate rules (:data:`DECISION_RULES`): top-k (each document's k
best-scored labels), one global threshold and per-label thresholds. A label
is predicted by a threshold when ``score >= threshold``; missing entries of
a sparse score matrix are never predicted. :func:`choose_rule` chooses the
rule on dev by cross-fitted dev micro-F1 and fits its parameters;
:func:`apply_rule` applies a chosen rule to scores.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from . import _kernels as K
from ._classification import _scored_columns, _scored_entries, f1_score
from ._ranking import _top_k
from ._validation import check_binary, check_k, check_scores, check_top_k

__all__ = [
    "DECISION_RULES",
    "apply_rule",
    "check_rule",
    "choose_rule",
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
        ``y_score[:, l] >= threshold[l]``. Missing sparse entries never are.

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
    if sp.issparse(S):
        keep = S.data >= t[S.indices]
        out = sp.csr_matrix((keep.astype(np.int64), S.indices.copy(), S.indptr.copy()), shape=S.shape)
        out.eliminate_zeros()
        return out
    return sp.csr_matrix((S >= t[None, :]).astype(np.int64))


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
    y_true_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True dev labels, 0/1.
    y_score_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        Dev scores of the model whose decision is chosen.
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


#: The candidate decision rules of :func:`choose_rule`, from the simplest: a tie of
#: their dev scores keeps the earlier.
DECISION_RULES = ("top_k", "threshold", "per_label_threshold")

#: Dev positives a label needs for a threshold of its own under the per-label rule;
#: the others take the global threshold.
MIN_LABEL_POSITIVES = 5

#: Folds of dev documents over which :func:`choose_rule` cross-fits the rules.
RULE_FOLDS = 5


def check_rule(rule, n_labels=None):
    """The one check of a decision rule: a dict as :func:`choose_rule` returns it.

    Parameters
    ----------
    rule : dict
        ``{"rule": one of DECISION_RULES, "k": int, "threshold": float,
        "thresholds": array-like of shape (n_labels,) or None}``. ``k`` and
        ``threshold`` are needed by every rule (the top-k rule reads ``k``,
        the global threshold ``threshold``, which is also the per-label
        rule's fallback); ``thresholds`` only by ``"per_label_threshold"``
        (absent or None for the others). Other keys are ignored.
    n_labels : int or None, default=None
        The number of label columns ``thresholds`` must have.

    Returns
    -------
    dict
        ``{"rule": str, "k": int, "threshold": float, "thresholds": ndarray
        of float64 of shape (n_labels,) or None}``, a new dict.

    Raises
    ------
    ValueError
        For an unknown rule, a k that is no positive integer, a NaN or
        non-numeric threshold, or per-label thresholds that are missing,
        hold NaN or have another length than ``n_labels``.

    Examples
    --------
    >>> check_rule({"rule": "threshold", "k": 2, "threshold": 0.4})
    {'rule': 'threshold', 'k': 2, 'threshold': 0.4, 'thresholds': None}
    """
    if not isinstance(rule, dict):
        raise ValueError(f"a decision rule is a dict with 'rule', 'k' and 'threshold', got "
                         f"{rule!r:.80}")
    name = rule.get("rule")
    if not isinstance(name, str) or name not in DECISION_RULES:
        raise ValueError(f"decision rule must be one of {list(DECISION_RULES)}, got {name!r}")
    k = check_k(rule.get("k"), "the decision rule's k")
    t = rule.get("threshold")
    if isinstance(t, bool) or not isinstance(t, numbers.Real) or np.isnan(t):
        raise ValueError(f"the decision rule's threshold must be a number, got {t!r}")
    thresholds = rule.get("thresholds")
    if name != "per_label_threshold":
        thresholds = None
    elif thresholds is None:
        raise ValueError("the per_label_threshold rule needs 'thresholds', one per label")
    else:
        thresholds = np.array(thresholds, dtype=np.float64)
        if thresholds.ndim != 1 or np.isnan(thresholds).any() or \
                (n_labels is not None and thresholds.size != n_labels):
            raise ValueError("the decision rule's thresholds must be a 1-D array of numbers"
                             + ("" if n_labels is None else f" of length {n_labels}")
                             + f", got shape {thresholds.shape}")
    return {"rule": name, "k": k, "threshold": float(t), "thresholds": thresholds}


def apply_rule(y_score, rule):
    """0/1 predictions of scores under a decision rule.

    Parameters
    ----------
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        Scores on the scale the rule's thresholds were chosen on.
    rule : dict
        As :func:`choose_rule` returns it (checked by :func:`check_rule`).

    Returns
    -------
    y_pred : scipy.sparse.csr_matrix of shape (n_samples, n_labels), int64
        :func:`top_k_decision` with ``k``, or :func:`threshold_decision`
        with ``threshold`` or ``thresholds``.

    Raises
    ------
    ValueError
        For an invalid rule (:func:`check_rule`), or per-label thresholds
        of another length than the score columns.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[0.9, 0.2, 0.6]])
    >>> rule = {"rule": "per_label_threshold", "k": 1, "threshold": 0.5,
    ...         "thresholds": [0.95, 0.1, 0.5]}
    >>> apply_rule(S, rule).toarray()
    array([[0, 1, 1]])
    """
    S = check_scores(y_score)
    rule = check_rule(rule, S.shape[1])
    if rule["rule"] == "top_k":
        return top_k_decision(S, rule["k"])
    if rule["rule"] == "threshold":
        return threshold_decision(S, rule["threshold"])
    return threshold_decision(S, rule["thresholds"])


def _global_threshold(Y, S):
    """:func:`select_threshold`, or +inf (nothing predicted) without a positive label."""
    return select_threshold(Y, S) if Y.nnz else float("inf")


def _fit_rules(Y, S, rules, max_k, min_positives):
    """Each rule's parameters fitted on (Y, S): ``{rule name: rule dict}``."""
    k = select_k(Y, S, ks=range(1, max_k + 1))
    t = _global_threshold(Y, S)
    out = {}
    for r in rules:
        th = None
        if r == "per_label_threshold":
            th = (select_label_thresholds(Y, S, fallback=t, min_positives=min_positives)
                  if Y.nnz else np.full(Y.shape[1], t))
        out[r] = {"rule": r, "k": k, "threshold": t, "thresholds": th}
    return out


def _hits(Y, P):
    """True positives of 0/1 predictions P against Y (both CSR)."""
    return int(Y.multiply(P).sum())


def _cross_fitted_f1(Y, S, rules, max_k, min_positives, n_folds, random_state):
    """Each rule's micro-F1 over every dev document, each predicted by parameters
    fitted on the other folds (in-sample with fewer than two documents)."""
    n = Y.shape[0]
    folds = min(n_folds, n)
    tp, npred = np.zeros(len(rules)), np.zeros(len(rules))
    if folds < 2:
        fitted = _fit_rules(Y, S, rules, max_k, min_positives)
        for i, r in enumerate(rules):
            P = apply_rule(S, fitted[r])
            tp[i], npred[i] = _hits(Y, P), P.nnz
    else:
        fold = np.random.default_rng(random_state).permutation(n) % folds
        for f in range(folds):
            held, fit = np.flatnonzero(fold == f), np.flatnonzero(fold != f)
            fitted = _fit_rules(Y[fit], S[fit], rules, max_k, min_positives)
            Yh, Sh = Y[held], S[held]
            for i, r in enumerate(rules):
                P = apply_rule(Sh, fitted[r])
                tp[i] += _hits(Yh, P)
                npred[i] += P.nnz
    denom = npred + Y.nnz
    return np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)


def choose_rule(y_true_dev, y_score_dev, max_k=10, *, rules=DECISION_RULES,
                n_folds=RULE_FOLDS, min_positives=MIN_LABEL_POSITIVES, random_state=0,
                fallback=None, warn=True, fixed=None):
    """Choose the decision rule on dev, fairly, and fit its parameters on the whole dev.

    The candidates (``rules``, from :data:`DECISION_RULES`):

    - ``"top_k"``: each document's k best-scored labels, k in 1..``max_k``
      (:func:`select_k`);
    - ``"threshold"``: one global threshold (:func:`select_threshold`, an
      exact sweep of every dev score);
    - ``"per_label_threshold"``: one threshold per label, each maximising
      that label's F1 (:func:`select_label_thresholds`); a label with fewer
      than ``min_positives`` dev positives (or whose positives are never
      scored) takes the global threshold.

    Parameters fitted and scored on the same documents favour the rule
    with the most parameters (L thresholds can fit any dev set), so the
    rules are compared by **cross-fitting**: the dev documents are split
    into ``n_folds`` seeded random folds; each rule's parameters are fitted
    on the other folds and predict the held-out fold; a rule's score is
    the micro-F1 of these held-out predictions over every dev document.
    The rule with the best score is a decision choice of
    :func:`~xplant.model_selection.choose_on_dev` (ties keep the earlier
    rule of ``rules``, the simpler), and its parameters are then fitted on
    the whole dev. k and the global threshold are fitted on the whole dev
    whatever the rule (each a recorded choice).

    Parameters
    ----------
    y_true_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels) or None
        Dev labels. None, or no positive label: no labelled dev data.
    y_score_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels) or None
        Dev scores, on the scale the rule will read.
    max_k : int, default=10
        Largest k of the top-k rule tried.
    rules : sequence of str, default=DECISION_RULES
        The candidates. With one rule nothing is chosen: its parameters
        are fitted on the whole dev without cross-fitting.
    n_folds : int, default=RULE_FOLDS
        Folds of the cross-fitting (at most the number of dev documents;
        with a single dev document the rules are scored in-sample).
    min_positives : int, default=MIN_LABEL_POSITIVES
        Dev positives a label needs for a threshold of its own (counted in
        the documents its threshold is fitted on).
    random_state : int, default=0
        Seeds the folds.
    fallback : dict or None, default=None
        The rule taken without labelled dev data (as :func:`check_rule`
        reads it). None: ``rules[0]`` with k = 1 and threshold 0.5 (each
        label at 0.5 for the per-label rule).
    warn : bool, default=True
        Warn with :class:`~xplant.model_selection.NoDevDataWarning` when
        the fallback is taken (an estimator that warns once for all its
        choices passes False).
    fixed : dict or None, default=None
        A rule given, not chosen (as :func:`check_rule` reads it; its rule
        must be in ``rules``): nothing is fitted and the dev data are not
        read; the records hold its values with ``fixed`` True (how a refit
        on train + dev carries over the rule, k, threshold and per-label
        thresholds its first fit chose).

    Returns
    -------
    dict
        The rule, as :func:`check_rule` gives it (``"rule"``, ``"k"``,
        ``"threshold"``, ``"thresholds"``: per-label thresholds of float64
        aligned with the score columns, or None for the other rules), plus
        ``"choices"``: the :class:`~xplant.model_selection.DevChoice`
        records by name: ``"decision"`` (every candidate rule's
        cross-fitted dev micro-F1; absent with one rule), ``"k"`` and
        ``"threshold"`` (fitted on the whole dev). Without labelled dev
        data the records hold the fallback (``on_dev`` False).

    Raises
    ------
    ValueError
        For no rules or an unknown one, a ``max_k``, ``n_folds`` or
        ``min_positives`` that is no positive integer, scores whose shape
        differs from the labels', or an invalid ``fallback``.

    Warns
    -----
    NoDevDataWarning
        Once, without labelled dev data (with ``warn``).

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]])
    >>> S = np.array([[.9, .8, .1, .0], [.8, .9, .0, .1], [.1, .7, .9, .0], [.9, .0, .1, .8]])
    >>> rule = choose_rule(Y, S, max_k=3, n_folds=2)
    >>> rule["rule"], rule["k"], rule["threshold"]
    ('top_k', 2, 0.7)
    >>> [(r, round(f, 3)) for r, f in rule["choices"]["decision"].scores]
    [('top_k', 1.0), ('threshold', 0.933), ('per_label_threshold', 0.933)]
    """
    from .._choice import DevChoice, choose_on_dev
    rules = list(rules)
    if not rules:
        raise ValueError(f"rules is empty; give some of {list(DECISION_RULES)}")
    for r in rules:
        if not isinstance(r, str) or r not in DECISION_RULES:
            raise ValueError(f"each rule must be one of {list(DECISION_RULES)}, got {r!r}")
    max_k = check_k(max_k, "max_k")
    n_folds = check_k(n_folds, "n_folds")
    min_positives = check_k(min_positives, "min_positives")
    Y = None if y_true_dev is None else check_binary(y_true_dev, "y_true_dev")
    S = None if y_score_dev is None else check_scores(
        y_score_dev, None if Y is None else Y.shape, "y_score_dev")
    n_labels = S.shape[1] if S is not None else Y.shape[1] if Y is not None else None
    if fixed is not None:
        rule = check_rule(fixed, None if fixed.get("rule") != "per_label_threshold"
                          else n_labels)
        if rule["rule"] not in rules:
            raise ValueError(f"fixed rule {rule['rule']!r} is not one of rules {rules}")
        choices = {} if len(rules) == 1 else {"decision": choose_on_dev(
            "decision", [rule["rule"]], None, family="decision", criterion="micro_f1",
            fallback=rule["rule"], fixed=True)}
        for name in ("k", "threshold"):
            choices[name] = choose_on_dev(name, [rule[name]], None, family="decision",
                                          criterion="micro_f1", fallback=rule[name], fixed=True)
        return {**rule, "choices": choices}
    if Y is None or S is None or Y.nnz == 0:
        if fallback is None:
            fallback = {"rule": rules[0], "k": 1, "threshold": 0.5,
                        "thresholds": None if n_labels is None else np.full(n_labels, 0.5)}
        rule = check_rule(fallback, n_labels)
        if rule["rule"] not in rules:
            raise ValueError(f"fallback rule {rule['rule']!r} is not one of rules {rules}")
        decision = choose_on_dev("decision", rules, None, family="decision",
                                 criterion="micro_f1", fallback=rule["rule"], has_dev=False,
                                 warn=warn)
        choices = {"decision": decision} if len(rules) > 1 else {}
        for name in ("k", "threshold"):
            choices[name] = DevChoice(name, "decision", "micro_f1", rule[name], (), False)
        return {**rule, "choices": choices}
    choices = {}
    if len(rules) > 1:
        f1 = _cross_fitted_f1(Y, S, rules, max_k, min_positives, n_folds, random_state)
        choices["decision"] = choose_on_dev("decision", rules, f1, family="decision",
                                            criterion="micro_f1", fallback=rules[0])
        chosen = choices["decision"].value
    else:
        chosen = rules[0]
    choices["k"] = select_k(Y, S, ks=range(1, max_k + 1), return_choice=True)
    choices["threshold"] = select_threshold(Y, S, return_choice=True)
    k, t = int(choices["k"].value), float(choices["threshold"].value)
    thresholds = None
    if chosen == "per_label_threshold":
        thresholds = select_label_thresholds(Y, S, fallback=t, min_positives=min_positives)
    return {"rule": chosen, "k": k, "threshold": t, "thresholds": thresholds,
            "choices": choices}
