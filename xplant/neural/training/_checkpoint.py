"""Training checkpoints of PlantClassifier: atomic, pickle-free, resumable.

A checkpoint folder (``checkpoint_dir``) holds:

- ``latest``: a one-line text file naming the newest complete checkpoint;
- ``ckpt-<epoch>-<token>/``, one per kept checkpoint, with
  ``module.safetensors`` (the network), ``optimizer.safetensors`` (the
  optimizer's state tensors), ``best.safetensors`` (early stopping's best
  weights, when there are any), ``rng.safetensors`` (torch's CPU RNG state
  as uint8) and ``state.json`` (the epoch, the skorch history, the
  optimizer's parameter groups and scalar state, the numpy Generator's
  ``bit_generator.state``, early stopping's counters).

Each checkpoint is written into a temporary sibling folder that is renamed
into place, and ``latest`` is replaced by ``os.replace`` only after that,
so a process killed at any moment leaves ``latest`` naming a complete
checkpoint (or no ``latest`` at all). Nothing here unpickles: tensors are
read with safetensors, the rest with ``json``, both through
:mod:`xplant.persistence`'s codec.
"""

import os
import re
import shutil
import uuid
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback
from skorch.callbacks import EarlyStopping

from ..._files import follow_umask, fresh_folder
from ...persistence._codec import FieldChecker, read_arrays, write_arrays, write_json

_FORMAT = "xplant-checkpoint-1"
_KEEP = 2          # checkpoints kept: the latest and the one before
_CKPT_NAME = re.compile(r"ckpt-[0-9]{4,}-[0-9a-f]{8}")    # what ``latest`` may name


def _tensors(state):
    return {k: v.detach().cpu().contiguous().clone() for k, v in state.items()}


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, torch.Tensor) and obj.numel() == 1:
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in a checkpoint's JSON")


def _callback(net, kind):
    for _, cb in getattr(net, "callbacks_", []):
        if isinstance(cb, kind):
            return cb
    return None


def _early_stopping(net):
    return _callback(net, EarlyStopping)


def _schedule(net):
    from ._callbacks import WarmupCosine
    return _callback(net, WarmupCosine)


def split_optimizer_state(state_dict):
    """Split an optimizer ``state_dict`` into (tensors, JSON-able rest).

    Tensors go under keys ``"<param index>.<name>"``; non-tensor per-param
    values and the parameter groups stay in the JSON part.
    """
    tensors, scalars = {}, {}
    for pid, st in state_dict["state"].items():
        for name, v in st.items():
            if isinstance(v, torch.Tensor):
                tensors[f"{pid}.{name}"] = v.detach().cpu().contiguous().clone()
            else:
                scalars.setdefault(str(pid), {})[name] = v
    return tensors, {"param_groups": state_dict["param_groups"], "scalars": scalars}


def join_optimizer_state(tensors, rest):
    """Inverse of :func:`split_optimizer_state` (a dict for ``load_state_dict``)."""
    state = {}
    for key, v in tensors.items():
        pid, name = key.split(".", 1)
        state.setdefault(int(pid), {})[name] = v
    for pid, st in rest["scalars"].items():
        state.setdefault(int(pid), {}).update(st)
    groups = []
    for g in rest["param_groups"]:
        g = dict(g)
        if isinstance(g.get("betas"), list):
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    return {"state": state, "param_groups": groups}


def callback_states(net):
    """The training state that lives in the callbacks: (early stopping, its best weights, schedule).

    Returns
    -------
    early_stopping : dict or None
        Early stopping's counters (``misses``, ``best_epoch``,
        ``dynamic_threshold``, ``has_best_weights``), None before it ran.
    best : dict of str to Tensor or None
        Its best epoch's weights (``load_best``).
    schedule : dict or None
        The warmup-cosine schedule's ``base`` learning rates and ``step``.
    """
    es = _early_stopping(net)
    es_state = best = None
    if es is not None and hasattr(es, "misses_"):
        best = getattr(es, "best_model_weights_", None)
        es_state = {"misses": int(es.misses_), "best_epoch": int(getattr(es, "best_epoch_", 0)),
                    "dynamic_threshold": float(es.dynamic_threshold_)
                    if es.dynamic_threshold_ is not None else None,
                    "has_best_weights": best is not None}
    sched = _schedule(net)
    sched_state = ({"base": list(sched.base_), "step": int(sched.step_)}
                   if sched is not None and hasattr(sched, "step_") else None)
    return es_state, best, sched_state


