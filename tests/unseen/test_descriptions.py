"""DescriptionRanker and DescriptionFusion: zero-shot labels ranked by their descriptions."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import Pipeline

from xplant.linear import FrequencyPrior, make_tfidf_logistic, predict_top_k
from xplant.unseen import FALLBACK_WEIGHT, DescriptionFusion, DescriptionRanker

LEGACY = Path(__file__).parent / "data" / "legacy_description_ranker"


def test_ranker_scores_are_tfidf_cosines():
    texts = ["red apple pie", "green apple", "blue sky"]
    Y = np.array([[1, 0], [1, 0], [0, 1]])
    desc = ["apple", "blue sky sea"]
    r = DescriptionRanker(vectorizer=TfidfVectorizer()).fit(texts, Y, label_descriptions=desc)
    oracle = TfidfVectorizer().fit(texts + desc)  # the same weights, fitted by hand
    D, L = oracle.transform(["apple sky"]), oracle.transform(desc)
    np.testing.assert_allclose(r.decision_function(["apple sky"]), (D @ L.T).toarray())
    assert r.label_texts_ == desc and r.decision_function(["nothing known"]).tolist() == [[0.0, 0.0]]


def test_sentence_passages_take_the_best_sentence():
    """passages: the best sentence's cosine, and "both" the mean with the whole document's."""
    texts = ["red apple pie", "green apple", "blue sky"]
    Y = np.array([[1, 0], [1, 0], [0, 1]])
    desc = ["apple", "blue sky sea"]
    doc = "Red pie today. Blue sky;\napple"
    oracle = TfidfVectorizer().fit(texts + desc)
    L = oracle.transform(desc)
    by_sentence = (oracle.transform(["Red pie today.", "Blue sky;", "apple"]) @ L.T).toarray()
    whole = (oracle.transform([doc]) @ L.T).toarray()[0]
    fits = {p: DescriptionRanker(vectorizer=TfidfVectorizer(), passages=p).fit(
        texts, Y, label_descriptions=desc) for p in ("document", "sentences", "both")}
    np.testing.assert_allclose(fits["document"].decision_function([doc])[0], whole)
    np.testing.assert_allclose(fits["sentences"].decision_function([doc])[0], by_sentence.max(0))
    np.testing.assert_allclose(fits["both"].decision_function([doc])[0],
                               (whole + by_sentence.max(0)) / 2)
    # "apple" alone in the last sentence: its best sentence matches the title exactly
    assert fits["sentences"].decision_function([doc])[0, 0] == pytest.approx(1.0)
    assert whole[0] < 0.6
    # one-sentence documents score the same under every setting
    one = ["apple sky"]
    for p in ("sentences", "both"):
        np.testing.assert_allclose(fits[p].decision_function(one), fits["document"].decision_function(one))
    with pytest.raises(ValueError, match="passages must be one of"):
        DescriptionRanker(passages="words").fit(texts, Y, label_descriptions=desc)


def test_zero_shot_label_in_top_3(zero_shot_corpus):
    texts, Y, test, Yt, desc = zero_shot_corpus
    assert Y[:, 6].nnz == 0
    r = DescriptionRanker().fit(texts, Y, label_descriptions=desc)
    top, _ = r.predict_top_k(test, 3)
    assert all(6 in row for row in top.tolist())
    # a linear model trained on Y cannot rank it, the fusion can
    lin = make_tfidf_logistic(C=10.0).fit(texts, Y)
    assert not any(6 in row for row in predict_top_k(lin, test, 3)[0].tolist())
    f = DescriptionFusion(make_tfidf_logistic(C=10.0), weight="dev", seen_weight=0.0).fit(
        texts, Y, label_descriptions=desc, validation_data=(test[:6], Yt[:6]))
    assert f.unseen_.tolist() == [6] and f.weight_ > 0
    assert f.dev_map_[(0.0, 0.0)] < f.dev_map_[(f.weight_, 0.0)]
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
    S = f.decision_function(["cough"])
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
    S = f.decision_function(["asthma attack"])
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
    from xplant.model_selection import NoDevDataWarning
    with pytest.warns(NoDevDataWarning, match="description_weights: no labelled dev data"):
        f = DescriptionFusion(FrequencyPrior()).fit(texts, Y, label_descriptions=["alpha", "gamma"])
    assert f.weight_ == FALLBACK_WEIGHT == 1.0 and f.dev_choice_["on_dev"] is False
    assert f.seen_weight_ == 0.0
    with pytest.raises(ValueError, match="seen_weight must be 'dev' or a non-negative number"):
        DescriptionFusion(FrequencyPrior(), seen_weight=-1).fit(texts, Y, label_descriptions=["a", "b"])
    with pytest.raises(ValueError, match="raw texts"):
        DescriptionRanker().fit(texts, Y, label_descriptions=["alpha", "gamma"]).decision_function([[1, 2]])


def test_ranker_saves_and_loads_without_pickle(tmp_path, zero_shot_corpus):
    from xplant.linear import load_linear, save_linear

    texts, Y, test, _, desc = zero_shot_corpus
    r = DescriptionRanker(ancestor_depth=1).fit(texts, Y, label_descriptions=desc,
                                                label_names=[f"L{j}" for j in range(7)])
    back = load_linear(save_linear(r, tmp_path / "ranker"))
    np.testing.assert_allclose(back.decision_function(test), r.decision_function(test))
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
        est.decision_function(["text"])
    tags = est.__sklearn_tags__()
    assert tags.classifier_tags.multi_label and tags.input_tags.string


def test_scores_rank_and_are_no_probabilities(zero_shot_corpus):
    """decision_function is the ranking score of both; neither offers predict_proba (a cosine
    and a floor + weight · cosine are no probabilities: the fused one passes 1)."""
    texts, Y, test, Yt, desc = zero_shot_corpus
    r = DescriptionRanker().fit(texts, Y, label_descriptions=desc)
    f = DescriptionFusion(make_tfidf_logistic(C=10.0), weight=3.0).fit(
        texts, Y, label_descriptions=desc)
    for est in (r, f):
        assert not hasattr(est, "predict_proba")
        with pytest.raises(AttributeError):
            est.predict_proba(test)
        S = est.decision_function(test)
        idx, sc = est.predict_top_k(test, 3)
        np.testing.assert_array_equal(idx, np.argsort(-S, 1, kind="stable")[:, :3])
        np.testing.assert_array_equal(sc, np.take_along_axis(S, idx, 1))
    assert f.decision_function(test).max() > 1.0


def test_moved_names_say_where_they_went():
    import xplant
    import xplant.linear as linear
    for name in ("DescriptionRanker", "DescriptionFusion", "FUSION_WEIGHTS"):
        with pytest.raises(ImportError, match=f"xplant.linear.{name} moved to xplant.unseen.{name}"):
            getattr(linear, name)
        with pytest.raises(ImportError, match=f"from xplant.unseen import {name}"):
            exec(f"from xplant.linear import {name}", {})
    assert "DescriptionRanker" not in linear.__all__ and "unseen" in xplant.__all__
    assert xplant.DescriptionRanker is DescriptionRanker
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        linear.Nothing


def test_a_ranker_saved_under_xplant_linear_predicts_the_same():
    """The folder saved by the commit where the class was xplant.linear.DescriptionRanker."""
    from xplant import load_saved
    from xplant.linear import load_linear
    texts = json.loads((LEGACY / "inputs.json").read_text())
    expected = np.load(LEGACY / "expected.npz")
    for model in (load_saved(LEGACY / "model")[0], load_linear(LEGACY / "model")):
        assert type(model) is DescriptionRanker
        assert model.passages == "document"     # saved before passages existed: whole documents
        np.testing.assert_array_equal(model.decision_function(texts), expected["decision_function"])
        idx, sc = model.predict_top_k(texts, 3)
        np.testing.assert_array_equal(idx, expected["top_k_indices"])
        np.testing.assert_array_equal(sc, expected["top_k_scores"])
    decision = load_saved(LEGACY / "model")[1]
    assert {k: decision[k] for k in ("rule", "k", "threshold")} == {"rule": "top_k", "k": 2,
                                                                   "threshold": 0.0}
    assert decision.get("thresholds") is None     # no per-label thresholds in an old folder


def test_load_linear_names_the_subpackage_it_needs():
    """In a fresh interpreter: load_linear alone asks for xplant.unseen; load_saved imports it."""
    code = ("import sys\nfrom xplant.linear import load_linear\n"
            "try:\n    load_linear(sys.argv[1])\nexcept ValueError as e:\n    print(e)\n"
            "from xplant import load_saved\nprint(type(load_saved(sys.argv[1])[0]).__name__)")
    out = subprocess.run([sys.executable, "-c", code, str(LEGACY / "model")], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).parents[2]).stdout
    assert "'description_ranker' step of xplant.unseen: import xplant.unseen first" in out
    assert out.strip().endswith("DescriptionRanker")


@pytest.fixture(scope="module")
def saved_fusion(zero_shot_corpus, tmp_path_factory):
    """A DescriptionFusion over a TF-IDF + LR, its unseen labels' weight chosen on dev, saved
    with a per-label rule; (folder, fusion, decision, test texts)."""
    from xplant.unseen import save_description_fusion
    texts, Y, test, Yt, desc = zero_shot_corpus
    folder = tmp_path_factory.mktemp("saved") / "fusion"
    f = DescriptionFusion(make_tfidf_logistic(C=10.0), seen_weight=0.3).fit(
        texts, Y, label_descriptions=desc, label_names=[f"L{j}" for j in range(7)],
        validation_data=(test[:6], Yt[:6]))
    decision = {"rule": "per_label_threshold", "k": 3, "threshold": 0.5,
                "thresholds": np.linspace(0.1, 0.7, 7) + 1e-17 * np.pi}
    f.decision_rule_ = decision
    save_description_fusion(f, folder)
    return folder, f, decision, test


def test_description_fusion_saved_and_loaded_scores_to_the_bit(saved_fusion, tmp_path):
    """load_saved gives back the fusion (its model, ranker, weights, unseen labels) and the
    saved rule; scores, rankings and decisions equal the fitted object's exactly; JSON and
    safetensors only."""
    from xplant import load_saved
    from xplant._saved import decide
    from xplant.linear import save_linear
    folder, f, decision, test = saved_fusion
    g, rule = load_saved(folder)
    assert type(g) is DescriptionFusion and g is not f
    assert (g.weight_, g.seen_weight_, g.k_) == (f.weight_, f.seen_weight_, f.k_)
    assert g.unseen_.tolist() == f.unseen_.tolist() == [6]
    assert g.dev_map_ == f.dev_map_ and g.dev_choice_ == f.dev_choice_
    assert g.classes_.tolist() == f.classes_.tolist() and (g.weight, g.seen_weight) == ("dev", 0.3)
    np.testing.assert_array_equal(g.decision_function(test), f.decision_function(test))
    for a, b in zip(g.predict_top_k(test, 4), f.predict_top_k(test, 4)):
        np.testing.assert_array_equal(a, b)
    assert (g.predict(test) != f.predict(test)).nnz == 0     # sparse, as Y was
    assert rule["rule"] == "per_label_threshold" and rule["k"] == 3 and rule["threshold"] == 0.5
    np.testing.assert_array_equal(rule["thresholds"], decision["thresholds"])  # float64, exactly
    assert (decide(g, test, rule) != decide(f, test, decision)).nnz == 0
    assert g.decision_rule_ == f.decision_rule_           # the rule is a part of the model
    assert (g.predict(test) != decide(g, test, rule)).nnz == 0     # and predict applies it
    # the model is a copy in its own format, loadable alone; no pickle anywhere
    assert sorted(p.name for p in folder.iterdir()) == \
        ["arrays.safetensors", "config.json", "estimator"]
    inner, _ = load_saved(folder / "estimator")
    np.testing.assert_array_equal(inner.predict_proba(test), f.estimator_.predict_proba(test))
    assert {p.suffix for p in folder.rglob("*") if p.is_file()} == {".json", ".safetensors"}
    # save_linear saves the ranker, not the fusion, and says where the fusion goes
    with pytest.raises(TypeError, match="cannot save DescriptionFusion.*save_description_fusion"):
        save_linear(f, tmp_path / "never-written")
    assert not (tmp_path / "never-written").exists()


def test_a_saved_description_fusion_loads_the_same_in_a_fresh_interpreter(saved_fusion,
                                                                          tmp_path):
    folder, f, decision, test = saved_fusion
    (tmp_path / "test.json").write_text(json.dumps(test))
    code = ("import sys, json, numpy as np\nfrom xplant import load_saved\n"
            "m, d = load_saved(sys.argv[1])\nt = json.load(open(sys.argv[2]))\n"
            "np.savez(sys.argv[3], s=m.decision_function(t), i=m.predict_top_k(t, 4)[0], "
            "th=d['thresholds'])")
    subprocess.run([sys.executable, "-c", code, str(folder),
                    str(tmp_path / "test.json"), str(tmp_path / "out.npz")], check=True,
                   cwd=Path(__file__).parents[2])
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_array_equal(z["s"], f.decision_function(test))
        np.testing.assert_array_equal(z["i"], f.predict_top_k(test, 4)[0])
        np.testing.assert_array_equal(z["th"], decision["thresholds"])


def test_a_damaged_description_fusion_folder_names_the_file(saved_fusion, zero_shot_corpus,
                                                            tmp_path):
    """Unseen labels that are not the labels of frequency 0, a model of other labels: errors
    naming config.json, before anything predicts; a fusion whose labels are not its model's,
    or a rule of another length, is refused before anything is written."""
    import shutil
    from xplant import load_saved
    from xplant.unseen import save_description_fusion
    from safetensors.numpy import load_file, save_file
    _, f, _, _ = saved_fusion
    save_description_fusion(f, tmp_path / "fusion")
    arrays = load_file(tmp_path / "fusion" / "arrays.safetensors")
    save_file(dict(arrays, unseen=np.array([5], dtype=np.int64)),
              tmp_path / "fusion" / "arrays.safetensors")
    with pytest.raises(ValueError, match="config.json.*unseen labels are not the labels of "
                                         "training frequency 0"):
        load_saved(tmp_path / "fusion")
    save_description_fusion(f, tmp_path / "fusion", overwrite=True)
    texts, Y, *_ = zero_shot_corpus
    other = make_tfidf_logistic(C=10.0).fit(texts, Y, ovr__label_names=[f"M{j}" for j in range(7)])
    shutil.rmtree(tmp_path / "fusion" / "estimator")
    from xplant.linear import save_linear
    save_linear(other, tmp_path / "fusion" / "estimator")
    with pytest.raises(ValueError, match="config.json.*the model in estimator/ has 7 labels that "
                                         "are not the fusion's 7 labels"):
        load_saved(tmp_path / "fusion")
    # refused before writing: a fusion fitted without the names of its model's labels
    from sklearn.frozen import FrozenEstimator
    unnamed = DescriptionFusion(FrozenEstimator(other), weight=1.0, seen_weight=0.0).fit(
        texts, Y, label_descriptions=zero_shot_corpus[4])
    with pytest.raises(ValueError, match="column 0 is 'M0' there, '0' here; fit it with "
                                         "label_names"):
        save_description_fusion(unnamed, tmp_path / "bad")
    config = json.loads((tmp_path / "fusion" / "config.json").read_text())
    with pytest.raises(ValueError, match="thresholds"):      # refused when it is set
        f.decision_rule_ = {"rule": "per_label_threshold", "k": 3, "threshold": 0.5,
                            "thresholds": [0.1] * 6}
    assert f.decision_rule_.thresholds.size == 7            # the rule set before stays
    assert not (tmp_path / "bad").exists() and config["format"] == "xplant-description-fusion-1"


def test_seen_weight_adds_the_cosine_to_the_seen_labels_and_is_chosen_with_the_weight():
    """Three sources: model + b·cos on the seen labels, floor + w·cos on the unseen ones
    (an oracle in plain numpy), and the pair is chosen on dev over the grids' product."""
    from xplant.linear import FrequencyPrior
    from xplant.unseen import FUSION_WEIGHTS, SEEN_WEIGHTS
    texts = ["chest pain and fever", "broken left arm", "fever and cough", "arm pain"]
    Y = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]])
    desc = ["fever", "fracture of arm", "cough", "pain in the chest"]
    f = DescriptionFusion(FrequencyPrior(), weight=0.5, seen_weight=0.3).fit(
        texts, Y, label_descriptions=desc)
    new = ["a dry cough and fever", "chest pain"]
    base = f.estimator_.predict_proba(new)
    cos = f.ranker_.decision_function(new)
    seen, unseen = [0, 1], [2, 3]
    want = np.zeros((2, 4))
    want[:, seen] = base[:, seen] + 0.3 * cos[:, seen]
    want[:, unseen] = want[:, seen].min(1, keepdims=True) + 0.5 * cos[:, unseen]
    np.testing.assert_allclose(f.decision_function(new), want, rtol=0, atol=1e-12)
    # seen_weight=0 is the two-source fusion of before, to the bit
    g = DescriptionFusion(FrequencyPrior(), weight=0.5, seen_weight=0.0).fit(
        texts, Y, label_descriptions=desc)
    old = base.copy()
    old[:, unseen] = base[:, seen].min(1, keepdims=True) + 0.5 * cos[:, unseen]
    assert np.array_equal(g.decision_function(new), old)
    # "dev" for both: every pair of the two grids is scored, the best one kept
    Yd = np.array([[1, 0, 1, 0], [0, 0, 0, 1]])
    h = DescriptionFusion(FrequencyPrior()).fit(texts, Y, label_descriptions=desc,
                                                validation_data=(new, Yd))
    assert len(h.dev_map_) == len(FUSION_WEIGHTS) * len(SEEN_WEIGHTS)
    best = max(h.dev_map_.values())
    assert h.dev_map_[(h.weight_, h.seen_weight_)] == best
    assert h.dev_choice_["name"] == "description_weights"
    # ties keep the smallest pair: no smaller pair reaches the best score
    assert all(v < best for (w, b), v in h.dev_map_.items() if (w, b) < (h.weight_, h.seen_weight_))


