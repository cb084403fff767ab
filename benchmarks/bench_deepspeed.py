"""DeepSpeed on CPU beside the skorch loop: wall time and dev MAP of a small CodiEsp-D fit.

Two gloo processes (ZeRO-2, fp32) against one skorch process, on a subset of
the bundled CodiEsp-D (the first ``--n-train`` training and ``--n-dev`` dev
documents), a small CNN PLANT with its Stage 1::

    DS_ACCELERATOR=cpu OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 \\
        benchmarks/bench_deepspeed.py --out ds.json
    OMP_NUM_THREADS=1 python benchmarks/bench_deepspeed.py --strategy skorch --out sk.json

Rank 0 writes a JSON record: the fit's wall time (seconds, rank 0) and
every rank's CPU time (on a shared machine the steadier figure), the dev
MAP of every epoch, the chosen ``stage1_weight_`` and the SHA-256 of the
test documents' ``predict_proba`` (float32 bytes), so two runs can be
compared bit for bit. ``--stage1-weight dev`` and ``--max-epoch-docs`` try
the choice on dev and epoch sampling.
"""

import argparse
import hashlib
import json
import time


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--strategy", default="deepspeed", choices=("deepspeed", "skorch"))
    ap.add_argument("--zero", type=int, default=2)
    ap.add_argument("--n-train", type=int, default=200)
    ap.add_argument("--n-dev", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--planter-epochs", type=int, default=2)
    ap.add_argument("--stage1-weight", default="0.1", help='a number, or "dev"')
    ap.add_argument("--max-epoch-docs", type=int, default=None)
    args = ap.parse_args(argv)

    import numpy as np
    import torch
    torch.set_num_threads(1)
    from xplant.datasets import load_codiesp
    from xplant.metrics import mean_average_precision
    from xplant.neural import AttentionPlanter, PlantClassifier
    from xplant.neural.distributed import (DeepSpeedStrategy, broadcast_from_rank0,
                                           init_distributed, rank_and_world)
    from xplant.relevance import MIGRelevance

    if args.strategy == "deepspeed":
        init_distributed(shm_comm=False)      # gloo alone: no shared-memory op to compile
    rank, world = rank_and_world()
    train, dev, test = (load_codiesp(s, codes="D") for s in ("train", "dev", "test"))
    tr_texts, tr_Y = train.texts[:args.n_train], train.Y[:args.n_train]
    dv_texts, dv_Y = dev.texts[:args.n_dev], dev.Y[:args.n_dev]
    te_texts, te_Y = test.texts[:args.n_dev], test.Y[:args.n_dev]
    rel = broadcast_from_rank0(lambda: MIGRelevance(top_k=20).fit(tr_texts, tr_Y))
    weight = args.stage1_weight if args.stage1_weight == "dev" else float(args.stage1_weight)
    extra = {} if args.max_epoch_docs is None else {"iterator_train__max_epoch_docs": args.max_epoch_docs}
    strategy = "skorch" if args.strategy == "skorch" else DeepSpeedStrategy(
        config={"zero_optimization": {"stage": args.zero}})
    clf = PlantClassifier(
        "cnn", module__embedding_dim=32, module__hidden_dim=32, module__attention_dim=32,
        module__pool_size=32, module__max_length=512, max_epochs=args.epochs, batch_size=16,
        stage1_weight=weight, verbose=0, random_state=0, strategy=strategy,
        planter=AttentionPlanter(max_epochs=args.planter_epochs, verbose=0), **extra)
    t0, c0 = time.perf_counter(), time.process_time()
    clf.fit(rel.transform(tr_texts), tr_Y, validation_data=(dv_texts, dv_Y))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    cpus = [cpu] * world
    if world > 1:
        torch.distributed.all_gather_object(cpus, cpu)
    proba = clf.predict_proba(te_texts)
    proba = np.asarray(proba.toarray() if hasattr(proba, "toarray") else proba, dtype=np.float32)
    out = {"strategy": args.strategy, "world": world, "zero": args.zero, "seconds": seconds,
           "cpu_seconds": cpus,
           "stage1_weight": args.stage1_weight, "stage1_weight_": clf.stage1_weight_,
           "max_epoch_docs": args.max_epoch_docs,
           "epochs": len(clf.history), "best_epoch": clf.best_epoch_,
           "valid_map": [h.get("valid_map") for h in clf.history],
           "train_loss": [h["train_loss"] for h in clf.history],
           "best_dev_map": max(h.get("valid_map", float("nan")) for h in clf.history),
           "test_map": float(mean_average_precision(te_Y, proba)),
           "proba_sha256": hashlib.sha256(proba.tobytes()).hexdigest()}
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
        print(json.dumps({k: v for k, v in out.items() if k not in ("valid_map", "train_loss")}))
    if world > 1:
        from xplant.neural.distributed import shutdown_distributed
        shutdown_distributed()


if __name__ == "__main__":
    main()
