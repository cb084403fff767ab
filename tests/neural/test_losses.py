"""Losses against hand-computed values."""

import math

import pytest
import torch

from xplant.neural.losses import graded_ndcg, plant_loss, select_labels, smooth_targets, stage1_loss


def test_lambda_loss_two_candidates_by_hand():
    # rel [1, 0], equal scores: ranks 1, 2; D(1) = 1, D(2) = 1/log2(3); IDCG@15 = 1.
    # w = |1 - 0| * |1 - 1/log2 3| / 1; pairwise term log2(1 + e^0) = 1.
    s = torch.zeros(1, 2)
    rel = torch.tensor([[1.0, 0.0]])
    valid = torch.ones(1, 2, dtype=torch.bool)
    w = 1 - 1 / math.log2(3)
    assert stage1_loss(s, rel, valid, kind="lambda", k=15).item() == pytest.approx(w, rel=1e-6)
    # RankNet: unweighted, same pair -> exactly 1 bit.
    assert stage1_loss(s, rel, valid, kind="ranknet").item() == pytest.approx(1.0, rel=1e-6)


def test_lambda_loss_gradient_pushes_relevant_up():
    s = torch.zeros(1, 3, requires_grad=True)
    rel = torch.tensor([[0.0, 2.0, 1.0]])
    loss = stage1_loss(s, rel, torch.ones(1, 3, dtype=torch.bool))
    loss.backward()
    g = s.grad[0]
    assert g[1] < 0 and g[0] > 0          # descent raises the most relevant, lowers the irrelevant


def test_lambda_loss_pairs_outside_cutoff_have_no_weight():
    # s = [9, 1, 2], rel = [0, 2, 1], k = 1: ranks 1, 3, 2; IDCG@1 = 2.
    # pair (1, 0): w = |2 - 0| * |D(3) - D(1)| / 2 = 1      (D(3) = 0 beyond k)
    # pair (2, 0): w = |1 - 0| * |D(2) - D(1)| / 2 = 0.5
    # pair (1, 2): both beyond k -> w = 0
    s = torch.tensor([[9.0, 1.0, 2.0]])
    rel = torch.tensor([[0.0, 2.0, 1.0]])
    valid = torch.ones(1, 3, dtype=torch.bool)
    term = lambda d: math.log2(1 + math.exp(-d))
    expect = 1.0 * term(1 - 9) + 0.5 * term(2 - 9)
    assert stage1_loss(s, rel, valid, k=1).item() == pytest.approx(expect, rel=1e-5)


def _stage1_loss_as_written(s, rel, valid, kind, k, sigma):
    """The pairwise loss written as the docstring's formula, with (N, C, C) masks: the oracle."""
    from xplant.neural.losses import _discount, ideal_dcg, ranks_desc
    if kind == "lambdarank":
        sigma = 0.5 if sigma == 1.0 else sigma
    diff_r = rel.unsqueeze(2) - rel.unsqueeze(1)
    pair = (diff_r > 0) & valid.unsqueeze(2) & valid.unsqueeze(1)
    if kind == "ranknet":
        w = pair.float()
    else:
        disc = _discount(ranks_desc(s, valid), k)
        idcg = ideal_dcg(rel, valid, k).clamp(min=1e-12)
        w = (diff_r.abs() * (disc.unsqueeze(2) - disc.unsqueeze(1)).abs()) / idcg[:, None, None]
        w = w * pair
    pl = torch.nn.functional.softplus(-sigma * (s.unsqueeze(2) - s.unsqueeze(1))) / math.log(2.0)
    has = pair.any(2).any(1)
    return (w * pl).sum((1, 2))[has].sum() / has.sum().clamp(min=1)


