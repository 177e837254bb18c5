"""The Attention Masks tab: compose padding, causal, window, prefix-LM and document masks."""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain
from components.i18n import lang_of, t
from components.share import CUSTOM
from components.widgets import Number, Radio, Slider, fit_sliders
from components.wiring import event, fit_then_draw, grouped
from models.checks import Span, choice, flag, whole
from models.limits import MASKS_MAX_HEADS as MAX_HEADS
from models.limits import MASKS_MAX_SEQUENCES as MAX_SEQUENCES
from models.limits import MASKS_MAX_TOKENS as MAX_TOKENS
from models.limits import SEED

DEFAULT_TEXT = "the cat sat on the mat\n天气 晴朗 适合 露营\nhi there"
RULES = ("padding", "causal", "use_window", "use_prefix", "packed")
# preset -> the rule checkboxes it sets
PRESETS = {
    "encoder": dict(padding=True, causal=False, use_window=False, use_prefix=False, packed=False),
    "decoder": dict(padding=True, causal=True, use_window=False, use_prefix=False, packed=False),
    "prefix": dict(padding=True, causal=False, use_window=False, use_prefix=True, packed=False),
}
CONVENTIONS = ("allow", "masked")
SIDES = ("right", "left")
# What each bounded control offers; its widget is built from the span and its endpoint checks with it.
# The sequence and head shown are bounded by the text and the heads slider instead (fit_sliders).
HEADS = Span(1, MAX_HEADS)
RULE_SIZE = Span(1, MAX_TOKENS)                      # the window, the prefix


@grouped(batch=dict(text=DEFAULT_TEXT, padding=True, padding_side="right"),
         rules=dict(causal=True, use_window=False, window=3, use_prefix=False, prefix=2, packed=False),
         view=dict(convention="allow", heads=2, seed=0, seq=1, head=1))
def compute_masks(batch: dict, rules: dict, view: dict, request: gr.Request = None) -> dict:
    """The ``/masks`` endpoint (parameters: the batch's, the rules', the view's controls, by name): the mask
    panels, how the rules combine, the NaN trap, the device line."""
    from models.masks import MaskSpec, explore_masks
    from viz.masks import composition_figure, mask_panels, nan_trap_figure

    lang = lang_of(request)
    n_heads = HEADS.whole("masks_heads", view["heads"])
    convention = choice("masks_convention", view["convention"], CONVENTIONS)
    window = RULE_SIZE.whole("masks_window", rules["window"])            # checked even when its rule is off
    prefix = RULE_SIZE.whole("masks_prefix", rules["prefix"])
    spec = MaskSpec(
        padding=flag("masks_padding", batch["padding"]), causal=flag("masks_causal", rules["causal"]),
        packed=flag("masks_packed", rules["packed"]),
        padding_side=batch["padding_side"],
        window=window if flag("masks_use_window", rules["use_window"]) else None,
        prefix_len=prefix if flag("masks_use_prefix", rules["use_prefix"]) else None)
    ex = explore_masks(batch["text"], spec, n_heads=n_heads, seed=SEED.whole("seed", view["seed"]))
    b = whole("masks_sequence", view["seq"], 1, len(ex.labels)) - 1
    h = whole("masks_head", view["head"], 1, n_heads) - 1
    labels, mask = ex.labels[b], ex.mask[b].tolist()
    parts = {name: part[b].tolist() for name, part in ex.parts.items()}
    return {
        "panels": mask_panels(labels, mask, ex.weights[b, h].tolist(), convention, lang),
        "composition": composition_figure(labels, parts, mask, convention, lang),
        "trap": nan_trap_figure(labels, ex.naive_weights[b, h].tolist(), ex.weights[b, h].tolist(),
                                ex.empty_rows[b].tolist(), lang),
        "device": str(ex.timing),
    }


def fit_views(text: str = DEFAULT_TEXT, heads: int = 2, seq: int = 1, head: int = 1) -> dict:
    """The "Show sequence" and "Show head" sliders end at the batch's sequences and heads; a value past
    the new end moves to it, and a slider with one choice is hidden (a Gradio slider's ends must differ).
    A slider is left as it is while what sets its end is not valid: the draw names the error."""
    from models.masks import parse_batch

    return fit_sliders(seq=("masks_sequence", seq, lambda: len(parse_batch(text).tokens)),
                       head=("masks_head", head, lambda: whole("masks_heads", heads, 1, MAX_HEADS)))


