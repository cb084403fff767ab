"""Stage 1 targets beyond MIG: label descriptions, the hierarchy, and gold evidence.

PLANT's Stage 1 targets are each label's top MIG tokens (T_l). A label with
no training document has none, so its attention is never planted; a
document whose coders marked the words that justify a label says more
about that pair than MIG can. Here:

* :func:`description_targets`: T_l for such labels are the tokens of the
  label's description and synonyms that occur in the training corpus, graded
  by inverse document frequency (rarer tokens first);
* :func:`merge_targets`: they replace the empty rows of the MIG targets (and,
  for rare labels, are put above the label's few MIG tokens);
* :func:`borrow_queries`: a label left without targets starts from the mean
  planted query of the labels that share its nearest labelled ancestor (its
  siblings and that ancestor);
* gold evidence (:func:`~xplant.neural._inputs.evidence_targets`, read by
  both estimators' ``fit``): per document, the tokens inside a label's
  spans; Stage 1 puts them above the label's MIG tokens in that document
  (``merge_targets``), and keeps MIG for every pair without evidence.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from ..._descriptions import check_label_texts, label_documents
from .._inputs import smooth_idf


def _token_strings(relevance):
    """Token id -> surface string of a fitted MIGRelevance (None when unknown)."""
    vocab = getattr(relevance, "vocabulary_", None) or {}
    out = {}
    for tok, i in vocab.items():
        out[int(i)] = str(tok).lstrip("#").lstrip("\u0120").lstrip("\u2581").lower()
    return out


def description_targets(relevance, label_texts, labels, *, top_k=50, max_df=0.5, ignore_ids=()):
    """Stage 1 targets of the given labels from their texts, graded by idf.

    Parameters
    ----------
    relevance : fitted MIGRelevance
        Its tokenizer turns the label texts into token ids; its
        ``document_frequency_`` says which tokens occur in the training
        corpus, and how often.
    label_texts : list of str of length n_labels
        Description and synonyms of every label (``label_documents``).
    labels : array-like of int
        The labels to give targets (others get empty rows).
    top_k : int, default=50
        At most this many tokens per label.
    max_df : float, default=0.5
        Tokens in more than this share of the training documents are left
        out (function words of the descriptions such as "of", "other").
    ignore_ids : iterable of int
        Padding and unknown-token ids.

    Returns
    -------
    csr_matrix of float64 of shape (n_labels, n_tokens)
        ``r[l, t] = log((1 + N) / (1 + df_t)) + 1`` (scikit-learn's smooth
        idf) for each distinct corpus token t of label l's text, top
        ``top_k`` by idf, ties to the lower token id; English stop words are
        left out.
    """
    df, n_docs, idf = smooth_idf(relevance)
    n_tokens = df.shape[0]
    strings = _token_strings(relevance)
    skip = set(int(i) for i in ignore_ids)
    labels = np.asarray(labels, dtype=np.int64)
    docs = list(relevance.tokenize([label_texts[j] for j in labels])) if len(labels) else []
    rows, cols, vals = [], [], []
    for j, ids in zip(labels, docs):
        ids = np.unique(np.asarray(ids, dtype=np.int64))
        ids = ids[(ids >= 0) & (ids < n_tokens)]
        keep = [t for t in ids if t not in skip and df[t] > 0 and df[t] <= max_df * n_docs
                and strings.get(int(t), "") not in ENGLISH_STOP_WORDS]
        keep = np.asarray(keep, dtype=np.int64)
        if keep.size == 0:
            continue
        order = np.lexsort((keep, -idf[keep]))[:top_k]
        rows.append(np.full(order.size, j))
        cols.append(keep[order])
        vals.append(idf[keep[order]])
    n_labels = len(label_texts)
    if not rows:
        return sp.csr_matrix((n_labels, n_tokens))
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n_labels, n_tokens))


def merge_targets(mig, described):
    """MIG targets with description targets put first for the described labels.

    Parameters
    ----------
    mig : csr_matrix of shape (n_labels, n_tokens)
    described : csr_matrix of shape (n_labels, n_tokens)
        Rows with entries replace nothing: their tokens are ranked above the
        label's MIG tokens (shifted by the row's largest MIG value), and the
        label's other MIG tokens stay below them.

    Returns
    -------
    csr_matrix of float64 of shape (n_labels, n_tokens)

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> mig = sp.csr_matrix([[0.0, 0.3, 0.1], [0.0, 0.0, 0.0]])
    >>> desc = sp.csr_matrix([[2.0, 0.0, 0.0], [0.0, 1.5, 0.0]])
    >>> merge_targets(mig, desc).toarray().tolist()
    [[2.3, 0.3, 0.1], [0.0, 1.5, 0.0]]
    """
    mig = sp.csr_matrix(mig, dtype=np.float64)
    described = sp.csr_matrix(described, dtype=np.float64)
    row_max = np.zeros(mig.shape[0])
    nz = np.diff(mig.indptr) > 0
    row_max[nz] = np.maximum.reduceat(mig.data, mig.indptr[:-1][nz]) if mig.nnz else 0.0
    shift = described.copy()
    shift.data = shift.data + np.repeat(row_max, np.diff(shift.indptr))
    has = np.diff(described.indptr) > 0
    keep_mig = sp.diags((~has).astype(np.float64)) @ mig
    kept_rest = sp.diags(has.astype(np.float64)) @ mig
    kept_rest = kept_rest - kept_rest.multiply(described > 0)
    out = (keep_mig + shift + kept_rest).tocsr()
    out.eliminate_zeros()
    out.sort_indices()
    return out


def nearest_labelled_ancestor(parents, label_names, max_depth=12):
    """Index of each label's nearest ancestor that is itself a label, or -1.

    Parameters
    ----------
    parents : list of list of str, length n_labels
    label_names : sequence of str of length n_labels
    max_depth : int, default=12

    Returns
    -------
    ndarray of int64 of shape (n_labels,)
        Breadth first over parents that are labels; ties to the lower index.
    """
    index = {str(c): j for j, c in enumerate(label_names)}
    out = np.full(len(parents), -1, dtype=np.int64)
    for j in range(len(parents)):
        frontier, seen = list(parents[j]), {str(label_names[j])}
        for _ in range(max_depth):
            hits = sorted(index[p] for p in frontier if p in index and p not in seen)
            if hits:
                out[j] = hits[0]
                break
            seen.update(frontier)
            frontier = [q for p in frontier if p in index for q in parents[index[p]]]
            if not frontier:
                break
    return out


def borrow_queries(queries, ancestor, trained):
    """Start untrained labels' queries from their relatives' planted queries.

    Parameters
    ----------
    queries : ndarray of shape (n_labels, d)
    ancestor : ndarray of int64 of shape (n_labels,)
        Nearest labelled ancestor of each label, or -1.
    trained : ndarray of bool of shape (n_labels,)
        Labels whose queries Stage 1 planted (they had targets).

    Returns
    -------
    queries : ndarray of shape (n_labels, d)
        A copy; each untrained label with an ancestor gets the mean query of
        the trained labels among its ancestor and the ancestor's other
        descendants of the same nearest ancestor (its siblings).
    n_borrowed : int
    """
    out = np.array(queries, copy=True)
    n = 0
    for j in np.flatnonzero(~trained & (ancestor >= 0)):
        a = ancestor[j]
        group = np.flatnonzero((ancestor == a) & trained)
        group = np.concatenate([group, [a]]) if trained[a] else group
        if group.size:
            out[j] = queries[group].mean(0)
            n += 1
    return out, n


def prepare_descriptions(n_labels, label_descriptions, label_synonyms, label_parents, label_names):
    """Validated label texts and nearest labelled ancestors for the planter.

    Returns
    -------
    texts : list of str, length n_labels
    ancestor : ndarray of int64 of shape (n_labels,)

    Raises
    ------
    ValueError
        For descriptions, synonyms or parents of the wrong length or type.
    """
    desc, syn, parents = check_label_texts(n_labels, label_descriptions, label_synonyms, label_parents)
    names = [str(c) for c in label_names] if label_names is not None else [str(j) for j in range(n_labels)]
    texts = label_documents(desc, syn)
    return texts, nearest_labelled_ancestor(parents, names)
