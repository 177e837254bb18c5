"""The "Why √d" view of the Attention tab: softmax entropy against d on random vectors, with and
without the scale, beside closed forms; then the trained model with its scale removed or multiplied.

``/attention_scale``: the random-vector curve (seeded, a few ms), two forward passes on the prompt and
the held-out loss at both scales (one batch of windows each; measured once per setting and kept).
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components.attention_heads import DEFAULT_PROMPT
from components.common import device_line, explain
from components.i18n import lang_of, t
from components.widgets import Number, Radio, Slider
from components.wiring import event, grouped
from models.checks import choice, flag
from models.limits import ATTN_KEYS, ATTN_MULTIPLIER, KV_N_HEADS, KV_N_LAYERS

SCALES = ("removed", "multiplied")


@grouped(random=dict(n_keys=64, seed=0),
         trained=dict(model="mha", prompt=DEFAULT_PROMPT, scale="removed", multiplier=4.0, layer=4, head=2,
                      full_text=False))
def attention_scale(random: dict, trained: dict, request: gr.Request = None) -> dict:
    """The ``/attention_scale`` endpoint (parameters: the random vectors', then the trained model's controls,
    by name): the entropy curve of random vectors and the trained model with its attention logits
    multiplied by √d (``scale="removed"``) or by ``multiplier``."""
    import math

    from models.attention_explore import entropy_curve, scale_effect, trained_model
    from viz.attention import entropy_figure, scale_figure

    lang = lang_of(request)
    scale, model = choice("attn_scale_scale", trained["scale"], SCALES), trained["model"]
    multiplier = ATTN_MULTIPLIER.number("attn_scale_multiplier", trained["multiplier"])   # even when unread
    curve = entropy_curve(random["n_keys"], seed=random["seed"])
    m = math.sqrt(trained_model(model).model.config.qk_dim) if scale == "removed" else multiplier
    effect = scale_effect(model, trained["prompt"], m, trained["layer"], trained["head"],
                          full_text=flag("attn_scale_full_text", trained["full_text"]))
    return {"curve": entropy_figure(curve, lang), "effect": scale_figure(effect, lang), "device": str(effect.timing)}


def build(shared: SimpleNamespace) -> dict:
    """Lay out the view inside the current ``gr.Tab``, wire it, return its draw event; ``shared`` holds the
    tab's model and prompt."""
    ui = SimpleNamespace(model=shared.model, prompt=shared.prompt)
    gr.Markdown(t("attn_scale_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            gr.Markdown(t("attn_scale_random_heading"))
            ui.n_keys = Slider.over(ATTN_KEYS, 64, label=t("attn_scale_keys"), elem_id="attn_scale_keys")
            ui.seed = Number.seed(t("attn_scale_seed"), "attn_scale_seed")
            gr.Markdown(t("attn_scale_model_heading"))
            ui.scale = Radio([(t(f"attn_scale_{s}"), s) for s in SCALES], value="removed",
                             label=t("attn_scale_scale"), elem_id="attn_scale_scale")
            ui.multiplier = Slider.over(ATTN_MULTIPLIER, 4.0, label=t("attn_scale_multiplier"),
                                        elem_id="attn_scale_multiplier")
            ui.layer = Slider(1, KV_N_LAYERS, value=4, step=1, label=t("attn_view_layer"), elem_id="attn_scale_layer")
            ui.head = Slider(1, KV_N_HEADS, value=2, step=1, label=t("attn_view_head"), elem_id="attn_scale_head")
            ui.full_text = gr.Checkbox(False, label=t("attn_scale_full_text"),
                                       info=t("attn_scale_full_text_info"), elem_id="attn_scale_full_text")
        with gr.Column(scale=3):
            ui.curve = gr.Plot(label=t("attn_scale_curve"), elem_id="attn_scale_curve")
            ui.effect = gr.Plot(label=t("attn_scale_effect"), elem_id="attn_scale_effect")
            ui.device = device_line()
            explain("attn_scale_explain")
    main = event(attention_scale, ui, ("curve", "effect", "device"), show_progress="hidden")
    gr.on([ui.n_keys.input, ui.seed.submit, ui.seed.blur, ui.scale.input, ui.multiplier.input, ui.layer.input,
           ui.head.input, ui.full_text.input],
          api_name="attention_scale", trigger_mode="always_last", **main)
    return main
