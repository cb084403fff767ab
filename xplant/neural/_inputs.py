"""Input handling shared by AttentionPlanter and PlantClassifier.

The checks of a fit's targets and texts, the token corpus (fitting or
taking the MIGRelevance, encoding texts), the seeded dev split, and the
Stage 1 targets that gold evidence gives (:func:`evidence_targets`, graded
by :func:`smooth_idf`).
"""

import numpy as np
from sklearn.base import clone

from .._labels import check_class_names
from .._labels import check_targets as _check_targets
from .backbones import backbone_kind, resolve_hf_path

ARCH_PARAMS = ("backbone", "embedding_dim", "hidden_dim", "attention_dim", "kernel_size",
               "dropout", "glove", "max_length", "backbone_options")


def check_targets(Y, n_samples, *, what="Y", label_names=None, require_positive=True,
                  classes_1d=False):
    """Validate a multi-label target and return it as CSR float32 {0, 1}.

    The rule is :func:`xplant._labels.check_targets` (a rectangular 0/1
    array-like is a matrix; sets, rows of strings or ragged rows of integers
    are label lists; anything ambiguous is refused).

    Returns
    -------
    Y : scipy.sparse.csr_matrix of float32, shape (n_samples, n_labels)
    classes : ndarray of shape (n_labels,)
        ``label_names``, the sorted labels of label lists, or ``0..L-1``.

    Raises
    ------
    ValueError
        See :func:`xplant._labels.check_targets`.
    """
    Y, classes = _check_targets(Y, n_samples=n_samples, label_names=label_names, name=what,
                                dtype=np.float32, require_positive=require_positive,
                                classes_1d=classes_1d)
    return Y, check_class_names(classes)


def _is_lists(Y):
    """Whether a target is read as label lists (then dev labels take the training names)."""
    from .._target_form import _target_form
    return _target_form(Y, "Y") == "lists"


def default_relevance(backbone):
    """The MIGRelevance a classifier fits when given raw texts, for its backbone's tokens.

    Parameters
    ----------
    backbone : str
        A :class:`~xplant.neural.PlantClassifier` backbone ("cnn", "bigru",
        "hf", "hf:<folder>", "llm:<folder>", "llm:<file>.gguf", "llm:smollm2").

    Returns
    -------
    MIGRelevance
        Unfitted: word tokens for a word backbone, the encoder's own
        tokenizer for "hf" and "llm" backbones (MIG is then computed on
        exactly the tokens the encoder reads).

    Raises
    ------
    ValueError
        For an unknown backbone, or an "hf:"/"llm:" folder that does not
        hold a tokenizer.
    """
    from ..relevance import MIGRelevance
    if backbone_kind(backbone) == "word":
        return MIGRelevance(tokenizer="word")
    if backbone_kind(backbone) == "llm":
        from .backbones import load_llm_tokenizer  # pads with EOS/UNK where none is defined
        return MIGRelevance(tokenizer=load_llm_tokenizer(backbone))
    return MIGRelevance(tokenizer="hf:" + resolve_hf_path(backbone))


def is_token_corpus(X):
    return hasattr(X, "relevance") and hasattr(X, "docs")


def is_count_matrix(X):
    """Whether X is a document-token count matrix (sparse, or a numeric ndarray).

    The test of :class:`~xplant.relevance.MIGRelevance`
    (``xplant.relevance._inputs.is_count_matrix``), and such an X is read as
    it reads one: each document is the bag of its non-zero columns, column
    ``j`` being token id ``j`` (once per document, whatever its count). This
    is the one numeric input of the neural estimators (scikit-learn's common
    checks reach them through it).
    """
    from ..relevance._inputs import is_count_matrix as _is_matrix
    return _is_matrix(X)


def n_documents(X):
    """The number of documents of X: rows of a count matrix, else its length."""
    return X.shape[0] if is_count_matrix(X) and X.ndim else len(X)


def check_texts(X):
    """Raw texts as a list of str, with a clear error for anything else."""
    if isinstance(X, str):
        raise ValueError("X must be a sequence of documents, not one string; wrap it in a list")
    try:
        texts = list(X)
    except TypeError as exc:
        raise ValueError(f"X must be a sequence of texts or a token corpus, got {type(X).__name__}") from exc
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"document {i} is a {type(t).__name__}, not a str; X must be raw texts "
                             "or the token corpus returned by MIGRelevance.transform")
    return texts


def check_fingerprint(relevance, backbone):
    """An hf/llm backbone must see exactly the tokens MIG was computed on.

    Raises
    ------
    ValueError
        When the token corpus's vocabulary differs from the backbone's
        tokenizer vocabulary.
    """
    if backbone_kind(backbone) == "word":
        return
    from .backbones import load_hf_tokenizer, load_llm_tokenizer
    load = load_llm_tokenizer if backbone_kind(backbone) == "llm" else load_hf_tokenizer
    vocab = load(backbone).get_vocab()
    if getattr(relevance, "vocabulary_", None) != vocab:
        fp = getattr(relevance, "tokenizer_fingerprint_", "unknown")
        raise ValueError(f"the token corpus was made by a tokenizer ({fp}) whose vocabulary differs "
                         f"from backbone {backbone!r}; put MIGRelevance(tokenizer='hf:<same folder>') "
                         "(for an 'llm:' backbone, tokenizer=<the backbone spec>) before this "
                         "classifier so the attention sees the tokens MIG was computed on")


