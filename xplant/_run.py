"""The main job: PLANT against its baselines on CodiEsp, train -> dev -> test.

Every model is fitted on the official training split, anything that needs
choosing (epochs by early stopping, the decision rule's k and threshold) is
chosen on the official dev split, and the test split is scored once. Each
model runs in its own child process, so its fit time and peak memory are
its own.
"""

import json
import multiprocessing as mp
import platform
import resource
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

#: Models of the main job, in table order.
DEFAULT_MODELS = ("frequency prior", "TF-IDF + LR", "plant=False", "PLANT")

#: Hyper-parameters chosen on the dev split (by dev MAP, CodiEsp's official metric).
DEV_GRIDS = {"TF-IDF + LR": {"ovr__C": [1.0, 10.0, 100.0]}}

#: Stage 2 / Stage 1 epoch budgets of the main job (2 CPU cores, ~15 min).
DEFAULT_EPOCHS = 14
DEFAULT_PLANT_EPOCHS = 5


def _versions():
    import importlib.metadata as md
    out = {"python": platform.python_version()}
    for pkg in ("xplant", "numpy", "scipy", "scikit-learn", "numba", "torch", "skorch",
                "transformers"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _peak_rss_mb():
    # ru_maxrss is in kibibytes on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def load_splits(dataset="codiesp", codes="D", language="en", data_home=None):
    """Train, dev and test Bunches of one dataset (one label space)."""
    from .datasets import load_codiesp
    if dataset != "codiesp":
        raise ValueError(f"unknown dataset {dataset!r}; the main job runs on 'codiesp'")
    return {s: load_codiesp(split=s, codes=codes, language=language, data_home=data_home)
            for s in ("train", "dev", "test")}


def build_model(name, *, epochs=DEFAULT_EPOCHS, plant_epochs=DEFAULT_PLANT_EPOCHS,
                random_state=0, verbose=1):
    """The estimator behind a model name of the main job."""
    if name == "frequency prior":
        from .linear import FrequencyPrior
        return FrequencyPrior()
    if name == "TF-IDF + LR":
        from .linear import make_tfidf_logistic
        return make_tfidf_logistic()
    if name in ("PLANT", "plant=False"):
        from sklearn.pipeline import Pipeline
        from .neural import AttentionPlanter, PlantClassifier
        from .relevance import MIGRelevance
        clf = PlantClassifier(plant=(name == "PLANT"), max_epochs=epochs, scoring="map",
                              patience=4, random_state=random_state, verbose=verbose,
                              planter=AttentionPlanter(max_epochs=plant_epochs, verbose=verbose))
        return Pipeline([("mig", MIGRelevance()), ("clf", clf)])
    raise ValueError(f"unknown model {name!r}; choose from {DEFAULT_MODELS}")


def _subset(bunch, n):
    if n is None:
        return bunch
    from sklearn.utils import Bunch
    return Bunch(**{**bunch, "texts": bunch.texts[:n], "Y": bunch.Y[:n], "ids": bunch.ids[:n]})


def _fit_one(name, data_args, model_args, model_dir, max_docs=None):
    """Child-process body: fit one model (dev-selected), return dev and test scores."""
    from sklearn.base import clone
    from .metrics import mean_average_precision
    splits = {k: _subset(v, max_docs) for k, v in load_splits(**data_args).items()}
    tr, dv, te = splits["train"], splits["dev"], splits["test"]
    base = build_model(name, **model_args)
    grid = DEV_GRIDS.get(name, {})
    candidates = [{}] if not grid else [{k: v} for k, vals in grid.items() for v in vals]
    t0 = time.perf_counter()
    best = None
    for cand in candidates:
        model = clone(base).set_params(**cand)
        if hasattr(model, "steps") and model.steps[-1][0] == "clf":
            model.fit(tr.texts, tr.Y, clf__validation_data=(dv.texts, dv.Y))
        else:
            model.fit(tr.texts, tr.Y)
        dev_scores = _scores(model, dv.texts)
        dev_map = mean_average_precision(dv.Y, dev_scores) if dv.Y.nnz else 0.0
        if best is None or dev_map > best[0]:
            best = (dev_map, model, dev_scores, cand)
    _, model, dev_scores, chosen = best
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    test_scores = _scores(model, te.texts)
    predict_s = time.perf_counter() - t0
    info = {"dev_selected": chosen} if grid else {}
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    if hasattr(final, "save"):
        path = Path(model_dir)
        final.save(path)
        info["saved_to"] = str(path)
    if getattr(final, "planter_", None) is not None:
        info["stage1_attention_ndcg"] = final.planter_.attention_ndcg_
        info["stage1_initial_attention_ndcg"] = final.planter_.initial_attention_ndcg_
    if hasattr(final, "best_epoch_"):
        info["best_epoch"] = final.best_epoch_
    params = {k: v for k, v in final.get_params(deep=False).items()
              if isinstance(v, (int, float, str, bool, type(None)))}
    return {"fit_seconds": fit_s, "predict_seconds": predict_s, "peak_rss_mb": _peak_rss_mb(),
            "dev_scores": dev_scores.astype(np.float32), "test_scores": test_scores.astype(np.float32),
            "params": params, "info": info}


def _scores(model, texts):
    if hasattr(model, "predict_proba"):
        s = model.predict_proba(texts)
    else:
        s = model.decision_function(texts)
    return np.asarray(s.toarray() if hasattr(s, "toarray") else s, dtype=np.float64)


def _evaluate(name, out, splits):
    """Decision rule on dev, metrics on test, for one model."""
    from . import metrics
    tr, dv, te = splits["train"], splits["dev"], splits["test"]
    freq = np.asarray(tr.Y.sum(0)).ravel()
    k = metrics.select_k(dv.Y, out["dev_scores"], ks=range(1, 11))
    th = metrics.select_threshold(dv.Y, out["dev_scores"])
    y_pred = metrics.top_k_decision(out["test_scores"], k)
    rep = metrics.xmtc_report(te.Y, out["test_scores"], y_pred=y_pred, label_frequency=freq,
                              n_train_documents=tr.Y.shape[0])
    y_th = metrics.threshold_decision(out["test_scores"], th)
    rep["micro_F1_threshold"] = float(metrics.f1_score(te.Y, y_th, average="micro"))
    rep["macro_F1_threshold"] = float(metrics.f1_score(te.Y, y_th, average="per_label",
                                                       labels="present"))
    per = metrics.per_label_scores(te.Y, y_pred)
    return {"name": name, "params": out["params"], "fit_seconds": out["fit_seconds"],
            "predict_seconds": out["predict_seconds"], "peak_rss_mb": out["peak_rss_mb"],
            "metrics": rep, "k": int(k), "threshold": float(th), **out["info"]}, per


TABLE_COLUMNS = (("P@1", "P@1"), ("P@3", "P@3"), ("P@5", "P@5"), ("nDCG@5", "nDCG@5"),
                 ("MAP", "MAP"), ("micro_F1", "miF1"), ("macro_F1", "maF1"),
                 ("F1_few", "F1 few"), ("F1_frequent", "F1 freq"))


def format_table(models):
    """A plain-text table of the models' test metrics (percent) and fit time."""
    head = ["model"] + [c for _, c in TABLE_COLUMNS] + ["k", "fit s"]
    rows = []
    for m in models:
        r = [m["name"]]
        for key, _ in TABLE_COLUMNS:
            v = m["metrics"].get(key, float("nan"))
            r.append("nan" if v != v else f"{100 * v:.1f}")
        r += [str(m["k"]), f"{m['fit_seconds']:.0f}"]
        rows.append(r)
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def run_main_job(output_dir=None, *, codes="D", language="en", data_home=None,
                 models=DEFAULT_MODELS, epochs=DEFAULT_EPOCHS, plant_epochs=DEFAULT_PLANT_EPOCHS,
                 random_state=0, verbose=1, isolate=True, max_docs=None, report=False, log=print):
    """Fit, choose on dev and test every model; write results.json and per_label.npz.

    Parameters
    ----------
    output_dir : str or Path or None
        Run folder; default ``./xplant-runs/<UTC timestamp>/``. Never
        beside the input data.
    codes, language, data_home
        See :func:`xplant.datasets.load_codiesp`.
    models : sequence of str
        Names from :data:`DEFAULT_MODELS`.
    epochs, plant_epochs : int
        Stage 2 and Stage 1 epoch budgets of the neural models.
    isolate : bool, default=True
        Fit each model in a child process (own fit time and peak RSS).
    max_docs : int or None
        Keep only the first documents of each split (a smoke run, seconds).
    report : bool, default=False
        Also write ``report.html`` (see :func:`xplant.report.render_report`).

    Returns
    -------
    results : dict
        The content of ``results.json`` (API.md schema).
    """
    start = time.perf_counter()
    out_dir = Path(output_dir) if output_dir else \
        Path("xplant-runs") / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir.mkdir(parents=True, exist_ok=True)
    data_args = {"codes": codes, "language": language, "data_home": data_home}
    splits = {k: _subset(v, max_docs) for k, v in load_splits(**data_args).items()}
    tr = splits["train"]
    log(f"CodiEsp-{codes} ({language}): {len(tr.texts)} train / {len(splits['dev'].texts)} dev / "
        f"{len(splits['test'].texts)} test documents, {tr.Y.shape[1]} labels; run folder {out_dir}")
    results = {"dataset": "codiesp", "dataset_args": {"codes": codes, "language": language,
                                                       "max_docs": max_docs},
               "split": "test",
               "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "versions": _versions(), "data_home": str(data_home) if data_home else None,
               "models": []}
    train_frequency = np.asarray(tr.Y.sum(0)).ravel().astype(np.int64)
    per_label_f1, support = {}, None
    ctx = mp.get_context("spawn")
    for name in models:
        log(f"\n== {name} ==")
        model_args = {"epochs": epochs, "plant_epochs": plant_epochs,
                      "random_state": random_state, "verbose": verbose}
        model_dir = out_dir / "models" / name.replace(" ", "_").replace("=", "-").replace("+", "")
        if isolate:
            with ctx.Pool(1) as pool:
                out = pool.apply(_fit_one, (name, data_args, model_args, str(model_dir), max_docs))
        else:
            out = _fit_one(name, data_args, model_args, str(model_dir), max_docs)
        entry, per = _evaluate(name, out, splits)
        results["models"].append(entry)
        per_label_f1[name] = per.f1
        support = per.support
        log(f"{name}: fit {entry['fit_seconds']:.0f} s, test MAP {100 * entry['metrics']['MAP']:.1f}")
    results["wall_seconds"] = time.perf_counter() - start
    (out_dir / "results.json").write_text(json.dumps(results, indent=2, default=float))
    from .report import save_per_label
    save_per_label(out_dir / "per_label.npz", train_frequency=train_frequency, support=support,
                   f1=per_label_f1, label_names=np.asarray(tr.label_names))
    log("\nTest split (percent); F1 with top-k, k chosen on dev by micro-F1:\n")
    log(format_table(results["models"]))
    log(f"\nwrote {out_dir / 'results.json'} in {results['wall_seconds']:.0f} s")
    if report:
        from .report import render_report
        log(f"wrote {render_report(out_dir)}")
    return results
