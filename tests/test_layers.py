"""The package's layers: every import, function-level ones included, points down or sideways
within its own room, and no module imports itself back through others.

The layer order (lowest first; a unit may import any unit of a lower layer):

0. ``_params``, ``_process``, ``_progress``, ``_choice``, ``_sigmoid``: plain
   helpers.
1. ``_files`` (reading and writing files), ``_cache`` (verified cache entries, written
   with ``_files``' atomic writes), ``_outputs`` (the checks of the outputs a
   user names), ``_labels`` (the target parser) with
   ``_target_form`` (how a target reads), ``_normal_forms`` (of texts, names and codes) and
   ``_frequency_buckets``, ``_descriptions``.
2. ``metrics``, ``model_selection``, ``evidence`` (spans of text).
3. ``datasets``.
4. ``relevance`` (MIG), ``linear`` (the linear and tree rankers).
5. ``fusion`` (the shortlist and the one score-fusion formula; no torch).
6. ``unseen`` (labels never seen in training: ranking by descriptions).
7. ``neural`` (PLANT: Stage 1, the Stage 1 → Stage 2 hand-off, Stage 2).
8. ``_saved`` (the one loading dispatcher of every saved kind), ``report``.
9. ``app`` (the command line's jobs), then ``cli`` and the package root.
"""

import ast
import collections
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "xplant"

LAYERS = [
    {"_params", "_process", "_progress", "_choice", "_sigmoid"},
    {"_files", "_cache", "_outputs", "_labels", "_target_form", "_normal_forms",
     "_frequency_buckets", "_descriptions"},
    {"metrics", "model_selection", "evidence"},
    {"datasets"},
    {"relevance", "linear"},
    {"fusion"},
    {"unseen"},
    {"neural"},
    {"_saved", "report"},
    {"app"},
    {"cli", "xplant"},
]
LEVEL = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _module(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports():
    """module -> the xplant modules it imports (top-level and inside functions)."""
    modules = {_module(p): p for p in ROOT.rglob("*.py")}
    graph = collections.defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [target + "." + a.name for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("xplant") and target != name:
                    graph[name].add(target)
    return modules, graph


def _unit(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "xplant"


def test_every_unit_has_a_layer():
    modules, _ = _imports()
    assert {_unit(m) for m in modules} <= set(LEVEL), {_unit(m) for m in modules} - set(LEVEL)


def test_no_upward_import():
    _, graph = _imports()
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                    if LEVEL[_unit(b)] > LEVEL[_unit(a)])
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    """No module reaches itself through imports (package __init__ re-exports aside)."""
    _, graph = _imports()

    def inner(module):               # a package's __init__ importing its own modules is no cycle
        return {t for t in graph.get(module, ()) if not (
            module.count(".") < t.count(".") and t.startswith(module + "."))}

    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(inner(node)):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(cycles)


@pytest.mark.parametrize("folder", ["xplant/app", "benchmarks"])
def test_no_private_name_of_another_subpackage(folder):
    """The app and the benchmarks use each subpackage's public names only."""
    base = ROOT.parent / folder
    found = []
    for path in base.rglob("*.py"):
        own = _module(path).split(".")[1] if folder.startswith("xplant") else None
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = node.module if not node.level else \
                    ".".join(_module(path).split(".")[: -node.level] + [node.module])
                parts = mod.split(".")
                if parts[0] != "xplant" or len(parts) < 3 or parts[1] == own:
                    continue
                if any(p.startswith("_") for p in parts[2:]) or \
                        any(a.name.startswith("_") for a in node.names):
                    found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {mod}")
    assert not found, "\n".join(found)
