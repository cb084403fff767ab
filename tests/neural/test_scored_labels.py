"""Labels without a training positive are left out of Stage 2's network (PlantNet.score_only)."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from xplant.neural.losses import plant_loss, select_labels
from xplant.neural.modules import UNSCORED_LOGIT


def _net(head="shared", n_labels=7, chunk=3):
    from xplant.neural.backbones import WordEncoder
    from xplant.neural.modules import PlantNet
    torch.manual_seed(0)
    net = PlantNet(WordEncoder(30, 0, "cnn", 6, 8, 3, 0.0), n_labels, 8, pool_size=8, head=head,
                   label_chunk=chunk).eval()
    with torch.no_grad():
        net.boost_add.normal_()
        net.boost_mul.normal_()
        net.label_bias.normal_()
    return net


IDS = torch.tensor([[3, 4, 5, 0], [7, 8, 0, 0], [0, 0, 0, 0]])
SCORED = np.array([True, False, True, True, False, False, True])


@pytest.mark.parametrize("head", ["shared", "labelwise"])
def test_scored_labels_keep_their_logits_and_the_rest_get_the_constant(head):
    net = _net(head)
    with torch.no_grad():
        full = net(IDS, IDS > 0)
        net.score_only(SCORED)
        got = net(IDS, IDS > 0)
    torch.testing.assert_close(got[:, SCORED], full[:, SCORED], rtol=1e-6, atol=1e-6)
    assert (got[:, ~SCORED] == UNSCORED_LOGIT).all()
    # σ of the constant is 0 to float32 precision: a label the network never saw is never predicted
    assert float(torch.sigmoid(torch.tensor(UNSCORED_LOGIT))) < 1e-30
    # the same through the candidates path, labels per document
    cand = torch.tensor([[1, 0, 6], [2, 4, 5], [3, 3, 0]])
    with torch.no_grad():
        z = net(IDS, IDS > 0, candidates=cand)
    want = torch.where(torch.as_tensor(SCORED)[cand], full.gather(1, cand),
                       torch.tensor(UNSCORED_LOGIT))
    torch.testing.assert_close(z, want, rtol=1e-6, atol=1e-6)
    # None (or every label True) scores every label again
    with torch.no_grad():
        torch.testing.assert_close(net.score_only(None)(IDS, IDS > 0), full)
        torch.testing.assert_close(net.score_only(np.ones(7, bool))(IDS, IDS > 0), full)
    with pytest.raises(ValueError, match="7 labels"):
        net.score_only(np.ones(5, bool) & False)
    with pytest.raises(ValueError, match="7 labels"):     # all True, yet the wrong length
        net.score_only(np.ones(5, bool))


def test_unscored_labels_get_no_gradient_and_no_attention_work():
    net = _net().train()
    net.score_only(SCORED)
    calls = []
    queries = net.attention.queries
    net.attention.queries = lambda labels=None: calls.append(labels) or queries(labels)
    net(IDS, IDS > 0).sum().backward()
    assert sorted(torch.cat(calls).tolist()) == np.flatnonzero(SCORED).tolist()
    for name in ("boost_add", "boost_mul", "label_bias"):
        g = getattr(net, name).grad
        assert (g[~SCORED] == 0).all() and (g[SCORED] != 0).any(), name
    g = net.attention.label_queries.grad
    assert (g[~SCORED] == 0).all()


def test_loss_over_scored_labels_equals_the_loss_of_their_columns():
    """The invariance the classifier relies on: masking labels out equals deleting their columns."""
    torch.manual_seed(1)
    logits = torch.randn(4, 7)
    logits[:, ~SCORED] = UNSCORED_LOGIT
    pos = torch.tensor([[0, 2], [3, -1], [6, -1], [0, 3]])
    keep_cols = np.flatnonzero(SCORED)
    new_id = {int(c): i for i, c in enumerate(keep_cols)}
    sub_pos = torch.tensor([[new_id[int(p)] if p >= 0 else -1 for p in row] for row in pos])
    mask = torch.as_tensor(SCORED)
    for m in (None, 2, 10):
        got = plant_loss(logits, pos, hard_negatives=m, scored=mask)
        want = plant_loss(logits[:, keep_cols], sub_pos, hard_negatives=m)
        assert got.item() == pytest.approx(want.item(), rel=1e-6), m
    # an unscored label is never chosen, as a negative or as a (dev) positive
    idx, target, keep = select_labels(logits, torch.tensor([[1, 0]] * 4), 3, scored=mask)
    chosen = idx[keep]
    assert not np.isin(chosen.numpy(), np.flatnonzero(~SCORED)).any()
    assert target[keep].sum().item() == 4              # label 0 in each document; label 1 dropped


def test_classifier_leaves_out_labels_without_training_positives(tmp_path, make_corpus, small):
    from xplant.neural import PlantClassifier
    texts, Y = make_corpus(n_docs=40, n_labels=6, seed=3)
    Y = sp.hstack([Y, sp.csr_matrix((40, 2), dtype=Y.dtype)]).tocsr()   # labels 6, 7: no positive
    clf = small(max_epochs=2).fit(texts, Y)
    assert clf.scored_labels_.tolist() == [True] * 6 + [False] * 2
    proba = clf.predict_proba(texts[:5])
    assert proba.shape == (5, 8)
    assert (proba[:, 6:] < 1e-30).all() and (proba[:, :6] > 1e-6).all()
    assert not np.isin(clf.predict_top_k(texts[:5], k=6)[0], [6, 7]).any()
    # saved and loaded: the same labels left out, the same scores
    clf.save(tmp_path / "m")
    back = PlantClassifier.load(tmp_path / "m")
    assert back.scored_labels_.tolist() == clf.scored_labels_.tolist()
    np.testing.assert_allclose(back.predict_proba(texts[:5]), proba, rtol=1e-6, atol=1e-12)
    # a model saved before the field (no "unscored_labels") scores every label, as it was trained
    import json
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["unscored_labels"] == [6, 7]
    del cfg["unscored_labels"]
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    old = PlantClassifier.load(tmp_path / "m")
    assert old.scored_labels_.all()
    assert (old.predict_proba(texts[:5])[:, 6:] > 1e-30).all()
    cfg["unscored_labels"] = [9]
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="unscored_labels"):
        PlantClassifier.load(tmp_path / "m")


def test_labels_planted_from_descriptions_stay_scored(make_corpus, small):
    texts, Y = make_corpus(n_docs=40, n_labels=6, seed=3)
    Y = sp.hstack([Y, sp.csr_matrix((40, 1), dtype=Y.dtype)]).tocsr()
    desc = [f"signal sig{l}" for l in range(7)]
    clf = small(max_epochs=1).fit(texts, Y, label_descriptions=desc)
    assert clf.scored_labels_.all()


def test_a_saved_planting_says_whether_it_planted_from_texts(tmp_path, make_corpus, small,
                                                             planter_params):
    import json
    from xplant.neural import AttentionPlanter
    texts, Y = make_corpus(n_docs=40, n_labels=6, seed=3)
    Y = sp.hstack([Y, sp.csr_matrix((40, 1), dtype=Y.dtype)]).tocsr()
    plain = AttentionPlanter(**dict(planter_params, max_epochs=1)).fit(texts, Y)
    plain.save_planting(tmp_path / "plain")
    meta = json.loads((tmp_path / "plain" / "planting.json").read_text())
    assert meta["planted_from_texts"] is False
    clf = small(planter=str(tmp_path / "plain"), max_epochs=1).fit(texts, Y)
    assert clf.scored_labels_.tolist() == [True] * 6 + [False]
    described = AttentionPlanter(**dict(planter_params, max_epochs=1)).fit(
        texts, Y, label_descriptions=[f"sig{l} sig{(l + 1) % 6}" for l in range(7)])
    described.save_planting(tmp_path / "described")
    assert json.loads((tmp_path / "described" / "planting.json").read_text())["planted_from_texts"]
    clf = small(planter=str(tmp_path / "described"), max_epochs=1).fit(texts, Y)
    assert clf.scored_labels_.all()
    # a planting saved before the field: taken to have planted every label, as then
    del meta["planted_from_texts"]
    (tmp_path / "plain" / "planting.json").write_text(json.dumps(meta))
    assert small(planter=str(tmp_path / "plain"), max_epochs=1).fit(texts, Y).scored_labels_.all()
