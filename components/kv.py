"""The KV Cache tab: watch the cache grow while a tiny GPT generates, then scale it up on paper."""
from __future__ import annotations

import time
from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain, long_run, low_priority, says_done
from components.i18n import lang_of, t
from components.widgets import Dropdown, Number, Radio, Slider, fit_slider
from components.wiring import event, fit_then_draw, join_draws
from locales import tr
from models.calculator import PRESETS
from models.checks import Span, choice
from models.limits import (ATTN_MAX_PROMPT, CALC_CONTEXT, KV_CONTEXT, KV_MAX_LATENT, KV_MAX_NEW_TOKENS, KV_N_HEADS,
                           KV_SCALE_MAX_BATCH, KV_TRAINED_GQA, KV_TRAINED_LATENT, KV_VARIANTS, SEED, TEMPERATURE)

DEFAULT_PROMPT = "The kettle began to sing"
DEFAULT_NEW_TOKENS = 200
DEFAULT_TEMPERATURE = 0.5
DEFAULT_PRESET = "Llama-3-8B"
DEFAULT_CONTEXT = 8192
# The caches the tab compares: MHA, GQA, a window on every layer, windows on 5 of 6 layers, MLA.
SCALE_PRESETS = ("Llama-2-7B", "Llama-3-8B", "Mistral-7B v0.1", "Gemma-3-12B", "DeepSeek-V2")
SCALE_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "int4")
KV_OF_VARIANT = {"mha": KV_N_HEADS, "mqa": 1}          # GQA reads the slider
PLOT_INTERVAL_S = 1.0                                  # figures redraw at most this often while streaming
# What each bounded control offers; its widget is built from the span and its endpoint checks with it.
KV_HEADS = Span(1, KV_N_HEADS)
LATENT = Span(1, KV_MAX_LATENT)
NEW_TOKENS = Span(1, KV_MAX_NEW_TOKENS)            # less the prompt (fit_new_tokens); the model checks the sum
BATCH = Span(1, KV_SCALE_MAX_BATCH)


def _checked(prompt, attention, n_kv_heads, kv_latent_dim, max_new_tokens):
    """The tiny GPT's config for the controls and the number of new tokens, or ``InputError``. Both
    sliders are checked whatever the variant reads of them: a value out of range is refused, not ignored."""
    from models.tiny_gpt import check_prompt, tiny_config
    KV_HEADS.whole("n_kv_heads", n_kv_heads)
    LATENT.whole("kv_latent_dim", kv_latent_dim)
    config = tiny_config(attention, 1, n_kv_heads=n_kv_heads, kv_latent_dim=kv_latent_dim)
    return config, check_prompt(prompt, max_new_tokens)


def fit_new_tokens(prompt: str = DEFAULT_PROMPT, max_new_tokens: int = DEFAULT_NEW_TOKENS) -> dict:
    """The "New tokens" slider ends where the prompt leaves the context: 512 − its characters (a 24-character
    prompt: 488), so that it offers no count the generation refuses; a value past the new end moves to it.

    >>> slider = fit_new_tokens("x" * 24, 500)["max_new_tokens"]
    >>> slider["maximum"], slider["value"]
    (488, 488)
    """
    if not isinstance(prompt, str):
        return {}                                      # the plan names what is wrong with it
    room = min(KV_MAX_NEW_TOKENS, KV_CONTEXT - max(len(prompt), 1))
    return {"max_new_tokens": fit_slider("max_new_tokens", max_new_tokens, room)}


def _formula(config, bytes_per_elem: int, tokens: str = "T") -> str:
    from viz.kv import tiny_formula
    return tiny_formula(config.attention == "mla", config.n_layers, config.n_kv_heads, config.head_dim,
                        config.kv_latent_dim, config.rope_width, bytes_per_elem, tokens)


