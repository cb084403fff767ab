"""The decision rule of a model: check it, apply it, and choose it on dev.

A rule is a dict ``{"rule", "k", "threshold", "thresholds"}`` naming one of
:data:`DECISION_RULES` (top-k, one global threshold, per-label thresholds)
with its parameters. :func:`check_rule` is the one check of such a dict,
:func:`apply_rule` turns scores into label sets by it, and
:func:`choose_rule` chooses the rule on dev by cross-fitted dev micro-F1 and
fits its parameters with the selectors of :mod:`xplant.metrics._decision`.
:class:`DecisionRule` is the object form of the same dict (the one
decision-rule type a fitted model holds), wrapping these three functions.
"""

import numbers

import numpy as np

from ._decision import (select_k, select_label_thresholds, select_threshold, threshold_decision,
                        top_k_decision)
from ._validation import check_binary, check_k, check_scores

__all__ = ["DECISION_RULES", "DecisionRule", "apply_rule", "check_rule", "choose_rule"]

#: The candidate decision rules of :func:`choose_rule`, from the simplest: a tie of
#: their dev scores keeps the earlier.
DECISION_RULES = ("top_k", "threshold", "per_label_threshold")

#: Dev positives a label needs for a threshold of its own under the per-label rule;
#: the others take the global threshold.
MIN_LABEL_POSITIVES = 5

#: Folds of dev documents over which :func:`choose_rule` cross-fits the rules.
RULE_FOLDS = 5


def check_rule(rule, n_labels=None, *, n_added=0):
    """The one check of a decision rule: a dict as :func:`choose_rule` returns it.

    Parameters
    ----------
    rule : dict
        ``{"rule": one of DECISION_RULES, "k": int, "threshold": float,
        "thresholds": array-like of shape (n_labels,) or None}``. ``k`` and
        ``threshold`` are needed by every rule (the top-k rule reads ``k``,
        the global threshold ``threshold``, which is also the per-label
        rule's fallback); ``thresholds`` only by ``"per_label_threshold"``
        (absent or None for the others). Other keys are ignored.
    n_labels : int or None, default=None
        The number of label columns ``thresholds`` must have.
    n_added : int, default=0
        Label columns appended after the rule was chosen (the codes of a
        new catalogue release, :meth:`xplant.unseen.DescriptionFusion.add_labels`),
        the last ones. Per-label thresholds may stop up to ``n_added``
        columns short of ``n_labels``: the labels past them have no dev data
        of their own and take the global threshold, as every label without
        enough dev positives does.

    Returns
    -------
    dict
        ``{"rule": str, "k": int, "threshold": float, "thresholds": ndarray
        of float64 of shape (n_labels,) or None}``, a new dict.

    Raises
    ------
    ValueError
        For an unknown rule, a k that is no positive integer, a NaN or
        non-numeric threshold, or per-label thresholds that are missing,
        hold NaN or have another length than ``n_labels``.

    Examples
    --------
    >>> check_rule({"rule": "threshold", "k": 2, "threshold": 0.4})
    {'rule': 'threshold', 'k': 2, 'threshold': 0.4, 'thresholds': None}
    >>> check_rule({"rule": "per_label_threshold", "k": 1, "threshold": 0.5,
    ...             "thresholds": [0.2, 0.7]}, 3, n_added=1)["thresholds"].tolist()
    [0.2, 0.7, 0.5]
    """
    if not isinstance(rule, dict):
        raise ValueError(f"a decision rule is a dict with 'rule', 'k' and 'threshold', got "
                         f"{rule!r:.80}")
    name = rule.get("rule")
    if not isinstance(name, str) or name not in DECISION_RULES:
        raise ValueError(f"decision rule must be one of {list(DECISION_RULES)}, got {name!r}")
    k = check_k(rule.get("k"), "the decision rule's k")
    t = rule.get("threshold")
    if isinstance(t, bool) or not isinstance(t, numbers.Real) or np.isnan(t):
        raise ValueError(f"the decision rule's threshold must be a number, got {t!r}")
    thresholds = rule.get("thresholds")
    if name != "per_label_threshold":
        thresholds = None
    elif thresholds is None:
        raise ValueError("the per_label_threshold rule needs 'thresholds', one per label")
    else:
        thresholds = np.array(thresholds, dtype=np.float64)
        short = 0 if n_labels is None or thresholds.ndim != 1 else n_labels - thresholds.size
        if thresholds.ndim != 1 or np.isnan(thresholds).any() or \
                (n_labels is not None and not 0 <= short <= n_added):
            raise ValueError("the decision rule's thresholds must be a 1-D array of numbers"
                             + ("" if n_labels is None else f" of length {n_labels}")
                             + (f" (or {n_labels - n_added} before the {n_added} labels added "
                                "since)" if n_added else "")
                             + f", got shape {thresholds.shape}")
        if short:                              # labels added since: the global threshold
            thresholds = np.concatenate([thresholds, np.full(short, float(t))])
    return {"rule": name, "k": k, "threshold": float(t), "thresholds": thresholds}


