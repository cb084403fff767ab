"""stage1_weight="dev": a later candidate races the earlier one on dev."""

import numpy as np
import pytest

from xplant.neural import AttentionPlanter, PlantClassifier
from xplant.neural.classifier._stage1_weight import CandidateRace, race_misses

TINY = dict(module__embedding_dim=16, module__hidden_dim=16, module__attention_dim=16,
            module__pool_size=16, batch_size=8, verbose=0, n_jobs=1)
# every group trains from the first epoch: no unfreezing warm-up left out of the race
PHASES = [(0, "head", 0.02), (0, "attention", 0.02), (0, "encoder", 0.02),
          (0, "embeddings", 0.02)]


def _clf(**kw):
    return PlantClassifier(**TINY, planter=AttentionPlanter(max_epochs=1, verbose=0), lr=0.02,
                           validation_fraction=0.25, callbacks__unfreeze__phases=PHASES, **kw)


def test_race_misses_counts_epochs_without_a_lead():
    ref = [0.50, 0.60, 0.70]
    assert race_misses([0.50, 0.60, 0.70], ref) == 3                 # level all along
    assert race_misses([0.50, 0.60, 0.704], ref) == 3                # ahead by less than 0.005
    assert race_misses([0.50, 0.60, 0.71], ref) == 0                 # ahead by more
    assert race_misses([0.9, 0.6, 0.6, 0.6], ref) == 0               # its best so far leads
    assert race_misses([0.1, 0.2, 0.71, 0.71, 0.70], ref, start=2) == 0   # its best leads
    assert race_misses([0.1, 0.2, 0.70, 0.70, 0.70], ref, start=2) == 3   # past ref's end: its best
    assert race_misses([0.1, 0.2], ref, start=2) == 0                # still in the warm-up
    assert race_misses([0.4, float("nan"), 0.5], [0.3, 0.3, 0.3], margin=0.0) == 0
    assert race_misses([0.1, 0.2], []) == 0                          # no earlier candidate


@pytest.mark.filterwarnings("ignore::xplant.neural.DegenerateModelWarning")
def test_a_candidate_not_ahead_on_dev_stops_and_the_cheap_one_is_kept(make_corpus):
    """A later candidate that dev does not show ahead stops after ``patience`` epochs; its
    epochs are exactly the fixed-weight fit's first ones, and the first candidate is kept."""
    # a corpus on which the fixed fits are level on dev (0.75, 0.771 against 0.75, 0.75)
    texts, Y = make_corpus(n_docs=48, n_labels=4, doc_len=12, seed=1)
    clf = _clf(stage1_weight="dev", max_epochs=6, patience=2).fit(texts, Y)
    first, second = clf.stage1_weight_candidates_
    fixed = {w: _clf(stage1_weight=w, max_epochs=6, patience=2).fit(texts, Y)
             for w in (0.0, 0.1)}
    curves = {w: [h["valid_map"] for h in f.history] for w, f in fixed.items()}
    # the precondition: the fixed 0.1 fit is never ahead of 0's best so far by the margin
    assert race_misses(curves[0.1][:2], curves[0.0]) == 2
    assert first == {"stage1_weight": 0.0, "dev_map": pytest.approx(max(curves[0.0]), abs=1e-12),
                     "best_epoch": fixed[0.0].best_epoch_, "epochs": len(curves[0.0]),
                     "lr": 0.02, "raced_out": False,
                     # the kept candidate is 0: its history, with its epochs' wall times
                     "seconds": pytest.approx(sum(h["dur"] for h in clf.history))}
    assert second["raced_out"] is True and second["epochs"] == 2 < len(curves[0.1])
    assert second["dev_map"] == pytest.approx(max(curves[0.1][:2]), abs=1e-12)
    assert clf.stage1_weight_ == 0.0 and clf.best_epoch_ == fixed[0.0].best_epoch_
    np.testing.assert_allclose(clf.predict_proba(texts), fixed[0.0].predict_proba(texts),
                               rtol=1e-5, atol=1e-7)


