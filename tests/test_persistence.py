"""The one persistence package: a fitted part defined here is saved and loaded with every kind
by one registration call; every file of a saved folder is written through its codec; no module
outside it imports safetensors or writes a saved folder's JSON."""

import ast
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from xplant import persistence
from xplant.persistence import load, load_saved, register_part, save

ROOT = Path(__file__).resolve().parents[1] / "xplant"
class LabelTemperature:
    """A fitted part this test defines: a temperature per label and a note."""

    def __init__(self, temperature, note):
        self.temperature, self.note = temperature, note

    def to_dict(self):
        return {"temperature": self.temperature, "note": self.note}

    @classmethod
    def from_dict(cls, state):
        return cls(np.asarray(state["temperature"]), str(state["note"]))

    def __eq__(self, other):
        return (type(other) is LabelTemperature and self.note == other.note
                and self.temperature.dtype == other.temperature.dtype
                and np.array_equal(self.temperature, other.temperature))


class Unregistered(LabelTemperature):
    """A part whose class nobody registered."""


register_part(LabelTemperature, "test-label-temperature")


@pytest.fixture(scope="module", params=["description-fusion", "linear", "plant-classifier"])
def fitted(request, fit_kind):
    return request.param, fit_kind(request.param)


def _last(model):
    return model.steps[-1][1] if hasattr(model, "steps") else model


def test_a_new_part_is_saved_and_loaded_with_every_kind(fitted, tmp_path, kind_corpus):
    kind, model = fitted
    part = LabelTemperature(np.array([0.5, 1.0, 2.25], dtype=np.float32), "é, chosen on dev")
    final = _last(model)
    own = dict(final.parts_)                    # every estimator keeps its label space there
    final.parts_["temperature"] = part
    try:
        folder = save(model, tmp_path / "m")
    finally:
        final.parts_ = own
    assert sorted(p.name for p in (folder / "parts").iterdir()) == [
        "temperature.json", "temperature.safetensors"]
    back, _ = load_saved(folder)
    assert _last(back).parts_["temperature"] == part
    assert set(_last(back).parts_) == set(own) | {"temperature"}
    texts, _ = kind_corpus(6, seed=1)
    np.testing.assert_allclose(back.decision_function(texts), model.decision_function(texts),
                               rtol=1e-6, atol=1e-7)


def test_a_part_of_an_unregistered_class_is_refused_and_nothing_is_left(tmp_path,
                                                                               fit_kind):
    model = fit_kind("linear")
    _last(model).parts_["mine"] = Unregistered(np.zeros(3), "x")
    with pytest.raises(TypeError, match=r"parts_\['mine'\] \(Unregistered\): its class is not "
                                        r"registered; call xplant.persistence.register_part"):
        save(model, tmp_path / "m")
    assert not (tmp_path / "m").exists() and list(tmp_path.iterdir()) == []


def test_a_folder_naming_an_unknown_part_is_refused_naming_the_file(tmp_path, fit_kind):
    import json
    model = fit_kind("linear")
    _last(model).parts_["temperature"] = LabelTemperature(np.ones(3), "n")
    folder = save(model, tmp_path / "m")
    record = folder / "parts" / "temperature.json"
    state = json.loads(record.read_text())
    state["part"] = "os.system"
    record.write_text(json.dumps(state))
    with pytest.raises(ValueError, match=rf"{record}: the part 'os.system' is not registered"):
        load(folder)


def test_register_part_refuses_a_name_taken_by_another_class():
    with pytest.raises(ValueError, match="is registered for"):
        register_part(Unregistered, "test-label-temperature")
    with pytest.raises(TypeError, match="needs to_dict"):
        register_part(int)


@pytest.mark.parametrize("kind", ["linear", "description-fusion", "plant-classifier"])
def test_the_decision_rule_is_a_part_of_every_kind(tmp_path, fit_kind, kind_corpus, kind):
    """Every kind keeps its decision rule as the part ``parts_["decision_rule"]``: a rule set
    on a linear model or a fusion (as ``xplant run`` sets its dev choice), PLANT's chosen by
    fit; ``predict`` applies it, a saved folder keeps it, ``load_saved`` returns it."""
    from xplant._saved import decide
    from xplant.metrics import DecisionRule
    model = fit_kind(kind)
    final = _last(model)
    texts = kind_corpus()[0][:12]
    if kind != "plant-classifier":
        default = final.decision_rule_
        assert "decision_rule" not in final.parts_          # the default, until a rule is set
        assert (default.rule, default.k) == (("threshold", 1) if kind == "linear"
                                             else ("top_k", final.k_))
        rule = {"rule": "per_label_threshold", "k": 1, "threshold": 0.0,
                "thresholds": np.linspace(-0.4, 0.4, final.n_labels_)}
        final.decision_rule_ = rule
        assert final.decision_rule_ == DecisionRule.from_dict(rule)
    own = final.decision_rule_
    predicted = model.predict(texts)
    np.testing.assert_array_equal(sp.csr_matrix(predicted).toarray(),
                                  decide(model, texts, own.to_dict()).toarray())
    back, decision = load_saved(save(model, tmp_path / "m"))
    assert _last(back).decision_rule_ == own and DecisionRule.from_dict(decision) == own
    np.testing.assert_array_equal(sp.csr_matrix(back.predict(texts)).toarray(),
                                  sp.csr_matrix(predicted).toarray())
    if kind == "linear":                        # a new fit drops the rule set on the old one
        model.fit(*kind_corpus())
        assert _last(model).decision_rule_ == default


