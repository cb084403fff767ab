"""``xplant ablate`` on a slice of the bundled CodiEsp data: 1 epoch, 1 seed."""

import json

import pytest

pytest.importorskip("torch")

from xplant.app import ablation_specs
from xplant.app._ablate import ABLATIONS, DEV_CHOICES, format_ablation, run_ablation


def test_ablation_specs_match_the_switches():
    specs = ablation_specs()
    assert [s["name"] for s in specs] == [a[0] for a in ABLATIONS]
    assert specs[1]["model"] == "plant=False"
    assert {k for s in specs for k in s["params"]} == {
        "planter__target", "planter__criterion__kind", "criterion__loss", "criterion__hard_negatives",
        "criterion__label_smoothing", "shortlist"}
    # PLANT's own parts: no row of the switch table uses xplant run's shortlist
    assert all(s["params"]["shortlist"] is None for s in specs)


def test_ablate_cli_smoke(tmp_path):
    import torch
    torch.set_num_threads(1)
    from xplant.app.cli import main
    out = tmp_path / "abl"
    assert main(["ablate", "--output", str(out), "--max-docs", "24", "--sizes", "8,16",
                 "--seeds", "1", "--epochs", "1", "--plant-epochs", "1", "--no-isolate",
                 "--threads", "1", "--quiet", "--min-epoch-docs", "16",
                 "--max-epoch-docs", "16", "--max-length", "64", "--dev-docs", "12"]) == 0
    res = json.loads((out / "ablation.json").read_text())
    assert [m["name"] for m in res["switches"]] == [a[0] for a in ABLATIONS + DEV_CHOICES]
    assert res["budget"]["min_epoch_docs"] == 16
    assert res["budget"]["max_epoch_docs"] == 16
    assert all(m["params"]["iterator_train__min_epoch_docs"]
               == m["params"]["iterator_train__max_epoch_docs"] == 16 for m in res["switches"])
    assert all(m["stage1_params"]["iterator_train__max_epoch_docs"] == 16
               for m in res["switches"] if m["params"]["plant"])
    assert "at most 16 training documents drawn per epoch" in (out / "ablation.md").read_text()
    by = {m["name"]: m for m in res["switches"]}
    # The dev-choice rows reach the classifier and its planter; every row has its dev MAP.
    assert by['criterion__smoothing_form="symmetric"']["params"]["criterion__smoothing_form"] == "symmetric"
    assert by["full"]["params"]["criterion__smoothing_form"] == "paper"
    assert by["Stage 1 nDCG@5"]["stage1_params"]["criterion__k"] == 5
    assert by["Stage 1 nDCG@15"]["stage1_params"]["criterion__k"] == 15
    assert by["full"]["stage1_params"]["criterion__k"] == 50
    assert by["stage1_weight=0 (paper)"]["params"]["stage1_weight"] == 0.0
    assert by["full"]["params"]["stage1_weight"] == 0.1 and by["plant=False"]["params"]["stage1_weight"] == 0.0
    assert all(0.0 <= m["dev_MAP"] <= 1.0 for m in res["switches"])
    assert f"| full | {100 * by['full']['dev_MAP']:.1f} |" in (out / "ablation.md").read_text()
    assert by["plant=False"]["params"]["plant"] is False
    assert by['planter__criterion__kind="mse"']["stage1_params"]["criterion__kind"] == "mse"
    assert by["criterion__label_smoothing=0"]["params"]["criterion__label_smoothing"] == 0.0
    assert "stage1_attention_ndcg" in by["full"] and "stage1_attention_ndcg" not in by["plant=False"]
    assert [(r["model"], r["size"]) for r in res["curve"]] == [
        ("PLANT", 8), ("PLANT", 16), ("plant=False", 8), ("plant=False", 16)]
    # Each curve point is the test P@5 of its own run folder (1 seed: std 0).
    for r in res["curve"]:
        run = json.loads((out / "curve" / f"seed0_n{r['size']}" / "results.json").read_text())
        m = {x["name"]: x for x in run["models"]}[r["model"]]
        assert r["P@5"]["values"] == [pytest.approx(m["metrics"]["P@5"])]
        assert r["P@5"]["std"] == 0.0 and 0.0 <= r["macro_F1"]["mean"] <= 1.0
    # The training subsets are nested (the first 8 rows drawn are among the 16).
    rows = [json.loads((out / "curve" / f"seed0_n{n}" / "results.json").read_text())["train_rows"]
            for n in (8, 16)]
    assert len(rows[0]) == 8 and len(rows[1]) == 16 and set(rows[0]) <= set(rows[1])
    assert (out / "low_data_curve.png").read_bytes()[:4] == b"\x89PNG"
    md = (out / "ablation.md").read_text()
    assert md == format_ablation(res) and "| criterion__hard_negatives=None |" in md and "± 0.0" in md


