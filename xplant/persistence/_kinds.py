"""The upper floor of the persistence package: the registry of saved kinds, ``save`` and ``load``.

A saved model folder names its format in ``config.json``,
``xplant-<kind>-<version>``. A *kind* is registered by one explicit call,
:func:`register_kind`: its name, which models it saves, its saver and its
loader. The built-in kinds are registered by the calls at the end of this
module, which import a kind's code only when a model of that kind is saved
or loaded (``import xplant`` never imports torch). :func:`load` and
:func:`load_saved` dispatch on the kind a folder's ``config.json`` names and
look it up in the registry: loading imports nothing that a file names.
Each kind's loader checks the version (:func:`~xplant.persistence._codec.check_format`),
so a folder of a newer xplant is refused by name.
"""

from pathlib import Path

from .._params import final_step
from .._files import check_path_name
from ._codec import format_kind, read_config, write_json

_KINDS = {}


def register_kind(kind, *, accepts, save, load):
    """Register a kind of saved model folder: the one registration call of a kind.

    Parameters
    ----------
    kind : str
        The kind of its format tag, ``xplant-<kind>-<version>`` (lower-case
        letters and hyphens); saved folders name it, so it never changes.
    accepts : callable
        ``accepts(model) -> bool``: whether :func:`save` saves ``model`` as
        this kind. Kinds are tried in the order they were registered; the
        built-in ones accept only their own models (a PlantClassifier, a
        DescriptionFusion, a linear or tree ranker, or a Pipeline ending in
        one), so a kind registered later gets every other model.
    save : callable
        ``save(model, path, *, overwrite)``: writes the folder and returns
        it. A saver writes through
        :func:`~xplant.persistence._parts.model_folder`, so that registered
        fitted parts are saved with every kind.
    load : callable
        ``load(path, config) -> model``: the fitted model, its parts
        restored (:func:`~xplant.persistence._parts.read_parts`); its
        decision rule is the model's own ``decision_rule_``.

    Raises
    ------
    ValueError
        For a kind that is not a format tag's kind, or one registered already.
    """
    if format_kind(f"xplant-{kind}-1") != (kind, 1):
        raise ValueError(f"{kind!r} is no kind of a format tag (lower-case letters and hyphens)")
    if kind in _KINDS:
        raise ValueError(f"the kind {kind!r} is registered already")
    _KINDS[kind] = (accepts, save, load)


def saved_kinds():
    """The registered kinds, in the order :func:`save` tries them (a list of str)."""
    return list(_KINDS)


def save(model, path, *, overwrite=False, records=None):
    """Save any fitted xplant model to the folder ``path``, without pickle.

    The kind is the first registered one that accepts the model
    (:func:`saved_kinds`): a PlantClassifier, a DescriptionFusion, or a
    linear model (a FrequencyPrior, OneVsRestLinear, MentionMatcher,
    DescriptionRanker, tree model, or a Pipeline of a TfidfVectorizer and
    one of them). Its fitted parts are saved with it: its decision rule
    (``decision_rule_``, which ``predict`` applies; a rule set on a linear
    model or a DescriptionFusion, such as the one ``xplant run`` chose on
    dev, is kept) and every registered part in its ``parts_``
    (:func:`register_part`).

    Parameters
    ----------
    model : estimator or Pipeline
        Fitted.
    path : str or Path
        The folder to write.
    overwrite : bool, default=False
        Replace an existing folder (only once the new one is whole).
    records : dict of str to object or None, default=None
        JSON records to keep in the saved folder beside the model,
        ``{file name: JSON object}`` (``xplant run`` keeps the row a model
        reproduces in ``row.json``); names ending in ``.json`` that the kind
        does not write itself.

    Returns
    -------
    Path

    Raises
    ------
    TypeError
        For a model no kind saves, or one that cannot be stored without
        pickle (the message names what can).
    FileExistsError
        When ``path`` exists and ``overwrite`` is False.
    sklearn.exceptions.NotFittedError

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from xplant.linear import FrequencyPrior
    >>> prior = FrequencyPrior().fit(np.zeros((3, 1)), np.array([[1, 0], [1, 1], [0, 1]]),
    ...                              label_names=["A01", "B02"])
    >>> folder = save(prior, tempfile.mkdtemp() + "/prior")
    >>> load(folder).predict_proba(["any text"]).round(3).tolist()
    [[0.667, 0.667]]
    """
    for name in records or ():
        check_path_name(name, "a record's file name")
        if not name.endswith(".json"):
            raise ValueError(f"a record's file name must end in .json, got {name!r}")
    kind = next((saver for accepts, saver, _ in _KINDS.values() if accepts(model)), None)
    if kind is None:
        raise TypeError(f"cannot save {type(model).__name__} without pickle: no saved kind "
                        "takes it. xplant saves a PlantClassifier, a DescriptionFusion, a "
                        "linear or tree ranker of xplant.linear or xplant.unseen (or a Pipeline "
                        "ending in one), and the kinds registered with "
                        f"xplant.persistence.register_kind (the kinds: {saved_kinds()})")
    path = Path(kind(model, path, overwrite=overwrite))
    for name, record in (records or {}).items():
        if (path / name).exists():
            raise ValueError(f"{path / name} is a file of the saved model; name the record "
                             "otherwise")
        write_json(path / name, record)
    return path


