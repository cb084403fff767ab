"""The code in the documentation runs, and its command lines parse.

* Every ```python block of README.md and of the site's Markdown pages
  (``docs/**/*.md`` less the pages ``docs/conf.py`` excludes) runs, each page
  in a fresh namespace shared by its blocks in order, in a temporary working
  folder, each block within ``BLOCK_BUDGET_S`` seconds (marked slow: the
  blocks fit models). A block whose first
  line is ``# needs: <what>`` is not run (it needs data or hardware outside
  the package); ``test_blocks_that_need_more_are_listed`` reports each one as
  a skip, with what it needs.
* Every line of a ```console, ```bash, ```sh or ```shell block that starts
  with ``xplant `` (or ``$ xplant ``) is parsed by the command line's own
  argparse parser, routed as ``xplant`` routes it (``xplant train`` without
  ``--config`` is ``xplant fit``). Placeholders such as FILE or DIR are fine:
  parsing opens no file.
"""

import ast
import contextlib
import io
import re
import shlex
import signal
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK_BUDGET_S = 90          # a block is meant to take well under a minute on 2 cores
SHELL_LANGUAGES = {"console", "bash", "sh", "shell", "shell-session"}
PYTHON_LANGUAGES = {"python", "py", "python3"}
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")


def site_pages():
    """README.md and the Markdown pages of the site, relative to the repository root."""
    conf = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    excluded = set()
    for node in conf.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SUPERSEDED_PAGES"
                                                for t in node.targets):
            excluded = {ast.literal_eval(e) for e in node.value.elts}
    pages = [ROOT / "README.md"]
    for path in sorted((ROOT / "docs").rglob("*.md")):
        rel = path.relative_to(ROOT / "docs")
        if rel.parts[0].startswith("_") or rel.parts[0] == "auto_examples" or str(rel) in excluded:
            continue
        pages.append(path)
    return [p.relative_to(ROOT).as_posix() for p in pages]


def code_blocks(text):
    """``[(language, first line number, code)]`` of the fenced blocks of a Markdown text."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        info = m["info"].strip()
        words = info.split()
        # MyST directives: ```{code-block} python
        language = (words[1] if words and words[0].startswith("{") and len(words) > 1
                    else words[0] if words else "").lower()
        fence, indent, body, start = m["fence"], len(m["indent"]), [], i + 2
        i += 1
        while i < len(lines) and not re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        blocks.append((language, start, "\n".join(body) + "\n"))
        i += 1
    return blocks


def _needs(code):
    first = code.lstrip("\n").split("\n", 1)[0].strip()
    return first[len("# needs:"):].strip() if first.startswith("# needs:") else None


def python_blocks(page):
    return [(line, code) for language, line, code in
            code_blocks((ROOT / page).read_text(encoding="utf-8")) if language in PYTHON_LANGUAGES]


def _pages_with_python():
    return [page for page in site_pages() if python_blocks(page)]


def _blocks_that_need_more():
    return [pytest.param(page, line, _needs(code), id=f"{page}:{line}")
            for page in site_pages() for line, code in python_blocks(page) if _needs(code)]


@contextlib.contextmanager
def _budget(seconds, where):
    def expired(signum, frame):
        raise TimeoutError(f"{where} ran past its budget of {seconds} s: documentation "
                           "examples run at a small budget (bundled data, max_epochs=1, "
                           "a few dozen documents)")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.slow                      # the blocks fit models (a few dozen documents, one epoch)
@pytest.mark.parametrize("page", _pages_with_python())
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                # files a block writes land in a temporary folder
    namespace = {"__name__": "__docs__"}
    for line, code in python_blocks(page):
        if _needs(code) is not None:
            continue
        where = f"{page}, the block at line {line}"
        started = time.perf_counter()
        with _budget(BLOCK_BUDGET_S, where), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, f"{page}:{line}", "exec"), namespace)
        print(f"{where}: {time.perf_counter() - started:.1f} s")


@pytest.mark.parametrize("page, line, needs", _blocks_that_need_more())
def test_blocks_that_need_more_are_listed(page, line, needs):
    assert needs, f"{page}:{line}: '# needs:' names nothing"
    pytest.skip(f"{page}:{line} is not run; it needs {needs}")


# --- command lines ---------------------------------------------------------------------

def command_lines(text):
    """``[(line number, argv after 'xplant')]`` of the xplant commands in shell blocks."""
    out = []
    for language, start, code in code_blocks(text):
        if language not in SHELL_LANGUAGES:
            continue
        logical, first = "", None
        for offset, raw in enumerate(code.splitlines()):
            first = start + offset if not logical else first
            logical += raw.rstrip()
            if logical.endswith("\\"):                  # a continued line
                logical = logical[:-1] + " "
                continue
            line, logical = logical.strip(), ""
            if line.startswith("$ "):
                line = line[2:].lstrip()
            if line.startswith("xplant "):
                out.append((first, command_argv(line)))
    return out


def command_argv(line):
    """The arguments of one ``xplant ...`` line, up to a pipe, redirection or ``;``."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = []
    for word in lexer:
        if word and set(word) <= set("|&;<>"):
            break
        words.append(word)
    return words[1:]


def parse_command(argv):
    """Parse ``xplant <argv>`` with the real parsers; return None or argparse's message."""
    from xplant.app import cli

    name, args = cli.route(argv)
    parser = cli.build_train_parser() if name == "train" else cli.build_parser()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(args)
    except SystemExit as exc:
        return None if exc.code == 0 else (err.getvalue().strip() or f"exit {exc.code}")
    return None


def _all_command_lines():
    return [pytest.param(page, line, argv, id=f"{page}:{line}")
            for page in site_pages()
            for line, argv in command_lines((ROOT / page).read_text(encoding="utf-8"))]


@pytest.mark.parametrize("page, line, argv", _all_command_lines())
def test_command_lines_parse(page, line, argv):
    error = parse_command(argv)
    assert error is None, f"{page}:{line}: xplant {shlex.join(argv)}\n{error}"


def test_the_checks_read_blocks_and_refuse_bad_command_lines():
    text = "\n".join([
        "Text.", "", "```python", "x = 1", "```", "", "- item", "",
        "  ```console", "  $ xplant fit --model tfidf-svm \\", "      --train FILE --output DIR",
        "  $ xplant predict --model DIR --input FILE --output out.jsonl | head", "  ```",
        "```bash", "xplant run --no-such-option  # a comment", "xplant train --config cfg.yaml",
        "xplant train --model tfidf-svm --output DIR", "pip install xplant", "```",
    ])
    assert [(lang, line) for lang, line, _ in code_blocks(text)] == [
        ("python", 4), ("console", 10), ("bash", 15)]
    lines = command_lines(text)
    assert [line for line, _ in lines] == [10, 12, 15, 16, 17]
    assert lines[0][1] == ["fit", "--model", "tfidf-svm", "--train", "FILE", "--output", "DIR"]
    assert lines[1][1][-2:] == ["--output", "out.jsonl"]              # the pipe is cut
    assert [parse_command(argv) is None for _, argv in lines] == [True, True, False, True, True]
    assert "unrecognized arguments: --no-such-option" in parse_command(lines[2][1])
    assert "expected one argument" in parse_command(["train", "--config"])
    assert _needs("# needs: a GPU\nimport torch\n") == "a GPU"
    assert _needs("import torch\n") is None
