"""Users' files as a new user produces them: literal TSV cells, byte-order marks, document ids."""

import gzip
import json

import numpy as np
import pytest

from xplant.datasets import read_labelled_texts

BOM = "\ufeff"


def _labels(bunch):
    return [set(bunch.label_names[bunch.Y[i].indices].tolist()) for i in range(bunch.Y.shape[0])]


def test_unclosed_leading_quote_does_not_eat_rows(tmp_path):
    # A quote is text in a TSV cell: csv quoting would read this file as 1 document with no
    # labels.
    p = tmp_path / "notes.tsv"
    p.write_text('text\tlabels\n"Unwell since Monday\tR50\nsecond note\tW19\nthird note\tR50|W19\n',
                 encoding="utf-8")
    b = read_labelled_texts({"train": p})["train"]
    assert b.texts == ['"Unwell since Monday', "second note", "third note"]
    assert _labels(b) == [{"R50"}, {"W19"}, {"R50", "W19"}]


def test_balanced_leading_quote_is_kept(tmp_path):
    p = tmp_path / "notes.tsv"
    p.write_text('text\tlabels\n"Cough" reported by mother\tR05\n', encoding="utf-8")
    b = read_labelled_texts({"train": p})["train"]
    assert b.texts == ['"Cough" reported by mother']


def test_a_tab_inside_a_tsv_cell_is_an_error_pointing_to_json_lines(tmp_path):
    p = tmp_path / "notes.tsv"
    p.write_text("text\tlabels\nfever\tand cough\tR50\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"notes.tsv, line 2: 3 tab-separated cells.*JSON lines"):
        read_labelled_texts({"train": p})


def test_carriage_return_in_a_text_does_not_split_the_row(tmp_path):
    p = tmp_path / "notes.tsv"
    p.write_bytes(b"text\tlabels\r\nfever\rcough\tR50\r\n")
    b = read_labelled_texts({"train": p})["train"]
    assert b.texts == ["fever\rcough"] and _labels(b) == [{"R50"}]


@pytest.mark.parametrize("name, content", [
    ("notes.tsv", "text\tlabels\nfever\tR50\n"),
    ("notes.jsonl", '{"text": "fever", "labels": ["R50"]}\n'),
])
@pytest.mark.parametrize("gz", [False, True])
def test_byte_order_mark_is_accepted(tmp_path, name, content, gz):
    # A file saved with a BOM is read as without it; kept, the BOM gives "no field 'text'
    # (fields: ['labels', '\ufefftext'])" or "invalid JSON (Unexpected UTF-8 BOM)".
    p = tmp_path / (name + (".gz" if gz else ""))
    data = (BOM + content).encode("utf-8")
    if gz:
        import gzip
        data = gzip.compress(data)
    p.write_bytes(data)
    b = read_labelled_texts({"train": p})["train"]
    assert b.texts == ["fever"] and _labels(b) == [{"R50"}]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("rows, message", [
    ([{"id": "a", "text": "x", "labels": []}, {"id": "a", "text": "y", "labels": []}],
     r"d.jsonl, line 2: document id 'a' repeats the id of .*line 1"),
    ([{"id": "S0001\tz99.9\r\nS0002", "text": "x", "labels": []}],
     r"d.jsonl, line 1: document id .* holds control characters"),
    ([{"id": None, "text": "x", "labels": []}], r"d.jsonl, line 1: the document id 'id' is null"),
    ([{"id": 1.5, "text": "x", "labels": []}], "must be a string or an integer"),
    # a positional id ("d.jsonl:1") colliding with an explicit one
    ([{"id": "d.jsonl:1", "text": "x", "labels": []}, {"text": "y", "labels": []}],
     r"d.jsonl, line 2: document id 'd.jsonl:1' repeats"),
])
def test_bad_document_ids_are_refused_with_file_and_line(tmp_path, rows, message):
    p = _jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(ValueError, match=message):
        read_labelled_texts({"train": p}, id_field="id")


def test_ids_default_to_positions_and_integers_become_strings(tmp_path):
    p = _jsonl(tmp_path / "d.jsonl", [{"id": 7, "text": "x", "labels": []},
                                      {"text": "y", "labels": []}])
    b = read_labelled_texts({"train": p}, id_field="id")["train"]
    assert list(b.ids) == ["7", "d.jsonl:1"]


def test_same_id_in_two_splits_warns(tmp_path):
    tr = _jsonl(tmp_path / "tr.jsonl", [{"id": "n1", "text": "x", "labels": ["A"]}])
    te = _jsonl(tmp_path / "te.jsonl", [{"id": "n1", "text": "y", "labels": ["A"]}])
    with pytest.warns(UserWarning, match="'n1' is in both the 'train' and the 'test' split"):
        data = read_labelled_texts({"train": tr, "test": te}, id_field="id")
    np.testing.assert_array_equal(data["test"].Y.toarray(), [[1]])


def _gz_notes(n=200):
    return "".join(json.dumps({"text": f"fever and cough {i}", "labels": ["A10"]}) + "\n"
                   for i in range(n)).encode()


def test_a_gzip_file_cut_short_names_the_file_and_the_fix(tmp_path):
    data = gzip.compress(_gz_notes())
    cut = tmp_path / "train.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError) as err:
        read_labelled_texts({"train": cut})
    assert str(err.value) == (f"{cut}: the compressed data end before the gzip end marker: the "
                              "file was cut short (an interrupted download or copy); fetch or "
                              "compress it again")


def test_a_plain_file_named_gz_names_the_file_and_the_fix(tmp_path):
    plain = tmp_path / "test.jsonl.gz"
    plain.write_bytes(_gz_notes(3))
    with pytest.raises(ValueError, match=r"test.jsonl.gz: it is not gzip-compressed, though its "
                                         r"name ends in .gz; rename it without .gz"):
        read_labelled_texts({"test": plain})


@pytest.mark.parametrize("cut", [10, 20, 40])
def test_other_damaged_gzip_files_name_the_file(tmp_path, cut):
    """A .tsv.gz cut anywhere (header, data, trailer), a damaged stream, and a .txt.gz document
    of xplant predict's folder reader each fail with an error naming the file, not a bare
    zlib or EOF error."""
    from xplant.datasets import read_text_file
    data = gzip.compress(b"text\tlabels\n" + b"".join(b"fever %d\tA10\n" % i for i in range(50)))
    p = tmp_path / "notes.tsv.gz"
    p.write_bytes(data[:cut])
    with pytest.raises(ValueError, match=r"notes.tsv.gz: "):
        read_labelled_texts({"train": p})
    bad = bytearray(data)
    bad[15:25] = b"\xff" * 10                 # the deflate stream damaged, the header whole
    p.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match=r"notes.tsv.gz: "):
        read_labelled_texts({"train": p})
    t = tmp_path / "a.txt.gz"
    t.write_bytes(gzip.compress(b"Fever since Monday.\n")[:cut // 2])
    with pytest.raises(ValueError, match=r"a.txt.gz: the compressed data end before"):
        read_text_file(t)
