"""``xplant ablate``: PLANT's switches on CodiEsp, and the low-data curve.

Both reuse the machinery of the main job (:func:`xplant.app.run_models`):
the same splits for every model, anything chosen on dev, test scored once.

- The switch table turns off one part of PLANT at a time (Saha Roy et al.,
  arXiv 2410.23066, Section 5): no planting (random-init attention), the
  term-frequency Stage 1 target instead of MIG, MSE instead of the
  LambdaLoss Stage 1 loss, plain BCE instead of focal loss, no hard-negative
  sampling, no label smoothing.
- Both study PLANT's own parts, so their rows run without the linear
  shortlist that ``xplant run``'s neural rows use (``shortlist=None``).
- The low-data curve fits PLANT and ``plant=False`` on nested random
  training subsets (:func:`xplant.model_selection.nested_subsamples`), one
  permutation per seed, and scores the full test split.
"""

import json
import time
from datetime import datetime, timezone

import numpy as np

from .._files import atomic_open, write_text
from .._outputs import prepare_run_folder
from ._build import DEFAULT_EPOCHS, DEFAULT_PLANT_EPOCHS
from ._run import run_models
from ._splits import load_splits
from ._tables import markdown_table

#: (row name, model, PlantClassifier overrides) of the switch table, in order.
ABLATIONS = (
    ("full", "PLANT", {}),
    ("plant=False", "plant=False", {}),
    ('planter__target="tf"', "PLANT", {"planter__target": "tf"}),
    ('planter__criterion__kind="mse"', "PLANT", {"planter__criterion__kind": "mse"}),
    ('criterion__loss="bce"', "PLANT", {"criterion__loss": "bce"}),
    ("criterion__hard_negatives=None", "PLANT", {"criterion__hard_negatives": None}),
    ("criterion__label_smoothing=0", "PLANT", {"criterion__label_smoothing": 0.0}),
)

#: Defaults that the paper leaves open, run beside the switches so that they
#: are chosen on dev (the ``dev MAP`` column), never on test: the symmetric
#: label-smoothing form against the paper's (default), the cutoff k of
#: Stage 1's |ΔnDCG@k| weights (default 50, MIG's whole top-50 list) at 5
#: and 15, and Stage 2 without the kept Stage 1 loss (the paper; default
#: ``stage1_weight=0.1``).
DEV_CHOICES = (
    ('criterion__smoothing_form="symmetric"', "PLANT", {"criterion__smoothing_form": "symmetric"}),
    ("Stage 1 nDCG@5", "PLANT", {"planter__criterion__k": 5}),
    ("Stage 1 nDCG@15", "PLANT", {"planter__criterion__k": 15}),
    ("stage1_weight=0 (paper)", "PLANT", {"stage1_weight": 0.0}),
)

#: Training sizes and number of seeds of the low-data curve on CodiEsp.
DEFAULT_SIZES = (25, 50, 100, 200, 500)
DEFAULT_SEEDS = 3

#: The EURLEX57K curve: log-spaced sizes up to the whole training
#: split, with ``DEFAULT_SEEDS`` seeds up to 2,802 documents and one above.
EURLEX_SIZES = (25, 50, 165, 424, 1090, 2802, 7203, 18513, 45000)
EURLEX_SINGLE_SEED_ABOVE = 2802

#: The two models of the low-data curve.
CURVE_MODELS = ("PLANT", "plant=False")

#: Columns of the switch table: (metric key, header).
ABLATION_COLUMNS = (("dev_MAP", "dev MAP"), ("P@5", "P@5"), ("nDCG@5", "nDCG@5"), ("MAP", "MAP"),
                    ("micro_F1", "miF1"), ("macro_F1", "maF1"), ("F1_few", "F1 few"),
                    ("F1_zero", "F1 zero"))


