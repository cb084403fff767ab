"""Saving and loading PlantClassifier: safetensors for tensors, JSON for the rest.

A saved model is a folder:

- ``model.safetensors``: the network's state dict;
- ``config.json``: the estimator's parameters, label names, label
  frequencies, the decision rule (``rule``) with its dev-fitted k,
  threshold and per-label thresholds (``label_thresholds``: one per label,
  aligned with ``classes``, or null), package versions;
- ``relevance/``: the fitted MIGRelevance (see
  :func:`xplant.relevance.save_relevance`);
- ``shortlist/``: with a shortlist, the fitted shortlist model (see
  :func:`xplant.linear.save_linear`) and ``fusion.json`` (calibration,
  fusion weight, number of candidates).

With an ``llm:`` backbone the weights hold only the LoRA adapters (and the
attention and head); the frozen base is read again from the backbone's
spec. ``config.json`` then records that base in ``base_model``: its name,
path and the SHA-256 of its weight files (the GGUF file, or a folder's
weight files). Loading hashes what the spec resolves to now and refuses
another base, naming both.

The classifier's fitted parts (``parts_``: :data:`PART_NAMES`, read by the fitted attributes)
are walked, not restored attribute by attribute: each part's ``to_dict``
fills its fields of ``config.json`` (:data:`_PART_FIELDS`) and its
``from_dict`` reads them back; the shortlist fusion saves itself to
``shortlist/``. The layout of ``config.json`` is that of earlier releases.

Loading runs no pickled code. Writes go to a temporary sibling folder that
is renamed into place, so an interrupted save never leaves a half-written
model under the final name.
"""

import os
from pathlib import Path

import numpy as np

from ...persistence._codec import open_saved, read_arrays, write_arrays, write_json
from ...persistence._parts import model_folder, read_parts
from ...relevance._llm_files import check_llm_base, llm_base_record
from .._settings import translate_params
from ..backbones import backbone_kind

#: The names of a PlantClassifier's fitted parts, in the order they are saved.
PART_NAMES = ("label_space", "relevance", "dev_choices", "stage1_weight", "decision_rule",
              "logit_adjustment", "shortlist_fusion")
#: The parts a saved PlantClassifier leaves out: the fitted planter (the network holds what
#: Stage 1 planted).
UNSAVED_PARTS = ("planting",)

_FORMAT = "xplant-plant-classifier-1"
_JSON_TYPES = (int, float, str, bool, type(None))
# Training-time only: not stored (a loaded model predicts; refit gives them again).
_TRAINING_ONLY = ("callbacks", "checkpoint_dir")
# A shortlist estimator is stored as its fitted model (shortlist/, save_linear); the parameter
# records that, and loading sets it to an unfitted clone of that model.
_SHORTLIST_SAVED = {"saved_in": "shortlist"}
# The one callback setting saved with the model (a refit of a loaded model keeps its schedule).
_PHASES = "callbacks__unfreeze__phases"
# skorch's plumbing: stored only as "the default"; anything else cannot be saved without code.
_PLUMBING = ("module", "criterion", "optimizer", "iterator_train", "iterator_valid", "dataset",
             "train_split")


def _json_value(value, where):
    """A JSON-storable copy of ``value`` (numpy scalars made Python), or ValueError."""
    from ..._params import to_python
    value = to_python(value)
    if isinstance(value, float) and not np.isfinite(value):
        raise ValueError(f"cannot save {where}={value!r}: JSON holds finite numbers only")
    if isinstance(value, _JSON_TYPES):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json_value(v, f"{where}[{k!r}]") for k, v in value.items()}
    from sklearn.base import BaseEstimator
    if isinstance(value, BaseEstimator):     # a sub-estimator: by its parameters, recursively
        return {"estimator": type(value).__name__, "params": _json_params(value, where + "__")}
    raise ValueError(f"cannot save the parameter {where}={value!r} ({type(value).__name__}): a "
                     "saved model stores every parameter as JSON (numbers, strings, lists, "
                     "dicts, sub-estimators by their parameters); give a storable value, or "
                     "refit instead of saving")


