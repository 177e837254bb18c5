"""Figures of the Tensors tab's compute view: achieved FLOP/s of a matmul sweep against size and
against arithmetic intensity, with the device's peaks (or the best measured, on a CPU) and the
memory roof; the text that says what the sweep found."""
from __future__ import annotations

import math

from locales import tr
from viz.common import axis_ref, base_layout, plain_figure, subplot_row

DTYPE_COLORS = {"fp32": "#4f46e5", "bf16": "#10b981", "fp16": "#f59e0b", "fp8": "#ef4444"}
ROOF_COLOR = "#6b7280"


def rate_unit(rates: list[float]) -> tuple[str, float]:
    """The unit that shows the largest rate best.

    >>> rate_unit([3e9, 8e10]), rate_unit([2e14])
    (('GFLOP/s', 1000000000.0), ('TFLOP/s', 1000000000000.0))
    """
    top = max(rates, default=0.0)
    for unit, scale in (("EFLOP/s", 1e18), ("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if top >= scale:
            return unit, scale
    return "FLOP/s", 1.0


def human_rate(value: float) -> str:
    """A rate with its unit.

    >>> human_rate(7.2e10)
    '72.0 GFLOP/s'
    """
    unit, scale = rate_unit([value])
    return f"{value / scale:.3g} {unit}" if value / scale >= 100 else f"{value / scale:.1f} {unit}"


def share(fraction: float) -> str:
    """A fraction of a peak in percent, to two significant digits once it is under 1 %: a tiny model on an
    H200 reaches 0.00012 % of its 990 TFLOP/s, which one decimal would print as 0.0 %.

    >>> share(0.4123), share(0.0123), share(1.25e-6), share(0.0)
    ('41.2%', '1.2%', '0.00013%', '0%')
    """
    percent = 100 * fraction
    if percent >= 1 or percent == 0:
        return f"{percent:.1f}%" if percent else "0%"
    digits = 1 - math.floor(math.log10(percent))                 # two significant digits
    return f"{percent:.{digits}f}%"


def human_flops(value: float) -> str:
    """A FLOP count with its unit.

    >>> human_flops(2 * 512**3), human_flops(4.2e22)
    ('268 MFLOP', '4.2e+22 FLOP')
    """
    if value >= 1e21:
        return f"{value:.3g} FLOP"
    for unit, scale in (("EFLOP", 1e18), ("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6),
                        ("kFLOP", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} FLOP"


def matmul_figure(points: list, peaks: dict[str, float], peak_source: str | None, bandwidth: float | None,
                  kind: str, width: int, device: str, lang: str = "en") -> dict:
    """Two panels, log-log: FLOP/s against the swept size, and against FLOPs per byte moved.

    ``peaks``: FLOP/s per dtype, from a datasheet (``peak_source`` names it) or, with
    ``peak_source=None``, the best measured. ``bandwidth`` in bytes/s draws the memory roof.
    """
    unit, scale = rate_unit([p.flops_per_s for p in points] + list(peaks.values()))
    layout = base_layout(height=440, title=tr(lang, "compute_fig_matmul_title", device=device)) | subplot_row(
        [tr(lang, "compute_fig_vs_size"), tr(lang, "compute_fig_vs_intensity")], spacing=0.1)
    size_title = (tr(lang, "compute_fig_size_square") if kind == "square"
                  else tr(lang, "compute_fig_size_tokens", d=width))
    for panel, title in ((0, size_title), (1, tr(lang, "compute_fig_intensity"))):
        suffix = "" if panel == 0 else "2"
        # One labelled tick per decade: Plotly's minor labels are bare digits, and "5" left of "1" meant 0.5.
        layout[f"xaxis{suffix}"].update(type="log", title={"text": title}, dtick=1)
        layout[f"yaxis{suffix}"].update(type="log", title={"text": tr(lang, "compute_fig_flops", unit=unit)},
                                        exponentformat="power", dtick=1)
    layout["legend"] = {"orientation": "h", "y": -0.22}
    data, shapes = [], []
    for dtype in dict.fromkeys(p.dtype for p in points):
        mine = [p for p in points if p.dtype == dtype]
        hover = [tr(lang, "compute_fig_point_hover", dtype=dtype, m=p.m, n=p.n, k=p.k, flops=human_flops(p.flops),
                    ms=f"{p.seconds * 1e3:.3g}", rate=human_rate(p.flops_per_s), intensity=f"{p.intensity:.3g}")
                 for p in mine]
        color = DTYPE_COLORS[dtype]
        for panel, xs in ((0, [p.size for p in mine]), (1, [p.intensity for p in mine])):
            data.append({"type": "scatter", "mode": "lines+markers", "x": xs,
                         "y": [p.flops_per_s / scale for p in mine], "name": dtype, "legendgroup": dtype,
                         "showlegend": panel == 0, "line": {"color": color, "width": 2}, "customdata": hover,
                         "hovertemplate": "%{customdata}<extra></extra>", **axis_ref(panel)})
    for dtype, peak in peaks.items():
        label = (tr(lang, "compute_fig_peak", dtype=dtype, value=human_rate(peak), source=peak_source)
                 if peak_source else tr(lang, "compute_fig_measured_peak", dtype=dtype, value=human_rate(peak)))
        for panel in (0, 1):
            ref = axis_ref(panel)
            shapes.append({"type": "line", "xref": f"{ref['xaxis']} domain", "yref": ref["yaxis"], "x0": 0, "x1": 1,
                           "y0": peak / scale, "y1": peak / scale,
                           "line": {"color": DTYPE_COLORS.get(dtype, ROOF_COLOR), "dash": "dash", "width": 1.5}})
        # Named in the legend, a dashed entry in its line's colour: any place in the panel covers data
        # somewhere (two close peaks share one height; a CPU's slow fp16 points lie in the bottom corner).
        data.append({"type": "scatter", "mode": "lines", "x": [None], "y": [None], "name": label,
                     "line": {"color": DTYPE_COLORS.get(dtype, ROOF_COLOR), "dash": "dash", "width": 1.5},
                     "hoverinfo": "skip", **axis_ref(0)})
    if bandwidth and points and peaks:
        xs = sorted({p.intensity for p in points})
        low, high = xs[0] / 2, xs[-1] * 2
        knee = max(peaks.values()) / bandwidth
        roof_x = [low] + ([knee] if low < knee < high else []) + [high]
        data.append({"type": "scatter", "mode": "lines", "x": roof_x,
                     "y": [min(x * bandwidth, max(peaks.values())) / scale for x in roof_x],
                     "name": tr(lang, "compute_fig_roof", bandwidth=f"{bandwidth / 1e12:g}"),
                     "line": {"color": ROOF_COLOR, "dash": "dot", "width": 2}, "hoverinfo": "skip", **axis_ref(1)})
    layout["shapes"] = shapes
    return plain_figure(data, layout)


def matmul_markdown(points: list, skips: list, peaks: dict[str, float], header: str, lang: str = "en") -> str:
    """What the sweep found, per dtype: the best rate and where, against the peak (a datasheet's only:
    ``peaks`` empty on a CPU), and the smallest size."""
    lines = [header, ""]
    for dtype in dict.fromkeys(p.dtype for p in points):
        mine = [p for p in points if p.dtype == dtype]
        best = max(mine, key=lambda p: p.flops_per_s)
        of_peak = tr(lang, "compute_row_share", percent=share(best.flops_per_s / peaks[dtype])) if dtype in peaks else ""
        lines.append(tr(lang, "compute_row", dtype=dtype, best=human_rate(best.flops_per_s), size=best.size,
                        share=of_peak, small=human_rate(mine[0].flops_per_s)))
    lines += [f"- {tr(lang, s.why, **s.params)}" for s in skips]
    return "\n".join(lines)


def mfu_figure(steps: list, flops_per_step: int, peak: float | None, lang: str = "en") -> dict:
    """Two panels: achieved FLOP/s of each timed step (bars) under the peak, and the loss going down."""
    rates = [flops_per_step / s.seconds for s in steps]
    unit, scale = rate_unit(rates + ([peak] if peak else []))
    layout = base_layout(height=360, title=tr(lang, "mfu_fig_title")) | subplot_row(
        [tr(lang, "mfu_fig_rate"), tr(lang, "mfu_fig_loss")], spacing=0.1)
    layout["xaxis"].update(title={"text": tr(lang, "mfu_fig_step")})
    layout["xaxis2"].update(title={"text": tr(lang, "mfu_fig_step")})
    layout["yaxis"].update(title={"text": unit}, rangemode="tozero")
    layout["yaxis2"].update(title={"text": tr(lang, "mfu_fig_loss_axis")})
    xs = [s.step for s in steps]
    hover = [tr(lang, "mfu_fig_hover", step=s.step, ms=f"{s.seconds * 1e3:.1f}", rate=human_rate(r),
                mfu=share(r / peak) if peak else "—") for s, r in zip(steps, rates)]
    data = [{"type": "bar", "x": xs, "y": [r / scale for r in rates], "name": tr(lang, "mfu_fig_rate"),
             "marker": {"color": DTYPE_COLORS["fp32"]}, "customdata": hover,
             "hovertemplate": "%{customdata}<extra></extra>", "showlegend": False, **axis_ref(0)},
            {"type": "scatter", "mode": "lines+markers", "x": xs, "y": [s.loss for s in steps],
             "name": tr(lang, "mfu_fig_loss"), "line": {"color": DTYPE_COLORS["bf16"]}, "showlegend": False,
             **axis_ref(1)}]
    if peak:
        layout["shapes"] = [{"type": "line", "xref": "x domain", "yref": "y", "x0": 0, "x1": 1, "y0": peak / scale,
                             "y1": peak / scale, "line": {"color": ROOF_COLOR, "dash": "dash"}}]
        layout["annotations"] = layout["annotations"] + [{
            "xref": "x domain", "x": 0, "xanchor": "left", "yref": "y", "y": peak / scale, "yanchor": "bottom",
            "text": tr(lang, "mfu_fig_peak", value=human_rate(peak)), "showarrow": False,
            "font": {"size": 10, "color": ROOF_COLOR}}]
    return plain_figure(data, layout)


def mfu_markdown(setup, seconds: float | None, achieved: float | None, mfu: float | None, batch: int,
                 seq_len: int, lang: str = "en") -> str:
    """The FLOPs of one step three ways (rule, formula, PyTorch's counter), then time, FLOP/s and MFU."""
    T = lambda key, **p: tr(lang, key, **p)                       # noqa: E731
    attention = setup.formula_flops - setup.rule_flops
    equal = T("mfu_equal") if setup.counted_flops == setup.formula_flops else T(
        "mfu_differ", diff=f"{setup.counted_flops - setup.formula_flops:+,}")
    rows = [f"**{T('mfu_h_flops', tokens=f'{setup.tokens:,}', batch=batch, seq=seq_len)}**", "",
            f"| | FLOPs |\n|---|---:|",
            f"| {T('mfu_rule', n=f'{setup.n_matmul:,}')} | {setup.rule_flops:,} |",
            f"| {T('mfu_attention')} | {attention:,} |",
            f"| {T('mfu_formula', batch=batch, seq=seq_len)} | **{setup.formula_flops:,}** |",
            f"| {T('mfu_counted')} | {setup.counted_flops:,} {equal} |"]
    if setup.missed_flops:
        rows.append(f"| {T('mfu_plain')} | {setup.counted_flops - setup.missed_flops:,} "
                    f"({T('mfu_missed', missed=f'{setup.missed_flops:,}')}) |")
    rows.append("")
    rows.append(T("mfu_params", total=f"{setup.n_params:,}", matmul=f"{setup.n_matmul:,}"))
    if seconds is None:
        return "\n".join(rows)
    rows.append("")
    if setup.peak is None:
        peak_text = T("mfu_no_peak", device=setup.device)
    elif setup.peak_source:
        peak_text = T("mfu_peak_sheet", value=human_rate(setup.peak), dtype=setup.dtype, source=setup.peak_source)
    else:
        peak_text = T("mfu_peak_measured", value=human_rate(setup.peak), threads=setup.threads)
    rows.append(T("mfu_result", ms=f"{seconds * 1e3:.1f}", dtype=setup.dtype, rate=human_rate(achieved),
                  mfu=share(mfu) if mfu is not None else "—", peak=peak_text))
    if mfu is not None and mfu > 1:
        rows.append("\n" + T("mfu_above_peak"))
    return "\n".join(rows)
