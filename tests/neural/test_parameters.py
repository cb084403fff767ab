"""One channel per setting: the named parameters, skorch's prefixes, and the old names.

The five traps of the reshaped surface (each used to raise "got multiple
values for keyword argument" or to be silently overridden), the renamed
parameters, a model saved before the change, and a fit that leaves torch as
it found it.
"""

import inspect
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("torch")

import torch
from sklearn.base import clone, is_classifier

from xplant.neural import AttentionPlanter, PlantClassifier, load_model, translate_params
from xplant.neural._settings import RENAMED
from xplant.neural.distributed import DeepSpeedStrategy

LEGACY = Path(__file__).parent / "data" / "legacy_plant"


@pytest.fixture(scope="module")
def forty(make_corpus):
    return make_corpus(n_docs=40, n_labels=4, seed=1)


def _fit(forty, **params):
    texts, Y = forty
    base = dict(max_epochs=1, verbose=0, n_jobs=1, stage1_weight=0.0, validation_fraction=None,
                planter=AttentionPlanter(max_epochs=1))
    return PlantClassifier(**{**base, **params}).fit(texts, Y)


def test_the_surface_has_at_most_22_parameters():
    assert len(inspect.signature(PlantClassifier.__init__).parameters) <= 22
    assert len(inspect.signature(AttentionPlanter.__init__).parameters) <= 22


def test_criterion_gamma_reaches_the_loss(forty):
    clf = _fit(forty, criterion__gamma=1.0)
    assert clf.criterion_.gamma == 1.0
    assert clone(clf).get_params()["criterion__gamma"] == 1.0


def test_optimizer_lr_reaches_the_optimizer_and_every_phase(forty):
    clf = _fit(forty, optimizer__lr=1e-3)
    assert clf.optimizer_.defaults["lr"] == 1e-3
    assert {lr for _, _, lr in clf.phases_} == {1e-3}       # default_phases at that rate
    assert clf.effective_lr() == 1e-3


def test_module_pool_size_reaches_the_network(forty):
    clf = _fit(forty, module__pool_size=64)                  # hidden 128: not capped
    assert clf.module_.pool_size == 64 and clf.module_.pool.shape == (128, 64)


def test_weight_decay_has_one_spelling(forty):
    clf = _fit(forty, optimizer__weight_decay=0.05)
    assert all(g["weight_decay"] == 0.05 for g in clf.optimizer_.param_groups)
    assert all(g["weight_decay"] == 0.01 for g in _fit(forty).optimizer_.param_groups)
    with pytest.raises(TypeError, match=r"weight_decay=\.\.\. is now optimizer__weight_decay"):
        PlantClassifier(weight_decay=0.05, optimizer__weight_decay=0.01)


def test_lr_and_optimizer_lr_together_name_both(forty):
    texts, Y = forty
    with pytest.raises(ValueError, match=r"lr=0\.01 and optimizer__lr=0\.001"):
        PlantClassifier(lr=1e-2, optimizer__lr=1e-3, max_epochs=1, verbose=0).fit(texts, Y)
    # at its default, lr yields to optimizer__lr (skorch's rule)
    assert PlantClassifier(optimizer__lr=1e-3).effective_lr() == 1e-3


def test_a_planter_architecture_apart_from_the_classifier_raises(forty):
    texts, Y = forty
    with pytest.raises(TypeError, match=r"embedding_dim=\.\.\. is now module__embedding_dim"):
        AttentionPlanter(embedding_dim=64)
    clf = PlantClassifier(planter=AttentionPlanter(module__embedding_dim=64, max_epochs=1),
                          max_epochs=1, verbose=0, stage1_weight=0.0)
    with pytest.raises(ValueError, match=r"Set PlantClassifier\(module__embedding_dim=64\)"):
        clf.fit(texts, Y)
    # the same value on both is no conflict; the planting then has that architecture
    ok = _fit(forty, module__embedding_dim=64,
              planter=AttentionPlanter(module__embedding_dim=64, max_epochs=1))
    assert ok.planter_.module_.encoder.embedding.embedding_dim == 64
    assert ok.module_.encoder.embedding.embedding_dim == 64


