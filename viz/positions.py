"""Figures of the Positions tab: RoPE's rotating pairs, relative scores, frequencies, extrapolation.

Built as plain dicts through :func:`viz.common.plain_figure`, serialised without plotly.py (Play
redraws several times a second); every number comes from the backend's results
(``models.positions_explore``) as lists. The conventions and compare views are in
:mod:`viz.positions_compare`.
"""
from __future__ import annotations

import math

from locales import tr
from viz.common import PlainFigure, axis_ref, base_layout, finite, finite_grid, plain_figure, subplot_row

Q_COLOR = "#4f46e5"           # indigo: the query
K_COLOR = "#ea580c"           # orange: the key
FAINT = "#94a3b8"
METHOD_COLORS = {"original": "#334155", "pi": "#0ea5e9", "ntk": "#10b981", "llama3": "#dc2626"}
METHOD_DASH = {"original": "solid", "pi": "dash", "ntk": "dot", "llama3": "solid"}
# Blue (negative) - white (0) - red (positive): scores, rotation matrices, cosines.
DIVERGING = [[0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"]]
# Pair index, fast (0) to slow: a perceptual ramp (viridis stops).
RAMP = ["#440154", "#3b528b", "#21918c", "#5ec962", "#c8b400"]       # viridis, its yellow darkened to show on white

def num(x: float, digits: int = 4) -> str:
    """A number for a label: ``digits`` significant digits, thousands separators for large ones.

    >>> num(3.14159265), num(0.000123456), num(123456.7), num(-2.5e-15)
    ('3.142', '0.0001235', '123,457', '-2.5e-15')
    """
    return f"{x:,.0f}" if 1e4 <= abs(x) < 1e15 else f"{x:.{digits}g}"


def ramp(i: int, n: int) -> str:
    """The colour of pair ``i`` of ``n`` on the fast-to-slow ramp (interpolated between the stops).

    >>> ramp(0, 4), ramp(3, 4)
    ('#440154', '#c8b400')
    """
    t = i / (n - 1) if n > 1 else 0.0
    pos = t * (len(RAMP) - 1)
    j = min(int(pos), len(RAMP) - 2)
    frac = pos - j
    lo, hi = (tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)) for c in (RAMP[j], RAMP[j + 1]))
    return "#" + "".join(f"{round(a + (b - a) * frac):02x}" for a, b in zip(lo, hi))


def _arrow(xy: list[float], color: str, name: str, panel: int, *, dash: str = "solid", width: float = 3,
           legend: bool = False, opacity: float = 1.0) -> dict:
    """A line from the origin to ``xy`` with an arrow head pointing along it."""
    return {"type": "scatter", "x": [0, xy[0]], "y": [0, xy[1]], "mode": "lines+markers", "name": name,
            "line": {"color": color, "width": width, "dash": dash}, "opacity": opacity,
            "marker": {"symbol": ["circle", "arrow"], "size": [1, 13], "angleref": "previous", "color": color},
            "showlegend": legend, "legendgroup": name, "hovertemplate": f"{name}: (%{{x:.3f}}, %{{y:.3f}})<extra></extra>",
            **axis_ref(panel)}


def _circle(radius: float, color: str, panel: int) -> dict:
    angles = [2 * math.pi * j / 96 for j in range(97)]
    return {"type": "scatter", "x": [radius * math.cos(a) for a in angles], "y": [radius * math.sin(a) for a in angles],
            "mode": "lines", "line": {"color": color, "width": 1, "dash": "dot"}, "hoverinfo": "skip",
            "showlegend": False, **axis_ref(panel)}


