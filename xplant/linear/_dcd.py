"""Dual coordinate descent for one L2-regularised, L2-loss linear SVM.

numba kernel on plain CSR arrays; the estimator validates the input. The
kernel releases the GIL, so joblib threads train labels in parallel.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def dcd_squared_hinge(indptr, indices, data, sqnorm, positive_rows, c_pos, c_neg,
                      bias, tol, max_iter, seed, w):
    """Train one binary squared-hinge SVM by dual coordinate descent.

    Solves ``min_w 0.5 ||w||^2 + sum_i C_i max(0, 1 - y_i w.x_i)^2`` with
    ``C_i = c_pos`` for positives and ``c_neg`` for negatives, as LIBLINEAR's
    solver 1 (Hsieh et al., "A dual coordinate descent method for large-scale
    linear SVM", ICML 2008, Algorithm 1 with shrinking). With ``bias > 0`` a
    constant feature of value ``bias`` is appended (regularised, as
    LIBLINEAR's ``-B``); its weight is ``w[n_features]``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSR arrays of X, shape (n_samples, n_features); int64, int32, float64.
    sqnorm : ndarray of shape (n_samples,), float64
        Squared row norms of X (without the bias feature).
    positive_rows : ndarray of int64
        Rows whose label is +1; every other row is -1.
    c_pos, c_neg : float
        Loss weights of positive and negative rows.
    bias : float
        Value of the appended constant feature; 0 for none.
    tol : float
        Stop when the spread of the projected gradient is at most ``tol``
        (LIBLINEAR's ``-e``; its default is 0.1).
    max_iter : int
        Maximum number of passes over the data.
    seed : int
        Seed of the order in which coordinates are visited.
    w : ndarray of shape (n_features + 1,), float64
        Output, overwritten with the weights (last entry: bias weight).

    Returns
    -------
    n_iter : int
        Passes made; equal to ``max_iter`` when not converged.
    """
    n = indptr.shape[0] - 1
    nf = w.shape[0] - 1
    w[:] = 0.0
    y = np.full(n, -1.0)
    for r in positive_rows:
        y[r] = 1.0
    d_pos = 0.5 / c_pos
    d_neg = 0.5 / c_neg
    alpha = np.zeros(n)
    qd = np.empty(n)
    for i in range(n):
        qd[i] = sqnorm[i] + bias * bias + (d_pos if y[i] > 0 else d_neg)
    index = np.arange(n)
    np.random.seed(seed)
    active = n
    pg_max_old = np.inf
    it = 0
    while it < max_iter:
        pg_max = -np.inf
        pg_min = np.inf
        for s in range(active):
            j = s + np.random.randint(0, active - s)
            tmp = index[s]
            index[s] = index[j]
            index[j] = tmp
        s = 0
        while s < active:
            i = index[s]
            yi = y[i]
            g = w[nf] * bias
            for p in range(indptr[i], indptr[i + 1]):
                g += w[indices[p]] * data[p]
            g = g * yi - 1.0 + alpha[i] * (d_pos if yi > 0 else d_neg)
            pg = 0.0
            if alpha[i] == 0.0:
                if g > pg_max_old:
                    active -= 1
                    index[s] = index[active]
                    index[active] = i
                    continue
                elif g < 0.0:
                    pg = g
            else:
                pg = g
            if pg > pg_max:
                pg_max = pg
            if pg < pg_min:
                pg_min = pg
            if abs(pg) > 1e-12:
                a_old = alpha[i]
                a_new = a_old - g / qd[i]
                if a_new < 0.0:
                    a_new = 0.0
                alpha[i] = a_new
                d = (a_new - a_old) * yi
                for p in range(indptr[i], indptr[i + 1]):
                    w[indices[p]] += d * data[p]
                w[nf] += d * bias
            s += 1
        it += 1
        if pg_max - pg_min <= tol:
            if active == n:
                break
            active = n
            pg_max_old = np.inf
            continue
        # No upper bound on alpha for the L2 loss, so only alpha = 0 shrinks.
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
    return it
