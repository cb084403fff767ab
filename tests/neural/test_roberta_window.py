"""RoBERTa-style position ids start at padding_idx + 1: the window must leave room for them."""

import pytest
import torch

pytest.importorskip("transformers")

from xplant.neural.backbones import HFEncoder  # noqa: E402

MAX_POS = 34
CLS, PAD, SEP = 0, 1, 2


def _folder(tmp_path_factory, kind):
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel
    cls, model = (RobertaConfig, RobertaModel) if kind == "roberta" else (BertConfig, BertModel)
    config = cls(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=MAX_POS, pad_token_id=PAD)
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp(kind)
    model(config).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def roberta(tmp_path_factory):
    return HFEncoder(_folder(tmp_path_factory, "roberta"), CLS, SEP, PAD).eval()


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return HFEncoder(_folder(tmp_path_factory, "bert"), CLS, SEP, PAD).eval()


def _encode(enc, n):
    ids = torch.arange(n, dtype=torch.long)[None] % 40 + 5
    with torch.no_grad():
        return enc(ids, torch.ones_like(ids, dtype=torch.bool))


def test_roberta_window_leaves_room_for_its_position_offset(roberta):
    # 34 positions, ids counted from padding_idx + 1 = 2: 32 ids per window, 30 besides [CLS]/[SEP].
    assert roberta.window == MAX_POS - PAD - 1 - 2 == 30


@pytest.mark.parametrize("n", list(range(28, 36)) + list(range(58, 67)))
def test_roberta_encodes_every_length_around_the_window_edges(roberta, n):
    # Before: 31, 32, 62 and 64 tokens raised "index 34 is out of bounds for dimension 1 with size 34".
    H = _encode(roberta, n)
    assert H.shape == (1, n, 16) and torch.isfinite(H).all()


def test_roberta_window_equals_the_plain_model_on_one_window(roberta):
    ids = list(range(5, 35))                                 # exactly one full window: 30 ids
    with torch.no_grad():
        H = _encode(roberta, 30)[0]
        plain = roberta.model(input_ids=torch.tensor([[CLS, *ids, SEP]])).last_hidden_state[0, 1:-1]
    torch.testing.assert_close(H, plain, atol=2e-4, rtol=1e-3)   # masked vs unmasked kernels


@pytest.mark.parametrize("n", [31, 32, 33, 62, 64, 65])
def test_bert_window_is_unchanged(bert, n):
    assert bert.window == MAX_POS - 2
    assert _encode(bert, n).shape == (1, n, 16)
