"""Turn per-token weights (attention or MIG) into character spans of the text."""

import unicodedata

import numpy as np

from .._normal_forms import normalise_code

DEFAULT_RELATIVE_CUT = 0.5


def _is_word_char(ch):
    """Letters, digits, underscore and combining marks belong to words.

    Combining marks (Unicode category ``M*``) are included so that a
    decomposed accent (``"e\\u0301"``) never ends up on its own.
    """
    return ch.isalnum() or ch == "_" or unicodedata.category(ch).startswith("M")


def _snap_to_words(text, start, end):
    """Extend ``[start, end)`` to whole words, then trim non-word edges.

    Returns ``(start, end)``; ``start == end`` when nothing but spaces or
    punctuation was covered.
    """
    n = len(text)
    # extend: never cut a word in two
    while start > 0 and start < n and _is_word_char(text[start - 1]) and _is_word_char(text[start]):
        start -= 1
    while 0 < end < n and _is_word_char(text[end - 1]) and _is_word_char(text[end]):
        end += 1
    # trim: drop spaces and punctuation at both edges
    while start < end and not _is_word_char(text[start]):
        start += 1
    while end > start and not _is_word_char(text[end - 1]):
        end -= 1
    return start, end


def _check_offsets_weights(offsets, weights, text):
    offsets = np.asarray(offsets)
    weights = np.asarray(weights)
    if offsets.ndim != 2 or offsets.shape[1] != 2:
        raise ValueError(f"offsets must have shape (n_tokens, 2), got {offsets.shape}")
    if weights.ndim != 1 or weights.shape[0] != offsets.shape[0]:
        raise ValueError(
            f"weights must have shape (n_tokens,) = ({offsets.shape[0]},) to match offsets, got {weights.shape}"
        )
    if offsets.size and not np.issubdtype(offsets.dtype, np.integer):
        raise TypeError(f"offsets must be integer character offsets, got dtype {offsets.dtype}")
    if not np.issubdtype(weights.dtype, np.number) or np.issubdtype(weights.dtype, np.complexfloating):
        raise TypeError(f"weights must be real numbers, got dtype {weights.dtype}")
    offsets = offsets.astype(np.int64, copy=False)
    weights = weights.astype(np.float64, copy=False)
    if not np.all(np.isfinite(weights)):
        raise ValueError("weights contain NaN or infinity; pass finite attention or relevance values")
    if offsets.size:
        unplaced = (offsets[:, 0] == -1) & (offsets[:, 1] == -1)
        placed = offsets[~unplaced]
        if placed.size and (placed.min() < 0 or np.any(placed[:, 1] < placed[:, 0])):
            raise ValueError("offsets must satisfy 0 <= start <= end for every token (or be (-1, -1): no position)")
    if text is not None:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if offsets.size and offsets[:, 1].max() > len(text):
            raise ValueError(
                f"a token ends at {int(offsets[:, 1].max())}, beyond the text length {len(text)}: "
                "offsets must refer to this text"
            )
    return offsets, weights


