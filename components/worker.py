"""Long work (a training run, a generation, BPE on a large corpus) in a worker of the lowest priority,
its results streamed back to the server as they come: :func:`low_priority`.

Why another process: a run's many small torch calls in the server's own process compete with every
request for the GIL (measured: twenty learners' p95 rose 3-5x while a run trained in a thread, and
not at all with it in a process). So on the CPU each job runs in its own process at niceness +10,
``SCHED_IDLE`` on Linux (any request that wakes up takes the core at once) and one torch thread.

How the process starts: a ``forkserver`` context (Python docs, ``multiprocessing``, "Contexts and
start methods"). The server never forks itself: a fork of a multi-threaded process copies locks
that other threads may hold (Python 3.12 warns, and 3.14 no longer forks by default). Instead one
single-threaded server of forks is started once, imports torch and the models (:data:`PRELOAD`:
the app's main module and the modules whose functions run as jobs), and forks a process per job
from that clean state. A job is a module-level function and its arguments, pickled; its items come
back pickled over a pipe, at most :data:`AHEAD` ahead of the reader (the work pauses when the page
falls behind).

Per-job processes rather than a pool of persistent workers (measured on 2 cores, time from the call
to the first item, ``bench/bench_worker.py``, load average ~3.8): a trivial job starts in 18 ms here
against 0.2 ms on a waiting worker, and the norms training's first point comes after 0.51 s against
0.39 s, while a run lasts seconds to minutes. In exchange every run starts from the same clean
process (no torch state, threads or memory left by the previous run), Stop and a crash end one
process and nothing else, and no worker waits idle holding memory. ``spawn`` would import torch for each job (seconds).

What holds, each with its test (``tests/test_worker.py``):
- items in order, then the job's own exception (a ``ValueError`` and
  :class:`models.checks.InputError` with its key cross the pipe intact);
- closing the iterator (Stop, a closed page) ends the job: at its next item, or it is terminated
  :data:`STOP_GRACE_S` later;
- a job whose reader has taken nothing for :data:`READER_GONE_S` ends, closed or not;
- a worker that dies (killed, out of memory) raises :class:`WorkerDied` in the server at once;
- a worker never outlives its server, however the server ends (it waits on its parent's sentinel);
- niceness +10, ``SCHED_IDLE`` (unless :data:`IDLE_POLICY` is off), one torch thread, in the worker only.

On CUDA (or ZeroGPU) the job runs in a thread instead: CUDA must not be used in a process forked
from one that holds a CUDA context, the GPU does the work anyway, and ZeroGPU reads the request
from a context variable, which the thread carries. A thread's niceness is its own on Linux.

Not handled: platforms without ``forkserver`` (Windows) run jobs in a thread.
"""
from __future__ import annotations

import contextvars
import importlib.util
import logging
import multiprocessing
import multiprocessing.connection
import os
import pkgutil
import queue
import signal
import threading
import time
import traceback
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")
_log = logging.getLogger(__name__)

NICE = 10                       # added to the server's niceness (at most 19)
# Linux: each job's process also takes SCHED_IDLE, running only on a core that nothing else wants. On a
# Space the others are the server's requests, and a job yields to every one at once. Beside other busy
# processes (a test suite's second worker and its browser) it can wait without end: beside two busy
# loops a 60-token KV generation had not ended after 95 s; niced only, it took 54 s (the forkserver's
# start among them), then 4.3 s. The tests set this False (tests/conftest.py).
IDLE_POLICY = True
AHEAD = 2                       # items a job may send before the reader takes one
STOP_GRACE_S = 0.3              # after Stop, a job that has not reached its next item is terminated
# A reader that has taken nothing for this long is gone: Gradio's queue takes each item as soon as the
# handler asks for it (it never waits for the page), so only a stream nobody will read again stalls
# here. Seen on a GPU machine: a cancelled event whose generator Gradio neither resumed nor closed
# left its job waiting to send, holding a thread and its GPU memory, for good.
READER_GONE_S = 30.0


def _modules(package: str) -> list[str]:
    """The modules of ``package``, found without importing them.

    >>> "models.norms" in _modules("models")
    True
    """
    spec = importlib.util.find_spec(package)
    return [f"{package}.{info.name}" for info in pkgutil.iter_modules(spec.submodule_search_locations)]


# Imported once by the server of forks, so that every job's process starts with them loaded: the
# app's packages (what jobs compute and draw with, and what the main module imports) and the main
# module itself. A child of the forkserver runs the main module again, as "__mp_main__", unless the
# forkserver loaded it (which Python 3.11 fails to do: CPython gh-126631), so ``app.py`` builds no UI
# under that name.
PRELOAD = ("__main__", *_modules("models"), *_modules("viz"), *_modules("components"))


