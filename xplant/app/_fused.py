"""The fused rows of ``xplant run``: one shortlisted neural fit, three rows.

A neural row trained with a shortlist (``PlantClassifier(shortlist=...)``)
is reported three times from the same fit, never refitted: the network
alone on its candidates (α = 0, the row itself), fused at the dev-chosen α
(``<row> fused``) and the shortlist alone (α = 1, ``<row> fused, α=1``);
see docs/guide/shortlist-fusion.md. Within a run, the neural rows take the SVM row's
fitted model, frozen, as their shortlist (:func:`frozen_shortlist`).
"""

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._rows import DESCRIPTION_ENCODER
from ._splits import _inputs, text_read
from .._params import final_step

#: Shortlist size C of the neural rows per dataset: every label (None: the
#: full-label Stage 2, fused with the linear shortlist) where the shortlist's
#: recall at a small C is low (CodiEsp-D: 0.60 of test gold at C = 100, of a
#: 0.83 ceiling; benchmarks/bench_shortlist.py), 100 on EURLEX57K.
SHORTLIST_CANDIDATES = {"eurlex57k": 100}

#: The row whose fitted model the neural rows of the same run take as their
#: shortlist (frozen), instead of fitting the same kind of model again.
SHARED_SHORTLIST_ROW = "TF-IDF + SVM"


def shared_shortlist(entry, spec, has_text):
    """The saved model folder of a finished row that later rows may take as their shortlist.

    Only the SVM row (:data:`SHARED_SHORTLIST_ROW`), fitted on raw texts and
    on the whole training split (no ``max_train_docs``), and saved; else None.
    """
    if entry.get("name") != SHARED_SHORTLIST_ROW or not has_text or spec.get("max_train_docs"):
        return None
    return entry.get("saved_to")


def frozen_shortlist(params, row, path, spec):
    """``params`` with the run's fitted SVM (``path``) as a frozen shortlist, where it applies.

    A shortlisted row (``row.shortlisted``) whose parameters leave
    ``shortlist`` at its default, fitted on the whole training split, takes
    ``FrozenEstimator(load_linear(path))``: the SVM row's model (C chosen on
    dev, fitted on the training split only) is used as it is, so the run
    fits that model once, and the row's α = 1 scores are the SVM row's.
    """
    if path is None or not row.shortlisted or "shortlist" in params or spec.get("max_train_docs"):
        return params
    from sklearn.frozen import FrozenEstimator
    from ..linear import load_linear
    return dict(params, shortlist=FrozenEstimator(load_linear(path)))


def shortlist_params(params, row, dataset):
    """A row's parameters with the dataset's ``n_candidates`` where it uses a shortlist.

    Only the rows that take a shortlist (``row.shortlisted``: the
    :class:`~xplant.neural.PlantClassifier` rows) get it; one whose
    parameters leave ``shortlist`` unset uses its factory's default (the
    linear shortlist); ``shortlist=None`` turns it off, and then no
    ``n_candidates`` is added. Other rows (the description ranker, the
    linear and tree rows) are left as given.

    Parameters
    ----------
    params : dict or None
        The row's parameters (``--set``, a spec).
    row : Row
        :func:`xplant.app.find_row`'s record of the row.
    dataset : str or None
        The job's dataset (``"codiesp"``, ``"eurlex57k"``, ...).

    Returns
    -------
    dict
    """
    params = dict(params or {})
    if row.shortlisted and params.get("shortlist", True) and "n_candidates" not in params:
        params["n_candidates"] = SHORTLIST_CANDIDATES.get(dataset)
    return params


def row_params(params, row, dataset, codes=None):
    """A row's parameters as ``xplant run`` fits it on ``dataset``.

    :func:`shortlist_params` (the dataset's ``n_candidates`` for a
    shortlisted row), then :func:`xplant.app.dataset_settings` (the bundled
    job's settings of the row). Whatever builds "the job's row" outside
    the run (the benchmarks) builds it through here, so that it fits the
    same model.

    Parameters
    ----------
    params, row, dataset
        As in :func:`shortlist_params`.
    codes : str or None, default=None
        Its code set where it has several (CodiEsp: ``"D"``, ``"P"``).

    Returns
    -------
    dict
    """
    from ._rows import dataset_settings
    return dataset_settings(shortlist_params(params, row, dataset), row, dataset, codes)


