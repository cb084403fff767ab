"""Datasets, batching and Stage 1 sampling for the neural estimators.

Everything here works on the *token corpus* hand-off (docs/design.md, section
"The Pipeline hand-off"): a list of
int64 arrays of token ids (one per document) plus, for training, a CSR label
matrix. Batches are padded to the longest document of the batch only, and
training batches group documents of similar length (bucketing), so no batch
is padded to the global maximum.
"""

import numpy as np
import scipy.sparse as sp
import torch
from torch.utils.data import Dataset, Sampler

from ._describe import merge_targets


def truncate(docs, max_length):
    """Cut each document to at most ``max_length`` tokens, keep empty rows.

    Parameters
    ----------
    docs : sequence of ndarray of int64
        Token ids per document.
    max_length : int or None
        Tokens kept per document: the first ``max_length`` (the documented
        truncation rule of the word backbones). None keeps everything.

    Returns
    -------
    list of ndarray of int64
    """
    out = []
    for d in docs:
        d = np.asarray(d, dtype=np.int64)
        if max_length is not None and d.shape[0] > max_length:
            d = d[:max_length]
        out.append(d)
    return out


def positives_list(Y):
    """Positive label indices per row of a label matrix, as int64 arrays.

    Parameters
    ----------
    Y : {array-like, sparse matrix} of shape (n, L)
        0/1 labels (read as CSR).

    Returns
    -------
    list of ndarray of int64
        One array of label columns per row, in column order.

    Examples
    --------
    >>> [p.tolist() for p in positives_list(np.array([[0, 1, 1], [0, 0, 0]]))]
    [[1, 2], []]
    """
    Y = sp.csr_matrix(Y)
    return [Y.indices[Y.indptr[i]:Y.indptr[i + 1]].astype(np.int64)
            for i in range(Y.shape[0])]


def pad_batch(seqs, pad_value=0, min_len=1, dtype=torch.long):
    """Stack variable-length 1-d arrays into a (b, max_len) tensor plus mask.

    Parameters
    ----------
    seqs : sequence of 1-d array-like
        Token ids (or label ids) of each item.
    pad_value : int or None, default=0
        Fills the places past each item's length; None (a corpus without a
        pad id: a count matrix's) fills with 0.
    min_len : int, default=1
        The width when every item is shorter.
    dtype : torch.dtype, default=torch.long
        The values' dtype (``torch.float`` for targets).

    Returns
    -------
    values : torch.Tensor of shape (b, n)
        The items, padded; n is ``min_len`` or the longest item's length,
        whichever is larger.
    mask : torch.Tensor of bool of shape (b, n)
        True at the items' own places, False at padding.

    Examples
    --------
    >>> ids, mask = pad_batch([[5, 6, 7], [8]], pad_value=0)
    >>> ids.tolist(), mask.sum(1).tolist()
    ([[5, 6, 7], [8, 0, 0]], [3, 1])
    """
    n = max(min_len, max((len(s) for s in seqs), default=0))
    out = torch.full((len(seqs), n), 0 if pad_value is None else pad_value, dtype=dtype)
    mask = torch.zeros((len(seqs), n), dtype=torch.bool)
    for i, s in enumerate(seqs):
        if len(s):
            out[i, :len(s)] = torch.as_tensor(s, dtype=dtype)
            mask[i, :len(s)] = True
    return out, mask


class TokenDataset(Dataset):
    """Documents (token ids) and, optionally, their positive labels.

    Parameters
    ----------
    docs : list of ndarray of int64
        Token ids of each document.
    positives : list of ndarray of int64 or None
        Positive label ids per document (Stage 2 targets), never a dense
        (n, L) matrix.
    """

    def __init__(self, docs, positives=None):
        self.docs = docs
        self.positives = positives

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        if self.positives is None:
            return self.docs[i], None
        return self.docs[i], self.positives[i]

    def lengths(self):
        """Tokens of each document: ndarray of int64 of shape (n_docs,)."""
        return np.array([len(d) for d in self.docs], dtype=np.int64)


