"""One row of a run, fitted in a process of its own: train, choose on dev, score test.

:func:`_fit_one` is the child-process body of :func:`xplant.app._run.run_models`
(and of ``xplant fit``): it builds a row's estimator, fits each candidate of
its grid (:data:`DEV_GRIDS`) and keeps the one with the best dev MAP, scores
dev and test once, chooses the decision rule on dev, saves the model, and
adds what the fit gives besides: the evidence examples, the fused rows of a
shortlisted fit, the zero-shot figures, and the job of its refit on train +
dev (:mod:`xplant.app._refit`).
"""

import dataclasses
import time
from pathlib import Path

import numpy as np

from .._labels import label_frequency
from .._process import peak_rss_mb
from ._build import _child_model_args, _settings, build_model, fit_info, fit_with_dev
from ._refit import refit_job
from ._rows import DESCRIPTION_ENCODER, _description_row
from ._splits import _inputs, _row_splits, text_read
from .._params import final_step

#: Hyper-parameters chosen on the dev split (by dev MAP, CodiEsp's official metric).
DEV_GRIDS = {"TF-IDF + LR": {"ovr__C": [1.0, 10.0, 100.0]},
             "TF-IDF + SVM": {"ovr__C": [0.1, 1.0, 10.0]}}


def _fit_one(spec, data_args, model_args, model_dir=None, splits=None):
    """Child-process body: fit one model (dev-selected), return dev and test scores.

    ``spec`` is ``{"name", "model", "params", "grid"}`` (see :func:`xplant.app.run_models`);
    ``splits`` the run's loaded ``load_splits(**data_args)``, sent to the child
    (a few MB, read in milliseconds) rather than loaded again there (seconds:
    the ICD-10 descriptions are rebuilt); None loads them.
    """
    model_args = _child_model_args(model_args)
    resume = model_args.pop("resume", False)
    shared = model_args.pop("shortlist_from", None)       # the run's fitted SVM row
    refit = model_args.pop("refit", False)                # also refit on train + dev
    # kept in model_args: build_model gives it to the descriptions row
    encoder = model_args.get("description_encoder", DESCRIPTION_ENCODER)
    splits, tr, dv, te = _row_splits(spec, data_args, splits)
    from ._rows import find_row
    row = find_row(spec.get("model", spec["name"]))
    kind = row.display
    catalogue = splits["train"].get("catalogue") if row.open_space else None
    if catalogue is not None:          # the row ranks the catalogue's codes too: the open space
        from ._splits import open_space_splits
        tr, dv, te, open_names = open_space_splits(tr, dv, te, catalogue)
    from ._fused import SHARED_SHORTLIST_ROW, frozen_shortlist, row_params, row_scores
    params = row_params(spec.get("params"), row, data_args.get("dataset"), data_args.get("codes"))
    frozen = frozen_shortlist(params, row, shared, spec)
    same_as = SHARED_SHORTLIST_ROW if frozen is not params else None   # α = 1 is that row
    own_params, params = params, frozen
    base = build_model(kind, params=params, features=tr.get("texts") is None, **model_args)
    grid = spec.get("grid", DEV_GRIDS.get(kind, {}))
    from .._progress import step
    verbose = model_args.get("verbose", 1)
    t0 = time.perf_counter()
    choice, has_dev = _grid_choice(spec, base, grid, tr, dv, resume=resume, verbose=verbose)
    (model, dev_scores, dev_by_alpha), chosen = choice.kept, choice.value
    # without a usable dev split, dev MAP reads 0 (the run then designates no row)
    dev_map = max((v for _, v in choice.scores), default=0.0) if has_dev else 0.0
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with step(f"{spec['name']}: test scoring", verbose):
        test_scores, test_by_alpha = row_scores(model, _inputs(te, model))
    predict_s = time.perf_counter() - t0
    info = {"dev_selected": chosen, "dev_choice": choice.to_dict()} if grid else {}
    info["dev_MAP"] = float(dev_map)
    info["text"] = text_read(tr, model)
    final = final_step(model)
    from ..metrics import choose_rule
    rule = choose_rule(dv.Y, dev_scores)
    from ._rows import keep_rule, save_row
    keep_rule(final, rule)
    if model_dir is not None:
        info.update(save_row(model, final, model_dir, row=spec["name"]))
    evidence = _evidence(final, te, tr, info)
    info.update(fit_info(final))
    params = {k: v for k, v in _settings(final).items()
              if isinstance(v, (int, float, str, bool, type(None)))}
    out = {"fit_seconds": fit_s, "predict_seconds": predict_s, "peak_rss_mb": peak_rss_mb(),
           "dev_scores": dev_scores.astype(np.float32), "test_scores": test_scores.astype(np.float32),
           "params": params, "info": info, "rule": rule, "evidence": evidence,
           # the refit's estimate: the epochs' times, and how many documents a refit's epochs draw
           "epoch_seconds": epoch_seconds(final, refit_documents=(
               tr.Y.shape[0], tr.Y.shape[0] + dv.Y.shape[0]))}
    if catalogue is not None:              # its columns, and what the space was made of
        out["label_names"] = open_names
        info["label_space"] = dict(catalogue.get("record", {}), n_open_labels=int(open_names.size),
                                   n_unseen=int(np.count_nonzero(label_frequency(tr.Y) == 0)))
    if test_by_alpha is not None:          # a shortlisted fit: its fused rows, from one scoring
        _add_fused_rows(out, spec, row, model, final, splits, dev_by_alpha, test_by_alpha,
                        same_as=same_as, model_dir=model_dir, encoder=encoder, verbose=verbose)
    from ._examples import add_zero_shot
    add_zero_shot(out, final, dv, te, splits["train"])
    if refit and (hasattr(final, "planter") or kind == SHARED_SHORTLIST_ROW or row.needs_evidence):
        out["refit_job"] = refit_job(out, spec, own_params, chosen, model, tr, dv, dev_by_alpha,
                                     shared=shared, same_as=same_as, model_dir=model_dir)
    return out