def row_scores(model, X):
    """A row's (n, L) float64 scores of ``X``; for a shortlisted fit also its three readings.

    A shortlisted neural fit is scored by
    :meth:`~xplant.neural.PlantClassifier.fusion_scores`: ``"fused"`` at its
    dev-chosen α and logit adjustment τ (the row's own scores, as
    ``predict_proba`` gives them, float32), ``"alone"`` the network as
    trained (α = 0, τ = 0) and ``"shortlist"`` the shortlist alone
    (α = 1); one pass of each model, two of the network when τ > 0. Any
    other model: its ``predict_proba`` or ``decision_function``, and None.

    Parameters
    ----------
    model : fitted estimator or Pipeline
        The fitted row.
    X : list of str or sparse matrix
        What the model reads: texts, or an XC dataset's feature vectors.

    Returns
    -------
    scores : ndarray or csr_matrix of float64 of shape (n, L)
        CSR for a model whose scores are sparse (an open-space fusion):
        kept sparse, a missing entry is never ranked
        (:func:`xplant._saved.score_matrix`).
    readings : dict or None
        ``{"alone", "fused", "shortlist": (n, L) scores}`` of a shortlisted fit.
    """
    from .._saved import score_matrix
    final = final_step(model)
    if getattr(final, "shortlist_", None) is None:
        return score_matrix(model, X), None
    for _, step in (model.steps[:-1] if hasattr(model, "steps") else []):
        X = step.transform(X)
    alpha = float(final.fusion_weight_)
    tau = float(getattr(final, "logit_adjustment_", 0.0))
    if tau == 0:
        at = final.fusion_scores(X, (0.0, alpha, 1.0))
        alone = at[0.0]
    else:                                # the network alone is reported as trained
        at = final.fusion_scores(X, (alpha, 1.0))
        alone = final.fusion_scores(X, (0.0,), logit_adjustment=0.0)[0.0]
    readings = {"alone": alone, "fused": at[alpha], "shortlist": at[1.0]}
    return readings["fused"].astype(np.float32).astype(np.float64), readings


def fusion_rows(out, final, dev, test, dev_Y, *, same_as=None):
    """A shortlisted neural fit: its own row (the network alone), plus the fused and α = 1 rows.

    The same fit re-scored (never refitted): ``dev`` and ``test`` are the
    readings ``{"alone", "fused", "shortlist": scores}`` of
    :func:`row_scores`. The row itself becomes PLANT alone on its
    candidates (α = 0, without logit adjustment), ``out["variants"]`` holds
    the fused scores at the dev-chosen α and τ and the shortlist alone
    (α = 1). Each gets its own dev-chosen decision rule when the run
    evaluates it, and its own ``dev_MAP``: the MAP of its own dev scores
    against ``dev_Y`` (sparse (n_dev, L)), not the fit's.

    Only the fused row keeps ``saved_to``: the saved model answers with the
    fused scores, so it reproduces that row (its folder says so in
    ``row.json``, see :func:`xplant._saved.save_row`). With ``same_as``
    (the name of the run's row whose fitted model is the frozen
    shortlist, :data:`SHARED_SHORTLIST_ROW`), the α = 1 row is that row by
    construction: it records ``same_as`` and tables print it once.
    """
    from ..metrics import mean_average_precision

    def dev_map(scores):
        return float(mean_average_precision(dev_Y, scores)) if dev_Y.nnz else 0.0

    alpha = float(final.fusion_weight_)
    tau = float(getattr(final, "logit_adjustment_", 0.0))
    info = dict(out["info"], fusion_weight=alpha, n_candidates=final.n_candidates_,
                shortlist=final.shortlist_info_, logit_adjustment=tau)
    from ._rows import FUSED_SUFFIXES
    saved = {key: info.pop(key) for key in ("saved_to", "not_saved") if key in info}
    out["info"] = dict(info, fusion_weight_of_row=0.0, logit_adjustment_of_row=0.0,
                       dev_MAP=dev_map(dev["alone"]))
    out["dev_scores"] = dev["alone"].astype(np.float32)
    out["test_scores"] = test["alone"].astype(np.float32)
    out["rule"] = None
    extra = {"fused": saved, "shortlist": {"same_as": same_as} if same_as else {}}
    out["variants"] = [
        {"suffix": FUSED_SUFFIXES[key], "dev_scores": dev[key].astype(np.float32),
         "test_scores": test[key].astype(np.float32),
         "info": dict(info, fusion_weight_of_row=a, logit_adjustment_of_row=t,
                      dev_MAP=dev_map(dev[key]), **extra[key])}
        for key, a, t in (("fused", alpha, tau), ("shortlist", 1.0, 0.0))]


