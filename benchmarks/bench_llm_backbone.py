"""Training throughput of the "llm:" backbone (LoRA, and LoRA over NF4).

No real LLM weights can be loaded here, so the model is a randomly
initialised Llama-style config (default: hidden 512, 4 layers, 8 heads, 2
KV heads, vocabulary 32,000, maximum length 512: a scaled-down Llama of
about 27M parameters). Throughput does not depend on the weight values.

It times forward + backward + AdamW step of :class:`LLMEncoder` (the
backbone only, H summed as the loss) on batches of ``--batch`` documents
of ``--tokens`` ids, and prints tokens/s and peak RSS for

1. LoRA (r = 16, q/v projections) over a float32 base;
2. the same adapters over a 4-bit NF4 base (bitsandbytes CPU backend).

Run: ``python benchmarks/bench_llm_backbone.py [--hidden 512 --layers 4 --threads 2]``.
"""

import argparse
import resource
import tempfile
import time

import numpy as np
import torch


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _save_model(folder, args):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i + 3 for i in range(args.vocab - 3)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(folder)
    config = LlamaConfig(hidden_size=args.hidden, intermediate_size=int(args.hidden * 8 / 3) // 64 * 64,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=max(1, args.heads // 4), vocab_size=args.vocab,
                         max_position_embeddings=args.max_len, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    return sum(p.numel() for p in model.model.parameters())


def _throughput(folder, args, nf4):
    from xplant.neural.backbones import LLMEncoder

    enc = LLMEncoder(folder, pad_id=2, lora_r=16, load_in_4bit=nf4).train()
    params = [p for p in enc.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4)
    rng = np.random.default_rng(0)
    ids = torch.as_tensor(rng.integers(3, args.vocab, size=(args.batch, args.tokens)))
    mask = torch.ones_like(ids, dtype=torch.bool)

    def step():
        opt.zero_grad()
        enc(ids, mask).sum().backward()
        opt.step()

    step()                                            # warm-up
    t = time.perf_counter()
    for _ in range(args.steps):
        step()
    dt = time.perf_counter() - t
    return args.steps * args.batch * args.tokens / dt, sum(p.numel() for p in params)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--max-len", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=512, help="ids per document")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as folder:
        n_base = _save_model(folder, args)
        print(f"random Llama-style base: {n_base / 1e6:.1f}M parameters, hidden {args.hidden}, "
              f"{args.layers} layers; batch {args.batch} x {args.tokens} ids; {args.threads} threads")
        for nf4 in (False, True):
            tps, n_lora = _throughput(folder, args, nf4)
            name = "LoRA r=16 over NF4 base" if nf4 else "LoRA r=16 over fp32 base"
            print(f"{name:28s} {tps:9.0f} train tokens/s   ({n_lora / 1e3:.0f}k trainable, "
                  f"peak RSS {_peak_rss_mb():.0f} MB)")


if __name__ == "__main__":
    main()
