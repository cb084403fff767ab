"""The job's process group: start it, ask the rank, end it."""

import os

import torch


def import_deepspeed():
    """Import deepspeed, or raise an ImportError naming the extra to install."""
    try:
        import deepspeed
    except ImportError as exc:
        raise ImportError("strategy='deepspeed' needs DeepSpeed: pip install 'xplant[deepspeed]' "
                          "(on a CPU-only machine also set DS_ACCELERATOR=cpu)") from exc
    return deepspeed


def is_distributed():
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def rank_and_world():
    """(rank, world size); (0, 1) outside a distributed job."""
    if is_distributed():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def shutdown_distributed():
    """End this process's part of the process group, if one is running (idempotent).

    A gloo process group runs C++ threads of its own. Left to the
    interpreter's exit, they are destroyed while still joinable, and the
    process can abort after its work is done ("terminate called without an
    active exception"), intermittently, by the order of the exit handlers.
    A process that started the group (``xplant train``, a worker) calls this
    last: a barrier, so no rank leaves while another still talks to it,
    then ``destroy_process_group``.
    """
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def init_distributed(deepspeed=None, *, shm_comm=None):
    """Start the process group from the launcher's environment (idempotent).

    Works under ``deepspeed`` (``--num_gpus``, ``--hostfile``), ``torchrun``
    and a plain single process (a 1-process group on a free local port).
    The backend is the accelerator's: NCCL on CUDA, gloo on CPU.

    Parameters
    ----------
    deepspeed : module or None
        The imported ``deepspeed`` package; None imports it.
    shm_comm : bool or None
        On CPU, DeepSpeed compiles a shared-memory all-reduce op (minutes,
        once, then cached). None builds it only for several processes;
        False never (gloo alone).
    """
    ds = deepspeed or import_deepspeed()
    if is_distributed():
        return
    if shm_comm is None:
        shm_comm = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if not shm_comm:
        import deepspeed.ops
        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    if "RANK" not in os.environ:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        if "MASTER_PORT" not in os.environ:
            import socket
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")
    from deepspeed.accelerator import get_accelerator
    acc = get_accelerator()
    if acc.device_name() != "cpu":
        acc.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    ds.init_distributed(dist_backend=acc.communication_backend_name(), verbose=False)
