"""What every figure shares: the language of its text, the look, and a NaN guard.

Figure text is translated here (the widgets are translated by Gradio's i18n in the browser):
each viz module keeps a ``TEXT = {"en": {...}, "zh-CN": {...}}`` table and calls :func:`tr`.
"""
from __future__ import annotations

import math
from typing import Iterable

import plotly.graph_objects as go

LANGS = ("en", "zh-CN")
FONT = "Inter, 'WenQuanYi Micro Hei', 'Noto Sans CJK SC', 'Microsoft YaHei', sans-serif"
ALLOWED_COLOR = "#4f46e5"     # indigo: may attend
MASKED_COLOR = "#e5e7eb"      # light gray: masked
NAN_COLOR = "#dc2626"         # red: NaN
WEIGHT_SCALE = "Blues"


def tr(table: dict[str, dict[str, str]], key: str, lang: str) -> str:
    """The text of ``key`` in ``lang``, English when the language is unknown.

    >>> tr({"en": {"t": "Mask"}, "zh-CN": {"t": "掩码"}}, "t", "zh-CN")
    '掩码'
    """
    return table.get(lang, table["en"]).get(key) or table["en"][key]


def style(fig: go.Figure, *, height: int = 420, title: str | None = None) -> go.Figure:
    """The house look: compact margins, a font with CJK fallbacks, a white background."""
    fig.update_layout(
        height=height, margin=dict(l=60, r=20, t=70 if title else 40, b=50),
        font=dict(family=FONT, size=12), plot_bgcolor="white", paper_bgcolor="white",
        title=dict(text=title, x=0.01, xanchor="left") if title else None,
    )
    return fig


def finite(values: Iterable[float]) -> list[float | None]:
    """Replace NaN and ±inf by ``None`` (a gap in plotly): nothing non-finite reaches a plot.

    >>> finite([1.0, float("nan"), float("-inf")])
    [1.0, None, None]
    """
    return [v if v is not None and math.isfinite(v) else None for v in values]


def finite_grid(rows: Iterable[Iterable[float]]) -> list[list[float | None]]:
    """:func:`finite` applied to every row of a 2-D grid."""
    return [finite(row) for row in rows]
