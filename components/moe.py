"""The FFN & Mixture-of-Experts tab: activations and FFN sizing, routing and load, a live training run."""
from __future__ import annotations

import functools
import time
from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain, long_run, low_priority, says_done
from components.i18n import lang_of, t
from components.widgets import Number, Radio, Slider
from components.wiring import event, grouped, join_draws
from locales import tr
from models.checks import Span, choice, flag, whole
from models.limits import (FFN_ACTIVATIONS, FFN_GATED, FFN_MAX_D_MODEL, FFN_MAX_X, MOE_EXPERT_KINDS,
                           MOE_MAX_CAPACITY_FACTOR, MOE_MAX_CHARS, MOE_MAX_D_HIDDEN, MOE_MAX_D_MODEL, MOE_MAX_EXPERTS,
                           MOE_MAX_LOGIT_SCALE, MOE_MAX_SHARED, MOE_MAX_SKEW, MOE_MAX_TOKENS, MOE_MAX_TOP_K,
                           MOE_MIN_CAPACITY_FACTOR, MOE_TRAIN_MAX_AUX, MOE_TRAIN_MAX_EXPERTS, MOE_TRAIN_MAX_STEPS,
                           MOE_TRAIN_MAX_TOP_K, MOE_TRAIN_MAX_Z, MOE_TRAIN_MIN_STEPS, SEED)

DEFAULT_TEXT = "The cat sat on the mat, and the dog sat on the log.\n天气晴朗，适合露营。"
MULTIPLES = (1, 8, 64, 128, 256, 1024, 4096)           # Llama-2 uses 256; Llama-3 1024; Llama-2-70B 4096
SOURCES = ("text", "random")
DEFAULT_ACTIVATIONS = ("relu", "gelu", "silu", "swiglu")
# What each view's endpoint returns, by the names of its output widgets.
ACTIVATION_OUTPUTS = ("act_plot", "gated_plot", "device")
SIZE_OUTPUTS = ("sizes_plot", "sizes_md")
ROUTE_OUTPUTS = ("route_plot", "flow_plot", "loss_plot", "summary", "device")
TRAIN_PLOTS = ("load_plot", "curves_plot", "chars_plot")
TRAIN_OUTPUTS = ("status", *TRAIN_PLOTS, "device")
STREAM_INTERVAL_S = 0.4            # the training view redraws at most this often (and at the end)
# What each bounded control offers; its widget is built from the span and its endpoint checks with it.
X_END = Span(-FFN_MAX_X, FFN_MAX_X, step=0.5)        # the activation plot's x range (checked in models.ffn)
D_FFN = Span(1, FFN_MAX_D_MODEL)
CAPACITY = Span(MOE_MIN_CAPACITY_FACTOR, MOE_MAX_CAPACITY_FACTOR, step=0.05)
ROUTE = SimpleNamespace(                             # the routing view
    n_random=Span(1, MOE_MAX_TOKENS), experts=Span(2, MOE_MAX_EXPERTS), top_k=Span(1, MOE_MAX_TOP_K),
    d_model=Span(1, MOE_MAX_D_MODEL), d_hidden=Span(1, MOE_MAX_D_HIDDEN), shared=Span(0, MOE_MAX_SHARED),
    sharpness=Span(0, MOE_MAX_LOGIT_SCALE, step=0.1), skew=Span(0, MOE_MAX_SKEW, step=0.1))
TRAIN = SimpleNamespace(                             # the training run
    aux_coef=Span(0, MOE_TRAIN_MAX_AUX, step=0.005), z_coef=Span(0, MOE_TRAIN_MAX_Z, step=0.001),
    experts=Span(2, MOE_TRAIN_MAX_EXPERTS), top_k=Span(1, MOE_TRAIN_MAX_TOP_K),
    steps=Span(MOE_TRAIN_MIN_STEPS, MOE_TRAIN_MAX_STEPS, step=10))

# --------------------------------------------------------------------------- FFN view


