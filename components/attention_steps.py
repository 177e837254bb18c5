"""The "Step by step" view of the Attention tab: one layer and head of a trained model, line by line in
the order of the code, with every tensor's shape, stride, contiguity and storage as torch reports them.

``/attention_steps`` recomputes the layer on every control change (a forward pass and one attention
layer by hand, a few ms) and checks its output against the model's own.
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components.attention_heads import DEFAULT_PROMPT, fit_query, head_controls
from components.common import device_line, explain
from components.i18n import lang_of, t
from components.wiring import event, fit_then_draw


def attention_steps(model: str = "mha", prompt: str = DEFAULT_PROMPT, layer: int = 4, head: int = 2,
                    query: int = len(DEFAULT_PROMPT), request: gr.Request = None) -> dict:
    """The ``/attention_steps`` endpoint: the stages' table, the checks, the query token's numbers."""
    from models.attention_explore import attention_steps as steps
    from viz.attention import steps_check, steps_figure, steps_table

    lang = lang_of(request)
    trace = steps(model, prompt, layer, head, query)
    return {"table": steps_table(trace, lang), "check": steps_check(trace, lang),
            "numbers": steps_figure(trace, lang), "device": str(trace.timing)}


def build(shared: SimpleNamespace) -> dict:
    """Lay out the view inside the current ``gr.Tab``, wire it, return its draw event; ``shared`` holds the
    tab's model and prompt."""
    ui = SimpleNamespace(model=shared.model, prompt=shared.prompt)
    gr.Markdown(t("attn_steps_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            head_controls(ui, "attn_steps", layer=4, head=2, query=True)
        with gr.Column(scale=3):
            ui.check = gr.Markdown(elem_id="attn_steps_check")
            ui.numbers = gr.Plot(label=t("attn_steps_numbers"), elem_id="attn_steps_numbers")
    ui.table = gr.HTML(elem_id="attn_steps_table")                    # full width: nine columns
    ui.device = device_line()
    explain("attn_steps_explain")
    main = event(attention_steps, ui, ("table", "check", "numbers", "device"), show_progress="hidden")
    gr.on([ui.layer.input, ui.head.input, ui.query.input], api_name="attention_steps", trigger_mode="always_last",
          **main)
    return fit_then_draw(event(fit_query, ui, ("query",)), main)    # drawn from outside: the query slider fitted