class Stage2Collate:
    """Collate ``(ids, positives)`` items into model inputs and targets.

    Returns ``({"ids": (b, n) long, "mask": (b, n) bool}, pos)`` where
    ``pos`` is a (b, max_pos) long tensor of positive label ids padded with
    -1 (or None when unlabelled). Items of an :class:`AnchoredDataset` add
    ``"rank"`` (a :class:`Stage1Batch`) to the inputs and give
    ``(pos, relevance, valid)`` as targets. Items of a
    :class:`CandidateDataset` add ``"candidates"`` (b, C) to the inputs and
    give ``{"target", "keep"}`` (b, C) (plus ``"rel"``, ``"valid"`` when
    anchored) as targets.

    Parameters
    ----------
    pad_id : int or None
        The token id that pads the documents (the relevance's ``pad_id_``).
    """

    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, items):
        if len(items[0]) == 4:        # CandidateDataset: shortlist candidates
            return self._candidates(items)
        if len(items[0]) == 3:        # AnchoredDataset: Stage 1 ranking items too
            rank, (rel, valid) = Stage1Collate(self.pad_id)([(it[0], it[2]) for it in items])
            pos, _ = pad_batch([it[1] for it in items], pad_value=-1, min_len=1)
            return {"ids": rank.ids, "mask": rank.mask, "rank": rank}, (pos, rel, valid)
        ids, mask = pad_batch([it[0] for it in items], pad_value=self.pad_id)
        if items[0][1] is None:
            return {"ids": ids, "mask": mask}, None
        pos, _ = pad_batch([it[1] for it in items], pad_value=-1, min_len=1)
        return {"ids": ids, "mask": mask}, pos

    def _candidates(self, items):
        cand, _ = pad_batch([it[2] for it in items], pad_value=-1, min_len=1)
        target, _ = pad_batch([it[3] for it in items], pad_value=0, min_len=1, dtype=torch.float)
        keep = cand >= 0
        y = {"target": target, "keep": keep}
        if items[0][1] is not None:
            rank, (rel, valid) = Stage1Collate(self.pad_id)([(it[0], it[1]) for it in items])
            y.update(rel=rel, valid=valid)
            x = {"ids": rank.ids, "mask": rank.mask, "rank": rank}
        else:
            ids, mask = pad_batch([it[0] for it in items], pad_value=self.pad_id)
            x = {"ids": ids, "mask": mask}
        x["candidates"] = cand.clamp(min=0)
        return x, y


class CandidateDataset(Dataset):
    """Stage 2 items over each document's shortlist candidates.

    Each item is ``(ids, ranking_items or None, candidates, target)``:
    the candidates (label ids, gold first) and their 0/1 targets, plus the
    Stage 1 ranking items of the same document when ``ranking`` is given
    (``stage1_weight`` > 0). The collate makes ``x["candidates"]`` (b, C)
    and ``y = {"target", "keep"}`` (b, C), never (b, L).

    Parameters
    ----------
    docs : list of ndarray of int64
    positives : list of ndarray of int64
    candidates : list of ndarray of int64
        Per document, from :func:`xplant.fusion.training_candidates`.
    ranking : Stage1Dataset or None
    """

    def __init__(self, docs, positives, candidates, ranking=None):
        if not len(docs) == len(positives) == len(candidates):
            raise ValueError(f"{len(docs)} documents, {len(positives)} label rows and "
                             f"{len(candidates)} candidate rows; they must align")
        self.docs, self.candidates, self.ranking = docs, candidates, ranking
        self.targets = [np.isin(c, p).astype(np.float32) for c, p in zip(candidates, positives)]

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        rank = None if self.ranking is None else self.ranking.sample(i)
        return self.docs[i], rank, self.candidates[i], self.targets[i]

    def lengths(self):
        return np.array([len(d) for d in self.docs], dtype=np.int64)


