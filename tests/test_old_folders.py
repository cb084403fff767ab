"""Folders saved before the persistence package (one per kind, committed from that commit) load
and score as they did: tests/data/saved_before_persistence/README.md says how they were made."""

import json
from pathlib import Path

import numpy as np
import pytest

from xplant import load_saved

OLD = Path(__file__).parent / "data" / "saved_before_persistence"
PROBE = json.loads((OLD / "probe.json").read_text(encoding="utf-8"))
KINDS = {"linear": "Pipeline", "mention_matcher": "MentionMatcher",
         "description_fusion": "DescriptionFusion", "plant_classifier": "PlantClassifier"}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_an_old_folder_loads_and_scores_as_it_did(name):
    if name == "plant_classifier":
        pytest.importorskip("torch")
    model, decision = load_saved(OLD / name)
    assert type(model).__name__ == KINDS[name]
    got = np.asarray(model.decision_function(PROBE))
    want = np.load(OLD / f"{name}.scores.npy")
    assert got.shape == want.shape == (8, 4 if name == "description_fusion" else 3)
    if name == "plant_classifier":          # float32 network: rounding may differ by CPU
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(np.argsort(-got, axis=1, kind="stable"),
                                      np.argsort(-want, axis=1, kind="stable"))
    else:
        np.testing.assert_array_equal(got, want)
    if name == "linear":
        assert decision["rule"] == "per_label_threshold"
        np.testing.assert_array_equal(decision["thresholds"], [0.1, -0.2, 0.3])
        # the old "decision" field is the model's rule part now: predict applies it
        np.testing.assert_array_equal(model.predict(PROBE).toarray(), (got >= [0.1, -0.2, 0.3]))
    if name == "description_fusion":
        assert (decision["rule"], decision["k"]) == ("top_k", 2)


def test_an_old_planting_loads():
    pytest.importorskip("torch")
    from xplant.neural import load_planting
    state, meta = load_planting(OLD / "planting")
    assert meta["format"] == "xplant-planting-1" and meta["n_labels"] == 3
    assert meta["arch"]["attention_dim"] == 8 and meta["arch"]["backbone"] == "cnn"
    assert tuple(state["attention.label_queries"].shape) == (3, 8)
    assert tuple(state["encoder.embedding.weight"].shape)[1] == 8
