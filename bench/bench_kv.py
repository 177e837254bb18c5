"""KV cache: cached vs. uncached decoding, and our cached decode vs. Hugging Face ``generate``.

    python bench/bench_kv.py [--runs 3] [--quick] [--device cpu|cuda] [--threads 1]

One CPU thread by default. A 4-layer, d = 256, 4-head decoder with random weights (vocabulary 256,
context 512) generates 256 tokens greedily after a 128-token prompt, four ways, interleaved run by
run: our ``TinyGPT`` with and without its KV cache (``models.generation.generate``), and
``transformers``' ``GPT2LMHeadModel.generate`` (greedy, ``use_cache=True``, and ``use_cache=False``)
on a GPT-2 config of the same size (a GELU MLP of 4·d against our SwiGLU of 8/3·d: equal weights
within 1 %). On CUDA our cached decode replays a CUDA graph of the step; a fifth case launches the
step's kernels one by one (``cuda_graph=False``). Tokens per second = new tokens / wall time of the
whole call (prefill included), median of the runs. Targets: cached ≥ 10× uncached; ours cached ≥ 2×
HF cached. On a shared machine the ratios of process CPU time (same runs) are printed too: time spent
descheduled is not in them.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.device import wait_for  # noqa: E402
from models.generation import GPTConfig, TinyGPT, generate  # noqa: E402


def timed_run(fn, device: torch.device) -> tuple[float, float, object]:
    """Wall seconds, process CPU seconds and the result of ``fn()``."""
    wait_for(device)
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    wait_for(device)
    return time.perf_counter() - start, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 layers, 32-token prompt, 32 new tokens, 1 run")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import GPT2Config, GPT2LMHeadModel        # a bench-only dependency
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()

    layers, d, heads, vocab, ctx = 4, 256, 4, 256, 512
    prompt_len, new, runs = 128, 256, args.runs
    if args.quick:
        layers, prompt_len, new, runs = 2, 32, 32, 1
    device = torch.device(args.device)
    torch.manual_seed(0)
    ours = TinyGPT(GPTConfig(vocab, layers, d, heads, heads, ctx)).to(device).eval()
    hf_config = GPT2Config(vocab_size=vocab, n_positions=ctx, n_embd=d, n_layer=layers, n_head=heads,
                           bos_token_id=0, eos_token_id=None, pad_token_id=0)
    hf = GPT2LMHeadModel(hf_config).to(device).eval()
    hf.generation_config.eos_token_id = None
    prompt = torch.randint(0, vocab, (1, prompt_len), generator=torch.Generator().manual_seed(1))
    ids = prompt.to(device)

    def hf_generate(cache: bool):
        with torch.no_grad():
            return hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                               do_sample=False, use_cache=cache, pad_token_id=0)

    cases = {
        "ours, KV cache": lambda: generate(ours, prompt[0].tolist(), new),
        **({"ours, KV cache, no CUDA graph": lambda: generate(ours, prompt[0].tolist(), new, cuda_graph=False)}
           if device.type == "cuda" else {}),
        "ours, no cache": lambda: generate(ours, prompt[0].tolist(), new, use_cache=False),
        "HF GPT-2 generate, use_cache=True": lambda: hf_generate(True),
        "HF GPT-2 generate, use_cache=False": lambda: hf_generate(False),
    }
    for fn in cases.values():                                      # warm-up: allocator, kernels, caches
        fn()
    seconds = {name: [] for name in cases}
    cpu_seconds = {name: [] for name in cases}
    outputs = {}
    for _ in range(runs):
        for name, fn in cases.items():
            elapsed, cpu, outputs[name] = timed_run(fn, device)
            seconds[name].append(elapsed)
            cpu_seconds[name].append(cpu)
    same = len({tuple(out.new_tokens) for name, out in outputs.items() if name.startswith("ours")}) == 1
    hf_new = outputs["HF GPT-2 generate, use_cache=True"].shape[1] - prompt_len
    assert hf_new == new, f"HF generated {hf_new} tokens, not {new}"

    params = {"ours": sum(p.numel() for p in ours.parameters()), "HF": sum(p.numel() for p in hf.parameters())}
    tps = {name: new / statistics.median(ts) for name, ts in seconds.items()}
    print(f"{layers} layers, d={d}, {heads} heads, vocab {vocab}; prompt {prompt_len}, {new} new tokens, greedy; "
          f"{device.type}, {torch.get_num_threads()} thread(s); median of {runs} run(s)")
    print(f"parameters: ours {params['ours']:,}, HF GPT-2 {params['HF']:,}; "
          f"our greedy tokens identical in every case of ours: {same}\n")
    print(f"| {'decode':36} | tokens/s | ms/token |")
    print(f"|{'-' * 38}|---------:|---------:|")
    for name, rate in tps.items():
        print(f"| {name:36} | {rate:8.1f} | {1e3 / rate:8.2f} |")
    cached_ratio = tps["ours, KV cache"] / tps["ours, no cache"]
    hf_ratio = tps["ours, KV cache"] / tps["HF GPT-2 generate, use_cache=True"]
    cpu = {name: statistics.median(ts) for name, ts in cpu_seconds.items()}
    print(f"\nours cached / ours uncached: {cached_ratio:.2f}x (target >= 10)")
    print(f"ours cached / HF cached:     {hf_ratio:.2f}x (target >= 2)")
    if device.type == "cuda":
        print(f"CUDA graph / kernels one by one: {tps['ours, KV cache'] / tps['ours, KV cache, no CUDA graph']:.2f}x")
    print(f"HF cached / HF uncached:     {tps['HF GPT-2 generate, use_cache=True'] / tps['HF GPT-2 generate, use_cache=False']:.2f}x")
    print(f"by process CPU time: ours cached / uncached {cpu['ours, no cache'] / cpu['ours, KV cache']:.2f}x, "
          f"/ HF cached {cpu['HF GPT-2 generate, use_cache=True'] / cpu['ours, KV cache']:.2f}x")


if __name__ == "__main__":
    main()
