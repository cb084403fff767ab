"""Smoke run of benchmarks/bench_refit.py: 30 CodiEsp documents per split, a tiny network."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


def test_bench_refit_smoke(tmp_path):
    import torch
    torch.set_num_threads(1)
    spec = importlib.util.spec_from_file_location("bench_refit",
                                                  ROOT / "benchmarks" / "bench_refit.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    report = bench.main(["--max-docs", "30", "--max-epochs", "2", "--plant-epochs", "1",
                         "--set", "module__embedding_dim=8", "--set", "module__hidden_dim=8",
                         "--set", "module__attention_dim=8", "--set", "n_jobs=1",
                         "--output", str(tmp_path)], log=lambda *a: None)
    assert json.loads((tmp_path / "bench_refit.json").read_text()) == \
        json.loads(json.dumps(report, default=str))
    assert (report["n_train"], report["n_dev"], report["n_dev_scored"]) == (20, 10, 30)
    assert [v["variant"] for v in report["variants"]] == list(bench.VARIANTS)
    fixed, scaled = report["variants"][1]["max_epochs"], report["variants"][2]["max_epochs"]
    assert fixed == report["choices"]["epoch"]
    assert scaled == max(1, round(fixed * 30 / 20))
    for v in report["variants"]:
        assert 0.0 <= v["dev_map"] <= 1.0 and 0.0 <= v["dev_micro_f1"] <= 1.0
    # zero R@5 of the dev codes absent from train': dev holds gold of such codes, so the
    # figure is a number (NaN only for a group without gold), in [0, 1]
    from xplant.app import load_splits
    from xplant.metrics import group_ranking_metrics
    s = load_splits("codiesp", max_docs=30)
    tr, _ = bench.split_train(30)
    unseen = np.flatnonzero(np.asarray(s["train"].Y[tr].sum(0)).ravel() == 0)
    assert s["dev"].Y[:, unseen].nnz > 0
    no_refit = report["variants"][0]
    assert 0.0 <= no_refit["dev_zero_r5_full"] <= 1.0
    assert 0.0 <= no_refit["dev_zero_r5_full_both"] <= 1.0
    assert "zero R@5 (absent from train')" in bench._table(report)
    # the first fit never scores a code absent from train' (Stage 2 leaves them out, the SVM
    # has no positive of them): none reaches a top 5, which the descriptions row can change
    assert no_refit["dev_zero_r5_full"] == 0.0
    # the planted row is also scored fused with the descriptions, as the job designates it:
    # weights chosen on dev' for the first fit, the same weights kept by both refits
    desc = [v["descriptions"] for v in report["variants"]]
    assert [d["variant"] for d in desc] == [v + " + descriptions" for v in bench.VARIANTS]
    from xplant.unseen import FUSION_WEIGHTS, SEEN_WEIGHTS
    assert desc[0]["weights"]["weight"] in FUSION_WEIGHTS
    assert desc[0]["weights"]["seen_weight"] in SEEN_WEIGHTS
    # (each read from its fitted fusion's weight_ and seen_weight_)
    assert desc[1]["weights"] == desc[2]["weights"] == desc[0]["weights"]
    for d in desc:
        assert 0.0 <= d["dev_map"] <= 1.0 and 0.0 <= d["dev_zero_r5_full"] <= 1.0
    assert all(d["variant"] in bench._table(report) for d in desc)