def test_fusion_takes_label_lists_like_its_ranker():
    """Y as label lists (the form predict answers in), as every xplant estimator takes it."""
    texts = ["chest pain and fever", "broken left arm", "fever and cough"]
    lists = [["fever"], ["fracture"], ["fever"]]
    desc = ["fever", "fracture of arm", "cough"]
    f = DescriptionFusion(FrequencyPrior(), weight=1.0, seen_weight=0.0).fit(
        texts, lists, label_names=["fever", "fracture", "cough"], label_descriptions=desc)
    g = DescriptionFusion(FrequencyPrior(), weight=1.0, seen_weight=0.0).fit(
        texts, np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]]), label_descriptions=desc)
    assert f.k_ == g.k_ == 1 and f.unseen_.tolist() == [2]
    np.testing.assert_array_equal(f.decision_function(["a dry cough"]),
                                  g.decision_function(["a dry cough"]))


def test_description_field_lets_the_description_source_read_a_translation(tmp_path):
    """The model reads the text (Spanish here), the description source the field in the
    descriptions' language: an unseen label's description (English) reaches it only
    through that field; the fusion equals the one fitted on the translation alone wherever
    the model does not read the text; the explained sentence names its field; saved and
    loaded, the scores stay to the bit; a document without the field is refused by name."""
    from xplant import load_saved
    from xplant.unseen import save_description_fusion
    es = ["dolor torácico y fiebre", "fractura del brazo izquierdo", "fiebre y tos"]
    en = ["chest pain and fever", "broken left arm", "fever and cough"]
    Y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    desc = ["fever", "fracture of arm", "cough"]
    docs = [{"text": s, "text_en": e} for s, e in zip(es, en)]
    f = DescriptionFusion(FrequencyPrior(), weight=1.0, seen_weight=0.0,
                          description_field="text_en").fit(docs, Y, label_descriptions=desc)
    new = [{"text": "tos seca por la noche", "text_en": "A dry cough at night."}]
    assert f.predict_top_k(new, 1)[0].tolist() == [[2]]           # R05 cough, never seen
    # the same fusion reading the Spanish for its descriptions cannot find the cough
    g = DescriptionFusion(FrequencyPrior(), weight=1.0, seen_weight=0.0).fit(
        es, Y, label_descriptions=desc)
    assert g.decision_function(["tos seca por la noche"])[0, 2] == pytest.approx(
        g.decision_function(["tos seca por la noche"])[0, :2].min())   # cosine 0: the floor
    # a prior reads no text: the fusion is the one fitted on the translation alone
    h = DescriptionFusion(FrequencyPrior(), weight=1.0, seen_weight=0.0).fit(
        en, Y, label_descriptions=desc)
    np.testing.assert_array_equal(f.decision_function(new),
                                  h.decision_function(["A dry cough at night."]))
    ex = f.explain(new, labels=[[2]])[0]["labels"][0]
    assert ex["source"] == "descriptions"
    assert [(s["text"], s["field"]) for s in ex["spans"]] == [("A dry cough at night.", "text_en")]
    with pytest.raises(ValueError, match=r"X\[0\] has no text field 'text_en', which "
                                         r"description_field"):
        f.decision_function(["tos seca"])
    with pytest.raises(ValueError, match=r"X\[1\] has no text field 'text_en'"):
        DescriptionFusion(FrequencyPrior(), description_field="text_en").fit(
            [docs[0], {"text": "x"}, docs[2]], Y, label_descriptions=desc)
    save_description_fusion(f, tmp_path / "fusion")
    loaded, _ = load_saved(tmp_path / "fusion")
    assert loaded.description_field == "text_en"
    np.testing.assert_array_equal(loaded.decision_function(new), f.decision_function(new))
