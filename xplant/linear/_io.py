"""Saving and loading the linear and tree baselines without pickle.

A saved model is a folder:

- ``config.json``: the format tag, the kind of model, each step's
  parameters, the label names, the TF-IDF vocabulary (one term per feature
  column, in column order) and, when the caller chose one on dev, the
  decision rule (per-label thresholds as a list aligned with the label
  names);
- ``arrays.safetensors``: the numbers (IDF weights, the pruned sparse
  weight matrix in CSR parts, intercepts, label frequencies), read with
  ``safetensors.numpy``;
- ``napkinxc/`` or ``omikuji/``: a label tree in its library's own format;
- ``parts/``: the model's registered fitted parts, if any
  (:func:`xplant.persistence.register_part`).

The files are written and read through :mod:`xplant.persistence` (its
codec): loading runs no pickled code, and a save goes to a temporary sibling
folder that is renamed into place, so an interrupted save never leaves a
half-written model under the final name.
"""

from pathlib import Path

import numpy as np

from .._params import final_step, to_python

#: Format tag in ``config.json`` of every saved linear or tree model.
LINEAR_FORMAT = "xplant-linear-1"

_JSON_TYPES = (int, float, str, bool, type(None))

#: Step kinds of other subpackages saved in this format, each registered by its
#: subpackage with :func:`register_step` (so this module never imports them): kind ->
#: (class, save, load).
_STEPS = {}
#: Where a step kind of another subpackage is registered: loading one before that
#: subpackage is imported names it.
_REGISTERED_IN = {"description_ranker": "xplant.unseen"}


class _NotRegistered(ValueError):
    """A step kind of a subpackage not imported yet (its message says which)."""


def register_step(kind, cls, save, load):
    """Save and load ``cls`` as a step of this format, under ``kind`` in ``config.json``.

    For rankers of other subpackages (:class:`xplant.unseen.DescriptionRanker`),
    which register themselves when imported; :func:`xplant.persistence.load_saved`
    imports them all.

    Parameters
    ----------
    kind : str
        The step's ``"kind"`` in ``config.json``; a saved model names it, so
        it never changes.
    cls : type
        The estimator class (exactly this class, not subclasses).
    save : callable
        ``save(est, arrays, prefix, folder)``: the step's JSON fields
        (without ``"kind"``), its arrays put into ``arrays`` under ``prefix``.
    load : callable
        ``load(state, arrays, prefix, folder)``: the fitted estimator.
    """
    _STEPS[kind] = (cls, save, load)


def _saveable_kinds():
    others = "".join(f", {cls.__name__}" for cls, _, _ in _STEPS.values())
    return (f"FrequencyPrior, OneVsRestLinear, MentionMatcher, NapkinXCPLT, OmikujiTrees{others}, or a Pipeline "
            "of a TfidfVectorizer and one of them (make_tfidf_ovr, make_tfidf_logistic)")


def _cannot(obj, why):
    return TypeError(f"cannot save {type(obj).__name__} without pickle: {why}. save_linear "
                     f"saves {_saveable_kinds()}; save a PlantClassifier with its save() method, "
                     "a DescriptionFusion with xplant.unseen.save_description_fusion.")


def _json_params(est, skip=()):
    """An estimator's parameters as JSON values; anything else is an error."""
    out = {}
    for key, value in est.get_params(deep=False).items():
        if key in skip:
            continue
        value = to_python(value)          # np.float64 from a grid is a float
        if isinstance(value, tuple):
            value = list(value)
        if key == "dtype" and isinstance(value, type):
            value = np.dtype(value).name
        if isinstance(value, dict) and all(isinstance(v, _JSON_TYPES) for v in value.values()):
            value = {str(k): v for k, v in value.items()}   # class_weight {0: w0, 1: w1}
        elif isinstance(value, list) and all(isinstance(v, _JSON_TYPES) for v in value):
            pass
        elif not isinstance(value, _JSON_TYPES):
            raise _cannot(est, f"its parameter {key}={value!r} is not a JSON value (a callable "
                               "or an object cannot be stored without code)")
        out[key] = value
    return out


