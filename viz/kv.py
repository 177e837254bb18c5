"""Figures of the KV Cache tab: the cache filling in, its bytes against the formula, time per step,
which query heads share which KV head, and the cache of real models on paper.

Built as plain dicts (:func:`viz.common.figure`): a generation redraws them about ten times a second.
"""
from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from viz.calculator import human
from viz.common import WEIGHT_SCALE, axis_ref, base_layout, figure, subplot_row, tr

COLORS = {"cached": "#4f46e5", "uncached": "#ef4444", "formula": "#111827", "prefill": "#f59e0b",
          "empty": "#eef2f7", "latent": "#10b981", "rope": "#f59e0b"}
GROUP_COLORS = ["#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#8b5cf6", "#ec4899", "#64748b"]
OTHERS = "#94a3b8"

TEXT = {
    "en": {
        "cache_title": "KV cache: {filled} of {capacity} preallocated positions filled · {bytes}",
        "cache_plan": "KV cache, preallocated for {capacity} positions (prompt + new tokens − 1), empty",
        "position": "position in the sequence (one character = one token)",
        "per_token": "numbers cached per token, stacked by layer (full height = MHA)",
        "layer": "layer {n}",
        "prompt": "prompt │ generated",
        "rms": "RMS of the<br>cached vector",
        "layout_mha": "each layer caches, per token: {rows}",
        "mha_height": "MHA would fill the full height",
        "bytes_title": "Cache bytes: measured vs. formula",
        "time_title": "Time per step",
        "tokens_cached": "tokens in the cache T",
        "context": "tokens attended over",
        "bytes": "bytes",
        "ms": "ms per step",
        "measured": "measured: nbytes()",
        "formula": "formula {formula}",
        "with_cache": "decode with the cache",
        "prefill": "prefill",
        "without_cache": "without the cache",
        "speedup": "without / with the cache: ×{x:.1f} (last {n} steps)",
        "press": "press Generate to measure",
        "query": "query heads",
        "kv": "K/V heads",
        "mla_legend": "c: the latent ({r} numbers), read by each<br>head through its own W_UK, W_UV<br>"
                      "kᴿ: one RoPE key ({d}), shared by all heads",
        "q": "Q{n}",
        "kvh": "K/V{n}",
        "per_layer": "cached per layer and token: {expr} = {n} numbers",
        "vs_mha": "{x} of MHA's {mha}",
        "untrained": "no checkpoint for this shape: random weights",
        "scale_title": "KV cache as the context grows (batch {batch}, {dtype})",
        "scale_context": "context length T (tokens)",
        "gib": "GiB",
        "weights": "{name} weights",
        "cross": "cache = weights at {t:,} tokens",
        "here": "{t:,} tokens: {size}",
        "step": "step {i} of {n}",
        "in_cache": "{t} tokens in the cache",
        "bytes_ok": "{measured:,} B = {formula} = {expected:,} B ✓",
        "bytes_bad": "{measured:,} B measured ≠ {formula} = {expected:,} B ✗",
        "identical": "with and without the cache: identical tokens so far ✓",
        "diverged": "with and without the cache: the tokens differ ✗",
        "trained": "trained weights `{name}` (validation loss {loss:.3f} nats/character)",
        "random": "no trained weights for `{name}`: random weights. The text is noise; the cache, its bytes "
                  "and the timings are real",
        "s_shape": "{layers} layers · {heads} query heads · {kv} KV heads (`num_key_value_heads`) · head_dim {hd}",
        "s_shape_mla": "{layers} layers · {heads} query heads · latent `kv_lora_rank` {r} · RoPE key "
                       "`qk_rope_head_dim` {rope} (shared by all heads)",
        "s_cache": "KV cache",
        "s_per_token": "per token",
        "s_weights": "weights ({params:,} parameters × {b:g} B)",
        "s_cross": "the cache outgrows the weights at",
        "s_tokens": "tokens",
        "s_as_mha": "as MHA (n_kv = n_heads = {heads})",
        "s_decompressed": "if it cached each head's decompressed K ({k}) and V ({v})",
        "s_no2": "no factor 2: K and V are both rebuilt from the one latent",
        "s_times": "×{x:.3g} the cache",
    },
    "zh-CN": {
        "cache_title": "KV 缓存：预分配的 {capacity} 个位置已填入 {filled} 个 · {bytes}",
        "cache_plan": "KV 缓存：为 {capacity} 个位置预分配（提示 + 新词元 − 1），尚为空",
        "position": "序列中的位置（一个字符 = 一个词元）",
        "per_token": "每个词元缓存的数值个数，按层堆叠（满高 = MHA）",
        "layer": "第 {n} 层",
        "prompt": "提示 │ 生成",
        "rms": "缓存向量的<br>均方根",
        "layout_mha": "每层为每个词元缓存：{rows}",
        "mha_height": "MHA 会占满整个高度",
        "bytes_title": "缓存字节数：实测与公式",
        "time_title": "每步耗时",
        "tokens_cached": "缓存中的词元数 T",
        "context": "本步关注的词元数",
        "bytes": "字节",
        "ms": "每步毫秒",
        "measured": "实测：nbytes()",
        "formula": "公式 {formula}",
        "with_cache": "使用缓存解码",
        "prefill": "预填充",
        "without_cache": "不用缓存",
        "speedup": "不用缓存 / 使用缓存：×{x:.1f}（最近 {n} 步）",
        "press": "点击“生成”开始测量",
        "query": "查询头",
        "kv": "K/V 头",
        "mla_legend": "c：潜在向量（{r} 个数），<br>每个头用自己的 W_UK、W_UV 读取<br>kᴿ：所有头共享的 RoPE 键（{d}）",
        "q": "Q{n}",
        "kvh": "K/V{n}",
        "per_layer": "每层每个词元缓存：{expr} = {n} 个数",
        "vs_mha": "为 MHA（{mha}）的 {x}",
        "untrained": "此结构没有训练好的权重：使用随机权重",
        "scale_title": "KV 缓存随上下文增长（批大小 {batch}，{dtype}）",
        "scale_context": "上下文长度 T（词元）",
        "gib": "GiB",
        "weights": "{name} 权重",
        "cross": "在 {t:,} 个词元时缓存 = 权重",
        "here": "{t:,} 个词元：{size}",
        "step": "第 {i} / {n} 步",
        "in_cache": "缓存中有 {t} 个词元",
        "bytes_ok": "{measured:,} B = {formula} = {expected:,} B ✓",
        "bytes_bad": "实测 {measured:,} B ≠ {formula} = {expected:,} B ✗",
        "identical": "使用与不用缓存：到目前为止生成的词元完全相同 ✓",
        "diverged": "使用与不用缓存：生成的词元不同 ✗",
        "trained": "已训练的权重 `{name}`（验证损失 {loss:.3f} nats/字符）",
        "random": "`{name}` 没有训练好的权重：使用随机权重。生成的文字是噪声，但缓存、字节数和计时都是真实的",
        "s_shape": "{layers} 层 · {heads} 个查询头 · {kv} 个 KV 头（`num_key_value_heads`）· head_dim {hd}",
        "s_shape_mla": "{layers} 层 · {heads} 个查询头 · 潜在维度 `kv_lora_rank` {r} · RoPE 键 "
                       "`qk_rope_head_dim` {rope}（所有头共享）",
        "s_cache": "KV 缓存",
        "s_per_token": "每个词元",
        "s_weights": "权重（{params:,} 个参数 × {b:g} B）",
        "s_cross": "缓存超过权重的上下文长度",
        "s_tokens": "个词元",
        "s_as_mha": "若为 MHA（n_kv = n_heads = {heads}）",
        "s_decompressed": "若缓存每个头解压后的 K（{k}）和 V（{v}）",
        "s_no2": "没有因子 2：K 和 V 都由同一个潜在向量重建",
        "s_times": "为该缓存的 ×{x:.3g}",
    },
}


