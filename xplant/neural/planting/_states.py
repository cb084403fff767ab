"""Stage 1 on cached states: a frozen backbone's hidden states, computed once per document.

With ``AttentionPlanter(train_encoder=False)`` the backbone gets no gradient
and runs in evaluation mode (no dropout), so its hidden states H of a
document are the same at every epoch. :func:`encode_states` computes them
once, before the first epoch, and :class:`StatesDataset` hands them to the
batches (:class:`~xplant.neural.planting._items.Stage1Collate` pads them like
the token ids); :class:`~xplant.neural.modules.PlanterNet` then runs only the
label attention. The cache holds the real tokens only, ``n_tokens × hidden
× bytes`` per document (4 bytes in float32, 2 in bfloat16 or float16), in
memory up to a byte budget, else in a file under the temporary folder
(``TMPDIR``), which :meth:`StateCache.close` deletes.
"""

import os
import shutil
import tempfile

import numpy as np
import torch
from torch.utils.data import Dataset

from ..training._data import pad_batch

#: The cache dtypes of ``AttentionPlanter(state_cache=...)``.
STATE_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

#: Bytes of states :class:`~xplant.neural.AttentionPlanter` holds in memory (2 GiB); a
#: larger cache is a file. Below it, ``state_cache="auto"`` caches in float32, above in bfloat16.
STATE_CACHE_MEMORY = 2 * 2 ** 30

#: numpy stand-ins of the cache dtypes in a file (numpy has no bfloat16: its 16 bits as int16).
_FILE_DTYPES = {torch.float32: np.float32, torch.bfloat16: np.int16, torch.float16: np.int16}


def state_cache_bytes(docs, hidden_size, dtype):
    """Bytes of the cached states of ``docs``: their tokens × ``hidden_size`` × the dtype's size.

    Parameters
    ----------
    docs : sequence of ndarray
        Token ids per document (after truncation).
    hidden_size : int
        The backbone's h.
    dtype : str
        A key of :data:`STATE_DTYPES`.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> state_cache_bytes([np.zeros(100), np.zeros(28)], 384, "bfloat16")   # 128 tokens
    98304
    """
    n_tokens = sum(len(d) for d in docs)
    return int(n_tokens) * int(hidden_size) * STATE_DTYPES[dtype].itemsize