def apply_rule(y_score, rule, *, y_top_k=None, n_labels=None):
    """0/1 predictions of scores under a decision rule.

    The one place a rule turns scores into label sets: every model's
    ``predict`` and :func:`xplant._saved.decide` come here.

    Parameters
    ----------
    y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels) or None
        Scores on the scale the rule's thresholds were chosen on. None is
        allowed for the top-k rule given ``y_top_k``.
    rule : dict
        As :func:`choose_rule` returns it (checked by :func:`check_rule`).
    y_top_k : ndarray of int of shape (n_samples, >= min(k, n_labels)) or None, default=None
        A model's own ranking, best first (-1 where no label is ranked):
        the top-k rule takes its first k labels instead of ranking
        ``y_score`` (a model whose ranking breaks the ties of its scores
        otherwise, or that ranks without a dense score matrix). The
        threshold rules ignore it. Needs ``n_labels``.
    n_labels : int or None, default=None
        The number of label columns, with ``y_top_k``; ``k`` is clipped to it.

    Returns
    -------
    y_pred : scipy.sparse.csr_matrix of shape (n_samples, n_labels), int64
        :func:`top_k_decision` with ``k``, or :func:`threshold_decision`
        with ``threshold`` or ``thresholds``.

    Raises
    ------
    ValueError
        For an invalid rule (:func:`check_rule`), per-label thresholds of
        another length than the score columns, or no ``y_score`` where the
        rule needs scores.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[0.9, 0.2, 0.6]])
    >>> rule = {"rule": "per_label_threshold", "k": 1, "threshold": 0.5,
    ...         "thresholds": [0.95, 0.1, 0.5]}
    >>> apply_rule(S, rule).toarray()
    array([[0, 1, 1]])
    """
    if y_top_k is not None and n_labels is None:
        raise ValueError("y_top_k needs n_labels (the number of label columns)")
    if y_score is None:
        rule = check_rule(rule, n_labels)
        if rule["rule"] != "top_k" or y_top_k is None:
            raise ValueError(f"the {rule['rule']} rule needs y_score"
                             + ("" if rule["rule"] != "top_k" else " or y_top_k"))
    else:
        S = check_scores(y_score)
        rule = check_rule(rule, S.shape[1])
    if rule["rule"] == "top_k":
        if y_top_k is not None:
            k = min(rule["k"], int(n_labels))
            return top_k_decision(y_top_k=np.asarray(y_top_k)[:, :k], k=k, n_labels=n_labels)
        return top_k_decision(S, rule["k"])
    if rule["rule"] == "threshold":
        return threshold_decision(S, rule["threshold"])
    return threshold_decision(S, rule["thresholds"])