def rotate_figure(panels: list, selected: int, q_pos: int, k_pos: int, score: float, relative: float,
                  lang: str = "en") -> PlainFigure:
    """One square panel per pair: q and k before (faint) and after (solid) their rotations, q's path."""
    titles = []
    data: list[dict] = []
    for p, pair in enumerate(panels):
        title = tr(lang, "pos_fig_pair_title", i=pair.pair, a=pair.dims[0], b=pair.dims[1],
                   theta=num(pair.theta, 3), turns=num(pair.q_turns, 3))
        titles.append(f"<b>{title}</b>" if pair.pair == selected else title)
        first = p == 0
        data += [_circle(math.hypot(*pair.q), Q_COLOR, p), _circle(math.hypot(*pair.k), K_COLOR, p),
                 {"type": "scatter", "x": [xy[0] for xy in pair.q_trail], "y": [xy[1] for xy in pair.q_trail],
                  "mode": "markers", "name": tr(lang, "pos_fig_trail"), "showlegend": first, "legendgroup": "trail",
                  "marker": {"color": Q_COLOR, "size": 5, "opacity": [0.1 + 0.5 * j / max(1, len(pair.q_trail) - 1)
                                                                      for j in range(len(pair.q_trail))]},
                  "hoverinfo": "skip", **axis_ref(p)},
                 _arrow(pair.q, Q_COLOR, tr(lang, "pos_fig_q0"), p, dash="dash", width=2, legend=first, opacity=0.35),
                 _arrow(pair.k, K_COLOR, tr(lang, "pos_fig_k0"), p, dash="dash", width=2, legend=first, opacity=0.35),
                 _arrow(pair.q_rot, Q_COLOR, tr(lang, "pos_fig_qm"), p, legend=first),
                 _arrow(pair.k_rot, K_COLOR, tr(lang, "pos_fig_kn"), p, legend=first)]
    layout = subplot_row(titles, spacing=0.04 if len(panels) > 4 else 0.06, square=True)
    for p, pair in enumerate(panels):
        r = 1.15 * max(math.hypot(*pair.q), math.hypot(*pair.k), 1e-9)
        suffix = "" if p == 0 else str(p + 1)
        axis = {"range": [-r, r], "zeroline": True, "zerolinecolor": "#e5e7eb", "showgrid": False,
                "showticklabels": False}
        layout[f"xaxis{suffix}"].update(axis, constrain="domain")
        layout[f"yaxis{suffix}"].update(axis)
    for note in layout["annotations"]:
        note["font"] = {"size": 11}
    title = tr(lang, "pos_fig_rotate_title", m=q_pos, n=k_pos, s=num(score, 8), r=num(relative, 8))
    layout |= base_layout(height=400, title=title, margin={"t": 120})
    layout["legend"] = {"orientation": "h", "y": -0.05, "x": 0.5, "xanchor": "center"}
    return plain_figure(data, layout)


