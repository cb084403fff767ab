"""benchmarks/bench_speed.py: exclusive part timing, the table, and a tiny base-vs-current run."""

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    path = ROOT / "benchmarks" / "bench_speed.py"
    spec = importlib.util.spec_from_file_location("bench_speed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _clock(times):
    it = iter(times)
    return lambda: next(it)


def test_part_timer_counts_each_second_once_for_the_innermost_part():
    bench = _bench()
    # fit opens at 0, mig at 1, tokenize at 2 .. 5, mig closes at 6,
    # tokenize again 7 .. 9, fit ends at 10
    t = bench.PartTimer(clock=_clock([0, 1, 2, 5, 6, 7, 9, 10]))
    with t.part("fit"):
        with t.part("mig"):
            with t.part("tokenize"):
                pass
        with t.part("tokenize"):
            pass
    assert dict(t.seconds) == {"fit": 1 + 1 + 1, "mig": 1 + 1, "tokenize": 3 + 2}
    assert sum(t.seconds.values()) == 10            # the parts add up to the outer wall time
    assert dict(t.calls) == {"fit": 1, "mig": 1, "tokenize": 2}
    assert t.current() == []


def test_instrument_times_a_method_and_undoes_the_wrap():
    bench = _bench()

    class Base:
        def step(self, x):
            return x + 1

    class Net(Base):
        pass

    t = bench.PartTimer(clock=_clock([0, 4]))
    with bench.Instrument(t) as inst:
        assert inst.wrap(Net, "step", lambda self, x: f"step{x}")
        assert not inst.wrap(Net, "absent", "x")
        assert Net().step(1) == 2
    assert dict(t.seconds) == {"step1": 4} and inst.missing == ["Net.absent"]
    assert "step" not in Net.__dict__ and Net().step(1) == 2     # the inherited method again


def test_derive_divides_by_epochs_and_table_gives_ratios():
    bench = _bench()
    record = {"parts": {"stage2.forward": 6.0, "stage2.dev": 3.0, "stage2.dev.net": 1.5,
                        "stage2.data": 0.5,
                        "stage2.callbacks": 1.0, "mig": 2.0},
              "n_epochs": {"stage1": 0, "stage2": 3}, "epochs": {"stage1": [], "stage2": [4, 9, 5]},
              "fit_wall": 20.0, "total_wall": 30.0, "peak_rss_mb": 900.0}
    d = bench.derive(record)
    assert d["stage2.forward/epoch"] == 2.0
    assert d["stage2.dev/epoch"] == 1.5 and d["stage2.dev.net/epoch"] == 0.5   # (3 + 1.5) / 3
    assert d["stage2.dev.fusion/epoch"] == 0.0
    assert d["stage2.data/epoch"] == 0.5                 # (0.5 + 1.0) / 3: batches and callbacks
    assert d["epoch:stage2"] == 5 and d["epoch:stage1"] is None
    assert d["stage1.forward/epoch"] is None and d["mig"] == 2.0 and d["shortlist"] is None
    faster = dict(d, mig=1.0, fit_wall=5.0)
    table, med = bench.compare_table({"base": [d, d], "current": [faster]})
    lines = {line.split(" | ")[0][2:]: line for line in table.splitlines()}
    assert lines["MIG"] == "| MIG | 2.00 | 1.00 | 0.50 |"
    assert lines["fit (wall)"] == "| fit (wall) | 20.00 | 5.00 | 0.25 |"
    assert lines["shortlist"] == "| shortlist | - | - |  |"
    assert med["base"]["peak_rss_mb"] == 900.0


def _git_head():
    if shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def test_compare_alternates_versions_in_a_temporary_worktree(tmp_path, monkeypatch):
    """The base commit is checked out and removed; the order swaps every repetition."""
    head = _git_head()
    if head is None:
        pytest.skip("needs a git checkout (the base version is a git worktree)")
    bench = _bench()
    calls = []

    def fake_child(spec, tree, log):
        calls.append((spec["row"], Path(tree)))
        assert (Path(tree) / "xplant" / "__init__.py").is_file()
        fit = 10.0 if Path(tree) == ROOT else 20.0
        return {"parts": {"mig": fit / 10}, "n_epochs": {"stage1": 0, "stage2": 1},
                "epochs": {"stage1": [], "stage2": [fit / 2]}, "fit_wall": fit,
                "total_wall": fit + 1, "peak_rss_mb": 100.0, "best_dev": 0.5,
                "not_wrapped": [], "shape": {"train": [20, 5]}}

    monkeypatch.setattr(bench, "_child", fake_child)
    lines = []
    report = bench.main(["--base", head, "--rows", "plant-false", "--repeats", "3"],
                        log=lines.append)
    warm, timed = calls[:2], calls[2:]
    base = next(tree for _, tree in timed if tree != ROOT)
    assert [t for _, t in warm] == [ROOT, base]                  # one warm-up fit per tree
    assert [t for _, t in timed] == [base, ROOT, ROOT, base, base, ROOT]
    assert {r for r, _ in timed} == {"plant-false"}
    assert not base.exists()                                   # removed after the run
    med = report["rows"]["plant-false"]["median"]
    assert med["base"]["fit_wall"] == 20.0 and med["current"]["fit_wall"] == 10.0
    assert "| fit (wall) | 20.00 | 10.00 | 0.50 |" in "\n".join(lines).splitlines()


@pytest.mark.slow
def test_tiny_current_run(tmp_path):
    """One plant=False fit of today's tree at a tiny budget, in a child: every part timed."""
    pytest.importorskip("torch")
    bench = _bench()
    lines = []
    report = bench.main(["--rows", "plant-false,eurlex", "--docs", "20", "--dev-docs", "10",
                         "--max-epochs", "1", "--plant-epochs", "1", "--repeats", "1",
                         "--no-warmup", "--threads", "1", "--data-home", str(tmp_path / "none"),
                         "--output", str(tmp_path / "speed.json")], log=lines.append)
    text = "\n".join(map(str, lines))
    assert "eurlex: skipped (no EURLEX57K" in text and list(report["rows"]) == ["plant-false"]
    assert "| part | current |" in text
    recs = report["rows"]["plant-false"]["records"]
    assert list(recs) == ["current"] and len(recs["current"]) == 1
    rec = recs["current"][0]
    assert Path(rec["xplant"]) == ROOT / "xplant" and rec["not_wrapped"] == []
    assert rec["n_epochs"] == {"stage1": 0, "stage2": 1}      # plant=False: no Stage 1
    assert rec["shape"]["train"][0] == 20 and rec["shape"]["dev"][0] == 10
    parts = rec["parts"]
    for name in ("load", "mig", "tokenize", "shortlist", "stage2.forward", "stage2.backward",
                 "stage2.optimizer", "stage2.dev", "stage2.checkpoint", "choices", "score", "save"):
        assert parts[name] > 0, name
    assert sum(parts.values()) <= rec["total_wall"] + 1e-6
    assert rec["memory_mb"]["stage2 begin"] <= rec["memory_mb"]["stage2 end"] <= rec["peak_rss_mb"]
    assert 0 < rec["best_dev"] <= 1
    assert (tmp_path / "speed.json").is_file()