def _global_threshold(Y, S):
    """:func:`select_threshold`, or +inf (nothing predicted) without a positive label."""
    return select_threshold(Y, S) if Y.nnz else float("inf")


def _fit_rules(Y, S, rules, max_k, min_positives):
    """Each rule's parameters fitted on (Y, S): ``{rule name: rule dict}``."""
    k = select_k(Y, S, ks=range(1, max_k + 1))
    t = _global_threshold(Y, S)
    out = {}
    for r in rules:
        th = None
        if r == "per_label_threshold":
            th = (select_label_thresholds(Y, S, fallback=t, min_positives=min_positives)
                  if Y.nnz else np.full(Y.shape[1], t))
        out[r] = {"rule": r, "k": k, "threshold": t, "thresholds": th}
    return out


def _hits(Y, P):
    """True positives of 0/1 predictions P against Y (both CSR)."""
    return int(Y.multiply(P).sum())


def _cross_fitted_f1(Y, S, rules, max_k, min_positives, n_folds, random_state):
    """Each rule's micro-F1 over every dev document, each predicted by parameters
    fitted on the other folds (in-sample with fewer than two documents)."""
    n = Y.shape[0]
    folds = min(n_folds, n)
    tp, npred = np.zeros(len(rules)), np.zeros(len(rules))
    if folds < 2:
        fitted = _fit_rules(Y, S, rules, max_k, min_positives)
        for i, r in enumerate(rules):
            P = apply_rule(S, fitted[r])
            tp[i], npred[i] = _hits(Y, P), P.nnz
    else:
        fold = np.random.default_rng(random_state).permutation(n) % folds
        for f in range(folds):
            held, fit = np.flatnonzero(fold == f), np.flatnonzero(fold != f)
            fitted = _fit_rules(Y[fit], S[fit], rules, max_k, min_positives)
            Yh, Sh = Y[held], S[held]
            for i, r in enumerate(rules):
                P = apply_rule(Sh, fitted[r])
                tp[i] += _hits(Yh, P)
                npred[i] += P.nnz
    denom = npred + Y.nnz
    return np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)


