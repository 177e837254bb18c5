"""Figures of the FlashAttention view: the tiles, every row's running max and sum, and the cost at scale.

The tiles figures redraw on every step of Play, so they are plain dicts serialised without
plotly.py (:func:`viz.common.plain_figure`); every number comes from
:mod:`models.flash_explore` and :mod:`models.attention_cost`, text from ``locales/attention.py``.
"""
from __future__ import annotations

import math

from locales import tr
from viz.common import WEIGHT_SCALE, PlainFigure, axis_ref, base_layout, finite, finite_grid, plain_figure, subplot_row
from viz.positions import DIVERGING

CURRENT = "#ea580c"           # orange: the tile computed at this step, its rows
DONE = "#4f46e5"              # indigo: rows whose output is final
REFERENCE = "#111827"         # the naive path's numbers, drawn as markers
PENDING = "rgba(255,255,255,0.78)"    # a tile not computed yet: its scores show through faintly
SKIPPED = "rgba(148,163,184,0.92)"    # a tile never computed: all its cells are masked
GRID = "rgba(15,23,42,0.55)"
LINE_COLORS = {"naive": "#dc2626", "sdpa": "#4f46e5", "tiled": "#059669"}
FORMULA = {"matrices": "#dc2626", "rows": "#059669", "window": "#d97706"}
CELL_TEXT_MAX = 12            # cells show their number up to this many rows and columns


def number(x: float, digits: int = 4) -> str:
    """A number as the view prints it: ``−∞`` for minus infinity, else ``digits`` significant digits.

    >>> number(float("-inf")), number(0.000012345), number(2.0)
    ('−∞', '1.234e-05', '2')
    """
    if x == -math.inf:
        return "−∞"
    return f"{x:.{digits}g}"


def tex(x: float) -> str:
    r"""`number` for a LaTeX formula: minus infinity as ``-\infty``.

    >>> print(tex(float("-inf")), tex(0.5))
    -\infty 0.5
    """
    return r"-\infty" if x == -math.inf else number(x)


def _span(span: tuple[int, int]) -> str:
    """Rows or keys ``[a, b)`` as a learner reads them: ``4–7`` (or ``4`` for one)."""
    a, b = span
    return str(a) if b - a == 1 else f"{a}–{b - 1}"


def _heatmap(z, panel: int, scale, hover: str, *, zmid: float | None = None, zrange=None, text: bool) -> dict:
    trace = {"type": "heatmap", "z": finite_grid(z), "colorscale": scale, "showscale": False, "xgap": 0.5,
             "ygap": 0.5, "hovertemplate": hover, **axis_ref(panel)}
    if zmid is not None:
        trace["zmid"] = zmid
    if zrange is not None:
        trace["zmin"], trace["zmax"] = zrange
    if text:
        trace["texttemplate"] = "%{z:.2f}"
        trace["textfont"] = {"size": 9}
    return trace


def _overlay(ex, frame) -> list[list[float | None]]:
    """Per cell: 0 = its tile not computed yet, 1 = its tile skipped, None = computed (transparent)."""
    T_q, T_k = ex.trace.shape
    grid: list[list[float | None]] = [[0.0] * T_k for _ in range(T_q)]
    for fill, tiles in ((1.0, ex.trace.skipped), (None, frame.done_tiles)):
        for (r0, r1), (c0, c1) in tiles:
            for r in range(r0, r1):
                grid[r][c0:c1] = [fill] * (c1 - c0)
    return grid


def _grid_lines(T_q: int, T_k: int, block: int, panel: int) -> dict:
    """The tile boundaries as one line trace (segments separated by gaps)."""
    x, y = [], []
    for c in range(block, T_k, block):
        x += [c - 0.5, c - 0.5, None]
        y += [-0.5, T_q - 0.5, None]
    for r in range(block, T_q, block):
        x += [-0.5, T_k - 0.5, None]
        y += [r - 0.5, r - 0.5, None]
    return {"type": "scatter", "mode": "lines", "x": x, "y": y, "line": {"color": GRID, "width": 1},
            "hoverinfo": "skip", "showlegend": False, **axis_ref(panel)}


def _rect(panel: int, x: tuple[float, float], y: tuple[float, float], *, color: str = CURRENT, width: float = 3,
          dash: str = "solid") -> dict:
    suffix = "" if panel == 0 else str(panel + 1)
    return {"type": "rect", "xref": f"x{suffix}", "yref": f"y{suffix}", "x0": x[0], "x1": x[1], "y0": y[0],
            "y1": y[1], "line": {"color": color, "width": width, "dash": dash}, "fillcolor": "rgba(0,0,0,0)"}


