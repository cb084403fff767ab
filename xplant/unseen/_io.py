"""Saving and loading DescriptionRanker and DescriptionFusion without pickle.

A DescriptionRanker is a step of :func:`xplant.linear.save_linear`'s folder
(``config.json`` and ``arrays.safetensors``) of kind
``"description_ranker"``: its fitted TF-IDF (vocabulary and IDF), the label
texts and their L2-normalised TF-IDF rows (CSR parts), and with an
``encoder`` the embeddings of the label texts' parts and their labels (the
encoder is named, by its spec, in the parameters, and loaded from its local
folder when documents are scored). The kind names no module, so folders
saved while the class lived in ``xplant.linear`` load unchanged. Importing
:mod:`xplant.unseen` registers it.

A DescriptionFusion is a folder of its own format (:data:`FUSION_FORMAT`,
:func:`save_description_fusion`) made of the same parts: its ranker as that
step, its weights and label space in ``config.json``, and its model, saved
in the model's own format, in ``estimator/``. :func:`xplant.persistence.load_saved`
loads it (the model may be a PlantClassifier, which this layer cannot load).
"""

import numpy as np
import scipy.sparse as sp

from ..linear._io import (_json_params, _label_space, _load_step, _save_step, _set_label_space,
                          read_rule, register_step, rule_json)
from ._description_fusion import DescriptionFusion
from ._description_ranker import DescriptionRanker
from .._params import final_step

KIND = "description_ranker"


def _save_ranker(est, arrays, prefix, folder):
    """Its fitted TF-IDF, label texts and their vectors."""
    L = sp.csr_matrix(est.label_matrix_)
    for part in ("data", "indices", "indptr"):
        arrays[prefix + "label_matrix." + part] = getattr(L, part).astype(
            np.float64 if part == "data" else np.int64)
    if getattr(est, "label_embeddings_", None) is not None:
        arrays[prefix + "label_embeddings"] = np.asarray(est.label_embeddings_, dtype=np.float32)
        arrays[prefix + "label_embedding_owner"] = np.asarray(est.label_embedding_owner_,
                                                             dtype=np.int64)
    return {"params": _json_params(est, skip=("vectorizer",)),
            "vectorizer": _save_step(est.vectorizer_, arrays, prefix + "vectorizer.", folder),
            "label_texts": list(est.label_texts_), "shape": list(L.shape), "k": int(est.k_),
            **_label_space(est, arrays, prefix)}


def _load_ranker(state, arrays, prefix, folder):
    # folders saved before ``passages`` existed scored whole documents only
    from ._description_ranker import LabelTexts
    est = DescriptionRanker(**{"passages": "document", **state["params"]})
    _set_label_space(est, state, arrays, prefix, folder)
    texts = LabelTexts(
        vectorizer=_load_step(state["vectorizer"], arrays, prefix + "vectorizer.", folder),
        label_texts=list(state["label_texts"]),
        label_matrix=sp.csr_matrix((arrays[prefix + "label_matrix.data"],
                                    arrays[prefix + "label_matrix.indices"],
                                    arrays[prefix + "label_matrix.indptr"]),
                                   shape=tuple(state["shape"])),
        k=int(state["k"]),
        # the encoder's label embeddings; the encoder itself is loaded from its folder when used
        label_embeddings=arrays.get(prefix + "label_embeddings"),
        label_embedding_owner=arrays.get(prefix + "label_embedding_owner"))
    est.parts_ = {**est.parts_, "model": texts}
    return est


register_step(KIND, DescriptionRanker, _save_ranker, _load_ranker)


#: Format tag in ``config.json`` of a saved :class:`DescriptionFusion`.
FUSION_FORMAT = "xplant-description-fusion-1"
#: The subfolder of a saved DescriptionFusion that holds its model, in that model's own format.
ESTIMATOR_FOLDER = "estimator"


