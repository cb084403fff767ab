"""The main job: PLANT against its baselines on CodiEsp, train -> dev -> test.

Every model is fitted on the official training split, anything that needs
choosing (epochs by early stopping, the decision rule and its k or thresholds) is
chosen on the official dev split, and the test split is scored once. Each
model runs in its own child process, so its fit time and peak memory are
its own.
"""

import json
import multiprocessing as mp
import os
import platform
import re
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from .._labels import label_frequency
from .._process import die_with_parent, peak_rss_mb  # noqa: F401  (tests and benchmarks)
from ._tables import MARKDOWN_COLUMNS, TABLE_COLUMNS, format_table, markdown_table  # noqa: F401
from ._tables import rule_label
from ._rows import DESCRIPTION_ENCODER

#: Models of the main job, in table order.
DEFAULT_MODELS = ("frequency prior", "TF-IDF + SVM", "PLANT")

#: The datasets whose job refits its rows on train + dev by default (``xplant run
#: --refit``): CodiEsp's, whose CLEF task trained the submitted systems on both
#: labelled splits (Miranda-Escalada et al., CLEF eHealth 2020). Elsewhere the
#: refit is asked for: it doubles the neural rows' cost.
REFIT_DATASETS = ("codiesp",)

#: Display names of the original rows (:data:`xplant.app._rows.ROWS` has them all).
#: The tree and LibMultiLabel rows need their optional extras
#: (``xplant[trees]``, ``xplant[libmultilabel]``).
MODEL_KINDS = ("frequency prior", "TF-IDF + LR", "TF-IDF + SVM", "napkinXC PLT", "Omikuji",
               "LibMultiLabel", "plant=False", "PLANT")

#: Hyper-parameters chosen on the dev split (by dev MAP, CodiEsp's official metric).
DEV_GRIDS = {"TF-IDF + LR": {"ovr__C": [1.0, 10.0, 100.0]},
             "TF-IDF + SVM": {"ovr__C": [0.1, 1.0, 10.0]}}

#: Stage 2 / Stage 1 epoch budgets of the main job (2 CPU cores, ~15 min). Early
#: stopping on dev MAP (patience :data:`xplant.app._rows.DATASET_TRAINING`) ends most fits
#: before the budget; PLANT on CodiEsp-D, at the widths of
#: :data:`xplant.app._rows.DATASET_ARCHITECTURES`, takes its best epoch in the 50s.
DEFAULT_EPOCHS = 60
DEFAULT_PLANT_EPOCHS = 10


