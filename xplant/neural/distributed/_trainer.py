"""DeepSpeed (ZeRO 0-3) inside skorch's own training loop.

A DeepSpeed fit runs the same ``NeuralNet.partial_fit`` as a skorch fit:
the same epochs, callbacks (progressive unfreezing, warmup and cosine
decay, dev scoring, early stopping, the finite-loss guard), history and
dev choices. What changes is handed over through the estimator's skorch
hooks (:class:`~xplant.neural._base.PlantNetBase`) to a
:class:`DeepSpeedRun` while one trains:

- ``train_step``: the engine's ``backward`` and ``step`` over this rank's
  micro-batches of one global batch (:meth:`DeepSpeedRun.train_step`);
- ``get_iterator(training=True)``: the global batches of
  :class:`DistributedBucketSampler`, each rank its shard
  (:meth:`DeepSpeedRun.train_batches`);
- ``get_default_callbacks``: rank 0's record of every epoch, DeepSpeed's
  own checkpoints, progress output on rank 0 only
  (:func:`deepspeed_callbacks`);
- ``module_`` and ``optimizer_`` are the engine's while it trains
  (:class:`EngineModule`, the engine's optimizer, whose per-group learning
  rates the callbacks set as they set the torch optimizer's).

At the end the full fp32 weights are gathered into a plain ``module_``.
"""

import copy
import logging
import re
import shutil
from pathlib import Path

import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, PrintLog, ProgressBar
from skorch.history import History
from torch.utils.data import DataLoader

from ..training._checkpoint import TrainingCheckpoint, callback_states, stopped_early
from ..._params import to_python
from ._config import deepspeed_config_of, resolve_deepspeed_config
from ._group import import_deepspeed, init_distributed, rank_and_world
from ._sampler import DistributedBucketSampler
from ._share import broadcast_from_rank0

logger = logging.getLogger("xplant.neural.distributed")

XPLANT_KEYS = ("checkpoint_dir", "resume")


def deepspeed_options(strategy):
    """What a DeepSpeed ``strategy`` parameter asks for: (config, checkpoint folder, resume).

    The config is :func:`resolve_deepspeed_config` of the strategy's
    overrides without xplant's two keys ``checkpoint_dir`` (None: no
    checkpoints) and ``resume`` (default False), which are returned beside it.
    """
    cfg = resolve_deepspeed_config(deepspeed_config_of(strategy))
    checkpoint_dir, resume = cfg.get("checkpoint_dir"), bool(cfg.get("resume", False))
    for k in XPLANT_KEYS:
        cfg.pop(k, None)
    return cfg, checkpoint_dir, resume


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


def _param_groups(estimator):
    """The estimator's optimizer groups as fresh dicts (params, lr, name, ...)."""
    groups = []
    for g in estimator.optimizer_.param_groups:
        d = {k: v for k, v in g.items() if k not in ("initial_lr",)}
        d["params"] = list(g["params"])
        groups.append(d)
    return groups


def _gather_full_state(deepspeed, module, *, trained_only=False):
    """Full fp32 (master) weights of every parameter, on CPU, on every rank.

    Collective: all ranks must call it. Trainable parameters come from the
    optimizer's fp32 master copy (ZeRO 1-3, bf16); frozen ones from the
    module (gathered under ZeRO-3), unless ``trained_only`` leaves them out
    (an LLM's frozen base weights do not change while LoRA trains).
    """
    from deepspeed.utils import safe_get_full_fp32_param
    out = {}
    for name, p in module.named_parameters():
        if trained_only and not p.requires_grad:
            continue
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


class StepBatch:
    """One optimizer step of one rank: its micro-batches and the global batch's size.

    ``micro`` holds ``((X, y), loss weight)`` per accumulation micro-step
    (weights of :class:`DistributedBucketSampler`); ``len()`` is the number
    of documents of the global batch, which skorch records as the step's
    ``train_batch_size``.
    """

    def __init__(self, micro, n_docs):
        self.micro = micro
        self.n_docs = int(n_docs)

    def __len__(self):
        return self.n_docs


