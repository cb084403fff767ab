"""Fixtures shared by several test folders."""

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

#: The EURLEX57K distribution beside the checkout (not bundled; tests that need it skip
#: or leave it out where it is absent).
EURLEX = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "eurlex57k"

# Label descriptions; label 6 ("asthma") never occurs in training.
ZERO_SHOT_DESCRIPTIONS = [
    "fracture of femur bone",
    "pneumonia lung infection",
    "diabetes mellitus insulin",
    "hypertension high blood pressure",
    "migraine headache",
    "iron deficiency anemia",
    "asthma bronchial wheezing",
]
_SIGNALS = [["fracture", "femur", "bone"], ["pneumonia", "lung", "infection"], ["diabetes", "insulin", "glucose"],
            ["hypertension", "pressure", "blood"], ["migraine", "headache"], ["anemia", "iron", "deficiency"]]


@pytest.fixture(scope="session", autouse=True)
def _cache_of_the_session(tmp_path_factory):
    """The package's cache (the catalogue names' embeddings) in a folder of the session, not
    the user's: a test reads nothing a previous run left, and leaves nothing behind. Child
    processes inherit it through the environment."""
    import os
    from xplant._cache import CACHE_ENV
    old = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("xplant-cache"))
    yield
    if old is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = old


def make_zero_shot_corpus(seed=0, n_train=60, n_test=12):
    """Documents where label 6 has no training document.

    Training documents of labels 0-5 carry their signal words; pneumonia (1)
    documents also say "bronchial" and "wheezing", label 6's description
    words. Test documents of label 6 say "bronchial wheezing" (and "asthma"
    in half of them) beside one seen label's words.

    Returns
    -------
    train_texts, Y_train, test_texts, Y_test, descriptions
    """
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(30)]

    def doc(labels, extra=()):
        words = list(rng.choice(filler, size=12))
        for lab in labels:
            words += list(rng.choice(_SIGNALS[lab], size=2))
        words += list(extra)
        rng.shuffle(words)
        return " ".join(words)

    texts, rows, cols = [], [], []
    for i in range(n_train):
        labs = sorted({int(rng.integers(0, 6)), int(rng.integers(0, 6))})
        texts.append(doc(labs, ["bronchial", "wheezing"] if 1 in labs else ()))
        rows += [i] * len(labs)
        cols += labs
    Y = sp.csr_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(n_train, 7))
    test, trow, tcol = [], [], []
    for i in range(n_test):
        other = int(rng.choice([0, 2, 3, 4, 5]))
        test.append(doc([other], ["bronchial", "wheezing"] + (["asthma"] if i % 2 else [])))
        trow += [i, i]
        tcol += [other, 6]
    Yt = sp.csr_matrix((np.ones(len(trow), dtype=np.int64), (trow, tcol)), shape=(n_test, 7))
    return texts, Y, test, Yt, list(ZERO_SHOT_DESCRIPTIONS)


@pytest.fixture(scope="session")
def zero_shot_corpus():
    """The tiny corpus of :func:`make_zero_shot_corpus` (seed 0)."""
    return make_zero_shot_corpus()


@pytest.fixture(name="make_zero_shot_corpus", scope="session")
def _make_zero_shot_corpus():
    """The factory of :func:`make_zero_shot_corpus` (tests import nothing from conftest)."""
    return make_zero_shot_corpus


@pytest.fixture(scope="session")
def eurlex_slice(tmp_path_factory):
    """A EURLEX57K folder of the first 40 documents (by celex_id) of each split.

    ``load_eurlex57k(..., max_docs=n)`` gives the same documents on it as on the
    whole distribution for ``n <= 40``, in a label space of their own concepts only
    (the whole one reads all 57,000 documents at each load). ``EURLEX57K.json``
    (the descriptors) is copied whole. Where the distribution is absent, the
    absent folder itself.
    """
    if not (EURLEX / "train.jsonl.gz").is_file():
        return EURLEX
    out = tmp_path_factory.mktemp("eurlex57k")
    for split in ("train", "dev", "test"):
        with gzip.open(EURLEX / f"{split}.jsonl.gz", "rt", encoding="utf-8-sig") as fh:
            lines = sorted((json.loads(line)["celex_id"], line) for line in fh if line.strip())
        with gzip.open(out / f"{split}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(line if line.endswith("\n") else line + "\n" for _, line in lines[:40])
    if (EURLEX / "EURLEX57K.json").is_file():
        shutil.copyfile(EURLEX / "EURLEX57K.json", out / "EURLEX57K.json")
    return out


#: The labels of the small corpus every saved kind is fitted on (:func:`kind_corpus`).
KIND_LABELS = ["R50.9", "S72.0", "L29.9"]
_KIND_WORDS = ["fever", "cough", "fracture", "femur", "rash", "itch"]


def kind_corpus(n=40, seed=0):
    """``(texts, Y)``: one of three labels per document, each signalled by two words."""
    rng = np.random.default_rng(seed)
    Y = np.zeros((n, 3), dtype=np.int64)
    Y[np.arange(n), rng.integers(0, 3, n)] = 1
    texts = [" ".join(rng.permutation([w for j in np.flatnonzero(row)
                                       for w in _KIND_WORDS[2 * j:2 * j + 2]]
                                      + list(rng.choice(["patient", "day", "note"], 3))))
             for row in Y]
    return texts, sp.csr_matrix(Y)


def fit_kind(kind):
    """A small fitted model of a saved kind: ``"linear"`` (a TF-IDF SVM Pipeline),
    ``"description-fusion"`` (over one, with one label unseen in training) or
    ``"plant-classifier"`` (skipped without torch)."""
    import warnings
    texts, Y = kind_corpus()
    if kind == "linear":
        from xplant.linear import make_tfidf_ovr
        return make_tfidf_ovr(C=1.0, min_df=1, random_state=0).fit(
            texts, Y, ovr__label_names=KIND_LABELS)
    if kind == "description-fusion":
        from xplant.linear import make_tfidf_ovr
        from xplant.unseen import DescriptionFusion
        Y = sp.hstack([Y, sp.csr_matrix((Y.shape[0], 1), dtype=np.int64)]).tocsr()
        return DescriptionFusion(make_tfidf_ovr(C=1.0, min_df=1, random_state=0),
                                 weight=1.0).fit(
            texts, Y, label_names=KIND_LABELS + ["R21"],
            label_descriptions=["fever cough", "fracture femur", "rash itch", "rash"])
    pytest.importorskip("torch")
    pytest.importorskip("skorch")
    from xplant.neural import AttentionPlanter, PlantClassifier
    model = PlantClassifier(module__embedding_dim=8, module__hidden_dim=8,
                            module__attention_dim=8, module__pool_size=8, batch_size=8,
                            verbose=0, n_jobs=1, stage1_weight=0.1, max_epochs=1,
                            planter=AttentionPlanter(max_epochs=1, verbose=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # no dev split: the fallbacks' warning
        return model.fit(texts, Y, label_names=KIND_LABELS)


@pytest.fixture(name="kind_corpus", scope="session")
def _kind_corpus():
    """:func:`kind_corpus` (tests import nothing from conftest)."""
    return kind_corpus


@pytest.fixture(name="fit_kind", scope="session")
def _fit_kind():
    """:func:`fit_kind` (tests import nothing from conftest)."""
    return fit_kind