def tiles_figure(ex, frame, lang: str = "en") -> PlainFigure:
    """Scores tile by tile (pending tiles faded, skipped ones grey, the current one outlined), the naive
    softmax, and the output: tiled rows as they are written next to the naive output."""
    T_q, T_k = ex.trace.shape
    d_v = ex.v.shape[-1]
    text = T_q <= CELL_TEXT_MAX and T_k <= CELL_TEXT_MAX
    cell = tr(lang, "attn_fig_hover_cell")
    out_hover = tr(lang, "attn_fig_hover_out")
    limit = max(abs(x) for row in ex.naive.out.tolist() for x in row) or 1.0
    overlay = {"type": "heatmap", "z": _overlay(ex, frame), "zmin": 0, "zmax": 1, "showscale": False,
               "colorscale": [[0, PENDING], [1, SKIPPED]], "xgap": 0.5, "ygap": 0.5, "hoverinfo": "skip",
               **axis_ref(0)}
    data = [
        _heatmap(ex.naive.scores.tolist(), 0, DIVERGING, cell, zmid=0.0, text=text),
        overlay,
        _grid_lines(T_q, T_k, ex.trace.block, 0),
        _heatmap(ex.naive.probs.tolist(), 1, WEIGHT_SCALE, cell, zrange=(0, 1), text=text),
        _heatmap(frame.rows.out.tolist(), 2, DIVERGING, out_hover, zrange=(-limit, limit), text=False),
        _heatmap(ex.naive.out.tolist(), 3, DIVERGING, out_hover, zrange=(-limit, limit), text=False),
    ]
    titles = [tr(lang, "attn_fig_tiles"), tr(lang, "attn_fig_probs"), tr(lang, "attn_fig_out_tiled"),
              tr(lang, "attn_fig_out_naive")]
    layout = subplot_row(titles)
    for i, (left, right) in enumerate(((0.0, 0.31), (0.36, 0.67), (0.72, 0.855), (0.865, 1.0))):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(domain=[left, right], showgrid=False, zeroline=False,
                                        title={"text": tr(lang, "attn_fig_key" if i < 2 else "attn_fig_dim")})
        layout[f"yaxis{suffix}"].update(autorange="reversed", showgrid=False, zeroline=False, showticklabels=i in (0, 2),
                                        title={"text": tr(lang, "attn_fig_query") if i in (0, 2) else None})
        layout["annotations"][i]["x"] = (left + right) / 2
    for i in (0, 1):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"yaxis{suffix}"].update(scaleanchor=f"x{suffix}", constrain="domain")
        layout[f"xaxis{suffix}"].update(constrain="domain")
    shapes = []
    if frame.tile is not None:
        (r0, r1), (c0, c1) = frame.tile.rows, frame.tile.cols
        for panel in (0, 1):
            shapes.append(_rect(panel, (c0 - 0.5, c1 - 0.5), (r0 - 0.5, r1 - 0.5)))
        shapes.append(_rect(2, (-0.5, d_v - 0.5), (r0 - 0.5, r1 - 0.5), width=2))
        row = frame.recurrence.row
        shapes.append(_rect(0, (c0 - 0.5, c1 - 0.5), (row - 0.5, row + 0.5), color=REFERENCE, width=1.5, dash="dot"))
    layout["shapes"] = shapes
    title = _tiles_title(ex, frame, lang)
    height = max(380, min(620, 200 + 7 * T_q))
    return plain_figure(data, layout | base_layout(height=height, title=title))


def _tiles_title(ex, frame, lang: str) -> str:
    if frame.tile is None:
        return tr(lang, "attn_fig_title_start", n=frame.n_steps)
    (rows, cols) = frame.tile.rows, frame.tile.cols
    return tr(lang, "attn_fig_title_step", step=frame.step, n=frame.n_steps, rows=_span(rows), cols=_span(cols))


