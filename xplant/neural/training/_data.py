"""Datasets and batching of the neural estimators' training.

Everything here works on the *token corpus* hand-off (docs/design.md, section
"The Pipeline hand-off"): a list of
int64 arrays of token ids (one per document) plus, for training, a CSR label
matrix. Batches are padded to the longest document of the batch only, and
training batches group documents of similar length (bucketing), so no batch
is padded to the global maximum. The items of each stage and their
collates are in ``planting/_items.py`` (Stage 1's ranking items) and
``classifier/_items.py`` (Stage 2's).
"""

import numpy as np
import scipy.sparse as sp
import torch
from torch.utils.data import Dataset, Sampler



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
