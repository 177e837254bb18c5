"""What every tab shares: the long-work queue, the device line, the Explain accordion."""
from __future__ import annotations

import gradio as gr

from components.i18n import t
from components.worker import low_priority  # noqa: F401 (the tabs run long work with it, on HEAVY)

# Long work (training runs, generation, BPE on a large corpus) queues apart from the instant tabs:
# at most this many run at once across the app, and they never take an instant event's slot.
# Use as ``button.click(fn, ..., **HEAVY)``; instant events keep the app's default queue.
HEAVY = dict(concurrency_id="heavy", concurrency_limit=2)


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
