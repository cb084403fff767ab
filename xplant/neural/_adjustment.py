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

from .._labels import label_prior
from ._common import check_param

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
    """τ from ``grid`` by dev micro-F1 of the top-k rule, k in 1..``max_k`` chosen with it.

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
    from .. import metrics
    from ..model_selection import choose_on_dev

    def micro_f1(tau):
        scores = scores_at(tau)
        k = metrics.select_k(Y_dev, scores, ks=range(1, max_k + 1))
        return float(metrics.f1_score(Y_dev, metrics.top_k_decision(scores, k), average="micro"))

    choice = choose_on_dev("logit_adjustment", [float(t) for t in grid], micro_f1,
                           family="decision", criterion="micro_f1", fallback=0.0)
    return choice.value, scores_at(choice.value), dict(choice.scores)