#: Test documents whose unseen-code suggestions ``results.json`` keeps.
UNSEEN_EXAMPLES = 5

#: The fields of a training split that the description source reads.
DESCRIPTION_FIELDS = ("label_descriptions", "label_synonyms", "label_parents",
                      "parent_descriptions")


def description_variant(out, model, train, dev, test, *, model_dir=None, row=None, pinned=None,
                        encoder=DESCRIPTION_ENCODER):
    """The ``<row> fused + descriptions`` row of a shortlisted fit: its fused model
    and the label descriptions, one more source of :func:`xplant.fusion.fuse`; on data
    with gold evidence also ``<row> fused + descriptions + mentions``, the same fusion
    with a :class:`~xplant.linear.MentionMatcher` as its last source (its weight chosen
    on dev last, so the row without it is the same fit read without that source).

    :class:`xplant.unseen.DescriptionFusion` over the fitted model, frozen
    (``sklearn.frozen.FrozenEstimator``: never refitted), adds the
    description score (:func:`~xplant.app._rows.description_ranker`:
    TF-IDF cosines and the sentence encoder's) to the seen labels' fused
    scores and ranks the
    labels never seen in training by it; both weights are chosen on dev
    MAP. The row needs the training split's label descriptions (the
    bundled ICD and EUROVOC loaders give them, a user's files with
    ``--label-descriptions FILE``); without them ``out["info"]`` records why
    the row was not run. Its decision rule is chosen on dev here
    (:func:`xplant.metrics.choose_rule`, as for every row) and, with
    ``model_dir``, the row is saved there
    (:func:`xplant.unseen.save_description_fusion`: the ranker, the
    weights, the rule and a copy of the fused model), so ``xplant
    predict`` answers as the row does.

    Parameters
    ----------
    out : dict
        The fitted row of :func:`fusion_rows` (with ``"variants"``); the
        new variant is appended there.
    model : fitted estimator or Pipeline
        The shortlisted fit.
    train, dev, test : Bunch
        The run's splits (raw texts).
    model_dir : str or None
        The row's own folder (``RUN/models/<row>_fused_descriptions``);
        None saves nothing.
    row : str or None
        The row's name, recorded in the folder's ``row.json``.
    pinned : dict or None
        The first fit's variants, ``{"descriptions": its fused +
        descriptions row, "mentions": its + mentions row (if any)}``, for
        the rows refitted on train + dev (``xplant run --refit``):
        ``model`` is the refit, ``train`` is train + dev (its evidence
        too), and nothing is chosen (the refit has no dev data left). The
        weights are the first fit's, fixed; its dev scores, ``dev_MAP``
        and decision rules are carried over, as for the refit's other
        rows. None (the first fit) chooses the weights and the rules on
        ``dev``.
    encoder : str or None, default=DESCRIPTION_ENCODER
        The description source's sentence encoder
        (:func:`~xplant.app._rows.description_ranker`; ``xplant run
        --description-encoder``); None or ``"none"``: TF-IDF alone.
    """
    desc = train.get("label_descriptions")
    if desc is None or not any(d for d in desc) or train.get("texts") is None:
        out["info"] = dict(out["info"], descriptions_row="not run: the training split has no "
                           "label descriptions (give --label-descriptions FILE, or a --labels "
                           "catalogue that names the labels)")
        return
    from ._rows import FUSED_SUFFIXES, description_ranker
    from ._splits import _inputs, has_evidence
    names, fields = _description_fields(train)
    ranker, encoder_note = description_ranker(encoder=encoder)
    matcher = evidence_matcher(train) if has_evidence(train) else None
    fused, dev32, rule, dev_map, choice, plain_dev = _fit_description_fusion(
        model, ranker, matcher, train, dev, names, fields, pinned)
    base = next(v for v in out["variants"] if v["suffix"] == FUSED_SUFFIXES["fused"])
    info = {k: v for k, v in base["info"].items() if k not in ("saved_to", "same_as")}
    info.update(description_encoder=encoder_note, n_unseen_labels=int(fused.unseen_.size))
    rows = [("descriptions", fused)] if matcher is None else \
        [("descriptions", fused.without_mentions()), ("mentions", fused)]
    # one scoring of the catalogue serves both rows: the mention source is the last term
    plain_test = rows[0][1].decision_function(_inputs(test, fused))
    for key, variant_model in rows:
        if key == rows[-1][0]:                 # the fit's own row: its scores were chosen on
            chosen = (dev32, rule, dev_map)
        elif pinned is not None:               # the first fit's row without mentions
            first = pinned["descriptions"]
            chosen = (first["dev_scores"], first["rule"], first["info"]["dev_MAP"])
        else:
            chosen = _chosen_rule(variant_model, dev, plain_dev)
        name, folder = row, model_dir
        if key == "mentions":                  # "... + descriptions + mentions", its folder
            name = None if row is None else row.replace(
                FUSED_SUFFIXES["descriptions"], FUSED_SUFFIXES["mentions"], 1)
            folder = None if model_dir is None else str(Path(model_dir).with_name(
                Path(model_dir).name.replace("descriptions", "descriptions_mentions", 1)))
        test_scores = fused.add_mentions(plain_test, _inputs(test, fused)) \
            if key == "mentions" else plain_test
        out["variants"].append(_description_row_of(variant_model, key, test, test_scores, info,
                                                   *chosen, choice, folder, name,
                                                   explain=pinned is None))


