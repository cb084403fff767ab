"""Benchmark exact MIG (xplant.relevance.mig_scores) against its floor and scikit-learn.

Prints, for one corpus:

- the bare sparse product YᵀB, over the same label blocks mig_scores uses
  (the floor: the same work, count type and memory bound);
- ``mig_scores(B, Y, top_k=50)``;
- scikit-learn's ``mutual_info_classif(B, Y[:, l], discrete_features=True)``
  timed on ``--sk-labels`` labels and ``--sk-features`` token columns, then
  extrapolated linearly to all V tokens and all L labels (its cost is one
  contingency table per column per label);
- each timed ``--repeat`` times (minimum reported; the machine may be shared);
- the ratios, and peak memory: the process's peak RSS (getrusage), the RSS
  growth during mig_scores (sampled every 5 ms), and the tracemalloc peak of
  one traced mig_scores call (NumPy/SciPy allocations).

Corpora:

- default: a synthetic corpus shaped like MIMIC-III (50,000 documents, a
  60,000-token vocabulary with Zipfian frequencies, ~700 distinct tokens per
  document, 9,000 labels with Zipfian frequencies, ~15 labels per document,
  each label with a few signal tokens). ``--scale`` shrinks documents,
  vocabulary and labels together.
- ``--eurlex PATH``: EURLEX57K's training split (JSON lines, gzip; title,
  header, recitals and main_body joined as the text, concepts as labels),
  tokenized with MIGRelevance's word tokenizer.

Examples::

    python benchmarks/bench_mig.py --scale 0.1
    python benchmarks/bench_mig.py
    python benchmarks/bench_mig.py --eurlex ../shared/data/eurlex57k/train.jsonl.gz
"""

import argparse
import gzip
import json
import resource
import sys
import threading
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RssSampler:
    """Peak RSS seen while the ``with`` block runs (sampled every 5 ms)."""

    def __enter__(self):
        self.base = rss_mb()
        self.peak = self.base
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_mb())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_mb())


def zipf_probs(n, a):
    p = 1.0 / np.arange(1, n + 1) ** a
    return p / p.sum()


def draws_for_distinct(p, target):
    """Number of draws with replacement whose expected distinct count is target."""
    lo, hi = target, 50 * target
    for _ in range(60):
        mid = (lo + hi) / 2
        if (1 - (1 - p) ** mid).sum() < target:
            lo = mid
        else:
            hi = mid
    return int(round(hi))


def sample_rows(rng, cdf, n_rows, mean_draws, n_cols, chunk=2000):
    """CSR presence matrix: each row draws ~mean_draws columns from cdf."""
    blocks = []
    for s in range(0, n_rows, chunk):
        m = min(chunk, n_rows - s)
        k = rng.integers(int(0.5 * mean_draws), int(1.5 * mean_draws) + 1, size=m)
        u = rng.random(k.sum())
        cols = np.minimum(np.searchsorted(cdf, u), n_cols - 1).astype(np.int32)
        indptr = np.concatenate([[0], np.cumsum(k)])
        A = sp.csr_matrix((np.ones(cols.shape[0], np.int8), cols, indptr), shape=(m, n_cols))
        A.sum_duplicates()
        A.data[:] = 1
        blocks.append(A)
    return sp.vstack(blocks, format="csr")


