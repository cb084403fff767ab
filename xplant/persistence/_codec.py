"""The lower floor of the persistence package: the codec of every file a saved model holds.

Every saved folder of xplant (a model of any kind, its fitted parts, a
training checkpoint, a planting, a cache entry) is written and read here and
nowhere else:

- :func:`atomic_folder`: the one writer of a saved folder (a fresh folder
  that replaces the target only when the block succeeds);
- :func:`write_arrays` / :func:`read_arrays`: numbers as safetensors (numpy
  arrays or torch tensors, with optional string metadata);
- :func:`write_json`: a folder's JSON records (configuration, parts, a
  checkpoint's state); reading them is :func:`xplant._files.read_json_object`,
  the one reading of every JSON object file;
- :func:`format_kind` / :func:`check_format`: a folder's format tag
  ``xplant-<kind>-<version>``; :class:`FieldChecker`: its fields, each error
  naming the file and the field;
- :func:`split_arrays` / :func:`join_arrays`: a part's state (a dict whose
  values are JSON or numpy arrays) as a JSON object plus arrays, and back;
- :func:`write_state` / :func:`read_state`: a nested state of another
  library (DeepSpeed's checkpoint shards) as one safetensors file, its
  tensors as tensors and the rest of its structure as JSON in the header.

This floor imports nothing of xplant above :mod:`xplant._files`, so every
estimator package may save through it; the registry of kinds
(:mod:`xplant.persistence._kinds`) is the upper floor.
"""

import contextlib
import json
import re
import shutil
from pathlib import Path

import numpy as np

from .._files import atomic_path, follow_umask, fresh_folder, replace_folder


@contextlib.contextmanager
def atomic_folder(path, *, overwrite=False):
    """Yield a fresh folder beside ``path``; it replaces ``path`` when the block succeeds.

    The one writer of a saved model's folder (every saver writes through
    it). An existing ``path`` is refused unless ``overwrite``; the old
    ``path`` is removed only once the new folder is in place
    (:func:`xplant._files.replace_folder`); when the block raises, the temporary folder
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
        written in it take the modes of the umask (:func:`xplant._files.follow_umask`).

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


def read_arrays(path, *, torch=False, metadata=False):
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
    metadata : bool, default=False
        Also return the header's string metadata (:func:`write_arrays`).

    Returns
    -------
    arrays : dict of str to ndarray or torch.Tensor
    metadata : dict of str to str
        Only with ``metadata=True`` (empty when the file has none).

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
    >>> f = write_arrays(tempfile.mkdtemp() + "/w.safetensors", {"w": np.arange(3.0)})
    >>> read_arrays(f)["w"].tolist()
    [0.0, 1.0, 2.0]
    >>> _ = open(f, "r+b").truncate(20)
    >>> read_arrays(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../w.safetensors (20 bytes) is not a whole safetensors file: ...
    """
    from safetensors import SafetensorError, safe_open
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; the saved model is incomplete, save it "
                                "again")
    try:
        with safe_open(str(path), framework="pt" if torch else "np") as fh:
            arrays = {name: fh.get_tensor(name) for name in fh.keys()}
            return (arrays, dict(fh.metadata() or {})) if metadata else arrays
    except SafetensorError as exc:
        what = str(exc).replace("Error while deserializing header: ", "")
        raise ValueError(f"{path} ({path.stat().st_size} bytes) is not a whole safetensors file: "
                         f"{what} (cut short or changed after saving); copy the whole folder "
                         "again, or save the model again") from None


