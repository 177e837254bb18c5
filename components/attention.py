"""The Attention tab: attention itself, one view per sub-tab.

Each view is its own module with a ``build(...) -> dict | None`` that lays out its widgets inside the
current ``gr.Tab``, wires its events and returns the event that draws it (or ``None``). A view of the
trained model gets the tab's one model and prompt (``build(shared)``), set above the views: a prompt
typed while reading the heads is the prompt the layer is stepped through on, and the next character
read from. The first view draws with the tab (the app calls the returned event when the tab is first
shown); every other view draws when its sub-tab is selected, the first time and after the model or
prompt changed while another view was shown. Adding a view is one line in ``SUBTABS``.
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components import attention_flash, attention_heads, attention_next, attention_scale, attention_steps
from components.attention_heads import fit_query, model_and_prompt
from components.i18n import t
from components.share import call_draw, show_event
from components.wiring import by_component, event, fit_then_draw

# (sub-tab id, label key, module, whether it reads the trained model and prompt), in the order a learner
# meets them.
SUBTABS = [
    ("heads", "attn_sub_heads", attention_heads, True),
    ("steps", "attn_sub_steps", attention_steps, True),
    ("scale", "attn_sub_scale", attention_scale, True),
    ("next", "attn_sub_next", attention_next, True),
    ("flash", "attn_sub_flash", attention_flash, False),
]
# Each view had its own model and prompt: their links set the tab's (components.share).
MOVED_LINKS = {f"attn_{view}_{control}": ("attention", f"attn_{control}")
               for view in ("heads", "steps", "scale", "next") for control in ("model", "prompt")}


def build() -> dict | None:
    """Lay out the tab: its intro, the model and prompt, one sub-tab per view; return the first view's draw."""
    gr.Markdown(t("attn_intro"))
    shared = SimpleNamespace(queries=[])           # the views' query sliders, fitted to the prompt
    with gr.Row(elem_id="attn_shared") as bar:
        model_and_prompt(shared)
    views, reads = {}, {view_id: reads for view_id, _, _, reads in SUBTABS}
    with gr.Tabs(elem_id="attn_views"):
        for view_id, label, module, reads_model in SUBTABS:
            with gr.Tab(t(label), id=view_id, elem_id=f"attn_sub_{view_id}") as tab:
                views[view_id] = (tab, (module.build(shared) if reads_model else module.build()) or {})
    # Wired outside the Tabs: a State made inside it showed every visited sub-tab's label a second time.
    # Selecting a view draws it if it is not drawn (the first view is, with the tab), pauses the others' Play,
    # names it the view shown and shows the model and prompt only where they are read.
    first, *_ = views
    drawn = {view_id: gr.State(view_id == first) for view_id, (_, draw) in views.items() if draw}
    shown = gr.State(first)
    for view_id, (tab, draw) in views.items():
        pause = [timer for other, (_, each) in views.items() if other != view_id for timer in each.get("timers", ())]
        here = {view_id: draw} if draw else {}
        tab.select(**show_event(here, drawn, pause, selected=view_id,
                                also={shown: view_id, bar: gr.update(visible=reads[view_id])}),
                   show_progress="hidden", api_visibility="private")

    fits = [event(fit_query, {"prompt": shared.prompt, "query": query}, ("query",)) for query in shared.queries]
    model_views = {view_id: draw for view_id, (_, draw) in views.items() if reads[view_id]}
    gr.on([shared.model.input, shared.prompt.submit, shared.prompt.blur], trigger_mode="always_last",
          show_progress="hidden", api_visibility="private",
          **redraw_shown(model_views, {v: drawn[v] for v in model_views}, shown, fits))
    timers = [timer for _, draw in views.values() for timer in draw.get("timers", ())]
    first_draw = views[first][1]
    for fit in fits:
        first_draw = fit_then_draw(fit, first_draw)
    return {**first_draw, "timers": timers}


def redraw_shown(draws: dict[str, dict], drawn: dict[str, gr.State], shown: gr.State, fits: list[dict]) -> dict:
    """The one event (``fn``, ``inputs``, ``outputs``) of a change to what every view in ``draws`` reads: the
    ``fits`` first (sliders fitted to it, their values read by the draw), then the view ``shown`` redraws
    and every other one is marked not drawn, so that it redraws when selected. A view not shown is not
    drawn: four views' work for the one in sight, and a learner may never open the others.

    A draw refused by its checks (an empty prompt) refuses the whole event: the fits and marks with it, so
    the other views keep the figures of the last prompt they drew, as the view shown does.
    """
    inputs = list(dict.fromkeys(comp for each in [*fits, *draws.values()] for comp in each["inputs"]))
    outputs = list(dict.fromkeys([*drawn.values(), *(comp for each in [*fits, *draws.values()]
                                                     for comp in each["outputs"])]))
    at = {comp: i for i, comp in enumerate(inputs)}

    def run(request: gr.Request, view: str, *values) -> dict:          # Gradio fills a positional request only
        values, updates = list(values), {}
        for fit in fits:
            fitted = by_component(fit, call_draw(fit, [values[at[comp]] for comp in fit["inputs"]], request))
            for comp, update in fitted.items():
                if isinstance(update, dict) and "value" in update:
                    values[at[comp]] = update["value"]
            updates.update(fitted)
        if view in draws:
            draw = draws[view]
            updates.update(call_draw(draw, [values[at[comp]] for comp in draw["inputs"]], request))
        return {**updates, **{flag: view_id == view for view_id, flag in drawn.items()}}

    return dict(fn=run, inputs=[shown, *inputs], outputs=outputs)