def kv_plan(prompt: str = DEFAULT_PROMPT, attention: str = "mha", n_kv_heads: int = KV_N_HEADS,
            kv_latent_dim: int = KV_TRAINED_LATENT, max_new_tokens: int = DEFAULT_NEW_TOKENS,
            request: gr.Request = None) -> dict:
    """The ``/kv_plan`` endpoint: the grouping diagram, what a layer caches, the empty preallocated
    cache and the formula's line, for the chosen variant, before anything is generated."""
    from models.device import get_device, timed
    from models.kv_cache import config_cache_bytes, layer_cache
    from models.tiny_gpt import BYTES_PER_ELEM, has_checkpoint, other_variant_bytes
    from viz.kv import cache_figure, groups_figure, growth_figure, per_layer_markdown, text_html

    lang = lang_of(request)
    with timed(get_device()) as watch:
        config, n_new = _checked(prompt, attention, n_kv_heads, kv_latent_dim, max_new_tokens)
        capacity, bpe, layer = len(prompt) + n_new - 1, BYTES_PER_ELEM, layer_cache(config)
        figures = {
            "groups": groups_figure(config.n_heads, config.n_kv_heads, config.attention == "mla",
                                    config.kv_latent_dim or 0, config.rope_width, lang),
            "variant": per_layer_markdown(layer, config.variant, has_checkpoint(config), lang),
            "cache": cache_figure(layer, capacity, len(prompt), None, 0, lang),
            "growth": growth_figure(capacity, _formula(config, bpe), config_cache_bytes(config, 1, bpe),
                                    other_variant_bytes(config, bpe), [], [], [], [], [], None, lang),
            "text": text_html(prompt, ""), "written": [prompt, prompt],
        }
    return {**figures, "device": str(watch.timing)}


def kv_generate(prompt: str = DEFAULT_PROMPT, attention: str = "mha", n_kv_heads: int = KV_N_HEADS,
                kv_latent_dim: int = KV_TRAINED_LATENT, max_new_tokens: int = DEFAULT_NEW_TOKENS,
                temperature: float = DEFAULT_TEMPERATURE, seed: int = 0, request: gr.Request = None):
    """The ``/kv_generate`` endpoint (streams): text, status, cache picture, bytes and time, device line."""
    from models.kv_cache import config_cache_bytes, decode_times, layer_cache
    from models.tiny_gpt import other_variant_bytes, stream_tiny_gpt
    from viz.kv import cache_figure, growth_figure, status_markdown, text_html

    lang = lang_of(request)
    config, n_new = _checked(prompt, attention, n_kv_heads, kv_latent_dim, max_new_tokens)
    temp = TEMPERATURE.number("temperature", temperature)
    seed = SEED.whole("seed", seed)
    # In a worker of lower OS priority: under load the instant tabs are served first.
    frames = low_priority(stream_tiny_gpt, attention, prompt, n_new, n_kv_heads=config.n_kv_heads,
                          kv_latent_dim=config.kv_latent_dim, temperature=temp, seed=seed)
    context, cache_bytes, ms_cached, ms_uncached = [], [], [], []    # per step: T, bytes, both timings
    last_plots = -PLOT_INTERVAL_S
    for frame in frames:
        info, pair = frame.info, frame.pair
        context.append(pair.cached.context)                # = tokens in the cache after the step
        cache_bytes.append(pair.cached.cache_bytes)
        ms_cached.append(pair.cached.ms)
        ms_uncached.append(pair.uncached.ms)
        if pair.picture is None:                 # a picture comes every 0.2 s of decoding: so does an update
            continue
        cfg, bpe, T = info.config, info.bytes_per_elem, pair.cached.context
        times = decode_times(ms_cached, ms_uncached)
        device = tr(lang, "kv_device_line", device=info.device, prefill=times.prefill_ms, cached=times.cached_ms,
                    uncached=times.uncached_ms, tokens=pair.step + 1)
        update = {
            "text": text_html(prompt, frame.text), "written": [prompt, prompt + frame.text], "device": device,
            "status": status_markdown(pair.step + 1, n_new, T, pair.cached.cache_bytes, _formula(cfg, bpe, str(T)),
                                      config_cache_bytes(cfg, T, bpe), frame.identical, info.trained,
                                      info.name, info.val_loss, lang)}
        # The text streams with every update; the two figures (~100 ms each to redraw in a browser)
        # at most every PLOT_INTERVAL_S and on the last step, so a slow machine keeps up.
        if time.perf_counter() - last_plots < PLOT_INTERVAL_S and pair.step < n_new - 1:
            yield update
            continue
        update["cache"] = cache_figure(layer_cache(cfg), info.capacity, info.prompt_len, pair.picture,
                                       pair.cached.cache_bytes, lang)
        update["growth"] = growth_figure(info.capacity, _formula(cfg, bpe), config_cache_bytes(cfg, 1, bpe),
                                         other_variant_bytes(config, bpe), context, cache_bytes, context, ms_cached,
                                         ms_uncached, times, lang)
        last_plots = time.perf_counter()
        yield update