def clock_figure(thetas: list[float], contributions: list[float], q_pos: int, k_pos: int, selected: int,
                 lang: str = "en") -> PlainFigure:
    """Left: every pair as a point on its own ring at angle mθ_i (q) and nθ_i (k). Right: the score by pair."""
    n = len(thetas)
    radius = [1 - 0.75 * i / max(1, n - 1) for i in range(n)]               # pair 0 outside
    colors = [ramp(i, n) for i in range(n)]
    hover = tr(lang, "pos_fig_pair_n", i="%{customdata}") + "<extra></extra>"

    def ring_points(pos: int) -> tuple[list[float], list[float]]:
        return ([r * math.cos(pos * t) for r, t in zip(radius, thetas)],
                [r * math.sin(pos * t) for r, t in zip(radius, thetas)])

    qx, qy = ring_points(q_pos)
    kx, ky = ring_points(k_pos)
    data = [
        {"type": "scatter", "x": qx, "y": qy, "mode": "markers", "customdata": list(range(n)), "name": "q",
         "marker": {"color": colors, "size": 8, "line": {"color": Q_COLOR, "width": 1}}, "hovertemplate": hover,
         "showlegend": False, **axis_ref(0)},
        {"type": "scatter", "x": kx, "y": ky, "mode": "markers", "customdata": list(range(n)), "name": "k",
         "marker": {"color": "rgba(0,0,0,0)", "size": 12, "line": {"color": colors, "width": 2}},
         "hovertemplate": hover, "showlegend": False, **axis_ref(0)},
        {"type": "scatter", "x": [0, qx[selected]], "y": [0, qy[selected]], "mode": "lines",
         "line": {"color": Q_COLOR, "width": 2}, "hoverinfo": "skip", "showlegend": False, **axis_ref(0)},
        {"type": "scatter", "x": [0, kx[selected]], "y": [0, ky[selected]], "mode": "lines",
         "line": {"color": K_COLOR, "width": 2}, "hoverinfo": "skip", "showlegend": False, **axis_ref(0)},
        {"type": "bar", "x": list(range(n)), "y": finite(contributions), "marker": {"color": colors},
         "hovertemplate": tr(lang, "pos_fig_pair_n", i="%{x}") + ": %{y:.4f}<extra></extra>", "showlegend": False,
         **axis_ref(1)},
    ]
    layout = subplot_row([tr(lang, "pos_fig_clock_title"), tr(lang, "pos_fig_contrib_title")], spacing=0.08)
    layout["xaxis"].update(domain=[0, 0.34], range=[-1.1, 1.1], showticklabels=False, showgrid=False,
                           zeroline=False, constrain="domain")
    layout["yaxis"].update(range=[-1.1, 1.1], scaleanchor="x", showticklabels=False, showgrid=False, zeroline=False)
    layout["xaxis2"].update(domain=[0.42, 1.0], title={"text": tr(lang, "pos_fig_pair")})
    layout["yaxis2"].update(title={"text": tr(lang, "pos_fig_contribution")}, zeroline=True, zerolinecolor="#9ca3af")
    layout["annotations"][0]["x"] = 0.17
    layout["annotations"][1]["x"] = 0.71
    for note in layout["annotations"]:
        note["font"] = {"size": 12}
    layout["shapes"] = [{"type": "rect", "xref": "x2", "yref": "paper", "x0": selected - 0.5, "x1": selected + 0.5,
                         "y0": 0, "y1": 1, "fillcolor": "rgba(79,70,229,0.12)", "line": {"width": 0}}]
    return plain_figure(data, layout | base_layout(height=380))


# --------------------------------------------------------------------------- relative position


def relative_figure(scores: list[list[float]], offsets: list[int], low: list[float], high: list[float],
                    encoding: str, spread: float, lang: str = "en") -> PlainFigure:
    """Left: q_m·k_n over (m, n). Right: the lowest and highest cell of every diagonal against n − m."""
    T = len(scores)
    limit = max((abs(v) for row in scores for v in row if math.isfinite(v)), default=1.0) or 1.0
    hover = tr(lang, "pos_fig_query_pos") + " %{y}, " + tr(lang, "pos_fig_key_pos") + " %{x}: %{z:.4f}<extra></extra>"
    data = [
        {"type": "heatmap", "z": finite_grid(scores), "x": list(range(T)), "y": list(range(T)), "zmid": 0,
         "zmin": -limit, "zmax": limit, "colorscale": DIVERGING, "hovertemplate": hover,
         "colorbar": {"title": {"text": tr(lang, "pos_fig_score")}, "len": 0.85, "thickness": 12, "x": 0.44},
         **axis_ref(0)},
        {"type": "scatter", "x": offsets, "y": finite(high), "mode": "lines", "name": tr(lang, "pos_fig_highest"),
         "line": {"color": "#b2182b", "width": 2}, **axis_ref(1)},
        {"type": "scatter", "x": offsets, "y": finite(low), "mode": "lines", "name": tr(lang, "pos_fig_lowest"),
         "line": {"color": "#2166ac", "width": 2, "dash": "dot"}, "fill": "tonexty",
         "fillcolor": "rgba(100,116,139,0.25)", **axis_ref(1)},
    ]
    layout = subplot_row([tr(lang, f"pos_fig_heat_{encoding}"), tr(lang, "pos_fig_diag_title")], spacing=0.14)
    layout["xaxis"].update(domain=[0, 0.42], title={"text": tr(lang, "pos_fig_key_pos")}, constrain="domain")
    layout["yaxis"].update(autorange="reversed", scaleanchor="x", title={"text": tr(lang, "pos_fig_query_pos")})
    layout["xaxis2"].update(domain=[0.56, 1.0], title={"text": tr(lang, "pos_fig_offset")})
    layout["yaxis2"].update(title={"text": tr(lang, "pos_fig_score")})
    layout["annotations"][0]["x"] = 0.21
    layout["annotations"][1]["x"] = 0.78
    key = "spread_flat" if encoding == "rope" else "spread_not"
    title = tr(lang, f"pos_fig_{key}", s=f"{spread:.2g}")
    layout["legend"] = {"x": 1.0, "xanchor": "right", "y": 1.0, "bgcolor": "rgba(255,255,255,0.7)"}
    return plain_figure(data, layout | base_layout(height=440, title=title))


