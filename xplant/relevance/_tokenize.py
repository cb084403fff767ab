"""Tokenizers for MIGRelevance: built-in words, any callable, Hugging Face.

Offsets are always character offsets ``[start, end)`` into the original
text, so that ``text[start:end]`` is the token as written.
"""

import hashlib
import json
import os
import re

import numpy as np

#: The built-in word tokenizer's pattern: runs of Unicode word characters.
WORD_PATTERN = r"\w+"
_WORD_RE = re.compile(WORD_PATTERN)

PAD_TOKEN = "<pad>"
UNK_TOKEN = "<unk>"


def is_hf_tokenizer(obj):
    """True for a Hugging Face tokenizer object (duck-typed, no import)."""
    return (
        not isinstance(obj, str)
        and hasattr(obj, "get_vocab")
        and hasattr(obj, "convert_tokens_to_ids")
        and callable(obj)
    )


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
            "pip install 'xplant[neural]'."
        ) from exc
    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def resolve_tokenizer(spec):
    """Return ``(kind, tokenizer)`` for a ``tokenizer`` parameter value.

    ``kind`` is ``"word"``, ``"callable"`` or ``"hf"``.

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
        raise ValueError(
            f"tokenizer={spec!r} is not understood. Use 'word', 'hf:<local folder>', "
            "a Hugging Face tokenizer object, or a callable str -> list of str."
        )
    if is_hf_tokenizer(spec):
        return "hf", spec
    if callable(spec):
        return "callable", spec
    raise ValueError(
        f"tokenizer must be 'word', 'hf:<local folder>', a Hugging Face tokenizer or a "
        f"callable str -> list of str; got {type(spec).__name__}."
    )


def word_tokens(text, lowercase):
    """Word tokens of ``text`` (regex ``\\w+``), lowercased one by one.

    >>> word_tokens("Héllo, WORLD_1 x", True)
    ['héllo', 'world_1', 'x']
    """
    toks = _WORD_RE.findall(text)
    if lowercase:
        toks = [t.lower() for t in toks]
    return toks


def word_tokens_offsets(text, lowercase):
    """Word tokens and their ``[start, end)`` offsets in the original text.

    The regex runs over the original text and each match is lowercased
    afterwards, so offsets stay exact even where lowercasing changes length.

    >>> toks, off = word_tokens_offsets("İstanbul ok", True)
    >>> off.tolist(), "İstanbul ok"[off[0, 0]:off[0, 1]]
    ([[0, 8], [9, 11]], 'İstanbul')
    """
    toks, spans = [], []
    for m in _WORD_RE.finditer(text):
        t = m.group()
        toks.append(t.lower() if lowercase else t)
        spans.append(m.span())
    off = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    return toks, off


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
    tokenizer : "word", callable, Hugging Face tokenizer, or "hf:<folder>"
        The tokenizer. An ``"hf:<folder>"`` string is loaded first.
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
    if is_hf_tokenizer(tokenizer):
        name = os.path.basename(os.path.normpath(str(getattr(tokenizer, "name_or_path", "") or "")))
        return f"hf:{name or type(tokenizer).__name__}:{vocabulary_hash(tokenizer.get_vocab())}"
    vh = vocabulary_hash(vocabulary or {})
    case = "lower" if lowercase else "cased"
    if tokenizer == "word":
        return f"word:{WORD_PATTERN}:{case}:{vh}"
    qual = f"{getattr(tokenizer, '__module__', '?')}.{getattr(tokenizer, '__qualname__', type(tokenizer).__qualname__)}"
    return f"callable:{qual}:{case}:{vh}"
