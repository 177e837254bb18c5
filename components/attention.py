"""The Attention tab: attention itself, one view per sub-tab.

Each view is its own module with a ``build() -> dict | None`` that lays out its widgets inside the
current ``gr.Tab``, wires its events and returns the event that draws it (or ``None``). The first
view draws with the tab (the app calls the returned event when the tab is first shown); every
other view draws the first time its sub-tab is selected. Adding a view is one line in ``SUBTABS``.
"""
from __future__ import annotations

import gradio as gr

from components import attention_flash
from components.i18n import t
from components.share import draw_once

# (sub-tab id, label key, module), in the order a learner meets them.
SUBTABS = [
    ("flash", "attn_sub_flash", attention_flash),
]


def build() -> dict | None:
    """Lay out the tab: its intro and one sub-tab per view; return the first view's draw event."""
    gr.Markdown(t("attn_intro"))
    first = None
    with gr.Tabs(elem_id="attn_views"):
        for n, (view_id, label, module) in enumerate(SUBTABS):
            with gr.Tab(t(label), id=view_id, elem_id=f"attn_sub_{view_id}") as tab:
                draw = module.build()
            if n == 0:
                first = draw
            elif draw:
                drawn = gr.State(False)
                tab.select(draw_once(None, draw["fn"], len(draw["outputs"]), drawn),
                           [gr.State(None), drawn, *draw["inputs"]], [drawn, *draw["outputs"]],
                           show_progress="hidden", api_visibility="private")
    return first
