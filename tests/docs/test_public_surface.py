"""The public surface: every public name and every documented fitted attribute.

The snapshot ``tests/docs/data/public_surface.json`` lists, for each public
module (the API reference's list, ``docs/_ext/xplant_api.py``), the names of
its ``__all__``, and for each public class the attributes its docstring's
Attributes section documents (a fitted estimator's ``classes_``,
``decision_``, ...). A refactor keeps them: a name that goes or comes is a
decision to record, in the changelog and here. To write the snapshot again
after such a decision: ``python tests/docs/test_public_surface.py --write``.
"""

import importlib.util
import inspect
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).resolve().parent / "data" / "public_surface.json"


def _api():
    spec = importlib.util.spec_from_file_location("xplant_api", ROOT / "docs" / "_ext" / "xplant_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _attributes(cls):
    """The names a class's numpydoc Attributes section documents."""
    from numpydoc.docscrape import NumpyDocString
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = NumpyDocString(inspect.cleandoc(cls.__doc__ or ""))
    return sorted({n.strip() for p in parsed["Attributes"] for n in p.name.split(",") if n.strip()})


def surface():
    """``{"modules": {module: [names]}, "attributes": {module.Class: [names]}}``."""
    api = _api()
    pages = api.collect()
    modules = {m: sorted(e.name for e in page.entries + page.reexports)
               for m, page in pages.items()}
    attributes = {}
    for page in pages.values():
        for e in page.entries:
            if inspect.isclass(e.obj):
                attributes[f"{e.module}.{e.name}"] = _attributes(e.obj)
    return {"modules": modules, "attributes": attributes}


def test_the_public_names_and_fitted_attributes_are_the_snapshot():
    import pytest
    pytest.importorskip("numpydoc.docscrape")
    pytest.importorskip("torch")                 # the neural modules are public too
    want = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    got = surface()
    problems = []
    for kind in ("modules", "attributes"):
        for key in sorted(set(want[kind]) | set(got[kind])):
            a, b = set(want[kind].get(key, [])), set(got[kind].get(key, []))
            if key not in got[kind]:
                problems.append(f"{kind[:-1]} {key} is gone")
            elif key not in want[kind]:
                problems.append(f"{kind[:-1]} {key} is new: {sorted(b)}")
            elif a != b:
                problems.append(f"{key}: gone {sorted(a - b)}, new {sorted(b - a)}")
    assert not problems, ("the public surface moved (record the decision in the changelog, "
                          "then: python tests/docs/test_public_surface.py --write):\n"
                          + "\n".join(problems))


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    SNAPSHOT.write_text(json.dumps(surface(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
