"""The one fusion formula: its two library members equal their earlier formulas to the bit,
three sources by hand, and its errors. Needs no torch."""

import numpy as np
import pytest

from xplant.fusion import (SCORE_FLOOR, Source, calibrate, dense_scores, fuse, logit, sigmoid,
                           tail_factor, tail_order, top_k_from_candidates)


def _bits_equal(a, b):
    """Same shape and the same float64 bits (not only ==: -0.0 and 0.0 differ here)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


# ---- the formulas as they were written before the one fusion (the oracles) ----

def _old_alpha_mix(p_short, p_net, alpha):
    return alpha * p_short + (1.0 - alpha) * p_net


def _old_floor(cand_scores):
    s = np.asarray(cand_scores, dtype=np.float64)
    C = s.shape[1]
    step = SCORE_FLOOR * (1.0 - np.arange(1, C + 1) / (C + 1.0))
    return np.where(s < SCORE_FLOOR, step[None, :], s)


def _old_dense_scores(candidates, cand_scores, rank):
    n, L = rank.shape
    cand_scores = _old_floor(cand_scores)
    low = cand_scores.min(1, keepdims=True)
    out = low * (1.0 - (rank.astype(np.float64) + 1.0) / (L + 1.0))
    out[np.arange(n)[:, None], candidates] = cand_scores
    return out


def _old_description_fusion(base, cos, weight, unseen, n_labels):
    out = np.array(base, dtype=np.float64, copy=True)
    if unseen.size == 0:
        return out
    seen = np.ones(n_labels, dtype=bool)
    seen[unseen] = False
    floor = out[:, seen].min(axis=1, keepdims=True) if seen.any() else np.zeros((out.shape[0], 1))
    out[:, unseen] = floor + weight * cos[:, unseen]
    return out


def _shortlisted_fit(rng, n=7, L=13, C=5):
    """Random candidates, raw shortlist scores (some at the -1000 of unseen labels), logits."""
    cand = np.stack([rng.permutation(L)[:C] for _ in range(n)]).astype(np.int64)
    s = rng.normal(0, 2, size=(n, C))
    s[rng.random((n, C)) < 0.2] = -1000.0
    z = rng.normal(0, 3, size=(n, C)).astype(np.float32)   # the network's logits are float32
    extra = np.stack([np.setdiff1d(rng.permutation(L), c)[:3] for c in cand])
    freq = rng.integers(0, 20, size=L)
    return cand, s, z, extra, freq


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.7, 1.0])
def test_the_shortlist_mix_is_a_member_to_the_bit(seed, alpha):
    """α·σ(a·s + b) + (1 − α)·σ(z), with the tail order below the candidates."""
    rng = np.random.default_rng(seed)
    cand, s, z, extra, freq = _shortlisted_fit(rng)
    a, b = 1.7, -0.4
    rank = tail_order(cand, extra, freq)
    p_short, p_net = sigmoid(a * s + b), sigmoid(z)
    old = _old_dense_scores(cand, _old_alpha_mix(p_short, p_net, alpha), rank)
    # calibrations inside fuse, and calibrated beforehand: the same bits
    inside = fuse([Source(s, alpha, (a, b), cand), Source(z, 1.0 - alpha, (1.0, 0.0), cand)],
                  n_labels=rank.shape[1], floor="rest", floor_factor=tail_factor(rank),
                  min_score=SCORE_FLOOR)
    before = fuse([Source(p_short, alpha, None, cand), Source(p_net, 1.0 - alpha, None, cand)],
                  n_labels=rank.shape[1], floor="rest", floor_factor=tail_factor(rank),
                  min_score=SCORE_FLOOR)
    assert _bits_equal(inside, old) and _bits_equal(before, old)
    # the candidates' block (the top-k path) and the one-source dense_scores
    block = fuse([(p_short, alpha), (p_net, 1.0 - alpha)], min_score=SCORE_FLOOR)
    assert _bits_equal(block, _old_floor(_old_alpha_mix(p_short, p_net, alpha)))
    assert _bits_equal(dense_scores(cand, _old_alpha_mix(p_short, p_net, alpha), rank), old)
    idx, sc = top_k_from_candidates(cand, block, extra, freq, rank.shape[1])
    np.testing.assert_array_equal(idx, np.argsort(-old, 1, kind="stable"))
    assert _bits_equal(sc, np.take_along_axis(old, idx, 1))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_unseen", [0, 3, 9])
def test_description_fusion_is_a_member_to_the_bit(seed, n_unseen):
    """The seen labels keep the model's score; unseen ones get m + w · cos."""
    rng = np.random.default_rng(seed)
    n, L, w = 6, 9, 0.75
    base = rng.normal(size=(n, L))                    # decision values: negative too
    base[0, 1] = -0.0
    cos = rng.random((n, L))
    unseen = np.sort(rng.permutation(L)[:n_unseen]).astype(np.int64)
    seen = np.setdiff1d(np.arange(L), unseen)
    new = fuse([Source(base[:, seen], 1.0, None, seen), Source(cos[:, unseen], w, None, unseen)],
               n_labels=L, floor=unseen)
    assert _bits_equal(new, _old_description_fusion(base, cos, w, unseen, L))


