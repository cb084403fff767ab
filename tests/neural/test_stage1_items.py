"""Stage 1's ranking items (Stage1Dataset.sample): checked by hand and against a plain oracle."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.neural.planting._items import Stage1Dataset


def _oracle(ds, i, rng):
    """The items written out label by label with set operations (the definition)."""
    ids = np.asarray(ds.docs[i])
    uniq, first = np.unique(ids, return_index=True)
    keep = ~np.isin(uniq, ds.ignore_ids)
    uniq, first = uniq[keep], first[keep]
    R = sp.csr_matrix(ds.R)
    cand = np.array([l for l in range(R.shape[0])
                     if np.isin(R.indices[R.indptr[l]:R.indptr[l + 1]], uniq).any()], dtype=np.int64)
    own = np.intersect1d(ds.positives[i], cand)
    other = np.setdiff1d(cand, own)
    if not ds.deterministic:
        own, other = rng.permutation(own), rng.permutation(other)
    items = []
    for l in np.concatenate([own, other])[: ds.labels_per_doc]:
        t_l = R.indices[R.indptr[l]:R.indptr[l + 1]]
        r_l = R.data[R.indptr[l]:R.indptr[l + 1]]
        hit = np.isin(uniq, t_l)
        rel = r_l[np.searchsorted(t_l, uniq[hit])]
        order = np.argsort(-rel, kind="stable")[: ds.max_relevant]
        neg_pool = first[~hit]
        neg = (np.sort(neg_pool) if ds.deterministic else rng.permutation(neg_pool))[: ds.n_negatives]
        items.append((l, np.concatenate([first[hit][order], neg]),
                      np.concatenate([rel[order], np.zeros(len(neg))])))
    return items


def _corpus(seed, n_docs=30, n_tokens=60, n_labels=25):
    rng = np.random.default_rng(seed)
    docs = [rng.integers(0, n_tokens, size=rng.integers(0, 40)) for _ in range(n_docs)]
    positives = [np.sort(rng.choice(n_labels, size=rng.integers(0, 4), replace=False))
                 for _ in range(n_docs)]
    R = sp.random(n_labels, n_tokens, density=0.15, random_state=seed, format="csr")
    R.data = np.round(R.data * 4, 1) + 0.1           # ties in relevance: the stable order counts
    return docs, positives, R


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("deterministic", [False, True])
def test_items_equal_the_oracle_draw_for_draw(seed, deterministic):
    docs, positives, R = _corpus(seed)
    kw = dict(labels_per_doc=6, max_relevant=3, n_negatives=4, deterministic=deterministic,
              ignore_ids=(0, 1))
    ds = Stage1Dataset(docs, positives, R, generator=np.random.default_rng(seed), **kw)
    rng = np.random.default_rng(seed)
    for i in range(len(docs)):
        got, want = ds.sample(i), _oracle(ds, i, rng)
        assert len(got) == len(want)
        for (l, p, r), (l2, p2, r2) in zip(got, want):
            assert l == l2
            np.testing.assert_array_equal(p, p2)
            np.testing.assert_array_equal(r, r2)
    # the same generator state afterwards: every draw was taken in the same order
    assert ds.generator.random() == rng.random()


def test_items_by_hand():
    # tokens 5, 7, 9 at first positions 0, 1, 3; label 0's T = {7: 2.0, 9: 3.0}, label 1's {4: 1.0}
    R = sp.csr_matrix(np.array([[0, 0, 0, 0, 0, 0, 0, 2.0, 0, 3.0],
                                [0, 0, 0, 0, 1.0, 0, 0, 0, 0, 0]]))
    ds = Stage1Dataset([np.array([5, 7, 5, 9])], [np.array([0])], R, deterministic=True,
                       n_negatives=5)
    (l, pos, rel), = ds.sample(0)                 # label 1 does not meet the document
    assert l == 0
    assert pos.tolist() == [3, 1, 0]              # 9 (3.0), then 7 (2.0), then negative 5
    assert rel.tolist() == [3.0, 2.0, 0.0]


def test_collate_by_hand():
    from xplant.neural.planting._items import Stage1Collate
    items0 = [(4, np.array([2, 0]), np.array([1.5, 0.0])), (1, np.array([1]), np.array([0.25]))]
    items1 = [(3, np.array([0, 2, 1]), np.array([2.0, 1.0, 0.0]))]
    batch = [(np.array([7, 8, 9]), items0), (np.array([5, 6]), items1), (np.array([4]), [])]
    x, (rel, valid) = Stage1Collate(pad_id=0)(batch)
    assert x.ids.tolist() == [[7, 8, 9], [5, 6, 0], [4, 0, 0]]
    assert x.doc_index.tolist() == [0, 0, 1] and x.label_index.tolist() == [4, 1, 3]
    assert x.positions.tolist() == [[2, 0, 0], [1, 0, 0], [0, 2, 1]]
    assert rel.dtype == np.float32 or str(rel.dtype) == "torch.float32"
    assert rel.tolist() == [[1.5, 0.0, 0.0], [0.25, 0.0, 0.0], [2.0, 1.0, 0.0]]
    assert valid.tolist() == [[True, True, False], [True, False, False], [True, True, True]]
    # no item at all: one empty column, nothing valid
    x, (rel, valid) = Stage1Collate(pad_id=0)([(np.array([4]), [])])
    assert x.positions.shape == (0, 1) and valid.shape == (0, 1)


@pytest.mark.parametrize("budget", [0, 2_000, None])
def test_the_document_cache_changes_no_item_and_keeps_its_budget(budget):
    # None: the default budget (everything cached); 2,000 bytes: a few documents; 0: none
    docs, positives, R = _corpus(3)
    kw = dict(labels_per_doc=6, max_relevant=3, n_negatives=4, ignore_ids=(0,))
    if budget is not None:
        kw["cache_bytes"] = budget
    ds = Stage1Dataset(docs, positives, R, generator=np.random.default_rng(4), **kw)
    rng = np.random.default_rng(4)
    for _ in range(3):                       # epochs: the first fills the cache, the next read it
        for i in range(len(docs)):
            got, want = ds.sample(i), _oracle(ds, i, rng)
            assert [l for l, _, _ in got] == [l for l, _, _ in want]
            for (_, p, r), (_, p2, r2) in zip(got, want):
                np.testing.assert_array_equal(p, p2)
                np.testing.assert_array_equal(r, r2)
    sizes = [sum(a.nbytes for a in ds.document(i)) for i in range(len(docs))]
    limit = ds.cache_bytes
    assert ds._cached_bytes == sum(sizes[i] for i in ds._documents) <= limit
    if budget is None:
        assert len(ds._documents) == len(docs)
    elif budget == 0:
        assert not ds._documents
    else:                                    # a document is kept only if it fits beside the others
        assert 0 < len(ds._documents) < len(docs)
        assert ds._cached_bytes + sizes[min(set(range(len(docs))) - set(ds._documents))] > limit
    # a pickled dataset (a DataLoader worker's copy) starts with an empty cache
    import pickle
    copy = pickle.loads(pickle.dumps(ds))
    assert not copy._documents and copy._cached_bytes == 0
