"""The outputs a user names, checked before any work starts.

- :func:`check_output`: an output file is not an input, does not exist
  unless overwriting was asked for, and its folder is writable.
- :func:`check_model_output`: the folder a model is saved to is outside the
  data and, when it exists, a saved model that ``--overwrite`` may replace.
- :func:`prepare_run_folder`: a run folder is new or empty, or holds an
  earlier run that ``--resume`` continues or ``--overwrite`` replaces
  (:data:`RUN_ENTRIES`); without a name, a new unique folder is made.
- :func:`check_holds_no_input`: an output folder that holds an input is
  refused before anything in it is removed or replaced.

The files themselves are written by :mod:`xplant._files`.
"""

import os
import uuid
from datetime import datetime, timezone
from pathlib import Path

from ._files import remove_tree


def _same(a, b):
    """Whether ``a`` and ``b`` are one file or folder (links included); False if either is missing."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _forms(path):
    """``path`` with ``..`` folded (links kept), and resolved (links followed)."""
    path = Path(path)
    return {Path(os.path.abspath(path)), path.resolve()}


def check_holds_no_input(output, inputs, *, what="output folder", switch="--output"):
    """Refuse an output folder that is, or contains, a file or folder the job reads.

    The one check, before anything in ``output`` is removed or replaced
    (``--overwrite`` removes an earlier run's folders, ``--resume`` may
    replace ``models/<row>``, a refit replaces a model folder): an input
    inside would be lost. Paths are compared after folding ``..`` and after
    resolving links, both ways, so an input reached through a link into the
    output, or an output named through a link, is found too.

    Parameters
    ----------
    output : str or Path
        The folder to be written.
    inputs : sequence of str or Path or None
        Files and folders the job reads (None entries are skipped).
    what, switch : str
        How the message calls the output and the switch that names it.

    Raises
    ------
    ValueError
        Naming the input and the output, when an input is the output or
        lies inside it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "run").mkdir(); _ = (d / "run" / "train.jsonl").write_text("{}")
    >>> check_holds_no_input(d / "run", [d / "run" / ".." / "run" / "train.jsonl"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the output folder .../run holds the input .../train.jsonl; ...
    """
    outs = _forms(output)
    for inp in inputs:
        if inp is None or not str(inp):
            continue
        for form in _forms(inp):
            if any(form == o or o in form.parents for o in outs):
                raise ValueError(f"the {what} {output} holds the input {inp}; replacing or "
                                 "removing what is in it would destroy the input. Move the "
                                 f"input out of it, or choose another {switch}")


def check_output(path, *, inputs=(), overwrite=False, what="output"):
    """Check an output file the user names, before any work starts.

    Parameters
    ----------
    path : str or Path
        The output file.
    inputs : sequence of str or Path
        Files or folders the job reads. The output may be none of them,
        links included (``os.path.samefile``), nor lie inside an input folder.
    overwrite : bool, default=False
        Allow replacing an existing output.
    what : str
        How the messages call the output.

    Returns
    -------
    Path
        ``path``; its folder now exists and is writable.

    Raises
    ------
    ValueError
        When the output is an input or lies inside an input folder.
    FileExistsError
        When the output exists and ``overwrite`` is False.
    PermissionError
        When its folder cannot be written.
    """
    path = Path(path)
    for inp in inputs:
        if inp is None:
            continue
        if _same(path, inp):
            raise ValueError(f"the {what} {path} is the input {inp}; writing it would destroy the "
                             "input. Choose another output file.")
        if Path(inp).is_dir() and Path(inp).resolve() in path.resolve().parents:
            raise ValueError(f"the {what} {path} lies inside the input folder {inp}; write "
                             "outputs outside the data.")
    if path.is_dir():
        raise ValueError(f"the {what} {path} is a folder; name a file")
    if path.exists() and not overwrite:
        raise FileExistsError(f"the {what} {path} exists; pass --overwrite (overwrite=True) to "
                              "replace it, or choose another file")
    path.parent.mkdir(parents=True, exist_ok=True)
    check_writable(path.parent)
    return path


def check_writable(folder):
    """Create ``folder`` if needed and check that a file can be created in it.

    Raises
    ------
    PermissionError
        When no file can be created there.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / f".xplant-write-test-{uuid.uuid4().hex[:8]}"
    try:
        probe.touch(exist_ok=False)
    except OSError as exc:
        raise PermissionError(f"cannot write in {folder}: {exc.strerror or exc}") from exc
    probe.unlink()
    return folder


def make_unique_folder(parent, stem):
    """Create and return a new folder ``parent/stem`` (``stem-2``, ``stem-3``, ... if taken).

    Creation is atomic (``mkdir`` without ``exist_ok``), so two processes
    started in the same second get two folders.
    """
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    for i in range(1, 10000):
        cand = parent / (stem if i == 1 else f"{stem}-{i}")
        try:
            cand.mkdir()
            return cand
        except FileExistsError:
            continue
    raise FileExistsError(f"no free run folder named {stem}-N under {parent}")


#: What a run writes in its folder (``xplant run``, ``xplant ablate``).
RUN_ENTRIES = ("results.json", "per_label.npz", "evidence.json", "similarity.json", "parts",
               "models", "checkpoints", "report.html", "f1_by_frequency.png", "similarity.png",
               "ablation.json", "ablation.md", "low_data_curve.png", "switches", "curve")


def prepare_run_folder(output_dir, *, data=(), resume=False, overwrite=False, prefix=""):
    """Create the run folder of ``xplant run`` / ``xplant ablate``, checked.

    The output rule for a run folder: it is new or empty, or it holds an
    earlier run and the user said what to do with it: ``--resume``
    continues it (finished parts are kept; the folders it wrote, such as
    ``models/<row>``, may be replaced), ``--overwrite`` removes its files
    (:data:`RUN_ENTRIES`) and starts afresh. A folder holding anything else
    is never written into.

    Parameters
    ----------
    output_dir : str or Path or None
        The folder the user named; None makes a new, unique
        ``./xplant-runs/<prefix><UTC timestamp>[-N]`` (created atomically, so
        two runs started in the same second get two folders).
    data : sequence of str or Path or None
        Data folders and files the run reads: the run folder may not be, or
        lie inside, any of them, nor hold any of them
        (:func:`check_holds_no_input`, checked before anything is removed,
        for ``--resume`` and ``--overwrite`` alike).
    resume : bool, default=False
        Continue the run in the folder.
    overwrite : bool, default=False
        Remove the earlier run's files first.

    Returns
    -------
    Path
        The run folder, existing and writable.

    Raises
    ------
    ValueError
        When the folder is inside a data folder or holds an input, or holds
        files that no run wrote, or both ``resume`` and ``overwrite`` are
        asked for.
    FileExistsError
        When the folder holds an earlier run (finished or interrupted) and
        neither ``resume`` nor ``overwrite`` is given.
    """
    if resume and overwrite:
        raise ValueError("--resume continues the run in --output and --overwrite starts it "
                         "afresh; pass one of them")
    if not output_dir:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        return make_unique_folder("xplant-runs", prefix + stamp)
    out_dir = Path(output_dir)
    for d in data:
        if d is None:
            continue
        d = Path(d).resolve()
        o = out_dir.resolve()
        if o == d or d in o.parents:
            raise ValueError(f"the run folder {out_dir} lies inside the data folder {d}; nothing is "
                             "written beside the input data: choose another --output")
    # the other way round, before anything is removed (--overwrite) or replaced (--resume)
    check_holds_no_input(out_dir, data, what="run folder")
    entries = sorted(p.name for p in out_dir.iterdir()) if out_dir.is_dir() else []
    ours = [e for e in entries if e in RUN_ENTRIES]
    others = [e for e in entries if e not in RUN_ENTRIES and not e.startswith(".")]
    if others and not ours:
        raise ValueError(f"{out_dir} is not empty and holds no run ({', '.join(others[:5])}); "
                         "choose a new or empty --output folder")
    if ours and not (resume or overwrite):
        finished = any(e in ("results.json", "ablation.json") for e in ours)
        raise FileExistsError(
            f"{out_dir} already holds {'a finished' if finished else 'an interrupted'} run "
            f"({', '.join(ours)}); pass --resume to continue it, --overwrite to start it "
            "afresh, or choose a new --output")
    if overwrite:
        for e in ours:
            remove_tree(out_dir / e, inside=out_dir)
    return check_writable(out_dir)


def data_paths(data_args):
    """The existing files and folders named in a run's data arguments (one level of nesting)."""
    out = []
    for value in (data_args or {}).values():
        for v in (value.values() if isinstance(value, dict) else [value]):
            if isinstance(v, (str, os.PathLike)) and str(v) and Path(v).exists():
                out.append(Path(v))
    return out


def check_model_output(output, *, data=(), overwrite=False):
    """Check the folder a model is saved to (``xplant fit --output``) before fitting.

    Parameters
    ----------
    output : str or Path
    data : sequence of Path
        Data files and folders read by the fit: the output may be none of
        them, nor lie inside a data folder, nor hold any of them
        (:func:`check_holds_no_input`: ``--overwrite`` replaces the whole
        folder).
    overwrite : bool, default=False
        Allow replacing an existing saved model (never any other folder).

    Returns
    -------
    Path
        ``output``; its parent folder is writable (the folder itself is
        written by the save).

    Raises
    ------
    ValueError
        When the output is, lies inside or holds the data, or exists without
        being a saved xplant model (``config.json``).
    FileExistsError
        When it exists and ``overwrite`` is False.
    """
    output = Path(output)
    for d in data:
        d = Path(d)
        if _same(output, d) or (d.is_dir() and d.resolve() in output.resolve().parents):
            raise ValueError(f"the model folder {output} is, or lies inside, the data {d}; "
                             "choose an --output outside the data")
    check_holds_no_input(output, data, what="model folder")   # replaced with what it holds
    if output.exists():
        if not overwrite:
            raise FileExistsError(f"{output} exists; choose a new --output folder or pass "
                                  "--overwrite")
        if not (output / "config.json").is_file():
            raise ValueError(f"refusing to replace {output}: it is not a saved xplant model "
                             "folder (no config.json); choose a new --output folder")
    check_writable(output.parent)
    return output
