"""Figures of the Tensors tab's layout view: the storage each step reads (one strip per step), one
step's elements where they sit in the view, and the table of what PyTorch reports.

Plain dicts (:func:`viz.common.plain_figure`): the view redraws on every edit, within 50 ms.
"""
from __future__ import annotations

from locales import tr
from viz.common import PLOT_WIDTH, base_layout, colorbar_title, plain_figure

UNREAD = "#e5e7eb"                 # a storage cell this view does not read
ERROR = "#dc2626"
WRITE = "#dc2626"
# read order, first → last: one scale for a view of the original's storage, one for a new storage (a copy)
SHARED_SCALE = [[0.0, "#c7d2fe"], [0.5, "#6366f1"], [1.0, "#1e1b4b"]]
COPY_SCALE = [[0.0, "#fed7aa"], [0.5, "#f97316"], [1.0, "#7c2d12"]]
VALUE_SCALE = [[0.0, "#ecfeff"], [0.5, "#22d3ee"], [1.0, "#155e75"]]
TEXT_CELLS = 64                    # numbers are written in the cells up to this many cells per row


def _label(step, lang: str, width: int = 26) -> str:
    op = step.op if len(step.op) <= width else step.op[: width - 1] + "…"
    return f"{step.index} · {op or tr(lang, 'tensors_fig_original')}"


def _orders(step) -> dict[int, list[int]]:
    """Storage position -> the read numbers (0-based) at which the view reads it."""
    orders: dict[int, list[int]] = {}
    for k, p in enumerate(step.reads):
        orders.setdefault(p, []).append(k)
    return orders


