"""PLANT's shortlist: Stage 2 step cost and shortlist recall, side by side.

    python benchmarks/bench_shortlist.py step   --data-home DIR [--n-candidates 100]
    python benchmarks/bench_shortlist.py recall --dataset codiesp
    python benchmarks/bench_shortlist.py recall --dataset eurlex57k --data-home DIR
    python benchmarks/bench_shortlist.py fit    --dataset eurlex57k --data-home DIR [options]
    python benchmarks/bench_shortlist.py adjust RUN/models/PLANT [--dataset codiesp] [--max-docs N]

``step``: on the same batch of EURLEX57K training documents (16 documents
of 512 word tokens by default, the word CNN of ``PlantClassifier``'s
defaults, one torch thread), it times

- the label part of a Stage 2 step (label-wise attention with its value
  projection, boosting and head, forward and backward, from fixed encoder
  states and attention keys, which do not depend on the labels): every
  label (the full-label Stage 2) against each document's C candidates;
- the whole Stage 2 step (encoder, label part, focal loss, backward, AdamW
  step): full-label Stage 2 with its 1,000 hard negatives against C
  candidates,

alternating the two in each repetition and printing the median seconds and
the ratio full / candidates (the targets: at least 20x on the label part,
at least 4x on the whole step).

``recall``: the linear shortlist (TF-IDF + one-vs-rest squared-hinge SVM,
C = 1 on EURLEX57K as LibMultiLabel's default, C in {1, 10} on CodiEsp-D
chosen on dev MAP) fitted on the training split; for C in {50, 100, 200,
500} the share of dev and test gold (document, label) pairs among each
document's top C labels, and the pairs missed at C = 100 by the label's
training frequency. It caps what the fused model can rank first.

``fit``: one shortlisted PLANT fit (MIG, Stage 1, the shortlist, Stage 2 on
candidates with early stopping on dev), scored on test three ways from the
same fit: PLANT alone on its candidates (alpha = 0), fused at the
dev-chosen alpha, and the shortlist alone (alpha = 1, which is xplant's
TF-IDF + SVM row). Each row's top-k rule is chosen on dev. It prints the
fit and scoring seconds, the epoch history (seconds and dev scores per
epoch; the MIG step's seconds come from the Pipeline's own line) and the
test metrics. The fused row carries the fitted model's logit adjustment
(``logit_adjustment``, tau on dev); with tau > 0 a row ``fused, tau=0``
gives the same fit without it, ``alpha=0`` is the network as trained
(tau = 0) and ``alpha=0, fused tau`` the network at the fused row's tau. The row ``alpha=1, adjusted`` is the
shortlist alone with a logit adjustment of its own, chosen on dev the
same way (:func:`adjusted_shortlist`), the fair baseline for an adjusted
fused row. With ``--fusion-forms`` it also reports, on dev only, two
other ways to mix the two scores (one alpha per frequency bucket, and the
mix in logit space) beside the single alpha; with ``--resume`` on a
finished fit's checkpoint it re-scores that fit without training.

``adjust``: a saved shortlisted PLANT (``xplant run``'s ``models/PLANT``)
re-scored on test at each logit adjustment tau of the
``logit_adjustment="dev"`` grid, without refitting; the tau dev would
choose is marked, beside the shortlist alone with a tau of its own
(:func:`adjusted_rows`).
"""

import argparse
import importlib.util
import json
import statistics
import time
from pathlib import Path

import numpy as np


def _eurlex_batch(data_home, n_docs, max_length, n_vocab_docs):
    from xplant.datasets import load_eurlex57k
    from xplant.relevance import MIGRelevance
    tr = load_eurlex57k("train", data_home=data_home, max_docs=n_vocab_docs)
    rel = MIGRelevance(top_k=50).fit(tr.texts, tr.Y)
    docs = [d[:max_length] for d in rel.tokenize(tr.texts[:n_docs])]
    return rel, docs, tr.Y[:n_docs]


