import numpy as np
import pytest
from sklearn.metrics.pairwise import cosine_similarity

from xplant.evidence import attention_cosine_similarity, related_rare_label_groups


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_matches_sklearn_oracle_per_document_and_mean():
    rng = np.random.default_rng(0)
    docs = [_softmax(rng.normal(size=(4, n))) for n in (7, 12, 30)]
    expected = []
    for a in docs:
        c = cosine_similarity(a)
        expected.append(c[np.triu_indices(4, 1)].mean())
    mean, per_doc = attention_cosine_similarity(docs, return_per_document=True)
    np.testing.assert_allclose(per_doc, expected)
    assert mean == pytest.approx(np.mean(expected))
    # one document as a 2-D array, several as a 3-D array
    assert attention_cosine_similarity(docs[0]) == pytest.approx(expected[0])
    same_len = np.stack([_softmax(rng.normal(size=(3, 9))) for _ in range(5)])
    assert attention_cosine_similarity(same_len) == pytest.approx(attention_cosine_similarity(list(same_len)))


def test_identical_and_disjoint_attention_and_scale_invariance():
    a = _softmax(np.random.default_rng(1).normal(size=20))
    assert attention_cosine_similarity(np.stack([a, a, a])) == pytest.approx(1.0)
    assert attention_cosine_similarity(np.eye(5)) == 0.0
    b = np.array([[0.2, 0.8, 0.0], [0.6, 0.4, 0.0]])
    assert attention_cosine_similarity(b) == pytest.approx(attention_cosine_similarity(b * [[3.0], [0.5]]))
    # hand value: (0.12 + 0.32) / (sqrt(0.68) * sqrt(0.52))
    assert attention_cosine_similarity(b) == pytest.approx(0.44 / np.sqrt(0.68 * 0.52))


@pytest.mark.parametrize(
    "attn, match",
    [
        ([[1.0, 0.0]], "at least 2 labels"),
        ([[1.0, 0.0], [0.0, 0.0]], "all-zero"),
        ([[1.0, np.nan], [0.0, 1.0]], "NaN"),
        ([np.ones((2, 3)), np.ones((3, 3))], "same label group"),
        ([], "empty"),
    ],
)
def test_similarity_errors(attn, match):
    with pytest.raises(ValueError, match=match):
        attention_cosine_similarity(attn)


def test_related_rare_label_groups():
    names = ["R50.9", "R50.2", "R50.81", "R51", "N20.0", "N20.1", "BW03ZZZ", "BW03YZZ", "0DTJ4ZZ", "R5"]
    freq = np.array([2, 1, 9, 3, 0, 4, 5, 1, 2, 1])
    groups = related_rare_label_groups(names, freq)
    assert list(groups) == ["BW0", "R50"]
    np.testing.assert_array_equal(groups["R50"], [0, 1])  # R50.81 too frequent
    np.testing.assert_array_equal(groups["BW0"], [6, 7])
    # N20.0 has no training positive: only with min_freq=0
    assert "N20" in related_rare_label_groups(names, freq, min_freq=0)
    assert list(related_rare_label_groups(names, freq, max_freq=9, min_group=3)) == ["R50"]
    short = related_rare_label_groups(names, freq, prefix_len=2)  # N2 has one rare label seen in training
    assert list(short) == ["BW", "R5"]
    np.testing.assert_array_equal(short["R5"], [0, 1, 3, 9])
    with pytest.raises(ValueError, match="shape"):
        related_rare_label_groups(names, freq[:3])
    with pytest.raises(ValueError, match="min_group"):
        related_rare_label_groups(names, freq, min_group=1)
    with pytest.raises(ValueError, match="max_freq"):
        related_rare_label_groups(names, freq, max_freq=0)
