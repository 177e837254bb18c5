"""The Positions tab: rotate vectors with RoPE, and compare it with sinusoidal and ALiBi.

Six views in sub-tabs, each with its own named endpoint (a few milliseconds each). Head dim, base
and seed sit above the views and apply to all of them; changing one redraws the view on screen
(:func:`draw`). Every handler takes its controls by name and returns its outputs by name
(:func:`components.wiring.event`); the backend checks every value and says what was wrong in the
page's language.
"""
from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Sequence

import gradio as gr

from components.common import device_line, explain
from components.i18n import lang_of, t
from components.widgets import CheckboxGroup, Number, Radio, Slider, fit_slider
from components.wiring import control_names, event, grouped
from models.checks import InputError, Span, choice, flag, whole
from models.limits import (POS_COMPARE_MAX_HEADS, POS_DIAGRAM_MAX_POSITION, POS_MAX_BASE, POS_MAX_COMPARE_LEN,
                           POS_MAX_D_MODEL, POS_MAX_DIAGRAM_DIM, POS_MAX_FACTOR, POS_MAX_HEAD_DIM, POS_MAX_HEATMAP,
                           POS_MAX_POSITION, POS_MAX_SPEED, POS_MIN_COMPARE_LEN, POS_MIN_SPAN, POS_SLIDER_MAX_POSITION,
                           SEED)

VIEWS = ("rotate", "relative", "frequencies", "extrapolation", "conventions", "compare")
# The choices of models.positions_explore (not imported here: it imports torch, and building the UI must not).
STYLES = ("half", "interleaved")
ENCODINGS = ("rope", "sinusoidal")
METHODS = ("original", "pi", "ntk", "llama3")
# Llama 3.1's published config.json (rope_theta, rope_scaling) and head dim.
LLAMA31 = dict(head_dim=128, base=500000.0, original_max_position=8192, factor=8.0, low_freq_factor=1.0,
               high_freq_factor=4.0)
PLAY_INTERVAL = 0.3                                # seconds between two frames of Play
# What the sliders offer where less than the backend computes; each widget is built from its span and its
# endpoint checks with it (the others are checked by models.positions_explore, against models.limits).
POSITION, SPEED = Span(0, POS_SLIDER_MAX_POSITION), Span(1, POS_MAX_SPEED)     # the rotate view's m, n, Play
SPAN = Span(POS_MIN_SPAN, POS_MAX_HEATMAP)                                     # the frequencies' heatmap
DIAGRAM_POSITION = Span(0, POS_DIAGRAM_MAX_POSITION)                           # the conventions view's m
COMPARE_LEN, COMPARE_HEADS = Span(POS_MIN_COMPARE_LEN, POS_MAX_COMPARE_LEN), Span(1, POS_COMPARE_MAX_HEADS)
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]


def _grid(values) -> list:
    """A tensor for a heatmap, rounded to 4 decimals (what the hover shows): a third of the JSON."""
    return values.round(decimals=4).tolist()


def _seed(seed) -> int:
    return SEED.whole("seed", seed)


def _position(name: str, position) -> int:
    """A position of the rotate view, within its sliders (the backend rotates up to POS_MAX_POSITION)."""
    return POSITION.whole(name, position)


# ----------------------------------------------------------------------------- one handler per view
def rope(head_dim: int = 128, base: float = 10000.0, seed: int = 0, style: str = "half", pair: int = 3,
         q_pos: int = 5, k_pos: int = 2, request: gr.Request = None) -> dict:
    """The ``/rope`` endpoint (Rotate): pair panels, all pairs, the picked pair's matrices, device line."""
    from models.positions_explore import RopeSpec, rotate_view
    from viz.positions import clock_figure, rotate_figure, rotation_markdown

    lang = lang_of(request)
    spec = RopeSpec(head_dim, base, style)
    q_pos, k_pos = _position("pos_q_pos", q_pos), _position("pos_k_pos", k_pos)
    v = rotate_view(spec, q_pos, k_pos, pair, seed=_seed(seed))
    picked = next(p for p in v.panels if p.pair == v.selected)
    return {
        "rotate_plot": rotate_figure(v.panels, v.selected, v.q_pos, v.k_pos, v.score, v.relative_score, lang),
        "clock_plot": clock_figure(v.thetas, v.contributions, v.q_pos, v.k_pos, v.selected, lang),
        "matrix": rotation_markdown(picked, spec.head_dim, spec.base, v.q_pos, v.k_pos, v.score, v.relative_score,
                                    lang),
        "device": str(v.timing),
    }


