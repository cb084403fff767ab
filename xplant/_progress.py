"""Progress of long steps: a tqdm bar on a terminal, plain lines in a file or a pipe.

Written to a file or a pipe, progress is one line per step or epoch, with
no carriage-return redraws and no terminal colour codes (skorch's epoch
table colours the best values with ANSI codes; :func:`neural_progress_params`
replaces its sink and drops its batch bar there).
"""

import re
import sys
import time
from contextlib import contextmanager

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def is_terminal(stream=None):
    """Whether ``stream`` (default ``sys.stdout``) is an interactive terminal."""
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def strip_ansi(text):
    """``text`` without ANSI escape sequences.

    Examples
    --------
    >>> strip_ansi("\\x1b[36m0.3497\\x1b[0m")
    '0.3497'
    """
    return _ANSI.sub("", str(text))


def plain_sink(text):
    """Print ``text`` without colour codes or carriage returns, then flush."""
    print(strip_ansi(text).replace("\r", ""), flush=True)


def neural_progress_params(verbose, *, planter=False, terminal=None):
    """skorch parameters of a neural estimator for this output.

    Parameters
    ----------
    verbose : int
        0: nothing to set (skorch prints nothing).
    planter : bool
        For :class:`~xplant.neural.AttentionPlanter` (no batch bar).
    terminal : bool or None
        Whether stdout is a terminal (default: ask it).

    Returns
    -------
    dict
        ``{}`` on a terminal (skorch's colours and tqdm bar); otherwise the
        epoch table's sink replaced by :func:`plain_sink` and the batch bar
        removed.
    """
    if not verbose or (is_terminal() if terminal is None else terminal):
        return {}
    params = {"callbacks__print_log__sink": plain_sink}
    if not planter:
        params["callbacks__progress"] = None
    return params


@contextmanager
def step(name, verbose=1, *, announce=False):
    """Report a step's duration in one flushed line: ``name: done in 1.2 s``.

    ``announce=True`` (long steps) also prints ``name ...`` when it starts,
    so a piped log shows where a run is.
    """
    if verbose and announce:
        print(f"{name} ...", flush=True)
    start = time.perf_counter()
    yield
    if verbose:
        print(f"{name}: done in {time.perf_counter() - start:.1f} s", flush=True)


def steps(iterable, desc, *, total=None, verbose=1, every=1):
    """Iterate with progress: a tqdm bar on a terminal, one line per item elsewhere.

    Parameters
    ----------
    iterable : iterable
    desc : str
        What the steps are (``"TF-IDF + SVM: C on dev"``).
    total : int or None
    verbose : int
        0: no output at all.
    every : int, default=1
        Off a terminal, print a line every ``every`` items (and after the last).

    Yields
    ------
    The items of ``iterable``.
    """
    if not verbose:
        yield from iterable
        return
    if is_terminal():
        from tqdm.auto import tqdm
        yield from tqdm(iterable, desc=desc, total=total)
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    start = time.perf_counter()
    for i, item in enumerate(iterable, 1):
        yield item
        if i % max(1, int(every)) == 0 or i == total:
            print(f"{desc}: {i}/{total if total is not None else '?'} done, "
                  f"{time.perf_counter() - start:.1f} s", flush=True)


#: Environment variable set by ``--quiet``; child processes inherit it.
QUIET_ENV = "XPLANT_QUIET"


def quiet():
    """Whether ``--quiet`` is in force (this process or the one that started it)."""
    import os
    return os.environ.get(QUIET_ENV) == "1"


@contextmanager
def native_output():
    """Tame what native libraries (Omikuji's Rust progress bars) write to fds 1 and 2.

    On a terminal, without ``--quiet``, nothing changes. Otherwise the
    output is caught in a temporary file; under ``--quiet`` it is dropped,
    else each line is written to stderr as its last carriage-return
    segment, without colour codes: one plain line per step.
    """
    import os
    import tempfile
    if is_terminal(sys.stderr) and not quiet():
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
        if not quiet():
            for line in text.split("\n"):            # not splitlines: it splits at \r too
                line = strip_ansi(line.rsplit("\r", 1)[-1]).rstrip()
                if line:
                    print(line, file=sys.stderr, flush=True)


@contextmanager
def no_progress_bars():
    """Hide transformers' progress bars (its "Loading weights" bar) within the block.

    Loading a model is not a step the user asked to watch: ``--quiet`` and
    ``verbose=0`` must stay silent. transformers' own setting is restored
    on exit, whatever it was. transformers is imported on entry (it is an
    optional dependency).
    """
    from transformers.utils import logging as hf_logging
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()