def decay_figure(distances: list[float], curves: dict[str, list[float]], lang: str = "en") -> PlainFigure:
    """Score against distance on a log axis (distance 0 left out): the long-range decay of RoPE."""
    style = {"ones": ("#334155", "solid"), "random": (Q_COLOR, "solid"), "bound": ("#dc2626", "dash")}
    keep = [j for j, d in enumerate(distances) if d > 0]
    data = [{"type": "scatter", "x": [distances[j] for j in keep], "y": finite([values[j] for j in keep]),
             "mode": "lines", "name": tr(lang, f"pos_fig_{name}"), "line": {"color": style[name][0], "dash": style[name][1],
                                                                       "width": 1.5}}
            for name, values in curves.items()]
    layout = base_layout(height=360, title=tr(lang, "pos_fig_decay_title")) | {
        "xaxis": {"type": "log", "title": {"text": tr(lang, "pos_fig_distance")}},
        "yaxis": {"title": {"text": tr(lang, "pos_fig_score")}, "zeroline": True, "zerolinecolor": "#9ca3af"},
        "legend": {"orientation": "h", "y": -0.25}}
    return plain_figure(data, layout)


# --------------------------------------------------------------------------- frequencies


def _hline(y: float, text: str, *, xref: str = "x", yref: str = "y", color: str = "#111827") -> tuple[dict, dict]:
    """A dashed horizontal line across a panel and its label."""
    shape = {"type": "line", "xref": f"{xref} domain", "yref": yref, "x0": 0, "x1": 1, "y0": y, "y1": y,
             "line": {"color": color, "dash": "dash", "width": 1.5}}
    note = {"xref": f"{xref} domain", "yref": yref, "x": 0.01, "y": math.log10(y) if y > 0 else y, "text": text,
            "showarrow": False, "xanchor": "left", "yanchor": "bottom", "font": {"color": color, "size": 11}}
    return shape, note


def _vline(x: float, text: str, *, xref: str = "x", yref: str = "y", color: str = "#111827",
           log: bool = True) -> tuple[dict, dict]:
    """A dashed vertical line across a panel and its label (``x`` in data units; log axes need log10 for notes)."""
    shape = {"type": "line", "xref": xref, "yref": f"{yref} domain", "x0": x, "x1": x, "y0": 0, "y1": 1,
             "line": {"color": color, "dash": "dash", "width": 1.5}}
    note = {"xref": xref, "yref": f"{yref} domain", "x": math.log10(x) if log else x, "y": 1.0, "text": text,
            "showarrow": False, "xanchor": "left", "yanchor": "top", "font": {"color": color, "size": 11}}
    return shape, note


def _context_marks(train_len: int, target: int, lang: str) -> list[tuple[int, str, str]]:
    """The lines the extrapolation figures draw: L and s·L, or one line for both when s = 1 (two labels
    at one place would write over each other)."""
    L, T = f"{train_len:,}", f"{target:,}"
    if target == train_len:
        return [(train_len, tr(lang, "pos_fig_train", L=L) + " = " + tr(lang, "pos_fig_target", T=T), K_COLOR)]
    return [(train_len, tr(lang, "pos_fig_train", L=L), K_COLOR), (target, tr(lang, "pos_fig_target", T=T), "#111827")]


