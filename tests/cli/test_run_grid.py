"""xplant run's own choices on dev go through choose_on_dev: a grid is the product of its keys."""

import json

import numpy as np

from xplant.app import run_models

DATA = {"dataset": "codiesp", "codes": "D", "language": "en", "data_home": None, "max_docs": 40}


def test_a_two_key_grid_is_chosen_over_its_product(tmp_path):
    spec = {"name": "TF-IDF + SVM", "grid": {"ovr__C": [0.1, 10.0], "tfidf__min_df": [1, 2]}}
    res = run_models(DATA, [spec], tmp_path, verbose=0, isolate=False, save_models=False,
                     log=lambda *a: None)
    row = res["models"][0]
    record = row["dev_choice"]
    tried = [tuple(sorted(c.items())) for c, _ in record["scores"]]
    assert sorted(tried) == sorted([(("ovr__C", C), ("tfidf__min_df", m))
                                    for C in (0.1, 10.0) for m in (1, 2)])   # 4, not 2 + 2
    assert record["family"] == "ranking" and record["criterion"] == "map"
    best = max(s for _, s in record["scores"])
    first_best = next(c for c, s in record["scores"] if s == best)           # ties: the first
    assert record["value"] == first_best == row["dev_selected"]
    assert row["dev_MAP"] == best
    assert json.loads(json.dumps(record)) == record


def test_the_run_loads_its_data_once_and_gives_it_to_each_row(tmp_path, monkeypatch):
    """run_models loads the splits once and each row's fit reads the run's splits rather
    than loading them again (counted in process); in a spawned child they arrive
    pickled, and the row scores as it does in process."""
    import xplant.app._run as run
    calls = []
    real = run.load_splits
    monkeypatch.setattr(run, "load_splits", lambda **kw: calls.append(kw) or real(**kw))
    spec = {"name": "TF-IDF + SVM", "grid": {"ovr__C": [1.0]}}
    res = run_models(DATA, [spec, {"name": "frequency prior"}], tmp_path / "a", verbose=0,
                     isolate=False, save_models=False, log=lambda *a: None)
    assert len(calls) == 1
    # a spawned child cannot see the patch (its loads are not counted): it gets the
    # pickled splits, and its scores must equal the in-process row's
    again = run_models(DATA, [spec], tmp_path / "b", verbose=0, isolate=True,
                       save_models=False, log=lambda *a: None)
    np.testing.assert_equal(again["models"][0]["metrics"], res["models"][0]["metrics"])  # NaN == NaN