def ablation_specs(prefix="", dev_choices=False):
    """Model specs of :data:`ABLATIONS` for :func:`xplant.app.run_models`.

    Parameters
    ----------
    prefix : str, default=""
        Prepended to each row name (e.g. ``"PLANT "``).
    dev_choices : bool, default=False
        Also the rows of :data:`DEV_CHOICES`.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> [s["name"] for s in ablation_specs()][:3]
    ['full', 'plant=False', 'planter__target="tf"']
    """
    rows = ABLATIONS + (DEV_CHOICES if dev_choices else ())
    # PLANT's own switches, without the shortlist the xplant run rows use
    return [{"name": prefix + name, "model": model, "params": {"shortlist": None, **params}}
            for name, model, params in rows]


def _mean_std(values):
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def _plot_curve(curve, path):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 3.8), dpi=100)
    for i, (key, title) in enumerate((("P@5", "P@5"), ("macro_F1", "macro-F1"))):
        ax = fig.add_subplot(1, 2, i + 1)
        for model in CURVE_MODELS:
            rows = [r for r in curve if r["model"] == model]
            ax.errorbar([r["size"] for r in rows], [100 * r[key]["mean"] for r in rows],
                        yerr=[100 * r[key]["std"] for r in rows], marker="o", capsize=3,
                        label=model)
        ax.set_xscale("log")
        sizes = sorted({r["size"] for r in curve})
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])   # the sizes themselves, no 3×10¹
        if len(sizes) > 5:                                  # long curves: keep labels apart
            ax.tick_params(axis="x", labelrotation=45)
        ax.minorticks_off()
        ax.set_xlabel("training documents")
        ax.set_ylabel(f"test {title} (%)")
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
    fig.tight_layout()
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png")


