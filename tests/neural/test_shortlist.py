"""PlantClassifier with a shortlist: candidate Stage 2 and fusion."""

import copy

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from xplant.linear import make_tfidf_ovr, predict_top_k
from xplant.metrics import get_scorer
from xplant.neural import AttentionPlanter, PlantClassifier
from xplant.neural.backbones import build_backbone
from xplant.neural.modules import PlantNet
from xplant.relevance import MIGRelevance


@pytest.fixture(scope="module")
def corpus(make_corpus):
    return make_corpus(n_docs=90, n_labels=12, seed=3)


@pytest.fixture(scope="module")
def fused(small, corpus):
    texts, Y = corpus
    clf = small(shortlist="linear", n_candidates=4, max_epochs=3).fit(texts, Y)
    return clf, texts, Y


@pytest.mark.parametrize("head", ["shared", "labelwise"])
def test_candidate_logits_equal_full_logits(head):
    """Exactness: the (b, C) path gives the full model's logits at those labels."""
    torch.manual_seed(0)
    rel = MIGRelevance(top_k=5).fit(["a b c d e f g h"] * 3, np.eye(3, dtype=int))
    enc = build_backbone("cnn", relevance=rel, embedding_dim=8, hidden_dim=12, kernel_size=3,
                         dropout=0.0, glove=False, lora=None)
    net = PlantNet(enc, 50, attention_dim=12, pool_size=6, head=head, label_chunk=7).eval()
    with torch.no_grad():
        for p in (net.boost_add, net.boost_mul, net.label_bias):
            p.normal_()
    ids = torch.randint(2, len(rel.vocabulary_), (3, 9))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 6:] = False
    cand = torch.stack([torch.randperm(50)[:11] for _ in range(3)])
    with torch.no_grad():
        full = net(ids, mask)
        part = net(ids, mask, candidates=cand)
    assert part.shape == (3, 11)
    np.testing.assert_allclose(part.numpy(), full.gather(1, cand).numpy(), atol=1e-5)


def test_fused_outputs_agree_and_keep_shape(fused):
    clf, texts, Y = fused
    P = clf.predict_proba(texts[:8])
    assert P.shape == (8, Y.shape[1]) and P.dtype == np.float32
    assert ((P > 0) & (P < 1)).all()
    idx, sc = clf.predict_top_k(texts[:8], k=7)          # k > C: tail included
    np.testing.assert_array_equal(idx, np.argsort(-P, 1, kind="stable")[:, :7])
    np.testing.assert_allclose(sc, np.take_along_axis(P, idx, 1), rtol=1e-5)
    assert 0.0 <= clf.fusion_weight_ <= 1.0
    assert {"valid_fusion_weight", "valid_fused_map", "valid_map"} <= set(clf.history[-1])
    # early stopping follows PLANT alone; the fused score is at least the shortlist's
    # the α is chosen once, after the fit: recorded on the last row only, as fusion_weight_
    assert [("valid_fusion_weight" in h) for h in clf.history][:-1] == [False] * (len(clf.history) - 1)
    assert clf.history[-1, "valid_fusion_weight"] == clf.fusion_weight_
    assert clf.history[-1, "valid_fused_map"] == max(v for _, v in
                                                     clf.dev_choices_["fusion"]["scores"])
    assert clf.shortlist_info_["C"] in (1.0, 10.0)


