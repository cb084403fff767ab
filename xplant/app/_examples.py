"""What a run shows of each row beside its scores: evidence spans and zero-shot predictions."""

import json
from pathlib import Path

#: Test documents shown with their evidence in the report.
EXAMPLE_DOCS = 3


def evidence_examples(clf, test, train, n_docs=EXAMPLE_DOCS, top_labels=5, top_spans=3):
    """The first test documents with gold labels: top labels, gold marked, evidence spans.

    Parameters
    ----------
    clf : fitted PlantClassifier
        Anything with ``explain(texts, top_labels, top_spans)``.
    test, train : Bunch
        Splits; ``train.label_descriptions`` (if any) names the labels.

    Returns
    -------
    list of dict
        ``evidence.json`` documents (docs/guide/cli.md, section "The run folder"): ``{"doc_id",
        "text", "gold": [labels], "codes": [{"code", "prob", "gold",
        "description", "spans"}]}``; ``prob`` is null for a label no
        probability scored (the descriptions row's cosines).
    """
    Y = test.Y.tocsr()
    rows = [i for i in range(Y.shape[0]) if Y.indptr[i + 1] > Y.indptr[i]][:n_docs]
    if not rows:
        return []
    names = [str(x) for x in train.label_names]
    # test's own columns: the label space, then its codes outside it (which no model ranks)
    test_names = [str(x) for x in test.get("label_names", train.label_names)]
    desc = train.get("label_descriptions")
    texts = [test.texts[i] for i in rows]
    from ._splits import _inputs             # records, where the model reads other fields too
    docs = _inputs(test, clf)
    explained = clf.explain([docs[i] for i in rows], top_labels=top_labels, top_spans=top_spans)
    out = []
    for i, text, ex in zip(rows, texts, explained):
        gold = {test_names[j] for j in Y.indices[Y.indptr[i]:Y.indptr[i + 1]]}
        codes = []
        for lab in ex["labels"]:
            j = int(lab["index"])
            codes.append({"code": names[j], "prob": _probability(lab), "gold": names[j] in gold,
                          "description": _description(desc, j),
                          "spans": [_span_json(s) for s in lab["spans"]]})
        out.append({"doc_id": str(test.ids[i]), "text": text, "gold": sorted(gold),
                    "codes": codes})
    return out


def _probability(label):
    """An explained label's ``prob`` as JSON: a float, or None (null) where it has none.

    ``explain`` gives None for a label that no probability scored (a
    description's cosine, a catalogue code's sentence: docs/guide/unseen.md);
    it stays null in ``evidence.json`` and ``results.json``, and the report
    shows a dash.
    """
    prob = label.get("prob")
    return None if prob is None else float(prob)


def _description(descriptions, j):
    """Label ``j``'s description for the run folder's JSON; ``""`` where there is none."""
    if descriptions is None or len(descriptions) <= j:
        return ""
    return str(descriptions[j] or "")


def _span_json(span):
    """An :meth:`~xplant.neural.PlantClassifier.explain` span as plain JSON values."""
    return {"start": int(span["start"]), "end": int(span["end"]),
            "text": None if span["text"] is None else str(span["text"]),
            "weight": float(span["weight"])}


def add_evidence(out_dir, name, docs):
    """Put one row's documents into the run folder's ``evidence.json`` (atomically)."""
    from .._files import read_json_object, write_text
    path = Path(out_dir) / "evidence.json"
    data = read_json_object(path, "a run's evidence") if path.is_file() else {}
    data[name] = docs
    write_text(path, json.dumps(data, ensure_ascii=False))


#: Zero-shot predictions listed per row in the report: the first, in test order.
ZERO_SHOT_SHOWN = 20