class StepBatches:
    """The training iterator of a DeepSpeed fit: one :class:`StepBatch` per optimizer step.

    skorch's loop walks it once per epoch; every walk draws the epoch's
    global batches from the sampler (same on every rank) and loads this
    rank's micro-batches with a DataLoader (``iterator_train__`` keys).
    """

    def __init__(self, dataset, sampler, collate, **loader):
        self.dataset, self.sampler, self.collate, self.loader = dataset, sampler, collate, loader

    def __iter__(self):
        steps = self.sampler.epoch_steps()
        micro = [idx.tolist() for _, chunks in steps for idx, _ in chunks]
        batches = iter(DataLoader(self.dataset, batch_sampler=micro, collate_fn=self.collate,
                                  **self.loader))
        for n_docs, chunks in steps:
            yield StepBatch([(next(batches), w) for _, w in chunks], n_docs)

    def __len__(self):
        return len(self.sampler) // self.sampler.accumulation


class EngineModule(torch.nn.Module):
    """The estimator's ``module_`` while a DeepSpeed fit trains: its network behind the engine.

    ``forward`` runs through the engine and returns float32 outputs (a
    bf16 network's loss and dev scores are computed in fp32, as on the
    skorch path). ``state_dict()`` is what training changes: the trained
    parameters' full fp32 values, gathered from ZeRO's partitions, and the
    buffers (collective: every rank calls it, as early stopping does on the
    same epochs everywhere); frozen parameters are left out.
    ``load_state_dict`` sets the weights the fit ends with (early
    stopping's best epoch): they go into the plain network when training
    ends, over the gathered full state.
    """

    def __init__(self, run):
        super().__init__()
        self.engine = run.engine
        self.run_ = run

    def forward(self, *args, **kwargs):
        out = self.engine(*args, **kwargs)
        return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()

    def state_dict(self, *args, **kwargs):
        return _gather_full_state(self.run_.deepspeed, self.engine.module, trained_only=True)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        self.run_.final_state = dict(state_dict)
        return torch.nn.modules.module._IncompatibleKeys([], [])


