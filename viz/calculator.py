"""Figures and the worked-formula summary of the calculator tab."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from viz.common import base_layout, figure, tr

PALETTE = ["#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#8b5cf6", "#ec4899", "#64748b"]

TEXT = {
    "en": {
        "params_title": "Parameters by part", "params": "parameters", "total": "total", "active": "active per token",
        "embedding": "embedding", "attention": "attention", "ffn": "FFN", "experts": "routed experts",
        "shared_experts": "shared experts", "router": "router", "norms": "norms", "lm_head": "LM head",
        "memory_title": "Memory (GiB)", "inference": "inference", "training": "training",
        "weights": "weights", "kv_cache": "KV cache", "gradients": "gradients", "master": "fp32 master",
        "optimizer": "Adam m, v", "activations": "activations", "gpu": "{n} × {gib} GiB GPU",
        "kv_title": "KV cache vs. weights as the context grows", "context": "context length (tokens)",
        "gib": "GiB", "crossover": "cache = weights at {t:,} tokens",
        "h_total": "Parameters", "h_rule": "12·L·d² rule of thumb", "h_flops": "FLOPs per token (forward)",
        "h_train": "Training compute", "h_inf": "Inference memory", "h_trainmem": "Training memory",
        "h_kv": "KV cache", "formula": "formula", "off_by": "off by {p:+.1f}%",
        "h_verify": "Checked against PyTorch", "built": "built modules, sum(p.numel())",
        "real_cache": "allocated cache tensors", "match": "✓ equal", "mismatch": "✗ differ",
        "how_run": "This spec is small enough to run: the app's one transformer (the model every tab runs) "
                   "was built in this shape with real weights and run over {t} tokens; the cache is the one that "
                   "forward pass filled.",
        "how_meta": "The app's one transformer was built in this shape on PyTorch's meta device (shapes, no "
                    "memory), and its KV cache allocated there for {t} tokens.",
        "run_built": "the transformer, sum(p.numel())", "run_cache": "its cache after a forward pass",
        "n_tokens": "{t} tokens",
    },
    "zh-CN": {
        "params_title": "各部分参数量", "params": "参数量", "total": "总计", "active": "每个词元激活",
        "embedding": "嵌入", "attention": "注意力", "ffn": "前馈网络", "experts": "路由专家",
        "shared_experts": "共享专家", "router": "路由器", "norms": "归一化", "lm_head": "输出头",
        "memory_title": "显存（GiB）", "inference": "推理", "training": "训练",
        "weights": "权重", "kv_cache": "KV 缓存", "gradients": "梯度", "master": "fp32 主权重",
        "optimizer": "Adam m、v", "activations": "激活", "gpu": "{n} 张 {gib} GiB GPU",
        "kv_title": "随上下文增长的 KV 缓存与权重", "context": "上下文长度（词元）",
        "gib": "GiB", "crossover": "在 {t:,} 个词元时缓存 = 权重",
        "h_total": "参数量", "h_rule": "12·L·d² 经验公式", "h_flops": "每个词元的 FLOPs（前向）",
        "h_train": "训练计算量", "h_inf": "推理显存", "h_trainmem": "训练显存",
        "h_kv": "KV 缓存", "formula": "公式", "off_by": "偏差 {p:+.1f}%",
        "h_verify": "与 PyTorch 核对", "built": "实际构建的模块，sum(p.numel())",
        "real_cache": "实际分配的缓存张量", "match": "✓ 相等", "mismatch": "✗ 不同",
        "how_run": "这个配置足够小，可以直接运行：按此形状构建了本应用唯一的 Transformer（每个标签页运行的同一个模型），"
                   "带真实权重，并对 {t} 个词元做了一次前向；缓存就是这次前向填充的那一个。",
        "how_meta": "按此形状在 PyTorch 的 meta 设备上构建了本应用唯一的 Transformer（只有形状，不占内存），"
                    "并在那里为 {t} 个词元分配了它的 KV 缓存。",
        "run_built": "Transformer，sum(p.numel())", "run_cache": "前向之后它的缓存",
        "n_tokens": "{t} 个词元",
    },
}


def human(n: float, unit: str = "") -> str:
    """Big numbers readably: 6.74 B, 2.00 GiB, 1.2e+24.

    >>> human(6_738_415_616), human(2 * 2**30, "B"), human(6.04e9, "FLOP")
    ('6.74 B', '2.00 GiB', '6.04 GFLOP')
    """
    if unit == "B":
        for name, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if abs(n) >= scale:
                return f"{n / scale:.2f} {name}"
        return f"{n:.0f} B"
    if unit == "FLOP":
        for name, scale in (("EFLOP", 1e18), ("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
            if abs(n) >= scale:
                return f"{n / scale:.2f} {name}"
        return f"{n:.0f} FLOP"
    if abs(n) >= 1e15:
        return f"{n:.3g}"
    for name, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {name}"
    return f"{n:,.0f}"


def params_figure(parts: dict[str, int], active_parts: dict[str, int], lang: str = "en") -> go.Figure:
    """Stacked bars: total and active parameters, by part."""
    names = [k for k in parts if parts[k]]
    data = [{"type": "bar", "orientation": "h", "name": tr(TEXT, k, lang), "marker": {"color": PALETTE[i % 8]},
             "y": [tr(TEXT, "total", lang), tr(TEXT, "active", lang)], "x": [parts[k], active_parts[k]],
             "hovertemplate": "%{x:,} " + tr(TEXT, "params", lang) + "<extra>%{fullData.name}</extra>"}
            for i, k in enumerate(names)]
    layout = base_layout(height=260, title=tr(TEXT, "params_title", lang)) | {
        "barmode": "stack", "xaxis": {"title": {"text": tr(TEXT, "params", lang)}},
        "legend": {"orientation": "h", "y": -0.35}}
    return figure(data, layout)


def memory_figure(inference: dict[str, int], training: dict[str, int], gpu_gib: float, usable: float,
                  n_inf: int, n_train: int, lang: str = "en") -> go.Figure:
    """Stacked bars of inference and training memory, with the capacity of the GPUs they need."""
    groups = [tr(TEXT, "inference", lang), tr(TEXT, "training", lang)]
    keys = list(dict.fromkeys([*inference, *training]))               # "weights" once, same colour in both
    data = [{"type": "bar", "name": tr(TEXT, key, lang), "x": groups,
             "y": [inference.get(key, 0) / 2**30, training.get(key, 0) / 2**30],
             "marker": {"color": PALETTE[i % 8]}, "hovertemplate": "%{y:.2f} GiB<extra>%{fullData.name}</extra>"}
            for i, key in enumerate(keys)]
    shapes, notes = [], []
    for x, n in ((0, n_inf), (1, n_train)):
        cap = n * gpu_gib * usable
        shapes.append({"type": "line", "x0": x - 0.4, "x1": x + 0.4, "y0": cap, "y1": cap,
                       "line": {"color": "#111827", "dash": "dash"}})
        notes.append({"x": x, "y": cap, "text": tr(TEXT, "gpu", lang).format(n=n, gib=gpu_gib),
                      "showarrow": False, "yshift": 10})
    layout = base_layout(height=360, title=tr(TEXT, "memory_title", lang)) | {
        "barmode": "stack", "shapes": shapes, "annotations": notes, "yaxis": {"title": {"text": "GiB"}},
        "legend": {"orientation": "h", "y": -0.15}}
    return figure(data, layout)


def kv_figure(contexts: list[int], kv_gib: list[float], weights_gib: float, crossover: int,
              lang: str = "en") -> go.Figure:
    """KV cache bytes against context length, the weights as a flat line, and where they cross."""
    data = [{"type": "scatter", "mode": "lines", "name": tr(TEXT, "kv_cache", lang), "x": contexts, "y": kv_gib,
             "line": {"color": PALETTE[1], "width": 3}},
            {"type": "scatter", "mode": "lines", "name": tr(TEXT, "weights", lang), "x": [contexts[0], contexts[-1]],
             "y": [weights_gib, weights_gib], "line": {"color": PALETTE[0], "dash": "dash"}}]
    layout = base_layout(height=320, title=tr(TEXT, "kv_title", lang)) | {
        "xaxis": {"type": "log", "title": {"text": tr(TEXT, "context", lang)}},
        "yaxis": {"type": "log", "title": {"text": tr(TEXT, "gib", lang)}},
        "legend": {"orientation": "h", "y": -0.3}}
    if contexts[0] <= crossover <= contexts[-1]:
        layout["shapes"] = [{"type": "line", "x0": crossover, "x1": crossover, "yref": "paper", "y0": 0, "y1": 1,
                             "line": {"color": "#ef4444", "dash": "dot"}}]
        layout["annotations"] = [{"x": math.log10(crossover), "y": 1, "yref": "paper",
                                  "text": tr(TEXT, "crossover", lang).format(t=crossover), "showarrow": False,
                                  "xanchor": "right", "yanchor": "top"}]
    return figure(data, layout)


def _details(title: str, value: str, formula: str) -> str:
    return f"<details><summary><b>{title}</b>: {value}</summary>\n\n{formula}\n\n</details>\n"


def summary_markdown(a, lang: str = "en") -> str:
    """Each headline number, expandable to its formula with the spec's values plugged in."""
    s, run, p = a.spec, a.run, a.params
    T = lambda key: tr(TEXT, key, lang)                               # noqa: E731
    L, d, H = s.n_layers, s.d_model, s.n_heads
    rows = []
    parts = " + ".join(f"{T(k)} {v:,}" for k, v in p["parts"].items() if v)
    attn = (f"MLA: d·H·(nope+rope) + d·(r_kv+rope) + r_kv + r_kv·H·(nope+v) + H·v·d with r_kv = {s.kv_lora_rank}"
            if s.is_mla else f"d·H·hd + 2·d·n_kv·hd + H·hd·d = {d}·{H}·{s.hd} + 2·{d}·{s.kv_heads}·{s.hd} + {H}·{s.hd}·{d}")
    ffn = (f"3·d·ffn (SwiGLU: gate, up, down) = 3·{d}·{s.ffn}" if s.ffn_type == "swiglu"
           else f"2·d·ffn (GELU MLP) = 2·{d}·{s.ffn}")
    rows.append(_details(T("h_total"), f"{human(p['total'])} ({p['total']:,}); {T('active')} {human(p['active'])} "
                         f"({p['active']:,})",
                         f"{parts} = **{p['total']:,}**\n\n- {T('attention')} / layer: {attn}\n- {T('ffn')} / layer: {ffn}"
                         + (f"\n- {T('active')}: top-{s.top_k} of {s.n_experts} experts" if s.is_moe else "")))
    off = 100 * (a.rule_of_thumb - p["total"]) / p["total"]
    rows.append(_details(T("h_rule"), f"{human(a.rule_of_thumb)} ({T('off_by').format(p=off)})",
                         f"12·L·d² = 12·{L}·{d}² = {a.rule_of_thumb:,}: attention 4d² + a 4d GELU MLP 8d² per layer; "
                         "it ignores embeddings, GQA, SwiGLU's third matrix and experts."))
    f = a.flops
    rows.append(_details(T("h_flops"), human(f['forward'], "FLOP"),
                         f"2·N (N = active params used in matmuls) + 2·L·T·H·(d_qk + d_v) = {f['matmul']:,} + "
                         f"2·{L}·{run.seq_len}·{H}·(...) = {f['matmul']:,} + {f['attention']:,} = **{f['forward']:,}**; "
                         f"training ≈ 3× = {human(f['train'], 'FLOP')}"))
    rows.append(_details(T("h_train"), f"{a.train_flops:.3g} FLOP",
                         f"6·N·D = 6 · {p['active']:,} · {run.train_tokens:.3g} = {a.train_flops:.4g} FLOP"))
    b = a.inference["parts"]
    if s.is_mla:
        kv_formula = (f"L·(r_kv + rope)·T·B·bytes = {L}·({s.kv_lora_rank}+{s.qk_rope_head_dim})·{run.seq_len}·"
                      f"{run.batch}·{run.kv_dtype} (MLA caches one latent per token: no factor 2)")
    else:
        kv_formula = f"2·L·n_kv·hd·T·B·bytes = 2·{L}·{s.kv_heads}·{s.hd}·{run.seq_len}·{run.batch}·{run.kv_dtype}"
    rows.append(_details(T("h_kv"), human(b["kv_cache"], "B"), f"{kv_formula} = {b['kv_cache']:,} B; "
                         f"{T('crossover').format(t=a.crossover_tokens)}"))
    rows.append(_details(T("h_inf"), f"{human(a.inference['total'], 'B')} → {T('gpu').format(n=a.gpus_inference, gib=run.gpu_gib)}",
                         f"{T('weights')} N·{run.weight_dtype} = {b['weights']:,} B + {T('kv_cache')} {b['kv_cache']:,} B; "
                         f"GPUs = ⌈total / ({run.gpu_gib} GiB · {run.usable})⌉"))
    t = a.training["parts"]
    rows.append(_details(T("h_trainmem"), f"{human(a.training['total'], 'B')} → {T('gpu').format(n=a.gpus_training, gib=run.gpu_gib)}",
                         f"{a.training['bytes_per_param']} bytes/param ({run.recipe}: "
                         f"{T('weights')} {human(t['weights'], 'B')}, {T('gradients')} {human(t['gradients'], 'B')}, "
                         f"{T('master')} {human(t['master'], 'B')}, {T('optimizer')} {human(t['optimizer'], 'B')}) + "
                         f"{T('activations')} ({run.recompute}) {human(t['activations'], 'B')}: "
                         f"s·b·h·(34 + 5·a·s/h)·L without recomputation, 34·s·b·h·L selective, 2·s·b·h·L full"))
    return "\n".join(rows)


def verification_markdown(v, seq_len: int, lang: str = "en") -> str:
    """Formula vs. built modules vs. a real cache, side by side, and how they were obtained."""
    T = lambda key: tr(TEXT, key, lang)                               # noqa: E731
    ok = lambda a, b: T("match") if a == b else T("mismatch")         # noqa: E731
    run = v.how == "run"
    return (f"**{T('h_verify')}**\n\n| | {T('formula')} | PyTorch | |\n|---|---:|---:|---|\n"
            f"| {T('h_total')} | {v.formula_params:,} | {v.built_params:,} ({T('run_built' if run else 'built')}) | "
            f"{ok(v.formula_params, v.built_params)} |\n"
            f"| {T('h_kv')} ({v.kv_dtype}, {T('n_tokens').format(t=seq_len)}) | {v.formula_kv_bytes:,} B | {v.built_kv_bytes:,} B "
            f"({T('run_cache' if run else 'real_cache')}) | {ok(v.formula_kv_bytes, v.built_kv_bytes)} |\n\n"
            + T("how_run" if run else "how_meta").format(t=seq_len))
