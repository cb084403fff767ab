"""The GPU benchmark stops at once, clearly, where no CUDA GPU is present."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "plant_llm_qlora.py"


def test_gpu_script_fails_fast_without_gpu(tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    t0 = time.time()
    proc = subprocess.run([sys.executable, str(SCRIPT), "--llm", str(tmp_path), "--steps", "2"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "no CUDA GPU is available" in proc.stderr
    assert proc.stdout == ""
    assert time.time() - t0 < 60