def memory_figure(steps: list, lang: str = "en") -> dict:
    """One strip per step: the storage it reads in memory order, each cell coloured by when the view
    reads it (unread cells grey); a red outline round each cell where a write through that step's view lands
    in the original (an outline leaves the cell's read order readable at any width)."""
    width = max([len(s.storage) for s in steps if s.ok] + [1])
    rows = [_label(s, lang) for s in steps]
    z = {"shared": [], "copy": []}                   # a row in its kind's heatmap, gaps in the other's
    text = {"shared": [], "copy": []}                # the same for the cell labels (both are drawn)
    hover = []
    written_x, written_y = [], []
    annotations = []
    for r, step in enumerate(steps):
        orders = _orders(step) if step.ok else {}
        line = [orders[p][0] if p in orders else None for p in range(width)]
        kind, other = ("shared", "copy") if step.shares else ("copy", "shared")
        z[kind].append(line)
        z[other].append([None] * width)
        text[kind].append(["," .join(map(str, orders[p][:3])) + ("…" if len(orders[p]) > 3 else "")
                           if p in orders else "" for p in range(width)] if width <= TEXT_CELLS else [""] * width)
        text[other].append([""] * width)
        hover.append([[f"{step.storage[p]:g}" if p < len(step.storage) else "—",
                       ", ".join(map(str, orders[p][:8])) + ("…" if len(orders[p]) > 8 else "") if p in orders else "—"]
                      for p in range(width)])
        if step.ok and step.shares:
            written_x += step.written
            written_y += [r] * len(step.written)
        if not step.ok:
            annotations.append({"x": (width - 1) / 2, "y": rows[r], "text": tr(lang, "tensors_fig_refused"),
                                "showarrow": False, "font": {"color": ERROR}})
    top = max([len(s.reads) for s in steps if s.ok] + [1]) - 1
    grey = {"type": "heatmap", "x": list(range(width)), "y": rows, "z": [[0] * width for _ in rows],
            "colorscale": [[0, UNREAD], [1, UNREAD]], "showscale": False, "xgap": 1, "ygap": 3, "hoverinfo": "skip"}
    data = [grey]
    for kind, scale, x_bar in (("shared", SHARED_SCALE, 1.01), ("copy", COPY_SCALE, 1.09)):
        if not any(v is not None for line in z[kind] for v in line):
            continue
        data.append({"type": "heatmap", "x": list(range(width)), "y": rows, "z": z[kind], "text": text[kind],
                     "texttemplate": "%{text}", "textfont": {"size": 10 if width <= 32 else 8}, "customdata": hover,
                     "hovertemplate": tr(lang, "tensors_fig_cell_hover", position="%{x}", value="%{customdata[0]}",
                                         reads="%{customdata[1]}") + "<extra></extra>", "colorscale": scale,
                     "zmin": 0,
                     "zmax": max(top, 1), "xgap": 1, "ygap": 3, "hoverongaps": False,
                     "colorbar": {"title": colorbar_title(tr(lang, f"tensors_fig_bar_{kind}")),
                                  "x": x_bar, "len": 0.9, "thickness": 10}})
    outlines = [{"type": "rect", "xref": "x", "yref": "y", "x0": x - 0.5, "x1": x + 0.5, "y0": r - 0.42,
                 "y1": r + 0.42, "line": {"color": WRITE, "width": 2}} for x, r in zip(written_x, written_y)]
    if written_x:                                       # the outlines' legend entry
        data.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                     "name": tr(lang, "tensors_fig_written"), "showlegend": True,
                     "marker": {"symbol": "square-open", "size": 12, "color": WRITE,
                                "line": {"width": 2, "color": WRITE}},
                     "hoverinfo": "skip"})
    layout = base_layout(height=140 + 36 * len(rows), title=tr(lang, "tensors_fig_memory_title")) | {
        "xaxis": {"title": {"text": tr(lang, "tensors_fig_position")}, "showgrid": False, "zeroline": False,
                  "range": [-0.5, width - 0.5], "dtick": 1 if width <= 32 else None},
        "yaxis": {"autorange": "reversed", "showgrid": False, "type": "category"},
        "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        "annotations": annotations, "shapes": outlines, "margin": {"l": 190, "r": 90, "t": 80, "b": 60}}
    return plain_figure(data, layout)


def _canvas(shape: tuple[int, ...]) -> tuple[int, int, list[tuple[int, int]], list[tuple[int, ...]]]:
    """Where each element of a ≤4-D tensor goes on a 2-D canvas: the last two dims as a matrix, the
    dim before them as blocks side by side, the first of four as rows of blocks.

    >>> rows, cols, cells, index = _canvas((2, 2, 3))
    >>> rows, cols, cells[3], index[3]
    (2, 7, (1, 0), (0, 1, 0))
    """
    a, b, c, d = (1,) * (4 - len(shape)) + tuple(shape)
    cells, index = [], []
    for i in range(a):
        for j in range(b):
            for k in range(c):
                for l in range(d):
                    cells.append((i * (c + 1) + k, j * (d + 1) + l))
                    index.append((i, j, k, l)[4 - len(shape):])
    return a * (c + 1) - 1, b * (d + 1) - 1, cells, index


def _written(aliases: int, lang: str = "en") -> str:
    """The legend of the written marks: the element written, and how many others of the view read its memory.

    >>> _written(0), _written(2)
    ('the element written', 'the element written, and 2 more in this view at the same memory')
    """
    return tr(lang, "tensors_fig_write_here", n=aliases) if aliases else tr(lang, "tensors_fig_write_one")


def view_figure(step, lang: str = "en") -> dict:
    """The elements of one step's tensor laid out by index (the last two dims as a matrix, leading dims
    as blocks), each showing its value: the original's position in memory it came from."""
    title = tr(lang, "tensors_fig_view_title", step=step.index, op=step.op or tr(lang, "tensors_fig_original"),
               shape=list(step.shape), stride=list(step.stride), offset=step.offset)
    if not step.values:
        return plain_figure([], base_layout(height=200, title=title) | {
            "xaxis": {"visible": False}, "yaxis": {"visible": False},
            "annotations": [{"text": tr(lang, "tensors_fig_empty"), "x": 0.5, "y": 0.5, "xref": "paper",
                             "yref": "paper", "showarrow": False}]})
    rows, cols, cells, index = _canvas(step.shape)
    z = [[None] * cols for _ in range(rows)]
    text = [[""] * cols for _ in range(rows)]
    hover = [[""] * cols for _ in range(rows)]
    marked_x, marked_y = [], []
    first = step.reads[0] if step.reads else None
    for (r, c), idx, value, pos in zip(cells, index, step.values, step.reads):
        z[r][c] = value
        text[r][c] = f"{value:g}"
        hover[r][c] = tr(lang, "tensors_fig_view_hover", index=list(idx), value=f"{value:g}", position=pos)
        if pos == first:
            marked_x.append(c)
            marked_y.append(r)
    data = [{"type": "heatmap", "z": z, "text": text, "texttemplate": "%{text}" if cols <= TEXT_CELLS else "",
             "customdata": hover,
             "hovertemplate": "%{customdata}<extra></extra>", "colorscale": VALUE_SCALE, "showscale": False,
             "xgap": 2, "ygap": 2, "hoverongaps": False, "zmin": 0, "zmax": max(step.values + [1.0])}]
    height = min(max(150 + 44 * rows, 260), 640)
    cell = min((height - 150) / rows, PLOT_WIDTH / cols)             # pixels per cell, roughly
    if marked_x:
        data.append({"type": "scatter", "mode": "markers", "x": marked_x, "y": marked_y, "hoverinfo": "skip",
                     "name": _written(len(marked_x) - 1, lang), "showlegend": True,
                     "marker": {"symbol": "square-open", "size": max(4, int(cell * 0.8)),
                                "line": {"width": 2 if cell < 16 else 3, "color": WRITE}}})
    layout = base_layout(height=height, title=title) | {
        "xaxis": {"visible": False, "constrain": "domain"},
        "yaxis": {"visible": False, "autorange": "reversed", "scaleanchor": "x"},
        "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        "annotations": _block_labels(step.shape)}
    return plain_figure(data, layout)


def _block_labels(shape: tuple[int, ...]) -> list[dict]:
    """``[i, j]`` above each block of a 3-D or 4-D view (at most 16 blocks)."""
    if len(shape) < 3:
        return []
    a, b, c, d = (1,) * (4 - len(shape)) + tuple(shape)
    if a * b > 16:
        return []
    labels = []
    for i in range(a):
        for j in range(b):
            name = f"[{j}]" if len(shape) == 3 else f"[{i}, {j}]"
            labels.append({"x": j * (d + 1) + (d - 1) / 2, "y": i * (c + 1) - 0.5, "yshift": 10, "text": name,
                           "showarrow": False, "font": {"size": 11, "color": "#6b7280"}})
    return labels


def _yes(flag: bool, lang: str) -> str:
    return tr(lang, "tensors_yes" if flag else "tensors_no")


def steps_markdown(steps: list, lang: str = "en") -> str:
    """What PyTorch reports after each step; a refused step with PyTorch's message and why."""
    head = "| # | {op} | {shape} | {stride} | {offset} | {contig} | {memory} | {write} |\n|---:|---|---|---|---:|---|---|---|\n"
    out = [head.format(**{k: tr(lang, f"tensors_col_{k}") for k in
                          ("op", "shape", "stride", "offset", "contig", "memory", "write")})]
    for s in steps:
        op = f"`{s.op}`" if s.op else tr(lang, "tensors_fig_original")
        if not s.ok:
            refused = tr(lang, "tensors_refused_says", error=s.error) if s.error else tr(lang, "tensors_refused")
            why = tr(lang, s.why, **s.why_params)
            out.append(f"| {s.index} | {op} | ✗ | <span class=\"refused\">{refused} — **{why}**"
                       "</span> | | | | |\n")                      # a cell that wraps (app.py's CSS)
            continue
        if s.shares:
            memory = tr(lang, "tensors_same_storage")
        elif s.storage_step == s.index:
            memory = tr(lang, "tensors_new_storage", n=len(s.storage))
        else:
            memory = tr(lang, "tensors_copy_storage", step=s.storage_step)
        if not s.values:
            write = "—"
        elif s.written:
            write = tr(lang, "tensors_write_shows", position=s.written[0], n=s.marked)
        else:
            write = tr(lang, "tensors_write_hidden")
        out.append(f"| {s.index} | {op} | {list(s.shape)} | {list(s.stride)} | {s.offset} | {_yes(s.contiguous, lang)} | "
                   f"{memory} | {write} |\n")
    return "".join(out)
