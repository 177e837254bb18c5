"""The Tensors tab against its time targets, server side: layout redraws (goal ≤ 50 ms), the CPU matmul
sweep (goal ≤ 10 s) and the MFU run at its defaults (goal ≤ 15 s).

    python bench/bench_tensors.py [--runs 5] [--quick]

Layout: the ``/tensor_layout`` handler plus the JSON of both figures (what Gradio sends), median of
``--runs`` after a warm-up, for each preset and for the largest input (16 × 16, twelve operations, copies
and stride-0 views included). Sweep and MFU: the streaming handlers as the app runs them (their work in
the low-priority worker, one torch thread), wall time to the last update, after the models are imported
(the app's warm-up does that before the first visitor).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LAYOUT_GOAL_MS, SWEEP_GOAL_S, MFU_GOAL_S = 50.0, 10.0, 15.0
LARGEST = ("16, 16", "transpose(0, 1)\n[::2]\ncontiguous()\nview(-1)\nunsqueeze(0)\nexpand(2, 128)\n"
                     "reshape(2, 4, 32)\npermute(2, 0, 1)\nflatten()\n[1:]\nclone()\nview(1, 255)")


def layout_ms(shape: str, ops: str, runs: int) -> float:
    from components.tensors import tensor_layout

    def once():
        out = tensor_layout(shape, ops)
        out["memory"].to_json()
        out["view"].to_json()
    once()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        once()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def last_update_s(updates) -> tuple[float, dict]:
    start = time.perf_counter()
    last = None
    for last in updates:
        pass
    return time.perf_counter() - start, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="layout only, 3 runs, and the sweep in fp32 only")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    import models.compute  # noqa: F401  (the app's warm-up imports every model)
    from components.tensors import compute_matmul, compute_mfu
    from models.tensor_presets import PRESETS

    print("| what | measured | goal |\n|---|---:|---:|")
    for name, (shape, ops) in [*PRESETS.items(), ("largest: 16×16, 12 ops", LARGEST)]:
        ms = layout_ms(shape, ops, runs)
        print(f"| layout redraw, {name} | {ms:.1f} ms | ≤ {LAYOUT_GOAL_MS:.0f} ms{'' if ms <= LAYOUT_GOAL_MS else ' ✗'} |")
    dtypes = ["fp32"] if args.quick else ["fp32", "bf16", "fp16"]
    seconds, out = last_update_s(compute_matmul("square", dtypes))
    print(f"| matmul sweep, square, {'+'.join(dtypes)} | {seconds:.1f} s ({out['compute_device']}) | "
          f"≤ {SWEEP_GOAL_S:.0f} s{'' if seconds <= SWEEP_GOAL_S else ' ✗'} |")
    if args.quick:
        return
    seconds, out = last_update_s(compute_mfu())
    mfu = out["mfu_summary"].split("**MFU ")[1].split("**")[0]
    print(f"| MFU run at the defaults | {seconds:.1f} s (MFU {mfu}; {out['mfu_device']}) | "
          f"≤ {MFU_GOAL_S:.0f} s{'' if seconds <= MFU_GOAL_S else ' ✗'} |")


if __name__ == "__main__":
    main()
