"""Training a PLANT estimator's network on DeepSpeed (ZeRO 0-3).

The estimator keeps its own pieces: the network ``module_``, the criterion
``criterion_``, the optimizer's named parameter groups and learning rates,
its learning-rate callbacks (progressive unfreezing, warmup + cosine), dev
scoring and early stopping. DeepSpeed replaces skorch's loop: data
parallelism, ZeRO partitioning, bf16, offload, gradient accumulation and
checkpoints.
"""

import copy
import logging
import math
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import EarlyStopping
from skorch.history import History
from torch.utils.data import DataLoader

from .._callbacks import ProgressiveUnfreezing, WarmupCosine
from ._config import resolve_deepspeed_config
from ._sampler import DistributedBucketSampler

logger = logging.getLogger("xplant.neural.distributed")

XPLANT_KEYS = ("checkpoint_dir", "resume")


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


def _find_callback(estimator, kind):
    for _, cb in estimator._default_callbacks:
        if isinstance(cb, kind):
            return cb
    return None


def _batch_config(cfg, batch_size, world):
    """Fill DeepSpeed's batch triple so one optimizer step sees ``batch_size`` documents."""
    gas = int(cfg.get("gradient_accumulation_steps", 1))
    micro = cfg.get("train_micro_batch_size_per_gpu")
    if "train_batch_size" in cfg:
        batch_size = int(cfg["train_batch_size"])
    elif micro is not None:
        batch_size = int(micro) * gas * world
    if batch_size % (gas * world):
        raise ValueError(f"the global batch ({batch_size} documents) must be a multiple of "
                         f"gradient_accumulation_steps ({gas}) x world size ({world}); change "
                         "batch_size or the DeepSpeed config")
    micro = batch_size // (gas * world)
    cfg.update(train_batch_size=batch_size, train_micro_batch_size_per_gpu=micro,
               gradient_accumulation_steps=gas)
    return batch_size, gas


def _move(x, device):
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: _move(v, device) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(_move(v, device) for v in x)
    return x.to(device)


def _forward(engine, x):
    return engine(**x) if isinstance(x, dict) else engine(x)


def _train_loss(estimator, y_pred, y):
    """The training loss; ``(logits, ranking scores)`` with ``stage1_weight`` > 0.

    Shortlist batches (targets as a dict of candidate targets) go through
    ``get_loss`` too.
    """
    if isinstance(y, dict):
        y_pred = tuple(t.float() for t in y_pred) if isinstance(y_pred, tuple) else y_pred.float()
        return estimator.get_loss(y_pred, y, training=True)
    if isinstance(y_pred, tuple):
        return estimator.get_loss(tuple(t.float() for t in y_pred), y, training=True)
    return estimator.criterion_(y_pred.float(), y)


class _ListSampler:
    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        for b in self.batches:
            yield b.tolist()

    def __len__(self):
        return len(self.batches)


def _param_groups(estimator):
    """The estimator's optimizer groups as fresh dicts (params, lr, name, ...)."""
    groups = []
    for g in estimator.optimizer_.param_groups:
        d = {k: v for k, v in g.items() if k not in ("initial_lr",)}
        d["params"] = list(g["params"])
        groups.append(d)
    return groups


def _gather_full_state(deepspeed, module):
    """Full fp32 (master) weights of every parameter, on CPU, on every rank.

    Collective: all ranks must call it. Trainable parameters come from the
    optimizer's fp32 master copy (ZeRO 1-3, bf16); frozen ones from the
    module (gathered under ZeRO-3).
    """
    from deepspeed.utils import safe_get_full_fp32_param
    out = {}
    for name, p in module.named_parameters():
        full = safe_get_full_fp32_param(p) if p.requires_grad else None
        if full is None:
            if hasattr(p, "ds_id"):
                with deepspeed.zero.GatheredParameters([p], modifier_rank=None):
                    full = p.data.detach().clone()
            else:
                full = p.data.detach().clone()
        out[name] = full.detach().to("cpu", torch.float32 if full.is_floating_point() else full.dtype)
    persistent = set(module.state_dict().keys())
    for name, b in module.named_buffers():
        if name in persistent:
            out[name] = b.detach().to("cpu").clone()
    return out


