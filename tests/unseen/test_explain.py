"""Evidence of a description score: the sentences that match a label's text best.

``DescriptionRanker.explain`` and ``DescriptionFusion.explain`` (a seen
label's evidence from the model's own ``explain``, an unseen label's from
the descriptions), and the run's zero-shot listing that uses them.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils import Bunch

from xplant.linear import FrequencyPrior
from xplant.unseen import DescriptionFusion, DescriptionRanker
from xplant.unseen._sentences import sentence_spans, split_sentences

TEXTS = ["red apple pie", "green apple", "blue sky", "apple and sky"]
Y = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])     # label 2: no training positive
DESC = ["apple", "blue sky sea", "dry cough"]
DOC = "Red pie today. A dry cough since May;\nno sky seen"


def _split_by_hand(text):
    """The sentence rule written as a split: pieces between cuts, blank ones dropped."""
    parts = [p for p in re.split(r"(?<=[.;:!?])\s+|\n+", text) if p.strip()]
    return parts or [text]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab .;:!?\n\t", max_size=40))
def test_sentence_spans_are_the_split_sentences_with_their_offsets(text):
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == _split_by_hand(text) == split_sentences(text)
    ends = [e for _, e in spans]
    assert all(a < b or (a, b) == (0, len(text)) for a, b in spans)
    assert all(e <= a for e, (a, _) in zip(ends, spans[1:]))      # in order, never overlapping


def test_ranker_explains_with_the_best_sentences_by_their_cosine():
    r = DescriptionRanker(vectorizer=TfidfVectorizer()).fit(TEXTS, Y, label_descriptions=DESC)
    oracle = TfidfVectorizer().fit(TEXTS + DESC)                     # the same weights, by hand
    sents = ["Red pie today.", "A dry cough since May;", "no sky seen"]
    C = (oracle.transform(sents) @ oracle.transform(DESC).T).toarray()
    ex = r.explain([DOC], top_spans=2, labels=[[2, 1, 0]])[0]["labels"]
    assert [e["index"] for e in ex] == [2, 1, 0]                     # the order asked for
    scores = r.decision_function([DOC])[0]
    for e in ex:
        assert e["prob"] is None and e["source"] == "descriptions"
        assert e["score"] == pytest.approx(scores[e["index"]])
        for s in e["spans"]:
            assert DOC[s["start"]:s["end"]] == s["text"]
    # label 2 ("dry cough"): only the second sentence shares a word; its weight is the cosine
    assert [s["text"] for s in ex[0]["spans"]] == [sents[1]]
    assert ex[0]["spans"][0]["weight"] == pytest.approx(C[1, 2])
    assert ex[0]["spans"][0]["start"] == DOC.index("A dry")
    # label 1 ("blue sky sea"): "sky" in the third sentence only
    assert [s["text"] for s in ex[1]["spans"]] == [sents[2]]
    # label 0 ("apple"): no sentence shares a word, so no span
    assert C[:, 0].max() == 0 and ex[2]["spans"] == []


def test_ranker_top_labels_are_its_ranking_and_spans_are_cut_at_top_spans():
    r = DescriptionRanker().fit(TEXTS, Y, label_descriptions=["apple pie", "sky", "cough"])
    doc = "Apple pie. Apple. Pie and apple pie. Sky."
    ex = r.explain([doc, ""], top_labels=2, top_spans=2)
    assert [e["index"] for e in ex[0]["labels"]] == r.predict_top_k([doc], 2)[0][0].tolist()
    best = ex[0]["labels"][0]
    assert best["index"] == 0 and len(best["spans"]) == 2
    # "Apple pie." holds the label's words alone (cosine 1); "Pie and apple pie." comes next
    assert [s["text"] for s in best["spans"]] == ["Apple pie.", "Pie and apple pie."]
    assert best["spans"][0]["weight"] == pytest.approx(1.0)
    assert 1.0 > best["spans"][1]["weight"] > 0
    assert all(s["spans"] == [] for s in ex[1]["labels"])           # an empty document
    assert r.explain([], top_labels=2) == []


def test_ranker_explain_errors():
    r = DescriptionRanker().fit(TEXTS, Y, label_descriptions=DESC)
    for kwargs, msg in (({"top_spans": 0}, "top_spans"), ({"top_labels": 1.5}, "top_labels"),
                        ({"labels": [[0]]}, "one sequence of label columns per document"),
                        ({"labels": [[0], [3]]}, r"outside \[0, 3\)")):
        with pytest.raises(ValueError, match=msg):
            r.explain(["a", "b"], **kwargs)


class _ExplainingModel(ClassifierMixin, BaseEstimator):
    """A model with ``explain``: scores label j by the count of the word ``w<j>``; records calls."""

    def fit(self, X, Y):
        self.classes_ = np.arange(np.asarray(Y).shape[1])
        self.calls_ = []
        return self

    def predict_proba(self, X):
        return np.array([[0.1 + 0.2 * t.split().count(f"w{j}") for j in self.classes_]
                         for t in X])

    def explain(self, X, top_labels=5, top_spans=3, *, labels=None):
        self.calls_.append([list(map(int, cols)) for cols in labels])
        P = self.predict_proba(X)
        return [{"labels": [{"label": int(j), "index": int(j), "prob": float(P[i, j]),
                             "spans": [{"start": 0, "end": 2, "text": t[:2], "weight": 0.5}]}
                            for j in cols]} for i, (t, cols) in enumerate(zip(X, labels))]


@pytest.mark.parametrize("wrap", ["plain", "frozen", "pipeline"])
def test_fusion_takes_seen_evidence_from_the_model_and_unseen_from_the_descriptions(wrap):
    texts = ["w0 apple", "w1 sky", "w0 w1"]
    Yf = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0]])
    model = _ExplainingModel()
    if wrap == "frozen":
        model = FrozenEstimator(model.fit(texts, Yf))
    elif wrap == "pipeline":
        model = Pipeline([("pass", FunctionTransformer(None)), ("clf", model)])
    f = DescriptionFusion(model, weight=1.0, seen_weight=0.5).fit(
        texts, Yf, label_descriptions=["apple", "sky", "dry cough"])
    doc = "w0 here. A dry cough."
    ex = f.explain([doc], labels=[[2, 0, 1]])[0]["labels"]
    assert [e["index"] for e in ex] == [2, 0, 1]
    inner = f.estimator_
    inner = inner.estimator if wrap == "frozen" else inner
    inner = inner.steps[-1][1] if wrap == "pipeline" else inner
    assert inner.calls_[-1] == [[0, 1]]                 # the model explains the seen labels only
    scores = f.decision_function([doc])[0]
    assert [e["score"] for e in ex] == pytest.approx(scores[[2, 0, 1]].tolist())
    assert ex[0]["source"] == "descriptions" and ex[0]["prob"] is None
    assert [s["text"] for s in ex[0]["spans"]] == ["A dry cough."]
    for e in ex[1:]:
        assert e["source"] == "model" and e["spans"][0]["text"] == "w0"
    assert ex[1]["prob"] == pytest.approx(0.3) and ex[2]["prob"] == pytest.approx(0.1)
    # its own top labels: the fused ranking
    top = f.explain([doc], top_labels=2)[0]["labels"]
    assert [e["index"] for e in top] == f.predict_top_k([doc], 2)[0][0].tolist()


def test_fusion_over_a_model_without_explain_leaves_every_label_to_the_descriptions():
    f = DescriptionFusion(FrequencyPrior(), weight=1.0, seen_weight=0.0).fit(
        TEXTS, Y, label_descriptions=DESC)
    ex = f.explain([DOC], labels=[[0, 1, 2]])[0]["labels"]
    assert [e["source"] for e in ex] == ["descriptions"] * 3
    assert [s["text"] for s in ex[2]["spans"]] == ["A dry cough since May;"]


def test_zero_shot_listing_explains_each_row_with_its_own_model():
    """The fused + descriptions row's zero-shot labels: description sentences, no probability."""
    from xplant.app._examples import add_zero_shot, zero_shot_rows
    f = DescriptionFusion(FrequencyPrior(), weight=1.0, seen_weight=0.0).fit(
        TEXTS, Y, label_descriptions=DESC)
    train = Bunch(Y=Y, label_names=np.array(["A", "B", "C"]), label_descriptions=DESC)
    test = Bunch(Y=np.array([[0, 0, 1], [1, 0, 0]]), ids=np.array(["d1", "d2"]),
                 texts=[DOC, "apple pie. A dry day"])
    S = f.decision_function(test.texts)
    prior = FrequencyPrior().fit(TEXTS, Y)          # a row whose model has no explain
    recs = zero_shot_rows([(S, 1, f), (S, 1)], prior, test, train)
    assert recs[0]["explained"] and not recs[1]["explained"]
    p = recs[0]["predictions"][0]
    assert (p["doc_id"], p["label"], p["gold"], p["prob"], p["evidence"]) == \
        ("d1", "C", True, None, "descriptions")
    assert [s["text"] for s in p["spans"]] == ["A dry cough since May;"]
    assert recs[1]["predictions"][0]["spans"] == [] and recs[1]["predictions"][0]["evidence"] is None
    # in a run: the variant's model explains it and never leaves the fit's process
    dev = Bunch(Y=test.Y)
    out = {"test_scores": S, "dev_scores": S, "rule": 1, "info": {},
           "variants": [{"test_scores": S, "dev_scores": S, "rule": 1, "info": {},
                         "explainer": f}]}
    add_zero_shot(out, prior, dev, test, train)
    assert "explainer" not in out["variants"][0]
    z = out["variants"][0]["info"]["zero_shot"]
    assert z["predictions"][0]["evidence"] == "descriptions"
    assert out["info"]["zero_shot"]["explained"] is False