def test_fusion_choice_scores_candidates_only_and_equals_the_dense_map(small, corpus,
                                                                      monkeypatch):
    """α and the calibration are scored from the (n_dev, C) candidates (no (n_dev, L) array
    per pair), and each score equals the MAP of the dense fused scores (the oracle)."""
    import xplant.neural.classifier._shortlist as mod
    from xplant.fusion import tail_factor
    from xplant.metrics import mean_average_precision
    from xplant.neural import PlantClassifier
    texts, Y = corpus
    with monkeypatch.context() as m:                    # keep the dev view for the oracle
        m.setattr(PlantClassifier, "_release_dev_split", lambda self: None)
        clf = small(shortlist="linear", n_candidates=4, max_epochs=3).fit(texts, Y)
    stage = clf.shortlist_training_
    cand, s, rank = stage.dev_view
    p_net = mod.sigmoid(clf._network().candidate_logits(clf.dev_docs_, cand, tau=0.0))
    dense_builds = []
    import xplant.neural.parts._shortlist_fusion as fusion_part     # the one caller of fuse for a pair
    real_fuse = fusion_part.fuse

    def counting_fuse(sources, **kw):
        dense_builds.append(kw.get("n_labels"))
        return real_fuse(sources, **kw)
    monkeypatch.setattr(fusion_part, "fuse", counting_fuse)
    choice = stage.best_fusion(p_net, clf.fusion, clf.scoring, clf.dev_Y_)
    assert len(dense_builds) == len(choice.scores) > 1 and set(dense_builds) == {None}
    monkeypatch.undo()
    factor = tail_factor(rank)
    dense = [mean_average_precision(clf.dev_Y_, fusion_part.fuse_pair(
        (mod.calibrate(s, ab), None), (p_net, None), alpha, cand, factor, clf.n_labels_))
        for (alpha, ab), _ in choice.scores]
    np.testing.assert_allclose([v for _, v in choice.scores], dense, rtol=1e-12, atol=0)
    assert choice.value == choice.scores[int(np.argmax(dense))][0]
    assert choice.value == (clf.fusion_weight_, tuple(clf.shortlist_calibration_))


def test_decision_function_is_the_logit_of_the_fused_probability(fused):
    """One meaning per method: predict_proba a probability, decision_function its logit, which
    ranks (ties too) as predict_proba and predict_top_k do."""
    from xplant.fusion import logit, sigmoid
    clf, texts, _ = fused
    P, Z = clf.predict_proba(texts[:8]), clf.decision_function(texts[:8])
    assert Z.dtype == np.float64 and np.isfinite(Z).all()
    np.testing.assert_array_equal(Z, logit(P))
    np.testing.assert_allclose(sigmoid(Z), P, rtol=1e-12)
    np.testing.assert_array_equal(np.argsort(-Z, 1, kind="stable"), np.argsort(-P, 1, kind="stable"))
    np.testing.assert_array_equal(clf.predict_top_k(texts[:8], k=7)[0],
                                  np.argsort(-Z, 1, kind="stable")[:, :7])


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_fusion_ends(fused, alpha):
    """α = 1 is the shortlist's ranking; α = 0 PLANT's own, on the candidates."""
    clf, texts, _ = fused
    c = clone(clf)
    c.__dict__.update({k: v for k, v in clf.__dict__.items() if k.endswith("_")})
    c.parts_ = dict(clf.parts_, shortlist_fusion=copy.copy(clf.parts_["shortlist_fusion"]))
    c.parts_["shortlist_fusion"].weight = alpha
    idx, _ = c.predict_top_k(texts[:10], k=4)
    s_idx, _ = predict_top_k(clf.shortlist_, texts[:10], 4)
    if alpha == 1.0:
        np.testing.assert_array_equal(idx, s_idx)
    else:
        docs = clf._docs(texts[:10])
        full = clf._network().logits(docs)
        own = np.take_along_axis(full, s_idx, 1)
        expect = np.take_along_axis(s_idx, np.argsort(-own, 1, kind="stable"), 1)
        np.testing.assert_array_equal(idx, expect)


def test_candidate_training_steps_never_build_full_label_tensors(small, corpus, monkeypatch):
    texts, Y = corpus
    seen = []
    orig = PlantNet._logits

    def spy(self, *a, **k):
        seen.append("full")
        return orig(self, *a, **k)
    monkeypatch.setattr(PlantNet, "_logits", spy)
    clf = small(shortlist="linear", n_candidates=3, max_epochs=2, validation_fraction=None,
                fusion=0.5, stage1_weight=0.1).fit(texts, Y)
    assert seen == []
    assert clf.fusion_weight_ == 0.5