def rows_figure(ex, frame, lang: str = "en") -> PlainFigure:
    """Every query row's running max m and sum ℓ (bars) against the naive row max and Σ exp(s − max)
    (markers), and the rescale factors exp(m_old − m_new) of the current tile's rows."""
    T_q = ex.trace.shape[0]
    rows = list(range(T_q))
    current = range(*frame.tile.rows) if frame.tile is not None else range(0)
    colors = [CURRENT if r in current else DONE for r in rows]
    m = [None if x == -math.inf else x for x in frame.rows.m.tolist()]
    l_run = [x if m[i] is not None else None for i, x in enumerate(frame.rows.l.tolist())]
    naive_max = ex.naive.scores.amax(dim=-1)                                  # (T,)
    naive_sum = (ex.naive.scores - naive_max[:, None]).exp().sum(dim=-1)      # (T,) Σ exp(s − max)
    bar = {"type": "bar", "x": rows, "marker": {"color": colors}, "showlegend": False}
    ref = {"type": "scatter", "mode": "markers", "x": rows,
           "marker": {"symbol": "line-ew-open", "size": 14, "color": REFERENCE, "line": {"width": 2}}}
    rescale = [None] * T_q
    if frame.tile is not None:
        for i, r in enumerate(current):
            rescale[r] = frame.tile.rescale[i].item()
    data = [
        bar | {"y": m, "name": "m", "hovertemplate": tr(lang, "attn_fig_hover_m"), **axis_ref(0)},
        ref | {"y": finite(naive_max.tolist()), "name": tr(lang, "attn_fig_naive_max"), **axis_ref(0)},
        bar | {"y": l_run, "name": "ℓ", "hovertemplate": tr(lang, "attn_fig_hover_l"), **axis_ref(1)},
        ref | {"y": finite(naive_sum.tolist()), "name": tr(lang, "attn_fig_naive_sum"), **axis_ref(1)},
        bar | {"y": rescale, "name": "rescale", "marker": {"color": CURRENT},
               "hovertemplate": tr(lang, "attn_fig_hover_rescale"), **axis_ref(2)},
    ]
    layout = subplot_row([tr(lang, "attn_fig_m"), tr(lang, "attn_fig_l"), tr(lang, "attn_fig_rescale")], spacing=0.07)
    for i in range(3):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(title={"text": tr(lang, "attn_fig_query")}, range=[-0.5, T_q - 0.5])
    layout["yaxis3"].update(range=[0, 1.05])
    layout["legend"] = {"orientation": "h", "x": 0, "y": -0.22}
    # Two-line panel titles (one line each ran into the next below ~900 px), under the block's label.
    return plain_figure(data, layout | base_layout(height=330, margin={"t": 90}))


def status_markdown(ex, frame, lang: str = "en") -> str:
    """Where the loop is, how many tiles it skipped, and how far the tiled output is from the naive one."""
    n_grid = ex.grid * ex.grid
    parts = [tr(lang, "attn_status_step", step=frame.step, n=frame.n_steps)]
    if ex.trace.skipped:
        parts.append(tr(lang, "attn_status_skipped", skipped=len(ex.trace.skipped), total=n_grid))
    parts.append(tr(lang, "attn_status_rows", done=frame.rows.done_rows, T=ex.trace.shape[0]))
    ok = ex.max_diff <= ex.tolerance
    key = "attn_status_diff_ok" if ok else "attn_status_diff_bad"
    parts.append(tr(lang, key, diff=f"{ex.max_diff:.2g}", dtype=ex.dtype, tol=f"{ex.tolerance:g}",
                    sdpa=f"{ex.max_diff_sdpa:.2g}"))
    return " · ".join(parts)


def recurrence_markdown(frame, lang: str = "en") -> str:
    """The online-softmax update of one row of the current tile with its numbers plugged in."""
    if frame.recurrence is None:
        return tr(lang, "attn_rec_start")
    r = frame.recurrence
    text = tr(lang, "attn_rec_tile", row=r.row, cols=_span(frame.tile.cols), m_old=tex(r.m_old),
              tile_max=tex(r.tile_max), m_new=tex(r.m_new), rescale=tex(r.rescale), l_old=tex(r.l_old),
              tile_sum=tex(r.tile_sum), l_new=tex(r.l_new))
    return text + "\n\n" + tr(lang, "attn_rec_last" if r.last else "attn_rec_more")


