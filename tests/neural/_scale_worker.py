"""100,000-label run for test_reliability.py: MIG, Stage 1, one Stage 2 epoch, P@k.

Run as a script (a fresh process, so its peak RSS is its own); prints one
JSON line with the figures.
"""

import json
import sys
import time

import numpy as np
import scipy.sparse as sp
import torch


def synthetic(n_docs, n_labels, seed, vocab=5000, doc_len=20):
    """Short documents; label l is signalled by the word ``s<l>``.

    Labels follow Zipf's law (P(l) proportional to 1 / (l + 1)), as in real
    XMTC data: a few head labels recur, most of the 100k are rare or unseen.
    """
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, n_labels + 1))
    cdf /= cdf[-1]
    texts, rows, cols = [], [], []
    for i in range(n_docs):
        draws = np.searchsorted(cdf, rng.random(int(rng.integers(1, 4))), side="right")
        labs = np.unique(np.minimum(draws, n_labels - 1))
        words = [f"w{j}" for j in rng.integers(0, vocab, size=doc_len)] + [f"s{l}" for l in labs]
        texts.append(" ".join(words))
        rows += [i] * len(labs)
        cols += [int(l) for l in labs]
    Y = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n_docs, n_labels))
    return texts, Y


def _rss(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _step_extra_bytes(clf, texts, Y, steps=3):
    """Peak memory of Stage 2 training steps above the resident memory before them.

    Resets the kernel's peak (``/proc/self/clear_refs``), runs ``steps``
    optimizer steps on one batch of the fitted classifier's own kind
    (candidates with a shortlist, every label without), and reads ``VmHWM``.
    Parameters and optimizer states exist before, so only the step's own
    tensors count.
    """
    from xplant.neural.classifier._items import CandidateDataset
    from xplant.neural.batching import Stage2Collate, TokenDataset, positives_list
    from xplant.fusion import rank_labels, training_candidates
    docs, pos = clf._docs(texts), positives_list(Y)
    if getattr(clf, "shortlist_", None) is not None:
        k = min(clf.n_labels_, clf.n_candidates_ + max(map(len, pos)))
        ranking, _ = rank_labels(clf.shortlist_, texts, k)
        ds = CandidateDataset(docs, pos, training_candidates(ranking, pos, clf.n_candidates_))
    else:
        ds = TokenDataset(docs, pos)
    batch = Stage2Collate(clf.relevance_.pad_id_)([ds[i] for i in range(len(ds))])
    for g in clf.optimizer_.param_groups:
        g["lr"] = 1e-4
    clf.train_step(batch)                    # allocator warm-up
    import ctypes
    import gc
    gc.collect()
    try:                                     # give freed heap pages back to the kernel
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return -1
    before = _rss("VmRSS")
    for _ in range(steps):
        clf.train_step(batch)
    return _rss("VmHWM") - before


def main(n_labels=100_000, n_train=2000, n_dev=50, n_test=200, doc_len=10, batch_size=16,
         n_candidates=0, max_epoch_docs=0):
    """``n_candidates`` > 0: Stage 2 on a shortlist of that many labels per document
    (the frequency prior proposes them; each document's gold labels join in training).
    ``max_epoch_docs`` > 0: each epoch (Stage 1 and Stage 2) trains on that many of the
    ``n_train`` documents, drawn at random; MIG and the targets still cover all of them."""
    torch.set_num_threads(1)
    from xplant.metrics import precision_at_k
    from xplant.neural import AttentionPlanter, PlantClassifier
    t0 = time.perf_counter()
    texts, Y = synthetic(n_train + n_dev + n_test, n_labels, seed=0, doc_len=doc_len)
    tr, dv, te = slice(0, n_train), slice(n_train, n_train + n_dev), slice(n_train + n_dev, None)
    tiny = dict(module__embedding_dim=16, module__hidden_dim=16, module__attention_dim=16, batch_size=batch_size, verbose=0,
                n_jobs=1, module__max_length=64, stage1_weight=0.1)      # one Stage 2 (not "dev")
    if max_epoch_docs:
        tiny["iterator_train__max_epoch_docs"] = max_epoch_docs
    short = {}
    if n_candidates:
        from xplant.linear import FrequencyPrior
        short = dict(shortlist=FrequencyPrior(), n_candidates=n_candidates)
    clf = PlantClassifier(**tiny, module__pool_size=16, max_epochs=1, criterion__hard_negatives=100,
                          planter=AttentionPlanter(max_epochs=1, labels_per_doc=4, verbose=0),
                          **short)
    clf.fit(texts[tr], Y[tr], validation_data=(texts[dv], Y[dv]))
    t_fit = time.perf_counter() - t0
    idx, sc = clf.predict_top_k(texts[te], k=5)
    p1 = float(precision_at_k(Y[te], y_top_k=idx, k=1))
    p5 = float(precision_at_k(Y[te], y_top_k=idx, k=5))
    step_extra = _step_extra_bytes(clf, texts[tr][:batch_size], Y[tr][:batch_size])
    from xplant._process import peak_rss_mb
    # VmHWM, not ru_maxrss: a child of the (large) pytest process would
    # otherwise report the parent's memory at fork time
    peak = int(peak_rss_mb() * 2**20)
    print(json.dumps({"n_labels": n_labels, "n_candidates": n_candidates, "n_train": n_train, "max_epoch_docs": max_epoch_docs, "doc_len": doc_len,
                      "batch_size": batch_size, "n_dev": n_dev, "n_test": n_test,
                      "fit_s": round(t_fit, 1), "total_s": round(time.perf_counter() - t0, 1),
                      "peak_rss_bytes": peak, "step_extra_bytes": step_extra,
                      "p_at_1": p1, "p_at_5": p5,
                      "mean_predicted_labels": clf.history[-1, "valid_mean_predicted_labels"]}))


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