def test_three_sources_by_hand():
    """Two documents, five labels: a model of every label, a shortlist on each document's
    candidates (sigmoid-calibrated), descriptions of label 4; label 4 is the floor label."""
    model = np.array([[0.2, 0.4, 0.6, 0.8, 0.0], [0.5, 0.1, 0.3, 0.9, 0.0]])
    cand = np.array([[2, 0], [3, 1]])
    short = np.array([[0.0, 2.0], [np.log(3.0), 0.0]])      # σ: 0.5, 0.8808; 0.75, 0.5
    cos = np.array([[0.3], [0.05]])
    out = fuse([Source(model[:, :4], 0.5, None, [0, 1, 2, 3]),
                Source(short, 0.5, (1.0, 0.0), cand),
                Source(cos, 2.0, None, [4])], n_labels=5, floor=[4])
    s02 = 1 / (1 + np.exp(-2.0))
    expect = np.array([
        # doc 0: label 0 = .5·.2 + .5·σ(2); 2 = .5·.6 + .5·.5; m = min(.1 + .5σ(2), .2, .55, .4) = .2
        [0.1 + 0.5 * s02, 0.2, 0.55, 0.4, 0.2 + 0.6],
        # doc 1: label 3 = .5·.9 + .5·.75; 1 = .5·.1 + .5·.5; m = min(.25, .3, .15, .825) = .15
        [0.25, 0.3, 0.15, 0.825, 0.15 + 0.1],
    ])
    np.testing.assert_allclose(out, expect, rtol=0, atol=1e-15)
    # tuples serve as sources; the floor at a factor t = 0.5, and a label no source scores
    half = fuse([(model[:, :4], 0.5, None, [0, 1, 2, 3]), (short, 0.5, (1.0, 0.0), cand),
                 (cos, 2.0, None, [4])], n_labels=6, floor=[4], floor_factor=0.5)
    np.testing.assert_allclose(half[:, 4], [0.1 + 0.6, 0.075 + 0.1], atol=1e-15)
    np.testing.assert_array_equal(half[:, 5], [0.0, 0.0])


def test_weights_per_label_and_the_rest_below():
    """An array weight (one per candidate: a weight per frequency bucket) and floor="rest"."""
    p = np.array([[0.9, 0.2]])
    q = np.array([[0.1, 0.6]])
    w = np.array([[1.0, 0.25]])                     # the second candidate is a tail label
    cand = np.array([[3, 0]])
    out = fuse([Source(p, w, None, cand), Source(q, 1.0 - w, None, cand)], n_labels=4,
               floor="rest", floor_factor=np.array([[1.0, 0.5, 0.25, 1.0]]))
    low = 0.25 * 0.2 + 0.75 * 0.6                   # 0.5: label 0; label 3 scores 0.9
    np.testing.assert_allclose(out, [[low, low * 0.5, low * 0.25, 0.9]], atol=1e-15)


