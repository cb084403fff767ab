"""skorch callbacks of the PLANT estimators.

Each is a small class with no-op hooks except its own (skorch's callback
pattern): learning-rate warmup and cosine decay, progressive unfreezing,
dev-set scoring, and a guard against non-finite losses.
"""

import math
import warnings

import numpy as np
import scipy.sparse as sp
import torch
from skorch.callbacks import Callback


class WarmupCosine(Callback):
    """Linear warmup over ``warmup`` of all steps, then cosine decay to 0.

    The peak learning rate of each optimizer parameter group is the one it
    had when training began (PLANT paper: peak 5e-4, 10% warmup).
    """

    def __init__(self, warmup=0.1):
        self.warmup = warmup

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        self.base_ = [g["lr"] for g in net.optimizer_.param_groups]
        n_batches = getattr(net, "n_batches_per_epoch_", 1)
        self.total_ = max(1, n_batches * net.max_epochs)
        self.step_ = 0

    def factor(self, step):
        w = int(self.warmup * self.total_)
        if step < w:
            return (step + 1) / w
        progress = (step - w) / max(1, self.total_ - w)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    def on_batch_begin(self, net, batch=None, training=False, **kwargs):
        if not training:
            return
        f = self.factor(self.step_)
        for g, base in zip(net.optimizer_.param_groups, self.base_):
            g["lr"] = base * f
        self.step_ += 1


class ProgressiveUnfreezing(Callback):
    """Apply (epoch, group, lr) phases at the start of each epoch.

    ``phases`` is a list of ``(epoch, group, lr)``: from ``epoch`` (0-based)
    on, parameter group ``group`` trains with learning rate ``lr``; a later
    phase of the same group replaces it; ``lr=0`` freezes it again. Groups
    with no phase yet are frozen (``requires_grad=False``; at learning rate 0
    in a DeepSpeed fit, whose ZeRO fixes the trained parameters);
    docs/design.md, section "Progressive unfreezing".
    With ``phases=None`` the net's resolved ``phases_`` are used.
    """

    def __init__(self, phases=None):
        self.phases = phases

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        epoch = len(net.history) - 1
        phases = self.phases if self.phases is not None else net.phases_
        active = {}
        for start, group, lr in sorted(phases, key=lambda p: p[0]):
            if start <= epoch:
                active[group] = lr
        # under DeepSpeed a frozen group keeps its gradients and trains at lr 0
        by_grad = net._freezes_by_requires_grad()
        named = dict(net.module_.named_parameters()) if by_grad else {}
        for g in net.optimizer_.param_groups:
            lr = float(active.get(g["name"], 0.0))     # a numpy scalar from a grid is fine
            g["lr"] = lr
            for n in g["param_names"] if by_grad else ():
                named[n].requires_grad_(lr > 0)
        net.history.record("trainable_groups", sorted(k for k, v in active.items() if v > 0))


class DevScoring(Callback):
    """Score the dev set after each epoch with an xplant metric.

    Records ``valid_<name>`` in the history, higher is better. ``name`` is
    "map" or "<metric>_at_<k>" with metric in precision, ndcg, recall.
    A :class:`PlantClassifier` gives its dev scores and ``valid_loss`` from
    one pass over dev (``_dev_scores``); with ``n_candidates`` < L they are
    each dev document's (n_dev, C) candidates and the fixed tail order, and
    the metric and :func:`degenerate_check` read them as they are
    (:func:`score_by_name`), equal to the dense (n_dev, L) scores' to the
    last digit.
    """

    def __init__(self, name="map"):
        self.name = name

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        if getattr(net, "dev_docs_", None) is None:
            return
        # PlantClassifier's pass over dev also gives the dev loss; with a
        # shortlist, the scores of PLANT alone on its candidates, and the tail
        if hasattr(net, "_dev_scores"):
            scores, loss, tail = net._dev_scores()
            net.history.record("valid_loss", loss)
        else:
            scores, tail = net._scores(net.dev_docs_), {}
        net.history.record("valid_" + self.name,
                           score_by_name(self.name, net.dev_Y_, scores, **tail))
        mean_pred, reason = degenerate_check(net.dev_Y_, scores, **tail)
        net.history.record("valid_mean_predicted_labels", mean_pred)
        if reason is not None:
            warnings.warn(f"epoch {len(net.history)}: the model looks degenerate on dev: {reason}. "
                          "Lower the learning rate, check the label matrix, or use "
                          "hard_negatives/loss='focal'.", DegenerateModelWarning, stacklevel=2)


