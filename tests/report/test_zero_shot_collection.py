"""The run's zero-shot listing: exactly the never-trained labels in each row's top k."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils import Bunch

from xplant.app._examples import zero_shot_predictions, zero_shot_rows

#: Training positives per label: labels 1, 3 and 4 are zero-shot.
FREQ = np.array([4, 0, 2, 0, 0])
S = np.array([[.9, .8, .7, .1, .0],      # top 2: 0, 1        -> label 1 at rank 2
              [.1, .2, .3, .9, .8],      # top 2: 3, 4        -> both
              [.5, .5, .5, .0, .5],      # ties: 0, 1 (lower index first) -> label 1 at rank 2
              [.9, .0, .8, .0, .0]])     # top 2: 0, 2        -> none
GOLD = np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0], [0, 0, 1, 0, 0]])


def _pairs(rec):
    return [(p["doc"], p["label_index"], p["rank"], p["score"], p["gold"]) for p in rec["predictions"]]


def test_exactly_the_zero_shot_labels_within_top_k_by_hand():
    rec = zero_shot_predictions(S, 2, FREQ, GOLD)
    assert _pairs(rec) == [(0, 1, 2, .8, True), (1, 3, 1, .9, False), (1, 4, 2, .8, True),
                           (2, 1, 2, .5, False)]
    assert (rec["k"], rec["n_zero_shot_labels"], rec["n_predictions"], rec["n_documents"],
            rec["n_correct"]) == (2, 3, 4, 3, 2)
    # bounded: two listed, all counted; the training matrix gives the same group as its counts
    Y_train = np.zeros((4, 5), dtype=int)
    Y_train[:, 0] = 1
    Y_train[:2, 2] = 1
    short = zero_shot_predictions(sp.csr_matrix(S), 2, sp.csr_matrix(Y_train), GOLD,
                                  max_predictions=2)
    assert _pairs(short) == _pairs(rec)[:2] and short["n_predictions"] == 4
    assert short["max_listed"] == 2
    # k = 1: only document 1's top label; without gold, correctness is unknown
    one = zero_shot_predictions(S, 1, FREQ)
    assert _pairs(one) == [(1, 3, 1, .9, None)] and one["n_correct"] is None
    # no zero-shot label at all: nothing listed
    assert zero_shot_predictions(S, 5, [1, 1, 1, 1, 1])["predictions"] == []


def test_matches_brute_force_on_random_scores():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, size=(30, 12)).astype(float)       # many ties
    freq = rng.integers(0, 3, size=12)
    gold = rng.random((30, 12)) < 0.2
    rec = zero_shot_predictions(scores, 4, freq, gold, max_predictions=1000)
    want = []
    for i, row in enumerate(scores):
        order = sorted(range(12), key=lambda j: (-row[j], j))[:4]
        want += [(i, j, r + 1, row[j], bool(gold[i, j])) for r, j in enumerate(order) if freq[j] == 0]
    assert _pairs(rec) == want and rec["n_predictions"] == len(want)


def test_a_threshold_rule_lists_the_zero_shot_labels_it_predicts_by_hand():
    rule = {"rule": "threshold", "k": 2, "threshold": 0.5}
    rec = zero_shot_predictions(S, rule, FREQ, GOLD)
    # scores >= 0.5 of labels 1, 3, 4: doc 0 label 1 (.8, rank 2), doc 1 labels 3 (.9, rank 1)
    # and 4 (.8, rank 2), doc 2 labels 1 (.5, rank 2) and 4 (.5, rank 4): ties, lower index first
    assert _pairs(rec) == [(0, 1, 2, .8, True), (1, 3, 1, .9, False), (1, 4, 2, .8, True),
                           (2, 1, 2, .5, False), (2, 4, 4, .5, False)]
    assert (rec["rule"], rec["k"], rec["n_predictions"], rec["n_documents"]) == \
        ("threshold", 2, 5, 3)
    # per-label thresholds: only label 4 passes its own 0.8; the sparse form drops no entry here
    own = dict(rule, rule="per_label_threshold", thresholds=[.5, .95, .5, .95, .8])
    for scores in (S, sp.csr_matrix(S)):
        assert _pairs(zero_shot_predictions(scores, own, FREQ, GOLD)) == [(1, 4, 2, .8, True)]
    # the top-k rule as a dict is the int k
    assert _pairs(zero_shot_predictions(S, dict(rule, rule="top_k"), FREQ, GOLD)) == \
        _pairs(zero_shot_predictions(S, 2, FREQ, GOLD))


def test_bad_input():
    with pytest.raises(ValueError, match="k must be a positive integer"):
        zero_shot_predictions(S, 0, FREQ)
    with pytest.raises(ValueError, match="length of train_frequency"):
        zero_shot_predictions(S, 2, FREQ[:4])
    with pytest.raises(ValueError, match="y_true has shape"):
        zero_shot_predictions(S, 2, FREQ, GOLD[:2])
    with pytest.raises(ValueError, match="max_predictions"):
        zero_shot_predictions(S, 2, FREQ, max_predictions=-1)


class Explainer:
    """explain(labels=...) as PlantClassifier's: the first word of the text as the one span."""

    def __init__(self):
        self.calls = []

    def explain(self, texts, top_spans=3, labels=None):
        self.calls.append((list(texts), [list(x) for x in labels]))
        out = []
        for text, labs in zip(texts, labels):
            end = text.index(" ")
            out.append({"labels": [{"index": j, "prob": j / 10, "spans": [
                {"start": 0, "end": end, "text": text[:end], "weight": np.float32(0.5)}]}
                for j in labs]})
        return out


def test_rows_name_the_labels_and_explain_once_per_fit():
    train = Bunch(Y=sp.csr_matrix(np.array([[1, 0, 1, 0, 0]] * 4)), label_names=np.array(list("ABCDE")),
                  label_descriptions=["", "bee <b>", "", "dee", ""])
    test = Bunch(Y=sp.csr_matrix(GOLD), ids=["d0", "d1", "d2", "d3"],
                 texts=["alpha one", "beta two", "gamma three", "delta four"])
    model = Explainer()
    fused = S.copy()
    fused[3] = [0, 0, 0, .9, 0]                  # another row of the same fit ranks D in d3
    rows = zero_shot_rows([(S, 2), (fused, 1)], model, test, train)
    assert len(model.calls) == 1                 # one explain for both rows, the union per document
    assert model.calls[0] == (["alpha one", "beta two", "gamma three", "delta four"],
                              [[1], [3, 4], [1], [3]])
    first = rows[0]["predictions"][0]
    assert first == {"doc_id": "d0", "label": "B", "label_index": 1, "description": "bee <b>",
                     "rank": 2, "score": .8, "gold": True, "prob": .1, "evidence": "model",
                     "spans": [{"start": 0, "end": 5, "text": "alpha", "weight": 0.5}]}
    assert [(p["doc_id"], p["label"]) for p in rows[1]["predictions"]] == [("d1", "D"), ("d3", "D")]
    assert rows[0]["explained"] and rows[0]["shown"] == 4
    json.dumps(rows)                              # plain JSON for results.json
    # a model without explain: the same predictions, no spans
    plain = zero_shot_rows([(S, 2)], object(), test, train)[0]
    assert [(p["doc_id"], p["label"]) for p in plain["predictions"]] == \
        [("d0", "B"), ("d1", "D"), ("d1", "E"), ("d2", "B")]
    assert not plain["explained"] and all(p["spans"] == [] and p["prob"] is None
                                          and p["evidence"] is None for p in plain["predictions"])
