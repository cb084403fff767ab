"""The PLANT networks: the Stage 1 planter and the Stage 2 classifier.

Both hold the backbone as ``encoder`` and the label attention as
``attention``, so a planted state dict loads into the classifier by name.
"""

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ._attention import LabelAttention, masked_softmax

#: The logit of a label the network does not score (:meth:`PlantNet.score_only`):
#: σ(−80) ≈ 1.8 · 10⁻³⁵, below the probability of any label it scores, yet
#: finite (every check of finite scores holds, every sum stays defined) and
#: with exp(80) inside float32's range (no overflow in a float32 sigmoid).
UNSCORED_LOGIT = -80.0


class PlanterNet(nn.Module):
    """Backbone + label attention, scoring ranking candidates (Stage 1).

    Parameters
    ----------
    encoder : nn.Module
        The backbone, with a ``hidden_size`` h.
    n_labels : int
        L.
    attention_dim : int, default=128
        d of the label queries and token keys.
    frozen_encoder : bool, default=False
        The backbone is frozen (``AttentionPlanter(train_encoder=False)``):
        it stays in evaluation mode (no dropout) when the network is put in
        training mode, so its states are a function of the document alone
        and can be cached (:mod:`xplant.neural.planting._states`).
    """

    def __init__(self, encoder, n_labels, attention_dim=128, frozen_encoder=False):
        super().__init__()
        self.encoder = encoder
        self.attention = LabelAttention(n_labels, encoder.hidden_size, attention_dim)
        self.frozen_encoder = frozen_encoder

    def train(self, mode=True):
        """``nn.Module.train``; a frozen backbone stays in evaluation mode.

        Parameters
        ----------
        mode : bool, default=True
            Training (True) or evaluation mode.
        """
        super().train(mode)
        if self.frozen_encoder:
            self.encoder.eval()
        return self

    def forward(self, batch):
        """Scores (N, C) of the candidate positions of each ranking item.

        Parameters
        ----------
        batch : Stage1Batch
            Token ``ids`` and ``mask`` (b, n), and the items' ``doc_index``,
            ``label_index`` (N,) and candidate ``positions`` (N, C); with
            cached ``states`` (b, n, h) the backbone does not run.
        """
        states = getattr(batch, "states", None)
        H = self.encoder(batch.ids, batch.mask) if states is None else states
        K = self.attention.keys(H)
        return self.attention.scores_at(K, batch.doc_index, batch.label_index, batch.positions)

    def attention_scores(self, ids, mask, labels):
        """Raw attention scores (b, m, n) of the given labels.

        Parameters
        ----------
        ids, mask : Tensor of shape (b, n)
            Token ids and the mask of real (not padding) tokens.
        labels : LongTensor of shape (b, m)
            Label ids per document.
        """
        K = self.attention.keys(self.encoder(ids, mask))
        return self.attention.scores(K, labels)


def pooling_matrix(h, p):
    """The (h, p) matrix of AdaptiveAvgPool1d(p) on length-h vectors: x @ M == pool(x)."""
    eye = torch.eye(h).unsqueeze(1)                              # (h, 1, h)
    return F.adaptive_avg_pool1d(eye, p).squeeze(1)              # (h, p)


def attend(Q, K, Vh, mask):
    """softmax(Q Kᵀ/√d) Vh over unmasked positions, without storing (b, L, n).

    Q (b, L, d) or (L, d), K (b, n, d), Vh (b, n, h), mask (b, n) with at
    least one True per row. Uses PyTorch's fused scaled-dot-product
    attention (one head per label query), which on CPU is ~5x faster than
    the explicit softmax and never materialises the attention matrix.
    """
    b = K.shape[0]
    if Q.dim() == 2:
        Q = Q.unsqueeze(0).expand(b, -1, -1)
    out = F.scaled_dot_product_attention(Q.unsqueeze(1), K.unsqueeze(1), Vh.unsqueeze(1),
                                         attn_mask=mask[:, None, None, :])
    return out.squeeze(1)


