"""Label names follow the texts' rules: Unicode NFC, and a DataFrame's columns."""

import json
import unicodedata

import numpy as np
import pytest

from xplant._labels import check_label_names, check_targets
from xplant._normal_forms import normalize_label

NFC = unicodedata.normalize("NFC", "Fièvre")
NFD = unicodedata.normalize("NFD", "Fièvre")


def test_the_two_forms_differ_as_strings():
    assert NFC != NFD and len(NFC) == 6 and len(NFD) == 7
    assert normalize_label(NFD) == NFC and normalize_label(NFC) == NFC


def test_label_lists_in_nfc_and_nfd_are_one_label():
    Y, classes = check_targets([[NFC], [NFD], [NFC, "Tos"], [NFD]])
    assert classes.tolist() == [NFC, "Tos"]
    assert Y.toarray().tolist() == [[1, 0], [1, 0], [1, 1], [1, 0]]


def test_given_names_equal_in_nfc_are_refused_and_kept_in_nfc():
    with pytest.raises(ValueError, match=r"\(column 0\) and .* \(column 1\) are the same label in "
                                         r"Unicode NFC"):
        check_targets(np.eye(2, dtype=int), label_names=[NFC, NFD])
    with pytest.raises(ValueError, match="same label in Unicode NFC"):
        check_label_names([NFD, NFC])
    # a name given in NFD is stored in NFC, and label lists in either form find its column
    Y, classes = check_targets([[NFC], ["Tos"]], label_names=[NFD, "Tos"])
    assert classes.tolist() == [NFC, "Tos"] and Y.toarray().tolist() == [[1, 0], [0, 1]]


def test_a_train_file_with_a_label_in_nfc_and_nfd_fits_one_label(tmp_path):
    from xplant.datasets import read_labelled_texts
    from xplant.linear import make_tfidf_ovr
    rows = [{"id": f"n{i}", "text": f"fiebre alta {i}" if i % 2 else f"tos seca {i}",
             "labels": [NFC if i % 4 == 1 else NFD] if i % 2 else ["Tos"]} for i in range(8)]
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                     encoding="utf-8")
    data = read_labelled_texts({"train": str(train)})["train"]
    assert data.label_names.tolist() == [NFC, "Tos"]
    assert np.asarray(data.Y.sum(axis=0)).ravel().tolist() == [4, 4]
    # the library path: the same label lists given directly
    model = make_tfidf_ovr(min_df=1).fit(data.texts, [r["labels"] for r in rows])
    assert model.steps[-1][1].classes_.tolist() == [NFC, "Tos"]


def test_a_dataframe_s_columns_are_its_label_names(tmp_path):
    pd = pytest.importorskip("pandas")
    from xplant import load_saved
    from xplant._saved import label_names
    from xplant.app._predict import predict_file
    from xplant.linear import make_tfidf_ovr, save_linear
    texts = ["fever chills", "cough sputum", "rash itch", "pain ache"] * 3
    Y = np.tile(np.eye(4, dtype=int), (3, 1))
    names = ["A10", "B20", "C30", "D40"]
    model = make_tfidf_ovr(min_df=1).fit(texts, pd.DataFrame(Y, columns=names))
    assert model.steps[-1][1].classes_.tolist() == names
    save_linear(model, tmp_path / "m")
    assert label_names(load_saved(tmp_path / "m")[0]) == names
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"id": "a", "text": "rash"}) + "\n", encoding="utf-8")
    predict_file(tmp_path / "m", notes, tmp_path / "p.jsonl", top_k=1)
    assert json.loads((tmp_path / "p.jsonl").read_text())["top"][0]["label"] == "C30"
    # a DataFrame without column names keeps the column indices; label_names= wins
    assert check_targets(pd.DataFrame(Y))[1].tolist() == [0, 1, 2, 3]
    assert check_targets(pd.DataFrame(Y, columns=names),
                         label_names=list("wxyz"))[1].tolist() == list("wxyz")


def test_a_descriptions_file_in_the_other_normal_form_finds_its_label(tmp_path):
    from xplant.datasets import read_label_descriptions
    f = tmp_path / "desc.jsonl"
    f.write_text(json.dumps({"label": NFD, "description": "fiebre"}, ensure_ascii=False) + "\n",
                 encoding="utf-8")
    out = read_label_descriptions(f, [NFC, "Tos"])
    assert list(out.label_descriptions) == ["fiebre", ""]
