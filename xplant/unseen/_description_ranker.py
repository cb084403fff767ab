"""DescriptionRanker: rank labels by the similarity of a document to their descriptions.

The zero-shot baseline: it needs no training document of a label, so it
ranks labels never seen in training (:mod:`xplant.unseen`).
"""


import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from .._descriptions import check_label_texts, label_documents
from .._fitted_parts import FittedFields, part_fields
from ..linear._base import MultiLabelRankerMixin
from ._sentences import sentence_spans, split_sentences

#: The ``passages`` a DescriptionRanker scores a document by.
PASSAGES = ("document", "sentences", "both")

def best_sentence_cosines(vectorizer, label_matrix, texts, block=64):
    """Each label's highest TF-IDF cosine over a document's sentences (:func:`split_sentences`).

    Parameters
    ----------
    vectorizer : TfidfVectorizer
        Fitted, L2-normalising.
    label_matrix : csr_matrix of shape (n_labels, n_features)
        L2-normalised label texts.
    texts : list of str of length n
        Raw documents.
    block : int, default=64
        Documents whose sentences are scored together: the dense work is
        (their sentences, n_labels).

    Returns
    -------
    ndarray of shape (n, n_labels), of ``label_matrix``'s dtype
    """
    out = np.empty((len(texts), label_matrix.shape[0]), dtype=label_matrix.dtype)
    for lo in range(0, len(texts), block):
        sents = [split_sentences(t) for t in texts[lo:lo + block]]
        starts = np.cumsum([0] + [len(x) for x in sents[:-1]])
        S = vectorizer.transform([x for doc in sents for x in doc]) @ label_matrix.T
        out[lo:lo + len(sents)] = np.maximum.reduceat(S.toarray(), starts, axis=0)
    return out


def _encode(texts, spec):
    """:func:`xplant.unseen.encode_texts`, imported only when an encoder is used."""
    from ._encoder import encode_texts
    return encode_texts(texts, spec)


#: The field at which the estimators that read text read a document given as a mapping (a
#: JSON lines record with several text fields, for a fusion whose parts read different
#: fields: :class:`xplant.unseen.DescriptionFusion` with ``mentions``).
TEXT_FIELD = "text"


def _check_texts(X, name="X", *, records=False, fields=()):
    """The documents of ``X`` as strings; with ``records``, strings or mappings kept as given.

    A mapping is read at :data:`TEXT_FIELD` (a string); anything else is an
    error. Each field of ``fields`` (another text a reader of the documents
    reads, as ``(field, reader)``) must be a string of every document, which
    then has to be a mapping.
    """
    if isinstance(X, str) or not hasattr(X, "__len__"):
        raise ValueError(f"{name} must be a sequence of document strings; got {type(X).__name__}")
    docs = list(X)
    for i, t in enumerate(docs):
        for field, reader in fields:
            if not (hasattr(t, "keys") and isinstance(t.get(field), str)):
                have = sorted(t) if hasattr(t, "keys") else f"a {type(t).__name__}"
                raise ValueError(f"{name}[{i}] has no text field {field!r}, which {reader} reads "
                                 f"(it has: {have}); give each document as a mapping "
                                 f"{{{TEXT_FIELD!r}: text, {field!r}: that text}}")
        if isinstance(t, str):
            continue
        if records and hasattr(t, "keys"):
            if isinstance(t.get(TEXT_FIELD), str):
                continue
            raise ValueError(f"{name}[{i}] has no text field {TEXT_FIELD!r} (fields: {sorted(t)}); "
                             f"a document given as a mapping holds its text at {TEXT_FIELD!r}")
        raise ValueError(f"{name}[{i}] is a {type(t).__name__}; DescriptionRanker reads raw texts "
                         "(put it first in a Pipeline, or pass the documents' strings)")
    return docs


def _texts_of(docs, field=None):
    """The text of each document of :func:`_check_texts`: a mapping's :data:`TEXT_FIELD`,
    or its ``field`` (which :func:`_check_texts` found in every document)."""
    if field is not None:
        return [d[field] for d in docs]
    return [d if isinstance(d, str) else d[TEXT_FIELD] for d in docs]


