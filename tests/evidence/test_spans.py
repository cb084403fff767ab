import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from xplant.evidence import merge_spans, mig_highlighter


def _word_offsets(text):
    """Offsets of whitespace-separated tokens."""
    out, i = [], 0
    for piece in text.split(" "):
        out.append([i, i + len(piece)])
        i += len(piece) + 1
    return np.asarray(out, dtype=np.int64)


def test_merge_adjacent_tokens_sum_weights_and_rank():
    text = "Paciente con fiebre alta y tos seca desde ayer"
    off = _word_offsets(text)
    w = np.array([0.01, 0.02, 0.30, 0.20, 0.01, 0.16, 0.15, 0.05, 0.10])
    # cut = 0.15: fiebre+alta, tos+seca
    spans = merge_spans(off, w, text=text, top_spans=None)
    assert [(s["text"], s["start"], s["end"]) for s in spans] == [("fiebre alta", 13, 24), ("tos seca", 27, 35)]
    assert spans[0]["weight"] == pytest.approx(0.50)
    assert spans[1]["weight"] == pytest.approx(0.31)
    # explicit absolute cut keeps "ayer" too; top_spans truncates after ranking
    spans = merge_spans(off, w, cut=0.1, text=text, top_spans=None)
    assert [s["text"] for s in spans] == ["fiebre alta", "tos seca", "ayer"]
    assert [s["text"] for s in merge_spans(off, w, cut=0.1, text=text, top_spans=2)] == ["fiebre alta", "tos seca"]
    # without text: raw token offsets, text None
    assert merge_spans(off, w, top_spans=1) == [{"start": 13, "end": 24, "text": None, "weight": pytest.approx(0.5)}]


def test_below_cut_token_breaks_a_run_but_empty_special_token_does_not():
    text = "fiebre y tos"
    off = np.array([[0, 0], [0, 6], [7, 8], [9, 12], [0, 0]])  # CLS ... SEP
    w = np.array([0.9, 0.8, 0.1, 0.7, 0.9])  # special tokens ignored even if attended
    assert [s["text"] for s in merge_spans(off, w, text=text)] == ["fiebre", "tos"]  # cut 0.4 from max 0.8
    off2 = np.array([[0, 6], [6, 6], [-1, -1], [9, 12]])  # an empty and an unplaced token
    w2 = np.array([0.8, 0.0, 0.0, 0.7])
    (span,) = merge_spans(off2, w2)  # no text: raw hull of the run
    assert (span["start"], span["end"], span["weight"]) == (0, 12, pytest.approx(1.5))


def test_wordpieces_snap_to_whole_word_and_merge():
    text = "Tiene hipertensión arterial."
    # hiper ##tens ##ión
    off = np.array([[0, 5], [6, 11], [11, 15], [15, 18], [19, 27], [27, 28]])
    w = np.array([0.0, 0.9, 0.1, 0.8, 0.05, 0.0])
    (span,) = merge_spans(off, w, text=text)
    assert (span["start"], span["end"], span["text"]) == (6, 18, "hipertensión")
    assert span["weight"] == pytest.approx(1.7)


def test_trim_punctuation_and_drop_punctuation_only_spans():
    text = "dolor, (fiebre) ; tos"
    off = np.array([[0, 6], [7, 15], [16, 17], [18, 21]])
    w = np.array([1.0, 0.9, 0.95, 0.0])
    spans = merge_spans(off, w, text=text)
    # one run covering "dolor, (fiebre) ;" trimmed to its word edges
    assert [(s["start"], s["end"], s["text"]) for s in spans] == [(0, 14, "dolor, (fiebre")]
    only_punct = merge_spans(np.array([[16, 17], [18, 21]]), np.array([1.0, 0.1]), text=text)
    assert only_punct == []


def test_unicode_accents_combining_marks_and_emoji():
    text = "Mujer con cefale\u0301a 😀 y náuseas."
    # a tokenizer that split off the combining acute accent
    off = np.array([[0, 5], [6, 9], [10, 16], [16, 18], [19, 20], [21, 22], [23, 30], [30, 31]])
    w = np.array([0.0, 0.0, 0.9, 0.0, 0.5, 0.0, 0.8, 0.0])
    spans = merge_spans(off, w, text=text, top_spans=None)
    assert [s["text"] for s in spans] == ["cefale\u0301a", "náuseas"]
    for s in spans:
        assert text[s["start"] : s["end"]] == s["text"]
    # the emoji alone is not a word: nothing left after trimming
    assert merge_spans(np.array([[19, 20]]), np.array([1.0]), text=text) == []


def test_zero_or_negative_weights_give_no_span_with_default_cut():
    off = np.array([[0, 3], [4, 7]])
    assert merge_spans(off, np.zeros(2)) == []
    assert merge_spans(off, np.array([-1.0, -2.0])) == []
    assert merge_spans(np.zeros((0, 2), dtype=np.int64), np.zeros(0)) == []


@pytest.mark.parametrize(
    "off, w, kwargs, err, match",
    [
        (np.array([[0, 3]]), np.array([1.0, 2.0]), {}, ValueError, "shape"),
        (np.array([0, 3]), np.array([1.0]), {}, ValueError, "n_tokens, 2"),
        (np.array([[0.0, 3.0]]), np.array([1.0]), {}, TypeError, "integer"),
        (np.array([[3, 1]]), np.array([1.0]), {}, ValueError, "start <= end"),
        (np.array([[-1, 1]]), np.array([1.0]), {}, ValueError, "start <= end"),
        (np.array([[0, 3]]), np.array([np.nan]), {}, ValueError, "NaN"),
        (np.array([[0, 9]]), np.array([1.0]), {"text": "abc"}, ValueError, "beyond the text"),
        (np.array([[0, 3]]), np.array([1.0]), {"top_spans": 0}, ValueError, "top_spans"),
        (np.array([[0, 3]]), np.array([1.0]), {"cut": float("inf")}, ValueError, "cut"),
    ],
)
def test_merge_spans_errors(off, w, kwargs, err, match):
    with pytest.raises(err, match=match):
        merge_spans(off, w, **kwargs)


