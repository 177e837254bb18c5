"""Jobs for the tests of :mod:`components.worker`: module-level functions, so a worker process can
unpickle them by name (this module imports nothing heavy)."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path


def count_then_fail(n: int, error: Exception):
    """0, 1, ..., n - 1, then ``error``."""
    yield from range(n)
    raise error


def whoami(marker: str | None = None):
    """Endless: (pid, native thread id, niceness, scheduling policy, torch threads) of whoever runs it;
    writes "closed" to ``marker`` when it is closed (its cleanup ran)."""
    import torch
    policy = os.sched_getscheduler(0) if hasattr(os, "sched_getscheduler") else None
    try:
        while True:
            yield (os.getpid(), threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
                   policy, torch.get_num_threads())
            time.sleep(0.01)
    finally:
        if marker:
            Path(marker).write_text("closed")


def endless_pids():
    """Its pid, again and again."""
    while True:
        yield os.getpid()
        time.sleep(0.01)


def one_then_sleep(seconds: float):
    """Its pid, then a step that takes ``seconds`` without yielding."""
    yield os.getpid()
    time.sleep(seconds)
    yield "late"


def unpicklable():
    """An item that cannot cross to another process."""
    yield threading.Lock()


def import_and_yield(module: str):
    """Import ``module`` (by name) and yield its ``VALUE``."""
    import importlib
    yield importlib.import_module(module).VALUE


def context_value(var):
    """The value of the context variable ``var`` where the job runs."""
    yield var.get()
