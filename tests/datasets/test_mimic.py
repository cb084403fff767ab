"""MIMIC loaders on tiny synthetic files (never real MIMIC text)."""

import csv
import gzip

import numpy as np
import pytest

from xplant.datasets import format_icd_code, load_mimic


def test_format_icd_code():
    assert format_icd_code("4019", "ICD9-DIAG") == "401.9"
    assert format_icd_code("401.9", "ICD9-DIAG") == "401.9"  # idempotent
    assert format_icd_code("E8809", "ICD9-DIAG") == "E880.9"
    assert format_icd_code("V1046", "ICD9-DIAG") == "V10.46"
    assert format_icd_code("250", "ICD9-DIAG") == "250"
    assert format_icd_code("3893", "ICD9-PROC") == "38.93"
    assert format_icd_code("0117", "ICD9-DIAG") != format_icd_code("117", "ICD9-DIAG")
    assert format_icd_code("0117", "ICD9-PROC") == "01.17"
    assert format_icd_code("i10", "ICD10-DIAG") == "I10"
    assert format_icd_code("E1122", "ICD10-DIAG") == "E11.22"
    assert format_icd_code("0DTJ4ZZ", "ICD10-PROC") == "0DTJ4ZZ"
    with pytest.raises(ValueError, match="system"):
        format_icd_code("401", "ICD9")
    with pytest.raises(ValueError, match="non-empty string"):
        format_icd_code(4019, "ICD9-DIAG")