def rope_relative(head_dim: int = 128, base: float = 10000.0, seed: int = 0, encoding: str = "rope",
                  seq_len: int = 48, max_distance: int = 4096, request: gr.Request = None) -> dict:
    """The ``/rope_relative`` endpoint: the score map over (m, n) and its diagonals, the decay curves."""
    from models.positions_explore import RopeSpec, relative_view
    from viz.positions import decay_figure, relative_figure

    lang = lang_of(request)
    v = relative_view(RopeSpec(head_dim, base), seq_len, max_distance, encoding=encoding, seed=_seed(seed))
    return {
        "relative_plot": relative_figure(_grid(v.scores), v.offsets.tolist(), v.low.tolist(), v.high.tolist(),
                                         v.encoding, v.spread, lang),
        "decay_plot": decay_figure(v.distances.tolist(), {k: c.tolist() for k, c in v.curves.items()}, lang),
        "device": str(v.timing),
    }


def rope_frequencies(head_dim: int = 128, base: float = 10000.0, train_len: int = 4096, span: int = 128,
                     request: gr.Request = None) -> dict:
    """The ``/rope_frequencies`` endpoint: wavelength per pair against L, and cos(m·θ_i)."""
    from models.positions_explore import RopeSpec, frequencies_view
    from viz.positions import frequencies_figure

    v = frequencies_view(RopeSpec(head_dim, base), train_len, SPAN.whole("pos_span", span))
    return {"freq_plot": frequencies_figure(v.wavelengths.tolist(), {b: w.tolist() for b, w in v.references.items()},
                                            v.train_len, _grid(v.cos), v.spec.base, v.slow_pairs, v.longest,
                                            lang_of(request)),
            "device": str(v.timing)}


def rope_extrapolation(head_dim: int = 128, base: float = 10000.0, original_max_position: int = 8192,
                       factor: float = 8.0, low_freq_factor: float = 1.0, high_freq_factor: float = 4.0,
                       methods: Sequence[str] = METHODS, request: gr.Request = None) -> dict:
    """The ``/rope_extrapolation`` endpoint: frequencies per method, angles and scores past L, summary."""
    from models.positions import Llama3Scaling
    from models.positions_explore import RopeSpec, extrapolation_view
    from viz.positions import extrapolation_frequency_figure, extrapolation_markdown, extrapolation_score_figure

    lang = lang_of(request)
    scaling = Llama3Scaling(factor=factor, low_freq_factor=low_freq_factor, high_freq_factor=high_freq_factor,
                            original_max_position=original_max_position)
    v = extrapolation_view(RopeSpec(head_dim, base), scaling, methods)
    s = v.scaling
    L = s.original_max_position
    return {
        "ext_freq_plot": extrapolation_frequency_figure(v.original.tolist(), {m: th.tolist() for m, th in v.thetas.items()},
                                                        L, s.factor, v.target, v.blend, lang),
        "ext_score_plot": extrapolation_score_figure(v.distances.tolist(), {m: u.tolist() for m, u in v.unseen.items()},
                                                     {m: c.tolist() for m, c in v.scores.items()}, L, v.target, lang),
        "ext_table": extrapolation_markdown(v.methods, v.bases, v.fastest, v.safe_length, s.factor, L, v.target,
                                            s.low_freq_factor, s.high_freq_factor, lang),
        "device": str(v.timing),
    }


