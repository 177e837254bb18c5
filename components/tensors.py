"""The Tensors tab: a tensor's layout in memory, number formats, how fast the hardware multiplies."""
from __future__ import annotations

import time
from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain, long_run, low_priority, says_done
from components.i18n import lang_of, t
from components.share import CUSTOM
from components.widgets import CheckboxGroup, Dropdown, Number, Radio, Slider
from components.wiring import event, join_draws
from locales import tr
from models.checks import Span, choice
from models.limits import (CALC_MAX_PARAMS, CALC_MAX_TRAIN_TOKENS, COMPUTE_MAX_GPUS, COMPUTE_MIN_PARAMS,
                           COMPUTE_MIN_TOKENS, MATMUL_DTYPES, MATMUL_SWEEPS, MFU_MAX_BATCH, MFU_MAX_D_MODEL,
                           MFU_MAX_HEADS, MFU_MAX_LAYERS, MFU_MAX_SEQ_LEN, MFU_MAX_STEPS, NUMFORMAT_MAX_ABS,
                           TENSOR_MAX_OPS, TENSOR_MAX_OPS_CHARS)
from models.peaks import PEAK_NAMES
from models.tensor_presets import PRESETS, preset_text

DEFAULT_PRESET = "heads_split"
DEFAULT_SHAPE, DEFAULT_OPS = PRESETS[DEFAULT_PRESET]
DEFAULT_DTYPES = ["fp32", "bf16", "fp16"]
PLOT_INTERVAL_S = 0.3
# Share links made before Number formats moved here: ?tab=calculator&calc_value=… (app.py passes this on).
MOVED_LINKS = {"calc_value": ("calculator", "tensors_value")}
# What a share link leaves out (app.py passes this on): a preset's shape and operations, which the preset sets,
# with its comments in the language of whoever opens the link.
LINK_LEAVES_OUT = {elem_id: lambda values: values.get("tensors_preset") != CUSTOM
                   for elem_id in ("tensors_shape", "tensors_ops")}
# What each bounded control offers; its widget is built from the span and its endpoint checks with it.
STEP = Span(0, TENSOR_MAX_OPS)
VALUE = Span(-NUMFORMAT_MAX_ABS, NUMFORMAT_MAX_ABS)
MFU = SimpleNamespace(                               # the MFU run
    n_layers=Span(1, MFU_MAX_LAYERS), d_model=Span(8, MFU_MAX_D_MODEL, step=8), n_heads=Span(1, MFU_MAX_HEADS),
    seq_len=Span(2, MFU_MAX_SEQ_LEN), batch=Span(1, MFU_MAX_BATCH), steps=Span(1, MFU_MAX_STEPS))
ESTIMATE = SimpleNamespace(                          # the compute estimate
    n_params=Span(COMPUTE_MIN_PARAMS, CALC_MAX_PARAMS), tokens=Span(COMPUTE_MIN_TOKENS, CALC_MAX_TRAIN_TOKENS),
    n_gpus=Span(1, COMPUTE_MAX_GPUS), mfu_percent=Span(1, 100))


# ----------------------------------------------------------------------------------------------- layout

def tensor_layout(shape: str = DEFAULT_SHAPE, ops: str = DEFAULT_OPS, step: int = TENSOR_MAX_OPS,
                  request: gr.Request = None) -> dict:
    """The ``/tensor_layout`` endpoint: replay ``ops`` on ``arange`` in ``shape``; the storage strip of
    every step, the elements of step ``step`` (the last when past the end), the table, the device line."""
    from models.device import Timing
    from models.tensors import replay
    from viz.tensors import memory_figure, steps_markdown, view_figure

    lang = lang_of(request)
    shown = STEP.whole("tensors_step", step)
    start = time.perf_counter()
    trace = replay(shape, ops)
    done = [s for s in trace.steps if s.ok and s.index <= shown][-1]
    out = {"memory": memory_figure(trace.steps, lang), "view": view_figure(done, lang),
           "table": steps_markdown(trace.steps, lang)}
    out["device"] = tr(lang, "tensors_device", timing=Timing("cpu", (time.perf_counter() - start) * 1e3),
                       ops=len(trace.steps) - 1)
    return out