def frequencies_figure(wavelengths: list[float], references: dict[float, list[float]], train_len: int,
                       cos: list[list[float]], base: float, slow: int, longest: float,
                       lang: str = "en") -> PlainFigure:
    """Left: wavelength per pair (log) against L, other bases faint. Right: cos(m·θ_i) over (m, i).
    The title says how many pairs (``slow``) never turn within L and the ``longest`` wavelength."""
    pairs = list(range(len(wavelengths)))
    hover = tr(lang, "pos_fig_turns_hover", pair="%{x}", wavelength="%{y:,.4g}") + "<extra>%{fullData.name}</extra>"
    data = [{"type": "scatter", "x": pairs, "y": finite(w), "mode": "lines", "name": tr(lang, "pos_fig_base", b=num(b)),
             "line": {"color": FAINT, "dash": "dot", "width": 1.5}, "hovertemplate": hover, **axis_ref(0)}
            for b, w in references.items()]
    data.append({"type": "scatter", "x": pairs, "y": finite(wavelengths), "mode": "lines+markers",
                 "name": tr(lang, "pos_fig_base", b=num(base)), "hovertemplate": hover,
                 "marker": {"color": [K_COLOR if w > train_len else Q_COLOR for w in wavelengths], "size": 5},
                 "line": {"color": Q_COLOR, "width": 2}, **axis_ref(0)})
    span = len(cos)
    data.append({"type": "heatmap", "z": finite_grid([list(col) for col in zip(*cos)]), "x": list(range(span)),
                 "y": pairs, "zmin": -1, "zmax": 1, "colorscale": DIVERGING,
                 "hovertemplate": "m = %{x}, " + tr(lang, "pos_fig_pair_n", i="%{y}") + ": %{z:.3f}<extra></extra>",
                 "colorbar": {"len": 0.85, "thickness": 12}, **axis_ref(1)})
    layout = subplot_row([tr(lang, "pos_fig_wave_title"), tr(lang, "pos_fig_cos_title", P=span - 1)],
                         spacing=0.1)
    layout["xaxis"].update(title={"text": tr(lang, "pos_fig_pair")})
    layout["yaxis"].update(type="log", title={"text": tr(lang, "pos_fig_wavelength")})
    layout["xaxis2"].update(title={"text": tr(lang, "pos_fig_position")})
    layout["yaxis2"].update(title={"text": tr(lang, "pos_fig_pair")}, autorange="reversed")
    shape, note = _hline(train_len, tr(lang, "pos_fig_train", L=f"{train_len:,}"), color=K_COLOR)
    top = max([*wavelengths, *(w for ws in references.values() for w in ws), train_len]) * 2
    shaded = {"type": "rect", "xref": "x domain", "yref": "y", "x0": 0, "x1": 1, "y0": train_len, "y1": top,
              "fillcolor": "rgba(234,88,12,0.08)", "line": {"width": 0}}
    layout["shapes"] = [shaded, shape]
    layout["annotations"].append(note)
    layout["legend"] = {"orientation": "h", "y": -0.22}
    title = tr(lang, "pos_fig_freq_title", slow=slow, pairs=len(wavelengths), L=f"{train_len:,}", longest=num(longest))
    full = layout | base_layout(height=460, title=title)
    full["margin"] = {**full["margin"], "t": 115}                     # a title of two lines over the panels'
    return plain_figure(data, full)


# --------------------------------------------------------------------------- extrapolation


