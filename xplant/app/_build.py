"""The estimator behind a row of a run: built from its name, fitted as the run fits it.

:func:`build_model` gives the unfitted estimator of a row of
:data:`xplant.app._rows.ROWS` (with the run's epoch budgets,
:data:`DEFAULT_EPOCHS` and :data:`DEFAULT_PLANT_EPOCHS`);
:func:`fit_with_dev` fits it on train with what the model takes besides
(the label names, the dev split, the label descriptions), and
:func:`_settings` reads back what a fitted row trained with.
"""

from ._rows import DESCRIPTION_ENCODER
from ._splits import _inputs
from .._params import final_step

#: Stage 2 / Stage 1 epoch budgets of the main job (2 CPU cores, ~15 min). Early
#: stopping on dev MAP (patience :data:`xplant.app._rows.DATASET_TRAINING`) ends most fits
#: before the budget; PLANT on CodiEsp-D, at the widths of
#: :data:`xplant.app._rows.DATASET_ARCHITECTURES`, takes its best epoch in the 50s.
DEFAULT_EPOCHS = 60
DEFAULT_PLANT_EPOCHS = 10


def build_model(name, *, epochs=DEFAULT_EPOCHS, plant_epochs=DEFAULT_PLANT_EPOCHS,
                random_state=0, verbose=1, params=None, checkpoint_dir=None, features=False,
                description_encoder=DESCRIPTION_ENCODER):
    """The estimator behind a model name (a row of :data:`xplant.app._rows.ROWS`).

    ``name`` is a row's short or display name, any letter case. ``params``
    overrides parameters: of :class:`~xplant.neural.PlantClassifier` for the
    neural rows (``backbone``, ``criterion__loss``, ``module__max_length``, ...;
    ``planter__<name>`` ones go to its :class:`~xplant.neural.AttentionPlanter`;
    names of earlier releases are read too),
    of the final step otherwise. ``checkpoint_dir`` (neural models only)
    makes the classifier write a checkpoint every epoch there, so that an
    interrupted fit can resume. PLANT with a word backbone runs as
    ``Pipeline([("mig", MIGRelevance()), ("clf", PlantClassifier)])``; with an
    ``hf``/``llm`` backbone the classifier fits its own relevance with the
    backbone's tokenizer. ``features=True``: the data are feature
    vectors (an XC-format dataset), so the linear and tree rows take them
    without TF-IDF and a row that needs text is an error.

    Parameters
    ----------
    name : str
        A row's short or display name (:func:`xplant.app.find_row`).
    epochs, plant_epochs : int
        Stage 2 and Stage 1 epochs of the neural rows.
    random_state : int, default=0
        Seeds the model (the linear solvers' order, the networks' weights).
    verbose : int, default=1
        0: silent; 1: the neural fits' epoch lines and progress.
    params : dict or None
        Parameters over the row's own.
    checkpoint_dir : str, Path or None
        The neural rows' epoch checkpoints (see above).
    features : bool, default=False
        The data are feature vectors (see above).
    description_encoder : str or None, default="minilm"
        The sentence encoder of the ``descriptions`` row
        (:func:`xplant.app._rows.description_ranker`); other rows ignore it.

    Returns
    -------
    estimator or Pipeline
        Unfitted.

    Raises
    ------
    ValueError
        For an unknown row, or a text row on feature vectors.
    """
    from ._rows import find_row
    row = find_row(name)
    if features and row.needs_text:
        raise ValueError(f"model {row.name!r} ({row.display}) reads text, and this dataset holds "
                         "feature vectors only (XC format); choose feature-based rows: "
                         "prior, svm, lr, omikuji, napkinxc, libmultilabel")
    # only a row that reads descriptions takes the encoder (a registered factory need not)
    extra = {"description_encoder": description_encoder} if row.needs_descriptions else {}
    return row.factory(dict(params or {}), features=features, epochs=epochs,
                       plant_epochs=plant_epochs, random_state=random_state, verbose=verbose,
                       checkpoint_dir=checkpoint_dir, **extra)


