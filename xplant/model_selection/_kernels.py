"""numba kernels of iterative stratification (plain arrays in, arrays out)."""

import numpy as np
from numba import njit


@njit(cache=True)
def _swap(heap, i, j):
    tmp = heap[i]
    heap[i] = heap[j]
    heap[j] = tmp


@njit(cache=True)
def _heap_push(heap, size, key):
    heap[size] = key
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if heap[parent] <= heap[i]:
            break
        _swap(heap, parent, i)
        i = parent
    return size + 1


@njit(cache=True)
def _heap_pop(heap, size):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and heap[left + 1] < heap[left]:
            child = left + 1
        if heap[i] <= heap[child]:
            break
        _swap(heap, child, i)
        i = child
    return top, size


@njit(cache=True)
def _best_fold(desired_unit_row, desired_total, randomise, cand):
    """Fold with the largest desire for the unit; ties: largest total; then random/lowest.

    Folds already at their size (desired total <= 0) are skipped while any
    fold still wants documents, so that fold sizes stay on target.
    """
    n_folds = desired_total.shape[0]
    open_only = False
    for k in range(n_folds):
        if desired_total[k] > 0:
            open_only = True
            break
    n_cand = 0
    for k in range(n_folds):
        if open_only and desired_total[k] <= 0:
            continue
        if n_cand == 0:
            cand[0] = k
            n_cand = 1
            continue
        best = cand[0]
        a, b = desired_unit_row[k], desired_unit_row[best]
        if a > b or (a == b and desired_total[k] > desired_total[best]):
            cand[0] = k
            n_cand = 1
        elif a == b and desired_total[k] == desired_total[best]:
            cand[n_cand] = k
            n_cand += 1
    if randomise and n_cand > 1:
        return cand[np.random.randint(0, n_cand)]
    return cand[0]


@njit(cache=True)
def iterative_stratification(
    row_indptr, row_units, unit_indptr, unit_rows, unit_rank, ratios, row_order, randomise, seed
):
    """Assign each row to a fold by iterative stratification (Sechidis et al. 2011).

    Parameters
    ----------
    row_indptr, row_units : int64 arrays
        CSR of the (row, unit) incidence; a unit is a label (first order) or
        a label pair (second order).
    unit_indptr, unit_rows : int64 arrays
        The same incidence by unit; within a unit, rows in processing order.
    unit_rank : int64 array of shape (n_units,)
        Tie-break among units with equally few remaining rows (a permutation).
    ratios : float64 array of shape (n_folds,)
        The share of rows each fold should get; sums to 1.
    row_order : int64 array of shape (n_rows,)
        Order in which rows without units are placed.
    randomise : bool
        Break ties between equally good folds at random (else lowest fold).
    seed : int
        Seed of the random tie-breaks.

    Returns
    -------
    fold : int64 array of shape (n_rows,)
    """
    if randomise:
        np.random.seed(seed)
    n_rows = row_indptr.shape[0] - 1
    n_units = unit_indptr.shape[0] - 1
    n_folds = ratios.shape[0]
    remaining = np.empty(n_units, dtype=np.int64)
    desired = np.empty((n_units, n_folds), dtype=np.float64)
    for u in range(n_units):
        remaining[u] = unit_indptr[u + 1] - unit_indptr[u]
        for k in range(n_folds):
            desired[u, k] = ratios[k] * remaining[u]
    desired_total = ratios * n_rows
    fold = np.full(n_rows, -1, dtype=np.int64)
    unit_of_rank = np.empty(n_units, dtype=np.int64)
    for u in range(n_units):
        unit_of_rank[unit_rank[u]] = u
    heap = np.empty(row_units.shape[0] + n_units + 1, dtype=np.int64)
    size = 0
    for u in range(n_units):
        if remaining[u] > 0:
            size = _heap_push(heap, size, remaining[u] * n_units + unit_rank[u])
    cand = np.empty(n_folds, dtype=np.int64)
    while size > 0:
        key, size = _heap_pop(heap, size)
        count = key // n_units
        u = unit_of_rank[key % n_units]
        if remaining[u] == 0 or remaining[u] != count:
            continue  # stale entry
        for p in range(unit_indptr[u], unit_indptr[u + 1]):
            row = unit_rows[p]
            if fold[row] >= 0:
                continue
            k = _best_fold(desired[u], desired_total, randomise, cand)
            fold[row] = k
            desired_total[k] -= 1.0
            for q in range(row_indptr[row], row_indptr[row + 1]):
                v = row_units[q]
                desired[v, k] -= 1.0
                remaining[v] -= 1
                if remaining[v] > 0 and v != u:
                    size = _heap_push(heap, size, remaining[v] * n_units + unit_rank[v])
    for i in range(n_rows):
        row = row_order[i]
        if fold[row] >= 0:
            continue
        best = 0
        n_cand = 1
        cand[0] = 0
        for k in range(1, n_folds):
            if desired_total[k] > desired_total[best]:
                best = k
                cand[0] = k
                n_cand = 1
            elif desired_total[k] == desired_total[best]:
                cand[n_cand] = k
                n_cand += 1
        if randomise and n_cand > 1:
            best = cand[np.random.randint(0, n_cand)]
        fold[row] = best
        desired_total[best] -= 1.0
    return fold


@njit(cache=True)
def pair_units(indptr, indices, n_labels):
    """Second-order units of each row: its label pairs (a < b), or (a, a) alone.

    Returns
    -------
    out_indptr : int64 array of shape (n_rows + 1,)
    keys : int64 array
        ``a * n_labels + b`` for each pair; a row with one label gets
        ``a * n_labels + a``; a row without labels gets nothing.
    """
    n_rows = indptr.shape[0] - 1
    out_indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for i in range(n_rows):
        m = indptr[i + 1] - indptr[i]
        out_indptr[i + 1] = out_indptr[i] + (1 if m == 1 else m * (m - 1) // 2)
    keys = np.empty(out_indptr[n_rows], dtype=np.int64)
    for i in range(n_rows):
        start, stop = indptr[i], indptr[i + 1]
        pos = out_indptr[i]
        if stop - start == 1:
            keys[pos] = indices[start] * n_labels + indices[start]
            continue
        for p in range(start, stop):
            for q in range(p + 1, stop):
                a, b = indices[p], indices[q]
                if a > b:
                    a, b = b, a
                keys[pos] = a * n_labels + b
                pos += 1
    return out_indptr, keys