def extrapolation_frequency_figure(original: list[float], thetas: dict[str, list[float]], train_len: int,
                                   factor: float, target: int, blend: tuple[int, int] | None,
                                   lang: str = "en") -> PlainFigure:
    """Left: each method's wavelength per pair with L and s·L. Right: θ′/θ per pair (1 = unchanged)."""
    pairs = list(range(len(original)))
    data = []
    for method, values in thetas.items():
        line = {"color": METHOD_COLORS[method], "dash": METHOD_DASH[method], "width": 2}
        name = tr(lang, f"pos_fig_{method}")
        data.append({"type": "scatter", "x": pairs, "y": finite([2 * math.pi / t for t in values]), "mode": "lines",
                     "name": name, "legendgroup": method, "line": line, **axis_ref(0),
                     "hovertemplate": tr(lang, "pos_fig_pair_n", i="%{x}") + ": "
                     + tr(lang, "pos_fig_tokens_n", n="%{y:,.4g}") + "<extra>" + name + "</extra>"})
        data.append({"type": "scatter", "x": pairs, "y": finite([t / o for t, o in zip(values, original)]),
                     "mode": "lines", "name": name, "legendgroup": method, "showlegend": False, "line": line,
                     "hovertemplate": tr(lang, "pos_fig_pair_n", i="%{x}") + ": θ′/θ = %{y:.4g}<extra>" + name
                     + "</extra>", **axis_ref(1)})
    layout = subplot_row([tr(lang, "pos_fig_ext_wave"), tr(lang, "pos_fig_ext_ratio")], spacing=0.1)
    layout["xaxis"].update(title={"text": tr(lang, "pos_fig_pair")})
    layout["yaxis"].update(type="log", title={"text": tr(lang, "pos_fig_wavelength")})
    layout["xaxis2"].update(title={"text": tr(lang, "pos_fig_pair")})
    halvings = range(0, max(1, math.ceil(math.log2(factor))) + 1)           # 1, 1/2, 1/4, … down to 1/s
    layout["yaxis2"].update(type="log", title={"text": tr(lang, "pos_fig_ratio")}, tickvals=[2.0 ** -k for k in halvings],
                            ticktext=["1" if k == 0 else f"1/{2 ** k}" for k in halvings])
    shapes, notes = [], []
    for y, text, color in _context_marks(train_len, target, lang):
        shape, note = _hline(y, text, color=color)
        shapes.append(shape)
        notes.append(note)
    if blend is not None:
        shapes.append({"type": "rect", "xref": "x2", "yref": "y2 domain", "x0": blend[0] - 0.5, "x1": blend[1] + 0.5,
                       "y0": 0, "y1": 1, "fillcolor": "rgba(220,38,38,0.08)", "line": {"width": 0}})
        notes.append({"xref": "x2", "yref": "y2 domain", "x": blend[0] - 0.5, "y": 0.5, "xanchor": "right",
                      "text": tr(lang, "pos_fig_blend"), "textangle": -90, "showarrow": False,
                      "font": {"color": "#dc2626", "size": 11}})
    layout["shapes"] = shapes
    layout["annotations"] += notes
    layout["legend"] = {"orientation": "h", "y": -0.22}
    return plain_figure(data, layout | base_layout(height=420))


def extrapolation_score_figure(distances: list[float], unseen: dict[str, list[float]],
                               scores: dict[str, list[float]], train_len: int, target: int,
                               lang: str = "en") -> PlainFigure:
    """Left: fraction of pairs at unseen angles against distance. Right: mean cos against distance."""
    data = []
    for panel, series in ((0, unseen), (1, scores)):
        for method, values in series.items():
            name = tr(lang, f"pos_fig_{method}")
            data.append({"type": "scatter", "x": distances, "y": finite(values), "mode": "lines", "name": name,
                         "legendgroup": method, "showlegend": panel == 0,
                         "line": {"color": METHOD_COLORS[method], "dash": METHOD_DASH[method], "width": 2 if panel == 0 else 1.2},
                         "hovertemplate": "Δ = %{x:,}: %{y:.3f}<extra>" + name + "</extra>", **axis_ref(panel)})
    layout = subplot_row([tr(lang, "pos_fig_ext_unseen"), tr(lang, "pos_fig_ext_score")], spacing=0.1)
    for p in (0, 1):
        suffix = "" if p == 0 else "2"
        layout[f"xaxis{suffix}"].update(type="log", title={"text": tr(lang, "pos_fig_distance")})
    layout["yaxis"].update(title={"text": tr(lang, "pos_fig_fraction")}, range=[-0.02, 1.02])
    layout["yaxis2"].update(title={"text": tr(lang, "pos_fig_score")})
    shapes, notes = [], []
    for p in (0, 1):
        suffix = "" if p == 0 else "2"
        for x, text, color in _context_marks(train_len, target, lang):
            shape, note = _vline(x, text, xref=f"x{suffix}", yref=f"y{suffix}", color=color)
            shapes.append(shape)
            notes.append(note)
    layout["shapes"] = shapes
    layout["annotations"] += notes
    layout["legend"] = {"orientation": "h", "y": -0.22}
    return plain_figure(data, layout | base_layout(height=400))


