"""Losses of PLANT: Stage 1 learning to rank, Stage 2 focal loss with hard negatives.

Stage 1 (the PLANT paper, arXiv 2410.23066; :doc:`/design`, section "Stage 1:
planting attention by learning to rank"), for ranking items with scores
s (N, C), graded relevance r (N, C) and a validity mask::

    L = Σ_{j,h: r_j > r_h} w_jh · log2(1 + exp(−σ (s_j − s_h)))

with ``w_jh = |ΔnDCG@k|_jh``, the change of nDCG@k when j and h swap places in
the current ranking by s ("lambda", the paper's LambdaLoss form; Burges 2010,
Wang et al. CIKM 2018), w = 1 ("ranknet"), or the authors' code
("lambdarank": σ = 0.5 and graded relevance). ``"mse"`` regresses scores on
relevance scaled to [0, 1] (the paper's ablation).
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["PlantLoss", "Stage1Loss"]

STAGE1_LOSSES = ("lambda", "lambdarank", "ranknet", "mse")


def _discount(ranks, k):
    d = 1.0 / torch.log2(ranks.float() + 1.0)
    return torch.where(ranks <= k, d, torch.zeros_like(d))


def ranks_desc(s, valid):
    """1-based rank of each candidate by descending score among valid ones.

    Ties are broken by position (lower index first); invalid entries get
    ranks after all valid ones.
    """
    s = s.detach().masked_fill(~valid, float("-inf"))
    order = torch.argsort(-s, dim=1, stable=True)
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(1, s.shape[1] + 1, device=s.device).expand_as(order))
    return ranks


def ideal_dcg(rel, valid, k):
    """IDCG@k with linear gain: the top-k relevances in order."""
    r = rel.masked_fill(~valid, 0.0)
    top = torch.sort(r, dim=1, descending=True).values[:, :k]
    disc = 1.0 / torch.log2(torch.arange(2, top.shape[1] + 2, device=r.device).float())
    return (top * disc).sum(1)


def graded_ndcg(s, rel, valid, k):
    """nDCG@k of the ranking by s, linear gain r, per item (N,).

    Items whose relevance is all zero get NaN (undefined), so callers can
    skip them.
    """
    ranks = ranks_desc(s, valid)
    dcg = (rel.masked_fill(~valid, 0.0) * _discount(ranks, k)).sum(1)
    idcg = ideal_dcg(rel, valid, k)
    return torch.where(idcg > 0, dcg / idcg.clamp(min=1e-12), torch.full_like(dcg, float("nan")))


def stage1_loss(s, rel, valid, *, kind="lambda", k=15, sigma=1.0):
    """Pairwise ranking loss for Stage 1, averaged over items with a pair.

    Parameters
    ----------
    s : tensor (N, C)
        Attention scores of the candidates.
    rel : tensor (N, C)
        Graded relevance (MIG in bits; 0 for sampled negatives). Linear gain.
    valid : bool tensor (N, C)
    kind : {"lambda", "lambdarank", "ranknet", "mse"}
    k : int
        nDCG cutoff of the ``|ΔnDCG@k|`` weights.
    sigma : float
        σ of the logistic; the authors' code ("lambdarank") uses 0.5.

    Returns
    -------
    loss : scalar tensor
    """
    if kind not in STAGE1_LOSSES:
        raise ValueError(f"stage1 loss must be one of {STAGE1_LOSSES}, got {kind!r}")
    if s.numel() == 0:
        return s.sum() * 0.0
    if kind == "mse":
        top = rel.masked_fill(~valid, 0).amax(1, keepdim=True).clamp(min=1e-12)
        target = rel / top
        err = (torch.sigmoid(s) - target) ** 2 * valid
        return err.sum() / valid.sum().clamp(min=1)
    if kind == "lambdarank":
        sigma = 0.5 if sigma == 1.0 else sigma
    if not rel.is_floating_point():
        rel = rel.to(s.dtype)
    with torch.no_grad():       # the pairs and their weights take no gradient
        # an invalid candidate's relevance as NaN: every comparison with it is False, so a
        # pair (r_j > r_h) has both ends valid without two (N, C, C) masks
        r = rel.masked_fill(~valid, float("nan"))
        diff_r = r.unsqueeze(2) - r.unsqueeze(1)                     # r_j - r_h
        pair = diff_r > 0
        # an item has a pair when its valid relevances are not all equal
        has = r.nan_to_num(float("-inf")).amax(1) > r.nan_to_num(float("inf")).amin(1)
        if kind == "ranknet":
            w = pair.to(s.dtype)
        else:
            disc = _discount(ranks_desc(s, valid), k)
            idcg = ideal_dcg(rel, valid, k).clamp(min=1e-12)
            # |r_j - r_h| · |Δdisc| / IDCG in place; the non-pairs (NaN where invalid) are 0
            w = diff_r.abs_().mul_((disc.unsqueeze(2) - disc.unsqueeze(1)).abs_())
            w = torch.where(pair, w.div_(idcg[:, None, None]), 0.0)
    if sigma == 1.0:
        x = s.unsqueeze(1) - s.unsqueeze(2)          # −(s_j − s_h), exactly as −1 · (s_j − s_h)
    else:
        x = -sigma * (s.unsqueeze(2) - s.unsqueeze(1))
    pl = F.softplus(x) / math.log(2.0)
    per_item = (w * pl).sum((1, 2))
    return per_item[has].sum() / has.sum().clamp(min=1)


class Stage1Loss(nn.Module):
    """The Stage 1 ranking loss of :class:`~xplant.neural.AttentionPlanter` (its ``criterion``).

    Each label's attention scores over a document's tokens are ranked
    against the tokens' MIG relevance (:func:`stage1_loss`).

    Parameters
    ----------
    kind : {"lambda", "lambdarank", "ranknet", "mse"}, default="lambda"
        The planter's ``stage1_loss``.
    k : int, default=15
        nDCG@k cutoff of the ``|ΔnDCG@k|`` weights (the planter's ``ndcg_k``).
    sigma : float > 0, default=1.0
        Scale of the pairwise logistic (the planter's ``sigma``).
    """

    def __init__(self, kind="lambda", k=15, sigma=1.0):
        super().__init__()
        self.kind, self.k, self.sigma = kind, k, sigma

    def forward(self, s, target):
        """The loss of one batch: a scalar tensor (mean over the items with a pair).

        Parameters
        ----------
        s : Tensor of shape (N, C)
            Attention scores of each item's C candidate tokens (an item is
            one (document, label) pair).
        target : tuple of (Tensor, Tensor)
            ``(rel, valid)``: the candidates' graded relevance, float of
            shape (N, C) (MIG in bits, 0 for sampled negatives), and the
            bool mask of shape (N, C) of the candidates that exist.
        """
        rel, valid = target
        return stage1_loss(s, rel, valid, kind=self.kind, k=self.k, sigma=self.sigma)


def smooth_targets(y, epsilon, form="paper"):
    """Label smoothing: "paper" ỹ = (1−ε)y + ε(1−y); "symmetric" ỹ = (1−ε)y + ε/2."""
    if form == "paper":
        return (1 - epsilon) * y + epsilon * (1 - y)
    if form == "symmetric":
        return (1 - epsilon) * y + epsilon / 2
    raise ValueError(f"smoothing form must be 'paper' or 'symmetric', got {form!r}")


def select_labels(logits, positives, hard_negatives, scored=None):
    """Per document: positives ∪ top-m negatives by score, among the scored labels.

    Parameters
    ----------
    logits : tensor (b, L)
    positives : long tensor (b, P), -1 padded
    hard_negatives : int or None
        m; None or m >= L uses every label.
    scored : bool tensor (L,) or None, default=None
        The labels the network scores (``PlantNet.score_only``); the others
        are never selected, as positive or negative. None: every label.

    Returns
    -------
    index : long tensor (b, S)
        Selected label ids (padding repeats a valid id and is masked).
    target : float tensor (b, S)
    keep : bool tensor (b, S)
    """
    b, L = logits.shape
    pos_valid = positives >= 0
    pos_idx = positives.clamp(min=0)
    if scored is not None:
        pos_valid = pos_valid & scored[pos_idx]
    # scatter_add, not scatter_: padding (-1 -> 0) may share an index with a real positive.
    is_pos = torch.zeros_like(logits).scatter_add_(1, pos_idx, pos_valid.float()) > 0
    if hard_negatives is None or hard_negatives >= L:
        idx = torch.arange(L, device=logits.device).expand(b, L)
        keep = torch.ones_like(is_pos) if scored is None else scored.expand(b, L)
        return idx, is_pos.float(), keep
    excluded = is_pos if scored is None else is_pos | ~scored
    masked = logits.detach().masked_fill(excluded, float("-inf"))
    neg_idx = torch.topk(masked, hard_negatives, dim=1).indices
    idx = torch.cat([pos_idx, neg_idx], 1)
    target = torch.cat([pos_valid.float(), torch.zeros_like(neg_idx, dtype=torch.float)], 1)
    # never a positive, nor an unscored label, as a negative
    neg_keep = torch.isfinite(masked.gather(1, neg_idx))
    keep = torch.cat([pos_valid, neg_keep], 1)
    return idx, target, keep


def plant_loss(logits, positives, *, loss="focal", gamma=2.0, label_smoothing=0.1,
               smoothing_form="paper", hard_negatives=1000, scored=None):
    """Stage 2 loss: focal (or BCE) with label smoothing over S_i, averaged.

    With p = σ(z) and soft target ỹ, p_t = ỹ p + (1−ỹ)(1−p) and
    focal = (1 − p_t)^γ · BCE(z, ỹ); the loss of document i is the mean over
    S_i (its positives and top-m hard negatives among the ``scored`` labels,
    :func:`select_labels`); the batch loss is the mean over documents.
    """
    idx, y, keep = select_labels(logits, positives, hard_negatives, scored)
    return candidate_loss(logits.gather(1, idx), y, keep, loss=loss, gamma=gamma,
                          label_smoothing=label_smoothing, smoothing_form=smoothing_form)


def candidate_loss(z, y, keep, *, loss="focal", gamma=2.0, label_smoothing=0.1,
                   smoothing_form="paper"):
    """Stage 2 loss over given (document, label) pairs: focal or BCE, smoothed.

    The loss of :func:`plant_loss` once each document's labels are chosen:
    ``plant_loss`` chooses positives ∪ top-m hard negatives among all
    labels; with a shortlist the choice is the document's candidates (its
    gold labels and the shortlist's highest-ranked negatives).

    Parameters
    ----------
    z : tensor (b, S)
        Logits of the chosen labels.
    y : float tensor (b, S)
        0/1 targets.
    keep : bool tensor (b, S)
        False at padding.
    loss, gamma, label_smoothing, smoothing_form
        As in :func:`plant_loss`.

    Returns
    -------
    loss : scalar tensor
        Mean over documents of the mean over each document's kept pairs.
    """
    yt = smooth_targets(y, label_smoothing, smoothing_form) if label_smoothing else y
    bce = F.binary_cross_entropy_with_logits(z, yt, reduction="none")
    if loss == "focal":
        p = torch.sigmoid(z)
        pt = yt * p + (1 - yt) * (1 - p)
        bce = (1 - pt).clamp(min=0) ** gamma * bce
    elif loss != "bce":
        raise ValueError(f"loss must be 'focal' or 'bce', got {loss!r}")
    per_doc = (bce * keep).sum(1) / keep.sum(1).clamp(min=1)
    return per_doc.mean()


class PlantLoss(nn.Module):
    """The Stage 2 loss of :class:`~xplant.neural.PlantClassifier` (its ``criterion``).

    Focal loss (Lin et al., "Focal Loss for Dense Object Detection", ICCV
    2017) with label smoothing over each document's positives and its hard
    negatives (:func:`plant_loss`); with a shortlist, over the document's
    candidates (:func:`candidate_loss`). ``PlantClassifier(criterion__gamma=1.0)``
    sets these parameters, as skorch routes any ``criterion__`` prefix.

    Parameters
    ----------
    loss : {"focal", "bce"}, default="focal"
        Focal loss, or plain binary cross-entropy (the paper's ablation).
    gamma : float >= 0, default=2.0
        γ of the focal term (1 − p_t)^γ; 0 gives BCE.
    label_smoothing : float in [0, 0.5], default=0.1
        ε of the smoothed targets (:func:`smooth_targets`); 0 turns it off.
    smoothing_form : {"paper", "symmetric"}, default="paper"
        ỹ = (1−ε)y + ε(1−y) (the paper's), or ỹ = (1−ε)y + ε/2.
    hard_negatives : int >= 1 or None, default=1000
        m: the negatives of highest score per document that the loss sees
        beside the positives (hard-negative mining); None: every label.
        Unused with a shortlist (the candidates are the choice).

    Examples
    --------
    >>> import torch
    >>> crit = PlantLoss(loss="bce", label_smoothing=0.0, hard_negatives=None)
    >>> z = torch.tensor([[0.0, 0.0]])
    >>> round(float(crit(z, torch.tensor([[0]]))), 4)      # log 2: both labels at p = 0.5
    0.6931
    """

    def __init__(self, loss="focal", gamma=2.0, label_smoothing=0.1, smoothing_form="paper",
                 hard_negatives=1000):
        super().__init__()
        self.loss, self.gamma, self.label_smoothing = loss, gamma, label_smoothing
        self.smoothing_form, self.hard_negatives = smoothing_form, hard_negatives

    def forward(self, logits, positives, scored=None):
        """The loss of one batch: a scalar tensor (mean over documents).

        Parameters
        ----------
        logits : Tensor of shape (b, L) or (b, C)
            Logits of every label, or of each document's C shortlist
            candidates.
        positives : Tensor of shape (b, P), or dict
            Each document's positive label ids, -1 padded; with a shortlist,
            ``{"target": float (b, C) 0/1, "keep": bool (b, C)}``, the
            candidates' targets and the mask of real (not padding) candidates.
        scored : bool Tensor or None, default=None
            The labels the network scores (``PlantNet.score_only``), of
            shape (L,), or (b, C) at each document's candidates; the loss
            reads no other label. None: every label.
        """
        if isinstance(positives, dict):      # shortlist candidates: (b, C) logits
            keep = positives["keep"] if scored is None else positives["keep"] & scored
            return candidate_loss(logits, positives["target"], keep,
                                  loss=self.loss, gamma=self.gamma,
                                  label_smoothing=self.label_smoothing,
                                  smoothing_form=self.smoothing_form)
        return plant_loss(logits, positives, loss=self.loss, gamma=self.gamma,
                          label_smoothing=self.label_smoothing,
                          smoothing_form=self.smoothing_form,
                          hard_negatives=self.hard_negatives, scored=scored)