def test_pipeline_passes_raw_texts_to_the_shortlist(tiny, corpus):
    texts, Y = corpus
    pipe = Pipeline([("mig", MIGRelevance(top_k=10)),
                     ("clf", PlantClassifier(**tiny, plant=False, max_epochs=2,
                                             shortlist=make_tfidf_ovr(C=1.0, min_df=1),
                                             n_candidates=5))])
    pipe.fit(texts, Y)
    corpus_ = pipe[0].transform(texts[:4])
    assert corpus_.texts == texts[:4] and corpus_[1:3].texts == texts[1:3]
    clf = pipe[-1]
    s_idx, _ = predict_top_k(clf.shortlist_, texts[:4], 5)
    cand, _, _ = clf.parts_["shortlist_fusion"].rank(texts[:4], clf.n_labels_)
    np.testing.assert_array_equal(cand, s_idx)       # the shortlist read the raw texts
    assert pipe.predict_proba(texts[:4]).shape == (4, Y.shape[1])


def test_clone_and_grid_search_over_n_candidates(tiny, corpus):
    texts, Y = corpus
    est = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist="linear",
                          n_candidates=3, fusion=0.5)
    assert clone(est).get_params()["n_candidates"] == 3
    gs = GridSearchCV(est, {"n_candidates": [2, 6]}, cv=2,
                      scoring=get_scorer("precision_at_1")).fit(texts, Y.toarray())
    assert gs.best_params_["n_candidates"] in (2, 6)
    assert gs.best_estimator_.n_candidates_ == gs.best_params_["n_candidates"]


def test_bad_shortlist_settings(tiny, corpus):
    texts, Y = corpus
    with pytest.raises(ValueError, match="cannot rank"):
        PlantClassifier(**tiny, shortlist=object()).fit(texts, Y)
    fitted = make_tfidf_ovr(min_df=1).fit(texts, Y)
    with pytest.raises(ValueError, match="already fitted"):
        PlantClassifier(**tiny, shortlist=fitted).fit(texts, Y)
    with pytest.raises(ValueError, match="n_candidates"):
        PlantClassifier(**tiny, shortlist="linear", n_candidates=0).fit(texts, Y)
    with pytest.raises(ValueError, match="fusion"):
        PlantClassifier(**tiny, shortlist="linear", fusion=1.5).fit(texts, Y)
    with pytest.raises(ValueError, match="shortlist must be"):
        PlantClassifier(**tiny, shortlist="svm").fit(texts, Y)
    with pytest.warns(UserWarning, match="n_candidates=99"):
        clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist="linear",
                              n_candidates=99).fit(texts, Y)
    assert clf.n_candidates_ == Y.shape[1]


def test_fusion_dev_without_dev_data_warns(tiny, corpus):
    from xplant.model_selection import NoDevDataWarning
    texts, Y = corpus
    with pytest.warns(NoDevDataWarning, match=r"fusion=\[0\.5, \[1\.0, 0\.0\]\]"):
        clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist="linear",
                              n_candidates=4, validation_fraction=None).fit(texts, Y)
    assert clf.fusion_weight_ == 0.5 and clf.shortlist_calibration_ == (1.0, 0.0)
    assert clf.dev_choices_["fusion"]["on_dev"] is False


def test_out_of_fold_candidates(tiny, corpus):
    texts, Y = corpus
    clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist="linear",
                          n_candidates=4, shortlist_cv=3).fit(texts, Y)
    assert clf.predict_proba(texts[:3]).shape == (3, Y.shape[1])
    with pytest.raises(ValueError, match="shortlist_cv"):
        PlantClassifier(**tiny, shortlist="linear", shortlist_cv=1).fit(texts, Y)


