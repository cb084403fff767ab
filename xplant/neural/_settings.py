"""The parameter families of the neural estimators: one channel per setting.

A setting of :class:`~xplant.neural.PlantClassifier` or
:class:`~xplant.neural.AttentionPlanter` is either a named parameter (the
ones a user tunes first) or reached through skorch's prefixes, as in any
skorch ``NeuralNet``:

========================  ====================================================
prefix                    component and its settings (defaults below)
========================  ====================================================
``module__``              the network: the backbone's ``embedding_dim``,
                          ``hidden_dim``, ``kernel_size``, ``dropout``,
                          ``glove``, ``backbone_options``, the tokens read per
                          document ``max_length``; the label attention's
                          ``attention_dim``; the classifier's ``pool_size``
                          and ``head``
``criterion__``           the loss (:class:`~xplant.neural.losses.PlantLoss`:
                          ``loss``, ``gamma``, ``label_smoothing``,
                          ``smoothing_form``, ``hard_negatives``)
``optimizer__``           AdamW's keyword arguments (``weight_decay``; an
                          ``optimizer__lr`` replaces ``lr``)
``iterator_train__``      the training batches: ``min_epoch_docs`` and
                          ``max_epoch_docs`` (documents drawn per epoch),
                          the planter's ``state_cache`` (a frozen
                          backbone's states computed once), and any
                          ``DataLoader`` argument
``callbacks__unfreeze__`` progressive unfreezing: ``phases``
``decision__``            the choices of the decision rule after training:
                          ``max_k`` (k is chosen on dev in 1..max_k) and
                          ``logit_adjustment`` (τ, a number or ``"dev"``)
========================  ====================================================

The valid values of every setting, named or prefixed, are declared here
too (``SHARED_CONSTRAINTS``, ``PLANTER_CONSTRAINTS``,
``CLASSIFIER_CONSTRAINTS``: the estimators' ``_parameter_constraints``) and
checked by :func:`xplant._params.check_params` as fit's first step.

Names of earlier releases (``gamma=``, ``embedding_dim=``, ``plant_from=``,
...) raise a TypeError that names the new spelling; in a saved
``config.json``, an ``xplant fit --params`` file or a ``--set`` option they
are read through :func:`translate_params`, so old models and files keep
working.
"""

import inspect
import numbers
import os

from .._params import Checked, HasMethods, Interval, StrOptions, int_at_least, number_above, number_at_least
from ..metrics import DECISION_RULES
from .losses import STAGE1_LOSSES

#: The network's architecture, shared by the planter and the classifier (the
#: planting loads into the classifier by name, so both must agree).
ARCH_DEFAULTS = {"embedding_dim": 100, "hidden_dim": 128, "attention_dim": 128,
                 "kernel_size": 5, "dropout": 0.2, "glove": False, "backbone_options": None,
                 "max_length": 4096}

#: ``module__`` settings of :class:`PlantClassifier` (the architecture, then the head).
CLASSIFIER_MODULE_DEFAULTS = {**ARCH_DEFAULTS, "pool_size": 128, "head": "shared"}

#: ``iterator_train__`` settings that shape an epoch rather than a DataLoader (the planter
#: adds ``state_cache``, what its batches carry).
EPOCH_DEFAULTS = {"min_epoch_docs": None, "max_epoch_docs": None}

#: ``decision__`` settings of :class:`PlantClassifier`.
DECISION_DEFAULTS = {"max_k": 10, "logit_adjustment": 0.0, "k": None, "threshold": None,
                     "thresholds": None}

#: ``criterion__`` settings of :class:`AttentionPlanter` (Stage 1's ranking loss,
#: :class:`~xplant.neural.losses.Stage1Loss`): the loss, the cut-off k of its
#: ``|ΔnDCG@k|`` weights and of the dev attention nDCG, and the pairwise logistic's scale.
STAGE1_CRITERION_DEFAULTS = {"kind": "lambda", "k": 50, "sigma": 1.0}

_ENCODER_KEYS = ("embedding_dim", "hidden_dim", "kernel_size", "dropout", "glove",
                 "backbone_options")

