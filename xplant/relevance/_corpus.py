"""TokenCorpus: the hand-off from MIGRelevance to the neural estimators."""

import numbers

import numpy as np


class TokenCorpus:
    """Token ids per document, plus the fitted :class:`MIGRelevance` behind them.

    This is what ``MIGRelevance.transform`` returns and what
    ``PlantClassifier`` and ``AttentionPlanter`` accept. It behaves as a
    sequence of documents and survives scikit-learn's row indexing
    (``_safe_indexing``, cross-validation splits): indexing with a slice, an
    integer array or a boolean mask gives a new ``TokenCorpus`` that shares
    the same ``relevance``.

    Parameters
    ----------
    docs : list of ndarray of shape (n_tokens_i,), int64
        Token ids of each document, in the fitted tokenizer's id space.
    relevance : MIGRelevance
        The fitted transformer: tokenizer, ``vocabulary_``, ``relevance_``,
        ``tokenizer_fingerprint_``, ``pad_id_``, ``unk_id_``.
    texts : list of str or None, default=None
        The raw texts the ids were made from (``MIGRelevance.transform``
        keeps them), so that a model of another kind in the same Pipeline,
        such as ``PlantClassifier``'s shortlist, reads the same documents.

    Attributes
    ----------
    docs : list of ndarray
        The documents' token ids.
    relevance : MIGRelevance
        The fitted transformer that produced them.
    texts : list of str or None
        The raw texts, row-aligned with ``docs``, when known.
    shape : tuple of (int,)
        ``(n_docs,)``, so that scikit-learn counts the samples.

    Examples
    --------
    >>> import numpy as np
    >>> c = TokenCorpus([np.array([2, 3]), np.array([4]), np.array([], dtype=np.int64)], None)
    >>> len(c), c.shape, c[0].tolist()
    (3, (3,), [2, 3])
    >>> sub = c[np.array([True, False, True])]
    >>> type(sub).__name__, len(sub), [d.tolist() for d in sub]
    ('TokenCorpus', 2, [[2, 3], []])
    """

    def __init__(self, docs, relevance, texts=None):
        self.docs = list(docs)
        self.relevance = relevance
        self.texts = None if texts is None else list(texts)
        if self.texts is not None and len(self.texts) != len(self.docs):
            raise ValueError(f"{len(self.texts)} texts for {len(self.docs)} documents; "
                             "they must align row by row")

    @property
    def shape(self):
        return (len(self.docs),)

    @property
    def ndim(self):
        return 1

    def __len__(self):
        return len(self.docs)

    def __iter__(self):
        return iter(self.docs)

    def _subset(self, rows):
        texts = None if self.texts is None else [self.texts[i] for i in rows]
        return TokenCorpus([self.docs[i] for i in rows], self.relevance, texts)

    def __getitem__(self, key):
        if isinstance(key, tuple):
            # numpy-style ``corpus[key, ...]``, as scikit-learn's indexing does.
            rest = [k for k in key[1:] if k is not Ellipsis]
            if len(key) == 0 or rest:
                raise IndexError("TokenCorpus is one-dimensional: index rows only.")
            key = key[0]
        if isinstance(key, (numbers.Integral, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return self.docs[key]
        if isinstance(key, slice):
            return TokenCorpus(self.docs[key], self.relevance,
                               None if self.texts is None else self.texts[key])
        key = np.asarray(key)
        if key.dtype == np.bool_:
            if key.shape != (len(self.docs),):
                raise IndexError(
                    f"boolean index of shape {key.shape} does not match the "
                    f"{len(self.docs)} documents."
                )
            return self._subset(np.flatnonzero(key))
        if key.size == 0:
            return TokenCorpus([], self.relevance, None if self.texts is None else [])
        if not np.issubdtype(key.dtype, np.integer) or key.ndim != 1:
            raise IndexError(
                "TokenCorpus rows are indexed by an int, a slice, a 1-d integer array "
                f"or a boolean mask; got dtype={key.dtype}, ndim={key.ndim}."
            )
        n = len(self.docs)
        if key.size and (key.max() >= n or key.min() < -n):
            raise IndexError(f"index out of range for {n} documents.")
        return self._subset(key.tolist())

    def __repr__(self):
        n_tok = sum(len(d) for d in self.docs)
        return f"TokenCorpus(n_docs={len(self.docs)}, n_tokens={n_tok})"
