"""Scores read y by the rule of fit, never rank -inf, and take any k."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant.linear import FrequencyPrior, make_tfidf_ovr
from xplant.metrics import (get_scorer, mean_average_precision, ndcg_at_k, precision_at_k,
                            psndcg_at_k, psp_at_k, r_precision_at_k, recall_at_k, top_k_decision,
                            top_k_indices, xmtc_report)

HUGE = 10**12

CUES = {"A10": ("fever", "chills"), "B20": ("cough", "sputum"), "C30": ("rash", "itch"),
        "D40": ("pain", "ache")}


def toy_notes(n=30):
    """Label ``A10 B20 C30 D40`` in turn, each note with one of its label's two cue words."""
    names = sorted(CUES)
    texts, labels = [], []
    for i in range(n):
        lab = names[i % 4]
        texts.append(f"patient reports {CUES[lab][(i // 4) % 2]} today, note {i}")
        labels.append([lab])
    return texts, labels


def test_grid_search_with_label_lists_scores_every_fold():
    from sklearn.model_selection import GridSearchCV, KFold
    texts, labels = toy_notes()
    gs = GridSearchCV(make_tfidf_ovr(min_df=1), {"ovr__C": [0.001, 1, 100]},
                      scoring=get_scorer("precision_at_1"), cv=KFold(3)).fit(texts, labels)
    scores = np.array([gs.cv_results_[f"split{i}_test_score"] for i in range(3)])
    assert np.isfinite(scores).all()                   # no fold scored NaN
    # every test note's cue word occurs in the training folds: with C >= 1 the cue decides
    np.testing.assert_array_equal(scores[:, 1:], 1.0)
    assert gs.best_params_ == {"ovr__C": 1}            # the first C of the best, not the worst


def test_scorer_reads_label_lists_through_classes():
    prior = FrequencyPrior().fit(np.zeros((2, 1)), [["B"], ["A", "B"]])
    X = np.zeros((2, 1))
    # the prior ranks B (2 documents), then A; Z was never seen: a miss, never ranked
    assert get_scorer("precision_at_1")(prior, X, [["B"], ["Z"]]) == 0.5
    assert get_scorer("recall_at_5")(prior, X, [["A", "Z"], ["Z"]]) == 0.25      # (1/2 + 0) / 2
    # the same y as a matrix over classes_ (A, B) gives the same number as the label lists
    assert get_scorer("precision_at_1")(prior, X, np.array([[0, 1], [1, 0]])) == \
        get_scorer("precision_at_1")(prior, X, [["B"], ["A"]]) == 0.5
    # the routes without predict_top_k (decision scores, predictions) read y the same way
    ovr = make_tfidf_ovr(min_df=1).fit(["fever chills", "cough", "fever", "cough sputum"],
                                       [["A10"], ["B20"], ["A10"], ["B20"]])
    docs = ["fever", "cough"]
    for name in ("map", "micro_f1", "macro_auc"):
        assert get_scorer(name)(ovr, docs, [["A10"], ["B20"]]) == 1.0, name
    # an unseen label: MAP counts it as a miss (1/2 on the second note), micro-F1 too
    assert get_scorer("map")(ovr, docs, [["A10"], ["B20", "E50"]]) == 0.75
    assert get_scorer("micro_recall")(ovr, docs, [["A10"], ["B20", "E50"]]) == pytest.approx(2 / 3)


def test_minus_inf_is_never_ranked_dense_or_sparse():
    # column 2 is a label the model never saw: scored -inf, it is outside every top-k
    Y = np.array([[1, 0, 1], [0, 1, 0]])
    S = np.array([[0.9, 0.1, -np.inf], [0.2, 0.7, -np.inf]])
    assert top_k_indices(S, 3).tolist() == [[0, 1, -1], [1, 0, -1]]
    assert recall_at_k(Y, S, k=5) == 0.75                  # (1/2 + 1) / 2: never a hit
    assert recall_at_k(Y, S, k=5) == recall_at_k(Y, sp.csr_matrix(S[:, :2]).__class__(
        (np.array([0.9, 0.1, 0.2, 0.7]), np.array([0, 1, 0, 1]), np.array([0, 2, 4])),
        shape=(2, 3)), k=5)                                # the same as a missing CSR entry
    assert mean_average_precision(Y, S) == 0.75            # ((1/1) / 2 + 1) / 2
    # the old "min - 1" score ranked it third: 2/3 for the unknown label, MAP 11/12
    assert mean_average_precision(Y, np.where(np.isinf(S), S[np.isfinite(S)].min() - 1, S)) == \
        pytest.approx(11 / 12)
    assert top_k_decision(S, k=3).toarray().tolist() == [[1, 1, 0], [1, 1, 0]]
    r = xmtc_report(Y, S, label_frequency=np.array([3, 2, 0]), n_train_documents=4)
    assert (r["R@5"], r["MAP"], r["zero_R@5_full"]) == (0.75, 0.75, 0.0)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_huge_k_allocates_no_k_columns(sparse):
    Y = np.array([[1, 0, 1, 0], [0, 1, 0, 0]])
    S = np.array([[0.9, 0.1, 0.8, 0.0], [0.2, 0.7, 0.1, 0.3]])
    S = sp.csr_matrix(S) if sparse else S
    w = np.array([1.0, 2.0, 3.0, 4.0])
    # every label is ranked; P@k and PSP@k still divide by k
    assert precision_at_k(Y, S, k=HUGE) == pytest.approx(1.5 / HUGE)
    assert recall_at_k(Y, S, k=HUGE) == r_precision_at_k(Y, S, k=HUGE) == 1.0
    assert ndcg_at_k(Y, S, k=HUGE) == ndcg_at_k(Y, S, k=4)
    assert psndcg_at_k(Y, S, k=HUGE, inv_propensity=w) == psndcg_at_k(Y, S, k=4, inv_propensity=w)
    assert psp_at_k(Y, S, k=HUGE, inv_propensity=w) == psp_at_k(Y, S, k=4, inv_propensity=w)
    assert top_k_indices(S, HUGE).shape == (2, 4)
    assert top_k_decision(S, k=HUGE).nnz == (7 if sparse else 8)   # CSR: stored entries only
    top = top_k_indices(S, 4)
    assert precision_at_k(Y, y_top_k=top, k=HUGE) == pytest.approx(1.5 / HUGE)
    assert xmtc_report(Y, S, ks=(1, HUGE))[f"R@{HUGE}"] == 1.0


def test_a_huge_k_in_predict_top_k_and_scorers():
    prior = FrequencyPrior().fit(np.zeros((3, 1)), [["B"], ["A", "B"], ["C"]])
    idx, scores = prior.predict_top_k(np.zeros((1, 1)), HUGE)
    assert idx.tolist() == [[1, 0, 2]] and scores.shape == (1, 3)
    assert get_scorer(f"recall_at_{HUGE}")(prior, np.zeros((1, 1)), [["C"]]) == 1.0