def synthetic(scale, seed):
    n, V, L = int(50_000 * scale), int(60_000 * scale), int(9_000 * scale)
    tok_per_doc, lab_per_doc = 700 * min(1.0, max(scale, 0.05) ** 0.5), 15
    rng = np.random.default_rng(seed)
    p_tok = zipf_probs(V, 1.0)
    p_lab = zipf_probs(L, 1.0)
    t0 = time.perf_counter()
    Y = sample_rows(rng, np.cumsum(p_lab), n, draws_for_distinct(p_lab, lab_per_doc), L)
    B = sample_rows(rng, np.cumsum(p_tok), n, draws_for_distinct(p_tok, tok_per_doc), V)
    # Signal: each label has 5 mid-frequency tokens, each present in half its documents.
    sig = rng.integers(V // 50, V // 2, size=(L, 5))
    Yc = Y.tocoo()
    rows = np.repeat(Yc.row, 5)
    cols = sig[Yc.col].ravel()
    keep = rng.random(rows.shape[0]) < 0.5
    S = sp.csr_matrix((np.ones(keep.sum(), np.int8), (rows[keep], cols[keep])), shape=B.shape)
    B = (B + S).tocsr()
    B.data[:] = 1
    Y.data = Y.data.astype(np.int64)
    B.data = B.data.astype(np.int64)
    print(f"synthetic corpus (scale={scale}): built in {time.perf_counter() - t0:.1f} s")
    return B, Y


def eurlex(path):
    from xplant.relevance import MIGRelevance

    texts, labels = [], []
    t0 = time.perf_counter()
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            body = r.get("main_body") or []
            texts.append("\n".join([r.get("title", ""), r.get("header", ""), r.get("recitals", "")] + list(body)))
            labels.append(list(r.get("concepts", [])))
    print(f"EURLEX57K: read {len(texts)} documents in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    rel = MIGRelevance(top_k=50)
    corpus = rel.fit_transform(texts, labels)
    fit_s = time.perf_counter() - t0
    print(
        f"MIGRelevance(top_k=50).fit_transform (word tokenizer + vocabulary + MIG): {fit_s:.1f} s; "
        f"V={rel.n_tokens_}, L={rel.n_labels_}, tokens={sum(len(d) for d in corpus)}"
    )
    del texts
    from sklearn.preprocessing import MultiLabelBinarizer

    Y = MultiLabelBinarizer(classes=rel.classes_, sparse_output=True).fit_transform(labels).tocsr()
    rows = [np.unique(d) for d in corpus]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    B = sp.csr_matrix(
        (np.ones(indptr[-1], np.int64), np.concatenate(rows), indptr), shape=(len(rows), rel.n_tokens_)
    )
    Y.data = Y.data.astype(np.int64)
    return B, Y


def _fmt(times):
    return ", ".join(f"{t:.2f}" for t in times)


def bench(B, Y, top_k, sk_labels, sk_features, n_jobs, seed, repeat):
    from sklearn.feature_selection import mutual_info_classif

    from xplant.relevance import _mig, mig_scores

    n, V = B.shape
    L = Y.shape[1]
    print(
        f"corpus: N={n}, V={V}, L={L}, nnz(B)={B.nnz} ({B.nnz / n:.0f} tokens/doc), "
        f"nnz(Y)={Y.nnz} ({Y.nnz / n:.1f} labels/doc)"
    )
    mig_scores(B[:50], Y[:50], top_k=top_k)  # compile / load the numba kernels

    # Floor: the bare product over the same label blocks, with the same
    # integer count type as mig_scores (int32 below 2**31 documents).
    dtype = _mig.count_dtype(n)
    YT = Y.T.tocsr().astype(dtype)
    Bp = B.astype(dtype)
    row_cost = YT @ np.diff(B.indptr).astype(np.int64)
    blocks = _mig._blocks_for(row_cost, V, top_k, True, None)
    prod_times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        nnz_c = 0
        for a, b in blocks:
            C = YT[a:b] @ Bp
            nnz_c += C.nnz
            del C
        prod_times.append(time.perf_counter() - t0)
    t_prod = min(prod_times)
    del Bp, YT
    print(
        f"bare product YᵀB ({len(blocks)} label blocks): {t_prod:.2f} s "
        f"(min of {_fmt(prod_times)}), nnz(YᵀB)={nnz_c}"
    )

    mig_times = []
    for _ in range(repeat):
        with RssSampler() as rs:
            t0 = time.perf_counter()
            R = mig_scores(B, Y, top_k=top_k, n_jobs=n_jobs)
            mig_times.append(time.perf_counter() - t0)
        nnz_r = R.nnz
        del R
    t_mig = min(mig_times)
    print(
        f"mig_scores(top_k={top_k}): {t_mig:.2f} s (min of {_fmt(mig_times)}), result nnz={nnz_r}; "
        f"RSS growth during the last call {rs.peak - rs.base:.0f} MB"
    )
    tracemalloc.start()
    R = mig_scores(B, Y, top_k=top_k, n_jobs=n_jobs)
    _, tm_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del R
    print(f"tracemalloc peak of one mig_scores call: {tm_peak / 2**20:.0f} MB")

    rng = np.random.default_rng(seed)
    labs = rng.choice(L, size=min(sk_labels, L), replace=False)
    feats = rng.choice(V, size=min(sk_features, V), replace=False)
    Bsub = B[:, feats].tocsc()
    Bsub.data = Bsub.data.astype(np.float64)
    Yc = Y.tocsc()
    t0 = time.perf_counter()
    for l in labs:
        y = np.zeros(n, dtype=np.int64)
        y[Yc.indices[Yc.indptr[l] : Yc.indptr[l + 1]]] = 1
        mutual_info_classif(Bsub, y, discrete_features=True)
    t_sk = time.perf_counter() - t0
    t_sk_all = t_sk * (V / len(feats)) * (L / len(labs))
    print(
        f"sklearn mutual_info_classif: {t_sk:.1f} s for {len(labs)} labels x {len(feats)} tokens "
        f"-> extrapolated to {L} labels x {V} tokens: {t_sk_all:.3g} s ({t_sk_all / 3600:.3g} h)"
    )
    print(
        f"ratios: mig/product = {t_mig / t_prod:.2f}x; sklearn(extrapolated)/mig = "
        f"{t_sk_all / t_mig:.3g}x"
    )
    print(f"peak RSS of the whole process (corpus included): {peak_rss_mb():.0f} MB")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="shrink the synthetic corpus (default 1.0)")
    ap.add_argument("--eurlex", metavar="PATH", help="EURLEX57K train.jsonl.gz instead of synthetic data")
    ap.add_argument("--top-k", type=int, default=50)
    ap.add_argument("--sk-labels", type=int, default=20, help="labels timed with scikit-learn")
    ap.add_argument("--sk-features", type=int, default=50, help="token columns timed with scikit-learn")
    ap.add_argument("--n-jobs", type=int, default=None, help="numba threads (default: numba's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of product and MIG; min reported")
    args = ap.parse_args(argv)
    if args.eurlex:
        B, Y = eurlex(args.eurlex)
    else:
        B, Y = synthetic(args.scale, args.seed)
    bench(B, Y, args.top_k, args.sk_labels, args.sk_features, args.n_jobs, args.seed, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
