import numpy as np
import pytest
import scipy.sparse as sp

from xplant.datasets import load_codiesp, load_codiesp_evidence, parse_positions
from xplant.datasets._codiesp import _english


def _check_contract(b):
    assert isinstance(b.texts, list) and all(isinstance(t, str) for t in b.texts)
    assert sp.isspmatrix_csr(b.Y) and b.Y.dtype == np.int64
    assert b.Y.has_sorted_indices and np.all(b.Y.data == 1)
    assert b.Y.shape == (len(b.texts), len(b.label_names)) == (len(b.ids), len(b.label_frequency))
    assert b.label_frequency.dtype == np.int64
    np.testing.assert_array_equal(b.label_frequency, np.asarray(b.Y.sum(axis=0)).ravel())
    assert list(b.label_names) == sorted(set(b.label_names))
    assert b.record["n_documents"] == len(b.texts)


def test_bundled_counts():
    sizes = {}
    for split in ("train", "dev", "test"):
        b = load_codiesp(split, label_space="all-splits")
        _check_contract(b)
        sizes[split] = len(b.texts)
        assert b.Y.shape[1] == 2557  # D codes across all splits
    assert sizes == {"train": 500, "dev": 250, "test": 250}
    # positives equal the official TSV row counts (no duplicates in the files)
    assert load_codiesp("train").Y.nnz == 5639
    assert load_codiesp("test").Y.nnz == 2842


def test_same_columns_for_every_split_and_codes_are_upper_strings():
    a, b = (load_codiesp(s, "P", label_space="all-splits") for s in ("train", "test"))
    np.testing.assert_array_equal(a.label_names, b.label_names)
    assert len(a.label_names) == 870
    assert all(n == n.upper() and isinstance(n, str) for n in a.label_names)
    # 65 training documents have no P code and stay rows
    assert a.record["n_documents_without_labels"] == 65
    assert np.count_nonzero(np.diff(a.Y.indptr) == 0) == 65


def test_dp_keeps_systems_apart():
    b = load_codiesp("dev", "DP", label_space="all-splits")
    assert len(b.label_names) == 2557 + 870
    assert (b.label_types == "D").sum() == 2557 and (b.label_types == "P").sum() == 870
    d, p = (load_codiesp("dev", c, label_space="all-splits") for c in "DP")
    assert b.Y.nnz == d.Y.nnz + p.Y.nnz
    # no P code contains a dot; every D code longer than 3 characters has one at index 3
    assert not any("." in n for n in b.label_names[b.label_types == "P"])
    assert all(len(n) == 3 or n[3] == "." for n in b.label_names[b.label_types == "D"])


def test_languages_and_return_X_y():
    es = load_codiesp("dev", language="es")
    en = load_codiesp("dev", language="en")
    np.testing.assert_array_equal(es.ids, en.ids)
    assert (es.Y != en.Y).nnz == 0
    assert es.texts[0] != en.texts[0]
    texts, Y = load_codiesp("dev", return_X_y=True)
    assert texts == en.texts and (Y != en.Y).nnz == 0


def test_both_languages_join_the_texts_and_move_the_evidence_onto_the_spanish():
    en, es, both = (load_codiesp("dev", language=lang) for lang in ("en", "es", "both"))
    assert both.texts == [a + "\n\n" + b for a, b in zip(en.texts, es.texts)]
    assert (both.Y != en.Y).nnz == 0 and both.evidence_field is None
    assert "text_es" not in both and en.evidence_field == "text_es"
    # each mention reads the same words in the joined text as in the Spanish original
    for text, sp_text, mine, theirs, eng in zip(both.texts, es.texts, both.evidence, es.evidence,
                                                en.texts):
        assert [m["label"] for m in mine] == [m["label"] for m in theirs]
        for m, o in zip(mine, theirs):
            assert [e - s for s, e in m["spans"]] == [e - s for s, e in o["spans"]]
            assert m["spans"][0][0] == o["spans"][0][0] + len(eng) + 2
            assert [text[s:e] for s, e in m["spans"]] == [sp_text[s:e] for s, e in o["spans"]]
    # the label descriptions stay the English ones (ICD-10-CM's)
    assert list(both.label_descriptions) == list(en.label_descriptions)
    assert "English text" in both.record["steps"][-1] and both.record["language"] == "both"


def test_english_join():
    assert _english("First one.\nSecond one.  \n\nThird.\n") == "First one.\nSecond one.\nThird."


@pytest.mark.parametrize("kw", [{"split": "val"}, {"codes": "X"}, {"language": "fr"}])
def test_bad_arguments(kw):
    with pytest.raises(ValueError, match="not valid"):
        load_codiesp(**kw)


