"""The Normalization tab: where the norm goes (Post-LN, Pre-LN, Sandwich, DeepNorm), live.

Four parts: the gradients at initialisation (``/norm_gradients``, one backward pass per placement,
streamed from a low-priority worker on the heavy queue) with a depth sweep (``/norm_depth_sweep``,
streams), a real training run of four models (``/norm_train``, streams, with Stop), the axes each norm
averages over (``/norm_axes``, instant), and training stability (``/softmax_overflow``,
``/stability_sweep``: :mod:`components.norms_stability`).

The first draw is instant (the axes view, the waiting figures) and sets ``grads_ticket``, whose change
starts ``/norm_gradients``: opening the tab never holds an instant request for a backward pass.
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import gradio as gr

from components import norms_stability
from components.common import HEAVY, device_line, explain, long_run, low_priority, says_done
from components.i18n import lang_of, t
from components.widgets import CheckboxGroup, Number, Radio, Slider, fit_sliders
from components.wiring import event, fit_then_draw, grouped, join_draws
from locales import tr
from models.checks import InputError, Span, choice, flag, number, whole
from models.limits import (GRAD_BATCH, GRAD_D_MODEL, GRAD_SEQ_LEN, NORM_AXES_MAX, NORM_MAX_BATCH, NORM_MAX_D_MODEL,
                           NORM_MAX_HEADS, NORM_MAX_LAYERS, NORM_MAX_SEQ_LEN, NORM_MIN_D_MODEL, NORM_MIN_LAYERS,
                           NORM_TRAIN_MAX_LR, NORM_TRAIN_MAX_STEPS, NORM_TRAIN_MIN_STEPS, SEED)

VARIANTS = ("post", "pre", "sandwich", "deepnorm")       # models.norms.VARIANTS, without importing torch
NORMS = ("layernorm", "rmsnorm")
DEFAULT_VARIANTS = ("post", "pre")                       # the two placements Xiong et al. compare
STREAM_EVERY_S = 0.5                                     # a training figure at most this often
SECTIONS = (norms_stability,)                            # parts built by their own module
# What each bounded control offers; its widget is built from the span and its endpoint checks with it. (The
# learning rate's box has an open lower end, checked as "above 0"; the highlighted cell's sliders end at the shape.)
STACK_SPANS = SimpleNamespace(
    n_layers=Span(NORM_MIN_LAYERS, NORM_MAX_LAYERS), d_model=Span(NORM_MIN_D_MODEL, NORM_MAX_D_MODEL, step=16),
    n_heads=Span(1, NORM_MAX_HEADS), seq_len=Span(2, NORM_MAX_SEQ_LEN), batch=Span(1, NORM_MAX_BATCH))
TRAIN_STEPS = Span(NORM_TRAIN_MIN_STEPS, NORM_TRAIN_MAX_STEPS, step=10)
WARMUP = Span(1, NORM_TRAIN_MAX_STEPS)
AXES_SPANS = SimpleNamespace(batch=Span(1, NORM_AXES_MAX), tokens=Span(1, NORM_AXES_MAX),
                             features=Span(2, NORM_AXES_MAX))


def _variants(values) -> list[str]:
    """The chosen placements, each once, in the order given."""
    if not isinstance(values, (list, tuple)) or not values:
        raise InputError("norms_err_no_variant", variants=", ".join(VARIANTS))
    return list(dict.fromkeys(choice("norms_variant", v, VARIANTS) for v in values))


def _stack_args(n_layers, d_model, n_heads, norm, seq_len, batch, seed) -> dict:
    """The stack's settings from the UI's controls, each checked (the UI's depth starts at 2)."""
    s = STACK_SPANS
    return dict(n_layers=s.n_layers.whole("norms_layers", n_layers), d_model=s.d_model.whole("d_model", d_model),
                n_heads=s.n_heads.whole("n_heads", n_heads), norm=choice("norms_norm", norm, NORMS),
                seq_len=s.seq_len.whole("norms_seq_len", seq_len), batch=s.batch.whole("norms_batch", batch),
                seed=SEED.whole("seed", seed))


STACK = dict(n_layers=12, d_model=GRAD_D_MODEL, n_heads=4, norm="layernorm")    # the stack's controls
RUN = dict(seq_len=GRAD_SEQ_LEN, batch=GRAD_BATCH, seed=0)                       # ... and its batch's


@grouped(stack=STACK, view=dict(variants=DEFAULT_VARIANTS, log_y=True), batch=RUN)
def norm_gradients(stack: dict, view: dict, batch: dict, request: gr.Request = None):
    """The ``/norm_gradients`` endpoint (heavy queue, streams; parameters: the stack's, the placements and
    the axis, the batch's, by name): the per-layer gradient norms of each placement as soon as it is
    measured (one backward pass each), a summary, the device line ("…" until the last)."""
    from models.device import Timing
    from models.norms import gradient_trend, gradients_by_variant
    from viz.norms import gradients_figure, gradients_summary

    lang = lang_of(request)
    args = _stack_args(**stack, **batch)
    chosen, log_y = _variants(view["variants"]), flag("norm_log", view["log_y"])
    measured, total_ms, n = {}, 0.0, args.pop("n_layers")
    for g in low_priority(gradients_by_variant, n, chosen, **args):                  # the instant tabs first
        measured[g.variant] = {"per_layer": g.per_layer, "stream_rms": g.stream_rms}
        total_ms += g.timing.ms
        more = " …" if len(measured) < len(chosen) else ""
        trend = gradient_trend({v: r["per_layer"]["ffn_out"] for v, r in measured.items()},
                               {v: r["stream_rms"] for v, r in measured.items()})
        yield {"grads_plot": gradients_figure(measured, norm=args["norm"], d_model=args["d_model"], log_y=log_y,
                                              lang=lang),
               "summary": gradients_summary(trend, n, lang),
               "device": tr(lang, "norm_device_grads", timing=Timing(g.timing.device, total_ms), n=len(measured),
                            more=more)}


@grouped(stack=STACK, view=dict(variants=DEFAULT_VARIANTS), batch=RUN)
def norm_depth_sweep(stack: dict, view: dict, batch: dict, request: gr.Request = None):
    """The ``/norm_depth_sweep`` endpoint (heavy queue; the gradients' parameters but the axis): streams the
    top layer's gradient as each depth up to the stack's is measured."""
    from models.device import Timing
    from models.norms import depth_slope, depth_sweep, sweep_depths
    from viz.norms import sweep_figure

    lang = lang_of(request)
    args = _stack_args(**stack, **batch)
    chosen = _variants(view["variants"])
    points: dict[str, list] = {v: [] for v in chosen}
    total_ms = 0.0
    depths = sweep_depths(args.pop("n_layers"))
    for point in low_priority(depth_sweep, depths, chosen, **args):            # the instant tabs keep the CPU
        points[point.variant].append((point.n_layers, point.top["ffn_out"]))
        total_ms += point.timing.ms
        slopes = {v: depth_slope(p) for v, p in points.items()}
        yield {"sweep_plot": sweep_figure(points, slopes=slopes, lang=lang),
               "device": f"{Timing(point.timing.device, total_ms)} · L = {point.n_layers}"}


def norm_train(lr: float = 5e-3, steps: int = 300, warmup: int = 100, norm: str = "layernorm", seed: int = 0,
               request: gr.Request = None):
    """The ``/norm_train`` endpoint: streams the four runs' curves, findings and progress."""
    from models.norm_data import unigram_entropy
    from models.norm_training import BLOW_UP, TrainConfig, finding, train_steps
    from viz.norms import training_figure, training_summary

    lang = lang_of(request)
    config = TrainConfig(lr=number("learning_rate", lr, 0, NORM_TRAIN_MAX_LR, above=True),
                         steps=TRAIN_STEPS.whole("steps", steps), warmup=WARMUP.whole("norms_warmup_steps", warmup),
                         norm=choice("norms_norm", norm, NORMS), seed=SEED.whole("seed", seed))
    last = 0.0
    for progress in low_priority(train_steps, config):                         # the instant tabs keep the CPU
        now = time.perf_counter()
        if not progress.done and now - last < STREAM_EVERY_S:
            continue
        last = now
        runs = [vars(run) for run in progress.runs]
        plateau = unigram_entropy()
        findings = [finding(run, plateau=plateau, done=progress.done) for run in progress.runs]
        fig = training_figure(runs, step=progress.step, steps=config.steps, lr=config.lr, warmup=config.warmup,
                              blow_up=BLOW_UP, lang=lang)
        status = f"{progress.step} / {config.steps}"
        if progress.timing:
            status += f" · {progress.timing}"
        yield {"train_plot": fig, "findings": training_summary(runs, findings, lang, plateau=plateau, blow_up=BLOW_UP),
               "status": status}


def norm_axes(batch: int = 2, tokens: int = 4, features: int = 6, seed: int = 0, item: int = 1, token: int = 2,
              feature: int = 3, request: gr.Request = None) -> dict:
    """The ``/norm_axes`` endpoint: input and three norms as grids, the chosen cell's group outlined."""
    from models.norm_axes import norm_axes as compute
    from viz.norms import axes_figure, axes_summary

    lang = lang_of(request)
    a = AXES_SPANS
    shape = [a.batch.whole("norms_axes_batch", batch), a.tokens.whole("norms_axes_tokens", tokens),
             a.features.whole("norms_axes_features", features)]
    cell = tuple(whole(name, v, 1, size) - 1 for name, v, size in
                 (("norms_item", item, shape[0]), ("norms_token", token, shape[1]), ("norms_feature", feature, shape[2])))
    view = compute(*shape, seed=SEED.whole("seed", seed))
    fig = axes_figure(view.x, view.outputs, view.stats, cell, lang=lang)
    return {"axes_plot": fig, "axes_check": axes_summary(view.max_error, lang), "axes_device": str(view.timing)}


def fit_cell(batch: int = 2, tokens: int = 4, features: int = 6, item: int = 1, token: int = 2,
             feature: int = 3) -> dict:
    """The highlight sliders end at the shape's items, tokens and features (``fit_sliders``); one whose
    size is not valid is left as it is (the draw names the error)."""
    a = AXES_SPANS
    return fit_sliders(item=("norms_item", item, lambda: a.batch.whole("norms_axes_batch", batch)),
                       token=("norms_token", token, lambda: a.tokens.whole("norms_axes_tokens", tokens)),
                       feature=("norms_feature", feature, lambda: a.features.whole("norms_axes_features", features)))


def first_draw(batch: int = 2, tokens: int = 4, features: int = 6, seed: int = 0, item: int = 1, token: int = 2,
               feature: int = 3, request: gr.Request = None) -> dict:
    """The axes view when the tab opens, and the other figures saying what fills them. The gradients
    are measured by ``/norm_gradients`` itself: ``grads_ticket`` changing starts it."""
    from viz.norms import waiting_figures
    grads, sweep, train = waiting_figures(lang_of(request))
    return {**norm_axes(batch, tokens, features, seed, item, token, feature, request=request),
            "grads_plot": grads, "sweep_plot": sweep, "train_plot": train, "grads_ticket": 1}


def build() -> dict:
    """Lay out the tab, wire its events, return the first-draw event; its ``at_root`` blocks must be rendered
    outside every tab (:func:`components.share.wire` does) or the page will not launch."""
    grads, train, axes = SimpleNamespace(), SimpleNamespace(), SimpleNamespace()
    # The first draw sets the ticket: the gradients follow. It is placed at the page's root (``at_root``,
    # components.share.wire): a State inside a tab not yet shown fires its change whenever an event lists it
    # as an output (Gradio 6.31), and the page load's draw lists every tab's outputs.
    grads.grads_ticket = gr.State(0, render=False)
    gr.Markdown(t("norm_intro"))
    gr.Markdown(t("norm_init_heading"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            grads.variants = CheckboxGroup([(t(f"norm_{v}"), v) for v in VARIANTS], value=list(DEFAULT_VARIANTS),
                                           label=t("norm_variants"), elem_id="norm_variants")
            grads.n_layers = Slider.over(STACK_SPANS.n_layers, 12, label=t("norm_layers"), elem_id="norm_layers")
            with gr.Row():
                grads.d_model = Slider.over(STACK_SPANS.d_model, GRAD_D_MODEL, label=t("norm_width"),
                                            elem_id="norm_width")
                grads.n_heads = Slider.over(STACK_SPANS.n_heads, 4, label=t("norm_heads"), elem_id="norm_heads")
            grads.norm = Radio([(t(f"norm_{k}"), k) for k in NORMS], value="layernorm", label=t("norm_kind"),
                               elem_id="norm_kind")
            with gr.Row():
                grads.seq_len = Slider.over(STACK_SPANS.seq_len, GRAD_SEQ_LEN, label=t("norm_seq"), elem_id="norm_seq")
                grads.batch = Slider.over(STACK_SPANS.batch, GRAD_BATCH, label=t("norm_batch"), elem_id="norm_batch")
            with gr.Row():
                grads.seed = Number.seed(t("norm_seed"), "norm_seed")
                grads.log_y = gr.Checkbox(True, label=t("norm_log"), elem_id="norm_log")
            sweep = gr.Button(t("norm_sweep"), elem_id="norm_sweep")
        with gr.Column(scale=3):
            grads.grads_plot = gr.Plot(label=t("norm_grads_plot"), elem_id="norm_grads_plot")
            grads.summary = gr.Markdown(elem_id="norm_summary")
            grads.sweep_plot = gr.Plot(label=t("norm_sweep_plot"), elem_id="norm_sweep_plot")
            grads.device = device_line("norm_grads_device")

    gr.Markdown(t("norm_train_heading"))
    gr.Markdown(t("norm_train_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            train.lr = Number(5e-3, minimum=0, maximum=NORM_TRAIN_MAX_LR, label=t("norm_lr"), elem_id="norm_lr")
            train.steps = Slider.over(TRAIN_STEPS, 300, label=t("norm_steps"), elem_id="norm_steps")
            train.warmup = Slider.over(WARMUP, 100, label=t("norm_warmup"), elem_id="norm_warmup")
            train.norm = Radio([(t(f"norm_{k}"), k) for k in NORMS], value="layernorm", label=t("norm_kind"),
                               elem_id="norm_train_kind")
            train.seed = Number.seed(t("norm_train_seed"), "norm_train_seed")
            with gr.Row():
                run = gr.Button(t("norm_train_button"), variant="primary", elem_id="norm_train")
                stop = gr.Button(t("norm_stop"), variant="stop", elem_id="norm_stop")
        with gr.Column(scale=3):
            train.train_plot = gr.Plot(label=t("norm_train_plot"), elem_id="norm_train_plot")
            train.findings = gr.Markdown(elem_id="norm_findings")
            train.status = gr.Textbox(label=t("norm_train_status"), interactive=False, max_lines=1,
                                      elem_classes="device-line", elem_id="norm_train_status")

    gr.Markdown(t("norm_axes_heading"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            with gr.Row():
                axes.batch = Slider.over(AXES_SPANS.batch, 2, label=t("norm_axes_batch"), elem_id="norm_axes_batch")
                axes.tokens = Slider.over(AXES_SPANS.tokens, 4, label=t("norm_axes_tokens"),
                                          elem_id="norm_axes_tokens")
                axes.features = Slider.over(AXES_SPANS.features, 6, label=t("norm_axes_features"),
                                            elem_id="norm_axes_features")
            with gr.Row():
                axes.item = Slider(1, NORM_AXES_MAX, value=1, step=1, label=t("norm_axes_b"), elem_id="norm_axes_b")
                axes.token = Slider(1, NORM_AXES_MAX, value=2, step=1, label=t("norm_axes_t"), elem_id="norm_axes_t")
                axes.feature = Slider(1, NORM_AXES_MAX, value=3, step=1, label=t("norm_axes_f"),
                                      elem_id="norm_axes_f")
            axes.seed = Number.seed(t("norm_axes_seed"), "norm_axes_seed")
        with gr.Column(scale=3):
            axes.axes_plot = gr.Plot(label=t("norm_axes_plot"), elem_id="norm_axes_plot")
            axes.axes_check = gr.Markdown(elem_id="norm_axes_check")
            axes.axes_device = device_line()
    explain("norm_explain")
    stability = norms_stability.build()                 # 4 · training stability (its own module)

    gr.on([grads.grads_ticket.change, grads.n_layers.input, grads.d_model.input, grads.n_heads.input,
           grads.norm.input, grads.variants.input, grads.log_y.input, grads.seq_len.input, grads.batch.input,
           grads.seed.submit, grads.seed.blur], api_name="norm_gradients", trigger_mode="always_last",
          show_progress="hidden", **HEAVY, **event(norm_gradients, grads, ("grads_plot", "summary", "device")))
    sweep.click(api_name="norm_depth_sweep", **HEAVY, **event(norm_depth_sweep, grads, ("sweep_plot", "device")))
    long_run([run.click], stop, train.status, api_name="norm_train",
             **event(says_done(norm_train), train, ("train_plot", "findings", "status")))
    draw_axes = event(norm_axes, axes, ("axes_plot", "axes_check", "axes_device"), show_progress="hidden")
    gr.on([axes.item.input, axes.token.input, axes.feature.input, axes.seed.submit, axes.seed.blur],
          api_name="norm_axes", trigger_mode="always_last", **draw_axes)
    # The shape sets where the highlight sliders end: fitted first, then drawn.
    fit = event(fit_cell, axes, ("item", "token", "feature"), show_progress="hidden")
    gr.on([axes.batch.input, axes.tokens.input, axes.features.input], api_visibility="private",
          trigger_mode="always_last", **fit).then(api_visibility="private", **draw_axes)
    # The first draw: the axes view, and the ticket that starts /norm_gradients (the named events are the API).
    drawn = {**vars(axes), **{k: getattr(grads, k) for k in ("grads_plot", "sweep_plot", "grads_ticket")},
             "train_plot": train.train_plot}
    first = fit_then_draw(fit, event(first_draw, drawn, ("axes_plot", "axes_check", "axes_device", "grads_plot",
                                                        "sweep_plot", "train_plot", "grads_ticket")))
    return {**join_draws(first, stability), "show_progress": "hidden",
            "at_root": [grads.grads_ticket]}