def test_save_load_with_shortlist(fused, tmp_path):
    clf, texts, _ = fused
    clf.save(tmp_path / "m")
    assert (tmp_path / "m" / "shortlist" / "fusion.json").is_file()
    back = PlantClassifier.load(tmp_path / "m")
    np.testing.assert_allclose(back.predict_proba(texts[:6]), clf.predict_proba(texts[:6]),
                               rtol=1e-6)
    assert back.fusion_weight_ == clf.fusion_weight_ and back.n_candidates_ == 4
    a, b = back.predict_top_k(texts[:6], 3), clf.predict_top_k(texts[:6], 3)
    np.testing.assert_array_equal(a[0], b[0])


def test_unsaveable_shortlist_names_itself(tiny, corpus, tmp_path):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from xplant.linear import OneVsRestLinear
    texts, Y = corpus
    custom = Pipeline([("tfidf", TfidfVectorizer(tokenizer=str.split, token_pattern=None)),
                       ("ovr", OneVsRestLinear())])
    clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist=custom,
                          n_candidates=4).fit(texts, Y)
    with pytest.raises(TypeError, match="shortlist cannot be saved: cannot save TfidfVectorizer"):
        clf.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()
    # a checkpoint keeps the shortlist too: fit says so, and how to do without
    ckpt = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist=custom, n_candidates=4,
                           checkpoint_dir=tmp_path / "ckpt")
    with pytest.raises(TypeError, match="checkpoint_dir keeps the fitted shortlist, and this "
                                        "PlantClassifier's shortlist cannot be saved.*"
                                        "checkpoint_dir=None"):
        ckpt.fit(texts, Y)


@pytest.mark.parametrize("texts", [["one lone document"], ["alpha beta", "gamma delta"]])
def test_linear_shortlist_without_vocabulary_says_why(tiny, texts):
    """Too few documents for the TF-IDF's min_df=2: the error names the shortlist."""
    Y = sp.csr_matrix(np.ones((len(texts), 2), dtype=np.int64))
    clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist="linear",
                          n_candidates=None, validation_fraction=None)
    with pytest.raises(ValueError, match=r"shortlist='linear' could not build its TF-IDF "
                                         rf"vocabulary from the {len(texts)} training"):
        clf.fit(texts, Y)


def test_resume_loads_the_fitted_shortlist(small, corpus, tmp_path, monkeypatch):
    from xplant.neural.parts import _shortlist_fusion as _fusion_part
    texts, Y = corpus
    params = dict(shortlist="linear", n_candidates=4, max_epochs=2,
                  checkpoint_dir=str(tmp_path / "ck"))
    first = small(**params).fit(texts, Y)
    assert (tmp_path / "ck" / "shortlist" / "train_ranking.safetensors").is_file()

    def refit(*a, **k):
        raise AssertionError("a resumed fit refitted the shortlist")
    monkeypatch.setattr(_fusion_part, "fit_shortlist", refit)
    again = small(**params).fit(texts, Y, resume=True)     # the fit had completed
    assert len(again.history) == len(first.history)
    assert again.shortlist_info_["C"] == first.shortlist_info_["C"]
    np.testing.assert_allclose(again.predict_proba(texts[:5]), first.predict_proba(texts[:5]),
                               rtol=1e-6)
    # another kind of shortlist than the checkpoint's is refused, not silently replaced
    from xplant.linear import FrequencyPrior
    with pytest.raises(ValueError, match="shortlist at .* is a OneVsRestLinear, this fit's is a "
                                         "FrequencyPrior; give the interrupted fit's parameters"):
        small(**{**params, "shortlist": FrequencyPrior()}).fit(texts, Y, resume=True)


def test_xplant_predict_answers_with_fused_labels(fused, tmp_path):
    import json
    from xplant.app.cli import main
    clf, texts, _ = fused
    clf.save(tmp_path / "model")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                            for i, t in enumerate(texts[:4])))
    assert main(["predict", "--model", str(tmp_path / "model"), "--input", str(docs),
                 "--output", str(tmp_path / "pred.jsonl"), "--top-k", "3"]) == 0
    recs = [json.loads(line) for line in (tmp_path / "pred.jsonl").read_text().splitlines()]
    idx, _ = clf.predict_top_k(texts[:4], 3)
    assert [[t["label"] for t in r["top"]] for r in recs] == \
        [[str(clf.classes_[j]) for j in row] for row in idx]