def rope_conventions(base: float = 10000.0, seed: int = 0, diagram_dim: int = 8, position: int = 1,
                     request: gr.Request = None) -> dict:
    """The ``/rope_conventions`` endpoint: pairing diagram, rotation matrices, the permutation checked."""
    from models.positions_explore import conventions_view
    from viz.positions_compare import conventions_markdown, matrices_figure, pairing_figure

    lang = lang_of(request)
    position = DIAGRAM_POSITION.whole("pos_position", position)
    v = conventions_view(diagram_dim, base, position, seed=_seed(seed))
    return {
        "pairing_plot": pairing_figure(v.perm, v.pair_of_dim, lang),
        "matrices_plot": matrices_figure({k: _grid(r) for k, r in v.rotations.items()}, v.position, v.matrix_diff,
                                         lang),
        "conv_check": conventions_markdown(v.perm, v.inverse, v.max_diff, v.scores, lang),
        "device": str(v.timing),
    }


def positions_compare(base: float = 10000.0, seed: int = 0, compare_len: int = 32, d_model: int = 64,
                      n_heads: int = 8, request: gr.Request = None) -> dict:
    """The ``/positions_compare`` endpoint: one token under all three schemes, the sinusoidal heatmap, ALiBi
    per head, the slopes."""
    from models.positions_explore import compare_view
    from viz.positions_compare import alibi_figure, same_token_figure, sinusoidal_figure, slopes_markdown

    lang = lang_of(request)
    compare_len = COMPARE_LEN.whole("pos_compare_len", compare_len)
    v = compare_view(compare_len, d_model, COMPARE_HEADS.whole("pos_heads", n_heads), base,
                     seed=_seed(seed))
    slopes = v.slopes.tolist()
    return {
        "same_plot": same_token_figure({k: _grid(s) for k, s in v.same_token.items()}, v.spread, lang),
        "sin_plot": sinusoidal_figure(_grid(v.pe), lang),
        "alibi_plot": alibi_figure(_grid(v.bias), v.heads, slopes, lang),
        "slopes": slopes_markdown(slopes, v.power_of_two, lang),
        "device": str(v.timing),
    }


# view -> (handler, named endpoint, outputs)
HANDLERS = {"rotate": (rope, "rope", ("rotate_plot", "clock_plot", "matrix", "device")),
            "relative": (rope_relative, "rope_relative", ("relative_plot", "decay_plot", "device")),
            "frequencies": (rope_frequencies, "rope_frequencies", ("freq_plot", "device")),
            "extrapolation": (rope_extrapolation, "rope_extrapolation",
                              ("ext_freq_plot", "ext_score_plot", "ext_table", "device")),
            "conventions": (rope_conventions, "rope_conventions",
                            ("pairing_plot", "matrices_plot", "conv_check", "device")),
            "compare": (positions_compare, "positions_compare", ("same_plot", "sin_plot", "alibi_plot", "slopes",
                                                                 "device"))}
# What redraw() may change: the pair slider's range, any view's outputs; draw() also the sub-tab on screen.
REDRAW_OUTPUTS = ("pair", *dict.fromkeys(name for _, _, outputs in HANDLERS.values() for name in outputs))
DRAW_OUTPUTS = ("subtabs", *REDRAW_OUTPUTS)


# ----------------------------------------------------------------------------- the tab as a whole
def _fitted_pair(head_dim, pair) -> tuple[int, int] | None:
    """``(pair within 0 … d/2 − 1, d/2)``; None for a bad d or pair (the view's draw reports it)."""
    try:
        pairs = whole("pos_head_dim", head_dim, 2, POS_MAX_HEAD_DIM) // 2
        picked = whole("pos_pair", pair, 0, POS_MAX_HEAD_DIM)
    except InputError:
        return None
    return min(picked, pairs - 1), pairs


