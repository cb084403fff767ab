"""MIGRelevance: the scikit-learn transformer around :func:`mig_scores`."""

import numbers
from collections.abc import Mapping

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from .._labels import check_class_names, check_targets
from .._params import Interval, ParamsMixin, RealNotInt, StrOptions, int_at_least
from .._target_form import _target_form
from ._corpus import TokenCorpus
from ._mig import binarize_tokens, mig_from_counts, mig_scores
from ._inputs import _as_docs, _df_bounds, _drop_columns, _input_kind, _presence, _raw_texts
from ._tokenize import tokenizer_fingerprint
from ._vocabulary import TokenVocabulary


class MIGRelevance(ParamsMixin, TransformerMixin, BaseEstimator):
    """Token-label relevance by exact mutual information gain, and tokenization.

    ``fit`` tokenizes the training texts, builds the vocabulary and computes
    each label's top-k tokens by MIG (in bits) from the training rows only
    (PLANT, arXiv 2410.23066; see :func:`mig_scores`). ``transform`` returns
    a :class:`TokenCorpus`: token ids per document plus a reference to this
    fitted transformer, which the neural estimators use for Stage 1.

    Parameters
    ----------
    tokenizer : "word", callable, Hugging Face tokenizer, "hf:<folder>" or "llm:<spec>", default="word"
        - ``"word"``: the built-in tokenizer, regex ``\\w+`` (Unicode word
          characters) over the original text; each token is lowercased after
          matching when ``lowercase``, so offsets are exact. Ids: 0 =
          ``"<pad>"``, 1 = ``"<unk>"``, then the kept tokens from 2 in sorted
          order.
        - a callable ``str -> list of str``: used in place of the regex, ids as
          for ``"word"``. Offsets are found by searching each token in the text
          after the previous one (exactly, then ignoring case); a token that
          cannot be found gets ``[-1, -1]``.
        - a Hugging Face tokenizer object, or ``"hf:<local folder>"`` loaded
          with ``AutoTokenizer.from_pretrained(folder, local_files_only=True)``:
          ids are the tokenizer's own subword ids (no special tokens added),
          ``vocabulary_ = tokenizer.get_vocab()``. Offsets come from a fast
          tokenizer's offset mapping.
        - ``"llm:<spec>"``: the tokenizer of a decoder LLM, as for a
          Hugging Face tokenizer: a folder, a GGUF file (its tokenizer is read
          from the file) or a packaged name such as ``"llm:smollm2"``; where
          it defines no pad token it pads with EOS (or UNK), as
          ``PlantClassifier(backbone="llm:<spec>")`` needs
          (:func:`xplant.neural.backbones.load_llm_tokenizer`).
    top_k : int or None, default=50
        Tokens kept per label in ``relevance_``; None keeps every positive pair.
    positive_only : bool, default=True
        Keep only tokens positively associated with the label.
    normalize : {None, "joint", "label"}, default=None
        See :func:`mig_scores`.
    min_df, max_df : int or float, default=1 and 1.0
        Document-frequency limits, as in ``CountVectorizer``: an int is a
        count, a float in [0, 1] a fraction of the training documents. With a
        learned word vocabulary, tokens outside the limits map to the unknown
        id. With a fixed vocabulary (``vocabulary=``, a Hugging Face tokenizer)
        the ids stay and only the relevance of those tokens is dropped.
    lowercase : bool, default=True
        Lowercase word/callable tokens (and given token lists). Hugging Face
        tokenizers apply their own normalization instead.
    vocabulary : mapping or iterable of str, default=None
        A fixed vocabulary for word/callable tokenization. An iterable gives
        ids 2, 3, ... in its order (0 and 1 are pad and unk); a mapping must
        map ``"<pad>"`` and ``"<unk>"`` and be a bijection onto 0..V-1.
    max_length : int or None, default=None
        Keep only each document's first ``max_length`` tokens, in ``fit`` (so
        the relevance sees what the backbone sees), ``transform`` and
        ``tokenize``.
    n_jobs : int or None, default=None
        Numba threads for the MIG kernels (-1: all).

    Attributes
    ----------
    vocabulary_ : dict of str -> int
        Token to id. For a document-token matrix input: column j -> j.
    relevance_ : csr_matrix of shape (n_labels, n_tokens), float64
        Each label's top-k tokens with their MIG in bits (normalized when
        asked), sorted column indices. Pad, unk and special-token columns are
        empty.
    document_frequency_ : ndarray of shape (n_tokens,), int64
        Training documents holding each id.
    label_frequency_ : ndarray of shape (n_labels,), int64
        Training positives per label.
    n_train_documents_ : int
    n_labels_ : int
    n_tokens_ : int
        Vocabulary size V (the id space, special ids included).
    classes_ : ndarray of shape (n_labels,)
        Label names: ``label_names`` of ``fit`` (``classes`` of
        ``partial_fit``), else the sorted labels of label lists (as
        ``MultiLabelBinarizer``), else 0..L-1.
    tokenizer_ : str, callable or Hugging Face tokenizer
        The resolved tokenizer (a loaded object for ``"hf:<folder>"``).
    tokenizer_fingerprint_ : str
        See :func:`tokenizer_fingerprint`.
    pad_id_, unk_id_ : int or None
        Padding and unknown ids (None for a matrix input, or where a Hugging
        Face tokenizer has none).
    input_kind_ : {"text", "matrix"}
        Whether the model was fitted on texts/token lists or a matrix.
    n_features_in_ : int
        The number of columns of a document-token matrix given to ``fit``
        (absent for texts).

    See Also
    --------
    mig_scores : the plain function.
    TokenCorpus : what ``transform`` returns.

    Notes
    -----
    The fitted relevance depends only on the rows passed to ``fit`` (or to the
    successive ``partial_fit`` calls, whose sum gives exactly the same result
    as one ``fit`` on all of them).

    Examples
    --------
    >>> from xplant.relevance import MIGRelevance
    >>> texts = ["fever and cough", "cough, cough!", "broken leg", "leg pain"]
    >>> Y = [[1, 0], [1, 0], [0, 1], [0, 1]]
    >>> rel = MIGRelevance(top_k=2).fit(texts, Y)
    >>> [t for t, i in sorted(rel.vocabulary_.items(), key=lambda kv: kv[1])]
    ['<pad>', '<unk>', 'and', 'broken', 'cough', 'fever', 'leg', 'pain']
    >>> rel.relevance_[0].indices.tolist()  # 'cough', then 'and' ties 'fever'
    [2, 4]
    >>> round(float(rel.relevance_[0, 4]), 6), round(float(rel.relevance_[0, 2]), 6)
    (1.0, 0.311278)
    >>> corpus = rel.transform(["Cough and a sore leg"])
    >>> corpus[0].tolist()
    [4, 2, 1, 1, 6]
    """

    _parameter_constraints = {
        "tokenizer": "no_validation",
        "top_k": [int_at_least(1), None],
        "positive_only": ["boolean"],
        "normalize": [StrOptions({"joint", "label"}), None],
        "min_df": [int_at_least(1), Interval(RealNotInt, 0, 1, closed="both")],
        "max_df": [int_at_least(1), Interval(RealNotInt, 0, 1, closed="both")],
        "lowercase": ["boolean"],
        "vocabulary": [Mapping, "array-like", None],
        "max_length": [int_at_least(1), None],
        "n_jobs": [numbers.Integral, None],
    }

    def __init__(
        self,
        tokenizer="word",
        *,
        top_k=50,
        positive_only=True,
        normalize=None,
        min_df=1,
        max_df=1.0,
        lowercase=True,
        vocabulary=None,
        max_length=None,
        n_jobs=None,
    ):
        self.tokenizer = tokenizer
        self.top_k = top_k
        self.positive_only = positive_only
        self.normalize = normalize
        self.min_df = min_df
        self.max_df = max_df
        self.lowercase = lowercase
        self.vocabulary = vocabulary
        self.max_length = max_length
        self.n_jobs = n_jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.sparse = True
        tags.input_tags.two_d_array = True
        tags.input_tags.positive_only = True
        tags.target_tags.required = True
        tags.target_tags.two_d_labels = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True     # a 1-D y: one label column, or one per class
        if tags.transformer_tags is not None:
            tags.transformer_tags.preserves_dtype = []  # returns a TokenCorpus
        return tags

    # ------------------------------------------------------------------ labels
    def _labels(self, Y, n_docs, classes, *, fixed):
        """Y as int64 CSR (n_docs, L) and the label names (the one target parser)."""
        if fixed and classes is None and _target_form(Y, "Y") == "lists":
            raise ValueError(
                "Y is a list of label lists: pass classes=[...] on the first "
                "partial_fit call to fix the label space."
            )
        Y, names = check_targets(Y, n_samples=n_docs, label_names=classes,
                                 require_positive=not fixed, classes_1d=True)
        return Y, check_class_names(names)

    # ------------------------------------- tokenizing (TokenVocabulary in _vocabulary.py)
    def _setup_tokenizer(self, kind):
        """Resolve the tokenizer and, where fixed, the vocabulary: a :class:`TokenVocabulary`.

        Sets ``input_kind_``, ``tokenizer_`` and, where the vocabulary is
        fixed, the vocabulary's attributes; None for a matrix.
        """
        self.input_kind_ = "matrix" if kind == "matrix" else "text"
        if kind == "matrix":
            self._tok_kind, self.tokenizer_ = None, None
            return None
        tokens = TokenVocabulary.from_settings(self.tokenizer, self.vocabulary,
                                               lowercase=self.lowercase,
                                               max_length=self.max_length)
        self._tok_kind, self.tokenizer_ = tokens.kind, tokens.tokenizer
        if tokens.vocabulary is not None:
            self._set_vocabulary(tokens)
        return tokens

    def _set_vocabulary(self, tokens):
        """The fitted vocabulary attributes, from a :class:`TokenVocabulary`."""
        self.vocabulary_ = tokens.vocabulary
        self.n_tokens_ = tokens.n_tokens
        self.pad_id_ = tokens.pad_id
        self.unk_id_ = tokens.unk_id

    def _tokens(self):
        """The fitted tokenization, as a :class:`TokenVocabulary` (texts only)."""
        return TokenVocabulary(self._tok_kind, self.tokenizer_, self.vocabulary_,
                               lowercase=self.lowercase, max_length=self.max_length)

    # ------------------------------------------------------------------ setup
    def _relevance_mask(self, df, n_docs):
        """Boolean (V,) of the columns that may carry relevance."""
        keep = np.ones(df.shape[0], dtype=bool)
        if self.input_kind_ != "matrix":
            keep[self._tokens().special_ids()] = False
        if self._pruning_by_mask:
            lo, hi = _df_bounds(self.min_df, self.max_df, n_docs)
            keep &= (df >= lo) & (df <= hi)
        return keep

    def _finish(self, df, freq, n_docs):
        self.document_frequency_ = df
        self.label_frequency_ = freq
        self.n_train_documents_ = int(n_docs)
        self.n_labels_ = int(freq.shape[0])
        if self.input_kind_ == "matrix":
            self.n_features_in_ = int(self.n_tokens_)   # the columns, as scikit-learn counts them
            self.vocabulary_ = {j: j for j in range(self.n_tokens_)}
            self.pad_id_ = None
            self.unk_id_ = None
            self.tokenizer_fingerprint_ = "matrix:" + str(self.n_tokens_)
        else:
            self.__dict__.pop("n_features_in_", None)    # texts have no feature count
            self.tokenizer_fingerprint_ = tokenizer_fingerprint(
                self.tokenizer_, self.vocabulary_, lowercase=self.lowercase
            )

    # -------------------------------------------------------------------- fit
    def _fit_impl(self, X, Y, classes):
        kind = _input_kind(X)
        self._clear_partial()
        tokens = self._setup_tokenizer(kind)
        self._pruning_by_mask = True
        if kind == "matrix":
            B = binarize_tokens(X)
            self.n_tokens_ = B.shape[1]
            seqs = None
        else:
            docs = _as_docs(X, kind)
            if tokens.vocabulary is None:      # a word/callable vocabulary to learn
                seqs = tokens.learn(docs, kind, self.min_df, self.max_df)
                self._set_vocabulary(tokens)
                self._pruning_by_mask = False  # pruned tokens are already <unk>
            else:                              # fixed: a Hugging Face tokenizer's or given
                seqs = tokens.ids(docs, kind)
            B = _presence(seqs, self.n_tokens_)
        n_docs = B.shape[0]
        Yc, self.classes_ = self._labels(Y, n_docs, classes, fixed=False)
        df = np.bincount(B.indices, minlength=B.shape[1]).astype(np.int64)
        freq = np.bincount(Yc.indices, minlength=Yc.shape[1]).astype(np.int64)
        keep = self._relevance_mask(df, n_docs)
        if not keep.all():
            B = _drop_columns(B, keep)
        self.relevance_ = mig_scores(
            B, Yc, top_k=self.top_k, positive_only=self.positive_only,
            normalize=self.normalize, n_jobs=self.n_jobs,
        )
        self._finish(df, freq, n_docs)
        return seqs

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, label_names=None):
        """Learn the vocabulary and each label's top-k tokens by MIG.

        Parameters
        ----------
        X : list of str, list of list of str, or {array-like, sparse matrix} of shape (n_docs, V)
            Raw texts, pre-tokenised documents, or a document-token count
            matrix (then the vocabulary is the column ids).
        y : {array-like, sparse matrix} of shape (n_docs, L), 1-D y, or label lists
            Read by :func:`xplant._labels.check_targets`: a rectangular 0/1
            array-like is an indicator matrix, a 1-D binary y one label
            column; sets, rows of strings or ragged rows of integers are
            label lists (binarised as ``MultiLabelBinarizer`` does, integer
            labels mapped to columns by value); anything ambiguous is refused.
            A 1-D y of more than two classes (a multi-class target) becomes
            one column per class, as ``LabelBinarizer`` does.
        label_names : array-like of shape (L,), default=None
            Label names: the names of Y's columns, or the label space of
            label lists. Stored as ``classes_``.

        Returns
        -------
        self : MIGRelevance

        Raises
        ------
        ValueError
            On mismatched lengths, a non-{0, 1} Y, or invalid parameters.
        """
        self._fit_impl(X, y, label_names)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None, *, label_names=None):
        """Fit, then return the training documents as a :class:`TokenCorpus`.

        Tokenizes once.

        Parameters
        ----------
        X : list of str, list of list of str, or {array-like, sparse matrix} of shape (n_docs, V)
            The training documents, as for :meth:`fit`.
        y : {array-like, sparse matrix} of shape (n_docs, L), 1-D y, or label lists
            The training labels, as for :meth:`fit`.
        label_names : array-like of shape (L,), default=None
            Label names, as for :meth:`fit`.

        Returns
        -------
        TokenCorpus of length n_docs
        """
        seqs = self._fit_impl(X, y, label_names)
        if seqs is None:
            return self.transform(X)
        return TokenCorpus(seqs, self, _raw_texts(X))

    # ------------------------------------------------------------ partial_fit
    def _clear_partial(self):
        for name in ("_cooc", "_df_acc", "_freq_acc", "_n_acc"):
            if hasattr(self, name):
                delattr(self, name)

    def partial_fit(self, X, Y, *, classes=None, n_labels=None):
        """Accumulate counts from one shard of documents and refresh the relevance.

        The relevance after several ``partial_fit`` calls equals ``fit`` on
        their concatenation exactly: the co-occurrence counts YᵀB, the
        document and label frequencies and N are sums over shards. Memory is
        saved on X, not on the counts (nnz of YᵀB).

        Parameters
        ----------
        X : list of str, list of list of str, or sparse matrix of shape (n_docs, V)
            One shard. Needs a fixed vocabulary: a Hugging Face tokenizer, the
            ``vocabulary`` parameter, or a matrix (its columns).
        Y : {array-like, sparse matrix} of shape (n_docs, L), or list of label lists
            The shard's labels, read as ``fit`` reads ``y``.
        classes : array-like of shape (L,), default=None
            Label names; required on the first call unless ``n_labels`` is
            given (and required for label lists). Ignored afterwards unless it
            differs, which raises.
        n_labels : int, default=None
            Number of labels L, on the first call, for an indicator Y.

        Returns
        -------
        self : MIGRelevance
            With the shard's counts added; ``relevance_`` is recomputed
            from all shards so far.

        Raises
        ------
        ValueError
            On the first call without a fixed vocabulary or label space; later,
            if the shard's shape does not match.
        """
        first = not hasattr(self, "_cooc")
        kind = _input_kind(X)
        if first:
            if hasattr(self, "relevance_"):
                raise ValueError(
                    "This MIGRelevance was fitted with fit(), which keeps no counts; "
                    "partial_fit must start from an unfitted estimator (use clone)."
                )
            self._validate_params()
            tokens = self._setup_tokenizer(kind)
            self._pruning_by_mask = True
            if tokens is not None and tokens.vocabulary is None:
                raise ValueError(
                    "partial_fit needs a fixed vocabulary: pass vocabulary=[...] (or a "
                    "Hugging Face tokenizer), or use fit() to learn one."
                )
            if classes is None and n_labels is None:
                raise ValueError(
                    "partial_fit needs the label space on the first call: pass "
                    "classes=[...] or n_labels=L."
                )
            if classes is not None and n_labels is not None and len(classes) != n_labels:
                raise ValueError("classes and n_labels disagree.")
            if kind == "matrix":
                self.n_tokens_ = X.shape[1]
            if classes is not None:
                self._fixed_classes = np.asarray(classes)
                n_labels = len(self._fixed_classes)
            else:
                self._fixed_classes = None
            self._n_labels_fixed = int(n_labels)
        elif (kind == "matrix") != (self.input_kind_ == "matrix"):
            raise ValueError("partial_fit shards must all be texts/token lists or all matrices.")
        if classes is not None and not first and self._fixed_classes is not None:
            if not np.array_equal(np.asarray(classes), self._fixed_classes):
                raise ValueError("classes differ from those of the first partial_fit call.")

        if kind == "matrix":
            B = binarize_tokens(X)
            if B.shape[1] != self.n_tokens_:
                raise ValueError(f"X has {B.shape[1]} columns; the first shard had {self.n_tokens_}.")
        else:
            docs = _as_docs(X, kind)
            B = _presence(self._tokens().ids(docs, kind), self.n_tokens_)
        Yc, names = self._labels(Y, B.shape[0], self._fixed_classes, fixed=True)
        if Yc.shape[1] != self._n_labels_fixed:
            raise ValueError(
                f"Y has {Yc.shape[1]} label columns; the label space has {self._n_labels_fixed}."
            )
        C = (Yc.T.tocsr() @ B).tocsr()
        if first:
            self._cooc = C
            self._df_acc = np.zeros(self.n_tokens_, dtype=np.int64)
            self._freq_acc = np.zeros(self._n_labels_fixed, dtype=np.int64)
            self._n_acc = 0
        else:
            self._cooc = (self._cooc + C).tocsr()
        self._df_acc += np.bincount(B.indices, minlength=self.n_tokens_).astype(np.int64)
        self._freq_acc += np.bincount(Yc.indices, minlength=self._n_labels_fixed).astype(np.int64)
        self._n_acc += B.shape[0]
        self.classes_ = names

        keep = self._relevance_mask(self._df_acc, self._n_acc)
        C = self._cooc
        df = self._df_acc
        if not keep.all():
            C = _drop_columns(C, keep)
            df = np.where(keep, df, 0)
        self.relevance_ = mig_from_counts(
            C, df, self._freq_acc, self._n_acc, top_k=self.top_k,
            positive_only=self.positive_only, normalize=self.normalize, n_jobs=self.n_jobs,
        )
        self._finish(self._df_acc.copy(), self._freq_acc.copy(), self._n_acc)
        return self

    # -------------------------------------------------------------- transform
    def transform(self, X):
        """Token ids of each document, as a :class:`TokenCorpus`.

        Parameters
        ----------
        X : list of str, list of list of str, or sparse matrix of shape (n_docs, V)
            The same kind of input as in ``fit``. Tokens outside the
            vocabulary map to ``unk_id_``. For a matrix, each document's ids
            are its non-zero columns, in order, once each.

        Returns
        -------
        TokenCorpus of length n_docs
            Int64 id arrays, with ``.relevance`` set to this estimator.
        """
        check_is_fitted(self, "relevance_")
        kind = _input_kind(X)
        if (kind == "matrix") != (self.input_kind_ == "matrix"):
            raise ValueError(
                f"This MIGRelevance was fitted on {'a matrix' if self.input_kind_ == 'matrix' else 'texts'}; "
                "transform needs the same kind of input."
            )
        if kind == "matrix":
            B = binarize_tokens(X)
            if B.shape[1] != self.n_tokens_:
                raise ValueError(f"X has {B.shape[1]} features, but MIGRelevance is expecting "
                                 f"{self.n_tokens_} features as input (the columns of fit's "
                                 "document-token matrix).")
            seqs = [B.indices[B.indptr[i] : B.indptr[i + 1]].astype(np.int64) for i in range(B.shape[0])]
            if self.max_length is not None:
                seqs = [s[: self.max_length] for s in seqs]
            return TokenCorpus(seqs, self)
        return TokenCorpus(self._tokens().ids(_as_docs(X, kind), kind), self, _raw_texts(X))

    def tokenize(self, texts, *, return_offsets=False, max_length=None):
        """Token ids (and character offsets) of raw texts, with the fitted vocabulary.

        Texts are tokenized in Unicode NFC (a decomposed accent reads as the
        precomposed one); offsets refer to the texts as given.

        Parameters
        ----------
        texts : list of str
            Raw documents.
        return_offsets : bool, default=False
            Also return each token's ``[start, end)`` offsets into its text.
        max_length : int or None, default=None
            Return at most this many tokens per text (and ``self.max_length``
            when smaller), reading each text only as far as needed: a model
            that reads 4,096 tokens pays for 4,096, however long the text.
            A callable tokenizer still reads whole texts.

        Returns
        -------
        ids : list of ndarray of shape (n_tok_i,), int64
        offsets : list of ndarray of shape (n_tok_i, 2), int64
            Only with ``return_offsets=True``; ``text[s:e]`` is the token as
            written (``[-1, -1]`` where a callable's token cannot be found).

        Examples
        --------
        >>> rel = MIGRelevance().fit(["a b", "b c"], [[1], [0]])
        >>> ids, off = rel.tokenize(["B  a z"], return_offsets=True)
        >>> ids[0].tolist(), off[0].tolist()
        ([3, 2, 1], [[0, 1], [3, 4], [5, 6]])
        """
        check_is_fitted(self, "relevance_")
        if self.input_kind_ == "matrix":
            raise ValueError("This MIGRelevance was fitted on a matrix; it has no tokenizer.")
        if _input_kind(texts) != "text":
            raise TypeError("tokenize takes a list of raw texts (str).")
        ids, off = self._tokens().tokenize(_as_docs(texts, "text"), offsets=return_offsets,
                                           limit=max_length)
        return (ids, off) if return_offsets else ids