def _time(fn, reps):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def step_cost(data_home, n_candidates=100, batch_size=16, max_length=512, reps=7,
              n_vocab_docs=2000, seed=0):
    """Median seconds of the label part and the whole Stage 2 step, full vs candidates."""
    import torch
    from xplant.fusion import training_candidates
    from xplant.neural.batching import pad_batch, positives_list
    from xplant.neural.backbones import build_backbone
    from xplant.neural.losses import candidate_loss, plant_loss
    from xplant.neural.modules import PlantNet
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rel, docs, Y = _eurlex_batch(data_home, batch_size, max_length, n_vocab_docs)
    L = Y.shape[1]
    enc = build_backbone("cnn", relevance=rel, embedding_dim=100, hidden_dim=128, kernel_size=5,
                         dropout=0.2, glove=False, lora=None)
    net = PlantNet(enc, L, attention_dim=128, pool_size=128)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    ids, mask = pad_batch(docs, pad_value=rel.pad_id_)
    pos = positives_list(Y)
    rng = np.random.default_rng(seed)
    # candidates as in training: gold, then negatives (here a random ranking)
    ranking = np.stack([rng.permutation(L) for _ in range(len(docs))])
    cands = training_candidates(ranking, pos, n_candidates)
    cand, _ = pad_batch(cands, pad_value=-1)
    target = torch.as_tensor(np.stack([np.isin(c.numpy(), p) for c, p in zip(cand, pos)]),
                             dtype=torch.float)
    keep = cand >= 0
    cand = cand.clamp(min=0)
    pos_t, _ = pad_batch(pos, pad_value=-1)
    with torch.no_grad():
        H0 = net.encoder(ids, mask)
        K0 = net.attention.keys(H0)

    def label_full():       # from encoder states H and keys K (both label-independent)
        H, K = H0.detach().requires_grad_(), K0.detach().requires_grad_()
        net._logits(H, K, mask).sum().backward()

    def label_cand():
        H, K = H0.detach().requires_grad_(), K0.detach().requires_grad_()
        net._candidate_logits(H, K, mask, cand).sum().backward()

    def step_full():
        opt.zero_grad()
        plant_loss(net(ids, mask), pos_t, hard_negatives=1000).backward()
        opt.step()

    def step_cand():
        opt.zero_grad()
        candidate_loss(net(ids, mask, candidates=cand), target, keep).backward()
        opt.step()

    net.train()
    times = {k: [] for k in ("label_full", "label_cand", "step_full", "step_cand")}
    fns = {"label_full": label_full, "label_cand": label_cand, "step_full": step_full,
           "step_cand": step_cand}
    for fn in fns.values():             # warm-up
        fn()
    for _ in range(reps):               # alternate, so drift hits both sides alike
        for name, fn in fns.items():
            times[name] += _time(fn, 1)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"n_labels": L, "n_candidates": n_candidates, "batch_size": len(docs),
            "tokens_per_doc": int(ids.shape[1]), "reps": reps, "median_s": med,
            "label_part_ratio": med["label_full"] / med["label_cand"],
            "step_ratio": med["step_full"] / med["step_cand"]}


FREQUENCY_EDGES = (0, 1, 5, 10, 50, 100, 500)


def missed_by_frequency(top, Y, frequency, edges=FREQUENCY_EDGES):
    """Gold (document, label) pairs outside each document's ``top`` labels, by training frequency.

    Returns ``{bucket: [gold pairs, missed pairs]}`` with buckets
    ``[edges[i], edges[i+1])`` of the label's training documents.
    """
    gold, missed = [], []
    for i in range(Y.shape[0]):
        g = Y.indices[Y.indptr[i]:Y.indptr[i + 1]]
        gold.append(frequency[g])
        missed.append(frequency[g[~np.isin(g, top[i])]])
    gold, missed = np.concatenate(gold), np.concatenate(missed)
    bounds = list(edges) + [np.inf]
    return {f"{lo}-{hi - 1:g}" if np.isfinite(hi) else f">={lo}":
            [int(((gold >= lo) & (gold < hi)).sum()), int(((missed >= lo) & (missed < hi)).sum())]
            for lo, hi in zip(bounds[:-1], bounds[1:])}


