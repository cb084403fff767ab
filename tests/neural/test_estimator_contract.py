"""The neural estimators' own conformance tests (scikit-learn's common checks cannot feed them texts).

Tiny configuration: 24 documents, 16-dimensional layers, one or two epochs.
"""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from skorch.callbacks import Callback

from xplant.metrics import get_scorer
from xplant.neural import AttentionPlanter, PlantClassifier, load_model
from xplant.neural.distributed import DeepSpeedStrategy

TINY = dict(module__embedding_dim=16, module__hidden_dim=16, module__attention_dim=16, batch_size=8, verbose=0, n_jobs=1,
            validation_fraction=None, module__max_length=64)


def _clf(**kw):
    params = dict(TINY, module__pool_size=16, max_epochs=2, stage1_weight=0.0,
                  planter=AttentionPlanter(max_epochs=1, verbose=0))
    params.update(kw)
    return PlantClassifier(**params)


@pytest.fixture(scope="module")
def data(make_corpus):
    return make_corpus(n_docs=24, n_labels=4, doc_len=12)


def test_clone_keeps_every_parameter_and_no_state(data):
    texts, Y = data
    clf = _clf(lr=0.02).fit(texts, Y)
    twin = clone(clf)
    assert not hasattr(twin, "module_") and not hasattr(twin, "classes_")
    assert twin.lr == 0.02 and twin.planter is not clf.planter
    assert twin.planter.get_params(deep=False) == clf.planter.get_params(deep=False)


def test_nested_set_params_reaches_the_planter_and_the_relevance(data):
    # A nested key must reach the nested estimator: otherwise set_params(planter__max_epochs=3)
    # changes nothing, or the next fit raises "__init__() got unexpected argument(s)".
    from xplant.relevance import MIGRelevance
    clf = _clf(relevance=MIGRelevance(top_k=5))
    deep = clf.get_params(deep=True)
    assert "planter__max_epochs" in deep and "relevance__top_k" in deep
    clf.set_params(planter__max_epochs=3, relevance__top_k=7, planter__relevance=None)
    assert clf.planter.max_epochs == 3 and clf.relevance.top_k == 7
    assert clf.get_params(deep=True)["planter__max_epochs"] == 3
    # every key get_params(deep=True) lists can be set back to its value
    clf.set_params(**{k: v for k, v in clf.get_params(deep=True).items() if "__" in k})
    texts, Y = data
    clf.set_params(planter__max_epochs=1, max_epochs=1).fit(texts, Y)
    assert len(clf.planter_.history) == 1
    # planter=None stands for AttentionPlanter(): a nested key makes it explicit
    made = _clf(planter=None).set_params(planter__max_epochs=2)
    assert isinstance(made.planter, AttentionPlanter) and made.planter.max_epochs == 2
    assert made.planter.get_params(deep=False) == AttentionPlanter(max_epochs=2).get_params(deep=False)
    with pytest.raises(ValueError, match="relevance is None"):
        _clf(relevance=None).set_params(relevance__top_k=2)


def test_grid_search_over_a_nested_key_and_numpy_scalars(data):
    # A search grid gives numpy scalars (np.logspace: np.float64), and a nested key must be
    # settable.
    texts, Y = data
    grid = {"lr": np.logspace(-3, -2, 2), "planter__max_epochs": [1]}
    gs = GridSearchCV(_clf(max_epochs=1, plant=True), grid, cv=2, scoring=get_scorer("precision_at_1"),
                      error_score="raise")
    gs.fit(texts, Y.toarray())
    assert isinstance(gs.best_params_["lr"], np.floating)
    assert gs.best_estimator_.planter_.max_epochs == 1