def finite_array(values) -> np.ndarray:
    """A float32 array with every non-finite value as NaN (a gap in plotly; arrays travel as binary,
    so no NaN reaches the JSON).

    >>> finite_array([1.0, float("inf")]).tolist()
    [1.0, nan]
    """
    array = np.asarray(values, dtype=np.float32)
    return np.where(np.isfinite(array), array, np.float32("nan"))


# --------------------------------------------------------------------------- the cache picture
def cache_figure(rows: list[tuple[str, int]], n_layers: int, capacity: int, prompt_len: int,
                 picture: np.ndarray | None, full_height: int, cache_bytes: int = 0, lang: str = "en") -> go.Figure:
    """Layers × cached rows × positions: one band per cached vector, as tall as its width.

    ``rows`` are one layer's ``(name, numbers per token)`` (K and V per KV head, or MLA's latent and
    RoPE key); ``picture[layer, row, position]`` the RMS of each cached vector (``None``: nothing
    cached yet, the preallocated buffer is drawn empty). The y axis spans ``full_height`` numbers per
    token (an MHA cache of the same model), so a smaller cache is visibly smaller.

    It is redrawn several times a second, so it is cheap on both ends: the values travel as float32
    arrays (base64 in the JSON: a 4 × 8 × 500 picture builds in ~2 ms instead of ~160 ms as nested
    lists), and the rows of equal width in a layer share one heatmap (4 traces for MHA instead of
    32: half the browser's drawing time).
    """
    band = sum(width for _, width in rows)
    filled = picture.shape[2] if picture is not None else 0
    data, shapes, ticks, borders = [], [], [], []
    shapes.append({"type": "rect", "x0": -0.5, "x1": capacity - 0.5, "y0": 0, "y1": band * n_layers,
                   "fillcolor": COLORS["empty"], "line": {"width": 0}, "layer": "below"})
    for layer in range(n_layers):
        top = layer * band
        ticks.append((top + band / 2, tr(TEXT, "layer", lang).format(n=layer + 1)))
        offset = 0
        for first, count, width in _runs(rows):          # one trace per run of equally wide rows
            names = " ".join(name for name, _ in rows[first:first + count])
            label = f"{tr(TEXT, 'layer', lang).format(n=layer + 1)} · {names}"
            z = finite_array(picture[layer, first:first + count]) if picture is not None else [[]] * count
            data.append({"type": "heatmap", "z": z, "x0": 0, "dx": 1, "y0": top + offset + width / 2, "dy": width,
                         "coloraxis": "coloraxis", "name": label,
                         "hovertemplate": f"{label}<br>position %{{x}}<br>RMS %{{z:.3f}}<extra></extra>"})
            for _ in range(count):
                offset += width
                borders += [top + offset, top + offset, None]
        shapes.append({"type": "line", "x0": -0.5, "x1": capacity - 0.5, "y0": top, "y1": top,
                       "line": {"color": "#334155", "width": 1.5}})
    # white lines between rows: one path (a shape per row costs the browser ~40 % of a redraw)
    data.append({"type": "scatter", "mode": "lines", "x": [-0.5, capacity - 0.5, None] * (len(borders) // 3),
                 "y": borders, "line": {"color": "white", "width": 0.5}, "hoverinfo": "skip", "showlegend": False})
    shapes.append({"type": "line", "x0": prompt_len - 0.5, "x1": prompt_len - 0.5, "y0": 0,
                   "y1": band * n_layers, "line": {"color": COLORS["prefill"], "width": 2, "dash": "dot"}})
    notes = [{"x": prompt_len - 0.5, "y": 0, "yref": "y", "text": tr(TEXT, "prompt", lang), "showarrow": False,
              "yanchor": "bottom", "font": {"size": 11, "color": "#92400e"}}]
    if band * n_layers < full_height:
        notes.append({"x": 0.5, "y": (band * n_layers + full_height) / 2, "xref": "paper", "text":
                      tr(TEXT, "mha_height", lang), "showarrow": False, "font": {"color": OTHERS}})
        shapes.append({"type": "rect", "x0": -0.5, "x1": capacity - 0.5, "y0": 0, "y1": full_height,
                       "line": {"color": OTHERS, "dash": "dash", "width": 1}})
    title = (tr(TEXT, "cache_title", lang).format(filled=filled, capacity=capacity, bytes=f"{cache_bytes:,} B")
             if picture is not None else tr(TEXT, "cache_plan", lang).format(capacity=capacity))
    rows_text = tr(TEXT, "layout_mha", lang).format(rows=" ".join(f"{n}({w})" for n, w in rows))
    title += f"<br><span style='font-size: 11px; color: #475569'>{rows_text}</span>"
    layout = base_layout(height=480, title=title) | {
        "xaxis": {"title": {"text": tr(TEXT, "position", lang)}, "range": [-0.5, capacity - 0.5],
                  "showgrid": False, "zeroline": False},
        "yaxis": {"range": [full_height, 0], "tickmode": "array", "tickvals": [y for y, _ in ticks],
                  "ticktext": [t for _, t in ticks], "showgrid": False, "zeroline": False,
                  "title": {"text": tr(TEXT, "per_token", lang), "font": {"size": 11}}},
        "coloraxis": {"colorscale": WEIGHT_SCALE, "cmin": 0,
                      "colorbar": {"title": {"text": tr(TEXT, "rms", lang)}, "thickness": 12, "len": 0.8}},
        "shapes": shapes, "annotations": notes}
    layout["margin"] = {**layout["margin"], "t": 100}
    return figure(data, layout)


def _runs(rows: list[tuple[str, int]]) -> list[tuple[int, int, int]]:
    """Consecutive rows of equal width as ``(first, count, width)``.

    >>> _runs([("K0", 32), ("K1", 32), ("V0", 32), ("latent c", 32), ("RoPE key", 16)])
    [(0, 4, 32), (4, 1, 16)]
    """
    runs: list[tuple[int, int, int]] = []
    for i, (_, width) in enumerate(rows):
        if runs and runs[-1][2] == width:
            first, count, _ = runs[-1]
            runs[-1] = (first, count + 1, width)
        else:
            runs.append((i, 1, width))
    return runs


# --------------------------------------------------------------------------- bytes and time
def growth_figure(capacity: int, formula: str, bytes_per_token: int, others: dict[str, int],
                  cache_tokens: list[int], cache_bytes: list[int], context: list[int],
                  ms_cached: list[float], ms_uncached: list[float], lang: str = "en") -> go.Figure:
    """Left: measured cache bytes on the formula's line, other variants' lines for scale.
    Right: time per step with and without the cache (step 0 of the cached run is the prefill).

    ``others`` maps a variant's label to its bytes per token; ``formula`` is the formula's text.
    """
    data = [{"type": "scatter", "mode": "lines", "x": [0, capacity], "y": [0, per * capacity], "name": name,
             "line": {"color": OTHERS, "width": 1}, "showlegend": False,
             "hovertemplate": f"{name}: %{{y:,}} B<extra></extra>", **axis_ref(0)}
            for name, per in others.items()]
    notes = [{"x": capacity, "y": per * capacity, "xref": "x", "yref": "y", "text": name, "showarrow": False,
              "xanchor": "left", "font": {"size": 10, "color": OTHERS}} for name, per in others.items()]
    data.append({"type": "scatter", "mode": "markers", "x": np.asarray(cache_tokens), "y": np.asarray(cache_bytes),
                 "name": tr(TEXT, "measured", lang), "marker": {"color": COLORS["cached"], "size": 6},
                 "hovertemplate": "T = %{x}: %{y:,} B<extra></extra>", **axis_ref(0)})
    data.append({"type": "scatter", "mode": "lines", "x": [0, capacity], "y": [0, bytes_per_token * capacity],
                 "name": tr(TEXT, "formula", lang).format(formula=formula),
                 "line": {"color": COLORS["formula"], "dash": "dash", "width": 1.5}, **axis_ref(0)})
    if ms_cached:
        context, cached, uncached = np.asarray(context), finite_array(ms_cached), finite_array(ms_uncached)
        data += [{"type": "scatter", "mode": "markers", "x": context[:1], "y": cached[:1],
                  "name": tr(TEXT, "prefill", lang), "marker": {"color": COLORS["prefill"], "size": 9,
                                                                "symbol": "diamond"}, **axis_ref(1)},
                 {"type": "scatter", "mode": "lines", "x": context[1:], "y": cached[1:],
                  "name": tr(TEXT, "with_cache", lang), "line": {"color": COLORS["cached"], "width": 2},
                  **axis_ref(1)},
                 {"type": "scatter", "mode": "lines", "x": context, "y": uncached,
                  "name": tr(TEXT, "without_cache", lang), "line": {"color": COLORS["uncached"], "width": 2},
                  **axis_ref(1)}]
    titles = [tr(TEXT, "bytes_title", lang), tr(TEXT, "time_title", lang)]
    layout = subplot_row(titles, spacing=0.12) | base_layout(height=400)
    layout["annotations"] += notes
    speedup = _speedup(ms_cached, ms_uncached, lang)
    if speedup:
        layout["annotations"].append({"x": 0.57, "y": 0.98, "xref": "paper", "yref": "paper", "showarrow": False,
                                      "xanchor": "left", "yanchor": "top", "text": speedup, "bgcolor": "white",
                                      "font": {"size": 12, "color": COLORS["uncached"]}})
    if not ms_cached:
        layout["annotations"].append({"x": 0.78, "y": 0.5, "xref": "paper", "yref": "paper", "showarrow": False,
                                      "text": tr(TEXT, "press", lang), "font": {"color": OTHERS, "size": 13}})
    layout["xaxis"].update(title={"text": tr(TEXT, "tokens_cached", lang)}, range=[0, capacity * 1.12])
    layout["yaxis"].update(title={"text": tr(TEXT, "bytes", lang)}, rangemode="tozero")
    layout["xaxis2"].update(title={"text": tr(TEXT, "context", lang)})
    layout["yaxis2"].update(title={"text": tr(TEXT, "ms", lang)}, rangemode="tozero")
    layout["legend"] = {"orientation": "h", "y": -0.22, "x": 0}
    layout["margin"] = {**layout["margin"], "b": 110}
    return figure(data, layout)


def _speedup(ms_cached: list[float], ms_uncached: list[float], lang: str) -> str:
    """"without / with the cache: ×7.3 over the last 20 steps" once there are decode steps, else ""."""
    n = min(20, len(ms_cached) - 1)
    if n < 1 or not sum(ms_cached[-n:]) > 0:
        return ""
    return tr(TEXT, "speedup", lang).format(x=sum(ms_uncached[-n:]) / sum(ms_cached[-n:]), n=n)


# --------------------------------------------------------------------------- which heads share
def groups_figure(n_heads: int, n_kv_heads: int, mla: bool, latent: int, rope: int, lang: str = "en") -> go.Figure:
    """Query heads on top, what they read below: K/V head ``h // (n_heads / n_kv_heads)``, or MLA's latent."""
    group = n_heads // n_kv_heads
    data, boxes = [], []
    if mla:
        middle = (n_heads - 1) / 2
        targets = [(middle - 0.8, f"c ({latent})", COLORS["latent"]), (middle + 0.8, f"kᴿ ({rope})", COLORS["rope"])]
        for h in range(n_heads):
            data += [_edge(h, x, color, dash="dot" if i else "solid") for i, (x, _, color) in enumerate(targets)]
        boxes += [_box(x, 0, label, color) for x, label, color in targets]
        boxes.append({"x": 0.5, "y": 0, "xref": "paper", "yref": "paper", "yshift": -8, "showarrow": False,
                      "yanchor": "top", "font": {"size": 11, "color": "#475569"},
                      "text": tr(TEXT, "mla_legend", lang).format(r=latent, d=rope)})
        colors = [COLORS["cached"]] * n_heads
    else:
        colors = [GROUP_COLORS[(h // group) % len(GROUP_COLORS)] for h in range(n_heads)]
        kv_x = [g * group + (group - 1) / 2 for g in range(n_kv_heads)]       # under its group of queries
        data += [_edge(h, kv_x[h // group], colors[h]) for h in range(n_heads)]
        boxes += [_box(x, 0, tr(TEXT, "kvh", lang).format(n=g + 1), colors[g * group]) for g, x in enumerate(kv_x)]
    boxes += [_box(h, 1, tr(TEXT, "q", lang).format(n=h + 1), colors[h]) for h in range(n_heads)]
    for y, key in ((1, "query"), (0, "kv")):
        boxes.append({"x": 0, "y": y, "xref": "paper", "text": tr(TEXT, key, lang) if y or not mla else "MLA",
                      "showarrow": False, "xanchor": "right", "xshift": -8, "font": {"size": 11}})
    layout = base_layout(height=290 if mla else 250) | {
        "xaxis": {"visible": False, "range": [-0.6, n_heads - 0.4]},
        "yaxis": {"visible": False, "range": [-0.3, 1.3]}, "showlegend": False, "annotations": boxes}
    layout["margin"] = {"l": 90, "r": 20, "t": 56, "b": 70 if mla else 20}
    return figure(data, layout)


def _edge(x_query: float, x_target: float, color: str, dash: str = "solid") -> dict:
    return {"type": "scatter", "mode": "lines", "x": [x_query, x_target], "y": [1, 0], "hoverinfo": "skip",
            "line": {"color": color, "width": 2, "dash": dash}}


def _box(x: float, y: float, label: str, color: str) -> dict:
    """A labelled box drawn as an annotation (it sizes itself to its text)."""
    return {"x": x, "y": y, "text": f"<b>{html.escape(label)}</b>", "showarrow": False, "bgcolor": color,
            "bordercolor": "white", "borderpad": 6, "font": {"color": "white", "size": 12}}


def per_layer_markdown(rows: list[tuple[str, int]], mha_per_layer: int, variant: str, trained: bool = True,
                       lang: str = "en") -> str:
    """One line: what one layer caches per token, with the numbers, against MHA; whether it is trained."""
    widths = [w for _, w in rows]
    if variant == "MLA":
        expr = " + ".join(str(w) for w in widths)
    else:
        expr = f"2 × {len(rows) // 2} × {widths[0]}"
    n = sum(widths)
    ratio = f"{n / mha_per_layer:.3g}×" if n != mha_per_layer else "1×"
    return (f"**{variant}** · {tr(TEXT, 'per_layer', lang).format(expr=expr, n=n)} · "
            f"{tr(TEXT, 'vs_mha', lang).format(x=ratio, mha=mha_per_layer)}"
            + ("" if trained else f" · ⚠ {tr(TEXT, 'untrained', lang)}"))


# --------------------------------------------------------------------------- real models on paper
def scale_figure(contexts: list[int], curves: dict[str, list[int]], chosen: str, weights_bytes: float,
                 crossover: int, seq_len: int, cache_bytes: int, batch: int, dtype: str,
                 lang: str = "en") -> go.Figure:
    """Every preset's cache against context (log-log), the chosen one bold with its weights and crossover."""
    data = []
    for i, (name, values) in enumerate(curves.items()):
        bold = name == chosen
        data.append({"type": "scatter", "mode": "lines", "x": contexts, "y": [v / 2**30 for v in values],
                     "name": name, "line": {"width": 4 if bold else 1.5,
                                            "color": GROUP_COLORS[i % len(GROUP_COLORS)]},
                     "opacity": 1 if bold else 0.6, "hovertemplate": "%{x:,} tokens: %{y:.3g} GiB<extra>" + name
                     + "</extra>"})
    data.append({"type": "scatter", "mode": "lines", "x": [contexts[0], contexts[-1]],
                 "y": [weights_bytes / 2**30] * 2, "name": tr(TEXT, "weights", lang).format(name=chosen),
                 "line": {"color": COLORS["formula"], "dash": "dash"}})
    data.append({"type": "scatter", "mode": "markers", "x": [seq_len], "y": [cache_bytes / 2**30],
                 "name": tr(TEXT, "here", lang).format(t=seq_len, size=human(cache_bytes, "B")),
                 "marker": {"size": 12, "color": COLORS["uncached"], "symbol": "circle-open", "line": {"width": 3}}})
    layout = base_layout(height=420, title=tr(TEXT, "scale_title", lang).format(batch=batch, dtype=dtype)) | {
        "xaxis": {"type": "log", "title": {"text": tr(TEXT, "scale_context", lang)}},
        "yaxis": {"type": "log", "title": {"text": tr(TEXT, "gib", lang)}},
        "legend": {"orientation": "h", "y": -0.25}}
    if contexts[0] <= crossover <= contexts[-1]:
        layout["shapes"] = [{"type": "line", "x0": crossover, "x1": crossover, "yref": "paper", "y0": 0, "y1": 1,
                             "line": {"color": COLORS["uncached"], "dash": "dot"}}]
        layout["annotations"] = [{"x": math.log10(crossover), "y": 1, "yref": "paper", "showarrow": False,
                                  "text": tr(TEXT, "cross", lang).format(t=crossover), "xanchor": "right",
                                  "yanchor": "top"}]
    return figure(data, layout)


def scale_markdown(s, lang: str = "en") -> str:
    """The formula with the preset's numbers plugged in (``s``: a :class:`models.kv_cache.ScaleUp`)."""
    spec, b = s.spec, f"{s.bytes_per_elem:g} B"
    T, B = f"{s.seq_len:,}", f"{s.batch:,}"
    if spec.is_mla:
        shape = tr(TEXT, "s_shape_mla", lang).format(layers=spec.n_layers, heads=spec.n_heads, r=spec.kv_lora_rank,
                                                     rope=spec.qk_rope_head_dim)
        symbolic = "L · (kv_lora_rank + qk_rope_head_dim) · T · batch · bytes"
        plugged = f"{spec.n_layers} · ({spec.kv_lora_rank} + {spec.qk_rope_head_dim}) · {T} · {B} · {b}"
        per_token = f"{spec.n_layers} · ({spec.kv_lora_rank} + {spec.qk_rope_head_dim}) · {b}"
        k = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        baseline = (tr(TEXT, "s_decompressed", lang).format(k=k, v=spec.v_head_dim)
                    + f": `{spec.n_layers} · {spec.n_heads} · ({k} + {spec.v_head_dim}) · {T} · {B} · {b}`")
        note = f" ({tr(TEXT, 's_no2', lang)})"
    else:
        shape = tr(TEXT, "s_shape", lang).format(layers=spec.n_layers, heads=spec.n_heads, kv=spec.kv_heads,
                                                 hd=spec.hd)
        symbolic = "2 · L · n_kv · head_dim · T · batch · bytes"
        plugged = f"2 · {spec.n_layers} · {spec.kv_heads} · {spec.hd} · {T} · {B} · {b}"
        per_token = f"2 · {spec.n_layers} · {spec.kv_heads} · {spec.hd} · {b}"
        baseline, note = tr(TEXT, "s_as_mha", lang).format(heads=spec.n_heads), ""
    per_token_bytes = s.elements_per_token * s.bytes_per_elem
    return "\n".join([
        f"**{spec.name}** · {shape}",
        "",
        f"- **{tr(TEXT, 's_cache', lang)}** = `{symbolic}`{note}",
        f"  = `{plugged}` = **{s.cache_bytes:,} B = {human(s.cache_bytes, 'B')}**",
        f"- {tr(TEXT, 's_per_token', lang)}: `{per_token}` = {per_token_bytes:,.0f} B = {human(per_token_bytes, 'B')}",
        f"- {tr(TEXT, 's_weights', lang).format(params=s.params, b=s.bytes_per_elem)}: {human(s.weights_bytes, 'B')}; "
        f"{tr(TEXT, 's_cross', lang)} **T = {s.crossover_tokens:,}** {tr(TEXT, 's_tokens', lang)}",
        f"- {baseline}: {human(s.baseline_bytes, 'B')}, {tr(TEXT, 's_times', lang).format(x=s.baseline_bytes / s.cache_bytes)}",
    ])


def tiny_formula(mla: bool, n_layers: int, n_kv_heads: int, head_dim: int, latent: int | None, rope: int,
                 bytes_per_elem: int, tokens: str = "T") -> str:
    """The tiny model's cache formula with its numbers: ``2·4·2·32·T·4 B`` or ``4·(32+16)·T·4 B``.

    >>> tiny_formula(False, 4, 2, 32, None, 32, 4), tiny_formula(True, 4, 4, 32, 32, 16, 4, "10")
    ('2·4·2·32·T·4 B', '4·(32+16)·10·4 B')
    """
    if mla:
        return f"{n_layers}·({latent}+{rope})·{tokens}·{bytes_per_elem} B"
    return f"2·{n_layers}·{n_kv_heads}·{head_dim}·{tokens}·{bytes_per_elem} B"


def status_markdown(step: int, total: int, tokens: int, measured: int, formula: str, expected: int,
                    identical: bool, trained: bool, name: str, val_loss: float | None, lang: str = "en") -> str:
    """The line under the text: the step, the cache against its formula, cached = uncached, the weights."""
    check = "bytes_ok" if measured == expected else "bytes_bad"
    weights = (tr(TEXT, "trained", lang).format(name=name, loss=val_loss) if trained
               else tr(TEXT, "random", lang).format(name=name))
    return " · ".join([f"**{tr(TEXT, 'step', lang).format(i=step, n=total)}**",
                       tr(TEXT, "in_cache", lang).format(t=tokens),
                       tr(TEXT, check, lang).format(measured=measured, formula=formula, expected=expected),
                       tr(TEXT, "identical" if identical else "diverged", lang)]) + f"  \n{weights}"


# --------------------------------------------------------------------------- the text
def text_html(prompt: str, generated: str) -> str:
    """The prompt, then the generated text highlighted, escaped, line breaks kept."""
    return ('<div class="kv-text" style="white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, '
            'monospace; line-height: 1.5; min-height: 4.5em; padding: 0.6em; border: 1px solid #e2e8f0; border-radius: 8px">'
            f'<span style="color: #475569">{html.escape(prompt)}</span>'
            f'<span style="background: #e0e7ff; color: #1e1b4b">{html.escape(generated)}</span></div>')