_COMMON_RENAMES = {
    **{k: "module__" + k for k in ARCH_DEFAULTS},
    "weight_decay": "optimizer__weight_decay",
    **{k: "iterator_train__" + k for k in EPOCH_DEFAULTS},
    "deepspeed_config": "strategy",
}

#: Defaults of the new spellings that an old name maps to (a saved value at
#: its default is dropped, so the component's own default applies).
_NEW_DEFAULTS = {
    **{"module__" + k: v for k, v in CLASSIFIER_MODULE_DEFAULTS.items()},
    "criterion__loss": "focal", "criterion__gamma": 2.0, "criterion__label_smoothing": 0.1,
    "criterion__smoothing_form": "paper", "criterion__hard_negatives": 1000,
    "optimizer__weight_decay": 0.01,
    **{"iterator_train__" + k: v for k, v in EPOCH_DEFAULTS.items()},
    "callbacks__unfreeze__phases": None,
    **{"decision__" + k: v for k, v in DECISION_DEFAULTS.items()},
    **{"criterion__" + k: v for k, v in STAGE1_CRITERION_DEFAULTS.items()},
}

#: Old name -> new spelling, per estimator (the names of xplant 0.1).
RENAMED = {
    "PlantClassifier": {
        **_COMMON_RENAMES,
        "pool_size": "module__pool_size", "head": "module__head",
        **{k: "criterion__" + k for k in ("loss", "gamma", "label_smoothing", "smoothing_form",
                                         "hard_negatives")},
        "phases": "callbacks__unfreeze__phases",
        "max_k": "decision__max_k", "logit_adjustment": "decision__logit_adjustment",
        "stage1_target": "planter__target", "stage1_loss": "planter__criterion__kind",
        "plant_from": "planter",
    },
    "AttentionPlanter": {**_COMMON_RENAMES, "stage1_loss": "criterion__kind",
                         "ndcg_k": "criterion__k", "sigma": "criterion__sigma"},
}


def _renames(cls):
    for klass in type.mro(cls) if isinstance(cls, type) else type(cls).__mro__:
        if klass.__name__ in RENAMED:
            return RENAMED[klass.__name__]
    return {}


def renamed_error(cls, names):
    """The TypeError for old parameter names, naming each new spelling."""
    table = _renames(cls)
    name = cls.__name__ if isinstance(cls, type) else type(cls).__name__
    parts = []
    for old in sorted(names):
        new = table[old]
        if old == "plant_from":
            parts.append("plant_from=FOLDER is now planter=FOLDER (a saved planting)")
        elif old == "deepspeed_config":
            parts.append("deepspeed_config=CONFIG is now strategy=DeepSpeedStrategy(config=CONFIG)"
                         " (xplant.neural.distributed)")
        elif new.startswith("planter__"):
            parts.append(f"{old}=... is now planter=AttentionPlanter({new[9:]}=...)")
        else:
            parts.append(f"{old}=... is now {new}=...")
    return TypeError(f"{name}: renamed parameters: " + "; ".join(parts) + ". Saved models, "
                     "--params files and --set options still read the old names.")


def check_renamed(cls, params):
    """Raise :func:`renamed_error` when ``params`` (a dict) uses an old name."""
    table = _renames(cls)
    old = [k for k in params if k in table]
    if old:
        raise renamed_error(cls, old)


