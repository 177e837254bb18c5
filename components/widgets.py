"""Input widgets whose values are checked by the handler, in the learner's language.

Gradio checks a slider's range, a number's bounds and a radio's choices itself, before the handler
runs, and answers in English with a 14-line traceback in the server's log for every bad API call.
These subclasses hand the value over unchecked (rounded as Gradio would, when it is a finite
number); the handler checks every input with :mod:`models.checks` and says what was wrong in the
language of the page. Their class names are Gradio's, so the browser draws the same widgets.
"""
from __future__ import annotations

import math
from typing import Any

import gradio as gr


def _rounded(payload: Any, precision: int | None) -> Any:
    if isinstance(payload, bool) or not isinstance(payload, (int, float)) or not math.isfinite(payload):
        return payload
    return gr.Number.round_to_precision(payload, precision)


class Slider(gr.Slider):
    """``gr.Slider`` without the server-side range check (the handler's :func:`models.checks.whole` does it)."""

    def preprocess(self, payload: Any) -> Any:
        return _rounded(payload, self.precision)


class Number(gr.Number):
    """``gr.Number`` without the server-side bounds check."""

    def preprocess(self, payload: Any) -> Any:
        return None if payload is None else _rounded(payload, self.precision)


class Radio(gr.Radio):
    """``gr.Radio`` that hands a value outside its choices to the handler (which names the choices)."""

    def preprocess(self, payload: Any) -> Any:
        values = [value for _, value in self.choices]
        if payload in values and self.type == "index":
            return values.index(payload)
        return payload


class Dropdown(gr.Dropdown):
    """``gr.Dropdown`` that hands values outside its choices to the handler."""

    def preprocess(self, payload: Any) -> Any:
        values = [value for _, value in self.choices]
        if self.type == "index":
            if isinstance(payload, list):
                return [values.index(v) if v in values else None for v in payload]
            return values.index(payload) if payload in values else None
        return payload


class CheckboxGroup(gr.CheckboxGroup):
    """``gr.CheckboxGroup`` that hands values outside its choices to the handler."""

    def preprocess(self, payload: Any) -> Any:
        values = [value for _, value in self.choices]
        if self.type == "index" and isinstance(payload, list):
            return [values.index(v) for v in payload if v in values]
        return payload