def test_parse_positions():
    assert parse_positions("341 341;341 348;440 452") == [(341, 341), (341, 348), (440, 452)]
    with pytest.raises(ValueError, match="bad CodiEsp-X position"):
        parse_positions("12 a")
    with pytest.raises(ValueError, match="start <= end"):
        parse_positions("12 3")


def _mismatches(split, data_home=None):
    texts = dict(zip(*(lambda b: (b.ids, b.texts))(load_codiesp(split, "DP", "es", data_home))))
    ev = load_codiesp_evidence(split, data_home)
    bad = sum(" ".join(texts[r["id"]][s:e] for s, e in r["spans"]) != r["evidence"] for r in ev)
    return len(ev), bad


def test_evidence_offsets_match_spanish_text():
    counts = {s: _mismatches(s) for s in ("train", "dev", "test")}
    assert counts == {"train": (9181, 4), "dev": (4477, 3), "test": (4777, 1)}
    ev = load_codiesp_evidence("train")
    assert {r["type"] for r in ev} == {"DIAGNOSTICO", "PROCEDIMIENTO"}
    assert sum(len(r["spans"]) > 1 for r in ev) == 1787  # discontinuous evidence


def test_evidence_codes_match_labels():
    b = load_codiesp("test", "DP", "es")
    row = {i: k for k, i in enumerate(b.ids)}
    col = {n: j for j, n in enumerate(b.label_names)}
    pairs = {(row[r["id"]], col[r["code"]]) for r in load_codiesp_evidence("test")}
    coo = b.Y.tocoo()
    assert pairs == set(zip(coo.row.tolist(), coo.col.tolist()))


def test_official_folder_equals_bundled(codiesp_home):
    for split in ("train", "dev", "test"):
        for codes in ("D", "P", "DP"):
            for language in ("en", "es"):
                a = load_codiesp(split, codes, language)
                b = load_codiesp(split, codes, language, data_home=codiesp_home)
                assert a.texts == b.texts
                assert (a.Y != b.Y).nnz == 0 and a.Y.shape == b.Y.shape
                np.testing.assert_array_equal(a.label_names, b.label_names)
                np.testing.assert_array_equal(a.ids, b.ids)
        assert load_codiesp_evidence(split) == load_codiesp_evidence(split, codiesp_home)


def test_official_folder_trap_codes_and_errors(tmp_path):
    # a tiny official-layout folder: lower-case codes, a duplicate row, '0117' vs '117'
    for split in ("train", "dev", "test"):
        d = tmp_path / split
        (d / "text_files").mkdir(parents=True)
        (d / "text_files_en").mkdir()
        (d / "text_files" / f"{split}1.txt").write_text("Fiebre alta.", encoding="utf-8")
        (d / "text_files_en" / f"{split}1.txt").write_text("High\nfever.\n", encoding="utf-8")
        (d / f"{split}D.tsv").write_text(f"{split}1\tr50.9\n{split}1\tR50.9\n{split}1\t0117\n", encoding="utf-8")
        (d / f"{split}P.tsv").write_text(f"{split}1\t117\n", encoding="utf-8")
        (d / f"{split}X.tsv").write_text(f"{split}1\tDIAGNOSTICO\tr50.9\tFiebre\t0 6\n", encoding="utf-8")
    b = load_codiesp("train", "DP", data_home=tmp_path)
    assert b.label_names.tolist() == ["0117", "117", "R50.9"]
    assert b.label_types.tolist() == ["D", "P", "D"]
    assert b.Y.toarray().tolist() == [[1, 1, 1]]
    assert b.record["n_duplicate_labels_removed"] == 1
    assert b.texts == ["High\nfever."]
    ev = load_codiesp_evidence("dev", tmp_path)
    assert ev == [{"id": "dev1", "type": "DIAGNOSTICO", "kind": "D", "code": "R50.9", "evidence": "Fiebre", "spans": [(0, 6)]}]
    # the same string as D and P must not merge
    (tmp_path / "dev" / "devP.tsv").write_text("dev1\t0117\n", encoding="utf-8")
    with pytest.raises(ValueError, match="both as a diagnosis"):
        load_codiesp("train", "DP", data_home=tmp_path / ".")
    (tmp_path / "dev" / "devD.tsv").write_text("nodoc\tA00\n", encoding="utf-8")
    with pytest.raises(ValueError, match="has no text file"):
        load_codiesp("train", data_home=tmp_path / "dev" / "..")
    with pytest.raises(FileNotFoundError, match="official layout"):
        load_codiesp("train", data_home=tmp_path / "nowhere")
