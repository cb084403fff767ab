"""Iterative stratification for multi-label data (Sechidis et al. 2011).

References
----------
K. Sechidis, G. Tsoumakas, I. Vlahavas. "On the Stratification of
Multi-label Data". ECML PKDD 2011.

P. Szymański, T. Kajdanowicz. "A Network Perspective on Stratification of
Multi-Label Data". LIDTA 2017 (second-order stratification over label
pairs).
"""

import numbers
import warnings
from math import ceil, floor

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import BaseCrossValidator
from sklearn.utils import check_random_state, indexable
from sklearn.utils import _safe_indexing

from .._labels import check_indicator
from ._kernels import iterative_stratification, pair_units

__all__ = ["IterativeStratifiedKFold", "iterative_train_test_split"]


def _label_matrix(y):
    """Validate a label indicator matrix; return (CSR int64 {0,1}, label names)."""
    if y is None:
        raise ValueError(
            "iterative stratification needs the label matrix y of shape (n_samples, n_labels)"
        )
    names = None
    if hasattr(y, "columns") and hasattr(y, "to_numpy"):  # pandas DataFrame
        names = np.asarray([str(c) for c in y.columns])
        y = y.to_numpy()
    Y = check_indicator(y, name="y")
    if names is None:
        names = np.arange(Y.shape[1]).astype(str)
    return Y, names


def _warn_rare(Y, names, n_groups, what, stacklevel):
    counts = np.bincount(Y.indices, minlength=Y.shape[1])
    rare = np.flatnonzero((counts > 0) & (counts < n_groups))
    if len(rare):
        shown = ", ".join(f"'{names[j]}' ({counts[j]})" for j in rare[:10])
        more = f" and {len(rare) - 10} more" if len(rare) > 10 else ""
        warnings.warn(
            f"{len(rare)} label(s) have fewer positives than {what} ({n_groups}), so some "
            f"{'folds' if what == 'folds' else 'parts'} get none of them: {shown}{more}",
            UserWarning,
            stacklevel=stacklevel,
        )


def _assign(Y, ratios, order, rng):
    """Fold of each row; ``rng`` None means deterministic (no shuffling)."""
    n, n_labels = Y.shape
    if order == 1:
        unit_csr = Y
    else:
        indptr, keys = pair_units(Y.indptr, Y.indices, n_labels)
        uniq, inverse = np.unique(keys, return_inverse=True)
        unit_csr = sp.csr_matrix(
            (np.ones(len(keys), dtype=np.int64), inverse.astype(np.int64), indptr),
            shape=(n, len(uniq)),
        )
    n_units = unit_csr.shape[1]
    if rng is None:
        perm = np.arange(n, dtype=np.int64)
        unit_rank = np.arange(n_units, dtype=np.int64)
        seed, randomise = 0, False
    else:
        perm = rng.permutation(n).astype(np.int64)
        unit_rank = rng.permutation(n_units).astype(np.int64)
        seed, randomise = int(rng.randint(np.iinfo(np.int32).max)), True
    csc = unit_csr[perm].tocsc()
    unit_rows = perm[csc.indices].astype(np.int64)
    return iterative_stratification(
        unit_csr.indptr.astype(np.int64),
        unit_csr.indices.astype(np.int64),
        csc.indptr.astype(np.int64),
        unit_rows,
        unit_rank,
        np.asarray(ratios, dtype=np.float64),
        perm,
        randomise,
        seed,
    )


def _check_order(order):
    if order not in (1, 2):
        raise ValueError(f"order={order!r} is not valid; use 1 (labels) or 2 (label pairs)")


