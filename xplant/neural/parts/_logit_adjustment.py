"""Post-hoc logit adjustment of PLANT's scores (plain functions).

A network trained on a long-tailed label distribution learns each label's
prior into its logit, so head labels crowd rare ones out of a document's
top k. Logit adjustment (Menon et al., "Long-tail learning via logit
adjustment", ICLR 2021, eq. 9, post-hoc form) subtracts a multiple of the
log prior from every logit:

    z̃_l = z_l − τ · log p_l,

with p_l the smoothed training prior of label l
(:func:`xplant._labels.label_prior`). τ = 0 leaves the model as trained;
τ = 1 is the adjustment the paper derives for the balanced error. It
changes no weight and costs one subtraction per score, so τ is chosen on
dev after training, like the decision rule.
"""

import numpy as np

from ..._labels import label_prior
from ..._params import check_param

#: τ tried by ``logit_adjustment="dev"``, from none to the paper's balanced-error τ = 1.
LOGIT_ADJUSTMENT_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)


def check_logit_adjustment(value):
    """Validate ``logit_adjustment``: ``"dev"`` or a finite float τ >= 0.

    Returns ``"dev"`` or τ as a float; raises ValueError naming the
    parameter and what it takes.
    """
    if isinstance(value, str):
        check_param("logit_adjustment", value, allowed=("dev",))
        return value
    check_param("logit_adjustment", value, low=0.0)
    if not np.isfinite(value):
        raise ValueError(f"logit_adjustment must be 'dev' or a finite number >= 0, got {value!r}")
    return float(value)


def log_prior(label_frequency, n_documents):
    """log p_l of each label: the log of its smoothed training prior.

    p_l = (f_l + ½) / (N + 1) (:func:`xplant._labels.label_prior`), the
    prior that the logit adjustment z − τ · log p_l subtracts.

    Parameters
    ----------
    label_frequency : array-like of int of shape (n_labels,)
        Training documents of each label (a fitted ``label_frequency_``).
    n_documents : int
        Training documents (``n_train_documents_``).

    Returns
    -------
    ndarray of float64 of shape (n_labels,)

    Examples
    --------
    >>> log_prior([0, 3], 3).round(4).tolist()
    [-2.0794, -0.1335]
    """
    return np.log(label_prior(label_frequency, n_documents))


def adjust_logits(logits, log_p, tau):
    """z − τ · log p, the post-hoc logit adjustment of Menon et al. (2021).

    Parameters
    ----------
    logits : ndarray of shape (n_samples, n_labels) or (n_samples, C)
        The network's logits z, of every label or of each row's candidates.
    log_p : ndarray of shape (n_labels,) or (n_samples, C)
        Log priors of the logits' labels (for candidate logits, the log
        priors gathered at each row's candidates).
    tau : float >= 0
        τ; 0 returns the logits as they are (as float64).

    Returns
    -------
    ndarray of float64
        The shape of ``logits``. Larger for rarer labels: log p < 0, so
        every score rises by τ · (−log p).

    Examples
    --------
    >>> z = np.array([[0.0, 0.0]])
    >>> adjust_logits(z, np.log([0.5, 0.25]), 1.0).round(4).tolist()
    [[0.6931, 1.3863]]
    """
    z = np.asarray(logits, dtype=np.float64)
    return z if tau == 0 else z - float(tau) * np.asarray(log_p, dtype=np.float64)