def ffn_activations(activations: list[str] = DEFAULT_ACTIVATIONS, x_min: float = -4.0, x_max: float = 4.0,
                    gated: str = "swiglu", request: gr.Request = None) -> dict:
    """The ``/ffn_activations`` endpoint: curves and derivatives, the gated unit's plane, the device line."""
    from models.ffn import activation_curves, gated_surface
    from viz.moe import activation_figure, gated_figure

    lang = lang_of(request)
    curves = activation_curves(activations, x_min, x_max)             # checks the names and the range
    grid, z = gated_surface(gated, max(abs(x_min), abs(x_max)))
    values = {n: v.tolist() for n, v in curves.values.items()}
    derivs = {n: v.tolist() for n, v in curves.derivatives.items()}
    return {"act_plot": activation_figure(curves.x.tolist(), values, derivs, lang),
            "gated_plot": gated_figure(gated, grid.tolist(), z.tolist(), lang), "device": str(curves.timing)}


def ffn_sizes(d_model: int = 4096, multiple_of: int = 256, request: gr.Request = None) -> dict:
    """The ``/ffn_sizes`` endpoint: dense 4d GELU FFN vs SwiGLU at 8/3·d, counted from built modules."""
    from models.ffn import compare_ffn_sizes
    from viz.moe import ffn_sizes_figure

    lang = lang_of(request)
    s = compare_ffn_sizes(D_FFN.whole("moe_d_ffn", d_model), whole("moe_multiple", multiple_of, 1, max(MULTIPLES)))
    text = tr(lang, "moe_sizes_md", d=s.d_model, exact=s.exact_hidden, rule=s.unrounded_hidden, m=s.multiple_of,
              h=s.swiglu_hidden, dense=s.dense_total, swiglu=s.swiglu_total, change=s.change)
    return {"sizes_plot": ffn_sizes_figure(s, lang), "sizes_md": text}


# --------------------------------------------------------------------------- routing view


def _capacity(use: bool, factor) -> float | None:
    """The capacity factor when its box is ticked; the slider is checked either way."""
    factor = CAPACITY.number("moe_capacity", factor)
    return factor if flag("moe_use_capacity", use) else None


@grouped(tokens=dict(source="text", text=DEFAULT_TEXT, n_random=64, seed=0),
         layer=dict(experts=8, top_k=2, d_model=32, d_hidden=64, expert_kind="swiglu", use_capacity=False,
                    capacity=1.0, shared=0, shared_gate=False),
         router=dict(sharpness=1.0, skew=0.0))
def moe_route(tokens: dict, layer: dict, router: dict, request: gr.Request = None) -> dict:
    """The ``/moe_route`` endpoint (parameters: the tokens', the layer's, the router's controls, by name):
    routing heatmap and load, dropped assignments, losses and counts."""
    from models.moe_explore import RouteSpec, explore_routing, split_tokens
    from viz.moe import flow_figure, loss_figure, routing_figure

    lang = lang_of(request)
    source = choice("moe_source", tokens["source"], SOURCES)
    shared = ROUTE.shared.whole("moe_shared", layer["shared"])
    spec = RouteSpec(
        num_experts=ROUTE.experts.whole("moe_experts", layer["experts"]),
        top_k=ROUTE.top_k.whole("moe_top_k", layer["top_k"]),
        d_model=ROUTE.d_model.whole("moe_d_model", layer["d_model"]),
        d_hidden=ROUTE.d_hidden.whole("moe_d_hidden", layer["d_hidden"]),
        capacity_factor=_capacity(layer["use_capacity"], layer["capacity"]),
        num_shared=shared,
        # With no shared experts the gate has nothing to scale: ignored, so that a gate left ticked while
        # the slider goes to 0 does not refuse every later change.
        shared_gate=flag("moe_shared_gate", layer["shared_gate"]) and shared > 0,
        expert=layer["expert_kind"],
        logit_scale=ROUTE.sharpness.number("moe_sharpness", router["sharpness"]),
        skew=ROUTE.skew.number("moe_skew", router["skew"]))
    words = split_tokens(tokens["text"]) if source == "text" else None
    ex = explore_routing(words, spec, n_random=ROUTE.n_random.whole("moe_n_random", tokens["n_random"]),
                         seed=SEED.whole("seed", tokens["seed"]))
    kept, idx, c = ex.kept.tolist(), ex.topk_idx.tolist(), ex.counts
    counts = {"total": c.total, "active": c.active, "dense": c.dense, "flops_moe": c.flops_moe,
              "flops_dense": c.flops_dense}
    summary = tr(lang, "moe_route_md", n=len(ex.labels), k=spec.top_k, assignments=ex.assignments,
                 capacity="—" if ex.capacity is None else ex.capacity, dropped=ex.dropped, aux=ex.aux_loss,
                 E=spec.num_experts, z=ex.z_loss, total=c.total, active=c.active, share=c.active_share, dense=c.dense)
    if ex.tied_tokens:
        summary += tr(lang, "moe_route_ties", n=ex.tied_tokens, N=len(ex.labels))
    return {"route_plot": routing_figure(ex.labels, ex.probs.tolist(), idx, kept, ex.load.tolist(),
                                         ex.kept_load.tolist(), ex.dropped_load.tolist(), ex.balanced_load, ex.capacity,
                                         spec.num_shared, ex.shared_weight.tolist(), lang),
            "flow_plot": flow_figure(ex.flows().tolist(), ex.kept_slots.tolist(), ex.routed_norm.tolist(), ex.dropped,
                                     ex.assignments, lang, tokens=ex.labels),
            "loss_plot": loss_figure(ex.aux_loss, ex.z_loss, spec.num_experts, spec.top_k, counts, lang),
            "summary": summary, "device": str(ex.timing)}


