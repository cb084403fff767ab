"""Label blocks of the MIG product at the int32 boundary (small synthetic costs)."""

import numpy as np

from xplant.relevance._mig import _label_blocks


def test_label_blocks_with_costs_past_int32():
    # the product's nnz per label row, summed, passes 2**31 - 1: cumulative
    # costs must be int64, or the blocks (and the product sizes) wrap around
    big = 2**31 - 1
    cost = np.array([big, big, 5, big], dtype=np.int64)
    assert _label_blocks(cost, big) == [(0, 1), (1, 2), (2, 4)]
    # int32 input is widened, not wrapped
    assert _label_blocks(cost.astype(np.int32), big) == [(0, 1), (1, 2), (2, 4)]
    assert _label_blocks(np.array([3, 3, 3]), 2**40) == [(0, 3)]
