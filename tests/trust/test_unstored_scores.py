"""A score a model does not store is never ranked and never predicted, wherever it is read.

A DescriptionFusion over a catalogue scores each note's candidates only (a CSR matrix). The
saved model's scores, ``xplant evaluate``, ``xplant predict``, every decision rule, the
estimator's own ``predict`` and the scorers keep them sparse: a missing entry is -inf, never
0.0 (which would rank it above every negative SVM margin).
"""

import copy
import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from xplant.metrics import mean_average_precision, threshold_decision, xmtc_report

#: the toy corpus of the open-space cases: each label adds its two cue words to a note
WORDS = {"A10": ("fever", "cough"), "B20": ("fracture", "femur"), "C30": ("rash", "itch"),
         "D40": ("chest", "pain")}
NAMES = list(WORDS)
#: hard notes: no cue word of the gold label, so every SVM margin is negative
HARD = [("patient seen", "A10"), ("the day", "B20"), ("note seen", "C30"), ("the patient", "D40")]


def docs(n, seed):
    rng = np.random.default_rng(seed)
    texts, Y = [], np.zeros((n, 4), dtype=np.int64)
    for i in range(n):
        labels = [str(x) for x in rng.choice(NAMES, size=rng.integers(1, 3), replace=False)]
        words = [w for lab in labels for w in WORDS[lab]]
        words += [str(x) for x in rng.choice(["patient", "day", "the", "note", "seen"], 5)]
        texts.append(" ".join(rng.permutation(words)))
        Y[i, [NAMES.index(l) for l in labels]] = 1
    return texts, sp.csr_matrix(Y)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def fusion(tmp_path_factory):
    """DescriptionFusion(make_tfidf_ovr(), n_candidates=3) over a 44-code catalogue."""
    from xplant.datasets import load_catalogue
    from xplant.linear import make_tfidf_ovr
    from xplant.unseen import DescriptionFusion
    d = tmp_path_factory.mktemp("open-space")
    rows = [{"label": n, "description": " ".join(WORDS[n])} for n in NAMES] + \
        [{"label": f"Z{i:03d}", "description": f"zcode{i} condition{i}"} for i in range(40)]
    cat = load_catalogue(write_jsonl(d / "cat.jsonl", rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # dev has no unseen code: the fallback weights
        f = DescriptionFusion(make_tfidf_ovr(min_df=1, random_state=0), n_candidates=3).fit(
            *docs(40, 0), label_names=NAMES, label_descriptions=[" ".join(WORDS[n]) for n in NAMES],
            catalogue=cat, validation_data=docs(12, 1))
    test = write_jsonl(d / "test.jsonl", [{"id": f"t{i}", "text": t, "labels": [l]}
                                          for i, (t, l) in enumerate(HARD)])
    return f, test


def _scores(f):
    S = f.decision_function([t for t, _ in HARD])
    Y = f.open_targets(sp.csr_matrix(np.eye(4, dtype=np.int64)))
    return S, Y


def test_the_fusion_stores_seven_negative_scores_of_44(fusion):
    f, _ = fusion
    S, _ = _scores(f)
    assert sp.issparse(S) and S.shape == (4, 44)
    assert S.getnnz(axis=1).tolist() == [7, 7, 7, 7]          # 4 seen + 3 candidates
    assert (S.data < 0).all()                                  # every stored margin negative


def test_xplant_evaluate_on_a_saved_sparse_model_equals_xmtc_report_on_its_csr_scores(
        fusion, tmp_path, monkeypatch):
    from xplant import _saved
    from xplant.app.cli import main
    from xplant.unseen import save_description_fusion
    f, test = fusion
    S, Y = _scores(f)
    oracle = xmtc_report(Y, S, y_pred=f.predict([t for t, _ in HARD], k=2),
                         label_frequency=f.label_frequency_,
                         n_train_documents=f.n_train_documents_)
    # by hand: the gold label ranks 3rd, 1st, 2nd, 2nd among the stored scores
    assert oracle["MAP"] == pytest.approx((1 / 3 + 1 + 1 / 2 + 1 / 2) / 4)      # 0.583
    ruled = copy.copy(f)                       # the module's fusion keeps its default rule
    ruled.decision_rule_ = {"rule": "top_k", "k": 2, "threshold": 0.0}
    folder = save_description_fusion(ruled, tmp_path / "fusion")
    seen = []                                  # the scores evaluate reads: never densified
    real = _saved._scores_as_given
    monkeypatch.setattr(_saved, "_scores_as_given", lambda s: seen.append(real(s)) or seen[-1])
    assert main(["evaluate", "--model", str(folder), "--input", str(test), "--output",
                 str(tmp_path / "eval.json"), "--quiet"]) == 0
    assert seen and all(sp.issparse(s) and s.nnz == 28 for s in seen)
    got = json.loads((tmp_path / "eval.json").read_text())["metrics"]
    assert got["MAP"] == pytest.approx(7 / 12)                 # not 0.026
    for key, value in oracle.items():          # the per-group (zero-shot, tail) figures too
        assert got[key] == pytest.approx(value, nan_ok=True), key


def test_a_threshold_rule_never_predicts_a_code_the_model_did_not_rank(fusion, tmp_path):
    from xplant import load_saved
    from xplant._saved import decide
    from xplant.app.cli import main
    from xplant.unseen import save_description_fusion
    f, test = fusion
    S, _ = _scores(f)
    rule = {"rule": "threshold", "k": 2, "threshold": -0.9}
    ruled = copy.copy(f)                       # the module's fusion keeps its default rule
    ruled.decision_rule_ = rule
    folder = save_description_fusion(ruled, tmp_path / "fusion")
    g, decision = load_saved(folder)
    P = decide(g, [t for t, _ in HARD], decision)
    # every stored score is above -0.9: the 7 stored labels of each note, never one of the 37
    np.testing.assert_array_equal(P.toarray(), (S.toarray() != 0).astype(int))
    assert main(["predict", "--model", str(folder), "--input", str(test), "--output",
                 str(tmp_path / "pred.jsonl")]) == 0
    rec = json.loads((tmp_path / "pred.jsonl").read_text().splitlines()[0])
    stored = {str(f.classes_[j]) for j in S.tocsr()[0].indices}
    assert set(rec["predicted"]) == stored and len(rec["predicted"]) == 7
    assert all(p["score"] >= -0.9 for p in rec["passed"])


def test_the_fusions_own_predict_never_picks_an_unstored_code(fusion):
    f, _ = fusion
    texts = [t for t, _ in HARD]
    stored = (f.decision_function(texts).toarray() != 0)
    for P in (f.predict(texts, threshold=-0.9), f.predict(texts, k=10)):
        P = sp.csr_matrix(P).toarray().astype(bool)
        assert not (P & ~stored).any()
        assert P.sum(axis=1).tolist() == [7, 7, 7, 7]     # k=10 stops at the 7 ranked


def test_scorers_read_the_sparse_scores_as_never_ranked(fusion):
    from xplant.metrics import get_scorer, make_xmtc_scorer, roc_auc
    f, _ = fusion
    S, Y = _scores(f)
    texts = [t for t, _ in HARD]
    assert make_xmtc_scorer("map")(f, texts, Y) == pytest.approx(7 / 12)
    assert get_scorer("precision_at_1")(f, texts, Y) == pytest.approx(1 / 4)
    auc = make_xmtc_scorer("micro_auc")(f, texts, Y)
    assert auc == pytest.approx(roc_auc(Y, S, average="micro").value)
    dense_zero = S.toarray()                    # what reading them as 0.0 would give
    assert auc != pytest.approx(roc_auc(Y, dense_zero, average="micro").value)


def test_per_label_and_group_metrics_of_a_run_row_keep_unstored_scores_unranked(fusion):
    """A run row over the open space (evaluate_row): its metrics are xmtc_report's on CSR."""
    from sklearn.utils import Bunch
    from xplant.app import evaluate_row
    f, _ = fusion
    S, Y = _scores(f)
    split = Bunch(Y=sp.csr_matrix(np.eye(4, dtype=np.int64)), label_names=np.array(NAMES),
                  texts=[t for t, _ in HARD])
    train = Bunch(Y=sp.csr_matrix(np.tile(np.eye(4, dtype=np.int64), (10, 1))),
                  label_names=np.array(NAMES))
    rule = {"rule": "threshold", "k": 2, "threshold": -0.9, "thresholds": None}
    out = {"dev_scores": S, "test_scores": S, "rule": rule, "label_names": f.classes_,
           "params": {}, "info": {}, "fit_seconds": 0.0, "predict_seconds": 0.0,
           "peak_rss_mb": 0.0}
    entry, per = evaluate_row("fusion", out, {"train": train, "dev": split, "test": split})
    assert entry["metrics"]["MAP"] == pytest.approx(7 / 12)
    assert entry["metrics"]["mean_labels_per_doc"] == 7.0          # not 44
    # per label: each seen label is predicted for every note (its margin > -0.9): P = 1/4
    np.testing.assert_allclose(per.precision, [0.25] * 4)


def test_minus_inf_is_never_predicted_even_by_a_minus_inf_threshold():
    S = np.array([[-np.inf, -1.0, 0.5]])
    assert threshold_decision(S, -np.inf).toarray().tolist() == [[0, 1, 1]]
    C = sp.csr_matrix(([-np.inf, -2.0], [0, 1], [0, 2]), shape=(1, 3))
    assert threshold_decision(C, -np.inf).toarray().tolist() == [[0, 1, 0]]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.floats(-3, 1))
def test_a_missing_entry_is_minus_inf_for_every_metric_and_rule(seed, t):
    rng = np.random.default_rng(seed)
    n, L = 5, 8
    stored = rng.random((n, L)) < 0.4
    values = -rng.random((n, L)) * 2                           # negative scores, as margins
    S = sp.csr_matrix((values[stored], np.nonzero(stored)[1], np.r_[0, np.cumsum(stored.sum(1))]),
                      shape=(n, L))
    dense = np.where(stored, values, -np.inf)
    Y = rng.random((n, L)) < 0.3
    Y[0, 0] = True
    Y = sp.csr_matrix(Y.astype(np.int64))
    assert mean_average_precision(Y, S) == pytest.approx(mean_average_precision(Y, dense))
    np.testing.assert_array_equal(threshold_decision(S, t).toarray(),
                                  threshold_decision(dense, t).toarray())
    assert not (threshold_decision(S, t).toarray().astype(bool) & ~stored).any()