def run_ablation(output_dir=None, *, dataset="codiesp", codes="D", language="en", data_home=None,
                 epochs=DEFAULT_EPOCHS, plant_epochs=DEFAULT_PLANT_EPOCHS, sizes=None,
                 seeds=DEFAULT_SEEDS, single_seed_above=None, max_docs=None, dev_docs=None,
                 max_length=None, min_epoch_docs=None, max_epoch_docs=None, switches=True,
                 curve=True, dev_choices=True, isolate=True, resume=False, overwrite=False,
                 num_threads=None, verbose=0, log=print):
    """Run PLANT's switch table and the low-data curve on CodiEsp or EURLEX57K.

    Parameters
    ----------
    output_dir : str or Path or None
        Default ``./xplant-runs/ablate-<UTC timestamp>/``. Receives ``ablation.json``,
        ``.md``, ``low_data_curve.png``, a run folder per fit (``switches/``, ``curve/*/``).
    dataset : {"codiesp", "eurlex57k"}, default="codiesp"
        EURLEX57K needs ``data_home`` (:func:`xplant.datasets.load_eurlex57k`).
    codes, language, data_home
        See :func:`xplant.datasets.load_codiesp` (``codes``, ``language``: CodiEsp's).
    epochs, plant_epochs : int
        Stage 2 and Stage 1 epoch budgets of every fit.
    sizes : sequence of int or None
        The curve's training sizes, increasing, each at most the training
        documents. Default :data:`DEFAULT_SIZES` or :data:`EURLEX_SIZES`.
    seeds : int, default=3
        Random subsets (and model seeds) per size: 0, 1, ...
    single_seed_above : int or None
        Sizes above it run seed 0 only (default: None for CodiEsp,
        :data:`EURLEX_SINGLE_SEED_ABOVE` for EURLEX57K).
    max_docs, max_length : int or None
        The first documents of each split (a smoke run), the first tokens
        of each document every fit reads; None: all, the classifier's default.
    dev_docs : int or None
        Choose epochs and decision rules on a fixed random subset of this
        many dev documents (:func:`xplant.app.load_splits`; test stays
        whole), where a pass over dev costs more than training (EURLEX57K
        on a CPU). None: all of dev.
    min_epoch_docs, max_epoch_docs : int or None
        ``PlantClassifier(iterator_train__min_epoch_docs=...,
        iterator_train__max_epoch_docs=...)`` of every fit (Stage 1 too);
        equal, every curve size gets the same optimizer steps per epoch (a
        fixed-compute curve). None: one pass per epoch.
    switches, curve, dev_choices : bool, default=True
        Which of the two parts to run; the rows of :data:`DEV_CHOICES` in the switch table.
    isolate, resume, num_threads, verbose, log
        As in :func:`xplant.app.run_models` (``resume``: the run in ``output_dir``).
    overwrite : bool, default=False
        Remove an earlier run's files in ``output_dir`` first (``prepare_run_folder``).

    Returns
    -------
    dict
        The content of ``ablation.json``: ``switches`` (the model entries of
        ``results.json``) and ``curve`` (per model and size: mean, sample
        std over seeds and per-seed values of test P@5 and macro-F1).

    Raises
    ------
    ValueError
        If a size is larger than the training split, ``seeds < 1``, an
        unknown ``dataset``, or ``resume=True`` without ``output_dir``.
    """
    start = time.perf_counter()
    _check_ablation_args(output_dir, resume, seeds)
    out_dir = prepare_run_folder(output_dir, data=[data_home], resume=resume, overwrite=overwrite,
                                 prefix="ablate-")
    data_args, name, splits, sizes, single_seed_above = _ablation_data(
        dataset, codes, language, data_home, max_docs, dev_docs, single_seed_above, sizes, curve)
    result, extra, common = _ablation_settings(
        name, language if dataset == "codiesp" else "en", sizes, seeds, single_seed_above,
        epochs=epochs, plant_epochs=plant_epochs, max_docs=max_docs, dev_docs=dev_docs,
        max_length=max_length, min_epoch_docs=min_epoch_docs, max_epoch_docs=max_epoch_docs,
        verbose=verbose, isolate=isolate, num_threads=num_threads, resume=resume, log=log)
    if switches:
        result.update(_run_switches(data_args, splits, out_dir, extra, dev_choices, result, common))
    if curve:
        result["curve"] = _run_curve(data_args, extra, out_dir, result,
                                     len(splits["train"].texts), common)
        _plot_curve(result["curve"], out_dir / "low_data_curve.png")
    result["wall_seconds"] = time.perf_counter() - start
    _write_ablation(out_dir, result, log)
    return result


