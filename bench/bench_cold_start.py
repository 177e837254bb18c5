"""Cold start: process start -> first page served, LLM Anatomy vs a minimal one-button Gradio app.

    python bench/bench_cold_start.py [--runs 5]

Both are started the same way (``python <file>`` with GRADIO_SERVER_PORT set), alternately, and
timed until ``GET /`` answers 200. Prints the median of each and their ratio (target <= 1.2).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(script: Path, timeout: float = 120.0) -> Iterator[tuple[subprocess.Popen, float]]:
    """``python <script>`` on a free port, until ``GET /`` answers 200: yields its process and the seconds
    that took; ends the process on exit."""
    port = free_port()
    env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1",
               GRADIO_ANALYTICS_ENABLED="False")
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.perf_counter() - start > timeout:
                    raise TimeoutError(f"{script} did not serve within {timeout} s") from None
                time.sleep(0.05)
        yield proc, time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def cold_start(script: Path) -> float:
    with served(script) as (_, seconds):
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    apps = {"minimal one-button app": ROOT / "bench" / "minimal_app.py", "LLM Anatomy (app.py)": ROOT / "app.py"}
    times = {name: [] for name in apps}
    cold_start(apps["minimal one-button app"])          # warm the OS file cache for both
    for _ in range(args.runs):
        for name, script in apps.items():
            times[name].append(cold_start(script))
    ref = statistics.median(times["minimal one-button app"])
    print(f"| app | median s ({args.runs} runs) | min s | ratio |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.2f} | {min(ts):.2f} | {statistics.median(ts) / ref:.2f}× |")


if __name__ == "__main__":
    main()
