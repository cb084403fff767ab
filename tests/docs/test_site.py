"""The documentation site builds with warnings as errors, and says what it should.

One build per module (slow: it runs the gallery's examples): ``sphinx-build
-b html -W --keep-going -n -j auto`` (as ``make docs``) on a copy of
``docs/`` and ``examples/`` in a temporary folder, so that nothing generated
lands in the checkout and every example runs afresh. Any warning, a page
that stops building or an example that stops running fails it. Without the
``docs`` extra (Sphinx and its extensions) the module is skipped.

The built pages are then read as a reader's browser reads them: formulas
with balanced braces, flags with two hyphens, links that lead somewhere,
nothing loaded from another host, every page in the navbar and no empty
sidebar, and a figure drawn by each example.
"""

import importlib.util
import inspect
import os
import posixpath
import re
import shutil
import subprocess
import sys
import time
from html import unescape

import pytest

pytestmark = pytest.mark.slow

#: The modules of the ``docs`` extra that the build imports (sphinx-mathjax-offline's
#: folder name is not an identifier, so it is looked up, not imported).
DOCS_EXTRA = ("sphinx", "numpydoc", "myst_parser", "sphinx_gallery", "sphinxarg",
              "pydata_sphinx_theme", "matplotlib", "sphinx-mathjax-offline")

GENERATED = ("_build", "auto_examples", os.path.join("api", "generated"), "sg_execution_times.rst")


@pytest.fixture(scope="module")
def site(repo_root, tmp_path_factory):
    """The built HTML folder (and the build's wall time in seconds)."""
    missing = [name for name in DOCS_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the docs extra is not installed ({', '.join(missing)} missing)")
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


# -- the pages as a reader sees them ---------------------------------------------------

def _pages(site):
    """Every HTML page of the site (not the copied sources or static files)."""
    return [p for p in sorted(site.rglob("*.html"))
            if p.relative_to(site).parts[0] not in ("_static", "_sources", "_images")]


def _visible_text(html):
    """The text a reader sees: no script, style or tag."""
    return unescape(re.sub(r"<[^>]+>", "", re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)))


def _formulas(html):
    """The TeX of each formula MathJax typesets: display ``\\[...\\]`` and inline ``\\(...\\)``."""
    out = []
    for m in re.finditer(r'<(div|span) class="math[^"]*">(.*?)</\1>', html, re.S):
        tex = unescape(m.group(2)).strip()
        out.append(re.sub(r"^\\\[|\\\]$|^\\\(|\\\)$", "", tex).strip())
    return out


def _unbalanced(tex):
    depth = 0
    for ch in re.sub(r"\\[{}]", "", tex):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return True
    return depth != 0


def test_every_metric_formula_has_balanced_braces(site):
    pages = sorted((site / "api" / "generated").glob("xplant.metrics.*.html"))
    found, problems = {}, []
    for page in pages:
        texs = _formulas(page.read_text(encoding="utf-8"))
        found[page.stem] = texs
        problems += [f"{page.name}: {tex!r}" for tex in texs if _unbalanced(tex)]
    assert not problems, "formulas with unbalanced braces:\n" + "\n".join(problems)
    for name in ("ndcg_at_k", "psp_at_k", "psndcg_at_k", "mean_average_precision", "precision_at_k",
                 "recall_at_k", "r_precision_at_k", "inverse_propensity"):
        assert found.get(f"xplant.metrics.{name}"), f"the {name} page shows no formula"
    # the two formulas of nDCG are typeset, the first with its fraction closed
    ndcg = found["xplant.metrics.ndcg_at_k"]
    assert any(r"\frac{y_{\pi(r)}}{\log_2(r + 1)}" in tex for tex in ndcg), ndcg
    assert sum(len(texs) for texs in found.values()) >= 15


