"""Smoke run of benchmarks/bench_linear.py on a slice of EURLEX57K."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".." / "shared" / "data" / "eurlex57k"


def _load_script():
    spec = importlib.util.spec_from_file_location("bench_linear", ROOT / "benchmarks" / "bench_linear.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ranking_metrics_by_hand():
    import numpy as np
    import scipy.sparse as sp

    bench = _load_script()
    Y = sp.csr_matrix(np.array([[1, 0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 0]]))
    top = np.array([[5, 1, 0, 2, 3], [0, 1, 2, 3, 4]])
    m = bench.ranking_metrics(top, Y)
    assert m["P@1"] == 0.5 and m["P@5"] == pytest.approx(2 / 10)
    # row 0: hits at ranks 1 and 3 -> (1 + 1/2) / (1 + 1/log2(3)); row 1 has no gold label
    assert m["nDCG@5"] == pytest.approx(1.5 / (1 + 1 / np.log2(3)))


def test_bench_linear_smoke(tmp_path):
    if not (DATA / "train.jsonl.gz").exists():
        pytest.skip("EURLEX57K data not found beside the checkout")
    bench = _load_script()
    report = bench.main(["--smoke", "--data-home", str(DATA), "--models", "prior", "ovr",
                         "--output", str(tmp_path / "out.json")])
    names = [m["name"] for m in report["models"]]
    assert names == ["FrequencyPrior", "OneVsRestLinear (C chosen on dev)"]
    prior, ovr = report["models"]
    assert ovr["test"]["P@1"] > prior["test"]["P@1"]
    assert (tmp_path / "out.json").exists()