def load(path):
    """Load any saved xplant model folder, without running pickled code.

    ``load_saved(path)[0]``: see :func:`load_saved`.

    Parameters
    ----------
    path : str or Path
        A saved model folder (see :func:`load_saved`).

    Returns
    -------
    estimator
        The fitted model.
    """
    return load_saved(path)[0]


def load_saved(path):
    """Load any saved xplant model folder, without running pickled code.

    Parameters
    ----------
    path : str or Path
        A folder written by :func:`save`, ``PlantClassifier.save``,
        :func:`xplant.linear.save_linear`,
        :func:`xplant.unseen.save_description_fusion`, ``xplant run``
        (``RUN/models/<row>``) or ``xplant fit``.

    Returns
    -------
    model : estimator
        A fitted :class:`~xplant.neural.PlantClassifier`, what
        :func:`xplant.linear.load_linear` returns, or a fitted
        :class:`~xplant.unseen.DescriptionFusion` with its model (loaded from
        its ``estimator/`` folder by this function).
    decision : dict
        ``{"rule": "top_k" | "threshold" | "per_label_threshold", "k": int,
        "threshold": float, "thresholds": ndarray of shape (n_labels,) or
        None}`` (:func:`xplant.metrics.check_rule`): the model's
        ``decision_rule_`` as a dict, the rule chosen on dev when the model
        was saved, else its own default (``predict`` applies the same).

    Raises
    ------
    FileNotFoundError
        When ``path`` holds no ``config.json``.
    ValueError
        Naming ``config.json``: when it names no registered kind
        (:func:`saved_kinds`), a newer version of a kind (written by a newer
        xplant) or an older one this xplant no longer reads; or when ``path``
        is a part of a saved model (the shortlist inside a PLANT folder).
    """
    path = Path(path)
    if (path / "fusion.json").is_file():      # written by ShortlistFusion.save, inside a PLANT folder
        raise ValueError(f"{path} is the shortlist inside a saved PLANT model, not a model of "
                         f"its own (it may know its labels only as column indices); pass the "
                         f"model folder {path.parent}")
    config = read_config(path)
    kind, _ = format_kind(config.get("format"))
    if kind not in _KINDS:
        raise ValueError(f"{path / 'config.json'}: format {config.get('format')!r} is no saved "
                         f"xplant model (xplant-<kind>-<version> with a kind of "
                         f"{sorted(_KINDS)}); pass a folder written by xplant run or "
                         "xplant fit")
    from .._saved import fitted_decision
    model = _KINDS[kind][2](path, config)
    return model, fitted_decision(model)


# -- the built-in kinds: one explicit call each; a kind's code is imported when it is used --

def _is_plant(model):
    return type(model).__name__ == "PlantClassifier" and \
        type(model).__module__.startswith("xplant.neural")


def _is_fusion(model):
    from ..unseen import DescriptionFusion
    return type(model) is DescriptionFusion


def _save_plant(model, path, *, overwrite):
    from ..unseen._io import save_in_own_format
    return save_in_own_format(model, path, overwrite=overwrite)


def _load_plant(path, config):
    from ..neural import load_model
    return load_model(path)


def _save_fusion(model, path, *, overwrite):
    from ..unseen import save_description_fusion
    return save_description_fusion(model, path, overwrite=overwrite)


def _load_fusion(path, config):                 # its model, in estimator/, is any saved kind
    from ..unseen._io import load_description_fusion
    return load_description_fusion(path, config, load)


def _is_linear(model):
    from ..linear._base import MultiLabelRankerMixin
    return isinstance(final_step(model), MultiLabelRankerMixin)


def _save_linear(model, path, *, overwrite):
    from ..linear import save_linear
    return save_linear(model, path, overwrite=overwrite)


def _load_linear(path, config):
    from ..linear import load_linear
    from .. import unseen  # noqa: F401  the linear format's DescriptionRanker step (register_step)
    return load_linear(path)


register_kind("plant-classifier", accepts=lambda m: _is_plant(final_step(m)),
              save=_save_plant, load=_load_plant)
register_kind("description-fusion", accepts=_is_fusion, save=_save_fusion, load=_load_fusion)
register_kind("linear", accepts=_is_linear, save=_save_linear, load=_load_linear)