class DeepSpeedRun:
    """One DeepSpeed training call of an estimator: the engine and what the hooks need.

    Built by :func:`fit_deepspeed` from the estimator's initialised
    ``module_`` and optimizer groups; while it lives, ``estimator.module_``
    is an :class:`EngineModule`, ``estimator.optimizer_`` the engine's
    optimizer and ``estimator.device`` the engine's device.
    """

    def __init__(self, estimator, deepspeed):
        self.deepspeed = deepspeed
        cfg, _, self.resume = deepspeed_options(estimator.strategy)
        self.rank, self.world = rank_and_world()
        self.batch_size, self.gas = _batch_config(cfg, estimator.batch_size, self.world)
        opt = cfg.get("optimizer")
        if opt is not None:
            params = opt.setdefault("params", {})
            params.setdefault("lr", estimator.effective_lr())
            # the estimator's optimizer__weight_decay, else AdamW's default 0.01 as on the skorch path
            params.setdefault("weight_decay",
                              float(estimator.get_params_for("optimizer").get("weight_decay", 0.01)))
        module = estimator.module_
        self.dtypes = {k: v.dtype for k, v in module.state_dict().items()}
        if opt is not None:
            engine, _, _, _ = deepspeed.initialize(model=module, config=cfg,
                                                   model_parameters=_param_groups(estimator))
        else:
            engine, _, _, _ = deepspeed.initialize(model=module, optimizer=estimator.optimizer_,
                                                   config=cfg)
        _checkpoints_through_the_codec(engine)
        self.engine = engine
        self.sampler = self.sampler_state = self.final_state = self.saved_epoch = None
        self.user_device, self.user_optimizer = estimator.device, estimator.optimizer_
        estimator.device = str(engine.device)
        estimator.module_ = EngineModule(self)
        estimator.optimizer_ = engine.optimizer
        estimator._deepspeed_run_ = self

    # -- the hooks of skorch's loop ------------------------------------------------
    def train_batches(self, estimator, dataset, collate, *, min_docs=None, max_docs=None,
                      **loader):
        """``get_iterator(dataset, training=True)``: this rank's share of every global batch.

        The global batches are drawn as a one-process fit draws them
        (length buckets, ``iterator_train__min_epoch_docs`` and
        ``max_epoch_docs``), from a copy of ``rng_`` that is the same on
        every rank (each rank's own ``rng_`` also samples the documents of
        its shard).
        """
        self.sampler = DistributedBucketSampler(
            dataset.lengths(), self.batch_size, self.world, self.rank, accumulation=self.gas,
            shuffle=True, generator=copy.deepcopy(estimator.rng_), min_docs=min_docs,
            max_docs=max_docs)
        if self.sampler_state is not None:            # resumed
            self.sampler.generator.bit_generator.state = self.sampler_state
        return StepBatches(dataset, self.sampler, collate, **loader)

    def train_step(self, estimator, batch, **fit_params):
        """One optimizer step: ``engine.backward`` and ``engine.step`` per micro-batch.

        Each micro-batch's loss is the estimator's ``get_loss``, weighted so
        that the data-parallel mean gradient is the gradient of the global
        batch's mean loss; the returned ``loss`` is that global mean (the
        same on every rank), which skorch records as the step's
        ``train_loss``.
        """
        estimator._set_training(True)
        total, y_pred = 0.0, None
        for (Xi, yi), weight in batch.micro:
            y_pred = estimator.infer(Xi, **fit_params)
            loss = estimator.get_loss(y_pred, yi, X=Xi, training=True)
            self.engine.backward(loss * weight)
            self.engine.step()
            total += float(loss.detach()) * weight / (self.world * self.gas)
        loss = torch.tensor([total], dtype=torch.float64, device=self.engine.device)
        if self.world > 1:
            torch.distributed.all_reduce(loss)
        return {"loss": loss[0], "y_pred": y_pred}

    def full_state(self):
        """The network's full fp32 state on CPU (collective)."""
        return _gather_full_state(self.deepspeed, self.engine.module)

    # -- checkpoints ------------------------------------------------------------------
    def save(self, estimator, folder):
        """DeepSpeed's ``save_checkpoint`` into ``folder/epoch_<n>`` (the older ones removed).

        The client state holds what the skorch path's checkpoint holds
        beside the weights and the optimizer: the history, the numpy and
        torch generators, the sampler's generator, early stopping's counters
        and best weights, the warmup schedule, and whether early stopping
        ended the training.
        """
        folder = Path(folder)
        epoch = len(estimator.history)
        es_state, best, schedule = callback_states(estimator)
        # plain Python and tensors only: the reader unpickles nothing else
        client = to_python({"history": estimator.history.to_list(), "epoch": epoch,
                            "stopped_early": stopped_early(estimator),
                            "rng": estimator.rng_.bit_generator.state,
                            "sampler_rng": (None if self.sampler is None
                                            else self.sampler.generator.bit_generator.state),
                            "early_stopping": es_state, "schedule": schedule})
        client.update(torch_rng=torch.get_rng_state(), best=best)
        tag = f"epoch_{epoch}"
        self.engine.save_checkpoint(str(folder), tag=tag, client_state=client)
        self.saved_epoch = epoch
        if self.world > 1:
            torch.distributed.barrier()
        if self.rank == 0:
            for old in folder.glob("epoch_*"):
                if old.name != tag and old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)

    def load(self, estimator, folder):
        """Load the latest checkpoint of ``folder``; return the epochs left to train.

        Those are ``max_epochs`` less the epochs done, none after early
        stopping ended the training.

        Raises
        ------
        ValueError
            When ``latest`` does not name an ``epoch_<n>`` folder beside it.
        """
        folder = Path(folder)
        tag = (folder / "latest").read_text().strip()
        if not re.fullmatch(r"epoch_[0-9]+", tag) or not (folder / tag).is_dir():
            raise ValueError(f"{folder / 'latest'} must name a checkpoint folder epoch_<N> "
                             f"beside it, got {tag[:80]!r}; delete the checkpoint folder to start over")
        _, client = self.engine.load_checkpoint(str(folder), tag=tag)
        estimator.history = History(client["history"])
        estimator.rng_.bit_generator.state = client["rng"]
        torch.set_rng_state(client["torch_rng"])
        self.sampler_state, self.saved_epoch = client["sampler_rng"], client["epoch"]
        # handed to early stopping and the schedule when training begins (TrainingCheckpoint)
        estimator._resume_early_stopping_ = (client["early_stopping"], client["best"])
        estimator._resume_schedule_ = client["schedule"]
        if self.rank == 0:
            logger.info("resumed from %s at epoch %d", folder, client["epoch"])
        return 0 if client["stopped_early"] else max(0, estimator.max_epochs - len(estimator.history))

    # -- the end ----------------------------------------------------------------------
    def close(self, estimator, *, gather=True):
        """Give the estimator back its own device and a plain ``module_``.

        With ``gather`` (training ended) the module holds the full fp32
        weights (early stopping's best ones where it restored them) on every
        rank; without (an error), it is the engine's network as it stands.
        """
        try:
            state = None
            if gather:
                state = self.full_state()
                state.update(self.final_state or {})
        finally:
            estimator._deepspeed_run_ = None
            estimator.device = self.user_device
            estimator.module_ = self.engine.module
            estimator.optimizer_ = self.user_optimizer
            if hasattr(self.engine, "destroy"):
                self.engine.destroy()
            self.engine = None
        if state is not None:
            _load_state(estimator, state, self.dtypes)


