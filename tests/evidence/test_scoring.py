import pytest

from xplant.datasets import load_codiesp_evidence
from xplant.evidence import score_evidence

TEXT1 = "Mujer de 45 años con fiebre alta y dolor torácico. Se realiza radiografía de tórax."
TEXT2 = "Tos seca y fiebre. Sin fiebre después."


def _at(text, word, nth=0):
    start = -1
    for _ in range(nth + 1):
        start = text.index(word, start + 1)
    return start, start + len(word)


@pytest.fixture()
def x_home(tmp_path):
    """A tiny official-layout CodiEsp folder whose dev split has a hand-made X file."""
    f = _at(TEXT1, "fiebre")
    d = _at(TEXT1, "dolor")
    t = _at(TEXT1, "tórax")
    r = _at(TEXT1, "radiografía de tórax")
    x_rows = [
        ("d1", "DIAGNOSTICO", "r50.9", "fiebre", f"{f[0]} {f[1]}"),
        ("d1", "DIAGNOSTICO", "R07.9", "dolor tórax", f"{d[0]} {d[1]};{t[0]} {t[1]}"),  # discontinuous
        ("d1", "PROCEDIMIENTO", "BW03ZZZ", "radiografía de tórax", f"{r[0]} {r[1]}"),
        ("d2", "DIAGNOSTICO", "R05", "Tos seca", "0 8"),
        ("d2", "DIAGNOSTICO", "R50.9", "fiebre", "11 17"),
        ("d2", "DIAGNOSTICO", "R50.9", "fiebre", "23 29"),  # second reference of the same code
    ]
    for split in ("train", "dev", "test"):
        folder = tmp_path / split
        (folder / "text_files").mkdir(parents=True)
        (folder / "text_files_en").mkdir()
        docs = {"d1": TEXT1, "d2": TEXT2} if split == "dev" else {f"{split}1": "Fiebre."}
        for doc_id, text in docs.items():
            (folder / "text_files" / f"{doc_id}.txt").write_text(text, encoding="utf-8")
            (folder / "text_files_en" / f"{doc_id}.txt").write_text("x", encoding="utf-8")
        (folder / f"{split}D.tsv").write_text("".join(f"{i}\tR50.9\n" for i in docs), encoding="utf-8")
        (folder / f"{split}P.tsv").write_text("", encoding="utf-8")
        if split == "dev":
            (folder / f"{split}X.tsv").write_text("".join("\t".join(row) + "\n" for row in x_rows), encoding="utf-8")
    return tmp_path


@pytest.fixture()
def predicted():
    con_fiebre_alta = (TEXT1.index("con"), _at(TEXT1, "alta")[1])  # holds "fiebre", slack 4 and 5
    return [
        {"id": "d1", "code": "R50.9", "spans": [con_fiebre_alta, _at(TEXT1, "dolor torácico")]},
        {"id": "d1", "code": "R07.9", "spans": [{"start": s, "end": e} for s, e in (_at(TEXT1, "dolor"), _at(TEXT1, "tórax"))]},
        {"id": "d1", "code": "BW03ZZZ", "spans": [_at(TEXT1, "radiografía")]},  # 9 chars short of the gold end
        {"id": "d1", "code": "I10", "spans": [(0, 5)]},  # wrong code: not scored
        {"id": "d2", "code": "r50.9", "spans": [_at(TEXT2, "fiebre después")]},  # 2nd reference, end slack 8
    ]


def test_hand_made_x_file_hull(x_home, predicted):
    gold = load_codiesp_evidence("dev", data_home=x_home)
    assert len(gold) == 6 and gold[1]["spans"] == [_at(TEXT1, "dolor"), _at(TEXT1, "tórax")]
    s = score_evidence(predicted, gold)
    assert (s["n_pairs"], s["n_predicted_pairs"], s["n_gold_pairs"]) == (4, 5, 5)
    assert (s["n_predicted_spans"], s["n_gold_references"]) == (6, 5)
    # correct spans: "con fiebre alta" (d1 R50.9), "fiebre después" (d2 R50.9); the hull of R07.9 is too long
    assert s["precision"] == pytest.approx(2 / 6)
    assert s["recall"] == pytest.approx(2 / 5)
    assert s["f1"] == pytest.approx(4 / 11)
    assert s["hit_rate"] == pytest.approx(2 / 4)
    for key in ("codiesp_x_precision", "codiesp_x_recall", "codiesp_x_f1"):
        assert s[key] == pytest.approx(2 / 5)
    # characters: overlaps 6 + 10 + 11 + 6; predicted 29 + 10 + 11 + 14; gold 6 + 10 + 20 + 12
    assert s["token_precision"] == pytest.approx(33 / 64)
    assert s["token_recall"] == pytest.approx(33 / 48)
    p, r = 33 / 64, 33 / 48
    assert s["token_f1"] == pytest.approx(2 * p * r / (p + r))