ALL_CONTROLS = dict(view="rotate", head_dim=128, base=10000.0, seed=0, style="half", pair=3, q_pos=5, k_pos=2,
                    encoding="rope", seq_len=48, max_distance=4096, train_len=4096, span=128,
                    original_max_position=8192, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                    methods=METHODS, diagram_dim=8, position=1, compare_len=32, d_model=64, n_heads=8)


def _view_of(controls: dict, request: gr.Request | None) -> dict:
    """The chosen view drawn with the controls it names, the pair first fitted to d: a pair past d/2 − 1
    (d just lowered) is drawn at the last pair, not refused as if the learner had set it."""
    view = choice("pos_view", controls["view"], VIEWS)
    fn, _, _ = HANDLERS[view]
    fitted, slider = _fitted_pair(controls["head_dim"], controls["pair"]), {}
    if fitted is not None:                                         # the slider ends at d/2 − 1 too
        pair, pairs = fitted
        controls, slider = {**controls, "pair": pair}, {"pair": fit_slider("pos_pair", pair, pairs - 1, first=0)}
    return {**slider, **fn(**{name: controls[name] for name in control_names(fn)}, request=request)}


@grouped(controls=ALL_CONTROLS)
def draw(controls: dict, request: gr.Request = None) -> dict:
    """Draw the chosen view with every control of the tab, by name, and select its sub-tab: the first draw
    (after a share link's settings) and after "Llama 3.1's settings" (which opens its view)."""
    return {"subtabs": gr.Tabs(selected=choice("pos_view", controls["view"], VIEWS)), **_view_of(controls, request)}


@grouped(controls=ALL_CONTROLS)
def redraw(controls: dict, request: gr.Request = None) -> dict:
    """The view on screen redrawn when a shared control (head dim, base, seed) changes; its sub-tab is left
    alone: a box's blur fired by a click on another sub-tab still carried the old view, and selecting it
    sent the learner back."""
    return _view_of(controls, request)


def _play_positions(view: dict, play: dict) -> tuple[int, int, int, int]:
    """q's and k's positions now and after one frame of Play (k moves too when tied), each checked."""
    step = SPEED.whole("pos_speed", play["speed"])
    q, k = _position("pos_q_pos", view["q_pos"]), _position("pos_k_pos", view["k_pos"])
    return q, k, q + step, k + (step if flag("pos_both", play["both"]) else 0)


@grouped(view=dict(head_dim=128, base=10000.0, seed=0, style="half", pair=3, q_pos=5, k_pos=2),
         play=dict(both=False, speed=1))
def play_frame(view: dict, play: dict, request: gr.Request = None) -> dict:
    """One frame of Play: q (and k, if tied) move on and the rotate view is redrawn; the timer stops at
    the end of the sliders or on an error (shown once as a warning, not every frame)."""
    stop = {"timer": gr.Timer(active=False)}
    try:
        _, _, q_next, k_next = _play_positions(view, play)
        if max(q_next, k_next) > POS_SLIDER_MAX_POSITION:
            return stop
        return {"q_pos": q_next, "k_pos": k_next,
                **rope(**{**view, "q_pos": q_next, "k_pos": k_next}, request=request)}
    except InputError as exc:
        gr.Warning(exc.render(lang_of(request)))
        return stop


@grouped(view=dict(q_pos=5, k_pos=2), play=dict(both=False, speed=1))
def play_start(view: dict, play: dict, request: gr.Request = None) -> dict:
    """Play: the timer starts; at the end of the sliders q (and k, if tied, keeping n - m) first goes back
    to the start, as a video player rewinds, instead of a button that does nothing."""
    start = {"timer": gr.Timer(active=True)}
    q, k, q_next, k_next = _play_positions(view, play)
    if max(q_next, k_next) <= POS_SLIDER_MAX_POSITION:
        return start
    tied = k_next != k
    back = min(q, k) if tied else q
    return {**start, "q_pos": q - back, "k_pos": k - back if tied else k}


