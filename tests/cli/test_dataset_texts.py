"""The texts a job reads: the dataset's setting (CodiEsp: the Spanish original, the English
translation for the description source), and ``--language``, which overrides it."""

import pytest

from xplant.app import load_splits
from xplant.app._splits import DATASET_TEXTS, _inputs, _row_splits, read_original, text_read


@pytest.fixture(scope="module")
def splits():
    return load_splits("codiesp", "D", max_docs=12, catalogue="none")


def test_codiesp_rows_read_the_spanish_and_the_descriptions_the_english(splits):
    from xplant.datasets import load_codiesp
    assert DATASET_TEXTS["codiesp"] == ("es", "en")
    tr = splits["train"]
    es = load_codiesp("train", language="es", descriptions=False)
    en = load_codiesp("train", language="en", descriptions=False)
    assert tr.texts == es.texts[:12] and tr.text_en == en.texts[:12]
    assert tr.description_field == "text_en" and tr.evidence_field is None
    assert tr.record["language"] == "es" and tr.record["description_language"] == "en"
    # the evidence indexes the texts read: every span's words lie in the Spanish
    doc, mention = next((i, m) for i, ms in enumerate(tr.evidence) for m in ms)
    s, e = mention["spans"][0]
    assert tr.texts[doc][s:e] == es.texts[doc][s:e] and e <= len(tr.texts[doc])
    # the label descriptions stay the English ICD-10 names
    assert list(tr.label_names[:2]) == ["A01.00", "A01.4"]
    assert list(tr.label_descriptions[:2]) == ["Typhoid fever, unspecified",
                                               "Paratyphoid fever, unspecified"]
    assert "text_es" not in tr and splits["test"].evidence is None


def test_language_overrides_the_setting():
    tr = load_splits("codiesp", "D", language="en", max_docs=3, catalogue="none")["train"]
    assert tr.record["language"] == "en" and tr.evidence_field == "text_es"
    assert tr.get("description_field") is None


def test_each_source_gets_its_text_and_the_table_says_which(splits):
    from sklearn.frozen import FrozenEstimator
    from xplant.linear import FrequencyPrior, MentionMatcher
    from xplant.unseen import DescriptionFusion
    tr = splits["train"]
    fused = DescriptionFusion(FrozenEstimator(FrequencyPrior()), mentions=MentionMatcher(),
                              description_field=tr.description_field)
    docs = _inputs(tr, fused)
    assert docs[0] == {"text": tr.texts[0], "text_en": tr.text_en[0]}
    assert _inputs(tr, FrequencyPrior()) is tr.texts
    assert text_read(tr, fused) == "es+en" and text_read(tr, FrequencyPrior()) == "es"
    assert text_read(tr, MentionMatcher()) == "es"
    # a row ranking by descriptions alone reads the translation (its evidence dropped)
    _, rt, rd, rtest = _row_splits({"name": "descriptions"}, None, splits)
    assert rt.texts == tr.text_en and rt.record["language"] == "en" and rt.evidence is None
    assert rd.texts == splits["dev"].text_en
    _, pt, _, _ = _row_splits({"name": "PLANT"}, None, splits)
    assert pt is tr


def test_read_original_leaves_a_split_read_in_its_original_alone():
    from sklearn.utils import Bunch
    b = Bunch(texts=["x"], record={"language": "es"}, evidence_field=None)
    assert read_original(b) is b