def test_frozen_shortlist_is_used_as_it_is(tiny, corpus, tmp_path, monkeypatch):
    """FrozenEstimator(fitted model): never refitted, ranks as the model, saved and loaded."""
    from sklearn.frozen import FrozenEstimator
    from xplant.neural import load_model
    texts, Y = corpus
    tr, te = texts[:70], texts[70:]
    model = make_tfidf_ovr(min_df=1, random_state=0).fit(tr, Y[:70])

    def refit(*a, **k):
        raise AssertionError("a frozen shortlist was refitted")
    monkeypatch.setattr(type(model), "fit", refit)
    clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist=FrozenEstimator(model),
                          n_candidates=4, fusion=1.0, validation_fraction=None).fit(tr, Y[:70])
    monkeypatch.undo()
    assert clf.shortlist_ is model and clf.shortlist_info_ == {"frozen": True}
    # alpha = 1: the frozen model's own ranking among each document's candidates
    top = clf.predict_top_k(te, 4)[0]
    np.testing.assert_array_equal(top, predict_top_k(model, te, 4)[0])
    assert clone(clf).shortlist.estimator is model          # clone keeps the frozen model
    clf.save(tmp_path / "m")
    back = load_model(tmp_path / "m")
    np.testing.assert_allclose(back.predict_proba(te), clf.predict_proba(te), rtol=1e-6)
    # a loaded model's parameter is an unfitted clone: a refit fits it on the new rows
    assert type(back.shortlist).__name__ == "Pipeline"


def test_frozen_shortlist_errors(tiny, corpus):
    from sklearn.frozen import FrozenEstimator
    texts, Y = corpus
    with pytest.raises(ValueError, match="unfitted model"):
        PlantClassifier(**tiny, shortlist=FrozenEstimator(make_tfidf_ovr())).fit(texts, Y)
    other = make_tfidf_ovr(min_df=1).fit(texts, Y[:, :5])
    with pytest.raises(ValueError, match="ranks 5 labels but Y has 12"):
        PlantClassifier(**tiny, shortlist=FrozenEstimator(other), n_candidates=4).fit(texts, Y)


def test_estimator_shortlist_saves_and_loads(tiny, corpus, tmp_path):
    """An unfitted estimator as ``shortlist`` (not "linear") survives save and load."""
    from xplant.neural import load_model
    texts, Y = corpus
    clf = PlantClassifier(**tiny, plant=False, max_epochs=1, n_candidates=4,
                          shortlist=make_tfidf_ovr(C=3.0, min_df=1)).fit(texts, Y)
    clf.save(tmp_path / "m")
    back = load_model(tmp_path / "m")
    np.testing.assert_allclose(back.predict_proba(texts[:5]), clf.predict_proba(texts[:5]),
                               rtol=1e-6)
    assert back.shortlist.named_steps["ovr"].C == 3.0
    refit = clone(back).fit(texts, Y)                       # the loaded parameter can refit
    assert refit.shortlist_ is not back.shortlist_


def test_dense_target_shortlists_get_dense_y(tiny, corpus):
    """A shortlist that needs a dense target gets Y.toarray(), so sparse and dense Y agree.

    KNeighborsClassifier misreads a sparse Y without a word, RandomForest
    refuses it; both have the multi-output (list) predict_proba.
    """
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.neighbors import KNeighborsClassifier
    texts, Y = corpus
    for final in (KNeighborsClassifier(3), RandomForestClassifier(n_estimators=3, random_state=0)):
        ranker = Pipeline([("tfidf", TfidfVectorizer()), ("clf", final)])
        oracle = clone(ranker).fit(texts, Y.toarray())
        P = [PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist=ranker, n_candidates=3,
                             fusion=1.0, validation_fraction=None).fit(texts, y)
             .predict_proba(texts[:10]) for y in (Y, Y.toarray())]
        np.testing.assert_array_equal(P[0], P[1])
        # α = 1: each document's top 3 are the dense-fitted ranker's
        np.testing.assert_array_equal(np.argsort(-P[0], 1, kind="stable")[:, :3],
                                      predict_top_k(oracle, texts[:10], 3)[0])