def llama31(methods: Sequence[str] = METHODS) -> dict:
    """The Llama 3.1 button: its settings, the extrapolation view, and its method added to those compared
    (so that the view always has it to draw, none ticked before included).

    >>> llama31([])["methods"], llama31(["pi"])["methods"]
    (['llama3'], ['pi', 'llama3'])
    """
    chosen = set(methods) if isinstance(methods, (list, tuple)) else set()
    return {**LLAMA31, "view": "extrapolation", "methods": [m for m in METHODS if m in chosen or m == "llama3"]}


def build() -> dict:
    """Lay out the tab: shared controls, six views in sub-tabs, the Explain accordion; wire the events.
    Returns the first-draw event, with the Play timer that selecting another tab pauses
    (:func:`components.share.wire` wires it)."""
    ui = SimpleNamespace()
    gr.Markdown(t("pos_intro"))
    with gr.Row(equal_height=True):
        ui.head_dim = Number(128, precision=0, step=2, minimum=2, maximum=POS_MAX_HEAD_DIM, label=t("pos_head_dim"),
                             info=t("pos_head_dim_info"), elem_id="pos_head_dim")
        ui.base = Number(10000.0, minimum=1, maximum=POS_MAX_BASE, label=t("pos_base"), info=t("pos_base_info"),
                         elem_id="pos_base")
        ui.seed = Number.seed(t("pos_seed"), "pos_seed")
    ui.view = Radio([(t(f"pos_sub_{v}"), v) for v in VIEWS], value="rotate", label=t("pos_view"), visible=False,
                    elem_id="pos_view")
    ui.timer = gr.Timer(PLAY_INTERVAL, active=False)
    tabs = {}
    with gr.Tabs(elem_id="pos_views") as ui.subtabs:
        with gr.Tab(t("pos_sub_rotate"), id="rotate", elem_id="pos_sub_rotate") as tabs["rotate"]:
            gr.Markdown(t("pos_rotate_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    ui.style = Radio([(t(f"pos_style_{s}"), s) for s in STYLES], value="half", label=t("pos_style"),
                                     elem_id="pos_style")
                    ui.pair = Slider(0, POS_MAX_HEAD_DIM // 2 - 1, value=3, step=1, label=t("pos_pair"),
                                     elem_id="pos_pair")
                    ui.q_pos = Slider.over(POSITION, 5, label=t("pos_m"), elem_id="pos_m")
                    ui.k_pos = Slider.over(POSITION, 2, label=t("pos_n"), elem_id="pos_n")
                    ui.both = gr.Checkbox(False, label=t("pos_both"), elem_id="pos_both")
                    ui.speed = Slider.over(SPEED, 1, label=t("pos_speed"), elem_id="pos_speed")
                    with gr.Row():
                        ui.play = gr.Button(t("pos_play"), variant="primary", size="sm", elem_id="pos_play")
                        ui.pause = gr.Button(t("pos_pause"), size="sm", elem_id="pos_pause")
                with gr.Column(scale=3):
                    ui.rotate_plot = gr.Plot(label=t("pos_rotate_plot"), elem_id="pos_rotate_plot")
                    ui.clock_plot = gr.Plot(label=t("pos_clock_plot"), elem_id="pos_clock_plot")
                    ui.matrix = gr.Markdown(label=t("pos_matrix"), elem_id="pos_matrix", latex_delimiters=LATEX)
        with gr.Tab(t("pos_sub_relative"), id="relative", elem_id="pos_sub_relative") as tabs["relative"]:
            gr.Markdown(t("pos_relative_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    ui.encoding = Radio([(t(f"pos_encoding_{e}"), e) for e in ENCODINGS], value="rope",
                                        label=t("pos_encoding"), elem_id="pos_encoding")
                    ui.seq_len = Slider(2, POS_MAX_HEATMAP, value=48, step=1, label=t("pos_T"), elem_id="pos_T")
                    ui.max_distance = Number(4096, precision=0, minimum=1, maximum=POS_MAX_POSITION,
                                             label=t("pos_max_distance"), elem_id="pos_max_distance")
                with gr.Column(scale=3):
                    ui.relative_plot = gr.Plot(label=t("pos_relative_plot"), elem_id="pos_relative_plot")
                    ui.decay_plot = gr.Plot(label=t("pos_decay_plot"), elem_id="pos_decay_plot")
        with gr.Tab(t("pos_sub_frequencies"), id="frequencies", elem_id="pos_sub_frequencies") as tabs["frequencies"]:
            gr.Markdown(t("pos_frequencies_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    ui.train_len = Number(4096, precision=0, minimum=1, maximum=POS_MAX_POSITION,
                                          label=t("pos_freq_train"), elem_id="pos_freq_train")
                    ui.span = Slider.over(SPAN, 128, label=t("pos_span"), elem_id="pos_span")
                with gr.Column(scale=3):
                    ui.freq_plot = gr.Plot(label=t("pos_freq_plot"), elem_id="pos_freq_plot")
        with gr.Tab(t("pos_sub_extrapolation"), id="extrapolation", elem_id="pos_sub_extrapolation") as tabs["extrapolation"]:
            gr.Markdown(t("pos_extrapolation_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    ui.original_max_position = Number(8192, precision=0, minimum=1, maximum=POS_MAX_POSITION,
                                                      label=t("pos_ext_train"), elem_id="pos_ext_train")
                    ui.factor = Number(8.0, minimum=1, maximum=POS_MAX_FACTOR, label=t("pos_factor"),
                                       elem_id="pos_factor")
                    with gr.Row():
                        ui.low_freq_factor = Number(1.0, minimum=0, maximum=POS_MAX_FACTOR, label=t("pos_low"),
                                                    elem_id="pos_low")
                        ui.high_freq_factor = Number(4.0, minimum=0, maximum=POS_MAX_FACTOR, label=t("pos_high"),
                                                     elem_id="pos_high")
                    ui.methods = CheckboxGroup([(t(f"pos_method_{m}"), m) for m in METHODS], value=list(METHODS),
                                               label=t("pos_methods"), elem_id="pos_methods")
                    ui.llama31 = gr.Button(t("pos_llama31"), size="sm", elem_id="pos_llama31")
                with gr.Column(scale=3):
                    ui.ext_freq_plot = gr.Plot(label=t("pos_ext_freq_plot"), elem_id="pos_ext_freq_plot")
                    ui.ext_score_plot = gr.Plot(label=t("pos_ext_score_plot"), elem_id="pos_ext_score_plot")
                    ui.ext_table = gr.Markdown(label=t("pos_ext_table"), elem_id="pos_ext_table")
        with gr.Tab(t("pos_sub_conventions"), id="conventions", elem_id="pos_sub_conventions") as tabs["conventions"]:
            gr.Markdown(t("pos_conventions_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    ui.diagram_dim = Slider(2, POS_MAX_DIAGRAM_DIM, value=8, step=2, label=t("pos_conv_dim"),
                                            elem_id="pos_conv_dim")
                    ui.position = Slider.over(DIAGRAM_POSITION, 1, label=t("pos_conv_m"), elem_id="pos_conv_m")
                with gr.Column(scale=3):
                    ui.pairing_plot = gr.Plot(label=t("pos_pairing_plot"), elem_id="pos_pairing_plot")
                    ui.matrices_plot = gr.Plot(label=t("pos_matrices_plot"), elem_id="pos_matrices_plot")
                    ui.conv_check = gr.Markdown(label=t("pos_conv_check"), elem_id="pos_conv_check")
        with gr.Tab(t("pos_sub_compare"), id="compare", elem_id="pos_sub_compare") as tabs["compare"]:
            gr.Markdown(t("pos_compare_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    ui.compare_len = Slider.over(COMPARE_LEN, 32, label=t("pos_cmp_T"), elem_id="pos_cmp_T")
                    ui.d_model = Slider(2, POS_MAX_D_MODEL, value=64, step=2, label=t("pos_cmp_d"), elem_id="pos_cmp_d")
                    ui.n_heads = Slider.over(COMPARE_HEADS, 8, label=t("pos_cmp_heads"), elem_id="pos_cmp_heads")
                with gr.Column(scale=3):
                    ui.same_plot = gr.Plot(label=t("pos_same_plot"), elem_id="pos_same_plot")
                    ui.sin_plot = gr.Plot(label=t("pos_sin_plot"), elem_id="pos_sin_plot")
                    ui.alibi_plot = gr.Plot(label=t("pos_alibi_plot"), elem_id="pos_alibi_plot")
                    ui.slopes = gr.Markdown(label=t("pos_slopes"), elem_id="pos_slopes")
    ui.device = device_line()
    explain("pos_explain")

    quiet = dict(show_progress="hidden", trigger_mode="always_last")
    # Each view's own controls redraw it through its named endpoint; selecting its sub-tab draws it too.
    own_triggers = {
        "rotate": [ui.style.input, ui.pair.input, ui.q_pos.input, ui.k_pos.input],
        "relative": [ui.encoding.input, ui.seq_len.input, ui.max_distance.submit, ui.max_distance.blur],
        "frequencies": [ui.train_len.submit, ui.train_len.blur, ui.span.input],
        "extrapolation": [ui.original_max_position.submit, ui.original_max_position.blur, ui.factor.submit,
                          ui.factor.blur, ui.low_freq_factor.submit, ui.low_freq_factor.blur,
                          ui.high_freq_factor.submit, ui.high_freq_factor.blur, ui.methods.input],
        "conventions": [ui.diagram_dim.input, ui.position.input],
        "compare": [ui.compare_len.input, ui.d_model.input, ui.n_heads.input],
    }
    for name, (fn, api_name, outputs) in HANDLERS.items():
        gr.on(own_triggers[name], api_name=api_name, **event(fn, ui, outputs), **quiet)
        # The page sets the view as the sub-tab is selected, not a server's answer: Gradio selects the first
        # sub-tab as the sub-tabs mount, and under load that answer came after a link's own selection's.
        tabs[name].select(None, None, ui.view, js=f"() => {json.dumps(name)}", api_visibility="private",
                          show_progress="hidden").then(
            lambda: gr.Timer(active=False), None, ui.timer, api_visibility="private", show_progress="hidden").then(
            api_visibility="private", **event(fn, ui, outputs), **quiet)

    # The shared controls redraw whichever view is on screen.
    gr.on([ui.head_dim.submit, ui.head_dim.blur, ui.base.submit, ui.base.blur, ui.seed.submit, ui.seed.blur],
          api_visibility="private", **event(redraw, ui, REDRAW_OUTPUTS), **quiet)
    ui.llama31.click(api_visibility="private", show_progress="hidden",
                     **event(llama31, ui, (*LLAMA31, "view", "methods"))).then(
        api_visibility="private", **event(draw, ui, DRAW_OUTPUTS), **quiet)

    # Play: the timer moves the positions; each frame redraws the rotate view.
    ui.play.click(api_visibility="private", show_progress="hidden", **event(play_start, ui, ("q_pos", "k_pos", "timer")))
    ui.pause.click(lambda: gr.Timer(active=False), None, ui.timer, api_visibility="private", show_progress="hidden")
    ui.timer.tick(api_visibility="private", show_progress="hidden",
                  **event(play_frame, ui, ("q_pos", "k_pos", *HANDLERS["rotate"][2], "timer")))
    return {**event(draw, ui, DRAW_OUTPUTS), "show_progress": "hidden", "timers": [ui.timer], "view": ui.view}
