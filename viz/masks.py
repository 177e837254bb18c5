"""Figures of the masks tab: the mask grids, the additive mask, the softmax, the NaN trap.

Built as plain dicts through :func:`viz.common.figure` (no plotly validation): the tab redraws on
every control change, and this keeps a redraw to a few milliseconds.
"""
from __future__ import annotations

import plotly.graph_objects as go

from viz.common import (ALLOWED_COLOR, MASKED_COLOR, NAN_COLOR, WEIGHT_SCALE, axis_ref, base_layout,
                        figure, finite_grid, subplot_row, tr)

CONVENTIONS = ("allow", "masked")   # True = may attend (PyTorch) | 1 = masked (many tutorials)
HOVER = "query %{y} → key %{x}: %{text}<extra></extra>"

TEXT = {
    "en": {
        "mask_allow": "Boolean mask (True = may attend)",
        "mask_masked": "Boolean mask (1 = masked)",
        "additive": "Additive mask (added to scores)",
        "weights": "Attention weights after softmax",
        "query": "query position i",
        "key": "key position j",
        "padding": "padding (keys)",
        "causal": "causal",
        "prefix": "prefix-LM",
        "window": "sliding window",
        "documents": "packed documents",
        "combined": "= AND of all",
        "naive": "Naive: masked_fill(−inf) + softmax",
        "safe": "Backend: fully masked rows → 0",
        "nan_rows": "{n} fully masked query row(s): NaN in the naive softmax",
        "no_nan_rows": "No query row is fully masked here (try left padding + causal)",
        "weight": "weight",
    },
    "zh-CN": {
        "mask_allow": "布尔掩码（True = 可以关注）",
        "mask_masked": "布尔掩码（1 = 被遮蔽）",
        "additive": "加性掩码（加到注意力分数上）",
        "weights": "softmax 之后的注意力权重",
        "query": "查询位置 i",
        "key": "键位置 j",
        "padding": "填充（键）",
        "causal": "因果",
        "prefix": "前缀 LM",
        "window": "滑动窗口",
        "documents": "打包文档",
        "combined": "= 全部取 AND",
        "naive": "朴素写法：masked_fill(−inf) + softmax",
        "safe": "后端：整行被遮蔽 → 0",
        "nan_rows": "{n} 个查询行被完全遮蔽：朴素 softmax 得到 NaN",
        "no_nan_rows": "这里没有被完全遮蔽的查询行（试试左填充 + 因果）",
        "weight": "权重",
    },
}


def short(label: str, width: int = 10) -> str:
    """A token label that fits under a heatmap column.

    >>> short("internationalization")
    'internati…'
    """
    return label if len(label) <= width else label[: width - 1] + "…"


def _token_axes(layout: dict, labels: list[str], lang: str, panels: int, *, key_title: bool = True) -> dict:
    """Token labels on both axes of every panel, queries top to bottom, square cells."""
    ticks = {"tickmode": "array", "tickvals": list(range(len(labels))),
             "ticktext": [short(x) for x in labels], "tickangle": -45, "showgrid": False, "zeroline": False}
    for i in range(panels):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(ticks, constrain="domain",
                                        title={"text": tr(TEXT, "key", lang) if key_title else None})
        layout[f"yaxis{suffix}"].update(ticks, autorange="reversed", scaleanchor=f"x{suffix}",
                                        title={"text": tr(TEXT, "query", lang) if i == 0 else None})
    return layout


def _bool_heatmap(mask: list[list[bool]], convention: str, panel: int, *, text: bool = True) -> dict:
    """A two-colour grid of a boolean mask, labelled in the chosen convention (T/F or 0/1)."""
    if convention == "allow":
        cells = [["T" if cell else "F" for cell in row] for row in mask]
    else:
        cells = [["0" if cell else "1" for cell in row] for row in mask]
    return {"type": "heatmap", "z": [[1 if cell else 0 for cell in row] for row in mask], "zmin": 0, "zmax": 1,
            "showscale": False, "xgap": 1, "ygap": 1, "colorscale": [[0, MASKED_COLOR], [1, ALLOWED_COLOR]],
            "text": cells, "texttemplate": "%{text}" if text else "", "hovertemplate": HOVER, **axis_ref(panel)}