def test_frozen_shortlist_must_match_the_training_rows(tiny, corpus):
    """A frozen model that saw the validation_fraction dev rows, or other columns, is refused."""
    from sklearn.frozen import FrozenEstimator
    texts, Y = corpus
    seen_dev = make_tfidf_ovr(min_df=1).fit(texts, Y)
    with pytest.raises(ValueError, match="fitted on 90 documents but this fit trains on 81"):
        PlantClassifier(**tiny, shortlist=FrozenEstimator(seen_dev), n_candidates=4).fit(texts, Y)
    perm = np.r_[1, 0, 2:Y.shape[1]]
    swapped = make_tfidf_ovr(min_df=1).fit(texts, Y[:, perm])
    with pytest.raises(ValueError, match="label frequencies differ"):
        PlantClassifier(**tiny, shortlist=FrozenEstimator(swapped), n_candidates=4,
                        validation_fraction=None).fit(texts, Y)


def test_fresh_fit_replaces_and_resume_checks_the_checkpoint_shortlist(small, corpus, tmp_path):
    texts, Y = corpus
    params = dict(shortlist="linear", n_candidates=4, max_epochs=1, plant=False,
                  checkpoint_dir=str(tmp_path / "ck"))
    small(**params).fit(texts, Y)
    again = small(**dict(params, n_candidates=None)).fit(texts, Y)     # resume=False: replaced
    assert again.n_candidates_ == Y.shape[1]
    assert not (tmp_path / "ck" / "shortlist" / "train_ranking.safetensors").exists()
    with pytest.raises(ValueError, match="made for n_candidates=12, this fit has 4"):
        small(**params).fit(texts, Y, resume=True)


def test_nan_parameters_are_refused(tiny, corpus):
    texts, Y = corpus
    for name in ("fusion", "lr", "stage1_weight"):
        with pytest.raises(ValueError, match=f"{name}=nan is NaN"):
            PlantClassifier(**{**tiny, name: float("nan")}, shortlist="linear").fit(texts, Y)


def test_top_k_past_the_candidates_asks_the_shortlist_for_k_labels(fused, monkeypatch):
    """k > C: the shortlist ranks k labels (not all L), and the order is predict_proba's."""
    from xplant.neural.parts import _shortlist_fusion as _shortlisted
    clf, texts, Y = fused
    P = clf.predict_proba(texts[:8])
    asked = []

    def spy(model, t, k):
        asked.append(k)
        return predict_top_k(model, t, k)
    monkeypatch.setattr(_shortlisted, "rank_labels", spy)
    idx, sc = clf.predict_top_k(texts[:8], k=6)
    assert asked == [6] and Y.shape[1] == 12
    np.testing.assert_array_equal(idx, np.argsort(-P, 1, kind="stable")[:, :6])
    np.testing.assert_allclose(sc, np.take_along_axis(P, idx, 1), rtol=1e-5)


def test_fusion_scores_refuses_weights_outside_0_1(fused):
    clf, texts, _ = fused
    for bad in (1.5, -0.1, float("nan"), "dev"):
        with pytest.raises(ValueError, match="each of alphas"):
            clf.fusion_scores(texts[:2], [0.0, bad])