@pytest.mark.parametrize("kind", ["lambda", "lambdarank", "ranknet"])
def test_stage1_loss_bit_identical_to_the_formula_with_masks(kind):
    # the loss builds its pairs without (N, C, C) validity masks and its weights in place:
    # the same value and gradient to the last bit, ties, invalid candidates and items
    # without a pair included
    g = torch.Generator().manual_seed(0)
    for trial in range(40):
        n, c = int(torch.randint(1, 60, (1,), generator=g)), int(torch.randint(1, 40, (1,), generator=g))
        s0 = torch.randn(n, c, generator=g) * 8
        if trial % 2:
            s0 = s0.round()                                        # tied scores
        rel = torch.rand(n, c, generator=g).round(decimals=1)      # tied relevances
        rel[:, c // 2:] = 0                                        # sampled negatives
        valid = torch.rand(n, c, generator=g) > 0.15
        valid[: n // 4] = False                                    # items with no candidate
        for sigma in (1.0, 0.7):
            for k in (3, 50):
                a, b = s0.clone().requires_grad_(), s0.clone().requires_grad_()
                got = stage1_loss(a, rel, valid, kind=kind, k=k, sigma=sigma)
                want = _stage1_loss_as_written(b, rel, valid, kind, k, sigma)
                got.backward()
                want.backward()
                assert torch.equal(got, want)
                assert torch.equal(a.grad, b.grad)


def test_graded_ndcg_perfect_and_reversed():
    rel = torch.tensor([[3.0, 2.0, 0.0]])
    valid = torch.ones(1, 3, dtype=torch.bool)
    assert graded_ndcg(torch.tensor([[3.0, 2.0, 1.0]]), rel, valid, 15).item() == pytest.approx(1.0)
    # ranking [c, b, a]: DCG = 0 + 2/log2(3) + 3/2 ; IDCG = 3 + 2/log2(3)
    expect = (2 / math.log2(3) + 3 / 2) / (3 + 2 / math.log2(3))
    assert graded_ndcg(torch.tensor([[1.0, 2.0, 3.0]]), rel, valid, 15).item() == pytest.approx(expect)


def test_focal_loss_by_hand():
    # z = 0, y = 1, no smoothing: p = 0.5, BCE = ln 2, p_t = 0.5, focal = 0.25 ln 2.
    z = torch.zeros(1, 1)
    pos = torch.tensor([[0]])
    got = plant_loss(z, pos, loss="focal", gamma=2.0, label_smoothing=0.0, hard_negatives=None)
    assert got.item() == pytest.approx(0.25 * math.log(2))
    bce = plant_loss(z, pos, loss="bce", label_smoothing=0.0, hard_negatives=None)
    assert bce.item() == pytest.approx(math.log(2))


def test_smoothing_forms():
    y = torch.tensor([1.0, 0.0])
    assert smooth_targets(y, 0.1, "paper").tolist() == pytest.approx([0.9, 0.1])
    assert smooth_targets(y, 0.1, "symmetric").tolist() == pytest.approx([0.95, 0.05])


def test_hard_negatives_select_positives_and_top_negatives():
    logits = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0]])
    pos = torch.tensor([[1, -1]])
    idx, target, keep = select_labels(logits, pos, hard_negatives=2)
    chosen = {int(i) for i, k in zip(idx[0], keep[0]) if k}
    assert chosen == {1, 0, 2}                   # the positive, then the two best negatives
    assert target[0][keep[0]].sum().item() == 1  # the positive is never a negative
    # m >= number of negatives: every label once, loss equals the no-mining loss
    a = plant_loss(logits, pos, hard_negatives=4, label_smoothing=0.0)
    b = plant_loss(logits, pos, hard_negatives=None, label_smoothing=0.0)
    assert a.item() == pytest.approx(b.item())


def test_padding_never_hides_a_positive_at_index_zero():
    logits = torch.tensor([[5.0, 4.0, 3.0]])
    pos = torch.tensor([[0, -1, -1]])           # label 0 is a positive and also the pad index
    idx, target, keep = select_labels(logits, pos, hard_negatives=1)
    sel = [(int(i), float(t)) for i, t, k in zip(idx[0], target[0], keep[0]) if k]
    assert (0, 1.0) in sel and (0, 0.0) not in sel


def test_fused_forward_equals_the_formula():
    """PlantNet's folded, fused forward equals the paper's §3.2 formulas written out step by step."""
    from torch.nn import functional as F
    from xplant.neural.backbones import WordEncoder
    from xplant.neural.modules import PlantNet
    torch.manual_seed(0)
    for head, p in (("shared", 4), ("labelwise", 8), ("shared", 8)):
        net = PlantNet(WordEncoder(30, 0, "cnn", 6, 8, 3, 0.0), 5, 8, pool_size=p, head=head,
                       label_chunk=3).eval()
        with torch.no_grad():
            net.boost_add.normal_()
            net.boost_mul.normal_()
            net.label_bias.normal_()
        ids = torch.tensor([[3, 4, 5, 0], [0, 0, 0, 0]])
        mask = ids > 0
        with torch.no_grad():
            got = net(ids, mask)
            H = net.encoder(ids, mask)
            S = net.attention.scores(net.attention.keys(H))                  # (b, L, n)
            m = mask.clone()
            m[1, 0] = True                                                   # empty doc rule
            P = torch.softmax(S.masked_fill(~m[:, None], float("-inf")), -1)
            A = P @ net.value(H)                                             # (b, L, h)
            A2 = net.boost_add + A * net.boost_mul
            pooled = F.adaptive_avg_pool1d(A2.reshape(-1, 1, 8), p).view(2, 5, p)
            if head == "shared":
                want = pooled @ net.head_weight + net.label_bias
            else:
                want = (pooled * net.head_weight).sum(-1) + net.label_bias
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