def _label_space(est, arrays, prefix):
    """A step's label space (its part ``parts_["label_space"]``): the fields of its
    ``config.json`` entry, its label frequencies into ``arrays``."""
    from ..persistence._codec import split_arrays
    state = est.parts_["label_space"].to_dict()
    state.pop("scored_labels")                   # every label: no field in this format
    record, own = split_arrays(state)
    arrays.update({prefix + k: v for k, v in own.items()})
    return {k: v for k, v in record.items() if k not in own}


def _set_label_space(est, state, arrays, prefix, folder):
    """Restore a step's label space part from its ``config.json`` entry and arrays
    (:meth:`xplant._label_space.LabelSpace.from_dict`, whose errors name the file)."""
    from .._label_space import LabelSpace
    fields = ("classes", "classes_are_indices", "n_labels", "n_train_documents",
              "prediction_form")           # the form is absent before the rule: CSR
    space = LabelSpace.from_dict({**{k: state[k] for k in fields if k in state},
                                  "label_frequency": arrays.get(prefix + "label_frequency")},
                                 where=Path(folder) / "config.json")
    est.parts_ = {**(est.__dict__.get("parts_") or {}), "label_space": space}


def _model_steps():
    """The steps whose fitted model is one part, ``parts_["model"]``, saved by its own
    ``to_dict`` into the step's entry (JSON) and the arrays: ``{kind: (class, part class)}``."""
    from ._mentions import LearnedMentions, MentionMatcher
    from ._ovr import LinearWeights, OneVsRestLinear
    from ._prior import FrequencyPrior, PriorK
    return {"frequency_prior": (FrequencyPrior, PriorK),
            "mention_matcher": (MentionMatcher, LearnedMentions),
            "one_vs_rest": (OneVsRestLinear, LinearWeights)}


