"""Per-label F1 grouped by how often a label was seen in training."""

import numpy as np

from .._frequency_buckets import frequency_bucket_names, power_of_two_edges


def frequency_buckets(max_frequency):
    """Power-of-two buckets of training frequency: 0, 1, 2-3, 4-7, ...

    Parameters
    ----------
    max_frequency : int
        The largest training frequency to cover.

    Returns
    -------
    list of tuple of int
        ``(low, high)`` inclusive bounds.

    Examples
    --------
    >>> frequency_buckets(9)
    [(0, 0), (1, 1), (2, 3), (4, 7), (8, 15)]
    """
    edges = power_of_two_edges(max_frequency)
    return [(0, 0)] + [(lo + 1, hi) for lo, hi in zip(edges[:-1], edges[1:])]


def f1_by_frequency(train_frequency, support, f1_by_model):
    """Mean per-label F1 in each training-frequency bucket, per model.

    Parameters
    ----------
    train_frequency : array-like of int of shape (n_labels,)
        Training positives per label; it decides each label's frequency bucket.
    support : array-like of int of shape (n_labels,)
        Positives in the evaluated split. Only labels with ``support > 0``
        are averaged, as in the macro-F1 of the tables (Edin et al. 2023).
    f1_by_model : mapping of str to array-like of shape (n_labels,)
        Per-label F1 of each model, by model name.

    Returns
    -------
    list of dict
        One dict per non-empty bucket (see :func:`frequency_buckets`), in
        increasing frequency: ``low``, ``high``, ``label`` (``"2-3"``),
        ``n_labels`` and ``f1`` ({model: mean F1}).

    Raises
    ------
    ValueError
        If the lengths differ or a frequency is negative.

    Examples
    --------
    >>> rows = f1_by_frequency([0, 1, 3, 2, 9], [1, 1, 1, 0, 2], {"m": [0.0, 0.5, 1.0, 0.2, 0.8]})
    >>> [(r["label"], r["n_labels"], r["f1"]["m"]) for r in rows]
    [('0', 1, 0.0), ('1', 1, 0.5), ('2-3', 1, 1.0), ('8-15', 1, 0.8)]
    """
    tf = np.asarray(train_frequency, dtype=np.int64)
    sup = np.asarray(support, dtype=np.int64)
    if tf.ndim != 1 or sup.shape != tf.shape:
        raise ValueError(f"train_frequency {tf.shape} and support {sup.shape} must be 1-D of the same length")
    if tf.size and tf.min() < 0:
        raise ValueError("train_frequency must be non-negative")
    f1 = {}
    for name, v in f1_by_model.items():
        v = np.asarray(v, dtype=np.float64)
        if v.shape != tf.shape:
            raise ValueError(f"F1 of model {name!r} has shape {v.shape}, expected {tf.shape}")
        f1[name] = v
    rows = []
    evaluated = sup > 0
    for low, high in frequency_buckets(tf.max() if tf.size else 0):
        mask = evaluated & (tf >= low) & (tf <= high)
        if not mask.any():
            continue
        rows.append(
            {
                "low": low,
                "high": high,
                "label": frequency_bucket_names((low - 1, high))[1] if low else "0",
                "n_labels": int(mask.sum()),
                "f1": {name: float(v[mask].mean()) for name, v in f1.items()},
            }
        )
    return rows
