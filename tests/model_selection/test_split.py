import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, cross_val_score, train_test_split
from sklearn.multiclass import OneVsRestClassifier

from xplant.model_selection import IterativeStratifiedKFold, iterative_train_test_split


def _zipf_Y(n=600, L=40, seed=0):
    rng = np.random.default_rng(seed)
    p = 1 / np.arange(1, L + 1)
    Y = (rng.random((n, L)) < 0.25 * p / p[0]).astype(np.int64)
    return Y


def _fold_counts(cv, X, Y):
    return np.array([Y[test].sum(axis=0) for _, test in cv.split(X, Y)])


@pytest.mark.filterwarnings("ignore:.*fewer positives")
def test_folds_partition_rows():
    Y = _zipf_Y()
    X = np.zeros((len(Y), 1))
    sizes = [len(t) for _, t in IterativeStratifiedKFold(7).split(X, Y)]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == len(Y)
    seen = np.concatenate([test for _, test in IterativeStratifiedKFold(5).split(X, Y)])
    assert sorted(seen.tolist()) == list(range(len(Y)))
    for train, test in IterativeStratifiedKFold(5).split(X, Y):
        assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == len(Y)


def test_single_label_rows_are_exactly_stratified():
    # with one label per row, every label's positives differ by at most 1 across folds
    rng = np.random.default_rng(3)
    y = rng.integers(0, 7, 200)
    Y = np.eye(7, dtype=int)[y]
    counts = _fold_counts(IterativeStratifiedKFold(4), np.zeros((200, 1)), Y)
    assert (counts.max(axis=0) - counts.min(axis=0)).max() <= 1


@pytest.mark.filterwarnings("ignore:.*fewer positives")
def test_better_balanced_than_kfold():
    Y = _zipf_Y(seed=1)
    X = np.zeros((len(Y), 1))
    ours = _fold_counts(IterativeStratifiedKFold(5, shuffle=True, random_state=0), X, Y)
    plain = _fold_counts(KFold(5, shuffle=True, random_state=0), X, Y)
    spread = lambda c: (c.max(axis=0) - c.min(axis=0)).mean()  # noqa: E731
    assert spread(ours) <= 1.0 < spread(plain)
    # every label with >= 5 positives reaches every fold
    has5 = Y.sum(axis=0) >= 5
    assert (ours[:, has5] > 0).all()


