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

F = TypeVar("F", bound=Callable)
log = logging.getLogger("llm_anatomy")

# Long work (training runs, generation, BPE on a large corpus) queues apart from the instant tabs:
# at most this many run at once across the app, and they never take an instant event's slot.
# Use as ``button.click(fn, ..., **HEAVY)``; instant events keep the app's default queue.
HEAVY = dict(concurrency_id="heavy", concurrency_limit=2)
BACKGROUND_NICE = 10     # how much lower the OS priority of long work is than the instant handlers'

T = TypeVar("T")

STRINGS = {
    "en": {
        "computed_on": "Computed on",
        "explain": "Explain",
        "error_internal": "Something went wrong on the server; the app is still running. Try other settings.",
    },
    "zh-CN": {
        "computed_on": "计算设备",
        "explain": "讲解",
        "error_internal": "服务器出错了，但应用仍在运行。请换一组设置再试。",
    },
}


def user_errors(fn: F) -> F:
    """Turn the backend's ``ValueError`` (a message for the learner) into ``gr.Error``.

    Any other exception is a bug: it is logged with its traceback on the server and the user sees
    a short message, never the traceback. Works for plain functions and generators.

    Text from the web is checked first: a lone UTF-16 surrogate (legal in a Python str, sendable as
    ``"\\ud800"`` in JSON) would otherwise break the JSON of every figure that shows it.
    """
    def check_text(args, kwargs) -> None:
        for value in (*args, *kwargs.values()):
            if isinstance(value, str):
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise gr.Error(f"the text has an invalid character at position {exc.start} "
                                   "(a lone UTF-16 surrogate, not a Unicode character): remove it",
                                   print_exception=False) from None

    def translate(exc: Exception) -> gr.Error:
        if isinstance(exc, gr.Error):
            return exc
        if isinstance(exc, ValueError):
            return gr.Error(str(exc), print_exception=False)
        log.exception("unexpected error in %s", fn.__name__)
        return gr.Error(f"{type(exc).__name__}: internal error. The server is still running.",
                        print_exception=False)

    if _is_generator(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            check_text(args, kwargs)
            try:
                yield from fn(*args, **kwargs)
            except Exception as exc:                                 # noqa: BLE001
                raise translate(exc) from None
        return gen_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        check_text(args, kwargs)
        try:
            return fn(*args, **kwargs)
        except Exception as exc:                                     # noqa: BLE001
            raise translate(exc) from None
    return wrapper  # type: ignore[return-value]


def _is_generator(fn: Callable) -> bool:
    import inspect
    return inspect.isgeneratorfunction(fn)


def device_line() -> gr.Textbox:
    """The "computed on cpu · 4.2 ms" line every tab shows under its figures."""
    return gr.Textbox(label=t("computed_on"), interactive=False, max_lines=1, elem_classes="device-line")


def explain(key: str, *, open: bool = False) -> gr.Accordion:
    """An "Explain" accordion holding the translated Markdown ``key`` (formulas in $…$)."""
    with gr.Accordion(t("explain"), open=open) as acc:
        gr.Markdown(t(key), latex_delimiters=[{"left": "$$", "right": "$$", "display": True},
                                              {"left": "$", "right": "$", "display": False}])
    return acc


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


def in_background(items: Iterator[T], *, nice: int = BACKGROUND_NICE) -> Iterator[T]:
    """Run the generator ``items`` in a thread of its own at a lower OS priority; yield its items here.

    Long work (a generation, a training run) shares the CPU with the instant tabs. On Linux its
    thread is niced, so under contention the scheduler serves the instant handlers first and the
    long work takes what is left; on an idle machine it runs at full speed. (Lowering one's own
    priority needs no privilege; elsewhere the thread simply runs at normal priority.) The worker
    runs at most two items ahead; closing this generator (Stop, a client gone) stops the worker there and
    closes ``items``. An exception in ``items`` is raised here.
    """
    box: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(message) -> bool:
        while not stop.is_set():
            try:
                box.put(message, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)   # this thread only (Linux)
        except (AttributeError, OSError):
            pass
        try:
            for item in items:
                if not put(("item", item)):
                    break
            else:
                put(("done", None))
        except BaseException as exc:                                 # noqa: BLE001 (re-raised below)
            put(("error", exc))
        finally:
            getattr(items, "close", lambda: None)()

    # The request's context goes along (ZeroGPU reads the Gradio request from a context variable).
    worker = threading.Thread(target=contextvars.copy_context().run, args=(work,), name="llm-anatomy-background",
                              daemon=True)
    worker.start()
    try:
        while True:
            kind, value = box.get()
            if kind == "done":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
