"""PlantClassifier with a shortlist: its Stage 2 on candidates and its fused scores.

The mixin of :class:`~xplant.neural.PlantClassifier` that calls
:mod:`xplant.fusion` (the shortlist functions and the one fusion formula).
Kept apart from ``_classifier.py`` so that the Stage 2 estimator stays
readable: fitting the shortlist, scoring dev each epoch (PLANT alone for
early stopping, the best fusion recorded), choosing α, the calibration and
the logit adjustment on dev, and scoring new documents on their candidates.
"""

from pathlib import Path

import numpy as np

from ...fusion import (FUSION_GRID, SCORE_FLOOR, Source, calibrate, check_fusion,
                       cross_fit_ranking, every_label_scores, final_step, fit_calibration, fuse,
                       is_frozen, rank_labels, sigmoid, tail_factor, tail_order,
                       top_k_from_candidates, training_candidates)
from ..parts._shortlist_fusion import ShortlistFusion, fuse_pair


#: Each dev document's top shortlist candidates that fit the calibration.
CALIBRATION_TOP = 100


def shortlist_texts(X, docs, relevance):
    """The texts a shortlist reads: raw texts, a token corpus's texts, or its tokens.

    A token corpus made by ``MIGRelevance.transform`` keeps the raw texts it
    was made from; one without them gives each document as its tokens
    joined by spaces (what PLANT itself reads).
    """
    from .._inputs import is_token_corpus
    if not is_token_corpus(X):
        return list(X)
    texts = getattr(X, "texts", None)
    if texts is not None:
        return list(texts)
    inv = {i: t for t, i in relevance.vocabulary_.items()}
    return [" ".join(inv.get(int(t), "") for t in d) for d in docs]


