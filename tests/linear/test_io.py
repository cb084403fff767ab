"""Saving and loading the linear and tree baselines without pickle."""

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import Pipeline

from xplant.linear import (
    FrequencyPrior,
    NapkinXCPLT,
    OmikujiTrees,
    OneVsRestLinear,
    load_linear,
    make_tfidf_logistic,
    make_tfidf_ovr,
    predict_top_k,
    save_linear,
)
from xplant.persistence._codec import read_config

WORDS = ["fever", "cough", "fracture", "femur", "rash", "itch", "pain", "chest"]


def _texts(n=60, seed=0):
    """Label j is written with word pair j; a little shared noise."""
    rng = np.random.default_rng(seed)
    Y = np.zeros((n, 4), dtype=np.int64)
    Y[np.arange(n), rng.integers(0, 4, n)] = 1
    Y[rng.random(n) < 0.3, 3] = 1
    texts = []
    for row in Y:
        words = [w for j in np.flatnonzero(row) for w in WORDS[2 * j:2 * j + 2]]
        words += list(rng.choice(["patient", "day", "the", "note"], 3))
        texts.append(" ".join(rng.permutation(words)))
    return texts, sp.csr_matrix(Y)


NAMES = ["R50.9", "R05", "S72.0", "L29.9"]


@pytest.mark.parametrize("make", [lambda: make_tfidf_ovr(C=1.0, min_df=1, random_state=0),
                                  lambda: make_tfidf_logistic(C=10.0, min_df=1,
                                                              ngram_range=(1, 2))],
                         ids=["svm", "lr"])
def test_tfidf_pipeline_round_trip(tmp_path, make):
    texts, Y = _texts()
    pipe = make().fit(texts[:40], Y[:40], ovr__label_names=NAMES)
    pipe[-1].decision_rule_ = {"rule": "top_k", "k": 2, "threshold": 0.3}
    path = save_linear(pipe, tmp_path / "m")
    back = load_linear(path)
    assert back[-1].decision_rule_ == pipe[-1].decision_rule_      # the rule is a part
    assert (back.predict(texts[40:]) != pipe.predict(texts[40:])).nnz == 0
    assert (pipe.predict(texts[40:]).sum(axis=1) == 2).all()       # predict applies it
    assert isinstance(back, Pipeline) and [n for n, _ in back.steps] == ["tfidf", "ovr"]
    np.testing.assert_array_equal(back.decision_function(texts[40:]),
                                  pipe.decision_function(texts[40:]))
    for a, b in zip(predict_top_k(back, texts[40:], 3), predict_top_k(pipe, texts[40:], 3)):
        np.testing.assert_array_equal(a, b)
    assert back[-1].classes_.tolist() == NAMES
    np.testing.assert_array_equal(back[-1].label_frequency_, np.asarray(Y[:40].sum(0)).ravel())
    assert back[0].vocabulary_ == pipe[0].vocabulary_
    assert back[0].get_params() == pipe[0].get_params()
    assert back[-1].get_params() == pipe[-1].get_params()
    # no pickle anywhere: JSON and safetensors only
    assert sorted(p.name for p in path.iterdir()) == ["arrays.safetensors", "config.json"]
    config = read_config(path)
    assert config["decision"] == {"rule": "top_k", "k": 2, "threshold": 0.3}
    assert config["steps"][0]["terms"][back[0].vocabulary_["fever"]] == "fever"