def _json_params(est, prefix=""):
    """Every parameter of ``est`` as JSON; refuse what cannot be stored, never drop it."""
    defaults = type(est)().get_params(deep=False)
    out = {}
    for k, v in est.get_params(deep=False).items():
        if k in _TRAINING_ONLY or k.startswith("_") or \
                k.startswith("callbacks__") and k != _PHASES:
            continue
        if k == "shortlist" and not prefix and v is not None and not isinstance(v, str):
            out[k] = _SHORTLIST_SAVED      # the fitted model is in shortlist/, without pickle
            continue
        if k in _PLUMBING:
            if v is not defaults.get(k) and v != defaults.get(k):
                raise ValueError(f"cannot save {prefix}{k}={v!r}: only the default {k} can be "
                                 "saved (loading runs no stored code)")
            continue
        if k == "tokenizer" and isinstance(getattr(v, "xplant_llm_spec", None), str):
            v = v.xplant_llm_spec              # load_llm_tokenizer's: stored by its spec
        if k == "tokenizer" and not isinstance(v, str):
            raise ValueError(f"cannot save {prefix}{k}={v!r}: a tokenizer object cannot be "
                             "stored; give it by name ('word', 'hf:<folder>' or 'llm:<spec>')")
        out[k] = _json_value(v, prefix + k)
    return out


def _from_json(params):
    """Rebuild sub-estimators from their stored parameters (a closed list of classes)."""
    from ...relevance import MIGRelevance
    from ..planting._planter import AttentionPlanter
    from ..distributed._config import DeepSpeedStrategy
    known = {"AttentionPlanter": AttentionPlanter, "MIGRelevance": MIGRelevance,
             "DeepSpeedStrategy": DeepSpeedStrategy}
    out = {}
    for k, v in params.items():
        if isinstance(v, dict) and set(v) == {"estimator", "params"}:
            if v["estimator"] not in known:
                raise ValueError(f"unknown sub-estimator {v['estimator']!r} in the saved "
                                 f"parameter {k}")
            cls = known[v["estimator"]]
            v = cls(**translate_params(cls, _from_json(v["params"])))
        out[k] = v
    return out


def save_model(clf, path, *, overwrite=False):
    """Save a fitted PlantClassifier to the folder ``path``.

    Parameters
    ----------
    clf : PlantClassifier
        Fitted.
    path : str or Path
        The folder to write.
    overwrite : bool, default=False
        Replace an existing folder.

    Returns
    -------
    Path

    Raises
    ------
    FileExistsError
        When ``path`` exists and ``overwrite`` is False.
    sklearn.exceptions.NotFittedError

    Notes
    -----
    With an ``llm:`` backbone, ``config.json`` records the base model
    (``base_model``: name, path, SHA-256 of its weight files), which
    :func:`xplant.neural.load_model` checks.
    """
    from sklearn.utils.validation import check_is_fitted
    from ...relevance import save_relevance
    check_is_fitted(clf, "module_")
    path = Path(path)
    # the old folder goes once this is in place; its own parts in config.json and shortlist/
    with model_folder(clf, path, overwrite=overwrite, handled=PART_NAMES + UNSAVED_PARTS) as tmp:
        state = {k: v.detach().cpu().contiguous().clone() for k, v in clf.module_.state_dict().items()}
        write_arrays(tmp / "model.safetensors", state)
        save_relevance(clf.relevance_, tmp / "relevance")
        if clf.parts_.get("shortlist_fusion") is not None:     # the part with a folder
            clf.parts_["shortlist_fusion"].save(tmp / "shortlist")
        import importlib.metadata as md
        config = {
            "format": _FORMAT,
            "params": _json_params(clf),
            **_config_parts(clf),
            "versions": {p: md.version(p) for p in ("xplant", "torch") if _has(p)},
        }
        if backbone_kind(clf.backbone) == "llm":     # the adapters mean something over this base only
            config["base_model"] = llm_base_record(clf.backbone)
        write_json(tmp / "config.json", config, indent=1)
    return path


def _has(pkg):
    import importlib.metadata as md
    try:
        md.version(pkg)
        return True
    except md.PackageNotFoundError:
        return False


def _label_space_json(space):
    """The label space's fields of ``config.json`` (the per-label arrays as lists; the
    labels the network leaves out, ``PlantNet.score_only``, as their indices)."""
    state = space.to_dict()
    scored = state.pop("scored_labels")
    return {**state, "label_frequency": state["label_frequency"].tolist(),
            "unscored_labels": None if scored is None else np.flatnonzero(~scored).tolist()}


def _label_space_read(config, c, parts, clf):
    """The label space of ``config.json``'s fields (checked by
    :meth:`~xplant._label_space.LabelSpace.from_dict`), and the labels the network
    leaves out (``unscored_labels``, absent before them: every label scored)."""
    from ..._label_space import LabelSpace
    space = LabelSpace.from_dict({**config, "scored_labels": None}, where=c.path)
    unscored = config.get("unscored_labels")
    space.scored_labels = np.ones(space.n_labels, dtype=bool)
    if unscored is not None:
        unscored = c.int_list("unscored_labels", None)
        if any(i >= space.n_labels for i in unscored):
            c.fail("unscored_labels", f"must be label indices below n_labels ({space.n_labels})")
        space.scored_labels[unscored] = False
    return space


