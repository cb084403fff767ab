"""Tokenizing and the vocabulary of MIGRelevance (word, callable and Hugging Face tokenizers)."""

from collections.abc import Mapping

import numpy as np

from ._inputs import _df_bounds, _presence
from ._tokenize import (
    PAD_TOKEN,
    UNK_TOKEN,
    normalize_text,
    original_offsets,
    resolve_tokenizer,
    text_prefixes,
    tokens_upto,
    word_tokens,
)

_HF_BATCH = 256


class _TokenizerMixin:
    """The tokenizing half of :class:`~xplant.relevance.MIGRelevance`.

    Needs the estimator's ``tokenizer``, ``lowercase``, ``vocabulary``,
    ``min_df``, ``max_df`` and ``max_length`` parameters; sets
    ``tokenizer_``, ``vocabulary_``, ``n_tokens_``, ``pad_id_`` and
    ``unk_id_``.
    """

    # -------------------------------------------------------------- tokenizing
    def _limit(self, limit=None):
        """Tokens read per document: the smaller of ``max_length`` and ``limit``."""
        given = [v for v in (self.max_length, limit) if v is not None]
        return min(given) if given else None

    def _raw_tokens(self, doc, kind, limit=None):
        limit = self._limit(limit)
        if kind == "text":
            if self._tok_kind == "word":      # NFC, and read only as far as the limit
                toks = tokens_upto(doc, limit, lambda t: (word_tokens(t, self.lowercase), None))[0]
            else:                             # a callable reads the whole (NFC) document
                toks = list(self.tokenizer_(normalize_text(doc)[0]))
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
        enc = self.tokenizer_(
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

    def _hf_ids(self, docs, kind, offsets=False, limit=None):
        tok = self.tokenizer_
        limit = self._limit(limit)
        out_ids, out_off = [], []
        if kind == "tokens":
            for d in docs:
                ids = tok.convert_tokens_to_ids([str(t) for t in d])
                ids = np.asarray([self.unk_id_ if i is None else i for i in ids], dtype=np.int64)
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

    def _ids(self, docs, kind, limit=None):
        """Token id arrays of validated docs, with the fitted vocabulary."""
        if self._tok_kind == "hf":
            return self._hf_ids(docs, kind, limit=limit)[0]
        vocab, unk = self.vocabulary_, self.unk_id_
        out = []
        for d in docs:
            toks = self._raw_tokens(d, kind, limit)
            out.append(np.fromiter((vocab.get(t, unk) for t in toks), dtype=np.int64, count=len(toks)))
        return out

    # ------------------------------------------------------------------ setup
    def _fixed_vocabulary(self):
        voc = self.vocabulary
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

    def _setup_tokenizer(self, kind):
        """Resolve the tokenizer and, where fixed, the vocabulary."""
        self.input_kind_ = "matrix" if kind == "matrix" else "text"
        if kind == "matrix":
            self._tok_kind, self.tokenizer_ = None, None
            return
        self._tok_kind, self.tokenizer_ = resolve_tokenizer(self.tokenizer)
        if self._tok_kind == "hf":
            if self.vocabulary is not None:
                raise ValueError(
                    "vocabulary= cannot be combined with a Hugging Face tokenizer, whose "
                    "vocabulary is its own."
                )
            tok = self.tokenizer_
            self.vocabulary_ = dict(tok.get_vocab())
            self.n_tokens_ = max(len(tok), max(self.vocabulary_.values()) + 1)
            self.pad_id_ = tok.pad_token_id
            self.unk_id_ = tok.unk_token_id
        elif self.vocabulary is not None:
            self.vocabulary_ = self._fixed_vocabulary()
            self.n_tokens_ = len(self.vocabulary_)
            self.pad_id_ = self.vocabulary_[PAD_TOKEN]
            self.unk_id_ = self.vocabulary_[UNK_TOKEN]

    def _special_ids(self):
        if self.input_kind_ == "matrix":
            return np.zeros(0, dtype=np.int64)
        if self._tok_kind == "hf":
            ids = set(self.tokenizer_.all_special_ids)
        else:
            ids = {self.pad_id_, self.unk_id_}
        ids.discard(None)
        return np.asarray(sorted(ids), dtype=np.int64)

    def _learn_vocabulary(self, docs, kind):
        """Learn a word/callable vocabulary; return final id sequences."""
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
        lo, hi = _df_bounds(self.min_df, self.max_df, n_docs)
        if hi < lo:
            raise ValueError(
                f"max_df={self.max_df} corresponds to fewer documents than min_df={self.min_df}."
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
        self.vocabulary_ = {PAD_TOKEN: 0, UNK_TOKEN: 1}
        self.vocabulary_.update((names[p], i + 2) for i, p in enumerate(order.tolist()))
        self.n_tokens_ = len(self.vocabulary_)
        self.pad_id_, self.unk_id_ = 0, 1
        return [remap[s] for s in seqs]
