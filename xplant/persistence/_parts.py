"""The registry of fitted parts, and their saving inside any saved model's folder.

A *fitted part* is a small object a fitted estimator keeps in its ``parts_``
dict (``{name: part}``) beside its own fitted attributes: it turns its state
into a dict of JSON values and numpy arrays (``to_dict()``) and is rebuilt
from that dict (the class method ``from_dict(state)``). A part class is made
savable by one explicit call, :func:`register_part`; from then on every
saved kind writes it and every loader restores it, with no change to the
persistence package or to the kind:

- saving (:func:`model_folder`, the folder every kind's saver writes into)
  writes each registered part of the model's last step as
  ``parts/<name>.json`` (its class's registered name and its JSON state)
  and ``parts/<name>.safetensors`` (its arrays, when it has any);
- loading (:func:`read_parts`, called by every kind's loader) rebuilds each
  part by the class registered under the name the file gives, and puts it
  in ``parts_``. A name no part was registered under is refused: loading
  imports nothing that a file names.

The parts a kind stores in its own layout (every kind's label space and
decision rule, :data:`KIND_PARTS`; a PlantClassifier's logit adjustment and
shortlist fusion, in ``config.json`` and ``shortlist/``, as earlier releases
wrote them) are passed as ``handled`` and skipped here. A part that is
neither handled nor registered is refused when saving, and the saved folder
is left as it was: nothing is dropped silently.
"""

import contextlib
from pathlib import Path

from .._files import check_path_name, read_json_object
from .._params import final_step
from ._codec import (atomic_folder, check_format, join_arrays, read_arrays, split_arrays,
                     write_arrays, write_json)

#: The format tag of a part's record, ``parts/<name>.json``.
PART_FORMAT = "xplant-part-1"
#: The folder of a saved model that holds its registered parts.
PARTS_FOLDER = "parts"
#: The parts every kind stores in its own layout, in its ``config.json``: the label space
#: (:class:`xplant._label_space.LabelSpace`) and the decision rule
#: (:class:`xplant.metrics.DecisionRule`).
KIND_PARTS = ("label_space", "decision_rule")

_PARTS = {}


def register_part(cls, name=None):
    """Make a fitted part class savable in every saved model: the one registration call.

    Parameters
    ----------
    cls : type
        The part's class. Its instances have ``to_dict()``, returning a dict
        with string keys whose values are JSON-storable or numpy arrays (a
        dict whose one key is ``"array"`` is reserved: it stands for an
        array, :func:`~xplant.persistence._codec.split_arrays`), and the
        class has ``from_dict(state)``, rebuilding an equal part from that
        dict.
    name : str or None, default=None
        The name saved folders record for it; ``cls.__qualname__`` when None.
        It must stay the same across releases for old folders to load.

    Returns
    -------
    type
        ``cls``, unchanged, so the call can be used as a class decorator.

    Raises
    ------
    TypeError
        When ``cls`` lacks ``to_dict`` or ``from_dict``.
    ValueError
        When ``name`` is already registered for another class.

    Examples
    --------
    >>> import numpy as np
    >>> class Scale:
    ...     def __init__(self, w): self.w = w
    ...     def to_dict(self): return {"w": self.w}
    ...     @classmethod
    ...     def from_dict(cls, state): return cls(state["w"])
    >>> _ = register_part(Scale, "doc-example-scale")
    >>> registered_parts()["doc-example-scale"] is Scale
    True
    """
    if not callable(getattr(cls, "to_dict", None)) or \
            not callable(getattr(cls, "from_dict", None)):
        raise TypeError(f"{cls!r} cannot be registered as a fitted part: it needs to_dict() and "
                        "a class method from_dict(state)")
    name = cls.__qualname__ if name is None else check_path_name(name, "a part's name")
    if _PARTS.get(name, cls) is not cls:
        raise ValueError(f"the part name {name!r} is registered for {_PARTS[name]!r}; give "
                         f"{cls!r} another name")
    _PARTS[name] = cls
    return cls