def test_formula_check_finds_the_old_broken_brace():
    html = ('<div class="math notranslate nohighlight">\n\\[DCG@k = \\sum_{r=1}^{k} '
            '\\frac{y_{\\pi(r)}{\\log_2(r + 1)}\\]</div> and <span class="math notranslate '
            'nohighlight">\\(\\#\\{r\\}\\)</span>')
    assert _formulas(html) == [r"DCG@k = \sum_{r=1}^{k} \frac{y_{\pi(r)}{\log_2(r + 1)}", r"\#\{r\}"]
    assert [_unbalanced(t) for t in _formulas(html)] == [True, False]


#: An option as a copied flag: an en dash (smart quotes' "--") where the text has a space,
#: a bracket or a slash before it.
_DASHED_OPTION = re.compile(r"(?<![\w–-])–[a-z][a-z0-9-]*")


def test_no_option_is_preceded_by_an_en_dash(site):
    cli = _visible_text((site / "cli.html").read_text(encoding="utf-8"))
    for option in ("--config", "--output", "--data-home", "--id-field", "--models", "--overwrite"):
        assert option in cli, f"the command-line reference does not show {option}"
    assert "xplant train --config" in cli
    problems = []
    for page in _pages(site):
        text = _visible_text(page.read_text(encoding="utf-8"))
        problems += [f"{page.relative_to(site)}: {m.group(0)}" for m in _DASHED_OPTION.finditer(text)]
    assert not problems, "options shown with an en dash:\n" + "\n".join(problems[:40])
    assert _DASHED_OPTION.findall("with –config cfg.yaml; token–label; (–output); 1–3") == \
        ["–config", "–output"]


def _hrefs(html):
    return re.findall(r'\shref="([^"]*)"', html)


def _non_url(href):
    """A link target with a scheme that is no web or mail address (``FILE:ROW``)."""
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", href)) and not re.match(r"^(https?|mailto):", href)


def test_no_link_points_at_a_non_url(site):
    problems, links = [], 0
    for page in _pages(site):
        hrefs = _hrefs(page.read_text(encoding="utf-8"))
        links += len(hrefs)
        problems += [f"{page.relative_to(site)}: href={h!r}" for h in hrefs if _non_url(h)]
    assert not problems, "\n".join(problems)
    assert links > 10000
    cli = (site / "cli.html").read_text(encoding="utf-8")
    assert "FILE:ROW" in _visible_text(cli)            # the --id-field help, as text
    assert [h for h in ("FILE:ROW", "file:///x", "https://a.b/c", "guide/cli.html#x", "#top",
                        "mailto:a@b.c") if _non_url(h)] == ["FILE:ROW", "file:///x"]


def _loaded(html):
    """The address of each script and each ``<link>`` (stylesheets, preloads, icons)."""
    out = []
    for tag in re.findall(r"<(?:script|link)\b[^>]*>", html):
        m = re.search(r'\b(?:src|href)="([^"]*)"', tag)
        if m:
            out.append(m.group(1))
    return out


