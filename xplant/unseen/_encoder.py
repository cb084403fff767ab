"""Sentence embeddings for the description source (torch and transformers, imported on use)."""

import functools
import os

import numpy as np

from ..relevance._tokenize import load_hf_tokenizer, no_progress_bars, resolve_hf_path


@functools.lru_cache(maxsize=2)
def _sentence_model(path):
    """The tokenizer and the model of a local folder, loaded once per process."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import torch  # noqa: F401
        from transformers import AutoModel
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("A sentence encoder needs the packages 'torch' and 'transformers': "
                          "pip install 'xplant[neural,pretrained]'") from exc
    with no_progress_bars():                   # --quiet stays quiet
        model = AutoModel.from_pretrained(path).eval()
    return load_hf_tokenizer(path), model


def encode_texts(texts, spec="minilm", *, max_length=128, batch_size=64):
    """Mean-pooled, L2-normalised embeddings of short texts (sentences, label titles).

    The sentence-embedding recipe of Sentence-BERT (Reimers and Gurevych,
    EMNLP 2019), for which the bundled all-MiniLM-L6-v2 was trained: the
    mean of the last hidden states over a text's real tokens, scaled to unit
    length, so the dot product of two embeddings is their cosine. Texts are
    encoded in batches of similar length (sorted by token count, each batch
    padded only to its longest text), in float32 and without gradients; the
    result does not depend on the order or batching of ``texts`` beyond
    float32 rounding.

    Parameters
    ----------
    texts : sequence of str
        The texts; each is cut to ``max_length`` subword tokens (with its
        [CLS] and [SEP]).
    spec : str, default="minilm"
        ``"minilm"`` / ``"hf"`` (the bundled MiniLM-L6) or ``"hf:<folder>"``
        (``"hf:<folder>"`` must hold a ``config.json``).
    max_length : int, default=128
        Subword tokens per text, special tokens included.
    batch_size : int, default=64
        Texts per forward pass.

    Returns
    -------
    ndarray of shape (n_texts, hidden_size), dtype float32
        Unit rows (a text with no token but [CLS] and [SEP] still gets the
        mean of those two).

    Raises
    ------
    FileNotFoundError
        When ``spec`` names no local model folder.
    ImportError
        Without transformers or, for ``"minilm"``, the bundled weights.
    """
    import torch
    tok, model = _sentence_model(resolve_hf_path(spec))
    texts = list(texts)
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    if not texts:
        return out
    enc = tok(texts, truncation=True, max_length=int(max_length))
    ids, att = enc["input_ids"], enc["attention_mask"]
    order = np.argsort([len(x) for x in ids], kind="stable")
    with torch.inference_mode():
        for lo in range(0, len(texts), int(batch_size)):
            rows = order[lo:lo + int(batch_size)]
            batch = tok.pad({"input_ids": [ids[i] for i in rows],
                             "attention_mask": [att[i] for i in rows]}, return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1)
            out[rows] = torch.nn.functional.normalize(mean, dim=1).numpy()
    return out
