"""A row refitted on train + dev with its dev choices pinned (``xplant run --refit``).

After a neural row or the SVM row has chosen on dev, :func:`refit_job`
gathers what its refit needs of the first fit; :func:`_refit_child`, the
refit's child-process body, builds the row again and :func:`_refit_one`
fits it on train + dev, with the first fit's choices fixed, and scores it
on test once: its decision rule and its fused rows' weights are the ones
chosen on the first fit's dev scores. The refit rows are named with
:data:`REFIT_SUFFIX`.
"""

import time
from pathlib import Path

import numpy as np

from .._process import peak_rss_mb
from ._build import _child_model_args, _settings, build_model, evidence_fit_params, \
    fit_info
from ._rows import DESCRIPTION_ENCODER, _description_row
from ._splits import _inputs, _row_splits, _stack_splits
from .._params import final_step

#: The suffix of a row refitted on train + dev (``xplant run --refit``).
REFIT_SUFFIX = " (refit)"

#: The epochs of a neural row's refit in ``xplant run``: the count its first fit chose
#: on dev (:func:`xplant.model_selection.refit_params` ``epochs="fixed"``), over train +
#: dev. ``RefitOnDev``'s default scales it by (train + dev) / train, which measured about
#: a point of dev MAP better on a split of CodiEsp-D's training data
#: (docs/benchmarks/results.md, "Refit on train and dev"), but the refit then costs 2.25
#: times the first fit's Stage 2 instead of 1.5 times, and on CodiEsp-D, where the refit
#: also trains the codes only dev holds, that took the main job past its 15 minutes
#: (docs/benchmarks/index.md, "The main job").
RUN_REFIT_EPOCHS = "fixed"


def refit_job(out, spec, own_params, chosen, model, tr, dv, dev_by_alpha, *, shared, same_as,
              model_dir):
    """What the refit of a first fit needs of it: its choices, pinned (``out["refit_job"]``).

    The refit runs in a process of its own (:func:`_refit_child`), so that
    its fit time and peak memory are its own: it takes the first fit's
    spec, parameters and grid choice, the parameters chosen on dev
    (:func:`xplant.model_selection.refit_params`, :data:`RUN_REFIT_EPOCHS`),
    and the first fit's dev scores, info and fused rows (without their
    explainers).
    """
    from ..model_selection import refit_params
    return {
        "spec": spec, "own_params": own_params, "chosen": chosen,
        "pinned": refit_params(model, epochs=RUN_REFIT_EPOCHS, n_train=tr.Y.shape[0],
                               n_dev=dv.Y.shape[0]),
        "first": {"dev_scores": out["dev_scores"], "info": out["info"],
                  "variants": [{k: v for k, v in var.items() if k != "explainer"}
                               for var in out.get("variants", ())]},
        "dev_by_alpha": dev_by_alpha, "shortlist_from": shared, "same_as": bool(same_as),
        "model_dir": model_dir and model_dir + "-refit"}


def _refit_child(job, data_args, model_args, splits=None, refit_shared=None):
    """Child-process body of a refit: the row of
    :func:`~xplant.app._fit_row._fit_one`'s ``out["refit_job"]`` refitted on
    train + dev by :func:`_refit_one`, with the run's refit SVM
    (``refit_shared``, its saved folder) as its frozen shortlist where it
    takes one (else the first fit's)."""
    model_args = _child_model_args(model_args)
    for key in ("resume", "shortlist_from", "refit", "checkpoint_dir"):
        model_args.pop(key, None)
    encoder = model_args.get("description_encoder", DESCRIPTION_ENCODER)
    spec = job["spec"]
    splits, tr, dv, te = _row_splits(spec, data_args, splits)
    from ._fused import SHARED_SHORTLIST_ROW, frozen_shortlist
    from ._rows import find_row
    row = find_row(spec.get("model", spec["name"]))
    path = refit_shared or job["shortlist_from"]
    base = build_model(row.display, params=frozen_shortlist(job["own_params"], row, path, spec),
                       features=tr.get("texts") is None, **model_args)
    return _refit_one(job["pinned"], base, job["chosen"], tr, dv, te, job["first"],
                      job["dev_by_alpha"],
                      same_as=(SHARED_SHORTLIST_ROW + REFIT_SUFFIX
                               if job["same_as"] and refit_shared else None),
                      model_dir=job["model_dir"], row_name=spec["name"] + REFIT_SUFFIX,
                      verbose=model_args.get("verbose", 1), described=_description_row(spec),
                      encoder=encoder)