def zero_shot_predictions(y_score, k, train_frequency, y_true=None, *,
                          max_predictions=ZERO_SHOT_SHOWN):
    """The labels never seen in training that each document predicts.

    Parameters
    ----------
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels)
        The row's scores of the evaluated documents.
    k : int or dict
        The row's decision rule (chosen on dev): an int is the top-k rule,
        ranks ``1..k`` counting, ties to the lower label index
        (:func:`xplant.metrics.top_k_indices`); a dict is any rule of
        :func:`xplant.metrics.check_rule`, applied by
        :func:`xplant.metrics.apply_rule`. A prediction's rank is its place
        in the document's ranking either way.
    train_frequency : array-like of int of shape (n_labels,), or the training indicator matrix
        Zero-shot labels are those with no training positive
        (:func:`xplant.model_selection.zero_shot_labels`, the group of the
        tables' "F1 zero").
    y_true : {ndarray, sparse matrix} of shape (n_samples, n_labels), optional
        Gold labels; marks each prediction correct or not.
    max_predictions : int, default=ZERO_SHOT_SHOWN
        Predictions listed; the counts cover all of them.

    Returns
    -------
    dict
        ``"rule"``, ``"k"`` (the rule's k), ``"n_zero_shot_labels"``,
        ``"n_predictions"`` (every predicted (document, zero-shot label)
        pair), ``"n_documents"``
        (documents with at least one), ``"n_correct"`` (None without
        ``y_true``), ``"max_listed"`` (``max_predictions``) and
        ``"predictions"``: the first ``max_predictions``
        pairs in document order, then rank, as ``{"doc": row index,
        "label_index", "rank" (1 = top), "score", "gold" (bool or None)}``.

    Raises
    ------
    ValueError
        If ``k`` is neither a positive integer nor a rule, ``max_predictions``
        is not a non-negative integer, or the shapes disagree.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[.9, .8, .1], [.2, .1, .7]])
    >>> r = zero_shot_predictions(S, 2, [3, 0, 0], y_true=np.array([[1, 1, 0], [0, 0, 0]]))
    >>> [(p["doc"], p["label_index"], p["rank"], p["gold"]) for p in r["predictions"]]
    [(0, 1, 2, True), (1, 2, 1, False)]
    >>> r["n_correct"], r["n_documents"]
    (1, 2)
    """
    import numpy as np
    from ..metrics import check_k
    rule = None if not isinstance(k, dict) or k.get("rule") == "top_k" else k
    k = check_k(k["k"] if isinstance(k, dict) else k, "k")
    if isinstance(max_predictions, bool) or not isinstance(max_predictions, int) \
            or max_predictions < 0:
        raise ValueError(f"max_predictions must be a non-negative int, got {max_predictions!r}")
    zero, is_zero = _zero_shot_mask(y_score, train_frequency)
    doc, labels, pos, rule = _zero_shot_pairs(y_score, k, rule, is_zero)
    gold = None if y_true is None else _pair_gold(y_true, y_score.shape, doc, labels)
    preds = _listed_pairs(y_score, doc, labels, pos, gold, max_predictions)
    return {"rule": "top_k" if rule is None else rule["rule"], "k": k,
            "n_zero_shot_labels": int(zero.size), "n_predictions": int(doc.size),
            "n_documents": int(np.unique(doc).size),
            "n_correct": None if gold is None else int(gold.sum()),
            "max_listed": max_predictions, "predictions": preds}


def _zero_shot_mask(y_score, train_frequency):
    """The zero-shot labels of :func:`zero_shot_predictions` (no training positive) and
    their mask over ``y_score``'s columns, whose number is checked against
    ``train_frequency``'s."""
    import numpy as np
    from ..model_selection import zero_shot_labels
    n_labels = y_score.shape[1] if getattr(y_score, "ndim", 0) == 2 else None
    zero = zero_shot_labels(train_frequency)
    freq_len = np.shape(train_frequency)[-1]
    if n_labels is None or freq_len != n_labels:
        raise ValueError(f"y_score must be 2-D (n_samples, n_labels) with n_labels = "
                         f"{freq_len}, the length of train_frequency; got shape "
                         f"{getattr(y_score, 'shape', None)}")
    is_zero = np.zeros(n_labels, dtype=bool)
    is_zero[zero] = True
    return zero, is_zero


