"""Fixtures shared by several test folders."""

import numpy as np
import pytest
import scipy.sparse as sp

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
