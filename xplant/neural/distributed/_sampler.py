"""Distributed batching: each rank takes its shard of every global batch."""

import numpy as np
from torch.utils.data import Sampler

from ..training._data import LengthBucketSampler


class DistributedBucketSampler(Sampler):
    """Length-bucketed global batches, each cut into per-rank micro-batches.

    Every rank builds the same sequence of global batches (documents of
    similar length, in a seeded order; :class:`LengthBucketSampler`) from
    its own copy of one seeded generator. Global batch *b* is cut into
    ``num_replicas * accumulation`` near-equal chunks; rank *r* takes chunks
    ``m * num_replicas + r`` for micro-step *m*. Over all ranks and
    micro-steps an optimizer step sees exactly the documents a
    single-process run with the same generator and batch size sees, as
    :class:`torch.utils.data.DistributedSampler` shards a dataset, but
    batch by batch so that bucketing survives.

    Each micro-batch carries a loss weight ``n_chunk * num_replicas *
    accumulation / n_batch`` so that the data-parallel mean of weighted
    per-rank mean losses equals the mean over the global batch, also for a
    short last batch. A chunk left empty (a global batch smaller than
    ``num_replicas * accumulation``) holds the batch's first document with
    weight 0, so every rank runs the same number of steps.

    Parameters
    ----------
    lengths : ndarray of int64 of shape (n_docs,)
        Token count of each document; batches group similar lengths.
    batch_size : int
        Global batch: documents per optimizer step over all ranks.
    num_replicas, rank : int
        Number of processes, and this process's rank in [0, num_replicas).
    accumulation : int, default=1
        Micro-steps per optimizer step (gradient accumulation).
    shuffle : bool, default=True
        Draw the batches in a seeded random order (training); False gives a fixed order.
    generator : numpy.random.Generator or None
        Must be in the same state on every rank.
    min_docs, max_docs : int or None
        Documents drawn per epoch, as :class:`~xplant.neural.batching.LengthBucketSampler`
        draws them (``iterator_train__min_epoch_docs``, ``max_epoch_docs``).

    Examples
    --------
    >>> import numpy as np
    >>> lengths = np.array([5, 3, 9, 1, 4, 4, 7])
    >>> s0 = DistributedBucketSampler(lengths, 4, 2, 0, shuffle=False)
    >>> s1 = DistributedBucketSampler(lengths, 4, 2, 1, shuffle=False)
    >>> [(list(map(int, i)), w) for i, w in s0.epoch_plan()]
    [([3, 1], 1.0), ([0, 6], 1.3333333333333333)]
    >>> [(list(map(int, i)), w) for i, w in s1.epoch_plan()]
    [([4, 5], 1.0), ([2], 0.6666666666666666)]
    """

    def __init__(self, lengths, batch_size, num_replicas, rank, *, accumulation=1, shuffle=True,
                 generator=None, min_docs=None, max_docs=None):
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is outside 0..{num_replicas - 1}")
        self.lengths = np.asarray(lengths)
        self.batch_size = int(batch_size)
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)
        self.accumulation = int(accumulation)
        self.shuffle = shuffle
        self.generator = generator if generator is not None else np.random.default_rng(0)
        self.min_docs, self.max_docs = min_docs, max_docs

    def _global_sampler(self):
        return LengthBucketSampler(self.lengths, self.batch_size, shuffle=self.shuffle,
                                   generator=self.generator, min_docs=self.min_docs,
                                   max_docs=self.max_docs)

    def global_batches(self):
        """The global batches of one epoch (advances the generator when shuffling)."""
        return self._global_sampler()._batches()

    def epoch_steps(self):
        """This rank's part of every optimizer step of one epoch.

        Returns
        -------
        list of (int, list of (ndarray, float))
            Per global batch: its number of documents, and this rank's
            ``accumulation`` micro-batches as (indices, loss weight).
        """
        steps = []
        n_chunks = self.num_replicas * self.accumulation
        for batch in self.global_batches():
            chunks = np.array_split(np.asarray(batch), n_chunks)
            mine = []
            for m in range(self.accumulation):
                c = chunks[m * self.num_replicas + self.rank]
                if len(c) == 0:
                    mine.append((np.asarray(batch[:1]), 0.0))
                else:
                    mine.append((c, len(c) * n_chunks / len(batch)))
            steps.append((len(batch), mine))
        return steps

    def epoch_plan(self):
        """(indices, loss weight) of this rank's micro-batches for one epoch, in order."""
        return [micro for _, chunks in self.epoch_steps() for micro in chunks]

    def __iter__(self):
        for idx, _ in self.epoch_plan():
            yield idx.tolist()

    def __len__(self):
        return len(self._global_sampler()) * self.accumulation
