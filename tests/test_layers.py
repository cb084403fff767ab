"""The package's layers: every import, function-level ones included, points down or sideways
within its own room, and no module imports itself back through others.

The layer order (lowest first; a unit may import any unit of a lower layer):

0. ``_params``, ``_process``, ``_progress``, ``_choice``, ``_sigmoid``, ``_fitted_parts``
   (fitted attributes as views of ``parts_``): plain helpers.
1. ``_files`` (reading and writing files), the lower floor of ``persistence``
   (``persistence._codec``: a saved folder's files, arrays and JSON records, format tags;
   ``persistence._parts``: the registry of fitted parts), ``_cache`` (verified cache
   entries, written with the codec), ``_outputs`` (the checks of the outputs a
   user names), ``_label_space`` (the label-space part), ``_labels`` (the target parser) with
   ``_target_form`` (how a target reads), ``_normal_forms`` (of texts, names and codes) and
   ``_frequency_buckets``, ``_descriptions``.
2. ``metrics``, ``model_selection``, ``evidence`` (spans of text).
3. ``datasets``.
4. ``relevance`` (MIG), ``linear`` (the linear and tree rankers).
5. ``fusion`` (the shortlist and the one score-fusion formula; no torch).
6. ``unseen`` (labels never seen in training: ranking by descriptions).
7. ``neural`` (PLANT: Stage 1, the Stage 1 → Stage 2 hand-off, Stage 2).
8. ``persistence``'s upper floor (its ``__init__`` and ``_kinds``: the registry of saved
   kinds, ``save`` and ``load``), ``_saved`` (ranking and deciding with any model),
   ``report``.
9. ``app`` (the command line's jobs), then ``cli`` and the package root.

Inside ``neural`` the stages have an order of their own (``NEURAL_LAYERS``,
lowest first; a unit is a subpackage or a module directly under
``xplant/neural/``):

0. ``backbones``, ``modules``, ``losses``: the networks and their losses.
1. ``parts`` (what a fitted PlantClassifier keeps beside its network) and
   ``training`` (the machinery of a fit: data, callbacks, checkpoints, torch's
   state).
2. ``distributed`` (DeepSpeed; its job, ``xplant train --config``, is one of ``app``).
3. ``_inputs``, ``_settings``: the inputs and settings both estimators share.
4. ``_base``: the skorch ladder both estimators stand on.
5. ``planting``: Stage 1 (AttentionPlanter); it never imports the classifier.
6. ``classifier``: Stage 2 (PlantClassifier).
7. the package's ``__init__`` and ``batching``.

Directly under ``xplant/neural/`` are only ``__init__.py``, the public
``losses.py`` and ``batching.py``, and at most three private modules of what
both stages share; no module anywhere is named ``_common`` or ``_misc``.
"""

import ast
import collections
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "xplant"

LAYERS = [
    {"_params", "_process", "_progress", "_choice", "_sigmoid", "_fitted_parts"},
    {"_files", "persistence._codec", "persistence._parts", "_cache", "_outputs", "_labels",
     "_label_space",
     "_target_form", "_normal_forms", "_frequency_buckets", "_descriptions"},
    {"metrics", "model_selection", "evidence"},
    {"datasets"},
    {"relevance", "linear"},
    {"fusion"},
    {"unseen"},
    {"neural"},
    {"persistence", "_saved", "report"},
    {"app"},
    {"cli", "xplant", "__main__"},
]
LEVEL = {unit: i for i, units in enumerate(LAYERS) for unit in units}

NEURAL_LAYERS = [
    {"backbones", "modules", "losses"},
    {"parts", "training"},
    {"distributed"},
    {"_inputs", "_settings"},
    {"_base"},
    {"planting"},
    {"classifier"},
    {"__init__", "batching"},
]
NEURAL_LEVEL = {unit: i for i, units in enumerate(NEURAL_LAYERS) for unit in units}
NEURAL_SHARED = {"_inputs", "_settings", "_base"}      # the private modules directly under neural/


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


#: The persistence package stands on two floors: these modules are units of their own.
FLOORS = {"xplant.persistence._codec": "persistence._codec",
          "xplant.persistence._parts": "persistence._parts"}


def _unit(module):
    if module in FLOORS:
        return FLOORS[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "xplant"


def _neural_unit(module):
    """The stage of a module of xplant.neural: the longest unit of NEURAL_LAYERS it is in."""
    rest = module[len("xplant.neural"):].lstrip(".") or "__init__"
    units = [u for u in NEURAL_LEVEL if rest == u or rest.startswith(u + ".")]
    return max(units, key=len) if units else rest


def _neural(module):
    return module == "xplant.neural" or module.startswith("xplant.neural.")


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


def test_every_neural_unit_has_a_stage():
    modules, _ = _imports()
    units = {_neural_unit(m) for m in modules if _neural(m)}
    assert units <= set(NEURAL_LEVEL), units - set(NEURAL_LEVEL)


def test_no_upward_import_inside_neural():
    """planting < classifier, and parts, training below both: e.g. planting never imports
    the classifier, training neither stage."""
    _, graph = _imports()
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() if _neural(a)
                    for b in targets if _neural(b)
                    and NEURAL_LEVEL[_neural_unit(b)] > NEURAL_LEVEL[_neural_unit(a)])
    assert not upward, "\n".join(upward)


def test_neural_top_level_holds_the_public_modules_and_the_shared_ones():
    top = {p.name for p in (ROOT / "neural").glob("*.py")}
    assert top == {"__init__.py", "losses.py", "batching.py"} | {f"{m}.py" for m in NEURAL_SHARED}
    assert len(NEURAL_SHARED) <= 3
    packages = {p.parent.name for p in (ROOT / "neural").glob("*/__init__.py")}
    assert packages == {u for units in NEURAL_LAYERS for u in units if "." not in u
                        and u not in top and f"{u}.py" not in top and u != "__init__"}
    vague = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                   if p.stem in ("_common", "_misc", "common", "misc"))
    assert not vague, vague


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
