"""Stage 1's ranking items: per document, its labels' target tokens, sampled; their batches.

:class:`Stage1Dataset` samples, for each document, the labels whose targets
(MIG's T_l, merged with description and evidence targets) meet it and each
label's ranking candidates; :class:`Stage1Collate` makes a
:class:`Stage1Batch` of them. PlantClassifier keeps these items in Stage 2
when ``stage1_weight`` > 0.
"""

import numpy as np
import scipy.sparse as sp
import torch
from torch.utils.data import Dataset

from ..training._data import pad_batch
from ._states import pad_states
from ._targets import merge_targets


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
        tokens, grades)``, :func:`~xplant.neural._inputs.evidence_targets`),
        or None. A (document, label) pair with evidence ranks its span
        tokens first, by grade, above the label's MIG tokens in that
        document, which keep their order below them
        (:func:`~xplant.neural.planting._targets.merge_targets`); the label is a
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
    ``states`` is None, or the documents' cached backbone states (b, n, h),
    float32, zero at padding (:mod:`~xplant.neural.planting._states`), which
    :class:`~xplant.neural.modules.PlanterNet` reads instead of running its
    backbone.
    """

    FIELDS = ("ids", "mask", "doc_index", "label_index", "positions", "states")

    def __init__(self, ids, mask, doc_index, label_index, positions, states=None):
        self.ids, self.mask = ids, mask
        self.doc_index, self.label_index, self.positions = doc_index, label_index, positions
        self.states = states

    def __len__(self):
        return self.ids.shape[0]

    def to(self, device):
        return Stage1Batch(*(None if getattr(self, f) is None else getattr(self, f).to(device)
                             for f in self.FIELDS))


class Stage1Collate:
    """Collate Stage 1 items into tensors.

    Returns ``(x, y)`` with ``x`` a :class:`Stage1Batch` and ``y = (relevance, valid)``, where the ranking items of
    all documents are flattened: ``doc_index`` (N,), ``label_index`` (N,),
    ``positions`` (N, C), ``relevance`` (N, C) float, ``valid`` (N, C) bool.
    Items of a :class:`~xplant.neural.planting._states.StatesDataset` carry
    their document's cached states as a third element; they become the
    batch's ``states``, padded like the ids.
    """

    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, batch):
        ids, mask = pad_batch([b[0] for b in batch], pad_value=self.pad_id)
        states = pad_states([b[2] for b in batch], ids.shape[1]) if len(batch[0]) > 2 else None
        flat = [(d, l, p, r) for d, (_, items, *_) in enumerate(batch) for (l, p, r) in items]
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
                            torch.from_numpy(positions), states),
                (torch.from_numpy(rel), torch.from_numpy(valid)))
