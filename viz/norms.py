"""Figures of the normalization tab: gradients per layer, the depth sweep, training curves, norm axes.

Built as plain dicts through :func:`viz.common.figure`; every value passes :func:`viz.common.finite`.
Takes plain lists and numbers (the component converts the backend's results).
"""
from __future__ import annotations

import math

import plotly.graph_objects as go

from viz.common import axis_ref, base_layout, figure, finite, finite_grid, subplot_row, tr, waiting

COLORS = {"post": "#dc2626", "pre": "#2563eb", "sandwich": "#16a34a", "deepnorm": "#9333ea"}
GROUP_PANELS = ("ffn_out", "ffn_in", "stream", "attn_qkv", "attn_out", "total")   # 2 × 3 grid
AXES_PANELS = ("input", "layernorm", "rmsnorm", "batchnorm")
HIGHLIGHT = {"layernorm": "#f59e0b", "rmsnorm": "#f59e0b", "batchnorm": "#10b981"}
DIVERGING = [[0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"]]

TEXT = {
    "en": {
        "wait_sweep": "Press “Sweep the depth”: the top layer's gradient for L = 1 … L streams in here",
        "wait_train": "Press “Train the four models”: loss and gradient norm stream in here, step by step",
        "post": "Post-LN", "pre": "Pre-LN", "sandwich": "Sandwich-LN", "deepnorm": "DeepNorm",
        "ffn_out": "FFN out W₂", "ffn_in": "FFN in W₁", "stream": "residual stream RMS (after the block)",
        "attn_qkv": "attention W_Q, W_K, W_V", "attn_out": "attention output W_O", "total": "whole block",
        "layer": "layer (1 = bottom)", "grad": "‖∇W‖_F",
        "grads_title": "Gradient norms at initialisation, one backward pass ({norm}, {layers} layers, d = {d})",
        "sweep_title": "Top layer's FFN-out gradient as depth grows",
        "depth": "layers L", "top_grad": "‖∇W₂‖ of the top layer",
        "ref_sqrt": "∝ 1/√L (Pre-LN, Theorem 1)", "ref_flat": "constant (Post-LN, Theorem 1)",
        "loss": "training loss (cross-entropy, nats)", "gnorm": "global gradient norm", "step": "step",
        "warmup": "with warm-up", "no_warmup": "no warm-up",
        "train_title": "Step {step} of {steps} · learning rate {lr:g}, warm-up {warmup} steps",
        "diverged": "{what} at step {step}",
        "input": "input x<br>rows: item·token · columns: features",
        "layernorm": "LayerNorm<br>per token, over its features",
        "rmsnorm": "RMSNorm<br>per token, over features, no centring",
        "batchnorm": "BatchNorm<br>per feature, over batch × tokens",
        "feature": "feature", "row": "b{b} t{t}",
        "hover": "item %{customdata[0]}, token %{customdata[1]}, feature %{x}<br>value %{z:.3f}<br>%{customdata[2]}<extra></extra>",
        "group_ln": "its group: mean {mean:.3f}, std {std:.3f}", "group_rms": "its group: RMS {rms:.3f}",
        "sum_rise": "**{name}**: FFN-out gradient from layer 1 to layer {L}: {bottom:.3g} → {top:.3g} (×{ratio:.2f}, {trend}).",
        "rises": "rises toward the top", "falls": "falls toward the top", "flat": "about flat",
        "sum_top": "At the top layer, {a}'s gradient is **{ratio:.1f}×** {b}'s.",
        "sum_stream": "Residual stream RMS after the last block: {parts}.",
        "run": "run", "final": "final loss (mean of last 20 steps)", "best": "lowest loss",
        "max_g": "largest gradient norm", "status": "status", "ok": "trained",
        "stalled": "**stalled** near {plateau:.2f} nats, the entropy of letter frequencies: it learned those, nothing more",
        "diverged_row": "**{what} at step {step}**: stopped there",
        "running": "running",
        "axes_check": "Our LayerNorm equals `torch.nn.LayerNorm` (largest difference {layernorm:.1e}); our RMSNorm equals `torch.nn.RMSNorm` ({rmsnorm:.1e}); BatchNorm equals `torch.nn.BatchNorm1d` in training mode ({batchnorm:.1e}). The outlined cells share one mean and one standard deviation.",
    },
    "zh-CN": {
        "wait_sweep": "点击“扫描深度”：L = 1 … L 时最顶层的梯度会逐个出现在这里",
        "wait_train": "点击“训练四个模型”：损失和梯度范数会逐步出现在这里",
        "post": "Post-LN", "pre": "Pre-LN", "sandwich": "Sandwich-LN", "deepnorm": "DeepNorm",
        "ffn_out": "FFN 输出 W₂", "ffn_in": "FFN 输入 W₁", "stream": "残差流 RMS（块之后）",
        "attn_qkv": "注意力 W_Q、W_K、W_V", "attn_out": "注意力输出 W_O", "total": "整个块",
        "layer": "层（1 = 最底层）", "grad": "‖∇W‖_F",
        "grads_title": "初始化时一次反向传播的梯度范数（{norm}，{layers} 层，d = {d}）",
        "sweep_title": "随深度增加，最顶层 FFN 输出的梯度",
        "depth": "层数 L", "top_grad": "最顶层的 ‖∇W₂‖",
        "ref_sqrt": "∝ 1/√L（Pre-LN，定理 1）", "ref_flat": "常数（Post-LN，定理 1）",
        "loss": "训练损失（交叉熵，nats）", "gnorm": "全局梯度范数", "step": "步",
        "warmup": "有预热", "no_warmup": "无预热",
        "train_title": "第 {step} / {steps} 步 · 学习率 {lr:g}，预热 {warmup} 步",
        "diverged": "{what}：第 {step} 步",
        "input": "输入 x<br>行：样本·词元 · 列：特征",
        "layernorm": "LayerNorm<br>每个词元，在其特征上",
        "rmsnorm": "RMSNorm<br>每个词元，在特征上，不减均值",
        "batchnorm": "BatchNorm<br>每个特征，在批次 × 词元上",
        "feature": "特征", "row": "b{b} t{t}",
        "hover": "样本 %{customdata[0]}，词元 %{customdata[1]}，特征 %{x}<br>值 %{z:.3f}<br>%{customdata[2]}<extra></extra>",
        "group_ln": "所在组：均值 {mean:.3f}，标准差 {std:.3f}", "group_rms": "所在组：RMS {rms:.3f}",
        "sum_rise": "**{name}**：FFN 输出梯度从第 1 层到第 {L} 层：{bottom:.3g} → {top:.3g}（×{ratio:.2f}，{trend}）。",
        "rises": "越往顶层越大", "falls": "越往顶层越小", "flat": "大致持平",
        "sum_top": "在最顶层，{a} 的梯度是 {b} 的 **{ratio:.1f} 倍**。",
        "sum_stream": "最后一个块之后残差流的 RMS：{parts}。",
        "run": "运行", "final": "最终损失（最后 20 步的平均）", "best": "最低损失",
        "max_g": "最大梯度范数", "status": "状态", "ok": "正常训练",
        "stalled": "**停滞**在 {plateau:.2f} nats 附近，即字母频率的熵：只学到了字母频率",
        "diverged_row": "**{what}：第 {step} 步**，在此停止",
        "running": "进行中",
        "axes_check": "我们的 LayerNorm 与 `torch.nn.LayerNorm` 一致（最大差 {layernorm:.1e}）；我们的 RMSNorm 与 `torch.nn.RMSNorm` 一致（{rmsnorm:.1e}）；BatchNorm 与训练模式下的 `torch.nn.BatchNorm1d` 一致（{batchnorm:.1e}）。被框出的格子共享同一个均值和标准差。",
    },
}
WHAT_ZH = {"loss became NaN": "损失变成 NaN", "loss became inf": "损失变成 inf", "loss became -inf": "损失变成 -inf",
           "gradient norm became NaN": "梯度范数变成 NaN", "gradient norm became inf": "梯度范数变成 inf",
           "loss blew up (over 3× its first value)": "损失爆炸（超过初始值的 3 倍）"}


def grid_layout(titles: list[str], cols: int, *, hgap: float = 0.07, vgap: float = 0.16) -> dict:
    """Panels in rows of ``cols``, numbered row by row as :func:`viz.common.axis_ref` expects.

    >>> g = grid_layout(["a", "b", "c", "d"], 2, hgap=0.1, vgap=0.2)
    >>> g["xaxis4"]["domain"], g["yaxis4"]["domain"], g["yaxis"]["domain"]
    ([0.55, 1.0], [0.0, 0.4], [0.6, 1.0])
    """
    rows = math.ceil(len(titles) / cols)
    width, height = (1 - hgap * (cols - 1)) / cols, (1 - vgap * (rows - 1)) / rows
    layout: dict = {"annotations": []}
    for i, title in enumerate(titles):
        r, c = divmod(i, cols)
        left, bottom = c * (width + hgap), 1 - r * (height + vgap) - height
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"] = {"domain": [round(left, 6), round(left + width, 6)], "anchor": f"y{suffix}"}
        layout[f"yaxis{suffix}"] = {"domain": [round(max(bottom, 0.0), 6), round(bottom + height, 6)],
                                    "anchor": f"x{suffix}"}
        layout["annotations"].append({
            "text": title, "x": left + width / 2, "y": bottom + height, "xref": "paper", "yref": "paper",
            "xanchor": "center", "yanchor": "bottom", "yshift": 4, "showarrow": False, "font": {"size": 13}})
    return layout


def _legend(height: int) -> dict:
    return {"legend": {"orientation": "h", "x": 0, "y": -0.16, "yanchor": "top"},
            "height": height, "margin": {"l": 60, "r": 20, "t": 80, "b": 90}}


def gradients_figure(results: dict[str, dict], *, norm: str, d_model: int, log_y: bool = True,
                     lang: str = "en") -> go.Figure:
    """Per-layer gradient norms of each variant, one panel per parameter group (and the stream RMS).

    ``results``: variant -> ``{"per_layer": {group: [...]}, "stream_rms": [...]}``, bottom layer first.
    """
    data = []
    n_layers = max(len(r["stream_rms"]) for r in results.values())
    for panel, group in enumerate(GROUP_PANELS):
        for variant, r in results.items():
            values = r["stream_rms"] if group == "stream" else r["per_layer"][group]
            data.append({"type": "scatter", "mode": "lines+markers", "x": list(range(1, len(values) + 1)),
                         "y": finite(values), "name": tr(TEXT, variant, lang), "legendgroup": variant,
                         "showlegend": panel == 0, "line": {"color": COLORS[variant], "width": 2},
                         "marker": {"size": 5},
                         "hovertemplate": f"{tr(TEXT, variant, lang)} · %{{x}}: %{{y:.4g}}<extra></extra>",
                         **axis_ref(panel)})
    layout = grid_layout([tr(TEXT, g, lang) for g in GROUP_PANELS], 3)
    for i, group in enumerate(GROUP_PANELS):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(title={"text": tr(TEXT, "layer", lang) if i >= 3 else None},
                                        dtick=1 if n_layers <= 12 else 2, range=[0.5, n_layers + 0.5])
        layout[f"yaxis{suffix}"].update(type="log" if log_y else "linear", tickformat=".2g", nticks=5,
                                        title={"text": tr(TEXT, "grad", lang) if i % 3 == 0 else None},
                                        rangemode="tozero" if not log_y else "normal")
    title = tr(TEXT, "grads_title", lang).format(norm="LayerNorm" if norm == "layernorm" else "RMSNorm",
                                                 layers=n_layers, d=d_model)
    return figure(data, layout | base_layout(height=600, title=title) | _legend(600))


def sweep_figure(points: dict[str, list[tuple[int, float]]], *, lang: str = "en") -> go.Figure:
    """Top-layer FFN-out gradient against depth (log-log), with Theorem 1's two reference slopes.

    ``points``: variant -> ``[(L, gradient norm), ...]`` in the order computed.
    """
    data = []
    for variant, pts in points.items():
        pts = sorted(pts)
        data.append({"type": "scatter", "mode": "lines+markers", "x": [p[0] for p in pts],
                     "y": finite([p[1] for p in pts]), "name": tr(TEXT, variant, lang),
                     "line": {"color": COLORS[variant], "width": 2}, "marker": {"size": 7},
                     "hovertemplate": f"{tr(TEXT, variant, lang)} · L = %{{x}}: %{{y:.4g}}<extra></extra>"})
    depths = sorted({p[0] for pts in points.values() for p in pts})
    for variant, key, slope in (("pre", "ref_sqrt", -0.5), ("post", "ref_flat", 0.0)):
        pts = sorted(points.get(variant, []))
        if len(depths) > 1 and pts and math.isfinite(pts[0][1]):
            l0, g0 = pts[0]
            data.append({"type": "scatter", "mode": "lines", "x": depths,
                         "y": [g0 * (d / l0) ** slope for d in depths], "name": tr(TEXT, key, lang),
                         "line": {"color": COLORS[variant], "dash": "dot", "width": 1}, "hoverinfo": "skip"})
    layout = {"xaxis": {"type": "log", "title": {"text": tr(TEXT, "depth", lang)}, "tickvals": depths},
              "yaxis": {"type": "log", "title": {"text": tr(TEXT, "top_grad", lang)}, "tickformat": ".2g", "nticks": 6}}
    return figure(data, layout | base_layout(height=400, title=tr(TEXT, "sweep_title", lang)) | _legend(400))


def training_figure(runs: list[dict], *, step: int, steps: int, lr: float, warmup: int,
                    lang: str = "en") -> go.Figure:
    """Loss and global gradient norm per step of each run; a diverged run's curve ends in a ✕.

    ``runs``: ``{"variant", "warmup", "loss", "grad_norm", "diverged_at", "diverged_what"}`` each.
    """
    data = []
    for run in runs:
        name = f"{tr(TEXT, run['variant'], lang)}, {tr(TEXT, 'warmup' if run['warmup'] else 'no_warmup', lang)}"
        line = {"color": COLORS[run["variant"]], "width": 2, "dash": "dot" if run["warmup"] else "solid"}
        for panel, key in enumerate(("loss", "grad_norm")):
            values = finite(run[key])
            x = list(range(1, len(values) + 1))
            data.append({"type": "scatter", "mode": "lines", "x": x, "y": values, "name": name,
                         "legendgroup": name, "showlegend": panel == 0, "line": line,
                         "hovertemplate": f"{name} · %{{x}}: %{{y:.4g}}<extra></extra>", **axis_ref(panel)})
            if run["diverged_at"] and values:
                what = run["diverged_what"] if lang == "en" else WHAT_ZH.get(run["diverged_what"], run["diverged_what"])
                data.append({"type": "scatter", "mode": "markers+text", "x": [x[-1]], "y": [values[-1]],
                             "marker": {"symbol": "x", "size": 12, "color": COLORS[run["variant"]]},
                             "text": [tr(TEXT, "diverged", lang).format(what=what, step=run["diverged_at"])],
                             "textposition": "top left", "showlegend": False, "hoverinfo": "text",
                             **axis_ref(panel)})
    layout = subplot_row([tr(TEXT, "loss", lang), tr(TEXT, "gnorm", lang)], spacing=0.1)
    for i in range(2):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(title={"text": tr(TEXT, "step", lang)}, range=[0, steps + 1])
    layout["yaxis2"].update(type="log", tickformat=".2g", nticks=6)
    title = tr(TEXT, "train_title", lang).format(step=step, steps=steps, lr=lr, warmup=warmup)
    return figure(data, layout | base_layout(height=420, title=title) | _legend(420))


def axes_figure(x: list[list[list[float]]], outputs: dict[str, list[list[list[float]]]],
                stats: dict[str, list], cell: tuple[int, int, int], *, lang: str = "en") -> go.Figure:
    """The input ``[B][T][F]`` and each norm's output as (B·T) × F grids; the selected cell's
    normalisation group outlined: a row (LayerNorm, RMSNorm) or a column (BatchNorm).

    ``stats``: ``"layernorm"`` -> ``[B][T]`` (mean, std); ``"rmsnorm"`` -> ``[B][T]`` rms;
    ``"batchnorm"`` -> ``[F]`` (mean, std).
    """
    B, T, F = len(x), len(x[0]), len(x[0][0])
    b0, t0, f0 = cell
    labels = [tr(TEXT, "row", lang).format(b=b, t=t) for b in range(B) for t in range(T)]
    custom_of = {
        "input": lambda b, t, f: "",
        "layernorm": lambda b, t, f: tr(TEXT, "group_ln", lang).format(mean=stats["layernorm"][b][t][0],
                                                                     std=stats["layernorm"][b][t][1]),
        "rmsnorm": lambda b, t, f: tr(TEXT, "group_rms", lang).format(rms=stats["rmsnorm"][b][t]),
        "batchnorm": lambda b, t, f: tr(TEXT, "group_ln", lang).format(mean=stats["batchnorm"][f][0],
                                                                     std=stats["batchnorm"][f][1]),
    }
    data, shapes = [], []
    show_text = B * T <= 16 and F <= 8
    for panel, name in enumerate(AXES_PANELS):
        grid = x if name == "input" else outputs[name]
        z = finite_grid([row for item in grid for row in item])                        # (B·T) × F
        limit = max((abs(v) for row in z for v in row if v is not None), default=1.0) or 1.0
        custom = [[[b, t, custom_of[name](b, t, f)] for f in range(F)] for b in range(B) for t in range(T)]
        data.append({"type": "heatmap", "z": z, "x": list(range(F)), "y": labels, "zmin": -limit, "zmax": limit,
                     "colorscale": DIVERGING, "showscale": False, "xgap": 1, "ygap": 1, "customdata": custom,
                     "text": [[f"{v:.2f}" if v is not None else "" for v in row] for row in z],
                     "texttemplate": "%{text}" if show_text else "", "hovertemplate": tr(TEXT, "hover", lang),
                     **axis_ref(panel)})
        ref = axis_ref(panel)
        xref, yref = ref["xaxis"], ref["yaxis"]
        row = b0 * T + t0
        groups = {"layernorm": "row", "rmsnorm": "row", "batchnorm": "col"}
        marks = [groups[name]] if name in groups else ["row", "col"]
        for mark in marks:
            color = HIGHLIGHT["layernorm" if mark == "row" else "batchnorm"]
            box = ({"x0": -0.5, "x1": F - 0.5, "y0": row - 0.5, "y1": row + 0.5} if mark == "row"
                   else {"x0": f0 - 0.5, "x1": f0 + 0.5, "y0": -0.5, "y1": B * T - 0.5})
            shapes.append({"type": "rect", "xref": xref, "yref": yref, **box,
                           "line": {"color": color, "width": 3, "dash": "solid" if name != "input" else "dot"},
                           "fillcolor": "rgba(0,0,0,0)"})
        for b in range(1, B):                                          # a line between batch items
            shapes.append({"type": "line", "xref": xref, "yref": yref, "x0": -0.5, "x1": F - 0.5,
                           "y0": b * T - 0.5, "y1": b * T - 0.5, "line": {"color": "#111827", "width": 2}})
    layout = grid_layout([tr(TEXT, p, lang) for p in AXES_PANELS], 4, hgap=0.05)
    for i in range(len(AXES_PANELS)):
        suffix = "" if i == 0 else str(i + 1)
        layout[f"xaxis{suffix}"].update(title={"text": tr(TEXT, "feature", lang)}, dtick=1, showgrid=False,
                                        zeroline=False)
        layout[f"yaxis{suffix}"].update(autorange="reversed", showgrid=False, zeroline=False,
                                        showticklabels=i == 0, type="category")
    height = max(300, 130 + 26 * B * T)
    return figure(data, layout | base_layout(height=height) | {"shapes": shapes})


def gradients_summary(results: dict[str, dict], lang: str = "en") -> str:
    """A few Markdown lines: each placement's bottom-to-top trend and how the tops compare.

    >>> print(gradients_summary({"post": {"per_layer": {"ffn_out": [1.0, 2.0]}, "stream_rms": [1.0, 1.0]},
    ...                          "pre": {"per_layer": {"ffn_out": [1.0, 0.5]}, "stream_rms": [1.0, 2.0]}}))
    - **Post-LN**: FFN-out gradient from layer 1 to layer 2: 1 → 2 (×2.00, rises toward the top).
    - **Pre-LN**: FFN-out gradient from layer 1 to layer 2: 1 → 0.5 (×0.50, falls toward the top).
    - At the top layer, Post-LN's gradient is **4.0×** Pre-LN's.
    - Residual stream RMS after the last block: Post-LN 1.00, Pre-LN 2.00.
    """
    lines = []
    tops = {}
    for variant, r in results.items():
        values = r["per_layer"]["ffn_out"]
        bottom, top = values[0], values[-1]
        ratio = top / bottom if bottom else float("inf")
        trend = "rises" if ratio > 1.1 else "falls" if ratio < 1 / 1.1 else "flat"
        lines.append("- " + tr(TEXT, "sum_rise", lang).format(name=tr(TEXT, variant, lang), L=len(values), bottom=bottom,
                                                       top=top, ratio=ratio, trend=tr(TEXT, trend, lang)))
        tops[variant] = top
    if "post" in tops and "pre" in tops and tops["pre"] > 0:
        lines.append("- " + tr(TEXT, "sum_top", lang).format(a=tr(TEXT, "post", lang), b=tr(TEXT, "pre", lang),
                                                      ratio=tops["post"] / tops["pre"]))
    parts = ", ".join(f"{tr(TEXT, v, lang)} {r['stream_rms'][-1]:.2f}" for v, r in results.items())
    lines.append("- " + tr(TEXT, "sum_stream", lang).format(parts=parts))
    return "\n".join(lines)


def training_summary(runs: list[dict], lang: str = "en", *, plateau: float, done: bool = False) -> str:
    """A Markdown table of the runs: final and lowest loss, largest gradient norm, and the finding
    (trained, stalled near ``plateau`` nats, or the step where it diverged); "running" until ``done``."""
    head = [tr(TEXT, k, lang) for k in ("run", "final", "best", "max_g", "status")]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        name = f"{tr(TEXT, run['variant'], lang)}, {tr(TEXT, 'warmup' if run['warmup'] else 'no_warmup', lang)}"
        loss = [v for v in run["loss"] if math.isfinite(v)]
        final = sum(loss[-20:]) / len(loss[-20:]) if loss else float("nan")
        if run["diverged_at"]:
            what = run["diverged_what"] if lang == "en" else WHAT_ZH.get(run["diverged_what"], run["diverged_what"])
            status = tr(TEXT, "diverged_row", lang).format(what=what, step=run["diverged_at"])
        elif not done:
            status = tr(TEXT, "running", lang)
        elif len(loss) >= 20 and final >= plateau - 0.1:
            status = tr(TEXT, "stalled", lang).format(plateau=plateau)
        else:
            status = tr(TEXT, "ok", lang)
        cells = [name, f"{final:.3f}" if loss else "—", f"{min(loss):.3f}" if loss else "—",
                 f"{max(run['grad_norm']):.3g}" if run["grad_norm"] else "—", status]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def axes_summary(max_error: dict[str, float], lang: str = "en") -> str:
    """One sentence: each of our norms against PyTorch's module, the largest difference."""
    return tr(TEXT, "axes_check", lang).format(**max_error)


def waiting_figures(lang: str = "en") -> tuple:
    """The depth-sweep and training figures before their first run."""
    return waiting(tr(TEXT, "wait_sweep", lang)), waiting(tr(TEXT, "wait_train", lang), height=420)