def test_no_page_loads_a_script_or_stylesheet_from_another_host(site):
    problems = []
    for page in _pages(site):
        problems += [f"{page.relative_to(site)}: {url}" for url in _loaded(page.read_text(encoding="utf-8"))
                     if re.match(r"^([a-z][a-z0-9+.-]*:)?//", url, re.I)]
    assert not problems, "\n".join(problems[:40])
    # the formulas' MathJax is the site's own copy
    design = (site / "design.html").read_text(encoding="utf-8")
    mathjax = [u for u in _loaded(design) if "mathjax" in u.lower()]
    assert mathjax == ["_static/mathjax/tex-chtml.js"], mathjax
    assert (site / "_static" / "mathjax" / "tex-chtml.js").stat().st_size > 100_000
    assert (site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    assert _formulas(design), "the design page shows no formula"


def test_api_pages_show_no_literal_double_backticks(site):
    problems = []
    for page in sorted((site / "api" / "generated").glob("*.html")):
        html = re.sub(r"<pre\b.*?</pre>", "", page.read_text(encoding="utf-8"), flags=re.S)
        text = _visible_text(html)
        problems += [f"{page.name}: ...{text[max(0, i - 40):i + 40]!r}..."
                     for i in [m.start() for m in re.finditer("``", text)]]
    assert not problems, "\n".join(problems)


def test_api_pages_cite_pages_not_source_paths(site):
    problems = []
    for page in [site / "cli.html", *sorted((site / "api" / "generated").glob("*.html"))]:
        text = _visible_text(page.read_text(encoding="utf-8"))
        problems += [f"{page.name}: {m.group(0)}" for m in re.finditer(r"\bdocs/[\w/.-]+\.md\b", text)]
    assert not problems, "\n".join(problems)


_TOP_PAGES = ("getting-started", "guide/index", "api/index", "cli", "auto_examples/index",
              "benchmarks/index", "design", "changelog")


def test_every_top_level_page_is_in_the_navbar(site):
    for name in ("index", "getting-started", "benchmarks/results", "api/generated/xplant.metrics"):
        html = (site / f"{name}.html").read_text(encoding="utf-8")
        m = re.search(r'<ul class="bd-navbar-elements navbar-nav">(.*?)</ul>', html, re.S)
        assert m, f"{name}: no navbar"
        navbar = m.group(1)
        assert "dropdown" not in navbar, f"{name}: the navbar hides pages under a menu"
        for target in _TOP_PAGES:
            if target == name:          # the page itself: its own item, marked current
                assert 'href="#" aria-current="page"' in navbar, f"{name}: not marked in the navbar"
                continue
            href = posixpath.relpath(f"{target}.html", posixpath.dirname(name) or ".")
            assert f'href="{href}"' in navbar, f"{name}: {target} is not in the navbar"
        assert navbar.count('class="nav-item') == len(_TOP_PAGES), name


def _primary_sidebar(html):
    m = re.search(r'<div id="pst-primary-sidebar" class="([^"]*)">(.*?)<main', html, re.S)
    assert m, "no primary sidebar block"
    return m.group(1), m.group(2)


def test_no_page_shows_an_empty_sidebar(site):
    for name in ("getting-started", "design", "changelog", "cli"):
        classes, _ = _primary_sidebar((site / f"{name}.html").read_text(encoding="utf-8"))
        assert "hide-on-wide" in classes, f"{name} shows an empty left sidebar"
    for name in ("guide/cli", "benchmarks/results", "auto_examples/plot_baseline"):
        classes, content = _primary_sidebar((site / f"{name}.html").read_text(encoding="utf-8"))
        assert "hide-on-wide" not in classes and "<a " in content, f"{name} lost its section navigation"


def test_every_example_draws_a_figure(site):
    examples = sorted(p.stem for p in (site.parent / "examples").glob("plot_*.py"))
    assert len(examples) >= 4
    index = (site / "auto_examples" / "index.html").read_text(encoding="utf-8")
    for example in examples:
        html = (site / "auto_examples" / f"{example}.html").read_text(encoding="utf-8")
        image = f"sphx_glr_{example}_001.png"
        assert image in html and "sphx-glr-single-img" in html, f"{example} draws no figure"
        assert (site / "_images" / image).stat().st_size > 5_000
        assert f"sphx_glr_{example}_thumb.png" in index
    thumbs = [(site / "_images" / f"sphx_glr_{e}_thumb.png").read_bytes() for e in examples]
    assert len(set(thumbs)) == len(thumbs), "two examples share a thumbnail (the placeholder)"


def test_benchmark_pages_say_first_which_table_is_current(site):
    for name in ("index", "results", "shortlist", "evidence", "speed"):
        html = (site / "benchmarks" / f"{name}.html").read_text(encoding="utf-8")
        article = html[html.index('<article class="bd-article">'):]
        first = _visible_text(article)[:800]
        assert "Which table is current" in first, f"benchmarks/{name} does not open with the current table"
    index = _visible_text((site / "benchmarks" / "index.html").read_text(encoding="utf-8"))
    assert "README" not in index
