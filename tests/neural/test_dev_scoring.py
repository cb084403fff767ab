"""A shortlisted fit scores dev each epoch from its (n_dev, C) candidates and the tail order:
the dense (n_dev, L) scores are the oracle, to the last digit, and are never built."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.fusion import dense_scores, sigmoid
from xplant.metrics import mean_average_precision
from xplant.neural import PlantClassifier
from xplant.neural.parts._shortlist_fusion import fuse_pair
from xplant.neural.training._callbacks import DevScoring, degenerate_check, score_by_name

#: Metrics checked against the dense scores every epoch: k below C = 4, at it, past it, past L
NAMES = ("map", "precision_at_1", "precision_at_4", "ndcg_at_6", "recall_at_3", "recall_at_20")


@pytest.fixture(scope="module")
def corpus(make_corpus):
    return make_corpus(n_docs=90, n_labels=12, seed=3)


def _dense_oracle(net):
    """The dense path the fit used before: σ(z) at the candidates placed among the L labels."""
    cand, _, rank = net.shortlist_training_.dev_view
    if cand.shape[1] >= net.n_labels_:
        z = np.take_along_axis(net._network().logits(net.dev_docs_), cand, 1)
    else:
        z = net._network().candidate_logits(net.dev_docs_, cand)
    return dense_scores(cand, sigmoid(z), rank)


def _fit_with_oracle(tiny, corpus, monkeypatch, **params):
    """Fit; after each epoch's dev scoring, score the dense oracle and the candidates both."""
    texts, Y = corpus
    seen = []
    scoring = DevScoring.on_epoch_end

    def checked(self, net, **kwargs):
        scoring(self, net, **kwargs)
        dense = _dense_oracle(net)
        scores, _, tail = net._dev_scores()
        row = net.history[-1]
        seen.append({"recorded": (row["valid_" + net.scoring], row["valid_mean_predicted_labels"]),
                     "dense": (score_by_name(net.scoring, net.dev_Y_, dense),
                               degenerate_check(net.dev_Y_, dense)[0]),
                     "names": [(score_by_name(n, net.dev_Y_, scores, **tail),
                                score_by_name(n, net.dev_Y_, dense)) for n in NAMES],
                     # 0.0: every tail label passes too; 0.5: the rule of the check
                     "checks": [(degenerate_check(net.dev_Y_, scores, t, **tail),
                                 degenerate_check(net.dev_Y_, dense, t)) for t in (0.0, 0.5)],
                     "tail": bool(tail)})
    monkeypatch.setattr(DevScoring, "on_epoch_end", checked)
    monkeypatch.setattr(PlantClassifier, "_release_dev_split", lambda self: None)
    clf = PlantClassifier(**tiny, plant=False, shortlist="linear", **params).fit(texts, Y)
    monkeypatch.undo()
    return clf, seen


@pytest.mark.parametrize("scoring", ["map", "precision_at_3"])
def test_dev_scores_from_candidates_equal_the_dense_scores(tiny, corpus, monkeypatch, scoring):
    """n_candidates < L: every epoch's recorded dev score and mean predicted labels, each
    metric at k and the collapse check equal those of the dense scores to the last digit;
    so does the best epoch, and each (α, calibration) score of the choice after the fit."""
    from xplant.fusion import calibrate
    clf, seen = _fit_with_oracle(tiny, corpus, monkeypatch, n_candidates=4, max_epochs=3,
                                 scoring=scoring)
    assert len(seen) == 3 and all(e["tail"] for e in seen)        # the candidates' path ran
    for e in seen:
        assert e["recorded"] == e["dense"]
        for got, want in e["names"]:
            assert got == want
        for got, want in e["checks"]:
            assert got == want
    assert seen[0]["checks"][0][1][0] == 12.0          # at 0.0 the tail counts: all 12 labels
    dense_curve = [e["dense"][0] for e in seen]
    assert clf.best_epoch_ == int(np.argmax(dense_curve)) + 1
    # the choice after the fit: each pair's score is the dense fused scores' metric
    stage = clf.shortlist_training_
    cand, s, rank = stage.dev_view
    p_net = sigmoid(clf._network().candidate_logits(clf.dev_docs_, cand, tau=0.0))
    choice = stage.best_fusion(p_net, clf.fusion, scoring, clf.dev_Y_)
    from xplant.fusion import tail_factor
    factor = tail_factor(rank)
    for (alpha, ab), value in choice.scores:
        dense = fuse_pair((calibrate(s, ab), None), (p_net, None), alpha, cand, factor,
                          clf.n_labels_)
        assert value == score_by_name(scoring, clf.dev_Y_, dense)