def write_checkpoint(net, folder, *, completed=False):
    """Write ``net``'s training state as the new latest checkpoint in ``folder``.

    Parameters
    ----------
    net : PlantClassifier
        Initialised, with ``rng_`` and a history.
    folder : str or Path
        The checkpoint folder (created if needed).
    completed : bool, default=False
        Mark training as finished (``fit(resume=True)`` then trains no more).

    Returns
    -------
    Path
        The new checkpoint's folder.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    epoch = len(net.history)
    name = f"ckpt-{epoch:04d}-{uuid.uuid4().hex[:8]}"
    tmp = fresh_folder(folder, ".tmp-" + name)     # modes of the umask, as every output
    try:
        write_arrays(tmp / "module.safetensors", _tensors(net.module_.state_dict()))
        opt_tensors, opt_rest = split_optimizer_state(net.optimizer_.state_dict())
        write_arrays(tmp / "optimizer.safetensors", opt_tensors)
        write_arrays(tmp / "rng.safetensors", {"torch": torch.get_rng_state()})
        es_state, best, sched_state = callback_states(net)
        if best is not None:
            write_arrays(tmp / "best.safetensors", _tensors(best))
        state = {"format": _FORMAT, "epoch": epoch, "completed": bool(completed),
                 "n_labels": int(net.n_labels_), "n_train": int(getattr(net, "n_fit_train_", -1)),
                 "history": net.history.to_list(), "optimizer": opt_rest,
                 "numpy_rng": net.rng_.bit_generator.state, "early_stopping": es_state,
                 "schedule": sched_state}
        write_json(tmp / "state.json", state, default=_json_default)
        follow_umask(tmp)
        os.replace(tmp, folder / name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    pointer = folder / f".latest.tmp-{uuid.uuid4().hex[:8]}"
    pointer.write_text(name + "\n")
    os.replace(pointer, folder / "latest")
    _prune(folder, name)
    return folder / name


def _prune(folder, current):
    kept = sorted((p for p in folder.glob("ckpt-*") if p.is_dir()),
                  key=lambda p: (p.name == current, p.stat().st_mtime))
    for p in kept[:-_KEEP]:
        if p.name != current:
            shutil.rmtree(p, ignore_errors=True)
    for p in folder.glob(".tmp-*"):          # leftovers of a killed writer
        shutil.rmtree(p, ignore_errors=True)
    for p in folder.glob(".latest.tmp-*"):
        p.unlink(missing_ok=True)


def read_checkpoint(folder):
    """The latest complete checkpoint of ``folder``, or None when there is none.

    Returns
    -------
    dict or None
        ``state`` (the JSON part), ``module``, ``optimizer``, ``rng`` and
        ``best`` (dicts of tensors; ``best`` may be None), ``path``.

    Raises
    ------
    ValueError
        When ``latest`` names a checkpoint that is missing or of another format.
    """
    folder = Path(folder)
    pointer = folder / "latest"
    if not pointer.is_file():
        return None
    name = pointer.read_text().strip()
    if not _CKPT_NAME.fullmatch(name):
        raise ValueError(f"{pointer} must name a checkpoint folder of the form ckpt-<epoch>-<token>, "
                         f"got {name[:80]!r}; delete the checkpoint folder to start over")
    path = folder / name
    if not (path / "state.json").is_file():
        raise ValueError(f"{pointer} names {path.name}, which is not a complete checkpoint; "
                         "delete the checkpoint folder to start over")
    state = _check_state(path / "state.json")
    best = path / "best.safetensors"
    return {"state": state, "path": path,
            "module": read_arrays(path / "module.safetensors", torch=True),
            "optimizer": read_arrays(path / "optimizer.safetensors", torch=True),
            "rng": read_arrays(path / "rng.safetensors", torch=True),
            "best": read_arrays(best, torch=True) if best.is_file() else None}


def _check_state(state_file):
    """A checkpoint's ``state.json``, every field checked (errors name file and field)."""
    from ..._files import read_json_object
    state = read_json_object(state_file, "a training checkpoint's state")
    if state.get("format") != _FORMAT:
        raise ValueError(f"{state_file}: unknown checkpoint format {state.get('format')!r}")
    c = FieldChecker(state, state_file)
    epoch = c.integer("epoch", low=0)
    c.get("completed", bool, "true or false")
    c.integer("n_labels", low=1)
    c.integer("n_train", low=-1)
    if len(c.get("history", list, "a list of epochs")) != epoch:
        c.fail("history", f"holds {len(state['history'])} epochs but epoch is {epoch}")
    opt = c.get("optimizer", dict, "an object")
    if not isinstance(opt.get("param_groups"), list) or not isinstance(opt.get("scalars"), dict):
        c.fail("optimizer", "needs param_groups (a list) and scalars (an object)")
    c.get("numpy_rng", dict, "a numpy bit generator state")
    for field in ("early_stopping", "schedule"):
        if state.get(field) is not None:
            c.get(field, dict, "an object or null")
    return state