def choose_logit_adjustment(Y_dev, scores_at, grid=LOGIT_ADJUSTMENT_GRID, max_k=10):
    """τ from ``grid`` by dev micro-F1 of the top-k rule, k from 1 to ``max_k`` chosen with it.

    A decision choice of :func:`~xplant.model_selection.choose_on_dev`: the
    criterion is the top-k rule's (k chosen on dev micro-F1): τ is a decision-level knob that trades head labels
    for tail labels in each document's predicted set. Ties keep the
    smaller τ, so τ = 0 (the model as trained) wins unless dev prefers
    another.

    Parameters
    ----------
    Y_dev : sparse matrix of shape (n_samples, n_labels)
        The dev labels.
    scores_at : callable
        ``scores_at(tau)`` gives the dev scores (n_dev, n_labels) at τ.
    grid : sequence of float >= 0
        The τ tried.
    max_k : int
        The largest k of the top-k rule chosen with each τ.

    Returns
    -------
    tau : float
        The τ chosen.
    scores : ndarray of shape (n_samples, n_labels)
        The dev scores at that τ.
    micro_f1 : dict of float to float
        Each τ's dev micro-F1 (a fraction) at its best k.
    """
    from ... import metrics
    from ...model_selection import choose_on_dev

    def micro_f1(tau):
        scores = scores_at(tau)
        k = metrics.select_k(Y_dev, scores, ks=range(1, max_k + 1))
        return float(metrics.f1_score(Y_dev, metrics.top_k_decision(scores, k), average="micro"))

    choice = choose_on_dev("logit_adjustment", [float(t) for t in grid], micro_f1,
                           family="decision", criterion="micro_f1", fallback=0.0)
    return choice.value, scores_at(choice.value), dict(choice.scores)


