"""The "Next token" view of the Attention tab: the next-character distribution through temperature,
top-k and top-p (the sampler the KV tab's generation uses), a continuation drawn with it, and the
logit lens: what the residual stream would predict after each layer.

``/attention_next`` redraws on every control: one forward pass, the filters, ``readout`` of every
layer's residual stream, and ``continue_chars`` cached decode steps.
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components.attention_heads import DEFAULT_PROMPT
from components.common import device_line, explain
from components.i18n import lang_of, t
from components.widgets import Number, Slider
from components.wiring import event
from models.limits import ATTN_MAX_CONTINUE, TEMPERATURE, TOP_P


def attention_next(model: str = "mha", prompt: str = DEFAULT_PROMPT, temperature: float = 1.0,
                   top_k: int | None = 10, top_p: float = 0.9, continue_chars: int = 16, seed: int = 0,
                   request: gr.Request = None) -> dict:
    """The ``/attention_next`` endpoint: the filtered distribution, the logit lens, a sampled continuation.
    ``top_k=None`` (an empty field) keeps every character; ``top_p=1`` keeps them all too."""
    from models.attention_explore import next_token
    from viz.attention import lens_figure, next_figure

    lang = lang_of(request)
    temperature = TEMPERATURE.number("temperature", temperature)          # the sliders' spans: the sampler
    top_p = TOP_P.number("sample_top_p", top_p)                            # takes more
    nt = next_token(model, prompt, temperature, top_k, top_p, continue_chars=continue_chars, seed=seed)
    return {"bars": next_figure(nt, lang), "lens": lens_figure(nt, lang),
            "continuation": prompt + nt.continuation, "device": str(nt.timing)}


def build(shared: SimpleNamespace) -> dict:
    """Lay out the view inside the current ``gr.Tab``, wire it, return its draw event; ``shared`` holds the
    tab's model and prompt."""
    ui = SimpleNamespace(model=shared.model, prompt=shared.prompt)
    gr.Markdown(t("attn_next_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            ui.temperature = Slider.over(TEMPERATURE, 1.0, label=t("attn_next_temperature"),
                                         elem_id="attn_next_temperature")
            ui.top_k = Number(10, precision=0, minimum=1, label=t("attn_next_top_k"), info=t("attn_next_top_k_info"),
                              elem_id="attn_next_top_k")
            ui.top_p = Slider.over(TOP_P, 0.9, label=t("attn_next_top_p"), info=t("attn_next_top_p_info"),
                                   elem_id="attn_next_top_p")
            ui.continue_chars = Slider(0, ATTN_MAX_CONTINUE, value=16, step=1, label=t("attn_next_continue"),
                                       elem_id="attn_next_continue")
            ui.seed = Number.seed(t("attn_next_seed"), "attn_next_seed")
        with gr.Column(scale=3):
            ui.bars = gr.Plot(label=t("attn_next_bars"), elem_id="attn_next_bars")
            ui.continuation = gr.Textbox(label=t("attn_next_continuation"), interactive=False, lines=3,
                                         elem_id="attn_next_continuation")
            ui.lens = gr.Plot(label=t("attn_next_lens"), elem_id="attn_next_lens")
            ui.device = device_line()
            explain("attn_next_explain")
    main = event(attention_next, ui, ("bars", "lens", "continuation", "device"), show_progress="hidden")
    gr.on([ui.temperature.input, ui.top_k.submit, ui.top_k.blur, ui.top_p.input, ui.continue_chars.input,
           ui.seed.submit, ui.seed.blur],
          api_name="attention_next", trigger_mode="always_last", **main)
    return main
