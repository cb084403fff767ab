"""The Stage 1 → Stage 2 hand-off: PlantClassifier runs its planter and starts from it.

Stage 1 itself (:class:`AttentionPlanter`) is ``planting/_planter.py``; Stage 2
(:class:`PlantClassifier`) is ``classifier/_classifier.py``. Plain functions
that ``PlantClassifier.fit`` calls: :func:`configured_planter` makes the
planter from the classifier's settings, :func:`read_planting` reads a saved
planting given as ``planter``, :func:`start_from_planting` copies the
planted encoder and label attention into the Stage 2 network, and
:func:`stage2_items` builds the Stage 2 items, with the planter's ranking
items (:func:`ranking_items`) when ``stage1_weight`` > 0
(docs/guide/classifier.md) and with shortlist candidates when there is a
shortlist (docs/guide/shortlist-fusion.md).
"""

import os

from sklearn.base import clone

from .._settings import ARCH_DEFAULTS, epoch_settings
from ._items import AnchoredDataset, CandidateDataset
from ..planting._items import Stage1Dataset
from ..training._data import TokenDataset
from ..planting._planter import AttentionPlanter, load_planting, tf_relevance


def planting_folder(planter):
    """The folder of a saved planting given as ``planter``, or None."""
    return os.fspath(planter) if isinstance(planter, (str, os.PathLike)) else None


def plants_from_texts(plant, planter, described):
    """Whether Stage 1 plants labels from their texts or ancestors (then every
    label is scored, :func:`~xplant.neural.scored_labels`).

    ``plant`` and ``planter`` are the classifier's parameters; ``described``:
    ``fit`` got label descriptions, synonyms or parents. A saved planting
    says so in its ``planting.json``; one saved before it said is taken to
    have planted them (every label scored, as then).
    """
    if not plant:
        return False
    folder = planting_folder(planter)
    if folder is None:
        return bool(described)
    from pathlib import Path

    from ..._files import read_json_object
    meta = Path(folder) / "planting.json"
    try:
        return bool(read_json_object(meta, "a planting's record").get("planted_from_texts", True))
    except (OSError, ValueError):
        return True            # load_planting reports the broken folder when it plants


def ranking_items(planter, relevance, train_docs, train_pos, Y_train, *, from_folder, generator,
                  evidence=None):
    """Stage 1's ranking items that ``stage1_weight`` > 0 keeps in Stage 2.

    Parameters
    ----------
    planter : AttentionPlanter
        The fitted planter, or the settings of one (its target, cutoff and sampling).
    relevance : MIGRelevance
        The fitted relevance.
    train_docs, train_pos : list of ndarray of int
        The training documents' token ids and positive labels.
    Y_train : csr_matrix
        The training targets.
    from_folder : bool
        The planting was read from a folder (its "tf" target is not rebuilt).
    generator : numpy.random.Generator
        Draws the sampled labels and negatives.
    evidence : list or None, default=None
        The rows' gold evidence targets, as Stage 1 took them.

    Returns
    -------
    Stage1Dataset
    """
    rel = relevance
    special = {i for i in (rel.pad_id_, rel.unk_id_) if i is not None and i >= 0}
    target = getattr(planter, "target_relevance_", None)
    if target is None:         # a saved planting, plant=False, or a resumed fit
        if planter.target == "tf" and not from_folder:
            target = tf_relevance(train_docs, Y_train, len(rel.vocabulary_),
                                  getattr(rel, "top_k", None) or 50, special)
        else:
            target = rel.relevance_
    return Stage1Dataset(train_docs, train_pos, target, labels_per_doc=planter.labels_per_doc,
                         max_relevant=planter.max_relevant, n_negatives=planter.n_negatives,
                         generator=generator, ignore_ids=special, evidence=evidence)


def stage2_items(train_docs, train_pos, candidates=None, ranking=None):
    """Stage 2 training items: documents, with shortlist ``candidates`` (one label-id
    array per document) and with Stage 1's ``ranking`` items when given."""
    if candidates is not None:
        return CandidateDataset(train_docs, train_pos, candidates, ranking)
    items = TokenDataset(train_docs, train_pos)
    return items if ranking is None else AnchoredDataset(items, ranking)

