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
                     isolate=False, refit=True, description_encoder="none", log=lambda *a: None)
    return {m["name"]: m for m in res["models"]}, res


def test_the_refit_of_the_row_chosen_on_dev_is_the_runs_model(refit_run):
    rows, res = refit_run
    first = [m for m in res["models"] if not m.get("refit_of") and not m.get("same_as")]
    best = max(first, key=lambda m: m["dev_MAP"])            # max keeps the first of ties
    assert res["designated"]["chosen_on_dev"] == best["name"]
    assert res["designated"]["name"] == best["name"] + " (refit)"
    assert [m["name"] for m in res["models"] if m.get("designated")] == [best["name"] + " (refit)"]
    assert rows[best["name"] + " (refit)"]["dev_MAP"] == best["dev_MAP"]


def test_refit_rows_follow_their_rows(refit_run):
    rows, res = refit_run
    assert [m["name"] for m in res["models"]] == [
        "TF-IDF + SVM", "TF-IDF + SVM (refit)", "PLANT", "PLANT fused", "PLANT fused, α=1",
        "PLANT fused + descriptions", "PLANT fused + descriptions + mentions",
        "PLANT (refit)", "PLANT fused (refit)", "PLANT fused, α=1 (refit)",
        "PLANT fused + descriptions (refit)", "PLANT fused + descriptions + mentions (refit)"]
    for name in ("TF-IDF + SVM (refit)", "PLANT (refit)"):
        assert rows[name]["n_train_documents"] == 60            # 30 train + 30 dev documents
        assert rows[name]["refit_of"] == name[:-len(" (refit)")]


def test_the_refit_pins_the_first_fits_choices(refit_run):
    rows, _ = refit_run
    svm, plant = rows["TF-IDF + SVM (refit)"], rows["PLANT (refit)"]
    assert svm["params"]["C"] == rows["TF-IDF + SVM"]["dev_selected"]["ovr__C"]
    # the run's refit trains for the epoch count its first fit chose (RUN_REFIT_EPOCHS)
    assert rows["PLANT"]["best_epoch"] == 1
    assert plant["refit_params"]["clf__max_epochs"] == 1
    assert plant["refit_params"]["clf__patience"] is None
    assert plant["best_epoch"] == 1
    # the refit PLANT's frozen shortlist is the refit SVM: its α = 1 row is that row
    alone = rows["PLANT fused, α=1 (refit)"]
    assert alone["same_as"] == "TF-IDF + SVM (refit)"
    assert alone["metrics"]["MAP"] == pytest.approx(svm["metrics"]["MAP"], abs=1e-6)
    assert rows["PLANT fused (refit)"]["fusion_weight"] == rows["PLANT fused"]["fusion_weight"]


def test_the_descriptions_row_is_refitted_with_its_weights_pinned(refit_run):
    rows, _ = refit_run
    first, refit = rows["PLANT fused + descriptions"], rows["PLANT fused + descriptions (refit)"]
    assert refit["n_train_documents"] == 60
    # the weights chosen on the first fit's dev scores, not chosen again
    assert refit["description_weight"] == first["description_weight"]
    assert refit["description_seen_weight"] == first["description_seen_weight"]
    assert refit["description_choice"] == first["description_choice"]
    # all five weights of the open label space, the hierarchy's and the prior's too
    assert refit["description_weights"] == first["description_weights"]
    assert set(first["description_weights"]) == {"weight", "seen_weight", "near_weight",
                                                 "family_weight", "prior_weight"}
    # the row with the mention source: its weight pinned too, its mentions those of train + dev
    m_first = rows["PLANT fused + descriptions + mentions"]
    m_refit = rows["PLANT fused + descriptions + mentions (refit)"]
    assert m_refit["description_weights"] == m_first["description_weights"] == \
        dict(first["description_weights"], mention_weight=m_first["mention_choice"]["value"])
    assert m_refit["dev_MAP"] == m_first["dev_MAP"]
    assert m_refit["mentions"]["n_mentions"] > m_first["mentions"]["n_mentions"]
    # its dev figures and decision rule are the first fit's (the refit has no dev data left)
    assert refit["dev_MAP"] == first["dev_MAP"]
    assert (refit["rule"], refit["k"], refit["threshold"]) == \
        (first["rule"], first["k"], first["threshold"])
    # the refit's description source ranks the labels absent from train + dev, fewer
    # than those absent from train (dev holds codes that train lacks)
    import numpy as np
    from xplant.app import load_splits
    s = load_splits("codiesp", codes="D", language="en", max_docs=30)
    freq_tr = np.asarray(s["train"].Y.sum(0)).ravel()
    freq_both = freq_tr + np.asarray(s["dev"].Y.sum(0)).ravel()
    # over the open label space (train and dev codes, then the ICD-10-CM catalogue)
    n_open = first["label_space"]["n_open_labels"]
    assert refit["label_space"]["n_open_labels"] == n_open > 70_000
    assert first["n_unseen_labels"] == n_open - int((freq_tr > 0).sum())
    assert refit["n_unseen_labels"] == n_open - int((freq_both > 0).sum()) \
        < first["n_unseen_labels"]


