"""Training throughput of PLANT's Stage 2 per backbone, on real CodiEsp text.

For each backbone ("cnn", "bigru", "hf" = the bundled MiniLM-L6) it builds a
PlantClassifier's network for the 2,557 CodiEsp-D labels, then times full
training steps (forward, focal loss with hard negatives, backward, fused
AdamW) on length-bucketed batches of the first ``--docs`` training
documents, every parameter group trainable. It prints, side by side in one
run, training tokens/s, documents/s, the process peak RSS so far, each backbone's
tokens/s relative to the CNN's, and the tokens/s of the backbone alone
(forward and backward of its hidden states, without label attention, loss
or optimizer step).

Run: ``python benchmarks/bench_backbones.py [--docs 64 --batch 8 --threads 2]``.
"""

import argparse
import resource
import time

import numpy as np
import torch


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(backbone, texts, Y, args):
    from xplant.neural import PlantClassifier, default_relevance
    from xplant.neural.batching import LengthBucketSampler, Stage2Collate, TokenDataset, positives_list
    rel = default_relevance(backbone).fit(texts, Y)
    docs = [d[: args.max_length] for d in rel.tokenize(texts)]
    clf = PlantClassifier(backbone=backbone, verbose=0, module__max_length=args.max_length)
    clf.relevance_, clf.n_labels_, clf.phases_ = rel, Y.shape[1], []
    clf.rng_, clf.dev_docs_ = np.random.default_rng(0), None
    clf.initialize()
    net, loss_fn = clf.module_.train(), clf.criterion_
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    ds = TokenDataset(docs, positives_list(Y))
    batches = list(LengthBucketSampler(ds.lengths(), args.batch, generator=np.random.default_rng(0)))
    collate = Stage2Collate(rel.pad_id_)
    tokens = n_docs = 0
    elapsed = 0.0
    for i, b in enumerate(batches):
        x, pos = collate([ds[j] for j in b])
        t = time.perf_counter()
        loss = loss_fn(net(**x), pos)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i:                                   # the first step warms up
            elapsed += time.perf_counter() - t
            tokens += int(x["mask"].sum())
            n_docs += len(b)
    # The backbone alone (forward + backward of its hidden states, no label
    # attention, loss or optimizer step): what the encoder itself sustains.
    enc_tokens, enc_elapsed = 0, 0.0
    for i, b in enumerate(batches):
        x, _ = collate([ds[j] for j in b])
        t = time.perf_counter()
        net.encoder(x["ids"], x["mask"]).sum().backward()
        opt.zero_grad()
        if i:
            enc_elapsed += time.perf_counter() - t
            enc_tokens += int(x["mask"].sum())
    return {"backbone": backbone, "tokens_per_s": tokens / elapsed, "docs_per_s": n_docs / elapsed,
            "encoder_tokens_per_s": enc_tokens / enc_elapsed,
            "mean_tokens_per_doc": float(np.mean([len(d) for d in docs])),
            "peak_rss_mb": _peak_rss_mb()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-length", type=int, default=4096)
    p.add_argument("--backbones", default="cnn,bigru,hf")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from xplant.datasets import load_codiesp
    tr = load_codiesp("train")
    texts, Y = tr.texts[: args.docs], tr.Y[: args.docs]
    rows = [measure(b, texts, Y, args) for b in args.backbones.split(",")]
    base = rows[0]["tokens_per_s"]
    print(f"{'backbone':8} {'tokens/s':>9} {'docs/s':>7} {'tok/doc':>8} {'vs ' + rows[0]['backbone']:>7} "
          f"{'encoder tok/s':>13} {'peak RSS MB':>11}")
    for r in rows:
        print(f"{r['backbone']:8} {r['tokens_per_s']:9.0f} {r['docs_per_s']:7.2f} "
              f"{r['mean_tokens_per_doc']:8.0f} {r['tokens_per_s'] / base:7.2f} "
              f"{r['encoder_tokens_per_s']:13.0f} {r['peak_rss_mb']:11.0f}")
    return rows


if __name__ == "__main__":
    main()
