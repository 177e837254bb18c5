"""What every figure shares: the look, a NaN guard, and two fast ways to build a figure from dicts.

Figure text comes from ``locales/`` through :func:`locales.tr` (the widgets are translated by
Gradio's i18n in the browser).
"""
from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from typing import Iterable

import plotly.graph_objects as go

# Latin fonts first, then Chinese ones: a browser takes each character from the first font that has it, and a
# Chinese font's curly quotes are a full em wide ("Press  “Train” : …" where Inter is not installed).
FONT = ("Inter, 'Segoe UI', 'Helvetica Neue', Arial, 'Liberation Sans', 'DejaVu Sans', "
        "'WenQuanYi Micro Hei', 'Noto Sans CJK SC', 'Microsoft YaHei', 'PingFang SC', sans-serif")
ALLOWED_COLOR = "#4f46e5"     # indigo: may attend
MASKED_COLOR = "#e5e7eb"      # light gray: masked
NAN_COLOR = "#dc2626"         # red: NaN
PLOT_WIDTH = 900              # px: about a figure's width on a laptop (phones scroll a figure at 840 px)
# Explicit stops: a named scale ("Blues") is expanded by plotly.py's validation, which figure() skips,
# and plotly.js reads the bare name reversed.
WEIGHT_SCALE = [[0.0, "#f7fbff"], [0.25, "#c6dbef"], [0.5, "#6baed6"], [0.75, "#2171b5"], [1.0, "#08306b"]]


def finite(values: Iterable[float]) -> list[float | None]:
    """Replace NaN and ±inf by ``None`` (a gap in plotly): nothing non-finite reaches a plot.

    >>> finite([1.0, float("nan"), float("-inf")])
    [1.0, None, None]
    """
    return [v if v is not None and math.isfinite(v) else None for v in values]