class WorkerDied(RuntimeError):
    """The process running a job ended before sending its last result (killed, out of memory)."""


class RemoteTraceback(Exception):
    """Where in the worker a job's error was raised: the cause of that error in the server (as
    ``concurrent.futures`` shows the errors of its worker processes)."""

    def __str__(self) -> str:
        return self.args[0]


def low_priority(fn: Callable[..., Iterator[T]], /, *args, **kwargs) -> Iterator[T]:
    """Iterate over ``fn(*args, **kwargs)`` in a worker of low priority; yield what it yields, raise
    what it raises. ``fn`` is a module-level function (it is pickled by name), the arguments picklable.

    A process on the CPU, a thread on CUDA or ZeroGPU (see the module's docstring).

    >>> list(low_priority(iter, [1, 2, 3]))
    [1, 2, 3]
    """
    _check_job(fn)
    return (in_process if uses_processes() else in_thread)(fn, *args, **kwargs)


def running_jobs() -> list[str]:
    """The jobs whose worker is alive now, by name (``"models.stability.stability_sweep"``): processes on
    the CPU, threads on CUDA. What Stop and a job's end must empty (the tests wait on it).

    >>> all(name.count(".") >= 1 for name in running_jobs())     # module.function of each job
    True
    """
    return sorted([p.name for p in multiprocessing.active_children()]
                  + [t.name for t in threading.enumerate() if isinstance(t, _JobThread)])


def _job_name(fn: Callable) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


class _JobThread(threading.Thread):
    """A job's thread (CUDA, ZeroGPU), named after its job: told apart from the server's own threads."""


def uses_processes() -> bool:
    """Whether jobs run in processes: on the CPU, off ZeroGPU, where ``forkserver`` exists."""
    from models.device import get_device
    return (get_device().type == "cpu" and not os.environ.get("SPACES_ZERO_GPU")
            and "forkserver" in multiprocessing.get_all_start_methods())


def start_forkserver() -> None:
    """Start the server of forks now (it imports :data:`PRELOAD`: seconds of CPU) rather than at the first
    job; at the workers' priority, so its imports yield to requests. A no-op when it runs."""
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(PRELOAD))
    starter = threading.Thread(target=_start_forkserver, args=(_niceness(),), name="forkserver-start")
    starter.start()
    starter.join()


def await_forkserver() -> None:
    """Return once the server of forks has imported :data:`PRELOAD` and forks: one empty job's round trip.
    Its imports go on after :func:`start_forkserver` returns (measured on 2 cores: 3.1 s of its CPU
    after the app's warm-up had ended, the first job waiting on them), so what waits for the app to be
    ready (a learner's first run, a benchmark's idle figures) waits for this."""
    for _ in in_process(iter, ()):
        pass


def in_process(fn: Callable[..., Iterator[T]], /, *args, **kwargs) -> Iterator[T]:
    """:func:`low_priority` in a process forked by the forkserver."""
    _check_job(fn)
    start_forkserver()
    ctx = multiprocessing.get_context("forkserver")
    job = _job_name(fn)
    here, there = ctx.Pipe()
    worker = ctx.Process(target=_serve, args=(fn, args, kwargs, there, _niceness(), IDLE_POLICY, READER_GONE_S),
                         name=job, daemon=True)
    worker.start()
    there.close()                               # the worker holds the only other end: its exit is our EOF
    try:
        while True:
            try:
                kind, value = here.recv()
            except (EOFError, ConnectionResetError):   # its end closed with its exit (with credits unread)
                worker.join(timeout=1)
                raise WorkerDied(f"the worker running {job} ended ({_exit_reason(worker.exitcode)}) "
                                 f"before its last result") from None
            if kind == "item":
                try:
                    here.send_bytes(b"")        # one more item may come while this one is used
                except OSError:                 # it has just ended: the next recv says how
                    pass
                yield value
            elif kind == "error":
                error, text = value
                raise error from RemoteTraceback(text)
            else:
                return
    finally:
        here.close()                            # Stop: the worker's next send or wait fails and it ends
        worker.join(timeout=STOP_GRACE_S)
        if worker.exitcode is None:             # still inside a step: end it now
            worker.terminate()
            worker.join(timeout=5)
        if worker.exitcode is not None:
            worker.close()


