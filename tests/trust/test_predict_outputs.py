"""xplant predict: no input overwritten, no output half-written, no forged TSV row."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xplant.app._predict import codiesp_codes, predict_file, read_documents

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def notes_file(make_texts):
    def write(path, n=60):
        texts, _ = make_texts(n_docs=n, seed=1)
        path.write_text("".join(json.dumps({"id": f"S{i:04d}", "text": t}) + "\n"
                                for i, t in enumerate(texts)), encoding="utf-8")
        return path
    return write


def test_output_equal_to_input_is_refused_links_included(tiny_model, tmp_path, notes_file,
                                                         capsys):
    model, _ = tiny_model
    notes = notes_file(tmp_path / "notes.jsonl")
    before = notes.read_bytes()
    for out in (notes, tmp_path / "link.jsonl"):
        if out.name == "link.jsonl":
            out.symlink_to(notes)
        with pytest.raises(ValueError, match="is the input"):
            predict_file(model, notes, out, overwrite=True)
    from xplant.app.cli import main
    assert main(["predict", "--model", str(model), "--input", str(notes), "--output", str(notes),
                 "--overwrite"]) == 2
    assert "is the input" in capsys.readouterr().err
    assert notes.read_bytes() == before


def test_existing_output_needs_overwrite(tiny_model, tmp_path, notes_file):
    model, _ = tiny_model
    notes = notes_file(tmp_path / "notes.jsonl", n=5)
    out = tmp_path / "new" / "deeper" / "pred.jsonl"       # missing folders are created
    assert predict_file(model, notes, out) == 5
    first = out.read_text()
    assert [json.loads(l)["id"] for l in first.splitlines()] == [f"S{i:04d}" for i in range(5)]
    out.write_text("keep me")
    with pytest.raises(FileExistsError, match="--overwrite"):
        predict_file(model, notes, out)
    assert out.read_text() == "keep me"
    from xplant.app.cli import main
    assert main(["predict", "--model", str(model), "--input", str(notes), "--output", str(out),
                 "--overwrite"]) == 0
    assert out.read_text() == first
    assert sorted(p.name for p in out.parent.iterdir()) == ["pred.jsonl"]   # no temporary left


_FSIZE_SCRIPT = r"""
import resource, sys
from xplant.app._predict import predict_file
from xplant.neural import load_model
clf = load_model(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))   # a full disk, in small
try:
    predict_file(clf, sys.argv[2], sys.argv[3], overwrite=True)
except OSError as exc:
    print("write failed:", exc.errno)
    sys.exit(3)