def set_preset(preset: str = DEFAULT_PRESET, request: gr.Request = None) -> dict:
    """The shape and operations of a preset, commented in the page's language; "custom" leaves them as they are."""
    if preset not in PRESETS:
        return {}
    shape, ops = preset_text(preset, lang_of(request))
    return {"shape": shape, "ops": ops, "step": TENSOR_MAX_OPS}


# ----------------------------------------------------------------------------------------------- formats

def number_formats(value: float = 70000.0, request: gr.Request = None) -> dict:
    """The ``/number_formats`` endpoint: bit layouts and the cast of ``value`` into each format, the
    rounding error of every format across magnitudes, and the table of ranges and casts."""
    from models.numformats import FORMATS, cast, error_curves, facts
    from viz.numformats import bits_figure, formats_markdown, rounding_figure

    lang = lang_of(request)
    value = VALUE.number("tensors_value", value)
    casts = [cast(value, f) for f in FORMATS]
    rows = [(f.name, f.sign, f.exponent, f.mantissa, c.bits) for f, c in zip(FORMATS, casts)]
    return {"bits": bits_figure(rows, lang), "rounding": rounding_figure(error_curves(), lang),
            "formats_table": formats_markdown(value, casts, [facts(f) for f in FORMATS], lang)}


# ----------------------------------------------------------------------------------------------- compute

def _sweep_in_worker(kind: str, dtypes: tuple[str, ...]):
    """What the worker runs: its thread count first (the CPU's "peak" depends on it), then the points."""
    import torch

    from models.compute import sweep
    yield torch.get_num_threads()
    yield from sweep(kind, dtypes)


def compute_matmul(kind: str = "square", dtypes: list[str] = DEFAULT_DTYPES, request: gr.Request = None):
    """The ``/compute_matmul`` endpoint (streams): the sweep's figure, what it found, the device line."""
    from models.compute import MatmulPoint, TOKENS_WIDTH, check_dtypes, measured_peak, peak_for
    from models.device import device_name, get_device
    from viz.compute import matmul_figure, matmul_markdown

    lang = lang_of(request)
    choice("compute_kind", kind, MATMUL_SWEEPS)
    device = get_device()
    dtypes = check_dtypes(dtypes, device)                           # before anything is allocated
    name = device_name(device)
    table = peak_for(name) if device.type == "cuda" else None
    points, skips, threads = [], [], 1
    start = last = time.perf_counter()
    items = low_priority(_sweep_in_worker, kind, dtypes)
    finished = False
    while not finished:
        item = next(items, None)
        finished = item is None
        if isinstance(item, int):
            threads = item
            continue
        if item is not None:
            (points if isinstance(item, MatmulPoint) else skips).append(item)
            if time.perf_counter() - last < PLOT_INTERVAL_S:
                continue
        last = time.perf_counter()
        if table is not None:
            peaks = {d: table.tflops[d] * 1e12 for d in dtypes if d in table.tflops}
            header = tr(lang, "compute_peak_known", device=name, name=table.name, source=table.source)
        else:
            peaks = measured_peak(points) if device.type == "cpu" else {}
            header = tr(lang, "compute_peak_cpu" if device.type == "cpu" else "compute_peak_unknown",
                        device=name, threads=threads)
        bandwidth = table.bandwidth_tbs * 1e12 if table else None
        width = TOKENS_WIDTH["cuda" if device.type == "cuda" else "cpu"]
        state = "" if finished else " …"
        yield {"matmul_plot": matmul_figure(points, peaks, table.source if table else None, bandwidth, kind, width,
                                            name, lang),
               "matmul_summary": matmul_markdown(points, skips, peaks if table else {}, header, lang),
               "compute_device": tr(lang, "compute_device_line", device=name, threads=threads, n=len(points),
                                    s=time.perf_counter() - start) + state}


