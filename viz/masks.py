"""Figures of the masks tab: the mask grids, the additive mask, the softmax, the NaN trap.

Built as plain dicts through :func:`viz.common.figure` (no plotly validation): the tab redraws on
every control change, and this keeps a redraw to a few milliseconds.
"""
from __future__ import annotations

from locales import tr
from viz.common import (ALLOWED_COLOR, MASKED_COLOR, NAN_COLOR, PLOT_WIDTH, WEIGHT_SCALE, PlainFigure, axis_ref,
                        base_layout, colorbar_title, finite_grid, plain_figure, spaced, subplot_row, text_px)

CONVENTIONS = ("allow", "masked")   # True = may attend (PyTorch) | 1 = masked (many tutorials)
HOVER = "query %{y} → key %{x}: %{text}<extra></extra>"


def short(label: str, width: int = 10) -> str:
    """A token label that fits under a heatmap column.

    >>> short("internationalization")
    'internati…'
    """
    return label if len(label) <= width else label[: width - 1] + "…"


ROW_TICK_LABELS = 36      # token labels across a row of panels, ~20 px apart at a 1280 px window
TICK_STANDOFF = 8         # px between an axis and its labels (clear of the first row's and column's numbers)
TICK_PAD = 8              # px Plotly adds between the standoff and a rotated label (measured: 5)
AXIS_TITLE_STANDOFF = 10  # px between the labels and an axis title
AXIS_TITLE_PX = 36        # the standoff, the title's line (14 px) and room to spare
COLORBAR_PX = 105         # the weights' colorbar, its ticks and its title, right of the last panel


def token_ticks(labels: list[str], most: int) -> dict:
    """Tick labels for a token axis: every token, or every n-th when there are more than ``most``
    (a cell's hover still names its token).

    >>> token_ticks([f"w{i}" for i in range(30)], most=12)["tickvals"]
    [0, 3, 6, 9, 12, 15, 18, 21, 24, 27]
    """
    shown = spaced(len(labels), most)
    return {"tickmode": "array", "tickvals": shown, "ticktext": [short(labels[i]) for i in shown]}