def _weights_heatmap(weights: list[list[float]], panel: int, lang: str, *, text: bool) -> dict:
    return {"type": "heatmap", "z": finite_grid(weights), "zmin": 0, "zmax": 1, "colorscale": WEIGHT_SCALE,
            "xgap": 1, "ygap": 1, "text": [[f"{w:.2f}" if w == w else "NaN" for w in row] for row in weights],
            "texttemplate": "%{text}" if text else "", "hovertemplate": HOVER,
            "colorbar": {"title": {"text": tr(TEXT, "weight", lang)}, "len": 0.8, "thickness": 12},
            **axis_ref(panel)}


def mask_panels(labels: list[str], mask: list[list[bool]], weights: list[list[float]],
                convention: str = "allow", lang: str = "en") -> go.Figure:
    """Three panels for one sequence and head: boolean mask, additive mask, softmax weights."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention {convention!r} must be one of {CONVENTIONS}")
    additive = {"type": "heatmap", "z": [[1 if cell else 0 for cell in row] for row in mask], "zmin": 0,
                "zmax": 1, "showscale": False, "colorscale": [[0, MASKED_COLOR], [1, "#c7d2fe"]], "xgap": 1,
                "ygap": 1, "text": [["0" if cell else "−∞" for cell in row] for row in mask],
                "texttemplate": "%{text}", "hovertemplate": HOVER, **axis_ref(1)}
    data = [_bool_heatmap(mask, convention, 0), additive,
            _weights_heatmap(weights, 2, lang, text=len(labels) <= 12)]
    titles = [tr(TEXT, f"mask_{convention}", lang), tr(TEXT, "additive", lang), tr(TEXT, "weights", lang)]
    layout = _token_axes(subplot_row(titles, spacing=0.08), labels, lang, 3)
    return figure(data, layout | base_layout(height=max(380, 160 + 22 * len(labels))))


def composition_figure(labels: list[str], parts: dict[str, list[list[bool]]],
                       combined: list[list[bool]], convention: str = "allow",
                       lang: str = "en") -> go.Figure:
    """Each rule's mask side by side, then their AND: why padding and causal are combined."""
    names = [*parts, "combined"]
    grids = [*parts.values(), combined]
    data = [_bool_heatmap(grid, convention, i, text=len(labels) <= 10) for i, grid in enumerate(grids)]
    layout = _token_axes(subplot_row([tr(TEXT, n, lang) for n in names], spacing=0.04), labels, lang,
                         len(names), key_title=False)
    return figure(data, layout | base_layout(height=max(300, 120 + 14 * len(labels))))


def nan_trap_figure(labels: list[str], naive: list[list[float]], safe: list[list[float]],
                    empty_rows: list[bool], lang: str = "en") -> go.Figure:
    """Naive softmax (NaN cells in red) next to the backend's (zeros on fully masked rows)."""
    n_empty = sum(empty_rows)
    title = tr(TEXT, "nan_rows", lang).format(n=n_empty) if n_empty else tr(TEXT, "no_nan_rows", lang)
    is_nan = [[w != w for w in row] for row in naive]                      # NaN != NaN
    nan_cells = {"type": "heatmap", "z": [[1 if nan else None for nan in row] for row in is_nan], "zmin": 0,
                 "zmax": 1, "colorscale": [[0, NAN_COLOR], [1, NAN_COLOR]], "showscale": False, "xgap": 1,
                 "ygap": 1, "text": [["NaN" if nan else "" for nan in row] for row in is_nan],
                 "texttemplate": "%{text}", "hovertemplate": HOVER, **axis_ref(0)}
    naive_map = _weights_heatmap(naive, 0, lang, text=False) | {"showscale": False}
    data = [naive_map, nan_cells, _weights_heatmap(safe, 1, lang, text=False)]
    layout = _token_axes(subplot_row([tr(TEXT, "naive", lang), tr(TEXT, "safe", lang)], spacing=0.1),
                         labels, lang, 2)
    return figure(data, layout | base_layout(height=max(360, 150 + 20 * len(labels)), title=title))