def test_every_label_a_candidate_scores_the_logits_in_label_order(tiny, corpus, monkeypatch):
    """n_candidates = L: the dense scores come from σ of the logits in label order (no
    permuted copy), equal to the candidates' dense scores to the last digit."""
    clf, seen = _fit_with_oracle(tiny, corpus, monkeypatch, n_candidates=12, max_epochs=2)
    assert len(seen) == 2 and not any(e["tail"] for e in seen)
    for e in seen:
        assert e["recorded"] == e["dense"]
        assert all(got == want for got, want in e["names"] + e["checks"])


def test_degenerate_check_counts_the_tail_above_the_threshold():
    """By hand: every candidate at 0.99 puts the tail above 0.5 too (0.99 · 4/5, 0.99 · 3/5),
    so all 4 labels count, as in the dense scores."""
    cand = np.array([[2, 0], [1, 3]])
    block = np.array([[0.99, 0.99], [0.9, 0.2]])
    rank = np.array([[-1, 0, -1, 1], [0, -1, 1, -1]])
    Y = sp.csr_matrix(np.array([[0, 1, 0, 0], [0, 0, 0, 1]]))
    dense = dense_scores(cand, block, rank)
    np.testing.assert_allclose(dense[0], [0.99, 0.99 * 0.8, 0.99, 0.99 * 0.6])
    assert degenerate_check(Y, block, candidates=cand, rank=rank) == degenerate_check(Y, dense)
    mean, reason = degenerate_check(Y, block, candidates=cand, rank=rank)
    assert mean == (4 + 1) / 2 and reason.startswith("2.5 of 4 labels")
    assert score_by_name("map", Y, block, candidates=cand, rank=rank) == \
        mean_average_precision(Y, dense) == (1 / 3 + 1 / 2) / 2


def test_shortlisted_dev_scoring_builds_no_dense_array(tiny, monkeypatch):
    """20,000 labels, 200 dev documents, 20 candidates: a dense float64 (n_dev, L) array is
    32 MB, and each epoch's dev scoring (metric, collapse check, dev loss) allocates under
    an eighth of it (tracemalloc's peak; measured about 0.5 MB, and 64 MB when the scoring
    built the dense scores)."""
    from xplant.linear import FrequencyPrior
    n_labels, n_train, n_dev = 20_000, 60, 200
    rng = np.random.default_rng(0)
    texts, rows, cols = [], [], []
    for i in range(n_train + n_dev):             # 50 labels in use, signalled by a word each
        labs = np.unique(rng.integers(0, 50, size=2)) * (n_labels // 50)
        texts.append(" ".join([f"w{j}" for j in rng.integers(0, 100, 12)] +
                              [f"s{lab}" for lab in labs]))
        rows += [i] * len(labs)
        cols += labs.tolist()
    Y = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_train + n_dev, n_labels))
    peaks = []
    scoring = DevScoring.on_epoch_end

    def measured(self, net, **kwargs):
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            scoring(self, net, **kwargs)
        finally:
            peaks.append(tracemalloc.get_traced_memory()[1] - base)
            if started:
                tracemalloc.stop()
    monkeypatch.setattr(DevScoring, "on_epoch_end", measured)
    # α, calibration, τ and the rule given: the fit chooses nothing after training
    clf = PlantClassifier(**tiny, plant=False, max_epochs=2, shortlist=FrequencyPrior(),
                          n_candidates=20, fusion=(0.5, (1.0, 0.0)), decision="top_k",
                          decision__k=2, decision__threshold=0.5)
    clf.fit(texts[:n_train], Y[:n_train], validation_data=(texts[n_train:], Y[n_train:]))
    assert len(peaks) == 2 and clf.n_candidates_ < clf.n_labels_
    dense_bytes = n_dev * n_labels * 8
    assert max(peaks) < dense_bytes / 8, (peaks, dense_bytes)
    assert all(np.isfinite(h["valid_map"]) and h["valid_map"] > 0 for h in clf.history)
