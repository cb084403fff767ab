"""RefitOnDev on PlantClassifier: choose on dev, then refit on train + dev with every choice pinned."""

import warnings

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from xplant.model_selection import NoDevDataWarning, RefitOnDev
from xplant.neural import AttentionPlanter, PlantClassifier, load_model
from xplant.relevance import MIGRelevance


@pytest.fixture(scope="module")
def refit(make_corpus, tiny):
    texts, Y = make_corpus(n_docs=60, n_labels=8, seed=3)
    clf = PlantClassifier(**dict(tiny, max_epochs=2, planter=AttentionPlanter(max_epochs=1,
                                                                            verbose=0),
                                 shortlist="linear", n_candidates=4, decision="dev",
                                 decision__logit_adjustment="dev"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoDevDataWarning)       # the refit falls back on nothing
        model = RefitOnDev(Pipeline([("mig", MIGRelevance()), ("clf", clf)]))
        model.fit(texts[:40], Y[:40], validation_data=(texts[40:], Y[40:]))
    return model, texts


def test_the_refit_trains_on_train_plus_dev_for_the_chosen_epochs(refit):
    model, _ = refit
    first, again = model.first_.named_steps["clf"], model.estimator_.named_steps["clf"]
    assert first.n_train_documents_ == 40 and again.n_train_documents_ == 60
    assert (model.n_train_, model.n_dev_) == (40, 20)
    # the default (scaled) epoch count: the chosen one times (40 + 20) / 40, rounded
    assert first.dev_choices_["epoch"]["value"] == first.best_epoch_
    assert len(again.history) == max(1, int(round(first.best_epoch_ * 60 / 40)))
    assert model.refit_params_["clf__max_epochs"] == len(again.history)
    assert all(h.get("valid_map") is None for h in again.history)      # no dev: nothing scored


def test_the_refit_takes_every_choice_of_the_first_fit_as_fixed(refit):
    model, texts = refit
    first, again = model.first_.named_steps["clf"], model.estimator_.named_steps["clf"]
    assert all(c["on_dev"] or c.get("fixed") for c in first.dev_choices_.values())
    assert first.dev_choices_["stage1_weight"]["fixed"] is True           # given: 0.1
    assert set(first.dev_choices_) - set(again.dev_choices_) == {"decision", "shortlist_C"}
    for name, record in again.dev_choices_.items():
        assert record["fixed"] is True and record["scores"] == []
        if name == "epoch":              # scaled by (40 + 20) / 40 (the default refit)
            assert record["value"] == len(again.history)
            continue
        assert record["value"] == first.dev_choices_[name]["value"], name
    assert again.decision_ == first.decision_ and again.k_ == first.k_
    assert again.threshold_ == first.threshold_
    assert again.fusion_weight_ == first.fusion_weight_
    assert again.shortlist_calibration_ == first.shortlist_calibration_
    assert again.logit_adjustment_ == first.logit_adjustment_
    assert again.stage1_weight_ == first.stage1_weight_ == 0.1
    # the shortlist's C chosen on dev, refitted on the 60 documents
    assert again.shortlist_.get_params()["ovr__C"] == first.dev_choices_["shortlist_C"]["value"]
    assert again.shortlist_.decision_function(texts[:2]).shape == (2, 8)
    assert model.predict(texts[:5]).shape == (5, 8)
    np.testing.assert_array_equal(model.predict(texts[:5]).toarray(),
                                  model.estimator_.predict(texts[:5]).toarray())


def test_fixed_values_need_no_dev_data(make_corpus, tiny, tmp_path):
    texts, Y = make_corpus(n_docs=40, n_labels=6, seed=5)
    clf = PlantClassifier(**dict(tiny, max_epochs=2, planter=AttentionPlanter(max_epochs=1,
                                                                            verbose=0),
                                 shortlist="linear", n_candidates=3, patience=None,
                                 validation_fraction=None, fusion=(0.4, (2.0, -1.0)),
                                 decision="per_label_threshold", decision__k=2,
                                 decision__threshold=0.3,
                                 decision__thresholds=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]))
    with pytest.warns(NoDevDataWarning, match="shortlist_C=") as caught:   # C alone falls back
        clf.fit(texts, Y)
    assert "epoch" not in str(caught[0].message) and "fusion" not in str(caught[0].message)
    assert len(clf.history) == 2 and clf.fusion_weight_ == 0.4
    assert clf.shortlist_calibration_ == (2.0, -1.0)
    assert clf.label_thresholds_.tolist() == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert (clf.k_, clf.threshold_) == (2, 0.3)
    again = load_model(clf.save(tmp_path / "m"))           # the fixed values are saved
    assert again.fusion == [0.4, [2.0, -1.0]] or again.fusion == (0.4, (2.0, -1.0))
    assert again.dev_choices_["fusion"]["fixed"] is True and again.patience is None
    np.testing.assert_array_equal(again.predict(texts[:6]).toarray(),
                                  clf.predict(texts[:6]).toarray())
    with pytest.raises(ValueError, match=r"fusion as a pair is \(alpha, \(a, b\)\)"):
        clf.set_params(fusion=(0.4, 2.0)).fit(texts, Y)
