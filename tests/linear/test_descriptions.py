"""DescriptionRanker and DescriptionFusion: zero-shot labels ranked by their descriptions."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import Pipeline

from xplant.linear import DescriptionFusion, DescriptionRanker, FrequencyPrior, make_tfidf_logistic, predict_top_k


def test_ranker_scores_are_tfidf_cosines():
    texts = ["red apple pie", "green apple", "blue sky"]
    Y = np.array([[1, 0], [1, 0], [0, 1]])
    desc = ["apple", "blue sky sea"]
    r = DescriptionRanker(vectorizer=TfidfVectorizer()).fit(texts, Y, label_descriptions=desc)
    oracle = TfidfVectorizer().fit(texts + desc)  # the same weights, fitted by hand
    D, L = oracle.transform(["apple sky"]), oracle.transform(desc)
    np.testing.assert_allclose(r.decision_function(["apple sky"]), (D @ L.T).toarray())
    assert r.label_texts_ == desc and r.predict_proba(["nothing known"]).tolist() == [[0.0, 0.0]]


def test_zero_shot_label_in_top_3(zero_shot_corpus):
    texts, Y, test, Yt, desc = zero_shot_corpus
    assert Y[:, 6].nnz == 0
    r = DescriptionRanker().fit(texts, Y, label_descriptions=desc)
    top, _ = r.predict_top_k(test, 3)
    assert all(6 in row for row in top.tolist())
    # a linear model trained on Y cannot rank it, the fusion can
    lin = make_tfidf_logistic(C=10.0).fit(texts, Y)
    assert not any(6 in row for row in predict_top_k(lin, test, 3)[0].tolist())
    f = DescriptionFusion(make_tfidf_logistic(C=10.0), weight="dev").fit(
        texts, Y, label_descriptions=desc, validation_data=(test[:6], Yt[:6]))
    assert f.unseen_.tolist() == [6] and f.weight_ > 0 and f.dev_map_[0.0] < f.dev_map_[f.weight_]
    assert all(6 in row for row in f.predict_top_k(test[6:], 3)[0].tolist())


def test_ancestors_text_and_synonyms():
    texts = ["cardiac arrest", "lung nodule"]
    Y = np.array([[1, 0, 0], [0, 1, 0]])
    r = DescriptionRanker(ancestor_depth=2).fit(
        texts, Y, label_descriptions=["Heart disease", "Lung disease", "Other"],
        label_synonyms=[["cardiac"], [], []], label_parents=[["I"], [], ["C0"]],
        parent_descriptions={"I": "Circulatory system", "C0": "heart"}, label_names=["H", "L", "C0X"])
    assert r.label_texts_ == ["Heart disease ; cardiac ; Circulatory system", "Lung disease", "Other ; heart"]


def test_fusion_keeps_seen_scores_and_routes_pipeline_params():
    texts = ["chest pain and fever", "broken left arm", "fever and cough"]
    Y = sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]]))
    desc = ["fever", "fracture of arm", "cough"]
    f = DescriptionFusion(FrequencyPrior(), weight=0.5).fit(texts, Y, label_descriptions=desc, label_names=["a", "b", "c"])
    prior = FrequencyPrior().fit(texts, Y).predict_proba(["cough"])
    S = f.predict_proba(["cough"])
    np.testing.assert_allclose(S[0, :2], prior[0, :2])
    assert S[0, 2] == pytest.approx(S[0, :2].min() + 0.5)  # lowest seen score + weight * cosine 1
    assert f.classes_.tolist() == ["a", "b", "c"] and f.estimator_.classes_.tolist() == ["a", "b", "c"]
    pipe = Pipeline([("clf", FrequencyPrior())])
    g = DescriptionFusion(pipe, weight=1.0).fit(texts, Y, label_descriptions=desc, label_names=["a", "b", "c"])
    assert g.estimator_[-1].classes_.tolist() == ["a", "b", "c"]


def test_fusion_with_margins():
    """An SVM's negative margins: the unseen label starts from the document's lowest seen score."""
    from xplant.linear import make_tfidf_ovr

    texts = ["chest pain fever", "broken arm", "fever cough night", "arm fracture"]
    Y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0]])
    desc = ["fever", "fracture of arm", "asthma"]
    f = DescriptionFusion(make_tfidf_ovr(C=1.0, min_df=1), weight=0.0).fit(texts, Y, label_descriptions=desc)
    base = f.estimator_.decision_function(["asthma attack"])
    S = f.predict_proba(["asthma attack"])
    assert S[0, 2] == pytest.approx(base[0, :2].min())  # weight 0: never above a seen label
    g = DescriptionFusion(make_tfidf_ovr(C=1.0, min_df=1), weight=2.0).fit(texts, Y, label_descriptions=desc)
    assert g.predict_top_k(["asthma attack"], 1)[0].tolist() == [[2]]


def test_bad_input():
    texts, Y = ["alpha beta", "gamma delta"], np.array([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="needs label_descriptions"):
        DescriptionRanker().fit(texts, Y)
    with pytest.raises(ValueError, match="label_descriptions has 1 entries but Y has 2 labels"):
        DescriptionRanker().fit(texts, Y, label_descriptions=["x"])
    with pytest.raises(ValueError, match=r"label_parents\[1\] is a str, not a list"):
        DescriptionRanker().fit(texts, Y, label_descriptions=["alpha", "gamma"], label_parents=[[], "p"])
    with pytest.raises(ValueError, match="no label has a description"):
        DescriptionRanker().fit(texts, Y, label_descriptions=["", ""])
    # without labelled dev data the weight takes its fallback, as every choice on dev does
    from xplant.linear._descriptions import FALLBACK_WEIGHT
    from xplant.model_selection import NoDevDataWarning
    with pytest.warns(NoDevDataWarning, match="description_weight: no labelled dev data"):
        f = DescriptionFusion(FrequencyPrior()).fit(texts, Y, label_descriptions=["alpha", "gamma"])
    assert f.weight_ == FALLBACK_WEIGHT == 1.0 and f.dev_choice_["on_dev"] is False
    with pytest.raises(ValueError, match="raw texts"):
        DescriptionRanker().fit(texts, Y, label_descriptions=["alpha", "gamma"]).predict_proba([[1, 2]])


def test_ranker_saves_and_loads_without_pickle(tmp_path, zero_shot_corpus):
    from xplant.linear import load_linear, save_linear

    texts, Y, test, _, desc = zero_shot_corpus
    r = DescriptionRanker(ancestor_depth=1).fit(texts, Y, label_descriptions=desc,
                                                label_names=[f"L{j}" for j in range(7)])
    back = load_linear(save_linear(r, tmp_path / "ranker"))
    np.testing.assert_allclose(back.predict_proba(test), r.predict_proba(test))
    assert back.classes_.tolist() == r.classes_.tolist() and back.ancestor_depth == 1 and back.k_ == r.k_


@pytest.mark.parametrize("est", [DescriptionRanker(), DescriptionFusion(FrequencyPrior())])
def test_estimator_contract(est):
    """The common checks that do not need a fit (the estimators need descriptions as fit parameters)."""
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.estimator_checks import (check_get_params_invariance,
                                                check_no_attributes_set_in_init, check_set_params)

    name = type(est).__name__
    check_no_attributes_set_in_init(name, est)
    check_get_params_invariance(name, est)
    check_set_params(name, est)
    assert clone(est).get_params().keys() == est.get_params().keys()
    with pytest.raises(NotFittedError):
        est.predict_proba(["text"])
    tags = est.__sklearn_tags__()
    assert tags.classifier_tags.multi_label and tags.input_tags.string