def test_refit_rows_report_the_labels_absent_from_train_and_dev(refit_run):
    import numpy as np
    from xplant.app import load_splits
    from xplant.app._fused import row_targets
    from xplant.datasets import open_label_space
    rows, _ = refit_run
    s = load_splits("codiesp", codes="D", language="en", max_docs=30)
    tr_freq = np.asarray(s["train"].Y.sum(0)).ravel()
    dv_freq = np.asarray(s["dev"].Y.sum(0)).ravel()
    # a row's test labels: its own columns (the training split's, or the open space of the
    # descriptions rows: training codes, then the catalogue's), then the test documents'
    # codes outside them, which train and dev never carry
    closed = s["train"].label_names
    open_names, _ = open_label_space(closed, s["train"].catalogue)
    for name, m in rows.items():
        if not name.endswith(" (refit)"):
            assert not any(k.startswith("zero_train_dev") for k in m["metrics"])
            continue
        names = open_names if "label_space" in m else closed
        if "label_space" in m:
            assert m["label_space"]["n_open_labels"] == len(open_names)
        te = row_targets(s["test"], names)
        pad = np.zeros(te.shape[1] - tr_freq.size, dtype=tr_freq.dtype)
        freq_tr, freq_both = np.concatenate([tr_freq, pad]), np.concatenate([tr_freq + dv_freq, pad])
        met = m["metrics"]
        # the zero-shot group of every row is unchanged (absent from the training split) ...
        assert met["zero_n_labels"] == float((freq_tr == 0).sum())
        # ... and the refit's own group, absent from train + dev, is reported beside it
        assert met["zero_train_dev_n_labels"] == float((freq_both == 0).sum())
        docs = np.diff(te[:, np.flatnonzero(freq_both == 0)].tocsr().indptr) > 0
        assert met["zero_train_dev_n_documents"] == float(docs.sum()) > 0
        assert 0.0 <= met["zero_train_dev_R@5_full"] <= 1.0
        assert 0.0 <= met["F1_zero_train_dev"] <= 1.0


def test_a_dev_split_that_cannot_guide_the_grid_records_its_fallback(tmp_path):
    """When every dev positive lies on a label training never saw, the SVM's grid of C fits
    its first value and records it as the fallback (on_dev False), not as a choice among dev
    scores of 0: a reader of the results must not take a default for a measured choice."""
    import numpy as np
    import scipy.sparse as sp
    from xplant.app import load_splits
    from xplant.model_selection import NoDevDataWarning
    data = {"dataset": "codiesp", "codes": "D", "language": "en", "max_docs": 20,
            "catalogue": "none"}
    splits = load_splits(**data)
    freq = np.asarray(splits["train"].Y.sum(axis=0)).ravel()
    unseen = np.flatnonzero(freq == 0)[:3]
    Y = sp.lil_matrix(splits["dev"].Y.shape, dtype=splits["dev"].Y.dtype)
    Y[:, unseen[0]] = 1                      # every dev positive on a label train never saw
    splits["dev"].Y = Y.tocsr()
    with pytest.warns(NoDevDataWarning, match="grid"):
        res = run_models(data, ["TF-IDF + SVM"], tmp_path / "run", verbose=0, isolate=False,
                         splits=splits, refit=False, log=lambda *a: None)
    svm = res["models"][0]
    assert svm["dev_choice"]["on_dev"] is False and svm["dev_choice"]["scores"] == []
    assert svm["dev_selected"] == {"ovr__C": 0.1} and svm["dev_MAP"] == 0.0
    assert res["designated"] is None
