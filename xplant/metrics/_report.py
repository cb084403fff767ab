"""One report with the stable keys every results table reads."""

import numpy as np

from ._classification import _counts, _label_mask, _scores_from_counts, bucketed_f1
from ._groups import group_ranking_metrics
from ._propensity import inverse_propensity
from ._ranking import (
    _top_k,
    mean_average_precision,
    ndcg_at_k,
    precision_at_k,
    psp_at_k,
    r_precision_at_k,
    recall_at_k,
)
from ._validation import check_binary, check_k, check_scores, check_top_k

__all__ = ["xmtc_report", "F1_BUCKET_EDGES"]

#: Training-frequency edges of the report's F1 buckets: 0 | 1-50 | >50.
F1_BUCKET_EDGES = (0, 50)


def xmtc_report(
    y_true,
    y_score=None,
    *,
    y_top_k=None,
    y_pred=None,
    label_frequency=None,
    n_train_documents=None,
    ks=(1, 3, 5),
    A=0.55,
    B=1.5,
):
    """All table metrics of one model on one split, under stable keys.

    This is the one place results tables take their numbers from. Every
    value is a python float in [0, 1] (not percent), computed with each
    metric's default convention (see the individual functions); the keys are
    listed under Notes.

    Parameters
    ----------
    y_true : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        True labels, 0/1.
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels), default=None
        Scores, for the ranking keys.
    y_top_k : ndarray of shape (n_samples, >=max(ks)), int, default=None
        Ranked label indices instead of scores (-1 = none).
    y_pred : {ndarray, sparse matrix} of shape (n_samples, n_labels), default=None
        0/1 predictions of the chosen decision rule, for the F1 keys.
    label_frequency : array-like of shape (n_labels,), default=None
        Training positives per label.
    n_train_documents : int, default=None
        Number of training documents (for PSP).
    ks : tuple of int, default=(1, 3, 5)
        Cut-offs of the ranking keys.
    A, B : float, default=0.55, 1.5
        Propensity parameters (:func:`inverse_propensity`).

    Returns
    -------
    report : dict of str to float

    Notes
    -----
    Ranking keys (from ``y_score`` or ``y_top_k``), for each k in ``ks``:
    ``"P@k"``, ``"nDCG@k"`` (k > 1); for k = max(ks): ``"R@k"``, ``"RP@k"``;
    ``"MAP"`` (full ranking with ``y_score``, truncated at the given columns
    with ``y_top_k``).

    With ``label_frequency`` and ``n_train_documents``: ``"PSP@k"`` for each
    k (normalised, inverse propensities with ``A``, ``B``).

    With ``label_frequency``, the zero-shot group (labels with no training
    positive), by :func:`group_ranking_metrics` at k = max(ks):
    ``"zero_R@k"`` and ``"zero_nDCG@k"`` (the group's labels ranked alone,
    averaged over the documents with at least one gold zero-shot label; NaN
    with ``y_top_k`` or when no document has one), ``"zero_R@k_full"``
    (the share of those gold labels in the top k of the full ranking: the
    form results tables show) and the group's size beside them,
    ``"zero_n_labels"`` and ``"zero_n_documents"`` (counts, as floats). A
    group ranked alone is easy when it is small (one label is always
    first), so read ``zero_R@k`` with its size.

    With ``y_pred`` (the chosen decision rule's 0/1 output): ``"micro_F1"``,
    ``"micro_P"``, ``"micro_R"``, ``"macro_F1"`` (mean per-label F1 over
    labels present in ``y_true``), ``"macro_F1_harmonic"`` (same labels),
    ``"mean_labels_per_doc"`` (of ``y_pred``, not in [0, 1]); and with
    ``label_frequency`` the bucket macro-F1s ``"F1_zero"`` (0 training
    positives), ``"F1_few"`` (1-50) and ``"F1_frequent"`` (>50), each over
    the bucket's labels present in ``y_true`` (NaN when there are none).

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 0, 1, 0, 0, 0], [0, 1, 0, 0, 0, 0]])
    >>> S = np.array([[.9, .1, .8, .0, .0, .0], [.2, .7, .1, .0, .0, .0]])
    >>> r = xmtc_report(Y, S)
    >>> r["P@1"], r["P@3"], r["MAP"]
    (1.0, 0.5, 1.0)
    """
    ks = sorted({check_k(k, "each of ks") for k in ks})
    if not ks:
        raise ValueError("ks is empty.")
    kmax = ks[-1]
    Y = check_binary(y_true)
    n, L = Y.shape
    if y_score is None and y_top_k is None and y_pred is None:
        raise ValueError("Give y_score or y_top_k (ranking metrics) and/or y_pred (F1 metrics).")
    if y_score is not None and y_top_k is not None:
        raise ValueError("Pass only one of y_score or y_top_k.")
    out = {}
    freq = None
    if label_frequency is not None:
        freq = np.asarray(label_frequency)
        if freq.shape != (L,):
            raise ValueError(f"label_frequency must have shape ({L},), got {freq.shape}.")
    if y_score is not None or y_top_k is not None:
        if y_score is not None:
            S = check_scores(y_score, Y.shape)
            top = _top_k(S, kmax)[0]
        else:
            S = None
            top = check_top_k(y_top_k, n, L, kmax)
        top_k = top[:, :kmax]
        for k in ks:
            out[f"P@{k}"] = precision_at_k(Y, y_top_k=top_k, k=k)
        for k in ks:
            if k > 1:
                out[f"nDCG@{k}"] = ndcg_at_k(Y, y_top_k=top_k, k=k)
        out[f"R@{kmax}"] = recall_at_k(Y, y_top_k=top_k, k=kmax)
        out[f"RP@{kmax}"] = r_precision_at_k(Y, y_top_k=top_k, k=kmax)
        out["MAP"] = (
            mean_average_precision(Y, S) if S is not None else mean_average_precision(Y, y_top_k=top)
        )
        if freq is not None:
            if n_train_documents is None:
                raise ValueError("PSP needs n_train_documents together with label_frequency.")
            w = inverse_propensity(
                label_frequency=freq, n_train_documents=int(n_train_documents), A=A, B=B
            )
            for k in ks:
                out[f"PSP@{k}"] = psp_at_k(Y, y_top_k=top_k, k=k, inv_propensity=w)
        if freq is not None:
            g = group_ranking_metrics(Y, S, freq == 0, k=kmax, y_top_k=top_k if S is None else None)
            for key in (f"R@{kmax}", f"nDCG@{kmax}", f"R@{kmax}_full"):
                out[f"zero_{key}"] = float(g[key])
            # the figures mean little without the group's size: a group of one label ranked
            # alone is always found
            out["zero_n_labels"] = float(g["n_labels"])
            out["zero_n_documents"] = float(g["n_documents"])
    if y_pred is not None:
        tp, fp, fn = _counts(Y, y_pred)
        everything = np.ones(L, dtype=bool)
        present = _label_mask("present", tp + fn, None, L)
        out["micro_F1"] = _scores_from_counts(tp, fp, fn, everything, "micro", 0.0)
        out["micro_P"] = _scores_from_counts(tp, fp, fn, everything, "micro", 0.0, "precision")
        out["micro_R"] = _scores_from_counts(tp, fp, fn, everything, "micro", 0.0, "recall")
        out["macro_F1"] = _scores_from_counts(tp, fp, fn, present, "per_label", 0.0)
        out["macro_F1_harmonic"] = _scores_from_counts(tp, fp, fn, present, "harmonic", 0.0)
        if freq is not None:
            b = bucketed_f1(Y, y_pred, freq, edges=F1_BUCKET_EDGES)
            out["F1_zero"], out["F1_few"], out["F1_frequent"] = (float(v) for v in b.f1)
        out["mean_labels_per_doc"] = float((tp + fp).sum() / n) if n else 0.0
    return out
