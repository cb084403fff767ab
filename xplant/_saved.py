"""Any fitted xplant model, neural or linear: rank and decide with it.

The scores, rankings and 0/1 decisions of a model of any kind, as
``xplant predict``, ``xplant evaluate`` and ``xplant run`` compute them from
a model :func:`xplant.persistence.load_saved` loaded (or one just fitted),
under the decision rule it returns (:func:`decide`).
"""

import numpy as np
import scipy.sparse as sp

from ._params import final_step


def model_fields(model):
    """The text fields a model reads besides ``"text"``: a description fusion's
    ``description_field``, then its mention matcher's ``text_field``, each once.

    A :class:`~xplant.linear.MentionMatcher` (or a
    :class:`~xplant.unseen.DescriptionFusion` with one as its ``mentions``,
    fitted or not) reads its ``text_field``: CodiEsp's matcher the Spanish
    original the evidence indexes (``"text_es"``) where the rows read the
    English. A :class:`~xplant.unseen.DescriptionFusion` whose description
    source reads a translation in the descriptions' language reads its
    ``description_field`` (CodiEsp's ``"text_en"`` where the rows read the
    Spanish). Such a model reads each document as a record ``{"text": text,
    <field>: that text}``.

    Parameters
    ----------
    model : estimator or Pipeline
        Fitted or not.

    Returns
    -------
    list of str
        Empty for a model that reads its documents' text alone.

    Examples
    --------
    >>> from xplant.linear import MentionMatcher
    >>> model_fields(MentionMatcher(text_field="text_es"))
    ['text_es']
    """
    from .linear import MentionMatcher
    final = final_step(model)
    matcher = final if isinstance(final, MentionMatcher) else getattr(final, "mentions_", None)
    if matcher is None:
        matcher = getattr(final, "mentions", None)
    own = (getattr(final, "description_field", None),
           None if matcher is None else getattr(matcher, "text_field", None))
    return [f for f in dict.fromkeys(own) if isinstance(f, str) and f != "text"]


def fitted_decision(model, default_k=10):
    """The decision rule a fitted model applies, as :func:`xplant.persistence.load_saved` returns it.

    The model's fitted rule ``decision_rule_`` (a
    :class:`~xplant.metrics.DecisionRule`, as a dict: PLANT's chosen on dev
    by ``fit``, a linear or description model's set by ``xplant run`` or
    its default); top-``default_k`` for a model without one.
    """
    rule = getattr(final_step(model), "decision_rule_", None)
    if rule is not None:
        return rule.to_dict()
    return {"rule": "top_k", "k": int(default_k), "threshold": 0.5, "thresholds": None}


def decision_record(decision):
    """A decision rule as JSON for records (``xplant predict``, ``evaluate``, ``run``).

    ``{"rule", "k", "threshold"}``; for the per-label rule also
    ``"n_label_thresholds"`` (labels whose threshold differs from the
    global one, which the others fall back to) and ``"label_threshold_range"``
    ``[min, max]``. The thresholds themselves are saved with the model.
    """
    out = {"rule": decision["rule"], "k": int(decision["k"]),
           "threshold": float(decision["threshold"])}
    th = decision.get("thresholds")
    if decision["rule"] == "per_label_threshold" and th is not None:
        th = np.asarray(th, dtype=np.float64)
        out["n_label_thresholds"] = int(np.sum(th != out["threshold"]))
        out["label_threshold_range"] = [float(th.min()), float(th.max())] if th.size else []
    return out


def labels_added(model):
    """Labels a fitted model gained after its fit (:func:`xplant.unseen.labels_added` of its
    last step)."""
    from .unseen import labels_added as added
    return added(final_step(model))


def label_names(model):
    """The model's label names as strings, in column order."""
    return [str(c) for c in final_step(model).classes_]


def score_scale(model):
    """The scale of :func:`score_matrix`: ``"probability"`` or ``"decision_function"``."""
    return "probability" if hasattr(model, "predict_proba") else "decision_function"


