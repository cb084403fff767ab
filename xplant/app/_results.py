"""A run's results: each row's test metrics under its rule, and the run's model.

:func:`evaluate_row` turns a fitted row (its dev and test scores) into its
entry of ``results.json``: the decision rule chosen on dev, the metrics on
test under it, and its per-label F1. :func:`designate` marks the run's
model, the row with the best dev MAP (its refit when it has one), chosen
before test is read.
"""

import numpy as np
import scipy.sparse as sp

from .._labels import label_frequency
from ._refit import REFIT_SUFFIX


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
    rule = out.get("rule") or metrics.choose_rule(dev_Y[:, :n_row], out["dev_scores"])
    k, th = rule["k"], rule["threshold"]
    rep, y_pred = _test_report(out, rule, tr, dv, test_Y, n_row, refit=refit)
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



def _test_report(out, rule, tr, dv, test_Y, n_row, *, refit):
    """The test metrics of a row under its rule (:func:`evaluate_row`), and its predictions.

    Beside the rule's F1: the two simpler rules' F1; for a refit, the
    labels absent from train + dev; over an open label space, the
    unseen-code channel's R@5.
    """
    from .. import metrics
    freq = _padded(label_frequency(tr.Y), test_Y.shape[1])
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
    return rep, y_pred


def _padded(values, width):
    """``values`` with zeros appended up to ``width``."""
    return np.concatenate([values, np.zeros(width - values.size, dtype=values.dtype)])


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