@pytest.mark.parametrize("cls", [PlantClassifier, AttentionPlanter])
def test_every_old_name_raises_naming_its_new_spelling(cls):
    for old, new in RENAMED[cls.__name__].items():
        with pytest.raises(TypeError, match=old + r"=.*is now " +
                           ("planter=" if new == "planter" else
                            "strategy=DeepSpeedStrategy" if new == "strategy" else
                            r"planter=AttentionPlanter\(" + new[9:] if new.startswith("planter__")
                            else new)):
            cls(**{old: 1})
        with pytest.raises(TypeError, match="renamed parameters"):
            cls().set_params(**{old: 1})


def test_translate_params_reads_old_names():
    old = {"gamma": 1.0, "embedding_dim": 16, "pool_size": 128, "phases": [(0, "head", 0.1)],
           "plant_from": "folder", "stage1_target": "tf", "stage1_loss": None, "max_k": 10,
           "logit_adjustment": "dev", "strategy": "deepspeed", "deepspeed_config": {"a": 1},
           "lr": 0.01}
    new = translate_params(PlantClassifier, old)
    strategy = new.pop("strategy")
    assert isinstance(strategy, DeepSpeedStrategy) and strategy.config == {"a": 1}
    # values at their old defaults (pool_size 128, max_k 10) are left to the new defaults
    assert new == {"lr": 0.01, "criterion__gamma": 1.0, "module__embedding_dim": 16,
                   "callbacks__unfreeze__phases": [(0, "head", 0.1)], "planter": "folder",
                   "planter__target": "tf", "decision__logit_adjustment": "dev"}
    with pytest.raises(ValueError, match="gamma=1.0 and criterion__gamma=2.0"):
        translate_params(PlantClassifier, {"gamma": 1.0, "criterion__gamma": 2.0})


def test_a_model_saved_before_the_reshape_loads_and_predicts_identically():
    # tests/neural/data/legacy_plant/README.md says how the folder was made
    want = np.load(LEGACY / "expected.npz")
    inputs = json.loads((LEGACY / "inputs.json").read_text())
    clf = load_model(LEGACY / "model")
    texts = inputs["texts"]
    # float32 arithmetic: another CPU's matrix kernels may round the last place differently
    # (the folder was made on another machine), so the scores agree to a few float32 ulps
    np.testing.assert_array_max_ulp(np.asarray(clf.predict_proba(texts), dtype=np.float32),
                                    want["proba"].astype(np.float32), maxulp=4)
    idx, scores = clf.predict_top_k(texts, k=3)
    np.testing.assert_array_equal(idx, want["top_idx"])
    np.testing.assert_array_max_ulp(np.asarray(scores, dtype=np.float32),
                                    want["top_scores"].astype(np.float32), maxulp=4)
    np.testing.assert_array_equal(clf.predict(texts).toarray(), want["predict"])
    assert clf.k_ == inputs["k"] and clf.fusion_weight_ == inputs["fusion_weight"]
    # saved with the fixed decision="top_k", before the rule was chosen on dev: it applies it
    assert clf.decision == "top_k" and clf.decision_ == "top_k" and clf.label_thresholds_ is None
    from xplant import load_saved
    _, rule = load_saved(LEGACY / "model")
    assert (rule["rule"], rule["k"], rule["thresholds"]) == ("top_k", inputs["k"], None)
    # its old parameter names are read in today's spelling
    params = clf.get_params(deep=False)
    assert params["criterion__gamma"] == 1.5 and params["criterion__label_smoothing"] == 0.05
    assert params["criterion__hard_negatives"] == 4 and params["module__max_length"] == 64
    assert params["optimizer__weight_decay"] == 0.02 and params["decision__max_k"] == 4
    assert params["module__embedding_dim"] == 16
    # the saved planter's default architecture (100) is left to the classifier's
    assert "module__embedding_dim" not in clf.planter.get_params(deep=False)


def test_fit_leaves_torch_threads_and_rng_as_it_found_them(forty):
    before_threads = torch.get_num_threads()
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    _fit(forty, n_jobs=1 if before_threads != 1 else 2)
    assert torch.get_num_threads() == before_threads
    assert torch.equal(torch.get_rng_state(), state)
    texts, Y = forty
    AttentionPlanter(max_epochs=1, n_jobs=1 if before_threads != 1 else 2).fit(texts, Y)
    assert torch.get_num_threads() == before_threads
    assert torch.equal(torch.get_rng_state(), state)


def test_plant_classifier_is_a_multilabel_classifier():
    clf = PlantClassifier()
    assert is_classifier(clf)
    tags = clf.__sklearn_tags__()
    assert tags.classifier_tags.multi_label and tags.target_tags.multi_output


