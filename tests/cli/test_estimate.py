"""The time estimate a run prints before fitting (xplant.app._estimate)."""

import json

import numpy as np
import pytest

from xplant.app import _estimate
from xplant.app._estimate import (RowEstimate, expected_best_epoch, expected_stage2_epochs,
                                  refit_estimate)

LABELS = {"cardiac": ["heart", "murmur", "valve"], "renal": ["kidney", "creatinine", "dialysis"],
          "lung": ["cough", "wheeze", "sputum"], "skin": ["rash", "itch", "lesion"]}
FILLER = ["patient", "seen", "today", "history", "plan", "review", "stable", "follow"]


def _write(path, n, seed):
    rng = np.random.default_rng(seed)
    names = list(LABELS)
    with open(path, "w") as f:
        for i in range(n):
            labels = [names[i % 4]] + ([names[(i + 1) % 4]] if i % 3 == 0 else [])
            words = [w for lab in labels for w in LABELS[lab]] + list(rng.choice(FILLER, 6))
            f.write(json.dumps({"id": f"{seed}-{i}", "text": " ".join(rng.permutation(words)),
                                "labels": labels}) + "\n")
    return str(path)


def test_expected_best_epoch_is_the_power_law_of_the_mean_label_frequency():
    # m = mean frequency of the labels that occur: (2 + 6 + 10) / 3 = 6; absent labels ignored
    assert expected_best_epoch([2, 0, 6, 10]) == pytest.approx(84.0 * 6 ** -0.42)
    # rarer labels, more epochs
    assert expected_best_epoch([1] * 5) > expected_best_epoch([50] * 5)
    assert expected_best_epoch([0, 0]) == pytest.approx(84.0)


def test_expected_stage2_epochs_adds_patience_and_keeps_to_the_budget():
    freq = [100] * 90                          # 84 * 100**-0.42 = 12.14 -> 12
    assert expected_stage2_epochs(freq, max_epochs=60, patience=6, warmup=2,
                                  has_dev=True) == (18, 60)
    assert expected_stage2_epochs(freq, max_epochs=15, patience=6, warmup=2,
                                  has_dev=True) == (15, 15)
    # no dev split, or no early stopping: the whole budget
    assert expected_stage2_epochs(freq, max_epochs=60, patience=None, warmup=2,
                                  has_dev=True) == (60, 60)
    assert expected_stage2_epochs(freq, max_epochs=60, patience=6, warmup=2,
                                  has_dev=False) == (60, 60)
    # never before the first epoch after the warm-up
    assert expected_stage2_epochs([10 ** 9], max_epochs=60, patience=6, warmup=4,
                                  has_dev=True) == (11, 60)


def test_refit_estimate_from_the_first_fit_by_hand():
    out = {"fit_seconds": 100.0,
           "epoch_seconds": {"stage1": [5.0, 5.0], "stage2": [2.0, 2.0, 4.0, 4.0, 4.0],
                             "stage2_all": 16.0, "best_epoch": 4}}
    est = refit_estimate("PLANT (refit)", out, n_train=100, n_dev=50)
    # overhead 100 - 10 - 16 = 74; Stage 1 10; Stage 2 to the best epoch 2 + 2 + 4 + 4 = 12
    assert est.seconds == pytest.approx((74 + 10 + 12) * 1.5)
    assert est.most_seconds == est.seconds
    # a linear row: its first fit's time per grid candidate, scaled
    svm = {"fit_seconds": 9.0, "epoch_seconds": None,
           "info": {"dev_choice": {"scores": [[0.1, 0.3], [1.0, 0.4], [10.0, 0.35]]}}}
    assert refit_estimate("svm (refit)", svm, 100, 50).seconds == pytest.approx(3.0 * 1.5)
    assert refit_estimate("prior (refit)", {"fit_seconds": 2.0, "epoch_seconds": None},
                          100, 100).seconds == pytest.approx(4.0)


