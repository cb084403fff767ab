"""``xplant run --refit``: the SVM and PLANT rows refitted on train + dev, choices pinned."""

import pytest

pytest.importorskip("torch")

from xplant.app import run_models


@pytest.fixture(scope="module")
def refit_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    data = {"dataset": "codiesp", "codes": "D", "language": "en", "max_docs": 30}
    # PLANT reads the first 64 tokens of each case (the refit does not depend on the length)
    plant = {"name": "PLANT", "params": {"module__max_length": 64}}
    res = run_models(data, ["TF-IDF + SVM", plant], out, epochs=1, plant_epochs=1, verbose=0,
                     isolate=False, refit=True, log=lambda *a: None)
    return {m["name"]: m for m in res["models"]}, res


def test_refit_rows_follow_their_rows(refit_run):
    rows, res = refit_run
    assert [m["name"] for m in res["models"]] == [
        "TF-IDF + SVM", "TF-IDF + SVM (refit)", "PLANT", "PLANT fused", "PLANT fused, α=1",
        "PLANT fused + descriptions",
        "PLANT (refit)", "PLANT fused (refit)", "PLANT fused, α=1 (refit)"]
    for name in ("TF-IDF + SVM (refit)", "PLANT (refit)"):
        assert rows[name]["n_train_documents"] == 60            # 30 train + 30 dev documents
        assert rows[name]["refit_of"] == name[:-len(" (refit)")]


def test_the_refit_pins_the_first_fits_choices(refit_run):
    rows, _ = refit_run
    svm, plant = rows["TF-IDF + SVM (refit)"], rows["PLANT (refit)"]
    assert svm["params"]["C"] == rows["TF-IDF + SVM"]["dev_selected"]["ovr__C"]
    # the default refit scales the chosen epoch count by (30 + 30) / 30, rounded
    assert rows["PLANT"]["best_epoch"] == 1
    assert plant["refit_params"]["clf__max_epochs"] == 2
    assert plant["refit_params"]["clf__patience"] is None
    assert plant["best_epoch"] == 2
    # the refit PLANT's frozen shortlist is the refit SVM: its α = 1 row is that row
    alone = rows["PLANT fused, α=1 (refit)"]
    assert alone["same_as"] == "TF-IDF + SVM (refit)"
    assert alone["metrics"]["MAP"] == pytest.approx(svm["metrics"]["MAP"], abs=1e-6)
    assert rows["PLANT fused (refit)"]["fusion_weight"] == rows["PLANT fused"]["fusion_weight"]
