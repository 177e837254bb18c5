"""What every tab shares: backend errors as ``gr.Error``, the device line, the Explain accordion."""
from __future__ import annotations

import logging
from typing import Callable, TypeVar

import gradio as gr

from components.i18n import t
from components.wiring import guarded
from components.worker import low_priority  # noqa: F401 (the tabs run long work with it, on HEAVY)

F = TypeVar("F", bound=Callable)
log = logging.getLogger("llm_anatomy")

# Long work (training runs, generation, BPE on a large corpus) queues apart from the instant tabs:
# at most this many run at once across the app, and they never take an instant event's slot.
# Use as ``button.click(fn, ..., **HEAVY)``; instant events keep the app's default queue.
HEAVY = dict(concurrency_id="heavy", concurrency_limit=2)


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
