"""The main job: PLANT against its baselines on CodiEsp, train -> dev -> test.

Every model is fitted on the official training split, anything that needs
choosing (epochs by early stopping, the decision rule and its k or thresholds) is
chosen on the official dev split, and the test split is scored once. Each
model runs in its own child process, so its fit time and peak memory are
its own.

:func:`run_models` runs the rows one after the other and writes the run
files. The parts it relies on have modules of their own: the splits
(:mod:`xplant.app._splits`), a row's estimator (:mod:`xplant.app._build`),
its fit in a child process (:mod:`xplant.app._fit_row`) and its refit on
train + dev (:mod:`xplant.app._refit`), its results entry and the run's
designated model (:mod:`xplant.app._results`), and the finished rows kept
for ``--resume`` (:mod:`xplant.app._parts`).
"""

import multiprocessing as mp
import os
import platform
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .._labels import label_frequency
from .._process import die_with_parent
from ._build import DEFAULT_EPOCHS, DEFAULT_PLANT_EPOCHS, build_model
from ._fit_row import _fit_one
from ._parts import _check_resume, _part_key, _read_fused_parts, _read_part, _write_part
from ._refit import REFIT_SUFFIX, _refit_child
from ._results import evaluate_row, designate
from ._rows import DESCRIPTION_ENCODER, _description_row, _model_folder
from ._splits import load_splits
from ._tables import rule_label

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


