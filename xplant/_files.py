"""Every file xplant writes, written so that a failure leaves the old one whole.

One helper module, used by every writer (predictions, ``results.json``,
``per_label.npz``, ``report.html``, ``ablation.json``, saved models,
checkpoints):

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
- :func:`read_json_object` and :func:`check_format`: the one reading of a
  JSON (or YAML) object file (a saved folder's configuration, a run's
  records, a user's config) and of a format tag ``xplant-<kind>-<version>``.

The checks of the outputs a user names (an output file, a model folder, a
run folder) are in :mod:`xplant._outputs`.
"""

import contextlib
import hashlib
import os
import re
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
    :func:`atomic_folder`, checkpoints, cache entries).

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
def atomic_folder(path, *, overwrite=False):
    """Yield a fresh folder beside ``path``; it replaces ``path`` when the block succeeds.

    The one writer of a saved model's folder (every saver writes through
    it). An existing ``path`` is refused unless ``overwrite``; the old
    ``path`` is removed only once the new folder is in place
    (:func:`replace_folder`); when the block raises, the temporary folder
    is removed and ``path`` keeps its earlier content.

    Parameters
    ----------
    path : str or Path
        The final folder. Its parent is created if needed.
    overwrite : bool, default=False
        Replace an existing ``path``.

    Raises
    ------
    FileExistsError
        When ``path`` exists and ``overwrite`` is False, before anything is
        written.

    Yields
    ------
    Path
        The temporary folder (``<name>.tmp-<random>`` in the same parent, so
        the rename never crosses a file system). The folder and what is
        written in it take the modes of the umask (:func:`follow_umask`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_folder(d / "model") as tmp:
    ...     _ = (tmp / "config.json").write_text("{}")
    >>> sorted(p.name for p in d.iterdir()), (d / "model" / "config.json").read_text()
    (['model'], '{}')
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True or choose a new folder")
    tmp = fresh_folder(path.parent, path.name + ".tmp-")
    try:
        yield tmp
        follow_umask(tmp)                     # the files its writers made (safetensors: 0600)
        replace_folder(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
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


#: A saved folder's format tag: ``xplant-<kind>-<version>`` (``xplant-linear-1``).
_FORMAT_TAG = re.compile(r"xplant-([a-z][a-z-]*[a-z])-([0-9]+)")


def format_kind(tag):
    """The kind and version of a format tag, or ``(None, None)`` for anything else.

    Parameters
    ----------
    tag : object
        The ``format`` field of a saved folder's JSON configuration.

    Returns
    -------
    kind : str or None
    version : int or None

    Examples
    --------
    >>> format_kind("xplant-plant-classifier-1"), format_kind("sklearn-2")
    (('plant-classifier', 1), (None, None))
    """
    m = _FORMAT_TAG.fullmatch(tag) if isinstance(tag, str) else None
    return (m.group(1), int(m.group(2))) if m else (None, None)


def check_format(tag, expected, where, *, hint=""):
    """Refuse a saved folder whose format tag is not ``expected``, saying why.

    The one check of every loader of a saved folder: a tag of the same kind
    and a higher version was written by a newer xplant (upgrade to read
    it); a lower version is one this xplant no longer reads; anything else
    is another kind of folder.

    Parameters
    ----------
    tag : object
        The ``format`` field read from the folder.
    expected : str
        The tag this loader reads, ``xplant-<kind>-<version>``.
    where : str or Path
        The JSON file the tag was read from, named in the message.
    hint : str, default=""
        What to do instead, appended to the message for another kind.

    Raises
    ------
    ValueError
        When ``tag`` is not ``expected``.

    Examples
    --------
    >>> check_format("xplant-linear-2", "xplant-linear-1", "m/config.json")
    Traceback (most recent call last):
    ...
    ValueError: m/config.json: format 'xplant-linear-2' was written by a newer xplant (version 2 of the 'linear' format; this xplant reads version 1); upgrade xplant to load it
    """
    if tag == expected:
        return
    kind, version = format_kind(tag)
    want, want_version = format_kind(expected)
    if kind is not None and kind == want:
        if version > want_version:
            raise ValueError(f"{where}: format {tag!r} was written by a newer xplant (version "
                             f"{version} of the {kind!r} format; this xplant reads version "
                             f"{want_version}); upgrade xplant to load it")
        raise ValueError(f"{where}: format {tag!r} is an older version of the {kind!r} format "
                         f"(this xplant reads version {want_version}); save the model again with "
                         "this xplant")
    raise ValueError(f"{where}: format {tag!r} is not {expected!r}" + (f"; {hint}" if hint else ""))


class FieldChecker:
    """Checks the fields of a JSON object read from ``path``; each error names file and field.

    Examples
    --------
    >>> c = FieldChecker({"k": -3}, "config.json")
    >>> c.integer("k", low=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: config.json, field 'k': must be an integer >= 1, got -3...
    """

    def __init__(self, obj, path):
        self.obj, self.path = obj, path

    def fail(self, field, message):
        raise ValueError(f"{self.path}, field {field!r}: {message}; the file is damaged or was "
                         "edited by hand, save the model again")

    def get(self, field, kinds=None, what=None):
        if field not in self.obj:
            self.fail(field, "missing")
        value = self.obj[field]
        kinds = kinds if isinstance(kinds, tuple) or kinds is None else (kinds,)
        if kinds is not None and (not isinstance(value, kinds)
                                  or isinstance(value, bool) and bool not in kinds):
            self.fail(field, f"must be {what or kinds}, got {type(value).__name__} {value!r:.60}")
        return value

    def integer(self, field, low=None, high=None):
        value = self.get(field, int, "an integer")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
            self.fail(field, f"must be an integer {bounds}, got {value}")
        return value

    def number(self, field, low=None, high=None):
        import math
        value = self.get(field, (int, float), "a number")
        if not math.isfinite(value) or (low is not None and value < low) or \
                (high is not None and value > high):
            self.fail(field, f"must be a finite number in [{low}, {high}], got {value}")
        return float(value)

    def int_list(self, field, length, low=0):
        value = self.get(field, list, "a list")
        if length is not None and len(value) != length:
            self.fail(field, f"must hold {length} values, got {len(value)}")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value):
            self.fail(field, f"must hold integers >= {low}")
        return value


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


def read_tensors(path, *, torch=False):
    """The tensors of a safetensors file: the one reader of every saved model's weights.

    Every saved kind (linear and tree models, PLANT and its planting, MIG
    relevance, training checkpoints) reads its numbers here, so a damaged
    file gives one kind of error, naming the file and what is wrong, never
    the storage library's own exception.

    Parameters
    ----------
    path : str or Path
    torch : bool, default=False
        Return torch tensors (``safetensors.torch``) instead of numpy arrays.

    Returns
    -------
    dict of str to ndarray or torch.Tensor

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        When it is not a whole safetensors file (cut short, a header byte
        changed): names the file, its size and what the reader found.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from safetensors.numpy import save_file
    >>> f = tempfile.mkdtemp() + "/w.safetensors"
    >>> save_file({"w": np.arange(3.0)}, f)
    >>> read_tensors(f)["w"].tolist()
    [0.0, 1.0, 2.0]
    >>> _ = open(f, "r+b").truncate(20)
    >>> read_tensors(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../w.safetensors (20 bytes) is not a whole safetensors file: ...
    """
    from safetensors import SafetensorError
    if torch:
        from safetensors.torch import load_file
    else:
        from safetensors.numpy import load_file
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; the saved model is incomplete, save it "
                                "again")
    try:
        return load_file(str(path))
    except SafetensorError as exc:
        what = str(exc).replace("Error while deserializing header: ", "")
        raise ValueError(f"{path} ({path.stat().st_size} bytes) is not a whole safetensors file: "
                         f"{what} (cut short or changed after saving); copy the whole folder "
                         "again, or save the model again") from None