def test_per_label_thresholds_are_saved_and_applied(tmp_path):
    from xplant import load_saved
    from xplant._saved import decide, score_matrix
    from xplant.metrics import apply_rule
    texts, Y = _texts()
    pipe = make_tfidf_logistic(C=10.0, min_df=1).fit(texts[:40], Y[:40], ovr__label_names=NAMES)
    own = np.median(pipe.predict_proba(texts[40:]), axis=0)      # splits each label's scores
    rule = {"rule": "per_label_threshold", "k": 2, "threshold": 0.3, "thresholds": own}
    pipe[-1].decision_rule_ = rule
    path = save_linear(pipe, tmp_path / "m")
    config = read_config(path)
    assert config["decision"] == {"rule": "per_label_threshold", "k": 2, "threshold": 0.3,
                                  "thresholds": own.tolist()}
    model, back = load_saved(path)
    np.testing.assert_array_equal(back["thresholds"], own)          # JSON floats: bit for bit
    got = decide(model, texts[40:], back).toarray()
    want = (score_matrix(model, texts[40:]) >= own).astype(int)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, apply_rule(pipe.predict_proba(texts[40:]), rule).toarray())
    assert 0 < got.sum() < got.size
    # the loaded model's own predict applies the saved rule, on the probabilities' scale
    np.testing.assert_array_equal(model.predict(texts[40:]).toarray(), got)
    with pytest.raises(ValueError, match="length 4"):
        pipe[-1].decision_rule_ = dict(rule, thresholds=own[:3])
    with pytest.raises(ValueError, match="must be one of"):
        pipe[-1].decision_rule_ = dict(rule, rule="top-k")
    assert pipe[-1].decision_rule_.thresholds.tolist() == own.tolist()    # unchanged


def test_one_vs_rest_alone_and_class_weight(tmp_path):
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(rng.random((30, 5)))
    Y = sp.csr_matrix((X.toarray()[:, :3] > 0.5).astype(np.int64))
    est = OneVsRestLinear(class_weight={0: 1.0, 1: 2.0}, random_state=0).fit(X, Y)
    back = load_linear(save_linear(est, tmp_path / "ovr"))
    assert back.class_weight == {0: 1.0, 1: 2.0}
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(back.classes_, np.arange(3))
    np.testing.assert_array_equal(back.predict(X).toarray(), est.predict(X).toarray())


def test_frequency_prior_round_trip(tmp_path):
    Y = np.array([[1, 0, 1], [0, 0, 1], [0, 1, 1], [1, 0, 0]])
    prior = FrequencyPrior().fit(["a", "b", "c", "d"], Y, label_names=["x", "y", "z"])
    back = load_linear(save_linear(prior, tmp_path / "p"))
    # hand-computed: frequencies 2, 1, 3 of 4 documents; k_ = round(6 / 4) = 2
    assert back.predict_proba(["new"]).tolist() == [[0.5, 0.25, 0.75]]
    assert back.k_ == 2 and back.classes_.tolist() == ["x", "y", "z"]
    pred = back.predict(["q", "r"])          # fitted on a dense Y: dense, after loading too
    assert isinstance(pred, np.ndarray) and pred.tolist() == [[1, 0, 1], [1, 0, 1]]


@pytest.mark.parametrize("kind", ["napkinxc", "omikuji"])
def test_trees_round_trip_in_own_format(tmp_path, kind):
    pytest.importorskip(kind)
    texts, Y = _texts(seed=2)
    tree = NapkinXCPLT(n_jobs=1) if kind == "napkinxc" else OmikujiTrees("parabel", n_jobs=1)
    pipe = Pipeline([("tfidf", TfidfVectorizer(min_df=1)), ("ovr", tree)])
    pipe.fit(texts[:40], Y[:40], ovr__label_names=NAMES)
    path = save_linear(pipe, tmp_path / "t")
    assert (path / f"1.{kind}").is_dir()
    back = load_linear(path)
    del pipe.steps[-1][1].model_             # the copy must not need the original's files
    pipe2 = load_linear(path)
    np.testing.assert_allclose(back.predict_proba(texts[40:]), pipe2.predict_proba(texts[40:]))
    idx, _ = back[-1].predict_top_k(back[0].transform(texts[40:]), 1)
    assert np.asarray(Y[40:][np.arange(20), idx[:, 0]]).mean() > 0.8
    assert back[-1].classes_.tolist() == NAMES


