"""Every saved kind through the one loader: each kind saves and loads back through
``load_saved`` with the same scores, and a folder of an unknown kind, of a newer version
of a known kind or of an older one is refused naming its ``config.json``."""

import json
import shutil

import numpy as np
import pytest

from xplant import load_saved
from xplant.persistence._codec import check_format, format_kind
from xplant.persistence import saved_kinds

def _save_fusion(model, folder):
    from xplant.unseen import save_description_fusion
    save_description_fusion(model, folder)


def _save_linear(model, folder):
    from xplant.linear import save_linear
    save_linear(model, folder)


#: Each kind saved by its own saver (the one loader reads them all).
SAVERS = {"linear": _save_linear, "description-fusion": _save_fusion,
          "plant-classifier": lambda model, folder: model.save(folder)}


def test_the_registry_is_every_kind_this_test_saves():
    assert set(saved_kinds()) == set(SAVERS)


@pytest.fixture(scope="module", params=sorted(SAVERS))
def saved(request, tmp_path_factory, fit_kind):
    folder = tmp_path_factory.mktemp(request.param) / "model"
    model = fit_kind(request.param)
    SAVERS[request.param](model, folder)
    return request.param, folder, model


def _with_format(saved, tmp_path, tag):
    """A copy of the saved folder whose config.json names ``tag``."""
    _, folder, _ = saved
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config["format"] = tag
    (copy / "config.json").write_text(json.dumps(config))
    return copy


def test_each_kind_loads_back_through_the_one_loader(saved, kind_corpus):
    kind, folder, model = saved
    tag = json.loads((folder / "config.json").read_text())["format"]
    assert format_kind(tag) == (kind, 1)
    back, decision = load_saved(folder)
    assert type(back) is type(model) and back is not model
    texts, _ = kind_corpus(12, seed=1)
    got, want = (np.asarray(m.decision_function(texts)) for m in (back, model))
    if kind == "plant-classifier":
        # float32 network: the loaded copy's scores may differ in the last place in some
        # batches (measured: 1 of these 36 by 6e-8), never in the order of a row's labels
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(np.argsort(-got, axis=1, kind="stable"),
                                      np.argsort(-want, axis=1, kind="stable"))
    else:
        np.testing.assert_array_equal(got, want)
    assert decision["rule"] in ("top_k", "threshold", "per_label_threshold")


def test_a_newer_version_is_refused_naming_the_file(saved, tmp_path):
    kind, _, _ = saved
    copy = _with_format(saved, tmp_path, f"xplant-{kind}-2")
    with pytest.raises(ValueError, match=rf"{copy / 'config.json'}: format 'xplant-{kind}-2' was "
                                         r"written by a newer xplant \(version 2 .*upgrade"):
        load_saved(copy)


def test_an_older_version_is_refused_naming_the_file(saved, tmp_path):
    kind, _, _ = saved
    copy = _with_format(saved, tmp_path, f"xplant-{kind}-0")
    with pytest.raises(ValueError, match=rf"{copy / 'config.json'}: .*older version.*save the "
                                         "model again"):
        load_saved(copy)


@pytest.mark.parametrize("tag", ["xplant-forest-1", "sklearn-pipeline", None, 3])
def test_an_unknown_kind_is_refused_naming_the_file(saved, tmp_path, tag):
    copy = _with_format(saved, tmp_path, tag)
    with pytest.raises(ValueError, match=rf"{copy / 'config.json'}: format {tag!r} is no saved "
                                         r"xplant model .*'plant-classifier'"):
        load_saved(copy)


def test_check_format_tells_kind_and_version_apart():
    check_format("xplant-linear-1", "xplant-linear-1", "c.json")
    with pytest.raises(ValueError, match="c.json: format 'xplant-mig-relevance-1' is not "
                                         "'xplant-linear-1'; do this"):
        check_format("xplant-mig-relevance-1", "xplant-linear-1", "c.json", hint="do this")
    with pytest.raises(ValueError, match="newer xplant .version 12 of the 'linear' format; this "
                                         "xplant reads version 1"):
        check_format("xplant-linear-12", "xplant-linear-1", "c.json")
    assert format_kind("xplant-linear-") == (None, None)
    assert format_kind("xplant--1") == (None, None)


def test_a_saved_relevance_of_a_newer_version_is_refused(tmp_path, kind_corpus):
    from xplant import MIGRelevance
    from xplant.relevance import load_relevance, save_relevance
    texts, Y = kind_corpus()
    folder = tmp_path / "relevance"
    save_relevance(MIGRelevance(tokenizer="word").fit(texts, Y), folder)
    meta = json.loads((folder / "relevance.json").read_text())
    assert format_kind(meta["format"]) == ("mig-relevance", 1)
    meta["format"] = "xplant-mig-relevance-2"
    (folder / "relevance.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=rf"{folder / 'relevance.json'}: .*newer xplant"):
        load_relevance(folder)
