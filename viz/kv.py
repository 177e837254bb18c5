"""Figures of the KV Cache tab: the cache filling in, its bytes against the formula, time per step,
which query heads share which KV head, and the cache of real models on paper.

Built as plain dicts (:func:`viz.common.figure`): a generation redraws them about ten times a second.
"""
from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from locales import tr
from viz.calculator import human, per_position_formula, positions_formula
from viz.common import WEIGHT_SCALE, axis_ref, base_layout, figure, label_margin, subplot_row

if TYPE_CHECKING:                                      # the results viz draws; models imports torch
    from models.kv_cache import DecodeTimes, LayerCache

COLORS = {"cached": "#4f46e5", "uncached": "#ef4444", "formula": "#111827", "prefill": "#f59e0b",
          "empty": "#eef2f7", "latent": "#10b981", "rope": "#f59e0b"}
GROUP_COLORS = ["#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#8b5cf6", "#ec4899", "#64748b"]
OTHERS = "#94a3b8"


def finite_array(values) -> np.ndarray:
    """A float32 array with every non-finite value as NaN (a gap in plotly; arrays travel as binary,
    so no NaN reaches the JSON).

    >>> finite_array([1.0, float("inf")]).tolist()
    [1.0, nan]
    """
    array = np.asarray(values, dtype=np.float32)
    return np.where(np.isfinite(array), array, np.float32("nan"))


