"""xplant run's own choices on dev go through choose_on_dev: a grid is the product of its keys."""

import json

from xplant.app._run import run_models

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