class _TextScorer:
    """What the two estimators of this subpackage share: raw texts in, one dense
    score per label out (``_validate_X`` and ``_scores`` are theirs)."""

    def _text_scores(self, X):
        check_is_fitted(self)
        texts = self._validate_X(X)
        return self._scores(texts) if texts else np.zeros((0, self.n_labels_))

    def _explained(self, X, top_labels, top_spans, labels):
        """What ``explain`` starts from: the checked texts and ``top_spans``, the
        (n, L) scores, and per document the label columns to explain (given,
        else the top ``top_labels`` by score, ties to the lower index)."""
        from ..evidence._spans import check_label_lists
        from ..metrics import top_k_indices
        from ..metrics._validation import check_k
        check_is_fitted(self)
        texts = self._validate_X(X)
        top_labels, top_spans = check_k(top_labels, "top_labels"), check_k(top_spans, "top_spans")
        chosen = None if labels is None else check_label_lists(labels, len(texts), self.n_labels_)
        scores = self._text_scores(texts)
        if chosen is None:
            chosen = list(top_k_indices(scores, min(top_labels, self.n_labels_))) if texts else []
        return texts, top_spans, scores, chosen

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.sparse = False
        return tags


class LabelTexts(FittedFields):
    """The fitted model of a :class:`DescriptionRanker`, its part ``parts_["model"]``.

    Owns ``vectorizer_``, ``label_texts_``, ``label_matrix_``, ``k_``,
    ``label_embeddings_`` and ``label_embedding_owner_`` (their views). The
    linear format writes them into the ranker's entry of ``config.json``
    and its arrays (the fitted TF-IDF as a step of its own) and its loader
    builds this part from them (:mod:`xplant.unseen._io`).

    Its fields are those attributes' names without the trailing underscore
    (see :class:`DescriptionRanker`'s attributes).
    """

    FIELDS = ("vectorizer", "label_texts", "label_matrix", "k", "label_embeddings",
              "label_embedding_owner")


