"""Ready-made text pipelines: TF-IDF features into a one-vs-rest model."""

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import Pipeline

from ._ovr import OneVsRestLinear

#: TF-IDF defaults for XMTC on long documents: sublinear term frequency
#: (1 + log tf), terms seen in at least 2 training documents, unigrams, l2
#: rows. On EURLEX57K this gives ~40,000 features.
TFIDF_DEFAULTS = dict(sublinear_tf=True, min_df=2, max_df=1.0, ngram_range=(1, 1),
                      strip_accents="unicode", dtype=np.float64)

_OVR_PARAMS = {"class_weight", "fit_intercept", "tol", "max_iter", "prune_threshold", "solver",
               "n_jobs", "random_state", "verbose"}


def make_tfidf_ovr(loss="squared_hinge", C=1.0, **params):
    """TF-IDF features into :class:`OneVsRestLinear`, taking raw texts.

    Parameters
    ----------
    loss : {"squared_hinge", "logistic"}, default="squared_hinge"
        Loss of the per-label linear models.
    C : float, default=1.0
        Inverse regularisation strength.
    **params
        Keyword arguments named like :class:`OneVsRestLinear` parameters
        (``n_jobs``, ``prune_threshold``, ``class_weight``, ...) go to it;
        every other one goes to :class:`~sklearn.feature_extraction.text.TfidfVectorizer`,
        overriding ``TFIDF_DEFAULTS``.

    Returns
    -------
    pipeline : sklearn.pipeline.Pipeline
        Steps ``("tfidf", TfidfVectorizer)``, ``("ovr", OneVsRestLinear)``.
        Rank with ``xplant.linear.predict_top_k(pipeline, texts, k)``.

    Examples
    --------
    >>> pipe = make_tfidf_ovr(C=0.5, min_df=1, n_jobs=2)
    >>> pipe.named_steps["ovr"].C, pipe.named_steps["ovr"].n_jobs, pipe.named_steps["tfidf"].min_df
    (0.5, 2, 1)
    """
    ovr = {key: params.pop(key) for key in list(params) if key in _OVR_PARAMS}
    tfidf = {**TFIDF_DEFAULTS, **params}
    return Pipeline([
        ("tfidf", TfidfVectorizer(**tfidf)),
        ("ovr", OneVsRestLinear(loss=loss, C=C, **ovr)),
    ])


def make_tfidf_logistic(C=1.0, **params):
    """TF-IDF features into one-vs-rest logistic regression (the walking skeleton).

    Same as ``make_tfidf_ovr(loss="logistic", C=C, **params)``; the final
    step has ``predict_proba``.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength.
    **params
        As in :func:`make_tfidf_ovr`.

    Returns
    -------
    pipeline : sklearn.pipeline.Pipeline
        ``("tfidf", TfidfVectorizer)``, ``("ovr", OneVsRestLinear(loss="logistic"))``.

    Examples
    --------
    >>> make_tfidf_logistic().named_steps["ovr"].loss
    'logistic'
    """
    return make_tfidf_ovr(loss="logistic", C=C, **params)