def look_inside(prompt: str = DEFAULT_PROMPT, written: list | None = None, attention: str = "mha") -> dict:
    """What the Attention tab opens on from here (its "Look inside" button, ``components.links``): the trained
    model of this attention, and the text shown (``written``: [the prompt it began from, the text]) if it
    began from the prompt in the box, else that prompt; its last ``ATTN_MAX_PROMPT`` characters, the most
    the views read.

    >>> look_inside("The cat", ["The cat", "The cat sat on the mat"], "gqa")
    {'attn_model': 'gqa', 'attn_prompt': 'The cat sat on the mat'}
    >>> look_inside("", ["The cat", "The cat sat"])["attn_prompt"], look_inside("A dog", None)["attn_prompt"]
    ('', 'A dog')
    """
    choice("kv_attention", attention, KV_VARIANTS)
    began, text = written if isinstance(written, list) and len(written) == 2 else (None, None)
    text = text if began == prompt and isinstance(text, str) else prompt
    return {"attn_model": attention, "attn_prompt": text[-ATTN_MAX_PROMPT:] if isinstance(text, str) else text}


def kv_scale(preset: str = DEFAULT_PRESET, context: int = DEFAULT_CONTEXT, batch: int = 1, dtype: str = "bf16",
             request: gr.Request = None) -> dict:
    """The ``/kv_scale`` endpoint: a real model's cache on paper, the formula with its numbers, and the
    same model's cache in four layouts (standard, sliding window, YOCO, MLA: the Calculator's)."""
    from models.calculator import PRESETS as SPECS
    from models.kv_cache import same_caches, scale_curves, scale_up
    from models.kv_layouts import kv_layouts
    from viz.calculator import layouts_figure, layouts_markdown
    from viz.kv import scale_figure, scale_markdown

    lang = lang_of(request)
    s = scale_up(preset, CALC_CONTEXT.whole("kv_context", context), BATCH.whole("kv_batch", batch),
                 choice("kv_dtype", dtype, SCALE_DTYPES))
    names = list(dict.fromkeys([*SCALE_PRESETS, preset]))
    contexts, curves = scale_curves(names, s.batch, dtype)
    fig = scale_figure(contexts, curves, preset, s.weights_bytes, s.crossover_tokens, s.seq_len, s.cache_bytes,
                       s.batch, dtype, lang, same_caches(curves))
    layouts = kv_layouts(SPECS[preset], dtype=dtype, batch=s.batch)
    return {"scale": fig, "scale_md": scale_markdown(s, lang), "layouts": layouts_figure(layouts, lang),
            "layouts_md": layouts_markdown(layouts, SPECS[preset], lang)}


def variant_to_slider(attention: str = "mha", n_kv_heads: int = KV_N_HEADS) -> dict:
    """Choosing MHA or MQA sets the KV-head slider; GQA moves it off the ends."""
    if attention in KV_OF_VARIANT:
        return {"n_kv_heads": KV_OF_VARIANT[attention]}
    if attention == "gqa" and n_kv_heads in (1, KV_N_HEADS):
        return {"n_kv_heads": KV_TRAINED_GQA}
    return {}


def slider_to_variant(n_kv_heads: int = KV_N_HEADS) -> dict:
    """Moving the KV-head slider names the variant it makes (4: MHA, 1: MQA, else GQA)."""
    return {"attention": {KV_N_HEADS: "mha", 1: "mqa"}.get(n_kv_heads, "gqa")}


