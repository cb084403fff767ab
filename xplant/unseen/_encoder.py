"""Sentence embeddings for the description source (torch and transformers, imported on use)."""

import functools
import os

import numpy as np

from .._progress import no_progress_bars
from ..relevance._tokenize import load_hf_tokenizer, resolve_hf_path


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


#: The values of ``precision`` of :func:`encode_texts`.
PRECISIONS = ("auto", "float32", "bfloat16")


def encoder_precision(precision="auto"):
    """The number format the sentence encoder's matrix products run in on this machine.

    ``"auto"`` is ``"bfloat16"`` where the CPU multiplies bfloat16 natively
    (AVX-512 BF16 or AMX tiles, and PyTorch's kernels at the AVX-512 level,
    so ``ATEN_CPU_CAPABILITY=avx2`` turns it off), where it runs the encoder
    2.5 to 3 times faster than float32 (:doc:`/benchmarks/speed`, "bfloat16
    sentence encoding"); elsewhere ``"float32"``, since emulated bfloat16 is
    slower than float32.

    Parameters
    ----------
    precision : {"auto", "float32", "bfloat16"}, default="auto"
        A format asked for; ``"auto"`` is resolved as above, the others are
        returned as they are.

    Returns
    -------
    {"float32", "bfloat16"}
        The format the products run in.

    Raises
    ------
    ValueError
        For any other value.

    Examples
    --------
    >>> encoder_precision("float32")
    'float32'
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}; got {precision!r}")
    if precision != "auto":
        return precision
    import torch
    cpu = getattr(torch, "cpu", None)
    native = any(getattr(cpu, name, lambda: False)() for name in
                 ("_is_avx512_bf16_supported", "_is_amx_tile_supported"))
    return "bfloat16" if native and torch.backends.cpu.get_cpu_capability() == "AVX512" \
        else "float32"


def encode_texts(texts, spec="minilm", *, max_length=128, batch_size=64, progress=None,
                 precision="auto"):
    """Mean-pooled, L2-normalised embeddings of short texts (sentences, label titles).

    The sentence-embedding recipe of Sentence-BERT (Reimers and Gurevych,
    EMNLP 2019), for which the bundled all-MiniLM-L6-v2 was trained: the
    mean of the last hidden states over a text's real tokens, scaled to unit
    length, so the dot product of two embeddings is their cosine. Texts are
    encoded in batches of similar length (sorted by token count, each batch
    padded only to its longest text), without gradients; the result does
    not depend on the order or batching of ``texts`` beyond rounding. The
    matrix products run in ``precision`` (:func:`encoder_precision`): in
    bfloat16 (torch's CPU autocast, layer norms and the pooling in float32)
    an embedding's cosine to its float32 twin is above 0.9999 on the
    catalogue's names and CodiEsp's sentences.

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
    progress : str or None, default=None
        Show a progress bar (one line per tenth on a log) under this title;
        None shows nothing.
    precision : {"auto", "float32", "bfloat16"}, default="auto"
        The matrix products' number format (:func:`encoder_precision`).

    Returns
    -------
    ndarray of shape (n_texts, hidden_size), dtype float32
        Unit rows (a text with no token but [CLS] and [SEP] still gets the
        mean of those two).

    Raises
    ------
    FileNotFoundError
        When ``spec`` names no local model folder.
    ValueError
        For an unknown ``precision``.
    ImportError
        Without transformers or, for ``"minilm"``, the bundled weights.
    """
    import contextlib
    import torch
    bf16 = encoder_precision(precision) == "bfloat16"
    tok, model = _sentence_model(resolve_hf_path(spec))
    texts = list(texts)
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    if not texts:
        return out
    enc = tok(texts, truncation=True, max_length=int(max_length))
    ids, att = enc["input_ids"], enc["attention_mask"]
    order = np.argsort([len(x) for x in ids], kind="stable")
    starts = range(0, len(texts), int(batch_size))
    if progress is not None:
        from .._progress import quiet, steps
        starts = steps(starts, progress, verbose=0 if quiet() else 1, every=max(1, len(starts) // 10))
    cast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with torch.inference_mode():
        for lo in starts:
            rows = order[lo:lo + int(batch_size)]
            batch = tok.pad({"input_ids": [ids[i] for i in rows],
                             "attention_mask": [att[i] for i in rows]}, return_tensors="pt")
            with cast:
                hidden = model(**batch).last_hidden_state.float()
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1)
            out[rows] = torch.nn.functional.normalize(mean, dim=1).numpy()
    return out


def sentence_embeddings(texts, spec="minilm"):
    """The encoder's embeddings of every sentence of every document, and where each document's start.

    The one place where documents are cut into sentences and encoded
    (:func:`~xplant.unseen._sentences.split_sentences`, then
    :func:`encode_texts`): the description ranker and the catalogue index
    both read it, and the last two calls are kept (keyed by a digest of the
    texts, the encoder and :func:`encoder_precision`), so fitting on dev and
    scoring dev, or the ranker and the catalogue scoring the same
    documents, encode them once.

    Parameters
    ----------
    texts : list of str of length n
        Raw documents.
    spec : str, default="minilm"
        The encoder (:func:`encode_texts`).

    Returns
    -------
    embeddings : ndarray of shape (n_sentences, hidden_size), dtype float32
        Read-only: it is shared with the next caller.
    offsets : ndarray of int64 of shape (n + 1,)
        Document i's sentences are rows ``offsets[i]:offsets[i + 1]``.
    """
    import hashlib
    from ._sentences import split_sentences
    key = hashlib.sha256(("\x01".join([str(spec), encoder_precision()] + list(texts))).encode(
        "utf-8", "surrogatepass")).hexdigest()
    for k, value in _SENTENCE_MEMO:
        if k == key:
            return value
    sents = [split_sentences(t) for t in texts]
    E = encode_texts([x for doc in sents for x in doc], spec)
    E.setflags(write=False)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in sents])]).astype(np.int64)
    _SENTENCE_MEMO.insert(0, (key, (E, offsets)))
    del _SENTENCE_MEMO[2:]
    return E, offsets


#: The last calls of :func:`sentence_embeddings` (key, result), newest first.
_SENTENCE_MEMO = []


def best_part_cosines(E, parts, owner, n_labels):
    """(m, n_labels): each label's highest cosine between a row of ``E`` and its parts' embeddings.

    The one rule of an encoder score of a label with several names: its
    description and each synonym are embedded alone (a synonym is not diluted
    by the others) and the best-matching one counts.

    Parameters
    ----------
    E : ndarray of shape (m, d)
        Unit embeddings (sentences).
    parts : ndarray of shape (n_parts, d)
        Unit embeddings of the labels' parts (any float dtype; computed in float32).
    owner : ndarray of int64 of shape (n_parts,)
        The label of each part, ascending.
    n_labels : int

    Returns
    -------
    ndarray of float32 of shape (m, n_labels)
        0 for a label without a part.

    Examples
    --------
    >>> E = np.array([[1.0, 0.0]])
    >>> parts = np.array([[0.6, 0.8], [1.0, 0.0], [0.0, 1.0]])
    >>> best_part_cosines(E, parts, np.array([0, 0, 2]), 3).tolist()
    [[1.0, 0.0, 0.0]]
    """
    E = np.asarray(E, dtype=np.float32)
    out = np.zeros((E.shape[0], int(n_labels)), dtype=np.float32)
    labels, starts = np.unique(np.asarray(owner), return_index=True)
    if labels.size and E.shape[0]:
        P = E @ np.asarray(parts, dtype=np.float32).T
        out[:, labels] = np.maximum.reduceat(P, starts, axis=1)
    return out


#: Texts :func:`cached_embeddings` encodes together (tokenized at once, sorted by length).
_ENCODE_CHUNK = 4096


def cached_embeddings(texts, spec="minilm", *, what="label names"):
    """:func:`encode_texts` of many short texts, computed once and kept in the package's cache.

    A label catalogue's names (about 110,000 for ICD-10-CM with its
    synonyms) take minutes to encode on a CPU; they are encoded once per
    catalogue version and encoder, with a progress bar, and stored as float16
    in ``<cache>/embeddings/<digest>.safetensors``
    (:func:`xplant._cache.cache_folder`; 384 dimensions take 768 bytes a
    text, 84 MB for ICD-10-CM). An entry is the **set** of distinct texts,
    sorted and encoded in that order: the order of ``texts`` and their
    repeats do not matter, so fits whose label spaces list the same
    catalogue in another order (another training split puts its own codes
    first) read one entry, and the embeddings are a function of the set
    alone (the same bits whatever was cached before). The digest covers the
    encoder folder's weights file names and sizes, the settings (with
    :func:`encoder_precision`, so a machine that encodes in bfloat16 never
    reads float32 entries, nor the reverse) and every distinct text, so a
    new release of the catalogue, a code outside it whose name joins the
    set, or another encoder is a new entry. An entry
    is checked against the SHA-256 of its embeddings, stored in its header
    (:func:`xplant._cache.read_entry`): a damaged one, even inside its data,
    is computed again and replaced, and an entry is written under a
    temporary name and renamed, so no reader sees half of one.

    Parameters
    ----------
    texts : sequence of str
        The texts to embed, each a label's name or synonym; each item is
        turned into ``str``. Row i of the result is text i's embedding.
    spec : str, default="minilm"
        The encoder (:func:`encode_texts`).
    what : str, default="label names"
        What the texts are, for the progress bar.

    Returns
    -------
    ndarray of shape (n_texts, hidden_size), dtype float16
        Unit rows (up to float16 rounding).
    """
    import hashlib
    from pathlib import Path
    from .._cache import cache_folder, read_entry, write_entry
    from ..relevance._tokenize import resolve_hf_path
    given = [str(t) for t in texts]
    # the entry is the sorted set of distinct texts; rows are put back in the order given
    texts, row = np.unique(np.asarray(given, dtype=object), return_inverse=True) if given else \
        (np.asarray([], dtype=object), np.zeros(0, dtype=np.int64))
    texts = texts.tolist()
    folder = Path(resolve_hf_path(spec))
    h = hashlib.sha256(b"xplant-embeddings-2\x00max_length=128\x00")
    precision = encoder_precision()
    if precision != "float32":                     # float32 entries keep their earlier key
        h.update(f"precision={precision}\x00".encode())
    for f in sorted(folder.iterdir()):
        if f.is_file():
            h.update(f"{f.name}:{f.stat().st_size}\x00".encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass") + b"\x00")
    path = cache_folder() / "embeddings" / f"{h.hexdigest()[:32]}.safetensors"
    cached = read_entry(path)                     # None when absent or damaged
    if cached is not None and "embeddings" in cached and \
            cached["embeddings"].shape[0] == len(texts):
        return cached["embeddings"][row]
    # in chunks, each sorted by length within itself: the tokens of one chunk are in memory
    # at a time, and the result goes straight into float16
    E = None
    chunks = range(0, len(texts), _ENCODE_CHUNK)
    from .._progress import quiet, steps
    for lo in steps(chunks, f"encoding {len(texts):,} {what} (once; cached in {path.parent})",
                    verbose=0 if quiet() else 1, every=max(1, len(chunks) // 10)):
        part = encode_texts(texts[lo:lo + _ENCODE_CHUNK], spec, batch_size=256, precision=precision)
        if E is None:
            E = np.empty((len(texts), part.shape[1]), dtype=np.float16)
        E[lo:lo + part.shape[0]] = part
    if E is None:
        E = encode_texts([], spec).astype(np.float16)
    try:
        write_entry(path, {"embeddings": E})
    except OSError:                               # a read-only home: the result still stands
        pass
    return E[row]
