"""DescriptionFusion with a mention source: the matcher's scores, weighted, on the known labels.

A frequency prior is the model (every document the same seen-label order), so
what moves a label up is the mention source alone; the matcher reads the
records' ``text_es`` field, the model and the descriptions their ``text``.
"""

import numpy as np
import pytest

from xplant import load_saved
from xplant.linear import FrequencyPrior, MentionMatcher
from xplant.unseen import DescriptionFusion, save_description_fusion
from xplant.unseen._description_fusion import MENTION_WEIGHTS

NAMES = ["A10", "B20", "C30"]
DESCRIPTIONS = ["fever", "fracture of the femur", "skin rash"]
SPANISH = {"A10": "fiebre", "B20": "fractura", "C30": "eritema"}


def _docs(labels_per_doc):
    """Records whose Spanish text holds each label's mention, the English text filler."""
    docs, evidence = [], []
    for labels in labels_per_doc:
        es, ev = "Nota:", []
        for lab in labels:
            start = len(es) + 1
            es += " " + SPANISH[lab]
            ev.append({"label": lab, "spans": [[start, start + len(SPANISH[lab])]]})
        docs.append({"text": "patient seen today", "text_es": es})
        evidence.append(ev)
    return docs, evidence


TRAIN = [["A10"], ["A10"], ["A10", "B20"], ["A10"], ["C30"], ["B20"]]
DEV = [["B20"], ["C30"], ["B20", "C30"], ["C30"]]


def _Y(lists):
    return np.array([[int(n in labels) for n in NAMES] for labels in lists])


def _fit(**params):
    docs, evidence = _docs(TRAIN)
    dev_docs, _ = _docs(DEV)
    return DescriptionFusion(FrequencyPrior(), mentions=MentionMatcher(language="es",
                                                                       text_field="text_es"),
                             **params).fit(
        docs, TRAIN, label_names=NAMES, label_descriptions=DESCRIPTIONS, evidence=evidence,
        validation_data=(dev_docs, _Y(DEV)))


def test_the_mention_weight_is_chosen_on_dev_last_and_adds_the_matcher_on_the_known_labels():
    fused = _fit()
    # the prior ranks A10 (4 of 6), B20 (2), C30 (1) for every document; dev's golds are B20
    # and C30, so without the matcher dev MAP is (1/2 + 1/3 + (1/2 + 2/3)/2 + 1/3) / 4
    scores = dict(map(tuple, fused.mention_choice_["scores"]))
    assert list(scores) == list(MENTION_WEIGHTS)
    assert scores[0.0] == pytest.approx(0.4375)
    # the smallest weight that lifts every dev gold to the top wins (ties: the smaller)
    assert fused.mention_weight_ == min(w for w, v in scores.items() if v == pytest.approx(1.0))
    docs, _ = _docs([["C30"]])
    plain = fused.without_mentions()
    expected = plain.decision_function(docs)
    expected[:, :3] += fused.mention_weight_ * fused.mentions_.decision_function(docs)
    np.testing.assert_allclose(fused.decision_function(docs), expected)
    assert fused.predict_top_k(docs, 1)[0].tolist() == [[2]]
    assert plain.predict_top_k(docs, 1)[0].tolist() == [[0]]


def test_without_mentions_is_the_fusion_fitted_without_a_mention_source():
    fused = _fit()
    docs, _ = _docs(TRAIN)
    dev_docs, _ = _docs(DEV)
    alone = DescriptionFusion(FrequencyPrior()).fit(
        [d["text"] for d in docs], TRAIN, label_names=NAMES, label_descriptions=DESCRIPTIONS,
        validation_data=([d["text"] for d in dev_docs], _Y(DEV)))
    np.testing.assert_array_equal(fused.without_mentions().decision_function(dev_docs),
                                  alone.decision_function([d["text"] for d in dev_docs]))
    assert (fused.weight_, fused.seen_weight_) == (alone.weight_, alone.seen_weight_)


def test_a_saved_fusion_with_mentions_scores_to_the_bit_and_explains_with_the_matched_words(
        tmp_path):
    fused = _fit()
    docs, _ = _docs([["B20", "C30"], ["A10"]])
    folder = save_description_fusion(fused, tmp_path / "f")
    loaded, _ = load_saved(folder)
    np.testing.assert_array_equal(loaded.decision_function(docs), fused.decision_function(docs))
    assert loaded.mention_weight_ == fused.mention_weight_
    ex = loaded.explain(docs, top_labels=1)[0]["labels"][0]
    span = ex["spans"][0]
    assert ex["source"].startswith("mentions") and span["field"] == "text_es"
    assert docs[0]["text_es"][span["start"]:span["end"]] == span["text"]
    # a document without the matcher's field is refused, naming it
    with pytest.raises(ValueError, match="text_es"):
        loaded.decision_function([{"text": "patient seen today"}])


def test_mentions_without_evidence_are_refused():
    docs, _ = _docs(TRAIN)
    with pytest.raises(ValueError, match="mentions needs the training documents' evidence"):
        DescriptionFusion(FrequencyPrior(), mentions=MentionMatcher()).fit(
            docs, TRAIN, label_names=NAMES, label_descriptions=DESCRIPTIONS)