def set_preset(preset: str = "decoder") -> dict:
    """Tick the rule boxes of a preset; "custom" leaves them as they are."""
    return PRESETS.get(preset, {})


def causal_box(use_prefix: bool = False) -> gr.Checkbox:
    """The causal box does nothing under prefix-LM (its mask is causal after the prefix): greyed, saying so."""
    on = flag("masks_use_prefix", use_prefix)
    return gr.Checkbox(interactive=not on, info=t("masks_causal_in_prefix") if on else None)


def build() -> dict:
    """Lay out the tab inside the current ``gr.Tab``, wire its events, return the first-draw event."""
    ui = SimpleNamespace()
    gr.Markdown(t("masks_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            ui.preset = Radio([(t(f"masks_preset_{p}"), p) for p in (*PRESETS, CUSTOM)], value="decoder",
                              label=t("masks_preset"), elem_id="masks_preset")
            ui.text = gr.Textbox(DEFAULT_TEXT, lines=4, max_lines=MAX_SEQUENCES, label=t("masks_text"),
                                 elem_id="masks_text", max_length=MAX_SEQUENCES * MAX_TOKENS * 40)
            with gr.Row():
                ui.padding = gr.Checkbox(True, label=t("masks_padding"), elem_id="masks_padding")
                ui.padding_side = Radio([(t(f"masks_side_{s}"), s) for s in SIDES], value="right",
                                        label=t("masks_padding_side"), elem_id="masks_side")
            ui.causal = gr.Checkbox(True, label=t("masks_causal"), elem_id="masks_causal")
            ui.use_window = gr.Checkbox(False, label=t("masks_use_window"), elem_id="masks_use_window")
            ui.window = Slider.over(RULE_SIZE, 3, label=t("masks_window"), elem_id="masks_window")
            ui.use_prefix = gr.Checkbox(False, label=t("masks_use_prefix"), elem_id="masks_use_prefix")
            ui.prefix = Slider.over(RULE_SIZE, 2, label=t("masks_prefix"), elem_id="masks_prefix")
            ui.packed = gr.Checkbox(False, label=t("masks_packed"), elem_id="masks_packed")
            ui.convention = Radio([(t(f"masks_conv_{c}"), c) for c in CONVENTIONS], value="allow",
                                  label=t("masks_convention"), elem_id="masks_convention")
            with gr.Row():
                ui.heads = Slider.over(HEADS, 2, label=t("masks_heads"), elem_id="masks_heads")
                ui.seed = Number.seed(t("masks_seed"), "masks_seed")
            with gr.Row():
                ui.seq = Slider(1, MAX_SEQUENCES, value=1, step=1, label=t("masks_seq"), elem_id="masks_seq")
                ui.head = Slider(1, MAX_HEADS, value=1, step=1, label=t("masks_head"), elem_id="masks_head")
        with gr.Column(scale=3):
            ui.panels = gr.Plot(label=t("masks_panels"), elem_id="masks_panels")
            ui.composition = gr.Plot(label=t("masks_composition"), elem_id="masks_composition")
            ui.trap = gr.Plot(label=t("masks_nan"), elem_id="masks_nan")
            ui.device = device_line()
            explain("masks_explain")

    # One named endpoint; every control re-runs it (a few ms), so the picture follows the hand.
    main = event(compute_masks, ui, ("panels", "composition", "trap", "device"), show_progress="hidden")
    gr.on([ui.padding_side.input, ui.window.input, ui.prefix.input, ui.convention.input, ui.seed.submit,
           ui.seed.blur, ui.seq.input, ui.head.input],
          api_name="masks", trigger_mode="always_last", **main)   # sliders follow a drag; coalesced
    # The text and the head count set where "Show sequence" and "Show head" end: fitted first, then drawn.
    fit = event(fit_views, ui, ("seq", "head"), show_progress="hidden")
    gr.on([ui.text.submit, ui.text.blur, ui.heads.input], api_visibility="private", trigger_mode="always_last",
          **fit).then(api_visibility="private", **main)
    fill = event(set_preset, ui, RULES, api_visibility="private", show_progress="hidden")
    ui.preset.input(**fill).then(api_visibility="private", **main)
    ui.use_prefix.change(causal_box, ui.use_prefix, ui.causal, api_visibility="private", show_progress="hidden")
    for rule in RULES:
        getattr(ui, rule).input(lambda: CUSTOM, None, ui.preset, api_visibility="private",
                                show_progress="hidden").then(api_visibility="private", **main)
    return {**fit_then_draw(fit, main), "fills": [fill]}