def in_thread(fn: Callable[..., Iterator[T]], /, *args, **kwargs) -> Iterator[T]:
    """:func:`low_priority` in a thread of this process that carries the caller's context variables."""
    channel, stop = queue.Queue(maxsize=AHEAD), threading.Event()

    def send(message) -> bool:
        gone = time.monotonic() + READER_GONE_S
        while not stop.is_set():
            try:
                channel.put(message, timeout=0.1)
                return True
            except queue.Full:
                if time.monotonic() > gone:
                    _log.warning("%s: nothing read for %g s; the job ends", _job_name(fn), READER_GONE_S)
                    return False
        return False

    def work():
        _lower_priority(threading.get_native_id(), _niceness() + NICE)
        _produce(fn, args, kwargs, send)
    worker = _JobThread(target=contextvars.copy_context().run, args=(work,), name=_job_name(fn), daemon=True)
    worker.start()
    try:
        while True:
            try:
                kind, value = channel.get(timeout=1)
            except queue.Empty:
                if worker.is_alive():
                    continue
                raise WorkerDied(f"the thread running {_job_name(fn)} ended before its last result") from None
            if kind == "item":
                yield value
            elif kind == "error":
                raise value[0]                  # with its own traceback
            else:
                return
    finally:
        stop.set()
        worker.join(timeout=2)                  # it sees `stop` within 0.1 s of its next item


# --------------------------------------------------------------------------------------- the worker's side


def _serve(fn: Callable, args: tuple, kwargs: dict, conn, server_nice: int, idle: bool,
           reader_gone_s: float) -> None:
    """A job's process: lower its priority (``SCHED_IDLE`` too if ``idle``), end with the server, run the
    job, send its items (none once the server has taken nothing for ``reader_gone_s``)."""
    _lower_priority(0, server_nice + NICE)
    try:                                        # Linux: any request that wakes up takes the core at once
        if idle:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        pass
    _exit_with_server()
    import torch
    torch.set_num_threads(1)                    # the server keeps the other cores
    ahead = 0

    def send(message) -> bool:
        nonlocal ahead
        try:
            if ahead == AHEAD:
                if not conn.poll(reader_gone_s):
                    _log.warning("%s: nothing read for %g s; the job ends", _job_name(fn), reader_gone_s)
                    return False
                conn.recv_bytes()               # the server took an item
                ahead -= 1
            conn.send(message)                  # pickled here: an item that cannot be is this job's error
            ahead += 1
            return True
        except (EOFError, OSError):             # the server closed the pipe (Stop) or is gone
            return False
    _produce(fn, args, kwargs, send)


def _produce(fn: Callable, args: tuple, kwargs: dict, send: Callable[[tuple], bool]) -> None:
    """Run the job: ``send`` each item, then ``("done", None)`` or ``("error", (exception, its traceback as
    text))``; stop when ``send`` says nobody reads any more. A generator stopped early runs its cleanup."""
    items = None
    try:
        items = fn(*args, **kwargs)
        for item in items:
            if not send(("item", item)):
                return
    except Exception as exc:                    # noqa: BLE001 (raised again by the reader)
        text = traceback.format_exc()
        try:
            send(("error", (exc, text)))
        except Exception:                       # noqa: BLE001 (an exception that does not pickle)
            send(("error", (RuntimeError(f"{type(exc).__name__}: {exc}"), text)))
        return
    finally:
        getattr(items, "close", lambda: None)()
    send(("done", None))


def _exit_with_server() -> None:
    """End this process as soon as the server that started it ends, however it ends (a signal
    included: a daemon process is only ended by its parent's clean exit)."""
    sentinel = multiprocessing.parent_process().sentinel

    def watch():
        multiprocessing.connection.wait([sentinel])
        os._exit(0)
    threading.Thread(target=watch, name="exit-with-server", daemon=True).start()


def _start_forkserver(nice: int) -> None:
    import multiprocessing.forkserver
    _lower_priority(threading.get_native_id(), nice + NICE)    # inherited by the forkserver and its children
    multiprocessing.forkserver.ensure_running()


def _niceness() -> int:
    """The calling thread's niceness (per thread on Linux)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    except (AttributeError, OSError):
        return 0


def _lower_priority(who: int, nice: int) -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, who, min(19, nice))
    except (AttributeError, OSError):           # not Unix, or not allowed
        pass


def _check_job(fn: Callable) -> None:
    """A job is pickled by name: a lambda or a nested function would fail in the worker; say so here."""
    if "<" in getattr(fn, "__qualname__", "<"):
        raise TypeError(f"low_priority({getattr(fn, '__qualname__', fn)!r}, ...): pass a module-level function "
                        f"and its arguments (a job runs in another process), not a lambda or nested function")


def _exit_reason(code: int | None) -> str:
    """
    >>> _exit_reason(-9), _exit_reason(1)
    ('killed by SIGKILL', 'exit code 1')
    """
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exit code {code}"
