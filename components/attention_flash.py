"""The FlashAttention view of the Attention tab: the online softmax tile by tile, then the T² wall, measured.

Tiles: ``/attention_flash`` tiles one seeded head once (every tile recorded, kept in the visitor's
``gr.State``); ◀ / ▶, the step slider and Play (a ``gr.Timer``) redraw from that record without
recomputing. Cost: ``/attention_cost`` streams a sweep over T on the shared device, in a worker of
lower priority on the heavy queue; Stop ends it.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import gradio as gr

from components.common import LATEX, device_line, long_run, low_priority, says_done
from components.i18n import lang_of, t
from components.widgets import Dropdown, Number, Radio, Slider, StepButton
from components.wiring import event
from locales import tr
from models.checks import choice, whole
from models.limits import (ATTN_COST_BATCH, ATTN_COST_DTYPES, ATTN_COST_HEAD_DIM, ATTN_COST_HEADS, ATTN_COST_MAX_T_CUDA,
                           ATTN_COST_MIN_T, ATTN_FLASH_D, ATTN_FLASH_DTYPES, ATTN_FLASH_MAX_T, ATTN_FLASH_T)

PLAY_SECONDS = 0.7                 # one tile per tick (a frame is ~25 ms server side, ~100 ms in a browser)
PLAY_FRAMES = 64                   # a playback takes at most this many ticks (block 1 at T = 64 has 4096 tiles)
MAX_STEP = ATTN_FLASH_MAX_T ** 2   # the most tiles any setting has (block 1 at the largest T)
MAX_T_CHOICES = ("auto", *(2**n for n in range(int(math.log2(ATTN_COST_MIN_T)) + 2,
                                              int(math.log2(ATTN_COST_MAX_T_CUDA)) + 1)))
FRAME_OUTPUTS = ("tiles_plot", "rows_plot", "status", "recurrence")


# --------------------------------------------------------------------------- tiles
def _views(ex, step: int, lang: str) -> dict:
    """The four views of step ``step`` of a tiled head."""
    from models.flash_explore import flash_frame
    from viz.attention_flash import recurrence_markdown, rows_figure, status_markdown, tiles_figure

    frame = flash_frame(ex, step)
    return {"tiles_plot": tiles_figure(ex, frame, lang), "rows_plot": rows_figure(ex, frame, lang),
            "status": status_markdown(ex, frame, lang), "recurrence": recurrence_markdown(frame, lang)}


def attention_flash(T: int = 16, head_dim: int = 8, block: int = 4, causal: bool = True, dtype: str = "float32",
                    seed: int = 0, step: int = 1, request: gr.Request = None) -> dict:
    """The ``/attention_flash`` endpoint: tile a seeded head once, draw it after ``step`` tiles (a step
    past the last tile shows the last), keep every tile for ◀ / ▶ / Play."""
    from models.flash_explore import explore_flash

    ex = explore_flash(T, head_dim, block, causal, dtype, seed)
    k = min(whole("attn_step", step, 0, MAX_STEP), ex.n_steps)
    return {"state": ex, "step": gr.Slider(maximum=ex.n_steps, value=k), **_views(ex, k, lang_of(request)),
            "device": str(ex.timing)}


def show_step(state=None, step: int = 0, request: gr.Request = None) -> dict:
    """Redraw the tiled head kept in ``state`` after ``step`` tiles (nothing when none is kept yet)."""
    if state is None:
        return {}
    return _views(state, whole("attn_step", step, 0, state.n_steps), lang_of(request))


def _moved(state, step, delta: int, lang: str) -> dict:
    if state is None:
        return {}
    k = min(max(whole("attn_step", step, 0, MAX_STEP) + delta, 0), state.n_steps)
    return {"step": k, **_views(state, k, lang)}


def previous_step(state=None, step: int = 0, request: gr.Request = None) -> dict:
    return _moved(state, step, -1, lang_of(request))


def next_step(state=None, step: int = 0, request: gr.Request = None) -> dict:
    return _moved(state, step, 1, lang_of(request))


def play(state=None, step: int = 0) -> dict:
    """Start Play (from the first tile when at the last)."""
    n = state.n_steps if state is not None else 0
    at_end = not isinstance(step, (int, float)) or step >= n
    return {"step": 0 if at_end else gr.skip(), "timer": gr.Timer(active=n > 0)}


def tick(state=None, step: int = 0, request: gr.Request = None) -> dict:
    """One frame of Play: a stride of tiles so a playback takes at most PLAY_FRAMES ticks; the last frame stops."""
    if state is None:
        return {"timer": gr.Timer(active=False)}
    n = state.n_steps
    moved = _moved(state, step, max(1, -(-n // PLAY_FRAMES)), lang_of(request))
    # Only the last frame touches the timer: a tick that returned "active" could undo a pause.
    return moved | ({"timer": gr.Timer(active=False)} if moved["step"] >= n else {})


# --------------------------------------------------------------------------- cost at scale
def attention_cost(max_T: int | str = "auto", head_dim: int = 64, heads: int = 1, batch: int = 1,
                   dtype: str = "float32", request: gr.Request = None):
    """The ``/attention_cost`` endpoint (streams): naive vs SDPA vs tiled, bytes and time against T, and
    the decode side; each point as it is measured."""
    from models.attention_cost import cost_sweep, max_context
    from models.device import get_device
    from viz.attention_flash import cost_figure, cost_markdown, kv_figure

    lang = lang_of(request)
    if isinstance(max_T, str) and max_T.isascii() and max_T.isdigit():
        max_T = int(max_T)                     # the API describes the choices as text: Literal['auto', '1024', …]
    choice("attn_max_T", max_T, MAX_T_CHOICES)
    T = max_context(get_device()) if max_T == "auto" else max_T
    # In a worker of lower OS priority: under load the instant tabs are served first.
    for sweep in low_priority(cost_sweep, T, head_dim, heads, batch, dtype):
        ended = "" if sweep.ended else " …"
        yield {"cost_plot": cost_figure(sweep, lang), "kv_plot": kv_figure(sweep, lang),
               "cost_status": cost_markdown(sweep, lang), "cost_device": f"{sweep.device} · {sweep.seconds:.1f} s{ended}"}


def first_draw(T: int = 16, head_dim: int = 8, block: int = 4, causal: bool = True, dtype: str = "float32",
               seed: int = 0, step: int = 1, request: gr.Request = None) -> dict:
    """The tiles at the controls' values; the cost figures say what fills them."""
    from viz.common import waiting

    message = tr(lang_of(request), "attn_cost_waiting")
    return {**attention_flash(T, head_dim, block, causal, dtype, seed, step, request=request),
            "cost_plot": waiting(message), "kv_plot": waiting(message, height=200)}


