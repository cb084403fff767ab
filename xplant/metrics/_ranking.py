"""Ranking metrics at k: P@k, R@k, RP@k, nDCG@k, PSP@k, PSnDCG@k and MAP.

All of them share one engine. The top-k labels of each row are selected
without densifying (a numba heap over the row's candidates), each ranked
position gets a gain (1, or the label's inverse propensity, when the label is
true), and the metric is a weighted sum of those gains.

Conventions (the same in every function):

* **Order.** Labels are ranked by descending score; equal scores rank the
  lower label index first (``ties="break"``). ``ties="average"`` instead
  returns the expected value over all orders of the tied labels.
* **Never ranked.** A score of ``-inf`` is never ranked, dense or sparse;
  only stored entries of a CSR ``y_score`` are candidates (missing entries
  count as ``-inf``). A gold label that is never ranked is a miss. A row with
  fewer than k candidates predicts fewer than k labels, and P@k still
  divides by k.
* **Any k.** A cut-off larger than the number of labels is allowed and
  costs no more than k = L: no array of k columns is ever allocated.
* **Empty rows** (no true label): counted as 0 by P@k and PSP@k, skipped by
  R@k, RP@k, nDCG@k, PSnDCG@k and MAP (the API contract); ``empty_rows=``
  chooses ``"skip"`` or ``"zero"``.
"""

import inspect
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import UndefinedMetricWarning

from . import _kernels as K
from ._validation import EMPTY_ROWS, check_binary, check_choice, check_k, check_scores, check_top_k

TIES = ("break", "average")

__all__ = [
    "top_k_indices",
    "sort_top_k",
    "precision_at_k",
    "recall_at_k",
    "r_precision_at_k",
    "ndcg_at_k",
    "psp_at_k",
    "psndcg_at_k",
    "mean_average_precision",
]


def _top_k(S, k):
    """Top-k (indices, scores) of a validated score matrix, k clipped to what can be ranked.

    The one clip of a cut-off: a row ranks at most its candidates (all L
    columns of a dense matrix, the stored entries of a CSR row), so the
    result has ``min(k, L)`` columns (CSR: ``min(k, longest row)``) and a
    huge k never allocates k columns.
    """
    if sp.issparse(S):
        widest = int(np.diff(S.indptr).max()) if S.shape[0] else 0
        return K.top_k_csr(S.indptr, S.indices, S.data, S.shape[0], min(k, widest))
    return K.top_k_dense(S, min(k, S.shape[1]))


def top_k_indices(y_score, k):
    """Label indices of the k highest scores in each row.

    Parameters
    ----------
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        Scores. For a sparse matrix only the stored entries are candidates;
        missing entries count as ``-inf``. Sparse input is never densified.
    k : int
        Number of labels to return per row.

    Returns
    -------
    top : ndarray of shape (n_samples, min(k, n_labels)), dtype int64
        Label indices by descending score; equal scores put the lower label
        index first. Rows with fewer candidates are padded with -1 (a
        ``-inf`` score is never ranked; for CSR the width is at most the
        longest row).

    Raises
    ------
    ValueError
        If ``k`` is not a positive integer or ``y_score`` is not 2-D or holds NaN.

    Notes
    -----
    A size-k heap per row: O(nnz log k) time, O(n min(k, L)) memory, rows in
    parallel.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> top_k_indices(np.array([[0.1, 0.9, 0.9, 0.3]]), 3)
    array([[1, 2, 3]])
    >>> top_k_indices(sp.csr_matrix(np.array([[0.0, 0.5, 0.0, 0.2], [0.0, 0.0, 0.0, 0.1]])), 3)
    array([[ 1,  3],
           [ 3, -1]])
    """
    k = check_k(k)
    S = check_scores(y_score)
    return _top_k(S, k)[0]


