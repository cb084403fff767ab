"""The one sigmoid of the package: σ(x) = 1 / (1 + exp(−x)), without overflow warnings.

Every probability xplant computes from a logit or a decision value (the
fusion's calibration, PLANT's scores, the logistic one-vs-rest model's
probabilities and its saved threshold) is :func:`sigmoid` of it;
:func:`xplant.fusion.sigmoid` is this function.
"""

import numpy as np


def sigmoid(x, *, dtype=np.float64):
    """σ(x) = 1 / (1 + exp(−x)) in ``dtype``, without overflow warnings.

    Computed as written, in place in one copy of ``x``: where exp(−x)
    overflows to infinity, 1 / (1 + ∞) is exactly 0, the right limit (and
    where it underflows to 0, σ is 1), so both are silenced rather than avoided. NumPy's ``exp`` is used (not
    :func:`scipy.special.expit`, whose float32 ``exp`` rounds differently), so
    PLANT's float32 scores are those of the network's logits bit for bit.

    Parameters
    ----------
    x : array-like
        Any shape; read as ``dtype``.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        The type σ is computed in and returned as (float32 for PLANT's
        float32 logits).

    Returns
    -------
    ndarray of ``dtype``
        The shape of ``x``, in [0, 1]; exactly 0 below about −745 (float64).
        A new array (``x`` is not modified), computed in place: no temporary
        of the size of ``x`` besides it, so σ of (n, L) logits costs one
        (n, L) array. A NumPy scalar for a scalar.

    Examples
    --------
    >>> sigmoid([0.0, 2.0, -1000.0]).round(4).tolist()
    [0.5, 0.8808, 0.0]
    """
    out = np.array(x, dtype=dtype)             # one copy; σ runs in it
    np.negative(out, out=out)
    with np.errstate(over="ignore", under="ignore"):
        np.exp(out, out=out)
    out += 1
    np.divide(1, out, out=out)
    return out if out.ndim else out[()]