def test_a_neural_probe_is_scaled_by_hand():
    from types import SimpleNamespace
    # a probe of a tenth of the training documents: Stage 1 epochs of 5 and 3 s, Stage 2 with
    # a warm-up of 2 epochs, then 2.5 and 2 s (the fastest kept); the race's second candidate
    # took twice the chosen one's seconds
    fitted = SimpleNamespace(
        planter=None, planter_=SimpleNamespace(history=[{"dur": 5.0}, {"dur": 3.0}]),
        history=[{"dur": 4.0}, {"dur": 2.0}, {"dur": 2.5}, {"dur": 2.0}], best_epoch_=3,
        stage1_weight_=0.0, stage1_weight_candidates_=[{"stage1_weight": 0.0, "seconds": 10.5},
                                                       {"stage1_weight": 0.1, "seconds": 21.0}])
    est = _estimate._neural_estimate("PLANT", fitted, 50.0, 10.0, [100] * 90, plant_epochs=10,
                                     max_epochs=60, patience=6, warmup=2, has_dev=True)
    # overhead 50 - 8 - 31.5 = 10.5 s; Stage 1 10 x 3 s; best epoch round(84 * 100 ** -0.42)
    # = 12, + patience 6 = 18 epochs of (4, 2, 2, 2, ...) s; the 0.1 candidate warm-up +
    # patience = 8 epochs at twice that; all x 10
    assert est.seconds == pytest.approx(10 * (10.5 + 30 + (4 + 2 + 16 * 2) + 2 * (4 + 2 + 6 * 2)))
    assert est.most_seconds == pytest.approx(10 * (10.5 + 30 + 3 * (4 + 2 + 58 * 2)))
    assert est.detail == ("Stage 1: 10 epochs × 30 s; Stage 2 with stage1_weight 0: about "
                          "18 epochs × 20 s; Stage 2 with stage1_weight 0.1: about 8 epochs × 40 s")


def test_each_stage_is_scaled_by_the_documents_its_epochs_draw():
    from xplant.neural import AttentionPlanter, PlantClassifier
    # Stage 1 draws at most 4,096 documents an epoch by default, Stage 2 every document
    assert _estimate._epoch_scale(AttentionPlanter(), 7700, 256) == 4096 / 256
    assert _estimate._epoch_scale(AttentionPlanter(), 3000, 256) == 3000 / 256
    assert _estimate._epoch_scale(PlantClassifier(), 7700, 256) == 7700 / 256
    assert _estimate._epoch_scale(AttentionPlanter(iterator_train__max_epoch_docs=None),
                                  7700, 256) == 7700 / 256
    # a floor of 1,000 documents: the probe's epoch makes 4 passes over its 256
    floor = PlantClassifier(iterator_train__min_epoch_docs=1000)
    assert _estimate._epoch_scale(floor, 7700, 256) == 7700 / 1024
    # the hand example above with Stage 1 at a sixth of the probe's scale
    from types import SimpleNamespace
    fitted = SimpleNamespace(planter=None,
                             planter_=SimpleNamespace(history=[{"dur": 5.0}, {"dur": 3.0}]),
                             history=[{"dur": 4.0}, {"dur": 2.0}], best_epoch_=1,
                             stage1_weight_=0.0, stage1_weight_candidates_=None)
    est = _estimate._neural_estimate("PLANT", fitted, 14.0, 10.0, [100] * 90, plant_epochs=10,
                                     max_epochs=2, patience=6, warmup=2, has_dev=True,
                                     stage1_scale=6.0, stage2_scale=8.0)
    # overhead 14 - 8 - 6 = 0; Stage 1 10 x 3 s x 6; Stage 2 (4 + 2) s x 8
    assert est.seconds == pytest.approx(180 + 48)


def test_row_estimate_line_says_the_ceiling_only_when_far_above():
    assert RowEstimate("PLANT", 600, 2400, "d").line() == \
        "PLANT: about 10 min (d); at most 40 min if no epoch stops early"
    assert RowEstimate("svm", 45, 45).line() == "svm: about 45 s"
    assert RowEstimate("prior", 0.2, 0.2).line() == "prior: about 10 s or less"


