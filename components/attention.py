"""The Attention tab: attention itself, one view per sub-tab.

Each view is its own module with a ``build(...) -> dict | None`` that lays out its widgets inside the
current ``gr.Tab``, wires its events and returns the event that draws it (or ``None``). A view of the
trained model gets the tab's one model and prompt (``build(shared)``), set above the views: a prompt
typed while reading the heads is the prompt the layer is stepped through on, and the next character
read from. The first view draws with the tab (the app calls the returned event when the tab is first
shown); every other view draws when its sub-tab is selected, the first time and whenever the model or
prompt changed while another view was shown (:func:`redraw_shown`). Adding a view is one line in ``SUBTABS``.
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components import attention_flash, attention_heads, attention_next, attention_scale, attention_steps
from components.attention_heads import model_and_prompt
from components.i18n import t
from components.share import show_event
from components.wiring import marked

# (sub-tab id, label key, module, whether it reads the trained model and prompt), in the order a learner
# meets them.
SUBTABS = [
    ("heads", "attn_sub_heads", attention_heads, True),
    ("steps", "attn_sub_steps", attention_steps, True),
    ("scale", "attn_sub_scale", attention_scale, True),
    ("next", "attn_sub_next", attention_next, True),
    ("flash", "attn_sub_flash", attention_flash, False),
]
# Links that set a view's own model or prompt (attn_steps_prompt=…) set the tab's (components.share).
MOVED_LINKS = {f"attn_{view}_{control}": ("attention", f"attn_{control}")
               for view in ("heads", "steps", "scale", "next") for control in ("model", "prompt")}


def build() -> dict | None:
    """Lay out the tab: its intro, the model and prompt, one sub-tab per view; return the first view's draw."""
    gr.Markdown(t("attn_intro"))
    shared = SimpleNamespace()
    with gr.Row(elem_id="attn_shared") as bar:
        model_and_prompt(shared)
    views = {}
    with gr.Tabs(elem_id="attn_views") as tabs:
        for view_id, label, module, reads_model in SUBTABS:
            with gr.Tab(t(label), id=view_id, elem_id=f"attn_sub_{view_id}") as tab:
                views[view_id] = (tab, (module.build(shared) if reads_model else module.build()) or {})
    # Wired outside the Tabs: a State made inside it showed every visited sub-tab's label a second time.
    # Selecting a view draws it unless it is drawn with the model and prompt shown (the first view is drawn
    # with the tab), pauses the others' Play, names it the view shown and shows the model and prompt only
    # where they are read. A view of the model keeps what it was drawn with, not a flag that the model and
    # prompt's event would clear: that event and a select run at once, and the select would read the flag first.
    reads = {view_id: reads_model for view_id, _, _, reads_model in SUBTABS}
    key = [shared.model, shared.prompt]
    first, *_ = views
    drawn = {view_id: gr.State(False) for view_id, (_, draw) in views.items() if draw}
    shown = gr.State(first)
    for view_id, (tab, draw) in views.items():
        pause = [timer for other, (_, each) in views.items() if other != view_id for timer in each.get("timers", ())]
        here = {view_id: draw} if draw else {}
        tab.select(**show_event(here, drawn, pause, selected=view_id, key=key if reads[view_id] else (),
                                also={shown: view_id, bar: gr.update(visible=reads[view_id])}),
                   show_progress="hidden", api_visibility="private")
    model_views = {view_id: draw for view_id, (_, draw) in views.items() if reads[view_id]}
    redraw = redraw_shown(model_views, drawn, shown, key)
    gr.on([shared.model.input, shared.prompt.submit, shared.prompt.blur], trigger_mode="always_last",
          show_progress="hidden", api_visibility="private", **redraw)
    timers = [timer for _, draw in views.values() for timer in draw.get("timers", ())]
    # The tab's first draw (a link's model and prompt, or the defaults) keeps what it drew the first view with.
    first_draw = marked(views[first][1], drawn[first], key)
    # What another tab may open this one on (components.links): the model and prompt, then the view shown
    # redrawn, or the first view if the one shown reads neither.
    opens = dict(model=shared.model, prompt=shared.prompt, redraw=redraw, shown=shown, views=tabs,
                 reading=list(model_views))
    return {**first_draw, "timers": timers, "opens": opens}


def redraw_shown(draws: dict[str, dict], drawn: dict[str, gr.State], shown: gr.State,
                 key: list[gr.components.Component]) -> dict:
    """The one event (``fn``, ``inputs``, ``outputs``) of a change to ``key``, what every view in ``draws``
    reads: the view ``shown`` redraws, if it was drawn with other values, and keeps the ones it is drawn
    with in ``drawn``; any other view draws when it is next selected (``show_event`` with the same ``key``).
    A view not shown is not drawn: one view's work for an edit, not four, and a learner may never open the
    others. The select's own event, with the view shown read from ``shown``; a refusal is an error.
    """
    return show_event(draws, drawn, opened=shown, key=key, refusal="error")