def _write_csv(path, header, rows, gz=False):
    opener = gzip.open if gz else open
    with opener(path, "wt", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


@pytest.fixture()
def raw_home(tmp_path):
    notes = [
        # ROW_ID, SUBJECT_ID, HADM_ID, CHARTDATE, CATEGORY, DESCRIPTION, TEXT
        (3, 1, 100, "2100-01-03", "Discharge summary", "Addendum", "addendum text"),
        (1, 1, 100, "2100-01-02", "Discharge summary", "Report", "main report"),
        (2, 1, 100, "2100-01-01", "Nursing", "Note", "nursing note is not used"),
        (4, 2, 200, "2100-02-01", "Discharge summary", "Report", "second admission"),
        (5, 3, 300, "2100-03-01", "Discharge summary", "Report", "third admission"),
        (6, 4, 400, "2100-04-01", "Discharge summary", "Report", "fourth admission"),
    ]
    _write_csv(tmp_path / "NOTEEVENTS.csv.gz", ["ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CATEGORY", "DESCRIPTION", "TEXT"], notes, gz=True)
    diags = [
        (1, 1, 100, 1, "0117"),
        (2, 1, 100, 2, "0117"),  # duplicate (admission, code)
        (3, 1, 100, 3, "4019"),
        (4, 2, 200, 1, "4019"),
        (5, 3, 300, 1, "E8809"),
        (6, 4, 400, 1, "25000"),
        (7, 2, 200, 2, "25000"),
    ]
    _write_csv(tmp_path / "DIAGNOSES_ICD.csv", ["ROW_ID", "SUBJECT_ID", "HADM_ID", "SEQ_NUM", "ICD9_CODE"], diags)
    procs = [(1, 1, 100, 1, "0117"), (2, 3, 300, 1, "3893")]  # same digits as a diagnosis
    _write_csv(tmp_path / "PROCEDURES_ICD.csv", ["ROW_ID", "SUBJECT_ID", "HADM_ID", "SEQ_NUM", "ICD9_CODE"], procs)
    (tmp_path / "train_full_hadm_ids.csv").write_text("100\n200\n300\n")
    (tmp_path / "test_full_hadm_ids.csv").write_text("400\n")
    return tmp_path


def test_raw_layout_traps(raw_home):
    b = load_mimic(raw_home, "train", layout="raw")
    assert b.label_names.tolist() == ["01.17", "011.7", "250.00", "38.93", "401.9", "E880.9"]
    assert b.label_types.tolist() == ["ICD9-PROC", "ICD9-DIAG", "ICD9-DIAG", "ICD9-PROC", "ICD9-DIAG", "ICD9-DIAG"]
    assert b.ids.tolist() == ["100", "200", "300"]
    assert b.texts[0] == "main report\naddendum text"  # report first, then addendum; nursing note dropped
    assert b.Y.toarray().tolist() == [[1, 1, 0, 0, 1, 0], [0, 0, 1, 0, 1, 0], [0, 0, 0, 1, 0, 1]]
    assert b.record["n_duplicate_labels_removed"] == 1
    t = load_mimic(raw_home, "test", layout="raw")
    np.testing.assert_array_equal(t.label_names, b.label_names)  # one label space
    assert t.Y.toarray().tolist() == [[0, 0, 1, 0, 0, 0]]


def test_raw_top_k_tie_break(raw_home):
    # train document frequency: 401.9 -> 2; all others -> 1; ties by code string
    b = load_mimic(raw_home, "train", layout="raw", top_k=3)
    assert b.label_names.tolist() == ["01.17", "011.7", "401.9"]
    assert b.Y.toarray().tolist() == [[1, 1, 1], [0, 0, 1], [0, 0, 0]]  # rows stay, even empty
    assert b.record["n_documents_without_labels"] == 1


def test_raw_collision_is_refused(raw_home):
    # a diagnosis written with a dot in the procedure position is re-dotted as a diagnosis
    with open(raw_home / "DIAGNOSES_ICD.csv", "a", newline="") as fh:
        csv.writer(fh).writerow([8, 3, 300, 2, "38.93"])
    assert "389.3" in load_mimic(raw_home, "train", layout="raw").label_names
    # two-character codes get no dot in either system: they would merge, so refuse
    with open(raw_home / "DIAGNOSES_ICD.csv", "a", newline="") as fh:
        csv.writer(fh).writerow([9, 3, 300, 3, "12"])
    with open(raw_home / "PROCEDURES_ICD.csv", "a", newline="") as fh:
        csv.writer(fh).writerow([3, 3, 300, 2, "12"])
    with pytest.raises(ValueError, match="both map to label"):
        load_mimic(raw_home, "train", layout="raw")


def test_caml_layout(tmp_path):
    header = ["SUBJECT_ID", "HADM_ID", "TEXT", "LABELS", "length"]
    _write_csv(tmp_path / "train_full.csv", header, [
        (1, 100, "note one", "401.9;38.93;401.9", 2),
        (1, 100, "note two", "011.7", 2),  # second row of the same admission
        (2, 200, "other", "01.17", 1),
    ])
    _write_csv(tmp_path / "test_full.csv", header, [(3, 300, "", "V10.46", 0)])
    b = load_mimic(tmp_path, "train", layout="caml")
    assert b.ids.tolist() == ["100", "200"]
    assert b.texts[0] == "note one\nnote two"
    assert b.label_names.tolist() == ["01.17", "011.7", "38.93", "401.9", "V10.46"]
    assert b.label_types.tolist() == ["ICD9-PROC", "ICD9-DIAG", "ICD9-PROC", "ICD9-DIAG", "ICD9-DIAG"]
    assert b.Y.toarray().tolist() == [[0, 1, 1, 1, 0], [1, 0, 0, 0, 0]]
    t = load_mimic(tmp_path, "test", layout="caml")
    assert t.texts == [""] and t.Y.toarray().tolist() == [[0, 0, 0, 0, 1]]  # empty text stays a row
    with pytest.raises(FileNotFoundError, match="split 'dev'"):
        load_mimic(tmp_path, "dev", layout="caml")


def test_edin_layout(tmp_path):
    pa = pytest.importorskip("pyarrow")
    feather = pytest.importorskip("pyarrow.feather")
    table = pa.table({
        "_id": [10, 11, 12],
        "text": ["a b", "c", "d"],
        "icd9_diag": [["401.9", "0117"], [], ["250.00"]],
        "icd9_proc": [["01.17"], ["38.93"], []],
    })
    feather.write_feather(table, tmp_path / "mimiciii_clean.feather")
    feather.write_feather(pa.table({"_id": [10, 11, 12], "split": ["train", "val", "test"]}), tmp_path / "mimiciii_clean_splits.feather")
    b = load_mimic(tmp_path, "dev", layout="edin")
    assert b.label_names.tolist() == ["01.17", "011.7", "250.00", "38.93", "401.9"]
    assert b.ids.tolist() == ["11"] and b.Y.toarray().tolist() == [[0, 0, 0, 1, 0]]
    b = load_mimic(tmp_path, "train", layout="edin")
    assert b.Y.toarray().tolist() == [[1, 1, 0, 0, 1]]