# --------------------------------------------------------------------------- text


def _matrix(angle: float) -> str:
    c, s = math.cos(angle), math.sin(angle)
    return (r"\begin{pmatrix}" f"{c:.4f} & {-s:.4f}" r"\\ " f"{s:.4f} & {c:.4f}" r"\end{pmatrix}")


def rotation_markdown(pair, head_dim: int, base: float, q_pos: int, k_pos: int, score: float, relative: float,
                      lang: str = "en") -> str:
    """The picked pair's frequency, its 2×2 rotation matrices at m, n and n − m, and the two scores."""
    i, theta = pair.pair, pair.theta
    q_angle, k_angle = pair.q_angle, pair.k_angle
    offset = k_pos - q_pos

    def deg(angle: float) -> str:
        return f"{math.degrees(angle) % 360:.1f}"

    general = r"\begin{pmatrix}\cos\phi & -\sin\phi\\ \sin\phi & \cos\phi\end{pmatrix}"
    return "\n\n".join([
        tr(lang, "pos_fig_m_pair", i=i, a=pair.dims[0], b=pair.dims[1], base=num(base), two_i=2 * i, d=head_dim,
           theta=num(theta, 6)),
        f"$$R(\\phi) = {general}$$",
        f"$$R(m\\theta_{{{i}}}) = {_matrix(q_angle)}$$",
        f"$$R(n\\theta_{{{i}}}) = {_matrix(k_angle)}$$",
        f"$$R(m\\theta_{{{i}}})^\\top R(n\\theta_{{{i}}}) = R((n-m)\\theta_{{{i}}}) = {_matrix(offset * theta)}$$",
        "- " + tr(lang, "pos_fig_m_q", m=q_pos, angle=num(q_angle, 6), deg=deg(q_angle))
        + "\n- " + tr(lang, "pos_fig_m_k", n=k_pos, angle=num(k_angle, 6), deg=deg(k_angle))
        + "\n- " + tr(lang, "pos_fig_m_rel", o=offset),
        tr(lang, "pos_fig_m_scores", d=head_dim, s=f"{score:.12g}", r=f"{relative:.12g}"),
    ])


def _tokens(x: float) -> str:
    """A length in tokens: whole, with thousands separators (a fraction of one, as it is).

    >>> _tokens(131072 / 4), _tokens(8192 / 3), _tokens(0.25)
    ('32,768', '2,731', '0.25')
    """
    return f"{x:,.0f}" if x >= 1 else num(x)


def extrapolation_markdown(methods: list[str], bases: dict[str, float], fastest: dict[str, float],
                           safe: dict[str, float], factor: float, train_len: int, target: int, low: float,
                           high: float, lang: str = "en") -> str:
    """One row per method: what it changes, its base, the fastest pair's slow-down, how far it is safe."""
    header = [tr(lang, f"pos_fig_{k}") for k in ("t_method", "t_change", "t_fast", "t_safe")]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m in methods:
        change = tr(lang, f"pos_fig_c_{m}", h=num(high), l=num(low), b=num(bases[m], 6),
                    Lh=_tokens(train_len / high), Ll=_tokens(train_len / low))
        reach = f"{safe[m]:,.0f}" if math.isfinite(safe[m]) else tr(lang, "pos_fig_all_turned")
        rows.append(f"| {tr(lang, 'pos_fig_' + m)} | {change} | {num(fastest[m])} | {reach} |")
    note = tr(lang, "pos_fig_ext_note", s=num(factor), L=f"{train_len:,}", T=f"{target:,}")
    return note + "\n\n" + "\n".join(rows)
