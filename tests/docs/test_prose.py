"""The prose of the guide pages, as a newcomer reads it (read from the Markdown, no build).

* The first time a page mentions a documented module, class, function, method or
  constant (as a literal such as `PlantClassifier`, `xplant.fusion.fuse` or
  `xplant.metrics`), it links to the
  name's reference page with a MyST role (``{py:class}`~xplant.neural.PlantClassifier```);
  later mentions may stay literals. A call such as `PlantClassifier(shortlist="linear")`
  is code, not a mention.
* The prose of the guide and of getting started names no private module
  (``xplant._labels``, ``xplant.app._run.check_model_specs``) and no test file or test
  function: a reader cannot import the first, and the second is not on the site.
"""

import re

import pytest

#: Pages whose mentions must link: the guide, getting started, the design and the changelog.
LINKING_PAGES = ("docs/guide/*.md", "docs/getting-started.md", "docs/design.md", "docs/changelog.md")
#: Pages written for users, where internals must not be named.
USER_PAGES = ("docs/guide/*.md", "docs/getting-started.md")
#: Public names that the pages also use for something else (a Bunch field, a parameter).
# names that are also a field or a method of many objects (`save` and `load` of a
# PlantClassifier as of xplant.persistence): a bare literal is not taken for the function
ALSO_A_FIELD = {"label_frequency", "save", "load"}

_FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})")
_LITERAL = re.compile(r"(?<![`}\w])`([^`\n]+)`(?!`)")
_ROLE = re.compile(r"\{py:(?:mod|class|func|meth|data|obj|exc)\}`~?(?:[^`<]*<)?([^`>]+)>?`")


def _pages(repo_root, patterns):
    return sorted({p for pattern in patterns for p in repo_root.glob(pattern)})


def prose_lines(text):
    """(line number, line) of the page outside fenced blocks, headings left out."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            token = m.group(1)
            if fence is None:
                fence = token[0] * 3
            elif token.startswith(fence):
                fence = None
            continue
        if fence is None and not line.lstrip().startswith("#"):
            yield number, line


def reference_targets(xplant_api):
    """{literal as a page may write it: full name of its reference page}."""
    targets, short = {}, {}
    for e in xplant_api.documented_entries():
        targets[e.fullname] = e.fullname
        if e.module != e.home:
            targets[f"{e.module}.{e.name}"] = e.fullname
        short.setdefault(e.name, set()).add(e.fullname)
        if e.kind == "class":
            for method in xplant_api.api_methods(e.obj):
                targets[f"{e.fullname}.{method}"] = f"{e.fullname}.{method}"
                targets.setdefault(f"{e.name}.{method}", f"{e.fullname}.{method}")
    for name, full in short.items():
        if len(full) == 1 and name not in ALSO_A_FIELD:
            targets.setdefault(name, next(iter(full)))
    for module in xplant_api.public_modules():
        if module != "xplant":              # `xplant` on a page is the command line
            targets.setdefault(module, module)
    return targets


def unlinked_first_mentions(text, targets):
    """(line, literal) of each name whose first mention on the page is a plain literal."""
    linked, problems = set(), []
    for number, line in prose_lines(text):
        events = [(m.start(), "role", m.group(1)) for m in _ROLE.finditer(line)]
        for m in _LITERAL.finditer(line):
            before = line[:m.start()]
            if before.endswith("}") or before.count("[") > before.count("]"):
                continue                      # a role's own text, or a link's text
            events.append((m.start(), "literal", m.group(1)))
        for _, kind, name in sorted(events):
            full = targets.get(name) if kind == "literal" else name
            if full is None or full in linked:
                continue
            linked.add(full)
            if kind == "literal":
                problems.append((number, name))
    return problems


def test_the_guide_links_each_name_to_its_reference_page_at_its_first_mention(repo_root, xplant_api):
    targets = reference_targets(xplant_api)
    assert targets["PlantClassifier"] == "xplant.neural.PlantClassifier"
    problems, links = [], 0
    for page in _pages(repo_root, LINKING_PAGES):
        text = page.read_text(encoding="utf-8")
        links += len(_ROLE.findall(text))
        problems += [f"{page.relative_to(repo_root)}:{n}: `{name}` is not linked"
                     for n, name in unlinked_first_mentions(text, targets)]
    assert not problems, "\n".join(problems)
    assert links > 150                          # the guide links the reference throughout


def test_the_first_mention_check_reads_literals_roles_and_code():
    targets = {"PlantClassifier": "xplant.neural.PlantClassifier", "fuse": "xplant.fusion.fuse"}
    page = ("# `PlantClassifier`\n\n"
            "Fit `PlantClassifier(max_epochs=1)`, then {py:func}`~xplant.fusion.fuse` and `fuse`.\n"
            "```python\nPlantClassifier\n```\n"
            "[`PlantClassifier`](x.md) and `PlantClassifier`.\n")
    assert unlinked_first_mentions(page, targets) == [(7, "PlantClassifier")]


_PRIVATE = re.compile(r"\bxplant(?:[./][A-Za-z0-9_]+)*[./]_[A-Za-z]\w*|\btests/[\w/.:*-]*|"
                      r"\btest_\w+\.py\b(?:::\w+)?")


@pytest.mark.parametrize("pattern", USER_PAGES)
def test_the_guide_names_no_private_module_or_test(repo_root, pattern):
    problems = []
    for page in _pages(repo_root, [pattern]):
        for number, line in prose_lines(page.read_text(encoding="utf-8")):
            problems += [f"{page.relative_to(repo_root)}:{number}: {m.group(0)}"
                         for m in _PRIVATE.finditer(line)]
    assert not problems, "\n".join(problems)


def test_the_private_name_check_finds_modules_and_tests():
    text = ("One parser, `xplant._labels.check_targets`, in `xplant/neural/classifier/_io.py`; "
            "see `tests/cli/test_user_path.py::test_messages_name_*` and "
            "`test_fuse.py::test_oracle`; "
            "`test_source` is a field of results.json. "
            "Public: `xplant.neural.PlantClassifier`, `xplant/datasets/data/CODIESP_SOURCE.txt`.")
    assert [m.group(0) for m in _PRIVATE.finditer(text)] == [
        "xplant._labels", "xplant/neural/classifier/_io", "tests/cli/test_user_path.py::test_messages_name_*",
        "test_fuse.py::test_oracle"]
