"""Every file xplant writes, written so that a failure leaves the old one whole.

One helper module, used by every writer (predictions, ``results.json``,
``per_label.npz``, ``report.html``, ``ablation.json``, and, through the
codec of :mod:`xplant.persistence`, saved models, checkpoints and cache
entries):

- :func:`atomic_path` / :func:`atomic_open` / :func:`write_text`: write into
  a temporary file beside the target and rename it into place with
  ``os.replace`` only once the write has succeeded. A full disk, a
  file-size limit or a kill leaves the earlier file as it was.
- :func:`replace_folder`: put a freshly written folder in place of an old
  one; the old one is moved aside first and removed only after the new one
  is in place.
- :func:`fresh_folder` / :func:`follow_umask`: what these writers put in
  place (files, model folders, checkpoints, cache entries) gets the modes
  the umask gives any new file (``0o666 & ~umask``) or folder
  (``0o777 & ~umask``), whatever the writer's library chose
  (``tempfile.mkdtemp`` makes 0700 folders, safetensors 0600 files):
  readable by others under umask 022, private under 077.
- :func:`check_path_name`: a name that becomes part of a path (a model row,
  a checkpoint pointer) is refused when it is empty, ``.`` or ``..``, holds
  a separator or a control character.
- :func:`remove_tree`: ``shutil.rmtree`` that refuses any folder that is
  not strictly inside the folder it was meant for.
- :func:`read_json_object`: the one reading of a JSON (or YAML) object
  file (a saved folder's configuration, a run's records, a user's config).

The checks of the outputs a user names (an output file, a model folder, a
run folder) are in :mod:`xplant._outputs`.
"""

import contextlib
import hashlib
import os
import shutil
import tempfile
import unicodedata
import uuid
from pathlib import Path


def _tmp_name(path, tag="tmp"):
    return path.with_name(f".{path.name}.{tag}-{uuid.uuid4().hex[:8]}")


