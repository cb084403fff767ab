"""The trained network of a PlantClassifier as a scorer of encoded documents.

A collaborator of :class:`~xplant.neural.PlantClassifier`, as scikit-learn's
``TreePredictor`` is of its gradient boosting: :class:`NetworkScorer` holds
the network, its padding id and the fitted logit adjustment, and scores
token-id documents in length-sorted batches: every label's logits, the
logits of given candidates, top-k, and the label-wise attention weights that
:meth:`PlantClassifier.explain` turns into spans. It holds no training
state; the classifier builds one for each call that scores.
"""

import numpy as np
import torch

from ..._sigmoid import sigmoid
from ..training._data import pad_batch


class NetworkScorer:
    """PLANT's network as a scorer of token-id documents.

    Parameters
    ----------
    module : PlantNet
        The trained network (put in eval mode by every method that scores).
    adjustment : LogitAdjustment
        The fitted logit adjustment (``parts_["logit_adjustment"]``): the
        logits are z − τ · log p (τ = 0 leaves them as trained).
    pad_id : int
        The relevance's padding token id.
    n_labels : int
        The labels the network scores.
    device : str or torch.device, default="cpu"
        Where the network runs.
    batch_size : int, default=16
        Documents per forward pass.
    """

    def __init__(self, module, adjustment, *, pad_id, n_labels, device="cpu", batch_size=16):
        self.module = module
        self.adjustment = adjustment
        self.pad_id = pad_id
        self.n_labels = n_labels
        self.device = device
        self.batch_size = batch_size

    @torch.no_grad()
    def batches(self, docs, *, candidates=None, tau=None):
        """Yield (row indices, logits tensor) over length-sorted batches.

        Parameters
        ----------
        docs : list of ndarray of int
            Token ids of each document.
        candidates : ndarray of int of shape (n, C) or None, default=None
            Each document's labels; the logits are then (b, C), of those
            labels only.
        tau : float or None, default=None
            τ of the logit adjustment; None: the fitted one.

        Yields
        ------
        idx : ndarray of int
            The batch's rows of ``docs``.
        z : torch.Tensor of float32 of shape (b, n_labels) or (b, C)
            Their adjusted logits, on the CPU.
        """
        self.module.eval()
        lengths = np.array([len(d) for d in docs])
        order = np.argsort(lengths, kind="stable")
        for lo in range(0, len(docs), self.batch_size):
            idx = order[lo:lo + self.batch_size]
            ids, mask = pad_batch([docs[i] for i in idx], pad_value=self.pad_id)
            extra = {} if candidates is None else \
                {"candidates": torch.as_tensor(candidates[idx], device=self.device)}
            z = self.module(ids.to(self.device), mask.to(self.device), **extra).float().cpu()
            yield idx, self.adjustment.apply(z, None if candidates is None else candidates[idx],
                                             tau)

    def logits(self, docs, tau=None):
        """Every label's adjusted logits, ndarray of float32 of shape (n, n_labels).

        ``tau`` as in :meth:`batches`.
        """
        out = np.zeros((len(docs), self.n_labels), dtype=np.float32)
        for idx, z in self.batches(docs, tau=tau):
            out[idx] = z.numpy()
        return out

    def probabilities(self, docs):
        """σ of :meth:`logits` at the fitted τ, ndarray of float32 of shape (n, n_labels)."""
        return sigmoid(self.logits(docs), dtype=np.float32)

    def candidate_logits(self, docs, candidates, tau=None):
        """The adjusted logits at each document's candidates, float32 of shape (n, C).

        With every label a candidate (C = ``n_labels``) they are taken from
        one dense pass; otherwise the network scores the candidates only.
        ``tau`` as in :meth:`batches`.
        """
        if candidates.shape[1] >= self.n_labels:
            return np.take_along_axis(self.logits(docs, tau=tau), candidates, 1)
        out = np.zeros(candidates.shape, dtype=np.float32)
        for idx, z in self.batches(docs, candidates=candidates, tau=tau):
            out[idx] = z.numpy()
        return out

    def top_k(self, docs, k):
        """The k best labels of each document and their probabilities.

        Labels are ranked by their logits (σ of two logits above about 17 is
        exactly 1.0 in float32); equal logits go to the lower label index.

        Returns
        -------
        indices : ndarray of int64 of shape (n, k)
        scores : ndarray of float32 of shape (n, k)
        """
        from ...metrics import top_k_indices
        ind = np.zeros((len(docs), k), dtype=np.int64)
        sc = np.zeros((len(docs), k), dtype=np.float32)
        for idx, z in self.batches(docs):
            top = top_k_indices(z.numpy(), k)        # the logits break the ties of saturated σ
            ind[idx] = top
            sc[idx] = sigmoid(np.take_along_axis(z.numpy(), top, 1), dtype=np.float32)
        return ind, sc

    @torch.no_grad()
    def document_probabilities(self, ids, labels=None):
        """One document's probabilities σ(z − τ · log p), float32 of shape (n_labels,).

        ``labels``: the label columns to score (the others are 0), or None
        for every label.
        """
        self.module.eval()
        t_ids, mask = pad_batch([ids], pad_value=self.pad_id)
        if labels is None:
            return sigmoid(self.adjustment.apply(self.module(t_ids, mask))[0].numpy(),
                           dtype=np.float32)
        probs = np.zeros(self.n_labels, dtype=np.float32)
        probs[labels] = sigmoid(self.adjustment.apply(self.module(
            t_ids, mask, candidates=torch.as_tensor(labels)[None]), labels[None])[0].numpy(),
            dtype=np.float32)
        return probs

    @torch.no_grad()
    def attention(self, ids, labels):
        """The label-wise attention of one document, float tensor of shape (len(labels), len(ids)).

        ``labels``: ndarray of int, the label columns.
        """
        self.module.eval()
        t_ids, mask = pad_batch([ids], pad_value=self.pad_id)
        return self.module.attention_weights(t_ids, mask, torch.as_tensor(labels)[None])[0]