def write_arrays(path, arrays, *, metadata=None):
    """Write numbers to a safetensors file, atomically: the one writer of saved numbers.

    Parameters
    ----------
    path : str or Path
        The file (``.safetensors``). Its folder is created if needed; an
        existing file is replaced only once the new one is whole
        (:func:`xplant._files.atomic_path`).
    arrays : dict of str to ndarray or torch.Tensor
        All numpy arrays or all torch tensors; each is stored contiguous
        (a torch tensor detached and moved to the CPU first).
    metadata : dict of str to str or None
        Stored in the file's header (read back by ``read_arrays(...,
        metadata=True)``).

    Returns
    -------
    Path

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> f = write_arrays(tempfile.mkdtemp() + "/c.safetensors", {"ids": np.arange(2)},
    ...                  metadata={"kind": "cache"})
    >>> arrays, meta = read_arrays(f, metadata=True)
    >>> arrays["ids"].dtype.name, meta
    ('int64', {'kind': 'cache'})
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if any(not isinstance(v, np.ndarray) for v in arrays.values()):
        from safetensors.torch import save_file
        arrays = {k: v.detach().cpu().contiguous() for k, v in arrays.items()}
    else:
        from safetensors.numpy import save_file
        arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    with atomic_path(path) as tmp:
        save_file(arrays, str(tmp), metadata=metadata)
    return path


def write_json(path, obj, *, indent=None, default=None):
    """Write a JSON record of a saved folder, atomically (UTF-8, non-ASCII kept as is).

    Parameters
    ----------
    path : str or Path
        The file; its folder must exist.
    obj : object
        JSON-storable (``default`` turns what is not).
    indent : int or None, default=None
    default : callable or None, default=None
        As for :func:`json.dumps`.

    Returns
    -------
    Path
    """
    path = Path(path)
    text = json.dumps(obj, ensure_ascii=False, indent=indent, default=default)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def split_arrays(state):
    """A part's state as ``(JSON object, arrays)``: each numpy array goes to the arrays.

    Parameters
    ----------
    state : dict of str to object
        JSON-storable values and numpy arrays.

    Returns
    -------
    record : dict
        ``state`` with each array replaced by ``{"array": key}``.
    arrays : dict of str to ndarray

    Examples
    --------
    >>> import numpy as np
    >>> record, arrays = split_arrays({"tau": 0.5, "w": np.ones(2)})
    >>> record, sorted(arrays)
    ({'tau': 0.5, 'w': {'array': 'w'}}, ['w'])
    >>> join_arrays(record, arrays)["w"].tolist()
    [1.0, 1.0]
    """
    record, arrays = {}, {}
    for key, value in state.items():
        if isinstance(value, np.ndarray):
            arrays[key] = value
            record[key] = {"array": key}
        else:
            record[key] = value
    return record, arrays


def join_arrays(record, arrays):
    """The inverse of :func:`split_arrays`."""
    return {k: arrays[v["array"]] if isinstance(v, dict) and set(v) == {"array"} else v
            for k, v in record.items()}


#: The header field of :func:`write_state`'s files that holds the state's structure.
STATE_FIELD = "xplant-state"


def _encode_state(obj, tensors, types):
    """``obj`` as JSON, its tensors moved into ``tensors`` (see :func:`write_state`)."""
    import torch
    if torch.is_tensor(obj):
        key = f"t{len(tensors)}"
        tensors[key] = obj.detach().cpu().clone()      # safetensors refuses shared storage
        return {"tensor": key}
    if obj is None or isinstance(obj, (bool, int, float, str)) and type(obj) in (
            bool, int, float, str):
        return obj
    if isinstance(obj, torch.Size):
        return {"size": list(obj)}
    if isinstance(obj, np.generic):
        return {"numpy": obj.dtype.str, "value": obj.item()}
    if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
        return {type(obj).__name__: [_encode_state(v, tensors, types) for v in obj]}
    name = type(obj).__name__
    if type(obj) is not dict and types.get(name) is not type(obj):
        raise TypeError(f"cannot write a {type(obj).__module__}.{name} into a state file: "
                        f"it holds tensors, numbers, strings, lists, tuples, dicts and "
                        f"{sorted(types)} only")
    if isinstance(obj, dict):
        return {"dict": [[_encode_state(k, tensors, types), _encode_state(v, tensors, types)]
                         for k, v in obj.items()],
                **({"class": name} if type(obj) is not dict else {})}
    import enum
    if isinstance(obj, enum.Enum):
        return {"class": name, "value": _encode_state(obj.value, tensors, types)}
    return {"class": name, "fields": _encode_state(dict(vars(obj)), tensors, types)}


def _decode_state(obj, tensors, types, where):
    """The inverse of :func:`_encode_state`: only the classes of ``types`` are made."""
    if not isinstance(obj, dict):
        return obj
    if "tensor" in obj:
        return tensors[obj["tensor"]]
    if "size" in obj:
        import torch
        return torch.Size(obj["size"])
    if "numpy" in obj:
        return np.dtype(obj["numpy"]).type(obj["value"])
    if "list" in obj or "tuple" in obj:
        items = [_decode_state(v, tensors, types, where) for v in obj.get("list", obj.get("tuple"))]
        return items if "list" in obj else tuple(items)
    cls = None
    if "class" in obj:
        cls = types.get(obj["class"])
        if cls is None:
            raise ValueError(f"{where} names the class {obj['class']!r}, which is not one a "
                             f"state file may hold ({sorted(types)}); it was not written by "
                             "xplant, delete it")
    if "dict" in obj:
        out = {_decode_state(k, tensors, types, where): _decode_state(v, tensors, types, where)
               for k, v in obj["dict"]}
        return out if cls is None else cls(out)
    if "value" in obj:
        return cls(_decode_state(obj["value"], tensors, types, where))
    made = cls.__new__(cls)                   # no constructor runs: the fields are set as saved
    made.__dict__.update(_decode_state(obj["fields"], tensors, types, where))
    return made


def write_state(path, state, *, types=()):
    """Write a nested state (dicts, lists, tuples, numbers, strings, tensors) to one file.

    The tensors go into a safetensors file (each copied to the CPU, so that
    none shares storage); the structure around them (dict keys of any JSON
    type, tuples, ``torch.Size``, numpy scalars, and objects of the classes in ``types``,
    each by its fields or its enum value) goes into its header as JSON
    (``STATE_FIELD``). Nothing is pickled: :func:`read_state` rebuilds only
    those classes. DeepSpeed writes its checkpoint shards through it.

    Parameters
    ----------
    path : str or Path
        The file (any name: DeepSpeed's ``*.pt`` names are kept).
    state : object
        The nested state.
    types : sequence of type, default=()
        The classes besides the built-in ones the state may hold.

    Returns
    -------
    Path

    Raises
    ------
    TypeError
        For an object of another class, before anything is written.

    Examples
    --------
    >>> import collections, tempfile, torch
    >>> f = tempfile.mkdtemp() + "/shard.pt"
    >>> state = {"step": 3, 0: {"exp_avg": torch.ones(2)}, "shape": (2, 1)}
    >>> back = read_state(write_state(f, state))
    >>> back["step"], back[0]["exp_avg"].tolist(), back["shape"]
    (3, [1.0, 1.0], (2, 1))
    """
    types = {t.__name__: t for t in types}
    tensors = {}
    skeleton = json.dumps(_encode_state(state, tensors, types))
    if not tensors:                       # safetensors needs a framework: an empty torch file
        import torch
        tensors["empty"] = torch.zeros(0)
    return write_arrays(path, tensors, metadata={STATE_FIELD: skeleton})


def read_state(path, *, types=(), map_location=None):
    """Read a state :func:`write_state` wrote; nothing is unpickled.

    Parameters
    ----------
    path : str or Path
    types : sequence of type, default=()
        The classes it may hold (as given to :func:`write_state`); a file
        naming another is refused.
    map_location : str, torch.device or None, default=None
        Where to put the tensors (None: the CPU).

    Returns
    -------
    object

    Raises
    ------
    ValueError
        Naming the file: when it is not a whole safetensors file, holds no
        state, or names a class not in ``types``.
    """
    arrays, meta = read_arrays(path, torch=True, metadata=True)
    if STATE_FIELD not in meta:
        raise ValueError(f"{path} holds no {STATE_FIELD!r} header: it was not written by "
                         "xplant's state writer; delete it (the checkpoint folder) to start over")
    if map_location is not None and not callable(map_location):
        arrays = {k: v.to(map_location) for k, v in arrays.items()}
    return _decode_state(json.loads(meta[STATE_FIELD]), arrays,
                         {t.__name__: t for t in types}, path)


def read_config(path):
    """The ``config.json`` of a saved xplant model folder, checked to exist.

    Raises
    ------
    FileNotFoundError
        When ``path`` holds no ``config.json``.
    ValueError
        When ``config.json`` is not JSON or holds no JSON object, naming its
        line (:func:`xplant._files.read_json_object`).
    """
    path = Path(path)
    config_file = path / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{path} is not a saved xplant model (no config.json); pass a "
                                "folder written by xplant run (RUN/models/<row>) or xplant fit")
    from .._files import read_json_object
    return read_json_object(config_file, "a saved xplant model's configuration")


def open_saved(path, json_name, tensors_name, fmt, what, missing):
    """A saved folder's JSON object, checked: ``(Path, the object, its FieldChecker)``.

    The one opening of a saved MIGRelevance and a saved PlantClassifier:
    ``json_name`` and ``tensors_name`` must both be in the folder (else
    FileNotFoundError "``path`` ``missing``"), ``json_name`` must hold a JSON
    object (``what`` names it in errors) whose ``format`` is ``fmt``.
    """
    from .._files import read_json_object
    path = Path(path)
    if not (path / json_name).is_file() or not (path / tensors_name).is_file():
        raise FileNotFoundError(f"{path} {missing}")
    json_file = path / json_name
    meta = read_json_object(json_file, what)
    check_format(meta.get("format"), fmt, json_file)
    return path, meta, FieldChecker(meta, json_file)
