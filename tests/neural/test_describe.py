"""PLANT for labels unseen in training: description targets, borrowed queries, fit parameters."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.relevance import MIGRelevance

torch = pytest.importorskip("torch")

from xplant.unseen import DescriptionFusion  # noqa: E402
from xplant.neural import AttentionPlanter, PlantClassifier  # noqa: E402
from xplant.neural.planting._targets import (borrow_queries, description_targets, merge_targets,  # noqa: E402
                                             nearest_labelled_ancestor)


def test_description_targets_are_corpus_tokens_by_idf(zero_shot_corpus):
    texts, Y, _, _, desc = zero_shot_corpus
    rel = MIGRelevance().fit(texts, Y)
    R = description_targets(rel, desc, [6, 4])
    vocab = rel.vocabulary_
    row = R.getrow(6)
    got = {t: v for t, v in zip(row.indices, row.data)}
    # "asthma" never occurs in training: only bronchial and wheezing are targets
    assert set(got) == {vocab["bronchial"], vocab["wheezing"]}
    df, n = rel.document_frequency_, rel.n_train_documents_
    for t, v in got.items():
        assert v == pytest.approx(np.log((1 + n) / (1 + df[t])) + 1)
    assert R.getrow(0).nnz == 0 and R.getrow(4).nnz > 0
    assert vocab.get("headache") in R.getrow(4).indices


def test_merge_and_borrow_by_hand():
    mig = sp.csr_matrix([[0.0, 0.3, 0.1, 0.0], [0.0, 0.0, 0.0, 0.0]])
    desc = sp.csr_matrix([[0.0, 2.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    assert merge_targets(mig, desc).toarray().tolist() == [[0.0, 2.3, 0.1, 1.3], [0.0, 0.0, 0.0, 0.0]]
    parents = [[], ["A"], ["A"], ["A1"], ["Z"]]
    anc = nearest_labelled_ancestor(parents, ["A", "A1", "A2", "A1X", "B"])
    assert anc.tolist() == [-1, 0, 0, 1, -1]
    q = np.arange(10, dtype=float).reshape(5, 2)
    trained = np.array([True, True, False, False, False])
    new, n = borrow_queries(q, anc, trained)
    # A2 (untrained, ancestor A): mean of trained labels under A (A1) and A itself
    assert n == 2 and new[2].tolist() == [1.0, 2.0] and new[3].tolist() == q[1].tolist()
    assert new[4].tolist() == q[4].tolist() and new[0].tolist() == q[0].tolist()


def test_planter_without_descriptions_is_unchanged(zero_shot_corpus, planter_params):
    texts, Y, _, _, desc = zero_shot_corpus
    a = AttentionPlanter(**planter_params, max_epochs=1).fit(texts, Y)
    b = AttentionPlanter(**planter_params, max_epochs=1).fit(texts, Y, label_descriptions=desc)
    assert a.target_relevance_.getrow(6).nnz == 0 and b.target_relevance_.getrow(6).nnz == 2
    assert b.n_described_labels_ == 1
    assert (a.target_relevance_[:6] != b.target_relevance_[:6]).nnz == 0
    c = AttentionPlanter(**planter_params, max_epochs=1).fit(texts, Y)
    torch.testing.assert_close(a.module_.attention.label_queries, c.module_.attention.label_queries)


def test_planted_attention_finds_description_tokens(make_zero_shot_corpus, planter_params):
    """The unseen label's highest attention falls on its description words (random: about 2 in 17)."""
    texts, Y, test, _, desc = make_zero_shot_corpus(n_train=120)
    pl = AttentionPlanter(**planter_params, max_epochs=8, lr=5e-3).fit(texts, Y, label_descriptions=desc)
    words = {pl.relevance_.vocabulary_[w] for w in ("bronchial", "wheezing")}
    docs = pl.relevance_.tokenize(test)
    hits = [int(d[int(np.argmax(s[0]))]) in words for d, s in zip(docs, pl.attention(test, [6]))]
    assert np.mean(hits) >= 0.75


def test_plant_with_descriptions_ranks_unseen_label_top_3(zero_shot_corpus, small):
    texts, Y, test, Yt, desc = zero_shot_corpus
    f = DescriptionFusion(small(), weight="dev").fit(
        texts, Y, label_descriptions=desc, validation_data=(test[:6], Yt[:6]),
        label_names=[f"L{j}" for j in range(7)])
    assert f.estimator_.planter_.n_described_labels_ == 1  # the parameters reached the planter
    assert f.weight_ > 0
    top, _ = f.predict_top_k(test[6:], 3)
    assert all(6 in row for row in top.tolist())


def test_bad_description_input(zero_shot_corpus, small):
    texts, Y, _, _, desc = zero_shot_corpus
    with pytest.raises(ValueError, match="label_descriptions has 6 entries but Y has 7 labels"):
        small(max_epochs=1).fit(texts, Y, label_descriptions=desc[:6])
    with pytest.raises(ValueError, match=r"label_parents\[0\] is a str, not a list"):
        small(max_epochs=1).fit(texts, Y, label_parents=["A"] + [[]] * 6)