def build() -> dict:
    """Lay out the view inside the current ``gr.Tab``, wire it, return its first-draw event (with the Play
    timer that leaving the view pauses)."""
    ui = SimpleNamespace(state=gr.State(None), timer=gr.Timer(PLAY_SECONDS, active=False))
    gr.Markdown(t("attn_flash_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            ui.T = Slider.over(ATTN_FLASH_T, 16, label=t("attn_T"), elem_id="attn_T")
            ui.head_dim = Slider.over(ATTN_FLASH_D, 8, label=t("attn_head_dim"), elem_id="attn_d")
            ui.block = Slider.over(ATTN_FLASH_T, 4, label=t("attn_block"), elem_id="attn_block")
            ui.causal = gr.Checkbox(True, label=t("attn_causal"), elem_id="attn_causal")
            ui.dtype = Radio(list(ATTN_FLASH_DTYPES), value="float32", label=t("attn_dtype"), elem_id="attn_dtype")
            ui.seed = Number.seed(t("attn_seed"), "attn_seed")
            ui.step = Slider(0, MAX_STEP, value=1, step=1, label=t("attn_step"), elem_id="attn_step")
            with gr.Row():
                ui.prev = StepButton(t("attn_prev"), size="sm", elem_id="attn_prev")
                ui.next = StepButton(t("attn_next"), size="sm", elem_id="attn_next")
            with gr.Row():
                ui.play = gr.Button(t("attn_play"), size="sm", variant="primary", elem_id="attn_play")
                ui.pause = gr.Button(t("attn_pause"), size="sm", elem_id="attn_pause")
        with gr.Column(scale=3):
            ui.status = gr.Markdown(elem_id="attn_status", latex_delimiters=[])
            ui.tiles_plot = gr.Plot(label=t("attn_tiles_plot"), elem_id="attn_tiles_plot")
            ui.rows_plot = gr.Plot(label=t("attn_rows_plot"), elem_id="attn_rows_plot")
            ui.device = device_line("attn_device")
            with gr.Accordion(t("explain"), open=True):
                gr.Markdown(t("attn_rec_heading"))
                ui.recurrence = gr.Markdown(elem_id="attn_recurrence", latex_delimiters=LATEX)
                gr.Markdown(t("attn_flash_explain"), latex_delimiters=LATEX)
    cost = SimpleNamespace()
    gr.Markdown(t("attn_cost_heading"))
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            cost.max_T = Dropdown([(t("attn_max_T_auto"), "auto"), *((f"{T:,}", T) for T in MAX_T_CHOICES[1:])],
                                  value="auto", label=t("attn_max_T"), info=t("attn_max_T_info"), elem_id="attn_max_T")
            cost.head_dim = Slider.over(ATTN_COST_HEAD_DIM, 64, label=t("attn_cost_head_dim"), elem_id="attn_cost_d")
            cost.heads = Slider.over(ATTN_COST_HEADS, 1, label=t("attn_cost_heads"), elem_id="attn_cost_heads")
            cost.batch = Slider.over(ATTN_COST_BATCH, 1, label=t("attn_cost_batch"), elem_id="attn_cost_batch")
            cost.dtype = Radio(list(ATTN_COST_DTYPES), value="float32", label=t("attn_cost_dtype"),
                               elem_id="attn_cost_dtype")
            with gr.Row():
                measure = gr.Button(t("attn_measure"), variant="primary", elem_id="attn_measure")
                stop = gr.Button(t("attn_stop"), variant="stop", elem_id="attn_stop")
        with gr.Column(scale=3):
            cost.cost_status = gr.Markdown(elem_id="attn_cost_status", latex_delimiters=[])
            cost.cost_plot = gr.Plot(label=t("attn_cost_plot"), elem_id="attn_cost_plot")
            cost.kv_plot = gr.Plot(label=t("attn_kv_plot"), elem_id="attn_kv_plot")
            cost.cost_device = device_line("attn_cost_device")

    hidden = dict(show_progress="hidden", api_visibility="private")
    main = event(attention_flash, ui, ("state", "step", *FRAME_OUTPUTS, "device"), show_progress="hidden")
    gr.on([ui.T.input, ui.head_dim.input, ui.block.input, ui.causal.input, ui.dtype.input, ui.seed.submit,
           ui.seed.blur], api_name="attention_flash", trigger_mode="always_last", **main)
    ui.step.input(trigger_mode="always_last", **event(show_step, ui, FRAME_OUTPUTS, **hidden))
    ui.prev.click(**event(previous_step, ui, ("step", *FRAME_OUTPUTS), **hidden))
    ui.next.click(**event(next_step, ui, ("step", *FRAME_OUTPUTS), **hidden))
    ui.play.click(**event(play, ui, ("step", "timer"), **hidden))
    ui.pause.click(lambda: gr.Timer(active=False), None, ui.timer, **hidden)
    ui.timer.tick(**event(tick, ui, ("step", *FRAME_OUTPUTS, "timer"), **hidden))

    # The device line is the sweep's status: " …" while it runs, then "✓ Done" or "■ Stopped" first.
    outputs = ("cost_plot", "kv_plot", "cost_status", "cost_device")
    long_run([measure.click], stop, cost.cost_device, api_name="attention_cost",
             **event(says_done(attention_cost, "cost_device"), cost, outputs))
    outputs = {**vars(ui), "cost_plot": cost.cost_plot, "kv_plot": cost.kv_plot}
    return {**event(first_draw, outputs, ("state", "step", *FRAME_OUTPUTS, "device", "cost_plot", "kv_plot"),
                    show_progress="hidden"), "timers": [ui.timer]}
