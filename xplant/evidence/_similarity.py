"""How alike the attention of related labels is: PLANT's planting diagnostic."""

from collections import defaultdict

import numpy as np

from .._normal_forms import normalise_code


def _pairwise_mean_cosine(a, where):
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{where}: expected an array of shape (n_labels, n_positions), got shape {a.shape}")
    m = a.shape[0]
    if m < 2:
        raise ValueError(f"{where}: need at least 2 labels for a pairwise similarity, got {m}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{where}: attention contains NaN or infinity")
    norms = np.linalg.norm(a, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"{where}: a label has an all-zero attention row; its cosine similarity is undefined")
    u = a / norms[:, None]
    sim = u @ u.T
    iu = np.triu_indices(m, k=1)
    return float(sim[iu].mean())


def attention_cosine_similarity(attn_by_label, *, return_per_document=False):
    """Mean pairwise cosine similarity of several labels' attention.

    Parameters
    ----------
    attn_by_label : array-like of shape (m_labels, n_positions), or a sequence of such arrays, or an array of shape (n_docs, m_labels, n_positions)
        For a group of ``m_labels >= 2`` labels, their attention distributions
        over the positions of one document; with several documents, one array
        per document (lengths may differ; the labels, in the same order, must
        not).
    return_per_document : bool, default=False
        Also return the value of each document.

    Returns
    -------
    similarity : float
        The mean over documents of the mean over the ``m (m - 1) / 2`` label
        pairs of ``cos(a_l, a_k) = a_l . a_k / (|a_l| |a_k|)``.
    per_document : ndarray of shape (n_docs,)
        Only when ``return_per_document`` is true.

    Raises
    ------
    ValueError
        If fewer than two labels are given, the label count differs between
        documents, an attention row is all zero or not finite, or there is no
        document.

    Notes
    -----
    This is the diagnostic of Saha Roy et al. (arXiv 2410.23066): for
    semantically related rare labels the attention is about 0.75 similar with
    random initialisation and 0.985 after planting. Attention rows are
    non-negative (softmax), so values lie in [0, 1].

    Examples
    --------
    >>> attention_cosine_similarity([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    0.3333333333333333
    >>> round(attention_cosine_similarity([[[0.5, 0.5], [0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0]]]), 6)
    0.5
    """
    if isinstance(attn_by_label, np.ndarray):
        docs = [attn_by_label] if attn_by_label.ndim == 2 else list(attn_by_label)
    else:
        docs = list(attn_by_label)
        if docs and np.ndim(docs[0]) == 1:  # a single (m, n) nested list
            docs = [docs]
    if not docs:
        raise ValueError("attn_by_label is empty: give at least one document")
    m = np.shape(docs[0])[0] if np.ndim(docs[0]) >= 1 else 0
    values = np.empty(len(docs))
    for i, a in enumerate(docs):
        if np.ndim(a) == 2 and np.shape(a)[0] != m:
            raise ValueError(
                f"document {i} has attention for {np.shape(a)[0]} labels, document 0 for {m}: "
                "use the same label group in every document"
            )
        values[i] = _pairwise_mean_cosine(a, f"document {i}")
    mean = float(values.mean())
    return (mean, values) if return_per_document else mean


def related_rare_label_groups(label_names, label_frequency, *, prefix_len=3, max_freq=5, min_freq=1, min_group=2):
    """Group rare ICD-10 codes that share their first characters.

    Codes sharing the 3-character ICD-10 category (``"R50.9"`` and
    ``"R50.2"``: fever) are the "semantically related" labels used as a
    proxy for the paper's hand-picked groups. For ICD-10-PCS codes (no dot)
    the first 3 characters are section, body system and operation.

    Parameters
    ----------
    label_names : sequence of str of shape (n_labels,)
        Names of the columns, used in the returned groups.
    label_frequency : array-like of int of shape (n_labels,)
        Training positives per label (``label_frequency_``).
    prefix_len : int, default=3
        Characters of the code, dots removed, that define a group.
    max_freq, min_freq : int, default=5, 1
        A label is rare when ``min_freq <= frequency <= max_freq``. The
        default ``min_freq=1`` leaves out labels never seen in training,
        whose attention was never planted.
    min_group : int, default=2
        Smallest group kept.

    Returns
    -------
    dict of str to ndarray of int64
        Prefix (upper case) -> sorted label indices, prefixes sorted.

    Raises
    ------
    ValueError
        If ``label_names`` and ``label_frequency`` differ in length, or
        ``prefix_len``, a frequency bound or ``min_group`` is out of range.

    Examples
    --------
    >>> names = ["R50.9", "R50.2", "R51", "N20.0", "R50.81"]
    >>> related_rare_label_groups(names, [2, 1, 3, 40, 9])
    {'R50': array([0, 1])}
    """
    names = [str(n) for n in label_names]
    freq = np.asarray(label_frequency)
    if freq.ndim != 1 or freq.shape[0] != len(names):
        raise ValueError(f"label_frequency must have shape ({len(names)},) like label_names, got {freq.shape}")
    for pname, val, low in (("prefix_len", prefix_len, 1), ("min_group", min_group, 2), ("min_freq", min_freq, 0)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < low:
            raise ValueError(f"{pname} must be an int >= {low}, got {val!r}")
    if max_freq < min_freq:
        raise ValueError(f"max_freq ({max_freq}) must be >= min_freq ({min_freq})")
    groups = defaultdict(list)
    for i, name in enumerate(names):
        if min_freq <= freq[i] <= max_freq:
            key = normalise_code(name, drop_dots=True)[:prefix_len]
            if len(key) == prefix_len:
                groups[key].append(i)
    return {k: np.asarray(sorted(v), dtype=np.int64) for k, v in sorted(groups.items()) if len(v) >= min_group}