ALPHABET = "abcñáé\u0301 😀.,ß"


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=ALPHABET, min_size=1, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=12),
    seed=st.integers(0, 2**16),
)
def test_round_trip_and_word_boundaries_property(text, cuts, seed):
    # tokens: a partition of the text at random character positions
    bounds = sorted({0, len(text), *[c for c in cuts if c <= len(text)]})
    off = np.array(list(zip(bounds[:-1], bounds[1:])), dtype=np.int64).reshape(-1, 2)
    w = np.random.default_rng(seed).random(len(off))
    spans = merge_spans(off, w, text=text, top_spans=None)
    weights = [s["weight"] for s in spans]
    assert weights == sorted(weights, reverse=True)
    ordered = sorted(spans, key=lambda s: s["start"])
    for a, b in zip(ordered, ordered[1:]):
        assert a["end"] < b["start"]  # disjoint and not touching
    for s in spans:
        assert s["text"] == text[s["start"] : s["end"]] and s["text"]
        word = lambda ch: ch.isalnum() or ch == "_" or ch == "\u0301"  # noqa: E731
        assert word(text[s["start"]]) and word(text[s["end"] - 1])
        assert s["start"] == 0 or not word(text[s["start"] - 1])
        assert s["end"] == len(text) or not word(text[s["end"]])
    assert len(merge_spans(off, w, text=text, top_spans=2)) == min(2, len(spans))


@settings(max_examples=100, deadline=None)
@given(w=st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_without_text_runs_and_mass_match_an_independent_count(w):
    w = np.asarray(w)
    off = np.stack([np.arange(len(w)) * 2, np.arange(len(w)) * 2 + 1], axis=1)
    spans = merge_spans(off, w, top_spans=None)
    if w.max() <= 0:
        assert spans == []
        return
    keep = w >= 0.5 * w.max()
    n_runs = int(keep[0]) + int(np.sum(keep[1:] & ~keep[:-1]))
    assert len(spans) == n_runs
    assert sum(s["weight"] for s in spans) == pytest.approx(w[keep].sum())


def test_mig_highlighter_hand_example():
    text = "Tos seca y fiebre alta; sin disnea."
    off = np.array([[0, 3], [4, 8], [9, 10], [11, 17], [18, 22], [22, 23], [24, 27], [28, 34], [34, 35]])
    # vocabulary: 0 UNK, 1 tos, 2 seca, 3 y, 4 fiebre, 5 alta, 6 ;, 7 sin, 8 disnea, 9 .
    ids = np.arange(1, 10)
    ids[2] = 0  # "y" pruned to UNK
    # rows: R05 (cough), R50.9 (fever); R50.9 row given with a duplicate entry (non-canonical CSR)
    rel = sp.csr_matrix(
        (np.array([0.8, 0.5, 0.2, 0.6, 0.3, 0.3, 0.1]), np.array([1, 2, 8, 4, 5, 4, 1]), np.array([0, 3, 7])),
        shape=(2, 10),
    )
    assert not rel.has_canonical_format
    out = mig_highlighter([text], [off], [ids], rel, [["r50.9", "R05"]], ["R05", "R50.9"], top_spans=None)
    assert [d["code"] for d in out[0]] == ["r50.9", "R05"]
    fever = out[0][0]["spans"]  # fiebre 0.9 (0.6 + 0.3 duplicate), alta 0.3 < 0.45: only fiebre
    assert [(s["text"], s["start"], s["end"]) for s in fever] == [("fiebre", 11, 17)]
    assert fever[0]["weight"] == pytest.approx(0.9)
    cough = out[0][1]["spans"]  # tos 0.8 + seca 0.5 merged; disnea 0.2 < 0.4
    assert [(s["text"], round(s["weight"], 6)) for s in cough] == [("Tos seca", 1.3)]
    # dict label index and an explicit cut give the same / more spans
    same = mig_highlighter([text], [off], [ids], rel, [["R50.9", "R05"]], {"R05": 0, "r50.9": 1}, top_spans=None)
    assert same[0][0]["spans"] == fever and same[0][1]["spans"] == cough
    more = mig_highlighter([text], [off], [ids], rel, [["R05"]], ["R05", "R50.9"], cut=0.15, top_spans=None)
    assert [s["text"] for s in more[0][0]["spans"]] == ["Tos seca", "disnea"]


def test_mig_highlighter_no_top_tokens_and_errors():
    rel = sp.csr_matrix(np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]))
    out = mig_highlighter(["a b", ""], [[[0, 1], [2, 3]], []], [[0, 1], []], rel, [["A", "B"], ["A"]], ["A", "B"])
    assert out == [[{"code": "A", "spans": []}, {"code": "B", "spans": []}], [{"code": "A", "spans": []}]]
    with pytest.raises(ValueError, match="not in label_index"):
        mig_highlighter(["a"], [[[0, 1]]], [[0]], rel, [["C"]], ["A", "B"])
    with pytest.raises(ValueError, match="columns of relevance"):
        mig_highlighter(["a"], [[[0, 1]]], [[3]], rel, [["A"]], ["A", "B"])
    with pytest.raises(ValueError, match="one per document"):
        mig_highlighter(["a", "b"], [[[0, 1]]], [[0], [0]], rel, [["A"], ["A"]], ["A", "B"])
