"""The documentation site builds with warnings as errors, and says what it should.

One build per session (slow: it runs the gallery's examples): ``sphinx-build
-b html -W --keep-going -n -j auto`` (as ``make docs``) on a copy of
``docs/`` and ``examples/`` in a temporary folder, so that nothing generated
lands in the checkout and every example runs afresh. Any warning, a page
that stops building or an example that stops running fails it.
"""

import inspect
import os
import re
import shutil
import subprocess
import sys
import time
from html import unescape

import pytest

pytestmark = pytest.mark.slow

GENERATED = ("_build", "auto_examples", os.path.join("api", "generated"), "sg_execution_times.rst")


@pytest.fixture(scope="module")
def site(repo_root, tmp_path_factory):
    """The built HTML folder (and the build's wall time in seconds)."""
    work = tmp_path_factory.mktemp("site")
    shutil.copytree(repo_root / "docs", work / "docs",
                    ignore=lambda d, names: [n for n in names
                                             if os.path.relpath(os.path.join(d, n), repo_root / "docs")
                                             in GENERATED or n == "__pycache__"])
    shutil.copytree(repo_root / "examples", work / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    out = work / "html"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo_root), os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n",
                           "-j", "auto", "-q", str(work / "docs"), str(out)],
                          cwd=repo_root, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - started
    assert proc.returncode == 0, (f"the docs build failed (exit {proc.returncode}):\n"
                                  + (proc.stdout + proc.stderr)[-6000:])
    print(f"docs build: {seconds:.0f} s")
    return out


def _text(html):
    return unescape(re.sub(r"<[^>]+>", "", html)).strip()


def test_front_page_links_every_section(site):
    html = (site / "index.html").read_text(encoding="utf-8")
    for target in ("api/index.html", "cli.html", "auto_examples/index.html", "getting-started.html",
                   "guide/index.html", "benchmarks/index.html", "design.html", "changelog.html"):
        assert f'href="{target}' in html, f"the front page does not link {target}"


def test_plant_classifier_page_describes_every_parameter(site):
    from xplant import PlantClassifier

    html = (site / "api" / "generated" / "xplant.neural.PlantClassifier.html").read_text(encoding="utf-8")
    names = [p.name for p in inspect.signature(PlantClassifier.__init__).parameters.values()
             if p.name != "self" and p.kind is not p.VAR_KEYWORD]
    assert len(names) > 10
    for name in names:
        m = re.search(rf"<dt><strong>{re.escape(name)}</strong>.*?</dt>\s*<dd>(.*?)</dd>", html, re.S)
        assert m, f"the PlantClassifier page lists no parameter {name}"
        assert _text(m.group(1)), f"the PlantClassifier page does not describe {name}"


def test_every_public_module_has_a_page_and_the_examples_ran(site, xplant_api):
    for module in xplant_api.public_modules():
        assert (site / "api" / "generated" / f"{module}.html").is_file(), module
    printed = {"plot_pipeline_tour": "40 training documents, 20 codes",
               "plot_cross_validation": "fold 2: 20 documents",
               "plot_baseline": "reloaded model ranks the same: True",
               "plot_evidence_spans": "(document, code) pairs"}
    for example, text in printed.items():
        html = (site / "auto_examples" / f"{example}.html").read_text(encoding="utf-8")
        assert "sphx-glr-script-out" in html and text in unescape(html), \
            f"{example} does not show its output ({text!r})"


def test_cli_reference_lists_every_command(site):
    from xplant.app.cli import build_parser

    html = (site / "cli.html").read_text(encoding="utf-8")
    commands = build_parser()._subparsers._group_actions[0].choices
    for name, parser in commands.items():
        assert f"xplant {name}" in _text(html), f"the CLI reference lacks xplant {name}"
        for action in parser._actions:
            for option in action.option_strings:
                assert option in html, f"the CLI reference lacks xplant {name} {option}"
    assert "--output-dir" in html                       # xplant train --config's own parser