def current_umask():
    """The process's umask, read without changing it where the system says it.

    Linux gives it in ``/proc/self/status``; elsewhere it is read by setting
    and restoring it (:func:`os.umask`).

    Returns
    -------
    int

    Examples
    --------
    >>> import os
    >>> old = os.umask(0o027)
    >>> oct(current_umask())
    '0o27'
    >>> _ = os.umask(old)
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o077)
    os.umask(old)
    return old


def follow_umask(path):
    """Give ``path``, and everything under a folder ``path``, the modes the umask gives new ones.

    Files ``0o666 & ~umask``, folders ``0o777 & ~umask`` (links are left
    alone): the mode of a file or folder created by ``open`` or ``mkdir``,
    which ``tempfile.mkdtemp`` (0700) and safetensors (0600) do not give.
    The one rule of the modes of what xplant writes (:func:`atomic_path`,
    :func:`xplant.persistence._codec.atomic_folder`, checkpoints, cache entries).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Path
    """
    path = Path(path)
    mask = current_umask()
    todo = [path]
    while todo:
        p = todo.pop()
        if p.is_symlink():
            continue
        if p.is_dir():
            os.chmod(p, 0o777 & ~mask)
            todo.extend(p.iterdir())
        elif p.exists():
            os.chmod(p, 0o666 & ~mask)
    return path


def fresh_folder(parent, prefix):
    """A new, empty folder in ``parent`` with the mode of a folder made under the umask.

    ``tempfile.mkdtemp`` (a unique name, created atomically) made readable
    as ``mkdir`` would make it (:func:`follow_umask`): the temporary folder
    of a writer that is renamed into place as a model or a checkpoint.

    Parameters
    ----------
    parent : str or Path
        Created if needed.
    prefix : str

    Returns
    -------
    Path
    """
    Path(parent).mkdir(parents=True, exist_ok=True)
    return follow_umask(tempfile.mkdtemp(prefix=prefix, dir=parent))


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; rename it to ``path`` on success.

    For writers that take a file name (safetensors, matplotlib). The
    temporary file is removed when the block raises, so ``path`` keeps its
    earlier content.

    Parameters
    ----------
    path : str or Path
        The final file. Its folder must exist.

    Yields
    ------
    Path
        Where to write (``.<name>.tmp-<random>`` in the same folder, so the
        rename never crosses a file system). The file takes the mode of
        the umask before it is renamed (:func:`follow_umask`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "a.txt") as tmp:
    ...     _ = tmp.write_text("new")
    >>> (d / "a.txt").read_text(), sorted(p.name for p in d.iterdir())
    ('new', ['a.txt'])
    """
    path = Path(path)
    tmp = _tmp_name(path)
    try:
        yield tmp
        if tmp.is_file():
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            follow_umask(tmp)                 # whatever mode the writer gave it
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def atomic_open(path, mode="w", *, encoding="utf-8", newline=None):
    """``open(path, mode)`` that replaces ``path`` only when the block succeeds.

    Parameters
    ----------
    path : str or Path
    mode : {"w", "wb"}
    encoding, newline
        As for :func:`open` (text mode only).

    Yields
    ------
    file object
        Writing to a temporary file beside ``path``.

    Raises
    ------
    ValueError
        For a mode other than ``"w"`` or ``"wb"``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files; mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(path) as tmp:
        kw = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
        with open(tmp, mode, **kw) as fh:
            yield fh
            fh.flush()


def write_text(path, text, *, encoding="utf-8"):
    """Write ``text`` to ``path`` atomically (see :func:`atomic_path`); return ``path``."""
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def replace_folder(new, path):
    """Put the folder ``new`` in place of ``path`` (which may exist).

    The old folder is renamed aside, ``new`` renamed to ``path``, and only
    then is the old one removed; if the second rename fails the old folder
    is put back. ``new`` must be a sibling of ``path`` (same file system).

    Parameters
    ----------
    new, path : str or Path

    Returns
    -------
    Path
        ``path``.
    """
    new, path = Path(new), Path(path)
    if not path.exists():
        os.replace(new, path)
        return path
    aside = _tmp_name(path, "old")
    os.replace(path, aside)
    try:
        os.replace(new, path)
    except BaseException:
        os.replace(aside, path)
        raise
    remove_tree(aside, inside=path.parent)
    return path


def check_path_name(name, what="name"):
    """Refuse a name that cannot safely become one component of a path.

    Parameters
    ----------
    name : str
    what : str
        How the message calls the name (e.g. ``"model row name"``).

    Returns
    -------
    str
        ``name``, unchanged.

    Raises
    ------
    ValueError
        When ``name`` is not a string, is empty or only spaces, is ``.`` or
        ``..``, or holds ``/``, ``\\``, NUL or any other control character.

    Examples
    --------
    >>> check_path_name("PLANT")
    'PLANT'
    >>> check_path_name("..", "model row name")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: model row name '..' cannot be part of a path: ...
    """
    why = None
    if not isinstance(name, str):
        raise ValueError(f"{what} must be a string, got {type(name).__name__} {name!r}")
    if not name.strip():
        why = "it is empty"
    elif name in (".", ".."):
        why = "it names the current or the parent folder"
    elif "/" in name or "\\" in name:
        why = "it holds a path separator"
    elif control_characters(name):
        why = "it holds a control character"
    if why:
        raise ValueError(f"{what} {name!r} cannot be part of a path: {why}; choose a plain name "
                         "such as 'PLANT-2'")
    return name


def check_inside(path, root, what="folder"):
    """Return ``path`` if it lies strictly inside ``root`` (after resolving links and ``..``).

    Raises
    ------
    ValueError
        When ``path`` is ``root`` itself or outside it.
    """
    p, r = Path(path).resolve(), Path(root).resolve()
    if p == r or r not in p.parents:
        raise ValueError(f"refusing to touch {what} {path}: it is not inside {root}")
    return Path(path)


def remove_tree(path, *, inside):
    """``shutil.rmtree(path)``, but only for a folder strictly inside ``inside``.

    A missing ``path`` is not an error. A link is unlinked, never followed.

    Raises
    ------
    ValueError
        When ``path`` resolves to ``inside`` itself or to anything outside it.
    """
    path = Path(path)
    if path.is_symlink():
        parent = path.parent.resolve()
        root = Path(inside).resolve()
        if parent != root and root not in parent.parents:
            raise ValueError(f"refusing to touch {path}: it is not inside {inside}")
        path.unlink()
        return
    if not path.exists():
        return
    check_inside(path, inside)
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def read_json_object(path, what, *, yaml=False):
    """Parse a JSON file that must hold one object: the one reader of such files.

    A saved model's configuration, a run's records, a user's config file:
    read as ``utf-8-sig`` (a byte-order mark is no error), with messages
    that name the file.

    Parameters
    ----------
    path : str or Path
    what : str
        What the file should hold, for the messages.
    yaml : bool, default=False
        Read a ``.yaml``/``.yml`` file as YAML (with PyYAML); any other
        name is still read as JSON.

    Returns
    -------
    dict

    Raises
    ------
    FileNotFoundError
        When there is no such file.
    ValueError
        Naming the file, and the line and column of invalid JSON; or a file
        that holds no object.
    ImportError
        For a YAML file without PyYAML.
    """
    import json
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; check the path (it should hold {what})")
    with open(path, encoding="utf-8-sig") as fh:
        text = fh.read()
    kind = "YAML" if yaml and path.suffix.lower() in (".yaml", ".yml") else "JSON"
    if kind == "YAML":
        try:
            import yaml as pyyaml
        except ImportError as exc:  # pragma: no cover - pyyaml comes with transformers
            raise ImportError("reading a YAML file needs PyYAML: pip install pyyaml, or give "
                              "the file as JSON") from exc
        obj = pyyaml.safe_load(text)
    else:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}, line {exc.lineno}, column {exc.colno}: not valid JSON "
                             f"({exc.msg}); it should hold {what}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: expected a {kind} object holding {what}, got "
                         f"{type(obj).__name__}")
    return obj


def sibling_tmp(path):
    """A fresh, unused name beside ``path`` for a folder to be moved into place later."""
    return _tmp_name(Path(path))


def control_characters(text):
    """The control, line- and paragraph-separator characters of ``text``, as escapes."""
    return sorted({repr(c)[1:-1] for c in text
                   if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c != "\u200d"})


def sha256_file(path, chunk=1 << 20):
    """SHA-256 hex digest of a file's bytes.

    Examples
    --------
    >>> import tempfile
    >>> f = tempfile.NamedTemporaryFile(delete=False); _ = f.write(b"abc"); f.close()
    >>> sha256_file(f.name)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()
