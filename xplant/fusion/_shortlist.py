"""The shortlist: a cheap ranker that proposes each document's candidate labels.

A cheap model (by default TF-IDF + a one-vs-rest squared-hinge SVM) ranks
every label for a document; PLANT attends and scores only the top C of
them, the *candidates*. The design follows the field's answer to large
label spaces (AttentionXML, LightXML, XR-Transformer: a cheap ranker
proposes, the neural model scores the proposals). This module fits the
shortlist (:func:`fit_shortlist`), ranks with it (:func:`rank_labels`,
:func:`cross_fit_ranking`) and builds the training candidates
(:func:`training_candidates`); the scores are fused in
:mod:`xplant.fusion._fuse`.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._labels import label_frequency
from .._params import check_param, final_step

#: C grid of ``shortlist="linear"``, chosen on dev MAP (1 is LibMultiLabel's
#: default; 10 won on CodiEsp-D dev when the shortlist was first fused).
LINEAR_C_GRID = (1.0, 10.0)


def check_shortlist(shortlist):
    """Validate a ``shortlist`` parameter; return it (``None``, ``"linear"`` or an estimator).

    Parameters
    ----------
    shortlist : None, "linear" or estimator
        ``PlantClassifier``'s ``shortlist``.

    Returns
    -------
    None, "linear" or estimator
        ``shortlist`` itself.

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
    final = final_step(shortlist.estimator if frozen else shortlist)
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
    """Whether ``estimator`` is a ``sklearn.frozen.FrozenEstimator``: a fitted model used as it is.

    Parameters
    ----------
    estimator : object
        A ``shortlist`` parameter or fitted shortlist.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_frozen("linear")
    False
    """
    from sklearn.frozen import FrozenEstimator
    return isinstance(estimator, FrozenEstimator)


def check_n_candidates(n_candidates, n_labels):
    """The effective number of candidates C (``None`` → every label).

    Parameters
    ----------
    n_candidates : int or None
        ``PlantClassifier``'s ``n_candidates``.
    n_labels : int or float
        The labels of the model (``np.inf`` to check the value alone).

    Returns
    -------
    int
        C, at most ``n_labels``.

    Raises
    ------
    ValueError
        Below 1, or not an integer (:func:`xplant._params.check_param`).

    Warns
    -----
    UserWarning
        Above ``n_labels`` (then ``n_labels`` is returned).

    Examples
    --------
    >>> check_n_candidates(None, 7), check_n_candidates(3, 7)
    (7, 3)
    """
    check_param("n_candidates", n_candidates, kind=numbers.Integral, low=1, none_ok=True)
    if n_candidates is None:
        return int(n_labels)
    if n_candidates > n_labels:
        warnings.warn(f"n_candidates={n_candidates} is more than the {n_labels} labels; using "
                      f"{n_labels}", UserWarning, stacklevel=3)
        return int(n_labels)
    return int(n_candidates)


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
    final = final_step(estimator)
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
    """Top-``k`` labels of each text by a fitted shortlist, best first.

    The shortlist's own ``predict_top_k`` where it has one, else its
    ``predict_proba`` or ``decision_function`` in row blocks
    (:func:`xplant.linear.predict_top_k`: equal scores rank the lower label
    index first).

    Parameters
    ----------
    model : fitted estimator or Pipeline
        The shortlist (:func:`fit_shortlist`'s model).
    texts : list of str
        What the shortlist reads: raw texts.
    k : int
        Labels per text; clipped to the number of labels.

    Returns
    -------
    indices : ndarray of int64 of shape (n_samples, min(k, n_labels))
        The labels, best first.
    scores : ndarray of float64 of shape (n_samples, min(k, n_labels))
        The shortlist's raw scores of those labels (its probabilities, or
        decision values when it has no ``predict_proba``).

    Examples
    --------
    >>> from xplant.linear import FrequencyPrior
    >>> prior = FrequencyPrior().fit(np.zeros((3, 1)), np.array([[1, 0, 1], [0, 0, 1], [0, 1, 1]]))
    >>> idx, s = rank_labels(prior, ["any text"], 2)
    >>> idx.tolist(), s.round(3).tolist()
    ([[2, 0]], [[1.0, 0.333]])
    """
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
    final = final_step(model)
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
        The training texts.
    Y : sparse matrix of shape (n, L)
        Their labels (CSR).
    dev_texts, dev_Y : list of str and sparse matrix, optional
        The dev split that chooses C for ``"linear"``.
    n_jobs : int or None, default=None
        Threads of the linear fits.
    random_state : int, default=0
        Seeds the linear solver.

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
    from ..model_selection import choose_on_dev, dev_usability, label_frequency
    has_dev = dev_texts is not None and dev_usability(dev_Y, label_frequency(Y)).usable

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

    Parameters
    ----------
    model : estimator
        The shortlist; only its parameters are used (each fold fits a clone).
    texts : list of str
        The training texts.
    Y : sparse matrix of shape (n, L)
        Their labels (CSR).
    k : int
        Labels ranked per text.
    cv : int, default=3
        Folds (``KFold``, shuffled).
    random_state : int, default=0
        Seeds the folds.

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