def translate_params(cls, params):
    """Read old parameter names of ``cls`` (a saved config, a --params file, --set).

    Parameters
    ----------
    cls : type
        :class:`PlantClassifier` or :class:`AttentionPlanter` (or a subclass).
    params : dict
        Parameters in either spelling. Nested keys (``planter__target``) are
        kept for ``set_params``.

    Returns
    -------
    dict
        The same settings in today's spelling: ``gamma`` becomes
        ``criterion__gamma``, ``plant_from`` becomes ``planter``,
        ``strategy="deepspeed"`` with ``deepspeed_config`` becomes
        ``strategy=DeepSpeedStrategy(config=...)``. A value at its old
        default is dropped when the new spelling has the same default.

    Raises
    ------
    ValueError
        When one setting is given in both spellings with different values.

    Examples
    --------
    >>> from xplant.neural import PlantClassifier
    >>> translate_params(PlantClassifier, {"gamma": 1.0, "lr": 0.01})
    {'lr': 0.01, 'criterion__gamma': 1.0}
    """
    table = _renames(cls)
    out = {k: v for k, v in params.items() if k not in table}
    old = {k: v for k, v in params.items() if k in table}
    if "deepspeed_config" in old:
        config = old.pop("deepspeed_config")
        strategy = out.get("strategy", "skorch")
        if config is not None and strategy == "deepspeed":
            from .distributed import DeepSpeedStrategy
            out["strategy"] = DeepSpeedStrategy(config=config)
        elif config is not None and strategy not in ("skorch", "deepspeed"):
            raise ValueError("deepspeed_config and strategy are both given; give "
                             "strategy=DeepSpeedStrategy(config=...) alone")
    if "plant_from" in old:
        folder = old.pop("plant_from")
        if folder is not None:
            if out.get("planter") is not None:
                raise ValueError("plant_from and planter are both given; give planter=FOLDER "
                                 "(a saved planting) or planter=AttentionPlanter(...), not both")
            out["planter"] = str(folder)
    inner = RENAMED["AttentionPlanter"]        # a planter's old names given nested (--set)
    for key in [k for k in out if k.startswith("planter__") and k[9:] in inner]:
        old[key] = out.pop(key)
        table = {**table, key: "planter__" + inner[key[9:]]}
    for key, value in old.items():
        new = table[key]
        if new.startswith("planter__") and value is None:   # old "None: the planter's own"
            continue
        if new in _NEW_DEFAULTS and new not in out and _same(value, _NEW_DEFAULTS[new]):
            continue
        if new in out and out[new] != value:
            raise ValueError(f"{key}={value!r} and {new}={out[new]!r} set one setting twice with "
                             f"different values; keep {new}")
        out[new] = value
    return out


def _same(a, b):
    """Equal, and no bool standing for a number (``False == 0`` in Python)."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def merge_channel(owner, named, prefix, defaults=None):
    """One component's settings: ``defaults``, then the ``prefix__`` parameters.

    ``named`` maps settings that a named parameter of ``owner`` also sets
    (``{"k": "ndcg_k"}``) to that parameter's name; a named value away from
    its default and a prefixed value of the same setting that differs raise
    (at its default, the prefixed value wins, as ``optimizer__lr`` does).

    Raises
    ------
    ValueError
        Naming both spellings, when both are set and differ.
    """
    kwargs = dict(defaults or {})
    given = owner.get_params_for(prefix)
    unset = signature_defaults(type(owner))
    for key, param in (named or {}).items():
        value = getattr(owner, param)
        if key in given and value != unset.get(param) and given[key] != value:
            raise ValueError(f"{param}={value!r} and {prefix}__{key}={given[key]!r} set one "
                             f"setting twice; keep one ({prefix}__{key} wins in skorch when "
                             f"{param} is left at its default)")
    kwargs.update(given)
    return kwargs


def module_settings(est):
    """The resolved ``module__`` settings of a neural estimator (defaults filled in)."""
    return merge_channel(est, None, "module", getattr(est, "_module_defaults", ARCH_DEFAULTS))


def encoder_settings(settings):
    """The backbone's keyword arguments out of :func:`module_settings`."""
    return {k: settings[k] for k in _ENCODER_KEYS}


def network_settings(settings):
    """The network's own keyword arguments out of :func:`module_settings`: every
    ``module__`` setting but the backbone's and ``max_length`` (``attention_dim``,
    ``pool_size``, ``head``, ``label_chunk``, ...)."""
    return {k: v for k, v in settings.items() if k not in _ENCODER_KEYS and k != "max_length"}


def epoch_settings(est):
    """``min_epoch_docs`` and ``max_epoch_docs`` from ``iterator_train__``, else the
    estimator's defaults (``_epoch_defaults``; None: no bound)."""
    given = est.get_params_for("iterator_train")
    return {k: given.get(k, v) for k, v in getattr(est, "_epoch_defaults", EPOCH_DEFAULTS).items()}


def decision_settings(est):
    """The resolved ``decision__`` settings of a classifier."""
    return merge_channel(est, None, "decision", DECISION_DEFAULTS)


def signature_defaults(cls):
    """Keyword defaults of ``cls.__init__`` (used to tell set values from defaults)."""
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if p.default is not inspect.Parameter.empty}