@pytest.mark.slow
def test_a_run_prints_each_rows_estimate_and_the_probe_moves_no_figure(tmp_path, monkeypatch):
    from xplant.app._job import run_job
    from xplant.app._sources import data_args_from
    d = tmp_path / "data"
    d.mkdir()
    data = data_args_from(train=_write(d / "train.jsonl", 96, 0),
                          dev=_write(d / "dev.jsonl", 24, 1), test=_write(d / "test.jsonl", 24, 2))
    kw = dict(models=["prior", "svm", "plant"], epochs=4, plant_epochs=1, verbose=0,
              isolate=False, refit=False)
    plain = run_job(tmp_path / "plain", data, log=lambda *a: None, **kw)   # 96 <= 256: no probe
    assert all("estimate" not in m for m in plain["models"])
    monkeypatch.setattr(_estimate, "PROBE_DOCS", 32)
    from xplant.app import _run
    calls, real = [], _run._in_child
    monkeypatch.setattr(_run, "_in_child", lambda func, isolate, *a: calls.append(
        (func.__name__, isolate)) or real(func, isolate, *a))
    lines = []
    told = run_job(tmp_path / "told", data, log=lines.append, **kw)
    text = "\n".join(lines)
    assert "estimated fit times (each row fitted on its first 32 of 96 training documents" in text
    first_fit = next(i for i, line in enumerate(lines) if line.startswith("\n== "))
    for name in ("frequency prior", "TF-IDF + SVM", "PLANT"):
        # each row's estimate is printed before the first row is fitted
        assert any(line.startswith(f"  {name}: about ") for line in lines[:first_fit]), name
        entry = next(m for m in told["models"] if m["name"] == name)
        assert entry["estimate"]["seconds"] > 0
        assert entry["estimate"]["most_seconds"] >= entry["estimate"]["seconds"]
    plant = next(m for m in told["models"] if m["name"] == "PLANT")
    assert "Stage 1: 1 epoch ×" in plant["estimate"]["detail"]
    # each row's probe fits in a process of its own, also in a run whose rows do not (a fit
    # moves what a later one in its process computes), one row a process; so every figure
    # is the run's without probes (on this small corpus the figures alone would not show
    # a probe fitted in the run's process: they held when it was tried)
    assert [c for c in calls if c[0] == "estimate_rows"] == [("estimate_rows", True)] * 3
    assert all(not isolate for name, isolate in calls if name != "estimate_rows")
    for a, b in zip(plain["models"], told["models"]):
        assert a["name"] == b["name"]
        assert json.dumps(a["metrics"]) == json.dumps(b["metrics"]), a["name"]   # NaN too


def test_a_refit_scales_each_stage_by_the_documents_its_epochs_draw():
    """A capped Stage 1 (4,096 documents an epoch) does not grow with train + dev."""
    from xplant.app._fit_row import epoch_seconds
    from xplant.neural import AttentionPlanter, PlantClassifier

    class Fitted(PlantClassifier):          # the attributes a fitted row's record reads
        history = [{"dur": 2.0}, {"dur": 4.0}]
        best_epoch_ = 2
        stage1_weight_candidates_ = None

    final = Fitted()
    final.planter_ = AttentionPlanter()
    final.planter_.history = [{"dur": 5.0}, {"dur": 5.0}]
    ep = epoch_seconds(final, refit_documents=(6000, 9000))
    # Stage 1: min(6000, 4096) -> min(9000, 4096) documents; Stage 2: 6000 -> 9000
    assert ep["refit_scale"] == {"stage1": 1.0, "stage2": 1.5}
    out = {"fit_seconds": 100.0, "epoch_seconds": ep}
    est = refit_estimate("PLANT (refit)", out, n_train=6000, n_dev=3000)
    # overhead 100 - 10 - 6 = 84, scaled 1.5; Stage 1 10 unscaled; Stage 2 6 × 1.5
    assert est.seconds == pytest.approx(84 * 1.5 + 10 + 6 * 1.5)
    assert "Stage 1's epochs × 1.00" in est.detail
    small = epoch_seconds(final, refit_documents=(1000, 1500))["refit_scale"]
    assert small == {"stage1": 1.5, "stage2": 1.5}