def test_a_fitted_shortlisted_model_holds_no_dev_split(make_corpus):
    texts, Y = make_corpus(n_docs=60, n_labels=6, seed=2)
    n_dev, n_labels = 20, Y.shape[1]
    clf = PlantClassifier(module__embedding_dim=8, module__hidden_dim=8,
                          module__attention_dim=8, module__pool_size=8, max_epochs=2,
                          verbose=0, n_jobs=1, stage1_weight=0.1, shortlist="linear",
                          n_candidates=3, planter=AttentionPlanter(max_epochs=1))
    clf.fit(texts[:40], Y[:40], validation_data=(texts[40:], Y[40:]))

    def arrays(obj):
        for name, value in vars(obj).items():
            if isinstance(value, np.ndarray) or sp.issparse(value):
                yield name, value
            elif isinstance(value, (tuple, list)):
                for v in value:
                    if isinstance(v, np.ndarray) or sp.issparse(v):
                        yield name, v

    for owner in (clf, clf.planter_):
        for name, value in arrays(owner):
            assert value.shape[0] != n_dev, f"{type(owner).__name__}.{name} {value.shape}"
    assert clf.dev_docs_ is None and clf.dev_Y_ is None and clf.shortlist_training_ is None
    assert clf.planter_.dev_dataset_ is None and clf.planter_.dev_full_ is None
    assert np.isfinite(clf.predict_proba(texts[40:45])).all()        # prediction needs none of it
    assert n_labels == clf.n_labels_


@pytest.mark.parametrize("dev", ["none", "unlabelled"])
def test_every_dev_choice_without_labelled_dev_data_falls_back_alike(make_corpus, dev):
    from xplant.model_selection import NoDevDataWarning
    texts, Y = make_corpus(n_docs=50, n_labels=5, seed=4)
    clf = PlantClassifier(module__embedding_dim=8, module__hidden_dim=8, module__attention_dim=8,
                          module__pool_size=8, max_epochs=2, verbose=0, n_jobs=1,
                          stage1_weight="dev", shortlist="linear", n_candidates=3, fusion="dev",
                          decision__logit_adjustment="dev",
                          validation_fraction=None, planter=AttentionPlanter(max_epochs=1))
    fit = {} if dev == "none" else {
        "validation_data": (texts[40:], sp.csr_matrix((10, Y.shape[1]), dtype=np.int64))}
    with pytest.warns(NoDevDataWarning) as caught:
        clf.fit(texts[:40], Y[:40], **fit)
    ours = [w for w in caught if issubclass(w.category, NoDevDataWarning)]
    assert len(ours) == 1                                    # one warning for all of them
    names = {"epoch", "stage1_weight", "shortlist_C", "fusion", "logit_adjustment", "decision",
             "k", "threshold"}
    assert set(clf.dev_choices_) == names
    for name, record in clf.dev_choices_.items():            # the same fields, the same way
        assert set(record) == {"name", "family", "criterion", "value", "scores", "on_dev"}
        assert record["name"] == name and record["on_dev"] is False and record["scores"] == []
        assert f"{name}=" in str(ours[0].message)
    assert clf.best_epoch_ == 2 and clf.stage1_weight_ == 0.1 and clf.logit_adjustment_ == 0.0
    assert clf.fusion_weight_ == 0.5 and clf.threshold_ == 0.5
    assert clf.k_ == round(Y[:40].nnz / 40)
    assert clf.decision_ == "top_k" and clf.label_thresholds_ is None    # decision="dev"

