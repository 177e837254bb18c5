"""The "All heads" view of the Attention tab: every head of a trained model on a prompt, one enlarged,
and the patterns the heads learned, measured.

``/attention_heads`` redraws on every control (one forward pass with a probe, a few ms). The model
and prompt controls are built here and reused by the tab's other views (:func:`shared_controls`).
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain
from components.i18n import lang_of, t
from components.widgets import Radio, Slider
from components.wiring import event
from models.checks import choice, whole
from models.limits import ATTN_MAX_PROMPT, KV_N_HEADS, KV_N_LAYERS, KV_VARIANTS

DEFAULT_PROMPT = "She opened the door, and the kettle began to sing. The rain was "     # 64 characters
MODES = ("lines", "heatmap")


def shared_controls(ui: SimpleNamespace, prefix: str, *, layer: int | None = None, head: int = 1,
                    query: bool = False) -> None:
    """Add the controls the tab's views share to ``ui``: the model (the KV tab's four trained checkpoints),
    the prompt, and when asked a layer and head (``layer`` is the default) and a query token."""
    ui.model = Radio([(t(f"attn_view_model_{v}"), v) for v in KV_VARIANTS], value="mha", label=t("attn_view_model"),
                     elem_id=f"{prefix}_model")
    ui.prompt = gr.Textbox(DEFAULT_PROMPT, lines=2, label=t("attn_view_prompt"), info=t("attn_view_prompt_info"),
                           elem_id=f"{prefix}_prompt")
    if layer is not None:
        ui.layer = Slider(1, KV_N_LAYERS, value=layer, step=1, label=t("attn_view_layer"), elem_id=f"{prefix}_layer")
        ui.head = Slider(1, KV_N_HEADS, value=head, step=1, label=t("attn_view_head"), elem_id=f"{prefix}_head")
    if query:
        ui.query = Slider(1, ATTN_MAX_PROMPT, value=len(DEFAULT_PROMPT), step=1, label=t("attn_view_query_token"),
                          info=t("attn_view_query_info"), elem_id=f"{prefix}_query")


def _view(model: str, prompt: str, layer: int, head: int, query: int, mode: str):
    """The heads on the prompt and the checked choice of head and query (past the prompt: its last character)."""
    from models.attention_explore import look_at_heads

    choice("attn_view_mode", mode, MODES)
    view = look_at_heads(model, prompt)
    L, H, T, _ = view.probs.shape
    return (view, whole("attn_view_layer", layer, 1, L), whole("attn_view_head", head, 1, H),
            min(whole("attn_view_query", query, 1, ATTN_MAX_PROMPT), T))


def attention_heads(model: str = "mha", prompt: str = DEFAULT_PROMPT, layer: int = 4, head: int = 2,
                    query: int = len(DEFAULT_PROMPT), mode: str = "lines", request: gr.Request = None) -> dict:
    """The ``/attention_heads`` endpoint: all heads, the chosen one enlarged, the measured patterns."""
    from viz.attention import head_detail, heads_grid, patterns_figure, patterns_summary

    lang = lang_of(request)
    view, layer, head, i = _view(model, prompt, layer, head, query, mode)
    return {"grid": heads_grid(view, layer, head, lang), "detail": head_detail(view, layer, head, i, mode, lang),
            "patterns": patterns_figure(view, lang), "summary": patterns_summary(view.held_out, lang),
            "device": str(view.timing)}


def show_head(model: str = "mha", prompt: str = DEFAULT_PROMPT, layer: int = 4, head: int = 2,
              query: int = len(DEFAULT_PROMPT), mode: str = "lines", request: gr.Request = None) -> dict:
    """Only the enlarged head (a query token or the drawing mode changed): the 16 maps are not sent again."""
    from viz.attention import head_detail

    lang = lang_of(request)
    view, layer, head, i = _view(model, prompt, layer, head, query, mode)
    return {"detail": head_detail(view, layer, head, i, mode, lang)}


def build() -> dict:
    """Lay out the view inside the current ``gr.Tab``, wire it, return its draw event."""
    ui = SimpleNamespace()
    gr.Markdown(t("attn_heads_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            shared_controls(ui, "attn_heads", layer=4, head=2, query=True)
            ui.mode = Radio([(t(f"attn_heads_mode_{m}"), m) for m in MODES], value="lines",
                            label=t("attn_heads_mode"), elem_id="attn_heads_mode")
        with gr.Column(scale=3):
            ui.detail = gr.Plot(label=t("attn_heads_detail"), elem_id="attn_heads_detail")
            ui.grid = gr.Plot(label=t("attn_heads_grid"), elem_id="attn_heads_grid")
            ui.summary = gr.Markdown(elem_id="attn_heads_summary")
            ui.patterns = gr.Plot(label=t("attn_heads_patterns"), elem_id="attn_heads_patterns")
            ui.device = device_line()
            explain("attn_heads_explain")
    main = event(attention_heads, ui, ("grid", "detail", "patterns", "summary", "device"), show_progress="hidden")
    gr.on([ui.model.input, ui.prompt.submit, ui.prompt.blur, ui.layer.input, ui.head.input],
          api_name="attention_heads", trigger_mode="always_last", **main)
    gr.on([ui.query.input, ui.mode.input], trigger_mode="always_last", api_visibility="private",
          **event(show_head, ui, ("detail",), show_progress="hidden"))
    return main