def finite_grid(rows: Iterable[Iterable[float]]) -> list[list[float | None]]:
    """:func:`finite` applied to every row of a 2-D grid."""
    return [finite(row) for row in rows]


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A ``go.Figure`` from plain dicts, without plotly's per-property validation.

    Validation (and ``make_subplots``/``update_*``) costs ~10x the drawing itself: 20 ms against
    2 ms for a three-panel heatmap. Every tab redraws on each slider move, so figures are built as
    dicts; the tests check their content.

    ``_validate=False`` is a private argument of plotly's ``BaseFigure``, kept because these figures
    carry NumPy arrays (plotly.py's JSON encoder writes them as typed arrays), which
    :class:`PlainFigure` does not. The example below fails if plotly drops the argument or starts
    validating anyway (an unknown property would raise). New views use :func:`plain_figure`.

    >>> fig = figure([{"type": "bar", "y": [1], "bogus": 2}], {"height": 200})
    >>> fig.to_plotly_json()["data"][0]["bogus"], fig.layout.height
    (2, 200)
    """
    return go.Figure(dict(data=data, layout=layout), _validate=False)


class PlainFigure(dict):
    """A figure as the dict plotly.js reads (``data``, ``layout``), serialised without plotly.py.

    ``gr.Plot`` sends a plotly figure as ``value.to_json()``; this object answers that call with one
    ``orjson``/``json`` dump. plotly.py's ``go.Figure`` deep-copies every trace twice and walks every
    value on the way (~40 ms for the five-panel rotate figure on the dev machine; this: ~5 ms).
    """

    def to_json(self) -> str:
        try:
            import orjson                                  # a dependency of gradio; NaN -> null
        except ImportError:                                # pragma: no cover
            return json.dumps(self, separators=(",", ":"), allow_nan=False)
        return orjson.dumps(self).decode()


@functools.cache
def _default_template() -> dict:
    """plotly.py's default template as a dict: what ``go.Figure.to_json`` puts in every figure."""
    import plotly.io as pio
    return pio.templates[pio.templates.default].to_plotly_json()


def plain_figure(data: list[dict], layout: dict) -> PlainFigure:
    """:func:`figure` for tabs that redraw on every frame: the same dicts and look (plotly.py's default
    template included), no plotly.py objects at all.

    >>> fig = plain_figure([{"type": "bar", "y": [1, 2]}], {"height": 200})
    >>> fig.to_json().startswith('{"data":[{"type":"bar","y":[1,2]}],"layout":{"template":{'), fig["layout"]["height"]
    (True, 200)
    """
    return PlainFigure(data=data, layout={"template": _default_template(), **layout})


def subplot_row(titles: list[str], *, spacing: float = 0.06, square: bool = False) -> dict:
    """Layout for one row of panels: ``xaxis``, ``xaxis2``, … with their titles as annotations.

    Trace ``i`` (0-based) goes in panel ``i`` with ``xaxis="x{i+1}"`` (see :func:`axis_ref`).

    >>> layout = subplot_row(["a", "b"], spacing=0.1)
    >>> layout["xaxis2"]["domain"], layout["annotations"][1]["text"]
    ([0.55, 1.0], 'b')
    """
    n = len(titles)
    width = (1 - spacing * (n - 1)) / n
    layout: dict = {"annotations": []}
    for i, title in enumerate(titles):
        left = i * (width + spacing)
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"] = {"domain": [round(left, 6), round(left + width, 6)], "anchor": f"y{suffix}"}
        layout[f"yaxis{suffix}"] = {"domain": [0, 1], "anchor": f"x{suffix}"}
        if square:
            layout[f"yaxis{suffix}"]["scaleanchor"] = f"x{suffix}"
        layout["annotations"].append({
            "text": title, "x": left + width / 2, "y": 1.0, "xref": "paper", "yref": "paper",
            "xanchor": "center", "yanchor": "bottom", "yshift": 6, "showarrow": False, "font": {"size": 14}})
    return layout


def spaced(count: int, most: int) -> list[int]:
    """Which of ``count`` category ticks to label so that at most ``most`` are: every n-th, from the first.

    >>> spaced(30, 12), spaced(5, 12)
    ([0, 3, 6, 9, 12, 15, 18, 21, 24, 27], [0, 1, 2, 3, 4])
    """
    return list(range(0, count, max(1, -(-count // most))))


def axis_ref(i: int) -> dict:
    """The axis references of panel ``i`` (0-based) for a trace dict: ``{"xaxis": "x2", "yaxis": "y2"}``."""
    suffix = "" if i == 0 else str(i + 1)
    return {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}


def base_layout(*, height: int, title: str | None = None, margin: dict | None = None) -> dict:
    """The house look as a layout dict: compact margins, a font with CJK fallbacks, white. ``margin``: the
    sides the defaults leave too small for (panel titles of two lines, labels measured by :func:`label_margin`).
    The bottom holds an x axis's tick labels and its title: at 50 px Plotly's automargin pushed it ~3 px and
    drew the figure twice.

    >>> base_layout(height=300)["margin"]["t"], base_layout(height=300, margin={"t": 100})["margin"]
    (60, {'l': 60, 'r': 20, 't': 100, 'b': 60})
    """
    return {
        "height": height, "margin": {"l": 60, "r": 20, "t": 90 if title else 60, "b": 60} | (margin or {}),
        "font": {"family": FONT, "size": 12}, "plot_bgcolor": "white", "paper_bgcolor": "white",
        **({"title": {"text": title, "x": 0.01, "xanchor": "left"}} if title else {}),
    }


def text_px(text: str, size: float = 12, *, mono: bool = False) -> float:
    """About how wide ``text`` is drawn at ``size`` px, erring wide: 1 em a CJK character or an ellipsis,
    0.9 em a capital, m or w, 0.62 em any other (DejaVu Sans, the widest usual fallback of :data:`FONT`,
    averages ~0.55 em a lower-case letter; Liberation Sans draws "TRANSFORM…" 88 px wide, this says 109).
    ``mono``: in a monospace font, 0.62 em every character but a CJK one (DejaVu Sans Mono: 0.60).

    A figure that draws its axes with ``automargin`` off sizes its margins with this: Plotly's automargin
    measures every tick label before each draw, a measured share of each slider move (``bench/bench_page.py``).

    >>> text_px("mat"), text_px("露营"), round(text_px("TRANSFORM…")), round(text_px("MAT 露", mono=True))
    (25.68, 24.0, 109, 42)
    """
    if mono:
        return size * sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.62 for c in text)
    return size * sum(1.0 if c == "…" or unicodedata.east_asian_width(c) in "WF" else
                      0.9 if c.isupper() or c in "mw" else 0.62 for c in text)


def label_margin(labels: Iterable[str], *, pad: int = 14, mono: bool = False) -> int:
    """A left margin that holds the widest of ``labels`` (:func:`text_px`) and ``pad`` px beside it (the tick
    gap; more when an axis title sits there too), so that Plotly's automargin has nothing to push.

    >>> label_margin(["total", "active per token"]), label_margin(["第 4 层"], pad=30)
    (133, 76)
    """
    return round(max(text_px(label, mono=mono) for label in labels)) + pad


def wrapped(text: str, width: float, size: float = 12) -> str:
    """``text`` in lines at most ``width`` px wide (:func:`text_px`) joined by ``<br>``, broken between words
    and between any two CJK characters (Chinese has no spaces to break at).

    >>> wrapped("Press Train: each expert's share", 120), wrapped("点击开始训练：每个专家", 60)
    ("Press Train:<br>each expert's<br>share", '点击开始训<br>练：每个专<br>家')
    """
    words = re.findall(r"[^\s\u2e80-\u9fff\uff00-\uffef]+|[\u2e80-\u9fff\uff00-\uffef]|\s+", text)
    lines, line = [], ""
    for word in words:
        joined = line + word
        if line and not word.isspace() and text_px(joined.rstrip(), size) > width:
            lines.append(line.rstrip())
            line = word
        elif line or not word.isspace():
            line = joined
    return "<br>".join(lines + [line.rstrip()])


def colorbar_title(text: str, width: float = 72) -> dict:
    """A colour bar's title: beside the bar, turned to read upward, when its text is Latin; above the bar,
    level and wrapped to ``width`` px (:func:`wrapped`), when it holds CJK characters, which a turn would
    lay on their sides.

    >>> colorbar_title("weight"), colorbar_title("读取次序（新的存储）")["text"]
    ({'text': 'weight', 'side': 'right'}, '读取次序（新<br>的存储）')
    """
    if any(unicodedata.east_asian_width(c) in "WF" for c in text):
        return {"text": wrapped(text, width), "side": "top"}
    return {"text": text, "side": "right"}


# An empty figure's message stays within what a phone shows of the figure's box (its left ~330 px).
WAITING_WIDTH_PX = 280


def waiting(message: str, *, height: int = 300) -> go.Figure:
    """A figure that is empty until its long run starts, saying what fills it: at its left, in lines a
    phone shows whole (a figure keeps 840 px there, and a phone shows its left ~330 px).

    >>> waiting("press Train")["layout"]["annotations"][0]["text"]
    'press Train'
    """
    layout = base_layout(height=height, margin={"l": 20}) | {
        "xaxis": {"visible": False}, "yaxis": {"visible": False},
        "annotations": [{"text": wrapped(message, WAITING_WIDTH_PX, 14), "x": 0, "xanchor": "left", "align": "left",
                         "y": 0.5, "xref": "paper", "yref": "paper", "showarrow": False,
                         "font": {"size": 14, "color": "#6b7280"}}]}
    return figure([], layout)