def save_in_own_format(model, path, *, overwrite=False):
    """A fitted model in its own format: a PlantClassifier by its ``save``, the rest by
    :func:`~xplant.linear.save_linear` (which refuses, naming what it saves).

    The model of a saved DescriptionFusion, and the PlantClassifier kind of
    :func:`xplant.persistence.save`: PLANT's Pipeline (a MIGRelevance, then
    the classifier) is saved as its classifier, which holds the fitted
    relevance; any other step before a classifier is refused.
    """
    from ..linear import save_linear
    from ..relevance import MIGRelevance
    steps = list(model.steps) if hasattr(model, "steps") else [("model", model)]
    final = steps[-1][1]
    if not hasattr(final, "save"):
        return save_linear(model, path, overwrite=overwrite)
    # PLANT's layout (MIGRelevance -> PlantClassifier): the classifier holds the fitted
    # relevance and reads raw texts, so its folder alone answers as the Pipeline does
    if [type(step) for _, step in steps[:-1]] not in ([], [MIGRelevance]):
        raise TypeError(f"cannot save a Pipeline of {[type(s).__name__ for _, s in steps]} "
                        f"without pickle: a {type(final).__name__} saves itself, so the one "
                        "step before it may be a MIGRelevance (PLANT's Pipeline), nothing else")
    return final.save(path, overwrite=overwrite)


def save_description_fusion(fusion, path, *, overwrite=False):
    """Save a fitted :class:`DescriptionFusion` to the folder ``path``, without pickle.

    The folder holds ``config.json`` (the format tag, the fitted weights,
    the label space, the ranker as a step of
    :func:`~xplant.linear.save_linear`'s format, the decision rule
    ``decision_rule_`` when one was set),
    ``arrays.safetensors`` (the unseen labels' column indices, the label
    frequencies, the ranker's arrays) and ``estimator/``: a copy of the
    fitted model in its own saved format (a PlantClassifier's folder, or
    :func:`~xplant.linear.save_linear`'s). The copy makes the folder a
    model of its own: it loads wherever it is moved, alone or with others.
    :func:`xplant.persistence.load_saved` loads it; its scores are the saved object's,
    to the bit.

    Parameters
    ----------
    fusion : DescriptionFusion
        Fitted. Its model (``estimator_``; the model inside a
        ``FrozenEstimator``) must be saveable: a
        :class:`~xplant.neural.PlantClassifier` (alone, or after the
        ``MIGRelevance`` it was fitted on) or what
        :func:`~xplant.linear.save_linear` saves.
    path, overwrite
        As in :func:`~xplant.linear.save_linear`.

    Returns
    -------
    path : Path
        The folder written.

    Raises
    ------
    TypeError
        For another object than a DescriptionFusion, or a model that cannot
        be stored without pickle (the message names what can).
    ValueError
        For a decision rule whose per-label thresholds are not finite, or a
        fusion whose label names are not its model's (a fusion fitted
        without ``label_names`` over a model that has them).
    FileExistsError
        When ``path`` exists and ``overwrite`` is False.
    sklearn.exceptions.NotFittedError
        When ``fusion`` is not fitted.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from xplant import load_saved
    >>> from xplant.linear import FrequencyPrior
    >>> texts = ["chest pain and fever", "broken left arm", "fever and cough"]
    >>> Y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    >>> f = DescriptionFusion(FrequencyPrior(), weight=1.0).fit(
    ...     texts, Y, label_descriptions=["fever", "fracture of arm", "cough"])
    >>> folder = save_description_fusion(f, tempfile.mkdtemp() + "/fusion")
    >>> g, decision = load_saved(folder)
    >>> bool((g.decision_function(["a dry cough"]) == f.decision_function(["a dry cough"])).all())
    True
    >>> decision["rule"], decision["k"]
    ('top_k', 1)
    """
    import importlib.metadata as md
    from pathlib import Path
    from sklearn.frozen import FrozenEstimator
    from sklearn.utils.validation import check_is_fitted
    from ..persistence._codec import write_arrays, write_json
    from ..persistence._parts import model_folder
    if type(fusion) is not DescriptionFusion:
        raise TypeError(f"save_description_fusion saves a DescriptionFusion; got "
                        f"{type(fusion).__name__} (save a linear model with "
                        "xplant.linear.save_linear, a PlantClassifier with its save() method)")
    check_is_fitted(fusion, "estimator_")
    path = Path(path)
    decision = rule_json(fusion)
    frozen = isinstance(fusion.estimator_, FrozenEstimator)
    model = fusion.estimator_.estimator if frozen else fusion.estimator_
    try:                                  # what loading checks, refused before anything is written
        _check_same_labels(fusion, model, "its model")
    except ValueError as exc:
        raise ValueError(f"cannot save this DescriptionFusion: {exc}; fit it with "
                         "label_names=<its model's label names>, so that the saved folder "
                         "answers in the same labels") from None
    from ._fusion_parts import FUSION_PARTS
    with model_folder(fusion, path, overwrite=overwrite, handled=FUSION_PARTS) as tmp:   # the old one goes once this is in place
        arrays = {"unseen": np.asarray(fusion.unseen_, dtype=np.int64)}
        config = {"format": FUSION_FORMAT,
                  "params": _json_params(fusion, skip=("estimator", "ranker", "mentions")),
                  "weight": float(fusion.weight_), "seen_weight": float(fusion.seen_weight_),
                  "k": int(fusion.k_), **_label_space(fusion, arrays, ""),
                  "ranker": _save_step(fusion.ranker_, arrays, "ranker.", tmp),
                  "estimator": {"folder": ESTIMATOR_FOLDER, "frozen": frozen},
                  "catalogue": _save_catalogue(fusion, arrays),
                  "mentions": (None if getattr(fusion, "mentions_", None) is None else
                               _save_step(fusion.mentions_, arrays, "mentions.", tmp)),
                  "mention_weight": float(getattr(fusion, "mention_weight_", 0.0)),
                  "mention_choice": getattr(fusion, "mention_choice_", None),
                  "dev_map": [[*key, float(v)] for key, v in fusion.dev_map_.items()],
                  "dev_choice": getattr(fusion, "dev_choice_", None), "decision": decision,
                  "versions": {"xplant": md.version("xplant"),
                               "scikit-learn": md.version("scikit-learn")}}
        save_in_own_format(model, tmp / ESTIMATOR_FOLDER)
        write_arrays(tmp / "arrays.safetensors", arrays)
        write_json(tmp / "config.json", config)
    return path


