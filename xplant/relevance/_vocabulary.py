"""Tokenizing and the vocabulary of MIGRelevance (word, callable and Hugging Face tokenizers).

A collaborator of :class:`~xplant.relevance.MIGRelevance`, as scikit-learn's
``_BinMapper`` is of its gradient boosting: :class:`TokenVocabulary` holds a
resolved tokenizer with its token -> id vocabulary, learns a word vocabulary
from training documents and maps documents to token ids (and character
offsets). It reads no estimator: ``fit`` builds one from the estimator's
settings (:meth:`TokenVocabulary.from_settings`) and keeps what it resolved
and learned as the estimator's fitted attributes, from which the estimator
builds one again for each call that tokenizes.
"""

from collections.abc import Mapping

import numpy as np

from ._inputs import _df_bounds, _presence
from ._tokenize import (
    PAD_TOKEN,
    UNK_TOKEN,
    locate_tokens,
    normalize_text,
    original_offsets,
    resolve_tokenizer,
    text_prefixes,
    tokens_upto,
    word_tokens,
    word_tokens_offsets,
)

_HF_BATCH = 256


class TokenVocabulary:
    """A resolved tokenizer and its vocabulary: the token ids of documents.

    Parameters
    ----------
    kind : {"word", "callable", "hf"}
        The tokenizer's kind, as :func:`~xplant.relevance._tokenize.resolve_tokenizer`
        returns it.
    tokenizer : "word", callable or Hugging Face tokenizer
        The resolved tokenizer (a loaded object for ``"hf:<folder>"``).
    vocabulary : dict of str -> int or None, default=None
        Token to id: a Hugging Face tokenizer's own, a fixed or a learned
        one. None for a word/callable tokenizer until :meth:`learn`.
    lowercase : bool, default=True
        Lowercase word/callable tokens (and given token lists).
    max_length : int or None, default=None
        Tokens read per document at most.

    Attributes
    ----------
    pad_id, unk_id : int or None
        Padding and unknown ids (None where a Hugging Face tokenizer has none).
    n_tokens : int
        The size of the id space, special ids included.
    """

    def __init__(self, kind, tokenizer, vocabulary=None, *, lowercase=True, max_length=None):
        self.kind = kind
        self.tokenizer = tokenizer
        self.vocabulary = vocabulary
        self.lowercase = lowercase
        self.max_length = max_length

    @classmethod
    def from_settings(cls, tokenizer, vocabulary=None, *, lowercase=True, max_length=None):
        """Resolve a ``tokenizer`` setting and, where fixed, the vocabulary.

        Parameters
        ----------
        tokenizer : "word", callable, Hugging Face tokenizer, "hf:<folder>" or "llm:<spec>"
            MIGRelevance's ``tokenizer`` parameter.
        vocabulary : mapping or iterable of str or None, default=None
            MIGRelevance's ``vocabulary`` parameter; None leaves a word or
            callable tokenizer's vocabulary to :meth:`learn`.
        lowercase : bool, default=True
            Lowercase word/callable tokens.
        max_length : int or None, default=None
            Tokens read per document at most.

        Returns
        -------
        TokenVocabulary

        Raises
        ------
        ValueError
            For a tokenizer none of the accepted forms, a vocabulary with a
            Hugging Face tokenizer, or an invalid fixed vocabulary.
        """
        kind, tok = resolve_tokenizer(tokenizer)
        if kind == "hf":
            if vocabulary is not None:
                raise ValueError(
                    "vocabulary= cannot be combined with a Hugging Face tokenizer, whose "
                    "vocabulary is its own."
                )
            vocabulary = dict(tok.get_vocab())
        elif vocabulary is not None:
            vocabulary = _fixed_vocabulary(vocabulary)
        return cls(kind, tok, vocabulary, lowercase=lowercase, max_length=max_length)

    @property
    def pad_id(self):
        if self.kind == "hf":
            return self.tokenizer.pad_token_id
        return self.vocabulary[PAD_TOKEN]

    @property
    def unk_id(self):
        if self.kind == "hf":
            return self.tokenizer.unk_token_id
        return self.vocabulary[UNK_TOKEN]

    @property
    def n_tokens(self):
        if self.kind == "hf":
            return max(len(self.tokenizer), max(self.vocabulary.values()) + 1)
        return len(self.vocabulary)

    # -------------------------------------------------------------- tokenizing
    def _limit(self, limit=None):
        """Tokens read per document: the smaller of ``max_length`` and ``limit``."""
        given = [v for v in (self.max_length, limit) if v is not None]
        return min(given) if given else None

    def _raw_tokens(self, doc, kind, limit=None):
        """The word/callable tokens of one document (a text or a token list)."""
        limit = self._limit(limit)
        if kind == "text":
            if self.kind == "word":           # NFC, and read only as far as the limit
                toks = tokens_upto(doc, limit, lambda t: (word_tokens(t, self.lowercase), None))[0]
            else:                             # a callable reads the whole (NFC) document
                toks = list(self.tokenizer(normalize_text(doc)[0]))
                if self.lowercase:
                    toks = [str(t).lower() for t in toks]
        else:                                 # given tokens: NFC each, as texts are
            toks = [normalize_text(str(t))[0] for t in doc]
            if self.lowercase:
                toks = [t.lower() for t in toks]
        if limit is not None:
            toks = toks[:limit]
        return toks

    def _hf_encode(self, texts, offsets):
        """(ids, offsets into the original texts) of a batch, tokenized in NFC."""
        norm = [normalize_text(t) for t in texts]
        enc = self.tokenizer(
            [n for n, _ in norm],
            add_special_tokens=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            return_offsets_mapping=offsets,
            truncation=False,
            verbose=False,
        )
        out = []
        for i, ids in enumerate(enc["input_ids"]):
            off = None
            if offsets:
                off = original_offsets(np.asarray(enc["offset_mapping"][i], dtype=np.int64),
                                       norm[i][1])
            out.append((np.asarray(ids, dtype=np.int64), off))
        return out

    def hf_ids(self, docs, kind, offsets=False, limit=None):
        """Token ids (and offsets) of documents with a Hugging Face tokenizer.

        Parameters
        ----------
        docs : list of str or list of list of str
            Validated documents.
        kind : {"text", "tokens"}
            Raw texts, or token lists (looked up in the tokenizer's vocabulary).
        offsets : bool, default=False
            Also return each token's ``[start, end)`` offsets (texts only;
            needs a fast tokenizer).
        limit : int or None, default=None
            Tokens per document at most (and ``max_length`` when smaller).

        Returns
        -------
        ids : list of ndarray of int64
        offsets : list of ndarray of shape (n_tok_i, 2), int64, or None
        """
        tok = self.tokenizer
        limit = self._limit(limit)
        out_ids, out_off = [], []
        if kind == "tokens":
            unk = self.unk_id
            for d in docs:
                ids = tok.convert_tokens_to_ids([str(t) for t in d])
                ids = np.asarray([unk if i is None else i for i in ids], dtype=np.int64)
                out_ids.append(ids[:limit] if limit else ids)
            return out_ids, None
        if offsets and not getattr(tok, "is_fast", False):
            raise ValueError(
                "return_offsets=True needs a fast Hugging Face tokenizer "
                "(use_fast=True), which provides offset mappings."
            )
        for s in range(0, len(docs), _HF_BATCH):
            batch = docs[s : s + _HF_BATCH]
            firsts = [next(text_prefixes(d, limit)) for d in batch]   # read what is needed
            for d, first, (ids, off) in zip(batch, firsts, self._hf_encode(firsts, offsets)):
                if limit is not None and len(ids) <= limit and len(first) < len(d):
                    ids, off = tokens_upto(d, limit, lambda t: self._hf_encode([t], offsets)[0])
                if limit is not None:
                    ids = ids[:limit]
                out_ids.append(ids)
                if offsets:
                    out_off.append(off[: ids.shape[0]])
        return out_ids, (out_off if offsets else None)

    def ids(self, docs, kind, limit=None):
        """Token id arrays of validated documents, with the vocabulary.

        Parameters
        ----------
        docs : list of str or list of list of str
            Validated documents.
        kind : {"text", "tokens"}
            Raw texts or token lists.
        limit : int or None, default=None
            Tokens per document at most (and ``max_length`` when smaller).

        Returns
        -------
        list of ndarray of int64
            Tokens outside the vocabulary get ``unk_id``.
        """
        if self.kind == "hf":
            return self.hf_ids(docs, kind, limit=limit)[0]
        vocab, unk = self.vocabulary, self.unk_id
        out = []
        for d in docs:
            toks = self._raw_tokens(d, kind, limit)
            out.append(np.fromiter((vocab.get(t, unk) for t in toks), dtype=np.int64, count=len(toks)))
        return out

    def tokenize(self, texts, *, offsets=False, limit=None):
        """Token ids and, when asked, character offsets of raw texts.

        Parameters
        ----------
        texts : list of str
            Validated raw texts.
        offsets : bool, default=False
            Also return each token's ``[start, end)`` offsets into its text
            (``[-1, -1]`` where a callable's token cannot be found).
        limit : int or None, default=None
            Tokens per text at most (and ``max_length`` when smaller).

        Returns
        -------
        ids : list of ndarray of int64
        offsets : list of ndarray of shape (n_tok_i, 2), int64, or None
        """
        if self.kind == "hf":
            return self.hf_ids(texts, "text", offsets=offsets, limit=limit)
        if not offsets:
            return self.ids(texts, "text", limit=limit), None
        vocab, unk = self.vocabulary, self.unk_id
        limit = self._limit(limit)
        all_ids, all_off = [], []
        for d in texts:
            if self.kind == "word":
                toks, off = tokens_upto(d, limit, lambda t: word_tokens_offsets(t, self.lowercase))
            else:
                norm, spans = normalize_text(d)
                raw = [str(t) for t in self.tokenizer(norm)]
                off = original_offsets(locate_tokens(norm, raw), spans)
                toks = [t.lower() for t in raw] if self.lowercase else raw
            if limit is not None:
                toks, off = toks[:limit], off[:limit]
            all_ids.append(np.fromiter((vocab.get(t, unk) for t in toks), dtype=np.int64, count=len(toks)))
            all_off.append(off)
        return all_ids, all_off

    def special_ids(self):
        """Sorted int64 ids of the special tokens (pad, unk, a Hugging Face tokenizer's own)."""
        if self.kind == "hf":
            ids = set(self.tokenizer.all_special_ids)
        else:
            ids = {self.pad_id, self.unk_id}
        ids.discard(None)
        return np.asarray(sorted(ids), dtype=np.int64)

    # --------------------------------------------------------------- learning
    def learn(self, docs, kind, min_df=1, max_df=1.0):
        """Learn a word/callable vocabulary from training documents.

        Ids: 0 = ``"<pad>"``, 1 = ``"<unk>"``, then the tokens within the
        document-frequency limits from 2 in sorted order; sets
        ``vocabulary``.

        Parameters
        ----------
        docs : list of str or list of list of str
            Validated training documents.
        kind : {"text", "tokens"}
            Raw texts or token lists.
        min_df, max_df : int or float, default=1 and 1.0
            Document-frequency limits, as MIGRelevance's parameters.

        Returns
        -------
        list of ndarray of int64
            Each document's ids in the learned vocabulary (pruned tokens as
            ``"<unk>"``).

        Raises
        ------
        ValueError
            When the limits contradict each other or keep no token.
        """
        prov = {}
        seqs = []
        for d in docs:
            toks = self._raw_tokens(d, kind)
            seqs.append(
                np.fromiter((prov.setdefault(t, len(prov)) for t in toks), dtype=np.int64,
                            count=len(toks))
            )
        n_docs = len(seqs)
        df = np.bincount(_presence(seqs, len(prov)).indices, minlength=len(prov))
        lo, hi = _df_bounds(min_df, max_df, n_docs)
        if hi < lo:
            raise ValueError(
                f"max_df={max_df} corresponds to fewer documents than min_df={min_df}."
            )
        names = np.empty(len(prov), dtype=object)
        names[list(prov.values())] = list(prov.keys())
        kept = np.flatnonzero((df >= lo) & (df <= hi))
        if kept.size == 0:
            raise ValueError(
                "After pruning by min_df/max_df no token remains; lower min_df or raise max_df."
            )
        order = kept[np.argsort(names[kept].astype(str), kind="stable")]
        remap = np.full(len(prov), 1, dtype=np.int64)  # pruned -> <unk>
        remap[order] = np.arange(2, 2 + order.shape[0])
        self.vocabulary = {PAD_TOKEN: 0, UNK_TOKEN: 1}
        self.vocabulary.update((names[p], i + 2) for i, p in enumerate(order.tolist()))
        return [remap[s] for s in seqs]


def _fixed_vocabulary(voc):
    """A ``vocabulary`` parameter as a checked token -> id dict."""
    if isinstance(voc, Mapping):
        vocab = {str(k): int(v) for k, v in voc.items()}
        for special in (PAD_TOKEN, UNK_TOKEN):
            if special not in vocab:
                raise ValueError(
                    f"vocabulary mapping must contain {special!r}; or pass a list of "
                    "tokens and ids 0 (<pad>) and 1 (<unk>) are added."
                )
        ids = np.sort(np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab)))
        if not np.array_equal(ids, np.arange(len(vocab))):
            raise ValueError("vocabulary mapping must map its tokens one-to-one onto 0..V-1.")
        return vocab
    tokens = [str(t) for t in voc]
    if len(set(tokens)) != len(tokens):
        raise ValueError("vocabulary holds duplicate tokens.")
    if PAD_TOKEN in tokens or UNK_TOKEN in tokens:
        raise ValueError(
            "a vocabulary list must not hold '<pad>' or '<unk>'; they get ids 0 and 1."
        )
    vocab = {PAD_TOKEN: 0, UNK_TOKEN: 1}
    vocab.update((t, i + 2) for i, t in enumerate(tokens))
    return vocab
