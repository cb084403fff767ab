"""Worker of test_deepspeed.py: train a tiny PLANT model, write what rank 0 saw.

Run as ``torchrun --nproc_per_node 2 _ds_worker.py OUT.json --zero 2`` (or as
a plain process, or in-process with ``main([...])`` for the skorch reference).
``_ds_worker.py --jobs JOBS.json`` runs several such fits one after the other in
the same processes (one process group; each fit builds its own DeepSpeed engine),
``JOBS.json`` holding a list of argument lists: the processes start (imports
included, most of a fit's time here) once for all of them. Not a test module: it
only runs under ``__main__``.
"""

import argparse
import hashlib
import json


def synthetic(n_docs=48, n_labels=20, seed=0):
    """Documents whose words depend on their labels, so MIG has signal."""
    import numpy as np
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    rows, texts = [], []
    for i in range(n_docs):
        labels = rng.choice(n_labels, size=rng.integers(1, 4), replace=False)
        words = [f"w{l}x{rng.integers(3)}" for l in labels for _ in range(3)]
        words += [f"noise{rng.integers(30)}" for _ in range(rng.integers(5, 20))]
        rng.shuffle(words)
        texts.append(" ".join(words))
        rows.append(labels)
    Y = sp.lil_matrix((n_docs, n_labels), dtype=np.float32)
    for i, ls in enumerate(rows):
        Y[i, ls] = 1
    return texts, Y.tocsr()


def parse_args(argv):
    """One fit's settings (``OUT.json`` and the options below)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--strategy", default="deepspeed")
    ap.add_argument("--zero", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--checkpoint-dir", default=None)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--plant", action="store_true")
    ap.add_argument("--stage1-weight", default="0",
                    help='0: the mechanics tests compare plain Stage 2 losses; "dev": the choice')
    ap.add_argument("--max-epoch-docs", type=int, default=None,
                    help="iterator_train__max_epoch_docs (epoch sampling)")
    ap.add_argument("--patience", type=int, default=6)
    ap.add_argument("--accumulation", type=int, default=1, help="gradient_accumulation_steps")
    ap.add_argument("--misled-rank1", action="store_true",
                    help="rank 1 computes reversed dev scores (1 - MAP) for itself")
    ap.add_argument("--shortlist", type=int, default=0,
                    help="> 0: Stage 2 on this many linear-shortlist candidates, fused at 0.5")
    return ap.parse_args(argv)


def main(argv=None):
    """Run one fit (``OUT.json --zero 2 ...``) or several (``--jobs JOBS.json``)."""
    import sys
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--jobs"]:
        with open(argv[1]) as f:
            jobs = [parse_args(a) for a in json.load(f)]
    else:
        jobs = [parse_args(argv)]
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if any(a.strategy == "deepspeed" for a in jobs):
            from xplant.neural.distributed import init_distributed
            # gloo alone: skip the shared-memory all-reduce op, a C++ build of minutes
            init_distributed(shm_comm=False)
        for args in jobs:
            print(f"_ds_worker: {args.out}", file=sys.stderr, flush=True)
            fit(args)
    finally:
        torch.set_num_threads(threads)     # in-process callers keep their own setting
    if torch.distributed.is_initialized():
        # leave no process-group thread to the interpreter's exit (see shutdown_distributed)
        from xplant.neural.distributed import shutdown_distributed
        shutdown_distributed()


def fit(args):
    """Train one classifier as ``args`` say; rank 0 writes the JSON record to ``args.out``."""
    import torch
    from xplant.neural import PlantClassifier
    from xplant.neural.training import _callbacks
    from xplant.neural.distributed import DeepSpeedStrategy, broadcast_from_rank0, rank_and_world
    from xplant.relevance import MIGRelevance

    rank, world = rank_and_world()
    texts, Y = synthetic()
    dev_texts, dev_Y = synthetic(n_docs=12, seed=1)
    # MIG once, on rank 0, shared with every rank
    rel = broadcast_from_rank0(lambda: MIGRelevance(tokenizer="word", top_k=10).fit(texts, Y))
    fp = hashlib.sha256(repr(sorted(rel.vocabulary_.items())).encode()
                        + rel.relevance_.toarray().tobytes()).hexdigest()
    corpus = rel.transform(texts)
    lr = 3e-3
    clf = PlantClassifier(
        "cnn", plant=args.plant, module__embedding_dim=8, module__hidden_dim=8, module__attention_dim=8, module__kernel_size=3,
        module__pool_size=8, module__dropout=0.0, criterion__hard_negatives=None, lr=lr, batch_size=8,
        max_epochs=args.epochs, verbose=0, random_state=0,
        callbacks__unfreeze__phases=[(0, "head", lr), (0, "attention", lr), (0, "encoder", lr), (0, "embeddings", lr)],
        planter=None, patience=args.patience,
        stage1_weight=args.stage1_weight if args.stage1_weight == "dev" else float(args.stage1_weight),
        **({} if args.max_epoch_docs is None else {"iterator_train__max_epoch_docs": args.max_epoch_docs}),
        **({"shortlist": "linear", "n_candidates": args.shortlist, "fusion": 0.5}
           if args.shortlist else {}),
        strategy=args.strategy if args.strategy == "skorch" else DeepSpeedStrategy(
            config={"zero_optimization": {"stage": args.zero},
                    "gradient_accumulation_steps": args.accumulation,
                    "checkpoint_dir": args.checkpoint_dir, "resume": args.resume}))
    own_score = _callbacks.score_by_name
    if args.misled_rank1 and rank == 1:   # what rank 1 alone would decide on: the reverse
        _callbacks.score_by_name = lambda *a: 1.0 - own_score(*a)
    loss_passes = []                      # skorch's own validation pass: none for the classifier
    own_pass = PlantClassifier.validation_step
    PlantClassifier.validation_step = lambda *a, **k: loss_passes.append(1) or own_pass(*a, **k)
    try:
        clf.fit(corpus, Y, validation_data=(dev_texts, dev_Y))
    finally:                              # the next fit (or the caller) sees neither patch
        _callbacks.score_by_name = own_score
        PlantClassifier.validation_step = own_pass
    fps = [None] * world
    if world > 1:
        torch.distributed.all_gather_object(fps, fp)
    else:
        fps = [fp]
    proba = clf.predict_proba(corpus)
    view = [clf.stage1_weight_, clf.best_epoch_, [h.get("valid_map") for h in clf.history],
            hashlib.sha256(proba.tobytes()).hexdigest()]
    views = [None] * world
    if world > 1:                         # what every rank ended with
        torch.distributed.all_gather_object(views, view)
    else:
        views = [view]
    out = {"world": world, "train_loss": [h["train_loss"] for h in clf.history],
           "epochs": [h["epoch"] for h in clf.history],
           "valid_score": [h.get("valid_map") for h in clf.history], "relevance_fingerprints": fps,
           "rank_views": views,
           "valid_loss": [h.get("valid_loss") for h in clf.history],
           "train_batch_count": [h["train_batch_count"] for h in clf.history],
           "stage1_weight_": clf.stage1_weight_,
           "stage1_weight_candidates": clf.stage1_weight_candidates_,
           "best_epoch": clf.best_epoch_,
           "dev_choices": clf.dev_choices_,
           "dev_loss_passes": len(loss_passes),
           "proba": proba.tolist(),
           "params": {k: v.detach().double().sum().item() for k, v in clf.module_.state_dict().items()},
           "module_type": type(clf.module_).__name__,
           "param_has_ds": any(hasattr(p, "ds_id") for p in clf.module_.parameters())}
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
