"""The Attention tab's views of a trained model: what one redraw costs the server, beside one forward pass.

    python bench/bench_attention_views.py [--quick] [--repeats 15] [--device cpu|cuda] [--threads 1]

For each view at its defaults (the MHA checkpoint, a 64-character prompt), the endpoint's handler plus
the JSON of its figures (what a request costs the server; the browser's drawing is not counted):

- *first draw*: the first call in a fresh process after the model is loaded, i.e. with the results a
  view keeps (the held-out head patterns, the held-out losses, the random-vector curve) still to
  compute;
- *redraw*: the median (and the slowest) of ``--repeats`` further calls at the same defaults.

The floor is one forward pass of the same model on the same 64 characters (``torch.no_grad``), plain
and with a ``Probe`` recording the attention probabilities. Target: every redraw ≤ 150 ms on one CPU
thread. One thread by default; the load average is printed, since other work on the machine slows
every row alike.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_MS = 150.0


def serialise(result: dict) -> int:
    """What Gradio sends: each figure's JSON (``to_json``), text as is; returns the bytes."""
    return sum(len(v.to_json()) if hasattr(v, "to_json") else len(str(v)) for v in result.values())


def time_ms(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1e3, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 redraws per view (seconds)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    os.environ["LLM_ANATOMY_DEVICE"] = args.device
    import torch
    torch.set_num_threads(args.threads)
    from components.attention_heads import DEFAULT_PROMPT, attention_heads
    from components.attention_next import attention_next
    from components.attention_scale import attention_scale
    from components.attention_steps import attention_steps
    from models.attention_explore.trained import probed_forward, trained_model
    from models.device import device_name, timed

    repeats = args.repeats or (3 if args.quick else 15)
    loaded = trained_model("mha")                                                  # loading is not a redraw
    model, device = loaded.model, loaded.model.head.weight.device
    ids = torch.tensor([loaded.vocab.encode(DEFAULT_PROMPT)], device=device)

    def forward():
        with torch.no_grad(), timed(device):
            model(ids)

    def forward_probe():
        with timed(device):
            probed_forward(model, ids[0])

    floors = {}
    for name, fn in (("forward", forward), ("forward + Probe", forward_probe)):
        fn()
        floors[name] = statistics.median(time_ms(fn)[0] for _ in range(max(5, repeats)))
    floor = floors["forward"]

    views = {"/attention_heads": attention_heads, "/attention_steps": attention_steps,
             "/attention_scale": attention_scale, "/attention_next": attention_next}
    rows = []
    for name, handler in views.items():
        first, out = time_ms(lambda: serialise(handler()))
        redraws = [time_ms(lambda: serialise(handler()))[0] for _ in range(repeats)]
        rows.append((name, first, statistics.median(redraws), max(redraws), out))

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"device: {device_name(device)}, torch threads: {torch.get_num_threads()}, redraws: {repeats}, "
          f"load average: {load:.1f} on {os.cpu_count()} cores")
    print(f"floor: one forward pass on {ids.shape[1]} characters {floors['forward']:.1f} ms, "
          f"with a Probe (attention probabilities) {floors['forward + Probe']:.1f} ms\n")
    print("| view | first draw ms | redraw ms (median) | slowest | × forward | bytes sent | ≤ 150 ms |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, first, median, worst, size in rows:
        ok = "yes" if median <= TARGET_MS else "NO"
        print(f"| {name} | {first:.0f} | {median:.1f} | {worst:.1f} | {median / floor:.1f} | {size:,} | {ok} |")


if __name__ == "__main__":
    main()