def test_tree_predictions_equal_original(tmp_path):
    pytest.importorskip("omikuji")
    texts, Y = _texts(seed=3)
    pipe = Pipeline([("tfidf", TfidfVectorizer(min_df=1)),
                     ("ovr", OmikujiTrees("parabel", n_jobs=1))]).fit(texts[:40], Y[:40])
    back = load_linear(save_linear(pipe, tmp_path / "t"))
    np.testing.assert_allclose(back.predict_proba(texts[40:]), pipe.predict_proba(texts[40:]),
                               rtol=1e-6)


def test_clear_errors(tmp_path):
    texts, Y = _texts()
    custom = Pipeline([("tfidf", TfidfVectorizer(tokenizer=str.split, token_pattern=None)),
                       ("ovr", OneVsRestLinear())]).fit(texts, Y)
    with pytest.raises(TypeError, match="tokenizer=.*not a JSON value"):
        save_linear(custom, tmp_path / "a")
    assert not (tmp_path / "a").exists() and list(tmp_path.iterdir()) == []
    from sklearn.linear_model import Ridge
    with pytest.raises(TypeError, match="cannot save Ridge without pickle.*FrequencyPrior"):
        save_linear(Ridge().fit([[0.0], [1.0]], [0, 1]), tmp_path / "b")
    prior = FrequencyPrior().fit(["a"], [[1]])
    save_linear(prior, tmp_path / "c")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        save_linear(prior, tmp_path / "c")
    save_linear(prior, tmp_path / "c", overwrite=True)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_linear(tmp_path / "nothing")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="format 'other'"):
        load_linear(tmp_path / "d")


def test_numpy_scalar_parameters_are_saved_as_numbers(tmp_path):
    # numpy scalars from a grid (np.logspace) are stored, never refused or dropped
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.random((20, 6)))
    Y = (rng.random((20, 3)) < 0.4).astype(int)
    Y[0] = 1
    est = OneVsRestLinear(C=np.float64(0.5), max_iter=np.int64(50)).fit(X, Y)
    back = load_linear(save_linear(est, tmp_path / "ovr"))
    assert back.C == 0.5 and type(back.C) is float and back.max_iter == 50
    np.testing.assert_allclose(back.decision_function(X), est.decision_function(X))


def test_unsaveable_row_keeps_its_scores(tmp_path):
    """xplant run records why a row was not saved instead of failing after its fit."""
    from sklearn.linear_model import Ridge
    from xplant.app import save_row
    est = Ridge().fit([[0.0], [1.0]], [0, 1])
    out = save_row(est, est, tmp_path / "m")
    assert "cannot save Ridge without pickle" in out["not_saved"]
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("edit, match", [
    (lambda e: e.update(classes=e["classes"][:-1]), r"field 'classes': holds 2 names but n_labels is 3"),
    (lambda e: e.update(classes=["x", "x", "z"]), r"field 'classes': .*same label"),
    (lambda e: e.update(n_train_documents=0), r"field 'n_train_documents': must be an integer >= 1"),
    (lambda e: e.update(prediction_form={"kind": "pickle"}), r"field 'prediction_form'"),
    (lambda e: e.pop("n_labels"), r"field 'n_labels': missing"),
])
def test_a_damaged_label_space_names_the_file_and_field(tmp_path, edit, match):
    """The linear folder's label space is read by the one reader every kind uses
    (LabelSpace.from_dict), whose errors name the file and the field, as PLANT's do."""
    Y = np.array([[1, 0, 1], [0, 0, 1], [0, 1, 1], [1, 0, 0]])
    path = save_linear(FrequencyPrior().fit(["a", "b", "c", "d"], Y, label_names=["x", "y", "z"]),
                       tmp_path / "p")
    config = json.loads((path / "config.json").read_text())
    entry = config["steps"][0] if "steps" in config else config
    edit(entry)
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=re.escape(str(path / "config.json")) + ", " + match):
        load_linear(path)
