"""The Attention tab: attention itself, one view per sub-tab.

Each view is its own module with a ``build() -> dict | None`` that lays out its widgets inside the
current ``gr.Tab``, wires its events and returns the event that draws it (or ``None``). The first
view draws with the tab (the app calls the returned event when the tab is first shown); every
other view draws the first time its sub-tab is selected. Adding a view is one line in ``SUBTABS``.
"""
from __future__ import annotations

import gradio as gr

from components import attention_flash, attention_heads, attention_next, attention_scale, attention_steps
from components.i18n import t
from components.share import draw_once

# (sub-tab id, label key, module), in the order a learner meets them.
SUBTABS = [
    ("heads", "attn_sub_heads", attention_heads),
    ("steps", "attn_sub_steps", attention_steps),
    ("scale", "attn_sub_scale", attention_scale),
    ("next", "attn_sub_next", attention_next),
    ("flash", "attn_sub_flash", attention_flash),
]


def build() -> dict | None:
    """Lay out the tab: its intro and one sub-tab per view; return the first view's draw event."""
    gr.Markdown(t("attn_intro"))
    views = []
    with gr.Tabs(elem_id="attn_views"):
        for view_id, label, module in SUBTABS:
            with gr.Tab(t(label), id=view_id, elem_id=f"attn_sub_{view_id}") as tab:
                views.append((tab, module.build()))
    # Wired outside the Tabs: a State made inside it showed every visited sub-tab's label a second time.
    for tab, draw in views[1:]:
        if draw:
            drawn = gr.State(False)
            tab.select(draw_once(None, draw["fn"], len(draw["outputs"]), drawn),
                       [gr.State(None), drawn, *draw["inputs"]], [drawn, *draw["outputs"]],
                       show_progress="hidden", api_visibility="private")
    return views[0][1]
