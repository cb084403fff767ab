"""MIGRelevance: tokenization, vocabulary, relevance, partial_fit, Pipeline hand-off."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, get_tags

from xplant.relevance import MIGRelevance, TokenCorpus, mig_scores, tokenizer_fingerprint

WORDS = ["fever", "cough", "leg", "fracture", "pain", "rash", "itch", "the", "and", "of"]


def make_corpus(n=40, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, 3)) < 0.35).astype(int)
    texts = []
    for i in range(n):
        words = list(rng.choice(WORDS[4:], size=rng.integers(1, 6)))
        for l, (a, b) in enumerate([("fever", "cough"), ("leg", "fracture"), ("rash", "itch")]):
            if Y[i, l]:
                words += [a] if rng.random() < 0.8 else [b]
        rng.shuffle(words)
        texts.append(" ".join(w.upper() if rng.random() < 0.2 else w for w in words) + ".")
    return texts, Y


def test_relevance_equals_mig_scores_on_countvectorizer_matrix():
    texts, Y = make_corpus()
    rel = MIGRelevance(top_k=3).fit(texts, Y)
    cv = CountVectorizer(token_pattern=r"\w+", lowercase=True).fit(texts)
    X = cv.transform(texts)
    ref = mig_scores(X, Y, top_k=3)
    # Map CountVectorizer columns to MIGRelevance ids.
    cols = np.array([rel.vocabulary_[t] for t in cv.get_feature_names_out()])
    expect = np.zeros((Y.shape[1], rel.n_tokens_))
    expect[:, cols] = ref.toarray()
    np.testing.assert_array_equal(rel.relevance_.toarray(), expect)
    assert rel.relevance_.dtype == np.float64 and rel.relevance_.format == "csr"
    assert rel.relevance_.shape == (3, rel.n_tokens_)


def test_vocabulary_ids_and_fitted_attributes():
    texts, Y = make_corpus()
    rel = MIGRelevance().fit(texts, Y)
    tokens = sorted(set(w.lower() for t in texts for w in t.rstrip(".").split()))
    assert rel.vocabulary_ == {"<pad>": 0, "<unk>": 1, **{t: i + 2 for i, t in enumerate(tokens)}}
    assert (rel.pad_id_, rel.unk_id_, rel.n_tokens_) == (0, 1, len(tokens) + 2)
    assert rel.n_train_documents_ == 40 and rel.n_labels_ == 3
    np.testing.assert_array_equal(rel.classes_, [0, 1, 2])
    np.testing.assert_array_equal(rel.label_frequency_, Y.sum(0))
    assert rel.label_frequency_.dtype == np.int64 and rel.document_frequency_.dtype == np.int64
    for t, i in rel.vocabulary_.items():
        if i > 1:
            df = sum(t in x.lower().rstrip(".").split() for x in texts)
            assert rel.document_frequency_[i] == df
    assert rel.relevance_[:, :2].nnz == 0
    assert rel.tokenizer_fingerprint_ == tokenizer_fingerprint("word", rel.vocabulary_)


def test_min_df_max_df_prune_to_unk_and_keep_positions():
    texts = ["a b c", "a b", "a d", "a e e"]
    Y = np.array([[1], [1], [0], [0]])
    rel = MIGRelevance(min_df=2, max_df=0.9).fit(texts, Y)
    assert rel.vocabulary_ == {"<pad>": 0, "<unk>": 1, "b": 2}  # a in 100%, c/d/e once
    corpus = rel.transform(texts)
    assert [d.tolist() for d in corpus] == [[1, 2, 1], [1, 2], [1, 1], [1, 1, 1]]
    assert rel.relevance_.indices.tolist() == [2]
    assert rel.document_frequency_.tolist() == [0, 4, 2]
    with pytest.raises(ValueError, match="no token remains"):
        MIGRelevance(min_df=3, max_df=0.9).fit(texts, Y)
    with pytest.raises(ValueError, match="fewer documents than min_df"):
        MIGRelevance(min_df=5).fit(texts, Y)


def test_offsets_are_exact_in_the_original_text():
    # 'İ' lowercases to two characters: lowercasing the whole text first
    # would shift every later offset.
    texts = ["İİ Straße, naïve-CAFÉ 42x"]
    rel = MIGRelevance().fit(texts + ["other words"], [[1], [0]])
    ids, offs = rel.tokenize(texts, return_offsets=True)
    words = [texts[0][s:e] for s, e in offs[0]]
    assert words == ["İİ", "Straße", "naïve", "CAFÉ", "42x"]
    inv = {i: t for t, i in rel.vocabulary_.items()}
    assert [inv[i] for i in ids[0]] == [w.lower() for w in words]
    assert ids[0].dtype == np.int64 and offs[0].dtype == np.int64 and offs[0].shape == (5, 2)


def test_callable_tokenizer_and_sequential_offsets():
    def split_on_space(text):
        return text.split(" ")

    texts = ["The cat, the CAT.", "a dog"]
    rel = MIGRelevance(split_on_space).fit(texts, [[1], [0]])
    assert "cat," in rel.vocabulary_ and "cat." in rel.vocabulary_
    ids, offs = rel.tokenize(texts[:1], return_offsets=True)
    assert offs[0].tolist() == [[0, 3], [4, 8], [9, 12], [13, 17]]
    assert rel.tokenizer_fingerprint_.startswith("callable:")
    assert "split_on_space" in rel.tokenizer_fingerprint_


def test_token_lists_and_texts_give_the_same_model():
    texts, Y = make_corpus()
    lists = [t.rstrip(".").split() for t in texts]
    a = MIGRelevance(top_k=4).fit(texts, Y)
    b = MIGRelevance(top_k=4).fit(lists, Y)
    assert a.vocabulary_ == b.vocabulary_
    np.testing.assert_array_equal(a.relevance_.toarray(), b.relevance_.toarray())
    assert [d.tolist() for d in a.transform(texts)] == [d.tolist() for d in b.transform(lists)]


def test_matrix_input_uses_column_ids():
    rng = np.random.default_rng(3)
    X = sp.random(30, 12, density=0.3, random_state=4, format="csr")
    X.data = np.ceil(X.data * 3)
    Y = (rng.random((30, 4)) < 0.3).astype(int)
    rel = MIGRelevance(top_k=2).fit(X, Y)
    np.testing.assert_array_equal(rel.relevance_.toarray(), mig_scores(X, Y, top_k=2).toarray())
    assert rel.n_tokens_ == 12 and rel.pad_id_ is None and rel.vocabulary_[5] == 5
    corpus = rel.transform(X[:3])
    assert [d.tolist() for d in corpus] == [sorted(X[i].indices.tolist()) for i in range(3)]
    with pytest.raises(ValueError, match="same kind of input"):
        rel.transform(["some text"])


def test_label_lists_and_classes():
    texts = ["a b", "b c", "c d", "a d"]
    rel = MIGRelevance().fit(texts, [["x"], ["x", "y"], [], ["z"]])
    np.testing.assert_array_equal(rel.classes_, ["x", "y", "z"])
    np.testing.assert_array_equal(rel.label_frequency_, [2, 1, 1])
    rel2 = MIGRelevance().fit(texts, np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [0, 0, 1]]),
                              label_names=["x", "y", "z"])
    np.testing.assert_array_equal(rel.relevance_.toarray(), rel2.relevance_.toarray())
    with pytest.raises(ValueError, match="3 columns"):
        MIGRelevance().fit(texts, np.eye(4, 3), label_names=["x", "y"])


def test_leak_free_fit_depends_only_on_training_rows():
    texts, Y = make_corpus(60, seed=1)
    train = np.arange(40)
    texts_b = texts[:40] + [t + " zebra unseen words" for t in texts[40:]]
    Y_b = Y.copy()
    Y_b[40:] = 1 - Y_b[40:]
    fits = []
    for tx, yy in [(texts, Y), (texts_b, Y_b)]:
        fits.append(MIGRelevance(top_k=None).fit(_safe_indexing(tx, train), yy[train]))
    a, b = fits
    assert a.vocabulary_ == b.vocabulary_ and "zebra" not in a.vocabulary_
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(a.relevance_, name), getattr(b.relevance_, name))
    np.testing.assert_array_equal(a.document_frequency_, b.document_frequency_)
    held_out = a.transform(texts_b[40:41])[0]
    assert held_out[-3:].tolist() == [a.unk_id_] * 3


def test_positive_only_false_and_normalize_pass_through():
    texts, Y = make_corpus()
    rel = MIGRelevance(top_k=None, positive_only=False, normalize="joint").fit(texts, Y)
    X = CountVectorizer(token_pattern=r"\w+", vocabulary=sorted(rel.vocabulary_)[2:]).transform(texts)
    ref = mig_scores(X, Y, positive_only=False, normalize="joint")
    assert rel.relevance_.nnz == ref.nnz
    assert rel.relevance_[:, :2].nnz == 0


@pytest.mark.parametrize(
    "params",
    [
        {"top_k": 2},
        {"top_k": None, "min_df": 2},
        {"top_k": 3, "positive_only": False, "max_df": 0.5, "normalize": "label"},
    ],
)
def test_partial_fit_equals_fit_on_the_concatenation(params):
    texts, Y = make_corpus(45, seed=2)
    vocab = WORDS + ["never"]
    full = MIGRelevance(vocabulary=vocab, **params).fit(texts, Y)
    part = MIGRelevance(vocabulary=vocab, **params)
    for s in (slice(0, 7), slice(7, 30), slice(30, 45)):
        part.partial_fit(texts[s], Y[s], n_labels=3)
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(part.relevance_, name), getattr(full.relevance_, name))
    np.testing.assert_array_equal(part.document_frequency_, full.document_frequency_)
    np.testing.assert_array_equal(part.label_frequency_, full.label_frequency_)
    assert part.n_train_documents_ == 45 and part.vocabulary_ == full.vocabulary_
    assert part.tokenizer_fingerprint_ == full.tokenizer_fingerprint_


def test_partial_fit_matrix_and_label_lists():
    rng = np.random.default_rng(5)
    X = sp.csr_matrix((rng.random((50, 20)) < 0.2).astype(int))
    labels = [[c for c in "abc" if rng.random() < 0.4] for _ in range(50)]
    full = MIGRelevance(top_k=4).fit(X, labels, label_names=list("abc"))
    part = MIGRelevance(top_k=4)
    for s in (slice(0, 20), slice(20, 50)):
        part.partial_fit(X[s], labels[s], classes=list("abc"))
    np.testing.assert_array_equal(part.relevance_.toarray(), full.relevance_.toarray())
    np.testing.assert_array_equal(part.classes_, ["a", "b", "c"])


def test_partial_fit_errors():
    with pytest.raises(ValueError, match="fixed vocabulary"):
        MIGRelevance().partial_fit(["a b"], [[1]], n_labels=1)
    with pytest.raises(ValueError, match="label space"):
        MIGRelevance(vocabulary=["a"]).partial_fit(["a b"], [[1]])
    rel = MIGRelevance(vocabulary=["a"]).partial_fit(["a b"], [[1, 0]], n_labels=2)
    with pytest.raises(ValueError, match="label columns"):
        rel.partial_fit(["a"], [[1, 0, 1]])
    with pytest.raises(ValueError, match="fitted with fit"):
        MIGRelevance().fit(["a", "b"], [[1], [0]]).partial_fit(["a"], [[1]], n_labels=1)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(TypeError, match="single string"):
        MIGRelevance().fit("one text", [[1]])
    with pytest.raises(ValueError, match="same number"):
        MIGRelevance().fit(["a", "b"], [[1], [0], [1]])
    with pytest.raises(ValueError, match="0 and 1"):
        MIGRelevance().fit(["a", "b"], np.array([[2], [0]]))
    with pytest.raises(ValueError, match="tokenizer"):
        MIGRelevance(tokenizer="bpe").fit(["a", "b"], [[1], [0]])
    with pytest.raises(ValueError, match="no such local folder"):
        MIGRelevance(tokenizer="hf:does/not/exist").fit(["a", "b"], [[1], [0]])
    with pytest.raises(ValueError, match="top_k"):
        MIGRelevance(top_k=0).fit(["a", "b"], [[1], [0]])
    with pytest.raises(ValueError, match="<unk>"):
        MIGRelevance(vocabulary={"a": 0}).fit(["a", "b"], [[1], [0]])


def test_clone_get_params_and_pickle():
    rel = MIGRelevance(top_k=7, min_df=2, n_jobs=1)
    params = rel.get_params()
    assert params["top_k"] == 7 and params["tokenizer"] == "word" and params["min_df"] == 2
    cloned = clone(rel)
    assert cloned.get_params() == params and cloned is not rel
    texts, Y = make_corpus()
    rel.fit(texts, Y)
    assert not hasattr(clone(rel), "relevance_")
    again = pickle.loads(pickle.dumps(rel))
    np.testing.assert_array_equal(again.relevance_.toarray(), rel.relevance_.toarray())
    assert [d.tolist() for d in again.transform(texts[:3])] == [d.tolist() for d in rel.transform(texts[:3])]


def test_tags_declare_text_sparse_and_multilabel_input():
    tags = get_tags(MIGRelevance())
    assert tags.input_tags.string and tags.input_tags.sparse
    assert tags.target_tags.required and tags.target_tags.two_d_labels
    assert tags.target_tags.single_output and tags.target_tags.multi_output   # 1-D y: one column


class _CorpusConsumer(BaseEstimator):
    """Minimal downstream step: scores by the relevance mass of each document."""

    def fit(self, X, Y):
        assert isinstance(X, TokenCorpus) and X.relevance is not None
        self.relevance_ = X.relevance.relevance_
        return self

    def score(self, X, Y):
        assert isinstance(X, TokenCorpus)
        R = self.relevance_.toarray()
        pred = np.stack([R[:, d].sum(1) > 0 for d in X.docs]).astype(int)
        return float((pred == Y).mean())


def test_pipeline_cross_validation_keeps_the_token_corpus():
    texts, Y = make_corpus(60, seed=4)
    pipe = Pipeline([("rel", MIGRelevance(top_k=2)), ("clf", _CorpusConsumer())])
    scores = cross_val_score(pipe, texts, Y, cv=KFold(3))
    assert scores.shape == (3,) and (scores > 0.5).all()
    corpus = pipe.fit(texts, Y)[:-1].transform(texts)
    assert isinstance(corpus, TokenCorpus) and corpus.relevance is pipe.named_steps["rel"]


def test_fit_transform_equals_fit_then_transform():
    texts, Y = make_corpus()
    a = MIGRelevance(min_df=2, max_length=4).fit_transform(texts, Y)
    rel = MIGRelevance(min_df=2, max_length=4).fit(texts, Y)
    b = rel.transform(texts)
    assert [d.tolist() for d in a] == [d.tolist() for d in b]
    assert max(len(d) for d in b) <= 4