def shortlist_recall(dataset="codiesp", data_home=None, cs=(50, 100, 200, 500), n_jobs=None):
    """Recall@C of the linear shortlist on dev and test (gold pairs in the top C)."""
    from xplant.app import load_splits
    from xplant.fusion import LINEAR_C_GRID, fit_shortlist, rank_labels
    sp_ = load_splits(dataset, data_home=data_home, language="en")   # as measured
    tr, dv, te = sp_["train"], sp_["dev"], sp_["test"]
    t0 = time.perf_counter()
    if dataset == "eurlex57k":        # one C: each fit costs ~20 CPU-minutes
        from xplant.linear import make_tfidf_ovr
        model = make_tfidf_ovr(C=1.0, n_jobs=n_jobs, random_state=0).fit(tr.texts, tr.Y)
        info = {"C": 1.0}
    else:
        model, info = fit_shortlist("linear", tr.texts, tr.Y, dv.texts, dv.Y, n_jobs=n_jobs)
    fit_s = time.perf_counter() - t0
    L = tr.Y.shape[1]
    out = {"dataset": dataset, "n_labels": L, "C_grid": list(LINEAR_C_GRID), "chosen": info,
           "fit_s": round(fit_s, 1), "recall": {}}
    for name, split in (("dev", dv), ("test", te)):
        idx, _ = rank_labels(model, split.texts, min(L, max(cs)))
        Yc = split.Y.tocsr()
        gold = Yc.nnz
        row = {}
        for c in cs:
            hits = sum(int(np.isin(Yc.indices[Yc.indptr[i]:Yc.indptr[i + 1]], idx[i, :c]).sum())
                       for i in range(Yc.shape[0]))
            row[c] = round(hits / gold, 4)
        seen = np.asarray(tr.Y.sum(0)).ravel() > 0
        row["ceiling"] = round(float(seen[Yc.indices].mean()), 4)   # gold labels seen in train
        out["recall"][name] = row
        out.setdefault("missed_by_frequency", {})[name] = missed_by_frequency(
            idx[:, :100], Yc, np.asarray(tr.Y.sum(0)).ravel())
    return out