def _scores_as_given(s):
    """A model's score block as the metrics read it: dense float64, or CSR kept sparse.

    A CSR block (a :class:`~xplant.unseen.DescriptionFusion` over a
    catalogue) is never densified: a label it does not store is never
    ranked and never predicted, by every metric and decision rule
    (:func:`xplant.metrics.top_k_indices`, :func:`xplant.metrics.apply_rule`),
    where a dense copy would give it the score 0.0 and rank it above every
    negative score.
    """
    if not sp.issparse(s):
        return np.asarray(s, dtype=np.float64)
    from .metrics._validation import check_scores
    return check_scores(s).astype(np.float64)      # canonical CSR: missing = never ranked


def score_matrix(model, texts):
    """Scores ``(n, L)``: ``predict_proba`` where the model has it, else decision values.

    The scale on which ``xplant run`` chooses its thresholds (:func:`score_scale`).

    Returns
    -------
    {ndarray, csr_matrix} of float64 of shape (n, L)
        Dense, or CSR for a model whose scores are sparse: never densified,
        its missing entries stay never ranked and never predicted.
    """
    s = model.predict_proba(texts) if hasattr(model, "predict_proba") else \
        model.decision_function(texts)
    return _scores_as_given(s)


def ranking_scores(model, texts):
    """Scores ``(n, L)`` that rank as :func:`ranking` does, for the ranking metrics.

    Decision values where the model has them: they order the labels as its
    probabilities do (σ of them, or the same cosines) and break the ties of
    probabilities that saturate at 1.0. Else :func:`score_matrix`. Sparse
    scores stay CSR (a missing entry is never ranked).
    """
    if not hasattr(model, "decision_function"):
        return score_matrix(model, texts)
    return _scores_as_given(model.decision_function(texts))


def ranking(model, texts, k):
    """The model's best ``min(k, L)`` labels of each text, best first: the one ranking.

    The model's own ``predict_top_k`` (:func:`xplant.linear.predict_top_k`),
    which ranks by the scores that break ties: PLANT by its logits, whose
    probabilities tie once they saturate at 1.0 in float32; a logistic model
    by its decision values. The top-k rule of :func:`decide` and the records
    of ``xplant predict`` follow it.

    Returns
    -------
    indices : ndarray of int64 of shape (n, min(k, L))
        -1 where a label is never ranked.
    """
    from .linear import predict_top_k
    return np.asarray(predict_top_k(model, texts, k)[0], dtype=np.int64)


def decide(model, texts, decision, scores=None, ranked=None):
    """0/1 predictions of ``model`` on ``texts`` under ``decision``.

    Parameters
    ----------
    model : fitted estimator
    texts : list of str
    decision : dict
        As returned by :func:`xplant.persistence.load_saved` (any rule of
        :func:`xplant.metrics.check_rule`), applied as a
        :class:`xplant.metrics.DecisionRule`.
    scores : ndarray of shape (n, L) or None
        :func:`score_matrix` of the texts, when already computed (the
        threshold rules read them).
    ranked : ndarray of shape (n, >= k) or None
        :func:`ranking` of the texts, when already computed (the top-k rule
        takes its first k labels).

    Returns
    -------
    Y_pred : scipy.sparse.csr_matrix of shape (n, L), dtype int64

    Raises
    ------
    ValueError
        For an invalid rule, or per-label thresholds of another length than
        the model's labels (labels added since the rule was chosen,
        :func:`labels_added`, take its global threshold).
    """
    from .metrics import DecisionRule
    n_labels = len(label_names(model))
    rule = DecisionRule.from_dict(decision, n_labels, n_added=labels_added(model))
    if rule.rule == "top_k":
        k = min(rule.k, n_labels)
        if ranked is None or ranked.shape[1] < k:
            ranked = ranking(model, texts, k)
        out = rule.apply(None, y_top_k=ranked, n_labels=n_labels)
    else:
        if scores is None:
            scores = score_matrix(model, texts)
        out = rule.apply(scores)
    return sp.csr_matrix(out, dtype=np.int64)