def fit_with_dev(model, tr, dv, resume=False):
    """Fit a row's model as ``xplant run`` does: on train, with dev where the model takes it.

    Every model gets the label names; neural models also the dev split
    (early stopping and their dev choices), the description rows the label
    descriptions, synonyms and parents, the mention matcher the training
    split's gold evidence (and, where it indexes another text than
    ``texts``, that text's field as its ``text_field``).

    Parameters
    ----------
    model : estimator or Pipeline
        Unfitted (:func:`build_model`).
    tr, dv : Bunch
        The train and dev splits of :func:`load_splits`.
    resume : bool, default=False
        A neural model with a ``checkpoint_dir`` continues from its latest
        checkpoint there.

    Returns
    -------
    estimator
        ``model``, fitted.
    """
    final = final_step(model)
    kw = evidence_fit_params(model, tr)
    if tr.get("label_names") is not None:
        kw["label_names"] = [str(n) for n in tr.label_names]
    from ..unseen import DescriptionFusion, DescriptionRanker
    if isinstance(final, (DescriptionRanker, DescriptionFusion)):   # rows that read label descriptions
        from ._fused import DESCRIPTION_FIELDS
        kw.update({k: tr[k] for k in DESCRIPTION_FIELDS if tr.get(k) is not None})
    if hasattr(final, "planter"):
        kw["validation_data"] = (_inputs(dv, model), dv.Y)
        if resume and final.checkpoint_dir is not None:
            kw["resume"] = True
    prefix = final_step(model, with_prefix=True)[1]
    return model.fit(_inputs(tr, model), tr.Y, **{prefix + k: v for k, v in kw.items()})


def evidence_fit_params(model, split):
    """What a row that learns from gold evidence takes from its training split.

    A :class:`~xplant.linear.MentionMatcher` row (a Pipeline's last step) is set
    to read the text its evidence indexes in that text's language
    (:func:`xplant.app._splits.evidence_params`) and gets ``evidence``. A
    planted :class:`~xplant.neural.PlantClassifier` row gets ``evidence``
    where it reads the text the offsets index (``evidence_field`` None:
    CodiEsp with ``--language es`` or ``both``, or a user's evidence of
    its text field), so that Stage 1 plants each (document, code) pair with
    a mention on the mention's words; reading another text (CodiEsp's
    English translation), it is planted from MIG. Any other model gets
    nothing.

    Parameters
    ----------
    model : estimator or Pipeline
        Unfitted; a matcher's ``text_field`` and ``language`` are set here.
    split : Bunch
        The split it is fitted on (train, or train + dev for a refit).

    Returns
    -------
    dict
        ``{"evidence": ...}`` for a matcher or such a PLANT row, else ``{}``
        (the keys of the final step's ``fit``).
    """
    from ..linear import MentionMatcher
    from ._splits import evidence_params, has_evidence
    final = final_step(model)
    if isinstance(final, MentionMatcher):
        final.set_params(**evidence_params(split))
        return {"evidence": split.get("evidence")}
    if getattr(final, "plant", False) and has_evidence(split) and not split.get("evidence_field"):
        return {"evidence": split.evidence}
    return {}


def _settings(est):
    """What a fitted row trained with: every setting, defaults written out where the
    estimator can say them (:meth:`~xplant.neural.PlantClassifier.resolved_params`)."""
    return est.resolved_params() if hasattr(est, "resolved_params") else \
        est.get_params(deep=False)


def _child_model_args(model_args):
    """A copy of a row's model arguments without ``num_threads``, which sets torch's
    threads in this process (the first step of a row's child process)."""
    model_args = dict(model_args)
    num_threads = model_args.pop("num_threads", None)
    if num_threads:
        import torch
        torch.set_num_threads(num_threads)
    return model_args


def fit_info(final):
    """What a fitted neural row reports of its fit, first fit and refit alike: Stage 1's
    attention figures, settings and evidence pairs, the best epoch, and the Stage 1
    weights tried on dev (a dict; empty for a model without them)."""
    info = {}
    if getattr(final, "planter_", None) is not None:
        info["stage1_attention_ndcg"] = final.planter_.attention_ndcg_
        info["stage1_initial_attention_ndcg"] = final.planter_.initial_attention_ndcg_
        # what Stage 1 planted on: the gold evidence's words where a pair has them, else MIG
        info["stage1_evidence_pairs"] = getattr(final.planter_, "n_evidence_pairs_", 0)
        info["stage1_params"] = {k: v for k, v in _settings(final.planter_).items()
                                 if isinstance(v, (int, float, str, bool, type(None)))}
    if hasattr(final, "best_epoch_"):
        info["best_epoch"] = final.best_epoch_
    if getattr(final, "stage1_weight_candidates_", None) is not None:   # stage1_weight="dev"
        info["stage1_weight_chosen"] = final.stage1_weight_
        info["stage1_weight_candidates"] = final.stage1_weight_candidates_
    return info