def merge_spans(offsets, weights, *, cut=None, top_spans=3, text=None):
    """Merge adjacent high-weight tokens into ranked character spans.

    Parameters
    ----------
    offsets : array-like of int of shape (n_tokens, 2)
        ``[start, end)`` character offsets of each token in the original
        text, in token order. Tokens with ``start == end`` (special tokens,
        padding) are ignored.
    weights : array-like of float of shape (n_tokens,)
        One weight per token: an attention distribution of one label, or
        relevance (MIG, in bits) values.
    cut : float, optional
        Tokens with ``weight >= cut`` are kept. By default the cut is
        ``0.5 * max(weights)`` over the non-empty tokens: a token must have at
        least half the weight of the most attended token (a relative cut works
        for any sequence length, unlike an absolute attention value). When
        the maximum weight is not positive, no span is returned.
    top_spans : int or None, default=3
        Number of spans returned, best first; ``None`` returns all.
    text : str, optional
        The original text. When given, each span is extended so that it
        never cuts a word in two, then trimmed of spaces and punctuation at
        both ends; spans that overlap or touch after this are merged, and
        spans left empty (punctuation only) are dropped. Words are runs of
        letters, digits, ``_`` and combining marks (``str.isalnum`` plus
        Unicode category ``M``), so accents are never split off and an emoji
        is a word boundary.

    Returns
    -------
    list of dict
        At most ``top_spans`` dicts ``{"start", "end", "text", "weight"}``,
        ordered by decreasing weight (ties: earlier span first). ``start`` and
        ``end`` are ``int`` character offsets, end exclusive; ``text`` is
        ``text[start:end]`` (``None`` when ``text`` is not given); ``weight``
        is the **sum** of the weights of the kept tokens in the span, i.e. the
        attention mass it carries.

    Raises
    ------
    ValueError
        If the shapes disagree, an offset is negative, reversed or beyond the
        text, a weight is not finite or ``top_spans < 1``.
    TypeError
        If offsets are not integers or ``text`` is not a string.

    Notes
    -----
    A span is a maximal run of kept tokens that are consecutive in token
    order (:doc:`/guide/evidence`, section "Spans from token weights"); ignored
    tokens (empty or unplaced) never
    break a run, kept tokens below the cut do. Cost is O(n_tokens) vectorised,
    plus O(span characters) for the word snapping.

    Examples
    --------
    >>> text = "Paciente con fiebre alta y tos."
    >>> offsets = [[0, 8], [9, 12], [13, 19], [20, 24], [25, 26], [27, 30], [30, 31]]
    >>> weights = [0.05, 0.05, 0.4, 0.3, 0.02, 0.25, 0.01]
    >>> for s in merge_spans(offsets, weights, text=text):
    ...     print(s["start"], s["end"], s["text"], round(s["weight"], 2))
    13 24 fiebre alta 0.7
    27 30 tos 0.25
    """
    offsets, weights = _check_offsets_weights(offsets, weights, text)
    if top_spans is not None:
        if isinstance(top_spans, bool) or not isinstance(top_spans, (int, np.integer)) or top_spans < 1:
            raise ValueError(f"top_spans must be a positive int or None, got {top_spans!r}")
    nonempty = offsets[:, 1] > offsets[:, 0]  # also drops (-1, -1)
    if not nonempty.any():
        return []
    if cut is None:
        top = weights[nonempty].max()
        if top <= 0:
            return []
        cut = DEFAULT_RELATIVE_CUT * top
    else:
        cut = float(cut)
        if not np.isfinite(cut):
            raise ValueError(f"cut must be a finite number, got {cut!r}")
    keep = nonempty & (weights >= cut)

    # runs of kept tokens, consecutive in token order (empty tokens skipped)
    order = np.flatnonzero(nonempty)
    k = keep[order]
    sel = order[k]
    if sel.size == 0:
        return []
    run_id = (np.cumsum(k & ~np.r_[False, k[:-1]]) - 1)[k]
    first = np.flatnonzero(np.r_[True, run_id[1:] != run_id[:-1]])
    starts = np.minimum.reduceat(offsets[sel, 0], first)
    ends = np.maximum.reduceat(offsets[sel, 1], first)
    masses = np.add.reduceat(weights[sel], first)
    raw = [[int(a), int(b), float(c)] for a, b, c in zip(starts, ends, masses)]

    if text is not None:
        snapped = []
        for s, e, w in raw:
            s, e = _snap_to_words(text, s, e)
            if e > s:
                snapped.append([s, e, w])
        # merge spans that overlap or touch after snapping
        snapped.sort(key=lambda r: (r[0], r[1]))
        raw = []
        for s, e, w in snapped:
            if raw and s <= raw[-1][1]:
                raw[-1][1] = max(raw[-1][1], e)
                raw[-1][2] += w
            else:
                raw.append([s, e, w])

    raw.sort(key=lambda r: (-r[2], r[0]))
    if top_spans is not None:
        raw = raw[:top_spans]
    return [
        {"start": s, "end": e, "text": None if text is None else text[s:e], "weight": w} for s, e, w in raw
    ]


def check_label_lists(labels, n_docs, n_labels):
    """The ``labels`` argument of an ``explain`` method, checked: one int64 array per document.

    Parameters
    ----------
    labels : sequence of sequence of int
        Per document, the label columns to explain.
    n_docs : int
        Documents explained.
    n_labels : int
        Columns of the model (``classes_``).

    Returns
    -------
    list of ndarray of int64

    Raises
    ------
    ValueError
        When ``labels`` does not hold one sequence per document, a sequence
        is not 1-D integers, or a column is outside ``[0, n_labels)``.
    """
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__") \
            or len(labels) != n_docs:
        raise ValueError(f"labels must hold one sequence of label columns per document "
                         f"({n_docs} documents); got {labels!r:.80}")
    out = []
    for i, row in enumerate(labels):
        arr = np.asarray(row)
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise ValueError(f"labels[{i}] must be a 1-D sequence of integer label "
                             f"columns, got {row!r:.80}")
        arr = arr.astype(np.int64)
        if arr.size and (arr.min() < 0 or arr.max() >= n_labels):
            raise ValueError(f"labels[{i}] holds a column outside [0, {n_labels}); "
                             "pass column indices of classes_")
        out.append(arr)
    return out


def _label_rows(label_index):
    """Code -> row; codes are case-insensitive (CodiEsp), so names equal once cased collide."""
    from .._labels import check_label_names
    pairs = (label_index.items() if isinstance(label_index, dict)
             else ((name, i) for i, name in enumerate(label_index)))
    pairs = [(str(k).strip(), int(v)) for k, v in pairs]
    check_label_names([k for k, _ in pairs], case_insensitive=True, what="label_index codes")
    return {normalise_code(k): v for k, v in pairs}


