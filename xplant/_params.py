"""Parameter values as Python and JSON see them (no torch needed)."""

import numpy as np


def to_python(value):
    """``value`` with numpy scalars turned into Python ones, inside lists, tuples and dicts too.

    Grids built with ``np.logspace`` or ``np.arange`` give ``np.float64`` and
    ``np.int64`` values; torch and JSON want Python numbers.

    Examples
    --------
    >>> to_python({"lr": np.float64(0.01), "phases": [(np.int64(0), "head", np.float32(1.0))]})
    {'lr': 0.01, 'phases': [(0, 'head', 1.0)]}
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(to_python(v) for v in value)
    if isinstance(value, dict):
        return {k: to_python(v) for k, v in value.items()}
    return value