def test_hand_made_x_file_pieces_and_words(x_home, predicted):
    gold = load_codiesp_evidence("dev", data_home=x_home)
    s = score_evidence(predicted, gold, discontinuous="pieces")
    assert s["precision"] == pytest.approx(4 / 6)
    assert s["recall"] == pytest.approx(3 / 5)
    assert s["hit_rate"] == pytest.approx(3 / 4)
    assert s["codiesp_x_f1"] == pytest.approx(3 / 5)
    w = score_evidence(predicted, gold, unit="word", texts={"d1": TEXT1, "d2": TEXT2})
    # words: overlap 1 + 2 + 1 + 1, predicted 5 + 2 + 1 + 2, gold 1 + 2 + 3 + 2
    assert (w["token_precision"], w["token_recall"]) == (pytest.approx(5 / 10), pytest.approx(5 / 8))
    assert w["precision"] == pytest.approx(2 / 6)  # span scores do not depend on the unit (hull here)


def test_slack_bounds_are_inclusive():
    gold = [{"id": "a", "code": "X1", "spans": [(20, 30)]}]
    for span, ok in [((10, 40), True), ((9, 30), False), ((20, 41), False), ((21, 30), False), ((20, 29), False)]:
        s = score_evidence([{"id": "a", "code": "X1", "spans": [span]}], gold)
        assert s["hit_rate"] == float(ok), span
    assert score_evidence([{"id": "a", "code": "X1", "spans": [(15, 35)]}], gold, slack=4)["hit_rate"] == 0.0
    assert score_evidence([{"id": "a", "code": "X1", "spans": [(15, 35)]}], gold, slack=5)["hit_rate"] == 1.0


def test_duplicate_prediction_records_are_pooled_and_nothing_scored_gives_zero():
    gold = [{"id": "a", "code": "X1", "spans": [(0, 5)]}]
    pred = [{"id": "a", "code": "X1", "spans": [(0, 5)]}, {"id": "a", "code": "x1", "spans": [(50, 60)]}]
    s = score_evidence(pred, gold)
    assert (s["n_predicted_pairs"], s["n_predicted_spans"], s["precision"], s["recall"]) == (1, 2, 0.5, 1.0)
    none = score_evidence([{"id": "b", "code": "X1", "spans": [(0, 5)]}], gold)
    assert none["n_pairs"] == 0 and none["f1"] == none["token_f1"] == none["hit_rate"] == 0.0


def test_gold_spans_as_predictions_score_one_on_the_bundled_split():
    gold = load_codiesp_evidence("dev")
    pred = [
        {"id": g["id"], "code": g["code"], "spans": [(min(s for s, _ in g["spans"]), max(e for _, e in g["spans"]))]}
        for g in gold
    ]
    s = score_evidence(pred, gold, slack=0)
    assert s["precision"] == s["recall"] == s["hit_rate"] == s["codiesp_x_f1"] == 1.0
    assert s["token_recall"] == 1.0 and s["n_pairs"] == s["n_gold_pairs"]


@pytest.mark.parametrize(
    "pred, kwargs, match",
    [
        ([{"id": "a", "spans": []}], {}, "'id', 'code' and 'spans'"),
        ([{"id": "a", "code": "X", "spans": [(5, 2)]}], {}, "start <= end"),
        ([{"id": "a", "code": "X", "spans": [(1, 2, 3)]}], {}, "must be"),
        ([{"id": "a", "code": "X", "spans": [{"begin": 1}]}], {}, "'start' and 'end'"),
        ([], {"slack": -1}, "slack"),
        ([], {"discontinuous": "first"}, "discontinuous"),
        ([], {"unit": "word"}, "texts"),
    ],
)
def test_score_evidence_errors(pred, kwargs, match):
    with pytest.raises(ValueError, match=match):
        score_evidence(pred, [{"id": "a", "code": "X", "spans": [(0, 1)]}], **kwargs)