def _dev_choices_read(config, c, parts, clf):
    """The best epoch (0 for a model saved before it) and the choice records (none before)."""
    from ..parts._dev_choices import DevChoices
    choices = config.get("dev_choices", {})
    if not (isinstance(choices, dict) and all(
            isinstance(v, dict) and {"name", "family", "criterion", "value", "scores",
                                     "on_dev"} <= set(v) for v in choices.values())):
        c.fail("dev_choices", "must be an object of choice records (name, family, criterion, "
                              "value, scores, on_dev)")
    return DevChoices.from_dict({"best_epoch": c.integer("best_epoch", low=0)
                                 if "best_epoch" in config else 0, "dev_choices": choices})


def _stage1_weight_read(config, c, parts, clf):
    """The Stage 1 weight trained with (a model saved before it: the estimator's
    ``stage1_weight``, 0 for ``"dev"``) and the raced candidates."""
    from ..parts._dev_choices import Stage1WeightRace
    cands = config.get("stage1_weight_candidates")
    if cands is not None and not (isinstance(cands, list)
                                  and all(isinstance(x, dict) for x in cands)):
        c.fail("stage1_weight_candidates", "must be null or a list of objects")
    given = clf.stage1_weight
    weight = (c.number("stage1_weight", low=0.0) if "stage1_weight" in config
              else 0.0 if isinstance(given, str) else float(given))
    return Stage1WeightRace.from_dict({"stage1_weight": weight,
                                       "stage1_weight_candidates": cands})


def _decision_rule_json(rule):
    state = rule.to_dict()
    th = state["thresholds"]
    # float64 in JSON: repr round-trips each per-label threshold exactly
    return {"rule": state["rule"], "k": _json_value(state["k"], "k"),
            "threshold": _json_value(state["threshold"], "threshold"),
            "label_thresholds": None if th is None else _json_value(np.asarray(th).tolist(),
                                                                    "label_thresholds")}


def _decision_rule_read(config, c, parts, clf):
    """The decision rule from ``config.json``, checked field by field: a model saved
    before the rule was chosen on dev applies its fixed ``decision``."""
    from ...metrics import DECISION_RULES, DecisionRule
    n_labels = parts["label_space"].n_labels
    rule = config.get("rule", clf.decision)
    if rule not in DECISION_RULES:
        c.fail("rule", f"must be one of {list(DECISION_RULES)}")
    thresholds = config.get("label_thresholds")
    if rule == "per_label_threshold":
        values = c.get("label_thresholds", list, f"a list of {n_labels} thresholds")
        if len(values) != n_labels or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in values) \
                or not np.isfinite(np.asarray(values, dtype=np.float64)).all():
            c.fail("label_thresholds", f"must hold {n_labels} finite numbers, one per label")
        thresholds = np.asarray(values, dtype=np.float64)
    elif thresholds is not None:
        c.fail("label_thresholds", f"must be null under the rule {rule!r}")
    state = {"rule": rule, "k": c.integer("k", low=1, high=n_labels),
             "threshold": c.number("threshold", low=0.0, high=1.0), "thresholds": thresholds}
    try:
        return DecisionRule.from_dict(state, n_labels)
    except ValueError as exc:
        c.fail("rule / k / threshold / label_thresholds", str(exc))


def _logit_adjustment_json(part):
    state = part.to_dict()
    return {"logit_adjustment": _json_value(state["tau"], "logit_adjustment"),
            "logit_adjustment_dev": _json_value(state["dev_scores"], "logit_adjustment_dev")}


def _logit_adjustment_read(config, c, parts, clf):
    """τ (0 for a model saved before it) and its dev scores, over the saved label prior."""
    from ..parts._logit_adjustment import LogitAdjustment, log_prior
    dev = config.get("logit_adjustment_dev")
    if dev is not None and not isinstance(dev, dict):
        c.fail("logit_adjustment_dev", "must be null or an object of numbers")
    space = parts["label_space"]
    state = {"tau": c.number("logit_adjustment", low=0.0) if "logit_adjustment" in config
             else 0.0, "dev_scores": dev}
    try:
        return LogitAdjustment.from_dict(state, log_prior=log_prior(space.label_frequency,
                                                                    space.n_train_documents))
    except ValueError as exc:
        c.fail("logit_adjustment / logit_adjustment_dev", str(exc))


#: The parts kept in ``config.json``, in reading order: ``{name: (its fields, as JSON;
#: its reader, ``read(config, checker, parts read so far, the loaded estimator)``: the
#: part, read back from config.json's fields and checked, a field absent from an older
#: folder taken from the estimator's parameters)}``. The relevance and the shortlist
#: fusion are kept in folders of their own (``relevance/``, ``shortlist/``).
_CONFIG_PARTS = {
    "label_space": (_label_space_json, _label_space_read),
    "dev_choices": (lambda part: part.to_dict(), _dev_choices_read),
    "stage1_weight": (lambda part: part.to_dict(), _stage1_weight_read),
    "decision_rule": (_decision_rule_json, _decision_rule_read),
    "logit_adjustment": (_logit_adjustment_json, _logit_adjustment_read),
}


