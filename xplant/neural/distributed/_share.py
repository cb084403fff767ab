"""Compute once on rank 0, share with every rank."""

from pathlib import Path

import torch

from ._group import rank_and_world


def broadcast_from_rank0(make=None, *, path=None):
    """Build an object on rank 0 (or load a saved relevance) and give it to every rank.

    Used for the fitted :class:`~xplant.relevance.MIGRelevance`, so that MIG
    is computed once and all ranks plant and train against identical
    vocabulary and relevance, whatever their shard of the data.

    Parameters
    ----------
    make : callable or None
        Called with no argument on rank 0 only.
    path : str or Path or None
        A MIGRelevance folder written by
        :func:`xplant.relevance.save_relevance` (safetensors + JSON),
        loaded on rank 0 only instead of calling ``make``. Nothing is
        unpickled from a file.

    Returns
    -------
    object
        The same object on every rank (sent from rank 0 with
        ``torch.distributed.broadcast_object_list``, i.e. pickled between the
        job's own processes, never read from disk); outside a distributed
        job, simply ``make()`` or the loaded relevance.

    Raises
    ------
    ValueError
        When neither ``make`` nor ``path`` is given, or ``path`` is not a
        folder.

    Examples
    --------
    >>> broadcast_from_rank0(lambda: {"vocabulary": 3})
    {'vocabulary': 3}
    """
    if make is None and path is None:
        raise ValueError("give make (a callable building the object) or path (a saved "
                         "MIGRelevance folder)")
    rank, world = rank_and_world()
    obj = None
    if rank == 0:
        if path is not None:
            obj = load_saved_relevance(path)
        else:
            obj = make()
    if world == 1:
        return obj
    box = [obj]
    device = None
    if torch.distributed.get_backend() == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    torch.distributed.broadcast_object_list(box, src=0, device=device)
    return box[0]


def load_saved_relevance(path):
    """A saved MIGRelevance: a folder written by ``save_relevance`` (no pickle).

    Raises
    ------
    ValueError
        When ``path`` is not a folder: a config never makes xplant unpickle
        a file (a pickle or joblib file can run code when loaded).
    """
    if not Path(path).is_dir():
        raise ValueError(f"relevance.path {path} is not a saved MIGRelevance folder; xplant loads "
                         "no pickle or joblib file from a config (loading one can run code). Save "
                         "the relevance with xplant.relevance.save_relevance(rel, folder) and give "
                         "that folder")
    from ...relevance import load_relevance
    return load_relevance(path)
