"""PlantClassifier with a shortlist: its Stage 2 on candidates and its fused scores.

Two collaborators of :class:`~xplant.neural.PlantClassifier` that call
:mod:`xplant.fusion` (the shortlist functions and the one fusion formula):

- :class:`ShortlistTraining`, the shortlist's share of ``fit``: fitting the
  shortlist (or reading it from a checkpoint), each training document's
  candidates, the dev view (each dev document's candidates, raw scores and
  tail order), PLANT's dev scores on its candidates each epoch (PLANT alone
  for early stopping) and the choice of α and the calibration on dev;
- :class:`FusedScorer`, a fitted model's scores of new documents: the
  fitted :class:`~xplant.neural.parts._shortlist_fusion.ShortlistFusion`
  and the network (:class:`~xplant.neural.classifier._network.NetworkScorer`)
  on each document's candidates.
"""

from pathlib import Path

import numpy as np

from ...fusion import (FUSION_GRID, SCORE_FLOOR, Source, calibrate, check_fusion,
                       cross_fit_ranking, every_label_scores, final_step, fit_calibration, fuse,
                       is_frozen, rank_labels, sigmoid, tail_factor, tail_order,
                       top_k_from_candidates, training_candidates)
from ..parts._logit_adjustment import adjust_logits
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


class FusedScorer:
    """A shortlisted PlantClassifier's scores of new documents.

    Parameters
    ----------
    fusion : ShortlistFusion
        The fitted part (``parts_["shortlist_fusion"]``): the shortlist, C,
        the calibration and α.
    network : NetworkScorer
        The trained network with its logit adjustment.
    label_frequency : ndarray of int64 of shape (n_labels,)
        Training documents of each label (the order of the labels below
        the candidates, :func:`xplant.fusion.tail_order`).
    """

    def __init__(self, fusion, network, label_frequency):
        self.fusion = fusion
        self.network = network
        self.label_frequency = label_frequency

    def candidates(self, docs, texts, *, k_tail=False, top=None, tau=None):
        """(candidates, their raw shortlist scores, network logits at ``tau``, extra ranking)."""
        cand, s, extra = self.fusion.rank(texts, self.network.n_labels, full_tail=k_tail,
                                          top=top, raw=True)
        return cand, s, self.network.candidate_logits(docs, cand, tau=tau), extra

    def dense(self, docs, texts):
        """(n, L) fused scores; non-candidates strictly below each row's candidates."""
        cand, s, z, extra = self.candidates(docs, texts, k_tail=True)
        factor = tail_factor(tail_order(cand, extra, self.label_frequency))
        return self.fusion.apply(s, z, cand, factor, self.network.n_labels)

    def top_k(self, docs, texts, k):
        """The k best labels by the fused score and their scores ((n, k) each)."""
        # the shortlist ranks k labels, not L: its first k are all a top-k reads
        cand, s, z, extra = self.candidates(docs, texts, k_tail=k > self.fusion.n_candidates,
                                            top=k)
        fused = self.fusion.apply(s, z, cand)
        return top_k_from_candidates(cand, fused, extra, self.label_frequency, k)

    def sources(self, docs, texts, tau=None):
        """The dict of :meth:`PlantClassifier.fusion_sources` (``tau`` None: the fitted τ)."""
        cand, s, z, extra = self.candidates(docs, texts, k_tail=True, tau=tau)
        return {"candidates": cand, "shortlist": s, "calibration": self.fusion.calibration,
                "network": z, "tail_rank": tail_order(cand, extra, self.label_frequency),
                "fusion_weight": self.fusion.weight}


