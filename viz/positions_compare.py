"""Figures of the Positions tab's last two views: RoPE's two layouts, and sinusoidal vs RoPE vs ALiBi.

Plain dicts through :func:`viz.common.plain_figure`, numbers from ``models.positions_explore`` as lists.
"""
from __future__ import annotations

import math

from locales import tr
from viz.common import PlainFigure, axis_ref, base_layout, colorbar_title, finite_grid, plain_figure, subplot_row
from viz.positions import DIVERGING, num, ramp

# --------------------------------------------------------------------------- conventions


def _arc(x0: float, x1: float, y: float, height: float, color: str, label: str) -> dict:
    """A half-ellipse from ``(x0, y)`` to ``(x1, y)`` bulging by ``height`` (up if positive)."""
    ts = [math.pi * j / 24 for j in range(25)]
    mid, half = (x0 + x1) / 2, (x1 - x0) / 2
    return {"type": "scatter", "x": [mid - half * math.cos(t) for t in ts],
            "y": [y + height * math.sin(t) for t in ts], "mode": "lines", "line": {"color": color, "width": 2},
            "hovertemplate": f"{label}<extra></extra>", "showlegend": False}


def pairing_figure(perm: list[int], pair_of_dim: dict[str, list[int]], lang: str = "en") -> PlainFigure:
    """Two rows of dimensions coloured by pair, arcs joining each pair, lines for the permutation."""
    D = len(perm)
    n = D // 2
    top, bottom = 2.0, 0.0
    size = max(8, min(28, 640 // D))
    data: list[dict] = []
    for j in range(D):                                      # interleaved dim perm[j] -> half dim j
        data.append({"type": "scatter", "x": [perm[j], j], "y": [top - 0.12, bottom + 0.12], "mode": "lines",
                     "line": {"color": ramp(pair_of_dim["half"][j], n), "width": 1}, "opacity": 0.6,
                     "hoverinfo": "skip", "showlegend": False})
    for i in range(n):
        label = tr(lang, "pos_fig_pair_n", i=i)
        data.append(_arc(2 * i, 2 * i + 1, top + 0.12, 0.35, ramp(i, n), label))
        data.append(_arc(i, i + n, bottom - 0.12, -0.5 - 0.5 * i / max(1, n - 1), ramp(i, n), label))
    for style, y in (("interleaved", top), ("half", bottom)):
        pairs = pair_of_dim[style]
        data.append({"type": "scatter", "x": list(range(D)), "y": [y] * D, "mode": "markers+text" if D <= 32 else "markers",
                     "marker": {"symbol": "square", "size": size, "color": [ramp(p, n) for p in pairs],
                                "line": {"color": "white", "width": 1}},
                     "text": [str(j) for j in range(D)],
                     "textfont": {"color": ["#111827" if p > 0.6 * (n - 1) else "white" for p in pairs], "size": 10},
                     "customdata": pairs, "hovertemplate": tr(lang, "pos_fig_dim_hover", dim="%{x}", pair="%{customdata}") + "<extra></extra>",
                     "showlegend": False})
    shown = perm if D <= 16 else perm[:8] + ["…"]
    layout = base_layout(height=360, title=tr(lang, "pos_fig_pairing_title", perm=shown)) | {
        "xaxis": {"title": {"text": tr(lang, "pos_fig_dim")}, "showgrid": False, "zeroline": False,
                  "range": [-0.8, D - 0.2], "dtick": 1 if D <= 32 else 4},
        "yaxis": {"tickmode": "array", "tickvals": [top, bottom],
                  "ticktext": [tr(lang, "pos_fig_interleaved"), tr(lang, "pos_fig_half")],
                  "range": [-1.25, top + 0.65], "showgrid": False, "zeroline": False}}
    layout["margin"]["l"] = 170                                   # room for the two row labels
    return plain_figure(data, layout)


def matrices_figure(rotations: dict[str, list[list[float]]], position: int, matrix_diff: float,
                    lang: str = "en") -> PlainFigure:
    """R_m in both layouts and the interleaved one permuted, which equals the half one."""
    names = ["interleaved", "half", "permuted"]
    D = len(rotations["half"])
    hover = tr(lang, "pos_fig_row") + " %{y}, " + tr(lang, "pos_fig_col") + " %{x}: %{z:.4f}<extra></extra>"
    data = [{"type": "heatmap", "z": finite_grid(rotations[name]), "zmin": -1, "zmax": 1, "colorscale": DIVERGING,
             "showscale": p == 2, "xgap": 1 if D <= 16 else 0, "ygap": 1 if D <= 16 else 0, "hovertemplate": hover,
             "colorbar": {"len": 0.8, "thickness": 12}, **axis_ref(p)} for p, name in enumerate(names)]
    layout = subplot_row([tr(lang, f"pos_fig_r_{name}") for name in names], spacing=0.06, square=True)
    for p in range(3):
        suffix = "" if p == 0 else str(p + 1)
        layout[f"xaxis{suffix}"].update(constrain="domain", showgrid=False, zeroline=False)
        layout[f"yaxis{suffix}"].update(autorange="reversed", showgrid=False, zeroline=False)
    title = tr(lang, "pos_fig_matrices_title", m=position, d=f"{matrix_diff:.2g}")
    return plain_figure(data, layout | base_layout(height=380, title=title))


def conventions_markdown(perm: list[int], inverse: list[int], max_diff: dict[str, float], scores: dict[str, float],
                         lang: str = "en") -> str:
    """The permutation, its inverse, and the three checks, with the two lines of code."""
    colon = tr(lang, "sep_colon")
    lines = [f"**{tr(lang, 'pos_fig_h_perm')}**{colon}" + tr(lang, "pos_fig_perm_line", perm=perm, inv=inverse),
             "", f"**{tr(lang, 'pos_fig_h_check')}**{colon}" + tr(lang, "pos_fig_check_x",
                 d=len(perm), f64=f"{max_diff['float64']:.2g}", f32=f"{max_diff['float32']:.2g}"),
             "", tr(lang, "pos_fig_check_w", meta=f"{scores['meta']:.12g}", hf=f"{scores['hf']:.12g}"),
             "", f"**{tr(lang, 'pos_fig_code')}**{colon}", "```python",
             "perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])   # " + tr(lang, "pos_fig_code_perm"),
             "apply_rope(x[..., perm], style=\"half\") == apply_rope(x, style=\"interleaved\")[..., perm]",
             "```"]
    return "\n".join(lines)


# --------------------------------------------------------------------------- compare


def sinusoidal_figure(pe: list[list[float]], lang: str = "en") -> PlainFigure:
    """The encoding as a heatmap, position down, dimension across."""
    T, d = len(pe), len(pe[0])
    data = [{"type": "heatmap", "z": finite_grid(pe), "x": list(range(d)), "y": list(range(T)), "zmin": -1, "zmax": 1,
             "colorscale": DIVERGING, "colorbar": {"len": 0.85, "thickness": 12},
             "hovertemplate": "p = %{y}, j = %{x}: %{z:.4f}<extra></extra>"}]
    layout = base_layout(height=max(300, min(520, 140 + 4 * T)), title=tr(lang, "pos_fig_sin_title")) | {
        "xaxis": {"title": {"text": tr(lang, "pos_fig_dim")}},
        "yaxis": {"title": {"text": tr(lang, "pos_fig_position_p")}, "autorange": "reversed"}}
    return plain_figure(data, layout)


def _grid(titles: list[str], cols: int, *, hspace: float = 0.05, vspace: float = 0.16) -> dict:
    """Axes for a grid of square panels, row by row; trace ``p`` uses :func:`axis_ref` ``(p)``."""
    rows = math.ceil(len(titles) / cols)
    width = (1 - hspace * (cols - 1)) / cols
    height = (1 - vspace * (rows - 1)) / rows
    layout: dict = {"annotations": []}
    for p, title in enumerate(titles):
        r, c = divmod(p, cols)
        left, top = c * (width + hspace), 1 - r * (height + vspace)
        suffix = "" if p == 0 else str(p + 1)
        layout[f"xaxis{suffix}"] = {"domain": [left, left + width], "anchor": f"y{suffix}", "constrain": "domain",
                                    "showgrid": False, "zeroline": False}
        layout[f"yaxis{suffix}"] = {"domain": [top - height, top], "anchor": f"x{suffix}", "scaleanchor": f"x{suffix}",
                                    "autorange": "reversed", "showgrid": False, "zeroline": False}
        layout["annotations"].append({"text": title, "x": left + width / 2, "y": top, "xref": "paper", "yref": "paper",
                                      "xanchor": "center", "yanchor": "bottom", "yshift": 4, "showarrow": False,
                                      "font": {"size": 12}})
    return layout


def slope_text(slope: float) -> str:
    """``1/16`` for a power of 2, else 4 significant digits.

    >>> slope_text(0.0625), slope_text(2 ** -0.5)
    ('1/16', '0.7071')
    """
    inverse = 1 / slope
    return f"1/{round(inverse)}" if abs(inverse - round(inverse)) < 1e-9 and round(inverse) & (round(inverse) - 1) == 0 \
        else num(slope)


def alibi_figure(bias: list[list[list[float]]], heads: list[int], slopes: list[float], lang: str = "en") -> PlainFigure:
    """One heatmap per drawn head (at most 8, two rows of four), its slope in the title."""
    floor = min((v for grid in bias for row in grid for v in row if math.isfinite(v)), default=-1.0) or -1.0
    titles = [tr(lang, "pos_fig_head", h=h + 1, s=slope_text(slopes[h])) for h in heads]
    cols = min(4, len(heads))
    hover = tr(lang, "pos_fig_query") + " %{y}, " + tr(lang, "pos_fig_key") + " %{x}: %{z:.4f}<extra></extra>"
    scale = [[0.0, "#08306b"], [0.5, "#6baed6"], [0.85, "#deebf7"], [1.0, "#ffffff"]]
    data = [{"type": "heatmap", "z": finite_grid(grid), "zmin": floor, "zmax": 0, "colorscale": scale,
             "showscale": p == 0, "hovertemplate": hover,
             "colorbar": {"title": colorbar_title(tr(lang, "pos_fig_bias")), "len": 0.8, "thickness": 12, "x": 1.02},
             **axis_ref(p)} for p, grid in enumerate(bias)]
    rows = math.ceil(len(heads) / cols)
    layout = _grid(titles, cols)
    return plain_figure(data, layout | base_layout(height=90 + 230 * rows, title=tr(lang, "pos_fig_alibi_title")))


def same_token_figure(same: dict[str, list[list[float]]], spread: dict[str, float], lang: str = "en") -> PlainFigure:
    """The three schemes' logits for one token repeated: only sinusoidal depends on more than m − n."""
    names = ["sinusoidal", "rope", "alibi"]
    hover = "m = %{y}, n = %{x}: %{z:.4f}<extra></extra>"
    data = []
    for p, name in enumerate(names):
        values = [v for row in same[name] for v in row if math.isfinite(v)]
        lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
        data.append({"type": "heatmap", "z": finite_grid(same[name]), "zmin": lo, "zmax": hi if hi > lo else lo + 1,
                     "colorscale": [[0, "#f7fbff"], [0.5, "#6baed6"], [1, "#08306b"]], "showscale": False,
                     "hovertemplate": hover, **axis_ref(p)})
    layout = subplot_row([tr(lang, f"pos_fig_s_{n}", s=f"{spread[n]:.2g}") for n in names], spacing=0.05,
                         square=True)
    for p in range(3):
        suffix = "" if p == 0 else str(p + 1)
        layout[f"xaxis{suffix}"].update(constrain="domain", showgrid=False, zeroline=False,
                                        title={"text": tr(lang, "pos_fig_key_pos")})
        layout[f"yaxis{suffix}"].update(autorange="reversed", showgrid=False, zeroline=False,
                                        title={"text": tr(lang, "pos_fig_query_pos") if p == 0 else ""})
    for note in layout["annotations"]:
        note["font"] = {"size": 12}
    layout = layout | base_layout(height=400, title=tr(lang, "pos_fig_same_title"))
    layout["margin"]["t"] = 110
    return plain_figure(data, layout)


def slopes_markdown(slopes: list[float], power_of_two: int, lang: str = "en") -> str:
    """Every head's slope, and which rule produced them (``power_of_two``: how many heads' slopes come first)."""
    h, n = len(slopes), power_of_two
    rule = tr(lang, "pos_fig_rule_pow2", h=h) if n == h else tr(lang, "pos_fig_rule_other", n=n, n2=2 * n)
    listed = ", ".join(f"{j + 1}: {slope_text(s)}" for j, s in enumerate(slopes))
    return tr(lang, "pos_fig_slopes", h=h, rule=rule, list=listed)

