"""The report's zero-shot section: each row's predictions of labels never seen in training."""

import math


def _number(v, digits):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        return "\u2013"
    return f"{v:.{digits}f}"


def _check_span(span, where):
    if not isinstance(span, dict):
        raise ValueError(f"{where}: each span must be an object {{start, end, text, weight}}")
    s, e = span.get("start"), span.get("end")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (s, e)) or not 0 <= s <= e:
        raise ValueError(f"{where}: span {span!r:.80} needs integer offsets 0 <= start <= end")
    if not isinstance(span.get("text", ""), str):
        raise ValueError(f"{where}: the span's text must be a string")
    return {"start": s, "end": e, "text": span.get("text", ""),
            "weight": _number(span.get("weight"), 3)}


#: How the report names the origin of a zero-shot prediction's spans (its ``"evidence"``).
EVIDENCE_SOURCES = {"model": "attention", "descriptions": "sentences matching the description"}


def zero_shot_sections(models, source="results.json"):
    """One entry per row of ``results.json`` for the zero-shot section of the report.

    Parameters
    ----------
    models : list of dict
        ``results["models"]``; a row's ``zero_shot`` record is written by
        ``xplant run`` (schema in docs/guide/cli.md, section "The run folder").
    source : str
        Names the file in error messages.

    Returns
    -------
    sections : list of dict
        ``{"name", "status", ...}`` with status ``"missing"`` (no record:
        an older run folder, or a row that failed; ``error`` says why when
        known), ``"none"`` (no zero-shot label in the row's top k) or
        ``"listed"`` (``rows``: one dict of display strings per prediction,
        spans as ``{"start", "end", "text", "weight"}``; the counts).
    any_recorded : bool
        Whether any row has a record (False: the folder predates the listing).

    Raises
    ------
    ValueError
        If a record does not follow the schema.
    """
    sections, any_recorded = [], False
    for i, m in enumerate(models):
        rec = m.get("zero_shot")
        where = f"{source}: models[{i}].zero_shot"
        if rec is None:
            sections.append({"name": m["name"], "status": "missing",
                             "error": str(m.get("zero_shot_error") or "")})
            continue
        any_recorded = True
        if not isinstance(rec, dict) or not isinstance(rec.get("predictions"), list):
            raise ValueError(f"{where} must be an object with a 'predictions' list")
        counts = {key: rec.get(key) for key in ("k", "n_zero_shot_labels", "n_predictions",
                                                "n_documents", "n_correct", "max_listed")}
        for key, v in counts.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ValueError(f"{where}.{key} must be a non-negative integer, got {v!r}")
        rows = []
        for j, p in enumerate(rec["predictions"]):
            if not isinstance(p, dict) or not isinstance(p.get("spans", []), list):
                raise ValueError(f"{where}.predictions[{j}] must be an object with a 'spans' list")
            gold = p.get("gold")
            rows.append({"doc_id": str(p.get("doc_id", "")), "label": str(p.get("label", "")),
                         "description": str(p.get("description") or ""),
                         "gold": "\u2013" if gold is None else ("\u2713" if gold else "\u2717"),
                         "hit": gold is True, "rank": str(p.get("rank", "\u2013")),
                         "score": _number(p.get("score"), 3), "prob": _number(p.get("prob"), 3),
                         "by": EVIDENCE_SOURCES.get(p.get("evidence"), ""),
                         "spans": [_check_span(s, f"{where}.predictions[{j}]")
                                   for s in p.get("spans", [])]})
        n = counts["n_predictions"] if counts["n_predictions"] is not None else len(rows)
        rule = rec.get("rule") or "top_k"           # records written before: the top-k rule
        sections.append({"name": m["name"], "status": "listed" if n else "none", "rows": rows,
                         "where": (f"in the top-k (k = {counts['k']})" if rule == "top_k"
                                   else f"under the {str(rule).replace('_', '-')} rule"),
                         "explained": bool(rec.get("explained", False)),
                         "shown": len(rows), "n_predictions": n,
                         **{key: "\u2013" if v is None else v for key, v in counts.items()
                            if key != "n_predictions"}})
    return sections, any_recorded
