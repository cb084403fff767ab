"""Label propensities for the propensity-scored metrics (Jain et al., KDD 2016)."""

import numbers

import numpy as np

from .._labels import label_frequency  # noqa: F401  (public here too: xplant.metrics.label_frequency)
from .._labels import label_frequency as _label_frequency

__all__ = ["inverse_propensity", "label_frequency", "PROPENSITY_PARAMETERS"]

#: Usual (A, B) per dataset family, from Jain, Prabhu & Varma (KDD 2016).
PROPENSITY_PARAMETERS = {
    "wikipedia": (0.5, 0.4),  # WikiLSHTC-325K, Wikipedia-500K
    "amazon": (0.6, 2.6),  # Amazon-670K, Amazon-3M
    "default": (0.55, 1.5),  # every other dataset
}


def inverse_propensity(Y_train=None, A=0.55, B=1.5, *, label_frequency=None, n_train_documents=None):
    """Inverse label propensities of Jain, Prabhu & Varma (KDD 2016).

    .. math::
        \\frac{1}{p_l} = 1 + C (N_l + B)^{-A}, \\qquad C = (\\ln N - 1)(B + 1)^{A}

    where :math:`N_l` is the number of *training* documents tagged with label
    l and :math:`N` the number of training documents. A label seen once gets
    exactly :math:`\\ln N`; an unseen label gets the largest weight,
    :math:`1 + C B^{-A}`.

    Usual values (``PROPENSITY_PARAMETERS``): Wikipedia datasets A=0.5,
    B=0.4; Amazon-670K/3M A=0.6, B=2.6; otherwise A=0.55, B=1.5.

    Parameters
    ----------
    Y_train : {ndarray, sparse matrix} of shape (n_train, n_labels), default=None
        Training label matrix. Give it, or both ``label_frequency`` and
        ``n_train_documents``.
    A, B : float, default=0.55, 1.5
        Dataset parameters (B > 0).
    label_frequency : array-like of shape (n_labels,), default=None
        Training positives per label, :math:`N_l` (non-negative).
    n_train_documents : int, default=None
        :math:`N`, the number of training documents (> 1).

    Returns
    -------
    inv_propensity : ndarray of shape (n_labels,), dtype float64
        Values >= 1.

    Raises
    ------
    ValueError
        If neither or both input forms are given, or values are out of range.

    Examples
    --------
    >>> import numpy as np
    >>> inverse_propensity(label_frequency=np.array([0, 1, 10, 100]),
    ...                    n_train_documents=10_000).round(2)
    array([11.87,  9.21,  4.55,  2.07])
    """
    if (Y_train is None) == (label_frequency is None):
        raise ValueError(
            "Pass either Y_train, or label_frequency together with n_train_documents."
        )
    if Y_train is not None:
        if n_train_documents is not None:
            raise ValueError("n_train_documents is taken from Y_train; do not pass both.")
        freq = _label_frequency(Y_train)
        N = Y_train.shape[0]
    else:
        if n_train_documents is None:
            raise ValueError("label_frequency needs n_train_documents (the number of training rows).")
        freq = np.asarray(label_frequency, dtype=np.float64)
        if freq.ndim != 1 or np.any(freq < 0) or not np.all(np.isfinite(freq)):
            raise ValueError("label_frequency must be a 1-D array of non-negative counts.")
        N = n_train_documents
    if isinstance(N, bool) or not isinstance(N, numbers.Integral) or N < 2:
        raise ValueError(f"n_train_documents must be an integer >= 2, got {N!r}.")
    if not (np.isfinite(A) and np.isfinite(B)) or B <= 0:
        raise ValueError(f"A must be finite and B > 0 (got A={A!r}, B={B!r}).")
    C = (np.log(N) - 1.0) * (B + 1.0) ** A
    return 1.0 + C * (np.asarray(freq, dtype=np.float64) + B) ** (-A)