def sort_top_k(indices, scores):
    """Sort unordered top-k predictions into ranking order.

    Parameters
    ----------
    indices : array-like of shape (n_samples, k), int
        Label indices, -1 for "no prediction" (as returned by a model's
        ``predict_top_k``, possibly in any order).
    scores : array-like of shape (n_samples, k), float
        The scores of those labels.

    Returns
    -------
    indices : ndarray of shape (n_samples, k), int64
        Re-ordered by descending score, ties to the lower label index, -1 last.
    scores : ndarray of shape (n_samples, k), float64
        The matching scores (``-inf`` where the index is -1).

    Examples
    --------
    >>> sort_top_k([[4, 1, -1, 2]], [[0.2, 0.9, 0.0, 0.2]])[0]
    array([[ 1,  2,  4, -1]])
    """
    idx = np.asarray(indices)
    sc = np.asarray(scores, dtype=np.float64)
    if idx.ndim != 2 or idx.shape != sc.shape:
        raise ValueError(
            f"indices and scores must be 2-D arrays of the same shape, got {idx.shape} and {sc.shape}."
        )
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must be integers, got dtype {idx.dtype}.")
    idx = idx.astype(np.int64, copy=False)
    valid = idx >= 0
    if np.isnan(sc[valid]).any():
        raise ValueError("scores contain NaN; replace NaN scores (e.g. with -np.inf) first.")
    sc = np.where(valid, sc, -np.inf)
    # primary key: valid first; then descending score; then ascending index
    order = np.lexsort((np.where(valid, idx, np.iinfo(np.int64).max), -sc, ~valid), axis=-1)
    return np.take_along_axis(idx, order, 1), np.take_along_axis(sc, order, 1)


def _prepare(y_true, y_score, y_top_k, k, ties):
    """Validate inputs and return (Y, top, top_scores, S)."""
    check_choice(ties, TIES, "ties")
    Y = check_binary(y_true)
    n, L = Y.shape
    if (y_score is None) == (y_top_k is None):
        raise ValueError("Pass exactly one of y_score (scores) or y_top_k (ranked label indices).")
    if y_top_k is not None:
        if ties == "average":
            raise ValueError(
                "ties='average' needs the scores to find tied labels; pass y_score, or use ties='break'."
            )
        top = check_top_k(y_top_k, n, L, k)
        if k is not None:
            top = top[:, :k]
        return Y, top, None, None
    S = check_scores(y_score, Y.shape)
    top, vals = _top_k(S, k)
    return Y, top, vals, S


def _gains(Y, top, vals, S, weights, ties):
    """(n, k) expected gain at each ranked position."""
    g = K.hit_weights(top, Y.indptr, Y.indices, weights)
    if ties == "average" and top.shape[1]:
        thr = vals[:, -1].copy()
        active = top[:, -1] >= 0
        if sp.issparse(S):
            count, wsum = K.boundary_stats_csr(
                S.indptr, S.indices, S.data, thr, active, Y.indptr, Y.indices, weights
            )
        else:
            count, wsum = K.boundary_stats_dense(S, thr, active, Y.indptr, Y.indices, weights)
        g = K.average_ties(g, top, vals, count, wsum)
    return g


def _n_true(Y):
    return np.diff(Y.indptr).astype(np.float64)


