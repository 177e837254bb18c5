"""Every instant endpoint at its defaults, against a trivial endpoint: through gradio_client and server side.

    python bench/bench_endpoints.py [--calls 10] [--quick]

Serves ``python app.py`` (once it has warmed up) and ``bench/minimal_app.py`` beside it, and calls each
named endpoint of the app's default queue with no arguments (its defaults) ``--calls`` times through
``gradio_client`` after one warm-up call, then the minimal app's ``/trivial`` the same way: the median
round trip of each and its ratio to ``/trivial``'s (goal ≤ 1.5×). Server side: the handler with the
widgets' initial values and the outputs' ``postprocess`` (what Gradio serialises), timed in this
process, one torch thread (goal ≤ 100 ms). Long work (the heavy queue) is not an instant view.
"""
from __future__ import annotations

import argparse
import inspect
import os
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.load_harness import served_app  # noqa: E402

RATIO_GOAL = 1.5
SERVER_GOAL_MS = 100.0


def instant_endpoints():
    """``(api_name, fn)`` of every public named event on the default queue, in the app's order."""
    import app
    for fn in app.demo.fns.values():
        if fn.api_name and fn.concurrency_id != "heavy" and fn.api_visibility == "public":
            yield fn.api_name, fn


def server_ms(fn, calls: int) -> float:
    """Median ms of the handler on the inputs' initial values (a stream: to its last update), plus the
    outputs' ``postprocess`` (what Gradio serialises)."""
    values = [getattr(block, "value", None) for block in fn.inputs]

    def once():
        out = fn.fn(*values)
        if inspect.isgenerator(out):
            updates = list(out)                                # a stream: its last update counts
            out = updates[-1] if updates else {}
        outs = out if isinstance(out, (tuple, list)) else [out]
        pairs = out.items() if isinstance(out, dict) else zip(fn.outputs, outs)
        for block, value in pairs:
            if hasattr(block, "postprocess") and not (isinstance(value, dict) and "__type__" in value):
                block.postprocess(value)
    once()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        once()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def client_ms(client, api_name: str, calls: int) -> float:
    client.predict(api_name=f"/{api_name}")
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        client.predict(api_name=f"/{api_name}")
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def http_ms(url: str, client, api_name: str, calls: int) -> float:
    """The same call over Gradio's HTTP API read as it streams (``tests.conftest.raw_call``), in one
    session as a browser tab makes them: no ``gradio_client`` in between, whose reader polls its message
    queue every 50 ms and so rounds each round trip up to the next of its ticks. (Without a session
    every call would build a new one: Gradio then copies every block's config, ~60 ms for this app.)"""
    from tests.conftest import raw_call
    defaults = [p.get("parameter_default") for p in client.view_api(print_info=False, return_format="dict")
                ["named_endpoints"][f"/{api_name}"]["parameters"]]
    session = uuid.uuid4().hex
    with httpx.Client() as http:
        raw_call(url, api_name, defaults, client=http, session=session, final=True)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            event, payload = raw_call(url, api_name, defaults, client=http, session=session, final=True)
            times.append((time.perf_counter() - start) * 1e3)
            if event != "complete":
                raise RuntimeError(f"{event}: {payload[:80]}")
    return statistics.median(times)


def minimal_url() -> tuple[subprocess.Popen, str]:
    from tests.conftest import free_port
    port = free_port()
    env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "minimal_app.py")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(600):
        try:
            urllib.request.urlopen(url, timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("the minimal app did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 calls each")
    args = parser.parse_args()
    calls = 3 if args.quick else args.calls
    import torch
    from gradio_client import Client
    torch.set_num_threads(1)
    endpoints = list(instant_endpoints())
    proc, url = minimal_url()
    try:
        with served_app() as app_url:
            minimal = Client(url, verbose=False, analytics_enabled=False)
            client = Client(app_url, verbose=False, analytics_enabled=False)
            trivial = client_ms(minimal, "trivial", calls)
            trivial_http = http_ms(url, minimal, "trivial", calls)
            print(f"trivial endpoint (minimal app), median of {calls}: gradio_client {trivial:.1f} ms, "
                  f"HTTP {trivial_http:.1f} ms")
            print("| endpoint | gradio_client ms | ratio | HTTP ms | ratio | server ms |")
            print("|---|---:|---:|---:|---:|---:|")
            for name, fn in endpoints:
                try:
                    rt = client_ms(client, name, calls)
                    raw = http_ms(app_url, client, name, calls)
                    srv = server_ms(fn, calls)
                except Exception as exc:                              # noqa: BLE001 (reported, not hidden)
                    print(f"| /{name} | failed at its defaults: {type(exc).__name__}: {str(exc)[:80]} | | | | |")
                    continue
                flags = ("" if rt / trivial <= RATIO_GOAL else " ✗ratio") + ("" if srv <= SERVER_GOAL_MS else " ✗server")
                print(f"| /{name} | {rt:.1f} | {rt / trivial:.2f}× | {raw:.1f} | {raw / trivial_http:.2f}× | "
                      f"{srv:.1f} |{flags}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