@pytest.mark.filterwarnings("ignore:.*fewer positives")
def test_seeding_follows_kfold():
    Y = _zipf_Y()
    X = np.zeros((len(Y), 1))
    runs = [[t.tolist() for _, t in IterativeStratifiedKFold(5, shuffle=True, random_state=s).split(X, Y)] for s in (7, 7, 8)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    det = [[t.tolist() for _, t in IterativeStratifiedKFold(5).split(X, Y)] for _ in range(2)]
    assert det[0] == det[1]
    with pytest.raises(ValueError, match="no effect since shuffle is False"):
        IterativeStratifiedKFold(5, random_state=0)
    with pytest.raises(ValueError, match="at least 2"):
        IterativeStratifiedKFold(1)


def test_input_types_give_same_folds():
    pd = pytest.importorskip("pandas")
    Y = _zipf_Y(200, 10)
    X = np.zeros((200, 1))
    ref = [t.tolist() for _, t in IterativeStratifiedKFold(3).split(X, Y)]
    for y in (sp.csr_matrix(Y), pd.DataFrame(Y, columns=[f"c{j}" for j in range(10)]), Y.astype(bool)):
        assert [t.tolist() for _, t in IterativeStratifiedKFold(3).split(X, y)] == ref
    with pytest.raises(ValueError, match="2-D label indicator"):
        list(IterativeStratifiedKFold(3).split(X, Y[:, 0]))
    with pytest.raises(ValueError, match="only 0 and 1"):
        list(IterativeStratifiedKFold(3).split(X, Y * 2))


def test_rare_label_warning_names_it():
    pd = pytest.importorskip("pandas")
    Y = pd.DataFrame({"common": [1, 0] * 10, "R50.9": [1] + [0] * 19})
    with pytest.warns(UserWarning, match=r"fewer positives than folds.*'R50.9' \(1\)"):
        list(IterativeStratifiedKFold(3).split(np.zeros((20, 1)), Y))


def test_cross_val_score():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    Y = np.stack([(X[:, 0] > 0), (X[:, 1] > 0.5), (X[:, 0] + X[:, 2] > 0)], axis=1).astype(int)
    scores = cross_val_score(OneVsRestClassifier(LogisticRegression()), X, Y, cv=IterativeStratifiedKFold(4), scoring="f1_micro")
    assert scores.shape == (4,) and (scores > 0.8).all()
    assert IterativeStratifiedKFold(4).get_n_splits() == 4


def test_second_order_balances_pairs():
    Y = _zipf_Y(800, 8, seed=2)
    X = np.zeros((800, 1))
    folds = list(IterativeStratifiedKFold(4, order=2).split(X, Y))
    assert sorted(np.concatenate([t for _, t in folds]).tolist()) == list(range(800))
    pair = lambda idx: (Y[idx][:, :, None] & Y[idx][:, None, :]).sum(axis=0)  # noqa: E731
    c2 = np.array([pair(t) for _, t in folds])
    c1 = np.array([pair(t) for _, t in IterativeStratifiedKFold(4, order=1).split(X, Y)])
    spread = lambda c: (c.max(axis=0) - c.min(axis=0))[np.triu_indices(8, 1)].mean()  # noqa: E731
    assert spread(c2) <= spread(c1)


def test_train_test_split_order_and_sizes():
    Y = _zipf_Y(400, 12)
    X = np.arange(400).reshape(-1, 1)
    texts = [f"doc {i}" for i in range(400)]
    out = iterative_train_test_split(texts, X, Y, test_size=0.25, random_state=0)
    ref = train_test_split(texts, X, Y, test_size=0.25, random_state=0)
    assert [type(a) for a in out] == [type(a) for a in ref]
    t_tr, t_te, X_tr, X_te, Y_tr, Y_te = out
    assert len(t_te) == len(X_te) == len(Y_te) and abs(len(t_te) - 100) <= 1
    assert t_tr[0] == f"doc {X_tr[0, 0]}"  # arrays stay aligned
    assert sorted(X_tr[:, 0].tolist() + X_te[:, 0].tolist()) == list(range(400))
    # each label's test share is close to 1/4
    share = Y_te.sum(axis=0) / np.maximum(Y.sum(axis=0), 1)
    assert np.abs(share[Y.sum(axis=0) >= 8] - 0.25).max() < 0.1
    again = iterative_train_test_split(texts, X, Y, test_size=0.25, random_state=0)
    assert again[1] == t_te
    Ysp = sp.csr_matrix(Y)
    a = iterative_train_test_split(X, Ysp, shuffle=False)
    b = iterative_train_test_split(X, Ysp, shuffle=False)
    assert sp.issparse(a[3]) and (a[1] == b[1]).all()


def test_train_test_split_errors():
    Y = np.eye(4, dtype=int)
    with pytest.raises(ValueError, match="test_size"):
        iterative_train_test_split(np.zeros((4, 1)), Y, test_size=1.5)
    with pytest.raises(ValueError, match="samples"):
        iterative_train_test_split(np.zeros((5, 1)), Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = iterative_train_test_split(np.zeros((4, 1)), Y, train_size=2, test_size=1, random_state=0)
    assert len(parts[0]) + len(parts[1]) == 3  # the rest goes to neither, as in train_test_split


def test_bench_split_times_every_split_and_reports_its_target():
    """The speed target (5 folds of 100,000 x 5,000 in under 20 s) is a benchmark, not a test."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_split.py"
    spec = importlib.util.spec_from_file_location("bench_split", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    lines = []
    seconds = bench.main(["--n-docs", "2000", "--n-labels", "100"], log=lines.append)
    assert len(seconds) == 4 and bench.TARGET in seconds
    assert all(v >= 0 for v in seconds.values())
    assert lines[0].startswith("Y: 2000 docs x 100 labels")
    assert any(ln.startswith(f"target: {bench.TARGET} under 20 s: ") for ln in lines)


def test_the_stratification_heap_pops_its_keys_smallest_first():
    from xplant.model_selection._kernels import _heap_pop, _heap_push
    heap, size = np.zeros(5, dtype=np.int64), 0
    for key in (5, 1, 4, 2, 3):
        size = _heap_push(heap, size, key)
    assert heap[0] == 1                                  # the root is the smallest key
    popped = []
    while size:
        top, size = _heap_pop(heap, size)
        popped.append(int(top))
    assert popped == [1, 2, 3, 4, 5]