def _aggregate(per_row, n_true, empty_rows, name):
    check_choice(empty_rows, EMPTY_ROWS, "empty_rows")
    if empty_rows == "skip":
        values = per_row[n_true > 0]
    else:
        values = np.where(n_true > 0, per_row, 0.0)
    if values.size == 0:
        warnings.warn(
            f"{name} is undefined: no rows to average (every row has no true label and "
            "empty_rows='skip', or there are no rows). Returning 0.0.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return 0.0
    return float(values.mean())


def _ones(Y):
    return np.ones(Y.shape[1], dtype=np.float64)


def _discount(k):
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def _idcg(n_true, k):
    """Ideal DCG of each row: the discounts of its first ``min(k, |y|)`` positions."""
    m = np.minimum(n_true, k).astype(np.int64)
    return np.concatenate([[0.0], np.cumsum(_discount(int(m.max(initial=0))))])[m]


def _safe_div(a, b):
    out = np.zeros_like(a, dtype=np.float64)
    np.divide(a, b, out=out, where=b > 0)
    return out


_SHARED_PARAMS = """
    Parameters
    ----------
    y_true : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True labels, 0/1 (any numeric dtype or bool).
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels), default=None
        Scores; for CSR only stored entries are candidates (missing = -inf).
        Give either ``y_score`` or ``y_top_k``.
    k : int, default=5
        Cut-off rank.
    y_top_k : ndarray of shape (n_samples, >=k), int, default=None
        Precomputed ranked label indices, best first; -1 means no prediction.
        Only the first k columns are used.
    ties : {"break", "average"}, default="break"
        ``"break"``: equal scores rank the lower label index first.
        ``"average"``: the expected value over all orders of tied labels
        (needs ``y_score``)."""

_SKIP_ROWS = """empty_rows : {"skip", "zero"}, default="skip"
        Rows with no true label are left out (default) or count as 0.

    Returns
    -------
    score : float
        In [0, 1]."""

# the propensity-scored metrics' own parameters; the default of ``empty_rows`` is read from
# each function's signature
_PS_PARAMS = """inv_propensity : array-like of shape (n_labels,)
        Inverse propensity :math:`1/p_l` of each label, from
        :func:`inverse_propensity` on the *training* labels.
    normalize : bool, default=True
        Ratio of sums to the best achievable (True) or raw mean (False).
    empty_rows : {"skip", "zero"}, default="%s"
        Only used with ``normalize=False``.

    Returns
    -------
    score : float
        In [0, 1] with ``normalize=True``; with ``normalize=False``, in
        inverse-propensity units."""


def _hits(y_true, y_score, k, y_top_k, ties):
    """The (n, k) hits of each row's top k and each row's number of true labels."""
    k = check_k(k)
    Y, top, vals, S = _prepare(y_true, y_score, y_top_k, k, ties)
    g = _gains(Y, top, vals, S, _ones(Y), ties)
    return g, _n_true(Y)


def precision_at_k(y_true, y_score=None, *, k=5, y_top_k=None, ties="break", empty_rows="zero"):
    """Precision at k: true labels among the top k, divided by k.

    .. math:: P@k = \\frac{1}{n} \\sum_i \\frac{1}{k} \\sum_{r=1}^{k} y_{i, \\pi_i(r)}
    {params}
    empty_rows : {"zero", "skip"}, default="zero"
        Rows with no true label count as 0 (default) or are left out.

    Returns
    -------
    score : float
        In [0, 1]. The denominator is always k, also when fewer than k labels
        are predicted (Jain et al., KDD 2016; the Extreme Classification
        Repository convention).

    Raises
    ------
    ValueError
        On shape mismatch, non-binary ``y_true``, NaN scores, bad ``k``, or
        when both or neither of ``y_score``/``y_top_k`` are given.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([[0, 0, 1, 1]])
    >>> precision_at_k(y, np.array([[0.1, 0.9, 0.8, 0.3]]), k=2)
    0.5
    >>> precision_at_k(y, np.ones((1, 4)), k=2, ties="average")
    0.5
    """
    g, n_true = _hits(y_true, y_score, k, y_top_k, ties)
    return _aggregate(g.sum(axis=1) / k, n_true, empty_rows, "P@k")


def recall_at_k(y_true, y_score=None, *, k=5, y_top_k=None, ties="break", empty_rows="skip"):
    """Recall at k: true labels among the top k, divided by the number of true labels.

    .. math:: R@k = \\frac{1}{n} \\sum_i \\frac{1}{|y_i|} \\sum_{r=1}^{k} y_{i, \\pi_i(r)}
    {params}
    {skip_rows}

    Examples
    --------
    >>> import numpy as np
    >>> recall_at_k(np.array([[0, 1, 1, 1]]), np.array([[0.1, 0.9, 0.8, 0.0]]), k=2)
    0.6666666666666666
    """
    g, n_true = _hits(y_true, y_score, k, y_top_k, ties)
    return _aggregate(_safe_div(g.sum(axis=1), n_true), n_true, empty_rows, "R@k")


def r_precision_at_k(y_true, y_score=None, *, k=5, y_top_k=None, ties="break", empty_rows="skip"):
    """R-precision at k: hits in the top k divided by ``min(k, |y|)``.

    .. math:: RP@k = \\frac{1}{n} \\sum_i \\frac{1}{\\min(k, |y_i|)} \\sum_{r=1}^{k} y_{i, \\pi_i(r)}

    Used in EURLEX57K work (Chalkidis et al., 2019): it reaches 1 for a
    perfect ranking, also when a document has fewer than k labels.
    {params}
    {skip_rows}

    Examples
    --------
    >>> import numpy as np
    >>> y, s = np.array([[0, 1, 0, 1]]), np.array([[0.1, 0.9, 0.8, 0.7]])
    >>> r_precision_at_k(y, s, k=5), precision_at_k(y, s, k=5)  # both gold labels in the top 5
    (1.0, 0.4)
    """
    g, n_true = _hits(y_true, y_score, k, y_top_k, ties)
    return _aggregate(_safe_div(g.sum(axis=1), np.minimum(n_true, k)), n_true, empty_rows, "RP@k")


def ndcg_at_k(y_true, y_score=None, *, k=5, y_top_k=None, ties="break", empty_rows="skip"):
    """Normalised discounted cumulative gain at k, binary gains.

    .. math::
        DCG@k = \\sum_{r=1}^{k} \\frac{y_{\\pi(r)}}{\\log_2(r + 1)}

        nDCG@k = \\frac{DCG@k}{\\sum_{r=1}^{\\min(k, |y|)} 1 / \\log_2(r + 1)}

    The ideal DCG runs over ``min(k, |y|)`` positions (Järvelin & Kekäläinen,
    2002; the XMTC convention), so a document with one label ranked first
    scores 1. With ``ties="average"`` and ``empty_rows="zero"`` it equals
    :func:`sklearn.metrics.ndcg_score`.
    {params}
    {skip_rows}

    Examples
    --------
    >>> import numpy as np
    >>> ndcg_at_k(np.array([[1, 0, 0, 0, 0, 0]]), np.arange(6.0)[::-1].reshape(1, -1), k=5)
    1.0
    """
    g, n_true = _hits(y_true, y_score, k, y_top_k, ties)
    return _aggregate(_safe_div(g @ _discount(g.shape[1]), _idcg(n_true, k)), n_true,
                      empty_rows, "nDCG@k")


def _check_inv_propensity(inv_propensity, n_labels):
    if inv_propensity is None:
        raise ValueError(
            "inv_propensity is required: compute it with "
            "xplant.metrics.inverse_propensity(Y_train) from the training labels."
        )
    w = np.asarray(inv_propensity, dtype=np.float64)
    if w.shape != (n_labels,):
        raise ValueError(
            f"inv_propensity must have shape (n_labels,) = ({n_labels},), got {w.shape}."
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("inv_propensity must be finite and non-negative.")
    return w


def _ps_parts(y_true, y_score, k, y_top_k, ties, inv_propensity):
    """:func:`_hits` weighted by inverse propensity, with each row's best achievable gains."""
    k = check_k(k)
    Y, top, vals, S = _prepare(y_true, y_score, y_top_k, k, ties)
    w = _check_inv_propensity(inv_propensity, Y.shape[1])
    g = _gains(Y, top, vals, S, w, ties)
    best = K.ideal_weights(Y.indptr, Y.indices, w, min(k, Y.shape[1]))
    return g, best, _n_true(Y)


def psp_at_k(y_true, y_score=None, *, k=5, y_top_k=None, inv_propensity, normalize=True,
             ties="break", empty_rows="zero"):
    """Propensity-scored precision at k (Jain, Prabhu & Varma, KDD 2016).

    .. math::
        PSP@k_i = \\frac{1}{k} \\sum_{r=1}^{k} \\frac{y_{i,\\pi_i(r)}}{p_{\\pi_i(r)}}

    With ``normalize=True`` (default) the dataset value is a **ratio of
    sums**: :math:`\\sum_i PSP@k_i / \\sum_i \\max PSP@k_i`, where the
    maximum ranks the row's true labels by inverse propensity (the Extreme
    Classification Repository and napkinXC convention). Rows without true
    labels add 0 to both sums. With ``normalize=False`` it is the mean of
    :math:`PSP@k_i` over rows, in inverse-propensity units (not in [0, 1]).
    {params}
    {ps_params}

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([[1, 1, 1, 1, 1, 1]])
    >>> w = np.array([4.0, 5, 6, 1, 2, 3])
    >>> psp_at_k(y, y_top_k=np.array([[3, 4, 5]]), k=3, inv_propensity=w)
    0.4
    >>> psp_at_k(y, y_top_k=np.array([[3, 4, 5]]), k=3, inv_propensity=w, normalize=False)
    2.0
    """
    g, best, n_true = _ps_parts(y_true, y_score, k, y_top_k, ties, inv_propensity)
    num = g.sum(axis=1) / k
    if normalize:
        den = best.sum(axis=1) / k
        return _ratio_of_sums(num, den, "PSP@k")
    return _aggregate(num, n_true, empty_rows, "PSP@k")


def _ratio_of_sums(num, den, name):
    total = den.sum()
    if total <= 0:
        warnings.warn(
            f"{name} is undefined: the best achievable value is 0 (no true labels). Returning 0.0.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return 0.0
    return float(num.sum() / total)


def psndcg_at_k(y_true, y_score=None, *, k=5, y_top_k=None, inv_propensity, normalize=True,
                ties="break", empty_rows="skip"):
    """Propensity-scored nDCG at k (Jain, Prabhu & Varma, KDD 2016).

    .. math::
        PSDCG@k_i = \\sum_{r=1}^{k} \\frac{y_{i,\\pi_i(r)}}{p_{\\pi_i(r)} \\log_2(r+1)}

        PSnDCG@k_i = \\frac{PSDCG@k_i}{\\sum_{r=1}^{\\min(k, |y_i|)} 1/\\log_2(r+1)}

    With ``normalize=False`` this is the mean of :math:`PSnDCG@k_i` over
    rows (the paper's definition). With ``normalize=True`` (default) it is the
    ratio of sums :math:`\\sum_i PSnDCG@k_i / \\sum_i \\max PSnDCG@k_i`, the
    maximum placing the row's true labels in order of inverse propensity (the
    Extreme Classification Repository and napkinXC convention), so the value
    lies in [0, 1].
    {params}
    {ps_params}

    Examples
    --------
    >>> import numpy as np
    >>> psndcg_at_k(np.array([[1, 1, 0]]), np.array([[0.9, 0.1, 0.5]]), k=2,
    ...             inv_propensity=np.array([1.0, 3.0, 1.0]))  # doctest: +ELLIPSIS
    0.2754...
    """
    g, best, n_true = _ps_parts(y_true, y_score, k, y_top_k, ties, inv_propensity)
    idcg = _idcg(n_true, k)
    num = _safe_div(g @ _discount(g.shape[1]), idcg)
    if normalize:
        return _ratio_of_sums(num, _safe_div(best @ _discount(best.shape[1]), idcg), "PSnDCG@k")
    return _aggregate(num, n_true, empty_rows, "PSnDCG@k")


def mean_average_precision(y_true, y_score=None, *, y_top_k=None, empty_rows="skip"):
    """Mean average precision, CodiEsp's official metric.

    .. math::
        AP_i = \\frac{1}{|y_i|} \\sum_{r:\\, y_{i,\\pi_i(r)} = 1} \\frac{\\#\\{\\text{hits at ranks} \\le r\\}}{r}

        MAP = \\frac{1}{n} \\sum_i AP_i

    The denominator is the number of gold labels, so a gold label that is
    never ranked counts as a miss (Miranda-Escalada et al., CodiEsp, CLEF
    eHealth 2020; the trec_eval definition).

    Parameters
    ----------
    y_true : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True labels, 0/1.
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels), default=None
        Scores: AP runs over the **full** ranking of each row (for CSR, over
        its stored entries; missing labels are never ranked). Ties rank the
        lower label index first.
    y_top_k : ndarray of shape (n_samples, k), int, default=None
        Ranked label indices (-1 = none): AP is **truncated** at these k.
    {skip_rows}

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([[1, 0, 1, 0]])
    >>> mean_average_precision(y, np.array([[0.9, 0.8, 0.7, 0.1]]))  # (1/1 + 2/3) / 2
    0.8333333333333333
    """
    Y = check_binary(y_true)
    n, L = Y.shape
    if (y_score is None) == (y_top_k is None):
        raise ValueError("Pass exactly one of y_score (scores) or y_top_k (ranked label indices).")
    n_true = _n_true(Y)
    if y_score is not None:
        S = check_scores(y_score, Y.shape)
        if sp.issparse(S):
            ap = K.ap_full_csr(S.indptr, S.indices, S.data, Y.indptr, Y.indices)
        else:
            ap = K.ap_full_dense(S, Y.indptr, Y.indices)
    else:
        top = check_top_k(y_top_k, n, L, None)
        hits = K.hit_weights(top, Y.indptr, Y.indices, _ones(Y))
        ranks = np.arange(1, top.shape[1] + 1, dtype=np.float64)
        ap = _safe_div((hits * np.cumsum(hits, axis=1) / ranks).sum(axis=1), n_true)
    return _aggregate(ap, n_true, empty_rows, "MAP")


def _fill_shared_sections(func):
    """Put the shared sections in place of the ``{params}``, ``{skip_rows}`` and ``{ps_params}``
    lines of ``func``'s docstring.

    Only those three whole lines are replaced: every other character of the docstring, its
    TeX braces and its ``{"skip", "zero"}`` value sets included, is shown as written.
    """
    rows = inspect.signature(func).parameters["empty_rows"].default
    parts = {"params": _SHARED_PARAMS, "skip_rows": _SKIP_ROWS, "ps_params": _PS_PARAMS % rows}
    lines = func.__doc__.split("\n")
    for i, line in enumerate(lines):
        name = line.strip()
        if name.startswith("{") and name.endswith("}") and name[1:-1] in parts:
            lines[i] = line[:len(line) - len(line.lstrip())] + parts[name[1:-1]]
    func.__doc__ = "\n".join(lines)


for _f in (precision_at_k, recall_at_k, r_precision_at_k, ndcg_at_k, psp_at_k, psndcg_at_k,
           mean_average_precision):
    _fill_shared_sections(_f)
del _f
