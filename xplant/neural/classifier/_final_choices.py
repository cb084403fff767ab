"""What PlantClassifier's fit chooses after training: the epoch and the decision rule.

Plain functions of what they read, which the estimator's ``fit`` calls (a
plain function, then the estimator): :func:`choose_epoch` picks the best
epoch by the dev ``scoring`` from a fit's history (the part
``parts_["dev_choices"]`` records it); :func:`choose_decision` the decision
rule and its parameters (a :class:`xplant.metrics.DecisionRule`, the part
``parts_["decision_rule"]``) from the dev scores and the ``decision``
settings.
"""

import numpy as np

from ...metrics import DECISION_RULES, DecisionRule


def choose_epoch(history, scoring, patience):
    """The best epoch by the dev ``scoring``: a ranking choice of
    :func:`~xplant.model_selection.choose_on_dev`.

    Ties keep the earlier epoch, as early stopping restores it; without dev
    data the last epoch; with ``patience=None`` the last epoch, recorded as
    fixed.

    Parameters
    ----------
    history : skorch.History
        The fit's epochs, with ``valid_<scoring>`` where dev was scored.
    scoring : str
        The dev metric's name.
    patience : int or None
        Early stopping's patience; None: no early stopping.

    Returns
    -------
    DevChoice
        Its ``value`` is the 1-based epoch.
    """
    from ...model_selection import choose_on_dev
    if patience is None:
        return choose_on_dev("epoch", [len(history)], None, family="ranking",
                             criterion=scoring, fallback=len(history), fixed=True)
    key = "valid_" + scoring
    vals = [h.get(key) for h in history]
    has_dev = bool(vals) and vals[0] is not None
    vals = [float("-inf") if v is None or not np.isfinite(v) else float(v) for v in vals]
    return choose_on_dev("epoch", list(range(1, len(vals) + 1)) or [0], vals or [0.0],
                         family="ranking", criterion=scoring,
                         fallback=len(history), has_dev=has_dev, warn=False)


def choose_decision(decision, settings, Y_train, dev_Y, dev_scores):
    """The decision rule and its parameters, by :func:`xplant.metrics.choose_rule`.

    With ``decision="dev"`` the rule is a
    :func:`~xplant.model_selection.choose_on_dev` decision choice
    (cross-fitted dev micro-F1), else the fixed one; k and the global
    threshold are fitted on dev either way. Without labelled dev data: the
    rule ``decision`` names (top-k for "dev"), k the mean training labels
    per document, the threshold 0.5 (each label's too). A fixed rule with
    ``decision__k`` and ``decision__threshold`` (and
    ``decision__thresholds`` for the per-label rule) is taken as given:
    nothing is fitted on dev.

    Parameters
    ----------
    decision : str
        The estimator's ``decision`` ("dev" or a rule of
        :data:`~xplant.metrics.DECISION_RULES`).
    settings : dict
        Its resolved ``decision__`` settings (``max_k``, ``k``,
        ``threshold``, ``thresholds``).
    Y_train : csr_matrix of shape (n_train, n_labels)
        The training targets (their mean labels per document are the
        fallback k).
    dev_Y : csr_matrix of shape (n_dev, n_labels) or None
        The labelled dev targets; None without labelled dev data.
    dev_scores : callable
        Returns the dev scores ``(n_dev, n_labels)`` on the scale of
        ``predict_proba``; called only when the rule is fitted on dev.

    Returns
    -------
    DecisionRule
        With ``choices``, the records of the choices made.
    """
    n_labels = Y_train.shape[1]
    rules = DECISION_RULES if decision == "dev" else (decision,)
    mean = int(max(1, round(Y_train.nnz / max(1, Y_train.shape[0]))))
    fallback = {"rule": rules[0], "k": min(mean, n_labels), "threshold": 0.5,
                "thresholds": np.full(n_labels, 0.5)}
    fixed = None
    if decision != "dev" and settings["k"] is not None and settings["threshold"] is not None:
        fixed = {"rule": decision, "k": settings["k"], "threshold": settings["threshold"],
                 "thresholds": settings["thresholds"]}
    scores = dev_scores() if dev_Y is not None and fixed is None else None
    return DecisionRule.choose(dev_Y, scores, int(settings["max_k"]), rules=rules,
                               fallback=fallback, warn=False, fixed=fixed)
