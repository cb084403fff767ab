"""PlantClassifier's prediction methods: probabilities, top-k, explanations.

A mixin of :class:`~xplant.neural.PlantClassifier`, kept apart from the
fitting code: scoring documents in length-sorted batches, the fused scores
of a shortlisted model, and evidence spans from the label-wise attention.
"""

import numbers

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from ..._labels import as_prediction_form, as_score_form
from ..._sigmoid import sigmoid
from .._inputs import encode
from ..training._data import pad_batch, truncate
from ._shortlist import shortlist_texts


class InferenceMixin:
    """Prediction and explanation for :class:`PlantClassifier`."""

    @torch.no_grad()
    def _logits_batches(self, docs, batch_size=None, candidates=None, tau=None):
        """Yield (row indices, logits tensor) over length-sorted batches.

        With ``candidates`` (an (n, C) array of label ids per document) the
        logits are (b, C), of those labels only. The logits are adjusted by
        ``tau``, by default ``logit_adjustment_`` (0 while the model trains).
        """
        self.module_.eval()
        bs = batch_size or self.batch_size
        lengths = np.array([len(d) for d in docs])
        order = np.argsort(lengths, kind="stable")
        for lo in range(0, len(docs), bs):
            idx = order[lo:lo + bs]
            ids, mask = pad_batch([docs[i] for i in idx], pad_value=self.relevance_.pad_id_)
            extra = {} if candidates is None else \
                {"candidates": torch.as_tensor(candidates[idx], device=self.device)}
            z = self.module_(ids.to(self.device), mask.to(self.device), **extra).float().cpu()
            yield idx, self._adjusted(z, None if candidates is None else candidates[idx], tau)

    def _adjusted(self, z, labels=None, tau=None):
        """Logits ``z`` (b, L), or (b, C) of ``labels`` (b, C), minus τ · log p (float32 tensor).

        τ is ``tau``, by default the fitted ``logit_adjustment_``
        (:meth:`~xplant.neural.parts._logit_adjustment.LogitAdjustment.apply`).
        """
        part = self.__dict__.get("parts_", {}).get("logit_adjustment")
        if part is None:                        # no fitted part (yet): τ = 0 unless given
            from ..parts._logit_adjustment import LogitAdjustment
            part = LogitAdjustment(0.0, None, self._log_prior() if tau else None)
        return part.apply(z, labels, tau)

    def _logits(self, docs, tau=None):
        out = np.zeros((len(docs), self.n_labels_), dtype=np.float32)
        for idx, z in self._logits_batches(docs, tau=tau):
            out[idx] = z.numpy()
        return out

    def _scores(self, docs):
        return sigmoid(self._logits(docs), dtype=np.float32)

    def _docs(self, X):
        check_is_fitted(self, "module_")
        return truncate(encode(X, self.relevance_, self._max_length), self._max_length)

    def decision_function(self, X):
        """The ranking score: logits, whose σ is :meth:`predict_proba`.

        Without a shortlist, PLANT's logits z − τ · log p
        (``logit_adjustment_``), float32. With a shortlist, logit(p) of the
        fused probability p of :meth:`predict_proba`
        (:func:`xplant.fusion.logit`, float64; fusion is defined on
        probabilities): strictly increasing in p, so it ranks the labels as
        :meth:`predict_proba` does, ties included, and a probability that
        saturates at 1.0 gets a finite logit above every other.

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_labels)
            Shape (n_samples,) when fitted on a 1-D ``y``
            (:func:`xplant._labels.as_score_form`).
        """
        if getattr(self, "shortlist_", None) is not None:
            from ...fusion import logit
            return self._score_form(logit(self._proba(X)))
        return self._score_form(self._logits(self._docs(X)))

    def _score_form(self, S, *, proba=False):
        """Scores in the form of the fitted target (:func:`xplant._labels.as_score_form`)."""
        return as_score_form(S, getattr(self, "prediction_form_", None), proba=proba)

    def predict_proba(self, X):
        """Label probabilities σ(z − τ · log p), shape (n_samples, n_labels), float32.

        z is PLANT's logit and τ · log p its logit adjustment
        (``logit_adjustment_``; τ = 0 gives σ(z)). One sigmoid, no (n, 2, L)
        stacking. With a shortlist, the fused
        probabilities of each document's candidates; every other label
        scores strictly below the row's lowest candidate, in the
        shortlist's order, then by training frequency. Raises
        NotFittedError before fit. Shape (n_samples, 2), the columns
        1 − p and p, when fitted on a 1-D ``y``
        (:func:`xplant._labels.as_score_form`).

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.
        """
        return self._score_form(self._proba(X), proba=True)

    def _proba(self, X):
        """The (n_samples, n_labels) probabilities of :meth:`predict_proba`."""
        docs = self._docs(X)
        if getattr(self, "shortlist_", None) is not None:
            texts = shortlist_texts(X, docs, self.relevance_)
            return self._fused_dense(docs, texts).astype(np.float32)
        return self._scores(docs)

    def predict_top_k(self, X, k=5):
        """Top-k labels and probabilities without a dense (n, L) matrix.

        Labels are ranked by their logits, not by the probabilities: σ of
        two logits above about 17 is exactly 1.0 in float32, so the
        probabilities tie where the logits do not. Only equal logits go to
        the lower label index. k larger than the number of labels returns
        every label.

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.
        k : int, default=5
            Labels per document.

        Returns
        -------
        indices : ndarray of int64 of shape (n_samples, min(k, n_labels))
            Best first.
        scores : ndarray of float32 of shape (n_samples, min(k, n_labels))
            Their probabilities.
        """
        from ...metrics import top_k_indices
        if not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        docs = self._docs(X)
        k = int(min(k, self.n_labels_))
        if getattr(self, "shortlist_", None) is not None:
            ind, sc = self._fused_top_k(docs, shortlist_texts(X, docs, self.relevance_), k)
            return ind, sc.astype(np.float32)
        ind = np.zeros((len(docs), k), dtype=np.int64)
        sc = np.zeros((len(docs), k), dtype=np.float32)
        for idx, z in self._logits_batches(docs):
            top = top_k_indices(z.numpy(), k)        # the logits break the ties of saturated σ
            ind[idx] = top
            sc[idx] = sigmoid(np.take_along_axis(z.numpy(), top, 1), dtype=np.float32)
        return ind, sc

    @torch.no_grad()
    def explain(self, X, top_labels=5, top_spans=3, *, cut=None, labels=None):
        """The top labels of each document with the text spans their attention points at.

        Parameters
        ----------
        X : list of str
            Raw documents (offsets refer to these strings).
        top_labels : int, default=5
            Labels explained per document, by predicted probability.
        top_spans : int, default=3
            Spans kept per label.
        cut : float or None
            Attention cut for merging tokens into spans; None uses the rule
            of :func:`xplant.evidence.merge_spans` (half the largest weight).
        labels : sequence of sequence of int, optional
            Per document, the label columns to explain instead of its top
            labels (``top_labels`` is then ignored; an empty sequence gives
            no labels). Their ``prob`` is the network's own σ(logit) (with
            its ``logit_adjustment_``), also with a shortlist: the report uses this to show the evidence of
            labels another score ranked, e.g. zero-shot labels.

        Returns
        -------
        list of dict, one per document
            ``{"labels": [{"label", "index", "prob", "spans": [{"start",
            "end", "text", "weight"}]}]}``; ``text == document[start:end]``,
            ``weight`` is attention mass (the sum over the span's tokens).

        Notes
        -----
        Adjacent tokens above the cut are merged into one span and spans are
        snapped to word boundaries (:func:`xplant.evidence.merge_spans`; :doc:`/guide/evidence`,
        section "Spans from token weights"). Token offsets
        come from the same tokenizer the model attends over (word or
        WordPiece), so they map back to the original string, unicode
        included.
        """
        from ...evidence import merge_spans
        from .._inputs import check_texts
        check_is_fitted(self, "module_")
        texts = check_texts(X)
        if not isinstance(top_labels, numbers.Integral) or top_labels < 1:
            raise ValueError(f"top_labels must be a positive integer, got {top_labels!r}")
        ids_list, offsets = self.relevance_.tokenize(texts, return_offsets=True,
                                                     max_length=self._max_length)
        self.module_.eval()
        out = []
        m = int(min(top_labels, self.n_labels_))
        from ...metrics import top_k_indices
        from ...evidence._spans import check_label_lists
        chosen = None if labels is None else check_label_lists(labels, len(texts), self.n_labels_)
        fused = self.predict_top_k(texts, m) if getattr(self, "shortlist_", None) is not None \
            and chosen is None else None
        for i, (text, ids, off) in enumerate(zip(texts, ids_list, offsets)):
            ids = ids[: self._max_length] if self._max_length else ids
            off = off[: len(ids)]
            t_ids, mask = pad_batch([ids], pad_value=self.relevance_.pad_id_)
            if chosen is not None:    # the network's own probabilities of the given labels
                top = chosen[i]
                if top.size == 0:
                    out.append({"labels": []})
                    continue
                probs = np.zeros(self.n_labels_, dtype=np.float32)
                probs[top] = sigmoid(self._adjusted(self.module_(
                    t_ids, mask, candidates=torch.as_tensor(top)[None]), top[None])[0].numpy(),
                                     dtype=np.float32)
            elif fused is None:
                probs = sigmoid(self._adjusted(self.module_(t_ids, mask))[0].numpy(), dtype=np.float32)
                top = top_k_indices(probs[None], m)[0]
            else:                     # fused scores of the shortlist's candidates
                top = fused[0][i]
                probs = np.zeros(self.n_labels_, dtype=np.float32)
                probs[top] = fused[1][i]
            att = self.module_.attention_weights(t_ids, mask, torch.as_tensor(top)[None])[0]
            labels = []
            for j, lab in enumerate(top):
                spans = merge_spans(off, att[j, :len(ids)].numpy(), cut=cut, top_spans=top_spans,
                                    text=text) if len(ids) else []
                labels.append({"label": self.classes_[lab].item() if hasattr(self.classes_[lab], "item")
                               else self.classes_[lab], "index": int(lab), "prob": float(probs[lab]),
                               "spans": spans})
            out.append({"labels": labels})
        return out

    def predict(self, X):
        """0/1 predictions by the fitted rule ``decision_rule_``.

        The top-k rule takes the labels of :meth:`predict_top_k`, ranked by
        the scores that break ties of saturated probabilities; the threshold
        rules compare :meth:`predict_proba` with ``threshold_`` or
        ``label_thresholds_`` (:meth:`xplant.metrics.DecisionRule.apply`).

        Parameters
        ----------
        X : list of str or token corpus of length n_samples
            As in :meth:`predict_proba`.

        Returns
        -------
        Y_pred : csr_matrix of int64, ndarray of shape (n_samples, n_labels), or ndarray of shape (n_samples,)
            In the form of the ``Y`` given to ``fit`` (``prediction_form_``,
            :func:`xplant._labels.prediction_form`): CSR for a sparse ``Y``
            or label lists, a dense array of ``Y``'s dtype for a dense
            ``Y``, ``y``'s values for a 1-D ``y``.
        """
        check_is_fitted(self, "module_")
        rule = self.decision_rule_
        if rule.rule == "top_k":
            P = rule.apply(None, y_top_k=self.predict_top_k(X, rule.k)[0], n_labels=self.n_labels_)
        else:
            P = rule.apply(self._proba(X))
        return as_prediction_form(P, getattr(self, "prediction_form_", None))