def compute_mfu(n_layers: int = 4, d_model: int = 128, n_heads: int = 4, seq_len: int = 64, batch: int = 8,
                steps: int = 10, request: gr.Request = None):
    """The ``/compute_mfu`` endpoint (streams): a few real training steps of the one transformer; their
    FLOPs by formula and by PyTorch's counter, time per step, achieved FLOP/s and MFU."""
    from models.compute import MfuSetup, check_mfu, mfu, mfu_config, mfu_run
    from models.device import get_device
    from viz.compute import mfu_figure, mfu_markdown

    lang = lang_of(request)
    size = dict(n_layers=MFU.n_layers.whole("n_layers", n_layers), d_model=MFU.d_model.whole("d_model", d_model),
                n_heads=MFU.n_heads.whole("n_heads", n_heads), seq_len=MFU.seq_len.whole("mfu_seq_len", seq_len))
    batch = MFU.batch.whole("mfu_batch", batch)
    steps = MFU.steps.whole("steps", steps)
    device = get_device()
    mfu_config(**size)                                               # a config that is not valid says why
    check_mfu(**size, batch=batch, steps=steps, device=device)       # the budget, before anything is built
    setup, timed, last = None, [], 0.0
    start = time.perf_counter()
    for item in low_priority(mfu_run, **size, batch=batch, steps=steps, device=device):
        if isinstance(item, MfuSetup):
            setup = item
        else:
            timed.append(item)
        finished = len(timed) == steps
        if not finished and time.perf_counter() - last < PLOT_INTERVAL_S:
            continue
        last = time.perf_counter()
        seconds = sorted(s.seconds for s in timed)[len(timed) // 2] if timed else None      # the median step
        achieved = setup.formula_flops / seconds if seconds else None
        ratio = mfu(achieved, setup.peak) if achieved and setup.peak else None
        state = "" if finished else " …"
        yield {"mfu_plot": mfu_figure(timed, setup.formula_flops, setup.peak, lang),
               "mfu_summary": mfu_markdown(setup, seconds, achieved, ratio, batch, size["seq_len"], lang),
               "mfu_device": tr(lang, "mfu_device_line", device=setup.device, threads=setup.threads, dtype=setup.dtype,
                                done=len(timed), steps=steps, s=time.perf_counter() - start) + state}


def compute_estimate(n_params: float = 7e9, tokens: float = 1e12, n_gpus: int = 1024, gpu: str = "H100 SXM",
                     mfu_percent: float = 40.0, request: gr.Request = None) -> dict:
    """The ``/compute_estimate`` endpoint: the days 6·N·D FLOPs take on ``n_gpus`` GPUs at an MFU."""
    from models.compute import peak_by_name, training_seconds
    from viz.calculator import human
    from viz.compute import human_flops, human_rate

    lang = lang_of(request)
    n = ESTIMATE.n_params.number("compute_params", n_params)
    d = ESTIMATE.tokens.number("compute_tokens", tokens)
    gpus = ESTIMATE.n_gpus.whole("compute_gpus", n_gpus)
    mfu = ESTIMATE.mfu_percent.number("compute_mfu", mfu_percent) / 100
    peak = peak_by_name(gpu)
    dtype = "bf16" if "bf16" in peak.tflops else "fp16"
    flops_per_s = peak.tflops[dtype] * 1e12
    seconds = training_seconds(n, d, gpus, flops_per_s, mfu)
    return {"estimate": tr(lang, "compute_estimate_text", flops=human_flops(6 * n * d), n=human(n), d=human(d), gpus=f"{gpus:,}", gpu=peak.name, dtype=dtype,
                                peak=human_rate(flops_per_s), mfu=f"{mfu:.0%}",
                                rate=human_rate(gpus * flops_per_s * mfu), days=f"{seconds / 86400:,.1f}",
                                gpu_hours=f"{seconds * gpus / 3600:,.0f}")}


# ----------------------------------------------------------------------------------------------- tab

def waiting_plots(request: gr.Request = None) -> dict:
    """What the sweep's and the training's figures show until they are run."""
    from viz.common import waiting
    lang = lang_of(request)
    return {"matmul_plot": waiting(tr(lang, "compute_fig_waiting")), "mfu_plot": waiting(tr(lang, "mfu_fig_waiting"))}


def _run_and_stop(run_id: str, stop_id: str) -> tuple[gr.Button, gr.Button]:
    """A long run's two buttons, side by side."""
    with gr.Row():
        return (gr.Button(t(run_id), variant="primary", elem_id=run_id),
                gr.Button(t("compute_stop"), variant="stop", elem_id=stop_id))


def _results(ui: SimpleNamespace, plot: str, summary: str, device: str, label) -> None:
    """A long run's figure, what it found and its device line, in the wide column (``ui.<name>``)."""
    with gr.Column(scale=3):
        setattr(ui, plot, gr.Plot(label=label, elem_id=plot))
        setattr(ui, summary, gr.Markdown(elem_id=summary, latex_delimiters=[]))
        setattr(ui, device, device_line(device))


def build() -> dict:
    """Lay out the tab inside the current ``gr.Tab``, wire its events, return the first-draw event."""
    ui = SimpleNamespace()
    gr.Markdown(t("tensors_intro"))
    with gr.Tabs():
        with gr.Tab(t("tensors_sub_layout"), id="tensors_layout"):
            with gr.Row():
                with gr.Column(scale=1, min_width=300):
                    ui.preset = Radio([(t(f"tensors_preset_{p}"), p) for p in (*PRESETS, CUSTOM)],
                                      value=DEFAULT_PRESET, label=t("tensors_preset"), elem_id="tensors_preset")
                    ui.shape = gr.Textbox(DEFAULT_SHAPE, max_lines=1, max_length=40, label=t("tensors_shape"),
                                          info=t("tensors_shape_info"), elem_id="tensors_shape")
                    ui.ops = gr.Textbox(DEFAULT_OPS, lines=6, max_lines=TENSOR_MAX_OPS + 4,
                                        max_length=TENSOR_MAX_OPS_CHARS, label=t("tensors_ops"),
                                        info=t("tensors_ops_info"), elem_id="tensors_ops", elem_classes="mono")
                    ui.step = Slider.over(STEP, TENSOR_MAX_OPS, label=t("tensors_step"), elem_id="tensors_step")
                with gr.Column(scale=3):
                    ui.memory = gr.Plot(label=t("tensors_memory_plot"), elem_id="tensors_memory")
                    ui.view = gr.Plot(label=t("tensors_view_plot"), elem_id="tensors_view")
                    ui.table = gr.Markdown(elem_id="tensors_table", latex_delimiters=[])
                    ui.device = device_line("tensors_device")
            explain("tensors_layout_explain")
        with gr.Tab(t("tensors_sub_formats"), id="tensors_formats"):
            gr.Markdown(t("tensors_formats_intro"))
            ui.value = Number.over(VALUE, 70000.0, label=t("tensors_value"), info=t("tensors_value_info"),
                                   elem_id="tensors_value")
            ui.bits = gr.Plot(label=t("tensors_bits_plot"), elem_id="tensors_bits")
            ui.formats_table = gr.Markdown(elem_id="tensors_formats_table", latex_delimiters=[])
            ui.rounding = gr.Plot(label=t("tensors_rounding_plot"), elem_id="tensors_rounding")
            explain("tensors_formats_explain")
        with gr.Tab(t("tensors_sub_compute"), id="tensors_compute"):
            with gr.Row():
                with gr.Column(scale=1, min_width=300):
                    ui.kind = Radio([(t(f"compute_kind_{k}"), k) for k in MATMUL_SWEEPS], value="square",
                                    label=t("compute_kind"), elem_id="compute_kind")
                    ui.dtypes = CheckboxGroup(list(MATMUL_DTYPES), value=DEFAULT_DTYPES, label=t("compute_dtypes"),
                                              elem_id="compute_dtypes")
                    run, stop = _run_and_stop("compute_run", "compute_stop")
                _results(ui, "matmul_plot", "matmul_summary", "compute_device", t("compute_matmul_plot"))
            gr.Markdown(t("mfu_heading"))
            with gr.Row():
                with gr.Column(scale=1, min_width=300):
                    with gr.Row():
                        ui.n_layers = Slider.over(MFU.n_layers, 4, label=t("mfu_layers"), elem_id="mfu_layers")
                        ui.n_heads = Slider.over(MFU.n_heads, 4, label=t("mfu_heads"), elem_id="mfu_heads")
                    ui.d_model = Slider.over(MFU.d_model, 128, label=t("mfu_d_model"), elem_id="mfu_d_model")
                    with gr.Row():
                        ui.seq_len = Slider.over(MFU.seq_len, 64, label=t("mfu_seq_len"), elem_id="mfu_seq_len")
                        ui.batch = Slider.over(MFU.batch, 8, label=t("mfu_batch"), elem_id="mfu_batch")
                    ui.steps = Slider.over(MFU.steps, 10, label=t("mfu_steps"), elem_id="mfu_steps")
                    train, stop_training = _run_and_stop("mfu_run", "mfu_stop")
                _results(ui, "mfu_plot", "mfu_summary", "mfu_device", t("mfu_plot"))
            gr.Markdown(t("compute_estimate_heading"))
            with gr.Row():
                with gr.Column(scale=1, min_width=300):
                    ui.n_params = Number.over(ESTIMATE.n_params, 7e9, label=t("compute_params"),
                                              elem_id="compute_params")
                    ui.tokens = Number.over(ESTIMATE.tokens, 1e12, label=t("compute_tokens"), elem_id="compute_tokens")
                    ui.n_gpus = Number.over(ESTIMATE.n_gpus, 1024, precision=0, label=t("compute_gpus"),
                                            elem_id="compute_gpus")
                    ui.gpu = Dropdown(list(PEAK_NAMES), value="H100 SXM", label=t("compute_gpu"), elem_id="compute_gpu")
                    ui.mfu_percent = Slider.over(ESTIMATE.mfu_percent, 40, label=t("compute_mfu"),
                                                 elem_id="compute_mfu")
                with gr.Column(scale=3):
                    ui.estimate = gr.Markdown(elem_id="compute_estimate")
            explain("compute_explain")

    layout = event(tensor_layout, ui, ("memory", "view", "table", "device"), show_progress="hidden")
    formats = event(number_formats, ui, ("bits", "rounding", "formats_table"))
    estimate = event(compute_estimate, ui, ("estimate",))
    gr.on([ui.shape.submit, ui.shape.blur, ui.ops.blur, ui.step.input], api_name="tensor_layout",
          trigger_mode="always_last", **layout)
    fill = event(set_preset, ui, ("shape", "ops", "step"), api_visibility="private", show_progress="hidden")
    ui.preset.input(**fill).then(api_visibility="private", **layout)
    for box in (ui.shape, ui.ops):
        box.input(lambda: CUSTOM, None, ui.preset, api_visibility="private", show_progress="hidden")
    gr.on([ui.value.submit, ui.value.blur], api_name="number_formats", show_progress="hidden",
          **formats)
    long_run([run.click], stop, ui.compute_device, api_name="compute_matmul",
             **event(says_done(compute_matmul, "compute_device"), ui,
                     ("matmul_plot", "matmul_summary", "compute_device")))
    long_run([train.click], stop_training, ui.mfu_device, api_name="compute_mfu",
             **event(says_done(compute_mfu, "mfu_device"), ui, ("mfu_plot", "mfu_summary", "mfu_device")))
    gr.on([ui.n_params.submit, ui.n_params.blur, ui.tokens.submit, ui.tokens.blur, ui.n_gpus.submit,
           ui.n_gpus.blur, ui.gpu.input, ui.mfu_percent.input], api_name="compute_estimate", show_progress="hidden",
          trigger_mode="always_last", **estimate)
    # When the tab is first shown: the layout, the number formats, the estimate, the waiting figures.
    first = join_draws(join_draws(layout, formats), join_draws(estimate, event(waiting_plots, ui, ("matmul_plot", "mfu_plot"))))
    return {**first, "fills": [fill]}