def registered_parts():
    """``{name: class}`` of the parts :func:`register_part` made savable (a copy)."""
    return dict(_PARTS)


def _registered_name(part):
    for name, cls in _PARTS.items():
        if type(part) is cls:
            return name
    return None


def _parts_to_write(model, handled):
    """``[(name, registered name, part)]`` of the model's last step, each checked."""
    parts = getattr(final_step(model), "parts_", None) or {}
    out = []
    for name, part in parts.items():
        if name in handled or part is None:
            continue
        registered = _registered_name(part)
        if registered is None:
            raise TypeError(f"cannot save the fitted part parts_[{name!r}] "
                            f"({type(part).__name__}): its class is not registered; call "
                            "xplant.persistence.register_part on it first")
        out.append((check_path_name(name, "a part's name"), registered, part))
    return out


@contextlib.contextmanager
def model_folder(model, path, *, overwrite=False, handled=()):
    """The folder a saved model is written into; its registered parts are added at the end.

    :func:`~xplant.persistence._codec.atomic_folder` (the new folder replaces
    ``path`` only when the whole save succeeds) that, after the kind's own
    files, writes every registered fitted part of the model's last step
    (``parts_``) that the kind does not store itself.

    Parameters
    ----------
    model : estimator or Pipeline
        Fitted.
    path : str or Path
        The saved folder.
    overwrite : bool, default=False
        Replace an existing folder.
    handled : collection of str, default=()
        The names of the parts the kind stores in its own layout.

    Yields
    ------
    Path
        The temporary folder to write the kind's files into.

    Raises
    ------
    TypeError
        For a part whose class is not registered; ``path`` is left as it
        was (the temporary folder is removed).
    FileExistsError
        When ``path`` exists and ``overwrite`` is False.
    """
    with atomic_folder(path, overwrite=overwrite) as tmp:
        yield tmp
        # after the kind's own checks and files: its refusals name the model first
        for name, registered, part in _parts_to_write(model, set(handled) | set(KIND_PARTS)):
            record, arrays = split_arrays(part.to_dict())
            folder = tmp / PARTS_FOLDER
            folder.mkdir(exist_ok=True)
            if arrays:
                write_arrays(folder / f"{name}.safetensors", arrays)
            write_json(folder / f"{name}.json",
                       {"format": PART_FORMAT, "part": registered, "state": record})


def read_parts(model, path):
    """Restore the registered parts a saved folder holds into the model's ``parts_``.

    Parameters
    ----------
    model : estimator or Pipeline
        Just loaded from ``path``; its last step gets the parts (a
        ``parts_`` dict is created where it has none).
    path : str or Path
        The saved folder.

    Returns
    -------
    model

    Raises
    ------
    ValueError
        Naming the part's file: a record that is damaged, or a part name
        that no class is registered under (register it before loading).
    """
    folder = Path(path) / PARTS_FOLDER
    if not folder.is_dir():
        return model
    final = final_step(model)
    parts = dict(getattr(final, "parts_", None) or {})
    for record_file in sorted(folder.glob("*.json")):
        record = read_json_object(record_file, "a saved fitted part")
        check_format(record.get("format"), PART_FORMAT, record_file)
        cls = _PARTS.get(record.get("part"))
        if cls is None:
            raise ValueError(f"{record_file}: the part {record.get('part')!r} is not registered "
                             "in this process; call xplant.persistence.register_part on its "
                             "class before loading")
        arrays_file = record_file.with_suffix(".safetensors")
        arrays = read_arrays(arrays_file) if arrays_file.is_file() else {}
        try:
            parts[record_file.stem] = cls.from_dict(join_arrays(record["state"], arrays))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{record_file}: {type(exc).__name__}: {exc}; the file is damaged "
                             "or was edited by hand, save the model again") from None
    final.parts_ = parts
    return model
