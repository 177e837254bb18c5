"""An idle server's CPU: LLM Anatomy vs the minimal one-button Gradio app, each served and left alone.

    python bench/bench_idle.py [--settle 20] [--window 10]

Each is started as ``python <file>`` (``bench/minimal_app.py``, ``app.py``), asked for its page, left
``--settle`` seconds (the app's warm-up imports its models after the first page), then its process's CPU
time (``/proc/<pid>/stat``, Linux) is read over ``--window`` seconds with nobody calling it. Gradio's queue
looks for events every 1 ms while it has none; ``app.QUEUE_POLL_S`` makes that 5 ms. Prints each one's
share of a core and the app's ratio to the minimal app's.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench_cold_start import ROOT, served


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")      # utime, stime


def idle_share(script: Path, settle: float, window: float) -> float:
    """The fraction of one core that the served ``script`` uses while nobody calls it."""
    with served(script) as (proc, _):
        time.sleep(settle)
        start_cpu, start = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(window)
        return (cpu_seconds(proc.pid) - start_cpu) / (time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=20.0)
    parser.add_argument("--window", type=float, default=10.0)
    args = parser.parse_args()
    minimal = idle_share(ROOT / "bench" / "minimal_app.py", args.settle, args.window)
    ours = idle_share(ROOT / "app.py", args.settle, args.window)
    print("| app | idle CPU, % of a core | ratio |")
    print("|---|---:|---:|")
    print(f"| minimal one-button app | {minimal * 100:.1f} | 1.00× |")
    print(f"| LLM Anatomy (app.py) | {ours * 100:.1f} | {ours / minimal:.2f}× |")


if __name__ == "__main__":
    main()
