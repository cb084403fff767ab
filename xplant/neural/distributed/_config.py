"""DeepSpeed configuration: a sensible default, overridable by a dict or a file."""

import copy
import numbers
from pathlib import Path

from sklearn.base import BaseEstimator

BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")


def default_deepspeed_config(*, zero_stage=2, bf16=False, offload_optimizer=False,
                             offload_param=False, gradient_accumulation_steps=1,
                             train_micro_batch_size_per_gpu=None, gradient_clipping=0.0,
                             torch_adam=True, lr=None, weight_decay=None, steps_per_print=10 ** 9):
    """The DeepSpeed config that :func:`fit_deepspeed` uses unless told otherwise.

    Parameters
    ----------
    zero_stage : {0, 1, 2, 3}, default=2
        ZeRO stage: 1 partitions optimizer states, 2 also gradients, 3 also
        the parameters (Rajbhandari et al., "ZeRO", SC 2020).
    bf16 : bool, default=False
        Train in bfloat16 with fp32 master weights (GPU; on CPU fp32 is used
        in tests so results compare exactly).
    offload_optimizer, offload_param : bool, default=False
        ZeRO-Offload of optimizer states (stage >= 1) and of parameters
        (stage 3 only) to CPU memory.
    gradient_accumulation_steps : int, default=1
        Micro-batches per optimizer step on each rank.
    train_micro_batch_size_per_gpu : int or None
        Documents per rank and micro-step. None lets :func:`fit_deepspeed`
        derive it from the estimator's ``batch_size``, which is then the
        global batch (documents per optimizer step over all ranks), as in a
        single-process skorch run.
    gradient_clipping : float, default=0.0
        Global gradient-norm clip; 0 disables it (the skorch path clips
        nothing either).
    torch_adam : bool, default=True
        Use ``torch.optim.AdamW`` rather than DeepSpeed's fused or CPU Adam,
        which are C++/CUDA ops compiled on first use.
    lr, weight_decay : float or None
        Defaults of the optimizer section; None takes them from the estimator.
    steps_per_print : int
        DeepSpeed's own step log (off by default; xplant logs per epoch).

    Returns
    -------
    dict
        A JSON-serialisable DeepSpeed config.

    Raises
    ------
    ValueError
        For a ZeRO stage outside 0..3, parameter offload below stage 3, or a
        non-positive accumulation or micro-batch size.

    Examples
    --------
    >>> cfg = default_deepspeed_config(zero_stage=3, bf16=True)
    >>> cfg["zero_optimization"]["stage"], cfg["bf16"]["enabled"]
    (3, True)
    >>> cfg["optimizer"]["params"]["torch_adam"]
    True
    """
    if zero_stage not in (0, 1, 2, 3) or isinstance(zero_stage, bool):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    if offload_param and zero_stage != 3:
        raise ValueError("offload_param needs zero_stage=3 (only ZeRO-3 partitions parameters)")
    if offload_optimizer and zero_stage == 0:
        raise ValueError("offload_optimizer needs zero_stage >= 1")
    for name, v in (("gradient_accumulation_steps", gradient_accumulation_steps),
                    ("train_micro_batch_size_per_gpu", train_micro_batch_size_per_gpu)):
        if v is not None and (not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1):
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    zero = {"stage": int(zero_stage)}
    if zero_stage >= 2:
        zero.update({"overlap_comm": False, "contiguous_gradients": True})
    if zero_stage == 3:
        zero.update({"stage3_gather_16bit_weights_on_model_save": False})
    if offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": False}
    if offload_param:
        zero["offload_param"] = {"device": "cpu", "pin_memory": False}
    params = {"betas": [0.9, 0.999], "eps": 1e-8, "torch_adam": bool(torch_adam),
              "adam_w_mode": True}
    if lr is not None:
        params["lr"] = float(lr)
    if weight_decay is not None:
        params["weight_decay"] = float(weight_decay)
    cfg = {
        "gradient_accumulation_steps": int(gradient_accumulation_steps),
        "gradient_clipping": float(gradient_clipping),
        "steps_per_print": int(steps_per_print),
        "wall_clock_breakdown": False,
        "zero_optimization": zero,
        "bf16": {"enabled": bool(bf16)},
        "optimizer": {"type": "AdamW", "params": params},
        # a torch optimizer under ZeRO-Offload is slower than DeepSpeedCPUAdam
        # but needs no compiled op
        "zero_force_ds_cpu_optimizer": False,
    }
    if train_micro_batch_size_per_gpu is not None:
        cfg["train_micro_batch_size_per_gpu"] = int(train_micro_batch_size_per_gpu)
    return cfg