def _pair_gold(y_true, shape, doc, labels):
    """Whether each (``doc``, ``labels``) pair is a gold label of ``y_true``, checked to have
    the scores' ``shape``."""
    import numpy as np
    import scipy.sparse as sp
    Y = sp.csr_matrix(y_true)
    if Y.shape[1] != shape[1] or Y.shape[0] != shape[0]:
        raise ValueError(f"y_true has shape {Y.shape}, expected {(shape[0], shape[1])}")
    return np.asarray(Y[doc, labels]).ravel() != 0 if doc.size else np.zeros(0, bool)


def _zero_shot_pairs(y_score, k, rule, is_zero):
    """The (document, zero-shot label) pairs a row predicts, in document order then rank.

    Returns the documents, the labels, each pair's place in the top-k
    ranking (0-based; None under another rule) and the rule as checked
    (None: the top-k rule), for :func:`zero_shot_predictions`.
    """
    import numpy as np
    import scipy.sparse as sp
    from ..metrics import apply_rule, check_rule, top_k_indices
    n_labels = y_score.shape[1]
    if rule is None:
        top = top_k_indices(y_score, min(k, n_labels))
        doc, pos = np.nonzero((top >= 0) & is_zero[np.maximum(top, 0)])   # row-major: doc, rank
        return doc, top[doc, pos], pos, None
    rule = check_rule(rule, n_labels)
    P = apply_rule(y_score, rule).tocoo()
    keep = is_zero[P.col]
    doc, labels = P.row[keep], P.col[keep]
    vals = (np.asarray(y_score[doc, labels]).ravel() if not sp.issparse(y_score) else
            np.asarray(sp.csr_matrix(y_score)[doc, labels]).ravel())
    order = np.lexsort((labels, -vals, doc))         # each document best first
    return doc[order], labels[order], None, rule


def _listed_pairs(y_score, doc, labels, pos, gold, max_predictions):
    """The first ``max_predictions`` pairs of :func:`zero_shot_predictions` as records: each
    with its rank in the document's ranking, its score and whether it is gold."""
    import numpy as np
    import scipy.sparse as sp
    dense = not sp.issparse(y_score)
    n_labels = y_score.shape[1]
    preds = []
    for t in range(min(max_predictions, doc.size)):
        i, j = int(doc[t]), int(labels[t])
        row = np.asarray(y_score[i]).ravel() if dense else y_score[i].toarray()[0]
        if pos is not None:
            rank = int(pos[t]) + 1
        else:        # its place in the ranking: higher scores, then equal ones of lower index
            stored = np.ones(n_labels, bool) if dense else np.isin(
                np.arange(n_labels), sp.csr_matrix(y_score[i]).indices)
            rank = 1 + int(np.sum(stored & (row > row[j]))) + \
                int(np.sum(stored[:j] & (row[:j] == row[j])))
        preds.append({"doc": i, "label_index": j, "rank": rank,
                      "score": float(row[j]), "gold": None if gold is None else bool(gold[t])})
    return preds