class IterativeStratifiedKFold(BaseCrossValidator):
    """K-fold cross-validation for multi-label data by iterative stratification.

    Each fold receives about ``1 / n_splits`` of the positives of every label
    (``order=1``, Sechidis et al. 2011) or of every co-occurring label pair
    (``order=2``, Szymański & Kajdanowicz 2017). The algorithm repeatedly
    takes the label with the fewest unassigned documents and gives each of
    them to the fold that most lacks that label, ties going to the fold that
    most lacks documents.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2.
    order : {1, 2}, default=1
        Stratify on labels (1) or on label pairs (2). With 2, a document's
        units are its label pairs, or its single label if it has one.
    shuffle : bool, default=False
        Shuffle the processing order of documents and labels and break ties
        between folds at random. As in :class:`~sklearn.model_selection.KFold`,
        ``random_state`` has effect only with ``shuffle=True``.
    random_state : int, RandomState instance or None, default=None
        Seed used when ``shuffle=True``: an int gives identical folds on
        every call.

    Raises
    ------
    ValueError
        If ``n_splits < 2``, or ``random_state`` is set while ``shuffle=False``.

    Warns
    -----
    UserWarning
        If a label has fewer positives than folds; the warning names it.

    Notes
    -----
    Runs in O(nnz log nnz + n_labels * n_splits) time in a numba kernel
    (a heap picks the label with the fewest remaining documents). Documents
    without labels are spread last over the folds that lack documents most.
    One deviation from Sechidis et al.: a fold that has reached its size
    takes no more documents while another still has room, so that labels
    with a single positive do not pile up in one fold; fold sizes then stay
    within one document of ``n_samples / n_splits``.

    Examples
    --------
    >>> import numpy as np
    >>> from xplant.model_selection import IterativeStratifiedKFold
    >>> Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 1], [1, 1]])
    >>> cv = IterativeStratifiedKFold(n_splits=2)
    >>> for train, test in cv.split(np.zeros((6, 1)), Y):
    ...     print(Y[test].sum(axis=0).tolist())
    [2, 2]
    [2, 2]
    """

    def __init__(self, n_splits=5, *, order=1, shuffle=False, random_state=None):
        if not isinstance(n_splits, numbers.Integral) or isinstance(n_splits, bool):
            raise ValueError(f"n_splits must be an integer; got {n_splits!r}")
        if n_splits < 2:
            raise ValueError(f"n_splits must be at least 2; got {n_splits}")
        if not isinstance(shuffle, bool):
            raise TypeError(f"shuffle must be True or False; got {shuffle!r}")
        if not shuffle and random_state is not None:
            raise ValueError(
                "Setting a random_state has no effect since shuffle is False. Leave "
                "random_state to its default (None), or set shuffle=True."
            )
        _check_order(order)
        self.n_splits = int(n_splits)
        self.order = order
        self.shuffle = shuffle
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        """Return the number of folds, ``n_splits``.

        Parameters
        ----------
        X, y, groups : object, optional
            Ignored; present for scikit-learn's splitter interface.

        Returns
        -------
        int
            ``n_splits``.
        """
        return self.n_splits

    def _folds(self, X, y):
        X, y = indexable(X, y)
        Y, names = _label_matrix(y)
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        if n != Y.shape[0]:
            raise ValueError(f"X has {n} samples but y has {Y.shape[0]}")
        if self.n_splits > n:
            raise ValueError(f"n_splits={self.n_splits} is larger than the number of samples {n}")
        _warn_rare(Y, names, self.n_splits, "folds", stacklevel=5)
        rng = check_random_state(self.random_state) if self.shuffle else None
        ratios = np.full(self.n_splits, 1.0 / self.n_splits)
        return _assign(Y, ratios, self.order, rng)

    def split(self, X, y, groups=None):
        """Generate indices to split data into training and test set.

        Parameters
        ----------
        X : {array-like, sparse matrix, list} of length n_samples
            Only its length is used.
        y : {ndarray, sparse matrix, DataFrame} of shape (n_samples, n_labels)
            The label indicator matrix, values 0/1.
        groups : object, optional
            Ignored; present for scikit-learn's splitter interface.

        Yields
        ------
        train, test : ndarray of int
        """
        fold = self._folds(X, y)
        for k in range(self.n_splits):
            yield np.flatnonzero(fold != k), np.flatnonzero(fold == k)

    def _iter_test_indices(self, X=None, y=None, groups=None):
        fold = self._folds(X, y)
        for k in range(self.n_splits):
            yield np.flatnonzero(fold == k)