# --------------------------------------------------------------------------- the cost sweep
def _bytes_text(n: float) -> str:
    """``1.5 GiB``, ``640 KiB``: bytes in binary units.

    >>> _bytes_text(3 * 2**29), _bytes_text(640 * 1024), _bytes_text(12)
    ('1.5 GiB', '640 KiB', '12 B')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def _measured(sweep, impl: str) -> tuple[list[int], list[int], list[float]]:
    Ts, peaks, ms = [], [], []
    for p in sweep.points:
        call = p.calls.get(impl)
        if call is not None and hasattr(call, "peak_bytes"):
            Ts.append(p.T)
            peaks.append(call.peak_bytes)
            ms.append(call.ms)
    return Ts, peaks, ms


def _backends(sweep, lang: str) -> str:
    return " / ".join(tr(lang, f"attn_backend_{key}") for key in sweep.backends() or ["unknown"])


def _impl_name(sweep, impl: str, lang: str) -> str:
    if impl == "sdpa":
        return tr(lang, "attn_cost_sdpa", backend=_backends(sweep, lang))
    return tr(lang, f"attn_cost_{impl}", block=sweep.block)


def cost_figure(sweep, lang: str = "en") -> PlainFigure:
    """Log-log: measured bytes (left) and milliseconds per call (right) of the three paths against T,
    with the formulas (T² scores, T·d rows, the sliding window) and the budget beside the bytes."""
    Ts = list(sweep.contexts)
    shape = sweep.shape
    data = []
    formulas = (("matrices", [shape.matrices_bytes(T) for T in Ts], "dash"),
                ("rows", [shape.rows_bytes(T) for T in Ts], "dash"),
                ("window", [shape.matrices_bytes(T, min(T, sweep.window)) for T in Ts], "dot"))
    for key, ys, dash in formulas:
        data.append({"type": "scatter", "mode": "lines", "x": Ts, "y": ys, "line": {"color": FORMULA[key], "dash": dash,
                     "width": 1.5}, "opacity": 0.7, "name": tr(lang, f"attn_cost_formula_{key}", window=sweep.window),
                     "legendgroup": "formula", "hovertemplate": "T = %{x}: %{y:.3s}B<extra>%{fullData.name}</extra>",
                     **axis_ref(0)})
    data.append({"type": "scatter", "mode": "lines", "x": [Ts[0], Ts[-1]], "y": [sweep.budget_bytes] * 2,
                 "line": {"color": "#6b7280", "width": 1}, "name": tr(lang, "attn_cost_budget",
                                                                      budget=_bytes_text(sweep.budget_bytes)),
                 "hoverinfo": "skip", **axis_ref(0)})
    for impl in ("naive", "sdpa", "tiled"):
        xs, peaks, ms = _measured(sweep, impl)
        name = _impl_name(sweep, impl, lang)
        common = {"type": "scatter", "mode": "lines+markers", "x": xs, "name": name, "legendgroup": impl,
                  "line": {"color": LINE_COLORS[impl], "width": 2.5}, "marker": {"size": 7}}
        data.append(common | {"y": peaks, "hovertemplate": "T = %{x}: %{y:.3s}B<extra>%{fullData.name}</extra>",
                              **axis_ref(0)})
        data.append(common | {"y": ms, "showlegend": False,
                              "hovertemplate": "T = %{x}: %{y:.3g} ms<extra>%{fullData.name}</extra>", **axis_ref(1)})
    wall = [(p.T, p.calls["naive"].need) for p in sweep.points
            if getattr(p.calls.get("naive"), "reason", None) == "memory"]
    if wall:
        T, need = wall[0]
        data.append({"type": "scatter", "mode": "markers+text", "x": [T], "y": [need], "text": [tr(
            lang, "attn_cost_wall", need=_bytes_text(need))], "textposition": "top left",
            "marker": {"symbol": "x", "size": 12, "color": LINE_COLORS["naive"]}, "showlegend": False,
            "hoverinfo": "skip", **axis_ref(0)})
    layout = subplot_row([tr(lang, "attn_cost_memory_title"), tr(lang, "attn_cost_time_title")], spacing=0.08)
    for i, label in enumerate(("attn_cost_bytes", "attn_cost_ms")):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(type="log", title={"text": "T"}, tickvals=Ts,
                                        ticktext=[_tokens(T) for T in Ts])
        layout[f"yaxis{suffix}"].update(type="log", title={"text": tr(lang, label)}, exponentformat="SI")
    layout["legend"] = {"orientation": "h", "x": 0, "y": -0.25}
    return plain_figure(data, layout | base_layout(height=480))


def _tokens(T: int) -> str:
    """``256``, ``16K``: a context length for a tick.

    >>> _tokens(256), _tokens(16384)
    ('256', '16K')
    """
    return f"{T // 1024}K" if T >= 1024 and T % 1024 == 0 else str(T)


def kv_figure(sweep, lang: str = "en") -> PlainFigure:
    """The decode side: one cached step of the tiny GPT against its context (measured, with the fitted
    line), and Mistral-7B's KV cache with and without its rolling sliding window."""
    xs = [p.context for p in sweep.decode]
    data = [{"type": "scatter", "mode": "markers", "x": xs, "y": [p.ms for p in sweep.decode],
             "customdata": [_bytes_text(p.cache_bytes) for p in sweep.decode], "name": tr(lang, "attn_kv_measured"),
             "marker": {"size": 9, "color": LINE_COLORS["sdpa"]},
             "hovertemplate": tr(lang, "attn_kv_hover"), **axis_ref(0)}]
    fit = sweep.decode_fit()
    if fit is not None:
        a, b = fit
        data.append({"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [a + b * xs[0], a + b * xs[-1]],
                     "line": {"color": LINE_COLORS["sdpa"], "dash": "dash"}, "hoverinfo": "skip",
                     "name": tr(lang, "attn_kv_fit", a=f"{a:.3g}", per100=f"{100 * b * 1e3:.3g}"), **axis_ref(0)})
    Ts = [row[0] for row in sweep.window_cache]
    for i, key in ((1, "attn_kv_full"), (2, "attn_kv_window")):
        data.append({"type": "scatter", "mode": "lines", "x": Ts, "y": [row[i] for row in sweep.window_cache],
                     "name": tr(lang, key, window=sweep.window), "line": {"width": 2.5, "dash": "solid" if i == 1 else "dot",
                                                                          "color": FORMULA["matrices" if i == 1 else "window"]},
                     "hovertemplate": "T = %{x}: %{y:.3s}B<extra>%{fullData.name}</extra>", **axis_ref(1)})
    layout = subplot_row([tr(lang, "attn_kv_step_title"), tr(lang, "attn_kv_cache_title")], spacing=0.1)
    layout["xaxis"].update(title={"text": tr(lang, "attn_kv_context")})
    layout["yaxis"].update(title={"text": tr(lang, "attn_cost_ms")}, rangemode="tozero")
    layout["xaxis2"].update(type="log", title={"text": "T"}, tickvals=Ts[::2], ticktext=[_tokens(T) for T in Ts[::2]])
    layout["yaxis2"].update(type="log", title={"text": tr(lang, "attn_cost_bytes")}, exponentformat="SI")
    layout["legend"] = {"orientation": "h", "x": 0, "y": -0.25}
    return plain_figure(data, layout | base_layout(height=400))


