"""A class of twenty opens the Space at once: the harness shared by ``tests/test_load.py`` (what must
always hold) and ``bench/bench_load.py`` (how much slower the instant tabs answer under load).

Each simulated learner walks the instant endpoints in turn, pausing 1-3 s (``THINK``) as a person
moving a slider does, for ``duration`` seconds, while every long run of :data:`HEAVY` is kept going
(two at a time, the ``HEAVY`` queue's limit; the others wait their turn). Idle = one client,
nothing else running.

The server runs as ``python app.py`` in its own process; its long work runs in worker processes
(``components.common.low_priority``). The learners speak Gradio's HTTP API directly (what
gradio_client speaks), each with one HTTP client for all its calls as a browser keeps its
connection: gradio_client spends ~80 ms of CPU per call and a new HTTP client ~25 ms (its TLS
context), so twenty of them on a 2-core machine would measure the clients rather than the server.
Each long run is submitted by a gradio_client in a process of its own: reading a stream in this
process would take the learners' GIL.
"""
from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import httpx

from tests.conftest import ROOT, free_port, raw_call

CLIENTS = 20
IDLE_CALLS = 15
IDLE_FLOOR = 0.05                  # s: an endpoint faster than this idle counts as this (scheduler jitter)
THINK = (1.0, 3.0)                 # seconds between one learner's slider moves
# Instant endpoints and valid arguments: what a slider move sends.
INSTANT = {
    "/masks": lambda rng: ["the cat sat on the mat\nhi there", True, rng.choice(["left", "right"]),
                           rng.random() < 0.5, False, 2, False, 2, False, "allow",
                           rng.randint(1, 8), rng.randint(0, 100), 1, 1],
    "/norm_axes": lambda rng: [rng.randint(1, 4), rng.randint(2, 6), rng.randint(2, 8), rng.randint(0, 100), 1, 1, 2],
    "/rope": lambda rng: [128, rng.choice([10000, 500000]), rng.randint(0, 100), rng.choice(["half", "interleaved"]),
                          rng.randint(0, 63), rng.randint(0, 4096), rng.randint(0, 4096)],
    "/rope_relative": lambda rng: [128, rng.choice([10000, 500000]), rng.randint(0, 100),
                                   rng.choice(["rope", "sinusoidal"]), rng.randint(2, 96), 4096],
    "/rope_frequencies": lambda rng: [rng.choice([64, 128]), rng.choice([10000, 500000]), 4096, rng.randint(8, 256)],
    "/rope_extrapolation": lambda rng: [128, 500000, 8192, rng.choice([2, 4, 8, 16]), 1, 4, ["original", "pi", "ntk", "llama3"]],
    "/rope_conventions": lambda rng: [10000, rng.randint(0, 100), rng.choice([4, 8, 16, 32]), rng.randint(0, 64)],
    "/positions_compare": lambda rng: [10000, rng.randint(0, 100), rng.randint(8, 64), rng.choice([32, 64, 128]),
                                       rng.randint(1, 16)],
    "/bpe_step": lambda rng: [rng.randint(0, 200), "the cat 露营 🙂", " that"],
    "/bpe_encode": lambda rng: ["the cat sat on the mat, 露营 🙂", rng.randint(0, 200)],
    "/moe_route": lambda rng: ["text", "the cat sat on the mat , the dog sat on the log", 64, rng.randint(0, 100),
                               rng.choice([4, 8, 16]), rng.randint(1, 4), 32, 64, "swiglu", rng.random() < 0.5, 1.0,
                               rng.randint(0, 2), False, 1.0, 0.0],
    "/ffn_activations": lambda rng: [["relu", "gelu", "silu", "swiglu"], -rng.randint(1, 8), rng.randint(1, 8),
                                     rng.choice(["swiglu", "geglu"])],
    "/ffn_sizes": lambda rng: [rng.choice([768, 4096, 8192]), rng.choice([64, 256])],
    "/kv_plan": lambda rng: ["The door was open", rng.choice(["mha", "gqa", "mqa", "mla"]), 2,
                             rng.choice([16, 32, 64]), rng.randint(1, 400)],
    "/kv_scale": lambda rng: [rng.choice(["Llama-2-7B", "Llama-3-8B", "DeepSeek-V2"]), rng.choice([4096, 32768]),
                              rng.randint(1, 8), rng.choice(["bf16", "fp8"])],
}
# Instant endpoints that work on per-learner state (gr.State): the call that makes it, made once in
# each learner's session (and the idle session) before its first instant call.
SETUP = {
    "/bpe_step": ("/bpe_train", ["zh", "", 200, "gpt4", "first", "the cat 露营 🙂", " that", 1]),
    "/bpe_encode": ("/bpe_train", ["zh", "", 200, "gpt4", "first", "the cat 露营 🙂", " that", 1]),
}
# Long work kept running in the background for the whole run (submitted again as soon as it ends):
# endpoint -> arguments. Each runs in a process of its own: a gradio_client reading a stream of
# updates would otherwise take the learners' GIL.
HEAVY_CLIENT = ("import json, sys; from gradio_client import Client; "
                "c = Client(sys.argv[1], verbose=False, analytics_enabled=False)\n"
                "while True: c.predict(*json.loads(sys.argv[3]), api_name=sys.argv[2])")