def test_candidate_race_callback_stops_at_patience():
    class Net:                       # the history of a net, as skorch's callbacks read it
        history = [{"valid_map": 0.5}, {"valid_map": 0.55}]

    race = CandidateRace([0.6, 0.6], "valid_map", patience=2).initialize()
    with pytest.raises(KeyboardInterrupt):
        race.on_epoch_end(Net())
    assert race.stopped_
    race = CandidateRace([0.6, 0.6], "valid_map", patience=3).initialize()
    race.on_epoch_end(Net())
    assert not race.stopped_


def test_race_routed_stops_a_candidate_far_behind_after_the_warm_up():
    from xplant.neural.classifier._stage1_weight import ROUT_EPOCHS, ROUT_GAP, race_routed
    assert (ROUT_GAP, ROUT_EPOCHS) == (0.1, 1)
    # the dev curves measured on the flatter synthetic corpus (2,000 documents): weight 0.1
    # 0.20 and 0.23 behind weight 0's same-epoch best after the 2 warm-up epochs
    ref = [0.4476, 0.4344, 0.6659, 0.7275, 0.7523, 0.7765]
    routed = [0.4665, 0.4951, 0.4674, 0.4967]
    assert race_routed(routed, ref, start=2)
    assert race_routed(routed[:3], ref, start=2)              # the first epoch after the warm-up
    assert not race_routed(routed[:2], ref, start=2)          # the warm-up alone
    assert not race_routed(routed[:3], ref, start=3)          # the warm-up is not counted
    # 7,700 documents, seed 0: 0.5607 against weight 0's 0.8091 at the first epoch after it
    assert race_routed([0.4819, 0.5049, 0.5607], [0.4296, 0.4600, 0.8091], start=2)
    # and on the default corpus: 0.1 at most 0.035 behind, then ahead, races on
    ref = [0.4747, 0.4926, 0.7337, 0.7841, 0.8243, 0.8651, 0.8685, 0.8879]
    leader = [0.5248, 0.6097, 0.6987, 0.7663, 0.8103, 0.8497, 0.8614, 0.9001]
    assert not any(race_routed(leader[:e], ref, start=2) for e in range(1, 9))
    # more than the gap: 0.09 behind is no rout
    assert not race_routed([0.5, 0.5, 0.66], [0.5, 0.5, 0.75], start=2)
    assert race_routed([0.5, 0.5, 0.64], [0.5, 0.5, 0.75], start=2)
    # the running best counts: an epoch that falls back after one within the gap is no rout
    assert not race_routed([0.5, 0.5, 0.66, 0.2], [0.5, 0.5, 0.75, 0.75], start=2)
    # epochs=2: each of the last two must trail by more than the gap
    assert not race_routed([0.5, 0.5, 0.6, 0.66], [0.5, 0.5, 0.75, 0.75], start=2, epochs=2)
    assert race_routed([0.5, 0.5, 0.6, 0.6], [0.5, 0.5, 0.75, 0.75], start=2, epochs=2)
    assert not race_routed([0.1, 0.1, 0.1], [], start=0)       # no earlier candidate


def test_candidate_race_says_why_it_stopped():
    class Net:
        history = [{"valid_map": v} for v in (0.47, 0.50, 0.47, 0.50)]

    race = CandidateRace([0.45, 0.43, 0.67, 0.73, 0.75], "valid_map", patience=6,
                         start=2).initialize()
    with pytest.raises(KeyboardInterrupt):
        race.on_epoch_end(Net())
    assert race.stopped_ and race.why_ == "far behind"
    level = CandidateRace([0.47, 0.50, 0.47, 0.50], "valid_map", patience=2).initialize()
    with pytest.raises(KeyboardInterrupt):
        level.on_epoch_end(Net())
    assert level.why_ == "not ahead"
    ahead = CandidateRace([0.4, 0.4, 0.4, 0.4], "valid_map", patience=2).initialize()
    ahead.on_epoch_end(Net())
    assert not ahead.stopped_ and ahead.why_ is None
