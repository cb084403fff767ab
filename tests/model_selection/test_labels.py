import numpy as np
import pytest
import scipy.sparse as sp

from xplant.model_selection import (
    few_shot_labels,
    frequent_label_subset,
    frequent_labels,
    label_frequency,
    label_frequency_buckets,
    nested_subsamples,
    zero_shot_labels,
)


def test_buckets_against_brute_force():
    rng = np.random.default_rng(0)
    Y = (rng.random((300, 50)) < rng.random(50) ** 3).astype(int)
    counts = Y.sum(axis=0)
    buckets = label_frequency_buckets(sp.csr_matrix(Y))
    assert list(buckets) == ["0", "1", "2-5", "6-10", "11-50", ">50"]
    bounds = {"0": (0, 0), "1": (1, 1), "2-5": (2, 5), "6-10": (6, 10), "11-50": (11, 50), ">50": (51, 10**9)}
    for name, (lo, hi) in bounds.items():
        assert buckets[name].tolist() == np.flatnonzero((counts >= lo) & (counts <= hi)).tolist()
    assert sorted(np.concatenate(list(buckets.values())).tolist()) == list(range(50))


def test_groups_and_inputs():
    Y = np.array([[1, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(label_frequency(Y), [2, 1, 0])
    np.testing.assert_array_equal(label_frequency(sp.csr_matrix(Y)), [2, 1, 0])
    counts = np.array([0, 1, 50, 51, 3])
    assert zero_shot_labels(counts).tolist() == [0]
    assert few_shot_labels(counts).tolist() == [1, 2, 4]
    assert frequent_labels(counts).tolist() == [3]
    assert label_frequency_buckets(counts, edges=(2, 10))["<=2"].tolist() == [0, 1]
    with pytest.raises(ValueError, match="increasing"):
        label_frequency_buckets(counts, edges=(5, 1))


def test_nested_subsamples():
    sizes = [25, 50, 165, 424]
    a = nested_subsamples(1000, sizes, random_state=3)
    b = nested_subsamples(1000, sizes + [900], random_state=3)
    assert [len(s) for s in a] == sizes
    for small, big in zip(b, b[1:]):
        assert set(small) <= set(big)
    assert all((x == y).all() for x, y in zip(a, b))  # adding a size keeps the smaller subsets
    assert not (nested_subsamples(1000, [25], random_state=4)[0] == a[0]).all()
    with pytest.raises(ValueError, match="increasing"):
        nested_subsamples(100, [50, 25])
    with pytest.raises(ValueError, match=r"\[1, 100\]"):
        nested_subsamples(100, [200])


def test_frequent_label_subset_against_brute_force():
    rng = np.random.default_rng(1)
    Y = (rng.random((200, 30)) < rng.random(30) ** 2 / 4).astype(int)
    counts = Y.sum(0)
    labels, rows = frequent_label_subset(sp.csr_matrix(Y), 7)
    # brute force: sort by (-count, column), keep 7; every document with one of them
    top = sorted(range(30), key=lambda j: (-counts[j], j))[:7]
    assert labels.tolist() == sorted(top)
    assert rows.tolist() == [i for i in range(200) if Y[i, top].any()]
    labels2, sample = frequent_label_subset(Y, 7, n_docs=40, random_state=5)
    assert labels2.tolist() == labels.tolist() and len(sample) == 40
    assert set(sample) <= set(rows) and (np.diff(sample) > 0).all()
    again = frequent_label_subset(Y, 7, n_docs=40, random_state=5)[1]
    assert again.tolist() == sample.tolist()                             # seeded
    assert frequent_label_subset(Y, 7, n_docs=10**6)[1].tolist() == rows.tolist()
    # ties go to the lower column
    assert frequent_label_subset(np.array([[1, 1, 1], [0, 1, 1]]), 1)[0].tolist() == [1]
    with pytest.raises(ValueError, match=r"n_labels must be an integer in \[1, 30\]"):
        frequent_label_subset(Y, 31)
    with pytest.raises(ValueError, match="n_docs"):
        frequent_label_subset(Y, 3, n_docs=0)