class LogitAdjustment:
    """The fitted logit adjustment of a PlantClassifier: τ, its dev record and the log prior.

    One of the classifier's fitted parts (``parts_["logit_adjustment"]``):
    :meth:`choose` fits τ on dev (:func:`choose_logit_adjustment`, or the
    given τ), :meth:`apply` subtracts τ · log p from the network's logits,
    :meth:`to_dict` and :meth:`from_dict` give and read what a saved model
    keeps (τ and each τ's dev micro-F1; the log prior is derived from the
    saved label frequencies, :func:`log_prior`).

    Parameters
    ----------
    tau : float >= 0, default=0.0
        τ (0: the network as trained).
    dev_scores : dict of float to float or None, default=None
        Each τ's dev micro-F1 (a fraction) at its best k, when τ was chosen on dev.
    log_prior : ndarray of float64 of shape (n_labels,) or None, default=None
        log p_l of each label (:func:`log_prior`); needed by :meth:`apply`
        when τ > 0.

    Attributes
    ----------
    choice : DevChoice or None
        After :meth:`choose`: the record of the choice (``dev_choices_["logit_adjustment"]``).

    Raises
    ------
    ValueError
        For a τ that is not a finite number >= 0, or ``dev_scores`` that
        are not numbers by τ.

    Examples
    --------
    >>> import torch
    >>> part = LogitAdjustment(0.5, log_prior=np.log([0.5, 0.25]))
    >>> part.apply(torch.zeros(1, 2)).double().numpy().round(4).tolist()
    [[0.3466, 0.6931]]
    >>> LogitAdjustment.from_dict(part.to_dict(), log_prior=part.log_prior).tau
    0.5
    """

    def __init__(self, tau=0.0, dev_scores=None, log_prior=None):
        if isinstance(tau, str):
            raise ValueError(f"a fitted logit adjustment is a number >= 0, got {tau!r}")
        self.tau = check_logit_adjustment(tau)
        if dev_scores is not None:
            if not isinstance(dev_scores, dict) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool)
                    for v in dev_scores.values()):
                raise ValueError("the logit adjustment's dev_scores must be None or an object "
                                 "of numbers")
            try:
                dev_scores = {float(k): float(v) for k, v in dev_scores.items()}
            except ValueError:
                raise ValueError("the logit adjustment's dev_scores keys must be numbers "
                                 "(each τ)") from None
        self.dev_scores = dev_scores
        self.log_prior = log_prior
        self.choice = None

    @classmethod
    def choose(cls, setting, log_prior, Y_dev=None, scores_at=None, max_k=10):
        """τ fitted on dev, or the one given: the part and the dev scores at it.

        Parameters
        ----------
        setting : "dev" or float >= 0
            ``decision__logit_adjustment``.
        log_prior : ndarray of float64 of shape (n_labels,)
            log p_l of each label (:func:`log_prior`).
        Y_dev : sparse matrix of shape (n_dev, n_labels) or None, default=None
            The dev labels (None: no labelled dev data).
        scores_at : callable or None, default=None
            ``scores_at(tau)``: the dev scores (n_dev, n_labels) at τ; None
            without labelled dev data.
        max_k : int, default=10
            The largest k of the top-k rule chosen with each τ.

        Returns
        -------
        part : LogitAdjustment
            With ``choice``, the :class:`~xplant.model_selection.DevChoice`
            record: a fixed τ (``fixed``), τ chosen on dev, or without
            labelled dev data τ = 0 (``on_dev`` False).
        scores : ndarray of shape (n_dev, n_labels) or None
            The dev scores at the chosen τ when :func:`choose_logit_adjustment`
            computed them, else None.

        Raises
        ------
        ValueError
            For a ``setting`` that is neither "dev" nor a finite number >= 0.
        """
        from ...model_selection import DevChoice, choose_on_dev
        tau, dev, scores = check_logit_adjustment(setting), None, None
        if tau != "dev":                        # given, not chosen
            choice = choose_on_dev("logit_adjustment", [float(tau)], None, family="decision",
                                   criterion="micro_f1", fallback=float(tau), fixed=True)
        elif scores_at is None:
            choice = choose_on_dev("logit_adjustment", [0.0], None, family="decision",
                                   criterion="micro_f1", fallback=0.0, has_dev=False,
                                   warn=False)
            tau = choice.value
        else:
            tau, scores, dev = choose_logit_adjustment(Y_dev, scores_at, LOGIT_ADJUSTMENT_GRID,
                                                       max_k=max_k)
            choice = DevChoice("logit_adjustment", "decision", "micro_f1", tau,
                               tuple(dev.items()))
        part = cls(float(tau), dev, log_prior)
        part.choice = choice
        return part, scores

    def apply(self, z, labels=None, tau=None):
        """Logits ``z`` minus τ · log p, as a float tensor of ``z``'s dtype.

        Parameters
        ----------
        z : torch.Tensor of shape (b, n_labels) or (b, C)
            The network's logits of every label, or of ``labels``.
        labels : array-like of int of shape (b, C) or None, default=None
            Each row's labels of ``z`` (candidates); None: every label.
        tau : float or None, default=None
            τ to apply instead of the fitted one.

        Returns
        -------
        torch.Tensor
            ``z`` itself when τ = 0.
        """
        tau = float(self.tau if tau is None else tau)
        if tau == 0:
            return z
        import torch
        log_p = self.log_prior if labels is None else self.log_prior[np.asarray(labels)]
        return z - torch.as_tensor(tau * log_p, dtype=z.dtype)

    def to_dict(self):
        """What a saved model keeps: ``{"tau": float, "dev_scores": {str(τ): float} or None}``.

        Returns
        -------
        dict
            JSON values (each τ of ``dev_scores`` as a string key).
        """
        return {"tau": float(self.tau),
                "dev_scores": None if self.dev_scores is None
                else {str(k): float(v) for k, v in self.dev_scores.items()}}

    @classmethod
    def from_dict(cls, state, log_prior=None):
        """The part of a :meth:`to_dict` dict.

        Parameters
        ----------
        state : dict
            ``{"tau", "dev_scores"}``.
        log_prior : ndarray of float64 of shape (n_labels,) or None, default=None
            The model's log prior (:func:`log_prior` of its saved label frequencies).

        Returns
        -------
        LogitAdjustment

        Raises
        ------
        ValueError
            For a missing or invalid field.
        """
        if not isinstance(state, dict) or "tau" not in state:
            raise ValueError("a logit adjustment is an object with 'tau' and 'dev_scores'")
        return cls(state["tau"], state.get("dev_scores"), log_prior)

    def __eq__(self, other):
        if not isinstance(other, LogitAdjustment):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None