class DescriptionRanker(_TextScorer, MultiLabelRankerMixin, ClassifierMixin, BaseEstimator):
    """Score each label by the TF-IDF cosine between a document and the label's text.

    A label's text is its description and synonyms (and optionally its
    ancestors' descriptions), so the ranker needs no training document of
    the label: it ranks labels never seen in training, and serves as a
    shortlist source or as a second score in fusion beside a trained model.
    Training documents are used only to fit the TF-IDF weights (together
    with the label texts, so that a description word absent from the
    corpus still counts).

    Parameters
    ----------
    vectorizer : TfidfVectorizer or None, default=None
        Cloned and fitted in ``fit``; None means
        ``TfidfVectorizer(sublinear_tf=True, stop_words="english")``.
        Its rows must be L2-normalised (``norm="l2"``) for the scores to be
        cosines.
    ancestor_depth : int, default=0
        Levels of ancestors whose descriptions join a label's text (see
        :func:`xplant._descriptions.label_documents`); 0 uses the label's
        own description and synonyms only.
    passages : {"both", "document", "sentences"}, default="both"
        What a label's text is compared with: ``"document"`` the whole
        document (one cosine), ``"sentences"`` each sentence of it
        (:func:`split_sentences`; the best sentence's cosine), ``"both"``
        the mean of the two. A code title is a few words; in a long
        document the words of the one sentence that states the diagnosis
        weigh little, and the best sentence's cosine finds them
        (:doc:`/benchmarks/archive/results`, "Levers toward MAP 50, on dev").
    encoder : str or None, default=None
        A sentence encoder whose cosines are added to the TF-IDF score:
        ``"minilm"`` (the bundled MiniLM-L6, needs the ``neural`` and
        ``pretrained`` extras) or ``"hf:<folder>"`` (a local Hugging Face
        encoder; :func:`xplant.unseen.encode_texts`). It matches
        a sentence and a label text that share meaning but no word
        ("renal failure" and "kidney disease"). None: TF-IDF only, no torch.
    encoder_threshold : float, default=0.3
        Cosines of the encoder at or below it count 0, and above it count
        ``cos - encoder_threshold``: unrelated short texts still have
        cosines of 0.1 to 0.3 under a sentence encoder, and that floor would
        otherwise add to every label. In [0, 1).

    Attributes
    ----------
    parts_ : dict of str to object
        The fitted parts: ``"label_space"`` (:class:`xplant._label_space.LabelSpace`),
        which the label-space attributes read, ``"model"`` (:class:`LabelTexts`,
        which the attributes from ``vectorizer_`` on read), the decision rule
        once set, and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict(X)`` (``parts_["decision_rule"]``,
        :class:`xplant.metrics.DecisionRule`): top-``k_``
        until one is set; ``xplant run`` sets the rule it chose on dev, and
        a saved model keeps it.
    classes_ : ndarray of shape (n_labels,)
    n_labels_ : int
    label_frequency_ : ndarray of shape (n_labels,), dtype int64
    n_train_documents_ : int
    vectorizer_ : TfidfVectorizer
        Fitted on the training documents and the label texts.
    label_texts_ : list of str, length n_labels
        The text each label is matched against (``""`` for a label with
        no description, which scores 0 for every document).
    label_matrix_ : csr_matrix of shape (n_labels, n_features), float64
        L2-normalised TF-IDF rows of ``label_texts_``.
    k_ : int
        Labels per document of the default ``predict`` rule: the mean number
        of labels per training document, rounded, at least 1.
    label_embeddings_ : ndarray of shape (n_parts, hidden_size), float32, or None
        The encoder's unit embeddings of the parts of the label texts, each
        embedded alone: a label's description, each synonym and each
        ancestor's description; None without an encoder.
    label_embedding_owner_ : ndarray of shape (n_parts,), int64, or None
        The label (column) of each row of ``label_embeddings_``, ascending.

    Notes
    -----
    ``cos(d, l) = cos(tfidf(d), tfidf(text_l))`` in [0, 1], and with
    ``passages="both"`` ``score(d, l) = (cos(d, l) + max_s cos(s, l)) / 2``
    over the sentences s of d. With an encoder E and threshold t, every
    ``passages`` setting adds ``max(0, max_s max_p E(s)·E(p) - t)`` over the
    parts p of the label's text (its description, each synonym, each
    ancestor's description): the best sentence's cosine with the label's
    best-matching name, above t. A 128-token encoder sees a sentence, not a
    whole clinical note, and a synonym embedded alone is not diluted by the
    label's other names. The last call's result is kept, so
    fitting a :class:`DescriptionFusion` on dev and then scoring dev encodes
    dev's sentences once. Scoring n documents costs one sparse product
    per passage kind, O(nnz(X) * mean postings) time, and a dense (n, L)
    block per block of documents (of its sentences, 64 documents at a time). Equal scores rank the lower label
    index first. The method is the classical retrieval baseline for
    zero-shot ICD coding (code titles as queries; compare Rios and Kavuluru,
    EMNLP 2018, who learn from the same titles).

    Examples
    --------
    >>> import numpy as np
    >>> texts = ["chest pain and fever", "broken left arm", "fever and cough"]
    >>> Y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])  # label 2 has no training document
    >>> r = DescriptionRanker().fit(texts, Y, label_descriptions=["fever", "fracture of arm", "cough"])
    >>> r.predict_top_k(["a dry cough"], 1)[0].tolist()
    [[2]]
    """

    #: the fitted model's views: parts_["model"] (the embeddings are None without an encoder)
    vectorizer_, label_texts_, label_matrix_, k_, label_embeddings_, label_embedding_owner_ = \
        part_fields("model", LabelTexts, *LabelTexts.FIELDS, unset=False)

    def __init__(self, vectorizer=None, ancestor_depth=0, passages="both", encoder=None,
                 encoder_threshold=0.3):
        self.vectorizer = vectorizer
        self.ancestor_depth = ancestor_depth
        self.passages = passages
        self.encoder = encoder
        self.encoder_threshold = encoder_threshold

    def fit(self, X, Y, *, label_descriptions=None, label_synonyms=None, label_parents=None,
            parent_descriptions=None, label_names=None):
        """Fit the TF-IDF weights and vectorise each label's text.

        Parameters
        ----------
        X : sequence of str of length n_samples
            Training documents (raw texts).
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels)
            0/1 labels; used for the label space and frequencies only.
        label_descriptions : sequence of str of length n_labels
            Required; ``""`` where unknown.
        label_synonyms : sequence of list of str of length n_labels, optional
            Each label's synonyms, added to its text.
        label_parents : sequence of list of str of length n_labels, optional
            Needed for ``ancestor_depth > 0``.
        parent_descriptions : dict of str to str, optional
            Descriptions of parents that are not labels (a loader's
            ``parent_descriptions``).
        label_names : sequence of str of length n_labels, optional
            Stored as ``classes_``; lets parents that are labels be found.

        Returns
        -------
        self : DescriptionRanker

        Raises
        ------
        ValueError
            If ``label_descriptions`` is missing, has the wrong length, or no
            label has any text; if synonyms or parents are not lists of
            strings; for a bad ``Y``, ``ancestor_depth``, ``passages``,
            ``encoder`` or ``encoder_threshold``.
        FileNotFoundError
            When ``encoder`` names no local model folder.
        ImportError
            With an ``encoder`` but without torch, transformers or (for
            ``"minilm"``) the bundled weights.
        """
        texts = _check_texts(X)
        Y = self._fit_label_space(Y, len(texts), label_names)
        if not isinstance(self.ancestor_depth, (int, np.integer)) or self.ancestor_depth < 0:
            raise ValueError(f"ancestor_depth must be a non-negative int; got {self.ancestor_depth!r}")
        if self.passages not in PASSAGES:
            raise ValueError(f"passages must be one of {PASSAGES}; got {self.passages!r}")
        if self.encoder is not None and not isinstance(self.encoder, str):
            raise ValueError(f"encoder must be None, 'minilm' or 'hf:<folder>'; got {self.encoder!r}")
        t = self.encoder_threshold
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) \
                or not 0 <= t < 1:
            raise ValueError(f"encoder_threshold must be a number in [0, 1); got {t!r}")
        if label_descriptions is None:
            raise ValueError("DescriptionRanker needs label_descriptions, one string per label: "
                             "fit(X, Y, label_descriptions=data.label_descriptions), or in a Pipeline "
                             "pipe.fit(X, Y, <step>__label_descriptions=...)")
        desc, syn, parents = check_label_texts(self.n_labels_, label_descriptions, label_synonyms, label_parents)
        self.label_texts_ = label_documents(desc, syn, parents, self.classes_ if label_names is not None else None,
                                            parent_descriptions, int(self.ancestor_depth))
        if not any(t.strip() for t in self.label_texts_):
            raise ValueError("no label has a description or synonym; DescriptionRanker has nothing to "
                             "match documents against (install xplant[descriptions] for ICD titles, or "
                             "give a descriptions file)")
        vec = TfidfVectorizer(sublinear_tf=True, stop_words="english") if self.vectorizer is None else clone(self.vectorizer)
        self.vectorizer_ = vec.fit(texts + self.label_texts_)
        self.label_matrix_ = sp.csr_matrix(self.vectorizer_.transform(self.label_texts_), dtype=np.float64)
        self.k_ = max(1, int(round(Y.nnz / max(1, self.n_train_documents_))))
        self.label_embeddings_ = self.label_embedding_owner_ = None
        if self.encoder is not None:
            # each part of a label's text (description, synonym, ancestor) embedded alone
            parts = label_documents(desc, syn, parents, self.classes_ if label_names is not None else None,
                                    parent_descriptions, int(self.ancestor_depth), joined=False)
            owned = [(j, t) for j, texts_j in enumerate(parts) for t in texts_j if t.strip()]
            self.label_embedding_owner_ = np.array([j for j, _ in owned], dtype=np.int64)
            self.label_embeddings_ = _encode([t for _, t in owned], self.encoder)
        return self

    def _validate_X(self, X):
        return _check_texts(X)

    def _scores(self, X):
        texts = list(X)
        passages = self.passages
        out = None
        if passages in ("document", "both"):
            D = self.vectorizer_.transform(texts)
            out = np.asarray((D @ self.label_matrix_.T).toarray(), dtype=np.float64)
        if passages in ("sentences", "both"):
            best = self._best_sentence(texts)
            out = best if out is None else (out + best) / 2
        if getattr(self, "label_embeddings_", None) is not None:
            out += np.maximum(self._best_embedded_sentence(texts) - self.encoder_threshold, 0.0)
        return out

    def _best_embedded_sentence(self, texts, block=64):
        """(n, L) float64: each label's highest encoder cosine over a document's
        sentences (:func:`~xplant.unseen.sentence_embeddings`, which
        keeps its last calls)."""
        from ._encoder import sentence_embeddings
        E, offsets = sentence_embeddings(texts, self.encoder)
        out = np.empty((len(texts), self.n_labels_))
        for lo in range(0, len(texts), block):
            hi = min(lo + block, len(texts))
            S = self._embedded_cosines(E[offsets[lo]:offsets[hi]])
            out[lo:hi] = np.maximum.reduceat(S, offsets[lo:hi] - offsets[lo], axis=0)
        return out

    def _embedded_cosines(self, E):
        """(m, L): each label's highest cosine between a row of ``E`` (unit
        embeddings) and the parts of the label's text; 0 for a label without text."""
        from ._encoder import best_part_cosines
        return best_part_cosines(E, self.label_embeddings_, self.label_embedding_owner_,
                                 self.n_labels_)

    def _best_sentence(self, texts, block=64):
        """(n, L) float64: each label's highest cosine over a document's sentences."""
        return best_sentence_cosines(self.vectorizer_, self.label_matrix_, texts, block)

    def decision_function(self, X):
        """Cosine of each document with each label's text: the ranking score.

        A cosine is no probability of the label, so the ranker has no
        ``predict_proba`` (:doc:`/guide/metrics`, "Scores").

        Parameters
        ----------
        X : sequence of str of length n_samples
            Raw documents.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_labels), dtype float64
            In [0, 1] (with an ``encoder``, [0, 2)); 0 for labels without
            text. Dense: use ``predict_top_k`` for many labels.
        """
        return self._text_scores(X)

    def explain(self, X, top_labels=5, top_spans=3, *, labels=None):
        """The top labels of each document with the sentences that match their texts best.

        The evidence of a description score: for each label, the
        document's sentences (:func:`sentence_spans`) ranked by the TF-IDF
        cosine with the label's text, the measure the ``"sentences"``
        passages score by (with an ``encoder``, plus the encoder's cosine
        above ``encoder_threshold``). The same output as
        :meth:`xplant.neural.PlantClassifier.explain`, so a report or
        ``xplant predict --evidence`` shows either.

        Parameters
        ----------
        X : sequence of str of length n_samples
            Raw documents (offsets refer to these strings).
        top_labels : int, default=5
            Labels explained per document, by :meth:`decision_function`
            (ties: the lower label index first).
        top_spans : int, default=3
            Sentences kept per label, highest cosine first (ties: the
            earlier sentence); a sentence of weight 0 (no word shared with
            the label's text and, with an encoder, no cosine above the
            threshold) is never a span.
        labels : sequence of sequence of int, optional
            Per document, the label columns to explain instead of its top
            labels (``top_labels`` is then ignored).

        Returns
        -------
        list of dict, one per document
            ``{"labels": [{"label", "index", "score", "prob", "source",
            "spans": [{"start", "end", "text", "weight"}]}]}``: ``score`` is
            the label's :meth:`decision_function` value, ``prob`` is None (a
            cosine is no probability), ``source`` is ``"descriptions"``;
            ``text == document[start:end]`` and ``weight`` is the
            sentence's cosine with the label's text, in (0, 1] (with an
            ``encoder``, plus its cosine above the threshold: in (0, 2)).

        Raises
        ------
        ValueError
            For a ``top_labels`` or ``top_spans`` that is not a positive
            integer, or a ``labels`` that does not hold one sequence of
            column indices per document.

        Examples
        --------
        >>> import numpy as np
        >>> texts = ["chest pain and fever", "broken left arm", "fever and cough"]
        >>> Y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])
        >>> r = DescriptionRanker().fit(texts, Y, label_descriptions=["fever", "fracture of arm", "cough"])
        >>> ex = r.explain(["No fever. A dry cough at night."], top_labels=1)[0]["labels"][0]
        >>> ex["index"], ex["spans"][0]["text"], ex["spans"][0]["start"]
        (2, 'A dry cough at night.', 10)
        """
        texts, top_spans, scores, chosen = self._explained(X, top_labels, top_spans, labels)
        out = []
        for text, row, cols in zip(texts, scores, chosen):
            spans = sentence_spans(text)
            V = self.vectorizer_.transform([text[a:b] for a, b in spans])
            C = np.asarray((V @ self.label_matrix_[cols].T).toarray(), dtype=np.float64)
            if getattr(self, "label_embeddings_", None) is not None and len(cols):
                E = _encode([text[a:b] for a, b in spans], self.encoder)
                C += np.maximum(self._embedded_cosines(E)[:, cols] - self.encoder_threshold, 0.0)
            entries = []
            for q, lab in enumerate(cols):
                cos = C[:, q]
                order = np.lexsort((np.arange(cos.size), -cos))[:int(top_spans)]
                entries.append({
                    "label": self.classes_[lab].item() if hasattr(self.classes_[lab], "item")
                    else self.classes_[lab],
                    "index": int(lab), "score": float(row[lab]), "prob": None,
                    "source": "descriptions",
                    "spans": [{"start": spans[s][0], "end": spans[s][1],
                               "text": text[spans[s][0]:spans[s][1]], "weight": float(cos[s])}
                              for s in order if cos[s] > 0]})
            out.append({"labels": entries})
        return out