def test_records_are_kept_beside_the_model(tmp_path, fit_kind):
    svm = fit_kind("linear")
    folder = save(svm, tmp_path / "m", records={"row.json": {"row": "TF-IDF SVM"}})
    assert (folder / "row.json").read_text(encoding="utf-8") == '{"row": "TF-IDF SVM"}'
    with pytest.raises(ValueError, match="is a file of the saved model"):
        save(svm, tmp_path / "n", records={"config.json": {}})


# -- one writer ------------------------------------------------------------------------------

def _outside_persistence():
    for path in sorted(ROOT.rglob("*.py")):
        if "persistence" not in path.relative_to(ROOT).parts:
            yield path, ast.parse(path.read_text(encoding="utf-8"))


#: The JSON records of a saved folder or a checkpoint.
MODEL_JSON = ("config.json", "relevance.json", "planting.json", "fusion.json", "state.json")
WRITERS = ("write_text", "atomic_open", "atomic_path", "open", "dump", "dumps")


def test_no_module_outside_the_package_imports_safetensors():
    found = []
    for path, tree in _outside_persistence():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names
                      if n.split(".")[0] == "safetensors"]
    assert not found, found


def test_no_module_outside_the_package_writes_a_saved_folders_json():
    found = []
    for path, tree in _outside_persistence():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func.attr if isinstance(node.func, ast.Attribute) else \
                getattr(node.func, "id", "")
            if func not in WRITERS:
                continue
            where = [*node.args, *(k.value for k in node.keywords)] + (
                [node.func.value] if isinstance(node.func, ast.Attribute) else [])
            consts = {c.value for arg in where for c in ast.walk(arg)
                      if isinstance(c, ast.Constant)}
            if consts & set(MODEL_JSON):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_every_file_of_a_saved_folder_is_written_through_the_codec(tmp_path, monkeypatch,
                                                                    fit_kind, kind_corpus):
    """Save every kind, a planting, a checkpoint and a cache entry while the codec's one
    file primitive records what it writes: every file in those folders is among them."""
    pytest.importorskip("torch")
    import contextlib
    from xplant import _cache
    from xplant.persistence import _codec
    written = []
    real = _codec.atomic_path

    @contextlib.contextmanager
    def recording(path):
        with real(path) as tmp:
            yield tmp
        written.append(Path(path))

    monkeypatch.setattr(_codec, "atomic_path", recording)
    from xplant.neural import AttentionPlanter, PlantClassifier
    texts, Y = kind_corpus()
    plant = PlantClassifier(module__embedding_dim=8, module__hidden_dim=8,
                            module__attention_dim=8, module__pool_size=8, batch_size=8,
                            verbose=0, n_jobs=1, max_epochs=1, shortlist="linear",
                            checkpoint_dir=tmp_path / "checkpoints",
                            planter=AttentionPlanter(max_epochs=1, verbose=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plant.fit(texts, Y)
    folders = [save(plant, tmp_path / "plant"), save(fit_kind("linear"), tmp_path / "linear"),
               save(fit_kind("description-fusion"), tmp_path / "fusion"), tmp_path / "checkpoints",
               plant.planter_.save_planting(tmp_path / "planting")
               if getattr(plant, "planter_", None) is not None else None]
    _cache.write_entry(tmp_path / "cache" / "entry.safetensors", {"x": np.zeros(2)})
    folders.append(tmp_path / "cache")
    # a saved folder is written as <name>.tmp-<random>/ and renamed into place
    recorded = {re.sub(r"\.tmp-[^/]*", "", str(p)) for p in written}
    names = {p.name for p in written if ".tmp-ckpt-" in str(p)}       # a checkpoint's files
    files = [p for f in folders if f is not None for p in Path(f).rglob("*") if p.is_file()]
    assert len(files) > 20
    # the checkpoint folder's one-line pointer ``latest`` names a checkpoint: no saved data
    missed = [str(p) for p in files if p.name != "latest" and str(p) not in recorded and
              not (p.parent.name.startswith("ckpt-") and p.name in names)]
    assert not missed, missed


def test_the_package_lists_its_kinds_and_parts():
    assert persistence.saved_kinds()[:3] == ["plant-classifier", "description-fusion", "linear"]
    assert persistence.registered_parts()["test-label-temperature"] is LabelTemperature


def test_a_kind_registered_by_one_call_saves_and_loads_its_models(tmp_path, monkeypatch):
    from xplant.persistence import _kinds, register_kind
    from xplant.persistence._codec import atomic_folder, write_json
    monkeypatch.setattr(_kinds, "_KINDS", dict(_kinds._KINDS))     # this test's kind goes after

    class Constant:
        def __init__(self, value):
            self.value = value

    def save_constant(model, path, *, overwrite):
        with atomic_folder(path, overwrite=overwrite) as tmp:
            write_json(tmp / "config.json", {"format": "xplant-test-constant-1",
                                             "value": model.value})
        return path

    def load_constant(path, config):
        return Constant(config["value"])

    with pytest.raises(TypeError, match="cannot save Constant without pickle: no saved kind"):
        save(Constant(3), tmp_path / "before")
    register_kind("test-constant", accepts=lambda m: isinstance(m, Constant),
                  save=save_constant, load=load_constant)
    model, decision = load_saved(save(Constant(3), tmp_path / "m"))
    assert model.value == 3
    assert decision == {"rule": "top_k", "k": 10, "threshold": 0.5, "thresholds": None}  # no rule
    with pytest.raises(ValueError, match="registered already"):
        register_kind("test-constant", accepts=bool, save=save_constant, load=load_constant)


@pytest.mark.parametrize("loader", ["xplant.neural.classifier._io:read_model",
                                    "xplant.unseen._io:load_description_fusion",
                                    "xplant.linear._io:_set_label_space",
                                    "xplant.linear._io:read_rule",
                                    "xplant.unseen._io:_load_ranker"])
def test_a_loader_assigns_no_fitted_attribute_but_parts(loader):
    """No hand restore: each loader sets ``parts_``, whose parts restore every fitted
    attribute that reads them."""
    import importlib
    import inspect
    module, name = loader.split(":")
    if "neural" in module:
        pytest.importorskip("torch")
    tree = ast.parse(inspect.getsource(getattr(importlib.import_module(module), name)))
    assigned = {t.attr for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for t in node.targets for t in (t.elts if isinstance(t, ast.Tuple) else [t])
                if isinstance(t, ast.Attribute) and t.attr.endswith("_")}
    assert assigned == {"parts_"}


def test_a_linear_step_loader_sets_parts_but_for_library_state():
    """A linear step's own fitted model is one part, ``parts_["model"]``, restored whole (a
    label tree's native model read by its library into that part); by name the loader sets
    only what scikit-learn's TfidfVectorizer keeps (its vocabulary and idf, which it reads
    from its own attributes)."""
    import inspect
    from xplant.linear import _io
    tree = ast.parse(inspect.getsource(_io._load_step))
    assigned = {t.attr for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for t in node.targets for t in (t.elts if isinstance(t, ast.Tuple) else [t])
                if isinstance(t, ast.Attribute) and t.attr.endswith("_")}
    assert assigned == {"parts_", "vocabulary_", "fixed_vocabulary_", "idf_"}


@pytest.mark.parametrize("make", ["svm", "prior", "mentions"])
def test_a_loaded_linear_step_keeps_its_fitted_model_in_parts(tmp_path, kind_corpus, make):
    from xplant.linear import FrequencyPrior, MentionMatcher, OneVsRestLinear
    texts, Y = kind_corpus()
    if make == "svm":
        X = sp.random(len(texts), 12, density=0.4, format="csr", random_state=0)
        model, new = OneVsRestLinear(random_state=0).fit(X, Y), X[:6]
        attrs = ("weights_", "intercept_", "n_iter_", "n_features_in_")
    elif make == "prior":
        model, new = FrequencyPrior().fit(texts, Y), texts[:6]
        attrs = ("k_", "prior_")
    else:
        evidence = [[{"label": j, "spans": [(0, len(t.split()[0]))]} for j in row.indices]
                    for t, row in zip(texts, Y)]
        model, new = MentionMatcher().fit(texts, Y, evidence=evidence), texts[:6]
        attrs = ("mentions_", "n_words_", "evidence_record_", "k_")
    back = load(save(model, tmp_path / "m"))
    assert type(back.parts_["model"]) is type(model.parts_["model"])
    for attr in attrs:
        assert attr not in vars(back), attr                 # a view of the part
        a, b = getattr(back, attr), getattr(model, attr)
        np.testing.assert_equal(a.toarray() if sp.issparse(a) else a,
                                b.toarray() if sp.issparse(b) else b)
    np.testing.assert_array_equal(back.predict_proba(new) if make != "svm"
                                  else back.decision_function(new),
                                  model.predict_proba(new) if make != "svm"
                                  else model.decision_function(new))


def test_a_loaded_fusion_keeps_its_fitted_state_in_parts(fit_kind, tmp_path, kind_corpus):
    fusion = fit_kind("description-fusion")
    back = load(save(fusion, tmp_path / "m"))
    for attr in ("estimator_", "ranker_", "mentions_", "weight_", "seen_weight_", "k_",
                 "unseen_", "catalogue_", "dev_map_", "classes_", "label_frequency_"):
        assert attr not in vars(back), attr
    assert (back.weight_, back.seen_weight_, back.k_) == (fusion.weight_, fusion.seen_weight_,
                                                         fusion.k_)
    assert back.unseen_.tolist() == fusion.unseen_.tolist() == [3]
    assert back.dev_map_ == fusion.dev_map_ and back.catalogue_ is None
    texts, _ = kind_corpus(5, seed=2)
    np.testing.assert_array_equal(back.decision_function(texts), fusion.decision_function(texts))
