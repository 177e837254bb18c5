"""Figures of the number formats (the Tensors tab): bit layouts, rounding error across magnitudes, and
the table of ranges and casts. Moved here from the Calculator tab."""
from __future__ import annotations

from locales import tr
from viz.common import PlainFigure, base_layout, finite, plain_figure

PALETTE = ["#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#8b5cf6", "#ec4899", "#64748b"]
BIT_COLORS = {"sign": "#ef4444", "exponent": "#10b981", "mantissa": "#4f46e5", "value": "#64748b"}
NOTES = {"exact": "numfmt_exact", "rounded": "numfmt_rounded", "overflow": "numfmt_overflow",
         "saturated": "numfmt_saturated", "underflow to zero": "numfmt_underflow", "subnormal": "numfmt_subnormal"}


def bits_figure(rows: list[tuple[str, int, int, int, str]], lang: str = "en") -> PlainFigure:
    """One row of coloured cells per format: sign, exponent, mantissa, with the bits of a value."""
    data = []
    for r, (name, sign, exponent, mantissa, bits) in enumerate(rows):
        kinds = ["sign"] * sign + (["exponent"] * exponent + ["mantissa"] * mantissa if exponent else
                                   ["value"] * mantissa)
        for kind in dict.fromkeys(kinds):
            xs = [i for i, k in enumerate(kinds) if k == kind]
            label = tr(lang, f"numfmt_{kind}")
            data.append({"type": "scatter", "mode": "markers+text", "x": xs, "y": [name] * len(xs),
                         "text": [bits[i] for i in xs], "textfont": {"color": "white", "size": 11},
                         "marker": {"symbol": "square", "size": 17, "color": BIT_COLORS[kind]},
                         "name": label, "legendgroup": kind, "showlegend": r == 0 or kind == "value",
                         "hovertemplate": f"{name}: {label}<extra></extra>"})
    layout = base_layout(height=110 + 34 * len(rows), title=tr(lang, "numfmt_bits_title")) | {
        "xaxis": {"showgrid": False, "zeroline": False, "showticklabels": False, "range": [-1, 32]},
        "yaxis": {"autorange": "reversed", "showgrid": False}, "legend": {"orientation": "h", "y": -0.1}}
    return plain_figure(data, layout)


def rounding_figure(curves: dict[str, tuple[list[float], list[float]]], lang: str = "en") -> PlainFigure:
    """One step line per format (``models.numformats.error_curves``): its worst relative error in each binade,
    held across the binade; the line spans what the format stores."""
    data = [{"type": "scatter", "mode": "lines", "name": name, "x": xs, "y": finite(errs),
             "line": {"color": PALETTE[i % 8], "width": 2, "shape": "hv"},
             "hovertemplate": "|x| ≥ %{x:.3g}<br>%{y:.2e}<extra>" + name + "</extra>"}
            for i, (name, (xs, errs)) in enumerate(curves.items())]
    layout = base_layout(height=380, title=tr(lang, "numfmt_rounding_title")) | {
        "xaxis": {"type": "log", "title": {"text": tr(lang, "numfmt_magnitude")}, "exponentformat": "power"},
        "yaxis": {"type": "log", "title": {"text": tr(lang, "numfmt_rel_error")}, "exponentformat": "power"},
        "legend": {"orientation": "h", "y": -0.25}}
    return plain_figure(data, layout)


def formats_markdown(value: float, casts: list, format_facts: list, lang: str = "en") -> str:
    """A table: each format's range and precision, and what happened to ``value``."""
    T = lambda key: tr(lang, f"numfmt_{key}")                         # noqa: E731
    head = (f"**{tr(lang, 'numfmt_h_cast', v=repr(value))}**\n\n| {T('fmt')} | {T('range')} | {T('min_normal')} | "
            f"{T('eps')} | {T('digits')} | {T('stored')} | {T('error')} | {T('note')} |\n"
            "|---|---:|---:|---:|---:|---:|---:|---|\n")
    rows = []
    for c, f in zip(casts, format_facts):
        err = f"{c.rel_error:.2e}" if c.rel_error is not None else "—"
        note = tr(lang, NOTES[c.note]) + (tr(lang, "numfmt_by_torch", v=f"{c.by_torch:.8g}") if c.by_torch is not None
                                          else "")
        rows.append(f"| {c.format} | {f.max:.6g} | {f.smallest_normal:.3g} | {f.eps:.3g} | {f.decimal_digits} | "
                    f"{c.stored:.8g} | {err} | {note} |" if f.eps is not None else
                    f"| {c.format} | {f.max:.0f} | — | — | — | {c.stored:.8g} | {err} | {note} |")
    return head + "\n".join(rows)
