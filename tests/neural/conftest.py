import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("torch")
pytest.importorskip("skorch")


def make_corpus(n_docs=60, n_labels=6, seed=0, doc_len=30):
    """Synthetic documents where label l is signalled by the word ``sig<l>``.

    Each document has 1-2 labels; its words are filler words plus one
    occurrence of the signal word of each of its labels, at random places.
    """
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(40)]
    texts, rows, cols = [], [], []
    for i in range(n_docs):
        labs = rng.choice(n_labels, size=rng.integers(1, 3), replace=False)
        words = list(rng.choice(filler, size=doc_len))
        for l in labs:
            words.insert(int(rng.integers(0, len(words) + 1)), f"sig{l}")
            rows.append(i)
            cols.append(int(l))
        texts.append(" ".join(words))
    Y = sp.csr_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(n_docs, n_labels))
    return texts, Y


#: stage1_weight=0.1: one Stage 2 per fit (the default "dev" trains it once
#: per candidate weight; its own tests are in test_estimator_contract.py)
TINY = dict(module__embedding_dim=16, module__hidden_dim=16, module__attention_dim=16,
            module__pool_size=16, batch_size=8, verbose=0, n_jobs=1, stage1_weight=0.1)


@pytest.fixture(name="make_corpus", scope="session")
def _make_corpus():
    """The synthetic corpus factory (tests import nothing from conftest)."""
    return make_corpus


@pytest.fixture(scope="session")
def tiny():
    """Tiny architecture parameters shared by the neural tests."""
    return dict(TINY)


@pytest.fixture(scope="session")
def small(tiny):
    """Factory of a tiny PlantClassifier with a short planting."""
    from xplant.neural import AttentionPlanter, PlantClassifier

    def build(**kw):
        params = dict(tiny, max_epochs=3, planter=AttentionPlanter(max_epochs=2, verbose=0))
        params.update(kw)
        return PlantClassifier(**params)
    return build


@pytest.fixture(scope="session")
def planter_params(tiny):
    return {k: v for k, v in tiny.items() if k not in ("module__pool_size", "stage1_weight")}


@pytest.fixture(scope="module")
def one_thread():
    """torch on one thread for a module, restored after: tiny models run far faster so,
    above all on a busy machine."""
    import torch
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