def fit_or_take_corpus(X, Y, relevance_param, backbone, max_length=None):
    """(docs, fitted MIGRelevance) from a token corpus, a count matrix or raw texts.

    MIG is fitted on the whole training texts; the documents the network
    reads are tokenized only up to ``max_length`` tokens. A document-token
    count matrix (:func:`is_count_matrix`) is fitted and read by the
    MIGRelevance itself, as its ``fit_transform`` reads one; it needs a word
    backbone, whose vocabulary is then the matrix's columns.
    """
    if is_token_corpus(X):
        check_fingerprint(X.relevance, backbone)
        return list(X.docs), X.relevance
    if is_count_matrix(X):
        if backbone_kind(backbone) != "word":
            raise ValueError(f"X is a document-token count matrix, whose columns are the token "
                             f"ids; backbone {backbone!r} reads its own tokenizer's ids from raw "
                             "texts. Give raw texts, or use a word backbone ('cnn' or 'bigru')")
        from ..relevance import MIGRelevance
        rel = clone(relevance_param) if relevance_param is not None else MIGRelevance()
        return list(rel.fit_transform(X, Y).docs), rel
    texts = check_texts(X)
    rel = clone(relevance_param) if relevance_param is not None else default_relevance(backbone)
    rel.fit(texts, Y)
    return list(rel.tokenize(texts, max_length=max_length)), rel


def encode(X, relevance, max_length=None):
    """Token ids for new data: a token corpus of the same MIGRelevance, a count matrix, or texts.

    Texts are tokenized only up to ``max_length`` tokens (the model reads no
    more), so a very long document costs what the model reads. A count
    matrix is read by ``relevance.transform``, which checks that it was
    fitted on a matrix of as many columns.
    """
    if is_count_matrix(X):
        return list(relevance.transform(X).docs)
    if is_token_corpus(X):
        fp_new = getattr(X.relevance, "tokenizer_fingerprint_", None)
        fp_old = getattr(relevance, "tokenizer_fingerprint_", None)
        if X.relevance is not relevance and fp_new != fp_old:
            raise ValueError("this token corpus was made by a different MIGRelevance (tokenizer "
                             f"fingerprint {fp_new} != {fp_old}); pass raw texts instead")
        return list(X.docs)
    return list(relevance.tokenize(check_texts(X), max_length=max_length))


def split_validation(n, fraction, random_state):
    """Seeded (train, dev) row indices, as scikit-learn's MLP early stopping."""
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(n)
    n_dev = max(1, int(round(fraction * n)))
    if n - n_dev < 1:
        raise ValueError(f"validation_fraction={fraction} leaves no training documents out of {n}")
    return np.sort(perm[n_dev:]), np.sort(perm[:n_dev])


def smooth_idf(relevance):
    """The training corpus's document frequency, its number of documents and smooth idf."""
    df = np.asarray(relevance.document_frequency_, dtype=np.float64)
    n_docs = float(getattr(relevance, "n_train_documents_", None) or max(1.0, df.max()))
    return df, n_docs, np.log((1.0 + n_docs) / (1.0 + df)) + 1.0


def evidence_targets(relevance, texts, evidence, column, *, max_length=None):
    """Per document, the Stage 1 targets its gold evidence gives: the tokens inside the spans.

    A token belongs to a mention when its characters overlap one of the
    mention's spans (a discontinuous mention has several). Each of a
    label's tokens in the document is graded by its smooth idf over the
    training corpus, as :func:`~xplant.neural.planting._targets.description_targets` grades a description's
    tokens, so that content words rank above the function words a span
    also holds ("fractura **de** cadera").

    Parameters
    ----------
    relevance : fitted MIGRelevance
        Its tokenizer (with offsets) and document frequencies.
    texts : sequence of str of length n_docs
        The texts the offsets index.
    evidence : sequence of length n_docs
        Each document's mentions as :func:`xplant.evidence.check_evidence`
        returns them: a list of ``(label, spans)``, spans ``(start, end)``
        in code points, end exclusive.
    column : dict
        Label name to its column in the label space.
    max_length : int or None, default=None
        Read at most this many tokens of each text (the model's reach).

    Returns
    -------
    list of length n_docs of (ndarray, ndarray, ndarray) or None
        Per document, ``(labels, tokens, grades)``: int64 label columns,
        int64 token ids and float64 idf grades, one entry per distinct
        (label, token) pair; None for a document without evidence.

    Examples
    --------
    >>> from xplant.relevance import MIGRelevance
    >>> rel = MIGRelevance().fit(["fractura de cadera", "dolor de cabeza"], [[1, 0], [0, 1]])
    >>> (labels, tokens, grades), = evidence_targets(
    ...     rel, ["fractura de cadera"], [[("S72", [(0, 8), (12, 18)])]], {"S72": 0, "R51": 1})
    >>> labels.tolist(), [rel.vocabulary_[w] for w in ("cadera", "fractura")] == sorted(tokens.tolist())
    ([0, 0], True)
    """
    texts = list(texts)
    ids, offsets = relevance.tokenize(texts, return_offsets=True, max_length=max_length)
    idf = smooth_idf(relevance)[2]
    out = []
    for doc_ids, off, mentions in zip(ids, offsets, evidence):
        doc_ids, off = np.asarray(doc_ids, dtype=np.int64), np.asarray(off, dtype=np.int64)
        pairs = set()
        for label, spans in mentions or ():
            inside = np.zeros(len(doc_ids), dtype=bool)
            for start, end in spans:
                inside |= (off[:, 0] >= 0) & (off[:, 0] < end) & (off[:, 1] > start)
            j = column[label]
            pairs.update((j, int(t)) for t in np.unique(doc_ids[inside]) if 0 <= t < len(idf))
        if not pairs:
            out.append(None)
            continue
        labels, tokens = (np.asarray(a, dtype=np.int64) for a in zip(*sorted(pairs)))
        out.append((labels, tokens, idf[tokens]))
    return out