sys.exit(0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics of Linux")
def test_failed_write_keeps_the_earlier_output(tiny_model, tmp_path, notes_file):
    """A 4 KiB file-size limit stands in for a full disk: the old 60-record output survives."""
    model, _ = tiny_model
    notes = notes_file(tmp_path / "notes.jsonl", n=60)
    pred = tmp_path / "pred.jsonl"
    assert predict_file(model, notes, pred) == 60
    before = pred.read_bytes()
    assert len(before) > 4096 and len(before.splitlines()) == 60
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    proc = subprocess.run([sys.executable, "-c", _FSIZE_SCRIPT, str(model), str(notes), str(pred)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr[-3000:]
    assert "write failed: 27" in proc.stdout                   # EFBIG
    assert pred.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


# -- document ids -------------------------------------------------------------------------------

def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("records, line, match", [
    ([{"id": "S0001\tz99.9\r\nS0002", "text": "a"}], 1, "control characters"),
    ([{"id": "S1", "text": "a"}, {"id": "S2", "text": "b"}, {"id": "S1", "text": "c"}], 3,
     "repeats the id of .*notes.jsonl, line 1;"),
    ([{"id": "1", "text": "a"}, {"text": "b"}], 2,
     "repeats the id of .*notes.jsonl, line 1;"),                      # positional "1"
    ([{"id": None, "text": "a"}], 1, "null"),
    ([{"id": ["a"], "text": "a"}], 1, "string or an integer"),
])
def test_bad_ids_name_file_and_line(tmp_path, records, line, match):
    path = _jsonl(tmp_path / "notes.jsonl", records)
    with pytest.raises(ValueError, match=match) as err:
        read_documents(path)
    assert f"notes.jsonl, line {line}:" in str(err.value)


def test_tsv_and_folder_ids_checked(tmp_path):
    tsv = tmp_path / "notes.tsv"
    tsv.write_text('id\ttext\nA\tfirst\n\nA\tb\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"notes.tsv, line 4: document id 'A' repeats the id of "
                                         r".*notes.tsv, line 2"):
        read_documents(tsv)
    (tmp_path / "bad json.jsonl").write_text('{"text": "a"}\n{"text": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad json.jsonl, line 2: invalid JSON"):
        read_documents(tmp_path / "bad json.jsonl")
    ok = tmp_path / "ok.tsv"
    ok.write_text('id\ttext\nS1\t"quoted" text\n\ttwo\n', encoding="utf-8")
    assert read_documents(ok) == (["S1", "1"], ['"quoted" text', "two"])


def test_codiesp_output_one_row_per_code(tiny_model, tmp_path):
    model, clf = tiny_model
    notes = _jsonl(tmp_path / "notes.jsonl", [{"id": "S0001", "text": "sig0 w1"},
                                               {"id": "S0002", "text": "sig2"}])
    out = tmp_path / "run.tsv"
    predict_file(model, notes, out, fmt="codiesp", top_k=3)
    rows = [l.split("\t") for l in out.read_text().splitlines()]
    assert len(rows) == 6 and all(len(r) == 2 for r in rows)
    assert [r[0] for r in rows] == ["S0001"] * 3 + ["S0002"] * 3
    assert {r[1] for r in rows} <= {"c0", "c1", "c2", "c3"}


def test_codiesp_needs_label_names_without_collisions(tmp_path):
    import numpy as np
    with pytest.raises(ValueError, match="no label names"):
        codiesp_codes(np.arange(4))
    with pytest.raises(ValueError, match=r"'X1' \(column 0\) and 'x1' \(column 1\)"):
        codiesp_codes(["X1", "x1", "Y2", "y2"])
    with pytest.raises(ValueError, match="control characters"):
        codiesp_codes(["A\tb"])
    assert codiesp_codes(["R50.9", "N18.6"]) == ["r50.9", "n18.6"]


def test_model_without_label_names_writes_no_codiesp_file(tiny_model, tmp_path):
    import copy
    _, clf = tiny_model
    clf = copy.copy(clf)
    import numpy as np
    clf.classes_ = np.arange(clf.n_labels_)
    notes = _jsonl(tmp_path / "notes.jsonl", [{"id": "S1", "text": "sig0"}])
    with pytest.raises(ValueError, match="no label names"):
        predict_file(clf, notes, tmp_path / "out.tsv", fmt="codiesp")
    assert not (tmp_path / "out.tsv").exists()


def test_codiesp_file_refused_for_names_equal_once_lower_cased(tiny_model, tmp_path):
    """Labels X1, x1, Y2, y2 would write the rows x1, y2, x1, y2: refused, nothing written."""
    import copy
    import numpy as np
    _, clf = tiny_model
    clf = copy.copy(clf)
    clf.classes_ = np.array(["X1", "x1", "Y2", "y2"])
    notes = _jsonl(tmp_path / "notes.jsonl", [{"id": "S1", "text": "sig0 sig1"}])
    with pytest.raises(ValueError, match=r"'X1' \(column 0\) and 'x1' \(column 1\)"):
        predict_file(clf, notes, tmp_path / "out.tsv", fmt="codiesp")
    assert not (tmp_path / "out.tsv").exists()
    assert predict_file(clf, notes, tmp_path / "out.jsonl") == 1     # jsonl keeps exact names
    top = json.loads((tmp_path / "out.jsonl").read_text())["top"]
    assert sorted(t["label"] for t in top) == ["X1", "Y2", "x1", "y2"]