def build() -> dict:
    """Lay out the tab, wire it, return the first-draw event."""
    ui = SimpleNamespace()
    gr.Markdown(t("kv_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            ui.prompt = gr.Textbox(DEFAULT_PROMPT, lines=3, max_length=KV_CONTEXT - 1, label=t("kv_prompt"),
                                   info=t("kv_prompt_info"), elem_id="kv_prompt")
            ui.attention = Radio([(t(f"kv_{v}"), v) for v in KV_VARIANTS], value="mha", label=t("kv_attention"),
                                 elem_id="kv_attention")
            ui.n_kv_heads = Slider.over(KV_HEADS, KV_N_HEADS, label=t("kv_n_kv"), info=t("kv_n_kv_info"),
                                        elem_id="kv_n_kv")
            ui.kv_latent_dim = Slider.over(LATENT, KV_TRAINED_LATENT, label=t("kv_latent"), info=t("kv_latent_info"),
                                           elem_id="kv_latent")
            ui.max_new_tokens = Slider.over(NEW_TOKENS, DEFAULT_NEW_TOKENS, label=t("kv_new_tokens"),
                                            elem_id="kv_new_tokens")
            with gr.Row():
                ui.temperature = Slider.over(TEMPERATURE, DEFAULT_TEMPERATURE, label=t("kv_temperature"),
                                             info=t("kv_temperature_info"), elem_id="kv_temperature")
                ui.seed = Number.seed(t("kv_seed"), "kv_seed")
            with gr.Row():
                ui.generate = gr.Button(t("kv_generate"), variant="primary", elem_id="kv_generate")
                ui.stop = gr.Button(t("kv_stop"), variant="stop", elem_id="kv_stop")
            ui.groups = gr.Plot(label=t("kv_groups_plot"), elem_id="kv_groups_plot")
            ui.variant = gr.Markdown(elem_id="kv_variant", latex_delimiters=[])
        with gr.Column(scale=3):
            ui.text = gr.HTML(elem_id="kv_text", label=t("kv_text"))
            ui.written = gr.State(None)                    # [the prompt, the prompt and what was generated]
            ui.look = gr.Button(t("kv_look_inside"), size="sm", elem_id="kv_look_inside")
            ui.status = gr.Markdown(elem_id="kv_status", latex_delimiters=[])
            ui.cache = gr.Plot(label=t("kv_cache_plot"), elem_id="kv_cache_plot")
            ui.growth = gr.Plot(label=t("kv_growth_plot"), elem_id="kv_growth_plot")
            ui.device = device_line()
    gr.Markdown(t("kv_scale_heading"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            ui.preset = Dropdown(list(PRESETS), value=DEFAULT_PRESET, label=t("kv_preset"), elem_id="kv_preset")
            ui.context = Number.over(CALC_CONTEXT, DEFAULT_CONTEXT, precision=0, label=t("kv_context"),
                                     elem_id="kv_context")
            ui.batch = Number.over(BATCH, 1, precision=0, label=t("kv_batch"), elem_id="kv_batch")
            ui.dtype = Dropdown(list(SCALE_DTYPES), value="bf16", label=t("kv_dtype"), elem_id="kv_dtype")
        with gr.Column(scale=3):
            ui.scale = gr.Plot(label=t("kv_scale_plot"), elem_id="kv_scale_plot")
            ui.scale_md = gr.Markdown(elem_id="kv_scale_md", latex_delimiters=[])
            ui.layouts = gr.Plot(label=t("calc_layouts_plot"), elem_id="kv_layouts_plot")
            ui.layouts_md = gr.Markdown(elem_id="kv_layouts_md", latex_delimiters=[])
    explain("kv_explain")

    plan_outputs = ("groups", "variant", "cache", "growth", "text", "written", "device")
    plan = event(kv_plan, ui, plan_outputs, show_progress="hidden")
    gr.on([ui.kv_latent_dim.input, ui.max_new_tokens.input], api_name="kv_plan", trigger_mode="always_last", **plan)
    # The prompt sets where "New tokens" ends: fitted first, then planned.
    fit = event(fit_new_tokens, ui, ("max_new_tokens",), show_progress="hidden")
    gr.on([ui.prompt.blur, ui.prompt.submit], api_visibility="private", trigger_mode="always_last", **fit).then(
        api_visibility="private", trigger_mode="always_last", **plan)
    ui.attention.input(api_visibility="private", show_progress="hidden",
                       **event(variant_to_slider, ui, ("n_kv_heads",))).then(
        api_visibility="private", trigger_mode="always_last", **plan)
    # Both links "always_last": with the default ("once") a drag's last plan was dropped while the
    # previous one ran, and the figures stayed on an earlier value.
    ui.n_kv_heads.input(api_visibility="private", show_progress="hidden", trigger_mode="always_last",
                        **event(slider_to_variant, ui, ("attention",))).then(
        api_visibility="private", trigger_mode="always_last", **plan)

    long_run([ui.generate.click], ui.stop, ui.status, api_name="kv_generate",
             **event(says_done(kv_generate), ui, ("text", "written", "status", "cache", "growth", "device")))

    scale_outputs = ("scale", "scale_md", "layouts", "layouts_md")
    gr.on([ui.preset.input, ui.context.submit, ui.context.blur, ui.batch.submit, ui.batch.blur, ui.dtype.input],
          api_name="kv_scale", show_progress="hidden", **event(kv_scale, ui, scale_outputs))
    # The first picture: the default generation's plan and the default scale-up, in one event. "Look inside"
    # is wired by the app, which holds the Attention tab too (components.links).
    first = fit_then_draw(fit, join_draws(event(kv_plan, ui, plan_outputs), event(kv_scale, ui, scale_outputs)))
    return {**first, "look_inside": dict(button=ui.look, fn=look_inside, controls=ui)}