def test_numpy_scalar_parameters_train_save_and_load(data, tmp_path):
    # numpy scalars are parameters like Python numbers: fit takes lr=np.float64, and save keeps
    # module__hidden_dim=np.int64(16), so that load does not fail with a 16 vs 128 size mismatch.
    texts, Y = data
    clf = _clf(lr=np.float64(0.01), module__hidden_dim=np.int64(16), module__attention_dim=np.int32(16),
               max_epochs=np.int64(1), module__dropout=np.float32(0.1), criterion__gamma=np.float64(2.0),
               criterion__hard_negatives=np.int64(3), module__pool_size=np.int64(8), decision__max_k=np.int64(3),
               callbacks__unfreeze__phases=[(np.int64(0), "head", np.float64(0.01)),
                       (np.int64(1), "attention", np.float64(0.01))])
    clf.fit(texts, Y)
    path = clf.save(tmp_path / "m")
    saved = json.loads((path / "config.json").read_text())["params"]
    assert saved["module__hidden_dim"] == 16 and saved["lr"] == 0.01
    assert saved["module__pool_size"] == 8
    assert saved["callbacks__unfreeze__phases"] == [[0, "head", 0.01], [1, "attention", 0.01]]
    again = load_model(path)
    assert again.module__hidden_dim == 16 and type(again.module__hidden_dim) is int
    np.testing.assert_array_equal(again.predict_proba(texts), clf.predict_proba(texts))


