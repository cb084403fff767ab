"""Score predicted evidence spans against CodiEsp-X gold evidence."""

import re
from collections import defaultdict

from .._normal_forms import normalise_code

_WORD = re.compile(r"\w+")


def _as_span(span, where):
    """(start, end) from a tuple/list or a dict with ``start``/``end``."""
    if isinstance(span, dict):
        try:
            s, e = span["start"], span["end"]
        except KeyError:
            raise ValueError(f"{where}: a span dict needs 'start' and 'end', got keys {sorted(span)}") from None
    else:
        try:
            s, e = span
        except (TypeError, ValueError):
            raise ValueError(f"{where}: a span must be (start, end) or a dict, got {span!r}") from None
    if isinstance(s, bool) or isinstance(e, bool):
        raise ValueError(f"{where}: bad span {span!r}")
    try:
        s, e = int(s), int(e)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: span offsets must be integers, got {span!r}") from None
    if not 0 <= s <= e:
        raise ValueError(f"{where}: span {span!r} must satisfy 0 <= start <= end")
    return s, e


def _group(records, name):
    """{(id, code): [spans per record]} from prediction or gold records."""
    out = defaultdict(list)
    for i, rec in enumerate(records):
        where = f"{name}[{i}]"
        try:
            doc, code, spans = rec["id"], rec["code"], rec["spans"]
        except (KeyError, TypeError):
            raise ValueError(f"{where}: each record must be a dict with 'id', 'code' and 'spans'") from None
        key = (str(doc), normalise_code(code, where=where))
        out[key].append([_as_span(s, where) for s in spans])
    return out


def _contains(pred, gold, slack):
    """CodiEsp-X rule: ``pred`` holds ``gold`` with at most ``slack`` extra characters per side."""
    return 0 <= gold[0] - pred[0] <= slack and 0 <= pred[1] - gold[1] <= slack


def _char_set(spans):
    chars = set()
    for s, e in spans:
        chars.update(range(s, e))
    return chars


def _word_set(spans, text):
    """Indices of the words (``\\w+`` runs) of ``text`` that overlap any span."""
    words = set()
    for k, m in enumerate(_WORD.finditer(text)):
        ws, we = m.span()
        if any(s < we and ws < e for s, e in spans):
            words.add(k)
    return words


