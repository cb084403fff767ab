"""xplant's public API as the documentation and its tests see it.

The public API is every name in the ``__all__`` of a public module of
xplant (no path component starting with ``_``): the packages
``xplant``, ``xplant.metrics``, ... and public modules such as
``xplant.neural.losses``. A new public package appears in the API
reference by defining ``__all__``; nothing here lists packages.

Each class and function is documented once, on the page of its *home*: the
listing module whose name is the longest prefix of the object's
``__module__`` (``MIGRelevance`` lives in ``xplant.relevance`` and is
re-exported by ``xplant``). The other listing modules link to it.

This module is imported by ``docs/conf.py`` (through the ``xplant_api``
Sphinx extension below) and by the tests of ``tests/docs``, so the pages
and the docstring test read one list.
"""

import ast
import functools
import importlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "xplant"

#: Methods of the scikit-learn and torch protocols: shown and checked even
#: when the class overrides a third-party base class's method of that name.
PROTOCOL_METHODS = frozenset({
    "fit", "partial_fit", "predict", "predict_proba", "predict_log_proba", "decision_function",
    "transform", "fit_transform", "inverse_transform", "score", "split", "get_n_splits",
    "forward",
})


@dataclass
class Entry:
    """One public name: where it is listed, what it is and where it is documented."""

    module: str                 # the module whose __all__ lists it
    name: str
    obj: object
    kind: str                   # "class", "function" or "data"
    home: str = ""              # the module whose page documents it
    doc: str = ""               # data only: the ``#:`` comment of its definition

    @property
    def fullname(self):
        return f"{self.home}.{self.name}"


@dataclass
class Page:
    """The API page of one public module."""

    module: str
    entries: list = field(default_factory=list)     # documented here
    reexports: list = field(default_factory=list)   # documented at their home


def _defines_all(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def public_modules(package=PACKAGE):
    """Names of the public modules of ``package`` that define ``__all__``, sorted.

    Read from the source files (nothing is imported to find them): a module
    is public when no component of its dotted name starts with ``_``.
    """
    root = Path(importlib.util.find_spec(package).origin).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts) or not _defines_all(path):
            continue
        names.append(".".join(parts))
    return sorted(names)


def _kind(obj):
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "data"


def _data_doc(module, name):
    """The ``#:`` comment (or docstring) of ``name`` where ``module`` defines or imports it."""
    from sphinx.pycode import ModuleAnalyzer

    seen = set()
    while module not in seen:
        seen.add(module)
        analyzer = ModuleAnalyzer.for_module(module)
        docs = analyzer.find_attr_docs()
        if ("", name) in docs:
            return "\n".join(docs[("", name)]).strip()
        spec = importlib.util.find_spec(module)
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        package = module if spec.origin.endswith("__init__.py") else module.rpartition(".")[0]
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module
                break
    return ""


def _home(obj, listed_in):
    """The listing module that documents ``obj`` (see the module docstring)."""
    origin = getattr(obj, "__module__", "") or ""
    prefixes = [m for m in listed_in if origin == m or origin.startswith(m + ".")]
    if prefixes:
        return max(prefixes, key=len)
    others = [m for m in listed_in if m != PACKAGE]
    return sorted(others or listed_in)[0]


def collect(package=PACKAGE):
    """Every public name of ``package``: ``{module: Page}`` in module order."""
    pages = {m: Page(m) for m in public_modules(package)}
    by_object = {}          # id of a class or function -> [Entry, ...] (one per listing)
    for m in pages:
        mod = importlib.import_module(m)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                continue
            entry = Entry(m, name, obj, _kind(obj))
            if entry.kind == "data":
                entry.home = m
                entry.doc = _data_doc(m, name)
                pages[m].entries.append(entry)
            else:
                by_object.setdefault(id(obj), []).append(entry)
    for entries in by_object.values():
        home = _home(entries[0].obj, [e.module for e in entries])
        for e in entries:
            e.home = home
            (pages[e.module].entries if e.module == home else pages[e.module].reexports).append(e)
    for page in pages.values():
        page.entries.sort(key=lambda e: e.name.lower())
        page.reexports.sort(key=lambda e: e.name.lower())
    return pages


def documented_entries(package=PACKAGE):
    """Every documented class, function and constant once, at its home."""
    return [e for page in collect(package).values() for e in page.entries]


def api_methods(cls):
    """Public methods of an xplant class that its API page shows and the docstring test checks.

    Methods defined in xplant (the class or an xplant base), not properties;
    overrides of a third-party base class's method (skorch's ``get_loss``,
    scikit-learn's ``set_params``) belong to that library's API and are left
    out, except the protocol methods of :data:`PROTOCOL_METHODS`.
    """
    foreign = [b for b in cls.__mro__ if not b.__module__.startswith(PACKAGE + ".")
               and b.__module__ != PACKAGE]
    names = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, name)
        func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
        if not inspect.isfunction(func) or not (func.__module__ or "").startswith(PACKAGE):
            continue
        if name not in PROTOCOL_METHODS and any(name in vars(b) for b in foreign):
            continue
        names.append(name)
    return names


def own_init(cls):
    """``cls.__init__`` when xplant defines it (its parameters are the class's), else None."""
    init = getattr(cls, "__init__", None)
    if inspect.isfunction(init) and (init.__module__ or "").startswith(PACKAGE):
        return init
    return None


# --- the Sphinx extension: one page per public module, written before Sphinx looks for pages ---

