import gzip
import json

import numpy as np
import pytest

from xplant.datasets import load_eurlex57k


def _doc(celex, concepts, body=("Article 1", "Article 2")):
    return {
        "celex_id": celex,
        "uri": "u",
        "type": "Regulation",
        "concepts": concepts,
        "title": f"Title {celex}\n",
        "header": "HEADER",
        "recitals": "Whereas ...",
        "main_body": list(body),
        "attachments": "Done at Brussels.",
    }


SPLITS = {
    "train": [_doc("3B", ["100", "20"]), _doc("3A", ["20"]), _doc("3C", [])],
    "dev": [_doc("3D", ["20", "7"])],
    "test": [_doc("3E", ["999"])],
}
DESCRIPTORS = {"100": {"label": "hundred"}, "20": {"label": "twenty"}, "7": {"label": "seven"}}


@pytest.fixture()
def jsonl_home(tmp_path):
    for split, docs in SPLITS.items():
        with gzip.open(tmp_path / f"{split}.jsonl.gz", "wt", encoding="utf-8") as fh:
            for d in docs:
                fh.write(json.dumps(d) + "\n")
    (tmp_path / "EURLEX57K.json").write_text(json.dumps(DESCRIPTORS))
    return tmp_path


@pytest.fixture()
def folder_home(tmp_path):
    for split, docs in SPLITS.items():
        (tmp_path / split).mkdir()
        for d in docs:
            (tmp_path / split / f"{d['celex_id']}.json").write_text(json.dumps(d))
    (tmp_path / "EURLEX57K.json").write_text(json.dumps(DESCRIPTORS))
    return tmp_path


def test_tiny_jsonl(jsonl_home):
    b = load_eurlex57k("train", jsonl_home)
    assert b.ids.tolist() == ["3A", "3B", "3C"]  # sorted by celex_id
    # the concepts of train and dev, sorted as strings; test's "999" is not among them
    assert b.label_names.tolist() == ["100", "20", "7"] and b.n_space == 3
    assert b.Y.toarray().tolist() == [[0, 1, 0], [1, 1, 0], [0, 0, 0]]
    assert b.label_frequency.tolist() == [1, 2, 0]
    assert b.label_descriptions.tolist() == ["hundred", "twenty", "seven"]
    assert b.texts[0] == "Title 3A\nHEADER\nWhereas ...\nArticle 1\nArticle 2"
    assert {k: v.tolist() for k, v in b.label_groups.items()} == {"frequent": [], "few": [0, 1], "zero": [2]}
    # a test concept outside the space is an extra column after it: a miss for every model
    t = load_eurlex57k("test", jsonl_home)
    assert t.label_names.tolist() == ["100", "20", "7", "999"] and t.n_space == 3
    assert t.Y.toarray().tolist() == [[0, 0, 0, 1]]
    assert t.record["n_outside_space"] == 1 and "train and dev" in t.record["label_policy"]


def test_the_closed_space_of_all_splits_is_an_option(jsonl_home):
    b = load_eurlex57k("train", jsonl_home, label_space="all-splits")
    assert b.label_names.tolist() == ["100", "20", "7", "999"] and b.n_space == 4
    assert b.label_frequency.tolist() == [1, 2, 0, 0] and "test" in b.record["label_policy"]
    with pytest.raises(ValueError, match="label_space"):
        load_eurlex57k("train", jsonl_home, label_space="test")


def test_folder_layout_equals_jsonl(jsonl_home, folder_home):
    for split in SPLITS:
        a, b = load_eurlex57k(split, jsonl_home), load_eurlex57k(split, folder_home)
        assert a.texts == b.texts and (a.Y != b.Y).nnz == 0
        np.testing.assert_array_equal(a.ids, b.ids)


def test_sections_and_max_docs(jsonl_home):
    b = load_eurlex57k("train", jsonl_home, sections=("main_body",), max_docs=2)
    assert b.texts == ["Article 1\nArticle 2"] * 2 and b.Y.shape == (2, 3)
    with pytest.raises(ValueError, match="sections"):
        load_eurlex57k("train", jsonl_home, sections=("body",))


def test_not_bundled():
    with pytest.raises(ValueError, match="not bundled.*data_home"):
        load_eurlex57k("train")


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_home must hold"):
        load_eurlex57k("train", tmp_path)


def test_numeric_concepts_rejected(tmp_path):
    (tmp_path / "train.jsonl").write_text(json.dumps(_doc("1", [20])) + "\n")
    with pytest.raises(ValueError, match="list of strings"):
        load_eurlex57k("train", tmp_path)


@pytest.mark.slow
def test_full_corpus(eurlex_home):
    # its loading time is a benchmark: bench_speed.py --rows eurlex-load (target: 60 s)
    train = load_eurlex57k("train", eurlex_home)
    dev, test = load_eurlex57k("dev", eurlex_home), load_eurlex57k("test", eurlex_home)
    assert (len(train.texts), len(dev.texts), len(test.texts)) == (45000, 6000, 6000)
    # the label space: the concepts of train and dev; test's others are extra columns
    space = train.n_space
    assert train.Y.shape[1] == dev.Y.shape[1] == space == dev.n_space == test.n_space
    assert test.Y.shape[1] - space == test.record["n_outside_space"] > 0
    closed = load_eurlex57k("train", eurlex_home, label_space="all-splits", max_docs=1)
    assert closed.Y.shape[1] == 4271 == space + test.record["n_outside_space"]
    # Chalkidis et al. 2019 groups; frequent is "more than 50" (the paper's 746 counts >= 50);
    # their zero-shot group, 163 concepts only dev or test hold, keeps dev's here
    sizes = {k: len(v) for k, v in train.label_groups.items()}
    assert sizes["frequent"] == 739 and sizes["few"] == 3369
    assert sum(sizes.values()) == space
    assert {k: len(v) for k, v in closed.label_groups.items()} == \
        {"frequent": 739, "few": 3369, "zero": 163}
    assert train.label_descriptions[list(train.label_names).index("3474")] == "international affairs"