def choose_rule(y_true_dev, y_score_dev, max_k=10, *, rules=DECISION_RULES,
                n_folds=RULE_FOLDS, min_positives=MIN_LABEL_POSITIVES, random_state=0,
                fallback=None, warn=True, fixed=None):
    """Choose the decision rule on dev, fairly, and fit its parameters on the whole dev.

    The candidates (``rules``, from :data:`DECISION_RULES`):

    - ``"top_k"``: each document's k best-scored labels, k from 1 to ``max_k``
      (:func:`select_k`);
    - ``"threshold"``: one global threshold (:func:`select_threshold`, an
      exact sweep of every dev score);
    - ``"per_label_threshold"``: one threshold per label, each maximising
      that label's F1 (:func:`select_label_thresholds`); a label with fewer
      than ``min_positives`` dev positives (or whose positives are never
      scored) takes the global threshold.

    Parameters fitted and scored on the same documents favour the rule
    with the most parameters (L thresholds can fit any dev set), so the
    rules are compared by **cross-fitting**: the dev documents are split
    into ``n_folds`` seeded random folds; each rule's parameters are fitted
    on the other folds and predict the held-out fold; a rule's score is
    the micro-F1 of these held-out predictions over every dev document.
    The rule with the best score is a decision choice of
    :func:`~xplant.model_selection.choose_on_dev` (ties keep the earlier
    rule of ``rules``, the simpler), and its parameters are then fitted on
    the whole dev. k and the global threshold are fitted on the whole dev
    whatever the rule (each a recorded choice).

    Parameters
    ----------
    y_true_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels) or None
        Dev labels. None, or no positive label: no labelled dev data.
    y_score_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels) or None
        Dev scores, on the scale the rule will read.
    max_k : int, default=10
        Largest k of the top-k rule tried.
    rules : sequence of str, default=DECISION_RULES
        The candidates. With one rule nothing is chosen: its parameters
        are fitted on the whole dev without cross-fitting.
    n_folds : int, default=RULE_FOLDS
        Folds of the cross-fitting (at most the number of dev documents;
        with a single dev document the rules are scored in-sample).
    min_positives : int, default=MIN_LABEL_POSITIVES
        Dev positives a label needs for a threshold of its own (counted in
        the documents its threshold is fitted on).
    random_state : int, default=0
        Seeds the folds.
    fallback : dict or None, default=None
        The rule taken without labelled dev data (as :func:`check_rule`
        reads it). None: ``rules[0]`` with k = 1 and threshold 0.5 (each
        label at 0.5 for the per-label rule).
    warn : bool, default=True
        Warn with :class:`~xplant.model_selection.NoDevDataWarning` when
        the fallback is taken (an estimator that warns once for all its
        choices passes False).
    fixed : dict or None, default=None
        A rule given, not chosen (as :func:`check_rule` reads it; its rule
        must be in ``rules``): nothing is fitted and the dev data are not
        read; the records hold its values with ``fixed`` True (how a refit
        on train + dev carries over the rule, k, threshold and per-label
        thresholds its first fit chose).

    Returns
    -------
    dict
        The rule, as :func:`check_rule` gives it (``"rule"``, ``"k"``,
        ``"threshold"``, ``"thresholds"``: per-label thresholds of float64
        aligned with the score columns, or None for the other rules), plus
        ``"choices"``: the :class:`~xplant.model_selection.DevChoice`
        records by name: ``"decision"`` (every candidate rule's
        cross-fitted dev micro-F1; absent with one rule), ``"k"`` and
        ``"threshold"`` (fitted on the whole dev). Without labelled dev
        data the records hold the fallback (``on_dev`` False).

    Raises
    ------
    ValueError
        For no rules or an unknown one, a ``max_k``, ``n_folds`` or
        ``min_positives`` that is no positive integer, scores whose shape
        differs from the labels', or an invalid ``fallback``.

    Warns
    -----
    NoDevDataWarning
        Once, without labelled dev data (with ``warn``).

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]])
    >>> S = np.array([[.9, .8, .1, .0], [.8, .9, .0, .1], [.1, .7, .9, .0], [.9, .0, .1, .8]])
    >>> rule = choose_rule(Y, S, max_k=3, n_folds=2)
    >>> rule["rule"], rule["k"], rule["threshold"]
    ('top_k', 2, 0.7)
    >>> [(r, round(f, 3)) for r, f in rule["choices"]["decision"].scores]
    [('top_k', 1.0), ('threshold', 0.933), ('per_label_threshold', 0.933)]
    """
    from .._choice import DevChoice, choose_on_dev
    rules = list(rules)
    if not rules:
        raise ValueError(f"rules is empty; give some of {list(DECISION_RULES)}")
    for r in rules:
        if not isinstance(r, str) or r not in DECISION_RULES:
            raise ValueError(f"each rule must be one of {list(DECISION_RULES)}, got {r!r}")
    max_k = check_k(max_k, "max_k")
    n_folds = check_k(n_folds, "n_folds")
    min_positives = check_k(min_positives, "min_positives")
    Y = None if y_true_dev is None else check_binary(y_true_dev, "y_true_dev")
    S = None if y_score_dev is None else check_scores(
        y_score_dev, None if Y is None else Y.shape, "y_score_dev")
    n_labels = S.shape[1] if S is not None else Y.shape[1] if Y is not None else None
    if fixed is not None:
        rule = check_rule(fixed, None if fixed.get("rule") != "per_label_threshold"
                          else n_labels)
        if rule["rule"] not in rules:
            raise ValueError(f"fixed rule {rule['rule']!r} is not one of rules {rules}")
        choices = {} if len(rules) == 1 else {"decision": choose_on_dev(
            "decision", [rule["rule"]], None, family="decision", criterion="micro_f1",
            fallback=rule["rule"], fixed=True)}
        for name in ("k", "threshold"):
            choices[name] = choose_on_dev(name, [rule[name]], None, family="decision",
                                          criterion="micro_f1", fallback=rule[name], fixed=True)
        return {**rule, "choices": choices}
    if Y is None or S is None or Y.nnz == 0:
        if fallback is None:
            fallback = {"rule": rules[0], "k": 1, "threshold": 0.5,
                        "thresholds": None if n_labels is None else np.full(n_labels, 0.5)}
        rule = check_rule(fallback, n_labels)
        if rule["rule"] not in rules:
            raise ValueError(f"fallback rule {rule['rule']!r} is not one of rules {rules}")
        decision = choose_on_dev("decision", rules, None, family="decision",
                                 criterion="micro_f1", fallback=rule["rule"], has_dev=False,
                                 warn=warn)
        choices = {"decision": decision} if len(rules) > 1 else {}
        for name in ("k", "threshold"):
            choices[name] = DevChoice(name, "decision", "micro_f1", rule[name], (), False)
        return {**rule, "choices": choices}
    choices = {}
    if len(rules) > 1:
        f1 = _cross_fitted_f1(Y, S, rules, max_k, min_positives, n_folds, random_state)
        choices["decision"] = choose_on_dev("decision", rules, f1, family="decision",
                                            criterion="micro_f1", fallback=rules[0])
        chosen = choices["decision"].value
    else:
        chosen = rules[0]
    choices["k"] = select_k(Y, S, ks=range(1, max_k + 1), return_choice=True)
    choices["threshold"] = select_threshold(Y, S, return_choice=True)
    k, t = int(choices["k"].value), float(choices["threshold"].value)
    thresholds = None
    if chosen == "per_label_threshold":
        thresholds = select_label_thresholds(Y, S, fallback=t, min_positives=min_positives)
    return {"rule": chosen, "k": k, "threshold": t, "thresholds": thresholds,
            "choices": choices}


