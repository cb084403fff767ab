"""PLANT with an LLM backbone (QLoRA) on DeepSpeed ZeRO-3: GPU throughput.

Runs a bounded number of optimizer steps of ``PlantClassifier(backbone=
"llm:<folder>", strategy="deepspeed")`` on CodiEsp or EURLEX57K and prints
tokens/s, samples/s and the peak GPU memory. Needs a CUDA GPU; without one it
stops at once with exit status 2.

    python benchmarks/gpu/plant_llm_qlora.py --llm /models/llama-3-8b --steps 20
    deepspeed --num_gpus 8 benchmarks/gpu/plant_llm_qlora.py --llm ... --batch-size 64

The LLM folder is a local Hugging Face checkpoint (weights, or a config only
for a randomly initialised throughput run); nothing is downloaded.
"""

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm", required=False, help="local folder of the decoder LLM (llm:<folder>)")
    ap.add_argument("--dataset", default="codiesp", choices=("codiesp", "eurlex57k"))
    ap.add_argument("--codes", default="D", help="CodiEsp code set (D or P)")
    ap.add_argument("--data-home", default=None, help="EURLEX57K folder (required for it)")
    ap.add_argument("--steps", type=int, default=20, help="optimizer steps (bounds the run)")
    ap.add_argument("--batch-size", type=int, default=16, help="global batch (documents per step)")
    ap.add_argument("--max-length", type=int, default=2048, help="tokens kept per document")
    ap.add_argument("--deepspeed-config", default=str(HERE / "ds_zero3_qlora_1gpu.json"))
    ap.add_argument("--plant", action="store_true", help="also run Stage 1 (planting)")
    ap.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def require_gpu():
    """Exit at once, with a clear message and status 2, when no CUDA GPU is usable."""
    try:
        import torch
    except ImportError:
        print("plant_llm_qlora: torch is not installed (pip install 'xplant[neural,llm,deepspeed]')",
              file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        print("plant_llm_qlora: no CUDA GPU is available; this benchmark measures GPU "
              "throughput and memory and needs one (for CPU training use "
              "PlantClassifier(strategy='deepspeed') with DS_ACCELERATOR=cpu).", file=sys.stderr)
        sys.exit(2)


def main(argv=None):
    args = parse(argv)
    require_gpu()
    if not args.llm:
        print("plant_llm_qlora: --llm FOLDER is required (a local Hugging Face decoder checkpoint)",
              file=sys.stderr)
        return 2
    import numpy as np
    import torch

    from xplant import datasets
    from xplant.neural import PlantClassifier
    from xplant.neural.distributed import DeepSpeedStrategy
    from xplant.neural.distributed import init_distributed, rank_and_world

    init_distributed()
    rank, world = rank_and_world()
    if args.dataset == "codiesp":
        train = datasets.load_codiesp("train", codes=args.codes)
    else:
        if args.data_home is None:
            print("plant_llm_qlora: EURLEX57K needs --data-home", file=sys.stderr)
            return 2
        train = datasets.load_eurlex57k("train", data_home=args.data_home)
    n_docs = min(len(train.texts), args.steps * args.batch_size)
    texts, Y = train.texts[:n_docs], train.Y[:n_docs]

    clf = PlantClassifier(backbone="llm:" + args.llm, plant=args.plant, max_epochs=1,
                          batch_size=args.batch_size, module__max_length=args.max_length,
                          validation_fraction=None, stage1_weight=0.1,
                          strategy=DeepSpeedStrategy(config=args.deepspeed_config),
                          verbose=int(rank == 0),
                          callbacks__unfreeze__phases=[(0, "head", 1e-3), (0, "attention", 1e-4),
                                                       (0, "encoder", 2e-4)])
    torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    clf.fit(texts, Y)
    total = time.time() - t0
    train_s = float(sum(h["dur"] for h in clf.history))
    docs = clf.relevance_.tokenize(texts)
    tokens = int(sum(min(len(d), args.max_length) for d in docs))
    peak = torch.cuda.max_memory_allocated() / 2 ** 30
    peaks = [peak] * world
    if world > 1:
        torch.distributed.all_gather_object(peaks, peak)
    if rank == 0:
        out = {"dataset": args.dataset, "llm": args.llm, "world_size": world,
               "steps": int(np.ceil(n_docs / args.batch_size)), "documents": n_docs,
               "tokens": tokens, "train_seconds": round(train_s, 2),
               "fit_seconds": round(total, 2),
               "samples_per_s": round(n_docs / train_s, 2),
               "tokens_per_s": round(tokens / train_s, 1),
               "peak_gpu_memory_gib_max_rank": round(max(peaks), 2),
               "gpu": torch.cuda.get_device_name()}
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