def _grid_choice(spec, base, grid, tr, dv, *, resume, verbose):
    """The candidate of ``grid`` with the best dev MAP, fitted, and whether dev could choose.

    Returns the :func:`~xplant.model_selection.choose_on_dev` record, whose
    ``kept`` is ``(model, dev scores, dev scores by α)``, and whether the
    dev split could guide the choice (:func:`~xplant.model_selection.dev_usability`).
    """
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid
    from .._progress import is_terminal, step, steps
    from ..metrics import mean_average_precision
    from ..model_selection import choose_on_dev, dev_usability
    from ._fused import row_scores
    # every combination of the grid's keys (ParameterGrid: their product), chosen on dev
    candidates = list(ParameterGrid(grid)) if grid else [{}]
    todo = iter(steps(candidates, f"{spec['name']}: choosing on dev",
                      verbose=verbose if grid and is_terminal() else 0))

    def dev_map_of(cand):
        next(todo, None)
        with step(f"{spec['name']}: fit{' ' + str(cand) if cand else ''}",
                  verbose if not grid or not is_terminal() else 0, announce=True):
            model = fit_with_dev(clone(base).set_params(**cand), tr, dv, resume=resume)
        with step(f"{spec['name']}: dev scoring", verbose):
            dev_scores, dev_by_alpha = row_scores(model, _inputs(dv, model))
        dev_map = mean_average_precision(dv.Y, dev_scores) if dv.Y.nnz else 0.0
        return dev_map, (model, dev_scores, dev_by_alpha)

    # one fitted model in memory at a time: choose_on_dev keeps the best one's. A dev split
    # that cannot guide a choice (dev_usability) fits the grid's first candidate alone and
    # records the choice as its fallback, not as a dev choice among scores of 0
    has_dev = dev_usability(dv.Y, label_frequency(tr.Y)).usable
    choice = choose_on_dev("grid", candidates, dev_map_of, family="ranking", criterion="map",
                           fallback=candidates[0], keep=True, has_dev=has_dev or len(candidates) == 1,
                           warn=bool(grid))
    if choice.kept is None:                       # the fallback: fitted here, not chosen
        choice = dataclasses.replace(choice, kept=dev_map_of(choice.value)[1])
    return choice, has_dev