def cost_markdown(sweep, lang: str = "en") -> str:
    """What SDPA ran, the largest T each path reached, the ratios there, what stopped the naive path."""
    lines = []
    if sweep.backends():
        lines.append(tr(lang, "attn_cost_backend", backend=_backends(sweep, lang),
                        op="`, `".join(_backend_op(key) for key in sweep.backends())))
    both = [p for p in sweep.points if all(hasattr(p.calls.get(i), "ms") for i in ("naive", "sdpa"))]
    if both:
        p = both[-1]
        naive, sdpa = p.calls["naive"], p.calls["sdpa"]
        lines.append(tr(lang, "attn_cost_at", T=f"{p.T:,}", naive=_bytes_text(naive.peak_bytes), naive_ms=f"{naive.ms:,.1f}",
                        sdpa=_bytes_text(sdpa.peak_bytes), sdpa_ms=f"{sdpa.ms:,.1f}",
                        mem_ratio=f"{naive.peak_bytes / max(sdpa.peak_bytes, 1):,.0f}",
                        time_ratio=f"{naive.ms / sdpa.ms:.2g}", diff=f"{p.max_diff:.2g}"))
    for impl in ("naive", "sdpa", "tiled"):
        skipped = [(p.T, p.calls[impl]) for p in sweep.points if hasattr(p.calls.get(impl), "reason")]
        if skipped:
            T, why = skipped[0]
            need = _bytes_text(why.need) if why.reason == "memory" else f"{why.need:.1f} s"
            lines.append(tr(lang, f"attn_cost_skip_{why.reason}", name=_impl_name(sweep, impl, lang), T=f"{T:,}",
                            need=need))
    if sweep.ended == "time":
        lines.append(tr(lang, "attn_cost_ended_time", seconds=f"{sweep.seconds:.0f}"))
    fit = sweep.decode_fit()
    if fit is not None and sweep.decode:
        first, last = sweep.decode[0], sweep.decode[-1]
        lines.append(tr(lang, "attn_kv_summary", first=first.context, last=last.context, ms0=f"{first.ms:.2f}",
                        ms1=f"{last.ms:.2f}", per100=f"{100 * fit[1] * 1e3:.3g}", bytes=_bytes_text(last.cache_bytes)))
    lines.append(tr(lang, "attn_cost_method_cuda" if sweep.device.startswith("cuda") else "attn_cost_method_cpu",
                    threads=sweep.threads))
    return "\n\n".join(lines)


def _backend_op(backend: str) -> str:
    from models.attention_cost import SDPA_BACKENDS
    return next((op for op, key in SDPA_BACKENDS.items() if key == backend), "?")
