"""Twenty learners at once: p95 latency of the instant endpoints under load against idle.

    python bench/bench_load.py [--runs 3] [--duration 40] [--quick]

Starts ``python app.py``, measures each instant endpoint idle (one client), then lets twenty
simulated learners walk them for ``--duration`` seconds while the long runs (norms training, BPE
training, MoE training, a KV generation) keep going (:mod:`tests.load_harness`). Prints, per run,
the pooled p95 under load over the idle p95, raw and with idle floored at 50 ms (below it the ratio
measures scheduler jitter), and the worst endpoint. Goal: pooled ratio <= 3x.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.load_harness import measure, served_app  # noqa: E402

GOAL = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--quick", action="store_true", help="one run of 10 s")
    args = parser.parse_args()
    runs, duration = (1, 10.0) if args.quick else (args.runs, args.duration)
    print(f"{'run':>3} {'calls':>6} {'idle p95':>9} {'load p95':>9} {'raw':>6} {'floored':>8}  worst endpoint (floored)")
    with served_app() as url:
        for i in range(runs):
            run = measure(url, duration, seed=i)
            report = run.report()
            pooled = report["pooled"]
            worst = max((k for k in report if k.startswith("/")), key=lambda k: report[k]["ratio"])
            print(f"{i + 1:>3} {pooled['calls']:>6} {pooled['idle_p95_ms']:>7.1f}ms {pooled['load_p95_ms']:>7.1f}ms "
                  f"{pooled['raw_ratio']:>5.2f}x {pooled['ratio']:>7.2f}x  {worst} {report[worst]['ratio']:.2f}x"
                  f"{'' if not run.failures else f'  FAILED CALLS: {len(run.failures)}'}"
                  f"  {'goal met' if pooled['ratio'] <= GOAL else f'above the {GOAL:g}x goal'}")


if __name__ == "__main__":
    main()
