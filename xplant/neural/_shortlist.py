"""Shortlist and fusion for PLANT's Stage 2 (plain functions).

A cheap model (by default TF-IDF + a one-vs-rest squared-hinge SVM) ranks
every label for a document; PLANT attends and scores only the top C of
them, the *candidates*, and the final score of a candidate mixes the two
models on one calibrated scale:

    p = α · σ(a·s + b) + (1 − α) · σ(z),

with s the shortlist's score, (a, b) its calibration (the plain sigmoid,
or a logistic scaling fitted on dev candidates, whichever dev prefers),
z PLANT's logit and α the fusion weight chosen on dev. The
design follows the field's answer to large label spaces (AttentionXML,
LightXML, XR-Transformer: a cheap ranker proposes, the neural model scores
the proposals; XR-Transformer and PECOS combine neural and TF-IDF
rankers). Labels outside a document's candidates score strictly below its
lowest candidate, ordered by the shortlist where it ranked them, then by
training frequency.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._labels import label_frequency
from ._common import check_param

#: C grid of ``shortlist="linear"``, chosen on dev MAP (1 is LibMultiLabel's
#: default; 10 won on CodiEsp-D dev in the fusion probe of the shortlist issue).
LINEAR_C_GRID = (1.0, 10.0)

#: Fusion weights α tried by ``fusion="dev"``: 0 is PLANT alone on its
#: candidates, 1 the shortlist alone.
FUSION_GRID = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))


def _final_step(estimator):
    steps = getattr(estimator, "steps", None)
    return steps[-1][1] if steps else estimator


def check_shortlist(shortlist):
    """Validate a ``shortlist`` parameter; return it (``None``, ``"linear"`` or an estimator).

    Raises
    ------
    ValueError
        A string other than ``"linear"``, an estimator (or Pipeline) whose
        last step has none of ``predict_top_k``, ``decision_function`` and
        ``predict_proba``, or one that is already fitted (the classifier
        clones and fits it on its own training rows, so that dev and test
        never leak into it), or a ``FrozenEstimator`` of an unfitted one.

    Notes
    -----
    A model already fitted on the same training rows (for example the
    linear row of a run) is passed as
    ``sklearn.frozen.FrozenEstimator(model)``: the explicit opt-in, as in
    scikit-learn, that it is used as it is and never refitted. It must not
    have seen dev or test documents.
    """
    if shortlist is None or (isinstance(shortlist, str) and shortlist == "linear"):
        return shortlist
    if isinstance(shortlist, str):
        raise ValueError(f"shortlist must be None, 'linear' or an unfitted estimator, got "
                         f"{shortlist!r}")
    frozen = is_frozen(shortlist)
    final = _final_step(shortlist.estimator if frozen else shortlist)
    if not any(hasattr(final, m) for m in ("predict_top_k", "decision_function",
                                           "predict_proba")):
        raise ValueError(f"the shortlist {type(final).__name__} cannot rank labels: it needs "
                         "predict_top_k, decision_function or predict_proba")
    try:
        check_is_fitted(final)
    except (NotFittedError, TypeError):
        if frozen:
            raise ValueError(f"the shortlist FrozenEstimator({type(final).__name__}) holds an "
                             "unfitted model; freeze a fitted one, or pass the unfitted "
                             "estimator itself") from None
        return shortlist
    if frozen:
        return shortlist
    raise ValueError(f"the shortlist {type(final).__name__} is already fitted; pass an unfitted "
                     "estimator (PlantClassifier clones and fits it on its own training rows), "
                     "or sklearn.frozen.FrozenEstimator(model) to use it as it is")


def is_frozen(estimator):
    """True for ``sklearn.frozen.FrozenEstimator``: a fitted model used as it is."""
    from sklearn.frozen import FrozenEstimator
    return isinstance(estimator, FrozenEstimator)


def check_n_candidates(n_candidates, n_labels):
    """The effective number of candidates C (``None`` → every label).

    Raises ValueError below 1 (:func:`check_param`); warns and clips above
    ``n_labels``.
    """
    check_param("n_candidates", n_candidates, kind=numbers.Integral, low=1, none_ok=True)
    if n_candidates is None:
        return int(n_labels)
    if n_candidates > n_labels:
        warnings.warn(f"n_candidates={n_candidates} is more than the {n_labels} labels; using "
                      f"{n_labels}", UserWarning, stacklevel=3)
        return int(n_labels)
    return int(n_candidates)


def check_fusion(fusion):
    """Validate ``fusion``: ``"dev"`` or a float α in [0, 1] (:func:`check_param`)."""
    if isinstance(fusion, str):
        check_param("fusion", fusion, allowed=("dev",))
        return fusion
    check_param("fusion", fusion, low=0.0, high=1.0)
    return float(fusion)


def takes_sparse_targets(estimator):
    """True when ``estimator`` (a Pipeline: its last step) is known to read a sparse (n, L) target.

    xplant's own rankers and scikit-learn's ``OneVsRestClassifier`` do. Most
    other scikit-learn multi-label estimators either raise on a sparse
    target (``RandomForestClassifier``, ``MultiOutputClassifier``) or, worse,
    misread it without a word (``KNeighborsClassifier`` takes each column
    for one object-valued output), so they get the dense indicator array
    that scikit-learn documents for multi-label ``y``.
    """
    from sklearn.multiclass import OneVsRestClassifier
    final = _final_step(estimator)
    return isinstance(final, OneVsRestClassifier) or \
        type(final).__module__.split(".")[0] == "xplant"


def fit_ranker(estimator, texts, Y):
    """``estimator.fit(texts, Y)`` with the CSR target ``Y``, dense where it needs that.

    See :func:`takes_sparse_targets`; the dense target is ``Y.toarray()``
    (int64, n × L), so a label space too large for it needs an estimator
    that takes sparse targets.
    """
    return estimator.fit(texts, Y if takes_sparse_targets(estimator) else Y.toarray())


def rank_labels(model, texts, k):
    """Top-``k`` labels of each text by a fitted shortlist: ((n, k) int64, (n, k) float64)."""
    from ..linear import predict_top_k
    return predict_top_k(model, texts, int(k))


def check_frozen_shortlist(model, Y):
    """Check that a frozen shortlist was fitted on these training rows and label columns.

    The label count always; for xplant's rankers (which keep
    ``n_train_documents_`` and ``label_frequency_``) also the number of
    training documents and each label's training frequency, which catch a
    model fitted on the dev rows too (with ``validation_fraction`` the
    classifier trains on the rows left after its dev split) or on permuted
    label columns.

    Raises
    ------
    ValueError
        Naming what differs and the fix.
    """
    final = _final_step(model)
    n_labels = len(getattr(final, "classes_", range(Y.shape[1])))
    if n_labels != Y.shape[1]:
        raise ValueError(f"the frozen shortlist ranks {n_labels} labels but Y has "
                         f"{Y.shape[1]}; freeze a model fitted on the same label columns")
    n_docs = getattr(final, "n_train_documents_", None)
    if n_docs is not None and n_docs != Y.shape[0]:
        raise ValueError(f"the frozen shortlist was fitted on {n_docs} documents but this fit "
                         f"trains on {Y.shape[0]} (the rows left after validation_fraction "
                         "took its dev rows, if any); freeze a model fitted on exactly the "
                         "training rows, and pass the dev split as validation_data")
    freq = getattr(final, "label_frequency_", None)
    if freq is not None and not np.array_equal(np.asarray(freq), label_frequency(Y)):
        raise ValueError("the frozen shortlist's label frequencies differ from Y's on the "
                         "training rows: it was fitted on other rows or label columns; freeze "
                         "a model fitted on the same training rows and columns")


def fit_shortlist(shortlist, texts, Y, dev_texts=None, dev_Y=None, *, n_jobs=None,
                  random_state=0):
    """Clone and fit the shortlist on training texts; ``"linear"`` chooses C on dev.

    Parameters
    ----------
    shortlist : "linear" or estimator
        An unfitted estimator taking texts, or ``"linear"``: TF-IDF +
        :class:`~xplant.linear.OneVsRestLinear` (squared hinge) with C from
        :data:`LINEAR_C_GRID` by dev MAP (the first C without dev data), or
        a ``FrozenEstimator`` of a model fitted on the same training rows
        (returned unwrapped, not refitted).
    texts : list of str
    Y : sparse matrix of shape (n, L)
    dev_texts, dev_Y : optional dev split

    Returns
    -------
    model : fitted estimator
    info : dict
        ``{"C": chosen C, "dev_map": {C: MAP}, "choice": the DevChoice record}``
        for ``"linear"`` (C is a ranking choice of
        :func:`~xplant.model_selection.choose_on_dev`; without labelled dev
        data the first C, recorded as a fallback), else ``{}``.

    Raises
    ------
    ValueError
        For ``"linear"``, when the training texts give no TF-IDF vocabulary
        (fewer than 2 documents, or no word in 2 of them).
    """
    if is_frozen(shortlist):            # fitted before, on the training rows: used as it is
        model = shortlist.estimator
        check_frozen_shortlist(model, Y)
        return model, {"frozen": True}
    if not (isinstance(shortlist, str) and shortlist == "linear"):
        return fit_ranker(clone(shortlist), texts, Y), {}
    from ..linear import make_tfidf_ovr
    from ..metrics import mean_average_precision
    from ..model_selection import choose_on_dev
    has_dev = dev_texts is not None and dev_Y is not None and dev_Y.nnz > 0

    def fitted(C):
        model = make_tfidf_ovr(loss="squared_hinge", C=C, n_jobs=n_jobs,
                               random_state=random_state)
        try:
            return model.fit(texts, Y)
        except ValueError as exc:
            if not any(w in str(exc) for w in ("min_df", "vocabulary")):
                raise
            raise ValueError(
                f"shortlist='linear' could not build its TF-IDF vocabulary from the "
                f"{len(texts)} training documents ({exc}): it keeps words found in at least 2 "
                "of them. Give more training documents, or pass an estimator of your own as "
                "shortlist") from exc

    def dev_map(C):
        model = fitted(C)
        return float(mean_average_precision(dev_Y, model.decision_function(dev_texts))), model

    choice = choose_on_dev("shortlist_C", list(LINEAR_C_GRID), dev_map, family="ranking",
                           criterion="map", fallback=LINEAR_C_GRID[0], has_dev=has_dev,
                           warn=False, keep=True)
    model = choice.kept if has_dev else fitted(choice.value)
    return model, {"C": choice.value, "dev_map": dict(choice.scores), "choice": choice.to_dict()}


def cross_fit_ranking(model, texts, Y, k, *, cv=3, random_state=0):
    """Out-of-fold top-``k`` rankings of the training texts (XR-Transformer's cross-fitting).

    Each fold is ranked by a clone of ``model`` (its parameters, e.g. the C
    chosen on dev) fitted on the other folds, so that training candidates
    carry the mistakes that test candidates carry.

    Returns
    -------
    indices : ndarray of int64 of shape (n, k)
    scores : ndarray of float64 of shape (n, k)
    """
    from sklearn.model_selection import KFold
    n = len(texts)
    ind = np.zeros((n, k), dtype=np.int64)
    sc = np.zeros((n, k), dtype=np.float64)
    for tr, te in KFold(cv, shuffle=True, random_state=random_state).split(np.arange(n)):
        fold = fit_ranker(clone(model), [texts[i] for i in tr], Y[tr])
        ind[te], sc[te] = rank_labels(fold, [texts[i] for i in te], k)
    return ind, sc


def training_candidates(ranking, positives, n_candidates):
    """Each training document's candidates: its gold labels, then hard negatives.

    Parameters
    ----------
    ranking : ndarray of int64 of shape (n, k)
        The shortlist's top labels of each document, best first.
    positives : list of ndarray of int64
        Gold label ids of each document.
    n_candidates : int
        C. Every gold label is a candidate, also past C; the shortlist's
        highest-ranked negatives fill the rest up to C, and a document with
        C or more gold labels still gets ``max(1, C // 10)`` negatives.

    Returns
    -------
    list of ndarray of int64
        Gold labels first, then negatives by shortlist rank.

    Examples
    --------
    >>> ranking = np.array([[4, 2, 0, 3, 1]])
    >>> training_candidates(ranking, [np.array([1, 2])], 4)[0].tolist()
    [1, 2, 4, 0]
    """
    out = []
    for row, gold in zip(ranking, positives):
        gold = np.asarray(gold, dtype=np.int64)
        n_neg = max(n_candidates - len(gold), max(1, n_candidates // 10))
        neg = row[~np.isin(row, gold)][:n_neg]
        out.append(np.concatenate([gold, neg]).astype(np.int64))
    return out


def fit_calibration(scores, is_gold):
    """A logistic calibration σ(a·s + b) of shortlist scores, fitted on dev candidates.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        Shortlist scores of dev (document, candidate) pairs.
    is_gold : ndarray of bool of shape (m,)

    Returns
    -------
    (a, b) : tuple of float
        ``(1, 0)`` (plain sigmoid) when the pairs hold one class only or the
        fitted slope is not positive, so the calibration never reverses the
        shortlist's order.
    """
    from sklearn.linear_model import LogisticRegression
    s = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    y = np.asarray(is_gold, dtype=bool).ravel()
    if y.all() or not y.any():
        return 1.0, 0.0
    lr = LogisticRegression(C=1e4, max_iter=1000).fit(s, y)
    a, b = float(lr.coef_[0, 0]), float(lr.intercept_[0])
    return (a, b) if a > 0 else (1.0, 0.0)


def sigmoid(x):
    """σ(x) = 1 / (1 + exp(−x)), float64, without overflow warnings."""
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-np.logaddexp(0.0, -x))


def fuse(p_short, p_net, alpha):
    """α · p_short + (1 − α) · p_net (both calibrated probabilities, same shape)."""
    return alpha * p_short + (1.0 - alpha) * p_net


def tail_order(candidates, extra, label_frequency):
    """Rank of each label among a row's non-candidates, for dense outputs.

    Parameters
    ----------
    candidates : ndarray of int64 of shape (n, C)
    extra : ndarray of int64 of shape (n, k) or None
        The shortlist's ranking (best first); labels in it that are not
        candidates come first, in its order.
    label_frequency : ndarray of shape (L,)
        Training frequency; the remaining labels follow by decreasing
        frequency (ties: lower index first).

    Returns
    -------
    rank : ndarray of int32 of shape (n, L)
        0, 1, ... over each row's non-candidates; -1 at candidates. int32
        (keys reach 2L) keeps the (n, L) arrays of a dense output at half
        the memory of int64: about 0.1 GB each for the 6,000 EURLEX57K test
        documents.
    """
    n, L = len(candidates), len(label_frequency)
    by_freq = np.argsort(-np.asarray(label_frequency), kind="stable")
    key = np.empty(L, dtype=np.int32)
    key[by_freq] = np.arange(L) + L
    keys = np.broadcast_to(key, (n, L)).copy()
    rows = np.arange(n)[:, None]
    if extra is not None and extra.size:
        keys[rows, extra] = np.arange(extra.shape[1])[None, :]
    keys[rows, candidates] = -1
    order = np.argsort(keys, axis=1, kind="stable")
    rank = np.empty_like(keys)
    rank[rows, order] = np.arange(L)[None, :] - candidates.shape[1]
    rank[rows, candidates] = -1
    return rank


#: Candidate probabilities below this are floored. σ underflows to 0 at
#: the −1000 a linear model gives labels it never saw, and no probability
#: lies strictly below 0. A candidate at position j (0-based, of C) of its
#: row whose score is below the floor scores ``SCORE_FLOOR · (1 − (j + 1)/(C + 1))``:
#: positive, below every unfloored candidate, in the shortlist's order. The
#: tail then fits strictly below the lowest candidate, and every score stays
#: a normal float32 (at least 1e-20 / ((C + 1)(L + 1))) for C, L up to 10⁶.
SCORE_FLOOR = 1e-20


def _floor(cand_scores):
    s = np.asarray(cand_scores, dtype=np.float64)
    C = s.shape[1]
    step = SCORE_FLOOR * (1.0 - np.arange(1, C + 1) / (C + 1.0))
    return np.where(s < SCORE_FLOOR, step[None, :], s)


def dense_scores(candidates, cand_scores, rank):
    """(n, L) scores: candidates keep theirs, the rest fall strictly below each row's lowest.

    ``cand_scores`` (n, C) are probabilities in [0, 1], in the
    shortlist's order; those below :data:`SCORE_FLOOR` are floored as it
    says. A non-candidate of tail rank r
    (from :func:`tail_order`) scores ``low · (1 − (r + 1)/(L + 1))`` below
    its row's lowest candidate score ``low``, so its order is kept, no
    non-candidate ties or passes a candidate, and every score stays in
    [0, 1].

    Examples
    --------
    >>> cand = np.array([[2, 0]]); s = np.array([[0.9, 0.5]])
    >>> rank = tail_order(cand, None, np.array([1, 5, 3, 0]))
    >>> out = dense_scores(cand, s, rank)
    >>> np.argsort(-out[0]).tolist(), bool(out[0, 1] < 0.5)
    ([2, 0, 1, 3], True)
    """
    n, L = rank.shape
    cand_scores = _floor(cand_scores)
    low = cand_scores.min(1, keepdims=True)
    out = low * (1.0 - (rank.astype(np.float64) + 1.0) / (L + 1.0))
    out[np.arange(n)[:, None], candidates] = cand_scores
    return out


def top_k_from_candidates(candidates, cand_scores, extra, label_frequency, k):
    """Top-``k`` labels and scores of each row without an (n, L) matrix.

    Candidates come first by score; for ``k`` > C the rest follow the
    shortlist's extra ranking, then training frequency, with scores below
    the row's lowest candidate as in :func:`dense_scores` (the same
    :data:`SCORE_FLOOR`, so the scores equal that function's).

    Returns
    -------
    indices : ndarray of int64 of shape (n, k)
    scores : ndarray of float64 of shape (n, k)
    """
    cand_scores = _floor(cand_scores)
    n, C = cand_scores.shape
    L = len(label_frequency)
    order = np.argsort(-cand_scores, axis=1, kind="stable")
    idx = np.take_along_axis(candidates, order, 1)
    sc = np.take_along_axis(cand_scores, order, 1)
    if k <= C:
        return idx[:, :k].astype(np.int64), sc[:, :k]
    by_freq = np.argsort(-np.asarray(label_frequency), kind="stable")
    ind = np.empty((n, k), dtype=np.int64)
    out = np.empty((n, k), dtype=np.float64)
    for i in range(n):
        seen = set(idx[i].tolist())
        tail = []
        for lab in (list(extra[i]) if extra is not None else []) + list(by_freq):
            if len(tail) == k - C:
                break
            if lab not in seen:
                seen.add(lab)
                tail.append(lab)
        low = sc[i, -1]
        r = np.arange(1, len(tail) + 1, dtype=np.float64)
        ind[i] = np.concatenate([idx[i], tail])
        out[i] = np.concatenate([sc[i], low * (1 - r / (L + 1))])
    return ind, out
