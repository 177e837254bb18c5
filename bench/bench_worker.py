"""Long work's start latency: the time from :func:`components.worker.low_priority` to the job's first
item, in a process set up as ``python app.py`` sets up the server (the app imported, ``warm_up`` run).

    python bench/bench_worker.py [--quick] [--repeats 15]

Rows, each the median (and range) over ``--repeats`` jobs, one at a time:
- a trivial job (``iter([1])``): what starting a job costs;
- the norms tab's training, default config: its first streamed point (building four models and one
  training step included);
- Stop inside a long step: from closing the stream to the job's process terminated and reaped
  (``STOP_GRACE_S`` plus the reap; no reference).
Each in a process forked by the forkserver for the job (what the app does on the CPU) against the
reference: a persistent worker started once from the same forkserver, which receives the job over a
pipe (the pool the app could keep instead). The ratio is per-job / persistent.
``--quick``: 3 repeats (seconds, for a smoke run).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def first_item_ms(start) -> float:
    """Milliseconds from ``start()`` to the first item of the stream it returns."""
    begin = time.perf_counter()
    stream = start()
    next(stream)
    elapsed = (time.perf_counter() - begin) * 1e3
    stream.close()
    return elapsed


def persistent(conn) -> None:
    """The reference worker: for each (fn, args) received, send the job's first item. Its priority is the
    jobs' (niceness from the forkserver, ``SCHED_IDLE``, one torch thread)."""
    import os

    import torch
    if hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    torch.set_num_threads(1)
    while True:
        fn, args = conn.recv()
        items = fn(*args)
        conn.send(next(items))
        getattr(items, "close", lambda: None)()


def on_persistent(conn, fn, *args):
    conn.send((fn, args))
    yield conn.recv()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats: runs in seconds")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats

    import multiprocessing

    import app
    from components import worker
    from models.norm_training import TrainConfig, train_steps

    begin = time.perf_counter()
    app.warm_up()
    list(worker.in_process(iter, [1]))                       # waits for the forkserver's imports
    print(f"warm-up, then the forkserver ready: {time.perf_counter() - begin:.1f} s")

    ctx = multiprocessing.get_context("forkserver")
    here, there = ctx.Pipe()
    reference = ctx.Process(target=persistent, args=(there,), daemon=True)
    reference.start()
    list(on_persistent(here, iter, [1]))                     # it is up

    jobs = {"trivial job": (iter, [1]), "norms training, first point": (train_steps, TrainConfig())}
    print(f"{'job':32s} {'per-job process (ms)':>26s} {'persistent worker (ms)':>26s} {'ratio':>7s}")
    for name, (fn, arg) in jobs.items():
        ours, ref = [], []
        for _ in range(repeats):                             # interleaved: both see the same load
            ours.append(first_item_ms(lambda: worker.low_priority(fn, arg)))
            ref.append(first_item_ms(lambda: on_persistent(here, fn, arg)))
        a, b = statistics.median(ours), statistics.median(ref)
        print(f"{name:32s} {a:9.1f} ({min(ours):7.1f}-{max(ours):7.1f}) {b:9.1f} ({min(ref):7.1f}-{max(ref):7.1f}) "
              f"{a / b:7.1f}")
    reference.terminate()

    from tests.jobs import one_then_sleep
    stops = []
    for _ in range(repeats):
        stream = worker.low_priority(one_then_sleep, 60)
        next(stream)
        time.sleep(0.2)                                      # inside the 60 s step
        begin = time.perf_counter()
        stream.close()                                       # returns once the process is reaped
        stops.append((time.perf_counter() - begin) * 1e3)
    print(f"{'Stop inside a step':32s} {statistics.median(stops):9.1f} ({min(stops):7.1f}-{max(stops):7.1f}) "
          f"(grace {worker.STOP_GRACE_S * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
