"""The cost of scoring an open label space against its catalogue's size, side by side in one run.

Fits :class:`xplant.unseen.DescriptionFusion` over the TF-IDF + SVM model
(C = 10) on CodiEsp-D train, with catalogues of about 1k, 10k and the whole
ICD-10-CM (the first codes of the catalogue in its own order, after the
labels of train and dev), weights fixed, the job's sentence encoder in the
description score (``--encoder none``: TF-IDF alone), and scores the 250
test documents once per size. Prints, per size: the labels in the open
space, the time to index the catalogue (fit, without the model; the
catalogue names' embeddings come from the cache once computed, so run the
script twice to read the indexing time without the encoding), the scoring
time per document and the peak memory of the process above its start
(resident set, sampled during the scoring). The sizes run one after another
in the same process, so the figures compare on one machine only. The test
documents' sentence embeddings do not depend on the catalogue: they are
computed once before the sizes (their time per document is printed first)
and every size reads them, so each row's time is the catalogue's own cost.

    python benchmarks/bench_catalogue.py
    python benchmarks/bench_catalogue.py --sizes 1000,10000 --docs 50 --encoder none
"""

import argparse
import threading
import time

import numpy as np


def _rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class _Peak:
    """The highest resident set size while the block runs, sampled every 20 ms."""

    def __enter__(self):
        self.peak, self._stop = _rss_mb(), threading.Event()

        def sample():
            while not self._stop.wait(0.02):
                self.peak = max(self.peak, _rss_mb())
        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,0",
                    help="catalogue sizes, comma-separated; 0 = the whole catalogue")
    ap.add_argument("--docs", type=int, default=250, help="test documents scored")
    ap.add_argument("--encoder", default="minilm", help="the description score's sentence "
                                                         "encoder (minilm, hf:<folder>, none)")
    args = ap.parse_args(argv)
    from sklearn.frozen import FrozenEstimator
    from sklearn.utils import Bunch
    from xplant.datasets import load_catalogue, load_codiesp
    from xplant.linear import make_tfidf_ovr
    from xplant.unseen import DescriptionFusion, DescriptionRanker
    tr, te = (load_codiesp(s) for s in ("train", "test"))
    full = load_catalogue("icd10cm", drop_extension=True)
    svm = FrozenEstimator(make_tfidf_ovr(loss="squared_hinge", C=10, random_state=0).fit(
        tr.texts, tr.Y))
    fields = {k: tr[k] for k in ("label_descriptions", "label_synonyms", "label_parents",
                                 "parent_descriptions")}
    docs = te.texts[:args.docs]
    if args.encoder != "none":
        from xplant.unseen import sentence_embeddings
        t0 = time.perf_counter()
        sentence_embeddings(list(docs), args.encoder)
        print(f"the documents' sentence embeddings: "
              f"{1000 * (time.perf_counter() - t0) / len(docs):.1f} ms / doc, once for every size")
    print(f"{'catalogue':>10} {'open labels':>11} {'index s':>8} {'ms / doc':>9} "
          f"{'peak MB':>8} {'stored / doc':>12}")
    for size in (int(s) for s in args.sizes.split(",")):
        n = full.label_names.size if size == 0 else min(size, full.label_names.size)
        cat = Bunch(label_names=full.label_names[:n],
                    label_descriptions=full.label_descriptions[:n],
                    label_synonyms=full.label_synonyms[:n], label_parents=full.label_parents[:n])
        t0 = time.perf_counter()
        ranker = DescriptionRanker(encoder=None if args.encoder == "none" else args.encoder)
        f = DescriptionFusion(svm, ranker=ranker, weight=1.0, seen_weight=0.5, near_weight=0.25,
                              family_weight=0.1, prior_weight=0.02).fit(
            tr.texts, tr.Y, label_names=list(tr.label_names), catalogue=cat, **fields)
        index_s = time.perf_counter() - t0
        base = _rss_mb()
        with _Peak() as peak:
            t0 = time.perf_counter()
            S = f.decision_function(docs)
            score_s = time.perf_counter() - t0
        print(f"{n:>10,} {f.n_labels_:>11,} {index_s:>8.1f} {1000 * score_s / len(docs):>9.1f} "
              f"{peak.peak - base:>8.0f} {S.nnz / len(docs):>12.0f}")


if __name__ == "__main__":
    main()