def _prf(tp_p, n_p, tp_r, n_r):
    p = tp_p / n_p if n_p else 0.0
    r = tp_r / n_r if n_r else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def score_evidence(predicted, gold, *, slack=10, discontinuous="hull", unit="char", texts=None):
    """Evidence precision, recall and F1 of predicted spans against CodiEsp-X.

    Parameters
    ----------
    predicted : iterable of dict
        One dict per predicted (document, code): ``id``, ``code`` and
        ``spans``, a list of ``(start, end)`` pairs or of span dicts with
        ``start``/``end`` (as returned by :func:`merge_spans`). Offsets are
        characters of the Spanish text, end exclusive. Several dicts with the
        same (id, code) are pooled.
    gold : iterable of dict
        CodiEsp-X records as returned by
        :func:`xplant.datasets.load_codiesp_evidence`: ``id``, ``code`` and
        ``spans`` (one gold reference per record; several pieces when the
        reference is discontinuous). A code may have several references.
    slack : int, default=10
        Characters of slack allowed on each side (CodiEsp-X uses 10).
    discontinuous : {"hull", "pieces"}, default="hull"
        How a discontinuous gold reference ``"s1 e1;s2 e2"`` is matched.
        ``"hull"`` (the official CodiEsp-X script): it is one interval from
        its first start to its last end, ``[min s, max e)``. ``"pieces"``:
        it is matched when every piece is contained (with slack) by some
        predicted span, not necessarily the same one.
    unit : {"char", "word"}, default="char"
        Unit of the token-overlap scores: characters, or words (``\\w+``
        runs of the text, which needs ``texts``). A word counts as covered
        when it overlaps a span.
    texts : mapping of str to str, optional
        Document id -> Spanish text; required for ``unit="word"``.

    Returns
    -------
    dict
        Only (document, code) pairs present in **both** ``predicted`` and
        ``gold`` are scored (the codes predicted correctly); the others are
        counted but not scored. Keys:

        - ``precision``, ``recall``, ``f1`` - span level, micro-averaged over
          the scored pairs: precision is the fraction of predicted spans that
          contain at least one gold reference of their (document, code) with
          at most ``slack`` characters on each side; recall is the fraction
          of gold references contained by at least one predicted span.
        - ``hit_rate`` - the fraction of scored pairs where some predicted
          span matches some gold reference: the CodiEsp-X true-positive rule
          ("in case a code has several references, acknowledging one is
          enough"), restricted to correct codes.
        - ``codiesp_x_precision``, ``codiesp_x_recall``, ``codiesp_x_f1`` -
          the official CodiEsp-X figures when ``predicted`` holds *every*
          predicted code: TP = pairs hit as above, divided by the number of
          distinct predicted pairs and of distinct gold pairs.
        - ``token_precision``, ``token_recall``, ``token_f1`` - overlap of
          the units (characters or words) covered by the union of the
          predicted spans with those covered by the union of the gold pieces
          (pieces, never the hull), per scored pair, summed over pairs
          (micro-average).
        - ``n_pairs`` (scored), ``n_predicted_pairs``, ``n_gold_pairs``,
          ``n_predicted_spans``, ``n_gold_references`` (in scored pairs).

        Every ratio with an empty denominator is 0.0.

    Raises
    ------
    ValueError
        If a record lacks ``id``, ``code`` or ``spans``, a span is malformed,
        ``slack`` is negative or an option is unknown.

    Notes
    -----
    Codes are compared case-insensitively (upper-cased). The matching rule
    is that of the CodiEsp-X evaluation script (Miranda-Escalada et al.,
    CLEF eHealth 2020): a predicted position ``[ps, pe)`` matches a gold
    reference ``[gs, ge)`` when ``0 <= gs - ps <= slack`` and
    ``0 <= pe - ge <= slack``. The official task takes one position per
    prediction row; here a code may carry several spans and each is judged
    on its own.

    Examples
    --------
    >>> gold = [{"id": "d1", "code": "R50.9", "spans": [(10, 16)]}]
    >>> pred = [{"id": "d1", "code": "r50.9", "spans": [(8, 21), (30, 35)]}]
    >>> s = score_evidence(pred, gold)
    >>> s["precision"], s["recall"], s["hit_rate"]
    (0.5, 1.0, 1.0)
    >>> round(s["token_precision"], 3), s["token_recall"]
    (0.333, 1.0)
    """
    if isinstance(slack, bool) or not isinstance(slack, int) or slack < 0:
        raise ValueError(f"slack must be a non-negative int (characters), got {slack!r}")
    if discontinuous not in ("hull", "pieces"):
        raise ValueError(f"discontinuous must be 'hull' or 'pieces', got {discontinuous!r}")
    if unit not in ("char", "word"):
        raise ValueError(f"unit must be 'char' or 'word', got {unit!r}")
    if unit == "word" and texts is None:
        raise ValueError("unit='word' needs texts={doc_id: text} to find the words")

    pred = _group(predicted, "predicted")
    gold_g = _group(gold, "gold")
    pred = {k: [s for group in v for s in group] for k, v in pred.items()}  # pool spans
    refs_by_pair = {k: [r for r in v if r] for k, v in gold_g.items()}  # drop empty references

    n_pred_spans = n_pred_ok = n_refs = n_refs_ok = hits = 0
    tp_units = n_pred_units = n_gold_units = 0
    scored = sorted(set(pred) & set(refs_by_pair))
    for key in scored:
        pspans, refs = pred[key], refs_by_pair[key]
        if discontinuous == "hull":
            hulls = [(min(s for s, _ in r), max(e for _, e in r)) for r in refs]
            match = [[_contains(p, h, slack) for h in hulls] for p in pspans]
            ref_ok = [any(row[j] for row in match) for j in range(len(refs))]
            pred_ok = [any(row) for row in match]
        else:
            ref_ok = [all(any(_contains(p, piece, slack) for p in pspans) for piece in r) for r in refs]
            # a predicted span is correct when it holds a piece of a matched reference
            pred_ok = [
                any(ok and any(_contains(p, piece, slack) for piece in r) for r, ok in zip(refs, ref_ok))
                for p in pspans
            ]
        n_pred_spans += len(pspans)
        n_pred_ok += sum(pred_ok)
        n_refs += len(refs)
        n_refs_ok += sum(ref_ok)
        hits += any(ref_ok)

        gold_pieces = [piece for r in refs for piece in r]
        if unit == "char":
            pu, gu = _char_set(pspans), _char_set(gold_pieces)
        else:
            doc = key[0]
            if doc not in texts:
                raise ValueError(f"texts has no entry for document {doc!r} (needed for unit='word')")
            pu, gu = _word_set(pspans, texts[doc]), _word_set(gold_pieces, texts[doc])
        tp_units += len(pu & gu)
        n_pred_units += len(pu)
        n_gold_units += len(gu)

    p, r, f = _prf(n_pred_ok, n_pred_spans, n_refs_ok, n_refs)
    tp, tr, tf = _prf(tp_units, n_pred_units, tp_units, n_gold_units)
    xp, xr, xf = _prf(hits, len(pred), hits, len(gold_g))
    return {
        "precision": p,
        "recall": r,
        "f1": f,
        "hit_rate": hits / len(scored) if scored else 0.0,
        "codiesp_x_precision": xp,
        "codiesp_x_recall": xr,
        "codiesp_x_f1": xf,
        "token_precision": tp,
        "token_recall": tr,
        "token_f1": tf,
        "n_pairs": len(scored),
        "n_predicted_pairs": len(pred),
        "n_gold_pairs": len(gold_g),
        "n_predicted_spans": n_pred_spans,
        "n_gold_references": n_refs,
    }
