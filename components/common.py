"""What every tab shares: backend errors as ``gr.Error``, the device line, the Explain accordion."""
from __future__ import annotations

import contextvars
import functools
import logging
import os
import queue
import threading
from typing import Callable, Iterator, TypeVar

import gradio as gr

from components.i18n import t
from components.wiring import guarded

F = TypeVar("F", bound=Callable)
T = TypeVar("T")
log = logging.getLogger("llm_anatomy")

# Long work (training runs, generation, BPE on a large corpus) queues apart from the instant tabs:
# at most this many run at once across the app, and they never take an instant event's slot.
# Use as ``button.click(fn, ..., **HEAVY)``; instant events keep the app's default queue.
HEAVY = dict(concurrency_id="heavy", concurrency_limit=2)
LOW_PRIORITY_NICE = 10
# Held while the server imports modules in the background (``app.warm_up``) and around every fork
# (:func:`low_priority`): a child forked in the middle of an import would wait forever on that
# module's lock as soon as it imported the same module. Process-wide, like logging's lock.
IMPORT_FORK_LOCK = threading.Lock()


def user_errors(fn: F) -> F:
    """``fn`` as a Gradio handler whose errors reach the learner in the page's language
    (:func:`components.wiring.guarded`, for handlers not wired with :func:`components.wiring.event`)."""
    return guarded(fn)  # type: ignore[return-value]


def device_line(elem_id: str | None = None) -> gr.Textbox:
    """The "computed on cpu · 4.2 ms" line every tab shows under its figures."""
    return gr.Textbox(label=t("computed_on"), interactive=False, max_lines=1, elem_classes="device-line",
                      elem_id=elem_id)


# Formulas in Markdown: $$…$$ on their own line, $…$ inline.
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]


def explain(key: str, *, open: bool = False) -> gr.Accordion:
    """An "Explain" accordion holding the translated Markdown ``key`` (formulas in $…$)."""
    with gr.Accordion(t("explain"), open=open) as acc:
        gr.Markdown(t(key), latex_delimiters=LATEX)
    return acc


def enclosing_tabs() -> list[gr.Tabs]:
    """The ``gr.Tabs`` around the block being built, innermost first: selecting another tab in any of
    them hides the view, so a view's Play pauses on their ``select``."""
    from gradio.context import Context
    found, block = [], Context.block
    while block is not None:
        if isinstance(block, gr.Tabs):
            found.append(block)
        block = getattr(block, "parent", None)
    return found


def as_int(name: str, value, *, low: int, high: int) -> int:
    """A whole number from a UI field in ``[low, high]``, else ``ValueError`` naming the field.

    >>> as_int("heads", 2.0, low=1, high=8)
    2
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}") from None
    if number != number or not number.is_integer() or not low <= number <= high:
        raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return int(number)


def as_number(name: str, value) -> float:
    """A finite number from a UI field, else ``ValueError`` naming the field (ranges: the backend's).

    >>> as_number("GPU memory", "80")
    80.0
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return number


def low_priority(start: Callable[[], Iterator[T]], *, process: bool | None = None,
                 nice: int = LOW_PRIORITY_NICE) -> Iterator[T]:
    """Run the iterator that ``start()`` makes in its own worker at a lower CPU priority; yield what it
    yields, raise what it raises (a ``ValueError`` stays a ``ValueError``).

    Long work (a training run) then never slows the instant tabs. In the server's own process it
    would: its many small torch calls compete with every request for the GIL (measured: twenty
    learners' p95 rose 3-5x while a run trained in a thread, and not at all with it in a process).
    So the worker is a forked process (nothing to import, the models already loaded) at niceness
    ``nice``, one torch thread. ``process=None`` chooses: a process when the shared device is the CPU
    and fork exists, else a thread (CUDA must not be used across a fork, and ZeroGPU reads the
    request from a context variable, which the thread carries); a thread's niceness is its own on
    Linux. At most two items wait (the work pauses when the page falls behind); closing this
    iterator (Stop, a closed page) ends the worker.

    >>> list(low_priority(lambda: iter([1, 2, 3])))
    [1, 2, 3]
    """
    import multiprocessing

    if process is None:
        from models.device import get_device
        process = get_device().type == "cpu" and not os.environ.get("SPACES_ZERO_GPU")
    use_process = process and "fork" in multiprocessing.get_all_start_methods()
    if use_process:
        ctx = multiprocessing.get_context("fork")
        channel, stop = ctx.Queue(maxsize=2), ctx.Event()
        worker = ctx.Process(target=_work, args=(start, channel, stop, nice, os.getpid()), name="low-priority",
                             daemon=True)
    else:
        channel, stop = queue.Queue(maxsize=2), threading.Event()
        worker = threading.Thread(target=contextvars.copy_context().run,
                                  args=(_work, start, channel, stop, nice, None), name="low-priority", daemon=True)
    if use_process:
        with IMPORT_FORK_LOCK:
            worker.start()
    else:
        worker.start()
    try:
        while True:
            try:
                kind, value = channel.get(timeout=1.0)
            except queue.Empty:
                if not worker.is_alive():
                    raise RuntimeError("the background worker stopped without a result") from None
                continue
            if kind == "done":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        worker.join(timeout=2)                                       # it sees `stop` within 0.1 s, then cleans up
        if use_process and worker.is_alive():
            worker.terminate()
            worker.join(timeout=5)


def _work(start: Callable[[], Iterator], channel, stop, nice: int, parent: int | None) -> None:
    """The worker's side of :func:`low_priority`: lower its priority, run, send every item, then "done".
    ``parent``: the server's pid when this is a forked process (None in a thread)."""
    in_process = parent is not None
    if in_process:
        _end_with(parent)
    me = 0 if in_process else threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, me, nice)
    except (AttributeError, OSError):                                # not Linux/Unix, or not allowed
        pass
    if in_process:
        try:        # Linux: any request that wakes up takes the core at once, not after this one's slice
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):
            pass
        import torch
        torch.set_num_threads(1)                                     # the parent keeps the other cores

    def send(message) -> bool:
        while not stop.is_set() and (not in_process or os.getppid() == parent):
            try:
                channel.put(message, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    items = None
    try:
        items = start()
        for item in items:
            if not send(("item", item)):
                return
    except BaseException as exc:                                     # noqa: BLE001 (re-raised by the reader)
        try:
            import pickle
            pickle.dumps(exc)
        except Exception:                                            # noqa: BLE001
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        send(("error", exc))
        return
    finally:
        getattr(items, "close", lambda: None)()                      # a generator stopped early runs its cleanup
    send(("done", None))


def _end_with(parent: int) -> None:
    """Make this forked worker end when the server that started it ends, however it ends.

    A daemon child is ended by its parent's clean exit only: a server stopped by a signal (a Space
    restarting, ``docker stop``, a test's ``terminate()``) would leave it running for nobody. A
    watchdog thread checks twice a second. (Not ``PR_SET_PDEATHSIG``: it fires when the *thread*
    that forked ends, and the server's worker threads come and go while a run goes on.)
    """
    import time

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
