"""RoPE: ``apply_rope`` against the two formulations real models ship, and the Positions tab's redraws.

    python bench/bench_positions.py [--quick] [--repeats 9]

1. ``apply_rope`` at B=1, H=32, T=4096, D=128 float32 (``--quick``: H=8, T=1024) against, measured side
   by side in the same run:
   - Hugging Face style (``style="half"``): ``inv_freq``, ``cos``/``sin`` of ``cat(freqs, freqs)`` built
     fresh each call, ``x·cos + rotate_half(x)·sin``;
   - Meta Llama style (``style="interleaved"``): ``freqs_cis = polar(1, freqs)`` built fresh each call,
     ``view_as_real(view_as_complex(x) · freqs_cis)``.
   Also the largest error of each against a float64 evaluation, at positions 0..T-1 and at 10⁶ + 0..T-1.
2. Server-side time of each view's redraw (handler + the figures' JSON, what a request costs the server),
   against the masks tab's redraw measured the same way.

Timings are medians over ``--repeats`` calls after a warm-up, on the shared device (CUDA synchronised),
with torch's threads as the app sets them (``LLM_ANATOMY_THREADS``; the served app leaves a core free).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.device import get_device, timed  # noqa: E402
from models.positions import apply_rope  # noqa: E402


def hf_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Hugging Face Llama: tables built each call in float32, rotate_half."""
    D = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.int64, device=x.device).float() / D))
    freqs = torch.outer(positions.float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def meta_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Meta Llama: freqs_cis built each call in float32, complex multiplication."""
    D = x.shape[-1]
    freqs = 1.0 / (base ** (torch.arange(0, D, 2, device=x.device)[: D // 2].float() / D))
    freqs = torch.outer(positions.float(), freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs_cis).flatten(-2).type_as(x)


def paired_ms(ours, reference, repeats: int, device: torch.device) -> tuple[float, float]:
    """Median ms of each, the two calls alternating so that a busy machine slows both alike."""
    ours(), reference()                                                        # warm-up
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for fn, bucket in ((ours, times[0]), (reference, times[1])):
            with timed(device) as watch:
                fn()
            bucket.append(watch.timing.ms)
    return statistics.median(times[0]), statistics.median(times[1])


def truth(x: torch.Tensor, positions: torch.Tensor, style: str) -> torch.Tensor:
    """The rotation evaluated in float64 (angles and arithmetic)."""
    return apply_rope(x.double(), positions.double(), style=style)


def bench_apply_rope(quick: bool, repeats: int, device: torch.device) -> list[str]:
    B, H, T, D = (1, 8, 1024, 128) if quick else (1, 32, 4096, 128)
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(B, H, T, D, generator=g, device=device)
    rows = [f"apply_rope, B={B} H={H} T={T} D={D} float32, {device}:", "",
            "| layout | ours ms | reference ms | speed-up | max error, positions 0..T-1 (ours / ref) | "
            "max error at 10⁶ + 0..T-1 (ours / ref) |", "|---|---|---|---|---|---|"]
    for style, name, reference in (("half", "HF rotate_half", hf_rope), ("interleaved", "Meta complex", meta_rope)):
        positions = torch.arange(T, device=device)

        def ours(p=positions, s=style):
            return apply_rope(x, p, style=s)

        def ref(p=positions, r=reference):
            return r(x, p)

        ours_ms, ref_ms = paired_ms(ours, ref, repeats, device)
        errors = []
        for offset in (0, 10**6):
            p = positions + offset
            exact = truth(x, p, style)
            errors.append(((apply_rope(x, p, style=style).double() - exact).abs().max().item(),
                           (reference(x, p).double() - exact).abs().max().item()))
        rows.append(f"| {style} vs {name} | {ours_ms:.2f} | {ref_ms:.2f} | {ref_ms / ours_ms:.2f}× | "
                    f"{errors[0][0]:.1e} / {errors[0][1]:.1e} | {errors[1][0]:.1e} / {errors[1][1]:.1e} |")
    return rows


def server_ms(fn, args, repeats: int) -> list[float]:
    """Handler plus the JSON of every figure it returns (what Gradio's postprocess does), per call."""
    def request():
        for out in fn(*args):
            if hasattr(out, "to_json"):
                out.to_json()
    request()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        request()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def bench_redraws(repeats: int) -> list[str]:
    from components import masks, positions as pos
    masks_args = ("the cat sat on the mat\nhi there", True, "right", True, False, 2, False, 2, False, "allow", 2, 0, 1, 1)
    views = {
        "/rope (rotate, d=128)": (pos.rope, (128, 10000, 0, "half", 3, 5, 2)),
        "/rope_relative (T=48, decay to 4,096)": (pos.rope_relative, (128, 10000, 0, "rope", 48, 4096)),
        "/rope_frequencies (d=128, 128 positions)": (pos.rope_frequencies, (128, 10000, 4096, 128)),
        "/rope_extrapolation (Llama 3.1, 4 methods)": (pos.rope_extrapolation,
                                                       (128, 500000, 8192, 8, 1, 4, ["original", "pi", "ntk", "llama3"])),
        "/rope_conventions (d=8)": (pos.rope_conventions, (10000, 0, 8, 1)),
        "/positions_compare (T=32, d=64, 8 heads)": (pos.positions_compare, (10000, 0, 32, 64, 8)),
    }
    rows = ["Server-side redraw (handler + figure JSON), against the masks tab's default redraw:", "",
            "| endpoint | ms | masks redraw ms | ratio |", "|---|---|---|---|"]
    for name, (fn, args) in views.items():
        ours, reference = [], []
        for _ in range(repeats):                                               # alternate, as for apply_rope
            ours += server_ms(fn, args, 1)
            reference += server_ms(masks.compute_masks, masks_args, 1)
        ms, ref = statistics.median(ours), statistics.median(reference)
        rows.append(f"| {name} | {ms:.1f} | {ref:.1f} | {ms / ref:.2f}× |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller tensors and fewer repeats (seconds)")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 15)
    device = get_device()
    print("\n".join(bench_apply_rope(args.quick, repeats, device)))
    print()
    print("\n".join(bench_redraws(repeats)))


if __name__ == "__main__":
    main()