def mig_highlighter(texts_es, offsets, token_ids, relevance, codes_by_doc, label_index, *, top_spans=3, cut=None):
    """The MIG-only evidence baseline: highlight a label's top-MIG tokens.

    For each document and each of its codes, every token of the document
    gets the weight ``relevance[label, token_id]`` (its mutual information
    gain with the label, 0 for tokens outside the label's top-k), and the
    weights are merged into spans by :func:`merge_spans`, with the same cut
    and word snapping as the attention spans. No neural network is involved;
    it shows how much of the evidence a lexical lookup already finds.

    Parameters
    ----------
    texts_es : sequence of str of length n_docs
        The original (Spanish) texts.
    offsets : sequence of array-like of int of shape (n_tokens_i, 2)
        Character offsets of each document's tokens in its text.
    token_ids : sequence of array-like of int of shape (n_tokens_i,)
        The token ids, in the vocabulary of ``relevance``'s columns (UNK
        tokens have relevance 0 everywhere).
    relevance : sparse matrix of shape (n_labels, n_vocabulary)
        MIG values, e.g. ``MIGRelevance.relevance_``.
    codes_by_doc : sequence of sequence of str of length n_docs
        The codes to explain for each document (typically the correctly
        predicted ones).
    label_index : mapping of str to int, or sequence of str
        Code -> row of ``relevance``; a sequence is read as the label names
        in row order. Codes are matched case-insensitively.
    top_spans : int or None, default=3
        Spans kept per (document, code).
    cut : float, optional
        Passed to :func:`merge_spans`; by default half the largest MIG of the
        label in the document.

    Returns
    -------
    list of list of dict
        Per document, one ``{"code": str, "spans": [span dicts]}`` per code
        in ``codes_by_doc`` order, spans as returned by :func:`merge_spans`
        (weights in MIG units); a code none of whose top tokens occurs in the
        document gets no spans.

    Raises
    ------
    ValueError
        If the lengths disagree, a token id is outside the vocabulary or a
        code is not in ``label_index``.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> rel = sp.csr_matrix([[0.0, 0.9, 0.0, 0.6], [0.3, 0.0, 0.0, 0.0]])
    >>> text = "tos y fiebre"
    >>> out = mig_highlighter([text], [[[0, 3], [4, 5], [6, 12]]], [[3, 2, 1]], rel, [["R50.9"]], ["R50.9", "R05"])
    >>> [(s["text"], round(s["weight"], 1)) for s in out[0][0]["spans"]]
    [('fiebre', 0.9), ('tos', 0.6)]
    """
    import scipy.sparse as sp

    n = len(texts_es)
    for name, seq in (("offsets", offsets), ("token_ids", token_ids), ("codes_by_doc", codes_by_doc)):
        if len(seq) != n:
            raise ValueError(f"{name} has {len(seq)} entries but texts_es has {n}: give one per document")
    if not sp.issparse(relevance):
        relevance = sp.csr_matrix(np.asarray(relevance, dtype=np.float64))
    relevance = sp.csr_matrix(relevance)
    if not relevance.has_canonical_format:
        relevance = relevance.copy()
        relevance.sum_duplicates()
    n_labels, n_vocab = relevance.shape
    rows = _label_rows(label_index)
    out = []
    for i in range(n):
        ids = np.asarray(token_ids[i])
        if ids.ndim != 1:
            raise ValueError(f"token_ids[{i}] must be 1-D, got shape {ids.shape}")
        if ids.size and (not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= n_vocab):
            raise ValueError(
                f"token_ids[{i}] must be integers in [0, {n_vocab}), the columns of relevance "
                "(tokenize with the same vocabulary)"
            )
        doc = []
        for code in codes_by_doc[i]:
            key = normalise_code(str(code))
            if key not in rows:
                raise ValueError(f"code {code!r} of document {i} is not in label_index")
            row = rows[key]
            if not 0 <= row < n_labels:
                raise ValueError(f"label_index maps {code!r} to row {row}, outside relevance's {n_labels} rows")
            lo, hi = relevance.indptr[row], relevance.indptr[row + 1]
            cols, vals = relevance.indices[lo:hi], relevance.data[lo:hi]
            order = np.argsort(cols, kind="stable")
            cols, vals = cols[order], vals[order]
            weights = np.zeros(ids.size)
            if len(cols):
                pos = np.minimum(np.searchsorted(cols, ids), len(cols) - 1)
                weights = np.where(cols[pos] == ids, vals[pos], 0.0)
            offs = np.asarray(offsets[i])
            if offs.size == 0:
                offs = np.zeros((0, 2), dtype=np.int64)
            spans = merge_spans(offs, weights, cut=cut, top_spans=top_spans, text=texts_es[i])
            doc.append({"code": str(code), "spans": spans})
        out.append(doc)
    return out