# --------------------------------------------------------------------------- the cache picture
def cache_figure(layer: LayerCache, capacity: int, prompt_len: int, picture: np.ndarray | None,
                 cache_bytes: int = 0, lang: str = "en") -> go.Figure:
    """Layers × cached rows × positions: one band per cached vector, as tall as its width.

    ``layer.rows`` are one layer's ``(name, numbers per token)`` (K and V per KV head, or MLA's latent
    and RoPE key); ``picture[layer, row, position]`` the RMS of each cached vector (``None``: nothing
    cached yet, the preallocated buffer is drawn empty). The y axis spans the numbers per token of an
    MHA cache of the same model, so a smaller cache is visibly smaller.

    It is redrawn several times a second, so it is cheap on both ends: the values travel as float32
    arrays (base64 in the JSON: a 4 × 8 × 500 picture builds in ~2 ms instead of ~160 ms as nested
    lists), and the rows of equal width in a layer share one heatmap (4 traces for MHA instead of
    32: half the browser's drawing time).
    """
    rows, n_layers, band, full_height = layer.rows, layer.n_layers, layer.numbers, layer.mha_numbers_all_layers
    filled = picture.shape[2] if picture is not None else 0
    data, shapes, ticks, borders = [], [], [], []
    shapes.append({"type": "rect", "x0": -0.5, "x1": capacity - 0.5, "y0": 0, "y1": band * n_layers,
                   "fillcolor": COLORS["empty"], "line": {"width": 0}, "layer": "below"})
    for layer in range(n_layers):
        top = layer * band
        ticks.append((top + band / 2, tr(lang, "kv_fig_layer", n=layer + 1)))
        offset = 0
        for first, count, width in _runs(rows):          # one trace per run of equally wide rows
            names = " ".join(name for name, _ in rows[first:first + count])
            label = f"{tr(lang, 'kv_fig_layer', n=layer + 1)} · {names}"
            z = finite_array(picture[layer, first:first + count]) if picture is not None else [[]] * count
            data.append({"type": "heatmap", "z": z, "x0": 0, "dx": 1, "y0": top + offset + width / 2, "dy": width,
                         "coloraxis": "coloraxis", "name": label,
                         "hovertemplate": f"{label}<br>position %{{x}}<br>RMS %{{z:.3f}}<extra></extra>"})
            for _ in range(count):
                offset += width
                borders += [top + offset, top + offset, None]
        shapes.append({"type": "line", "x0": -0.5, "x1": capacity - 0.5, "y0": top, "y1": top,
                       "line": {"color": "#334155", "width": 1.5}})
    # white lines between rows: one path (a shape per row costs the browser ~40 % of a redraw)
    data.append({"type": "scatter", "mode": "lines", "x": [-0.5, capacity - 0.5, None] * (len(borders) // 3),
                 "y": borders, "line": {"color": "white", "width": 0.5}, "hoverinfo": "skip", "showlegend": False})
    shapes.append({"type": "line", "x0": prompt_len - 0.5, "x1": prompt_len - 0.5, "y0": 0,
                   "y1": band * n_layers, "line": {"color": COLORS["prefill"], "width": 2, "dash": "dot"}})
    notes = [{"x": prompt_len - 0.5, "y": 0, "yref": "y", "text": tr(lang, "kv_fig_prompt"), "showarrow": False,
              "yanchor": "bottom", "font": {"size": 11, "color": "#92400e"}}]
    if band * n_layers < full_height:
        notes.append({"x": 0.5, "y": (band * n_layers + full_height) / 2, "xref": "paper", "text":
                      tr(lang, "kv_fig_mha_height"), "showarrow": False, "font": {"color": OTHERS}})
        shapes.append({"type": "rect", "x0": -0.5, "x1": capacity - 0.5, "y0": 0, "y1": full_height,
                       "line": {"color": OTHERS, "dash": "dash", "width": 1}})
    title = (tr(lang, "kv_fig_cache_title", filled=filled, capacity=capacity, bytes=f"{cache_bytes:,} B")
             if picture is not None else tr(lang, "kv_fig_cache_plan", capacity=capacity))
    rows_text = tr(lang, "kv_fig_layout_mha", rows=" ".join(f"{n}({w})" for n, w in rows))
    title += f"<br><span style='font-size: 11px; color: #475569'>{rows_text}</span>"
    layout = base_layout(height=480, title=title) | {
        "xaxis": {"title": {"text": tr(lang, "kv_fig_position")}, "range": [-0.5, capacity - 0.5],
                  "showgrid": False, "zeroline": False},
        "yaxis": {"range": [full_height, 0], "tickmode": "array", "tickvals": [y for y, _ in ticks],
                  "ticktext": [t for _, t in ticks], "showgrid": False, "zeroline": False,
                  "title": {"text": tr(lang, "kv_fig_per_token"), "font": {"size": 11}}},
        "coloraxis": {"colorscale": WEIGHT_SCALE, "cmin": 0,
                      "colorbar": {"title": {"text": tr(lang, "kv_fig_rms")}, "thickness": 12, "len": 0.8}},
        "shapes": shapes, "annotations": notes}
    # Room for the layer labels and the axis title, and the colorbar: short of it, Plotly's automargin pushes
    # a margin and draws the picture twice, several times a second while a generation streams.
    layout["margin"] = {**layout["margin"], "t": 100, "l": label_margin(layout["yaxis"]["ticktext"], pad=30), "r": 140}
    return figure(data, layout)


def _runs(rows: list[tuple[str, int]]) -> list[tuple[int, int, int]]:
    """Consecutive rows of equal width as ``(first, count, width)``.

    >>> _runs([("K0", 32), ("K1", 32), ("V0", 32), ("latent c", 32), ("RoPE key", 16)])
    [(0, 4, 32), (4, 1, 16)]
    """
    runs: list[tuple[int, int, int]] = []
    for i, (_, width) in enumerate(rows):
        if runs and runs[-1][2] == width:
            first, count, _ = runs[-1]
            runs[-1] = (first, count + 1, width)
        else:
            runs.append((i, 1, width))
    return runs


# --------------------------------------------------------------------------- bytes and time
def growth_figure(capacity: int, formula: str, bytes_per_token: float, others: dict[str, float],
                  cache_tokens: list[int], cache_bytes: list[int], context: list[int],
                  ms_cached: list[float], ms_uncached: list[float], times: DecodeTimes | None = None,
                  lang: str = "en") -> go.Figure:
    """Left: measured cache bytes on the formula's line, other variants' lines for scale.
    Right: time per step with and without the cache (step 0 of the cached run is the prefill).

    ``others`` maps a variant's label to its bytes per token; ``formula`` is the formula's text;
    ``times`` (None before a generation) gives the speed-up shown over the right panel.
    """
    data = [{"type": "scatter", "mode": "lines", "x": [0, capacity], "y": [0, per * capacity], "name": name,
             "line": {"color": OTHERS, "width": 1}, "showlegend": False,
             "hovertemplate": f"{name}: %{{y:,}} B<extra></extra>", **axis_ref(0)}
            for name, per in others.items()]
    notes = [{"x": capacity, "y": per * capacity, "xref": "x", "yref": "y", "text": name, "showarrow": False,
              "xanchor": "left", "font": {"size": 10, "color": OTHERS}} for name, per in others.items()]
    data.append({"type": "scatter", "mode": "markers", "x": np.asarray(cache_tokens), "y": np.asarray(cache_bytes),
                 "name": tr(lang, "kv_fig_measured"), "marker": {"color": COLORS["cached"], "size": 6},
                 "hovertemplate": "T = %{x}: %{y:,} B<extra></extra>", **axis_ref(0)})
    data.append({"type": "scatter", "mode": "lines", "x": [0, capacity], "y": [0, bytes_per_token * capacity],
                 "name": tr(lang, "kv_fig_formula", formula=formula),
                 "line": {"color": COLORS["formula"], "dash": "dash", "width": 1.5}, **axis_ref(0)})
    if ms_cached:
        context, cached, uncached = np.asarray(context), finite_array(ms_cached), finite_array(ms_uncached)
        data += [{"type": "scatter", "mode": "markers", "x": context[:1], "y": cached[:1],
                  "name": tr(lang, "kv_fig_prefill"), "marker": {"color": COLORS["prefill"], "size": 9,
                                                                "symbol": "diamond"}, **axis_ref(1)},
                 {"type": "scatter", "mode": "lines", "x": context[1:], "y": cached[1:],
                  "name": tr(lang, "kv_fig_with_cache"), "line": {"color": COLORS["cached"], "width": 2},
                  **axis_ref(1)},
                 {"type": "scatter", "mode": "lines", "x": context, "y": uncached,
                  "name": tr(lang, "kv_fig_without_cache"), "line": {"color": COLORS["uncached"], "width": 2},
                  **axis_ref(1)}]
    titles = [tr(lang, "kv_fig_bytes_title"), tr(lang, "kv_fig_time_title")]
    layout = subplot_row(titles, spacing=0.12) | base_layout(height=400)
    layout["annotations"] += notes
    # The speed-up and the steps off the top go under the time panel's title, clear of the plot: its top
    # left holds the prefill's diamond (the slowest step but the lone ones). The margin is set once there
    # is timing, so that the plot does not move as the notes come in.
    below_title = []
    if times is not None and times.speedup is not None:
        speedup = tr(lang, "kv_fig_speedup", x=times.speedup, n=times.window)
        below_title.append(f"<span style='color:{COLORS['uncached']}'>{speedup}</span>")
    if times is not None and times.top_ms is not None:     # a lone slow step does not flatten the others
        layout["yaxis2"]["range"] = [0, times.top_ms]
        above = tr(lang, "kv_fig_above", n=times.above, ms=times.above_max_ms)
        below_title.append(f"<span style='color:{OTHERS}'>{above}</span>")
    if times is not None:
        title = layout["annotations"][1]
        title["text"] += "".join(f"<br><span style='font-size:11px'>{line}</span>" for line in below_title)
        layout["margin"]["t"] = 90
    if not ms_cached:
        layout["annotations"].append({"x": 0.78, "y": 0.5, "xref": "paper", "yref": "paper", "showarrow": False,
                                      "text": tr(lang, "kv_fig_press"), "font": {"color": OTHERS, "size": 13}})
    # The y axes start at 0: their "0" met the first x label at each panel's corner without a standoff.
    layout["xaxis"].update(title={"text": tr(lang, "kv_fig_tokens_cached")}, range=[0, capacity * 1.12],
                           ticklabelstandoff=4)
    layout["yaxis"].update(title={"text": tr(lang, "kv_fig_bytes")}, rangemode="tozero", ticklabelstandoff=4)
    layout["xaxis2"].update(title={"text": tr(lang, "kv_fig_context")}, ticklabelstandoff=4)
    layout["yaxis2"].update(title={"text": tr(lang, "kv_fig_ms")}, rangemode="tozero", ticklabelstandoff=8)
    layout["legend"] = {"orientation": "h", "y": -0.22, "x": 0}
    layout["margin"] = {**layout["margin"], "b": 110, "l": 75}       # "1.5M" and "bytes" without a push
    return figure(data, layout)


# --------------------------------------------------------------------------- which heads share
def groups_figure(n_heads: int, n_kv_heads: int, mla: bool, latent: int, rope: int, lang: str = "en") -> go.Figure:
    """Query heads on top, what they read below: K/V head ``h // (n_heads / n_kv_heads)``, or MLA's latent."""
    group = n_heads // n_kv_heads
    data, boxes = [], []
    if mla:
        middle = (n_heads - 1) / 2
        targets = [(middle - 0.8, f"c ({latent})", COLORS["latent"]), (middle + 0.8, f"kᴿ ({rope})", COLORS["rope"])]
        for h in range(n_heads):
            data += [_edge(h, x, color, dash="dot" if i else "solid") for i, (x, _, color) in enumerate(targets)]
        boxes += [_box(x, 0, label, color) for x, label, color in targets]
        boxes.append({"x": 0.5, "y": 0, "xref": "paper", "yref": "paper", "yshift": -8, "showarrow": False,
                      "yanchor": "top", "font": {"size": 11, "color": "#475569"},
                      "text": tr(lang, "kv_fig_mla_legend", r=latent, d=rope)})
        colors = [COLORS["cached"]] * n_heads
    else:
        colors = [GROUP_COLORS[(h // group) % len(GROUP_COLORS)] for h in range(n_heads)]
        kv_x = [g * group + (group - 1) / 2 for g in range(n_kv_heads)]       # under its group of queries
        data += [_edge(h, kv_x[h // group], colors[h]) for h in range(n_heads)]
        boxes += [_box(x, 0, tr(lang, "kv_fig_kvh", n=g + 1), colors[g * group]) for g, x in enumerate(kv_x)]
    boxes += [_box(h, 1, tr(lang, "kv_fig_q", n=h + 1), colors[h]) for h in range(n_heads)]
    for y, text in ((1, tr(lang, "kv_fig_query")), (0, "MLA" if mla else tr(lang, "kv_fig_kv"))):
        boxes.append({"x": 0, "y": y, "xref": "paper", "text": text,
                      "showarrow": False, "xanchor": "right", "xshift": -8, "font": {"size": 11}})
    layout = base_layout(height=290 if mla else 250) | {
        "xaxis": {"visible": False, "range": [-0.6, n_heads - 0.4]},
        "yaxis": {"visible": False, "range": [-0.3, 1.3]}, "showlegend": False, "annotations": boxes}
    layout["margin"] = {"l": 90, "r": 20, "t": 56, "b": 70 if mla else 20}
    return figure(data, layout)


def _edge(x_query: float, x_target: float, color: str, dash: str = "solid") -> dict:
    return {"type": "scatter", "mode": "lines", "x": [x_query, x_target], "y": [1, 0], "hoverinfo": "skip",
            "line": {"color": color, "width": 2, "dash": dash}}


def _box(x: float, y: float, label: str, color: str) -> dict:
    """A labelled box drawn as an annotation (it sizes itself to its text)."""
    return {"x": x, "y": y, "text": f"<b>{html.escape(label)}</b>", "showarrow": False, "bgcolor": color,
            "bordercolor": "white", "borderpad": 6, "font": {"color": "white", "size": 12}}


def per_layer_markdown(layer: LayerCache, variant: str, trained: bool = True, lang: str = "en") -> str:
    """One line: what one layer caches per token, with the numbers, against MHA; whether it is trained."""
    widths = [w for _, w in layer.rows]
    if variant == "MLA":
        expr = " + ".join(str(w) for w in widths)
    else:
        expr = f"2 × {len(widths) // 2} × {widths[0]}"
    ratio = f"{layer.fraction_of_mha:.3g}×"
    return (f"**{variant}** · {tr(lang, 'kv_fig_per_layer', expr=expr, n=layer.numbers)} · "
            f"{tr(lang, 'kv_fig_vs_mha', x=ratio, mha=layer.mha_numbers)}"
            + ("" if trained else f" · ⚠ {tr(lang, 'kv_fig_untrained')}"))


# --------------------------------------------------------------------------- real models on paper
def scale_figure(contexts: list[int], curves: dict[str, list[int]], chosen: str, weights_bytes: float,
                 crossover: int | None, seq_len: int, cache_bytes: int, batch: int, dtype: str,
                 lang: str = "en", same: dict[str, str] | None = None) -> go.Figure:
    """Every preset's cache against context (log-log), the chosen one bold with its weights and crossover;
    a curve equal to one drawn before it (``same``: preset -> that one) dotted and named so."""
    same = same or {}
    data = []
    for i, (name, values) in enumerate(curves.items()):
        bold = name == chosen
        label = tr(lang, "kv_fig_same_cache", name=name, other=same[name]) if name in same else name
        data.append({"type": "scatter", "mode": "lines", "x": contexts, "y": [v / 2**30 for v in values],
                     "name": label, "line": {"width": 4 if bold else 1.5, "dash": "dot" if name in same else "solid",
                                             "color": GROUP_COLORS[i % len(GROUP_COLORS)]},
                     "opacity": 1 if bold else 0.6, "hovertemplate": "%{x:,} tokens: %{y:.3g} GiB<extra>" + name
                     + "</extra>"})
    data.append({"type": "scatter", "mode": "lines", "x": [contexts[0], contexts[-1]],
                 "y": [weights_bytes / 2**30] * 2, "name": tr(lang, "kv_fig_weights", name=chosen),
                 "line": {"color": COLORS["formula"], "dash": "dash"}})
    data.append({"type": "scatter", "mode": "markers", "x": [seq_len], "y": [cache_bytes / 2**30],
                 "name": tr(lang, "kv_fig_here", t=seq_len, size=human(cache_bytes, "B")),
                 "marker": {"size": 12, "color": COLORS["uncached"], "symbol": "circle-open", "line": {"width": 3}}})
    layout = base_layout(height=420, title=tr(lang, "kv_fig_scale_title", batch=batch, dtype=dtype),
                         margin={"b": 132}) | {                          # the legend's rows, without a push
        "xaxis": {"type": "log", "title": {"text": tr(lang, "kv_fig_scale_context")}},
        "yaxis": {"type": "log", "title": {"text": tr(lang, "kv_fig_gib")}},
        "legend": {"orientation": "h", "y": -0.25}}
    if crossover is not None and contexts[0] <= crossover <= contexts[-1]:
        layout["shapes"] = [{"type": "line", "x0": crossover, "x1": crossover, "yref": "paper", "y0": 0, "y1": 1,
                             "line": {"color": COLORS["uncached"], "dash": "dot"}}]
        layout["annotations"] = [{"x": math.log10(crossover), "y": 1, "yref": "paper", "showarrow": False,
                                  "text": tr(lang, "kv_fig_cross", t=crossover), "xanchor": "right",
                                  "yanchor": "top"}]
    return figure(data, layout)


def scale_markdown(s, lang: str = "en") -> str:
    """The formula with the preset's numbers plugged in (``s``: a :class:`models.kv_cache.ScaleUp`)."""
    spec, b = s.spec, f"{s.bytes_per_elem:g} B"
    T, B = f"{s.seq_len:,}", f"{s.batch:,}"
    colon, semicolon, comma = tr(lang, "sep_colon"), tr(lang, "sep_list"), tr(lang, "sep_comma")
    if spec.is_mla:
        shape = tr(lang, "kv_fig_s_shape_mla", layers=spec.n_layers, heads=spec.n_heads, r=spec.kv_lora_rank,
                                                     rope=spec.qk_rope_head_dim)
        k = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        baseline = (tr(lang, "kv_fig_s_decompressed", k=k, v=spec.v_head_dim)
                    + f"{colon}`{spec.n_layers} · {spec.n_heads} · ({k} + {spec.v_head_dim}) · {T} · {B} · {b}`")
        note = tr(lang, "sep_paren", text=tr(lang, "kv_fig_s_no2"))
    else:
        shape = tr(lang, "kv_fig_s_shape", layers=spec.n_layers, heads=spec.n_heads, kv=spec.kv_heads,
                                                 hd=spec.hd)
        baseline, note = tr(lang, "kv_fig_s_as_mha", heads=spec.n_heads), ""
    per, per_values = per_position_formula(spec, " · ")
    positions, values = positions_formula(spec, s.seq_len, " · ", "{:,}".format)
    symbolic, plugged = f"{per} · {positions} · batch · bytes", f"{per_values} · {values} · {B} · {b}"
    per_token = f"{per_values} · {spec.n_layers} · {b}"
    if spec.sliding_layers:
        note += tr(lang, "sep_paren", text=tr(lang, "kv_fig_s_window", local=spec.sliding_layers,
                                              layers=spec.n_layers, w=spec.sliding_window))
    cross = (f"{tr(lang, 'kv_fig_s_cross')} **T = {s.crossover_tokens:,}** {tr(lang, 'kv_fig_s_tokens')}"
             if s.crossover_tokens is not None else tr(lang, "kv_fig_s_no_cross", w=spec.sliding_window))
    per_token_bytes, past_window = s.per_token_bytes, ""
    if spec.sliding_layers:                        # then the layers without a window only, if any
        full = spec.full_layers
        past_window = semicolon + (tr(lang, "kv_fig_s_past_window", w=spec.sliding_window, full=full,
                                      formula=f"`{per_values} · {full} · {b}`",
                                      size=human(s.per_token_bytes_past_window, "B"))
                                   if full else tr(lang, "kv_fig_s_past_window_none", w=spec.sliding_window))
    return "\n".join([
        f"**{spec.name}** · {shape}",
        "",
        f"- **{tr(lang, 'kv_fig_s_cache')}** = `{symbolic}`{note}",
        f"  = `{plugged}` = **{s.cache_bytes:,} B = {human(s.cache_bytes, 'B')}**",
        f"- {tr(lang, 'kv_fig_s_per_token_window' if spec.sliding_layers else 'kv_fig_s_per_token')}{colon}"
        f"`{per_token}` = {per_token_bytes:,.0f} B = "
        f"{human(per_token_bytes, 'B')}{past_window}",
        f"- {tr(lang, 'kv_fig_s_weights', params=s.params, b=s.bytes_per_elem)}{colon}{human(s.weights_bytes, 'B')}"
        f"{semicolon}{cross}",
        f"- {baseline}{colon}{human(s.baseline_bytes, 'B')}{comma}{tr(lang, 'kv_fig_s_times', x=s.baseline_ratio)}",
    ])


def tiny_formula(mla: bool, n_layers: int, n_kv_heads: int, head_dim: int, latent: int | None, rope: int,
                 bytes_per_elem: int, tokens: str = "T") -> str:
    """The tiny model's cache formula with its numbers: ``2·4·2·32·T·4 B`` or ``4·(32+16)·T·4 B``.

    >>> tiny_formula(False, 4, 2, 32, None, 32, 4), tiny_formula(True, 4, 4, 32, 32, 16, 4, "10")
    ('2·4·2·32·T·4 B', '4·(32+16)·10·4 B')
    """
    if mla:
        return f"{n_layers}·({latent}+{rope})·{tokens}·{bytes_per_elem} B"
    return f"2·{n_layers}·{n_kv_heads}·{head_dim}·{tokens}·{bytes_per_elem} B"


def status_markdown(step: int, total: int, tokens: int, measured: int, formula: str, expected: int,
                    identical: bool, trained: bool, name: str, val_loss: float | None, lang: str = "en") -> str:
    """The line under the text: the step, the cache against its formula, cached = uncached, the weights."""
    check = "kv_fig_bytes_ok" if measured == expected else "kv_fig_bytes_bad"
    weights = (tr(lang, "kv_fig_trained", name=name, loss=val_loss) if trained
               else tr(lang, "kv_fig_random", name=name))
    return " · ".join([f"**{tr(lang, 'kv_fig_step', i=step, n=total)}**",
                       tr(lang, "kv_fig_in_cache", t=tokens),
                       tr(lang, check, measured=measured, formula=formula, expected=expected),
                       tr(lang, "kv_fig_identical" if identical else "kv_fig_diverged")]) + f"  \n{weights}"


# --------------------------------------------------------------------------- the text
def text_html(prompt: str, generated: str) -> str:
    """The prompt, then the generated text highlighted, escaped, line breaks kept."""
    return ('<div class="kv-text" style="white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, '
            'monospace; line-height: 1.5; min-height: 4.5em; padding: 0.6em; border: 1px solid #e2e8f0; border-radius: 8px">'
            f'<span style="color: #475569">{html.escape(prompt)}</span>'
            f'<span style="background: #e0e7ff; color: #1e1b4b">{html.escape(generated)}</span></div>')
