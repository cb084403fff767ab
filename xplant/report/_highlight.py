"""Document text with evidence spans marked, built only from escaped pieces."""

import html

N_COLOURS = 6


def _spans_of(entry, key, doc_label):
    out = []
    for span in entry.get(key) or []:
        if isinstance(span, dict):
            s, e = span.get("start"), span.get("end")
        else:
            s, e = span
        if not isinstance(s, int) or not isinstance(e, int) or isinstance(s, bool) or isinstance(e, bool):
            raise ValueError(f"{doc_label}: span {span!r} of code {entry.get('code')!r} needs integer start and end")
        out.append((s, e))
    return out


def highlight_html(text, codes, *, doc_label="document"):
    """HTML of ``text`` with each code's evidence spans in ``<mark>``.

    Parameters
    ----------
    text : str
        The document text, shown verbatim (escaped).
    codes : sequence of dict
        ``{"code": str, "spans": [{"start", "end", ...} or (start, end)],
        "gold_spans": [...]}`` (``gold_spans`` optional). The i-th code gets
        colour class ``c{i mod 6}``; overlapping spans of several codes are
        marked once, with all their codes in the ``title``. Gold spans are
        underlined (``<span class="gold">``).
    doc_label : str, default="document"
        Names the document in error messages.

    Returns
    -------
    str
        HTML; every piece of ``text`` and every code passes through
        :func:`html.escape`, so the text can never inject markup.

    Raises
    ------
    ValueError
        If a span is not inside the text.

    Examples
    --------
    >>> highlight_html("a <b> c", [{"code": "X1", "spans": [{"start": 2, "end": 5}]}])
    'a <mark class="c0" title="X1">&lt;b&gt;</mark> c'
    """
    n = len(text)
    pred = [_spans_of(c, "spans", doc_label) for c in codes]
    gold = [_spans_of(c, "gold_spans", doc_label) for c in codes]
    bounds = {0, n}
    for spans in pred + gold:
        for s, e in spans:
            if not 0 <= s <= e <= n:
                raise ValueError(f"{doc_label}: span ({s}, {e}) is outside the text of length {n}")
            bounds.update((s, e))
    bounds = sorted(bounds)
    names = [str(c.get("code", "")) for c in codes]
    pieces = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if a == b:
            continue
        chunk = html.escape(text[a:b])
        by_pred = [i for i, spans in enumerate(pred) if any(s <= a and b <= e for s, e in spans)]
        by_gold = [i for i, spans in enumerate(gold) if any(s <= a and b <= e for s, e in spans)]
        if by_gold:
            title = html.escape("gold: " + ", ".join(names[i] for i in by_gold), quote=True)
            chunk = f'<span class="gold" title="{title}">{chunk}</span>'
        if by_pred:
            title = html.escape(", ".join(names[i] for i in by_pred), quote=True)
            chunk = f'<mark class="c{by_pred[0] % N_COLOURS}" title="{title}">{chunk}</mark>'
        pieces.append(chunk)
    return "".join(pieces)