def _refit_one(pinned, base, chosen, tr, dv, te, first, dev_by_alpha, *, same_as, model_dir,
               row_name, verbose, described=None, encoder=DESCRIPTION_ENCODER):
    """The row refitted on train + dev with its dev choices pinned; scored on test once.

    The choices come from the first fit (``pinned``: its
    :func:`xplant.model_selection.refit_params`; the grid's values ``chosen``);
    the decision rule of the refit row is chosen
    on the first fit's dev scores, the refit having no dev data left. A
    first fit with a ``fused + descriptions`` row (``described``: its
    ``(name, folder)``) gets that row refitted too, its two weights pinned
    (:func:`xplant.app._fused.description_variant` with ``pinned``), the
    description source (its sentence ``encoder`` the first fit's) reading
    the training split's label texts.
    """
    from sklearn.base import clone
    from .._progress import step
    from ._fused import row_scores
    from ._rows import keep_rule, save_row
    refit = clone(base).set_params(**chosen, **pinned)
    both = _stack_splits(tr, dv)
    final, last = final_step(refit, with_prefix=True)
    if "checkpoint_dir" in final.get_params(deep=False):
        refit.set_params(**{last + "checkpoint_dir": None})    # the first fit's are not its own
    kw = {last + "label_names": [str(n) for n in tr.label_names]} \
        if tr.get("label_names") is not None else {}
    kw.update({last + k: v for k, v in evidence_fit_params(refit, both).items()})
    t0 = time.perf_counter()
    with step(f"{row_name}: fit on train + dev", verbose, announce=True):
        refit.fit(_inputs(both, refit), both.Y, **kw)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    test_scores, test_by_alpha = row_scores(refit, _inputs(te, refit))
    info = {"refit_of": row_name[:-len(REFIT_SUFFIX)], "dev_MAP": first["info"]["dev_MAP"],
            "refit_params": {k: v for k, v in pinned.items()
                             if isinstance(v, (int, float, str, bool, type(None)))},
            "n_train_documents": len(_inputs(both)), "text": first["info"].get("text")}
    info.update(fit_info(final))       # Stage 1 on train + dev (its evidence), the epochs
    from ..metrics import choose_rule
    keep_rule(final, choose_rule(dv.Y, first["dev_scores"]))   # the refit has no dev split left
    if model_dir is not None:
        info.update(save_row(refit, final, model_dir, row=row_name))
    out = {"fit_seconds": fit_s, "predict_seconds": time.perf_counter() - t0,
           "peak_rss_mb": peak_rss_mb(), "dev_scores": first["dev_scores"],
           "test_scores": test_scores.astype(np.float32),
           "params": {k: v for k, v in _settings(final).items()
                      if isinstance(v, (int, float, str, bool, type(None)))},
           "info": info, "rule": None, "evidence": None}
    if test_by_alpha is not None:       # the fused rows: the first fit's dev readings
        from ._fused import description_variant, fusion_rows
        from ._rows import FUSED_SUFFIXES
        fusion_rows(out, final, dev_by_alpha, test_by_alpha, dv.Y, same_as=same_as)
        first_rows = {key: v for v in first.get("variants", ())
                      for key in ("descriptions", "mentions") if v["suffix"] == FUSED_SUFFIXES[key]}
        if "descriptions" in first_rows and described is not None:
            with step(f"{described[0]}{REFIT_SUFFIX}: the first fit's description weights",
                      verbose):
                description_variant(
                    out, refit, both, dv, te, pinned=first_rows,
                    row=described[0] + REFIT_SUFFIX,
                    model_dir=None if model_dir is None else str(
                        Path(model_dir).parent / (described[1] + "-refit")), encoder=encoder)
    return out
