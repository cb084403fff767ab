"""Label-wise attention (docs/design.md, sections "Stage 1: planting attention by
learning to rank" and "Stage 2: the classifier").

S = (E W_q)(H W_k)ᵀ / √d, one query per label; A = softmax_row(S) (H W_v).
"""

import math

import torch
from torch import nn


class LabelAttention(nn.Module):
    """Label queries E (L, d) and the query/key projections W_q, W_k.

    Parameters
    ----------
    n_labels : int
        L, the number of label queries.
    hidden_size : int
        h, the size of the backbone's hidden states.
    attention_dim : int
        d, the size of queries and keys.
    """

    def __init__(self, n_labels, hidden_size, attention_dim):
        super().__init__()
        self.label_queries = nn.Parameter(torch.randn(n_labels, attention_dim) * 0.02 ** 0.5)
        self.query = nn.Linear(attention_dim, attention_dim, bias=False)
        self.key = nn.Linear(hidden_size, attention_dim, bias=False)
        self.scale = 1.0 / math.sqrt(attention_dim)

    def keys(self, H):
        """Keys K (b, n, d) of the tokens.

        Parameters
        ----------
        H : Tensor of shape (b, n, h)
            The backbone's hidden states.
        """
        return self.key(H)

    def queries(self, labels=None):
        """Queries (L, d) of all labels, or (..., d) of the labels of an index tensor.

        Parameters
        ----------
        labels : LongTensor, optional
            Label ids, of any shape; None: every label.
        """
        E = self.label_queries if labels is None else self.label_queries[labels]
        return self.query(E)

    def scores(self, K, labels=None):
        """Scores S (b, L', n) of the given labels (all by default) over positions.

        Parameters
        ----------
        K : Tensor of shape (b, n, d)
            The tokens' keys (:meth:`keys`).
        labels : LongTensor of shape (L',) or (b, L'), optional
            Label ids, shared by the batch or per document; None: every label.
        """
        Q = self.queries(labels)
        if Q.dim() == 2:
            return torch.einsum("ld,bnd->bln", Q, K) * self.scale
        return torch.einsum("bld,bnd->bln", Q, K) * self.scale

    def scores_at(self, K, doc_index, label_index, positions):
        """Scores of ranking items at candidate positions.

        Parameters
        ----------
        K : tensor (b, n, d)
            The tokens' keys (:meth:`keys`).
        doc_index, label_index : long tensors (N,)
            The document (row of ``K``) and the label of each ranking item.
        positions : long tensor (N, C)
            The token positions of each item's C candidates.

        Returns
        -------
        s : tensor (N, C)
        """
        Kg = K[doc_index.unsqueeze(1), positions]          # (N, C, d)
        Q = self.queries(label_index)                       # (N, d)
        return torch.einsum("ncd,nd->nc", Kg, Q) * self.scale


def masked_softmax(S, mask):
    """Row softmax of S (b, L, n) over unmasked positions; all-masked rows give 0."""
    S = S.masked_fill(~mask.unsqueeze(1), float("-inf"))
    P = torch.softmax(S, dim=-1)
    return torch.nan_to_num(P, nan=0.0)