def _versions():
    import importlib.metadata as md
    out = {"python": platform.python_version()}
    for pkg in ("xplant", "numpy", "scipy", "scikit-learn", "numba", "torch", "skorch",
                "transformers", "napkinxc", "omikuji", "libmultilabel"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def load_splits(dataset="codiesp", codes="D", language="en", data_home=None, max_docs=None,
                train_rows=None, dev_docs=None, subset=None, catalogue="default", **source):
    """Train, dev and test Bunches of one dataset (one label space).

    Parameters
    ----------
    dataset : {"codiesp", "eurlex57k", "mimic", "user", "xc"}, default="codiesp"
        ``"user"`` and ``"xc"`` (the user's files, an XC folder) take the
        ``**source`` entries of :func:`xplant.app._sources.data_args_from`
        (``files``, ``fields``, ``upper``, ``random_state``); dev is carved
        out of train when there is no dev file, and dev stands in for test
        when there is no test file (:func:`xplant.app._sources.load_source`).
    codes, language : str
        CodiEsp only; see :func:`xplant.datasets.load_codiesp`.
    data_home : str or Path or None
        Data folder (required for EURLEX57K; default bundled copy for CodiEsp).
    max_docs : int or None
        Keep only the first documents of each split (a smoke run).
    train_rows : sequence of int or None
        Keep only these training rows (after ``max_docs``), e.g. one of
        :func:`xplant.model_selection.nested_subsamples`. Dev and test stay whole.
    dev_docs : int or None
        Keep a random subset of this many dev documents (seed 0, the same
        subset for every call, in dev order): early stopping and the
        decision rules then see only these, which cuts the per-epoch dev
        pass on a large dev split. Test stays whole. None: all of dev.
    subset : dict or None
        ``{"n_labels": L, "n_docs": N, "random_state": seed}``: a corpus of
        another shape (:func:`xplant.model_selection.frequent_label_subset`,
        applied first): every split keeps the L labels most frequent in
        train and drops the documents left without a label, and train keeps
        a seeded sample of N of its documents (None: all).
    catalogue : str or None, default="default"
        The open label space (``xplant run --labels``): a catalogue name of
        :func:`xplant.datasets.load_catalogue` (``"icd10cm"``,
        ``"icd10pcs"``, ``"eurovoc"``) or a label file, attached to the
        training split as ``catalogue``; the splits themselves keep the
        labels of train and dev (a test code outside them is an extra
        column of test, a miss for every model that cannot rank it).
        ``"default"``: CodiEsp's code-set catalogue (ICD-10-CM for D,
        ICD-10-PCS for P, none for DP), none elsewhere. None or ``"none"``:
        no catalogue. ``"all-splits"`` (CodiEsp only): the closed space of
        earlier releases, the codes of all three splits, test included
        (optimistic; no catalogue).
    **source
        For ``"user"`` and ``"xc"``: the files and how to read them (see
        ``dataset``).

    Returns
    -------
    dict
        ``{"train": Bunch, "dev": Bunch, "test": Bunch}``.
    """
    from ..datasets import load_codiesp, load_eurlex57k
    if dataset in ("user", "xc"):
        from ._sources import load_source
        splits, _ = load_source({"dataset": dataset, "data_home": data_home,
                                 "max_docs": max_docs, **source})
    elif dataset == "mimic":
        from ..datasets import load_mimic
        splits = {s: first_documents(load_mimic(data_home, split=s), max_docs)
                  for s in ("train", "dev", "test")}
    elif dataset == "codiesp":
        space = "all-splits" if catalogue == "all-splits" else "train+dev"
        splits = {s: first_documents(load_codiesp(split=s, codes=codes, language=language,
                                                  data_home=data_home, label_space=space), max_docs)
                  for s in ("train", "dev", "test")}
    elif dataset == "eurlex57k":
        splits = {s: load_eurlex57k(split=s, data_home=data_home, max_docs=max_docs)
                  for s in ("train", "dev", "test")}
    else:
        raise ValueError(f"unknown dataset {dataset!r}; choose 'codiesp', 'eurlex57k', 'mimic', "
                         "'user' or 'xc'")
    if subset is not None:
        from ..model_selection import frequent_label_subset
        cols, rows = frequent_label_subset(splits["train"].Y, **subset)
        splits["train"] = _take(splits["train"], rows)        # each row keeps a label
        splits = {s: _keep_labels(b, cols) for s, b in splits.items()}
    if train_rows is not None:
        splits["train"] = _take(splits["train"], np.asarray(train_rows, dtype=np.int64))
    if dev_docs is not None:
        n_dev = splits["dev"].Y.shape[0]
        if not 1 <= int(dev_docs) <= n_dev:
            raise ValueError(f"dev_docs must be between 1 and the {n_dev} dev documents; "
                             f"got {dev_docs!r}")
        rows = np.sort(np.random.default_rng(0).choice(n_dev, int(dev_docs), replace=False))
        splits["dev"] = _take(splits["dev"], rows)
    name = catalogue_name(dataset, codes, catalogue)
    if name is not None:
        from ..datasets import load_catalogue
        splits["train"].catalogue = load_catalogue(
            name, data_home=data_home, drop_extension=dataset == "codiesp" and codes == "D",
            upper=bool(source.get("upper", False)))
    return splits


def catalogue_name(dataset, codes, catalogue):
    """The catalogue :func:`load_splits` loads, or None (see its ``catalogue``).

    Examples
    --------
    >>> catalogue_name("codiesp", "D", "default"), catalogue_name("user", None, "default")
    ('icd10cm', None)
    """
    if catalogue in (None, "none", "all-splits"):
        return None
    if catalogue == "default":
        from ..datasets import CODIESP_CATALOGUES
        return CODIESP_CATALOGUES.get(codes) if dataset == "codiesp" else None
    return str(catalogue)


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


def _take(bunch, rows):
    from sklearn.utils import Bunch
    out = {**bunch, "Y": bunch.Y[rows], "ids": [bunch.ids[i] for i in rows]}
    if bunch.get("texts") is not None:
        out["texts"] = [bunch.texts[i] for i in rows]
    if bunch.get("X") is not None:
        out["X"] = bunch.X[rows]
    return Bunch(**out)


def _keep_labels(bunch, cols):
    """The bunch restricted to label columns ``cols``; documents left without one dropped."""
    Y = bunch.Y[:, cols].tocsr()
    Y.eliminate_zeros()
    rows = np.flatnonzero(np.diff(Y.indptr))
    n_labels = bunch.Y.shape[1]
    per_label = {k: v[cols] if isinstance(v, np.ndarray) else [v[j] for j in cols]
                 for k, v in bunch.items()                  # label_names, descriptions...
                 if k not in ("Y", "label_frequency", "texts", "ids")
                 and isinstance(v, (np.ndarray, list)) and len(v) == n_labels}
    if "label_ancestor" in per_label:            # a column index: renumber, -1 if dropped
        new = np.full(n_labels + 1, -1, dtype=np.int64)
        new[cols] = np.arange(len(cols))
        per_label["label_ancestor"] = new[per_label["label_ancestor"]]
    from sklearn.utils import Bunch
    out = _take(Bunch(**{**bunch, "Y": Y, **per_label}), rows)
    out.label_frequency = label_frequency(out.Y)
    return out


def first_documents(bunch, n):
    """The first ``n`` documents of a split (a smoke run's data), or the split itself.

    Parameters
    ----------
    bunch : Bunch
        A split of :func:`load_splits` (``Y`` and per-document fields).
    n : int or None
        Documents kept; None keeps them all.

    Returns
    -------
    Bunch
        Its per-document fields cut to the first ``min(n, n_documents)``
        rows, ``label_frequency`` recounted.
    """
    if n is None:
        return bunch
    return _take(bunch, np.arange(min(n, bunch.Y.shape[0])))


def _inputs(bunch):
    """What a model reads from a split: its texts, or its feature matrix (XC format)."""
    return bunch.texts if bunch.get("texts") is not None else bunch.X


def fit_with_dev(model, tr, dv, resume=False):
    """Fit a row's model as ``xplant run`` does: on train, with dev where the model takes it.

    Every model gets the label names; neural models also the dev split
    (early stopping and their dev choices), the description rows the label
    descriptions, synonyms and parents.

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
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    kw = {}
    if tr.get("label_names") is not None:
        kw["label_names"] = [str(n) for n in tr.label_names]
    from ..unseen import DescriptionFusion, DescriptionRanker
    if isinstance(final, (DescriptionRanker, DescriptionFusion)):   # rows that read label descriptions
        from ._fused import DESCRIPTION_FIELDS
        kw.update({k: tr[k] for k in DESCRIPTION_FIELDS if tr.get(k) is not None})
    if hasattr(final, "planter"):
        kw["validation_data"] = (_inputs(dv), dv.Y)
        if resume and final.checkpoint_dir is not None:
            kw["resume"] = True
    if hasattr(model, "steps"):
        return model.fit(_inputs(tr), tr.Y,
                         **{f"{model.steps[-1][0]}__{k}": v for k, v in kw.items()})
    return model.fit(_inputs(tr), tr.Y, **kw)


def _settings(est):
    """What a fitted row trained with: every setting, defaults written out where the
    estimator can say them (:meth:`~xplant.neural.PlantClassifier.resolved_params`)."""
    return est.resolved_params() if hasattr(est, "resolved_params") else \
        est.get_params(deep=False)


def _fit_one(spec, data_args, model_args, model_dir=None, splits=None):
    """Child-process body: fit one model (dev-selected), return dev and test scores.

    ``spec`` is ``{"name", "model", "params", "grid"}`` (see :func:`run_models`);
    ``splits`` the run's loaded ``load_splits(**data_args)``, sent to the child
    (a few MB, read in milliseconds) rather than loaded again there (seconds:
    the ICD-10 descriptions are rebuilt); None loads them.
    """
    model_args = dict(model_args)
    num_threads = model_args.pop("num_threads", None)
    resume = model_args.pop("resume", False)
    shared = model_args.pop("shortlist_from", None)       # the run's fitted SVM row
    refit = model_args.pop("refit", False)                # also refit on train + dev
    # kept in model_args: build_model gives it to the descriptions row
    encoder = model_args.get("description_encoder", DESCRIPTION_ENCODER)
    if num_threads:
        import torch
        torch.set_num_threads(num_threads)
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid
    from ..metrics import mean_average_precision
    if splits is None:
        splits = load_splits(**data_args)
    tr, dv, te = first_documents(splits["train"], spec.get("max_train_docs")), splits["dev"], splits["test"]
    from ._rows import find_row
    row = find_row(spec.get("model", spec["name"]))
    kind = row.display
    from ._fused import SHARED_SHORTLIST_ROW, frozen_shortlist, row_params, row_scores
    params = row_params(spec.get("params"), row, data_args.get("dataset"), data_args.get("codes"))
    frozen = frozen_shortlist(params, row, shared, spec)
    same_as = SHARED_SHORTLIST_ROW if frozen is not params else None   # α = 1 is that row
    own_params, params = params, frozen
    base = build_model(kind, params=params, features=tr.get("texts") is None, **model_args)
    grid = spec.get("grid", DEV_GRIDS.get(kind, {}))
    # every combination of the grid's keys (ParameterGrid: their product), chosen on dev
    candidates = list(ParameterGrid(grid)) if grid else [{}]
    from .._progress import is_terminal, step, steps
    from ..model_selection import choose_on_dev
    verbose = model_args.get("verbose", 1)
    t0 = time.perf_counter()
    todo = iter(steps(candidates, f"{spec['name']}: choosing on dev",
                      verbose=verbose if grid and is_terminal() else 0))

    def dev_map_of(cand):
        next(todo, None)
        with step(f"{spec['name']}: fit{' ' + str(cand) if cand else ''}",
                  verbose if not grid or not is_terminal() else 0, announce=True):
            model = fit_with_dev(clone(base).set_params(**cand), tr, dv, resume=resume)
        with step(f"{spec['name']}: dev scoring", verbose):
            dev_scores, dev_by_alpha = row_scores(model, _inputs(dv))
        dev_map = mean_average_precision(dv.Y, dev_scores) if dv.Y.nnz else 0.0
        return dev_map, (model, dev_scores, dev_by_alpha)

    # one fitted model in memory at a time: choose_on_dev keeps the best one's. A dev split
    # that cannot guide a choice (dev_usability) fits the grid's first candidate alone and
    # records the choice as its fallback, not as a dev choice among scores of 0
    import dataclasses
    from ..model_selection import dev_usability
    has_dev = dev_usability(dv.Y, label_frequency(tr.Y)).usable
    choice = choose_on_dev("grid", candidates, dev_map_of, family="ranking", criterion="map",
                           fallback=candidates[0], keep=True, has_dev=has_dev or len(candidates) == 1,
                           warn=bool(grid))
    if choice.kept is None:                       # the fallback: fitted here, not chosen
        choice = dataclasses.replace(choice, kept=dev_map_of(choice.value)[1])
    (model, dev_scores, dev_by_alpha), chosen = choice.kept, choice.value
    # without a usable dev split, dev MAP reads 0 (the run then designates no row)
    dev_map = max((v for _, v in choice.scores), default=0.0) if has_dev else 0.0
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with step(f"{spec['name']}: test scoring", verbose):
        test_scores, test_by_alpha = row_scores(model, _inputs(te))
    predict_s = time.perf_counter() - t0
    info = {"dev_selected": chosen, "dev_choice": choice.to_dict()} if grid else {}
    info["dev_MAP"] = float(dev_map)
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    from ..metrics import choose_rule
    rule = choose_rule(dv.Y, dev_scores)
    if model_dir is not None:
        from ._rows import save_row
        info.update(save_row(model, final, model_dir, rule, row=spec["name"]))
    evidence = None
    if hasattr(final, "explain") and te.get("texts") is not None:
        from ._examples import evidence_examples
        try:
            evidence = evidence_examples(final, te, tr)
        except Exception as exc:       # the report then says so; the scores stand
            info["evidence_error"] = f"{type(exc).__name__}: {exc}"
    if getattr(final, "planter_", None) is not None:
        info["stage1_attention_ndcg"] = final.planter_.attention_ndcg_
        info["stage1_initial_attention_ndcg"] = final.planter_.initial_attention_ndcg_
        info["stage1_params"] = {k: v for k, v in _settings(final.planter_).items()
                                 if isinstance(v, (int, float, str, bool, type(None)))}
    if hasattr(final, "best_epoch_"):
        info["best_epoch"] = final.best_epoch_
    if getattr(final, "stage1_weight_candidates_", None) is not None:   # stage1_weight="dev"
        info["stage1_weight_chosen"] = final.stage1_weight_
        info["stage1_weight_candidates"] = final.stage1_weight_candidates_
    params = {k: v for k, v in _settings(final).items()
              if isinstance(v, (int, float, str, bool, type(None)))}
    out = {"fit_seconds": fit_s, "predict_seconds": predict_s, "peak_rss_mb": peak_rss_mb(),
           "dev_scores": dev_scores.astype(np.float32), "test_scores": test_scores.astype(np.float32),
           "params": params, "info": info, "rule": rule, "evidence": evidence}
    if test_by_alpha is not None:          # a shortlisted fit: its fused rows, from one scoring
        from ._fused import fusion_rows
        fusion_rows(out, final, dev_by_alpha, test_by_alpha, dv.Y, same_as=same_as)
        if row.planted:                    # PLANT's model: the description source joins it
            from ._fused import description_variant
            vname, vfolder = _description_row(spec)
            with step(f"{spec['name']}: fused + descriptions (weights on dev)", verbose):
                description_variant(out, model, splits["train"], dv, te, row=vname, model_dir=(
                    None if model_dir is None else str(Path(model_dir).parent / vfolder)),
                    encoder=encoder)
    from ._examples import add_zero_shot
    add_zero_shot(out, final, dv, te, splits["train"])
    if refit and (hasattr(final, "planter") or kind == SHARED_SHORTLIST_ROW):
        from ..model_selection import refit_params
        # the refit runs in a process of its own (:func:`_refit_child`), so that its fit
        # time and peak memory are its own: all it needs of this fit are its choices
        out["refit_job"] = {
            "spec": spec, "own_params": own_params, "chosen": chosen,
            "pinned": refit_params(model, epochs=RUN_REFIT_EPOCHS, n_train=tr.Y.shape[0],
                                   n_dev=dv.Y.shape[0]),
            "first": {"dev_scores": out["dev_scores"], "info": out["info"],
                      "variants": [{k: v for k, v in var.items() if k != "explainer"}
                                   for var in out.get("variants", ())]},
            "dev_by_alpha": dev_by_alpha, "shortlist_from": shared, "same_as": bool(same_as),
            "model_dir": model_dir and model_dir + "-refit"}
    return out


def _refit_child(job, data_args, model_args, splits=None, refit_shared=None):
    """Child-process body of a refit: the row of :func:`_fit_one`'s ``out["refit_job"]``
    refitted on train + dev by :func:`_refit_one`, with the run's refit SVM
    (``refit_shared``, its saved folder) as its frozen shortlist where it takes one
    (else the first fit's)."""
    model_args = dict(model_args)
    num_threads = model_args.pop("num_threads", None)
    for key in ("resume", "shortlist_from", "refit", "checkpoint_dir"):
        model_args.pop(key, None)
    encoder = model_args.get("description_encoder", DESCRIPTION_ENCODER)
    if num_threads:
        import torch
        torch.set_num_threads(num_threads)
    if splits is None:
        splits = load_splits(**data_args)
    spec = job["spec"]
    tr, dv, te = first_documents(splits["train"], spec.get("max_train_docs")), splits["dev"], splits["test"]
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
    from ._rows import save_row
    refit = clone(base).set_params(**chosen, **pinned)
    both = _stack_splits(tr, dv)
    last = refit.steps[-1][0] + "__" if hasattr(refit, "steps") else ""
    if "checkpoint_dir" in (refit.steps[-1][1] if last else refit).get_params(deep=False):
        refit.set_params(**{last + "checkpoint_dir": None})    # the first fit's are not its own
    kw = {last + "label_names": [str(n) for n in tr.label_names]} \
        if tr.get("label_names") is not None else {}
    t0 = time.perf_counter()
    with step(f"{row_name}: fit on train + dev", verbose, announce=True):
        refit.fit(_inputs(both), both.Y, **kw)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    test_scores, test_by_alpha = row_scores(refit, _inputs(te))
    final = refit.steps[-1][1] if hasattr(refit, "steps") else refit
    info = {"refit_of": row_name[:-len(REFIT_SUFFIX)], "dev_MAP": first["info"]["dev_MAP"],
            "refit_params": {k: v for k, v in pinned.items()
                             if isinstance(v, (int, float, str, bool, type(None)))},
            "n_train_documents": len(_inputs(both))}
    if hasattr(final, "best_epoch_"):
        info["best_epoch"] = final.best_epoch_
    from ..metrics import choose_rule
    if model_dir is not None:
        info.update(save_row(refit, final, model_dir, choose_rule(dv.Y, first["dev_scores"]),
                             row=row_name))
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
        desc = next((v for v in first.get("variants", ())
                     if v["suffix"] == FUSED_SUFFIXES["descriptions"]), None)
        if desc is not None and described is not None:
            with step(f"{described[0]}{REFIT_SUFFIX}: the first fit's description weights",
                      verbose):
                description_variant(
                    out, refit, both, dv, te, pinned=desc,
                    row=described[0] + REFIT_SUFFIX,
                    model_dir=None if model_dir is None else str(
                        Path(model_dir).parent / (described[1] + "-refit")), encoder=encoder)
    return out


def _stack_splits(tr, dv):
    """One Bunch of the train rows then the dev rows (texts or features, labels)."""
    import scipy.sparse as sp
    from sklearn.utils import Bunch
    out = {**tr, "Y": sp.vstack([tr.Y, dv.Y]).tocsr(), "ids": list(tr.ids) + list(dv.ids)}
    if tr.get("texts") is not None:
        out["texts"] = list(tr.texts) + list(dv.texts)
    if tr.get("X") is not None:
        out["X"] = sp.vstack([tr.X, dv.X]).tocsr()
    return Bunch(**out)


def evaluate_row(name, out, splits, *, refit=False):
    """One row of a results table: the decision rule on dev, the metrics on test.

    The rule is :func:`xplant.metrics.choose_rule`'s (top-k, a global
    threshold or per-label thresholds, by cross-fitted dev micro-F1); F1
    is reported under it, and ``micro_F1_top_k``, ``micro_F1_threshold``
    (and their macro twins) give the two simpler rules' test F1 beside it.

    Parameters
    ----------
    name : str
        The row's name.
    out : dict
        The fitted row: ``"dev_scores"`` and ``"test_scores"`` (n, L),
        ``"rule"`` (a :func:`xplant.metrics.choose_rule` record, or None to
        choose it here on the dev scores), ``"params"``, ``"info"``,
        ``"fit_seconds"``, ``"predict_seconds"``, ``"peak_rss_mb"``.
    splits : dict
        ``{"train", "dev", "test"}`` of :func:`load_splits`.
    refit : bool, default=False
        A row refitted on train + dev. Its zero-shot figures stay those of
        the labels absent from the training split, as for every row; the
        labels absent from train + dev, which the refit never saw either,
        are reported beside them under ``"zero_train_dev_*"`` (``R@5``,
        ``nDCG@5``, ``R@5_full``, ``n_labels``, ``n_documents``) and
        ``"F1_zero_train_dev"``. A row over an open label space (its info
        has ``label_space``) also gets ``"unseen_R@5"``, the unseen-code
        channel's figure: R@5 of the gold codes its model never saw (absent
        from train, for a refit from train + dev) among those codes alone.

    Returns
    -------
    entry : dict
        The row of ``results.json``: name, settings, seconds, ``"metrics"``
        (fractions), ``"rule"``, ``"k"``, ``"threshold"``, ``"decision"``,
        ``"decision_choice"`` and ``out["info"]``.
    per_label : dict
        :func:`xplant.metrics.per_label_scores` of its predictions under the rule.
    """
    from .. import metrics
    from ._fused import row_targets
    tr, dv, te = splits["train"], splits["dev"], splits["test"]
    names = out.get("label_names")            # the row's columns, when not the training split's
    names = tr.label_names if names is None else names
    dev_Y = row_targets(dv, names)
    test_Y = row_targets(te, names)
    n_row = len(names)
    freq = _padded(label_frequency(tr.Y), test_Y.shape[1])
    rule = out.get("rule") or metrics.choose_rule(dev_Y[:, :n_row], out["dev_scores"])
    k, th = rule["k"], rule["threshold"]
    scores = metrics.pad_scores(out["test_scores"], test_Y.shape[1])

    def predicted(r):                         # the rule on the row's own columns, then no label
        return metrics.pad_scores(sp.csr_matrix(metrics.apply_rule(out["test_scores"], r)),
                                  test_Y.shape[1])

    y_pred = predicted(rule)
    rep = metrics.xmtc_report(test_Y, scores, y_pred=y_pred, label_frequency=freq,
                              n_train_documents=tr.Y.shape[0])
    for other in ("top_k", "threshold"):      # beside it: F1 of the simpler rules
        y_other = y_pred if other == rule["rule"] else predicted(dict(rule, rule=other))
        rep[f"micro_F1_{other}"] = float(metrics.f1_score(test_Y, y_other, average="micro"))
        rep[f"macro_F1_{other}"] = float(metrics.f1_score(test_Y, y_other, average="per_label",
                                                          labels="present"))
    if refit:                                 # the labels the refit never saw either
        both = metrics.xmtc_report(test_Y, scores, y_pred=y_pred,
                                   label_frequency=freq + _padded(label_frequency(dv.Y),
                                                                  test_Y.shape[1]),
                                   n_train_documents=tr.Y.shape[0] + dv.Y.shape[0])
        rep.update({"zero_train_dev_" + key[len("zero_"):]: v for key, v in both.items()
                    if key.startswith("zero_")}, F1_zero_train_dev=both["F1_zero"])
    rep["n_labels"] = float(n_row)            # the labels the row ranks (its label space)
    if out["info"].get("label_space"):        # the unseen-code channel of an open label space:
        # the gold codes its model never saw in training, ranked among the unseen codes alone
        rep["unseen_R@5"] = rep["zero_train_dev_R@5"] if refit else rep["zero_R@5"]
    n_known = tr.Y.shape[1]                   # per-label results: the training split's columns
    per = metrics.per_label_scores(test_Y[:, :n_known], y_pred[:, :n_known])
    from .._saved import decision_record
    choice = rule.get("choices", {}).get("decision")
    return {"name": name, "params": out["params"], "fit_seconds": out["fit_seconds"],
            "predict_seconds": out["predict_seconds"], "peak_rss_mb": out["peak_rss_mb"],
            "metrics": rep, "rule": rule["rule"], "k": int(k), "threshold": float(th),
            "decision": decision_record(rule),
            "decision_choice": None if choice is None else choice.to_dict(),
            **out["info"]}, per


def _padded(values, width):
    return np.concatenate([values, np.zeros(width - values.size, dtype=values.dtype)])


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
    from ._rows import FUSED_SUFFIXES, find_row
    if not find_row(spec.get("model", spec["name"])).planted:
        return None
    name = spec["name"] + FUSED_SUFFIXES["descriptions"]
    return name, _model_folder(name)


def check_model_specs(model_specs, **model_args):
    """Check every row before anything touches the disk; return ``[(spec dict, folder)]``.

    Raises ``ValueError`` for a row name that cannot be a folder
    (:func:`xplant._files.check_path_name`), two rows that map to one folder
    (``plant=False``, ``plant-False``), or a model :func:`build_model` does not know.
    """
    out, seen = [], {}
    for spec in model_specs:
        spec = {"name": spec} if isinstance(spec, str) else dict(spec)
        name = spec.get("name")
        folder = _model_folder(name)
        if folder.lower() in seen:
            raise ValueError(f"model rows {seen[folder.lower()]!r} and {name!r} would share the "
                             f"folder {folder!r}; give them distinct names")
        seen[folder.lower()] = name
        build_model(spec.get("model", name), params=spec.get("params"), **model_args)
        out.append((spec, folder))
    return out


def _part_key(spec, data_args, model_args, inputs):
    """What a finished model's result depends on (JSON-comparable).

    ``inputs`` is ``{split: SHA-256}`` of the input files
    (:func:`xplant.app._sources.input_digests`): a part is reused only for
    the same contents, not merely the same paths.
    """
    return json.loads(json.dumps({"spec": spec, "data": data_args, "inputs": inputs,
                                  "model": {k: v for k, v in model_args.items()
                                            if k not in ("verbose", "num_threads")}},
                                 sort_keys=True, default=str))


def _check_resume(out_dir, checked, inputs, data_args):
    """Refuse to continue a run whose input files changed since its parts were written.

    Raises
    ------
    ValueError
        Naming each changed file, before anything is fitted.
    """
    files = data_args.get("files") or {}
    for _, folder in checked:
        try:
            saved = json.loads((Path(out_dir) / "parts" / f"{folder}.json").read_text())
            old = saved["key"]["inputs"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        changed = sorted(s for s in set(old) | set(inputs) if old.get(s) != inputs.get(s))
        if changed:
            names = ", ".join(f"{files.get(s, s)} ({s})" for s in changed)
            raise ValueError(f"{names} changed since the run in {out_dir} began (its SHA-256 "
                             "differs from the one its finished rows were fitted on); --resume "
                             "continues a run on the same data only. Restore the file, or start "
                             "afresh: a new --output, or --overwrite")


def _write_part(out_dir, folder, key, entry, per):
    """Save one finished model's entry and per-label F1 (written atomically)."""
    from .._files import atomic_open, write_text
    parts = Path(out_dir) / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    with atomic_open(parts / f"{folder}.npz", "wb") as fh:
        np.savez(fh, f1=per.f1, support=per.support)
    write_text(parts / f"{folder}.json", json.dumps({"key": key, "entry": entry}, default=float))


def _read_part(out_dir, folder, key):
    """``(entry, per)`` of a model finished in an earlier run with the same key, or None."""
    parts = Path(out_dir) / "parts"
    try:
        saved = json.loads((parts / f"{folder}.json").read_text())
        with np.load(parts / f"{folder}.npz") as z:
            per = SimpleNamespace(f1=z["f1"], support=z["support"])
    except (OSError, ValueError, KeyError):
        return None
    return (saved["entry"], per) if saved.get("key") == key else None


def designate(results):
    """Mark the run's model: the row with the best dev MAP, chosen before test is read.

    Every first-fit row's ``dev_MAP`` is its own dev scores' MAP (the fused
    rows' too), so the choice reads dev alone
    (:func:`xplant.model_selection.choose_on_dev`; ties keep the earlier
    row). When that row was also refitted on train + dev with its choices
    fixed (``xplant run --refit``, the default of the bundled CodiEsp job:
    the CLEF protocol trains the submitted model on both labelled splits),
    its refit is the run's model: the refit rows carry their first fit's
    dev MAP and take no part in the choice. The designated entry gets
    ``"designated": True`` and ``results["designated"]`` names it and the
    row chosen on dev. A run without dev MAP (no labelled dev data)
    designates none.

    Parameters
    ----------
    results : dict
        ``results.json``'s content, with ``"models"``.

    Returns
    -------
    str or None
        The designated row's name.
    """
    from ..model_selection import choose_on_dev
    models = results.get("models", ())
    for m in models:
        m.pop("designated", None)
    scored = [m for m in models if m.get("dev_MAP") is not None and not m.get("same_as")
              and not m.get("refit_of")]
    if not scored or not any(m["dev_MAP"] > 0 for m in scored):
        results["designated"] = None
        return None
    choice = choose_on_dev("designated row", [m["name"] for m in scored],
                           [m["dev_MAP"] for m in scored], family="ranking", criterion="map",
                           fallback=None)
    best = next(m for m in scored if m["name"] == choice.value)
    refit = next((m for m in models if m["name"] == best["name"] + REFIT_SUFFIX), None)
    chosen = best if refit is None else refit
    chosen["designated"] = True
    results["designated"] = {
        "name": chosen["name"], "chosen_on_dev": best["name"], "dev_MAP": float(best["dev_MAP"]),
        "rule": "the row with the best dev MAP (chosen on dev alone)"
                + ("" if refit is None else ", refitted on train + dev with its choices fixed")}
    return chosen["name"]


def _in_child(func, isolate, ctx, *args):
    """``func(*args)`` in a child process of its own when ``isolate`` (its fit time and peak
    memory are then its own), else here. An executor (not a Pool) raises
    ``BrokenProcessPool`` when the child dies (killed for memory) instead of hanging."""
    if not isolate:
        return func(*args)
    with ProcessPoolExecutor(1, mp_context=ctx, initializer=die_with_parent,
                             initargs=(os.getpid(),)) as ex:
        return ex.submit(func, *args).result()


def _read_fused_parts(out_dir, name, key):
    """The fused rows of a shortlisted fit finished in an earlier run: [(name, part)]."""
    from ._rows import FUSED_SUFFIXES
    found = ((name + sfx, _read_part(out_dir, _model_folder(name + sfx), key))
             for sfx in FUSED_SUFFIXES.values())
    return [(n, part) for n, part in found if part is not None]


def run_models(data_args, model_specs, output_dir, *, epochs=DEFAULT_EPOCHS,
               plant_epochs=DEFAULT_PLANT_EPOCHS, random_state=0, verbose=1, isolate=True,
               save_models=True, num_threads=None, splits=None, record=None, keep_going=False,
               resume=False, refit=False, description_encoder=DESCRIPTION_ENCODER, log=print):
    """Fit each model on train, choose on dev, score test once; write the run files.

    The machinery of ``xplant run``, ``xplant ablate`` and the benchmark
    script. Every model is fitted (in a child process when ``isolate``, so its
    fit time and peak RSS are its own) on the same splits; anything chosen
    (a grid in ``spec["grid"]``, epochs by early stopping, the decision
    rule and its k or thresholds) is chosen on dev; metrics come from
    :func:`xplant.metrics.xmtc_report` on test. Once the SVM row has been
    fitted and saved, the later neural rows take its model, frozen, as
    their shortlist (:func:`xplant.app._fused.frozen_shortlist`).

    Parameters
    ----------
    data_args : dict
        Keyword arguments of :func:`load_splits` (picklable: the child
        process reloads the data).
    model_specs : sequence of str or dict
        A name from :data:`MODEL_KINDS`, or ``{"name": row name, "model":
        kind (default: name), "params": {...} (see :func:`build_model`),
        "grid": {param: [values]} (default :data:`DEV_GRIDS`), "max_train_docs":
        fit on the first training documents only (a budget; the frequency
        buckets stay those of the whole training split)}``.
    output_dir : str or Path
        Folder for ``results.json``, ``per_label.npz`` and ``models/``.
    epochs, plant_epochs, random_state, verbose
        Passed to :func:`build_model`.
    isolate : bool, default=True
        Fit each model in a child process, so that its fit time and peak
        RSS are its own.
    save_models : bool, default=True
        Save models that have ``save`` to ``output_dir/models/<name>``.
    num_threads : int or None
        torch threads in each fit (default: torch's own choice).
    splits : dict or None
        The already loaded ``load_splits(**data_args)`` (saves a reload).
    record : dict or None
        Extra top-level entries of ``results.json``.
    keep_going : bool, default=False
        When a model fails (an error, or its child process dies), log it,
        list it under ``results["failed"]`` and go on with the next model.
    resume : bool, default=False
        Continue an interrupted run in the same ``output_dir``: a model that
        finished there (``parts/<model>.json`` and ``.npz``, written as each
        model ends, for the same spec, data arguments and input files'
        contents) is not fitted again; input files whose contents changed
        are an error naming them, raised before anything is fitted; a
        neural model continues from its latest epoch checkpoint
        (``checkpoints/<model>/``, written every epoch and removed once the
        model has finished).
    refit : bool, default=False
        After a neural row or the SVM row has chosen on dev, also refit it on
        train + dev with its choices pinned
        (:func:`xplant.model_selection.refit_params`) and report that row,
        ``"<row> (refit)"`` (and its fused rows, ``"<row> fused (refit)"``,
        and PLANT's ``"<row> fused + descriptions (refit)"`` with the first
        fit's description weights), scored on test once like the others,
        with the labels absent from train + dev reported beside the
        zero-shot group (:func:`evaluate_row`). Its decision rule is chosen on
        the first fit's dev scores. The refit neural rows take the refit SVM
        as their frozen shortlist. Not kept across ``resume``: a resumed row
        is not refitted.
    description_encoder : str or None, default="minilm"
        The sentence encoder of the description source (PLANT's ``fused +
        descriptions`` row and the ``descriptions`` row;
        :func:`xplant.app._rows.description_ranker`): ``"minilm"``,
        ``"hf:<folder>"``, or None / ``"none"`` for TF-IDF alone. Part of
        each row's ``resume`` key.
    log : callable, default=print
        Receives each progress line.

    Returns
    -------
    results : dict
        The content of ``results.json``; each model entry also holds
        ``predict_docs_per_second``.
    """
    from .._files import remove_tree, write_text
    from .._outputs import check_model_output
    from ._sources import input_digests
    checked = check_model_specs(model_specs, epochs=epochs, plant_epochs=plant_epochs,
                                random_state=random_state, verbose=0)
    out_dir = Path(output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    inputs = input_digests(data_args)
    if resume:
        _check_resume(out_dir, checked, inputs, data_args)
    if save_models:          # models/<row> is replaced only when it is a saved model
        for spec, folder in checked:
            described = _description_row(spec)       # a PLANT row's description row has one too
            for f in (folder,) + ((described[1],) if described else ()):
                check_model_output(out_dir / "models" / f, overwrite=True)
    if splits is None:
        splits = load_splits(**data_args)
    tr = splits["train"]
    n_test = splits["test"].Y.shape[0]
    results = {**(record or {}),
               "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "versions": _versions(), "models": []}
    train_frequency = label_frequency(tr.Y)
    per_label_f1, support = {}, None
    ctx = mp.get_context("spawn")
    from ._fused import shared_shortlist
    shared, has_text = None, tr.get("texts") is not None
    shared_refit = None                  # the refit SVM row's saved model (refit=True)
    for spec, folder in checked:
        name = spec["name"]
        log(f"\n== {name} ==")
        model_args = {"epochs": epochs, "plant_epochs": plant_epochs,
                      "random_state": random_state, "verbose": verbose, "num_threads": num_threads,
                      "description_encoder": description_encoder}
        key = _part_key(spec, data_args, model_args, inputs)
        part = _read_part(out_dir, folder, key) if resume else None
        if part is not None:
            entry, per = part
            results["models"].append(entry)
            per_label_f1[name], support = per.f1, per.support
            log(f"{name}: finished in an earlier run, kept (test MAP "
                f"{100 * entry['metrics']['MAP']:.1f})")
            shared = shared_shortlist(entry, spec, has_text) or shared
            for vname, (ventry, vper) in _read_fused_parts(out_dir, name, key):
                results["models"].append(ventry)
                per_label_f1[vname] = vper.f1
            continue
        ckpt_dir = out_dir / "checkpoints" / folder
        if not resume:                 # a fresh fit never continues a stale checkpoint
            remove_tree(ckpt_dir, inside=out_dir / "checkpoints")
        model_args.update(checkpoint_dir=str(ckpt_dir), resume=resume, shortlist_from=shared,
                          refit=refit)
        model_dir = str(out_dir / "models" / folder) if save_models else None
        try:
            out = _in_child(_fit_one, isolate, ctx, spec, data_args, model_args, model_dir,
                            splits)
        except Exception as exc:
            if not keep_going:
                raise
            log(f"{name}: FAILED ({type(exc).__name__}: {exc})")
            results.setdefault("failed", []).append({"name": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        entry, per = evaluate_row(name, out, splits)
        shared = shared_shortlist(entry, spec, has_text) or shared
        entry["predict_docs_per_second"] = n_test / max(entry["predict_seconds"], 1e-9)
        results["models"].append(entry)
        per_label_f1[name] = per.f1
        support = per.support
        if out.get("evidence"):
            from ._examples import add_evidence
            add_evidence(out_dir, name, out["evidence"])
        _write_part(out_dir, folder, key, entry, per)
        if entry.get("descriptions_row"):           # PLANT without label descriptions
            log(f"{name} fused + descriptions: {entry['descriptions_row']}")
        for var in out.get("variants", ()):         # the fused rows of a shortlisted fit
            vname = name + var["suffix"]
            ventry, vper = evaluate_row(vname, {**out, **var, "rule": var.get("rule")}, splits)
            ventry["predict_docs_per_second"] = entry["predict_docs_per_second"]
            results["models"].append(ventry)
            per_label_f1[vname] = vper.f1
            _write_part(out_dir, _model_folder(vname), key, ventry, vper)
            log(f"{vname}: (same fit) MAP {100 * ventry['metrics']['MAP']:.1f}, decision rule "
                f"{rule_label(ventry)}")
        remove_tree(ckpt_dir, inside=out_dir / "checkpoints")
        log(f"{name}: fit {entry['fit_seconds']:.0f} s, {results.get('split', 'test')} MAP "
            f"{100 * entry['metrics']['MAP']:.1f}, decision rule {rule_label(entry)}")
        job = out.get("refit_job")
        if job is not None:                         # the same row refitted on train + dev
            try:
                r = _in_child(_refit_child, isolate, ctx, job, data_args, model_args, splits,
                              shared_refit)
            except Exception as exc:
                if not keep_going:
                    raise
                log(f"{name}{REFIT_SUFFIX}: FAILED ({type(exc).__name__}: {exc})")
                results.setdefault("failed", []).append(
                    {"name": name + REFIT_SUFFIX, "error": f"{type(exc).__name__}: {exc}"})
                continue
            rentry, rper = evaluate_row(name + REFIT_SUFFIX, r, splits, refit=True)
            rentry["predict_docs_per_second"] = n_test / max(rentry["predict_seconds"], 1e-9)
            results["models"].append(rentry)
            per_label_f1[rentry["name"]] = rper.f1
            if shared_shortlist(entry, spec, has_text):
                shared_refit = rentry.get("saved_to")
            for var in r.get("variants", ()):
                vname = name + var["suffix"] + REFIT_SUFFIX
                ventry, vper = evaluate_row(vname, {**r, **var, "rule": var.get("rule")}, splits,
                                            refit=True)
                ventry["predict_docs_per_second"] = rentry["predict_docs_per_second"]
                results["models"].append(ventry)
                per_label_f1[vname] = vper.f1
            log(f"{name}{REFIT_SUFFIX}: fit on train + dev {r['fit_seconds']:.0f} s, "
                f"{results.get('split', 'test')} MAP {100 * rentry['metrics']['MAP']:.1f}")
    designate(results)
    write_text(out_dir / "results.json", json.dumps(results, indent=2, default=float))
    if not per_label_f1:
        return results
    from ..report import save_per_label
    save_per_label(out_dir / "per_label.npz", train_frequency=train_frequency, support=support,
                   f1=per_label_f1, label_names=np.asarray(tr.label_names))
    return results
