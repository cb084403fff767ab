"""One scale for scores of different models: the sigmoid, its inverse and a fitted scaling.

A source of a fusion (:func:`xplant.fusion.fuse`) is put on the
probability scale by its calibration g(s) = σ(a·s + b): (1, 0) is the
plain sigmoid (the network's logits), and a logistic scaling fitted on dev
candidates (Platt scaling) puts a linear model's margins on that scale.
"""

import numpy as np

from .._sigmoid import sigmoid

#: The largest float64 below 1: :func:`logit` reads probabilities at 1 as this,
#: so a saturated probability gets a finite logit (36.7) above every other.
_BELOW_ONE = 1.0 - 2.0 ** -53


def logit(p):
    """log(p / (1 − p)), the inverse of :func:`sigmoid`, finite on [0, 1].

    Strictly increasing, so it keeps the order of the probabilities and
    their ties; probabilities are clipped to [tiny, 1 − 2⁻⁵³] first, so 1.0
    maps to 36.7 (above the logit of any float32 probability below 1, 16.6)
    and 0.0 to −708.4 rather than to an infinity.

    Parameters
    ----------
    p : array-like
        Probabilities in [0, 1]; read as float64.

    Returns
    -------
    ndarray of float64
        The shape of ``p``.

    Raises
    ------
    ValueError
        When a value is NaN or outside [0, 1].

    Examples
    --------
    >>> logit([0.5, 0.8807970779778823]).round(6).tolist()
    [0.0, 2.0]
    >>> bool(logit(1.0) > logit(np.float32(1) - np.float32(2 ** -24)))
    True
    """
    p = np.asarray(p, dtype=np.float64)
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError("logit needs probabilities in [0, 1]; got a value outside it or NaN")
    p = np.clip(p, np.finfo(np.float64).tiny, _BELOW_ONE)
    return np.log(p) - np.log1p(-p)


def calibrate(scores, calibration=None):
    """A source's scores on the probability scale: σ(a·s + b), or as they are.

    Parameters
    ----------
    scores : array-like
        Raw scores s of one source (any shape); read as float64.
    calibration : (a, b) or None, default=None
        None leaves the scores as they are (already on the fused scale);
        (a, b) gives σ(a·s + b): (1, 0) is the plain sigmoid. ``a`` and
        ``b`` are floats or arrays that broadcast to ``scores`` (a per-label
        offset b = −τ · log p_l is the logit adjustment of
        :mod:`xplant.neural`).

    Returns
    -------
    ndarray of float64
        The shape of ``scores``.

    Examples
    --------
    >>> calibrate([0.0, 1.0], (2.0, -1.0)).round(4).tolist()
    [0.2689, 0.7311]
    >>> calibrate([3.0]).tolist()
    [3.0]
    """
    s = np.asarray(scores, dtype=np.float64)
    if calibration is None:
        return s
    a, b = calibration
    return sigmoid(a * s + b)


def fit_calibration(scores, is_gold):
    """A logistic calibration σ(a·s + b) of shortlist scores, fitted on dev candidates.

    Platt scaling: a one-feature logistic regression (C = 1e4, almost no
    penalty) of each pair's gold flag on its score.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        Shortlist scores of dev (document, candidate) pairs.
    is_gold : ndarray of bool of shape (m,)
        Whether each pair's label is gold for its document.

    Returns
    -------
    (a, b) : tuple of float
        ``(1, 0)`` (plain sigmoid) when the pairs hold one class only or the
        fitted slope is not positive, so the calibration never reverses the
        shortlist's order.

    Examples
    --------
    >>> fit_calibration([0.1, 0.2, 0.3], [True, True, True])
    (1.0, 0.0)
    >>> a, b = fit_calibration([-2.0, -1.0, 0.5, 1.0, 2.0, 3.0], [0, 0, 1, 0, 1, 1])
    >>> a > 0
    True
    """
    from sklearn.linear_model import LogisticRegression
    s = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    y = np.asarray(is_gold, dtype=bool).ravel()
    if y.all() or not y.any():
        return 1.0, 0.0
    lr = LogisticRegression(C=1e4, max_iter=1000).fit(s, y)
    a, b = float(lr.coef_[0, 0]), float(lr.intercept_[0])
    return (a, b) if a > 0 else (1.0, 0.0)