class DegenerateModelWarning(UserWarning):
    """Training collapsed towards predicting (almost) every label.

    Emitted by PlantClassifier after an epoch whose dev predictions under the
    threshold-0.5 rule cover more than half of the labels per document on
    average, or reach recall >= 0.99 at precision < 0.01 (one public ICD
    coder reached recall 1.0 at precision 0.004 without noticing).
    """


def degenerate_check(Y, scores, threshold=0.5, *, candidates=None, rank=None):
    """Collapse statistics of dev predictions under the rule ``score > threshold``.

    Parameters
    ----------
    Y : scipy.sparse matrix of shape (n_docs, n_labels), {0, 1}
    scores : ndarray of shape (n_docs, n_labels), or (n_docs, C) with ``candidates``
        Probabilities. With ``candidates``, the candidates' scores floored
        as :func:`xplant.fusion.dense_scores` floors them, which stand for
        that function's (n_docs, n_labels) scores: the counts are those of
        the dense scores (the tail, strictly below each row's lowest
        candidate, passes the threshold where every candidate does), without
        building them.
    threshold : float, default=0.5
    candidates : ndarray of int of shape (n_docs, C), optional
        Each document's candidate labels.
    rank : ndarray of int of shape (n_docs, n_labels), optional
        :func:`xplant.fusion.tail_order` of the candidates; with ``candidates``.

    Returns
    -------
    mean_predicted : float
        Mean number of labels predicted per document.
    reason : str or None
        Why the predictions look degenerate (mean predicted labels above
        half the labels, or micro recall >= 0.99 at micro precision < 0.01
        where Y has a positive), else None.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> Y = sp.csr_matrix(np.array([[1, 0, 0, 0], [0, 1, 0, 0]]))
    >>> degenerate_check(Y, np.array([[.9, .1, .2, .3], [.1, .8, .1, .1]]))
    (1.0, None)
    >>> degenerate_check(Y, np.full((2, 4), .9))[0]
    4.0
    >>> degenerate_check(sp.csr_matrix((2, 4)), np.array([[.9, .1, .1, .1], [.1, .1, .1, .1]]))
    (0.5, None)
    """
    Y = sp.csr_matrix(Y)
    n_docs, n_labels = Y.shape
    if candidates is not None:
        from ...fusion import counts_above
        n_pred, tp = counts_above(Y, candidates, scores, rank, threshold)
    else:
        pred = np.asarray(scores) > threshold
        n_pred = int(pred.sum())
        rows = np.repeat(np.arange(n_docs), np.diff(Y.indptr))
        tp = int(pred[rows, Y.indices].sum())
    mean_pred = n_pred / max(1, n_docs)
    precision = tp / n_pred if n_pred else 1.0
    recall = tp / Y.nnz if Y.nnz else 1.0
    reason = None
    if n_labels > 1 and mean_pred > 0.5 * n_labels:
        reason = (f"{mean_pred:.1f} of {n_labels} labels predicted per document "
                  f"(precision {precision:.4f}, recall {recall:.4f})")
    elif Y.nnz and recall >= 0.99 and precision < 0.01:   # no gold: recall says nothing
        reason = f"recall {recall:.4f} at precision {precision:.4f}"
    return float(mean_pred), reason