def test_ablate_rejects_too_large_sizes(tmp_path):
    with pytest.raises(ValueError, match="exceeds the 10 training documents"):
        run_ablation(tmp_path, max_docs=10, sizes=[5, 20], seeds=1, switches=False,
                     isolate=False, log=lambda *a: None)
    with pytest.raises(ValueError, match="seeds must be"):
        run_ablation(tmp_path, max_docs=10, sizes=[5], seeds=0, isolate=False)


EURLEX = __import__("pathlib").Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "eurlex57k"


@pytest.mark.slow
@pytest.mark.skipif(not (EURLEX / "train.jsonl.gz").is_file(), reason="EURLEX57K not beside the checkout")
def test_ablate_eurlex_curve_uses_one_seed_above_the_cutoff(tmp_path, eurlex_slice):
    import torch
    torch.set_num_threads(1)
    from xplant.app.cli import main
    out = tmp_path / "eur"
    assert main(["ablate", "--dataset", "eurlex57k", "--data-home", str(eurlex_slice), "--output", str(out),
                 "--max-docs", "20", "--sizes", "8,16", "--seeds", "2", "--single-seed-above", "8",
                 "--no-switches", "--epochs", "1", "--plant-epochs", "1", "--no-isolate",
                 "--threads", "1", "--quiet", "--dev-docs", "12", "--max-length", "64"]) == 0
    res = json.loads((out / "ablation.json").read_text())
    assert res["dataset"] == "eurlex57k" and res["single_seed_above"] == 8
    assert res["budget"]["dev_docs"] == 12 and res["budget"]["max_length"] == 64
    assert "chosen on 12 random dev documents, first 64 tokens" in (out / "ablation.md").read_text()
    seeds = {(r["model"], r["size"]): len(r["P@5"]["values"]) for r in res["curve"]}
    assert seeds == {("PLANT", 8): 2, ("PLANT", 16): 1, ("plant=False", 8): 2, ("plant=False", 16): 1}
    assert sorted(p.name for p in (out / "curve").iterdir()) == ["seed0_n16", "seed0_n8", "seed1_n8"]
    assert "| PLANT | 16 | 1 |" in (out / "ablation.md").read_text()


def test_load_splits_dev_docs_is_a_fixed_random_dev_subset():
    from xplant.app import load_splits
    full = load_splits(max_docs=60)
    a, b = load_splits(max_docs=60, dev_docs=25), load_splits(max_docs=60, dev_docs=25)
    assert list(a["dev"].ids) == list(b["dev"].ids) and len(a["dev"].ids) == 25
    pos = [list(full["dev"].ids).index(i) for i in a["dev"].ids]
    assert pos == sorted(pos) and pos != list(range(25))           # random rows, in dev order
    assert (a["dev"].Y != full["dev"].Y[pos]).nnz == 0
    assert a["dev"].texts == [full["dev"].texts[i] for i in pos]
    assert list(a["test"].ids) == list(full["test"].ids)
    assert list(a["train"].ids) == list(full["train"].ids)
    with pytest.raises(ValueError, match="dev_docs must be between 1 and the 60"):
        load_splits(max_docs=60, dev_docs=61)