class PlantNet(nn.Module):
    """Stage 2: label-wise attention, feature boosting, pooling and head.

    A = softmax_row(S)(H W_v); A' = B_a + A ⊙ B_m; P = AdaptiveAvgPool1d(p)(A');
    logit = P W_c + b with W_c shared (``head="shared"``), or a per-label
    weight (``head="labelwise"``, the authors' code).

    Pooling and the head are linear, so they are folded into one (h,) or
    (L, h) weight w = pool-matrix · W_c, and the logit is computed exactly as
    logit_l = B_a[l]·w_l + Σ_j A[l, j] B_m[l, j] w_l[j] + b_l, which avoids
    several (b, L, h) temporaries.

    The classifier builds it with ``module__`` settings: ``attention_dim``,
    ``pool_size``, ``head`` and ``label_chunk`` here; ``embedding_dim``,
    ``hidden_dim``, ``kernel_size``, ``dropout``, ``glove`` and
    ``backbone_options`` go to the backbone
    (:func:`~xplant.neural.backbones.build_backbone`), ``max_length`` to
    the documents' truncation.

    Parameters
    ----------
    encoder, n_labels
        As in :class:`PlanterNet`: the backbone (hidden size h) and L.
    attention_dim : int, default=128
        d of the label queries and token keys; equal to h lets the fused
        attention kernel run (the estimators' default).
    pool_size : int, default=128
        p of the adaptive average pooling; capped at h.
    head : {"shared", "labelwise"}, default="shared"
        One weight for every label, or one per label (the authors' code).
    label_chunk : int, default=4096
        Labels processed at once, bounding the (b, chunk, h) tensors; the
        result does not depend on it.

    Notes
    -----
    :meth:`score_only` restricts the labels the network attends and
    scores; the others get :data:`UNSCORED_LOGIT`. Their parameters stay
    (so state dicts keep their shapes) but take no part in the output.
    """

    def __init__(self, encoder, n_labels, attention_dim=128, pool_size=128, head="shared",
                 label_chunk=4096):
        super().__init__()
        h = encoder.hidden_size
        self.encoder = encoder
        self.attention = LabelAttention(n_labels, h, attention_dim)
        self.value = nn.Linear(h, h)
        self.boost_add = nn.Parameter(torch.zeros(n_labels, h))
        self.boost_mul = nn.Parameter(torch.ones(n_labels, h))
        self.pool_size = min(pool_size, h)
        self.register_buffer("pool", pooling_matrix(h, self.pool_size), persistent=False)
        self.head_kind = head
        if head == "shared":
            self.head_weight = nn.Parameter(torch.randn(self.pool_size) / self.pool_size ** 0.5)
        else:
            self.head_weight = nn.Parameter(torch.randn(n_labels, self.pool_size) / self.pool_size ** 0.5)
        self.label_bias = nn.Parameter(torch.zeros(n_labels))
        self.label_chunk = label_chunk
        self.n_labels = n_labels
        self.register_buffer("scored_ids", None, persistent=False)

    def score_only(self, scored):
        """Attend and score only these labels; the others get :data:`UNSCORED_LOGIT`.

        A label with no training positive and no planted query has nothing
        for its attention to learn (PlantClassifier's ``scored_labels_``):
        leaving it out cuts the label-wise attention's work in proportion.

        Parameters
        ----------
        scored : array-like of bool of shape (n_labels,) or None
            True for the labels to score; None scores every label.

        Returns
        -------
        self
        """
        if scored is not None:
            scored = np.asarray(scored, dtype=bool)
            if scored.shape != (self.n_labels,):
                raise ValueError(f"scored has shape {scored.shape}, the network has "
                                 f"{self.n_labels} labels")
        self.scored_ids = (None if scored is None or scored.all() else
                           torch.as_tensor(np.flatnonzero(scored), dtype=torch.long,
                                           device=self.label_bias.device))
        return self

    def _head(self, sl):
        """Pool-folded head weight: (h,) shared or (chunk, h) label-wise."""
        if self.head_kind == "shared":
            return self.pool @ self.head_weight
        return self.head_weight[sl] @ self.pool.T

    @staticmethod
    def attention_mask(mask):
        """Let an empty document attend to its first (padding) position.

        Its encoder states are zero, so it gets one fixed representation: the
        model's prior prediction, the same for every empty document.

        Parameters
        ----------
        mask : BoolTensor of shape (b, n)
            The mask of real tokens; a copy is changed, never ``mask``.
        """
        empty = ~mask.any(1)
        if empty.any():
            mask = mask.clone()
            mask[empty, 0] = True
        return mask

    def forward(self, ids, mask, rank=None, candidates=None):
        """ids, mask (b, n) -> logits (b, L), or (b, C) with ``candidates``.

        With ``candidates`` (a (b, C) long tensor of label ids per document,
        padding any valid id) only those labels are attended and scored:
        attention, boosting and head cost b·C·n instead of b·L·n, and the
        logits are those of the full model at the same labels.

        With ``rank`` (a Stage1Batch of the same documents: ranking items
        ``doc_index``, ``label_index`` (N,) and ``positions`` (N, C)) it
        returns ``(logits, s)``, where s (N, C) are the raw attention scores
        at those positions, from the same encoder pass.

        Parameters
        ----------
        ids, mask : Tensor of shape (b, n)
            Token ids and the mask of real (not padding) tokens.
        rank : Stage1Batch, optional
            Ranking items of the same documents (above).
        candidates : LongTensor of shape (b, C), optional
            Label ids scored per document (above); None: every label.
        """
        H = self.encoder(ids, mask)
        K = self.attention.keys(H)
        logits = (self._logits(H, K, mask) if candidates is None
                  else self._candidate_logits(H, K, mask, candidates))
        if rank is not None:
            return logits, self.attention.scores_at(K, rank.doc_index, rank.label_index,
                                                    rank.positions)
        return logits

    def _logits(self, H, K, mask):
        """Logits (b, L) from encoder states H and attention keys K.

        Only the scored labels (:meth:`score_only`) are attended, in chunks
        of ``label_chunk``; the others are :data:`UNSCORED_LOGIT`.
        """
        Vh = self.value(H)
        amask = self.attention_mask(mask)
        ids = self.scored_ids
        n = self.n_labels if ids is None else len(ids)
        out = []
        for lo in range(0, n, self.label_chunk):
            hi = min(lo + self.label_chunk, n)
            if ids is None:
                sl = slice(lo, hi)
                labels = torch.arange(lo, hi, device=H.device)
            else:
                sl = labels = ids[lo:hi]
            A = attend(self.attention.queries(labels), K, Vh, amask)            # (b, c, h)
            w = self._head(sl)
            logit = (A * (self.boost_mul[sl] * w)).sum(-1) + (self.boost_add[sl] * w).sum(-1)
            out.append(logit + self.label_bias[sl])
        logits = torch.cat(out, 1)
        if ids is None:
            return logits
        full = logits.new_full((logits.shape[0], self.n_labels), UNSCORED_LOGIT)
        return full.index_copy(1, ids, logits)

    def _candidate_logits(self, H, K, mask, candidates):
        """Logits (b, C) of each document's own candidate labels (b, C).

        The same formula as :meth:`_logits`, with each label's query, boost
        vectors, head weight and bias gathered per document: tensors are
        (b, C, ·), never (b, L, ·).
        """
        Vh = self.value(H)
        A = attend(self.attention.queries(candidates), K, Vh, self.attention_mask(mask))
        if self.head_kind == "shared":
            w = self.pool @ self.head_weight                                    # (h,)
        else:
            w = self.head_weight[candidates] @ self.pool.T                      # (b, C, h)
        logit = (A * (self.boost_mul[candidates] * w)).sum(-1) \
            + (self.boost_add[candidates] * w).sum(-1) + self.label_bias[candidates]
        if self.scored_ids is None:
            return logit
        scored = torch.zeros(self.n_labels, dtype=torch.bool, device=logit.device)
        scored[self.scored_ids] = True
        return logit.masked_fill(~scored[candidates], UNSCORED_LOGIT)

    def attention_weights(self, ids, mask, labels):
        """Attention distributions softmax(S) (b, m, n) of the given labels (explanations).

        Parameters
        ----------
        ids, mask : Tensor of shape (b, n)
            Token ids and the mask of real (not padding) tokens.
        labels : LongTensor of shape (m,) or (b, m)
            Label ids, shared by the batch or per document.
        """
        H = self.encoder(ids, mask)
        K = self.attention.keys(H)
        return masked_softmax(self.attention.scores(K, labels), self.attention_mask(mask))

    def parameter_groups(self):
        """Parameter names per unfreezing group: head, attention, encoder groups."""
        groups = {"head": [], "attention": []}
        enc = self.encoder.parameter_groups()
        for g, names in enc.items():
            groups[g] = ["encoder." + n for n in names]
        for n, _ in self.named_parameters():
            if n.startswith("attention."):
                groups["attention"].append(n)
            elif not n.startswith("encoder."):
                groups["head"].append(n)
        return groups
