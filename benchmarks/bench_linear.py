"""Linear baselines on EURLEX57K: xplant's one-vs-rest SVM against LibMultiLabel.

Train on train, choose C on dev (P@5), report test once: P@1, P@5, nDCG@5,
fit seconds, prediction documents/s and the peak resident memory sampled
during fit. Every model sees the same TF-IDF features
(``xplant.linear.TFIDF_DEFAULTS`` fitted on the training texts) and the same
label space (the union of the labels of all three splits, sorted).

    python benchmarks/bench_linear.py                      # full run
    python benchmarks/bench_linear.py --max-train 5000     # subsample train
    python benchmarks/bench_linear.py --smoke              # seconds, for tests

The data folder holds ``{train,dev,test}.jsonl.gz`` with the original
EURLEX57K records; by default it is ``shared/data/eurlex57k`` beside the
repository checkout.
"""

import argparse
import json
import os
import platform
import resource
import threading
import time
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer

from xplant.datasets import load_eurlex57k
from xplant.linear import TFIDF_DEFAULTS, FrequencyPrior, LibMultiLabelLinear, OneVsRestLinear
from xplant.metrics import xmtc_report

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "eurlex57k"


def ranking_metrics(top, Y):
    """P@1, P@5 and nDCG@5 from top-5 indices, by xplant's one metric implementation."""
    rep = xmtc_report(Y, y_top_k=top, ks=(1, 5))
    return {k: rep[k] for k in ("P@1", "P@5", "nDCG@5")}


class PeakRSS:
    """Highest resident set size (MiB) of this process while the block runs."""

    def __enter__(self):
        self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _rss(self):
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except OSError:  # not Linux: the process peak so far
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def _watch(self):
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, self._rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())


def run_model(name, make, X, Y, params):
    model = make()
    with PeakRSS() as mem:
        start = time.perf_counter()
        model.fit(X["train"], Y["train"])
        fit_seconds = time.perf_counter() - start
    out = {"name": name, "params": params, "fit_seconds": round(fit_seconds, 1),
           "peak_rss_mb": round(mem.peak)}
    for split in ("dev", "test"):
        start = time.perf_counter()
        top, _ = model.predict_top_k(X[split], 5)
        seconds = time.perf_counter() - start
        out[split] = {k: round(100 * v, 2) for k, v in ranking_metrics(top, Y[split]).items()}
        out[f"{split}_docs_per_second"] = round(X[split].shape[0] / seconds)
    print(json.dumps(out), flush=True)
    return out, model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--max-train", type=int, default=None, help="use the first N training documents")
    parser.add_argument("--max-eval", type=int, default=None, help="use the first N dev and test documents")
    parser.add_argument("--C", type=float, nargs="+", default=[0.5, 1.0, 2.0],
                        help="values of C tried on dev for OneVsRestLinear")
    parser.add_argument("--prune-threshold", type=float, default=0.01)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=["prior", "ovr", "libmultilabel"],
                        choices=["prior", "ovr", "libmultilabel"])
    parser.add_argument("--output", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--smoke", action="store_true",
                        help="300 training and 100 dev/test documents, C=1: seconds")
    args = parser.parse_args(argv)
    if args.smoke:
        args.max_train, args.max_eval, args.C = 300, 100, [1.0]

    limits = {"train": args.max_train, "dev": args.max_eval, "test": args.max_eval}
    start = time.perf_counter()
    data = {s: load_eurlex57k(s, data_home=args.data_home, max_docs=limits[s]) for s in limits}
    index = data["train"].label_names
    Y = {s: data[s].Y for s in data}
    vectorizer = TfidfVectorizer(**TFIDF_DEFAULTS).fit(data["train"].texts)
    X = {s: vectorizer.transform(data[s].texts) for s in data}
    prep_seconds = time.perf_counter() - start
    print(f"data: train {X['train'].shape}, dev {X['dev'].shape[0]}, test {X['test'].shape[0]}, "
          f"{len(index)} labels, TF-IDF + loading {prep_seconds:.0f} s", flush=True)

    results = []
    if "prior" in args.models:
        results.append(run_model("FrequencyPrior", FrequencyPrior, X, Y, {})[0])
    if "ovr" in args.models:
        runs = []
        for C in args.C:
            params = {"loss": "squared_hinge", "C": C, "prune_threshold": args.prune_threshold,
                      "n_jobs": args.n_jobs, "random_state": 0}
            runs.append(run_model(f"OneVsRestLinear(C={C})", lambda p=params: OneVsRestLinear(**p),
                                  X, Y, params)[0])
        best = max(runs, key=lambda r: r["dev"]["P@5"])
        best = {**best, "name": "OneVsRestLinear (C chosen on dev)",
                "tried": {r["params"]["C"]: r["dev"]["P@5"] for r in runs}}
        results.append(best)
    if "libmultilabel" in args.models:
        try:
            results.append(run_model("LibMultiLabelLinear (defaults)", LibMultiLabelLinear, X, Y,
                                     {"options": ""})[0])
        except ImportError as exc:
            print(f"LibMultiLabel skipped: {exc}")

    report = {
        "dataset": "EURLEX57K", "split": "test", "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"cores": os.cpu_count(), "platform": platform.platform()},
        "n_train": X["train"].shape[0], "n_features": X["train"].shape[1], "n_labels": len(index),
        "max_train": args.max_train, "max_eval": args.max_eval, "models": results,
    }
    print("\n| model | fit s | peak RSS MiB | test P@1 | test P@5 | test nDCG@5 |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        t = r["test"]
        print(f"| {r['name']} | {r['fit_seconds']} | {r['peak_rss_mb']} | {t['P@1']} | {t['P@5']} | "
              f"{t['nDCG@5']} |")
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