def test_valid_loss_on_test_time_candidates(tiny, corpus):
    """n_candidates < L: valid_loss is the Stage 2 loss at each dev document's candidates."""
    from xplant.neural.losses import candidate_loss
    texts, Y = corpus
    clf = PlantClassifier(**tiny, max_epochs=2, shortlist="linear", n_candidates=4,
                          planter=AttentionPlanter(max_epochs=1, verbose=0)).fit(
        texts[:70], Y[:70], validation_data=(texts[70:], Y[70:]))
    # the dev split is released after fit: its candidates and documents, made again
    cand = clf.parts_["shortlist_fusion"].rank(texts[70:], clf.n_labels_, full_tail=True,
                                               raw=True)[0]
    z = torch.from_numpy(clf._network().candidate_logits(clf._docs(texts[70:]), cand))
    y = torch.from_numpy(np.take_along_axis(Y[70:].toarray(), cand, 1).astype(np.float32))
    expected = float(candidate_loss(z, y, torch.ones(z.shape, dtype=torch.bool)))
    assert clf.history[clf.best_epoch_ - 1]["valid_loss"] == pytest.approx(expected, rel=1e-5)


@pytest.mark.filterwarnings("ignore:MAP is undefined")
def test_fusion_dev_with_an_unlabelled_dev_split_says_so(tiny, corpus):
    texts, Y = corpus
    no_gold = sp.csr_matrix((20, Y.shape[1]), dtype=np.int64)
    with pytest.warns(UserWarning, match="the dev split has no positive label"):
        clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist="linear",
                              n_candidates=4).fit(texts[:70], Y[:70],
                                                  validation_data=(texts[70:], no_gold))
    assert clf.fusion_weight_ == 0.5


def test_tree_shortlist_fills_candidates_by_training_frequency(tiny):
    """Omikuji reaches few labels: its candidates go on by training frequency, not index order."""
    pytest.importorskip("omikuji")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from xplant.app import load_splits
    from xplant.linear import OmikujiTrees
    sp_ = load_splits("codiesp", max_docs=40)
    tr, te = sp_["train"], sp_["test"]
    trees = Pipeline([("tfidf", TfidfVectorizer()), ("trees", OmikujiTrees(beam_size=2, n_jobs=1))])
    clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist=trees, n_candidates=100,
                          fusion=1.0, validation_fraction=None).fit(tr.texts, tr.Y)
    cand, s, _ = clf.parts_["shortlist_fusion"].rank(te.texts, clf.n_labels_, raw=True)
    freq = clf.label_frequency_
    assert (s == 0).any(axis=1).all()              # every document has unreached candidates
    for row, scores in zip(cand, s):
        reached = set(row[scores > 0].tolist())
        # the unreached candidates: the most frequent labels the search did not reach, in order
        rest = [j for j in np.argsort(-freq, kind="stable") if j not in reached]
        assert row[scores == 0].tolist() == rest[:int((scores == 0).sum())]
    # predict_proba's tail below the candidates keeps that order too
    P = clf.predict_proba(te.texts[:3])
    order = np.argsort(-P[0], kind="stable")
    tail = [j for j in order if j not in set(cand[0].tolist())][:20]
    rest = [j for j in np.argsort(-freq, kind="stable") if j not in set(cand[0].tolist())][:20]
    assert tail == rest


def test_labels_never_seen_keep_probabilities_in_range(tiny, corpus):
    """Unseen labels (the linear shortlist's −1000) as candidates at α = 1: P stays in (0, 1]."""
    texts, Y = corpus
    Y3 = sp.hstack([Y, sp.csr_matrix((Y.shape[0], 3), dtype=Y.dtype)]).tocsr()
    clf = PlantClassifier(**tiny, plant=False, max_epochs=1, shortlist="linear",
                          n_candidates=14, fusion=1.0, validation_fraction=None).fit(texts, Y3)
    P = clf.predict_proba(texts[:6])
    assert P.min() > 0 and P.max() <= 1
    idx, sc = clf.predict_top_k(texts[:6], k=15)
    np.testing.assert_array_equal(idx, np.argsort(-P, 1, kind="stable")[:, :15])
    assert (sc > 0).all()