def _sizes(n, test_size, train_size):
    if test_size is None and train_size is None:
        test_size = 0.25

    def count(size, name, rounder):
        if size is None:
            return None
        if isinstance(size, numbers.Integral) and not isinstance(size, bool):
            if not 0 < size < n:
                raise ValueError(f"{name}={size} must be in (0, {n}) (the number of samples)")
            return int(size)
        if isinstance(size, numbers.Real):
            if not 0 < size < 1:
                raise ValueError(f"{name}={size} must be a float in (0, 1) or an int")
            return int(rounder(size * n))
        raise ValueError(f"invalid {name}: {size!r}")

    n_test = count(test_size, "test_size", ceil)
    n_train = count(train_size, "train_size", floor)
    if n_train is None:
        n_train = n - n_test
    if n_test is None:
        n_test = n - n_train
    if n_train + n_test > n:
        raise ValueError(
            f"train_size + test_size = {n_train + n_test} exceeds the number of samples {n}"
        )
    if n_train == 0 or n_test == 0:
        raise ValueError(f"with n_samples={n}, the resulting train or test set would be empty")
    return n_train, n_test


def iterative_train_test_split(
    *arrays, test_size=None, train_size=None, random_state=None, shuffle=True, stratify=None, order=1
):
    """Split arrays into a train and a test part by iterative stratification.

    A multi-label counterpart of :func:`sklearn.model_selection.train_test_split`,
    with the same return order: ``X_train, X_test, Y_train, Y_test, ...``.

    Parameters
    ----------
    *arrays : sequence of indexables with the same length
        Lists, ndarrays, sparse matrices or DataFrames.
    test_size, train_size : float or int, optional
        As in ``train_test_split`` (default test share 0.25). Rows left over
        when both are given and sum to less than ``n_samples`` go to neither.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffled processing order and of the tie-breaks.
    shuffle : bool, default=True
        As in ``train_test_split``; ``False`` gives a deterministic split.
    stratify : {ndarray, sparse matrix, DataFrame} of shape (n_samples, n_labels), optional
        The label matrix to stratify on. Default: the last of ``arrays``.
    order : {1, 2}, default=1
        Stratify on labels or on label pairs (see :class:`IterativeStratifiedKFold`).

    Returns
    -------
    list
        ``2 * len(arrays)`` items: train and test part of each array.

    Notes
    -----
    The parts' sizes are within one document of the requested sizes; within
    that, each label's positives are balanced (Sechidis et al. 2011).

    Examples
    --------
    >>> import numpy as np
    >>> from xplant.model_selection import iterative_train_test_split
    >>> X = np.arange(8).reshape(8, 1)
    >>> Y = np.array([[1, 0]] * 4 + [[0, 1]] * 4)
    >>> X_tr, X_te, Y_tr, Y_te = iterative_train_test_split(X, Y, test_size=0.5, random_state=0)
    >>> Y_te.sum(axis=0).tolist(), len(X_tr)
    ([2, 2], 4)
    """
    if not arrays:
        raise ValueError("at least one array is required")
    _check_order(order)
    arrays = indexable(*arrays)
    label_source = arrays[-1] if stratify is None else stratify
    Y, names = _label_matrix(label_source)
    n = Y.shape[0]
    for a in arrays:
        m = a.shape[0] if hasattr(a, "shape") else len(a)
        if m != n:
            raise ValueError(f"all arrays must have {n} samples (the label matrix); got {m}")
    n_train, n_test = _sizes(n, test_size, train_size)
    ratios = [n_train / n, n_test / n]
    if n_train + n_test < n:
        ratios.append((n - n_train - n_test) / n)
    _warn_rare(Y, names, 2, "parts", stacklevel=3)
    rng = check_random_state(random_state) if shuffle else None
    fold = _assign(Y, np.asarray(ratios), order, rng)
    train, test = np.flatnonzero(fold == 0), np.flatnonzero(fold == 1)
    out = []
    for a in arrays:
        out.extend([_safe_indexing(a, train), _safe_indexing(a, test)])
    return out
