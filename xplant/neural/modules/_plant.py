"""The PLANT networks: the Stage 1 planter and the Stage 2 classifier.

Both hold the backbone as ``encoder`` and the label attention as
``attention``, so a planted state dict loads into the classifier by name.
"""

import torch
from torch import nn
from torch.nn import functional as F

from ._attention import LabelAttention, masked_softmax


class PlanterNet(nn.Module):
    """Backbone + label attention, scoring ranking candidates (Stage 1)."""

    def __init__(self, encoder, n_labels, attention_dim=128):
        super().__init__()
        self.encoder = encoder
        self.attention = LabelAttention(n_labels, encoder.hidden_size, attention_dim)

    def forward(self, batch):
        """Scores (N, C) of the candidate positions of each item of a Stage1Batch."""
        K = self.attention.keys(self.encoder(batch.ids, batch.mask))
        return self.attention.scores_at(K, batch.doc_index, batch.label_index, batch.positions)

    def attention_scores(self, ids, mask, labels):
        """Raw attention scores (b, m, n) for a (b, m) tensor of label ids."""
        K = self.attention.keys(self.encoder(ids, mask))
        return self.attention.scores(K, labels)


class PlantNet(nn.Module):
    """Stage 2: label-wise attention, feature boosting, pooling and head.

    A = softmax_row(S)(H W_v); A' = B_a + A ⊙ B_m; P = AdaptiveAvgPool1d(p)(A');
    logit = P W_c + b with W_c shared (``head="shared"``), or a per-label
    weight (``head="labelwise"``, the authors' code).

    Parameters
    ----------
    encoder : nn.Module
    n_labels : int
    attention_dim : int
    pool_size : int
        p; capped at the hidden size.
    head : {"shared", "labelwise"}
    label_chunk : int
        Labels processed at once, bounding the (b, chunk, n) attention
        tensor; the result does not depend on it.
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
        self.head_kind = head
        if head == "shared":
            self.head_weight = nn.Parameter(torch.randn(self.pool_size) / self.pool_size ** 0.5)
        else:
            self.head_weight = nn.Parameter(torch.randn(n_labels, self.pool_size) / self.pool_size ** 0.5)
        self.label_bias = nn.Parameter(torch.zeros(n_labels))
        self.label_chunk = label_chunk
        self.n_labels = n_labels

    def forward(self, ids, mask, return_attention=False):
        """ids, mask (b, n) -> logits (b, L) (and attention (b, L, n))."""
        H = self.encoder(ids, mask)
        K = self.attention.keys(H)
        Vh = self.value(H)
        out, atts = [], []
        for lo in range(0, self.n_labels, self.label_chunk):
            sl = slice(lo, lo + self.label_chunk)
            labels = torch.arange(lo, min(lo + self.label_chunk, self.n_labels), device=ids.device)
            P = masked_softmax(self.attention.scores(K, labels), mask)   # (b, c, n)
            A = torch.bmm(P, Vh)                                        # (b, c, h)
            A = self.boost_add[sl] + A * self.boost_mul[sl]
            if self.pool_size != A.shape[-1]:
                b, c, h = A.shape
                A = F.adaptive_avg_pool1d(A.reshape(b * c, 1, h), self.pool_size).view(b, c, -1)
            if self.head_kind == "shared":
                logit = A @ self.head_weight
            else:
                logit = (A * self.head_weight[sl]).sum(-1)
            out.append(logit + self.label_bias[sl])
            if return_attention:
                atts.append(P)
        logits = torch.cat(out, 1)
        if return_attention:
            return logits, torch.cat(atts, 1)
        return logits

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
