"""Cache entries are right or absent: a checksum in the header, checked on read, atomic writes."""

import json
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xplant._cache import CHECKSUM_KEY, entry_checksum, read_entry, write_entry


def _data_start(raw):
    """Where a safetensors file's data begins: after its 8-byte length and JSON header."""
    return 8 + struct.unpack("<Q", raw[:8])[0]


def test_an_entry_stores_the_sha256_of_its_arrays_in_its_header(tmp_path):
    E = np.arange(12, dtype=np.float16).reshape(3, 4)
    path = write_entry(tmp_path / "e" / "x.safetensors", {"embeddings": E})
    raw = path.read_bytes()
    header = json.loads(raw[8:_data_start(raw)])
    assert header["__metadata__"] == {CHECKSUM_KEY: entry_checksum({"embeddings": E})}
    np.testing.assert_array_equal(read_entry(path)["embeddings"], E)


@pytest.mark.parametrize("damage", ["0xff tail", "zero tail", "cut short", "no checksum",
                                    "not safetensors"])
def test_a_damaged_entry_reads_as_absent(tmp_path, damage):
    from safetensors.numpy import save_file
    E = np.linspace(-1, 1, 64, dtype=np.float16).reshape(8, 8)
    path = write_entry(tmp_path / "x.safetensors", {"embeddings": E})
    raw = bytearray(path.read_bytes())
    if damage == "0xff tail":
        raw[-16:] = b"\xff" * 16                  # float16 NaN, header and size intact
    elif damage == "zero tail":
        raw[-16:] = b"\x00" * 16
    elif damage == "cut short":
        raw = raw[:-10]
    elif damage == "not safetensors":
        raw = bytearray(b"hello")
    if damage == "no checksum":                   # an entry of an xplant without checksums
        save_file({"embeddings": E}, str(path))
    else:
        path.write_bytes(bytes(raw))
    assert read_entry(path) is None


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 127), st.integers(1, 255))
def test_any_changed_data_byte_is_caught(tmp_path_factory, where, flip):
    E = np.linspace(-1, 1, 64, dtype=np.float16).reshape(8, 8)
    path = write_entry(tmp_path_factory.mktemp("e") / "x.safetensors", {"embeddings": E})
    raw = bytearray(path.read_bytes())
    raw[_data_start(raw) + where] ^= flip
    path.write_bytes(bytes(raw))
    assert read_entry(path) is None


def test_a_writer_that_fails_leaves_no_entry_and_no_half_file(tmp_path, monkeypatch):
    import safetensors.numpy

    def half(arrays, filename, metadata=None):
        with open(filename, "wb") as fh:
            fh.write(b"\x10\x00\x00\x00")          # half a header, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safetensors.numpy, "save_file", half)
    with pytest.raises(OSError):
        write_entry(tmp_path / "x.safetensors", {"embeddings": np.zeros((2, 2), np.float16)})
    assert os.listdir(tmp_path) == []


def test_a_damaged_embeddings_entry_is_computed_again(tmp_path, monkeypatch):
    """A fit with an encoder, the entry's last 128 data bytes overwritten (0xFF, then zeros),
    a refit: the same text signals, the entry computed again and rewritten whole."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch
    from sklearn.utils import Bunch
    from transformers import AutoTokenizer, BertConfig, BertModel
    from xplant.linear import make_tfidf_ovr
    from xplant.neural.backbones import default_pretrained_path
    from xplant.unseen import DescriptionFusion, DescriptionRanker
    monkeypatch.setenv("XPLANT_CACHE_DIR", str(tmp_path / "cache"))
    tok = AutoTokenizer.from_pretrained(str(default_pretrained_path()))
    torch.manual_seed(0)
    enc = tmp_path / "encoder"
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1,
                         num_attention_heads=2, intermediate_size=64,
                         max_position_embeddings=128)).save_pretrained(enc)
    tok.save_pretrained(enc)
    words = {"A10": "fever cough", "B20": "fracture femur", "C30": "rash itch", "D40": "chest pain"}
    extra = {"E50": "headache migraine", "E51": "vomiting nausea", "F60": "back pain lumbar",
             "G70": "dizziness vertigo", "H80": "ear infection otitis",
             "J90": "sore throat pharyngitis", "K11": "diarrhea gastroenteritis"}
    codes = list(words) + list(extra)
    cat = Bunch(label_names=np.array(codes), label_descriptions=np.array(
        [{**words, **extra}[c] for c in codes], dtype=object),
        label_synonyms=[[] for _ in codes], label_parents=[[] for _ in codes])
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for _ in range(40):
        labs = [str(x) for x in rng.choice(list(words), size=rng.integers(1, 3), replace=False)]
        texts.append(" ".join(words[l] for l in labs) + " patient seen")
        labels.append(labs)
    note = ["The patient reports diarrhea and gastroenteritis since Monday."]

    def text_signals():
        f = DescriptionFusion(make_tfidf_ovr(min_df=1, random_state=0),
                              ranker=DescriptionRanker(encoder="hf:" + str(enc),
                                                       encoder_threshold=0.0),
                              weight=1.0, seen_weight=0.0, near_weight=0.0, family_weight=0.0,
                              prior_weight=0.0).fit(texts, labels, label_names=list(words),
                                                    label_descriptions=list(words.values()),
                                                    catalogue=cat)
        return {s["label"]: s["text"] for s in f.suggest_unseen(note, k=7)[0]}

    clean = text_signals()
    entry = next((tmp_path / "cache" / "embeddings").iterdir())
    good = entry.read_bytes()
    for byte in (b"\xff", b"\x00"):
        raw = bytearray(good)
        raw[-128:] = byte * 128
        entry.write_bytes(bytes(raw))
        assert text_signals() == pytest.approx(clean)
        assert entry.read_bytes() == good
