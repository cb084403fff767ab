import gzip
import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import MultiLabelBinarizer

from xplant.datasets import align_label_space, dump_xc, load_xc, read_labelled_texts


# --- XC repository / LibSVM multi-label format ---------------------------------


def test_xc_traps(tmp_path):
    p = tmp_path / "a.txt"
    # header; empty label field; "3, 7" with a space; trailing \r; repeated label
    p.write_bytes(b"4 5 8\r\n3, 7 1:1 4:0.5\r\n 2:2\n0,0 0:1\n\n")
    b = load_xc(p)
    assert b.Y.shape == (4, 8) and b.X.shape == (4, 5)
    assert b.Y.toarray()[0].tolist() == [0, 0, 0, 1, 0, 0, 0, 1]
    assert b.Y[1].nnz == 0 and b.Y[3].nnz == 0  # empty label fields are legal rows
    assert b.X.toarray()[0].tolist() == [0, 1, 0, 0, 0.5]
    assert b.X.toarray()[1].tolist() == [0, 0, 2, 0, 0]
    assert b.record["n_duplicate_labels_removed"] == 1
    assert b.Y.dtype == np.int64 and b.label_frequency.tolist() == [1, 0, 0, 1, 0, 0, 0, 1]
    X, Y = load_xc(p, return_X_y=True)
    assert (X != b.X).nnz == 0 and (Y != b.Y).nnz == 0


@pytest.mark.parametrize(
    "content, message",
    [
        ("2 3 4\n1 0:1\n1,x 0:1\n", "line 3: bad label 'x'"),
        ("2 3 4\n1 0:1\n1 0=1\n", "line 3: bad label '1 0=1'"),
        ("2 3 4\n1 0:1\n1 0:abc\n", "line 3: bad feature"),
        ("3 3 4\n1 0:1\n1 0:1\n", "header declares 3 documents, file has 2"),
        ("2 3 4\n1 0:1\n9 0:1\n", "label index 9 is beyond n_labels=4"),
        ("2 3 4\n1 0:1\n1 7:1\n", "feature index 7 is beyond n_features=3"),
    ],
)
def test_xc_malformed(tmp_path, content, message):
    p = tmp_path / "bad.txt"
    p.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_xc(p)


def test_xc_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(30, 12, density=0.3, format="csr", random_state=1)
    dense = (rng.random((30, 9)) < 0.2).astype(np.int64)
    dense[4] = 0  # a row without labels
    Y = sp.csr_matrix(dense)
    dump_xc(tmp_path / "rt.txt", X, Y)
    X2, Y2 = load_xc(tmp_path / "rt.txt", return_X_y=True)
    assert X2.shape == X.shape and Y2.shape == Y.shape
    np.testing.assert_array_equal(X2.toarray(), X.toarray())
    np.testing.assert_array_equal(Y2.toarray(), Y.toarray())


def test_xc_without_header(tmp_path):
    p = tmp_path / "nh.txt"
    p.write_text("0,2 1:1\n1 0:3\n")
    b = load_xc(p)
    assert b.Y.shape == (2, 3) and b.X.shape == (2, 2) and b.record["header"] is None


# --- users' JSON lines / TSV ----------------------------------------------------


def test_user_reader_traps(tmp_path):
    tr = tmp_path / "train.jsonl"
    tr.write_text(
        json.dumps({"text": "a", "labels": "25000|2720"}) + "\n"
        + json.dumps({"text": "", "labels": []}) + "\n"  # empty document stays a row
        + json.dumps({"text": "c", "labels": ["0117", "0117"]}) + "\n"
    )
    te = tmp_path / "test.tsv"
    te.write_text("id\ttext\tlabels\nd1\tsome text\t117|25000\n")
    data = read_labelled_texts({"train": tr, "test": te})
    train, test = data["train"], data["test"]
    # one space for both, from the training file: test's "117" (not "0117") is outside it,
    # an extra column of test
    assert train.label_names.tolist() == ["0117", "25000", "2720"] and train.n_space == 3
    assert test.label_names.tolist() == ["0117", "25000", "2720", "117"] and test.n_space == 3
    assert train.Y.toarray().tolist() == [[0, 1, 1], [0, 0, 0], [1, 0, 0]]
    assert test.Y.toarray().tolist() == [[0, 1, 0, 1]]
    assert train.texts[1] == "" and train.record["n_empty_texts"] == 1
    assert train.record["n_duplicate_labels_removed"] == 1
    # the MultiLabelBinarizer trap: raw strings become single characters
    assert set(MultiLabelBinarizer().fit(["25000"]).classes_) == {"0", "2", "5"}
    assert "2" not in train.label_names


def test_user_reader_errors(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"text": "a", "labels": ["250|00"]}) + "\n")
    with pytest.raises(ValueError, match="contains the separator"):
        read_labelled_texts({"train": p})
    p.write_text(json.dumps({"text": "a", "labels": [401.1]}) + "\n")
    with pytest.raises(ValueError, match="line 1: label 401.1 is a float"):
        read_labelled_texts({"train": p})
    p.write_text(json.dumps({"body": "a", "labels": []}) + "\n")
    with pytest.raises(ValueError, match="no field 'text'"):
        read_labelled_texts({"train": p})
    p.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1: invalid JSON"):
        read_labelled_texts({"train": p})


def test_user_reader_gzip_custom_fields_and_sep(tmp_path):
    p = tmp_path / "d.jsonl.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(json.dumps({"doc": "x", "codes": "a10; b20", "k": 7}) + "\n")
    b = read_labelled_texts({"all": p}, text_field="doc", labels_field="codes", id_field="k", sep=";", upper=True)["all"]
    assert b.label_names.tolist() == ["A10", "B20"] and b.ids.tolist() == ["7"]


# --- label space -----------------------------------------------------------------


def test_align_label_space_counts_unknown_positives():
    Y = sp.csr_matrix(np.array([[1, 0, 1, 0], [0, 1, 1, 1], [0, 0, 0, 0]]))
    r = align_label_space(["A", "B", "C"], Y, ["C", "A", "Z", "Q"])
    # C->2, A->0; Z and Q unknown, appended in the order of `labels`
    assert r.label_names.tolist() == ["A", "B", "C", "Z", "Q"]
    assert r.Y.toarray().tolist() == [[0, 0, 1, 1, 0], [1, 0, 0, 1, 1], [0, 0, 0, 0, 0]]
    assert r.n_unknown_positives == 3 and r.n_docs_with_unknown == 2
    assert r.unknown_labels.tolist() == ["Z", "Q"] and r.unseen_model_labels == 1
    # recall of a perfect model on known labels is 2/5, not 2/2: unknown positives are misses
    assert r.Y[:, : r.n_known].nnz / r.Y.nnz == pytest.approx(2 / 5)
    with pytest.raises(ValueError, match="columns"):
        align_label_space(["A"], Y, ["A"])