def _token_axes(layout: dict, labels: list[str], lang: str, panels: int, *, key_title: bool = True) -> dict:
    """Token labels on both axes of every panel (:data:`ROW_TICK_LABELS` shared by the row), queries top
    to bottom, square cells. Drawn without Plotly's automargin: :func:`_token_margin` makes room."""
    # A label at 45° reaches past its tick: the standoff keeps it off the first row's and column's numbers.
    ticks = {**token_ticks(labels, ROW_TICK_LABELS // panels), "tickangle": -45, "ticklabelstandoff": TICK_STANDOFF,
             "showgrid": False, "zeroline": False, "automargin": False}
    for i in range(panels):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(ticks, constrain="domain", title={
            "text": tr(lang, "masks_fig_key") if key_title else None, "standoff": AXIS_TITLE_STANDOFF})
        layout[f"yaxis{suffix}"].update(ticks, autorange="reversed", scaleanchor=f"x{suffix}", title={
            "text": tr(lang, "masks_fig_query") if i == 0 else None, "standoff": AXIS_TITLE_STANDOFF})
    return layout


def _token_margin(layout: dict, *, key_title: bool = True, colorbar: bool = False) -> dict:
    """Margins that hold the longest token label at 45° (its width and height, projected) and the axis
    titles past it, left and below; and the colorbar on the right. Plotly would measure every label
    before each draw to find them (automargin), on every slider move.

    >>> _token_margin({"xaxis": {"ticktext": ["the", "cat"]}}), _token_margin({"xaxis": {"ticktext": ["internati…"]}})
    ({'l': 76, 'b': 76, 'r': 20}, {'l': 117, 'b': 117, 'r': 20})
    """
    reach = _label_reach(layout)
    return {"l": round(reach + AXIS_TITLE_PX), "b": round(reach + (AXIS_TITLE_PX if key_title else 0)),
            "r": COLORBAR_PX if colorbar else 20}


def _label_reach(layout: dict) -> float:
    """How far the longest token label at 45° reaches from its axis, in px (its width and height, projected)."""
    longest = max(map(text_px, layout["xaxis"]["ticktext"]), default=0)
    return TICK_STANDOFF + TICK_PAD + 0.71 * (longest + 12)


def _fit_row_labels(layout: dict, panels: int, spacing: float) -> dict:
    """Row labels on every panel where they fit in the gap left of it; where they would reach into the panel
    on the left (long tokens: "TRANSFORM…" over the causal mask's cells), on the first panel only (the
    panels' rows line up). A panel is square, so one shorter than its domain is wide leaves more gap
    (its domain's spare width, centred).

    >>> def two_panels(height):                   # 800 px wide: each domain 384 px, the gap 32 px
    ...     layout = {"height": height, "margin": {"l": 80, "r": 20, "t": 60, "b": 80},
    ...               "xaxis": {"ticktext": ["the"]}, "yaxis2": {}}
    ...     return _fit_row_labels(layout, 2, 0.04)["yaxis2"]
    >>> two_panels(300), two_panels(600)           # panels 160 px (224 px to spare) or 384 px wide
    ({}, {'showticklabels': False})
    """
    m = layout["margin"]
    width, height = PLOT_WIDTH - m["l"] - m["r"], layout["height"] - m["t"] - m["b"]
    domain = width * (1 - spacing * (panels - 1)) / panels
    gap = spacing * width + max(0.0, domain - height)
    if _label_reach(layout) > gap:
        for i in range(2, panels + 1):
            layout[f"yaxis{i}"]["showticklabels"] = False
    return layout


def _height(n_tokens: int, panels: int, per_token: int, margin: int, floor: int, bottom: int = 50) -> int:
    """A figure's height: ``per_token`` px a row, but square panels side by side are each only
    ~PLOT_WIDTH / panels wide, so more height than that is empty space above and below the grids
    (64 tokens: 1,100 px tall for grids ~300 px high). ``margin``: the px besides the grids with a
    bottom margin of 50; ``bottom``: the bottom margin the labels take (:func:`_token_margin`).

    >>> _height(4, 3, 22, 160, 380), _height(64, 3, 22, 160, 380), _height(64, 3, 22, 160, 380, bottom=90)
    (380, 460, 500)
    """
    margin += bottom - 50
    return max(floor + bottom - 50, min(margin + per_token * n_tokens, margin + PLOT_WIDTH // panels))


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
            "colorbar": {"title": colorbar_title(tr(lang, "masks_fig_weight")), "len": 0.8, "thickness": 12},
            **axis_ref(panel)}


def mask_panels(labels: list[str], mask: list[list[bool]], weights: list[list[float]],
                convention: str = "allow", lang: str = "en") -> PlainFigure:
    """Three panels for one sequence and head: boolean mask, additive mask, softmax weights."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention {convention!r} must be one of {CONVENTIONS}")
    additive = {"type": "heatmap", "z": [[1 if cell else 0 for cell in row] for row in mask], "zmin": 0,
                "zmax": 1, "showscale": False, "colorscale": [[0, MASKED_COLOR], [1, "#c7d2fe"]], "xgap": 1,
                "ygap": 1, "text": [["0" if cell else "−∞" for cell in row] for row in mask],
                "texttemplate": "%{text}", "hovertemplate": HOVER, **axis_ref(1)}
    data = [_bool_heatmap(mask, convention, 0), additive,
            _weights_heatmap(weights, 2, lang, text=len(labels) <= 12)]
    titles = [tr(lang, f"masks_fig_mask_{convention}"), tr(lang, "masks_fig_additive"),
              tr(lang, "masks_fig_weights")]
    layout = _token_axes(subplot_row(titles, spacing=0.08), labels, lang, 3)
    margin = _token_margin(layout, colorbar=True)
    layout |= base_layout(height=_height(len(labels), 3, 22, 160, 380, margin["b"]), margin=margin)
    return plain_figure(data, _fit_row_labels(layout, 3, 0.08))


def composition_figure(labels: list[str], parts: dict[str, list[list[bool]]],
                       combined: list[list[bool]], convention: str = "allow",
                       lang: str = "en") -> PlainFigure:
    """Each rule's mask side by side, then their AND: why padding and causal are combined. With 1 = masked
    the same combination reads as an OR (De Morgan): masked where any rule masks."""
    names = [*parts, "combined" if convention == "allow" else "combined_masked"]
    grids = [*parts.values(), combined]
    data = [_bool_heatmap(grid, convention, i, text=len(labels) <= 10) for i, grid in enumerate(grids)]
    layout = _token_axes(subplot_row([tr(lang, f"masks_fig_{n}") for n in names], spacing=0.04), labels, lang,
                         len(names), key_title=False)
    margin = _token_margin(layout, key_title=False)
    layout |= base_layout(height=_height(len(labels), len(names), 14, 120, 300, margin["b"]), margin=margin)
    return plain_figure(data, _fit_row_labels(layout, len(names), 0.04))


def nan_trap_figure(labels: list[str], naive: list[list[float]], safe: list[list[float]],
                    empty_rows: list[bool], lang: str = "en") -> PlainFigure:
    """Naive softmax (NaN cells in red) next to the backend's (zeros on fully masked rows)."""
    n_empty = sum(empty_rows)
    title = tr(lang, "masks_fig_nan_rows", n=n_empty) if n_empty else tr(lang, "masks_fig_no_nan_rows")
    is_nan = [[w != w for w in row] for row in naive]                      # NaN != NaN
    nan_cells = {"type": "heatmap", "z": [[1 if nan else None for nan in row] for row in is_nan], "zmin": 0,
                 "zmax": 1, "colorscale": [[0, NAN_COLOR], [1, NAN_COLOR]], "showscale": False, "xgap": 1,
                 "ygap": 1, "text": [["NaN" if nan else "" for nan in row] for row in is_nan],
                 "texttemplate": "%{text}", "hovertemplate": HOVER, **axis_ref(0)}
    naive_map = _weights_heatmap(naive, 0, lang, text=False) | {"showscale": False}
    data = [naive_map, nan_cells, _weights_heatmap(safe, 1, lang, text=False)]
    layout = _token_axes(subplot_row([tr(lang, "masks_fig_naive"), tr(lang, "masks_fig_safe")], spacing=0.1),
                         labels, lang, 2)
    margin = _token_margin(layout, colorbar=True)
    layout |= base_layout(height=_height(len(labels), 2, 20, 150, 360, margin["b"]), title=title, margin=margin)
    return plain_figure(data, _fit_row_labels(layout, 2, 0.1))
