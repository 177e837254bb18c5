"""Figures and the worked-formula summary of the calculator tab."""
from __future__ import annotations

import functools
import math

from locales import tr
from viz.common import PlainFigure, base_layout, label_margin, plain_figure

PALETTE = ["#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#8b5cf6", "#ec4899", "#64748b"]


def _t(lang: str):
    """``key -> text`` of this tab's figures (``calc_v_<key>`` in :mod:`locales.calculator`)."""
    return lambda key, **params: tr(lang, f"calc_v_{key}", **params)


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


def params_figure(parts: dict[str, int], active_parts: dict[str, int], lang: str = "en") -> PlainFigure:
    """Stacked bars: total and active parameters, by part."""
    T = _t(lang)
    names = [k for k in parts if parts[k]]
    data = [{"type": "bar", "orientation": "h", "name": T(k), "marker": {"color": PALETTE[i % 8]},
             "y": [T("total"), T("active")], "x": [parts[k], active_parts[k]],
             "hovertemplate": "%{x:,} " + T("params") + "<extra>%{fullData.name}</extra>"}
            for i, k in enumerate(names)]
    # A left margin that holds the bar labels: Plotly's automargin would push it and draw twice, each event.
    margin = {"l": label_margin([T("total"), T("active")])}
    layout = base_layout(height=280, title=T("params_title"), margin=margin) | {   # the legend above: clear of the axis title
        "barmode": "stack", "xaxis": {"title": {"text": T("params")}},
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"}}
    return plain_figure(data, layout)


def memory_figure(inference: dict[str, int], training: dict[str, int], capacities: list[tuple[int, float]],
                  gpu_gib: float, usable: float, lang: str = "en") -> PlainFigure:
    """Stacked bars of inference and training memory; over each, the line of what its GPUs hold at the
    ``usable`` fraction, ``capacities`` = ``[(GPUs, usable GiB)]`` for inference and training."""
    T = _t(lang)
    groups = [T("inference"), T("training")]
    keys = list(dict.fromkeys([*inference, *training]))               # "weights" once, same colour in both
    data = [{"type": "bar", "name": T(key), "x": groups,
             "y": [inference.get(key, 0) / 2**30, training.get(key, 0) / 2**30],
             "marker": {"color": PALETTE[i % 8]}, "hovertemplate": "%{y:.2f} GiB<extra>%{fullData.name}</extra>"}
            for i, key in enumerate(keys)]
    shapes, notes = [], []
    for x, (n, cap) in enumerate(capacities):
        shapes.append({"type": "line", "x0": x - 0.4, "x1": x + 0.4, "y0": cap, "y1": cap,
                       "line": {"color": "#111827", "dash": "dash"}})
        notes.append({"x": x, "y": cap, "text": T("gpu_line", n=n, gib=gpu_gib, pct=100 * usable, cap=cap),
                      "showarrow": False, "yshift": 10})
    layout = base_layout(height=360, title=T("memory_title"), margin={"b": 76}) | {      # room for the legend
        "barmode": "stack", "shapes": shapes, "annotations": notes, "yaxis": {"title": {"text": "GiB"}},
        "legend": {"orientation": "h", "y": -0.15}}
    return plain_figure(data, layout)


def per_position_formula(s, sep: str = "·") -> tuple[str, str]:
    """The numbers ``s`` caches per token position in a layer, as a formula and with the values in it: a key and
    a value per KV head, or MLA's latent and shared RoPE key (the KV tab writes it with ``sep`` " · ").

    >>> from models.calculator import PRESETS
    >>> per_position_formula(PRESETS["Llama-3-8B"]), per_position_formula(PRESETS["DeepSeek-V2"], " · ")
    (('2·n_kv·hd', '2·8·128'), ('(r_kv + rope)', '(512 + 64)'))
    """
    if s.is_mla:
        spaced = sep != sep.strip()
        return "(r_kv + rope)", f"({s.kv_lora_rank}{' + ' if spaced else '+'}{s.qk_rope_head_dim})"
    return sep.join(("2", "n_kv", "hd")), sep.join(map(str, (2, s.kv_heads, s.hd)))


def positions_formula(s, seq_len: int, sep: str = "·", number=str) -> tuple[str, str]:
    """The token positions ``s``'s layers hold at ``seq_len`` (``models.calculator.cached_positions``), as a
    formula and with the values in it; ``sep`` joins factors, ``number`` writes a value.

    >>> from models.calculator import PRESETS
    >>> positions_formula(PRESETS["Llama-3-8B"], 8192), positions_formula(PRESETS["Mistral-7B v0.1"], 8192)
    (('L·T', '32·8192'), ('((L − L_w)·T + L_w·min(T, W))', '(0·8192 + 32·4096)'))
    """
    L, Lw = s.n_layers, s.sliding_layers
    if not Lw:
        return f"L{sep}T", f"{L}{sep}{number(seq_len)}"
    return (f"((L − L_w){sep}T + L_w{sep}min(T, W))",
            f"({s.full_layers}{sep}{number(seq_len)} + {Lw}{sep}{number(min(seq_len, s.sliding_window))})")


def _kv_formula(s, run, lang: str) -> str:
    """The cache's formula with ``s``'s values in it: numbers per position times the positions the layers hold.

    >>> from models.calculator import PRESETS, RunSettings
    >>> _kv_formula(PRESETS["Llama-3-8B"], RunSettings(seq_len=4096), "en")
    '2·n_kv·hd·L·T·batch·bytes = 2·8·128·32·4096·1·2 B (bf16)'
    """
    from models.calculator import bytes_per_element
    per, per_values = per_position_formula(s)
    positions, values = positions_formula(s, run.seq_len)
    notes = [tr(lang, "calc_s_kv_mla_note")] * s.is_mla + [tr(lang, "calc_s_kv_window_note")] * bool(s.sliding_layers)
    return (f"{per}·{positions}·batch·bytes = {per_values}·{values}·{run.batch}·"
            f"{bytes_per_element(run.kv_dtype):g} B{tr(lang, 'sep_paren', text=run.kv_dtype)}"
            + "".join(tr(lang, "sep_paren", text=note) for note in notes))


def kv_figure(contexts: list[int], kv_gib: list[float], weights_gib: float, crossover: int | None,
              lang: str = "en") -> PlainFigure:
    """KV cache bytes against context length, the weights as a flat line, and where they cross."""
    T = _t(lang)
    data = [{"type": "scatter", "mode": "lines", "name": T("kv_cache"), "x": contexts, "y": kv_gib,
             "line": {"color": PALETTE[1], "width": 3}},
            {"type": "scatter", "mode": "lines", "name": T("weights"), "x": [contexts[0], contexts[-1]],
             "y": [weights_gib, weights_gib], "line": {"color": PALETTE[0], "dash": "dash"}}]
    layout = base_layout(height=320, title=T("kv_title"), margin={"l": 66, "b": 88}) | {   # the axis titles, the legend
        "xaxis": {"type": "log", "title": {"text": T("context")}},
        "yaxis": {"type": "log", "title": {"text": T("gib")}},
        "legend": {"orientation": "h", "y": -0.3}}
    if crossover is not None and contexts[0] <= crossover <= contexts[-1]:
        layout["shapes"] = [{"type": "line", "x0": crossover, "x1": crossover, "yref": "paper", "y0": 0, "y1": 1,
                             "line": {"color": "#ef4444", "dash": "dot"}}]
        layout["annotations"] = [{"x": math.log10(crossover), "y": 1, "yref": "paper",
                                  "text": T("crossover", t=crossover), "showarrow": False,
                                  "xanchor": "right", "yanchor": "top"}]
    return plain_figure(data, layout)


def layouts_figure(lay, lang: str = "en") -> PlainFigure:
    """Cache bytes of each layout against context, log-log, with the ratios' contexts marked."""
    T = _t(lang)
    names = {"standard": T("layout_standard"), "sliding": T("layout_sliding", w=lay.window), "yoco": T("layout_yoco"),
             "mla": T("layout_mla" if lay.mla_own else "layout_mla_ds")}
    dash = {"standard": "solid", "sliding": "dot", "yoco": "solid", "mla": "dash"}
    data = [{"type": "scatter", "mode": "lines", "name": names[k], "x": lay.contexts, "y": ys,
             "line": {"color": PALETTE[i], "width": 3 if k == "yoco" else 2, "dash": dash[k]},
             "hovertemplate": "T = %{x:,}<br>%{y:.3s}B<extra>%{fullData.name}</extra>"}
            for i, (k, ys) in enumerate(lay.bytes.items())]
    layout = base_layout(height=340, title=T("layouts_title"), margin={"l": 72, "b": 110}) | {   # "100T", the legend
        "xaxis": {"type": "log", "title": {"text": T("context")}},
        "yaxis": {"type": "log", "title": {"text": T("cache_bytes")}, "exponentformat": "SI"},
        "legend": {"orientation": "h", "y": -0.3},
        "shapes": [{"type": "line", "x0": c, "x1": c, "yref": "paper", "y0": 0, "y1": 1,
                    "line": {"color": "#94a3b8", "dash": "dot", "width": 1}} for c in lay.ratios]}
    return plain_figure(data, layout)


def layouts_markdown(lay, spec, lang: str = "en") -> str:
    """The four formulas with the model's numbers plugged in, and YOCO / standard at 128K and 1M tokens."""
    S = lambda key, **params: tr(lang, f"calc_s_{key}", **params)      # noqa: E731
    if spec.is_mla:
        key = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        e_formula = f"{spec.n_heads}·({key}+{spec.v_head_dim}) = {lay.per_layer}"
    else:
        e_formula = " = ".join((*per_position_formula(spec), str(lay.per_layer)))
    r1, r2 = (lay.ratios[c] for c in sorted(lay.ratios))
    whose = S("window_own" if spec.sliding_window else "window_mistral")
    formula = S("layouts", L=lay.n_layers, e=lay.per_layer, e_formula=e_formula, W=lay.window, whose=whose,
                half=lay.self_layers, mla=lay.mla_per_layer, mla_note="" if lay.mla_own else S("mla_ds"),
                batch=lay.batch, bpe=lay.bytes_per_element, r1=r1, r2=r2, inv=1 / lay.n_layers)
    return _details(_t(lang)("h_layouts"), _t(lang)("layouts_value", r1=r1, r2=r2), formula, lang)


def _details(title: str, value: str, formula: str, lang: str = "en") -> str:
    return f"<details><summary><b>{title}</b>{tr(lang, 'sep_colon')}{value}</summary>\n\n{formula}\n\n</details>\n"


def summary_markdown(a, lang: str = "en") -> str:
    """Each headline number, expandable to its formula with the spec's values plugged in."""
    s, run, p = a.spec, a.run, a.params
    T = _t(lang)
    S = lambda key, **params: tr(lang, f"calc_s_{key}", **params)      # noqa: E731
    details = functools.partial(_details, lang=lang)
    L, d, H = s.n_layers, s.d_model, s.n_heads
    rows = []
    parts = " + ".join(f"{T(k)} {v:,}" for k, v in p["parts"].items() if v)
    formula, values = a.attention_formula
    attn = ("MLA: " if s.is_mla else "") + f"{formula} = {values}"
    ffn = (f"3·d·ffn (gated, SwiGLU or GeGLU: gate, up, down) = 3·{d}·{s.ffn}" if s.ffn_type == "swiglu"
           else f"2·d·ffn (GELU MLP) = 2·{d}·{s.ffn}")
    lines = [S("per_layer", part=T("attention"), formula=attn), S("per_layer", part=T("ffn"), formula=ffn)]
    if s.is_moe:
        shared = S("shared", n=s.n_shared_experts) if s.n_shared_experts else ""
        lines.append(S("topk", active=T("active"), k=s.top_k, n=s.n_experts, shared=shared))
    total, active = (f"{human(p[k])}" + tr(lang, "sep_paren", text=f"{p[k]:,}") for k in ("total", "active"))
    rows.append(details(T("h_total"), f"{total}{tr(lang, 'sep_list')}{T('active')} {active}",
                        f"{parts} = **{p['total']:,}**\n\n" + "\n".join(f"- {x}" for x in lines)))
    r = a.rule
    why = [S(f"why_{k}", n=s.n_experts, width=H * s.hd, d=d) for k in r.reasons]
    reasons = tr(lang, "sep_list").join(why)
    verdict = S("verdict_cancels" if r.cancels else "verdict_fails", reasons=reasons) if why else S("verdict_holds")
    off_by = tr(lang, "sep_paren", text=T("off_by", p=100 * r.off, n=human(r.non_embedding)))
    rows.append(details(T("h_rule"), human(r.rule) + off_by,
                        S("rule", L=L, d=d, rule=f"{r.rule:,}", n=f"{r.non_embedding:,}", off=100 * r.off,
                          off_total=100 * r.off_total, att=r.attention_d2, ffn=r.ffn_d2,
                          emb=100 * r.embedding_share, verdict=verdict)))
    f = a.flops
    qk, v = (s.qk_nope_head_dim + s.qk_rope_head_dim, s.v_head_dim) if s.is_mla else (s.hd, s.hd)
    positions, values = positions_formula(s, run.seq_len)
    rows.append(details(T("h_flops"), human(f["forward"], "FLOP"),
                        S("flops", matmul=f"{f['matmul']:,}", positions=positions, values=values, H=H, qk=qk, v=v,
                          attention=f"{f['attention']:,}", forward=f"{f['forward']:,}")))
    c = a.conventions
    rows.append(details(T("h_train"), f"{a.train_flops:.3g} FLOP",
                        S("train", N=f"{p['active']:,}", D=f"{run.train_tokens:.3g}", C=f"{a.train_flops:.4g}")
                        + "\n\n" + S("conventions", three=f"{c.three_forward:,}", n_matmul=f"{c.n_matmul:,}",
                                      attention=f"{c.attention:,}", T=run.seq_len, six=f"{c.six_n:,}",
                                      n_all=f"{c.n_all:,}", ratio=c.ratio, pct=100 * (c.ratio - 1),
                                      emb=f"{c.n_all - c.n_matmul:,}")))
    b = a.inference["parts"]
    rows.append(details(T("h_kv"), human(b["kv_cache"], "B"),
                        f"{_kv_formula(s, run, lang)} = {b['kv_cache']:,} B" + tr(lang, "sep_list")
                        + (S("crossover", t=a.crossover_tokens) if a.crossover_tokens is not None else
                           S("no_crossover", w=s.sliding_window))))
    rows.append(details(T("h_inf"),
                        f"{human(a.inference['total'], 'B')} → {T('gpu', n=a.gpus_inference, gib=run.gpu_gib)}",
                        S("inference", weights=T("weights"), dtype=run.weight_dtype, w=f"{b['weights']:,}",
                          kv_cache=T("kv_cache"), kv=f"{b['kv_cache']:,}", gib=run.gpu_gib, usable=run.usable)))
    t = a.training["parts"]
    memory = " + ".join(f"{T(k)} {human(t[k], 'B')}" for k in ("weights", "gradients", "master", "optimizer") if t[k])
    act = a.activations
    how = S(f"act_{act.case}", a=s.n_heads, s=run.seq_len, h=d, factor=f"{act.factor:g}")
    rows.append(details(T("h_trainmem"),
                        f"{human(a.training['total'], 'B')} → {T('gpu', n=a.gpus_training, gib=run.gpu_gib)}",
                        S("training", bpp=a.training["bytes_per_param"], recipe=tr(lang, f"calc_recipe_{run.recipe}"),
                          parts=memory, source=tr(lang, f"calc_recipe_{run.recipe}_source"),
                          activations=T("activations"), recompute=tr(lang, f"calc_c_{run.recompute}"),
                          attention=tr(lang, f"calc_c_{run.attention}"), act=human(t["activations"], "B"))
                        + "\n\n" + S("activations", L=L, s=run.seq_len, b=run.batch, h=d, factor=f"{act.factor:g}",
                                      act=f"{t['activations']:,}", how=how)))
    return "\n".join(rows)


def verification_markdown(v, lang: str = "en") -> str:
    """Formula vs. built modules vs. a real cache, side by side, and how they were obtained."""
    T = _t(lang)
    ok = lambda a, b: T("match") if a == b else T("mismatch")         # noqa: E731
    run = v.how == "run"
    return (f"**{T('h_verify')}**\n\n| | {T('formula')} | PyTorch | |\n|---|---:|---:|---|\n"
            f"| {T('h_total')} | {v.formula_params:,} | {v.built_params:,} ({T('run_built' if run else 'built')}) | "
            f"{ok(v.formula_params, v.built_params)} |\n"
            f"| {T('h_kv')} ({v.kv_dtype}, {T('n_tokens', t=v.seq_len)}) | {v.formula_kv_bytes:,} B | "
            f"{v.built_kv_bytes:,} B ({T('run_cache' if run else 'real_cache')}) | "
            f"{ok(v.formula_kv_bytes, v.built_kv_bytes)} |\n\n"
            + T("how_run" if run else "how_meta", t=v.seq_len))