# --------------------------------------------------------------------------- training view


@grouped(layer=dict(experts=8, top_k=1, aux_coef=0.05, z_coef=0.0, use_capacity=False, capacity=1.25),
         run=dict(steps=150, seed=0, compare=True))
def moe_train(layer: dict, run: dict, request: gr.Request = None):
    """The ``/moe_train`` endpoint (streams; parameters: the layer's, then the run's controls, by name):
    status, load heatmaps, curves, the final expert-character map, device."""
    from models.moe_train import MoETrainConfig, train_moe
    from viz.moe import expert_chars_figure, train_curves_figure, train_load_figure

    lang = lang_of(request)
    cfg = MoETrainConfig(                                              # bad settings: a message, no worker
        num_experts=TRAIN.experts.whole("moe_experts", layer["experts"]),
        top_k=TRAIN.top_k.whole("moe_top_k", layer["top_k"]),
        aux_coef=TRAIN.aux_coef.number("moe_aux_coef", layer["aux_coef"]),
        z_coef=TRAIN.z_coef.number("moe_z_coef", layer["z_coef"]),
        capacity_factor=_capacity(layer["use_capacity"], layer["capacity"]),
        steps=TRAIN.steps.whole("steps", run["steps"]),
        seed=SEED.whole("seed", run["seed"]),
        compare=flag("moe_compare", run["compare"]))
    shown = 0.0
    # A low-priority process on the CPU (the instant tabs keep the CPU and the GIL); a thread on CUDA.
    for p in low_priority(train_moe, cfg):
        if not p.done and time.monotonic() - shown < STREAM_INTERVAL_S:
            continue                                                  # drawing costs the server: a few frames a second
        shown = time.monotonic()
        curves = {name: {"cv": h.cv, "aux": h.aux, "task": h.task} for name, h in p.runs.items()}
        chars = (expert_chars_figure(list(p.vocab), p.expert_chars, cfg.aux_coef, lang) if p.expert_chars else None)
        yield {"status": _train_markdown(p, lang),
               "load_plot": train_load_figure({n: h.binned_load() for n, h in p.runs.items()}, cfg.aux_coef,
                                              cfg.steps, lang),
               "curves_plot": train_curves_figure(curves, cfg.aux_coef, cfg.num_experts, cfg.top_k, cfg.steps, lang),
               "chars_plot": chars, "device": str(p.timing)}


def _train_markdown(p, lang: str) -> str:
    """The progress line and, per run, the last steps' means (:meth:`models.moe_train.History.tail`)."""
    from models.moe_train import TAIL_STEPS
    rows = [tr(lang, "moe_train_row", run=tr(lang, f"moe_train_run_{name}", c=p.config.aux_coef), cv=h.tail("cv"),
               aux=h.tail("aux"), task=h.tail("task"), dropped=h.tail("dropped"))
            for name, h in p.runs.items()]
    return "\n".join([tr(lang, "moe_train_head", step=p.step, steps=p.config.steps, n=TAIL_STEPS), "",
                      tr(lang, "moe_train_cols"), "|---|---|---|---|---|", *rows])


