"""MentionMatcher: gold mentions learned from evidence, matched, scored by reliability.

The reliabilities below are computed by hand from the formula of the class
docstring, r(m, l, s) = (n(m, l, s) + c_s) / (n(m, s) + 1).
"""

import numpy as np
import pytest
from sklearn.base import clone

from xplant.linear import MentionMatcher, load_linear, save_linear

TEXTS = ["Paciente con neumonía aguda y fiebre.",      # J18.9 (neumonia), R50.9 (fiebre)
         "Fiebre alta sin foco.",                      # R50.9
         "Se descarta neumonía. Tos seca.",            # R05 (tos), neumonia negated
         "Neumonía basal derecha.",                    # J18.9
         "Dolor torácico."]                            # R07.9, no evidence
LABELS = [["J18.9", "R50.9"], ["R50.9"], ["R05"], ["J18.9"], ["R07.9"]]
EVIDENCE = [[{"label": "J18.9", "spans": [[13, 21]]}, {"label": "R50.9", "spans": [[30, 36]]}],
            [{"label": "R50.9", "spans": [[0, 6]]}],
            [{"label": "R05", "spans": [[22, 25]]}],
            [{"label": "J18.9", "spans": [[0, 8]]}],
            []]


def _fit(**params):
    return MentionMatcher(language="es", **params).fit(TEXTS, LABELS, evidence=EVIDENCE)


def test_reliabilities_are_the_shares_of_documents_holding_a_mention_that_carry_its_label():
    m = _fit()
    assert m.classes_.tolist() == ["J18.9", "R05", "R07.9", "R50.9"]
    assert m.mentions_ == ["fiebre", "neumonia", "tos"]
    exact = m.reliability_["exact"].toarray()
    # "neumonia": affirmed in documents 0 and 3, both J18.9 -> (2 + .5) / (2 + 1)
    assert exact[1, 0] == pytest.approx(2.5 / 3)
    # "fiebre": documents 0 and 1, both R50.9
    assert exact[0, 3] == pytest.approx(2.5 / 3)
    # negated "neumonia" in document 2 (no J18.9): (0 + .5 * 2.5/3) / (1 + 1)
    assert m.reliability_["exact_negated"].toarray()[1, 0] == pytest.approx(0.5 * 2.5 / 3 / 2)
    # a document's score is the best reliability times the length bonus 1 + 0.05 * words
    S = m.decision_function(["Neumonía y fiebre"])
    np.testing.assert_allclose(S, [[2.5 / 3 * 1.05, 0, 0, 2.5 / 3 * 1.05]])
    np.testing.assert_allclose(m.predict_proba(["Neumonía y fiebre"]), [[2.5 / 3, 0, 0, 2.5 / 3]])


def test_a_negated_mention_scores_its_own_lower_reliability_and_without_negation_the_same():
    m, plain = _fit(), _fit(negation=False)
    neg = m.decision_function(["No presenta neumonía."])[0, 0]
    assert neg == pytest.approx(0.5 * 2.5 / 3 / 2 * 1.05)
    # without negation the three documents holding it count alike: (2 + .5) / (3 + 1)
    assert plain.decision_function(["No presenta neumonía."])[0, 0] == pytest.approx(2.5 / 4 * 1.05)
    ex = m.explain(["No presenta neumonía."], top_labels=1)[0]["labels"][0]
    assert ex["label"] == "J18.9" and ex["spans"][0]["negated"] is True
    # a cue in another clause does not negate
    assert m.decision_function(["No. Neumonía."])[0, 0] == pytest.approx(2.5 / 3 * 1.05)


def test_inflected_forms_match_through_stems_only_when_approximate():
    text = ["Neumonías de repetición"]
    assert _fit(approximate=False).decision_function(text)[0, 0] == 0.0
    # stemmed, never seen in that state in training: the exact reliability halved
    assert _fit().decision_function(text)[0, 0] == pytest.approx(0.5 * 2.5 / 3 * 1.05)


def test_nested_mentions_all_match_and_the_longer_one_wins_at_equal_reliability():
    texts = ["insuficiencia renal aguda", "insuficiencia renal"]
    ev = [[{"label": "N17.9", "spans": [[0, 25]]}], [{"label": "N19", "spans": [[0, 19]]}]]
    m = MentionMatcher().fit(texts, [["N17.9"], ["N19"]], evidence=ev)
    out = m.explain(["Ingresa por insuficiencia renal aguda"], top_labels=2)[0]["labels"]
    # "insuficiencia renal" is in both training notes, one of them N19: (1 + .5) / (2 + 1)
    assert [lab["label"] for lab in out] == ["N17.9", "N19"]
    assert out[0]["score"] == pytest.approx(1.5 / 2 * 1.15)
    assert out[1]["score"] == pytest.approx(1.5 / 3 * 1.10)
    assert out[0]["spans"][0]["text"] == "insuficiencia renal aguda"
    assert out[1]["spans"][0]["text"] == "insuficiencia renal"


def test_explain_gives_offsets_into_the_original_text():
    text = "Control: NEUMONÍA   basal."
    ex = _fit().explain([text], top_labels=1)[0]["labels"][0]
    span = ex["spans"][0]
    assert text[span["start"]:span["end"]] == span["text"] == "NEUMONÍA"
    assert ex["source"] == "mentions" and span["approximate"] is False


def test_a_model_fitted_on_a_field_refuses_documents_without_it_naming_the_field():
    docs = [{"text": "english", "text_es": t} for t in TEXTS]
    m = MentionMatcher(language="es", text_field="text_es").fit(docs, LABELS, evidence=EVIDENCE)
    assert m.decision_function([{"text_es": "neumonía"}])[0, 0] > 0
    with pytest.raises(ValueError, match="no text field 'text_es'"):
        m.decision_function([{"text": "neumonía"}])


def test_save_and_load_rebuild_the_matcher_from_data_alone(tmp_path):
    m = _fit()
    folder = save_linear(m, tmp_path / "m")
    config = (folder / "config.json").read_text(encoding="utf-8")
    assert "neumonia" in config and not list(folder.glob("*.pkl"))
    loaded = load_linear(folder)
    probe = ["Neumonías y fiebre; no tos", "nada"]
    np.testing.assert_array_equal(loaded.decision_function(probe), m.decision_function(probe))
    assert loaded.explain(probe) == m.explain(probe)


def test_evidence_is_checked_before_anything_is_fitted():
    bad = [list(e) for e in EVIDENCE]
    bad[4] = [{"label": "J18.9", "spans": [[0, 5]]}]
    with pytest.raises(ValueError, match=r"evidence\[4\]: evidence for label 'J18.9'"):
        MentionMatcher().fit(TEXTS, LABELS, evidence=bad)
    with pytest.raises(ValueError, match="no mention of 3 characters"):
        MentionMatcher().fit(["ab"], [["X"]], evidence=[[{"label": "X", "spans": [[0, 2]]}]])
    with pytest.raises(ValueError, match="language"):
        MentionMatcher(language="fr").fit(TEXTS, LABELS, evidence=EVIDENCE)


def test_the_checks_that_need_no_fit():
    from sklearn.utils.estimator_checks import (check_get_params_invariance,
                                                check_no_attributes_set_in_init, check_set_params)
    est = MentionMatcher()
    check_no_attributes_set_in_init("MentionMatcher", est)
    check_get_params_invariance("MentionMatcher", est)
    check_set_params("MentionMatcher", est)
    assert clone(_fit()).get_params() == MentionMatcher(language="es").get_params()
