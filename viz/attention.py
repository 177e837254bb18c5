"""Figures of the Attention tab's views of a trained model: every head, one layer step by step, why √d,
the next token.

Plain dicts (:func:`viz.common.plain_figure`): the heads grid alone is 16 maps of up to 128 × 128
weights, redrawn on every control change. Numbers arrive computed (:mod:`models.attention_explore`); text
comes from ``locales/attention_*.py``.
"""
from __future__ import annotations

import html
import math

from locales import tr
from models.attention_explore import PATTERN_THRESHOLD, PATTERNS
from viz.common import (WEIGHT_SCALE, PlainFigure, axis_ref, base_layout, colorbar_title, finite, plain_figure, spaced,
                         subplot_row)

DIVERGING = [[0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"]]
COLORS = {"trained": "#4f46e5", "changed": "#ef4444", "theory": "#111827", "kept": "#4f46e5", "cut_k": "#cbd5e1",
          "cut_p": "#f59e0b", "selected": "#ef4444", "faint": "rgba(79, 70, 229, 0.10)"}
SHOWN = {" ": "␣", "\n": "↵", "\t": "⇥"}


def show_char(char: str) -> str:
    """A character as a label: whitespace made visible.

    >>> show_char(" "), show_char("a")
    ('␣', 'a')
    """
    return SHOWN.get(char, char)


def _ticks(labels: list[str], *, size: int = 10, most: int | None = None) -> dict:
    """Character tick labels: every one, or every n-th past ``most`` (the hover names each)."""
    shown = list(range(len(labels))) if most is None else spaced(len(labels), most)
    return {"tickmode": "array", "tickvals": shown, "ticktext": [show_char(labels[i]) for i in shown],
            "tickangle": 0, "tickfont": {"size": size}, "showgrid": False, "zeroline": False}


def _grid(values, digits: int = 3) -> list:
    """A tensor as nested lists rounded to ``digits`` (in float64, so JSON gets ``0.123``, not
    ``0.12300000339746475``); NaN and ±inf become ``None`` (a gap).

    >>> import torch
    >>> _grid(torch.tensor([[0.12345, float("-inf")]]))
    [[0.123, None]]
    """
    rounded = values.double().round(decimals=digits)
    if bool(rounded.isfinite().all()):
        return rounded.tolist()
    return [finite(row) for row in rounded.tolist()] if rounded.dim() == 2 else finite(rounded.tolist())


def _head_name(lang: str, layer: int, head: int, kv: int | None, group: int) -> str:
    if kv is None or group == 1:
        return tr(lang, "attn_heads_fig_cell", layer=layer, head=head)
    return tr(lang, "attn_heads_fig_cell_kv", layer=layer, head=head, kv=kv + 1)


# --------------------------------------------------------------------------- all heads
def heads_grid(view, layer: int, head: int, lang: str = "en") -> PlainFigure:
    """Every layer × head as a small attention map (BertViz's model view); the enlarged one outlined."""
    L, H, T, _ = view.probs.shape
    group = H // max(1, len({k for k in view.kv_heads if k is not None}))
    gap = 0.03
    positions = list(range(1, T + 1))                                                # 1-based, as the sliders
    width, height = (1 - gap * (H - 1)) / H, (1 - gap * (L - 1)) / L
    data, layout = [], {"annotations": [], "shapes": []}
    for l in range(L):
        for h in range(H):
            n = l * H + h
            ref = axis_ref(n)
            x0, y1 = h * (width + gap), 1 - l * (height + gap)
            suffix = ref["xaxis"][1:]
            layout[f"xaxis{suffix}"] = {"domain": [x0, x0 + width], "anchor": f"y{suffix}", "visible": False,
                                        "range": [0.5, T + 0.5]}
            layout[f"yaxis{suffix}"] = {"domain": [y1 - height, y1], "anchor": f"x{suffix}", "visible": False,
                                        "range": [T + 0.5, 0.5]}
            data.append({"type": "heatmap", "z": _grid(view.probs[l, h]), "zmin": 0, "zmax": 1, "x": positions,
                         "y": positions,
                         "colorscale": WEIGHT_SCALE, "showscale": False, **ref,
                         "hovertemplate": f"L{l + 1} H{h + 1} · %{{y}} → %{{x}}: %{{z:.3f}}<extra></extra>"})
            chosen = (l + 1, h + 1) == (layer, head)
            layout["annotations"].append({
                "text": _head_name(lang, l + 1, h + 1, view.kv_heads[h], group), "x": x0 + width / 2, "y": y1,
                "xref": "paper", "yref": "paper", "yanchor": "bottom", "showarrow": False,
                "font": {"size": 11, "color": COLORS["selected"] if chosen else "#374151"}})
            if chosen:
                layout["shapes"].append({"type": "rect", "xref": "paper", "yref": "paper", "x0": x0 - 0.004,
                                         "x1": x0 + width + 0.004, "y0": y1 - height - 0.004, "y1": y1 + 0.004,
                                         "line": {"color": COLORS["selected"], "width": 3}})
    size = 150 * L + 90
    return plain_figure(data, layout | base_layout(height=size, title=tr(lang, "attn_heads_fig_grid", name=view.variant))
                        | {"margin": {"l": 20, "r": 20, "t": 70, "b": 20}})


def _reads(labels: list[str], row: list[float], top: int = 4) -> str:
    """"'a' 0.52 · '␣' 0.21 …": the keys a query reads most."""
    order = sorted(range(len(row)), key=lambda j: -row[j])[:top]
    return " · ".join(f"{show_char(labels[j])} ({j + 1}) {row[j]:.2f}" for j in order if row[j] >= 0.005)


def head_detail(view, layer: int, head: int, query: int, mode: str = "lines", lang: str = "en") -> PlainFigure:
    """One head enlarged: lines from every query (top) to the keys it reads (bottom), the chosen query's
    in colour (BertViz's head view), or the attention map with the chosen query's row outlined."""
    weights = view.probs[layer - 1, head - 1]                                        # (T, T)
    probs = weights.tolist()
    labels, T = view.labels, len(view.labels)
    i = query - 1
    title = tr(lang, "attn_heads_fig_detail", layer=layer, head=head, query=query, char=show_char(labels[i]),
               reads=_reads(labels, probs[i]))
    if mode == "heatmap":
        hover = [[f"{show_char(labels[q])} ({q + 1}) → {show_char(labels[k])} ({k + 1}): {probs[q][k]:.3f}"
                  for k in range(T)] for q in range(T)]
        data = [{"type": "heatmap", "z": _grid(weights), "zmin": 0, "zmax": 1, "colorscale": WEIGHT_SCALE,
                 "text": hover, "hovertemplate": "%{text}<extra></extra>",
                 "colorbar": {"title": colorbar_title(tr(lang, "attn_view_weight")), "thickness": 12}}]
        # Square cells of ~12 px: a label (10 px type) on each up to 64 characters, every other one past that.
        ticks = _ticks(labels, most=64)
        layout = {"xaxis": ticks | {"title": {"text": tr(lang, "attn_view_key")}, "side": "bottom"},
                  "yaxis": ticks | {"title": {"text": tr(lang, "attn_view_query")}, "autorange": "reversed",
                                    "scaleanchor": "x"},
                  "shapes": [{"type": "rect", "x0": -0.5, "x1": T - 0.5, "y0": i - 0.5, "y1": i + 0.5,
                              "line": {"color": COLORS["selected"], "width": 2}}]}
        return plain_figure(data, layout | base_layout(height=max(420, 160 + 12 * min(T, 64)), title=title))
    # lines: queries on top (y = 1), keys below (y = 0)
    faint_x, faint_y = [], []
    for q in range(T):
        for k in range(q + 1):
            if probs[q][k] >= 0.1 and q != i:
                faint_x += [q, k, None]
                faint_y += [1, 0, None]
    data = [{"type": "scatter", "mode": "lines", "x": faint_x, "y": faint_y, "hoverinfo": "skip",
             "line": {"color": COLORS["faint"], "width": 1}, "showlegend": False}]
    for k in range(i + 1):                                                           # the chosen query's lines
        w = probs[i][k]
        if w < 0.01:
            continue
        data.append({"type": "scatter", "mode": "lines", "x": [i, k], "y": [1, 0], "showlegend": False,
                     "line": {"color": COLORS["selected"], "width": 1 + 9 * w}, "opacity": min(1.0, 0.3 + w),
                     "hovertemplate": f"{show_char(labels[i])} → {show_char(labels[k])} ({k + 1}): {w:.3f}<extra></extra>"})
    reads = [_reads(labels, probs[q]) for q in range(T)]
    marks = {"type": "scatter", "mode": "text", "showlegend": False, "textfont": {"size": 13}}
    data.append(marks | {"x": list(range(T)), "y": [1.06] * T, "text": [show_char(c) for c in labels],
                         "customdata": [[q + 1, r] for q, r in enumerate(reads)],
                         "hovertemplate": "%{customdata[0]}: %{text} → %{customdata[1]}<extra></extra>",
                         "textfont": {"size": 13, "color": ["#ef4444" if q == i else "#111827" for q in range(T)]}})
    received = [sum(probs[q][k] for q in range(T)) for k in range(T)]
    data.append(marks | {"x": list(range(T)), "y": [-0.06] * T, "text": [show_char(c) for c in labels],
                         "customdata": [[k + 1, round(r, 2)] for k, r in enumerate(received)],
                         "hovertemplate": f"%{{customdata[0]}}: %{{text}} · {tr(lang, 'attn_heads_fig_received')} "
                                          "%{customdata[1]}"
                                          "<extra></extra>"})
    layout = {"xaxis": {"visible": False, "range": [-1, T]},
              "yaxis": {"visible": False, "range": [-0.2, 1.2]},
              "annotations": [
                  {"text": tr(lang, "attn_heads_fig_queries"), "x": 0, "y": 1.16, "xref": "paper", "yref": "y",
                   "xanchor": "left", "showarrow": False, "font": {"size": 11, "color": "#6b7280"}},
                  {"text": tr(lang, "attn_heads_fig_keys"), "x": 0, "y": -0.17, "xref": "paper", "yref": "y",
                   "xanchor": "left", "showarrow": False, "font": {"size": 11, "color": "#6b7280"}}]}
    return plain_figure(data, layout | base_layout(height=380, title=title))


def patterns_figure(view, lang: str = "en") -> PlainFigure:
    """The measured share of every head's attention on each pattern's key, on held-out text and on the
    prompt; the last column: entropy over a uniform head's ("broad")."""
    names = [*PATTERNS, "broad"]
    panels = [view.held_out, view.prompt]
    L, H = view.probs.shape[:2]
    rows = [tr(lang, "attn_heads_fig_cell", layer=l + 1, head=h + 1) for l in range(L) for h in range(H)]
    data = []
    for n, m in enumerate(panels):
        share = m.share.reshape(L * H, -1).tolist()
        ratio = (m.entropy / m.uniform_entropy).reshape(-1).tolist()
        z = [row + [r] for row, r in zip(share, ratio)]
        chance = [*m.chance, 1.0]
        data.append({"type": "heatmap", "z": [finite([round(v, 2) for v in row]) for row in z], "zmin": 0, "zmax": 1, "colorscale": WEIGHT_SCALE,
                     "x": list(range(len(names))), "y": list(range(len(rows))),
                     "text": [[("" if v is None or not math.isfinite(v) else f"{v:.2f}") for v in row] for row in z],
                     "texttemplate": "%{text}", "textfont": {"size": 10}, "showscale": n == 1,
                     "customdata": [[f"{c:.3f}" if math.isfinite(c) else "–" for c in chance]] * len(rows),
                     "hovertemplate": "%{text} (" + tr(lang, "attn_heads_fig_chance") + " %{customdata})<extra></extra>",
                     "colorbar": {"title": colorbar_title(tr(lang, "attn_heads_fig_share")), "thickness": 12},
                     **axis_ref(n)})
    titles = [tr(lang, "attn_heads_fig_held_out", chars=view.held_out.chars),
              tr(lang, "attn_heads_fig_on_prompt", chars=view.prompt.chars)]
    layout = subplot_row(titles, spacing=0.12)
    for n, m in enumerate(panels):
        suffix = "" if n == 0 else str(n + 1)
        ticks = [tr(lang, f"attn_heads_pattern_{p}") for p in names]
        chance = [f"{c:.2f}" if math.isfinite(c) else "–" for c in m.chance]
        # Two-line labels 45° apart from each other's lines: at 30° neighbours overlapped at 1366 px.
        layout[f"xaxis{suffix}"].update({"tickmode": "array", "tickvals": list(range(len(names))), "tickangle": -45,
                                         "ticktext": [f"{t}<br>({c})" for t, c in zip(ticks, chance)] + [ticks[-1]]})
        layout[f"yaxis{suffix}"].update({"tickmode": "array", "tickvals": list(range(len(rows))), "ticktext": rows,
                                         "autorange": "reversed", "showticklabels": True})
    return plain_figure(data, layout | base_layout(height=120 + 24 * len(rows))
                        | {"margin": {"l": 70, "r": 90, "t": 60, "b": 150}})          # r: the colorbar and its title


def patterns_summary(patterns, lang: str = "en", threshold: float = PATTERN_THRESHOLD) -> str:
    """Which heads show which pattern, with the numbers, as Markdown lines."""
    found: dict[str, list[str]] = {}
    for pattern, layer, head, value in patterns.found(threshold):
        found.setdefault(pattern, []).append(f"L{layer} H{head} **{value:.2f}**")
    lines = [tr(lang, "attn_heads_summary_intro", chars=patterns.chars, threshold=round(100 * threshold))]
    for pattern in (*PATTERNS, "broad"):
        heads = found.get(pattern)
        name = tr(lang, f"attn_heads_pattern_{pattern}")
        if pattern == "broad":
            text = ", ".join(heads) if heads else tr(lang, "attn_heads_summary_no_head")
            lines.append(tr(lang, "attn_heads_summary_broad", pattern=name, heads=text))
            continue
        chance = patterns.chance[PATTERNS.index(pattern)]
        best = float("nan") if not math.isfinite(chance) else float(patterns.share[..., PATTERNS.index(pattern)].max())
        text = ", ".join(heads) if heads else tr(lang, "attn_heads_summary_best", best=best)
        lines.append(tr(lang, "attn_heads_summary_line", pattern=name, heads=text,
                        chance=f"{chance:.3f}" if math.isfinite(chance) else "–"))
    return "\n".join(lines)


# --------------------------------------------------------------------------- step by step
def steps_table(trace, lang: str = "en") -> str:
    """Every stage as an HTML table, a row per tensor: its line of code, shape, stride, contiguity, storage
    and whether that storage is its input's; torch's message where the line raises. (HTML, not Markdown:
    shapes and code must not wrap.)"""
    yes, no = tr(lang, "attn_steps_yes"), tr(lang, "attn_steps_no")
    cell = 'style="padding:3px 8px;border-bottom:1px solid #e5e7eb;white-space:nowrap;vertical-align:top"'
    mono = 'style="padding:3px 8px;border-bottom:1px solid #e5e7eb;white-space:nowrap;vertical-align:top;' \
           'font-family:ui-monospace,monospace;font-size:0.95em"'
    code_cell = mono.replace("white-space:nowrap", "white-space:normal;min-width:14em")
    heads = [tr(lang, f"attn_steps_col_{c}") for c in ("n", "stage", "code", "tensor", "shape", "stride",
                                                         "contiguous", "storage", "shares")]
    rows = ["<tr>" + "".join(f'<th {cell} align="left">{html.escape(h)}</th>' for h in heads) + "</tr>"]
    for n, stage in enumerate(trace.stages, 1):
        name = html.escape(tr(lang, f"attn_steps_stage_{stage.key}"))
        codes = stage.code.split("\n")
        if stage.error:
            rows.append(f'<tr style="background:#fef2f2"><td {cell}>{n}</td><td {cell}>{name}</td>'
                        f'<td {code_cell}>{html.escape(stage.code)}</td><td colspan="6" style="padding:3px 8px;'
                        f'border-bottom:1px solid #e5e7eb;color:#b91c1c">RuntimeError: {html.escape(stage.error)}'
                        "</td></tr>")
            continue
        for k, info in enumerate(stage.tensors):
            code = codes[k] if len(codes) == len(stage.tensors) else (stage.code if k == 0 else "")
            shares = "" if info.shares_storage is None else (
                f"{yes} ({info.source})" if info.shares_storage else f"<b>{no}</b> ({info.source})")
            offset = f" +{info.storage_offset}" if info.storage_offset else ""
            values = [str(n) if k == 0 else "", name if k == 0 else ""]
            rows.append("<tr>" + "".join(f"<td {cell}>{v}</td>" for v in values)
                        + f"<td {code_cell}>{html.escape(code)}</td><td {mono}>{info.name}</td>"
                        + f"<td {mono}>{tuple(info.shape)}</td><td {mono}>{tuple(info.stride)}</td>"
                        + f"<td {cell}>{yes if info.contiguous else no}</td>"
                        + f"<td {mono}>…{info.storage % 16 ** 6:06x}{offset}</td><td {cell}>{shares}</td></tr>")
    return ('<div style="overflow-x:auto"><table style="border-collapse:collapse;font-size:0.85em">'
            + "".join(rows) + "</table></div>")


def steps_check(trace, lang: str = "en") -> str:
    """The checks under the table: the last stage against the model's own output and SDPA."""
    ok = "✓" if trace.out_diff <= 1e-6 else "✗"          # in every font: an emoji may draw as a box
    lines = [tr(lang, "attn_steps_check_out", layer=trace.layer, diff=f"{trace.out_diff:.1e}", ok=ok),
             tr(lang, "attn_steps_check_sdpa", diff=f"{trace.sdpa_diff:.1e}")]
    if trace.naive_diff is not None:
        lines.append(tr(lang, "attn_steps_check_mla", diff=f"{trace.naive_diff:.1e}"))
    error = next((s.error for s in trace.stages if s.error), None)
    if error:
        lines.append(tr(lang, "attn_steps_check_view", error=error))
    return "\n\n".join(lines)


def steps_figure(trace, lang: str = "en") -> PlainFigure:
    """The chosen query token's numbers at every stage, top to bottom: a row (one vector) or a small
    heatmap (a row per head); the stages over keys have a column per key position."""
    stages = [(n, s) for n, s in enumerate(trace.stages, 1) if s.values is not None]
    below = {"keys": 1.6, "dims": 0.3}                                                # tick labels under a strip
    units = [s.values.shape[0] + 1.3 + below[s.columns] for _, s in stages]
    total = sum(units)
    data, layout, top = [], {"annotations": []}, 1.0
    H = max(s.values.shape[0] for _, s in stages)
    for k, ((n, stage), unit) in enumerate(zip(stages, units)):
        bottom = top - unit / total * 0.98
        strip_bottom = bottom + below[stage.columns] / total * 0.98
        strip_top = top - 1.3 / total * 0.98
        ref = axis_ref(k)
        suffix = ref["xaxis"][1:]
        values = stage.values.tolist()
        rows, cols = len(values), len(values[0])
        keys = stage.columns == "keys"
        probs = stage.key == "softmax"
        flat = [v for row in values for v in row if math.isfinite(v)]
        bound = max((abs(v) for v in flat), default=1.0) or 1.0
        names = ([("▶ " if h + 1 == trace.head else "") + f"H{h + 1}" for h in range(rows)]
                 if stage.rows == "heads" else [""])
        where = [f"{show_char(trace.labels[j])} ({j + 1})" for j in range(cols)] if keys else list(range(cols))
        data.append({"type": "heatmap", "z": [finite([round(v, 4) for v in row]) for row in values],
                     "x": list(range(cols)), "y": list(range(rows)), "showscale": False,
                     "colorscale": WEIGHT_SCALE if probs else DIVERGING,
                     **({"zmin": 0, "zmax": 1} if probs else {"zmin": -bound, "zmax": bound}),
                     "customdata": [[where[j] for j in range(cols)]] * rows,
                     "text": [[names[r]] * cols for r in range(rows)],
                     "hovertemplate": "%{text} %{customdata}: %{z:.4f}<extra></extra>", "xgap": 1 if keys else 0,
                     **ref})
        layout[f"xaxis{suffix}"] = ({"anchor": f"y{suffix}", "domain": [0, 1]}
                                    | (_ticks(trace.labels, size=9) if keys else {"showticklabels": False})
                                    | {"showgrid": False, "zeroline": False})
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": [strip_bottom, strip_top], "autorange": "reversed",
                                    "tickmode": "array", "tickvals": list(range(rows)), "ticktext": names,
                                    "tickfont": {"size": 9}, "showgrid": False, "zeroline": False}
        shape = "×".join(str(s) for s in stage.values.shape) if rows > 1 else str(cols)
        layout["annotations"].append({
            "text": f"<b>{n}</b> · {tr(lang, f'attn_steps_stage_{stage.key}')} <span style='color:#6b7280'>"
                    f"({shape})</span>", "x": 0, "y": strip_top, "xref": "paper", "yref": "paper",
            "xanchor": "left", "yanchor": "bottom", "showarrow": False, "font": {"size": 11}})
        top = bottom
    title = tr(lang, "attn_steps_fig_title", layer=trace.layer, head=trace.head, query=trace.query,
               char=show_char(trace.labels[trace.query - 1]))
    height = int(110 + 18 * total + 6 * H)
    return plain_figure(data, layout | base_layout(height=max(700, height), title=title)
                        | {"margin": {"l": 60, "r": 20, "t": 70, "b": 30}})


# --------------------------------------------------------------------------- why √d
def entropy_figure(curve, lang: str = "en") -> PlainFigure:
    """Left: the spread of q·k against d (√d without the scale, 1 with it). Right: the entropy of a
    softmax row against d, measured, beside the closed forms and ln n (every key equal)."""
    d = curve.dims
    line = lambda y, name, color, panel, dash="solid", mode="lines+markers": {                      # noqa: E731
        "type": "scatter", "mode": mode, "x": d, "y": finite(y), "name": name, "legendgroup": name,
        "line": {"color": color, "dash": dash, "width": 2}, **axis_ref(panel)}
    unscaled, scaled = tr(lang, "attn_scale_fig_unscaled"), tr(lang, "attn_scale_fig_scaled")
    data = [
        line(curve.std_unscaled, unscaled, COLORS["changed"], 0),
        line(curve.std_scaled, scaled, COLORS["trained"], 0),
        line([math.sqrt(x) for x in d], "√d", COLORS["theory"], 0, "dot", "lines"),
        line(curve.entropy_unscaled, unscaled, COLORS["changed"], 1) | {"showlegend": False},
        line(curve.entropy_scaled, scaled, COLORS["trained"], 1) | {"showlegend": False},
        line([curve.closed_scaled] * len(d), tr(lang, "attn_scale_fig_closed_scaled"), COLORS["trained"], 1, "dash",
             "lines"),
        line(curve.closed_unscaled, tr(lang, "attn_scale_fig_closed_unscaled"), COLORS["changed"], 1, "dash",
             "lines"),
        line([curve.uniform] * len(d), tr(lang, "attn_scale_fig_uniform", n=curve.n_keys), "#9ca3af", 1, "dot",
             "lines"),
    ]
    layout = subplot_row([tr(lang, "attn_scale_fig_std"), tr(lang, "attn_scale_fig_entropy", n=curve.n_keys)],
                         spacing=0.1)
    for suffix in ("", "2"):
        layout[f"xaxis{suffix}"].update({"type": "log", "tickvals": d, "title": {"text": "d"}})
    layout["yaxis"].update({"type": "log", "tickvals": [0.5, 1, 2, 4, 8, 16, 32], "range": [math.log10(0.5), 1.6],
                            "title": {"text": tr(lang, "attn_scale_fig_std_axis")}})
    layout["yaxis2"].update({"title": {"text": tr(lang, "attn_scale_fig_entropy_axis")}, "rangemode": "tozero"})
    title = tr(lang, "attn_scale_fig_curve_title", rows=curve.rows, n=curve.n_keys)
    return plain_figure(data, layout | base_layout(height=420, title=title)
                        | {"legend": {"orientation": "h", "y": -0.2}})


def scale_figure(effect, lang: str = "en") -> PlainFigure:
    """The chosen head with the trained scale and with the logits multiplied; each layer's mean row
    entropy both ways; the held-out loss in the title."""
    T = len(effect.labels)
    removed = math.isclose(effect.multiplier, math.sqrt(effect.head_dim), rel_tol=1e-9)
    m = f"√{effect.head_dim} ≈ {effect.multiplier:.3g}" if removed else f"{effect.multiplier:g}"
    mult = tr(lang, "attn_scale_fig_times", m=m)
    titles = [tr(lang, "attn_scale_fig_trained_map", layer=effect.layer, head=effect.head),
              tr(lang, "attn_scale_fig_changed_map", times=mult), tr(lang, "attn_scale_fig_entropy_layers")]
    data = []
    positions = list(range(1, T + 1))                                                # 1-based, as the sliders
    for n, probs in enumerate((effect.probs_trained, effect.probs_changed)):
        data.append({"type": "heatmap", "z": _grid(probs), "x": positions, "y": positions, "zmin": 0, "zmax": 1,
                     "colorscale": WEIGHT_SCALE, "showscale": n == 1,
                     "colorbar": {"x": 0.625, "thickness": 10, "len": 0.8},
                     "hovertemplate": "%{y} → %{x}: %{z:.3f}<extra></extra>", **axis_ref(n)})
    layers = [f"L{l + 1}" for l in range(effect.entropy_trained.shape[0])]
    for name, values, color in ((tr(lang, "attn_scale_fig_trained"), effect.entropy_trained, COLORS["trained"]),
                                (mult, effect.entropy_changed, COLORS["changed"])):
        data.append({"type": "bar", "x": layers, "y": [round(v, 3) for v in values.mean(-1).tolist()], "name": name,
                     "marker": {"color": color}, "hovertemplate": "%{x}: %{y:.2f} nats<extra></extra>", **axis_ref(2)})
    data.append({"type": "scatter", "mode": "lines", "x": [layers[0], layers[-1]], "y": [effect.uniform_entropy] * 2,
                 "name": tr(lang, "attn_scale_fig_uniform_prompt"), "line": {"color": "#9ca3af", "dash": "dot"},
                 **axis_ref(2)})
    layout = subplot_row(titles, spacing=0.08)
    layout["xaxis"]["domain"], layout["xaxis2"]["domain"], layout["xaxis3"]["domain"] = [0, 0.28], [0.32, 0.60], [0.76, 1]
    ticks = ({"tickmode": "array", "tickvals": positions, "ticktext": [show_char(c) for c in effect.labels],
              "tickfont": {"size": 9}} if T <= 40 else {"showticklabels": False})
    for suffix in ("", "2"):
        layout[f"xaxis{suffix}"].update(ticks | {"range": [0.5, T + 0.5]})
        layout[f"yaxis{suffix}"].update(ticks | {"autorange": "reversed"})
    for n, x in enumerate((0.14, 0.46, 0.88)):
        layout["annotations"][n]["x"] = x
    layout["yaxis3"].update({"title": {"text": tr(lang, "attn_scale_fig_entropy_axis")}, "rangemode": "tozero"})
    rise = effect.loss_changed - effect.loss_trained
    title = tr(lang, "attn_scale_fig_loss", before=f"{effect.loss_trained:.3f}", after=f"{effect.loss_changed:.3f}",
               rise=f"{rise:+.3f}", chars=f"{effect.loss_chars:,}", total=f"{effect.held_out_chars:,}", times=mult)
    return plain_figure(data, layout | base_layout(height=430, title=title)
                        | {"legend": {"orientation": "h", "x": 0.7, "y": -0.15}, "barmode": "group"})


# --------------------------------------------------------------------------- the next token
def next_figure(nt, lang: str = "en") -> PlainFigure:
    """Top: every character's probability after temperature, coloured by the filter that keeps or
    cuts it. Bottom: the distribution sampled from (survivors, renormalised)."""
    f = nt.filtered
    order = sorted(range(len(nt.vocab)), key=lambda j: -float(f.probs[j]))
    chars = [show_char(nt.vocab[j]) for j in order]
    x = list(range(len(order)))
    fate = ["kept" if f.top_p[j] else ("cut_p" if f.top_k[j] else "cut_k") for j in order]
    names = {"kept": tr(lang, "attn_next_fig_kept"), "cut_k": tr(lang, "attn_next_fig_cut_k"),
             "cut_p": tr(lang, "attn_next_fig_cut_p")}
    data = []
    for kind in ("kept", "cut_p", "cut_k"):
        idx = [n for n in x if fate[n] == kind]
        data.append({"type": "bar", "x": idx, "y": [round(float(f.probs[order[n]]), 5) for n in idx], "name": names[kind],
                     "marker": {"color": COLORS[kind]}, "customdata": [chars[n] for n in idx],
                     "hovertemplate": "%{customdata}: %{y:.4f}<extra></extra>", **axis_ref(0)})
    data.append({"type": "scatter", "mode": "markers", "x": x, "y": [round(float(nt.model_probs[j]), 5) for j in order],
                 "name": tr(lang, "attn_next_fig_t1"), "marker": {"symbol": "line-ew-open", "size": 10,
                                                                  "color": "#111827"},
                 "customdata": chars, "hovertemplate": "%{customdata}: %{y:.4f}<extra></extra>", **axis_ref(0)})
    kept = [n for n in x if fate[n] == "kept"]
    data.append({"type": "bar", "x": kept, "y": [round(float(f.final[order[n]]), 5) for n in kept],
                 "marker": {"color": COLORS["kept"]}, "showlegend": False, "customdata": [chars[n] for n in kept],
                 "hovertemplate": "%{customdata}: %{y:.4f}<extra></extra>", **axis_ref(1)})
    ticks = {"tickmode": "array", "tickvals": x, "ticktext": chars, "tickfont": {"size": 11}, "range": [-0.6, len(x) - 0.4]}
    layout = {"xaxis": ticks | {"anchor": "y"}, "yaxis": {"domain": [0.45, 1], "anchor": "x",
                                                          "title": {"text": tr(lang, "attn_next_fig_after_t")}},
              "xaxis2": ticks | {"anchor": "y2"}, "yaxis2": {"domain": [0, 0.3], "anchor": "x2",
                                                            "title": {"text": tr(lang, "attn_next_fig_final")}},
              "barmode": "overlay", "legend": {"orientation": "h", "y": 1.12, "x": 0}}
    settings = tr(lang, "attn_next_fig_settings", t=f"{nt.temperature:g}",
                  k=nt.top_k if nt.top_k is not None else tr(lang, "attn_next_off"),
                  p=f"{nt.top_p:g}" if nt.top_p is not None else tr(lang, "attn_next_off"),
                  n=int((f.final > 0).sum()), v=len(nt.vocab))
    return plain_figure(data, layout | base_layout(height=480, title=settings) | {"margin": {"l": 60, "r": 20, "t": 100, "b": 40}})


def lens_figure(nt, lang: str = "en") -> PlainFigure:
    """The logit lens: at every layer (rows) and position (columns), the character the residual stream
    would predict next through the final norm and the head, coloured by its probability; right: the
    final top characters' probabilities at the last position, layer by layer."""
    lens = nt.lens                                                                   # (L + 1, T, V)
    n_rows, T, _ = lens.shape
    top_p, top_i = lens.topk(3, -1)                                                  # (L + 1, T, 3)
    rows = [tr(lang, "attn_next_fig_embedding")] + [tr(lang, "attn_next_fig_layer", n=l) for l in range(1, n_rows)]
    chars = [show_char(c) for c in nt.vocab]
    ids, ps = top_i.tolist(), top_p.tolist()
    text = [[chars[cell[0]] for cell in row] for row in ids]
    hover = [[" · ".join(f"{chars[j]} {p:.2f}" for j, p in zip(cell_i, cell_p)) for cell_i, cell_p in zip(ri, rp)]
             for ri, rp in zip(ids, ps)]
    data = [{"type": "heatmap", "z": _grid(top_p[..., 0]), "zmin": 0, "zmax": 1,
             "colorscale": WEIGHT_SCALE, "text": text, "texttemplate": "%{text}", "textfont": {"size": 10},
             "customdata": hover, "hovertemplate": "%{y} · %{x}: %{customdata}<extra></extra>",
             "x": list(range(T)), "y": list(range(n_rows)), "colorbar": {"x": 0.655, "thickness": 10,
                                                                          "title": {"text": "p"}}, **axis_ref(0)}]
    final = lens[-1, -1]
    for j in final.topk(5).indices.tolist():
        data.append({"type": "scatter", "mode": "lines+markers", "x": rows, "y": _grid(lens[:, -1, j], 4),
                     "name": f"'{show_char(nt.vocab[j])}'", **axis_ref(1)})
    layout = subplot_row([tr(lang, "attn_next_fig_lens"), tr(lang, "attn_next_fig_lens_last")], spacing=0.12)
    title = tr(lang, "attn_next_fig_lens_check", diff=f"{nt.lens_diff:.1e}")
    layout["xaxis"]["domain"], layout["xaxis2"]["domain"] = [0, 0.64], [0.78, 1]
    layout["annotations"][0]["x"], layout["annotations"][1]["x"] = 0.32, 0.89
    layout["xaxis"].update(_ticks(nt.labels, size=9) | {"title": {"text": tr(lang, "attn_next_fig_position")}})
    layout["yaxis"].update({"tickmode": "array", "tickvals": list(range(n_rows)), "ticktext": rows,
                            "autorange": "reversed"})
    layout["yaxis2"].update({"range": [0, 1], "title": {"text": tr(lang, "attn_view_probability")}})
    return plain_figure(data, layout | base_layout(height=400, title=title) | {"legend": {"x": 1.0, "y": 1}})