def _versions():
    """The versions of Python and of the packages a run's figures depend on."""
    import importlib.metadata as md
    out = {"python": platform.python_version()}
    for pkg in ("xplant", "numpy", "scipy", "scikit-learn", "numba", "torch", "skorch",
                "transformers", "napkinxc", "omikuji", "libmultilabel"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


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


def _in_child(func, isolate, ctx, *args):
    """``func(*args)`` in a child process of its own when ``isolate`` (its fit time and peak
    memory are then its own), else here. An executor (not a Pool) raises
    ``BrokenProcessPool`` when the child dies (killed for memory) instead of hanging."""
    if not isolate:
        return func(*args)
    with ProcessPoolExecutor(1, mp_context=ctx, initializer=die_with_parent,
                             initargs=(os.getpid(),)) as ex:
        return ex.submit(func, *args).result()


def run_models(data_args, model_specs, output_dir, *, epochs=DEFAULT_EPOCHS,
               plant_epochs=DEFAULT_PLANT_EPOCHS, random_state=0, verbose=1, isolate=True,
               save_models=True, num_threads=None, splits=None, record=None, keep_going=False,
               resume=False, refit=False, description_encoder=DESCRIPTION_ENCODER, estimate=False,
               log=print):
    """Fit each model on train, choose on dev, score test once; write the run files.

    The machinery of ``xplant run``, ``xplant ablate`` and the benchmarks.
    Anything chosen (a grid in ``spec["grid"]``, epochs, the decision rule)
    is chosen on dev; metrics are :func:`xplant.metrics.xmtc_report`'s on
    test. Once the SVM row is saved, the later neural rows take its model,
    frozen, as their shortlist (:func:`xplant.app._fused.frozen_shortlist`).

    Parameters
    ----------
    data_args : dict
        Keyword arguments of :func:`load_splits` (picklable: the child
        process reloads the data).
    model_specs : sequence of str or dict
        A name from :data:`MODEL_KINDS`, or ``{"name": row name, "model":
        kind (default: name), "params": {...} (see :func:`build_model`),
        "grid": {param: [values]} (default :data:`DEV_GRIDS`), "max_train_docs":
        fit on the first training documents only (buckets: the whole split's)}``.
    output_dir : str or Path
        Folder for ``results.json``, ``per_label.npz`` and ``models/``.
    epochs, plant_epochs, random_state, verbose
        Passed to :func:`build_model`.
    isolate : bool, default=True
        Fit each model in a child process (its fit time and peak RSS its own).
    save_models : bool, default=True
        Save models that have ``save`` to ``output_dir/models/<name>``.
    num_threads : int or None
        torch threads in each fit (default: torch's own choice).
    splits, record : dict or None
        ``load_splits(**data_args)`` if loaded; extra entries of ``results.json``.
    keep_going : bool, default=False
        A model that fails (an error, its child process dies) is logged,
        listed under ``results["failed"]``, and the next one runs.
    resume : bool, default=False
        Continue an interrupted run in the same ``output_dir``: a model
        finished there (``parts/<model>.json`` and ``.npz``, for the same
        spec, data arguments and input files' contents) is kept; changed
        input files are an error, raised before anything is fitted; a
        neural model continues from its latest epoch checkpoint
        (``checkpoints/<model>/``, removed once the model has finished).
    refit : bool, default=False
        Also refit each neural row and the SVM row, after its dev choices,
        on train + dev with those choices pinned
        (:func:`xplant.model_selection.refit_params`), reported as
        ``"<row> (refit)"`` (and its fused rows, PLANT's ``fused +
        descriptions`` with the first fit's weights), scored on test once,
        with the labels absent from train + dev beside the zero-shot group
        (:func:`evaluate_row`); its decision rule is the first fit's dev
        choice and its shortlist the refit SVM. A resumed row is not refitted.
    description_encoder : str or None, default="minilm"
        The description source's sentence encoder
        (:func:`xplant.app._rows.description_ranker`): ``"minilm"``,
        ``"hf:<folder>"``, or None / ``"none"`` for TF-IDF alone.
    estimate : bool, default=False
        Before fitting, log each row's estimated fit time
        (:func:`xplant.app._estimate.estimate_rows`: each row fitted on a
        share of the data and timed), and before each refit its own; each
        row's entry then holds ``"estimate"`` (``seconds``, ``most_seconds``,
        ``detail``). A run with no more training documents than a probe's
        (:data:`xplant.app._estimate.PROBE_DOCS`) estimates nothing.
    log : callable, default=print
        Receives each progress line.

    Returns
    -------
    results : dict
        The content of ``results.json``; each model entry also holds
        ``predict_docs_per_second``.
    """
    checked = check_model_specs(model_specs, epochs=epochs, plant_epochs=plant_epochs,
                                random_state=random_state, verbose=0)
    out_dir, inputs = _prepare_run(output_dir, checked, data_args, resume=resume,
                                   save_models=save_models)
    if splits is None:
        splits = load_splits(**data_args)
    run = _Run(splits, out_dir, log, record, data_args=data_args, inputs=inputs, isolate=isolate,
               keep_going=keep_going, resume=resume, refit=refit, save_models=save_models)
    model_args = {"epochs": epochs, "plant_epochs": plant_epochs, "random_state": random_state,
                  "verbose": verbose, "num_threads": num_threads,
                  "description_encoder": description_encoder}
    if estimate:
        run.estimate(checked, model_args)
    for spec, folder in checked:
        run.row(spec, folder, dict(model_args))
    return run.write()


def _prepare_run(output_dir, checked, data_args, *, resume, save_models):
    """The run folder, created, and the input files' digests; checked before anything is
    fitted: a resumed run's inputs unchanged, each row's model folder replaceable."""
    from .._outputs import check_model_output
    from ._sources import input_digests
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
    return out_dir, inputs


class _Run:
    """What a run has gathered as its rows end: the content of ``results.json`` and
    ``per_label.npz``, and the SVM row's saved model that the later neural rows take as
    their frozen shortlist (``shared``; ``shared_refit`` for the refit rows)."""

    def __init__(self, splits, out_dir, log, record, *, data_args, inputs, isolate, keep_going,
                 resume, refit, save_models):
        tr = splits["train"]
        self.splits, self.out_dir, self.log = splits, out_dir, log
        self.data_args, self.inputs, self.isolate, self.keep_going = (data_args, inputs, isolate,
                                                                      keep_going)
        self.resume, self.refit, self.save_models = resume, refit, save_models
        self.n_test = splits["test"].Y.shape[0]
        self.results = {**(record or {}),
                        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        "versions": _versions(), "models": []}
        self.train_frequency = label_frequency(tr.Y)
        self.per_label_f1, self.support = {}, None
        self.ctx = mp.get_context("spawn")
        self.shared, self.has_text = None, tr.get("texts") is not None
        self.shared_refit = None                  # the refit SVM row's saved model (refit=True)
        self.estimates = {}                       # each row's RowEstimate (estimate=True)

    def estimate(self, checked, model_args):
        """Log each row's estimated fit time before anything is fitted
        (:func:`xplant.app._estimate.estimate_rows`, each row in a child process); kept for the
        rows' entries. A failed probe is logged and the run goes on: the estimate is
        advice, not a result."""
        from ._estimate import PROBE_DOCS, estimate_rows
        n_train = self.splits["train"].Y.shape[0]
        if n_train <= PROBE_DOCS:
            self.log(f"no time estimate: {n_train} training documents, no more than a "
                     f"probe's {PROBE_DOCS} (the run itself is the quickest measure)")
            return
        todo = [(spec, folder) for spec, folder in checked if not (
            self.resume and _read_part(self.out_dir, folder, _part_key(
                spec, self.data_args, model_args, self.inputs)) is not None)]
        if not todo:
            return
        found = []
        for row in todo:
            # each row's probe in a process of its own, as each row fits, even when the rows
            # do not: the first fit of a process sums oneDNN's convolution gradients in
            # another order than later ones (docs/benchmarks/archive/speed.md, "the first fit
            # of a process"), so a probe would move the figures of a row fitted after it; and
            # in one process after an SVM's and PLANT's probes, plant=False's trained 6 times
            # slower (the synthetic corpus)
            try:
                found += _in_child(estimate_rows, True, self.ctx, [row], self.data_args,
                                   model_args, self.splits, PROBE_DOCS)
            except Exception as exc:            # advice only: the fit itself decides
                self.log(f"no time estimate for {row[0]['name']}: the probe failed "
                         f"({type(exc).__name__}: {exc})")
        if not found:
            return
        self.log(f"estimated fit times (each row fitted on its first {PROBE_DOCS} of "
                 f"{n_train:,} training documents and timed; Stage 2's epochs as early stopping "
                 "is expected to end them):")
        for est in found:
            self.estimates[est.name] = est
            self.log("  " + est.line())

    def row(self, spec, folder, model_args):
        """One row of the run: kept when it finished in an earlier run (``resume``), else
        fitted in its child process, evaluated and written; then its refit, if it has one."""
        from .._files import remove_tree
        name, out_dir = spec["name"], self.out_dir
        self.log(f"\n== {name} ==")
        key = _part_key(spec, self.data_args, model_args, self.inputs)
        part = _read_part(out_dir, folder, key) if self.resume else None
        if part is not None:
            return self.keep_finished(spec, part, key)
        ckpt_dir = out_dir / "checkpoints" / folder
        if not self.resume:            # a fresh fit never continues a stale checkpoint
            remove_tree(ckpt_dir, inside=out_dir / "checkpoints")
        model_args.update(checkpoint_dir=str(ckpt_dir), resume=self.resume,
                          shortlist_from=self.shared, refit=self.refit)
        model_dir = str(out_dir / "models" / folder) if self.save_models else None
        out = self._child(name, _fit_one, spec, self.data_args, model_args, model_dir,
                          self.splits)
        if out is None:
            return None
        entry = self.add_fit(spec, folder, key, out)
        remove_tree(ckpt_dir, inside=out_dir / "checkpoints")
        est = self.estimates.get(name)
        told = f" (estimated {est.seconds:.0f} s)" if est is not None else ""
        self.log(f"{name}: fit {entry['fit_seconds']:.0f} s{told}, "
                 f"{self.results.get('split', 'test')} MAP {100 * entry['metrics']['MAP']:.1f}, "
                 f"decision rule {rule_label(entry)}")
        job = out.get("refit_job")
        if job is not None:                         # the same row refitted on train + dev
            self.estimate_refit(name + REFIT_SUFFIX, out)
            r = self._child(name + REFIT_SUFFIX, _refit_child, job, self.data_args, model_args,
                            self.splits, self.shared_refit)
            if r is not None:
                self.add_refit(spec, entry, r)
        return None

    def estimate_refit(self, name, out):
        """Log a refit's estimated fit time (:func:`xplant.app._estimate.refit_estimate`,
        from its first fit's times), when the run estimates."""
        if not self.estimates:
            return
        from ._estimate import refit_estimate
        est = refit_estimate(name, out, self.splits["train"].Y.shape[0],
                             self.splits["dev"].Y.shape[0])
        self.estimates[name] = est
        self.log("estimated fit time: " + est.line())

    def _child(self, name, func, *args):
        """``func(*args)`` in a row's child process (:func:`_in_child`); None when it fails
        and the run keeps going (``keep_going``: the row is logged and listed as failed)."""
        try:
            return _in_child(func, self.isolate, self.ctx, *args)
        except Exception as exc:
            if not self.keep_going:
                raise
            self.failed(name, exc)
            return None

    def add(self, name, entry, per):
        """One evaluated row into the results and the per-label F1."""
        self.results["models"].append(entry)
        self.per_label_f1[name] = per.f1

    def failed(self, name, exc):
        """A row that failed (``keep_going``): logged and listed under ``"failed"``."""
        self.log(f"{name}: FAILED ({type(exc).__name__}: {exc})")
        self.results.setdefault("failed", []).append(
            {"name": name, "error": f"{type(exc).__name__}: {exc}"})

    def keep_finished(self, spec, part, key):
        """A row finished in an earlier run (its part), and its fused rows, kept."""
        from ._fused import shared_shortlist
        name = spec["name"]
        entry, per = part
        self.results["models"].append(entry)
        self.per_label_f1[name], self.support = per.f1, per.support
        self.log(f"{name}: finished in an earlier run, kept (test MAP "
                 f"{100 * entry['metrics']['MAP']:.1f})")
        self.shared = shared_shortlist(entry, spec, self.has_text) or self.shared
        for vname, (ventry, vper) in _read_fused_parts(self.out_dir, name, key):
            self.results["models"].append(ventry)
            self.per_label_f1[vname] = vper.f1

    def _variant(self, out, var, vname, per_second, refit=False):
        """A fused row of a shortlisted fit (``var`` of ``out["variants"]``), evaluated and added."""
        ventry, vper = evaluate_row(vname, {**out, **var, "rule": var.get("rule")}, self.splits,
                                    refit=refit)
        ventry["predict_docs_per_second"] = per_second
        self.add(vname, ventry, vper)
        return ventry, vper

    def add_fit(self, spec, folder, key, out):
        """A row fitted by :func:`_fit_one`: its entry, evidence and fused rows, each written
        as a part; returns its entry."""
        from ._fused import shared_shortlist
        name = spec["name"]
        entry, per = evaluate_row(name, out, self.splits)
        if name in self.estimates:
            entry["estimate"] = self.estimates[name].to_dict()
        self.shared = shared_shortlist(entry, spec, self.has_text) or self.shared
        entry["predict_docs_per_second"] = self.n_test / max(entry["predict_seconds"], 1e-9)
        self.add(name, entry, per)
        self.support = per.support
        if out.get("evidence"):
            from ._examples import add_evidence
            add_evidence(self.out_dir, name, out["evidence"])
        _write_part(self.out_dir, folder, key, entry, per)
        if entry.get("descriptions_row"):           # PLANT without label descriptions
            self.log(f"{name} fused + descriptions: {entry['descriptions_row']}")
        for var in out.get("variants", ()):         # the fused rows of a shortlisted fit
            vname = name + var["suffix"]
            ventry, vper = self._variant(out, var, vname, entry["predict_docs_per_second"])
            _write_part(self.out_dir, _model_folder(vname), key, ventry, vper)
            self.log(f"{vname}: (same fit) MAP {100 * ventry['metrics']['MAP']:.1f}, decision "
                     f"rule {rule_label(ventry)}")
        return entry

    def add_refit(self, spec, entry, r):
        """The refit of the row whose first fit is ``entry`` (:func:`_refit_child`'s ``r``),
        and its fused rows."""
        from ._fused import shared_shortlist
        name = spec["name"]
        rentry, rper = evaluate_row(name + REFIT_SUFFIX, r, self.splits, refit=True)
        if rentry["name"] in self.estimates:
            rentry["estimate"] = self.estimates[rentry["name"]].to_dict()
        rentry["predict_docs_per_second"] = self.n_test / max(rentry["predict_seconds"], 1e-9)
        self.add(rentry["name"], rentry, rper)
        if shared_shortlist(entry, spec, self.has_text):
            self.shared_refit = rentry.get("saved_to")
        for var in r.get("variants", ()):
            self._variant(r, var, name + var["suffix"] + REFIT_SUFFIX,
                          rentry["predict_docs_per_second"], refit=True)
        est = self.estimates.get(rentry["name"])
        told = f" (estimated {est.seconds:.0f} s)" if est is not None else ""
        self.log(f"{name}{REFIT_SUFFIX}: fit on train + dev {r['fit_seconds']:.0f} s{told}, "
                 f"{self.results.get('split', 'test')} MAP {100 * rentry['metrics']['MAP']:.1f}")

    def write(self):
        """Designate the run's model; write ``results.json`` and ``per_label.npz``."""
        import json
        from .._files import write_text
        designate(self.results)
        write_text(self.out_dir / "results.json", json.dumps(self.results, indent=2, default=float))
        if not self.per_label_f1:
            return self.results
        from ..report import save_per_label
        save_per_label(self.out_dir / "per_label.npz", train_frequency=self.train_frequency,
                       support=self.support, f1=self.per_label_f1,
                       label_names=np.asarray(self.splits["train"].label_names))
        return self.results
