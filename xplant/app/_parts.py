"""The finished rows of a run, kept on disk as they end so that ``--resume`` can skip them.

Each row that finishes is written to ``parts/<row>.json`` (its entry and
the key it was fitted under) and ``parts/<row>.npz`` (its per-label F1)
by :func:`_write_part`; a resumed run reads it back with
:func:`_read_part` when the key (:func:`_part_key`: the row's spec, the
data arguments, the input files' contents and the model arguments) is
the same, and :func:`_check_resume` refuses to go on when an input file
changed.
"""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .._files import read_json_object


def _part_key(spec, data_args, model_args, inputs):
    """What a finished model's result depends on (JSON-comparable).

    ``inputs`` is ``{input: digest}`` of the input files and the catalogue
    (:func:`xplant.app._sources.input_digests`): a part is reused only for
    the same contents, not merely the same paths.
    """
    return json.loads(json.dumps({"spec": spec, "data": data_args, "inputs": inputs,
                                  "model": {k: v for k, v in model_args.items()
                                            if k not in ("verbose", "num_threads")}},
                                 sort_keys=True, default=str))


def _check_resume(out_dir, checked, inputs, data_args):
    """Refuse to continue a run whose input files changed since its parts were written.

    Raises
    ------
    ValueError
        Naming each changed file (the ``--labels`` catalogue too), before
        anything is fitted.
    """
    from ._sources import input_names
    files = input_names(data_args)
    for _, folder in checked:
        try:
            saved = read_json_object(Path(out_dir) / "parts" / f"{folder}.json", "a part's record")
            old = saved["key"]["inputs"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        changed = sorted(s for s in set(old) | set(inputs) if old.get(s) != inputs.get(s))
        if changed:
            names = ", ".join(f"{files.get(s, s)} ({s})" for s in changed)
            raise ValueError(f"{names} changed since the run in {out_dir} began (its SHA-256 "
                             "differs from the one its finished rows were fitted on); --resume "
                             "continues a run on the same data only. Restore the file, or start "
                             "afresh: a new --output, or --overwrite")


def _write_part(out_dir, folder, key, entry, per):
    """Save one finished model's entry and per-label F1 (written atomically)."""
    from .._files import atomic_open, write_text
    parts = Path(out_dir) / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    with atomic_open(parts / f"{folder}.npz", "wb") as fh:
        np.savez(fh, f1=per.f1, support=per.support)
    write_text(parts / f"{folder}.json", json.dumps({"key": key, "entry": entry}, default=float))


def _read_part(out_dir, folder, key):
    """``(entry, per)`` of a model finished in an earlier run with the same key, or None."""
    parts = Path(out_dir) / "parts"
    try:
        saved = read_json_object(parts / f"{folder}.json", "a part's record")
        with np.load(parts / f"{folder}.npz") as z:
            per = SimpleNamespace(f1=z["f1"], support=z["support"])
    except (OSError, ValueError, KeyError):
        return None
    return (saved["entry"], per) if saved.get("key") == key else None


def _read_fused_parts(out_dir, name, key):
    """The fused rows of a shortlisted fit finished in an earlier run: [(name, part)]."""
    from ._rows import FUSED_SUFFIXES, _model_folder
    found = ((name + sfx, _read_part(out_dir, _model_folder(name + sfx), key))
             for sfx in FUSED_SUFFIXES.values())
    return [(n, part) for n, part in found if part is not None]