def restore_checkpoint(net, ckpt):
    """Put an initialised net back in the state of ``ckpt`` (from :func:`read_checkpoint`).

    Restores the module, optimizer, history, numpy and torch RNG states;
    early stopping's state is restored by :class:`TrainingCheckpoint` when
    training begins (skorch resets it in ``on_train_begin``).

    Raises
    ------
    ValueError
        When the checkpoint belongs to another label space or training set.
    """
    from skorch.history import History
    state = ckpt["state"]
    if state["n_labels"] != net.n_labels_ or state["n_train"] != getattr(net, "n_fit_train_", -1):
        raise ValueError(f"the checkpoint at {ckpt['path']} was made for {state['n_labels']} labels "
                         f"and {state['n_train']} training documents, this fit has {net.n_labels_} "
                         f"and {getattr(net, 'n_fit_train_', -1)}; use another checkpoint_dir or "
                         "resume=False")
    try:
        net.module_.load_state_dict(ckpt["module"], strict=True)
    except RuntimeError as exc:
        raise ValueError(f"the checkpoint at {ckpt['path']} does not fit this model: {exc}") from exc
    net.optimizer_.load_state_dict(join_optimizer_state(ckpt["optimizer"], state["optimizer"]))
    net.history = History(state["history"])
    net.rng_.bit_generator.state = state["numpy_rng"]
    torch.set_rng_state(ckpt["rng"]["torch"])
    net._resume_early_stopping_ = (state["early_stopping"], ckpt["best"])
    net._resume_schedule_ = state.get("schedule")
    return net


class TrainingCheckpoint(Callback):
    """Write a checkpoint after every epoch and when training ends (skorch callback).

    See :func:`write_checkpoint` for the layout. On ``on_train_begin`` it
    hands a resumed state back to skorch's EarlyStopping and to the
    warmup-cosine schedule, so it must come after them in the callback list.
    """

    def __init__(self, folder):
        self.folder = folder

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        sched, sched_state = _schedule(net), getattr(net, "_resume_schedule_", None)
        net._resume_schedule_ = None
        if sched is not None and sched_state is not None:
            sched.base_, sched.step_ = list(sched_state["base"]), sched_state["step"]
        pending = getattr(net, "_resume_early_stopping_", None)
        net._resume_early_stopping_ = None
        es = _early_stopping(net)
        if pending is None or pending[0] is None or es is None:
            return
        st, best = pending
        es.misses_ = st["misses"]
        es.best_epoch_ = st["best_epoch"]
        es.dynamic_threshold_ = st["dynamic_threshold"]
        es.best_model_weights_ = best

    def on_epoch_end(self, net, **kwargs):
        write_checkpoint(net, self.folder)

    def on_train_end(self, net, X=None, y=None, **kwargs):
        # skorch ends training the same way for early stopping and for Ctrl-C
        # (both a KeyboardInterrupt it swallows): only a finished fit is
        # marked completed; after Ctrl-C the last epoch's checkpoint stands,
        # so fit(resume=True) continues from it.
        if finished_training(net):
            write_checkpoint(net, self.folder, completed=True)


def stopped_early(net):
    """True when early stopping ended the training (``patience`` epochs without progress)."""
    es = _early_stopping(net)
    return es is not None and getattr(es, "misses_", 0) >= es.patience


def finished_training(net):
    """True when training ended by early stopping, by another callback that stopped it
    (one whose ``stopped_`` is True: the race of ``stage1_weight="dev"``'s candidates),
    or after ``max_epochs`` full epochs."""
    if stopped_early(net) or any(getattr(cb, "stopped_", False) is True
                                 for _, cb in getattr(net, "callbacks_", [])):
        return True
    return len(net.history) >= net.max_epochs and "train_loss" in net.history[-1]