def test_calibrate_and_logit():
    s = np.array([[-3.0, 0.0, 2.5]])
    np.testing.assert_array_equal(calibrate(s, (2.0, 1.0)), sigmoid(2.0 * s + 1.0))
    np.testing.assert_allclose(logit(sigmoid(s)), s, atol=1e-12)
    # order and ties kept, 1.0 finite and above every float32 probability below it
    p = np.array([0.2, 0.2, 1.0, np.float32(1) - np.float32(2 ** -24), 1e-30, 0.0])
    z = logit(p)
    assert np.isfinite(z).all()
    assert z[0] == z[1] and z[2] > z[3] > z[0] > z[4] > z[5]
    with pytest.raises(ValueError, match="probabilities in"):
        logit([0.5, 1.5])


@pytest.mark.parametrize("kwargs, match", [
    (dict(sources=[]), "non-empty"),
    (dict(sources=[np.ones((2, 3))]), "a Source or a tuple"),
    (dict(sources=[(np.ones(3), 1.0)]), "2-D numeric"),
    (dict(sources=[(np.ones((2, 3)), np.inf)]), "finite"),
    (dict(sources=[(np.ones((2, 3)), np.ones(4))]), "does not broadcast"),
    (dict(sources=[(np.ones((2, 3)), 1.0, (1.0,))]), "pair"),
    (dict(sources=[(np.ones((2, 3)), 1.0, None, [0, 1])]), "label columns of shape"),
    (dict(sources=[(np.ones((2, 3)), 1.0, None, [0, 1, 5])], n_labels=4), "outside"),
    (dict(sources=[(np.ones((2, 3)), 1.0), (np.ones((3, 3)), 1.0)]), "same documents"),
    (dict(sources=[(np.ones((2, 3)), 1.0, None, [0, 1, 2]), (np.ones((2, 1)), 1.0, None, [3])]),
     "need n_labels"),
    (dict(sources=[(np.ones((2, 3)), 1.0)], floor="rest"), "floor needs n_labels"),
    (dict(sources=[(np.ones((2, 3)), 1.0)], n_labels=3, floor="below"), "floor must be"),
    (dict(sources=[(np.ones((2, 3)), 1.0)], n_labels=3, floor=[1], floor_factor=np.ones(3)),
     "floor_factor"),
    (dict(sources=[(np.ones((2, 3)), 1.0)], min_score=0.0), "min_score"),
    (dict(sources=[(np.ones((2, 3)), 1.0)], n_labels=0), "n_labels"),
    (dict(sources=[(np.ones((2, 2)), 1.0)], n_labels=3), "without labels"),
])
def test_bad_input_is_named(kwargs, match):
    sources = kwargs.pop("sources")
    with pytest.raises(ValueError, match=match):
        fuse(sources, **kwargs)


def test_fusion_and_unseen_need_no_torch():
    """A fresh interpreter imports xplant.fusion and xplant.unseen, and fuses, without torch."""
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys, numpy as np\n"
            "import xplant.fusion as f, xplant.unseen\n"
            "f.fuse([(np.ones((1, 2)), 0.5), (np.zeros((1, 2)), 0.5)])\n"
            "assert 'torch' not in sys.modules and 'skorch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_sigmoid_in_one_buffer_equals_the_formula_to_the_bit():
    """σ runs in place in one float64 copy: the same bits as 1 / (1 + exp(−x)) of that copy,
    the input untouched, a scalar for a scalar; permuting before or after σ changes no bit."""
    def expit(x):
        with np.errstate(over="ignore", under="ignore"):
            return 1.0 / (1.0 + np.exp(-x))
    rng = np.random.default_rng(0)
    for x in (rng.normal(0, 30, (64, 257)).astype(np.float32), rng.normal(0, 800, (3, 1001)),
              np.array([-1000.0, -745.5, -40.0, -0.0, 0.0, 17.0, 37.0, 1000.0, np.inf, -np.inf])):
        kept = x.copy()
        out = sigmoid(x)
        xf = np.asarray(x, dtype=np.float64)
        assert _bits_equal(out, expit(xf))
        assert np.array_equal(x, kept) and out is not x and out.dtype == np.float64
        if x.ndim == 2:
            perm = np.argsort(rng.random(x.shape), axis=1)
            assert _bits_equal(sigmoid(np.take_along_axis(x, perm, 1)),
                               np.take_along_axis(out, perm, 1))
    assert isinstance(sigmoid(0.0), np.float64) and sigmoid(0.0) == 0.5