HEAVY: dict[str, list] = {
    "/norm_train": [5e-3, 300, 100, "layernorm", 0],            # the tab's default run
    "/bpe_train": ["en", "", 5000, "none", "first", "the cat 露营", " that", 1],   # ~1-2 s of training
    "/moe_train": [8, 1, 0.05, 0.0, False, 1.25, 600, 0, True],    # the default run at the most steps, with its twin
    "/kv_generate": ["T", "mha", 4, 32, 511, 0, 0],
}


def p95(xs: list[float]) -> float:
    if not xs:
        return float("nan")
    return statistics.quantiles(xs, n=20, method="inclusive")[-1] if len(xs) > 1 else xs[0]


@contextmanager
def served_app(timeout: float = 120.0) -> Iterator[str]:
    """The app as ``python app.py`` runs it on a Space (``GRADIO_SSR_MODE=true``, as a Space sets it), in its
    own process (the clients must not share its GIL), once it has warmed up (``app.warm_up``: idle times
    measured during it would measure the imports)."""
    port = free_port()
    env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SSR_MODE="true")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)   # drains the pipe
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while not any(line.startswith("Warmed up") for line in lines):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the app did not warm up: {lines}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def set_up(server_url: str, session: str, client=None) -> None:
    """Make the state that instant endpoints of :data:`SETUP` work on, in ``session``."""
    for name, args in dict(SETUP.values()).items():
        event, payload = raw_call(server_url, name.lstrip("/"), args, session=session, final=True, client=client)
        if event != "complete":
            raise RuntimeError(f"setup {name}: {event} {payload[:200]}")


@dataclass
class LoadRun:
    """What one run measured: per instant endpoint, idle and loaded latencies (seconds)."""

    idle: dict[str, list[float]]
    loaded: dict[str, list[float]]
    failures: list[str] = field(default_factory=list)
    heavy_running: list[bool] = field(default_factory=list)   # each long run still going at the end

    def report(self) -> dict:
        """p95s in ms and their ratios, raw and with idle floored at :data:`IDLE_FLOOR`."""
        def row(idle: list[float], loaded: list[float]) -> dict:
            i, l = p95(idle), p95(loaded)
            return {"idle_p95_ms": round(i * 1e3, 1), "load_p95_ms": round(l * 1e3, 1), "calls": len(loaded),
                    "raw_ratio": round(l / i, 2), "ratio": round(l / max(i, IDLE_FLOOR), 2)}
        out = {name: row(self.idle[name], ts) for name, ts in self.loaded.items()}
        out["pooled"] = row([t for ts in self.idle.values() for t in ts], [t for ts in self.loaded.values() for t in ts])
        out["heavy_running_throughout"] = self.heavy_running
        return out


def measure(server_url: str, duration: float, *, clients: int = CLIENTS, seed: int = 0,
            idle_calls: int = IDLE_CALLS) -> LoadRun:
    """Idle latencies (one client, ``idle_calls`` per endpoint after one to warm it up), then ``clients``
    learners for ``duration`` s with the long work going."""
    rng = random.Random(seed)
    idle: dict[str, list[float]] = {}
    with httpx.Client() as client:
        set_up(server_url, "idle", client)
        for name, args in INSTANT.items():
            raw_call(server_url, name.lstrip("/"), args(rng), session="idle", client=client)     # warm up
            times = []
            for _ in range(idle_calls):
                start = time.perf_counter()
                event, payload = raw_call(server_url, name.lstrip("/"), args(rng), session="idle", client=client)
                if event != "complete":
                    raise RuntimeError(f"idle {name}: {event} {payload[:200]}")
                times.append(time.perf_counter() - start)
            idle[name] = times

    heavy_jobs = [subprocess.Popen([sys.executable, "-c", HEAVY_CLIENT, server_url, name, json.dumps(args)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for name, args in HEAVY.items()]
    run = LoadRun(idle, {name: [] for name in INSTANT})
    lock = threading.Lock()

    def learner(seed: int) -> None:
        with httpx.Client() as client:                                # one connection pool each, as a browser
            walk(seed, client)

    def walk(seed: int, client) -> None:
        local = random.Random(seed)
        session = f"learner-{seed}"
        set_up(server_url, session, client)
        time.sleep(local.uniform(0, 1))                               # they don't all click at once
        deadline = time.perf_counter() + duration
        names = list(INSTANT)
        turn = local.randrange(len(names))                            # each learner walks the endpoints in turn,
        while time.perf_counter() < deadline:                         # so every endpoint gets its share of calls
            name = names[turn % len(names)]
            turn += 1
            start = time.perf_counter()
            event, payload = raw_call(server_url, name.lstrip("/"), INSTANT[name](local), session=session,
                                      client=client)
            with lock:
                if event == "complete":
                    run.loaded[name].append(time.perf_counter() - start)
                else:
                    run.failures.append(f"{name}: {event} {payload[:200]}")
            time.sleep(local.uniform(*THINK))

    try:
        threads = [threading.Thread(target=learner, args=(seed * 1000 + i,)) for i in range(clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        run.heavy_running = [job.poll() is None for job in heavy_jobs]
    finally:
        for job in heavy_jobs:
            job.kill()
            job.wait(timeout=30)
    return run
