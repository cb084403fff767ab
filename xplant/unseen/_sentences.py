"""The package's one sentence rule: where a document is cut into sentences.

Used by the description ranker's sentence passages, the sentence encoder's
best-part cosines and the unseen-code channel's matching sentence.
"""

import re

#: Where a document is cut into sentences: after ., ;, :, ! or ? followed by
#: white space, and at every line break.
_SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+|\n+")


def sentence_spans(text):
    r"""Character offsets ``(start, end)`` of the non-blank sentences of ``text``.

    The one sentence rule of the package: a text is cut by
    :data:`_SENTENCE_END`, after sentence punctuation followed by white space
    and at line breaks, which is what clinical notes and legal articles mark
    their statements with. It is a plain rule, not a linguistic sentence
    splitter; the white space that cuts is in no sentence.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of tuple (int, int)
        ``text[start:end]`` is a sentence; at least one item (a text with no
        sentence end is one sentence, an empty or blank text gives
        ``[(0, len(text))]``).

    Examples
    --------
    >>> sentence_spans("Fever since May. No cough;\nchest pain")
    [(0, 16), (17, 26), (27, 37)]
    """
    spans, start = [], 0
    for cut in _SENTENCE_END.finditer(text):
        if text[start:cut.start()].strip():
            spans.append((start, cut.start()))
        start = cut.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans or [(0, len(text))]


def split_sentences(text):
    r"""The non-blank sentences of ``text``: the texts of :func:`sentence_spans`.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
        At least one item: a text with no sentence end is one sentence
        (an empty text gives ``[""]``).

    Examples
    --------
    >>> split_sentences("Fever since May. No cough;\nchest pain")
    ['Fever since May.', 'No cough;', 'chest pain']
    """
    return [text[a:b] for a, b in sentence_spans(text)]