def _constructor_planter_params(clf, planter):
    """``planter__*`` settings given to the classifier's constructor (skorch keeps
    them as attributes): they reach the planter, as ``set_params`` would.

    Raises
    ------
    ValueError
        When the planter object sets the same parameter to another
        non-default value: one setting, two spellings; the message names both.
    """
    given = clf.get_params_for("planter")
    if not given:
        return {}
    own, default = planter.get_params(), AttentionPlanter().get_params()
    for key, value in given.items():
        if key in own and own[key] is not value and own[key] != default.get(key) \
                and own[key] != value:
            raise ValueError(f"planter__{key}={value!r} and planter=AttentionPlanter("
                             f"{key}={own[key]!r}) set one setting twice; give one of them")
    return given

def _planter_overrides(clf, planter):
    """What the classifier sets on its planter: its architecture, seed, epoch
    sampling, checkpoint folder and scale-out strategy.

    Raises
    ------
    ValueError
        When the planter sets its own architecture (``module__*`` or
        ``backbone``) to another value than the classifier's: the planting
        loads into the classifier's network, so the classifier's spelling
        is the one to set.
    """
    own = {"backbone": clf.backbone, **{k: v for k, v in clf._module_settings().items()
                                         if k in ARCH_DEFAULTS}}
    theirs = {"backbone": planter.backbone, **planter.get_params_for("module")}
    for key, value in theirs.items():
        if key == "backbone" and value == "cnn" or key not in own or value == own[key]:
            continue
        spelling = key if key == "backbone" else "module__" + key
        raise ValueError(f"planter=AttentionPlanter({spelling}={value!r}) differs from the "
                         f"classifier's {spelling}={own[key]!r}: the planting loads into "
                         f"the classifier's network, so its architecture is the "
                         f"classifier's. Set PlantClassifier({spelling}={value!r}) and "
                         f"leave the planter's unset")
    over = {"backbone": clf.backbone, **{"module__" + k: v for k, v in own.items()
                                          if k != "backbone"}}
    over["random_state"] = clf.random_state
    # the classifier's documents per epoch, where it sets them (else the planter's own)
    over.update({"iterator_train__" + k: v for k, v in epoch_settings(clf).items()
                 if v is not None})
    if clf.checkpoint_dir is not None:
        over["checkpoint_dir"] = os.path.join(clf.checkpoint_dir, "stage1")
    if clf._uses_deepspeed() and planter.strategy == "skorch":
        over["strategy"] = clf.strategy
    return over


def configured_planter(clf):
    """The planter ``fit`` runs: ``planter`` (or ``AttentionPlanter()``) cloned, with the
    classifier's ``planter__*`` settings and its architecture, seed, epoch sampling,
    checkpoint folder and scale-out strategy.

    Parameters
    ----------
    clf : PlantClassifier
        Its parameters are read, nothing is set.

    Returns
    -------
    AttentionPlanter
        Unfitted.

    Raises
    ------
    ValueError
        One setting given twice (``planter__x`` and ``planter=AttentionPlanter(x=...)``
        with other values), or a planter architecture other than the classifier's.
    """
    planter = clone(clf.planter) if clf.planter is not None else AttentionPlanter()
    planter.set_params(**_constructor_planter_params(clf, planter))
    return planter.set_params(**_planter_overrides(clf, planter))


def read_planting(folder, n_labels, relevance):
    """The network state of the planting saved at ``folder``.

    Raises
    ------
    ValueError
        When it was made for another label count or another tokenizer or vocabulary.
    """
    state, meta = load_planting(folder)
    if meta["n_labels"] != n_labels:
        raise ValueError(f"the planting at {folder} has {meta['n_labels']} labels, "
                         f"the data {n_labels}")
    fp = getattr(relevance, "tokenizer_fingerprint_", None)
    if meta.get("tokenizer_fingerprint") != fp:
        raise ValueError(f"the planting at {folder} was made with another tokenizer "
                         "or vocabulary; plant again on this data")
    return state


def start_from_planting(module, state):
    """Copy the planted encoder and label attention of ``state`` into ``module``.

    Raises
    ------
    ValueError
        When the planting lacks an attention weight of the network (another architecture).
    """
    own = module.state_dict()
    shared = {k: v for k, v in state.items()
              if (k.startswith("encoder.") or k.startswith("attention.")) and k in own}
    missing = [k for k in own if k.startswith("attention.") and k not in shared]
    if missing:
        raise ValueError(f"the planting lacks {missing}; its architecture differs from this classifier")
    module.load_state_dict(shared, strict=False)