class AnchoredDataset(Dataset):
    """Stage 2 items plus Stage 1 ranking items of the same document.

    For ``PlantClassifier(stage1_weight > 0)``: each item is ``(ids,
    positives, ranking_items)`` with the ranking items sampled by a
    :class:`Stage1Dataset` over the same documents, so that Stage 2 can keep
    the planting loss on the attention while the classifier trains.

    Parameters
    ----------
    tokens : TokenDataset
        Documents and positive labels.
    ranking : Stage1Dataset
        Over the same documents in the same order.
    """

    def __init__(self, tokens, ranking):
        if len(tokens) != len(ranking):
            raise ValueError(f"tokens has {len(tokens)} documents, ranking {len(ranking)}")
        self.tokens, self.ranking = tokens, ranking

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, i):
        doc, pos = self.tokens[i]
        return doc, pos, self.ranking.sample(i)

    def lengths(self):
        return self.tokens.lengths()


class LengthBucketSampler(Sampler):
    """Batches of documents of similar length, in a seeded random order.

    The documents are shuffled, cut into chunks of ``bucket_factor *
    batch_size``, each chunk sorted by length and cut into batches; the
    batches are then shuffled. Padding stays near the batch's own length.

    Parameters
    ----------
    lengths : ndarray of int64 of shape (n_docs,)
        Tokens of each document.
    batch_size : int
        Documents per batch.
    shuffle : bool
        Shuffle (training); False sorts all documents by length once and
        batches them in that order (scoring).
    generator : numpy.random.Generator or None
        Source of randomness; the caller owns its state, so runs are
        reproducible and resumable.
    bucket_factor : int, default=20
        Batches per length-sorted chunk.
    min_docs : int or None
        With ``shuffle``, an epoch of fewer documents than this makes
        ``ceil(min_docs / n_docs)`` passes over them (each pass in its own
        random order), so a small training set gets as many optimizer steps
        per epoch as a set of ``min_docs`` documents.
    max_docs : int or None
        With ``shuffle``, an epoch of more documents than this uses a fresh
        random subset of ``max_docs`` of them (drawn without replacement), so
        a large training set gets no more optimizer steps per epoch than a
        set of ``max_docs`` documents. Must be at least ``min_docs``.
    """

    def __init__(self, lengths, batch_size, shuffle=True, generator=None, bucket_factor=20,
                 min_docs=None, max_docs=None):
        self.lengths = np.asarray(lengths)
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.generator = generator if generator is not None else np.random.default_rng(0)
        self.bucket_factor = bucket_factor
        self.min_docs = min_docs
        self.max_docs = max_docs

    def _n_epoch_docs(self):
        """Documents drawn per epoch: ``n`` times the passes, capped at ``max_docs``."""
        n = len(self.lengths) * self._passes()
        if self.shuffle and self.max_docs and n > self.max_docs:
            return int(self.max_docs)
        return n

    def _passes(self):
        n = len(self.lengths)
        if not self.shuffle or not self.min_docs or n == 0 or n >= self.min_docs:
            return 1
        return -(-int(self.min_docs) // n)

    def _batches(self):
        n = len(self.lengths)
        if not self.shuffle:
            order = np.argsort(self.lengths, kind="stable")
            return [order[i:i + self.batch_size] for i in range(0, n, self.batch_size)]
        order = np.concatenate([self.generator.permutation(n) for _ in range(self._passes())])
        order = order[:self._n_epoch_docs()]
        chunk = self.batch_size * self.bucket_factor
        batches = []
        for c in range(0, len(order), chunk):
            idx = order[c:c + chunk]
            idx = idx[np.argsort(self.lengths[idx], kind="stable")]
            batches += [idx[i:i + self.batch_size] for i in range(0, len(idx), self.batch_size)]
        perm = self.generator.permutation(len(batches))
        return [batches[i] for i in perm]

    def __iter__(self):
        for b in self._batches():
            yield b.tolist()

    def __len__(self):
        # chunks are whole multiples of batch_size, so only the last batch is short
        return -(-self._n_epoch_docs() // self.batch_size)


# ---------------------------------------------------------------------------
# Stage 1: per-document label sampling and ranking candidates
# ---------------------------------------------------------------------------

class Stage1Dataset(Dataset):
    """Ranking items for Stage 1 (planting), sampled per document.

    For document *i* the labels whose relevant-token set T_l meets the
    document are candidates. The document's own labels come first (in a
    random order), then other candidate labels in a random order, up to
    ``labels_per_doc``. For each sampled label the ranking candidates are
    the **first occurrence** of every distinct token of T_l in the document
    (up to ``max_relevant``, highest relevance first), plus up to
    ``n_negatives`` first occurrences of distinct document tokens outside
    T_l, drawn at random, with relevance 0.

    Parameters
    ----------
    docs : list of ndarray of int64
    positives : list of ndarray of int64
        Each document's own labels.
    relevance : scipy.sparse.csr_matrix of shape (n_labels, n_tokens)
        Graded relevance r[l, t] > 0 for t in T_l.
    labels_per_doc, max_relevant, n_negatives : int
    generator : numpy.random.Generator
    deterministic : bool
        For dev evaluation: own labels in index order, then other
        candidates in index order; negatives are all remaining positions up
        to ``n_negatives`` in document order.
    ignore_ids : iterable of int
        Token ids that are never ranking candidates (padding, unknown).
    evidence : list of length n_docs of (ndarray, ndarray, ndarray) or None, default=None
        Per document, the targets of its gold evidence spans (``(labels,
        tokens, grades)``, :func:`~xplant.neural._describe.evidence_targets`),
        or None. A (document, label) pair with evidence ranks its span
        tokens first, by grade, above the label's MIG tokens in that
        document, which keep their order below them
        (:func:`~xplant.neural._describe.merge_targets`); the label is a
        candidate of the document even when none of its MIG tokens occurs.
    cache_bytes : int, default=256 MiB
        Memory, in bytes, for the part of each document's items that no
        draw changes (its distinct tokens, the labels its tokens meet and
        their hits), kept from the first epoch for the next ones. Past the
        budget the remaining documents are worked out at every draw; the
        items are the same either way.
    """

    #: Default of ``cache_bytes``: 256 MiB.
    CACHE_BYTES = 256 * 2 ** 20

    def __init__(self, docs, positives, relevance, *, labels_per_doc=16,
                 max_relevant=32, n_negatives=32, generator=None,
                 deterministic=False, ignore_ids=(), evidence=None, cache_bytes=CACHE_BYTES):
        self.docs = docs
        self.evidence = evidence
        self.positives = positives
        self.R = sp.csr_matrix(relevance, copy=True)
        self.R.sort_indices()
        self.Rc = self.R.tocsc()
        self.labels_per_doc = labels_per_doc
        self.max_relevant = max_relevant
        self.n_negatives = n_negatives
        self.generator = generator if generator is not None else np.random.default_rng(0)
        self.deterministic = deterministic
        self.ignore_ids = np.asarray(sorted(ignore_ids), dtype=np.int64)
        self.cache_bytes = cache_bytes
        self._documents, self._cached_bytes = {}, 0

    def __getstate__(self):
        state = dict(self.__dict__)             # the cache is rebuilt, never pickled
        state["_documents"], state["_cached_bytes"] = {}, 0
        return state

    def __len__(self):
        return len(self.docs)

    def lengths(self):
        return np.array([len(d) for d in self.docs], dtype=np.int64)

    def first_occurrences(self, ids):
        uniq, first = np.unique(ids, return_index=True)
        keep = ~np.isin(uniq, self.ignore_ids)
        return uniq[keep], first[keep]

    def label_hits(self, uniq):
        """r[l, uniq[j]] for every label l: the document's tokens of each T_l.

        Parameters
        ----------
        uniq : ndarray of int64 of shape (m,)
            The document's distinct token ids, ascending.

        Returns
        -------
        csr_matrix of shape (n_labels, m)
            Row l holds the positions j (ascending, so in ``uniq``'s order)
            of the tokens of T_l in the document, with their relevance.
        """
        return self.Rc[:, uniq].tocsr()

    @staticmethod
    def with_evidence(hits, uniq, labels, tokens, grades):
        """``hits`` with a document's evidence targets ranked above each label's MIG tokens.

        Parameters
        ----------
        hits : csr_matrix of shape (n_labels, m)
            :meth:`label_hits` of the document.
        uniq : ndarray of int64 of shape (m,)
            The document's distinct token ids, ascending.
        labels, tokens, grades : ndarray of shape (e,)
            The document's evidence targets; tokens the document's (read)
            tokens lack are left out.

        Returns
        -------
        csr_matrix of float64 of shape (n_labels, m)
        """
        at = np.searchsorted(uniq, tokens)
        ok = at < len(uniq)
        ok[ok] = uniq[at[ok]] == tokens[ok]
        marked = sp.csr_matrix((grades[ok], (labels[ok], at[ok])), shape=hits.shape)
        return merge_targets(hits, marked)

    def document(self, i):
        """The part of document *i*'s items that no draw changes.

        Kept for the next epochs while the cache has room
        (``cache_bytes``).

        Parameters
        ----------
        i : int
            The document's index.

        Returns
        -------
        first : ndarray of int64 of shape (m,)
            The first position of each of the document's m distinct
            (not ignored) tokens, in token-id order.
        cand : ndarray of int64 of shape (c,)
            The labels whose relevant tokens meet the document, ascending.
        starts : ndarray of int64 of shape (c + 1,)
            Candidate j's hits are ``at[starts[j]:starts[j + 1]]``.
        at, rel : ndarray of shape (nnz,)
            The hits' positions in the distinct tokens (int), ascending
            per candidate, and their relevance (float).
        own, other : ndarray of int64
            Positions in ``cand`` of the document's own labels, and of the
            other candidates, ascending.
        """
        got = self._documents.get(i)
        if got is not None:
            return got
        uniq, first = self.first_occurrences(np.asarray(self.docs[i]))
        hits = self.label_hits(uniq)
        marked = None if self.evidence is None else self.evidence[i]
        if marked is not None:
            hits = self.with_evidence(hits, uniq, *marked)
        counts = np.diff(hits.indptr)
        cand = np.flatnonzero(counts).astype(np.int64)
        # rows without hits hold nothing: the candidates' rows follow each other in hits
        starts = np.append(hits.indptr[cand], hits.indptr[-1]).astype(np.int64)
        is_own = np.zeros(len(cand), dtype=bool)
        if self.positives is not None:
            is_own[np.isin(cand, self.positives[i])] = True
        got = (first, cand, starts, hits.indices, hits.data,
               np.flatnonzero(is_own), np.flatnonzero(~is_own))
        size = sum(a.nbytes for a in got)
        if self._cached_bytes + size <= self.cache_bytes:
            self._documents[i] = got
            self._cached_bytes += size
        return got

    def sample(self, i):
        """Document *i*'s ranking items, one per sampled label.

        The labels' hits are sorted and their negative pools cut in one
        pass over the document; only the random draws (one permutation of
        the own labels, one of the others, one per sampled label's
        negatives, in that order) are taken label by label, so the items
        are the same, draw for draw, as a label-by-label reading of the
        definition above.

        Parameters
        ----------
        i : int
            The document's index.

        Returns
        -------
        list of (int, ndarray of int64 of shape (c,), ndarray of float64 of shape (c,))
            For each sampled label: the label, its candidates' positions
            (relevant tokens by relevance descending, ties in token-id
            order, then the negatives) and their relevance (0 for the
            negatives).
        """
        first, cand, starts, hit_at, hit_rel, own, other = self.document(i)
        rng = self.generator
        if not self.deterministic:
            # a permutation depends on the length alone: positions draw as labels would
            own = rng.permutation(own)
            other = rng.permutation(other)
        chosen = np.concatenate([own, other])[: self.labels_per_doc]
        k, m = len(chosen), len(first)
        if not k:
            return []
        lens = starts[chosen + 1] - starts[chosen]              # each chosen label's hits, >= 1
        offs = np.cumsum(lens) - lens
        row = np.repeat(np.arange(k), lens)
        within = np.arange(int(lens.sum())) - np.repeat(offs, lens)
        idx = within + np.repeat(starts[chosen], lens)
        at, rel = hit_at[idx], hit_rel[idx]
        # by label, then relevance descending; lexsort is stable, so ties stay in token-id order
        order = np.lexsort((-rel, row))
        kept = order[within < self.max_relevant]
        n_pos = np.minimum(lens, self.max_relevant)
        n_neg = np.minimum(m - lens, self.n_negatives)
        size = n_pos + n_neg
        out_at = np.cumsum(size) - size
        positions = np.empty(int(size.sum()), dtype=np.int64)
        relevance = np.zeros(len(positions), dtype=np.float64)
        pos_dest = np.repeat(out_at, n_pos) + (np.arange(int(n_pos.sum()))
                                               - np.repeat(np.cumsum(n_pos) - n_pos, n_pos))
        positions[pos_dest] = first[at[kept]]
        relevance[pos_dest] = rel[kept]
        miss = np.ones((k, m), dtype=bool)
        miss[row, at] = False
        pools = np.broadcast_to(first, (k, m))[miss]            # row r: first[~hit_r], token order
        pool_end = np.cumsum(m - lens)
        for r in range(k):
            pool = pools[pool_end[r] - (m - lens[r]):pool_end[r]]
            neg = np.sort(pool) if self.deterministic else rng.permutation(pool)
            positions[out_at[r] + n_pos[r]:out_at[r] + size[r]] = neg[:n_neg[r]]
        return [(cand[j], positions[out_at[r]:out_at[r] + size[r]],
                 relevance[out_at[r]:out_at[r] + size[r]]) for r, j in enumerate(chosen)]

    def __getitem__(self, i):
        return self.docs[i], self.sample(i)


class Stage1Batch:
    """One Stage 1 batch: padded documents plus flattened ranking items.

    ``len()`` is the number of documents (skorch counts batch sizes with it).
    """

    FIELDS = ("ids", "mask", "doc_index", "label_index", "positions")

    def __init__(self, ids, mask, doc_index, label_index, positions):
        self.ids, self.mask = ids, mask
        self.doc_index, self.label_index, self.positions = doc_index, label_index, positions

    def __len__(self):
        return self.ids.shape[0]

    def to(self, device):
        return Stage1Batch(*(getattr(self, f).to(device) for f in self.FIELDS))


class Stage1Collate:
    """Collate Stage 1 items into tensors.

    Returns ``(x, y)`` with ``x`` a :class:`Stage1Batch` and ``y = (relevance, valid)``, where the ranking items of
    all documents are flattened: ``doc_index`` (N,), ``label_index`` (N,),
    ``positions`` (N, C), ``relevance`` (N, C) float, ``valid`` (N, C) bool.
    """

    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, batch):
        ids, mask = pad_batch([b[0] for b in batch], pad_value=self.pad_id)
        flat = [(d, l, p, r) for d, (_, items) in enumerate(batch) for (l, p, r) in items]
        lengths = np.array([len(p) for _, _, p, _ in flat], dtype=np.int64)
        N, C = len(flat), max(int(lengths.max(initial=0)), 1)
        doc_index = np.array([d for d, _, _, _ in flat], dtype=np.int64)
        label_index = np.array([l for _, l, _, _ in flat], dtype=np.int64)
        # one pass over the items: row j holds item j's candidates, left-aligned
        valid = np.arange(C) < lengths[:, None]
        positions = np.zeros((N, C), dtype=np.int64)
        rel = np.zeros((N, C), dtype=np.float32)
        if lengths.sum():
            positions[valid] = np.concatenate([p for _, _, p, _ in flat])
            rel[valid] = np.concatenate([r for _, _, _, r in flat])
        return (Stage1Batch(ids, mask, torch.from_numpy(doc_index), torch.from_numpy(label_index),
                            torch.from_numpy(positions)),
                (torch.from_numpy(rel), torch.from_numpy(valid)))