# --------------------------------------------------------------------------- layout


def train_waiting(request: gr.Request = None) -> dict:
    """The training view's figures before the first run, saying how to fill them."""
    from viz.moe import waiting_figures
    return dict(zip(TRAIN_PLOTS, waiting_figures(lang_of(request))))


def _slider(span: Span, value, elem_id, label: str | None = None):
    """A slider over ``span`` whose label key is its ``elem_id`` unless another key is given."""
    return Slider.over(span, value, label=t(label or elem_id), elem_id=elem_id)


def build() -> dict:
    """Lay out the tab's three views, wire their events, return the first-draw event: the FFN view,
    the routing view, and the training figures saying how to fill them."""
    gr.Markdown(t("moe_intro"))
    with gr.Tabs():
        with gr.Tab(t("moe_sub_ffn"), id="moe_ffn"):
            ffn = _ffn_view()
        with gr.Tab(t("moe_sub_route"), id="moe_route"):
            route = _route_view()
        with gr.Tab(t("moe_sub_train"), id="moe_train"):
            train = _train_view()
    draws = [event(ffn_activations, ffn, ACTIVATION_OUTPUTS), event(ffn_sizes, ffn, SIZE_OUTPUTS),
             event(moe_route, route, ROUTE_OUTPUTS), event(train_waiting, train, TRAIN_PLOTS)]
    return {**functools.reduce(join_draws, draws), "show_progress": "hidden"}


def _ffn_view() -> SimpleNamespace:
    ui = SimpleNamespace()
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            ui.activations = gr.CheckboxGroup([(t(f"moe_act_{a}"), a) for a in FFN_ACTIVATIONS],
                                              value=list(DEFAULT_ACTIVATIONS), label=t("moe_activations"),
                                              elem_id="moe_activations")
            with gr.Row():
                ui.x_min = _slider(X_END, -4, "moe_x_min")
                ui.x_max = _slider(X_END, 4, "moe_x_max")
            ui.gated = Radio([(t(f"moe_act_{g}"), g) for g in FFN_GATED], value="swiglu", label=t("moe_gated"),
                                elem_id="moe_gated")
            ui.d_model = Number.over(D_FFN, 4096, precision=0, label=t("moe_d_ffn"), elem_id="moe_d_ffn")
            ui.multiple_of = Radio(list(MULTIPLES), value=256, label=t("moe_multiple"),
                                      info=t("moe_multiple_info"), elem_id="moe_multiple")
        with gr.Column(scale=3):
            ui.act_plot = gr.Plot(label=t("moe_act_plot"), elem_id="moe_act_plot")
            ui.gated_plot = gr.Plot(label=t("moe_gated_plot"), elem_id="moe_gated_plot")
            ui.sizes_plot = gr.Plot(label=t("moe_sizes_plot"), elem_id="moe_sizes_plot")
            ui.sizes_md = gr.Markdown(elem_id="moe_sizes_md")
            ui.device = device_line()
            explain("moe_ffn_explain")
    gr.on([ui.activations.input, ui.x_min.input, ui.x_max.input, ui.gated.input], api_name="ffn_activations",
          show_progress="hidden", trigger_mode="always_last", **event(ffn_activations, ui, ACTIVATION_OUTPUTS))
    gr.on([ui.d_model.submit, ui.d_model.blur, ui.multiple_of.input], api_name="ffn_sizes", show_progress="hidden",
          **event(ffn_sizes, ui, SIZE_OUTPUTS))
    return ui