def _ablation_settings(name, language, sizes, seeds, single_seed_above, *, epochs, plant_epochs,
                       max_docs, dev_docs, max_length, min_epoch_docs, max_epoch_docs, verbose,
                       isolate, num_threads, resume, log):
    """The settings of :func:`run_ablation`: its result's first entries (``budget`` among
    them), the PlantClassifier parameters every fit takes (:func:`_fit_overrides`) and the
    keyword arguments of :func:`xplant.app.run_models` that every part shares."""
    budget = {"epochs": epochs, "plant_epochs": plant_epochs, "max_docs": max_docs,
              "dev_docs": dev_docs, "max_length": max_length, "min_epoch_docs": min_epoch_docs,
              "max_epoch_docs": max_epoch_docs}
    result = {"dataset": name, "language": language, "budget": budget,
              "single_seed_above": single_seed_above,
              "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "switches": [], "curve": [], "sizes": sizes, "seeds": int(seeds)}
    common = {"epochs": epochs, "plant_epochs": plant_epochs, "verbose": verbose,
              "isolate": isolate, "num_threads": num_threads, "save_models": False, "resume": resume,
              "log": log}
    return result, _fit_overrides(max_length, min_epoch_docs, max_epoch_docs), common


def _run_switches(data_args, splits, out_dir, extra, dev_choices, result, common):
    """The switch table of :func:`run_ablation` (``result``: its settings so far): its rows
    (:func:`ablation_specs`, with ``extra``, every fit's overrides) run into
    ``out_dir/switches``; returns its ``switches`` and ``versions``."""
    name, budget = result["dataset"], result["budget"]
    common["log"](f"== switches: {name}, {len(splits['train'].texts)} training documents ==")
    specs = [{**s, "params": {**s["params"], **extra}}
             for s in ablation_specs(dev_choices=dev_choices)]
    res = run_models(data_args, specs, out_dir / "switches", splits=splits,
                     record={"dataset": name, "split": "test", "budget": budget}, **common)
    return {"switches": res["models"], "versions": res["versions"]}


def _check_ablation_args(output_dir, resume, seeds):
    """Refuse, before anything is written, a resumed :func:`run_ablation` without its folder
    and fewer than one seed."""
    if resume and not output_dir:
        raise ValueError("resume=True needs output_dir: the folder of the interrupted run "
                         "(xplant ablate --resume --output DIR)")
    if int(seeds) < 1:
        raise ValueError(f"seeds must be >= 1; got {seeds!r}")


def _curve_sizes(sizes, n_train, curve):
    """The curve's training sizes as ints, checked against the ``n_train`` training
    documents when the curve runs."""
    sizes = [int(s) for s in sizes]
    if curve and sizes and max(sizes) > n_train:
        raise ValueError(f"curve size {max(sizes)} exceeds the {n_train} training documents; "
                         f"pass smaller --sizes (or a larger --max-docs)")
    return sizes


def _write_ablation(out_dir, result, log):
    """``ablation.json`` and ``ablation.md`` of :func:`run_ablation`, and its closing lines."""
    write_text(out_dir / "ablation.json", json.dumps(result, indent=2, default=float))
    write_text(out_dir / "ablation.md", format_ablation(result))
    log(format_ablation(result))
    log(f"wrote {out_dir / 'ablation.json'} in {result['wall_seconds']:.0f} s")


def _ablation_data(dataset, codes, language, data_home, max_docs, dev_docs, single_seed_above,
                   sizes, curve):
    """The data of :func:`run_ablation`: the ``data_args`` of :func:`xplant.app.load_splits`,
    the dataset's name, its splits, the curve's sizes (checked; the dataset's default where
    None) and the sizes above which one seed runs."""
    if dataset == "codiesp":
        data_args = {"dataset": "codiesp", "codes": codes, "language": language,
                     "data_home": data_home, "max_docs": max_docs, "dev_docs": dev_docs}
        name, default_sizes = f"codiesp-{codes}", DEFAULT_SIZES
    elif dataset == "eurlex57k":
        data_args = {"dataset": "eurlex57k", "data_home": data_home, "max_docs": max_docs,
                     "dev_docs": dev_docs}
        if single_seed_above is None:
            single_seed_above = EURLEX_SINGLE_SEED_ABOVE
        name, default_sizes = "eurlex57k", EURLEX_SIZES
    else:
        raise ValueError(f"dataset must be 'codiesp' or 'eurlex57k'; got {dataset!r}")
    splits = load_splits(**data_args)
    sizes = _curve_sizes(default_sizes if sizes is None else sizes,
                         len(splits["train"].texts), curve)
    return data_args, name, splits, sizes, single_seed_above


def _fit_overrides(max_length, min_epoch_docs, max_epoch_docs):
    """The PlantClassifier parameters every fit of :func:`run_ablation` takes besides its row's."""
    extra = {} if max_length is None else {"module__max_length": int(max_length)}
    if min_epoch_docs is not None:
        extra["iterator_train__min_epoch_docs"] = int(min_epoch_docs)
    if max_epoch_docs is not None:
        extra["iterator_train__max_epoch_docs"] = int(max_epoch_docs)
    return extra


def _run_curve(data_args, extra, out_dir, result, n_train, common):
    """The low-data curve of :func:`run_ablation` (``result``: its settings, the sizes and
    seeds among them): :data:`CURVE_MODELS` (with ``extra``, every fit's overrides) fitted on
    nested subsets of the ``n_train`` training documents, one run per seed and size; one row
    per model and size, with the mean and the sample standard deviation over seeds of test
    P@5 and macro-F1."""
    name, budget, sizes, seeds = (result["dataset"], result["budget"], result["sizes"],
                                  result["seeds"])
    single_seed_above = result["single_seed_above"]
    from ..model_selection import nested_subsamples
    curve_specs = [{"name": m, "params": {"shortlist": None, **extra}} for m in CURVE_MODELS]
    values = {(m, s): {"P@5": [], "macro_F1": []} for m in CURVE_MODELS for s in sizes}
    for seed in range(int(seeds)):
        subsets = nested_subsamples(n_train, sizes, random_state=seed)
        for size, rows in zip(sizes, subsets):
            if seed and single_seed_above is not None and size > single_seed_above:
                continue
            common["log"](f"== curve: seed {seed}, {size} training documents ==")
            args = {**data_args, "train_rows": rows.tolist()}
            rec = {"dataset": name, "split": "test", "budget": budget,
                   "seed": seed, "train_rows": rows.tolist()}
            res = run_models(args, curve_specs, out_dir / "curve" / f"seed{seed}_n{size}",
                             random_state=seed, splits=load_splits(**args), record=rec,
                             **common)
            for m in res["models"]:
                for key in ("P@5", "macro_F1"):
                    values[m["name"], size][key].append(float(m["metrics"][key]))
    curve = []
    for (model, size), v in values.items():
        row = {"model": model, "size": size}
        for key, vals in v.items():
            mean, std = _mean_std(vals)
            row[key] = {"mean": mean, "std": std, "values": vals}
        curve.append(row)
    return curve


def format_ablation(result):
    """Markdown of :func:`run_ablation`'s result: the switch table and the curve.

    Parameters
    ----------
    result : dict
        The content of ``ablation.json``.

    Returns
    -------
    str
    """
    b = result["budget"]
    parts = [f"# PLANT ablation on {result['dataset']} ({result.get('language', 'en')})", "",
             f"Budget: {b['epochs']} Stage 2 epochs, {b['plant_epochs']} Stage 1 epochs"
             + (f", first {b['max_docs']} documents of each split" if b.get("max_docs") else "")
             + (f", epochs and decision rules chosen on {b['dev_docs']} random dev documents"
                if b.get("dev_docs") else "")
             + (f", first {b['max_length']} tokens per document" if b.get("max_length") else "")
             + (f", at least {b['min_epoch_docs']} training documents drawn per epoch "
                "(smaller subsets repeated)" if b.get("min_epoch_docs") else "")
             + (f", at most {b['max_epoch_docs']} training documents drawn per epoch "
                "(a fresh random subset of larger sets)" if b.get("max_epoch_docs") else "")
             + ". Test split, percent, except dev MAP (the dev split, the score that "
             "chooses between rows); F1 with top-k, k chosen on dev.", ""]
    if result["switches"]:
        parts += ["## Switches", "", markdown_table(result["switches"], ABLATION_COLUMNS), ""]
    if result["curve"]:
        parts += [f"## Low-data curve (up to {result['seeds']} seeds, mean ± sample std)", "",
                  "| model | train docs | seeds | P@5 | macro-F1 |", "|---|---:|---:|---:|---:|"]
        for r in result["curve"]:
            parts.append(f"| {r['model']} | {r['size']} | {len(r['P@5']['values'])} | "
                         f"{100 * r['P@5']['mean']:.1f} ± "
                         f"{100 * r['P@5']['std']:.1f} | {100 * r['macro_F1']['mean']:.1f} ± "
                         f"{100 * r['macro_F1']['std']:.1f} |")
        parts += ["", "![low-data curve](low_data_curve.png)", ""]
    return "\n".join(parts)
