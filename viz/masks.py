"""Figures of the masks tab: the mask grids, the additive mask, the softmax, the NaN trap."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import (ALLOWED_COLOR, MASKED_COLOR, NAN_COLOR, WEIGHT_SCALE, finite_grid, style, tr)

CONVENTIONS = ("allow", "masked")   # True = may attend (PyTorch) | 1 = masked (many tutorials)

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
        "hover_cell": "query %{y}, key %{x}",
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
        "hover_cell": "查询 %{y}，键 %{x}",
        "weight": "权重",
    },
}


def short(label: str, width: int = 10) -> str:
    """A token label that fits under a heatmap column.

    >>> short("internationalization")
    'internati…'
    """
    return label if len(label) <= width else label[: width - 1] + "…"


def _axes(fig: go.Figure, labels: list[str], lang: str, *, row: int = 1, cols: int = 1) -> None:
    ticks = dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=[short(x) for x in labels],
                 tickangle=-45)
    for col in range(1, cols + 1):
        fig.update_xaxes(title_text=tr(TEXT, "key", lang), side="bottom", constrain="domain",
                         row=row, col=col, **ticks)
        fig.update_yaxes(title_text=tr(TEXT, "query", lang) if col == 1 else None, autorange="reversed",
                         scaleanchor=f"x{'' if (row - 1) * cols + col == 1 else (row - 1) * cols + col}",
                         row=row, col=col, **ticks)


def _bool_heatmap(mask: list[list[bool]], convention: str, *, text: bool = True) -> go.Heatmap:
    """A two-colour grid of a boolean mask, shown in the chosen convention (1/0 or True/False)."""
    allowed = [[1 if cell else 0 for cell in row] for row in mask]
    if convention == "allow":
        cells = [["T" if cell else "F" for cell in row] for row in mask]
    else:
        cells = [["0" if cell else "1" for cell in row] for row in mask]
    return go.Heatmap(
        z=allowed, zmin=0, zmax=1, showscale=False, xgap=1, ygap=1,
        colorscale=[[0, MASKED_COLOR], [1, ALLOWED_COLOR]],
        text=cells if text else None, texttemplate="%{text}" if text else None,
        hovertemplate="query %{y} → key %{x}: %{text}<extra></extra>",
    )


def mask_panels(labels: list[str], mask: list[list[bool]], weights: list[list[float]],
                convention: str = "allow", lang: str = "en") -> go.Figure:
    """Three panels for one sequence and head: boolean mask, additive mask, softmax weights."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention {convention!r} must be one of {CONVENTIONS}")
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08, subplot_titles=(
        tr(TEXT, f"mask_{convention}", lang), tr(TEXT, "additive", lang), tr(TEXT, "weights", lang)))
    fig.add_trace(_bool_heatmap(mask, convention), row=1, col=1)
    additive = [["0" if cell else "−∞" for cell in row] for row in mask]
    fig.add_trace(go.Heatmap(
        z=[[1 if cell else 0 for cell in row] for row in mask], zmin=0, zmax=1, showscale=False,
        colorscale=[[0, MASKED_COLOR], [1, "#c7d2fe"]], xgap=1, ygap=1, text=additive,
        texttemplate="%{text}", hovertemplate="query %{y} → key %{x}: %{text}<extra></extra>"),
        row=1, col=2)
    fig.add_trace(go.Heatmap(
        z=finite_grid(weights), zmin=0, zmax=1, colorscale=WEIGHT_SCALE, xgap=1, ygap=1,
        colorbar=dict(title=tr(TEXT, "weight", lang), len=0.8, thickness=12),
        text=[[f"{w:.2f}" for w in row] for row in weights],
        texttemplate="%{text}" if len(labels) <= 12 else None,
        hovertemplate="query %{y} → key %{x}: %{z:.4f}<extra></extra>"), row=1, col=3)
    _axes(fig, labels, lang, cols=3)
    return style(fig, height=max(380, 160 + 22 * len(labels)))


def composition_figure(labels: list[str], parts: dict[str, list[list[bool]]],
                       combined: list[list[bool]], convention: str = "allow",
                       lang: str = "en") -> go.Figure:
    """Each rule's mask side by side, then their AND: why padding and causal are combined."""
    names = list(parts) + ["combined"]
    grids = list(parts.values()) + [combined]
    fig = make_subplots(rows=1, cols=len(names), horizontal_spacing=0.04,
                        subplot_titles=[tr(TEXT, n, lang) for n in names])
    for col, grid in enumerate(grids, start=1):
        fig.add_trace(_bool_heatmap(grid, convention, text=len(labels) <= 10), row=1, col=col)
    _axes(fig, labels, lang, cols=len(names))
    fig.update_xaxes(title_text=None, tickangle=-90)
    return style(fig, height=max(300, 120 + 14 * len(labels)))


def nan_trap_figure(labels: list[str], naive: list[list[float]], safe: list[list[float]],
                    empty_rows: list[bool], lang: str = "en") -> go.Figure:
    """Naive softmax (NaN cells in red) next to the backend's (zeros on fully masked rows)."""
    n_empty = sum(empty_rows)
    title = tr(TEXT, "nan_rows", lang).format(n=n_empty) if n_empty else tr(TEXT, "no_nan_rows", lang)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=(tr(TEXT, "naive", lang), tr(TEXT, "safe", lang)))
    is_nan = [[w != w for w in row] for row in naive]                      # NaN != NaN
    fig.add_trace(go.Heatmap(z=finite_grid(naive), zmin=0, zmax=1, colorscale=WEIGHT_SCALE, xgap=1,
                             ygap=1, showscale=False,
                             hovertemplate="query %{y} → key %{x}: %{z:.4f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Heatmap(z=[[1 if nan else None for nan in row] for row in is_nan], zmin=0, zmax=1,
                             colorscale=[[0, NAN_COLOR], [1, NAN_COLOR]], showscale=False, xgap=1, ygap=1,
                             text=[["NaN" if nan else "" for nan in row] for row in is_nan],
                             texttemplate="%{text}", hovertemplate="query %{y} → key %{x}: NaN<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Heatmap(z=finite_grid(safe), zmin=0, zmax=1, colorscale=WEIGHT_SCALE, xgap=1, ygap=1,
                             colorbar=dict(title=tr(TEXT, "weight", lang), len=0.8, thickness=12),
                             hovertemplate="query %{y} → key %{x}: %{z:.4f}<extra></extra>"), row=1, col=2)
    _axes(fig, labels, lang, cols=2)
    return style(fig, height=max(360, 150 + 20 * len(labels)), title=title)