def _save_catalogue(fusion, arrays):
    """The open label space's part of ``config.json`` (its arrays into ``arrays``), or None."""
    if getattr(fusion, "catalogue_", None) is None:
        return None
    config, parts = fusion.catalogue_.to_dict()
    arrays.update({"catalogue." + k: v for k, v in parts.items()})
    config["vectorizer"] = _save_step(fusion.catalogue_.vectorizer_, arrays,
                                      "catalogue.vectorizer.", None)
    return {"index": config, "known_classes": [str(c) for c in fusion.known_classes_],
            "near_weight": float(fusion.near_weight_),
            "family_weight": float(fusion.family_weight_),
            "prior_weight": float(fusion.prior_weight_), "record": fusion.catalogue_record_}


def _load_catalogue(config, arrays, classes):
    """What :func:`_save_catalogue` wrote: the open space's part (its ``unseen`` set by the
    caller) and the catalogue's three weights (all 0 without a catalogue, ``config`` None)."""
    from ._catalogue import CatalogueIndex
    from ._fusion_parts import OpenSpace
    if config is None:
        return OpenSpace(), {"near_weight": 0.0, "family_weight": 0.0, "prior_weight": 0.0}
    parts = {k[len("catalogue."):]: v for k, v in arrays.items() if k.startswith("catalogue.")}
    vectorizer = _load_step(config["index"]["vectorizer"], arrays, "catalogue.vectorizer.", None)
    index = CatalogueIndex.from_dict(config["index"], parts, vectorizer)
    weights = {"near_weight": float(config["near_weight"]),
               "family_weight": float(config["family_weight"]),
               "prior_weight": float(config.get("prior_weight", 0.0))}
    if [str(c) for c in index.label_names_] != [str(c) for c in classes]:
        raise ValueError("the catalogue's labels are not the fusion's labels")
    if not all(w >= 0 for w in weights.values()):
        raise ValueError("the weights must be non-negative numbers")
    return OpenSpace(catalogue=index, known_classes=np.asarray(config["known_classes"]),
                     open_classes=classes, record=dict(config["record"])), weights


def _check_same_labels(fusion, other, what):
    """ValueError unless ``other`` (a model or the ranker) has the fusion's labels, in order
    (with a catalogue: the labels it was fitted on, before the catalogue's)."""
    names = [str(c) for c in final_step(other).classes_]
    known = getattr(fusion, "known_classes_", None)
    own = [str(c) for c in (fusion.classes_ if getattr(fusion, "catalogue_", None) is None
                            or known is None else known)]
    if names != own:
        i = next((i for i, (a, b) in enumerate(zip(names, own)) if a != b), None)
        first = "" if i is None else f"; column {i} is {names[i]!r} there, {own[i]!r} here"
        raise ValueError(f"{what} has {len(names)} labels that are not the fusion's "
                         f"{fusion.n_labels_} labels, in the same order{first}")