class DecisionRule:
    """A decision rule as one object: the rule's name and its parameters.

    The object form of the dict that :func:`check_rule` checks,
    :func:`apply_rule` applies and :func:`choose_rule` chooses (a plain
    function, then an object, as in scikit-learn): :meth:`choose` fits it
    on dev, :meth:`apply` turns scores into label sets, :meth:`to_dict` and
    :meth:`from_dict` give and read the dict, each through
    :func:`check_rule`. :class:`~xplant.neural.PlantClassifier` keeps its
    fitted rule as one (``decision_rule_``).

    Parameters
    ----------
    rule : {"top_k", "threshold", "per_label_threshold"}, default="top_k"
        The rule's name (one of :data:`DECISION_RULES`).
    k : int, default=1
        k of the top-k rule (kept whatever the rule).
    threshold : float, default=0.5
        The global threshold (kept whatever the rule; the per-label rule's
        fallback).
    thresholds : array-like of float of shape (n_labels,) or None, default=None
        One threshold per label, for ``"per_label_threshold"`` only.

    Attributes
    ----------
    choices : dict of str to DevChoice
        After :meth:`choose`: the records of the choices made on dev
        (``"decision"``, ``"k"``, ``"threshold"``); empty otherwise.

    Raises
    ------
    ValueError
        For an invalid rule (:func:`check_rule`).

    Examples
    --------
    >>> import numpy as np
    >>> rule = DecisionRule("threshold", k=2, threshold=0.4)
    >>> rule.apply(np.array([[0.5, 0.3, 0.9]])).toarray()
    array([[1, 0, 1]])
    >>> DecisionRule.from_dict(rule.to_dict()) == rule
    True
    """

    def __init__(self, rule="top_k", k=1, threshold=0.5, thresholds=None):
        checked = check_rule({"rule": rule, "k": k, "threshold": threshold,
                              "thresholds": thresholds})
        self.rule, self.k, self.threshold = checked["rule"], checked["k"], checked["threshold"]
        self.thresholds = checked["thresholds"]
        self.choices = {}

    @classmethod
    def from_dict(cls, rule, n_labels=None, *, n_added=0):
        """The rule of a dict as :func:`check_rule` reads it.

        Parameters
        ----------
        rule : dict
            ``{"rule", "k", "threshold", "thresholds"}``; other keys are ignored.
        n_labels : int or None, default=None
            The number of per-label thresholds required.
        n_added : int, default=0
            Labels appended since the rule was chosen; they take the global
            threshold (:func:`check_rule`).

        Returns
        -------
        DecisionRule

        Raises
        ------
        ValueError
            For an invalid rule (:func:`check_rule`).
        """
        return cls(**check_rule(rule, n_labels, n_added=n_added))

    def to_dict(self):
        """The rule as a dict, :func:`check_rule`'s form (a new dict, a new array).

        Returns
        -------
        dict
            ``{"rule": str, "k": int, "threshold": float, "thresholds":
            ndarray of float64 of shape (n_labels,) or None}``.
        """
        return check_rule({"rule": self.rule, "k": self.k, "threshold": self.threshold,
                           "thresholds": self.thresholds})

    @classmethod
    def choose(cls, y_true_dev, y_score_dev, max_k=10, **kwargs):
        """The rule chosen on dev by :func:`choose_rule`, with its records in ``choices``.

        Parameters
        ----------
        y_true_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels) or None
            Dev labels (None: no labelled dev data).
        y_score_dev : {ndarray, sparse matrix} of shape (n_samples, n_labels) or None
            Dev scores, on the scale the rule will read.
        max_k : int, default=10
            Largest k of the top-k rule tried.
        **kwargs
            The keyword arguments of :func:`choose_rule` (``rules``,
            ``fallback``, ``fixed``, ``warn``, ...).

        Returns
        -------
        DecisionRule
            With ``choices``: the :class:`~xplant.model_selection.DevChoice`
            records :func:`choose_rule` returns.

        Raises
        ------
        ValueError
            As :func:`choose_rule`.
        """
        chosen = choose_rule(y_true_dev, y_score_dev, max_k, **kwargs)
        choices = chosen.pop("choices")
        out = cls(**chosen)
        out.choices = choices
        return out

    def apply(self, y_score, *, y_top_k=None, n_labels=None):
        """0/1 predictions of scores by this rule (:func:`apply_rule`).

        Parameters
        ----------
        y_score : {ndarray, sparse matrix} of shape (n_samples, n_labels) or None
            Scores on the scale the rule's thresholds were chosen on (None
            for the top-k rule given ``y_top_k``).
        y_top_k : ndarray of int of shape (n_samples, >= min(k, n_labels)) or None, default=None
            A model's own ranking, which the top-k rule takes its labels from.
        n_labels : int or None, default=None
            The number of label columns, with ``y_top_k``.

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_samples, n_labels), int64

        Raises
        ------
        ValueError
            When per-label thresholds do not match the score columns, or
            as :func:`apply_rule`.
        """
        return apply_rule(y_score, self.to_dict(), y_top_k=y_top_k, n_labels=n_labels)

    def __eq__(self, other):
        if not isinstance(other, DecisionRule):
            return NotImplemented
        a, b = self.to_dict(), other.to_dict()
        same = a["thresholds"] is None and b["thresholds"] is None or (
            a["thresholds"] is not None and b["thresholds"] is not None
            and np.array_equal(a["thresholds"], b["thresholds"]))
        return same and (a["rule"], a["k"], a["threshold"]) == (b["rule"], b["k"], b["threshold"])

    __hash__ = None

    def __repr__(self):
        extra = "" if self.thresholds is None else f", thresholds=<{self.thresholds.size} labels>"
        return (f"DecisionRule({self.rule!r}, k={self.k}, threshold={self.threshold!r}"
                f"{extra})")
