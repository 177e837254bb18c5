"""Figures of the FFN & MoE tab: activations, FFN sizes, routing, load, losses, and the training run.

Plain dicts through :func:`viz.common.figure`; every input is a plain list or number (or a small
result of ``models/``): counts, means and ratios come computed. Text: ``locales/moe.py``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

from locales import tr
from viz.common import (NAN_COLOR, WEIGHT_SCALE, axis_ref, base_layout, figure, finite, finite_grid,
                        label_margin, subplot_row, waiting)

if TYPE_CHECKING:
    from models.ffn import FFNSizes

INDIGO, ORANGE, GRAY, GREEN = "#4f46e5", "#f59e0b", "#94a3b8", "#10b981"
ACT_COLORS = {"relu": "#64748b", "gelu": "#4f46e5", "gelu_tanh": "#0ea5e9", "silu": "#10b981",
              "geglu": "#8b5cf6", "swiglu": "#ec4899"}
RUN_STYLE = {"aux": {"color": INDIGO}, "no_aux": {"color": ORANGE, "dash": "dash"}}
DIVERGING = [[0.0, "#b91c1c"], [0.25, "#f87171"], [0.5, "#f8fafc"], [0.75, "#818cf8"], [1.0, "#3730a3"]]
RANK_COLORS = ["#f59e0b", "#10b981", "#ec4899", "#0ea5e9", "#a3e635", "#f97316", "#e879f9", "#94a3b8"]
LOAD_SCALE = [[0.0, "#f8fafc"], [0.25, "#c7d2fe"], [0.5, "#818cf8"], [0.75, "#4338ca"], [1.0, "#1e1b4b"]]

def _with_legend_below(layout: dict, *, height: int, title: str | None = None) -> dict:
    """The house layout with a horizontal legend under the x-axis title (the bottom margin grows to fit)."""
    full = layout | base_layout(height=height + 40, title=title)
    full["margin"] = {**full["margin"], "b": 100}
    full["legend"] = {"orientation": "h", "x": 0, "xanchor": "left", "yref": "container", "y": 0.01,
                      "yanchor": "bottom", "traceorder": "normal", **layout.get("legend", {})}
    return full


# --------------------------------------------------------------------------- FFN view


def activation_figure(x: list[float], values: dict[str, list[float]], derivatives: dict[str, list[float]],
                      lang: str = "en") -> go.Figure:
    """Two panels: each activation and its autograd derivative (gated units on the diagonal a = b = x)."""
    data = []
    for name, ys in values.items():
        line = {"color": ACT_COLORS[name], "width": 2, **({"dash": "dot"} if name in ("geglu", "swiglu") else {})}
        label = tr(lang, f"moe_fig_{name}")
        data.append({"type": "scatter", "mode": "lines", "x": x, "y": finite(ys), "name": label,
                     "legendgroup": name, "line": line, **axis_ref(0)})
        data.append({"type": "scatter", "mode": "lines", "x": x, "y": finite(derivatives[name]), "name": label,
                     "legendgroup": name, "showlegend": False, "line": line, **axis_ref(1)})
    layout = subplot_row([tr(lang, "moe_fig_act_values"), tr(lang, "moe_fig_act_derivs")], spacing=0.08)
    for i in ("", "2"):
        layout[f"xaxis{i}"].update(title={"text": "x"}, zeroline=True, zerolinecolor="#cbd5e1", gridcolor="#f1f5f9")
        layout[f"yaxis{i}"].update(zeroline=True, zerolinecolor="#cbd5e1", gridcolor="#f1f5f9")
    return figure(data, _with_legend_below(layout, height=440))


def gated_figure(name: str, grid: list[float], z: list[list[float]], lang: str = "en") -> go.Figure:
    """The gated unit over its two inputs, with the plotted diagonal and the line b = 1 drawn on it."""
    act = {"swiglu": "SiLU", "geglu": "GELU"}[name]
    bound = max(abs(v) for row in z for v in row) or 1.0
    lo, hi = grid[0], grid[-1]
    data = [
        {"type": "heatmap", "x": grid, "y": grid, "z": finite_grid(z), "zmin": -bound, "zmax": bound,
         "colorscale": DIVERGING, "colorbar": {"thickness": 12, "len": 0.85},
         "hovertemplate": "a = %{x:.2f}, b = %{y:.2f}: %{z:.3f}<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [lo, hi], "name": tr(lang, "moe_fig_diagonal"),
         "line": {"color": "#111827", "dash": "dot", "width": 2}},
        {"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [1, 1], "name": tr(lang, "moe_fig_b_one"),
         "line": {"color": GREEN, "dash": "dash", "width": 2}},
    ]
    # Both axes start at lo: their first tick labels ("−4", "−4") met at the corner without a standoff.
    layout = {"xaxis": {"title": {"text": tr(lang, "moe_fig_gate_a")}, "range": [lo, hi], "ticklabelstandoff": 4},
              "yaxis": {"title": {"text": tr(lang, "moe_fig_value_b")}, "range": [lo, hi], "ticklabelstandoff": 4}}
    title = tr(lang, "moe_fig_gated_title", name={"swiglu": "SwiGLU", "geglu": "GEGLU"}[name], act=act)
    full = _with_legend_below(layout, height=420, title=title)
    full["margin"]["r"] = 90                            # the colorbar: Plotly would push the margin and draw twice
    return figure(data, full)


def ffn_sizes_figure(s: FFNSizes, lang: str = "en") -> go.Figure:
    """Stacked weights per matrix: dense 4d GELU, SwiGLU at exactly 8/3·d, SwiGLU rounded up
    (every count and ratio from :class:`models.ffn.FFNSizes`)."""
    bars = [tr(lang, "moe_fig_dense", h=s.dense_hidden), tr(lang, "moe_fig_exact", h=s.exact_hidden),
            tr(lang, "moe_fig_rounded", h=s.swiglu_hidden)]
    parts = [("in", [s.dense["in"], 0, 0]), ("out", [s.dense["out"], 0, 0]),
             ("gate", [0, s.exact_per_matrix, s.swiglu["gate"]]), ("up", [0, s.exact_per_matrix, s.swiglu["up"]]),
             ("down", [0, s.exact_per_matrix, s.swiglu["down"]])]
    colors = {"in": "#94a3b8", "out": "#475569", "gate": "#ec4899", "up": "#8b5cf6", "down": "#4f46e5"}
    totals = [s.dense_total, s.exact_total, s.swiglu_total]
    labels = [f"  {s.dense_total:,.0f}", f"  {s.exact_total:,.0f} ({s.exact_change:+.2%})",
              f"  {s.swiglu_total:,.0f} ({s.change:+.2%})"]
    data = [{"type": "bar", "orientation": "h", "y": bars, "x": xs, "name": tr(lang, f"moe_fig_{part}"),
             "marker": {"color": colors[part]}, "hovertemplate": "%{x:,.0f}<extra>" + tr(lang, f"moe_fig_{part}") + "</extra>"}
            for part, xs in parts]
    data.append({"type": "scatter", "mode": "text", "y": bars, "x": totals, "showlegend": False, "text": labels,
                 "textposition": "middle right", "hoverinfo": "skip"})
    layout = {"barmode": "stack", "xaxis": {"title": {"text": tr(lang, "moe_fig_weights")}, "range": [0, max(totals) * 1.45]},
              "yaxis": {"autorange": "reversed"}}
    title = tr(lang, "moe_fig_sizes_title", d=s.d_model, h=s.swiglu_hidden, m=s.multiple_of)
    full = _with_legend_below(layout, height=340, title=title)
    full["margin"]["l"] = label_margin(bars)                     # the bar names, without a push (a second draw)
    return figure(data, full)


# --------------------------------------------------------------------------- routing view


def routing_figure(labels: list[str], probs: list[list[float]], topk_idx: list[list[int]], kept: list[list[bool]],
                   load: list[int], kept_load: list[int], dropped_load: list[int], balanced: float,
                   capacity: int | None, num_shared: int, shared_weight: list[float] | None = None,
                   lang: str = "en") -> go.Figure:
    """Router probabilities (experts × tokens) with the chosen experts circled and the dropped ones
    crossed, shared experts as always-on rows on top (each token's ``shared_weight``: 1, or a gate's
    sigmoid); beside it the load of each expert.

    Rows are numbers (shared experts 0 … S−1, expert e at S + e) labelled by ticks: two heatmaps on
    one categorical axis with different categories break plotly.js's heatmap calc.
    """
    N, E, k, S = len(labels), len(load), len(topk_idx[0]) if topk_idx else 0, num_shared
    rows = [tr(lang, "moe_fig_shared", i=i + 1) for i in range(S)] + [f"E{e + 1}" for e in range(E)]
    expert_rows = list(range(S, S + E))
    z = [[probs[t][e] for t in range(N)] for e in range(E)]          # (E, N)
    chosen = [([], []) for _ in range(k)]                            # per choice rank: kept (token, row)
    drop_x, drop_y = [], []
    for t in range(N):
        for slot in range(k):
            xs, ys = chosen[slot] if kept[t][slot] else (drop_x, drop_y)
            xs.append(t), ys.append(S + topk_idx[t][slot])
    marker_size = max(4, min(14, 520 // max(N, 1)))
    gaps = {"xgap": 1 if N <= 64 else 0, "ygap": 1 if E <= 32 else 0}
    data = [
        {"type": "heatmap", "x": list(range(N)), "y": expert_rows, "z": finite_grid(z), "zmin": 0,
         "zmax": max(max(map(max, probs)), 1e-9), "colorscale": WEIGHT_SCALE, **gaps,
         "colorbar": {"title": {"text": "p"}, "thickness": 10, "x": 0.64}, "customdata": [[r] * N for r in rows[S:]],
         "hovertemplate": "%{customdata} · " + tr(lang, "moe_fig_token") + " %{x}: p = %{z:.3f}<extra></extra>", **axis_ref(0)},
        *({"type": "scatter", "mode": "markers", "x": xs, "y": ys, "name": str(r + 1),
           "marker": {"symbol": "circle-open", "size": marker_size, "color": RANK_COLORS[min(r, len(RANK_COLORS) - 1)],
                      "line": {"width": 2.5 if r == 0 else 2}}, "hoverinfo": "skip", **axis_ref(0)}
          for r, (xs, ys) in enumerate(chosen)),
        {"type": "scatter", "mode": "markers", "x": drop_x, "y": drop_y, "name": tr(lang, "moe_fig_dropped"),
         "marker": {"symbol": "x-thin", "size": marker_size, "color": NAN_COLOR, "line": {"width": 3, "color": NAN_COLOR}},
         "hoverinfo": "skip", **axis_ref(0)},
    ]
    if S:
        weight = finite_grid([shared_weight or [1] * N])[0]
        data.append({"type": "heatmap", "x": list(range(N)), "y": list(range(S)), "z": [weight] * S,
                     "zmin": 0, "zmax": 1, "showscale": False, "colorscale": [[0, "#f8fafc"], [1, "#cbd5e1"]], **gaps,
                     "hovertemplate": tr(lang, "moe_fig_shared_weight") + " · " + tr(lang, "moe_fig_token")
                                      + " %{x}: %{z:.3f}<extra></extra>",
                     **axis_ref(0)})
    data += [
        {"type": "bar", "orientation": "h", "y": list(range(S)), "x": [N] * S, "name": tr(lang, "moe_fig_shared_hover"),
         "marker": {"color": "#cbd5e1"}, "showlegend": False, "hovertemplate": "%{x}<extra></extra>", **axis_ref(1)},
        {"type": "bar", "orientation": "h", "y": expert_rows, "x": kept_load, "name": tr(lang, "moe_fig_kept"),
         "marker": {"color": INDIGO}, "showlegend": False, **axis_ref(1)},
        {"type": "bar", "orientation": "h", "y": expert_rows, "x": dropped_load,
         "name": tr(lang, "moe_fig_dropped"), "marker": {"color": NAN_COLOR}, "showlegend": False, **axis_ref(1)},
    ]
    shapes = [{"type": "line", "xref": "x2", "yref": "y2 domain", "x0": balanced, "x1": balanced, "y0": 0, "y1": 1,
               "line": {"color": "#111827", "dash": "dash", "width": 1.5}}]
    # Each label on the outer side of its line, so that the two never overlap (capacity may be either side),
    # a row above the legend's (at k = 8 the legend reaches past the heatmap).
    capacity_first = capacity is not None and capacity < balanced

    def label(x: float, text: str, outward_left: bool, **font) -> dict:
        return {"xref": "x2", "yref": "y2 domain", "x": x, "y": 1.0, "yanchor": "bottom", "yshift": 28, "showarrow": False,
                "xanchor": "right" if outward_left else "left", "text": f"{text} " if outward_left else f" {text}",
                "font": {"size": 11, **font}}
    notes = [label(balanced, tr(lang, "moe_fig_balanced", v=round(balanced, 2)), not capacity_first)]
    if capacity is not None:
        shapes.append({"type": "line", "xref": "x2", "yref": "y2 domain", "x0": capacity, "x1": capacity, "y0": 0,
                       "y1": 1, "line": {"color": NAN_COLOR, "dash": "dot", "width": 2}})
        notes.append(label(capacity, tr(lang, "moe_fig_capacity", c=capacity), capacity_first, color=NAN_COLOR))
    row_axis = {"range": [S + E - 0.5, -0.5], "tickmode": "array", "tickvals": list(range(S + E)), "ticktext": rows,
                "showticklabels": S + E <= 40, "showgrid": False, "zeroline": False}
    layout = subplot_row(["", ""], spacing=0.1)
    layout["xaxis"].update(domain=[0, 0.62], title={"text": tr(lang, "moe_fig_token")}, **_token_axis(labels),
                           showgrid=False, zeroline=False)
    layout["yaxis"].update(row_axis, title={"text": tr(lang, "moe_fig_expert")})
    layout["xaxis2"].update(domain=[0.72, 1.0], title={"text": tr(lang, "moe_fig_load")}, rangemode="nonnegative")
    layout["yaxis2"].update(row_axis, side="right", automargin=True)      # clear of the colorbar's ticks
    layout.update(barmode="stack", shapes=shapes, annotations=notes)
    # "choice 1 2 … k": short entries, so that the legend stays over the heatmap at k = 8.
    layout["legend"] = {"orientation": "h", "x": 0, "y": 1.0, "xanchor": "left", "yanchor": "bottom",
                        "traceorder": "normal", "font": {"size": 11}, "title": {"text": tr(lang, "moe_fig_choices")}}
    height = max(380, min(900, 170 + 18 * len(rows)))
    return figure(data, layout | base_layout(height=height, title=tr(lang, "moe_fig_route_title", k=k)))


def flow_figure(flows: list[list[int]], kept_slots: list[int], routed_norm: list[float], dropped: int,
                assignments: int, lang: str = "en", *, tokens: list[str] | None = None) -> go.Figure:
    """A Sankey from choice rank to expert (or to "dropped: residual only"), and per token the size of
    the routed output: zero for a token whose every slot was dropped. ``flows[rank][e]`` counts the
    assignments (:meth:`models.moe_explore.RouteExploration.flows`), column ``E`` the dropped ones;
    ``kept_slots[t]`` how many of its choices token ``t`` kept (colours its bar); ``tokens`` name the bars,
    as the routing figure names them (their positions without)."""
    k, num_experts = len(flows), len(flows[0]) - 1 if flows else 0
    # The right column lists the experts that take an assignment, in order, then "dropped" if any: Plotly
    # draws no node without a link and reads x and y by position among the nodes it draws, so an empty
    # expert listed there shifted every position after it (the residual landed among the experts).
    into = [sum(row[e] for row in flows) for e in range(num_experts + 1)]            # (E + 1,) assignments
    right = [e for e, n in enumerate(into) if n]
    names = [f"E{e + 1}" for e in range(num_experts)] + [tr(lang, "moe_fig_residual")]
    nodes = [tr(lang, "moe_fig_choice", r=r + 1) for r in range(k)] + [names[e] for e in right]
    node_of = {e: k + i for i, e in enumerate(right)}
    links = [((slot, node_of[e]), n) for slot, row in enumerate(flows) for e, n in enumerate(row) if n]
    colors = [INDIGO] * k + [NAN_COLOR if e == num_experts else GRAY for e in right]
    # A label needs ~20 px of height (nodes of small load crowd together): the figure grows with E (1,000 px
    # at most, 150 of them margins), and past that every other expert is labelled (the hover names each).
    height = max(400, min(1000, 150 + 20 * (num_experts + 1)))
    every = 1 if (height - 150) / (num_experts + 1) >= 18 else 2
    pad = min(14.0, 0.6 * (height - 150) / (num_experts + 1))  # between nodes: a label's room at any load
    labels = nodes[:k] + [names[e] if e == num_experts or e % every == 0 else "" for e in right]
    # Stacked top-down, each node centred where its height (in proportion to its assignments) and the pads
    # above it put it: spread evenly, a large "dropped" node overlapped its neighbours.
    area = height - 150                                                              # px between the margins
    px = (area - pad * (len(right) - 1)) / max(1, sum(into))                         # px per assignment
    right_y, top = [], 0.0
    for e in right:
        right_y.append(min(max((top + into[e] * px / 2) / area, 0.001), 0.999))
        top += into[e] * px + pad
    residual = node_of.get(num_experts)
    sankey = {"type": "sankey", "domain": {"x": [0, 0.46], "y": [0, 1]}, "arrangement": "snap",
              "node": {"label": labels, "customdata": nodes, "hovertemplate": "%{customdata}: %{value}<extra></extra>",
                       "color": colors, "pad": pad, "thickness": 14,
                       "x": [0.001] * k + [0.999] * len(right),
                       "y": [(r + 0.5) / k for r in range(k)] + right_y},
              "link": {"source": [s for (s, _), _ in links], "target": [t for (_, t), _ in links],
                       "value": [v for _, v in links],
                       "color": ["rgba(220,38,38,0.45)" if t == residual else "rgba(79,70,229,0.25)"
                                 for (_, t), _ in links]}}
    color = [INDIGO if n == k else (ORANGE if n else NAN_COLOR) for n in kept_slots]
    N = len(routed_norm)
    token_names = list(tokens) if tokens is not None else [str(t) for t in range(N)]
    bars = {"type": "bar", "x": list(range(N)), "y": finite(routed_norm), "marker": {"color": color},
            "customdata": token_names, "showlegend": False, "hovertemplate": "%{customdata}: %{y:.3f}<extra></extra>",
            **axis_ref(0)}
    legend = [{"type": "bar", "x": [None], "y": [None], "name": tr(lang, f"moe_fig_{key}", k=k),
               "marker": {"color": c}, **axis_ref(0)}
              for key, c in (("slots_all", INDIGO), ("slots_some", ORANGE))]
    nothing_kept = [t for t, n in enumerate(kept_slots) if n == 0]   # a zero bar is invisible: mark it
    legend.append({"type": "scatter", "mode": "markers", "x": nothing_kept, "y": [0] * len(nothing_kept),
                   "name": tr(lang, "moe_fig_slots_none"), "marker": {"symbol": "x-thin", "size": 9, "color": NAN_COLOR,
                                                                     "line": {"width": 2.5, "color": NAN_COLOR}},
                   "cliponaxis": False, "customdata": [token_names[t] for t in nothing_kept],
                   "hovertemplate": "%{customdata}: y = 0<extra></extra>", **axis_ref(0)})
    layout = {"xaxis": {"domain": [0.56, 1.0], "anchor": "y", "title": {"text": tr(lang, "moe_fig_token")},
                        **_token_axis(token_names)},
              "yaxis": {"anchor": "x", "title": {"text": tr(lang, "moe_fig_routed_norm")}, "rangemode": "tozero"}}
    title = tr(lang, "moe_fig_flow_title", dropped=dropped, total=assignments)
    return figure([sankey, bars, *legend], _with_legend_below(layout, height=height, title=title))


def loss_figure(aux: float, z: float, num_experts: int, top_k: int, counts: dict[str, int],
                lang: str = "en") -> go.Figure:
    """The aux loss between its balanced (k) and collapsed (E) values; parameters and FLOPs per token
    of the MoE against a dense FFN of equal active size (``counts``: ``total``, ``active``, ``dense``
    weights, ``flops_moe``, ``flops_dense`` per token)."""
    names = [tr(lang, f"moe_fig_{key}") for key in ("moe_total", "moe_active", "dense_eq")]
    params = [counts["total"], counts["active"], counts["dense"]]
    flops = [counts["flops_moe"], counts["flops_dense"]]
    data = [
        {"type": "bar", "orientation": "h", "y": [tr(lang, "moe_fig_aux")], "x": [aux], "marker": {"color": INDIGO},
         "text": [f"{aux:.3f}"], "textposition": "outside", "showlegend": False, "hoverinfo": "skip", **axis_ref(0)},
        {"type": "bar", "x": names, "y": params, "marker": {"color": [INDIGO, "#818cf8", GRAY]},
         "text": [f"{p:,}" for p in params], "textposition": "outside", "showlegend": False,
         "hovertemplate": "%{x}: %{y:,}<extra></extra>", **axis_ref(1)},
        {"type": "bar", "x": names[1:], "y": flops, "marker": {"color": ["#818cf8", GRAY]},
         "text": [f"{f:,}" for f in flops], "textposition": "outside", "showlegend": False,
         "hovertemplate": "%{x}: %{y:,}<extra></extra>", **axis_ref(2)},
    ]
    layout = subplot_row([tr(lang, "moe_fig_aux"), tr(lang, "moe_fig_params"), tr(lang, "moe_fig_flops")], spacing=0.1)
    top = max(num_experts, aux) * 1.15
    layout["xaxis"].update(range=[0, top])
    layout["yaxis"].update(showticklabels=False)
    layout["yaxis2"].update(range=[0, max(params) * 1.25])
    layout["yaxis3"].update(range=[0, max(flops) * 1.25])
    shapes, notes = [], []
    for value, key, color in ((top_k, "aux_balanced", GREEN), (num_experts, "aux_collapsed", NAN_COLOR)):
        shapes.append({"type": "line", "xref": "x", "yref": "y domain", "x0": value, "x1": value, "y0": 0, "y1": 1,
                       "line": {"color": color, "dash": "dash", "width": 2}})
        # Each label on the side of its line facing the panel's middle, so that it stays in the panel.
        inner = "left" if value < top / 2 else "right"
        text = f"{tr(lang, 'moe_fig_' + key)} ({value})"
        notes.append({"xref": "x", "yref": "y domain", "x": value, "y": 0.02 if key == "aux_balanced" else 0.9,
                      "yanchor": "bottom" if key == "aux_balanced" else "top", "xanchor": inner, "showarrow": False,
                      "text": f" {text}" if inner == "left" else f"{text} ", "font": {"size": 11, "color": color}})
    layout["shapes"] = shapes
    layout["annotations"] += notes
    title = tr(lang, "moe_fig_loss_title", aux=aux, z=z, k=top_k, E=num_experts)
    return figure(data, layout | base_layout(height=360, title=title))


def _short(label: str, width: int = 8) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def _token_axis(labels: list[str]) -> dict:
    """An x axis of one tick per token, named (cut to 8 characters), while there are at most 80.

    >>> _token_axis(["The", "tokenization"])["ticktext"]
    ['The', 'tokeniz…']
    """
    n = len(labels)
    return {"tickmode": "array", "tickvals": list(range(n)), "ticktext": [_short(s) for s in labels],
            "tickangle": -60, "showticklabels": n <= 80, "range": [-0.5, n - 0.5]}


# --------------------------------------------------------------------------- training view


def _run_title(run: str, aux_coef: float, lang: str) -> str:
    return tr(lang, "moe_fig_run_aux", c=aux_coef) if run == "aux" else tr(lang, "moe_fig_run_no_aux")


def train_load_figure(runs: dict[str, tuple[list[float], list[list[float]]]], aux_coef: float, total_steps: int,
                      lang: str = "en") -> go.Figure:
    """One heatmap per run: experts × steps, colour = share of the step's assignments; ``runs`` maps a
    run to ``(steps, z[E][columns])`` (:meth:`models.moe_train.History.binned_load`)."""
    names = list(runs)
    E = max((len(z) for _, z in runs.values()), default=0) or 1
    zmax = min(1.0, 4 / E)                                            # balanced = a quarter of the scale
    data = []
    for i, name in enumerate(names):
        steps, z = runs[name]                                            # (E, columns)
        data.append({"type": "heatmap", "x": steps, "y": [f"E{e + 1}" for e in range(E)],
                     "z": finite_grid(z), "zmin": 0, "zmax": zmax, "colorscale": LOAD_SCALE, "showscale": i == 0,
                     "colorbar": {"title": {"text": tr(lang, "moe_fig_share")}, "thickness": 10},
                     "hovertemplate": "%{y} · step %{x}: %{z:.3f}<extra></extra>", **axis_ref(i)})
    layout = subplot_row([_run_title(n, aux_coef, lang) for n in names], spacing=0.08)
    for i in range(len(names)):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(range=[0.5, total_steps + 0.5], title={"text": tr(lang, "moe_fig_step")})
        layout[f"yaxis{suffix}"].update(autorange="reversed", showticklabels=True)
    return figure(data, layout | base_layout(height=max(300, 140 + 16 * E),
                                             title=tr(lang, "moe_fig_train_load_title")))


def train_curves_figure(curves: dict[str, dict[str, list[float]]], aux_coef: float, num_experts: int, top_k: int,
                        total_steps: int, lang: str = "en") -> go.Figure:
    """Load CV, aux loss and task loss per step for each run (solid: with the aux loss, dashed: without)."""
    data = []
    for run, series in curves.items():
        steps = list(range(1, len(series["cv"]) + 1))
        for panel, key in enumerate(("cv", "aux", "task")):
            data.append({"type": "scatter", "mode": "lines", "x": steps, "y": finite(series[key]),
                         "name": _run_title(run, aux_coef, lang), "legendgroup": run, "showlegend": panel == 0,
                         "line": {**RUN_STYLE[run], "width": 1.6}, **axis_ref(panel)})
    layout = subplot_row([tr(lang, f"moe_fig_curves_{k}") for k in ("cv", "aux", "task")], spacing=0.07)
    for i in ("", "2", "3"):
        layout[f"xaxis{i}"].update(range=[1, total_steps], title={"text": tr(lang, "moe_fig_step")})
    layout["yaxis"].update(rangemode="tozero")
    # The aux loss between its two ends, both drawn: k when the load is balanced, E when one expert takes it all.
    layout["shapes"] = [{"type": "line", "xref": "x2 domain", "yref": "y2", "x0": 0, "x1": 1, "y0": value, "y1": value,
                         "line": {"color": color, "dash": "dot", "width": 1.5}}
                        for value, color in ((top_k, GREEN), (num_experts, NAN_COLOR))]
    highest = max((v for series in curves.values() for v in series["aux"] if v == v), default=top_k)
    layout["yaxis2"].update(range=[0, max(num_experts, highest) * 1.08])
    return figure(data, _with_legend_below(layout, height=360))


def printable(char: str) -> str:
    """A character as a readable axis label.

    >>> printable(" "), printable("\\n"), printable("a")
    ('␣', '⏎', 'a')
    """
    return {" ": "␣", "\n": "⏎", "\t": "⇥"}.get(char, char)


def expert_chars_figure(vocab: list[str], shares: dict[str, list[list[float]]], aux_coef: float,
                        lang: str = "en") -> go.Figure:
    """One heatmap per run: experts × characters, the share of each character's tokens sent to each expert."""
    names = list(shares)
    E = len(next(iter(shares.values()))) if shares else 0
    labels = [printable(c) for c in vocab]
    data = [{"type": "heatmap", "x": labels, "y": [f"E{e + 1}" for e in range(E)], "z": finite_grid(shares[name]),
             "zmin": 0, "zmax": 1, "colorscale": LOAD_SCALE, "showscale": i == 0, "xgap": 1, "ygap": 1,
             "colorbar": {"title": {"text": tr(lang, "moe_fig_share")}, "thickness": 10},
             "hovertemplate": "'%{x}' → %{y}: %{z:.2f}<extra></extra>", **axis_ref(i)}
            for i, name in enumerate(names)]
    layout = subplot_row([_run_title(n, aux_coef, lang) for n in names], spacing=0.06)
    for i in range(len(names)):
        suffix = "" if i == 0 else str(i + 1)
        # Every character labelled: Plotly's automatic ticks label every other one of the 61.
        layout[f"xaxis{suffix}"].update(type="category", tickangle=0, tickfont={"size": 8}, dtick=1,
                                        title={"text": tr(lang, "moe_fig_char")})
        layout[f"yaxis{suffix}"].update(autorange="reversed")
    return figure(data, layout | base_layout(height=max(300, 140 + 16 * E), title=tr(lang, "moe_fig_chars_title")))


def waiting_figures(lang: str = "en") -> tuple:
    """The training view's three figures before the first run."""
    return tuple(waiting(tr(lang, f"moe_fig_{key}")) for key in ("wait_load", "wait_curves", "wait_chars"))