def evidence_matcher(train, params=None):
    """The mention matcher a run fits on a split with gold evidence: it reads the text the
    evidence indexes (``evidence_field``) in that text's language (``evidence_language``).

    Parameters
    ----------
    train : Bunch
        The training split (:func:`xplant.app._splits.load_splits`).
    params : dict or None
        More parameters of :class:`~xplant.linear.MentionMatcher` (``--set``).

    Returns
    -------
    MentionMatcher
        Unfitted.
    """
    from ..linear import MentionMatcher
    from ._splits import evidence_params
    return MentionMatcher(**{**(params or {}), **evidence_params(train)})


def _chosen_rule(model, dev, dev32):
    """Dev scores, decision rule (chosen here) and dev MAP of a description row that is
    not its fit's last one (the fusion without its mention source), from its dev scores."""
    from ..metrics import choose_rule, mean_average_precision
    dev_Y = row_targets(dev, model.classes_)[:, :model.n_labels_]
    return dev32, choose_rule(dev_Y, dev32), \
        (float(mean_average_precision(dev_Y, dev32)) if dev_Y.nnz else 0.0)


def _description_row_of(fused, key, test, test_scores, info, dev32, rule, dev_map, choice,
                        model_dir, row, *, explain):
    """One ``fused + descriptions [+ mentions]`` variant of a fitted description fusion:
    its saved folder, weights and record, with its test scores."""
    from ._rows import FUSED_SUFFIXES, keep_rule, save_row
    keep_rule(fused, rule)
    saved = save_row(fused, fused, model_dir, row=row) if model_dir is not None else {}
    weights = {"weight": fused.weight_, "seen_weight": fused.seen_weight_}
    info = dict(info)
    if fused.catalogue_ is not None:           # the open label space and its unseen channel
        _add_open_space(fused, test, weights, info)
    info["text"] = text_read(test, fused)
    if key == "mentions":
        weights["mention_weight"] = fused.mention_weight_
        info.update(mention_choice=fused.mention_choice_,
                    mentions=dict(fused.mentions_.evidence_record_,
                                  n_patterns=len(fused.mentions_.mentions_),
                                  text_field=fused.mentions_.text_field or "text"))
    variant = {
        "suffix": FUSED_SUFFIXES[key], "dev_scores": dev32,
        "test_scores": test_scores.astype(np.float32), "rule": rule,
        "label_names": None if fused.catalogue_ is None else fused.classes_,
        "info": dict(info, description_weight=fused.weight_,
                     description_seen_weight=fused.seen_weight_, description_weights=weights,
                     description_choice=choice, dev_MAP=dev_map, **saved)}
    if explain:              # its zero-shot labels' evidence (add_zero_shot pops it)
        variant["explainer"] = fused
    return variant