def load_description_fusion(path, config, load_model):
    """The fitted DescriptionFusion of a folder written by :func:`save_description_fusion`.

    Called by :func:`xplant.persistence.load_saved` (which dispatches on the format of
    ``config.json``); use that.

    Parameters
    ----------
    path : Path
        The saved folder.
    config : dict
        Its ``config.json``.
    load_model : callable
        ``load_model(folder)`` returns the fitted model saved in ``folder``
        (any saved format; :func:`xplant.persistence.load_saved` passes itself).

    Returns
    -------
    DescriptionFusion
        Fitted; ``estimator`` and ``estimator_`` are the loaded model
        (inside a ``FrozenEstimator`` when the saved one was frozen),
        ``ranker`` an unfitted copy of ``ranker_``.

    Raises
    ------
    ValueError
        When a field is missing or invalid, the unseen labels are not those
        of the label frequencies, or the model or the ranker has other
        labels; naming ``config.json``.
    """
    from sklearn.base import clone
    from sklearn.frozen import FrozenEstimator
    from .._files import check_path_name
    from ..persistence._codec import check_format, read_arrays
    from ..persistence._parts import read_parts
    check_format(config.get("format"), FUSION_FORMAT, path / "config.json")
    arrays = read_arrays(path / "arrays.safetensors")
    try:
        folder = path / check_path_name(config["estimator"]["folder"], "the saved model folder")
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"{path / 'config.json'}, field 'estimator': {type(exc).__name__}: "
                         f"{exc}; the file is damaged or was edited by hand, save the model "
                         "again") from None
    model = load_model(folder)
    from ._fusion_parts import FusionChoices, FusionSources, FusionWeights
    try:
        fusion = DescriptionFusion(None, **config["params"])
        _set_label_space(fusion, config, arrays, "", path)
        ranker = _load_step(config["ranker"], arrays, "ranker.", path)
        # folders saved before the mention source have none
        mentions = (None if config.get("mentions") is None else
                    _load_step(config["mentions"], arrays, "mentions.", path))
        estimator = FrozenEstimator(model) if config["estimator"]["frozen"] else model
        open_space, catalogue_weights = _load_catalogue(config.get("catalogue"), arrays,
                                                        fusion.classes_)
        open_space.unseen = arrays["unseen"].astype(np.int64)
        weights = FusionWeights(weight=float(config["weight"]),
                                seen_weight=float(config["seen_weight"]),
                                mention_weight=float(config.get("mention_weight", 0.0)),
                                k=int(config["k"]), **catalogue_weights)
        choices = FusionChoices(dev_map={tuple(float(w) for w in row[:-1]): float(row[-1])
                                         for row in config["dev_map"]},
                                weights=config.get("dev_choice"),
                                mentions=config.get("mention_choice"))
        # each part restores itself: parts_ is set, no fitted attribute by name
        fusion.parts_ = {**fusion.parts_, "weights": weights, "open_space": open_space,
                         "dev_choices": choices,
                         "sources": FusionSources(model=estimator, ranker=ranker,
                                                  mentions=mentions)}
        # the parameters a refit of the loaded fusion fits again
        fusion.ranker, fusion.estimator = clone(ranker), estimator
        fusion.mentions = None if mentions is None else clone(mentions)
        if not weights.mention_weight >= 0:
            raise ValueError("the mention weight must be a non-negative number")
        if mentions is not None:
            _check_same_labels(fusion, mentions, "the mention matcher")
        if not np.array_equal(open_space.unseen, np.flatnonzero(fusion.label_frequency_ == 0)):
            raise ValueError("the unseen labels are not the labels of training frequency 0")
        if not (weights.weight >= 0 and weights.seen_weight >= 0):
            raise ValueError("the weights must be non-negative numbers")
        _check_same_labels(fusion, ranker, "the ranker")
        _check_same_labels(fusion, model, f"the model in {folder.name}/")
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"{path / 'config.json'}: {type(exc).__name__}: {exc}; the file is "
                         "damaged or was edited by hand, save the model again") from None
    read_rule(fusion, config, path)
    return read_parts(fusion, path)
