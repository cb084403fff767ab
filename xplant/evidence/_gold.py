"""Gold evidence as data: per document and label, the character spans that justify the label.

One form and one check serve every source (a user's JSON lines, CodiEsp-X,
an estimator's ``evidence=`` argument): :func:`check_evidence`.
"""

import numbers

from .._normal_forms import normalize_label

#: How the messages show the field (the JSON lines form of a user's files).
EVIDENCE_EXAMPLE = ('"evidence": [{"label": "N44.8", "spans": [[1343, 1376]]}, '
                    '{"label": "R60.9", "spans": [[10, 22], [40, 51]]}]')


def _span(value, n_chars, where):
    """One ``[start, end]`` pair, checked against a text of ``n_chars`` characters."""
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value)):
        raise ValueError(f"{where}: a span is a pair of integers [start, end], got {value!r}; "
                         f"write the field as {EVIDENCE_EXAMPLE}")
    start, end = int(value[0]), int(value[1])
    if start < 0 or end < start:
        raise ValueError(f"{where}: span {[start, end]} needs 0 <= start <= end (offsets are "
                         "Python string indices into the text, end exclusive)")
    if end > n_chars:
        raise ValueError(f"{where}: span {[start, end]} ends after the text ({n_chars} "
                         "characters); offsets index the text field, in code points, end "
                         "exclusive: fix the offsets or the text")
    return start, end


def check_evidence(evidence, texts, labels, *, where=None, upper=False):
    """Validate gold evidence against its documents; return it in the one form xplant reads.

    A document's evidence is a list of mentions, each ``{"label": name,
    "spans": [[start, end], ...]}``: a mention may be discontinuous (several
    spans, in text order as written). Offsets are Python string indices
    (code points) into the document's text, the end exclusive.

    Parameters
    ----------
    evidence : sequence of length n_docs
        Each document's mentions: a list (possibly empty) or None (no
        evidence for that document).
    texts : sequence of str of length n_docs
        The texts the offsets index.
    labels : sequence of length n_docs
        Each document's labels (a collection of names, or of column
        indices): a mention's label must be one of them.
    where : sequence of str or None, default=None
        Where each document was read (``"train.jsonl, line 3"``), to start
        its messages; default ``"evidence[i]"``.
    upper : bool, default=False
        Upper-case the labels, as the documents' labels were (``--upper``).
        Names are read in Unicode NFC, as every label name.

    Returns
    -------
    checked : list of list of (label, tuple of (int, int))
        Per document, its mentions as ``(label, spans)``; spans with
        start = end are dropped, and a mention left with no span with it.
    record : dict
        ``n_mentions`` (kept), ``n_spans``, ``n_discontinuous`` (mentions
        of several spans), ``n_empty_spans_dropped`` and
        ``n_documents_with_evidence``.

    Raises
    ------
    ValueError
        A document's evidence that is not a list, a mention that is not an
        object with ``label`` and ``spans``, ``spans`` that is not a
        non-empty list of ``[start, end]`` integer pairs, a span with
        ``end < start`` or outside the text, or a label that is not among
        the document's labels; the message names the document (its file
        and line) and the fix. Raised before anything is fitted.

    Examples
    --------
    >>> ev, rec = check_evidence([[{"label": "R50.9", "spans": [[4, 10], [7, 7]]}]],
    ...                          ["Sin fiebre"], [["R50.9"]])
    >>> ev, rec["n_empty_spans_dropped"]
    ([[('R50.9', ((4, 10),))]], 1)
    """
    if len(evidence) != len(texts) or len(labels) != len(texts):
        raise ValueError(f"evidence has {len(evidence)} entries for {len(texts)} documents; give "
                         "one list (possibly empty) per document")
    record = {"n_mentions": 0, "n_spans": 0, "n_discontinuous": 0, "n_empty_spans_dropped": 0,
              "n_documents_with_evidence": 0}
    out = []
    for i, (mentions, text) in enumerate(zip(evidence, texts)):
        at = where[i] if where is not None else f"evidence[{i}]"
        if mentions is None:
            out.append([])
            continue
        if not isinstance(mentions, (list, tuple)):
            raise ValueError(f"{at}: the evidence field must be a list of mentions, got "
                             f"{type(mentions).__name__} {mentions!r}; write it as "
                             f"{EVIDENCE_EXAMPLE}")
        own = {normalize_label(lab) if isinstance(lab, str) else lab for lab in labels[i]}
        doc = []
        for mention in mentions:
            if not isinstance(mention, dict) or set(mention) != {"label", "spans"}:
                raise ValueError(f"{at}: each mention is an object with exactly the fields "
                                 f"'label' and 'spans', got {mention!r}; write the field as "
                                 f"{EVIDENCE_EXAMPLE}")
            label, spans = mention["label"], mention["spans"]
            if isinstance(label, str):
                label = normalize_label(label.strip().upper() if upper else label)
            if label not in own:
                raise ValueError(f"{at}: evidence for label {label!r}, which the document does "
                                 f"not carry (its labels: {sorted(map(str, own))}); add the "
                                 "label to the document's labels or drop the mention")
            if not isinstance(spans, (list, tuple)) or not spans:
                raise ValueError(f"{at}: 'spans' of label {label!r} must be a non-empty list of "
                                 f"[start, end] pairs, got {spans!r}")
            pairs = [_span(s, len(text), f"{at}, label {label!r}") for s in spans]
            kept = tuple(p for p in pairs if p[1] > p[0])
            record["n_empty_spans_dropped"] += len(pairs) - len(kept)
            if kept:
                doc.append((label, kept))
                record["n_spans"] += len(kept)
                record["n_discontinuous"] += len(kept) > 1
        record["n_mentions"] += len(doc)
        record["n_documents_with_evidence"] += bool(doc)
        out.append(doc)
    return out, record