def test_save_stores_every_parameter_or_refuses(data, tmp_path):
    texts, Y = data
    clf = _clf(max_epochs=1, planter=AttentionPlanter(max_epochs=1, criterion__k=3, verbose=0),
               optimizer__betas=(0.8, 0.99),
               strategy=DeepSpeedStrategy(config={"zero_stage": np.int64(2)}))
    clf.set_params(strategy="skorch").fit(texts, Y)
    clf.set_params(strategy=DeepSpeedStrategy(config={"zero_stage": np.int64(2)}))
    path = clf.save(tmp_path / "m")
    config = json.loads((path / "config.json").read_text())
    stored = set(config["params"])
    expected = set(clf.get_params(deep=False)) - {"callbacks", "checkpoint_dir", "module",
                                                  "criterion", "optimizer", "iterator_train",
                                                  "iterator_valid", "dataset", "train_split"}
    expected = {k for k in expected if not k.startswith("_")}   # skorch's private bookkeeping
    assert stored == expected
    assert config["params"]["planter"]["estimator"] == "AttentionPlanter"
    again = load_model(path)
    assert isinstance(again.planter, AttentionPlanter) and again.planter.criterion__k == 3
    assert again.planter.max_epochs == 1 and again.strategy.config == {"zero_stage": 2}
    assert list(again.optimizer__betas) == [0.8, 0.99]
    clf.set_params(strategy=DeepSpeedStrategy(config={"f": object()}))
    with pytest.raises(ValueError, match=r"cannot save the parameter strategy__config\['f'\]"):
        clf.save(tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
    import torch
    clf.set_params(strategy="skorch")
    clf.optimizer = torch.optim.SGD          # (skorch re-initialises on set_params(optimizer=))
    with pytest.raises(ValueError, match="only the default optimizer can be saved"):
        clf.save(tmp_path / "bad")


def test_refit_resets_the_state(data):
    texts, Y = data
    clf = _clf(max_epochs=1, plant=False)
    clf.fit(texts, Y)
    first = clf.predict_proba(texts)
    wide = sp.hstack([Y, Y[:, :1]]).tocsr()               # a fifth label
    clf.fit(texts[:20], wide[:20], label_names=list("abcde"))
    assert clf.n_labels_ == 5 and list(clf.classes_) == list("abcde")
    assert clf.n_train_documents_ == 20 and len(clf.history) == 1
    assert clf.predict_proba(texts).shape == (24, 5)
    clf.fit(texts, Y)                                      # back to the first data
    np.testing.assert_allclose(clf.predict_proba(texts), first, rtol=1e-5, atol=1e-6)


def test_input_is_left_unchanged(data):
    texts, Y = data
    texts_before = list(texts)
    dense = Y.toarray()
    dense_before = dense.copy()
    lists = [[f"L{j}" for j in Y[i].indices] for i in range(Y.shape[0])]
    lists_before = [list(r) for r in lists]
    _clf(max_epochs=1).fit(texts, dense)
    _clf(max_epochs=1, plant=False).fit(texts, lists)
    assert texts == texts_before and lists == lists_before
    np.testing.assert_array_equal(dense, dense_before)


def test_permuted_rows_give_permuted_output(data):
    texts, Y = data
    clf = _clf(max_epochs=1).fit(texts, Y)
    perm = np.random.default_rng(3).permutation(len(texts))
    p = clf.predict_proba(texts)
    np.testing.assert_allclose(clf.predict_proba([texts[i] for i in perm]), p[perm], rtol=1e-5,
                               atol=1e-6)
    idx, _ = clf.predict_top_k(texts, k=2)
    idx_p, _ = clf.predict_top_k([texts[i] for i in perm], k=2)
    np.testing.assert_array_equal(idx_p, idx[perm])


def test_planter_clone_refit_and_permutation(data):
    texts, Y = data
    pl = AttentionPlanter(max_epochs=1, **TINY).fit(texts, Y)
    pl2 = clone(pl).fit(texts, Y)
    for a, b in zip(pl.module_.state_dict().values(), pl2.module_.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    pl.set_params(relevance__top_k=3) if pl.relevance is not None else None
    pl.fit(texts[:12], Y[:12, :3], label_names=["x", "y", "z"])
    assert pl.n_labels_ == 3 and list(pl.classes_) == ["x", "y", "z"]


@pytest.mark.filterwarnings("ignore::xplant.neural.DegenerateModelWarning")
def test_stage1_weight_dev_equals_the_chosen_fixed_weight(make_corpus, tmp_path):
    """stage1_weight="dev": each candidate is exactly the fit with that weight; the best is kept."""
    # a corpus on which the second candidate (0.1) wins on dev, so that a rule that
    # always kept the first one fails; the precondition is asserted below
    texts, Y = make_corpus(n_docs=48, n_labels=4, doc_len=12, seed=2)
    kw = dict(validation_fraction=0.25, max_epochs=3, lr=0.02)
    clf = _clf(stage1_weight="dev", **kw).fit(texts, Y)
    cands = clf.stage1_weight_candidates_
    assert [c["stage1_weight"] for c in cands] == [0.0, 0.1]
    best = max(cands, key=lambda c: c["dev_map"])             # max: the first of equal scores
    assert cands[1]["dev_map"] > cands[0]["dev_map"] and best is cands[1]    # a real choice
    assert clf.stage1_weight_ == best["stage1_weight"] and clf.best_epoch_ == best["best_epoch"]
    for c in cands:                                            # the oracle: one fit per weight
        fixed = _clf(stage1_weight=c["stage1_weight"], **kw).fit(texts, Y)
        dev_map = [h["valid_map"] for h in fixed.history]
        assert c["dev_map"] == pytest.approx(max(dev_map), abs=1e-12)
        assert (c["best_epoch"], c["epochs"]) == (fixed.best_epoch_, len(fixed.history))
        if c is best:
            np.testing.assert_allclose(clf.predict_proba(texts), fixed.predict_proba(texts),
                                       rtol=1e-5, atol=1e-7)
    assert clone(clf).stage1_weight == "dev" and not hasattr(clone(clf), "stage1_weight_")
    clf.save(tmp_path / "m")
    back = load_model(tmp_path / "m")
    assert back.stage1_weight == "dev" and back.stage1_weight_ == clf.stage1_weight_
    assert back.stage1_weight_candidates_ == json.loads(json.dumps(cands))
    np.testing.assert_allclose(back.predict_proba(texts), clf.predict_proba(texts), rtol=1e-6)


@pytest.mark.filterwarnings("ignore::xplant.neural.DegenerateModelWarning")
def test_stage1_weight_dev_with_lr_none_trains_each_weight_at_its_rate(make_corpus):
    """lr=None under "dev": weight 0 trains at 1e-3, 0.1 at 1e-2, each as its fixed fit."""
    texts, Y = make_corpus(n_docs=48, n_labels=4, doc_len=12, seed=0)
    kw = dict(validation_fraction=0.25, max_epochs=3)
    clf = _clf(stage1_weight="dev", **kw).fit(texts, Y)
    cands = clf.stage1_weight_candidates_
    assert [(c["stage1_weight"], c["lr"]) for c in cands] == [(0.0, 1e-3), (0.1, 1e-2)]
    for c in cands:                                            # the oracle: one fit per weight
        fixed = _clf(stage1_weight=c["stage1_weight"], **kw).fit(texts, Y)
        assert c["dev_map"] == pytest.approx(max(h["valid_map"] for h in fixed.history),
                                             abs=1e-12)
    chosen = next(c for c in cands if c["stage1_weight"] == clf.stage1_weight_)
    assert {lr for _, _, lr in clf.phases_} == {chosen["lr"]}


@pytest.mark.filterwarnings("ignore::xplant.neural.DegenerateModelWarning")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")   # empty dev
def test_stage1_weight_dev_falls_back_errors_and_grid_search(data, tmp_path):
    """Where "dev" cannot choose it says why and trains exactly the 0.1 fit."""
    texts, Y = data
    fixed = _clf(stage1_weight=0.1).fit(texts, Y)               # validation_fraction=None
    with pytest.warns(UserWarning, match="no dev split.*stage1_weight=0.1"):
        clf = _clf(stage1_weight="dev").fit(texts, Y)
    assert clf.stage1_weight_ == 0.1 and clf.stage1_weight_candidates_ is None
    np.testing.assert_array_equal(clf.predict_proba(texts), fixed.predict_proba(texts))
    empty_dev = (texts[:4], sp.csr_matrix((4, Y.shape[1]), dtype=np.int64))
    with pytest.warns(UserWarning, match="the dev split has no positive label.*stage1_weight=0.1"):
        _clf(stage1_weight="dev", max_epochs=1).fit(texts, Y, validation_data=empty_dev)
    assert PlantClassifier().stage1_weight == "dev"             # the default
    with pytest.raises(ValueError, match=r"PlantClassifier: stage1_weight='auto' is not one of the options; "
                       r"it must be 'dev' or a number >= 0"):
        _clf(stage1_weight="auto").fit(texts, Y)
    gs = GridSearchCV(_clf(max_epochs=1, validation_fraction=0.25),
                      {"stage1_weight": ["dev", 0.0]}, cv=2, error_score="raise",
                      scoring=get_scorer("precision_at_1")).fit(texts, Y.toarray())
    assert gs.best_params_["stage1_weight"] in ("dev", 0.0)
    assert len(gs.cv_results_["params"]) == 2


class _CtrlCAtEpoch(Callback):
    """Ctrl-C (a KeyboardInterrupt, which skorch swallows) in the n-th epoch across fits."""

    def __init__(self, n):
        self.n, self.seen = n, 0

    def on_epoch_begin(self, net, **kwargs):
        self.seen += 1

    def on_batch_end(self, net, training=False, **kwargs):
        if training and self.seen == self.n:
            raise KeyboardInterrupt


@pytest.mark.filterwarnings("ignore::xplant.neural.DegenerateModelWarning")
def test_stage1_weight_dev_checkpoints_each_candidate_and_resumes(data, tmp_path):
    """Ctrl-C in the second candidate stops the fit; resume ends where an unbroken fit does."""
    from xplant.neural.training._checkpoint import read_checkpoint
    texts, Y = data
    kw = dict(stage1_weight="dev", validation_fraction=0.25, max_epochs=3, patience=10)
    ref = _clf(**kw).fit(texts, Y)
    ck = tmp_path / "ck"
    with pytest.raises(KeyboardInterrupt, match="candidate 0.1"):   # its 2nd epoch (5th overall)
        _clf(**kw, checkpoint_dir=str(ck), callbacks=[("ctrl_c", _CtrlCAtEpoch(5))]).fit(texts, Y)
    assert read_checkpoint(ck / "stage1_weight=0")["state"]["completed"]
    part = read_checkpoint(ck / "stage1_weight=0.1")["state"]
    assert part["epoch"] == 1 and not part["completed"]
    resumed = _clf(**kw, checkpoint_dir=str(ck)).fit(texts, Y, resume=True)
    # the same candidates, but for the wall time of their epochs (a resumed epoch ran twice)
    untimed = [[{k: v for k, v in c.items() if k != "seconds"} for c in f.stage1_weight_candidates_]
               for f in (resumed, ref)]
    assert untimed[0] == untimed[1]
    assert resumed.stage1_weight_ == ref.stage1_weight_
    np.testing.assert_allclose(resumed.predict_proba(texts), ref.predict_proba(texts), rtol=1e-5)
    again = _clf(**kw, checkpoint_dir=str(ck)).fit(texts, Y, resume=True)   # both completed
    np.testing.assert_allclose(again.predict_proba(texts), ref.predict_proba(texts), rtol=1e-5)
    # a candidate that early stopping ended before max_epochs is restored as finished
    kw = dict(kw, max_epochs=8, patience=1, checkpoint_dir=str(tmp_path / "es"))
    first = _clf(**kw).fit(texts, Y)
    assert min(c["epochs"] for c in first.stage1_weight_candidates_) < 8    # one stopped early
    back = _clf(**kw).fit(texts, Y, resume=True)
    assert back.stage1_weight_candidates_ == first.stage1_weight_candidates_
    np.testing.assert_allclose(back.predict_proba(texts), first.predict_proba(texts), rtol=1e-5)


def test_saved_model_answers_in_codiesp_codes(tmp_path):
    # A saved model answers in its label names: `xplant predict` writes codes ("n1<TAB>i10" in
    # the CodiEsp format), never a column index ("n1<TAB>1011").
    from xplant.app._predict import predict_file
    from xplant.datasets import load_codiesp
    tr = load_codiesp("train")
    cols = np.flatnonzero(np.isin(tr.label_names, ["I10", "J18.9", "R50.9", "R05"]))
    rows = np.flatnonzero(np.diff(tr.Y[:, cols].tocsr().indptr))[:30]
    texts, Y = [tr.texts[i][:400] for i in rows], tr.Y[rows][:, cols]
    clf = _clf(max_epochs=1, plant=False).fit(texts, Y, label_names=tr.label_names[cols])
    path = clf.save(tmp_path / "PLANT")
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"id": "n1", "text": "Hypertension and pneumonia."}) + "\n",
                     encoding="utf-8")
    out = tmp_path / "sub.tsv"
    predict_file(str(path), notes, out, fmt="codiesp", top_k=4)
    rows_out = [line.split("\t") for line in out.read_text().splitlines()]
    assert {r[1] for r in rows_out} == {"i10", "j18.9", "r50.9", "r05"}
    out = tmp_path / "pred.jsonl"
    predict_file(str(path), notes, out, top_k=4)
    assert {t["label"] for t in json.loads(out.read_text())["top"]} == {"I10", "J18.9", "R50.9",
                                                                         "R05"}


def test_one_fit_checks_each_target_once(data, monkeypatch):
    """The classifier hands its checked rows to the planter: Y and Y_dev are read once each.

    Before the shared preparation step the planter re-wrapped the corpus and
    checked Y and Y_dev again (four reads in one fit).
    """
    from xplant.neural import _inputs
    texts, Y = data
    seen = []
    real = _inputs._check_targets       # what every neural check of a target calls

    def counting(Y, **kw):
        seen.append(kw["name"])
        return real(Y, **kw)

    monkeypatch.setattr(_inputs, "_check_targets", counting)
    clf = _clf(max_epochs=1).fit(texts[:18], Y[:18], validation_data=(texts[18:], Y[18:]))
    assert clf.planter_ is not None                      # Stage 1 ran
    assert sorted(seen) == ["Y", "Y_dev"]
    # the planter got exactly the classifier's training rows and dev rows
    assert clf.planter_.n_labels_ == clf.n_labels_
    assert clf.planter_.n_fit_train_ == 18
    assert clf.planter_.classes_.tolist() == clf.classes_.tolist()