def zero_shot_rows(entries, model, test, train, *, top_spans=3):
    """Each row's zero-shot predictions (under its decision rule) with their evidence spans.

    One ``explain`` call for the rows of one fit (a shortlisted neural fit
    yields three rows); a model without ``explain``, or documents without
    text, give the predictions without spans.

    Parameters
    ----------
    entries : list of (test scores, rule) or (test scores, rule, model)
        One per row, the scores the row is evaluated on and its decision
        rule (k of the top-k rule, or a rule dict: :func:`zero_shot_predictions`);
        a third item is the row's own model when it is not ``model`` (the
        ``fused + descriptions`` row explains the labels its descriptions
        scored by their best-matching sentences).
    model : fitted estimator
        Its ``explain(texts, top_spans=, labels=)`` gives the spans, if it
        has one; one ``explain`` call per distinct model.
    test, train : Bunch
        The evaluated split and the whole training split (its frequencies
        define the zero-shot group, as in the tables); ``train.label_names``
        and ``train.label_descriptions`` (if any) name the labels.
    top_spans : int, default=3

    Returns
    -------
    list of dict
        Per row, the ``"zero_shot"`` record of ``results.json``
        (docs/guide/cli.md, section "The run folder"): :func:`zero_shot_predictions`'s counts and
        ``"shown"``, ``"explained"`` (bool) and ``"predictions"``:
        ``[{"doc_id", "label", "label_index", "description", "rank",
        "score", "gold", "prob", "evidence", "spans": [{"start", "end",
        "text", "weight"}]}]``. ``prob`` is the network's own probability
        of the label (None when not explained, or when the descriptions
        scored it); ``evidence`` says where the spans come from:
        ``"model"`` (the network's attention), ``"descriptions"`` (the
        sentences that match the label's description best, weighted by
        their TF-IDF cosine) or None (not explained).
    """
    from .._labels import label_frequency
    freq = label_frequency(train.Y)
    models = [e[2] if len(e) > 2 and e[2] is not None else model for e in entries]
    found = [zero_shot_predictions(e[0], e[1], freq, test.Y) for e in entries]
    names = [str(x) for x in train.label_names]
    desc = train.get("label_descriptions")
    texts = test.get("texts")
    explained = {}                    # id(model) -> {(doc, label): explain's record}
    for m in {id(m): m for m in models}.values():
        if not hasattr(m, "explain") or texts is None:
            continue
        wanted = {}
        for rec, owner in zip(found, models):
            if owner is m:
                for p in rec["predictions"]:
                    wanted.setdefault(p["doc"], set()).add(p["label_index"])
        docs = sorted(wanted)
        explained[id(m)] = {}
        if docs:
            from ._splits import _inputs     # records, where the model reads other fields too
            inputs = _inputs(test, m)
            out = m.explain([inputs[i] for i in docs], top_spans=top_spans,
                            labels=[sorted(wanted[i]) for i in docs])
            for i, ex in zip(docs, out):
                for lab in ex["labels"]:
                    explained[id(m)][(i, int(lab["index"]))] = lab
    rows = []
    for rec, owner in zip(found, models):
        preds = []
        for p in rec["predictions"]:
            j = p["label_index"]
            lab = explained.get(id(owner), {}).get((p["doc"], j))
            prob = None if lab is None else _probability(lab)
            preds.append({"doc_id": str(test.ids[p["doc"]]), "label": names[j], "label_index": j,
                          "description": _description(desc, j),
                          "rank": p["rank"], "score": p["score"], "gold": p["gold"],
                          "prob": prob, "evidence": None if lab is None else lab.get("source", "model"),
                          "spans": [] if lab is None else [_span_json(s) for s in lab["spans"]]})
        rows.append({**rec, "shown": len(preds), "explained": id(owner) in explained,
                     "predictions": preds})
    return rows


def add_zero_shot(out, model, dev, test, train):
    """Each row's zero-shot record into ``out["info"]`` and its variants', in the fit's process.

    A row without a decision rule yet (the fused rows of a shortlisted fit)
    gets it here, chosen on dev as :func:`xplant.app.evaluate_row` would, so
    the listed predictions are those of the row's own rule. A failure is
    recorded as ``zero_shot_error`` (the report says so); the scores stand.
    """
    from sklearn.utils import Bunch
    from ..metrics import choose_rule
    # a row over an open label space (a catalogue) lists its unseen codes itself
    # (``unseen_suggestions``); the others list the zero-shot codes of the training columns
    for row in [out] + list(out.get("variants", ())):
        if row.get("label_names") is not None:
            row.pop("explainer", None)
    rows = [r for r in [out] + list(out.get("variants", ())) if r.get("label_names") is None]
    n_known = train.Y.shape[1]
    if test.Y.shape[1] != n_known:            # test codes outside the space: none can be listed
        test = Bunch(**{**test, "Y": test.Y[:, :n_known].tocsr()})
    for row in rows:
        if row.get("rule") is None:
            row["rule"] = choose_rule(dev.Y, row["dev_scores"])
    # a row's own model explains it (the descriptions row); it never leaves the fit's process
    explainers = [row.pop("explainer", None) for row in rows]
    try:
        records = zero_shot_rows([(r["test_scores"], r["rule"], e) for r, e in zip(rows, explainers)],
                                 model, test, train)
    except Exception as exc:
        for row in rows:
            row["info"] = dict(row["info"], zero_shot_error=f"{type(exc).__name__}: {exc}")
        return
    for row, rec in zip(rows, records):
        row["info"] = dict(row["info"], zero_shot=rec)