def _description_fields(train):
    """The training split's label names (a list of str, or None) and the fields the
    description source reads (:data:`DESCRIPTION_FIELDS`, and the catalogue where the
    labels have names)."""
    # the model's label names (its saved folder answers in them, not in column indices)
    names = None if train.get("label_names") is None else [str(n) for n in train.label_names]
    fields = {k: train[k] for k in DESCRIPTION_FIELDS if train.get(k) is not None}
    catalogue = train.get("catalogue")
    if catalogue is not None and names is None:
        catalogue = None                       # a catalogue matches codes by name
    if catalogue is not None:
        fields["catalogue"] = catalogue
    return names, fields


def _fit_description_fusion(model, ranker, matcher, train, dev, names, fields, pinned):
    """The description fusion of :func:`description_variant`, fitted, with its dev scores,
    decision rule, dev MAP and weight choice: chosen on ``dev``, or the first fit's
    (``pinned``) for the refit; and the dev scores without the mention source (None for
    the refit). With a ``matcher`` (the split has gold evidence), its mention source is
    fitted on the training split's evidence."""
    from sklearn.frozen import FrozenEstimator
    from ..metrics import choose_rule, mean_average_precision
    from ..unseen import DescriptionFusion
    from ._splits import _inputs
    evidence = {} if matcher is None else {"evidence": train.evidence}
    if pinned is None:
        fused = DescriptionFusion(FrozenEstimator(model), ranker=ranker, mentions=matcher,
                                  description_field=train.get("description_field"))
        fused.fit(_inputs(train, fused), train.Y, validation_data=(_inputs(dev, fused), dev.Y),
                  label_names=names, **fields, **evidence)
        dev_docs = _inputs(dev, fused)         # one scoring of the catalogue, both readings
        plain = fused.without_mentions().decision_function(dev_docs)
        dev32 = fused.add_mentions(plain, dev_docs).astype(np.float32)
        dev_Y = row_targets(dev, fused.classes_)[:, :fused.n_labels_]
        rule = choose_rule(dev_Y, dev32)       # the rule the run would choose for the row
        dev_map = float(mean_average_precision(dev_Y, dev32)) if dev_Y.nnz else 0.0
        return fused, dev32, rule, dev_map, fused.dev_choice_, plain.astype(np.float32)
    last = pinned.get("mentions") or pinned["descriptions"]   # the first fit's last row
    first = last["info"]                       # the refit: the first fit's weights and rule
    weights = dict(first.get("description_weights", {
        "weight": first["description_weight"], "seen_weight": first["description_seen_weight"]}))
    if matcher is None or "mention_weight" not in weights:
        matcher = None
        weights.pop("mention_weight", None)
    fused = DescriptionFusion(FrozenEstimator(model), ranker=ranker, mentions=matcher,
                              description_field=train.get("description_field"), **weights)
    fused.fit(_inputs(train, fused), train.Y, label_names=names, **fields,
              **({} if matcher is None else evidence))
    return (fused, last["dev_scores"], last["rule"], first["dev_MAP"],
            first["description_choice"], None)


def _add_open_space(fused, test, weights, info):
    """The open label space's weights and record, and a few test documents' unseen-code
    suggestions, into a description row's ``weights`` and ``info``."""
    weights.update(near_weight=fused.near_weight_, family_weight=fused.family_weight_,
                   prior_weight=fused.prior_weight_)
    info.update(label_space=dict(fused.catalogue_record_),
                unseen_suggestions=[
                    {"id": str(i), "suggestions": s} for i, s in
                    zip(test.ids[:UNSEEN_EXAMPLES], fused.suggest_unseen(
                        _inputs(test, fused)[:UNSEEN_EXAMPLES], k=5))])


def row_targets(split, names):
    """A split's labels over a row's columns ``names``, then its labels outside them.

    :func:`xplant.datasets.align_label_space`: a row ranks the columns of its
    label space (the training split's, or an open space with a catalogue);
    the split's positives outside it follow as extra columns, which no row
    scores, so every metric counts them as misses.

    Returns
    -------
    csr_matrix of shape (n_docs, len(names) + n_outside)
    """
    own = np.asarray(split.label_names).astype(str)
    names = np.asarray(names).astype(str)
    if own.size <= names.size and np.array_equal(own, names[:own.size]):
        Y = split.Y.tocsr()                   # a prefix: the same columns, no re-indexing
        return Y if own.size == names.size else sp.csr_matrix(
            (Y.data, Y.indices, Y.indptr), shape=(Y.shape[0], names.size))
    from ..datasets import align_label_space
    return align_label_space(names, split.Y, own).Y
