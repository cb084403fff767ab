"""Classification metrics on binary multi-label predictions: F1, AUC, buckets.

Every function works on CSR input without densifying (n_samples, n_labels):
per-label counts come from ``np.bincount`` over the stored column indices.
"""

import math
import numbers
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.utils import Bunch

from .._frequency_buckets import check_bucket_edges, frequency_bucket_names, frequency_bucket_of
from . import _kernels as K
from ._validation import check_binary, check_choice, check_scores

__all__ = [
    "f1_score",
    "precision_score",
    "recall_score",
    "per_label_scores",
    "roc_auc",
    "AUCResult",
    "bucketed_f1",
    "tail_f1",
]

F1_AVERAGES = ("micro", "per_label", "harmonic")
LABEL_POLICIES = ("present", "train", "all")
#: The averages of :func:`precision_score` and :func:`recall_score`.
_RATIO_AVERAGES = ("micro", "per_label")


def _check_zero_division(zero_division):
    if isinstance(zero_division, (bool, np.bool_)) or not isinstance(zero_division, numbers.Real):
        raise ValueError(f"zero_division must be a float in [0, 1] or np.nan, got {zero_division!r}.")
    zd = float(zero_division)
    if not (math.isnan(zd) or 0.0 <= zd <= 1.0):
        raise ValueError(f"zero_division must be a float in [0, 1] or np.nan, got {zero_division!r}.")
    return zd


def _counts(y_true, y_pred):
    """Per-label tp, fp, fn (int64, shape (L,)) from two indicator matrices."""
    Yt = check_binary(y_true, "y_true")
    Yp = check_binary(y_pred, "y_pred")
    if Yt.shape != Yp.shape:
        raise ValueError(
            f"y_true has shape {Yt.shape} but y_pred has shape {Yp.shape}; both must be "
            "(n_samples, n_labels) over the same label columns."
        )
    L = Yt.shape[1]
    both = Yt.multiply(Yp).tocsr()
    both.eliminate_zeros()
    tp = np.bincount(both.indices, minlength=L).astype(np.int64)
    support = np.bincount(Yt.indices, minlength=L).astype(np.int64)
    predicted = np.bincount(Yp.indices, minlength=L).astype(np.int64)
    return tp, predicted - tp, support - tp


def _label_mask(labels, support, label_frequency, n_labels):
    """Boolean (L,) mask of the labels to average over."""
    if isinstance(labels, str):
        check_choice(labels, LABEL_POLICIES, "labels")
        if labels == "present":
            return support > 0
        if labels == "all":
            return np.ones(n_labels, dtype=bool)
        if label_frequency is None:
            raise ValueError(
                "labels='train' needs label_frequency (training positives per label, shape "
                "(n_labels,)), e.g. the estimator's label_frequency_."
            )
        return _check_frequency(label_frequency, n_labels) > 0
    arr = np.asarray(labels)
    if arr.dtype == bool:
        if arr.shape != (n_labels,):
            raise ValueError(f"A boolean labels mask must have shape ({n_labels},), got {arr.shape}.")
        return arr
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(
            "labels must be 'present', 'train', 'all', a boolean mask of shape (n_labels,) "
            "or a 1-D array of label indices."
        )
    if arr.size and (arr.min() < 0 or arr.max() >= n_labels):
        raise ValueError(f"labels holds indices outside [0, {n_labels - 1}].")
    mask = np.zeros(n_labels, dtype=bool)
    mask[arr] = True
    return mask


def _check_frequency(label_frequency, n_labels):
    f = np.asarray(label_frequency)
    if f.shape != (n_labels,):
        raise ValueError(f"label_frequency must have shape ({n_labels},), got {f.shape}.")
    if f.size and (not np.issubdtype(f.dtype, np.number) or np.any(f < 0)):
        raise ValueError("label_frequency must hold non-negative counts.")
    return f


