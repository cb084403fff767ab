import numpy as np
import pytest


def make_texts(n_docs=40, n_labels=4, seed=0, names=None):
    """Documents where label ``names[l]`` is signalled by the word ``sig<l>``."""
    rng = np.random.default_rng(seed)
    names = names or [f"C{l}" for l in range(n_labels)]
    texts, labels = [], []
    for _ in range(n_docs):
        labs = sorted(rng.choice(len(names), size=rng.integers(1, 3), replace=False).tolist())
        words = [f"w{i}" for i in rng.integers(0, 20, size=12)] + [f"sig{l}" for l in labs]
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append([names[l] for l in labs])
    return texts, labels


@pytest.fixture(name="make_texts", scope="session")
def _make_texts():
    """The synthetic document factory (tests import nothing from conftest)."""
    return make_texts


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A tiny PLANT model with label names C0..C3, saved; (folder, fitted classifier)."""
    pytest.importorskip("torch")
    pytest.importorskip("skorch")
    from xplant.neural import AttentionPlanter, PlantClassifier
    texts, labels = make_texts()
    clf = PlantClassifier(module__embedding_dim=8, module__hidden_dim=8, module__attention_dim=8, module__pool_size=8, batch_size=8,
                          verbose=0, n_jobs=1, max_epochs=1, module__max_length=64,
                          planter=AttentionPlanter(max_epochs=1, verbose=0))
    clf.fit(texts, labels)
    path = tmp_path_factory.mktemp("model") / "m"
    clf.save(path)
    return path, clf
