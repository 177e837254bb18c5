"""The Tensors tab: a tensor's layout in memory, number formats, how fast the hardware multiplies."""
from __future__ import annotations

import time
from types import SimpleNamespace

import gradio as gr

from components.common import HEAVY, device_line, explain, low_priority
from components.i18n import lang_of, t
from components.widgets import CheckboxGroup, Dropdown, Number, Radio, Slider
from components.wiring import event
from locales import tr
from models.checks import choice, number, whole
from models.limits import CALC_MAX_PARAMS, MATMUL_DTYPES, MATMUL_SWEEPS, TENSOR_MAX_OPS, TENSOR_MAX_OPS_CHARS
from models.peaks import PEAK_NAMES
from models.tensors import PRESETS

DEFAULT_PRESET = "heads_split"
DEFAULT_SHAPE, DEFAULT_OPS = PRESETS[DEFAULT_PRESET]
DEFAULT_DTYPES = ["fp32", "bf16", "fp16"]
MAX_GPUS = 1_000_000
MAX_TOKENS = 1e16
PLOT_INTERVAL_S = 0.3
# Share links made before Number formats moved here: ?tab=calculator&calc_value=… (app.py passes this on).
MOVED_LINKS = {"calc_value": ("calculator", "tensors_value")}


# ----------------------------------------------------------------------------------------------- layout

def tensor_layout(shape: str = DEFAULT_SHAPE, ops: str = DEFAULT_OPS, step: int = TENSOR_MAX_OPS,
                  request: gr.Request = None) -> dict:
    """The ``/tensor_layout`` endpoint: replay ``ops`` on ``arange`` in ``shape``; the storage strip of
    every step, the elements of step ``step`` (the last when past the end), the table, the device line."""
    from models.tensors import replay
    from viz.tensors import memory_figure, steps_markdown, view_figure

    lang = lang_of(request)
    shown = whole("tensors_step", step, 0, TENSOR_MAX_OPS)
    start = time.perf_counter()
    trace = replay(shape, ops)
    done = [s for s in trace.steps if s.ok and s.index <= shown][-1]
    out = {"memory": memory_figure(trace.steps, lang), "view": view_figure(done, lang),
           "table": steps_markdown(trace.steps, lang)}
    out["device"] = f"cpu · {(time.perf_counter() - start) * 1e3:.1f} ms ({len(trace.steps) - 1} ops, figures included)"
    return out


def set_preset(preset: str = DEFAULT_PRESET) -> dict:
    """The shape and operations of a preset; "custom" leaves them as they are."""
    if preset not in PRESETS:
        return {}
    shape, ops = PRESETS[preset]
    return {"shape": shape, "ops": ops, "step": TENSOR_MAX_OPS}


# ----------------------------------------------------------------------------------------------- formats

def number_formats(value: float = 70000.0, request: gr.Request = None) -> dict:
    """The ``/number_formats`` endpoint: bit layouts and the cast of ``value`` into each format, the
    rounding error of every format across magnitudes, and the table of ranges and casts."""
    from models.numformats import FORMATS, MAX_ABS_INPUT, cast, error_curves, facts
    from viz.numformats import bits_figure, formats_markdown, rounding_figure

    lang = lang_of(request)
    value = number("tensors_value", value, -MAX_ABS_INPUT, MAX_ABS_INPUT)
    casts = [cast(value, f) for f in FORMATS]
    rows = [(f.name, f.sign, f.exponent, f.mantissa, c.bits) for f, c in zip(FORMATS, casts)]
    return {"bits": bits_figure(rows, lang), "rounding": rounding_figure(*error_curves(), lang),
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
    items = low_priority(lambda: _sweep_in_worker(kind, dtypes))
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
               "compute_device": f"{name} · {threads} thread(s) · {len(points)} matmul sizes in "
                         f"{time.perf_counter() - start:.1f} s{state}"}


def compute_estimate(n_params: float = 7e9, tokens: float = 1e12, n_gpus: int = 1024, gpu: str = "H100 SXM",
                     mfu_percent: float = 40.0, request: gr.Request = None) -> dict:
    """The ``/compute_estimate`` endpoint: the days 6·N·D FLOPs take on ``n_gpus`` GPUs at an MFU."""
    from models.compute import peak_by_name, training_seconds
    from viz.calculator import human
    from viz.compute import human_flops, human_rate

    lang = lang_of(request)
    n = number("compute_params", n_params, 1e6, CALC_MAX_PARAMS)
    d = number("compute_tokens", tokens, 1e6, MAX_TOKENS)
    gpus = whole("compute_gpus", n_gpus, 1, MAX_GPUS)
    mfu = number("compute_mfu", mfu_percent, 0, 100, above=True) / 100
    peak = peak_by_name(gpu)
    dtype = "bf16" if "bf16" in peak.tflops else "fp16"
    flops_per_s = peak.tflops[dtype] * 1e12
    seconds = training_seconds(n, d, gpus, flops_per_s, mfu)
    return {"estimate": tr(lang, "compute_estimate_text", flops=human_flops(6 * n * d), n=human(n), d=human(d), gpus=f"{gpus:,}", gpu=peak.name, dtype=dtype,
                                peak=human_rate(flops_per_s), mfu=f"{mfu:.0%}",
                                rate=human_rate(gpus * flops_per_s * mfu), days=f"{seconds / 86400:,.1f}",
                                gpu_hours=f"{seconds * gpus / 3600:,.0f}")}


# ----------------------------------------------------------------------------------------------- tab