def _div(num, den, zd):
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(num.shape, zd, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _mean(values, zd, what):
    if values.size == 0:
        warnings.warn(
            f"{what} is undefined: no labels to average over. Returning zero_division.",
            UndefinedMetricWarning,
            stacklevel=4,
        )
        return zd
    if math.isnan(zd):
        values = values[~np.isnan(values)]
        return float(values.mean()) if values.size else float("nan")
    return float(values.mean())


def _scores_from_counts(tp, fp, fn, mask, average, zd, which="f1"):
    tp, fp, fn = tp[mask], fp[mask], fn[mask]
    if average == "micro":
        TP, FP, FN = tp.sum(), fp.sum(), fn.sum()
        if which == "precision":
            return float(_div(TP, TP + FP, zd))
        if which == "recall":
            return float(_div(TP, TP + FN, zd))
        return float(_div(2 * TP, 2 * TP + FP + FN, zd))
    p = _div(tp, tp + fp, zd)
    r = _div(tp, tp + fn, zd)
    if which == "precision":
        return _mean(p, zd, "macro precision")
    if which == "recall":
        return _mean(r, zd, "macro recall")
    if average == "per_label":
        return _mean(_div(2 * tp, 2 * tp + fp + fn, zd), zd, "macro-F1")
    P = _mean(p, zd, "macro-F1")
    R = _mean(r, zd, "macro-F1")
    if math.isnan(P) or math.isnan(R):
        return float("nan")
    return float(_div(2 * P * R, P + R, zd))


def _resolve_labels(labels, average):
    if labels is None:
        return "all" if average == "micro" else "present"
    return labels


def _averaged_counts(y_true, y_pred, average, averages, labels, label_frequency, zero_division):
    """The checked inputs of an averaged score: ((tp, fp, fn, mask), zero_division).

    The one reading of ``average`` (one of ``averages``), ``zero_division``
    and the label policy of :func:`f1_score`, :func:`precision_score` and
    :func:`recall_score`; ``mask`` marks the labels averaged over.
    """
    check_choice(average, averages, "average")
    zd = _check_zero_division(zero_division)
    tp, fp, fn = _counts(y_true, y_pred)
    mask = _label_mask(_resolve_labels(labels, average), tp + fn, label_frequency, tp.size)
    return (tp, fp, fn, mask), zd


def f1_score(
    y_true, y_pred, *, average="micro", labels=None, label_frequency=None, zero_division=0.0
):
    """Micro- or macro-F1 of multi-label predictions, with an explicit label policy.

    For each label l, with counts :math:`TP_l, FP_l, FN_l` over the rows:

    * ``"micro"``: :math:`2\\sum TP / (2\\sum TP + \\sum FP + \\sum FN)`.
    * ``"per_label"``: mean of :math:`F1_l = 2TP_l / (2TP_l + FP_l + FN_l)`
      (Edin et al., SIGIR 2023; the tables' macro-F1).
    * ``"harmonic"``: harmonic mean of macro-precision and macro-recall
      (the CAML convention, Mullenbach et al., NAACL 2018).

    Parameters
    ----------
    y_true, y_pred : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True and predicted labels, 0/1.
    average : {"micro", "per_label", "harmonic"}, default="micro"
        The averaging (above).
    labels : {"present", "train", "all"} or array-like, default=None
        Labels averaged over. ``"present"``: at least one positive in
        ``y_true``; ``"train"``: ``label_frequency > 0``; ``"all"``: every
        column; or a boolean mask (n_labels,) / array of label indices.
        ``None`` means ``"all"`` for micro (every false positive counts) and
        ``"present"`` for the macro averages (the table convention).
    label_frequency : array-like of shape (n_labels,), default=None
        Training positives per label; needed for ``labels="train"``.
    zero_division : float in [0, 1] or np.nan, default=0.0
        Value of a ratio whose denominator is 0 (e.g. the F1 of a label with
        no positive and no prediction). With ``np.nan`` such labels are left
        out of the mean, as in scikit-learn.

    Returns
    -------
    score : float
        In [0, 1]; ``zero_division`` where it is undefined (no label to
        average over).

    Raises
    ------
    ValueError
        On shape mismatch, non-binary input, an unknown ``average``/``labels``,
        or ``labels="train"`` without ``label_frequency``.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 0], [0, 0]])
    >>> f1_score(Y, Y, average="per_label")  # present labels only
    1.0
    >>> f1_score(Y, Y, average="per_label", labels="all")  # label 1: 0/0 -> 0
    0.5
    """
    counts, zd = _averaged_counts(y_true, y_pred, average, F1_AVERAGES, labels, label_frequency,
                                  zero_division)
    return _scores_from_counts(*counts, average, zd)


def precision_score(
    y_true, y_pred, *, average="micro", labels=None, label_frequency=None, zero_division=0.0
):
    """Micro or macro (``"per_label"``) precision; same conventions as :func:`f1_score`.

    Parameters
    ----------
    y_true, y_pred : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True and predicted labels, 0/1.
    average : {"micro", "per_label"}, default="micro"
        One ratio over all counts, or the mean of the per-label ratios.
    labels : {"present", "train", "all"} or array-like, default=None
        Labels averaged over, as in :func:`f1_score`.
    label_frequency : array-like of shape (n_labels,), default=None
        Training positives per label; needed for ``labels="train"``.
    zero_division : float in [0, 1] or np.nan, default=0.0
        Value of a ratio whose denominator is 0, as in :func:`f1_score`.

    Returns
    -------
    score : float
        As :func:`f1_score`'s.

    Raises
    ------
    ValueError
        As :func:`f1_score`.

    Examples
    --------
    >>> import numpy as np
    >>> precision_score(np.array([[1, 0], [1, 1]]), np.array([[1, 1], [1, 0]]))
    0.6666666666666666
    """
    counts, zd = _averaged_counts(y_true, y_pred, average, _RATIO_AVERAGES, labels, label_frequency,
                                  zero_division)
    return _scores_from_counts(*counts, average, zd, "precision")


def recall_score(
    y_true, y_pred, *, average="micro", labels=None, label_frequency=None, zero_division=0.0
):
    counts, zd = _averaged_counts(y_true, y_pred, average, _RATIO_AVERAGES, labels, label_frequency,
                                  zero_division)
    return _scores_from_counts(*counts, average, zd, "recall")


recall_score.__doc__ = precision_score.__doc__.replace("precision", "recall")   # one contract


def per_label_scores(y_true, y_pred, *, zero_division=0.0):
    """Per-label precision, recall, F1 and counts.

    Parameters
    ----------
    y_true, y_pred : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True and predicted labels, 0/1.
    zero_division : float in [0, 1] or np.nan, default=0.0
        Value of a ratio whose denominator is 0, as in :func:`f1_score`.

    Returns
    -------
    scores : sklearn.utils.Bunch
        ``precision``, ``recall``, ``f1`` (float64, (n_labels,)) and
        ``tp``, ``fp``, ``fn``, ``support`` (int64, (n_labels,)).

    Examples
    --------
    >>> import numpy as np
    >>> per_label_scores(np.array([[1, 0], [1, 1]]), np.array([[1, 1], [0, 1]])).f1
    array([0.66666667, 0.66666667])
    """
    zd = _check_zero_division(zero_division)
    tp, fp, fn = _counts(y_true, y_pred)
    return Bunch(
        precision=_div(tp, tp + fp, zd),
        recall=_div(tp, tp + fn, zd),
        f1=_div(2 * tp, 2 * tp + fp + fn, zd),
        tp=tp,
        fp=fp,
        fn=fn,
        support=tp + fn,
    )


class AUCResult(NamedTuple):
    """Result of :func:`roc_auc`: ``value`` and ``n_excluded`` labels."""

    value: float
    n_excluded: int


def _scored_columns(Yt, S):
    """Per-column layout of scored entries for column-wise kernels.

    Returns ``indptr (L+1,)``, ``vals``, ``pos`` (whether the entry is a true
    label), and per column ``n_missing``, ``n_missing_pos``, ``n_pos``.
    """
    n, L = Yt.shape
    n_pos = np.bincount(Yt.indices, minlength=L).astype(np.int64)
    if sp.issparse(S):
        pos = K.positive_mask_csr(S.indptr, S.indices, Yt.indptr, Yt.indices)
        stored_pos = np.bincount(S.indices[pos], minlength=L).astype(np.int64)
        order = sp.csr_matrix(
            (np.arange(1, S.nnz + 1, dtype=np.int64), S.indices, S.indptr), shape=S.shape
        ).tocsc()
        perm = order.data - 1
        indptr = order.indptr.astype(np.int64)
        vals = S.data[perm].astype(np.float64, copy=False)
        pos = pos[perm]
        n_missing = n - np.diff(indptr)
        n_missing_pos = n_pos - stored_pos
    else:
        vals = np.ascontiguousarray(S.T, dtype=np.float64).ravel()
        pos = np.ascontiguousarray(Yt.T.toarray(), dtype=bool).ravel()
        indptr = np.arange(L + 1, dtype=np.int64) * n
        n_missing = np.zeros(L, dtype=np.int64)
        n_missing_pos = np.zeros(L, dtype=np.int64)
    return indptr, vals, pos, n_missing.astype(np.int64), n_missing_pos.astype(np.int64), n_pos


def _scored_entries(Yt, S):
    """All scored entries flattened: vals, pos, n_missing, n_missing_pos, n_pos_total."""
    n, L = Yt.shape
    total_pos = Yt.nnz
    if sp.issparse(S):
        pos = K.positive_mask_csr(S.indptr, S.indices, Yt.indptr, Yt.indices)
        vals = S.data.astype(np.float64, copy=False)
    else:
        vals = S.astype(np.float64, copy=False).ravel()
        pos = Yt.toarray().astype(bool).ravel()
    n_missing = n * L - vals.size
    return vals, pos, n_missing, total_pos - int(pos.sum()), total_pos


def roc_auc(y_true, y_score, *, average="macro"):
    """Macro- or micro-averaged ROC AUC, excluding labels that cannot be scored.

    AUC is the Mann-Whitney statistic: the probability that a random
    positive outscores a random negative, ties counting 1/2 (Hanley &
    McNeil, 1982); it equals :func:`sklearn.metrics.roc_auc_score`.

    * ``"macro"``: the mean of per-label AUCs over labels that have at least
      one positive and one negative in ``y_true``. The others are *excluded*
      (never NaN, never 0) and counted in ``n_excluded``.
    * ``"micro"``: one AUC over all (row, label) pairs; ``n_excluded`` is 0.

    Parameters
    ----------
    y_true : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True labels, 0/1.
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        Scores. For CSR, missing entries are one tie group below every stored
        score (as ``-inf``); the matrix is never densified.
    average : {"macro", "micro"}, default="macro"
        Mean of the per-label AUCs, or one AUC over all (row, label) pairs (above).

    Returns
    -------
    result : AUCResult
        Named tuple ``(value, n_excluded)``.

    Raises
    ------
    ValueError
        If no label (macro) or no pair set (micro) has both classes.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 0], [0, 0], [1, 0]])
    >>> S = np.array([[.9, .1], [.2, .3], [.8, .2]])
    >>> roc_auc(Y, S)
    AUCResult(value=1.0, n_excluded=1)
    """
    check_choice(average, ("macro", "micro"), "average")
    Yt = check_binary(y_true)
    S = check_scores(y_score, Yt.shape)
    n, L = Yt.shape
    if average == "micro":
        vals, pos, n_miss, n_miss_pos, total_pos = _scored_entries(Yt, S)
        auc = K.auc_columns(
            np.array([0, vals.size], dtype=np.int64),
            vals,
            pos,
            np.array([n_miss], dtype=np.int64),
            np.array([n_miss_pos], dtype=np.int64),
            np.array([total_pos], dtype=np.int64),
            n * L,
        )[0]
        if np.isnan(auc):
            raise ValueError("Micro AUC is undefined: y_true is all 0 or all 1.")
        return AUCResult(float(auc), 0)
    indptr, vals, pos, n_miss, n_miss_pos, n_pos = _scored_columns(Yt, S)
    auc = K.auc_columns(indptr, vals, pos, n_miss, n_miss_pos, n_pos, n)
    ok = ~np.isnan(auc)
    if not ok.any():
        raise ValueError(
            "Macro AUC is undefined: no label has both a positive and a negative row in y_true."
        )
    return AUCResult(float(auc[ok].mean()), int(L - ok.sum()))


def bucketed_f1(
    y_true,
    y_pred,
    label_frequency,
    edges=(0, 5, 10, 50),
    *,
    labels="present",
    average="per_label",
    zero_division=0.0,
):
    """F1 per bucket of training frequency (head vs. tail labels).

    Bucket b holds the labels whose training frequency f satisfies
    ``edges[b-1] < f <= edges[b]``; the first bucket is ``f <= edges[0]``
    and the last ``f > edges[-1]``. The default ``(0, 5, 10, 50)`` gives the
    buckets 0, 1-5, 6-10, 11-50 and >50.

    Parameters
    ----------
    y_true, y_pred : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True and predicted labels, 0/1.
    label_frequency : array-like of shape (n_labels,)
        Training positives per label (e.g. the estimator's ``label_frequency_``).
    edges : sequence of int, default=(0, 5, 10, 50)
        Strictly increasing upper bounds (inclusive).
    labels : {"present", "train", "all"} or array-like, default="present"
        Label policy inside each bucket, as in :func:`f1_score`.
    average : {"per_label", "harmonic", "micro"}, default="per_label"
        Averaging inside each bucket, as in :func:`f1_score`.
    zero_division : float in [0, 1] or np.nan, default=0.0
        Value of a ratio whose denominator is 0, as in :func:`f1_score`.

    Returns
    -------
    result : sklearn.utils.Bunch
        ``names`` (list of str), ``f1`` (float64, (n_buckets,); NaN for a
        bucket with no label to average), ``n_labels`` (labels averaged per
        bucket), ``n_labels_total`` (labels per bucket) and ``support``
        (true positives in ``y_true`` per bucket).

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0], [0, 1, 1]])
    >>> P = np.array([[1, 0, 0], [0, 1, 1]])
    >>> r = bucketed_f1(Y, P, label_frequency=np.array([0, 3, 80]))
    >>> r.names, r.f1.round(3).tolist()
    (['0', '1-5', '6-10', '11-50', '>50'], [1.0, 0.667, nan, nan, 1.0])
    """
    check_choice(average, F1_AVERAGES, "average")
    zd = _check_zero_division(zero_division)
    e = check_bucket_edges(edges)
    tp, fp, fn = _counts(y_true, y_pred)
    L = tp.size
    freq = _check_frequency(label_frequency, L)
    support = tp + fn
    policy = _label_mask(labels, support, freq, L)
    bucket = frequency_bucket_of(freq, e)
    n_b = e.size + 1
    f1 = np.full(n_b, np.nan)
    n_avg = np.zeros(n_b, dtype=np.int64)
    for b in range(n_b):
        mask = (bucket == b) & policy
        n_avg[b] = mask.sum()
        if n_avg[b]:
            f1[b] = _scores_from_counts(tp, fp, fn, mask, average, zd)
    return Bunch(
        names=frequency_bucket_names(e),
        f1=f1,
        n_labels=n_avg,
        n_labels_total=np.bincount(bucket, minlength=n_b).astype(np.int64),
        support=np.bincount(bucket, weights=support, minlength=n_b).astype(np.int64),
    )


def tail_f1(
    y_true,
    y_pred,
    label_frequency,
    *,
    min_frequency=1,
    max_frequency=50,
    labels="present",
    average="per_label",
    zero_division=0.0,
):
    """Macro-F1 over tail labels: ``min_frequency <= f <= max_frequency`` training positives.

    The default (1-50) is the "few-shot" group of Rios & Kavuluru (EMNLP
    2018) and the report's ``F1_few``.

    Parameters
    ----------
    y_true, y_pred : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True and predicted labels, 0/1.
    label_frequency : array-like of shape (n_labels,)
        Training positives per label.
    min_frequency, max_frequency : int, default=1, 50
        Inclusive frequency range.
    labels : {"present", "train", "all"} or array-like, default="present"
        Label policy inside the range, as in :func:`f1_score`.
    average : {"per_label", "harmonic", "micro"}, default="per_label"
        Averaging over the range's labels, as in :func:`f1_score`.
    zero_division : float in [0, 1] or np.nan, default=0.0
        Value of a ratio whose denominator is 0, as in :func:`f1_score`.

    Returns
    -------
    score : float
        NaN (with a warning) when no label falls in the range.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0], [0, 1, 1]])
    >>> P = np.array([[1, 0, 0], [0, 1, 1]])
    >>> round(tail_f1(Y, P, np.array([0, 3, 80])), 4)
    0.6667
    """
    check_choice(average, F1_AVERAGES, "average")
    zd = _check_zero_division(zero_division)
    tp, fp, fn = _counts(y_true, y_pred)
    freq = _check_frequency(label_frequency, tp.size)
    mask = _label_mask(labels, tp + fn, freq, tp.size) & (freq >= min_frequency) & (freq <= max_frequency)
    if not mask.any():
        warnings.warn(
            f"tail_f1 is undefined: no label with {min_frequency} <= training frequency <= "
            f"{max_frequency} passes labels={labels!r}. Returning NaN.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        return float("nan")
    return _scores_from_counts(tp, fp, fn, mask, average, zd)