def _evidence(final, te, tr, info):
    """The evidence examples of a model that explains, on test texts, else None; an error
    making them is noted in ``info`` (``"evidence_error"``), the scores standing."""
    evidence = None
    if hasattr(final, "explain") and te.get("texts") is not None:
        from ._examples import evidence_examples
        try:
            evidence = evidence_examples(final, te, tr)
        except Exception as exc:       # the report then says so; the scores stand
            info["evidence_error"] = f"{type(exc).__name__}: {exc}"
    return evidence


def _add_fused_rows(out, spec, row, model, final, splits, dev_by_alpha, test_by_alpha, *,
                    same_as, model_dir, encoder, verbose):
    """A shortlisted fit's fused rows into ``out``, from its one scoring; for PLANT's model,
    also the row the description source joins (``fused + descriptions``)."""
    from .._progress import step
    from ._fused import fusion_rows
    dv, te = splits["dev"], splits["test"]
    fusion_rows(out, final, dev_by_alpha, test_by_alpha, dv.Y, same_as=same_as)
    if row.planted:                    # PLANT's model: the description source joins it
        from ._fused import description_variant
        vname, vfolder = _description_row(spec)
        with step(f"{spec['name']}: fused + descriptions (weights on dev)", verbose):
            description_variant(out, model, splits["train"], dv, te, row=vname, model_dir=(
                None if model_dir is None else str(Path(model_dir).parent / vfolder)),
                encoder=encoder)


def epoch_seconds(final, refit_documents=None):
    """A fitted neural row's epoch times, in seconds (skorch's ``dur``); None for another row.

    What both time estimates read: a probe's
    (:func:`xplant.app._estimate.probe_row`) and a refit's
    (:func:`xplant.app._estimate.refit_estimate`, from the first fit's record).

    Parameters
    ----------
    final : estimator
        The row's last step, fitted.
    refit_documents : tuple of (int, int), optional
        The training documents of this fit and of its refit (train, train +
        dev): each stage's epoch then draws ``epoch_documents`` of each (the
        estimator's own rule; Stage 1's is capped by default), and their
        ratio is recorded for the refit's estimate.

    Returns
    -------
    dict or None
        ``stage1`` and ``stage2`` (each epoch's seconds; Stage 2's of the
        chosen ``stage1_weight``), ``best_epoch`` and ``stage2_all`` (the
        seconds of every ``stage1_weight`` candidate's Stage 2 epochs); with
        ``refit_documents``, ``refit_scale``: ``{"stage1", "stage2"}``, how
        many times this fit's epoch documents a refit's epoch of each stage draws.
    """
    if not hasattr(final, "history") or not hasattr(final, "planter"):
        return None
    stage2 = [float(h.get("dur", 0.0)) for h in final.history]
    planter = getattr(final, "planter_", None)
    stage1 = [float(h.get("dur", 0.0)) for h in planter.history] if planter is not None else []
    cands = getattr(final, "stage1_weight_candidates_", None) or []
    out = {"stage1": stage1, "stage2": stage2, "best_epoch": int(final.best_epoch_),
           "stage2_all": float(sum(c.get("seconds", 0.0) for c in cands) if cands
                               else sum(stage2))}
    if refit_documents is not None:
        n, m = (int(v) for v in refit_documents)
        out["refit_scale"] = {stage: _epoch_scale(est, m, n) for stage, est in
                              (("stage1", planter), ("stage2", final)) if est is not None}
    return out


def _epoch_scale(est, n_train, n_probe):
    """How many times the documents of an epoch on ``n_probe`` training documents an epoch on
    ``n_train`` draws, by the estimator's own rule (``epoch_documents``: its
    ``iterator_train__`` bounds): a probe's scale to the whole fit, a first fit's to its refit."""
    return est.epoch_documents(n_train) / max(est.epoch_documents(n_probe), 1)