def _route_view() -> SimpleNamespace:
    ui = SimpleNamespace()
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            ui.source = Radio([(t(f"moe_source_{s}"), s) for s in SOURCES], value="text", label=t("moe_source"),
                                 elem_id="moe_source")
            ui.text = gr.Textbox(DEFAULT_TEXT, lines=3, max_lines=8, label=t("moe_text"), elem_id="moe_text",
                                 max_length=MOE_MAX_CHARS)
            with gr.Row():
                ui.n_random = _slider(ROUTE.n_random, 64, "moe_n_random")
                ui.seed = Number.seed(t("moe_seed"), "moe_seed")
            with gr.Row():
                ui.experts = _slider(ROUTE.experts, 8, "moe_experts")
                ui.top_k = _slider(ROUTE.top_k, 2, "moe_top_k")
            with gr.Row():
                ui.d_model = _slider(ROUTE.d_model, 32, "moe_d_model")
                ui.d_hidden = _slider(ROUTE.d_hidden, 64, "moe_d_hidden")
            ui.expert_kind = Radio([(t(f"moe_kind_{k}"), k) for k in MOE_EXPERT_KINDS], value="swiglu",
                                      label=t("moe_expert_kind"), elem_id="moe_expert_kind")
            ui.use_capacity = gr.Checkbox(False, label=t("moe_use_capacity"), elem_id="moe_use_capacity")
            ui.capacity = _slider(CAPACITY, 1.0, "moe_capacity")
            ui.shared = _slider(ROUTE.shared, 0, "moe_shared")
            ui.shared_gate = gr.Checkbox(False, label=t("moe_shared_gate"), elem_id="moe_shared_gate")
            ui.sharpness = _slider(ROUTE.sharpness, 1.0, "moe_sharpness")
            ui.skew = _slider(ROUTE.skew, 0.0, "moe_skew")
        with gr.Column(scale=3):
            ui.route_plot = gr.Plot(label=t("moe_route_plot"), elem_id="moe_route_plot")
            ui.summary = gr.Markdown(elem_id="moe_route_md")
            ui.flow_plot = gr.Plot(label=t("moe_flow_plot"), elem_id="moe_flow_plot")
            ui.loss_plot = gr.Plot(label=t("moe_loss_plot"), elem_id="moe_loss_plot")
            ui.device = device_line()
            explain("moe_route_explain")
    sliders = [ui.n_random, ui.experts, ui.top_k, ui.d_model, ui.d_hidden, ui.capacity, ui.shared, ui.sharpness,
               ui.skew]
    gr.on([ui.source.input, ui.text.submit, ui.text.blur, ui.seed.submit, ui.seed.blur, ui.expert_kind.input,
           ui.use_capacity.input, ui.shared_gate.input, *(s.input for s in sliders)], api_name="moe_route",
          show_progress="hidden", trigger_mode="always_last", **event(moe_route, ui, ROUTE_OUTPUTS))
    return ui


def _train_view() -> SimpleNamespace:
    ui = SimpleNamespace()
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            ui.aux_coef = _slider(TRAIN.aux_coef, 0.05, "moe_aux_coef")
            ui.z_coef = _slider(TRAIN.z_coef, 0.0, "moe_z_coef")
            with gr.Row():
                ui.experts = _slider(TRAIN.experts, 8, "moe_train_experts", "moe_experts")
                ui.top_k = _slider(TRAIN.top_k, 1, "moe_train_top_k", "moe_top_k")
            ui.use_capacity = gr.Checkbox(False, label=t("moe_use_capacity"), elem_id="moe_train_use_capacity")
            ui.capacity = _slider(CAPACITY, 1.25, "moe_train_capacity")
            with gr.Row():
                ui.steps = _slider(TRAIN.steps, 150, "moe_steps")
                ui.seed = Number.seed(t("moe_train_seed"), "moe_train_seed")
            ui.compare = gr.Checkbox(True, label=t("moe_compare"), elem_id="moe_compare")
            with gr.Row():
                ui.train = gr.Button(t("moe_train_button"), variant="primary", elem_id="moe_train_button")
                ui.stop = gr.Button(t("moe_stop"), variant="stop", elem_id="moe_stop")
        with gr.Column(scale=3):
            gr.Markdown(t("moe_train_status_idle"))              # what Train does; the status below says how it goes
            ui.status = gr.Markdown(elem_id="moe_train_status")
            ui.load_plot = gr.Plot(label=t("moe_train_load_plot"), elem_id="moe_train_load")
            ui.curves_plot = gr.Plot(label=t("moe_train_curves_plot"), elem_id="moe_train_curves")
            ui.chars_plot = gr.Plot(label=t("moe_train_chars_plot"), elem_id="moe_train_chars")
            ui.device = device_line()
            explain("moe_train_explain")
    long_run([ui.train.click], ui.stop, ui.status, api_name="moe_train",
             **event(says_done(moe_train), ui, TRAIN_OUTPUTS))
    return ui
