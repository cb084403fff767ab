"""The GPU benchmark stops at once, clearly, where no CUDA GPU is present.

How fast it stops is a benchmark: ``bench_speed.py --rows gpu-refusal`` (target: 60 s),
whose row runs the script here.
"""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def test_gpu_script_fails_fast_without_gpu():
    spec = importlib.util.spec_from_file_location("bench_speed", ROOT / "benchmarks" / "bench_speed.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    record = bench.gpu_refusal(ROOT)
    assert record["returncode"] == 2
    assert "no CUDA GPU is available" in record["stderr"]
    assert record["stdout"] == ""
    assert record["parts"]["refusal"] == record["target_seconds"] > 0
    assert record["target"].startswith("refused (exit status 2) under 60 s: ")