class ShortlistTraining:
    """The shortlist's share of a PlantClassifier's fit.

    Made by :meth:`fit`; the classifier keeps it while it trains (its dev
    scores each epoch read it) and drops it with the dev split.

    Parameters
    ----------
    fusion : ShortlistFusion
        The fitted shortlist, C and (once chosen) α and the calibration.
    n_labels : int
        The labels.
    dev_view : tuple or None, default=None
        Each dev document's candidates (n_dev, C), their raw shortlist
        scores (n_dev, C) and the tail order of the other labels
        (:func:`xplant.fusion.tail_order`); None without labelled dev data.
    calibrations : list of tuple of float, default=[(1.0, 0.0)]
        The calibrations (a, b) that compete on dev with α: the plain
        sigmoid, and the logistic scaling fitted on the dev candidates.
    """

    def __init__(self, fusion, n_labels, dev_view=None, calibrations=((1.0, 0.0),)):
        self.fusion = fusion
        self.n_labels = n_labels
        self.dev_view = dev_view
        self.calibrations = list(calibrations)

    @property
    def uses_candidates(self):
        """Whether Stage 2 scores each document's C candidates rather than every label."""
        return self.fusion.n_candidates < self.n_labels

    @classmethod
    def fit(cls, clf, texts, tr, dev_texts, Y, Yd, n_candidates, resume=False):
        """Fit the shortlist on the training rows; precompute dev candidates and calibration.

        Parameters
        ----------
        clf : PlantClassifier
            The classifier being fitted: its settings (``shortlist``,
            ``shortlist_cv``, ``checkpoint_dir``, ``n_jobs``,
            ``random_state``) and fitted label space are read, nothing is set.
        texts : list of str
            What the shortlist reads of every row of X.
        tr : ndarray of int
            The training rows.
        dev_texts : list of str or None
            The dev documents' texts.
        Y, Yd : csr_matrix
            The targets of X and of dev.
        n_candidates : int
            C.
        resume : bool, default=False
            With ``checkpoint_dir``, read the fitted shortlist and the
            training ranking saved under ``shortlist/`` there instead of
            fitting again.

        Returns
        -------
        stage : ShortlistTraining
        candidates : list of ndarray of int64 or None
            Each training document's candidates (gold first, then the
            shortlist's hard negatives), or None when Stage 2 scores every label.

        Raises
        ------
        ValueError
            On resume, when the checkpoint's shortlist is of another kind or
            was made for another C than this fit's.
        TypeError
            With ``checkpoint_dir``, when the shortlist cannot be saved.
        """
        train_texts = [texts[i] for i in tr]
        n_labels = clf.n_labels_
        saved = None if clf.checkpoint_dir is None else Path(clf.checkpoint_dir) / "shortlist"
        resumed = resume and saved is not None and (saved / "fusion.json").is_file()
        if resumed:
            part = ShortlistFusion.load(saved, n_labels)   # a resumed fit never refits it
            from ...linear import OneVsRestLinear       # what shortlist="linear" fits
            given = clf.shortlist
            given = (OneVsRestLinear if isinstance(given, str) else
                     type(final_step(given.estimator if is_frozen(given) else given))).__name__
            kept = type(final_step(part.shortlist)).__name__
            if kept != given:
                raise ValueError(f"the checkpoint's shortlist at {saved} is a {kept}, this fit's "
                                 f"is a {given}; give the interrupted fit's parameters, or "
                                 "resume=False (a fresh fit replaces the checkpoint)")
            if part.n_candidates != n_candidates:
                raise ValueError(f"the checkpoint's shortlist at {saved} was made for "
                                 f"n_candidates={part.n_candidates}, this fit has "
                                 f"{n_candidates}; give the interrupted fit's parameters, or "
                                 "resume=False (a fresh fit replaces the checkpoint)")
        else:
            part = ShortlistFusion.fit(clf.shortlist, train_texts, Y[tr], dev_texts, Yd,
                                       n_candidates, n_jobs=clf.n_jobs,
                                       random_state=clf.random_state)
        part.calibration = (1.0, 0.0)
        stage = cls(part, n_labels)
        if dev_texts is not None and Yd.nnz:
            cand, s, extra = part.rank(dev_texts, n_labels, full_tail=True, raw=True)
            is_gold = np.stack([np.isin(c, Yd.indices[Yd.indptr[i]:Yd.indptr[i + 1]])
                                for i, c in enumerate(cand)])
            # calibrate where rankings are decided: each document's top
            # candidates (a linear model scores labels it never saw at -1000)
            top = min(cand.shape[1], CALIBRATION_TOP)
            fitted = fit_calibration(s[:, :top].ravel(), is_gold[:, :top].ravel())
            # the plain sigmoid and the fitted scaling compete on dev with α
            stage.calibrations = [(1.0, 0.0)] + ([fitted] if fitted != (1.0, 0.0) else [])
            stage.dev_view = (cand, s, tail_order(cand, extra, clf.label_frequency_))
        ranking = None
        if stage.uses_candidates:
            pos = [Y.indices[Y.indptr[i]:Y.indptr[i + 1]].astype(np.int64) for i in tr]
            k = int(min(n_labels, part.n_candidates + max(map(len, pos), default=0)))
            ranked = None if saved is None else saved / "train_ranking.safetensors"
            if resume and ranked is not None and ranked.is_file():
                from ...persistence._codec import read_arrays
                ranking = read_arrays(ranked)["ranking"]
            elif clf.shortlist_cv:
                ranking, _ = cross_fit_ranking(part.shortlist, train_texts, Y[tr], k,
                                               cv=int(clf.shortlist_cv),
                                               random_state=clf.random_state)
            else:
                ranking, _ = rank_labels(part.shortlist, train_texts, k)
        if saved is not None and not resumed:
            try:                                      # a fresh fit replaces an old one
                part.save(saved, overwrite=True)
            except TypeError as exc:
                raise TypeError(f"checkpoint_dir keeps the fitted shortlist, and {exc}; pass "
                                "checkpoint_dir=None to fit without checkpoints") from exc
            if ranking is not None:
                from ...persistence._codec import write_arrays
                write_arrays(saved / "train_ranking.safetensors", {"ranking": ranking})
        cands = None if ranking is None else training_candidates(ranking, pos, part.n_candidates)
        return stage, cands

    def dev_scores(self, network, docs, loss):
        """PLANT's dev scores on its test-time candidates, its dev loss and the tail.

        The shortlisted case of :meth:`PlantClassifier._dev_scores` (which
        documents what each epoch's dev pass returns).

        Parameters
        ----------
        network : NetworkScorer
            The network as it trains (τ = 0).
        docs : list of ndarray of int
            The dev documents' token ids.
        loss : callable
            ``loss(logits, candidates=None) -> float``, the Stage 2 loss on dev.

        Returns
        -------
        tuple (scores, loss, tail)
        """
        cand, s, rank = self.dev_view
        if not self.uses_candidates:
            logits = network.logits(docs)
            value = loss(logits)
            if cand.shape[1] == self.n_labels:      # every label a candidate: no tail
                return every_label_scores(sigmoid(logits), cand), value, {}
            z = np.take_along_axis(logits, cand, 1)
        else:
            z = network.candidate_logits(docs, cand)
            value = loss(z, cand)
        scores = fuse([Source(sigmoid(z), 1.0, None, cand)], min_score=SCORE_FLOOR)
        return scores, value, {"candidates": cand, "rank": rank}

    def best_fusion(self, p_net, setting, scoring, dev_Y):
        """The (α, calibration) best by the dev ``scoring`` metric, as a :class:`DevChoice`.

        α runs over :data:`FUSION_GRID` (or is the fixed ``setting``), the
        calibration of the shortlist's raw dev scores over ``calibrations``:
        the plain sigmoid and the logistic scaling fitted on dev candidates.
        A ranking choice of :func:`~xplant.model_selection.choose_on_dev`:
        ties keep the earlier (the plain sigmoid, then the smaller α). Each
        pair is scored from the (n_dev, C) candidates and the tail order
        (:func:`~xplant.fusion.map_from_candidates`; a metric at k from
        :func:`~xplant.fusion.ranking_from_candidates`), equal to the
        metric of the dense scores to the last digit, not from an
        (n_dev, L) matrix per pair.

        Parameters
        ----------
        p_net : ndarray of shape (n_dev, C)
            The network's probabilities at the dev candidates.
        setting : "dev", float or tuple
            The ``fusion`` parameter.
        scoring : str
            The dev metric.
        dev_Y : csr_matrix of shape (n_dev, n_labels)
            The dev targets.
        """
        from ...model_selection import choose_on_dev
        from ..training._callbacks import score_by_name
        cand, s, rank = self.dev_view
        fixed = check_fusion(setting)
        grid = FUSION_GRID if fixed == "dev" else (fixed,) if not isinstance(fixed, tuple) \
            else (fixed[0],)
        cals = self.calibrations if not isinstance(fixed, tuple) else [fixed[1]]
        calibrated = {(float(a), float(b)): calibrate(s, (a, b)) for a, b in cals}
        pairs = [(float(alpha), ab) for ab in calibrated for alpha in grid]

        def score(pair):                    # exact from the candidates: no (n_dev, L) array
            alpha, ab = pair
            fused = fuse_pair((calibrated[ab], None), (p_net, None), alpha, cand)
            return score_by_name(scoring, dev_Y, fused, candidates=cand, rank=rank)

        return choose_on_dev("fusion", pairs, score, family="ranking", criterion=scoring,
                             fallback=None)

    def choose(self, setting, scoring, network, dev_docs, dev_Y, log_prior):
        """Set α and the calibration of the part: on dev at τ = 0, given, or the fallback.

        Parameters
        ----------
        setting : "dev", float or tuple
            The ``fusion`` parameter.
        scoring : str
            The dev metric.
        network : NetworkScorer
            The trained network (its best epoch restored).
        dev_docs : list of ndarray of int or None
            The dev documents' token ids; None without labelled dev data.
        dev_Y : csr_matrix or None
            Their targets.
        log_prior : ndarray of float64 of shape (n_labels,)
            log p of each label, of the logit adjustment.

        Returns
        -------
        choice : DevChoice
            Of (α, (a, b)) (:meth:`ShortlistFusion.choose`).
        scores_at : callable or None
            ``scores_at(tau)``: the (n_dev, L) fused dev scores with the
            network's logits adjusted by τ, at the chosen α and calibration
            (what the logit adjustment and the decision rule are chosen on);
            None without dev data.
        """
        if dev_docs is None:
            return self.fusion.choose(setting, scoring, None), None
        cand, s, rank = self.dev_view
        z = network.candidate_logits(dev_docs, cand, tau=0.0)
        choice = self.fusion.choose(
            setting, scoring, lambda: self.best_fusion(sigmoid(z), setting, scoring, dev_Y))
        p_short, lp = calibrate(s, self.fusion.calibration), log_prior[cand]
        alpha, factor = self.fusion.weight, tail_factor(rank)

        def scores_at(t):
            net = (adjust_logits(z, lp, t), (1.0, 0.0))
            return fuse_pair((p_short, None), net, alpha, cand, factor, self.n_labels)
        return choice, scores_at