def _merge(base, over):
    """Recursive dict merge: ``over`` wins; a None value deletes the key."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def read_config_file(path):
    """Read a JSON or YAML (``.yaml``/``.yml``) file into a dict.

    Parameters
    ----------
    path : str or Path
        A ``.yaml``/``.yml`` file (read with PyYAML) or any other, read as
        JSON.

    Returns
    -------
    dict

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        When it is not valid JSON or does not hold a mapping
        (:func:`xplant._files.read_json_object`, the one reader).
    """
    from ..._files import read_json_object
    return read_json_object(path, "a training config (key: value)", yaml=True)


def resolve_deepspeed_config(config=None, **defaults):
    """The default config (``defaults`` are its keyword arguments) updated by ``config``.

    Parameters
    ----------
    config : dict, str, Path or None
        Overrides merged key by key into :func:`default_deepspeed_config`
        (nested dicts merge; a None value removes a key, e.g.
        ``{"optimizer": None}`` trains with the estimator's own torch
        optimizer). A str or Path names a JSON or YAML file holding them.
    **defaults
        Keyword arguments of :func:`default_deepspeed_config`.

    Returns
    -------
    dict

    Examples
    --------
    >>> cfg = resolve_deepspeed_config({"zero_optimization": {"stage": 3}, "bf16": {"enabled": True}})
    >>> cfg["zero_optimization"]["stage"], cfg["bf16"]["enabled"], cfg["gradient_accumulation_steps"]
    (3, True, 1)
    """
    if config is None:
        over = {}
    elif isinstance(config, (str, Path)):
        over = read_config_file(config)
    elif isinstance(config, dict):
        over = config
    else:
        raise ValueError("deepspeed_config must be None, a dict, or the path of a JSON/YAML "
                         f"file, got {type(config).__name__}")
    return _merge(default_deepspeed_config(**defaults), over)


class DeepSpeedStrategy(BaseEstimator):
    """Scale-out strategy of the neural estimators: train with DeepSpeed.

    ``PlantClassifier(strategy=DeepSpeedStrategy(config={...}))`` trains
    Stage 2 (and a default planter's Stage 1) with :func:`fit_deepspeed`
    (ZeRO 0-3, bf16, offload, several processes); ``batch_size`` is then the
    global batch. ``strategy="deepspeed"`` is ``DeepSpeedStrategy()``.

    Parameters
    ----------
    config : dict, str, Path or None, default=None
        Overrides of :func:`default_deepspeed_config`, or a JSON/YAML file of
        them (read when training starts, by :func:`resolve_deepspeed_config`).

    Examples
    --------
    >>> DeepSpeedStrategy(config={"zero_stage": 3})
    DeepSpeedStrategy(config={'zero_stage': 3})
    """

    def __init__(self, config=None):
        self.config = config


def check_strategy(strategy):
    """Validate a ``strategy`` parameter.

    Raises
    ------
    ValueError
        For anything but "skorch", "deepspeed" or a :class:`DeepSpeedStrategy`.
    """
    if isinstance(strategy, DeepSpeedStrategy) or strategy in ("skorch", "deepspeed"):
        return strategy
    raise ValueError(f"strategy must be 'skorch', 'deepspeed' or DeepSpeedStrategy(config=...), "
                     f"got {strategy!r}")


def uses_deepspeed(strategy):
    """Whether a ``strategy`` parameter trains with DeepSpeed."""
    return isinstance(strategy, DeepSpeedStrategy) or strategy == "deepspeed"


def deepspeed_config_of(strategy):
    """The config overrides a ``strategy`` carries (None for "deepspeed")."""
    return strategy.config if isinstance(strategy, DeepSpeedStrategy) else None