def shortlisted_fit(dataset="eurlex57k", data_home=None, *, shortlist_C=1.0, n_candidates=100,
                    max_length=512, max_epochs=30, patience=3, max_epoch_docs=None,
                    plant_epochs=1, plant_epoch_docs=None, plant=True, n_jobs=2, threads=2,
                    checkpoint_dir=None, resume=False, max_docs=None, seed=0, extra=None,
                    forms=False):
    """One shortlisted PLANT fit; test rows at alpha = 0, the dev-chosen alpha and 1.

    ``extra`` (dict) sets further ``PlantClassifier`` parameters over the
    row's, e.g. ``{"stage1_weight": 0}``. With ``forms``, the result also
    holds :func:`fusion_forms` on dev (``"fusion_forms"``); with ``resume``
    on a completed checkpoint this re-scores a finished fit without training.
    """
    import torch
    from xplant.app import build_model, evaluate_row, find_row, fit_with_dev, load_splits
    from xplant.linear import make_tfidf_ovr
    from xplant.metrics import choose_rule
    torch.set_num_threads(threads)
    splits = load_splits(dataset, data_home=data_home, max_docs=max_docs, language="en")
    tr, dv, te = splits["train"], splits["dev"], splits["test"]
    shortlist = ("linear" if shortlist_C is None
                 else make_tfidf_ovr(C=shortlist_C, n_jobs=n_jobs, random_state=seed))
    params = {"shortlist": shortlist, "n_candidates": n_candidates,
              "module__max_length": max_length, "patience": patience,
              "iterator_train__max_epoch_docs": max_epoch_docs, "n_jobs": n_jobs,
              "checkpoint_dir": checkpoint_dir,
              "planter__iterator_train__max_epoch_docs": plant_epoch_docs, **(extra or {})}
    kind = find_row("plant" if plant else "plant-false").display
    model = build_model(kind, epochs=max_epochs, plant_epochs=plant_epochs, random_state=seed,
                        verbose=1, params=params)
    t0 = time.perf_counter()
    model = fit_with_dev(model, tr, dv, resume=resume)
    fit_s = time.perf_counter() - t0
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    hist = [{k: h.get(k) for k in ("epoch", "dur", "train_loss", "valid_map", "valid_fused_map",
                                    "valid_fusion_weight")} for h in final.history]
    alpha, tau = float(final.fusion_weight_), float(final.logit_adjustment_)
    t0 = time.perf_counter()
    scored = {}
    for name, split in (("dev", dv), ("test", te)):
        X = _classifier_input(model, split.texts)
        at = final.fusion_scores(X, (0.0, alpha, 1.0))
        raw = final.fusion_scores(X, (0.0, alpha), logit_adjustment=0.0) if tau else at
        # the network alone as trained (tau = 0); fused at tau, and without it
        scored[name] = {"alone": raw[0.0], "fused": at[alpha], "shortlist": at[1.0]}
        if tau:
            scored[name]["tau=0"] = raw[alpha]
            scored[name]["alone at tau"] = at[0.0]
    score_s = time.perf_counter() - t0
    adjusted_svm = adjusted_shortlist(model, dv, te)
    for name in ("dev", "test"):
        scored[name]["svm-adjusted"] = adjusted_svm[name]
    rows = {}
    for name, key in (("alpha=0", "alone"), ("fused", "fused"),
                      ("alpha=1", "shortlist"), ("fused, tau=0", "tau=0"),
                      ("alpha=0, fused tau", "alone at tau"),
                      ("alpha=1, adjusted", "svm-adjusted")):
        if key not in scored["dev"]:
            continue
        out = {"params": {}, "info": {}, "fit_seconds": fit_s,
               "predict_seconds": score_s, "peak_rss_mb": None,
               "dev_scores": scored["dev"][key], "test_scores": scored["test"][key]}
        out["rule"] = choose_rule(dv.Y, out["dev_scores"])
        rows[name], _ = evaluate_row(name, out, splits)
    planter = getattr(final, "planter_", None)
    extra_out = {"fusion_forms": fusion_forms(model, dv)} if forms else {}
    return {**extra_out, "dataset": dataset, "shape": {s: list(splits[s].Y.shape) for s in splits},
            "params": dict(extra or {}),
            "stage1_weight": final.stage1_weight_, "lr": final.effective_lr(),
            "fit_s": round(fit_s, 1), "score_s": round(score_s, 1),
            "shortlist": final.shortlist_info_, "calibration": final.shortlist_calibration_,
            "fusion_weight": alpha, "logit_adjustment": tau,
            "logit_adjustment_dev": final.logit_adjustment_dev_,
            "shortlist_adjustment": adjusted_svm["tau"],
            "shortlist_adjustment_dev": adjusted_svm["dev_micro_f1"],
            "best_epoch": int(final.best_epoch_),
            "epochs_run": len(final.history), "max_epochs": max_epochs,
            "budget_limited": int(final.best_epoch_) == len(final.history),
            "stage1_attention_ndcg": None if planter is None else planter.attention_ndcg_,
            "history": hist,
            "rows": {k: {"k": v["k"], **{m: v["metrics"].get(m) for m in (
                "P@1", "P@3", "P@5", "nDCG@5", "MAP", "micro_F1", "macro_F1", "F1_frequent",
                "F1_few", "F1_zero")}} for k, v in rows.items()}}


