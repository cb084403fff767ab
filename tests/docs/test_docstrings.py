"""Every public name has a numpydoc docstring that describes every parameter.

Public names are those of every ``__all__`` of a public xplant module, as the
API reference lists them (``docs/_ext/xplant_api.py``). For a class: the
parameters of its ``__init__`` (in the class docstring, scikit-learn style)
and of every method its API page shows; for a function: its parameters. A
parameter counts as described when the Parameters (or Other Parameters)
section names it with a non-empty description: a type alone is not enough.
A documented parameter that the signature lacks (and no ``**kwargs`` takes)
is an offender too; parameters whose name starts with ``_`` are private. Constants need a ``#:`` comment where they are defined.

Every formula of a public function's docstring (``.. math::`` blocks and ``:math:``
roles) is TeX with balanced braces, as written in the source: no docstring is rewritten
at import time in a way that could unbalance them.
"""

import dataclasses
import inspect
import re
import warnings

import pytest


def _parameters(func):
    """Names the docstring must describe: ``x``, ``*args``, ``**kwargs`` (no self/cls)."""
    names, var_keyword = [], False
    method = "." in getattr(func, "__qualname__", "")       # defined in a class
    for i, p in enumerate(inspect.signature(func).parameters.values()):
        if (method and i == 0 and p.name in ("self", "cls")) or p.name.startswith("_"):
            continue                            # the instance, and private knobs of tests
        if p.kind is p.VAR_POSITIONAL:
            names.append("*" + p.name)
        elif p.kind is p.VAR_KEYWORD:
            names.append("**" + p.name)
            var_keyword = True
        else:
            names.append(p.name)
    return names, var_keyword


def _described(doc, sections=("Parameters", "Other Parameters")):
    """{parameter name: has a description} of a docstring's Parameters sections."""
    # numpydoc comes with the docs extra; without it the parameter checks skip, the
    # formula checks below still run
    docscrape = pytest.importorskip("numpydoc.docscrape")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # numpydoc warns on unknown sections
        parsed = docscrape.NumpyDocString(inspect.cleandoc(doc))
    out = {}
    for p in [p for section in sections for p in parsed[section]]:
        described = bool("".join(p.desc).strip())
        for name in p.name.split(","):
            name = name.strip()
            if name:
                out[name] = out.get(name, False) or described
    return out


def check_docstring(label, doc, func, dataclass=False):
    """The offences of one docstring against the signature of ``func``.

    A dataclass's fields are its parameters and its attributes: either
    section may describe them.
    """
    if not (doc or "").strip():
        return [f"{label}: no docstring"]
    names, var_keyword = _parameters(func) if func is not None else ([], False)
    described = _described(doc, ("Parameters", "Other Parameters")
                           + (("Attributes",) if dataclass else ()))
    problems = []
    for name in names:
        key = name if name in described else name.lstrip("*")
        if key not in described:
            problems.append(f"{label}: parameter {name} is not documented")
        elif not described[key]:
            problems.append(f"{label}: parameter {name} has a type but no description")
    plain = {n.lstrip("*") for n in names}
    for name in described:
        if name.lstrip("*") not in plain and not var_keyword:
            problems.append(f"{label}: documents {name}, which the signature lacks")
    return problems


def offenders(xplant_api):
    problems = []
    for entry in xplant_api.documented_entries():
        label = entry.fullname
        if entry.kind == "data":
            if not entry.doc:
                problems.append(f"{label}: no '#:' comment where it is defined")
        elif entry.kind == "function":
            problems += check_docstring(label, entry.obj.__doc__, entry.obj)
        else:
            cls = entry.obj
            init = xplant_api.own_init(cls)
            doc = cls.__doc__
            if init is not None and "Parameters" not in (doc or "") and init.__doc__:
                doc = init.__doc__            # parameters documented on __init__ itself
            problems += check_docstring(label, doc, init, dataclasses.is_dataclass(cls))
            for name in xplant_api.api_methods(cls):
                raw = inspect.getattr_static(cls, name)
                func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
                problems += check_docstring(f"{label}.{name}", func.__doc__,
                                            getattr(cls, name) if isinstance(raw, classmethod) else func)
    return problems


def test_every_public_parameter_is_described(xplant_api):
    problems = offenders(xplant_api)
    assert not problems, f"{len(problems)} docstring offences:\n" + "\n".join(problems)


def test_the_check_finds_missing_and_bare_parameters():
    def f(a, b, *args, c=1, **kwargs):
        """Summary.

        Parameters
        ----------
        a : int
            Described.
        b : int
        ghost : str
            Not in the signature, but ``**kwargs`` takes it.
        """

    problems = check_docstring("f", f.__doc__, f)
    assert problems == ["f: parameter b has a type but no description",
                        "f: parameter *args is not documented",
                        "f: parameter c is not documented",
                        "f: parameter **kwargs is not documented"]

    def g(a):
        """Summary.

        Parameters
        ----------
        a, b : int
            Both described; ``b`` is not a parameter.
        """

    assert check_docstring("g", g.__doc__, g) == ["g: documents b, which the signature lacks"]
    assert check_docstring("h", None, g) == ["h: no docstring"]


_MATH_ROLE = re.compile(r":math:`([^`]*)`")


def formulas(doc):
    """The TeX of each ``.. math::`` block and ``:math:`` role of a docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)\.\. math::(.*)$", lines[i])
        if m:
            indent, tex = len(m.group(1)), [m.group(2)]
            i += 1
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                tex.append(lines[i])
                i += 1
            out.append("\n".join(tex).strip())
            continue
        i += 1
    return out + _MATH_ROLE.findall(" ".join(lines))


def unbalanced(tex):
    """Where the braces of ``tex`` do not pair up (``\\{`` and ``\\}`` are literal braces): "" if they do."""
    depth = 0
    for i, ch in enumerate(re.sub(r"\\[{}]", "..", tex)):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return f"a closing brace without its opening one at character {i}"
    return f"{depth} brace(s) left open" if depth else ""


def test_every_formula_of_a_public_docstring_has_balanced_braces(xplant_api):
    import xplant.metrics as metrics

    checked, problems = {}, []
    for entry in xplant_api.documented_entries():
        if entry.kind == "function":
            checked[entry.fullname] = formulas(entry.obj.__doc__)
    for label, texs in checked.items():
        problems += [f"{label}: {why} in {tex!r}" for tex in texs if (why := unbalanced(tex))]
    assert not problems, "\n".join(problems)
    # the metric functions whose formulas are checked: one display formula at least each
    for name in ("precision_at_k", "recall_at_k", "r_precision_at_k", "ndcg_at_k", "psp_at_k",
                 "psndcg_at_k", "mean_average_precision", "inverse_propensity"):
        texs = formulas(getattr(metrics, name).__doc__)
        assert texs and any("\\frac" in t for t in texs), name
    # the nDCG numerator closes its subscript before the denominator opens
    assert r"\frac{y_{\pi(r)}}{\log_2(r + 1)}" in formulas(metrics.ndcg_at_k.__doc__)[0]


def test_the_brace_check_finds_what_the_old_docstrings_had():
    assert formulas("S.\n\n.. math::\n    a = \\frac{1}{2}\n\nText :math:`b_{i}`.") == \
        ["a = \\frac{1}{2}", "b_{i}"]
    assert unbalanced(r"\frac{y_{\pi(r)}{\log_2(r + 1)}") == "1 brace(s) left open"
    assert unbalanced(r"\#\{\text{hits}\}") == ""
    assert unbalanced("a}") == "a closing brace without its opening one at character 1"