def fit_deepspeed(estimator, dataset, **fit_params):
    """Train an initialised PLANT estimator's network on DeepSpeed, in skorch's own loop.

    What ``_continue_training`` (every fit's training call, each
    ``stage1_weight="dev"`` candidate's included) runs with a DeepSpeed
    ``strategy``: the engine is built from the estimator's ``module_`` and
    optimizer groups, then skorch's ``partial_fit`` trains with the
    estimator's hooks handing the step, the batches and the callbacks to a
    :class:`DeepSpeedRun`. Every rank runs it with the same parameters and
    data and trains on its own shard of every global batch.

    Parameters
    ----------
    estimator : PlantClassifier or AttentionPlanter
        Initialised (``initialize()`` done), with a DeepSpeed ``strategy``.
        Its ``batch_size`` is the global batch (documents per optimizer step
        over all ranks and accumulation micro-steps), so a run on N
        processes takes the same steps as one process.
    dataset : TokenDataset, CandidateDataset, AnchoredDataset or Stage1Dataset
        The training dataset (batched by ``estimator.get_iterator``).
    **fit_params
        skorch's ``partial_fit`` keywords (``epochs``).

    Returns
    -------
    estimator
        With ``module_`` a plain ``torch.nn.Module`` on ``estimator.device``
        holding the full fp32 weights on every rank (ZeRO-3 partitions
        gathered; early stopping's best epoch where it stopped), so
        prediction and saving need no DeepSpeed, and ``history`` as a skorch
        fit records it.

    Raises
    ------
    ImportError
        When deepspeed is not installed.
    TypeError
        For the keywords of the former loop (``dev_dataset``, ``config``,
        ``checkpoint_dir``, ``resume``): they come from the estimator now.
    ValueError
        When the global batch is not a multiple of accumulation x world
        size, or a checkpoint's ``latest`` names no ``epoch_<n>`` folder.
    FloatingPointError
        On a non-finite training loss (the estimator's ``FiniteLossGuard``).

    Notes
    -----
    The strategy's config may name a ``checkpoint_dir``: DeepSpeed's own
    checkpoint is then written after every epoch under
    ``<checkpoint_dir>/<EstimatorClass>`` (each ``stage1_weight="dev"``
    candidate in its own ``stage1_weight=<w>`` folder below), and with
    ``resume: true`` a fit continues from the latest one there (one that
    ended is not trained again; none yet: from the start).

    Progressive unfreezing: ZeRO fixes the set of trained parameters when
    the engine is built, so a group not yet unfrozen trains with learning
    rate 0 (its weights do not move) instead of ``requires_grad=False``;
    AdamW's moment estimates of that group do see its gradients meanwhile.
    With all phases starting together the result equals the skorch path.
    """
    former = sorted(set(fit_params) & {"dev_dataset", "config", "checkpoint_dir", "resume"})
    if former:
        raise TypeError(f"fit_deepspeed takes no {', '.join(former)} any more: the estimator's "
                        "dev data and strategy=DeepSpeedStrategy(config={..., 'checkpoint_dir': "
                        "..., 'resume': ...}) give them")
    deepspeed = import_deepspeed()
    init_distributed(deepspeed)
    run = DeepSpeedRun(estimator, deepspeed)
    try:
        ckpt = dict(estimator.callbacks_).get("checkpoint")
        if run.resume and isinstance(ckpt, DeepSpeedCheckpoint) and \
                (Path(ckpt.folder) / "latest").is_file():
            fit_params["epochs"] = run.load(estimator, ckpt.folder)
        NeuralNet.partial_fit(estimator, dataset, None, **fit_params)
    except BaseException:
        run.close(estimator, gather=False)
        raise
    run.close(estimator)
    return estimator


