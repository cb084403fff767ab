"""Build the compact CodiEsp copy that ships inside xplant.

Usage::

    python datasets/build_codiesp.py PATH/TO/codiesp [--out xplant/datasets/data]

``PATH/TO/codiesp`` is an official CodiEsp distribution folder (train/, dev/,
test/, each with {split}D.tsv, {split}P.tsv, {split}X.tsv, text_files/ and
text_files_en/) plus its SOURCE.txt. The script writes

* ``codiesp.jsonl.gz``: one JSON line per document, splits in the order
  train, dev, test and documents sorted by id, with the file contents
  unchanged: ``split``, ``id``, ``text_es``, ``text_en``, ``D``, ``P`` (codes as
  in the TSV files) and ``X`` (the rows of {split}X.tsv without the article
  id). The gzip header carries no time stamp, so the output is reproducible.
* ``CODIESP_SOURCE.txt``: the distribution's SOURCE.txt (CC BY 4.0
  attribution), copied unchanged.

It then checks that ``load_codiesp`` gives identical results from the two
sources.
"""

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from xplant.datasets import _codiesp  # noqa: E402


def build(source, out):
    records = _codiesp.read_official(source)
    out.mkdir(parents=True, exist_ok=True)
    target = out / _codiesp.BUNDLED_FILE
    with open(target, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            for rec in records:
                line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"
                gz.write(line.encode("utf-8"))
    src_txt = Path(source) / "SOURCE.txt"
    if src_txt.is_file():
        shutil.copyfile(src_txt, out / "CODIESP_SOURCE.txt")
    else:
        print(f"warning: {src_txt} not found; keep the CC BY 4.0 attribution by hand")
    return target, len(records)


def check(source):
    import numpy as np

    from xplant.datasets import load_codiesp

    _codiesp._records.cache_clear()  # read both sources afresh
    for split in _codiesp.SPLITS:
        for codes in ("D", "P", "DP"):
            for language in ("en", "es"):
                a = load_codiesp(split, codes, language)
                b = load_codiesp(split, codes, language, data_home=source)
                assert a.texts == b.texts
                assert (a.Y != b.Y).nnz == 0
                assert np.array_equal(a.label_names, b.label_names)
                assert np.array_equal(a.ids, b.ids)
        assert _codiesp.load_codiesp_evidence(split) == _codiesp.load_codiesp_evidence(split, source)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="official CodiEsp distribution folder")
    parser.add_argument("--out", type=Path, default=REPO / "xplant" / "datasets" / "data")
    args = parser.parse_args(argv)
    target, n = build(args.source, args.out)
    print(f"wrote {n} documents to {target} ({target.stat().st_size / 1e6:.2f} MB)")
    check(args.source)
    print("bundled copy and official folder give identical results")


if __name__ == "__main__":
    main()