def first_draw(shape: str = DEFAULT_SHAPE, ops: str = DEFAULT_OPS, step: int = TENSOR_MAX_OPS,
               value: float = 70000.0, n_params: float = 7e9, tokens: float = 1e12, n_gpus: int = 1024,
               gpu: str = "H100 SXM", mfu_percent: float = 40.0, request: gr.Request = None) -> dict:
    """When the tab is first shown: the layout, the number formats, the on-paper estimate, and what
    the sweep's figure will show once run."""
    from viz.common import waiting
    lang = lang_of(request)
    return {**tensor_layout(shape, ops, step, request=request), **number_formats(value, request=request),
            **compute_estimate(n_params, tokens, n_gpus, gpu, mfu_percent, request=request),
            "matmul_plot": waiting(tr(lang, "compute_fig_waiting"))}


def build() -> dict:
    """Lay out the tab inside the current ``gr.Tab``, wire its events, return the first-draw event."""
    ui = SimpleNamespace()
    gr.Markdown(t("tensors_intro"))
    with gr.Tabs():
        with gr.Tab(t("tensors_sub_layout"), id="tensors_layout"):
            with gr.Row():
                with gr.Column(scale=1, min_width=300):
                    ui.preset = Radio([(t(f"tensors_preset_{p}"), p) for p in (*PRESETS, "custom")],
                                      value=DEFAULT_PRESET, label=t("tensors_preset"), elem_id="tensors_preset")
                    ui.shape = gr.Textbox(DEFAULT_SHAPE, max_lines=1, max_length=40, label=t("tensors_shape"),
                                          info=t("tensors_shape_info"), elem_id="tensors_shape")
                    ui.ops = gr.Textbox(DEFAULT_OPS, lines=6, max_lines=TENSOR_MAX_OPS + 4,
                                        max_length=TENSOR_MAX_OPS_CHARS, label=t("tensors_ops"),
                                        info=t("tensors_ops_info"), elem_id="tensors_ops", elem_classes="mono")
                    ui.step = Slider(0, TENSOR_MAX_OPS, value=TENSOR_MAX_OPS, step=1, label=t("tensors_step"),
                                     elem_id="tensors_step")
                with gr.Column(scale=3):
                    ui.memory = gr.Plot(label=t("tensors_memory_plot"), elem_id="tensors_memory")
                    ui.view = gr.Plot(label=t("tensors_view_plot"), elem_id="tensors_view")
                    ui.table = gr.Markdown(elem_id="tensors_table", latex_delimiters=[])
                    ui.device = device_line("tensors_device")
            explain("tensors_layout_explain")
        with gr.Tab(t("tensors_sub_formats"), id="tensors_formats"):
            gr.Markdown(t("tensors_formats_moved"))
            ui.value = Number(70000.0, label=t("tensors_value"), info=t("tensors_value_info"), elem_id="tensors_value")
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
                    with gr.Row():
                        run = gr.Button(t("compute_run"), variant="primary", elem_id="compute_run")
                        stop = gr.Button(t("compute_stop"), variant="stop", elem_id="compute_stop")
                with gr.Column(scale=3):
                    ui.matmul_plot = gr.Plot(label=t("compute_matmul_plot"), elem_id="compute_matmul_plot")
                    ui.matmul_summary = gr.Markdown(elem_id="compute_matmul_summary", latex_delimiters=[])
                    ui.compute_device = device_line("compute_device")
            gr.Markdown(t("compute_estimate_heading"))
            with gr.Row():
                with gr.Column(scale=1, min_width=300):
                    ui.n_params = Number(7e9, label=t("compute_params"), elem_id="compute_params")
                    ui.tokens = Number(1e12, label=t("compute_tokens"), elem_id="compute_tokens")
                    ui.n_gpus = Number(1024, precision=0, label=t("compute_gpus"), elem_id="compute_gpus")
                    ui.gpu = Dropdown(list(PEAK_NAMES), value="H100 SXM", label=t("compute_gpu"), elem_id="compute_gpu")
                    ui.mfu_percent = Slider(1, 100, value=40, step=1, label=t("compute_mfu"), elem_id="compute_mfu")
                with gr.Column(scale=3):
                    ui.estimate = gr.Markdown(elem_id="compute_estimate")
            explain("compute_explain")

    layout = event(tensor_layout, ui, ("memory", "view", "table", "device"), show_progress="hidden")
    gr.on([ui.shape.submit, ui.shape.blur, ui.ops.blur, ui.step.input], api_name="tensor_layout",
          trigger_mode="always_last", **layout)
    ui.preset.input(**event(set_preset, ui, ("shape", "ops", "step"), api_visibility="private",
                            show_progress="hidden")).then(api_visibility="private", **layout)
    for box in (ui.shape, ui.ops):
        box.input(lambda: "custom", None, ui.preset, api_visibility="private", show_progress="hidden")
    gr.on([ui.value.submit, ui.value.blur], api_name="number_formats", show_progress="hidden",
          **event(number_formats, ui, ("bits", "rounding", "formats_table")))
    sweep = run.click(api_name="compute_matmul", show_progress="hidden", **HEAVY,
                      **event(compute_matmul, ui, ("matmul_plot", "matmul_summary", "compute_device")))
    stop.click(None, None, None, cancels=[sweep])
    gr.on([ui.n_params.submit, ui.n_params.blur, ui.tokens.submit, ui.tokens.blur, ui.n_gpus.submit,
           ui.n_gpus.blur, ui.gpu.input, ui.mfu_percent.input], api_name="compute_estimate", show_progress="hidden",
          trigger_mode="always_last", **event(compute_estimate, ui, ("estimate",)))
    return event(first_draw, ui, ("memory", "view", "table", "device", "bits", "rounding", "formats_table",
                                  "estimate", "matmul_plot"), show_progress="hidden")