# -- callbacks of a DeepSpeed fit ---------------------------------------------------------
class RankZeroRecord(Callback):
    """Every rank keeps rank 0's record of each epoch (dev scores, losses, timing).

    Placed before early stopping and the checkpoint, so that the decisions
    that read the epoch's record (early stopping, the best epoch, the
    ``stage1_weight`` choice) are rank 0's on every rank and the ranks
    never diverge, whatever each rank computed for itself.
    """

    def on_epoch_end(self, net, **kwargs):
        if rank_and_world()[1] == 1:
            return
        own = {k: v for k, v in net.history[-1].items() if k != "batches"}
        for key, value in broadcast_from_rank0(lambda: own).items():
            net.history.record(key, value)


class DeepSpeedCheckpoint(TrainingCheckpoint):
    """DeepSpeed's own checkpoint after every epoch and after early stopping's last one.

    Written by :meth:`DeepSpeedRun.save` into ``folder``; resuming hands
    early stopping and the schedule their state back as
    :class:`~xplant.neural.training._checkpoint.TrainingCheckpoint` does.
    """

    def on_epoch_end(self, net, **kwargs):
        net._deepspeed_run_.save(net, self.folder)

    def on_train_end(self, net, X=None, y=None, **kwargs):
        run = net._deepspeed_run_          # early stopping's last epoch is not saved yet
        if stopped_early(net) and run.saved_epoch != len(net.history):
            run.save(net, self.folder)


def deepspeed_callbacks(estimator, callbacks):
    """The estimator's default callbacks as a DeepSpeed fit runs them.

    - :class:`RankZeroRecord` goes before early stopping (at the end
      without one);
    - the checkpoint is :class:`DeepSpeedCheckpoint` in
      ``<checkpoint_dir>/<EstimatorClass>`` when the strategy's config
      names a ``checkpoint_dir``, after early stopping; an xplant
      checkpoint cannot hold ZeRO's partitioned optimizer, so the
      estimator's own ``checkpoint_dir`` writes none under DeepSpeed;
    - progress bars and epoch tables are printed by rank 0 only.

    Parameters
    ----------
    estimator : PlantNetBase
    callbacks : list of (name, callback)

    Returns
    -------
    list of (name, callback)
    """
    _, folder, _ = deepspeed_options(estimator.strategy)
    rank = rank_and_world()[0]
    out = [(name, cb) for name, cb in callbacks if name != "checkpoint"
           and not (rank and isinstance(cb, (ProgressBar, PrintLog)))]
    names = [name for name, _ in out]
    at = names.index("early_stopping") if "early_stopping" in names else len(out)
    out.insert(at, ("rank0_record", RankZeroRecord()))
    if folder is not None:
        out.insert(at + 1 + ("early_stopping" in names),
                   ("checkpoint", DeepSpeedCheckpoint(Path(folder) / type(estimator).__name__)))
    return out


# -- reading checkpoints without pickle ---------------------------------------------------
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


def _checkpoints_through_the_codec(engine):
    """Make ``engine`` write and read its checkpoint files through xplant's codec.

    DeepSpeed's own checkpoint engine writes each file (the module's states,
    each rank's ZeRO shard) with ``torch.save`` and reads it with
    ``weights_only=False``, i.e. full pickle: a checkpoint file could run
    code. Here each file is written by
    :func:`xplant.persistence._codec.write_state` (one safetensors file under
    DeepSpeed's own name: its tensors, and the structure around them as
    JSON) and read back by ``read_state``, which makes no class but the
    listed DeepSpeed state classes (:func:`_deepspeed_checkpoint_types`).
    """
    from ...persistence._codec import read_state, write_state
    types = _deepspeed_checkpoint_types()

    def save(state_dict, path):
        write_state(path, state_dict, types=types)

    def load(path, map_location=None):
        return read_state(path, types=types, map_location=map_location)
    engine.checkpoint_engine.save = save
    engine.checkpoint_engine.load = load