class StateCache:
    """Hidden states of a list of documents, flat: document i's are rows ``offsets[i]:offsets[i + 1]``.

    Parameters
    ----------
    lengths : array-like of int of shape (n_docs,)
        Tokens per document.
    hidden_size : int
        h.
    dtype : str
        A key of :data:`STATE_DTYPES`.
    memory : int
        Bytes the cache may hold in memory; a larger cache is a file
        (a numpy memmap) in a new temporary folder.

    Attributes
    ----------
    nbytes : int
        The states' size in bytes.
    on_disk : bool
        Whether the states are in a file.
    """

    def __init__(self, lengths, hidden_size, dtype, memory):
        lengths = np.asarray(lengths, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.hidden_size, self.dtype = int(hidden_size), STATE_DTYPES[dtype]
        rows = int(self.offsets[-1])
        self.nbytes = rows * self.hidden_size * self.dtype.itemsize
        self.on_disk = self.nbytes > memory
        self.folder = None
        if self.on_disk:
            self.folder = tempfile.mkdtemp(prefix="xplant-states-")
            self.path = os.path.join(self.folder, "states.bin")
            self._array = np.memmap(self.path, dtype=_FILE_DTYPES[self.dtype], mode="w+",
                                    shape=(max(rows, 1), self.hidden_size))
        else:
            self._tensor = torch.empty((rows, self.hidden_size), dtype=self.dtype)

    def __len__(self):
        return len(self.offsets) - 1

    def put(self, i, H):
        """Store document i's states (its ``n_tokens`` rows of H, any float dtype)."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        H = H.detach().to("cpu", self.dtype)
        if self.on_disk:
            self._array[lo:hi] = H.view(torch.int16).numpy() if self.dtype.itemsize == 2 \
                else H.numpy()
        else:
            self._tensor[lo:hi] = H

    def __getitem__(self, i):
        """Document i's states: a (n_tokens, h) tensor of the cache's dtype."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        if not self.on_disk:
            return self._tensor[lo:hi]
        return torch.from_numpy(np.array(self._array[lo:hi])).view(self.dtype)

    def close(self):
        """Free the states; a cache on disk deletes its file and folder."""
        self._tensor = self._array = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __getstate__(self):
        # a DataLoader worker started by "spawn" gets the file's name, not a copy of the states
        state = dict(self.__dict__)
        if self.on_disk:
            state["_array"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.on_disk and self.folder is not None:
            self._array = np.memmap(self.path, dtype=_FILE_DTYPES[self.dtype], mode="r",
                                    shape=(max(int(self.offsets[-1]), 1), self.hidden_size))

    def __del__(self):
        if getattr(self, "folder", None) is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


@torch.no_grad()
def encode_states(encoder, docs, *, pad_id, batch_size, device, dtype, memory):
    """Run a frozen backbone once over ``docs`` and keep each document's states.

    The encoder runs in evaluation mode (restored after), on batches of
    ``batch_size`` documents of similar length (in length order: little
    padding). A document's states do not depend on its batch beyond the
    last float digits (the padding is masked; kernels may sum in another
    order for another shape), so the cache equals what a recomputation
    inside the training batches gives, up to that.

    Parameters
    ----------
    encoder : nn.Module
        The backbone: ``forward(ids, mask) -> H`` (b, n, h).
    docs : sequence of ndarray of int64
        Token ids per document.
    pad_id : int or None
        The corpus's padding id.
    batch_size : int
        Documents per encoder call.
    device : str or torch.device
        Where the encoder runs.
    dtype : str
        A key of :data:`STATE_DTYPES`.
    memory : int
        Bytes the cache may hold in memory (:class:`StateCache`).

    Returns
    -------
    StateCache
    """
    lengths = np.array([len(d) for d in docs], dtype=np.int64)
    cache = StateCache(lengths, encoder.hidden_size, dtype, memory)
    was_training = encoder.training
    encoder.eval()
    try:
        order = np.argsort(lengths, kind="stable")
        order = order[lengths[order] > 0]                  # an empty document has no states
        for lo in range(0, len(order), batch_size):
            rows = order[lo:lo + batch_size]
            ids, mask = pad_batch([docs[i] for i in rows], pad_value=pad_id)
            # one copy per batch, already in the cache's dtype
            H = encoder(ids.to(device), mask.to(device)).to(cache.dtype).cpu()
            for j, i in enumerate(rows):
                cache.put(i, H[j, :lengths[i]])
    finally:
        encoder.train(was_training)
    return cache


class StatesDataset(Dataset):
    """A Stage 1 dataset whose items carry their document's cached states.

    Item i is the wrapped dataset's item (``(doc, items)``) with the states
    of cache row ``offset + i`` appended; everything else (``lengths()``,
    the documents, the sampling) is the wrapped dataset's, so the batches
    and their random draws are the same as without the cache.

    Parameters
    ----------
    dataset : Stage1Dataset
        The ranking items.
    cache : StateCache
        The states, row ``offset + i`` for document i.
    offset : int, default=0
        The cache row of the dataset's first document.
    """

    def __init__(self, dataset, cache, offset=0):
        self.dataset, self.cache, self.offset = dataset, cache, offset

    def __len__(self):
        return len(self.dataset)

    def __getattr__(self, name):
        if name in ("dataset", "cache", "offset"):       # unpickling: not set yet
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def lengths(self):
        return self.dataset.lengths()

    def __getitem__(self, i):
        return (*self.dataset[i], self.cache[self.offset + i])


def pad_states(states, n):
    """Stack per-document states (n_i, h) into a zero-padded float32 (b, n, h) tensor."""
    h = states[0].shape[1]
    H = torch.zeros((len(states), n, h), dtype=torch.float32)
    for j, s in enumerate(states):
        H[j, :s.shape[0]] = s
    return H


def describe_cache(cache, n_docs, seconds):
    """One line on a built cache, for ``verbose`` output."""
    rows = int(cache.offsets[-1])
    where = "on disk" if cache.on_disk else "in memory"
    return (f"Stage 1: cached the frozen backbone's states of {n_docs} documents "
            f"({rows} tokens × {cache.hidden_size} × {cache.dtype.itemsize} bytes = "
            f"{cache.nbytes / 2 ** 20:.1f} MiB, {str(cache.dtype).replace('torch.', '')}, "
            f"{where}) in {seconds:.1f} s")
