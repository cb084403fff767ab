"""Speed of xplant's ranking metrics at XMTC scale, and against scikit-learn.

1. P@k and nDCG@k on a sparse (n x L) score matrix (default 100,000 x 10,000
   with 100 stored scores per row), never densified.
2. nDCG@k against :func:`sklearn.metrics.ndcg_score` on a dense size both
   handle; prints the ratio and checks the values agree (``ties="average"``,
   ``empty_rows="zero"`` is scikit-learn's convention).

Run: ``python benchmarks/bench_metrics.py [--n 100000 --labels 10000]``.
"""

import argparse
import resource
import time

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import ndcg_score

from xplant.metrics import mean_average_precision, ndcg_at_k, precision_at_k, top_k_indices, xmtc_report


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _random_csr(rng, n, L, per_row, values):
    indptr = np.arange(0, n * per_row + 1, per_row, dtype=np.int64)
    indices = rng.integers(0, L, size=n * per_row)
    data = rng.random(n * per_row) if values else np.ones(n * per_row)
    m = sp.csr_matrix((data, indices, indptr), shape=(n, L))
    m.sum_duplicates()
    if not values:
        m.data[:] = 1
    return m


def _timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--labels", type=int, default=10_000)
    parser.add_argument("--per-row", type=int, default=100, help="stored scores per row")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--sk-n", type=int, default=5_000, help="rows for the sklearn comparison")
    parser.add_argument("--sk-labels", type=int, default=2_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    # warm up (loads or compiles the numba kernels)
    small = _random_csr(rng, 50, 100, 10, True)
    _, t_warm = _timed(xmtc_report, _random_csr(rng, 50, 100, 3, False), small)
    print(f"kernel warm-up (first call): {t_warm:.2f} s")

    Y = _random_csr(rng, args.n, args.labels, 5, False)
    S = _random_csr(rng, args.n, args.labels, args.per_row, True)
    print(
        f"\nsparse scores: {args.n:,} x {args.labels:,}, {S.nnz:,} stored "
        f"({S.data.nbytes / 2**20 + S.indices.nbytes / 2**20:.0f} MiB); "
        f"y_true {Y.nnz:,} positives"
    )
    _, t_top = _timed(top_k_indices, S, args.k)
    p, t_p = _timed(precision_at_k, Y, S, k=args.k)
    nd, t_nd = _timed(ndcg_at_k, Y, S, k=args.k)
    ndav, t_ndav = _timed(ndcg_at_k, Y, S, k=args.k, ties="average")
    ap, t_map = _timed(mean_average_precision, Y, S)
    rep, t_rep = _timed(xmtc_report, Y, S)
    print(f"  {f'top_k_indices(k={args.k})':<30} {t_top:7.2f} s")
    print(f"  precision_at_k                 {t_p:7.2f} s   P@{args.k} = {p:.4f}")
    print(f"  ndcg_at_k                      {t_nd:7.2f} s   nDCG@{args.k} = {nd:.4f}")
    print(f"  ndcg_at_k(ties='average')      {t_ndav:7.2f} s")
    print(f"  mean_average_precision (full)  {t_map:7.2f} s   MAP = {ap:.4f}")
    print(f"  xmtc_report (8 metrics)        {t_rep:7.2f} s")
    print(f"  peak RSS so far: {_peak_rss_mb():.0f} MiB")

    n2, L2 = args.sk_n, args.sk_labels
    Yd = (rng.random((n2, L2)) < 5 / L2).astype(np.int64)
    Sd = rng.random((n2, L2))
    print(f"\ndense comparison: {n2:,} x {L2:,}")
    ours, t_ours = _timed(ndcg_at_k, Yd, Sd, k=args.k, ties="average", empty_rows="zero")
    theirs, t_sk = _timed(ndcg_score, Yd, Sd, k=args.k)
    print(f"  xplant ndcg_at_k               {t_ours:7.3f} s   {ours:.6f}")
    print(f"  sklearn ndcg_score             {t_sk:7.3f} s   {theirs:.6f}")
    print(f"  speed-up: {t_sk / t_ours:.1f}x; |difference| = {abs(ours - theirs):.2e}")
    if not np.isclose(ours, theirs, rtol=1e-9):
        raise SystemExit("values disagree")


if __name__ == "__main__":
    main()