def _config_parts(clf):
    """The fields of ``config.json`` that hold the fitted parts (each part's own JSON)."""
    out = {}
    for name, (to_json, _) in _CONFIG_PARTS.items():
        out.update(to_json(clf.parts_[name]))
    return out


def _read_parts(clf, path, config, c):
    """Every saved part of the folder, each restored by its own reader: ``{name: part}``."""
    from ...relevance import load_relevance
    from ..parts._shortlist_fusion import ShortlistFusion
    parts = {}
    for name, (_, read) in _CONFIG_PARTS.items():
        parts[name] = read(config, c, parts, clf)
    n_labels = parts["label_space"].n_labels
    parts["relevance"] = load_relevance(path / "relevance")
    if parts["relevance"].n_labels_ != n_labels:
        c.fail("n_labels", f"is {n_labels} but relevance/ holds {parts['relevance'].n_labels_} "
                           "labels")
    parts["shortlist_fusion"] = (ShortlistFusion.load(path / "shortlist", n_labels)
                                 if (path / "shortlist").is_dir() else None)
    parts["planting"] = None               # not saved: the network holds what it planted
    return parts


def read_model(path, cls):
    """Load a PlantClassifier saved by :func:`save_model`; ready to predict.

    ``cls`` is the class to rebuild (:class:`~xplant.neural.PlantClassifier`,
    which passes itself: ``PlantClassifier.load``), so this module never
    imports the classifier back. :func:`xplant.neural.load_model` (which
    documents the checks and the errors) and ``PlantClassifier.load`` call it.

    Parameters
    ----------
    path : str or Path
        The folder that :func:`save_model` wrote.
    cls : type
        The classifier's class.
    """
    PlantClassifier = cls
    path, config, c = open_saved(path, "config.json", "model.safetensors", _FORMAT,
                                  "a saved PlantClassifier's configuration",
                                  "is not a saved PlantClassifier (needs config.json and "
                                  "model.safetensors)")
    try:
        params = _from_json(dict(c.get("params", dict, "an object of parameters")))
    except (TypeError, ValueError) as exc:
        c.fail("params", str(exc))
    if params.get("shortlist") == _SHORTLIST_SAVED:       # set from shortlist/ below
        if not (path / "shortlist").is_dir():
            c.fail("params", "the shortlist parameter refers to shortlist/, which is missing")
        params["shortlist"] = None
    try:                         # the names of earlier releases (gamma, phases, ...)
        params = translate_params(PlantClassifier, params)
    except ValueError as exc:
        c.fail("params", str(exc))
    if params.get(_PHASES) is not None:
        if not isinstance(params[_PHASES], list) or \
                not all(isinstance(p, list) and len(p) == 3 for p in params[_PHASES]):
            c.fail("params", "callbacks__unfreeze__phases must be a list of [epoch, group, lr]")
        params[_PHASES] = [tuple(p) for p in params[_PHASES]]
    nested = {k: params.pop(k) for k in list(params) if k.startswith("planter__")}
    known = set(PlantClassifier().get_params(deep=False)) | \
        set(getattr(PlantClassifier, "prefixes_", ()))        # skorch's routed "<part>__<name>"
    unknown = sorted(k for k in params if k not in known and k.split("__", 1)[0] not in known)
    if unknown:
        c.fail("params", f"unknown parameters {unknown}")
    try:
        clf = PlantClassifier(**params).set_params(**nested)
        clf._check_params()                  # exactly what fit checks
    except (TypeError, ValueError) as exc:
        c.fail("params", str(exc))
    if backbone_kind(clf.backbone) == "llm" and "base_model" in config:   # absent before it
        check_llm_base(config["base_model"], clf.backbone, c.path)   # before anything reads it
    # each part restores itself; no fitted attribute is set here by name (they read parts_)
    clf.parts_ = _read_parts(clf, path, config, c)
    if clf.shortlist_ is not None and not isinstance(clf.shortlist, str):
        from sklearn.base import clone     # refitting a loaded model fits the same shortlist
        clf.shortlist = clone(clf.shortlist_)
    clf._ready_after_loading()
    clf.initialize()
    state = read_arrays(path / "model.safetensors", torch=True)
    try:
        clf.module_.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise ValueError(f"{path / 'model.safetensors'}: the weights do not fit the saved "
                         f"configuration: {exc}") from exc
    clf.module_.eval()
    return read_parts(clf, path)