def _trainable_state(deepspeed, module):
    """Full fp32 copies of the trainable parameters (for the best epoch)."""
    from deepspeed.utils import safe_get_full_fp32_param
    out = {}
    for name, p in module.named_parameters():
        if not p.requires_grad:
            continue
        full = safe_get_full_fp32_param(p)
        if full is None:
            full = p.data
        out[name] = full.detach().to("cpu", torch.float32).clone()
    return out


def _load_state(estimator, state, dtypes):
    """Rebuild a plain ``module_`` (no DeepSpeed hooks) and load ``state`` into it."""
    estimator.initialize_module()
    module = estimator.module_
    own = module.state_dict()
    aliases = set()
    ptrs = {}
    for k, v in own.items():
        if v.data_ptr() in ptrs:
            aliases.add(k)
        ptrs.setdefault(v.data_ptr(), k)
    missing = [k for k in own if k not in state and k not in aliases]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        raise RuntimeError(f"gathered weights do not fit the rebuilt network: missing {missing[:5]}, "
                           f"unexpected {unexpected[:5]}")
    cast = {k: v.to(dtypes.get(k, v.dtype)) for k, v in state.items()}
    module.load_state_dict(cast, strict=False)
    module.to(estimator.device)
    estimator.initialize_optimizer()


def fit_deepspeed(estimator, train_dataset, dev_dataset=None, *, config=None, checkpoint_dir=None,
                  resume=False):
    """Train an initialised PLANT estimator's network with DeepSpeed.

    Called by ``PlantClassifier.fit`` and ``AttentionPlanter.fit`` with
    ``strategy="deepspeed"`` in place of skorch's loop, after the estimator
    has built ``module_``, ``criterion_`` and ``optimizer_``. Every rank runs
    it with the same estimator parameters and data (each rank then trains
    on its own shard of every global batch; :class:`DistributedBucketSampler`).

    Parameters
    ----------
    estimator : PlantClassifier or AttentionPlanter
        Initialised (``initialize()`` done). Its ``batch_size`` is the global
        batch (documents per optimizer step over all ranks and
        accumulation micro-steps), so a run on N processes takes the same
        steps as one process.
    train_dataset : TokenDataset or Stage1Dataset
        Batched by ``estimator.get_iterator``'s collate function.
    dev_dataset : dataset or None
        Scored after each epoch (``valid_loss``) on every rank, together
        with the estimator's dev callbacks (``valid_<scoring>`` or
        ``valid_attention_ndcg``) and early stopping.
    config : dict, str, Path or None
        DeepSpeed config overrides (see :func:`resolve_deepspeed_config`).
        Two xplant keys are read and removed: ``checkpoint_dir`` and
        ``resume``, used when the arguments below are None/False.
    checkpoint_dir : str or Path or None
        Where DeepSpeed's own ``save_checkpoint`` writes after each epoch
        (in a sub-folder named after the estimator's class; the previous
        epoch's checkpoint is removed).
    resume : bool, default=False
        Load the latest checkpoint there (weights, optimizer, epoch,
        history, sampler state) and continue to ``max_epochs``.

    Returns
    -------
    estimator
        With ``module_`` a plain ``torch.nn.Module`` on ``estimator.device``
        holding the full fp32 weights on every rank (ZeRO-3 partitions
        gathered), so prediction and saving need no DeepSpeed, and
        ``history`` holding ``train_loss`` (and dev entries) per epoch as
        skorch records them.

    Raises
    ------
    ImportError
        When deepspeed is not installed.
    ValueError
        When the global batch is not a multiple of accumulation x world size.
    FloatingPointError
        On a non-finite training loss.
    FileNotFoundError
        ``resume=True`` without a checkpoint to resume from.

    Notes
    -----
    Progressive unfreezing: ZeRO fixes the set of trained parameters when
    the engine is built, so a group not yet unfrozen trains with learning
    rate 0 (its weights do not move) instead of ``requires_grad=False``;
    AdamW's moment estimates of that group do see its gradients meanwhile.
    With all phases starting together the result equals the skorch path.
    The dev set is scored on every rank (replicated), which ZeRO-3 needs
    (every rank joins each forward) and keeps early stopping identical on
    all ranks.
    """
    deepspeed = import_deepspeed()
    init_distributed(deepspeed)
    rank, world = rank_and_world()
    cfg = resolve_deepspeed_config(config)
    if checkpoint_dir is None:
        checkpoint_dir = cfg.get("checkpoint_dir")
    resume = resume or bool(cfg.get("resume", False))
    for k in XPLANT_KEYS:
        cfg.pop(k, None)
    batch_size, gas = _batch_config(cfg, estimator.batch_size, world)
    opt = cfg.get("optimizer")
    if opt is not None:
        params = opt.setdefault("params", {})
        params.setdefault("lr", estimator.effective_lr())
        # the estimator's optimizer__weight_decay, else AdamW's default 0.01 as in the skorch loop
        params.setdefault("weight_decay",
                          float(estimator.get_params_for("optimizer").get("weight_decay", 0.01)))
    verbose = bool(getattr(estimator, "verbose", 0)) and rank == 0

    module = estimator.module_
    dtypes = {k: v.dtype for k, v in module.state_dict().items()}
    groups = _param_groups(estimator)
    names = [g.get("name", str(i)) for i, g in enumerate(groups)]
    if opt is not None:
        engine, optimizer, _, _ = deepspeed.initialize(model=module, model_parameters=groups,
                                                       config=cfg)
    else:
        engine, optimizer, _, _ = deepspeed.initialize(model=module,
                                                       optimizer=estimator.optimizer_, config=cfg)
    device = engine.device
    user_device = estimator.device
    estimator.device = str(device)

    collate = estimator.get_iterator(train_dataset, training=False).collate_fn
    sampler = DistributedBucketSampler(train_dataset.lengths(), batch_size, world, rank,
                                       accumulation=gas, shuffle=True,
                                       generator=copy.deepcopy(estimator.rng_))
    phases = _find_callback(estimator, ProgressiveUnfreezing)
    warm = _find_callback(estimator, WarmupCosine)
    stopper = _find_callback(estimator, EarlyStopping)
    dev_cbs = [cb for _, cb in estimator._default_callbacks
               if type(cb).__name__ in ("DevScoring", "AttentionNDCG")]
    # PlantClassifier's dev scoring also gives valid_loss from the same logits
    # (_dev_scores): a loss pass of its own would read dev twice per epoch
    loss_pass = not (hasattr(estimator, "_dev_scores")
                     and any(type(cb).__name__ == "DevScoring" for cb in dev_cbs))
    base_lrs = [g["lr"] for g in groups]
    n_steps = math.ceil(len(train_dataset) / batch_size)
    if warm is not None:
        warm.total_ = max(1, n_steps * estimator.max_epochs)

    history = History()
    start_epoch, step = 0, 0
    best = {"score": None, "epoch": None, "misses": 0, "state": None}
    ckpt_root = None if checkpoint_dir is None else Path(checkpoint_dir) / type(estimator).__name__
    if resume:
        if ckpt_root is None or not (ckpt_root / "latest").is_file():
            raise FileNotFoundError(f"resume=True but there is no DeepSpeed checkpoint under "
                                    f"{ckpt_root}; train once with checkpoint_dir set first")
        tag = (ckpt_root / "latest").read_text().strip()
        if not re.fullmatch(r"epoch_[0-9]+", tag) or not (ckpt_root / tag).is_dir():
            raise ValueError(f"{ckpt_root / 'latest'} must name a checkpoint folder epoch_<N> "
                             f"beside it, got {tag[:80]!r}; delete the checkpoint folder to start over")
        _read_checkpoints_without_pickle(engine)
        _, client = engine.load_checkpoint(str(ckpt_root), tag=tag)
        history = History(client["history"])
        start_epoch, step = client["epoch"], client["step"]
        sampler.generator.bit_generator.state = client["sampler_rng"]
        estimator.rng_.bit_generator.state = client["rng"]
        best = client["best"]
        if rank == 0:
            logger.info("resumed from %s at epoch %d", ckpt_root, start_epoch)
    estimator.history = history

    def set_lrs(epoch, step):
        lrs = list(base_lrs)
        if phases is not None:
            active = {}
            plan = phases.phases if phases.phases is not None else estimator.phases_
            for start, group, lr in sorted(plan, key=lambda p: p[0]):
                if start <= epoch:
                    active[group] = lr
            lrs = [active.get(n, 0.0) for n in names]
        if warm is not None:
            f = warm.factor(step)
            lrs = [lr * f for lr in lrs]
        for g, lr in zip(engine.optimizer.param_groups, lrs):
            g["lr"] = lr
        return lrs

    try:
        stop = False
        for epoch in range(start_epoch, estimator.max_epochs):
            if stop:
                break
            t0 = time.time()
            history.new_epoch()
            history.record("epoch", epoch + 1)
            if phases is not None:
                lrs = set_lrs(epoch, step)
                history.record("trainable_groups", sorted(n for n, lr in zip(names, lrs) if lr > 0))
            plan = sampler.epoch_plan()
            loader = DataLoader(train_dataset, batch_sampler=_ListSampler([p[0] for p in plan]),
                                collate_fn=collate)
            engine.train()
            bar = None
            if verbose:
                from tqdm.auto import tqdm
                bar = tqdm(total=len(plan) // gas, desc=f"epoch {epoch + 1}", leave=False)
            acc, losses, sizes = 0.0, [], []
            for i, ((x, y), (idx, w)) in enumerate(zip(loader, plan)):
                if warm is not None and i % gas == 0:
                    set_lrs(epoch, step)
                x, y = _move(x, device), _move(y, device)
                y_pred = _forward(engine, x)
                loss = _train_loss(estimator, y_pred, y)
                engine.backward(loss * w)
                engine.step()
                acc += float(loss.detach()) * w / (world * gas)
                if (i + 1) % gas == 0:
                    t = torch.tensor([acc], dtype=torch.float64, device=device)
                    if world > 1:
                        torch.distributed.all_reduce(t)
                    value = float(t.item())
                    if not math.isfinite(value):
                        raise FloatingPointError(
                            f"non-finite training loss at epoch {epoch + 1}, step {step + 1}; lower "
                            "the learning rate or check the inputs. The last checkpoint (if any) is kept.")
                    n_batch = min(batch_size, len(train_dataset) - (i // gas) * batch_size)
                    history.new_batch()
                    history.record_batch("train_loss", value)
                    history.record_batch("train_batch_size", n_batch)
                    losses.append(value)
                    sizes.append(n_batch)
                    acc = 0.0
                    step += 1
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(loss=f"{value:.4f}")
            if bar is not None:
                bar.close()
            history.record("train_loss", float(np.average(losses, weights=sizes)))
            if dev_dataset is not None:
                engine.eval()
                if loss_pass:
                    history.record("valid_loss", _dev_loss(engine, estimator, dev_dataset, device))
                for cb in dev_cbs:
                    cb.on_epoch_end(estimator)
                engine.train()
            if stopper is not None and dev_dataset is not None:
                score = history[-1].get(stopper.monitor)
                if score is not None:
                    improved = (best["score"] is None or
                                _improved(score, best["score"], stopper))
                    if improved:
                        best.update(score=score, epoch=epoch + 1, misses=0,
                                    state=_trainable_state(deepspeed, engine.module)
                                    if stopper.load_best else None)
                    else:
                        best["misses"] += 1
                    history.record(stopper.monitor + "_best", bool(improved))
                    stop = best["misses"] >= stopper.patience
            history.record("dur", time.time() - t0)
            if verbose:
                row = history[-1]
                keys = [k for k in ("train_loss", "valid_loss", *(k for k in row if k.startswith("valid_")
                                                                  and not k.endswith("_best")))]
                msg = "  ".join(f"{k}={row[k]:.4f}" for k in dict.fromkeys(keys) if k in row)
                logger.info("epoch %d  %s  dur=%.1fs", epoch + 1, msg, row["dur"])
            if ckpt_root is not None:
                client = {"history": list(history), "epoch": epoch + 1, "step": step,
                          "sampler_rng": sampler.generator.bit_generator.state,
                          "rng": estimator.rng_.bit_generator.state, "best": best}
                tag = f"epoch_{epoch + 1}"
                engine.save_checkpoint(str(ckpt_root), tag=tag, client_state=client)
                if world > 1:
                    torch.distributed.barrier()
                if rank == 0:
                    for old in ckpt_root.glob("epoch_*"):
                        if old.name != tag and old.is_dir():
                            shutil.rmtree(old, ignore_errors=True)
        state = _gather_full_state(deepspeed, engine.module)
        if best["state"] is not None and best["epoch"] != len(history):
            state.update(best["state"])
    finally:
        estimator.device = user_device
    if hasattr(engine, "destroy"):
        engine.destroy()
    del engine, optimizer
    _load_state(estimator, state, dtypes)
    return estimator


def _deepspeed_checkpoint_types():
    """The few non-tensor types a DeepSpeed checkpoint of this trainer holds."""
    import collections
    out = [collections.OrderedDict, torch.Size]
    try:
        from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler, LossScaler
        out += [LossScaler, DynamicLossScaler]
    except ImportError:
        pass
    try:
        from deepspeed.runtime.zero.config import ZeroStageEnum
        out.append(ZeroStageEnum)
    except ImportError:
        pass
    try:                       # ZeRO-1/2: the optimizer's parameter slice mappings
        from deepspeed.utils.tensor_fragment import fragment_address
        out.append(fragment_address)
    except ImportError:
        pass
    return out


def _read_checkpoints_without_pickle(engine):
    """Make ``engine`` read its checkpoint files with ``torch.load(weights_only=True)``.

    DeepSpeed's own engine loads with ``weights_only=False``, i.e. full
    pickle: a checkpoint file could run code. This reader accepts tensors,
    plain containers and numbers, and the listed DeepSpeed state classes
    (:func:`_deepspeed_checkpoint_types`), nothing else.
    """
    types = _deepspeed_checkpoint_types()

    def load(path, map_location=None):
        with torch.serialization.safe_globals(types):
            return torch.load(path, map_location=map_location, weights_only=True)
    engine.checkpoint_engine.load = load


def _improved(score, best, stopper):
    """skorch's EarlyStopping rule (threshold, relative or absolute)."""
    change = stopper.threshold * best if stopper.threshold_mode == "rel" else stopper.threshold
    if stopper.lower_is_better:
        return score < best - change
    return score > best + change


@torch.no_grad()
def _dev_loss(engine, estimator, dataset, device):
    total, n = 0.0, 0
    for x, y in estimator.get_iterator(dataset, training=False):
        x, y = _move(x, device), _move(y, device)
        loss = estimator.criterion_(_forward(engine, x).float(), y)
        b = len(x["ids"]) if isinstance(x, dict) else len(x)
        total += float(loss) * b
        n += b
    return total / max(n, 1)