def test_dev_choices_record_every_candidate_and_are_saved(make_corpus, tmp_path):
    texts, Y = make_corpus(n_docs=60, n_labels=5, seed=6)
    clf = PlantClassifier(module__embedding_dim=8, module__hidden_dim=8, module__attention_dim=8,
                          module__pool_size=8, max_epochs=2, verbose=0, n_jobs=1,
                          stage1_weight=0.0, shortlist="linear", n_candidates=3,
                          decision__max_k=3, planter=AttentionPlanter(max_epochs=1))
    clf.fit(texts[:45], Y[:45], validation_data=(texts[45:], Y[45:]))
    ch = clf.dev_choices_
    assert [c for c, _ in ch["k"]["scores"]] == [1, 2, 3] and ch["k"]["value"] == clf.k_
    assert ch["k"]["family"] == "decision" and ch["k"]["criterion"] == "micro_f1"
    best = max(s for _, s in ch["k"]["scores"])
    assert dict((c, s) for c, s in ch["k"]["scores"])[clf.k_] == best
    assert [c for c, _ in ch["decision"]["scores"]] == ["top_k", "threshold",
                                                        "per_label_threshold"]
    assert ch["decision"]["value"] == clf.decision_ and ch["decision"]["family"] == "decision"
    assert ch["epoch"]["family"] == "ranking" and ch["epoch"]["criterion"] == "map"
    assert [c for c, _ in ch["epoch"]["scores"]] == [1, 2]
    assert [s for _, s in ch["epoch"]["scores"]] == [h["valid_map"] for h in clf.history]
    # each calibration (the plain sigmoid, and the scaling fitted on dev where it differs)
    # competes at the 11 α of the grid
    alphas = {}
    for (alpha, ab), _ in ch["fusion"]["scores"]:
        alphas.setdefault(tuple(ab), []).append(alpha)
    assert list(alphas)[0] == (1.0, 0.0) and len(alphas) in (1, 2)
    assert all(a == [i / 10 for i in range(11)] for a in alphas.values())
    assert ch["fusion"]["value"] == [clf.fusion_weight_, list(clf.shortlist_calibration_)]
    again = load_model(clf.save(tmp_path / "m"))
    assert again.dev_choices_ == json.loads(json.dumps(ch))


def test_the_planter_criterion_has_one_setting_per_name():
    assert AttentionPlanter(criterion__k=5).resolved_params()["criterion__k"] == 5
    assert AttentionPlanter().resolved_params()["criterion__k"] == 50
    assert AttentionPlanter().resolved_params()["criterion__kind"] == "lambda"
    assert AttentionPlanter().resolved_params()["criterion__sigma"] == 1.0
    # the named spellings of earlier releases: refused in code, naming the one spelling;
    # read in a saved config or a --set option, nested under a classifier's planter too
    with pytest.raises(TypeError, match=r"ndcg_k=\.\.\. is now criterion__k=\.\.\."):
        AttentionPlanter(ndcg_k=7)
    with pytest.raises(TypeError, match=r"stage1_loss=\.\.\. is now criterion__kind"):
        AttentionPlanter().set_params(stage1_loss="mse")
    assert translate_params(AttentionPlanter, {"ndcg_k": 7, "sigma": 0.5, "stage1_loss": "lambda"}) \
        == {"criterion__k": 7, "criterion__sigma": 0.5}
    assert translate_params(PlantClassifier, {"planter__ndcg_k": 7, "stage1_loss": "mse"}) \
        == {"planter__criterion__k": 7, "planter__criterion__kind": "mse"}
    with pytest.raises(TypeError, match=r"planter=AttentionPlanter\(criterion__kind=\.\.\.\)"):
        PlantClassifier(stage1_loss="mse")
    clf = PlantClassifier(criterion__gamma=0.5)
    assert clf.resolved_params()["criterion__gamma"] == 0.5
    assert clf.resolved_params()["module__pool_size"] == 128
    assert clf.resolved_params()["decision__max_k"] == 10


def test_decision_settings_are_set_on_a_fitted_model_without_reinitialising(forty):
    clf = _fit(forty)
    weights = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    clf.set_params(decision="threshold", decision__max_k=3)
    assert clf.decision == "threshold" and clf.get_params()["decision__max_k"] == 3
    assert all(torch.equal(v, clf.module_.state_dict()[k]) for k, v in weights.items())
    with pytest.raises(TypeError, match="max_k=... is now decision__max_k"):
        clf.set_params(max_k=3)


def test_planter_settings_in_the_constructor_reach_the_planter(forty):
    """``PlantClassifier(planter__max_epochs=2)`` is the skorch spelling of
    ``set_params(planter__max_epochs=2)``: it survives ``clone`` and reaches Stage 1."""
    texts, Y = forty
    clf = clone(PlantClassifier(max_epochs=1, verbose=0, n_jobs=1, stage1_weight=0.0,
                                validation_fraction=None, planter__max_epochs=2))
    clf.fit(texts, Y)
    assert clf.planter_.max_epochs == 2 and len(clf.planter_.history) == 2
    with pytest.raises(ValueError, match=r"planter__max_epochs=2 and planter=AttentionPlanter\("
                                         r"max_epochs=3\)"):
        PlantClassifier(max_epochs=1, verbose=0, validation_fraction=None,
                        planter=AttentionPlanter(max_epochs=3), planter__max_epochs=2).fit(texts, Y)
