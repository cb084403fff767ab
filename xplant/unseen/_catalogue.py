"""The unseen labels of an open label space, scored by their texts and their hierarchy.

:class:`CatalogueIndex` is a fitted part of
:class:`~xplant.unseen.DescriptionFusion` with a catalogue
(``fit(..., catalogue=...)``): it holds every label that has no training
positive (tens of thousands for a whole ICD-10-CM catalogue) and gives each
document a short list of them, batch by batch, never an (n, L) array over
the catalogue. Four signals score an unseen label u for a document d:

* ``text``: TF-IDF cosine of u's name and synonyms with d and with d's best
  sentence, averaged, plus, with an encoder, the best sentence's encoder
  cosine with u's best-matching name above the threshold: the description
  score of :class:`~xplant.unseen.DescriptionRanker` (``passages="both"``),
  the same rule for the labels the fusion knows and for the catalogue;
* ``near``: the highest score of the trained model, on d, among u's seen
  relatives one step away: its parent, its siblings (seen labels with the
  same parent) and its children;
* ``family``: the same over the seen labels of u's family (for ICD codes
  the 3-character category, ``I21`` for ``I21.A1``);
* ``prior``: how much more often a label of u's form is used than the
  catalogue lists one (:func:`label_form_prior`, learned from the labels
  with one or two training documents, which stand in for the unseen ones);
  the same for every document.

A document's candidates are the union of its top ``n_candidates`` labels by
``text``, by ``text`` plus the prior (at :data:`PRIOR_POOL_SCALE`), by
``near`` and by ``family`` (those two with ties broken by ``text``), so the
pool does not depend on the weights the fusion chooses on dev.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer

from ._description_ranker import best_sentence_cosines
from ._label_forms import apply_form_prior, label_family, label_form_prior, label_forms

#: The four signals of a candidate, in the order of :meth:`CatalogueIndex.candidates`.
SIGNALS = ("text", "near", "family", "prior")

#: The scale of the prior in the candidate pool ranked by ``text + PRIOR_POOL_SCALE * prior``
#: (one of the pools of :meth:`CatalogueIndex.candidates`; the fusion's own weight is chosen on dev).
PRIOR_POOL_SCALE = 0.02


def _vectorizer(vocabulary=None):
    return TfidfVectorizer(sublinear_tf=True, stop_words="english", vocabulary=vocabulary,
                           dtype=np.float32)


class CatalogueIndex:
    """Unseen labels indexed by text and hierarchy; a fitted part, not an estimator.

    Parameters
    ----------
    n_candidates : int, default=100
        Labels kept per document and signal (:data:`SIGNALS`).
    family_prefix : int or None, default=3
        The family of a label is its first ``family_prefix`` characters (the
        ICD-10 category); None: its parent.
    block : int, default=16
        Documents scored together: the dense work of a block is
        (block sentences, n_unseen) float32.
    encoder : str or None, default=None
        A sentence encoder whose cosines join ``text``
        (:class:`~xplant.unseen.DescriptionRanker`'s ``encoder``); the
        unseen labels' names are encoded once per catalogue version and
        cached (:func:`~xplant.unseen.cached_embeddings`). None: TF-IDF only.
    encoder_threshold : float, default=0.3
        Encoder cosines count above it (the ranker's rule).

    Attributes
    ----------
    vectorizer_ : TfidfVectorizer
        Its vocabulary is the words of the training documents and of every
        label text given to ``fit``; its IDF weights come from the training
        documents alone, so labels added later (:meth:`add`) do not change
        the weights of the others.
    label_names_ : ndarray of str of shape (n_open,)
    seen_ : ndarray of int64
        Columns with a training positive.
    unseen_ : ndarray of int64
        Columns without one: the labels this index scores.
    label_matrix_ : csr_matrix of shape (n_unseen, n_features), float32
        L2-normalised TF-IDF rows of the unseen labels' texts.
    prior_ : ndarray of float32 of shape (n_unseen,)
        The ``prior`` signal (:func:`label_form_prior`).
    prior_table_ : list of dict of str to float
        The form prior's table, which labels added later (:meth:`add`) read.
    part_embeddings_ : ndarray of float16 of shape (n_parts, hidden_size) or None
        With an encoder: the unit embeddings of the unseen labels' names and
        synonyms, each alone.
    part_owner_ : ndarray of int64 of shape (n_parts,) or None
        The row of ``unseen_`` each part belongs to, ascending.
    """

    def __init__(self, n_candidates=100, family_prefix=3, block=16, encoder=None,
                 encoder_threshold=0.3):
        self.n_candidates = n_candidates
        self.family_prefix = family_prefix
        self.block = block
        self.encoder = encoder
        self.encoder_threshold = encoder_threshold

    # ------------------------------------------------------------------ fitting

    def fit(self, texts, label_names, label_texts, label_parents, seen, *, label_parts=None,
            label_frequency=None):
        """Fit the vectorizer on the training documents and index the unseen labels.

        Parameters
        ----------
        texts : list of str
            Training documents.
        label_names : sequence of str of shape (n_open,)
            The open label space.
        label_texts : sequence of str of shape (n_open,)
            Each label's name and synonyms, joined.
        label_parents : sequence of str of shape (n_open,)
            Each label's parent code, ``""`` for none.
        seen : array-like of bool of shape (n_open,)
            Labels with a training positive.
        label_parts : sequence of list of str of shape (n_open,), optional
            Each label's names (description, each synonym) for the encoder;
            None: ``label_texts``, one part each.
        label_frequency : array-like of int of shape (n_open,), optional
            Training documents per label, for the prior; None: ``seen`` as
            0/1 (every seen label counts as rare).

        Returns
        -------
        self
        """
        analyzer = _vectorizer().build_analyzer()
        vocab = set()
        for t in list(texts) + [t for t in label_texts if t]:
            vocab.update(analyzer(t))
        self.vectorizer_ = _vectorizer(sorted(vocab)).fit(texts)
        seen = np.asarray(seen, dtype=bool)
        self.label_names_ = np.asarray(label_names, dtype=str)
        self.seen_ = np.flatnonzero(seen).astype(np.int64)
        self.unseen_ = np.flatnonzero(~seen).astype(np.int64)
        self.label_parents_ = np.asarray([str(p) for p in label_parents], dtype=str)
        self.label_matrix_ = sp.csr_matrix(
            self.vectorizer_.transform([label_texts[j] for j in self.unseen_]), dtype=np.float32)
        freq = seen.astype(np.int64) if label_frequency is None else np.asarray(label_frequency)
        prior, self.prior_table_ = label_form_prior(self.label_names_, self.label_parents_, freq)
        self.prior_ = prior[self.unseen_]
        parts = [[t] for t in label_texts] if label_parts is None else label_parts
        self._embed(parts, self.unseen_, 0)
        self._index_hierarchy()
        return self

    def _embed(self, parts, unseen_rows, start):
        """Append the encoder's embeddings of the unseen labels' names.

        ``parts`` holds the names of every label given (the whole open space
        at ``fit``), so that the cache's key is the set of the catalogue's
        names and not the subset a training split leaves unseen (a refit on
        train + dev, or another training split of the same catalogue, reads
        the same entry); ``unseen_rows`` are the positions in
        ``parts`` of the unseen labels, which take rows ``start``, ``start
        + 1``, ... of ``unseen_``.
        """
        self._parts32 = None
        if self.encoder is None:
            self.part_embeddings_ = self.part_owner_ = None
            return
        from ._encoder import cached_embeddings
        owned = [(j, t) for j, names in enumerate(parts) for t in names if t and t.strip()]
        row_of = np.full(len(parts), -1, dtype=np.int64)
        row_of[np.asarray(unseen_rows, dtype=np.int64)] = start + np.arange(len(unseen_rows))
        owner = row_of[np.array([j for j, _ in owned], dtype=np.int64)]
        keep = owner >= 0
        E = cached_embeddings([t for _, t in owned], self.encoder, what="catalogue names")[keep] \
            if keep.any() else None
        owner = owner[keep]
        old = getattr(self, "part_embeddings_", None) if start else None
        if old is not None and old.shape[0]:
            E = old if E is None else np.vstack([old, E])
            owner = np.concatenate([self.part_owner_, owner])
        self.part_embeddings_ = np.zeros((0, 0), np.float16) if E is None else E
        self.part_owner_ = owner

    def _part_matrix(self):
        """The part embeddings in float32, converted once (the saved form is float16)."""
        if getattr(self, "_parts32", None) is None:
            self._parts32 = np.asarray(self.part_embeddings_, dtype=np.float32)
        return self._parts32

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_parts32", None)              # a float32 copy of a fitted array
        return state

    def add(self, label_names, label_texts, label_parents, label_parts=None):
        """Append labels (a new catalogue release) without refitting anything.

        The new labels have no training positive: they are indexed with the
        fitted vectorizer (words outside its vocabulary count for nothing),
        the fitted encoder and their parents, and take the prior of their
        form (``prior_table_``), exactly as they would have been at
        ``fit``.

        Parameters
        ----------
        label_names, label_texts, label_parents : sequence of str of shape (n_new,)
            The new labels, their names and synonyms joined, their parents
            (``""`` for none).
        label_parts : sequence of list of str of shape (n_new,), optional
            Their names for the encoder (see :meth:`fit`).

        Returns
        -------
        self
        """
        if not len(label_names):
            return self
        start = self.label_names_.size
        row = self.unseen_.size
        self.label_names_ = np.concatenate([self.label_names_, np.asarray(label_names, dtype=str)])
        self.label_parents_ = np.concatenate([self.label_parents_,
                                              np.asarray([str(p) for p in label_parents], dtype=str)])
        self.unseen_ = np.concatenate([self.unseen_, start + np.arange(len(label_names))])
        self.label_matrix_ = sp.vstack([self.label_matrix_, sp.csr_matrix(
            self.vectorizer_.transform(list(label_texts)), dtype=np.float32)]).tocsr()
        forms = label_forms(self.label_names_, self.label_parents_)[start:]
        self.prior_ = np.concatenate([self.prior_, apply_form_prior(self.prior_table_, forms)])
        if self.encoder is not None:
            parts = [[t] for t in label_texts] if label_parts is None else label_parts
            self._embed(parts, np.arange(len(parts)), row)
        self._index_hierarchy()
        return self

    def _index_hierarchy(self):
        """Group the seen labels by the keys their unseen relatives look up."""
        names, parents = self.label_names_, self.label_parents_
        fam = np.array([label_family(n, p, self.family_prefix) for n, p in zip(names, parents)],
                       dtype=str)
        keys = {}
        near_pairs = []                                    # (key, seen position)
        for pos, j in enumerate(self.seen_):
            for key in {parents[j], names[j]} - {""}:      # parent's group: siblings and parent
                near_pairs.append((keys.setdefault(key, len(keys)), pos))
        u = self.unseen_
        # an unseen label looks up its parent's group (siblings, the parent) and its own (children)
        self.near_keys_ = np.array([[keys.get(parents[j], -1) if parents[j] else -1,
                                     keys.get(names[j], -1)] for j in u], dtype=np.int64
                                   ).reshape(-1, 2)
        self.near_groups_ = _groups(near_pairs, len(keys))
        fkeys = {}
        fam_pairs = [(fkeys.setdefault(fam[j], len(fkeys)), pos) for pos, j in enumerate(self.seen_)
                     if fam[j]]
        self.family_keys_ = np.array([fkeys.get(fam[j], -1) if fam[j] else -1 for j in u],
                                     dtype=np.int64)
        self.family_groups_ = _groups(fam_pairs, len(fkeys))

    # ------------------------------------------------------------------ scoring

    def text_scores(self, texts):
        """The ``text`` signal of every unseen label: dense, for small inputs and tests.

        Parameters
        ----------
        texts : list of str of length n
            Raw documents, scored ``block`` at a time.

        Returns
        -------
        text : ndarray of float32 of shape (n, n_unseen)
            The mean of the document's and its best sentence's TF-IDF
            cosines with each label's names, plus the best sentence's
            encoder cosine above ``encoder_threshold`` where the index has
            an encoder; columns in the order of ``unseen_``.
        """
        if not texts:
            return np.zeros((0, self.unseen_.size), dtype=np.float32)
        emb = self._embedded(texts)
        return np.vstack([self._text_block(texts[lo:lo + self.block], _block_of(emb, lo, self.block))
                          for lo in range(0, len(texts), self.block)])

    def _text_block(self, texts, embedded=None):
        """(b, n_unseen) float32 ``text`` of a block of documents; ``embedded``: their
        sentences' encoder embeddings and offsets (:func:`sentence_embeddings`)."""
        doc = (self.vectorizer_.transform(texts) @ self.label_matrix_.T).toarray()
        best = best_sentence_cosines(self.vectorizer_, self.label_matrix_, texts, len(texts))
        out = (doc + best) / 2
        if getattr(self, "part_embeddings_", None) is not None and embedded is not None:
            from ._encoder import best_part_cosines
            E, offsets = embedded
            C = best_part_cosines(E[offsets[0]:offsets[-1]], self._part_matrix(),
                                  self.part_owner_, self.unseen_.size)
            C = np.maximum.reduceat(C, offsets[:-1] - offsets[0], axis=0)
            out += np.maximum(C - float(self.encoder_threshold), 0.0)
        return out

    def _embedded(self, texts):
        """The documents' sentence embeddings (None without an encoder)."""
        if getattr(self, "part_embeddings_", None) is None:
            return None
        from ._encoder import sentence_embeddings
        return sentence_embeddings(list(texts), self.encoder)

    def _relative_scores(self, P):
        """``near`` and ``family`` signals (b, n_unseen) from the seen labels' scores P (b, n_seen)."""
        def gather(groups, keys):
            G = _group_max(P, groups)
            G = np.concatenate([G, np.zeros((P.shape[0], 1), dtype=G.dtype)], axis=1)   # key -1
            return G[:, keys]
        near = np.maximum(gather(self.near_groups_, self.near_keys_[:, 0]),
                          gather(self.near_groups_, self.near_keys_[:, 1]))
        return near, gather(self.family_groups_, self.family_keys_)

    def candidates(self, texts, seen_scores):
        """Each document's candidate unseen labels and their three signals.

        Parameters
        ----------
        texts : list of str of length n
            Raw documents.
        seen_scores : ndarray of shape (n, n_seen)
            The trained model's scores of the seen labels (columns ``seen_``),
            on any scale: each document's are mapped onto [0, 1] by their
            minimum and maximum before ``near`` and ``family`` read them.

        Returns
        -------
        indptr : ndarray of int64 of shape (n + 1,)
        columns : ndarray of int64 of shape (nnz,)
            Open-space columns, ascending within a document.
        signals : ndarray of float32 of shape (nnz, 4)
            ``text``, ``near``, ``family``, ``prior`` of each candidate (:data:`SIGNALS`).
        """
        k = max(1, min(int(self.n_candidates), self.unseen_.size))
        indptr, cols, sigs = [0], [], []
        P = np.asarray(seen_scores, dtype=np.float32)
        if P.shape[1]:
            lo_, hi_ = P.min(axis=1, keepdims=True), P.max(axis=1, keepdims=True)
            P = (P - lo_) / np.where(hi_ > lo_, hi_ - lo_, 1.0)
        emb = self._embedded(texts) if self.unseen_.size else None
        prior = getattr(self, "prior_", np.zeros(self.unseen_.size, np.float32))
        for lo in range(0, len(texts), self.block):
            block = texts[lo:lo + self.block]
            if not self.unseen_.size:
                indptr.extend([indptr[-1]] * len(block))
                continue
            text = self._text_block(block, _block_of(emb, lo, self.block))
            near, fam = self._relative_scores(P[lo:lo + len(block)])
            tie = 1e-4 * text
            for i in range(len(block)):
                pool = np.unique(np.concatenate([
                    _top(text[i], k), _top(text[i] + PRIOR_POOL_SCALE * prior, k),
                    _top(near[i] + tie[i], k), _top(fam[i] + tie[i], k)]))
                cols.append(self.unseen_[pool])
                sigs.append(np.stack([text[i, pool], near[i, pool], fam[i, pool], prior[pool]],
                                     axis=1))
                indptr.append(indptr[-1] + pool.size)
        columns = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        signals = np.concatenate(sigs).astype(np.float32) if sigs else \
            np.zeros((0, len(SIGNALS)), np.float32)
        order = np.concatenate([np.argsort(columns[a:b], kind="stable") + a
                                for a, b in zip(indptr[:-1], indptr[1:])]) if cols else columns
        return np.asarray(indptr, dtype=np.int64), columns[order], signals[order]

    def best_sentence(self, text, column):
        """The sentence of ``text`` closest to an unseen label's text.

        Parameters
        ----------
        text : str
            A raw document.
        column : int
            An open-space column of ``unseen_``.

        Returns
        -------
        start, end : int
            Character offsets of the sentence (the sentence rule of the description ranker).
        cosine : float
            Its TF-IDF cosine with the label's text, plus, with an encoder,
            its encoder cosine with the label's best-matching name above the
            threshold (the ``text`` signal's sentence score; in [0, 2)).

        Raises
        ------
        ValueError
            If ``column`` is not an unseen label of this index.
        """
        from ._sentences import sentence_spans
        spans = sentence_spans(text)
        row = int(np.searchsorted(self.unseen_, column))   # unseen_ ascends
        if row >= self.unseen_.size or self.unseen_[row] != column:
            raise ValueError(f"column {column} is not an unseen label of this index")
        V = self.vectorizer_.transform([text[a:b] for a, b in spans])
        cos = np.asarray((V @ self.label_matrix_[row].T).toarray()).ravel()
        if self.part_embeddings_ is not None:
            from ._encoder import best_part_cosines, encode_texts
            mine = self.part_owner_ == row
            if mine.any():
                E = encode_texts([text[a:b] for a, b in spans], self.encoder)
                enc = best_part_cosines(E, self._part_matrix()[mine],
                                        np.zeros(int(mine.sum()), np.int64), 1)[:, 0]
                cos = cos + np.maximum(enc - float(self.encoder_threshold), 0.0)
        best = int(np.argmax(cos)) if cos.size else 0
        return spans[best][0], spans[best][1], float(cos[best]) if cos.size else 0.0

    def best_span(self, text, column):
        """:meth:`best_sentence` as an evidence span: ``{"start", "end", "text", "weight"}``.

        Parameters
        ----------
        text, column
            As in :meth:`best_sentence` (which raises the same errors).

        Returns
        -------
        dict
            ``text[start:end]`` is the sentence; ``weight`` its cosine.
        """
        start, end, cos = self.best_sentence(text, column)
        return {"start": start, "end": end, "text": text[start:end], "weight": cos}

    # ------------------------------------------------------------------ saving

    def to_dict(self):
        """``(config, arrays)``: JSON-ready settings and numpy arrays (for safetensors).

        The fitted vectorizer is not part of them: the fusion's saver
        stores it as every saved TF-IDF step is stored.
        """
        config = {"n_candidates": int(self.n_candidates),
                  "family_prefix": None if self.family_prefix is None else int(self.family_prefix),
                  "block": int(self.block),
                  "encoder": self.encoder, "encoder_threshold": float(self.encoder_threshold),
                  "label_names": self.label_names_.tolist(),
                  "label_parents": self.label_parents_.tolist(),
                  "prior_table": self.prior_table_}
        m = self.label_matrix_
        arrays = {"seen": self.seen_, "unseen": self.unseen_,
                  "lm_data": m.data.astype(np.float32), "lm_indices": m.indices.astype(np.int64),
                  "lm_indptr": m.indptr.astype(np.int64), "prior": self.prior_}
        if self.part_embeddings_ is not None:
            arrays.update(parts=self.part_embeddings_.astype(np.float16),
                          part_owner=self.part_owner_.astype(np.int64))
        return config, arrays

    @classmethod
    def from_dict(cls, config, arrays, vectorizer):
        """The index :meth:`to_dict` wrote, with no refitting.

        Parameters
        ----------
        config : dict
            The settings part of :meth:`to_dict`.
        arrays : dict of str to ndarray
            Its arrays part.
        vectorizer : TfidfVectorizer
            The fitted vectorizer, loaded by the fusion's loader.

        Returns
        -------
        CatalogueIndex
        """
        out = cls(config["n_candidates"], config["family_prefix"], config["block"],
                  config.get("encoder"), config.get("encoder_threshold", 0.3))
        out.vectorizer_ = vectorizer
        # folders saved before the prior and the encoder: no prior, TF-IDF alone
        out.prior_table_ = [dict(t) for t in config.get("prior_table", [])]
        out.prior_ = np.asarray(arrays.get("prior", np.zeros(len(arrays["unseen"]))),
                                dtype=np.float32)
        out.part_embeddings_ = arrays.get("parts")
        out.part_owner_ = None if out.part_embeddings_ is None else \
            np.asarray(arrays["part_owner"], dtype=np.int64)
        out.label_names_ = np.asarray(config["label_names"], dtype=str)
        out.label_parents_ = np.asarray(config["label_parents"], dtype=str)
        out.seen_ = np.asarray(arrays["seen"], dtype=np.int64)
        out.unseen_ = np.asarray(arrays["unseen"], dtype=np.int64)
        out.label_matrix_ = sp.csr_matrix(
            (arrays["lm_data"], arrays["lm_indices"], arrays["lm_indptr"]),
            shape=(out.unseen_.size, len(vectorizer.vocabulary_)))
        out._index_hierarchy()
        return out


def _block_of(embedded, lo, size):
    """The sentence embeddings and offsets of documents ``lo:lo + size`` (None stays None)."""
    if embedded is None:
        return None
    E, offsets = embedded
    return E, offsets[lo:lo + size + 1]


def _groups(pairs, n_groups):
    """``(order, starts, present)``: seen positions sorted by group, each group's first row."""
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(n_groups, bool), n_groups
    arr = np.array(sorted(pairs), dtype=np.int64)
    gid, starts = np.unique(arr[:, 0], return_index=True)
    present = np.zeros(n_groups, dtype=bool)
    present[gid] = True
    return arr[:, 1], starts, present, n_groups


def _group_max(P, groups):
    """(b, n_groups): each group's highest score in P; 0 for a group without members."""
    order, starts, present, n = groups
    out = np.zeros((P.shape[0], n), dtype=P.dtype)
    if order.size:
        out[:, present] = np.maximum.reduceat(P[:, order], starts, axis=1)
    return out


def _top(row, k):
    """Indices of the k highest entries of ``row`` (ties: any of them)."""
    if k >= row.size:
        return np.arange(row.size)
    return np.argpartition(-row, k - 1)[:k]