GENERATED = Path("api") / "generated"        # relative to the Sphinx source folder
_KIND_TITLES = (("class", "Classes"), ("function", "Functions"))


def _first_line(obj):
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def _underline(text, char):
    return f"{text}\n{char * len(text)}\n"


def _indent(text, spaces):
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else "" for line in text.splitlines())


def module_page(page):
    """The reST source of the API page of one public module."""
    out = [_underline(page.module, "="), f".. automodule:: {page.module}\n   :no-members:\n",
           f".. currentmodule:: {page.module}\n"]
    for kind, title in _KIND_TITLES:
        names = [e for e in page.entries if e.kind == kind]
        if names:
            out.append(_underline(title, "-"))
            out.append(".. autosummary::\n   :toctree: .\n   :nosignatures:\n")
            out.append("\n".join(f"   {e.name}" for e in names) + "\n")
    data = [e for e in page.entries if e.kind == "data"]
    if data:
        out.append(_underline("Constants", "-"))
        for e in data:
            out.append(f".. data:: {e.name}\n   :value: {e.obj!r}\n\n{_indent(e.doc, 3)}\n")
    if page.reexports:
        out.append(_underline("Also importable from here", "-"))
        out.append(f"Documented with their home module; ``from {page.module} import ...`` works too.\n")
        # per home module, so that the short references of each summary line resolve there
        for home in sorted({e.home for e in page.reexports}):
            out.append(f".. currentmodule:: {home}\n")
            out.append(".. autosummary::\n   :nosignatures:\n")
            out.append("\n".join(f"   {e.name}" for e in page.reexports if e.home == home) + "\n")
    return "\n".join(out)


def modules_table(pages):
    """The reST table and hidden toctree of the API index (``api/generated/modules.inc``)."""
    rows = [".. list-table::\n   :widths: 35 65\n   :header-rows: 1\n\n   * - Module\n     - Contents\n"]
    for m in pages:
        summary = _first_line(importlib.import_module(m)) or " "
        rows.append(f"   * - :doc:`{m} <generated/{m}>`\n     - {summary}\n")
    rows.append(".. toctree::\n   :hidden:\n\n" + "\n".join(f"   generated/{m}" for m in pages) + "\n")
    return "\n".join(rows)


def _write(path, text):
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_pages(srcdir):
    """Write the API pages under ``srcdir/api/generated``; return the autosummary context.

    Files of that folder that belong to no current page or stub (a renamed
    module, a removed name) are deleted, so a rename leaves no orphan page.
    """
    pages = collect()
    out = Path(srcdir) / GENERATED
    out.mkdir(parents=True, exist_ok=True)
    keep = {"modules.inc"}
    for page in pages.values():
        keep.add(f"{page.module}.rst")
        _write(out / f"{page.module}.rst", module_page(page))
        keep.update(f"{e.fullname}.rst" for e in page.entries if e.kind != "data")
    _write(out / "modules.inc", modules_table(pages))
    for path in out.iterdir():
        if path.is_file() and path.name not in keep:
            path.unlink()
    methods = {e.fullname: api_methods(e.obj) for page in pages.values() for e in page.entries
               if e.kind == "class"}
    return {"xplant_methods": methods}, type_aliases(pages)


def type_aliases(pages):
    """numpydoc aliases: the short name of each documented class or function -> its full name.

    So that ``TokenCorpus`` in a parameter's type links to its page; a name
    documented twice (two objects, one short name) gets no alias.
    """
    targets = {}
    for page in pages.values():
        for e in page.entries:
            if e.kind != "data":
                targets.setdefault(e.name, set()).add(e.fullname)
    return {name: full.pop() for name, full in targets.items() if len(full) == 1}


def _config_inited(app, config):
    context, aliases = write_pages(app.srcdir)
    config.autosummary_context = {**(config.autosummary_context or {}), **context}
    # before numpydoc reads its aliases (its handler runs at the default priority, 500)
    config.numpydoc_xref_aliases = {**aliases, **(config.numpydoc_xref_aliases or {})}


def defined_names(package=PACKAGE):
    """Every name xplant's source defines: ``{"file_format", "MIGRelevance.transform", ...}``.

    Top-level functions, classes and assignments of every module, and the
    methods of its classes, as short (``Class.method``) and full
    (``xplant.datasets._user.file_format``) names; read from the source.
    """
    root = Path(importlib.util.find_spec(package).origin).parent
    names = set()
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names.add(module)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            found = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.append(node.name)
                if isinstance(node, ast.ClassDef):
                    found += [f"{node.name}.{n.name}" for n in node.body
                              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            elif isinstance(node, ast.Assign):
                found += [t.id for t in node.targets if isinstance(t, ast.Name)]
            names.update(found)
            names.update(f"{module}.{n}" for n in found)
    return names


@functools.lru_cache(maxsize=1)
def _defined_names():
    return frozenset(defined_names())


def _undocumented_reference(app, env, node, contnode):
    """A reference to an xplant name that the site does not document renders as code.

    Docstrings point developers to the private helpers and constants behind a
    rule (``xplant._labels.check_targets``, ``FALLBACK_WEIGHT``); the site
    documents only the public API, so such a reference has no page to link and
    shows its name unlinked. A reference to a name that xplant does not define
    at all (a typo, a renamed function) stays an error of the nitpicky build.
    """
    if node.get("refdomain") != "py":
        return None
    if node.get("reftarget", "").lstrip("~.") in _defined_names():
        return contnode
    return None


def setup(app):
    app.connect("config-inited", _config_inited, priority=400)
    app.connect("missing-reference", _undocumented_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