def _save_step(est, arrays, prefix, folder):
    """Describe one fitted step as JSON, put its arrays in ``arrays``."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.utils.validation import check_is_fitted
    from ._wrappers import NapkinXCPLT, OmikujiTrees
    check_is_fitted(est)
    if type(est) is TfidfVectorizer:
        params = _json_params(est, skip=("vocabulary",))
        terms = [None] * len(est.vocabulary_)
        for term, column in est.vocabulary_.items():
            terms[column] = term
        if est.use_idf:
            arrays[prefix + "idf"] = np.asarray(est.idf_, dtype=np.float64)
        return {"kind": "tfidf", "params": params, "terms": terms}
    kind = next((k for k, (cls, _) in _model_steps().items() if type(est) is cls), None)
    if kind is not None:      # the step's model part: its JSON in the entry, its arrays beside
        entry = {"kind": kind, "params": _json_params(est)}
        for key, value in est.parts_["model"].to_dict().items():
            if isinstance(value, np.ndarray):
                arrays[prefix + key] = value
            else:
                entry[key] = value
        return {**entry, **_label_space(est, arrays, prefix)}
    for kind, (cls, save, _) in _STEPS.items():
        if type(est) is cls:
            return {"kind": kind, **save(est, arrays, prefix, folder)}
    if type(est) in (NapkinXCPLT, OmikujiTrees):
        kind = "napkinxc" if type(est) is NapkinXCPLT else "omikuji"
        target = Path(folder) / (prefix + kind)
        est._save_native(target)
        return {"kind": kind, "params": _json_params(est), "folder": target.name,
                "n_features_in": int(est.n_features_in_), **_label_space(est, arrays, prefix)}
    raise _cannot(est, "it is not one of the saveable kinds")


def _load_step(state, arrays, prefix, folder):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from ._wrappers import NapkinXCPLT, OmikujiTrees
    kind = state["kind"]
    params = dict(state["params"])
    if kind == "tfidf":
        params["dtype"] = np.dtype(params["dtype"]).type
        params["ngram_range"] = tuple(params["ngram_range"])
        est = TfidfVectorizer(**params)
        est.vocabulary_ = {term: i for i, term in enumerate(state["terms"])}
        est.fixed_vocabulary_ = False
        if est.use_idf:
            est.idf_ = arrays[prefix + "idf"]
        return est
    if kind in _model_steps():
        if isinstance(params.get("class_weight"), dict):     # JSON keys are strings
            params["class_weight"] = {int(k): v for k, v in params["class_weight"].items()}
        cls, part = _model_steps()[kind]
        est = cls(**params)
        _set_label_space(est, state, arrays, prefix, folder)
        own = {key[len(prefix):]: value for key, value in arrays.items()
               if key.startswith(prefix)}
        est.parts_ = {**est.parts_, "model": part.from_dict({**state, **own})}
        if hasattr(est, "_build"):
            est._build()          # the automata, from the mentions: nothing but data is stored
        return est
    if kind in _STEPS:
        return _STEPS[kind][2](state, arrays, prefix, folder)
    if kind in _REGISTERED_IN:
        raise _NotRegistered(f"{folder} holds a {kind!r} step of {_REGISTERED_IN[kind]}: import "
                             f"{_REGISTERED_IN[kind]} first, or load any saved model with "
                             "xplant.load_saved")
    if kind in ("napkinxc", "omikuji"):
        from .._files import check_path_name
        source = Path(folder) / check_path_name(state["folder"], "the saved tree folder")
        est = (NapkinXCPLT if kind == "napkinxc" else OmikujiTrees)(**params)
        _set_label_space(est, state, arrays, prefix, folder)
        native = est._read_native(source)           # the library reads its own model
        native.n_features_in = int(state["n_features_in"])
        est.parts_ = {**est.parts_, "model": native}
        return est
    raise ValueError(f"{folder}: unknown step kind {kind!r} in config.json; it was saved by a "
                     "newer xplant, upgrade xplant to load it")


def save_linear(estimator, path, *, overwrite=False):
    """Save a fitted linear or tree baseline to the folder ``path``, without pickle.

    Parameters
    ----------
    estimator : FrequencyPrior, OneVsRestLinear, MentionMatcher, NapkinXCPLT, OmikujiTrees, DescriptionRanker or Pipeline
        Fitted (a :class:`~xplant.unseen.DescriptionRanker` keeps its fitted TF-IDF; a custom
        ``vectorizer`` parameter is not stored). A Pipeline may hold a ``TfidfVectorizer`` (with built-in
        analyzer, no callables) followed by one of the others, as made by
        :func:`make_tfidf_ovr`, :func:`make_tfidf_logistic` or ``xplant
        run``'s tree rows.
    path : str or Path
        Folder to create.
    overwrite : bool, default=False
        Replace an existing folder.

    Returns
    -------
    path : Path

    Raises
    ------
    TypeError
        For an estimator that cannot be stored without pickle (another
        class, a callable parameter such as a custom tokenizer); the message
        lists the kinds that can.
    ValueError
        For a decision rule whose per-label thresholds are not finite.
    FileExistsError
        When ``path`` exists and ``overwrite`` is False.
    sklearn.exceptions.NotFittedError
        When a step is not fitted.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from xplant.linear import FrequencyPrior, load_linear, save_linear
    >>> prior = FrequencyPrior().fit(np.zeros((3, 1)), np.array([[1, 0], [1, 1], [0, 1]]),
    ...                              label_names=["A01", "B02"])
    >>> folder = save_linear(prior, tempfile.mkdtemp() + "/prior")
    >>> load_linear(folder).predict_proba(["any text"]).round(3).tolist()
    [[0.667, 0.667]]
    """
    from ..persistence._codec import write_arrays, write_json
    from ..persistence._parts import model_folder
    path = Path(path)
    steps = (list(estimator.steps) if hasattr(estimator, "steps")
             else [("model", estimator)])
    decision = rule_json(final_step(estimator))
    # the old folder goes once this one is in place; each step's model part is in its entry
    with model_folder(estimator, path, overwrite=overwrite, handled=("model",)) as tmp:
        arrays, described = {}, []
        for i, (name, est) in enumerate(steps):
            if i < len(steps) - 1 and est.__class__.__name__ != "TfidfVectorizer":
                raise _cannot(estimator, f"step {name!r} ({type(est).__name__}) is not a "
                                         "TfidfVectorizer")
            described.append({"name": name, **_save_step(est, arrays, f"{i}.", tmp)})
        if "classes" not in described[-1]:
            raise _cannot(estimator, "its last step is not a classifier")
        import importlib.metadata as md
        config = {"format": LINEAR_FORMAT, "pipeline": hasattr(estimator, "steps"),
                  "steps": described, "decision": decision,
                  "versions": {"xplant": md.version("xplant"),
                               "scikit-learn": md.version("scikit-learn")}}
        write_arrays(tmp / "arrays.safetensors", arrays)
        write_json(tmp / "config.json", config)
    return path


def rule_json(final):
    """The ``"decision"`` field of ``config.json``: the decision rule set on the model's last
    step (``parts_["decision_rule"]``, by ``xplant run`` or the user) as :func:`decision_json`
    writes it, or None for a model that applies its default rule."""
    rule = (getattr(final, "parts_", None) or {}).get("decision_rule")
    return None if rule is None else decision_json(rule.to_dict(), final.n_labels_)


def read_rule(final, config, path):
    """Restore the rule of ``config.json``'s ``"decision"`` field as the last step's part
    ``parts_["decision_rule"]`` (none: the model's default rule), checked, naming the file."""
    from ..metrics import DecisionRule
    decision = config.get("decision")
    if decision is None:
        return
    try:
        rule = DecisionRule.from_dict(decision, final.n_labels_)
    except ValueError as exc:
        raise ValueError(f"{path / 'config.json'}, field 'decision': {exc}; the file is "
                         "damaged or was edited by hand, save the model again") from None
    final.parts_ = {**final.parts_, "decision_rule": rule}


def decision_json(decision, n_labels, *, n_added=0):
    """A decision rule as the ``"decision"`` field of a saved folder's ``config.json``.

    Parameters
    ----------
    decision : dict
        ``{"rule", "k", "threshold", "thresholds"}``, checked by
        :func:`xplant.metrics.check_rule`.
    n_labels : int or None
        The model's number of labels (the length of per-label thresholds).
    n_added : int, default=0
        Labels the model gained since the rule was chosen
        (:func:`xplant._saved.labels_added`): saved with the global
        threshold as their own.

    Returns
    -------
    dict
        ``{"rule", "k", "threshold"}``, plus ``"thresholds"`` (a list of
        float, one per label) for the per-label rule; float64 values, which
        JSON writes by ``repr`` and reads back exactly.

    Raises
    ------
    ValueError
        For an invalid rule (:func:`xplant.metrics.check_rule`), or
        thresholds that are not finite.
    """
    from ..metrics import check_rule
    rule = check_rule(decision, n_labels, n_added=n_added)
    out = {"rule": rule["rule"], "k": rule["k"], "threshold": rule["threshold"]}
    if rule["thresholds"] is not None:
        if not np.isfinite(rule["thresholds"]).all():
            raise ValueError("decision['thresholds'] must be finite to be saved")
        out["thresholds"] = rule["thresholds"].tolist()
    return out


def load_linear(path):
    """Load a model saved by :func:`save_linear`; ready to predict.

    Parameters
    ----------
    path : str or Path
        The saved folder.

    Returns
    -------
    estimator : FrequencyPrior, OneVsRestLinear, MentionMatcher, NapkinXCPLT, OmikujiTrees, DescriptionRanker or Pipeline
        As saved, its decision rule (``decision_rule_``) included: the one
        set on the saved model (``xplant run``'s, chosen on dev), else its
        default. A DescriptionRanker loads
        once :mod:`xplant.unseen` is imported (:func:`xplant.persistence.load_saved`
        imports it).

    Raises
    ------
    FileNotFoundError
        When ``path`` is not a saved model folder.
    ValueError
        When the folder holds another format, or a DescriptionRanker before
        :mod:`xplant.unseen` is imported.
    ImportError
        For a tree model whose library is not installed.
    """
    from ..persistence._codec import check_format, read_arrays, read_config
    from ..persistence._parts import read_parts
    path = Path(path)
    config = read_config(path)
    check_format(config.get("format"), LINEAR_FORMAT, path / "config.json",
                 hint="load it with xplant.load_saved (any saved xplant model)")
    arrays = read_arrays(path / "arrays.safetensors")
    steps = []
    for i, s in enumerate(config["steps"]):
        where = f"{path / 'config.json'}, field 'steps[{i}]'"
        try:
            est = _load_step(s, arrays, f"{i}.", path)
            if hasattr(est, "_parameter_constraints"):
                est._validate_params()            # exactly what fit checks
        except _NotRegistered:
            raise
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"{where}: {type(exc).__name__}: {exc}; the file is damaged or was "
                             "edited by hand, save the model again") from None
        steps.append((s["name"], est))
    from sklearn.pipeline import Pipeline
    read_rule(steps[-1][1], config, path)
    return read_parts(Pipeline(steps) if config["pipeline"] else steps[0][1], path)
