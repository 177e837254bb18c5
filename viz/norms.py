"""Figures of the normalization tab: gradients per layer, the depth sweep, training curves, norm axes.

Built as plain dicts through :func:`viz.common.figure`; every value passes :func:`viz.common.finite`.
Takes plain lists and numbers (the component converts the backend's results).
"""
from __future__ import annotations

import math

import plotly.graph_objects as go

from locales import tr
from viz.common import axis_ref, base_layout, figure, finite, finite_grid, subplot_row, waiting

COLORS = {"post": "#dc2626", "pre": "#2563eb", "sandwich": "#16a34a", "deepnorm": "#9333ea"}
GROUP_PANELS = ("ffn_out", "ffn_in", "stream", "attn_qkv", "attn_out", "total")   # 2 × 3 grid
AXES_PANELS = ("input", "layernorm", "rmsnorm", "batchnorm")
HIGHLIGHT = {"layernorm": "#f59e0b", "rmsnorm": "#f59e0b", "batchnorm": "#10b981"}
DIVERGING = [[0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"]]

def _name(variant: str, lang: str) -> str:
    """A placement's short name: "Post-LN"."""
    return tr(lang, f"norm_fig_{variant}")


def _run_name(run: dict, lang: str) -> str:
    """A training run's legend entry: "Post-LN, with warm-up"."""
    return _name(run["variant"], lang) + tr(lang, "sep_comma") + tr(lang, "norm_fig_warmup" if run["warmup"]
                                                                    else "norm_fig_no_warmup")


def _what(code: str, lang: str, blow_up: float) -> str:
    """What ended a diverged run (``RunCurve.diverged_what``), in words; ``blow_up``: the factor a loss
    that "blew up" passed."""
    return tr(lang, f"norm_what_{code}", factor=f"{blow_up:g}")


def log_ticks(values, *, most: int = 6) -> dict:
    """Tick values for a log axis over ``values`` (non-positive and missing ones ignored): 1-2-5 in each
    decade, only the decades when those would be more than ``most``, every digit when the range is
    too narrow for two of 1-2-5; ``{}`` (Plotly's own ticks) when even that leaves fewer than two.
    Plotly's automatic log ticks label every digit of a decade, which overlap in a small panel.

    >>> log_ticks([0.06, 0.3, 1.1])["tickvals"]
    [0.1, 0.2, 0.5, 1.0]
    >>> log_ticks([0.001, 3.0])["tickvals"]
    [0.001, 0.01, 0.1, 1.0]
    >>> log_ticks([1.2, 3.4])["tickvals"], log_ticks([1.2, 1.3])
    ([2.0, 3.0], {})
    """
    shown = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not shown:
        return {}
    lo, hi = min(shown), max(shown)
    decades = range(math.floor(math.log10(lo)), math.floor(math.log10(hi)) + 1)
    for digits in ((1, 2, 5), (1,), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [float(f"{d}e{k}") for k in decades for d in digits if lo <= float(f"{d}e{k}") <= hi]
        if 2 <= len(ticks) <= most or (digits == (1,) and len(ticks) > most):
            return {"tickvals": ticks[:: math.ceil(len(ticks) / most)]}
    return {}


def grid_layout(titles: list[str], cols: int, *, hgap: float = 0.07, vgap: float = 0.16) -> dict:
    """Panels in rows of ``cols``, numbered row by row as :func:`viz.common.axis_ref` expects.

    >>> g = grid_layout(["a", "b", "c", "d"], 2, hgap=0.1, vgap=0.2)
    >>> g["xaxis4"]["domain"], g["yaxis4"]["domain"], g["yaxis"]["domain"]
    ([0.55, 1.0], [0.0, 0.4], [0.6, 1.0])
    """
    rows = math.ceil(len(titles) / cols)
    width, height = (1 - hgap * (cols - 1)) / cols, (1 - vgap * (rows - 1)) / rows
    layout: dict = {"annotations": []}
    for i, title in enumerate(titles):
        r, c = divmod(i, cols)
        left, bottom = c * (width + hgap), 1 - r * (height + vgap) - height
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"] = {"domain": [round(left, 6), round(left + width, 6)], "anchor": f"y{suffix}"}
        layout[f"yaxis{suffix}"] = {"domain": [round(max(bottom, 0.0), 6), round(bottom + height, 6)],
                                    "anchor": f"x{suffix}"}
        layout["annotations"].append({
            "text": title, "x": left + width / 2, "y": bottom + height, "xref": "paper", "yref": "paper",
            "xanchor": "center", "yanchor": "bottom", "yshift": 4, "showarrow": False, "font": {"size": 13}})
    return layout


LEGEND_BELOW_PX = 62                    # the legend's top below the plot area: clear of the x-axis title


def _legend(height: int) -> dict:
    """A horizontal legend under the plot, a fixed distance below it whatever the figure's height (a
    fraction of the plot area put it on the axis title of the shorter figures). The bottom margin holds the
    legend in one row, or the Chinese gradients legend in its two: Plotly would push it and draw twice."""
    margin = {"l": 60, "r": 20, "t": 80, "b": 100}
    below = LEGEND_BELOW_PX / (height - margin["t"] - margin["b"])
    return {"legend": {"orientation": "h", "x": 0, "y": -below, "yanchor": "top"}, "height": height, "margin": margin}


def gradients_figure(results: dict[str, dict], *, norm: str, d_model: int, log_y: bool = True,
                     lang: str = "en") -> go.Figure:
    """Per-layer gradient norms of each variant, one panel per parameter group (and the stream RMS).

    ``results``: variant -> ``{"per_layer": {group: [...]}, "stream_rms": [...]}``, bottom layer first.
    """
    data = []
    n_layers = max(len(r["stream_rms"]) for r in results.values())
    for panel, group in enumerate(GROUP_PANELS):
        for variant, r in results.items():
            values = r["stream_rms"] if group == "stream" else r["per_layer"][group]
            data.append({"type": "scatter", "mode": "lines+markers", "x": list(range(1, len(values) + 1)),
                         "y": finite(values), "name": _name(variant, lang), "legendgroup": variant,
                         "showlegend": panel == 0, "line": {"color": COLORS[variant], "width": 2},
                         "marker": {"size": 5},
                         "hovertemplate": f"{_name(variant, lang)} · %{{x}}: %{{y:.4g}}<extra></extra>",
                         **axis_ref(panel)})
    layout = grid_layout([tr(lang, f"norm_fig_{g}") for g in GROUP_PANELS], 3)
    for i, group in enumerate(GROUP_PANELS):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(title={"text": tr(lang, "norm_fig_layer") if i >= 3 else None},
                                        dtick=1 if n_layers <= 12 else 2, range=[0.5, n_layers + 0.5])
        shown = [y for trace in data if trace.get("yaxis", "y") == f"y{suffix}" for y in trace["y"]]
        layout[f"yaxis{suffix}"].update(type="log" if log_y else "linear", tickformat=".2g", nticks=5,
                                        title={"text": tr(lang, "norm_fig_grad") if i % 3 == 0 else None},
                                        rangemode="tozero" if not log_y else "normal",
                                        **(log_ticks(shown) if log_y else {}))
    title = tr(lang, "norm_fig_grads_title", norm="LayerNorm" if norm == "layernorm" else "RMSNorm",
                                                 layers=n_layers, d=d_model)
    return figure(data, layout | base_layout(height=600, title=title) | _legend(600))


def sweep_figure(points: dict[str, list[tuple[int, float]]], *, slopes: dict[str, float | None] | None = None,
                 lang: str = "en") -> go.Figure:
    """Top-layer FFN-out gradient against depth (log-log), with Theorem 1's two bounds as reference slopes.

    ``points``: variant -> ``[(L, gradient norm), ...]`` in the order computed; ``slopes``: variant -> the
    measured slope (``models.norms.depth_slope``), named in the legend.
    """
    data = []
    for variant, pts in points.items():
        pts = sorted(pts)
        slope = (slopes or {}).get(variant)
        name = _name(variant, lang) if slope is None else tr(lang, "norm_fig_slope", name=_name(variant, lang),
                                                              slope=slope)
        data.append({"type": "scatter", "mode": "lines+markers", "x": [p[0] for p in pts],
                     "y": finite([p[1] for p in pts]), "name": name,
                     "line": {"color": COLORS[variant], "width": 2}, "marker": {"size": 7},
                     "hovertemplate": f"{_name(variant, lang)} · L = %{{x}}: %{{y:.4g}}<extra></extra>"})
    depths = sorted({p[0] for pts in points.values() for p in pts})
    for variant, key, slope in (("pre", "ref_sqrt", -0.5), ("post", "ref_flat", 0.0)):
        pts = sorted(points.get(variant, []))
        if len(depths) > 1 and pts and math.isfinite(pts[0][1]):
            l0, g0 = pts[0]
            data.append({"type": "scatter", "mode": "lines", "x": depths,
                         "y": [g0 * (d / l0) ** slope for d in depths], "name": tr(lang, f"norm_fig_{key}"),
                         "line": {"color": COLORS[variant], "dash": "dot", "width": 1}, "hoverinfo": "skip"})
    layout = {"xaxis": {"type": "log", "title": {"text": tr(lang, "norm_fig_depth")}, "tickvals": depths},
              "yaxis": {"type": "log", "title": {"text": tr(lang, "norm_fig_top_grad")}, "tickformat": ".2g", "nticks": 6,
                        **log_ticks([y for trace in data for y in trace["y"]])}}
    return figure(data, layout | base_layout(height=400, title=tr(lang, "norm_fig_sweep_title")) | _legend(400))


def training_figure(runs: list[dict], *, step: int, steps: int, lr: float, warmup: int, blow_up: float,
                    lang: str = "en") -> go.Figure:
    """Loss and global gradient norm per step of each run; a diverged run's curve ends in a ✕.

    ``runs``: ``{"variant", "warmup", "loss", "grad_norm", "diverged_at", "diverged_what"}`` each.
    """
    data = []
    for run in runs:
        name = _run_name(run, lang)
        line = {"color": COLORS[run["variant"]], "width": 2, "dash": "dot" if run["warmup"] else "solid"}
        for panel, key in enumerate(("loss", "grad_norm")):
            values = finite(run[key])
            x = list(range(1, len(values) + 1))
            data.append({"type": "scatter", "mode": "lines", "x": x, "y": values, "name": name,
                         "legendgroup": name, "showlegend": panel == 0, "line": line,
                         "hovertemplate": f"{name} · %{{x}}: %{{y:.4g}}<extra></extra>", **axis_ref(panel)})
            if run["diverged_at"] and values:
                what = _what(run["diverged_what"], lang, blow_up)
                data.append({"type": "scatter", "mode": "markers+text", "x": [x[-1]], "y": [values[-1]],
                             "marker": {"symbol": "x", "size": 12, "color": COLORS[run["variant"]]},
                             "text": [tr(lang, "norm_fig_diverged", what=what, step=run["diverged_at"])],
                             "textposition": "top left", "showlegend": False, "hoverinfo": "text",
                             **axis_ref(panel)})
    layout = subplot_row([tr(lang, "norm_fig_loss"), tr(lang, "norm_fig_gnorm")], spacing=0.1)
    for i in range(2):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(title={"text": tr(lang, "norm_fig_step")}, range=[0, steps + 1])
    layout["yaxis2"].update(type="log", tickformat=".2g", nticks=6,
                            **log_ticks([y for trace in data if trace.get("yaxis") == "y2" for y in trace["y"]]))
    title = tr(lang, "norm_fig_train_title", step=step, steps=steps, lr=lr, warmup=warmup)
    return figure(data, layout | base_layout(height=420, title=title) | _legend(420))


def axes_figure(x: list[list[list[float]]], outputs: dict[str, list[list[list[float]]]],
                stats: dict[str, list], cell: tuple[int, int, int], *, lang: str = "en") -> go.Figure:
    """The input ``[B][T][F]`` and each norm's output as (B·T) × F grids; the selected cell's
    normalisation group outlined: a row (LayerNorm, RMSNorm) or a column (BatchNorm).

    ``stats``: ``"layernorm"`` -> ``[B][T]`` (mean, std); ``"rmsnorm"`` -> ``[B][T]`` rms;
    ``"batchnorm"`` -> ``[F]`` (mean, std).
    """
    B, T, F = len(x), len(x[0]), len(x[0][0])
    b0, t0, f0 = cell
    # Items, tokens and features are counted from 1 on screen, as the sliders that pick the cell count them.
    labels = [tr(lang, "norm_fig_row", b=b + 1, t=t + 1) for b in range(B) for t in range(T)]
    custom_of = {
        "input": lambda b, t, f: "",
        "layernorm": lambda b, t, f: tr(lang, "norm_fig_group_ln", mean=stats["layernorm"][b][t][0],
                                                                     std=stats["layernorm"][b][t][1]),
        "rmsnorm": lambda b, t, f: tr(lang, "norm_fig_group_rms", rms=stats["rmsnorm"][b][t]),
        "batchnorm": lambda b, t, f: tr(lang, "norm_fig_group_ln", mean=stats["batchnorm"][f][0],
                                                                     std=stats["batchnorm"][f][1]),
    }
    hover = tr(lang, "norm_fig_hover", item="%{customdata[0]}", token="%{customdata[1]}", feature="%{customdata[3]}",
               value="%{z:.3f}", group="%{customdata[2]}") + "<extra></extra>"
    data, shapes = [], []
    show_text = B * T <= 16 and F <= 8
    for panel, name in enumerate(AXES_PANELS):
        grid = x if name == "input" else outputs[name]
        z = finite_grid([row for item in grid for row in item])                        # (B·T) × F
        limit = max((abs(v) for row in z for v in row if v is not None), default=1.0) or 1.0
        custom = [[[b + 1, t + 1, custom_of[name](b, t, f), f + 1] for f in range(F)] for b in range(B) for t in range(T)]
        data.append({"type": "heatmap", "z": z, "x": list(range(F)), "y": labels, "zmin": -limit, "zmax": limit,
                     "colorscale": DIVERGING, "showscale": False, "xgap": 1, "ygap": 1, "customdata": custom,
                     "text": [[f"{v:.2f}" if v is not None else "" for v in row] for row in z],
                     "texttemplate": "%{text}" if show_text else "", "hovertemplate": hover,
                     **axis_ref(panel)})
        ref = axis_ref(panel)
        xref, yref = ref["xaxis"], ref["yaxis"]
        row = b0 * T + t0
        groups = {"layernorm": "row", "rmsnorm": "row", "batchnorm": "col"}
        marks = [groups[name]] if name in groups else ["row", "col"]
        for mark in marks:
            color = HIGHLIGHT["layernorm" if mark == "row" else "batchnorm"]
            box = ({"x0": -0.5, "x1": F - 0.5, "y0": row - 0.5, "y1": row + 0.5} if mark == "row"
                   else {"x0": f0 - 0.5, "x1": f0 + 0.5, "y0": -0.5, "y1": B * T - 0.5})
            shapes.append({"type": "rect", "xref": xref, "yref": yref, **box,
                           "line": {"color": color, "width": 3, "dash": "solid" if name != "input" else "dot"},
                           "fillcolor": "rgba(0,0,0,0)"})
        for b in range(1, B):                                          # a line between batch items
            shapes.append({"type": "line", "xref": xref, "yref": yref, "x0": -0.5, "x1": F - 0.5,
                           "y0": b * T - 0.5, "y1": b * T - 0.5, "line": {"color": "#111827", "width": 2}})
    layout = grid_layout([tr(lang, f"norm_fig_{p}") for p in AXES_PANELS], 4, hgap=0.05)
    for i in range(len(AXES_PANELS)):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(title={"text": tr(lang, "norm_fig_feature")}, tickmode="array",
                                        tickvals=list(range(F)), ticktext=[str(f + 1) for f in range(F)],
                                        showgrid=False, zeroline=False)
        layout[f"yaxis{suffix}"].update(autorange="reversed", showgrid=False, zeroline=False,
                                        showticklabels=i == 0, type="category")
    height = max(300, 130 + 26 * B * T)
    # A top margin for two-line panel titles, clear of the figure's label above them.
    return figure(data, layout | base_layout(height=height, margin={"t": 100}) | {"shapes": shapes})


def gradients_summary(trend, n_layers: int, lang: str = "en") -> str:
    """A few Markdown lines: each placement's bottom-to-top trend and how the tops compare.

    ``trend``: a :class:`models.norms.Trend` (bottom, top, ratio, direction, stream_top per variant; post_over_pre).

    >>> from types import SimpleNamespace as T
    >>> print(gradients_summary(T(bottom={"post": 1.0, "pre": 1.0}, top={"post": 2.0, "pre": 0.5},
    ...                           ratio={"post": 2.0, "pre": 0.5}, direction={"post": "rises", "pre": "falls"},
    ...                           stream_top={"post": 1.0, "pre": 2.0}, post_over_pre=4.0), 2))
    - **Post-LN**: FFN-out gradient from layer 1 to layer 2: 1 → 2 (×2.00, rises toward the top).
    - **Pre-LN**: FFN-out gradient from layer 1 to layer 2: 1 → 0.5 (×0.50, falls toward the top).
    - At the top layer, Post-LN's gradient is **4.0×** Pre-LN's.
    - Residual stream RMS after the last block: Post-LN 1.00, Pre-LN 2.00.
    """
    lines = ["- " + tr(lang, "norm_fig_sum_rise", name=_name(v, lang), L=n_layers, bottom=trend.bottom[v],
                       top=trend.top[v], ratio=trend.ratio[v], trend=tr(lang, f"norm_fig_{trend.direction[v]}"))
             for v in trend.top]
    if trend.post_over_pre is not None:
        lines.append("- " + tr(lang, "norm_fig_sum_top", a=_name("post", lang), b=_name("pre", lang),
                               ratio=trend.post_over_pre))
    parts = ", ".join(f"{_name(v, lang)} {rms:.2f}" for v, rms in trend.stream_top.items())
    lines.append("- " + tr(lang, "norm_fig_sum_stream", parts=parts))
    return "\n".join(lines)


# A run's finding (models.norm_training.Finding.status) -> its text in the table.
STATUS_KEYS = {"running": "norm_fig_running", "stalled": "norm_fig_stalled", "short": "norm_fig_short",
               "trained": "norm_fig_ok"}


def training_summary(runs: list[dict], findings: list, lang: str = "en", *, plateau: float,
                     blow_up: float) -> str:
    """A Markdown table of the runs: final and lowest loss, largest gradient norm, and the finding.

    ``findings``: :class:`models.norm_training.Finding` of each run (status, final, best, max_grad,
    what, step, window); ``plateau``: the stall level in nats; ``blow_up``: the factor a loss that "blew
    up" passed. The final-loss header names the longest window any row averages.
    """
    window = max((found.window for found in findings), default=0)
    head = [tr(lang, f"norm_fig_{k}", window=window) for k in ("run", "final", "best", "max_g", "status")]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run, found in zip(runs, findings):
        if found.status == "diverged":
            status = tr(lang, "norm_fig_diverged_row", what=_what(found.what, lang, blow_up), step=found.step)
        else:
            status = tr(lang, STATUS_KEYS[found.status], plateau=plateau)
        cells = [_run_name(run, lang), *("—" if x is None else f"{x:.3f}" for x in (found.final, found.best)),
                 "—" if found.max_grad is None else f"{found.max_grad:.3g}", status]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def axes_summary(max_error: dict[str, float], lang: str = "en") -> str:
    """One sentence: each of our norms against PyTorch's module, the largest difference."""
    return tr(lang, "norm_fig_axes_check", **max_error)


def waiting_figures(lang: str = "en") -> tuple:
    """The gradients, depth-sweep and training figures before their first run."""
    return (waiting(tr(lang, "norm_fig_wait_grads"), height=600), waiting(tr(lang, "norm_fig_wait_sweep")),
            waiting(tr(lang, "norm_fig_wait_train"), height=420))