#: tau tried for the shortlist's own logit adjustment (its calibrated scores
#: are on another scale than the network's logits, so the grid reaches lower).
SHORTLIST_TAU_GRID = (0.0, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


def adjusted_shortlist(model, dev, test, grid=SHORTLIST_TAU_GRID):
    """The shortlist alone with a logit adjustment of its own, tau chosen on dev.

    The fair baseline for a fused model with ``logit_adjustment``: the
    shortlist's calibrated score a*s + b of each candidate, minus
    tau * log p of the label (the classifier's smoothed training prior),
    through the sigmoid; tau from ``grid`` by the same rule as the
    classifier's (dev micro-F1 of top-k, ties to the smaller tau). Labels
    beyond the C candidates keep the shortlist's order below them (a top-k
    with k <= C never reaches them).

    Returns
    -------
    dict
        ``{"tau", "dev_micro_f1": {tau: value}, "dev": (n, L) scores,
        "test": (n, L) scores}``.
    """
    from xplant.fusion import dense_scores, sigmoid
    from xplant.neural import adjust_logits, choose_logit_adjustment, log_prior
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    a, b = final.shortlist_calibration_
    log_p = log_prior(final.label_frequency_, final.n_train_documents_)
    views = {}
    for name, split in (("dev", dev), ("test", test)):
        src = final.fusion_sources(_classifier_input(model, split.texts))
        views[name] = (src["candidates"], a * src["shortlist"] + b, src["tail_rank"])

    def scores_at(name, tau):
        cand, z, rank = views[name]
        return dense_scores(cand, sigmoid(adjust_logits(z, log_p[cand], tau)), rank)

    tau, dev_scores, values = choose_logit_adjustment(dev.Y, lambda t: scores_at("dev", t),
                                                      grid,
                                                      max_k=final.resolved_params()["decision__max_k"])
    return {"tau": tau, "dev_micro_f1": values, "dev": dev_scores,
            "test": scores_at("test", tau)}


def adjusted_rows(model_dir, dataset="codiesp", data_home=None, taus=None, max_docs=None):
    """A saved shortlisted PLANT re-scored on test at each logit adjustment tau.

    ``model_dir`` is a saved ``PlantClassifier`` fitted with a shortlist,
    such as ``RUN/models/PLANT`` of ``xplant run``. Without refitting, its
    fused score (at its own alpha) is computed at each tau of ``taus``
    (default: the ``logit_adjustment="dev"`` grid); the tau that grid
    search would choose on dev (:func:`choose_logit_adjustment`) is marked,
    and :func:`adjusted_shortlist` adds the shortlist alone with its own
    tau. Each row's top-k rule is chosen on dev, as in ``xplant run``.
    ``max_docs`` keeps the first documents of each split (a smoke run; None:
    the whole splits).

    Returns
    -------
    dict
        ``{"alpha", "tau_dev", "dev_micro_f1": {tau: value}, "shortlist_tau",
        "rows": {name: {"k", metrics...}}}``, metrics as fractions.
    """
    from xplant import load_saved
    from xplant.app import evaluate_row, load_splits
    from xplant.metrics import choose_rule
    from xplant.neural import LOGIT_ADJUSTMENT_GRID, choose_logit_adjustment
    taus = tuple(LOGIT_ADJUSTMENT_GRID if taus is None else taus)
    splits = load_splits(dataset, data_home=data_home, max_docs=max_docs, language="en")
    dv, te = splits["dev"], splits["test"]
    model, _ = load_saved(model_dir)
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    if getattr(final, "shortlist_", None) is None:
        raise ValueError(f"{model_dir} holds no PlantClassifier with a shortlist; pass a fused "
                         "row's model folder, e.g. RUN/models/PLANT of xplant run")
    alpha = float(final.fusion_weight_)
    scores = {name: {t: final.fusion_scores(_classifier_input(model, split.texts), (alpha,),
                                            logit_adjustment=t)[alpha] for t in taus}
              for name, split in (("dev", dv), ("test", te))}
    tau, _, values = choose_logit_adjustment(dv.Y, lambda t: scores["dev"][t], taus,
                                             max_k=final.resolved_params()["decision__max_k"])
    svm = adjusted_shortlist(model, dv, te)
    scores["dev"]["svm"], scores["test"]["svm"] = svm["dev"], svm["test"]
    rows = {}
    for key in (*taus, "svm"):
        name = "shortlist alone, its own tau" if key == "svm" else f"fused, tau={key}"
        out = {"params": {}, "info": {}, "fit_seconds": None, "predict_seconds": None,
               "peak_rss_mb": None, "dev_scores": scores["dev"][key],
               "test_scores": scores["test"][key]}
        out["rule"] = choose_rule(dv.Y, out["dev_scores"])
        row, _ = evaluate_row(name, out, splits)
        rows[name] = {"k": row["k"], **{m: row["metrics"].get(m) for m in (
            "P@1", "P@5", "nDCG@5", "MAP", "micro_F1", "macro_F1", "F1_few")}}
    return {"alpha": alpha, "tau_dev": tau, "dev_micro_f1": values, "shortlist_tau": svm["tau"],
            "rows": rows}


def _classifier_input(model, texts):
    """What the fitted Pipeline's last step (the classifier) reads for ``texts``."""
    for _, step in getattr(model, "steps", [])[:-1]:
        texts = step.transform(texts)
    return texts


def fusion_forms(model, split, *, cut=50):
    """Dev MAP of two other fusion forms beside the single alpha, from one fitted model.

    The shortlist and the network score ``split`` once (the fitted model,
    at its restored best epoch, without its logit adjustment: the fit
    chooses alpha at tau = 0). Three forms of the fused score of a
    candidate, each over the alpha grid of ``fusion="dev"``:

    - ``single``: alpha * p_short + (1 - alpha) * p_net, the estimator's own;
    - ``bucket``: the same with one alpha for labels with more than ``cut``
      training documents and another for the rest (every pair of the grid);
    - ``logit``: sigmoid(alpha * s + (1 - alpha) * z), mixing the calibrated
      shortlist score s and the network's logit z before the sigmoid.

    Returns
    -------
    dict
        For each form, ``{"best": alpha (a [head, tail] pair for bucket),
        "map": its MAP on split, "grid": {alpha: MAP}}``; MAP is a fraction.
    """
    from xplant.fusion import FUSION_GRID, dense_scores, fuse, sigmoid
    from xplant.metrics import mean_average_precision
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    # as the fit chose alpha: the network without its logit adjustment
    src = final.fusion_sources(_classifier_input(model, split.texts), logit_adjustment=0.0)
    cand, rank, z = src["candidates"], src["tail_rank"], src["network"]
    a, b = src["calibration"]
    s = a * src["shortlist"] + b
    p_short, p_net = sigmoid(s), sigmoid(z)
    tail = final.label_frequency_[cand] <= cut
    grid = [float(g) for g in FUSION_GRID]

    def score(cand_scores):
        return float(mean_average_precision(split.Y, dense_scores(cand, cand_scores, rank)))

    def bucket(h, t):                     # one weight per candidate: h for head labels, t for tail
        w = np.where(tail, t, h)
        return fuse([(p_short, w), (p_net, 1 - w)])

    out = {"single": {"grid": {g: score(fuse([(p_short, g), (p_net, 1.0 - g)])) for g in grid}},
           "logit": {"grid": {g: score(sigmoid(g * s + (1 - g) * z)) for g in grid}},
           "bucket": {"grid": {(h, t): score(bucket(h, t)) for h in grid for t in grid}}}
    for form in out.values():                 # ties keep the first (smaller alpha)
        best = max(form["grid"], key=lambda g: (form["grid"][g], -np.sum(g)))
        form["best"], form["map"] = (list(best) if isinstance(best, tuple) else best,
                                     form["grid"][best])
    out["bucket"]["grid"] = {f"{h},{t}": v for (h, t), v in out["bucket"]["grid"].items()}
    out["cut"] = cut
    return out


def _param(text):
    """bench_xmtc.py's ``NAME=VALUE`` parser (one implementation for both scripts)."""
    spec = importlib.util.spec_from_file_location("bench_xmtc", Path(__file__).with_name("bench_xmtc.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._param(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("step")
    s.add_argument("--data-home", required=True)
    s.add_argument("--n-candidates", type=int, default=100)
    s.add_argument("--batch-size", type=int, default=16)
    s.add_argument("--max-length", type=int, default=512)
    s.add_argument("--reps", type=int, default=7)
    r = sub.add_parser("recall")
    r.add_argument("--dataset", default="codiesp", choices=("codiesp", "eurlex57k"))
    r.add_argument("--data-home", default=None)
    r.add_argument("--n-jobs", type=int, default=None)
    f = sub.add_parser("fit")
    f.add_argument("--dataset", default="eurlex57k", choices=("codiesp", "eurlex57k"))
    f.add_argument("--data-home", default=None)
    f.add_argument("--shortlist-c", type=float, default=1.0,
                   help="the SVM shortlist's C (0: choose from {1, 10} on dev, as shortlist='linear')")
    f.add_argument("--n-candidates", type=int, default=100)
    f.add_argument("--max-length", type=int, default=512)
    f.add_argument("--max-epochs", type=int, default=30)
    f.add_argument("--patience", type=int, default=3)
    f.add_argument("--max-epoch-docs", type=int, default=None)
    f.add_argument("--plant-epochs", type=int, default=1)
    f.add_argument("--plant-epoch-docs", type=int, default=None)
    f.add_argument("--plant-false", action="store_true")
    f.add_argument("--n-jobs", type=int, default=2)
    f.add_argument("--threads", type=int, default=2)
    f.add_argument("--checkpoint-dir", default=None)
    f.add_argument("--resume", action="store_true")
    f.add_argument("--max-docs", type=int, default=None, help="first N documents of each split")
    f.add_argument("--output", default=None, help="also write the result as JSON here")
    f.add_argument("--fusion-forms", action="store_true",
                   help="also report fusion_forms() on dev: one alpha per frequency bucket, "
                        "and the mix in logit space")
    f.add_argument("--set", type=_param, action="append", metavar="NAME=VALUE", default=[],
                   help="a further PlantClassifier parameter, as bench_xmtc.py's --set "
                        "(e.g. --set stage1_weight=0); repeatable")
    j = sub.add_parser("adjust")
    j.add_argument("model_dir", help="a saved shortlisted PlantClassifier, e.g. RUN/models/PLANT")
    j.add_argument("--dataset", default="codiesp", choices=("codiesp", "eurlex57k"))
    j.add_argument("--data-home", default=None)
    j.add_argument("--max-docs", type=int, default=None,
                   help="first N documents of each split (a smoke run; default: all)")
    j.add_argument("--output", default=None, help="also write the result as JSON here")
    args = ap.parse_args(argv)
    if args.what == "adjust":
        res = adjusted_rows(args.model_dir, args.dataset, args.data_home, max_docs=args.max_docs)
        if args.output:
            with open(args.output, "w") as fh:
                json.dump(res, fh, indent=1)
    elif args.what == "fit":
        res = shortlisted_fit(args.dataset, args.data_home, shortlist_C=args.shortlist_c or None,
                              n_candidates=args.n_candidates, max_length=args.max_length,
                              max_epochs=args.max_epochs, patience=args.patience,
                              max_epoch_docs=args.max_epoch_docs, plant_epochs=args.plant_epochs,
                              plant_epoch_docs=args.plant_epoch_docs, plant=not args.plant_false,
                              n_jobs=args.n_jobs, threads=args.threads,
                              checkpoint_dir=args.checkpoint_dir, resume=args.resume,
                              max_docs=args.max_docs, extra=dict(args.set),
                              forms=args.fusion_forms)
        if args.output:
            with open(args.output, "w") as fh:
                json.dump(res, fh, indent=1)
    elif args.what == "step":
        res = step_cost(args.data_home, args.n_candidates, args.batch_size, args.max_length,
                        args.reps)
    else:
        res = shortlist_recall(args.dataset, args.data_home, n_jobs=args.n_jobs)
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