# -- the valid values of every setting: the estimators' ``_parameter_constraints`` --
# Checked by xplant._params.check_params against ``resolved_params()`` (the
# prefixed families resolved, their defaults filled in) as the first step of
# fit; the relations between settings are the estimators' ``_check_params``.

def _check_backbone(value):
    from .backbones import backbone_kind
    backbone_kind(value)


def _check_strategy(value):
    from .distributed._config import check_strategy
    check_strategy(value)


def _check_scoring(value):
    from .training._callbacks import metric_by_name
    metric_by_name(value)


def _check_shortlist(value):
    from ..fusion import check_shortlist
    check_shortlist(value)


def _check_fusion(value):
    from ..fusion import check_fusion
    check_fusion(value)


def _check_phases(phases):
    for ph in phases:
        if len(ph) != 3 or ph[0] < 0 or ph[2] < 0:
            raise ValueError("callbacks__unfreeze__phases: each phase must be "
                             f"(epoch >= 0, group, lr >= 0), got {ph!r}")


_COUNT = [int_at_least(1)]

#: Constraints of the settings both neural estimators have (named and prefixed).
SHARED_CONSTRAINTS = {
    "backbone": [Checked(_check_backbone, "a backbone name")],
    "strategy": [Checked(_check_strategy, "'skorch', 'deepspeed' or a DeepSpeedStrategy")],
    **{"module__" + k: _COUNT for k in ("embedding_dim", "hidden_dim", "attention_dim",
                                         "kernel_size")},
    "max_epochs": _COUNT, "batch_size": _COUNT,
    "lr": [number_above(0), None],           # None: the backbone's default rate
    "module__dropout": [Interval(numbers.Real, 0, 1, closed="both")],
    "module__max_length": [int_at_least(1), None],
    "optimizer__weight_decay": [number_at_least(0)],
    "optimizer__lr": [number_above(0)],
    "validation_fraction": [Interval(numbers.Real, 0, 0.9, closed="right"), None],
    **{"iterator_train__" + k: [int_at_least(1), None] for k in EPOCH_DEFAULTS},
}

#: Constraints of :class:`~xplant.neural.AttentionPlanter`.
PLANTER_CONSTRAINTS = {
    **SHARED_CONSTRAINTS,
    **{name: _COUNT for name in ("labels_per_doc", "max_relevant", "criterion__k")},
    "target": [StrOptions({"mig", "tf"})],
    "criterion__kind": [StrOptions(set(STAGE1_LOSSES))],
    "n_negatives": [int_at_least(0)],
    "criterion__sigma": [number_above(0)],
    "warmup": [Interval(numbers.Real, 0, 1, closed="both")],
    "iterator_train__state_cache": [StrOptions({"auto", "float32", "bfloat16", "float16"}), None],
}


#: Constraints of :class:`~xplant.neural.PlantClassifier`.
CLASSIFIER_CONSTRAINTS = {
    **SHARED_CONSTRAINTS,
    "patience": [int_at_least(1), None],
    "module__pool_size": _COUNT,
    "module__head": [StrOptions({"shared", "labelwise"})],
    "criterion__loss": [StrOptions({"focal", "bce"})],
    "criterion__smoothing_form": [StrOptions({"paper", "symmetric"})],
    "criterion__hard_negatives": [int_at_least(1), None],
    "criterion__gamma": [number_at_least(0)],
    "criterion__label_smoothing": [Interval(numbers.Real, 0, 0.5, closed="both")],
    "decision": [StrOptions({"dev", *DECISION_RULES})],
    "decision__max_k": _COUNT,
    "decision__logit_adjustment": [StrOptions({"dev"}), number_at_least(0)],
    "planter": [None, str, os.PathLike, HasMethods("fit")],
    "stage1_weight": [StrOptions({"dev"}), number_at_least(0)],
    "callbacks__unfreeze__phases": [None, Checked(_check_phases, "a list of phases")],
    "scoring": [Checked(_check_scoring, "the name of a ranking metric")],
    "shortlist": [Checked(_check_shortlist, "None, 'linear' or a ranker")],
    "fusion": [Checked(_check_fusion, "'dev' or a weight in [0, 1]")],
    "n_candidates": [int_at_least(1), None],
    "shortlist_cv": [int_at_least(2), None],
}
