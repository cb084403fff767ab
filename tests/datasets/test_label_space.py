"""The label spaces of the loaders: built from what a user can know, never from test."""

import numpy as np
import pytest

from xplant.datasets import load_catalogue, load_codiesp, open_label_space
from xplant.datasets._codiesp import SPLITS, _get_records
from xplant._normal_forms import normalise_code

pytest.importorskip("simple_icd_10_cm")


def _codes(split, kind="D"):
    return {normalise_code(c) for r in _get_records(None) if r["split"] == split for c in r[kind]}


def test_no_test_label_enters_the_space_unless_train_dev_or_catalogue_has_it():
    train, dev, test = (_codes(s) for s in SPLITS)
    catalogue = set(load_catalogue("icd10cm", drop_extension=True).label_names.tolist())
    for space, allowed in (("train+dev", train | dev), ("catalogue", train | dev | catalogue)):
        for split in SPLITS:
            b = load_codiesp(split, label_space=space, descriptions=False)
            names = set(b.label_names[:b.n_space].tolist())
            assert names <= allowed, space
            assert b.label_names[:b.n_known].tolist() == sorted(train | dev)
            # the split's codes outside the space follow it, positives kept: misses, not dropped
            outside = set(b.label_names[b.n_space:].tolist())
            assert outside == (_codes(split) - allowed)
            assert b.Y.nnz == load_codiesp(split, label_space="all-splits",
                                           descriptions=False).Y.nnz
    # the test-only codes are exactly test's columns after the train+dev space
    b = load_codiesp("test", label_space="train+dev", descriptions=False)
    assert set(b.label_names[b.n_space:].tolist()) == test - train - dev
    assert b.n_space == len(train | dev) == 2194 and b.Y.shape[1] == 2194 + 363


def test_every_split_shares_the_space_and_the_record_names_the_protocol():
    bs = [load_codiesp(s, label_space="catalogue", descriptions=False) for s in SPLITS]
    assert len({b.n_space for b in bs}) == 1
    for b in bs[1:]:
        np.testing.assert_array_equal(b.label_names[:b.n_space], bs[0].label_names[:b.n_space])
    assert bs[0].record["label_space"] == "catalogue" and bs[0].n_space > 100_000
    assert bs[0].record["catalogue"]["name"] == "icd10cm"
    closed = load_codiesp("test", label_space="all-splits", descriptions=False)
    assert "test" in closed.record["label_policy"] and closed.n_space == 2557


def test_load_codiesp_refuses_an_unknown_space():
    with pytest.raises(ValueError, match="label_space"):
        load_codiesp("train", label_space="everything")
    with pytest.raises(ValueError, match="codes='D'"):
        load_codiesp("train", codes="DP", label_space="catalogue")


def test_icd10cm_catalogue_and_its_codiesp_form():
    cat = load_catalogue("icd10cm")
    names = cat.label_names.tolist()
    assert len(names) == 98147 and "I21.4" in names and "A00-A09" not in names
    assert cat.record["coverage"] == 1.0
    j = names.index("I21.4")
    assert cat.label_parents[j] == ["I21"] and "myocardial infarction" in cat.label_descriptions[j]
    wide = load_catalogue("icd10cm", drop_extension=True).label_names.tolist()
    assert wide[:len(names)] == names and "S01.20X" in wide[len(names):] and "S01.20X" not in names


def test_a_user_catalogue_file(tmp_path):
    p = tmp_path / "release.jsonl"
    p.write_text('{"label": "a1", "description": "Alpha one", "parents": ["a"]}\n'
                 '{"label": "a", "description": "Alpha"}\n', encoding="utf-8")
    cat = load_catalogue(p, upper=True)
    assert cat.label_names.tolist() == ["A1", "A"] and cat.label_parents[0] == ["A"]
    assert cat.label_descriptions.tolist() == ["Alpha one", "Alpha"]
    p.write_text('{"label": "a"}\n{"label": "b"}\n{"label": "a"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"release\.jsonl, line 3.*listed twice"):
        load_catalogue(p)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_catalogue(tmp_path / "missing.jsonl")


def test_open_label_space_keeps_known_first():
    names, rows = open_label_space(["B", "Z"], None)
    assert names.tolist() == ["B", "Z"] and rows.size == 0
    from sklearn.utils import Bunch
    names, rows = open_label_space(["B", "Z"], Bunch(label_names=np.array(["A", "B", "C"])))
    assert names.tolist() == ["B", "Z", "A", "C"] and rows.tolist() == [0, 2]