def _metric_at_k(name):
    """(metric function, k) of "<precision|ndcg|recall>_at_<k>", (None, None) for "map"."""
    from ... import metrics
    try:
        base, k = metrics.split_metric_name(name)
    except ValueError:
        base, k = None, None
    if base == "map" and k is None:
        return None, None
    funcs = {"precision": metrics.precision_at_k, "ndcg": metrics.ndcg_at_k,
             "recall": metrics.recall_at_k}
    if base not in funcs or k is None or k < 1:
        raise ValueError(f"scoring={name!r} is not supported for early stopping; use 'map' or "
                         "'precision_at_<k>', 'ndcg_at_<k>', 'recall_at_<k>'")
    return funcs[base], k


def metric_by_name(name):
    """The xplant ranking metric named like a scorer, as f(Y, scores) -> float.

    Raises
    ------
    ValueError
        For a name other than "map" or "<precision|ndcg|recall>_at_<k>".
    """
    from ... import metrics
    func, k = _metric_at_k(name)
    if func is None:
        return lambda Y, s: float(metrics.mean_average_precision(Y, s))
    return lambda Y, s: float(func(Y, s, k=k))


def score_by_name(name, Y, scores, *, candidates=None, rank=None):
    """Compute the metric named ``name`` (see :func:`metric_by_name`).

    Parameters
    ----------
    name : str
        "map" or "<precision|ndcg|recall>_at_<k>".
    Y : {ndarray, sparse matrix} of shape (n, L)
        Gold labels, 0/1.
    scores : ndarray of shape (n, L), or (n, C) with ``candidates``
        Scores. With ``candidates``, each row's candidates' scores floored
        as :func:`xplant.fusion.dense_scores` floors them (the block of
        :func:`xplant.fusion.fuse` with ``min_score=SCORE_FLOOR``), standing
        for that function's (n, L) scores: MAP by
        :func:`xplant.fusion.map_from_candidates`, a metric at k on the
        labels of :func:`xplant.fusion.ranking_from_candidates`. Both give
        the metric of the dense scores to the last digit (ties rank the
        lower label first in both) without the (n, L) array.
    candidates, rank : ndarray of int, optional
        Each row's (n, C) candidate labels and their (n, L) tail order, as
        in :func:`degenerate_check`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a name other than "map" or "<precision|ndcg|recall>_at_<k>".
    """
    if candidates is None:
        return metric_by_name(name)(Y, scores)
    from ...fusion import map_from_candidates, ranking_from_candidates
    func, k = _metric_at_k(name)
    if func is None:
        return float(map_from_candidates(Y, candidates, scores, rank))
    return float(func(Y, y_top_k=ranking_from_candidates(candidates, scores, rank, k), k=k))


class FiniteLossGuard(Callback):
    """Stop training with a clear error when a training loss is NaN or inf."""

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        loss = kwargs.get("loss")
        if training and loss is not None and not torch.isfinite(loss).all():
            epoch = len(net.history)
            n_batch = len(net.history[-1]["batches"])
            raise FloatingPointError(
                f"non-finite training loss at epoch {epoch}, batch {n_batch}; lower the learning "
                "rate or check the inputs. The last checkpoint (if any) is kept.")


class AttentionNDCG(Callback):
    """Stage 1: dev attention nDCG@k against the target relevance.

    Nothing is chosen with it by default (Stage 1 has no early stopping), so
    it is scored on the last planned epoch only (``each_epoch=False``): a
    full pass over dev costs about as much as a share of an epoch's
    training. ``callbacks__attention_ndcg__each_epoch=True`` records it every
    epoch, for a curve or an early stopping on ``valid_attention_ndcg``.
    """

    def __init__(self, k=15, each_epoch=False):
        self.k = k
        self.each_epoch = each_epoch

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        if getattr(net, "dev_full_", None) is None:
            return
        if self.each_epoch or len(net.history) >= net.max_epochs:
            net.history.record("valid_attention_ndcg", net._attention_ndcg(net.dev_full_))
        else:
            # the pass's DataLoader draws its base seed from torch's global generator
            # (one int64); drawing it here keeps the training stream, hence the weights
            # and every result, the same as a fit that scores every epoch
            torch.empty((), dtype=torch.int64).random_()
