"""Attention at scale: the naive path (T × T built) against PyTorch's SDPA; the tiles view's redraw.

    python bench/bench_attention.py [--quick] [--device cpu|cuda] [--threads 1] [--dtype float32]
                                    [--heads 1] [--batch 1] [--head-dim 64] [--max-T 16384]

For T = 1K, 2K, 4K, 8K, 16K (``--quick``: 1K to 4K; ``--max-T`` goes further, on a GPU say) and one
head of d = 64 by default: ``models.attention.naive_attention`` (scores and probabilities built)
and ``F.scaled_dot_product_attention`` on the same seeded q, k, v. Each is profiled once (peak
bytes allocated during the call, its output included: the CPU's ``torch.profiler`` allocation
events, CUDA's ``max_memory_allocated``; and the kernel SDPA dispatched to), then timed: median of
3 calls (one when a call takes over 0.5 s). A naive call whose matrices would exceed the sweep's
byte budget (``models.attention_cost.byte_budget``) is not run. One CPU thread by default.

Then the FlashAttention view's step redraw, server side, as the app does it: the step handler
(``components.attention_flash.show_step``) and Gradio's postprocessing of its two figures, at the
view's defaults (every step) and at its largest setting (T = 64, d = 64, block 1: 4,096 tiles).
Target: ≤ 50 ms per step at the defaults.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.attention import naive_attention  # noqa: E402
from models.attention_cost import Shape, byte_budget, measure_peak, sdpa_backend, time_call  # noqa: E402


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def sweep(args, device: torch.device) -> None:
    shape = Shape(args.batch, args.heads, args.head_dim, args.dtype)
    budget = byte_budget(device)
    T, Ts = 1024, []
    while T <= (4096 if args.quick else args.max_T):
        Ts.append(T)
        T *= 2
    print(f"device {device}, {torch.get_num_threads()} thread(s), B={shape.batch} H={shape.heads} d={shape.head_dim} "
          f"{shape.dtype}, budget {mib(budget)}")
    measure_peak(lambda: torch.ones(1, device=device), device)                # the profiler's first start
    header = (f"{'T':>7} | {'naive ms':>9} {'SDPA ms':>8} {'time ×':>7} | {'naive bytes':>13} {'SDPA bytes':>11} "
              f"{'memory ×':>9} | SDPA backend")
    print(header)
    print("-" * len(header))
    for T in Ts:
        g = torch.Generator(device=device).manual_seed(0)
        q, k, v = (torch.randn(shape.batch, shape.heads, T, shape.head_dim, generator=g, device=device,
                               dtype=getattr(torch, shape.dtype)) for _ in range(3))
        rows = {}
        fns = {"naive": lambda: naive_attention(q, k, v), "sdpa": lambda: F.scaled_dot_product_attention(q, k, v)}
        for name, fn in fns.items():
            if name == "naive" and shape.need("naive", T, None, 1) > budget:
                rows[name] = None
                continue
            result, peak, ops, ms = measure_peak(fn, device)
            del result
            runs = 1
            if ms < 500:
                ms, runs = time_call(fn, device)
            rows[name] = (ms, peak, ops)
        s_ms, s_peak, s_ops = rows["sdpa"]
        if rows["naive"] is None:
            print(f"{T:>7} | {'over budget':>9} {s_ms:>8.1f} {'':>7} | {mib(shape.need('naive', T, None, 1)):>13} "
                  f"{mib(s_peak):>11} {'':>9} | {sdpa_backend(s_ops)}")
            continue
        n_ms, n_peak, _ = rows["naive"]
        print(f"{T:>7} | {n_ms:>9.1f} {s_ms:>8.1f} {n_ms / s_ms:>6.2f}× | {mib(n_peak):>13} {mib(s_peak):>11} "
              f"{n_peak / s_peak:>8.0f}× | {sdpa_backend(s_ops)}")
        del q, k, v


def redraw(quick: bool) -> None:
    import gradio as gr

    from components.attention_flash import attention_flash, show_step

    plot, markdown = gr.Plot(), gr.Markdown()

    def one(state, step) -> float:
        start = time.perf_counter()
        views = show_step(state, step)
        plot.postprocess(views["tiles_plot"])
        plot.postprocess(views["rows_plot"])
        markdown.postprocess(views["status"])
        markdown.postprocess(views["recurrence"])
        return (time.perf_counter() - start) * 1e3

    settings = {"defaults (T=16, d=8, block 4, causal)": {},
                "largest (T=64, d=64, block 1, not causal)": dict(T=64, head_dim=64, block=1, causal=False)}
    print("\nFlashAttention view, one step redrawn server side (handler + Gradio's postprocessing):")
    one(attention_flash()["state"], 1)                                             # imports, first JSON
    for label, kwargs in settings.items():
        start = time.perf_counter()
        state = attention_flash(**kwargs)["state"]
        tile_ms = (time.perf_counter() - start) * 1e3
        stride = 1 if state.n_steps <= 64 else state.n_steps // (16 if quick else 64)
        steps = list(range(0, state.n_steps + 1, stride)) + [state.n_steps]
        times = [one(state, s) for s in steps]
        print(f"  {label}: {state.n_steps} tiles, tiled once in {tile_ms:.0f} ms; a step: median "
              f"{statistics.median(times):.1f} ms, worst {max(times):.1f} ms over {len(steps)} steps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 1K to 4K, fewer redraw samples")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--heads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--max-T", type=int, default=16384)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sweep(args, torch.device(args.device))
    redraw(args.quick)


if __name__ == "__main__":
    main()
