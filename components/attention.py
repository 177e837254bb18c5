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
from components.share import show_event

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
    views = {}
    with gr.Tabs(elem_id="attn_views"):
        for view_id, label, module in SUBTABS:
            with gr.Tab(t(label), id=view_id, elem_id=f"attn_sub_{view_id}") as tab:
                views[view_id] = (tab, module.build() or {})
    # Wired outside the Tabs: a State made inside it showed every visited sub-tab's label a second time.
    # Selecting a view draws it the first time (the first view draws with the tab) and pauses the others' Play.
    first, *later = views
    drawn = {view_id: gr.State(False) for view_id in later if views[view_id][1]}
    for view_id, (tab, draw) in views.items():
        pause = [timer for other, (_, each) in views.items() if other != view_id for timer in each.get("timers", ())]
        here = {view_id: draw} if view_id in drawn else {}
        if here or pause:
            tab.select(**show_event(here, drawn, pause, selected=view_id), show_progress="hidden",
                       api_visibility="private")
    timers = [timer for _, draw in views.values() for timer in draw.get("timers", ())]
    return {**views[first][1], "timers": timers} if views[first][1] else None