class ShortlistMixin:
    """Shortlist, candidate Stage 2 and fusion for :class:`PlantClassifier` (:mod:`xplant.fusion`)."""

    def _uses_candidates(self):
        return getattr(self, "shortlist_", None) is not None and self.n_candidates_ < self.n_labels_

    def _fit_shortlist(self, X, docs, tr, dv, validation_data, dev_docs, Y, Yd, n_candidates,
                       resume=False):
        """Fit the shortlist on the training rows; precompute dev candidates and calibration.

        The fitted shortlist, with C = ``n_candidates``, becomes the part
        ``parts_["shortlist_fusion"]`` (:class:`ShortlistFusion`); α and the
        calibration are chosen on it after training.

        Returns each training document's candidates (gold first, then the
        shortlist's hard negatives), or None when Stage 2 scores every label.
        With ``checkpoint_dir``, the fitted shortlist and the training
        ranking are saved under ``shortlist/`` there, and a resumed fit
        loads them instead of fitting again.
        """
        self.dev_view_ = self.parts_["shortlist_fusion"] = None
        if self.shortlist is None:
            return None
        texts = shortlist_texts(X, docs, self.relevance_)
        train_texts = [texts[i] for i in tr]
        if dv is not None:                      # validation_fraction rows of X
            dev_texts = [texts[i] for i in dv]
        elif validation_data is not None:
            dev_texts = shortlist_texts(validation_data[0], dev_docs, self.relevance_)
        else:
            dev_texts = None
        saved = None if self.checkpoint_dir is None else Path(self.checkpoint_dir) / "shortlist"
        if resume and saved is not None and (saved / "fusion.json").is_file():
            C = n_candidates
            part = ShortlistFusion.load(saved, self.n_labels_)   # a resumed fit never refits it
            self.parts_["shortlist_fusion"] = part
            from ...linear import OneVsRestLinear       # what shortlist="linear" fits
            given = self.shortlist
            given = (OneVsRestLinear if isinstance(given, str) else
                     type(final_step(given.estimator if is_frozen(given) else given))).__name__
            kept = type(final_step(self.shortlist_)).__name__
            if kept != given:
                raise ValueError(f"the checkpoint's shortlist at {saved} is a {kept}, this fit's "
                                 f"is a {given}; give the interrupted fit's parameters, or "
                                 "resume=False (a fresh fit replaces the checkpoint)")
            if self.n_candidates_ != C:
                raise ValueError(f"the checkpoint's shortlist at {saved} was made for "
                                 f"n_candidates={self.n_candidates_}, this fit has {C}; give "
                                 "the interrupted fit's parameters, or resume=False (a fresh "
                                 "fit replaces the checkpoint)")
        else:
            part = ShortlistFusion.fit(self.shortlist, train_texts, Y[tr], dev_texts, Yd,
                                       n_candidates, n_jobs=self.n_jobs,
                                       random_state=self.random_state)
            self.parts_["shortlist_fusion"] = part
            if "choice" in part.info:                # "linear": its C, chosen on dev
                self.dev_choices_["shortlist_C"] = part.info["choice"]
        part.calibration = (1.0, 0.0)
        if dev_texts is not None and Yd.nnz:
            cand, s, extra = self._shortlist_view(dev_texts, full_tail=True, raw=True)
            is_gold = np.stack([np.isin(c, Yd.indices[Yd.indptr[i]:Yd.indptr[i + 1]])
                                for i, c in enumerate(cand)])
            # calibrate where rankings are decided: each document's top
            # candidates (a linear model scores labels it never saw at -1000)
            top = min(cand.shape[1], CALIBRATION_TOP)
            fitted = fit_calibration(s[:, :top].ravel(), is_gold[:, :top].ravel())
            # the plain sigmoid and the fitted scaling compete on dev with α
            self.calibrations_ = [(1.0, 0.0)] + ([fitted] if fitted != (1.0, 0.0) else [])
            self.dev_view_ = (cand, s, tail_order(cand, extra, self.label_frequency_))
        ranking = None
        if self._uses_candidates():
            pos = [Y.indices[Y.indptr[i]:Y.indptr[i + 1]].astype(np.int64) for i in tr]
            k = int(min(self.n_labels_, self.n_candidates_ + max(map(len, pos), default=0)))
            ranked = None if saved is None else saved / "train_ranking.safetensors"
            if resume and ranked is not None and ranked.is_file():
                from ...persistence._codec import read_arrays
                ranking = read_arrays(ranked)["ranking"]
            elif self.shortlist_cv:
                ranking, _ = cross_fit_ranking(self.shortlist_, train_texts, Y[tr], k,
                                               cv=int(self.shortlist_cv),
                                               random_state=self.random_state)
            else:
                ranking, _ = rank_labels(self.shortlist_, train_texts, k)
        if saved is not None and not (resume and (saved / "fusion.json").is_file()):
            try:                                      # a fresh fit replaces an old one
                part.save(saved, overwrite=True)
            except TypeError as exc:
                raise TypeError(f"checkpoint_dir keeps the fitted shortlist, and {exc}; pass "
                                "checkpoint_dir=None to fit without checkpoints") from exc
            if ranking is not None:
                from ...persistence._codec import write_arrays
                write_arrays(saved / "train_ranking.safetensors", {"ranking": ranking})
        return None if ranking is None else training_candidates(ranking, pos, self.n_candidates_)

    def _shortlist_view(self, texts, *, full_tail=False, raw=False, top=None):
        """(candidates (n, C), shortlist scores (n, C), the shortlist's ranking beyond C).

        Scores are calibrated probabilities, or the raw scores with ``raw``.
        With ``full_tail`` the ranking beyond C covers every label when the
        shortlist scores them all (else 2C), for ordering non-candidates;
        ``top`` cuts that full ranking at the ``top`` labels a top-k needs
        (its first ``top`` labels are the full ranking's).
        """
        C, L = self.n_candidates_, self.n_labels_
        final = final_step(self.shortlist_)
        dense = hasattr(final, "decision_function") or hasattr(final, "predict_proba")
        k = (L if top is None else min(L, max(C, top))) if (full_tail and dense) \
            else min(L, 2 * C if full_tail else C)
        idx, s = rank_labels(self.shortlist_, texts, k)
        s = s[:, :C]
        if not raw:
            s = calibrate(s, self.shortlist_calibration_)
        return idx[:, :C], s, idx[:, C:]

    def _net_candidate_logits(self, docs, candidates, tau=None):
        """PLANT's logits (n, C) at each document's candidates, adjusted by ``tau``.

        ``tau`` defaults to the fitted ``logit_adjustment_``.
        """
        if self.n_candidates_ >= self.n_labels_:
            return np.take_along_axis(self._logits(docs, tau=tau), candidates, 1)
        out = np.zeros(candidates.shape, dtype=np.float32)
        for idx, z in self._logits_batches(docs, candidates=candidates, tau=tau):
            out[idx] = z.numpy()
        return out

    def _fused(self, short, net, alpha, cand, factor=None):
        """The fused score α · g(s) + (1 − α) · σ(z) by :func:`xplant.fusion.fuse`.

        ``short`` and ``net`` are the shortlist's and the network's
        :class:`~xplant.fusion.Source` as ``(scores, calibration)`` pairs of
        the candidates ``cand`` (n, C). Returns the (n, L) scores, the tail
        below each row's candidates at ``factor`` (:func:`~xplant.fusion.tail_factor`),
        or without ``factor`` the candidates' (n, C) scores. Both are floored
        at :data:`~xplant.fusion.SCORE_FLOOR`.
        """
        return fuse_pair(short, net, alpha, cand, factor, self.n_labels_)

    def _fused_candidates(self, docs, texts, *, k_tail=False, top=None, tau=None):
        """(candidates, their raw shortlist scores, network logits at ``tau``, extra ranking)."""
        cand, s, extra = self._shortlist_view(texts, full_tail=k_tail, top=top, raw=True)
        return cand, s, self._net_candidate_logits(docs, cand, tau=tau), extra

    def _dev_scores(self):
        """Dev scores for early stopping and the dev loss, from one pass over dev.

        Returns ``(scores, loss, tail)``: the scores of PLANT alone on its
        test-time candidates, the Stage 2 loss on dev (the history's
        ``valid_loss``; skorch's own validation pass, a second forward pass
        over dev each epoch, is not run), and what stands for the rest of
        the labels, as keyword arguments of
        :func:`~xplant.neural.training._callbacks.score_by_name` and
        :func:`~xplant.neural.training._callbacks.degenerate_check`. With fewer
        candidates than labels (``n_candidates`` < L) the scores are the
        (n_dev, C) candidates' σ(z), floored as :func:`~xplant.fusion.dense_scores` floors them,
        and ``tail`` is ``{"candidates", "rank"}`` (the candidates and
        their fixed tail order): every metric and the collapse check read
        them to the last digit as they would the (n_dev, L) scores of
        ``dense_scores``, which are never built (exact for MAP and for a
        metric at any k; see ``score_by_name``). Otherwise ``scores`` are
        (n_dev, L) and ``tail`` is empty: σ of the network's logits, the
        model's own output (with every label a candidate, the dense scores
        of those candidates, built in that one array without a permuted
        copy: :func:`~xplant.fusion.every_label_scores`).

        Without a shortlist, or with every label a candidate, the loss is
        the training loss over all labels (positives and hard negatives);
        with ``n_candidates`` < L it is over each document's test-time
        candidates.

        With a shortlist, no α is swept here (nothing per epoch is chosen
        with it): the α chosen after the fit and its fused score are
        recorded on the history's last row (``valid_fusion_weight``,
        ``valid_fused_<scoring>``). Early stopping follows PLANT's own score
        (α = 0): the fused score is at least the shortlist's alone, so while
        the network is still weak it stays flat at that level and would stop
        the fit before the network has learnt anything (docs/benchmarks/shortlist.md,
        section "What the fit chooses, measured").
        """
        shortlisted = getattr(self, "shortlist_", None) is not None and self.dev_view_ is not None
        if not shortlisted:
            logits = self._logits(self.dev_docs_)
            return sigmoid(logits), self._dev_loss(logits), {}
        cand, s, rank = self.dev_view_
        if self.n_candidates_ >= self.n_labels_:
            logits = self._logits(self.dev_docs_)
            loss = self._dev_loss(logits)
            if cand.shape[1] == self.n_labels_:      # every label a candidate: no tail
                return every_label_scores(sigmoid(logits), cand), loss, {}
            z = np.take_along_axis(logits, cand, 1)
        else:
            z = self._net_candidate_logits(self.dev_docs_, cand)
            loss = self._dev_loss(z, cand)
        scores = fuse([Source(sigmoid(z), 1.0, None, cand)], min_score=SCORE_FLOOR)
        return scores, loss, {"candidates": cand, "rank": rank}

    def _dev_loss(self, logits, candidates=None):
        """Mean Stage 2 loss over the dev documents (float).

        ``logits`` (n_dev, L) are scored as in training (positives and hard
        negatives); with ``candidates`` (n_dev, C) they are the logits of
        those labels, scored against the dev targets there (the criterion's
        shortlist form, as in training).
        """
        import torch
        from ..training._data import pad_batch
        positives = self.dev_dataset_.positives
        scored = self._scored_mask(device="cpu")
        total, n = 0.0, logits.shape[0]
        for lo in range(0, n, 256):                # chunks: the loss is a mean over documents
            z = torch.from_numpy(np.ascontiguousarray(logits[lo:lo + 256], dtype=np.float32))
            rows = range(lo, min(n, lo + 256))
            if candidates is None:
                target, _ = pad_batch([positives[i] for i in rows], pad_value=-1, min_len=1)
                target = target.long()
            else:                                  # targets at the candidates, never (n, L)
                y = np.stack([np.isin(candidates[i], positives[i]) for i in rows])
                target = {"target": torch.from_numpy(y.astype(np.float32)),
                          "keep": torch.ones(z.shape, dtype=torch.bool)}
            keep = scored if scored is None or candidates is None else \
                scored[torch.from_numpy(np.asarray(candidates[lo:lo + 256], dtype=np.int64))]
            with torch.no_grad():
                total += float(self.criterion_(z, target, scored=keep)) * z.shape[0]
        return total / max(1, n)

    def _best_fusion(self, s, p_net, cand, rank):
        """The (α, calibration) best by the dev ``scoring`` metric, as a :class:`DevChoice`.

        α runs over :data:`FUSION_GRID` (or is the fixed ``fusion``), the
        calibration of the shortlist's raw scores ``s`` over
        ``calibrations_``: the plain sigmoid and the logistic scaling fitted
        on dev candidates. A ranking choice of
        :func:`~xplant.model_selection.choose_on_dev`: ties keep the earlier
        (the plain sigmoid, then the smaller α). Each
        pair is scored from the (n_dev, C) candidates and the tail order
        (:func:`~xplant.fusion.map_from_candidates`; a metric at k from
        :func:`~xplant.fusion.ranking_from_candidates`), equal to the
        metric of the dense scores to the last digit, not from an
        (n_dev, L) matrix per pair.
        """
        from ...model_selection import choose_on_dev
        from ..training._callbacks import score_by_name
        fixed = check_fusion(self.fusion)
        grid = FUSION_GRID if fixed == "dev" else (fixed,) if not isinstance(fixed, tuple) \
            else (fixed[0],)
        cals = self.calibrations_ if not isinstance(fixed, tuple) else [fixed[1]]
        calibrated = {(float(a), float(b)): calibrate(s, (a, b)) for a, b in cals}
        pairs = [(float(alpha), ab) for ab in calibrated for alpha in grid]

        def score(pair):                    # exact from the candidates: no (n_dev, L) array
            alpha, ab = pair
            fused = self._fused((calibrated[ab], None), (p_net, None), alpha, cand)
            return score_by_name(self.scoring, self.dev_Y_, fused, candidates=cand, rank=rank)

        return choose_on_dev("fusion", pairs, score, family="ranking", criterion=self.scoring,
                             fallback=None)

    def _log_prior(self):
        """log p_l of each label (float64, (n_labels,)): the logit adjustment's prior."""
        from ..parts._logit_adjustment import log_prior
        return log_prior(self.label_frequency_, self.n_train_documents_)

    def _choose_scoring(self):
        """α and the calibration, then τ, once more on dev after the best epoch is restored.

        With a shortlist, α and the calibration are chosen at τ = 0 by the
        dev ``scoring`` metric (recorded on the history's last row as
        ``valid_fusion_weight`` and ``valid_fused_<scoring>``); then the logit
        adjustment τ by :func:`choose_logit_adjustment`, from one pass of
        the network over dev. Each is a :func:`~xplant.model_selection.choose_on_dev`
        choice recorded in ``dev_choices_``; without labelled dev data each
        takes its fallback with a ``NoDevDataWarning`` (α: the fixed
        ``fusion``, 0.5 for ``"dev"``, with the plain sigmoid; τ: 0). Returns
        the dev scores at the choice (for the decision rule), or None
        without labelled dev data.
        """
        from ..parts._logit_adjustment import (LogitAdjustment, adjust_logits,
                                               check_logit_adjustment)
        from .._settings import decision_settings
        decision = decision_settings(self)
        tau = check_logit_adjustment(decision["logit_adjustment"])
        log_p = self._log_prior()
        has_dev = self.dev_docs_ is not None and self.dev_Y_.nnz > 0
        scores_at = scores = None
        fusion = self.parts_["shortlist_fusion"]
        if fusion is not None:
            best = None
            if has_dev:
                cand, s, rank = self.dev_view_
                z = self._net_candidate_logits(self.dev_docs_, cand, tau=0.0)

                def best():
                    return self._best_fusion(s, sigmoid(z), cand, rank)
            choice = fusion.choose(self.fusion, self.scoring, best)
            if has_dev and not isinstance(check_fusion(self.fusion), tuple) and len(self.history):
                self.history.record("valid_fusion_weight", choice.value[0])
                self.history.record("valid_fused_" + self.scoring,
                                    max(v for _, v in choice.scores))
            if has_dev:
                p_short, lp = calibrate(s, fusion.calibration), log_p[cand]
                alpha, factor = fusion.weight, tail_factor(rank)

                def scores_at(t):
                    net = (adjust_logits(z, lp, t), (1.0, 0.0))
                    return self._fused((p_short, None), net, alpha, cand, factor)
            self.dev_choices_["fusion"] = choice.to_dict()
        elif has_dev:
            z = self._logits(self.dev_docs_, tau=0.0)

            def scores_at(t):
                return sigmoid(adjust_logits(z, log_p, t))
        part, scores = LogitAdjustment.choose(tau, log_p, self.dev_Y_, scores_at,
                                              max_k=decision["max_k"])
        self.parts_["logit_adjustment"] = part
        self.dev_choices_["logit_adjustment"] = part.choice.to_dict()
        tau = part.tau
        if scores_at is None:
            return None
        return scores if scores is not None else scores_at(tau)

    def _fused_dense(self, docs, texts):
        """(n, L) fused scores; non-candidates strictly below each row's candidates."""
        cand, s, z, extra = self._fused_candidates(docs, texts, k_tail=True)
        factor = tail_factor(tail_order(cand, extra, self.label_frequency_))
        return self.parts_["shortlist_fusion"].apply(s, z, cand, factor, self.n_labels_)

    def fusion_scores(self, X, alphas, *, logit_adjustment=None):
        """(n, L) scores of ``X`` at several fusion weights, from one pass of each model.

        The shortlist and the network score X once; each α re-mixes them
        (α = 0: PLANT alone on its candidates, α = 1: the shortlist alone),
        so rows of a results table can report them side by side without
        refitting.

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.
        alphas : sequence of float in [0, 1]
            The fusion weights to score.
        logit_adjustment : float >= 0 or None, default=None
            τ of the network's logit adjustment; None: the fitted
            ``logit_adjustment_`` (0 gives the network as trained).

        Returns
        -------
        dict of float to ndarray of float64 of shape (n_samples, n_labels)

        Raises
        ------
        ValueError
            When the classifier has no shortlist, an α is not a number in
            [0, 1], or ``logit_adjustment`` is not None or a number >= 0.
        """
        if getattr(self, "shortlist_", None) is None:
            raise ValueError("fusion_scores needs a PlantClassifier fitted with a shortlist")
        from ..._params import check_param
        for a in alphas:
            check_param("each of alphas", a, low=0.0, high=1.0)
        src = self.fusion_sources(X, logit_adjustment=logit_adjustment)
        cand, factor = src["candidates"], tail_factor(src["tail_rank"])
        p_short = calibrate(src["shortlist"], src["calibration"])
        p_net = sigmoid(src["network"])
        return {float(a): self._fused((p_short, None), (p_net, None), float(a), cand, factor)
                for a in alphas}

    def fusion_sources(self, X, *, logit_adjustment=None):
        """The two sources of the fused score of ``X``, and the tail order, from one pass each.

        What :meth:`fusion_scores` and ``predict_proba`` mix with
        :func:`xplant.fusion.fuse`, for other fusions of the same fit (per
        label weights, other calibrations): the fused score of a candidate
        is ``α · σ(a · shortlist + b) + (1 − α) · σ(network)``, and every
        other label falls below the candidates by its ``tail_rank``
        (:func:`xplant.fusion.tail_factor`).

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.
        logit_adjustment : float >= 0 or None, default=None
            τ of the network's logits; None: the fitted ``logit_adjustment_``.

        Returns
        -------
        dict
            ``"candidates"`` (n, C) int64, each row's candidates in the
            shortlist's order; ``"shortlist"`` (n, C) float64, their raw
            shortlist scores; ``"calibration"`` (a, b), the fitted
            ``shortlist_calibration_``; ``"network"`` (n, C) float32, the
            network's logits at the candidates, adjusted by τ;
            ``"tail_rank"`` (n, L) int32, :func:`xplant.fusion.tail_order`
            of the labels outside the candidates; ``"fusion_weight"``, the
            fitted α.

        Raises
        ------
        ValueError
            When the classifier has no shortlist, or ``logit_adjustment``
            is not None or a number >= 0.
        """
        if getattr(self, "shortlist_", None) is None:
            raise ValueError("fusion_sources needs a PlantClassifier fitted with a shortlist")
        if logit_adjustment is not None:
            from ..parts._logit_adjustment import check_logit_adjustment
            if isinstance(logit_adjustment, str):
                raise ValueError("logit_adjustment must be a number >= 0 or None here, got "
                                 f"{logit_adjustment!r}")
            logit_adjustment = check_logit_adjustment(logit_adjustment)
        docs = self._docs(X)
        texts = shortlist_texts(X, docs, self.relevance_)
        cand, s, z, extra = self._fused_candidates(docs, texts, k_tail=True, tau=logit_adjustment)
        return {"candidates": cand, "shortlist": s, "calibration": self.shortlist_calibration_,
                "network": z, "tail_rank": tail_order(cand, extra, self.label_frequency_),
                "fusion_weight": self.fusion_weight_}

    def _fused_top_k(self, docs, texts, k):
        # the shortlist ranks k labels, not L: its first k are all a top-k reads
        cand, s, z, extra = self._fused_candidates(docs, texts, k_tail=k > self.n_candidates_,
                                                   top=k)
        fused = self.parts_["shortlist_fusion"].apply(s, z, cand)
        return top_k_from_candidates(cand, fused, extra, self.label_frequency_, k)
