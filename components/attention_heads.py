"""The "All heads" view of the Attention tab: every head of a trained model on a prompt, one enlarged,
and the patterns the heads learned, measured.

``/attention_heads`` redraws on every control (one forward pass with a probe, a few ms). The model
and prompt are the tab's (built here, :func:`model_and_prompt`, once for every view); the layer, head and
query token are this view's own.
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain
from components.i18n import lang_of, t
from components.widgets import Radio, Slider, fit_slider
from components.wiring import event, fit_then_draw
from models.checks import choice, whole
from models.limits import ATTN_MAX_PROMPT, KV_N_HEADS, KV_N_LAYERS, KV_VARIANTS

DEFAULT_PROMPT = "She opened the door, and the kettle began to sing. The rain was "     # 64 characters
MODES = ("lines", "heatmap")


def model_and_prompt(ui: SimpleNamespace) -> None:
    """Add the controls every view of a trained model reads to ``ui``: the model (the KV tab's four trained
    checkpoints) and the prompt. The tab builds them once, above its views (``components.attention``)."""
    ui.model = Radio([(t(f"attn_view_model_{v}"), v) for v in KV_VARIANTS], value="mha", label=t("attn_view_model"),
                     elem_id="attn_model")
    ui.prompt = gr.Textbox(DEFAULT_PROMPT, lines=2, label=t("attn_view_prompt"), info=t("attn_view_prompt_info"),
                           elem_id="attn_prompt", scale=2)


def head_controls(ui: SimpleNamespace, prefix: str, *, layer: int, head: int = 1, query: bool = False) -> None:
    """Add a view's own choice of layer and head to ``ui`` (``layer``, ``head``: the defaults) and when asked
    a query token. Its slider is built to the longest prompt, the range the endpoints take (a query past
    the prompt's end reads its last character), and the view's draw ends it at the prompt's last character
    (:func:`fit_query`)."""
    ui.layer = Slider(1, KV_N_LAYERS, value=layer, step=1, label=t("attn_view_layer"), elem_id=f"{prefix}_layer")
    ui.head = Slider(1, KV_N_HEADS, value=head, step=1, label=t("attn_view_head"), elem_id=f"{prefix}_head")
    if query:
        ui.query = Slider(1, ATTN_MAX_PROMPT, value=len(DEFAULT_PROMPT), step=1,
                          label=t("attn_view_query_token"), elem_id=f"{prefix}_query")


def fit_query(prompt: str = DEFAULT_PROMPT, query: int = len(DEFAULT_PROMPT)) -> dict:
    """The update of a "Query token" slider: it ends at the prompt's last character (at most
    ``ATTN_MAX_PROMPT``), and a query past the end moves to it. A prompt that is not a text, or is empty,
    leaves the slider as it is: the draw names what is wrong with it.

    >>> fit_query("The kettle", 64)["query"]["value"], fit_query("The kettle", 3)["query"]["value"], fit_query("", 3)
    (10, 3, {})
    """
    if not isinstance(prompt, str) or not prompt:
        return {}
    return {"query": fit_slider("attn_view_query", query, min(len(prompt), ATTN_MAX_PROMPT))}


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


def build(shared: SimpleNamespace) -> dict:
    """Lay out the view inside the current ``gr.Tab``, wire it, return its draw event; ``shared`` holds the
    tab's model and prompt."""
    ui = SimpleNamespace(model=shared.model, prompt=shared.prompt)
    gr.Markdown(t("attn_heads_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            head_controls(ui, "attn_heads", layer=4, head=2, query=True)
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
    # The model and prompt redraw the view shown (components.attention): one event, not one per view.
    gr.on([ui.layer.input, ui.head.input], api_name="attention_heads", trigger_mode="always_last", **main)
    gr.on([ui.query.input, ui.mode.input], trigger_mode="always_last", api_visibility="private",
          **event(show_head, ui, ("detail",), show_progress="hidden"))
    # Drawn from outside (the tab, a new model or prompt): the query slider fitted to the prompt first.
    return fit_then_draw(event(fit_query, ui, ("query",)), main)
