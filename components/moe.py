"""The FFN & Mixture-of-Experts tab: activations and FFN sizing, routing and load, a live training run."""
from __future__ import annotations

import functools
import time
from types import SimpleNamespace

import gradio as gr

from components.common import HEAVY, as_int, as_number, device_line, explain, low_priority
from components.i18n import lang_of, t
from components.norms_stability import join_draws
from components.wiring import event
from models.limits import (FFN_ACTIVATIONS, FFN_GATED, FFN_MAX_D_MODEL, FFN_MAX_X, MOE_EXPERT_KINDS,
                           MOE_MAX_CHARS, MOE_MAX_D_HIDDEN, MOE_MAX_D_MODEL, MOE_MAX_EXPERTS, MOE_MAX_LOGIT_SCALE,
                           MOE_MAX_SHARED, MOE_MAX_TOKENS, MOE_MAX_TOP_K, MOE_TRAIN_MAX_AUX, MOE_TRAIN_MAX_EXPERTS,
                           MOE_TRAIN_MAX_STEPS, MOE_TRAIN_MAX_Z, SEED_MAX)

DEFAULT_TEXT = "The cat sat on the mat, and the dog sat on the log.\n天气晴朗，适合露营。"
MULTIPLES = (1, 8, 64, 128, 256, 1024, 4096)           # Llama-2 uses 256; Llama-3 1024; Llama-2-70B 4096
SOURCES = ("text", "random")
TRAIN_MAX_TOP_K = 4
DEFAULT_ACTIVATIONS = ("relu", "gelu", "silu", "swiglu")
# What each view's endpoint returns, by the names of its output widgets.
ACTIVATION_OUTPUTS = ("act_plot", "gated_plot", "device")
SIZE_OUTPUTS = ("sizes_plot", "sizes_md")
ROUTE_OUTPUTS = ("route_plot", "flow_plot", "loss_plot", "summary", "device")
TRAIN_PLOTS = ("load_plot", "curves_plot", "chars_plot")
TRAIN_OUTPUTS = ("status", *TRAIN_PLOTS, "device")
STREAM_INTERVAL_S = 0.4            # the training view redraws at most this often (and at the end)

STRINGS = {
    "en": {
        "tab_moe": "FFN & MoE",
        "moe_intro": "The feed-forward network of a transformer, then its sparse version: a router sends each "
                     "token to k of E expert FFNs. Everything is computed live by PyTorch.",
        "moe_sub_ffn": "FFN & activations", "moe_sub_route": "Routing", "moe_sub_train": "Training",
        # FFN view
        "moe_activations": "Activations (gated ones along a = b = x)",
        "moe_act_relu": "ReLU", "moe_act_gelu": "GELU (exact)", "moe_act_gelu_tanh": "GELU (tanh)",
        "moe_act_silu": "SiLU / Swish", "moe_act_geglu": "GEGLU", "moe_act_swiglu": "SwiGLU",
        "moe_x_min": "x from", "moe_x_max": "x to", "moe_gated": "Gated unit over (a, b)",
        "moe_d_ffn": "d_model (the FFN's input and output size)",
        "moe_multiple": "Round SwiGLU's hidden size up to a multiple of",
        "moe_multiple_info": "Llama-2 uses 256 (d = 4096 → 11008)",
        "moe_act_plot": "Activations and their derivatives", "moe_gated_plot": "A gated unit over its two inputs",
        "moe_sizes_plot": "Dense FFN vs SwiGLU of equal parameter count",
        # routing view
        "moe_source": "Input", "moe_source_text": "the tokens of a text", "moe_source_random": "seeded random vectors",
        "moe_text": "Text (words, punctuation and each Chinese character are tokens)",
        "moe_n_random": "Random tokens", "moe_seed": "Seed (token vectors and weights)",
        "moe_experts": "Experts E", "moe_top_k": "Experts per token k", "moe_d_model": "d_model",
        "moe_d_hidden": "Expert hidden size h", "moe_expert_kind": "Expert FFN",
        "moe_kind_swiglu": "SwiGLU (3 matrices, Mixtral)", "moe_kind_gelu": "GELU MLP (2 matrices, Switch)",
        "moe_use_capacity": "Limit each expert's capacity", "moe_capacity": "Capacity factor c (C = ⌈c·k·N/E⌉)",
        "moe_shared": "Shared experts (always on, DeepSeekMoE)",
        "moe_sharpness": "Router sharpness (× router weights)", "moe_skew": "Router bias toward expert E1",
        "moe_route_plot": "Router probabilities and expert load", "moe_flow_plot": "Dropped assignments",
        "moe_loss_plot": "Aux loss, dense vs sparse",
        # training view
        "moe_aux_coef": "Aux-loss coefficient α (0 = none)", "moe_z_coef": "z-loss coefficient",
        "moe_train_capacity": "Capacity factor while training", "moe_steps": "Steps",
        "moe_train_seed": "Seed (weights and batches)",
        "moe_compare": "Also train a twin without the aux loss (same seed, same batches)",
        "moe_train_button": "Train", "moe_stop": "Stop",
        "moe_train_status_idle": "Press **Train**: a tiny MoE language model learns the shipped English text, "
                                 "one character at a time, and the plots fill in live.",
        "moe_train_load_plot": "Expert load per step", "moe_train_curves_plot": "Load balance and losses",
        "moe_train_chars_plot": "What each expert learned to take",
        "moe_ffn_explain": r"""
**The FFN.** Each position goes through $\mathrm{FFN}(x) = W_{out}\,\phi(W_{in}\,x)$, with hidden size $h = 4d$ in the original Transformer (two matrices, $2\cdot d\cdot 4d = 8d^2$ weights).

**Activations** (left: $f$, right: $f'$ by `torch.autograd`, checked in the tests against the closed forms):
- ReLU $\max(0, x)$: derivative 0 or 1 (autograd uses 0 at $x = 0$), dead for every negative input.
- GELU $x\,\Phi(x)$ (BERT, GPT-2) and its tanh approximation $\tfrac{x}{2}\big(1+\tanh(\sqrt{2/\pi}\,(x+0.044715x^3))\big)$: the two curves are within $10^{-3}$ of each other.
- SiLU / Swish $x\,\sigma(x)$: smooth, slightly negative for $x<0$ (minimum $\approx -0.278$ at $x\approx -1.28$), $f'$ overshoots 1.

**Gated units** (Shazeer 2020): $\mathrm{SwiGLU}(x) = W_{down}\big(\mathrm{SiLU}(x W_{gate}) \odot x W_{up}\big)$; GEGLU uses GELU. A gated unit takes *two* numbers, the gate input $a$ and the value $b$: the lower plot shows $\mathrm{act}(a)\cdot b$ over the whole plane. The curves above show the diagonal $a = b = x$ (what tied gate and value weights would give), $x\cdot\mathrm{act}(x)$: it grows like $x^2$, unlike any plain activation. Along $b = 1$ (green) you see the bare activation.

**Equal parameters.** SwiGLU has three matrices, so at equal parameter count $3\,d\,h = 2\cdot d\cdot 4d$, i.e. $h = \tfrac{8}{3}d$. Meta's Llama code computes `int(2 * 4d / 3)` and rounds *up* to `multiple_of` (256 in Llama-2: $d=4096 \to 10922 \to 11008$). Both counts in the bar chart come from modules built with PyTorch (on the meta device: shapes, no memory).
""",
        "moe_route_explain": r"""
**Routing.** For each token $x$: router probabilities $p = \mathrm{softmax}(x W_r)$ over $E$ experts, the top-$k$ experts, their weights renormalised over the $k$ (Mixtral), and $y = \sum_{j \in \text{top-}k} w_j\,\mathrm{expert}_j(x)$ + the shared experts (always on, weight 1, DeepSeekMoE). The block adds the residual: $x + y$.

**Capacity.** With a factor $c$ each expert takes at most $C = \lceil c\cdot k\cdot N/E \rceil$ assignments ($c = 1$: exactly the balanced share). Priority (GShard): every token's first choice is served before any token's second choice, and tokens in order within a rank. A dropped assignment contributes nothing; a token whose every choice was dropped gets $y = 0$ and passes through the residual unchanged (red ✕ at zero, right of the Sankey).

**Switch load-balancing loss** $\;\mathcal{L}_{aux} = E\sum_i f_i\,P_i$, $f_i$ = fraction of tokens that chose expert $i$ (among their top-$k$, $\sum_i f_i = k$), $P_i$ = mean router probability of expert $i$. Balanced ($f_i = k/E$, $P_i = 1/E$) gives $k$; all tokens on the same experts with probability 1 gives $E$. $f$ is a count (no gradient); the gradient flows through $P$ and pulls probability away from overloaded experts. Drag *router bias toward E1* and watch it climb toward $E$.

**Router z-loss** (ST-MoE) $\;\mathcal{L}_z = \frac{1}{N}\sum_t \big(\log\sum_i e^{z_{t,i}}\big)^2$ keeps the logits small (numerically stable in bf16); with all logits 0 it equals $(\ln E)^2$. *Router sharpness* scales the logits: the z-loss grows with it.

**Dense vs sparse.** The layer stores $E$ experts but each token touches $k$ of them (+ router, + shared): the FLOPs of a dense FFN of width $k\cdot h$, with $E/k$ times the parameters. All counts come from the built modules.
""",
        "moe_train_explain": r"""
**The run.** A tiny transformer with a mixture of experts in place of its FFN (the app's one transformer: one pre-norm block of causal self-attention with RoPE, 2 heads, $d = 32$, then an MoE layer of SwiGLU experts with $h = 64$) learns to predict the next character of the shipped English text; 2,048 tokens per step, AdamW. Loss $= \mathcal{L}_{task} + \alpha\,\mathcal{L}_{aux} + \beta\,\mathcal{L}_z$. Top-1 uses Switch's gate (the weight is $p$ itself; renormalising one weight would make it 1 and the router would learn nothing from the task); top-$k \ge 2$ renormalises (Mixtral). The twin starts from the same weights and sees the same batches, with $\alpha = 0$.

**What to see.** Without the aux loss the router collapses: an expert that gets more tokens early learns faster, becomes more useful, and the task gradient sends it still more tokens (bright rows in the heatmap, load CV 0.8–1.2 over seeds 0–5). With $\alpha = 0.05$ the load evens out (CV 0.26–0.31 with top-1, 0.08–0.15 with top-2) and the aux loss is lower, for about the same task loss. The last plot shows which characters each expert ended up taking.

**Load CV** = std / mean of the tokens per expert: 0 when balanced, $\sqrt{E/k - 1}$ when every token goes to the same $k$ experts (2.65 for $E=8$, $k=1$).
""",
    },
    "zh-CN": {
        "tab_moe": "FFN 与 MoE",
        "moe_intro": "先看 Transformer 的前馈网络，再看它的稀疏版本：路由器把每个词元送到 E 个专家 FFN 中的 k 个。"
                     "所有结果都由 PyTorch 实时计算。",
        "moe_sub_ffn": "FFN 与激活函数", "moe_sub_route": "路由", "moe_sub_train": "训练",
        "moe_activations": "激活函数（门控类沿 a = b = x 取值）",
        "moe_act_relu": "ReLU", "moe_act_gelu": "GELU（精确）", "moe_act_gelu_tanh": "GELU（tanh 近似）",
        "moe_act_silu": "SiLU / Swish", "moe_act_geglu": "GEGLU", "moe_act_swiglu": "SwiGLU",
        "moe_x_min": "x 起点", "moe_x_max": "x 终点", "moe_gated": "门控单元（二维 (a, b)）",
        "moe_d_ffn": "d_model（FFN 的输入输出维度）",
        "moe_multiple": "SwiGLU 隐藏维度向上取整到其倍数",
        "moe_multiple_info": "Llama-2 用 256（d = 4096 → 11008）",
        "moe_act_plot": "激活函数及其导数", "moe_gated_plot": "门控单元在两个输入上的取值",
        "moe_sizes_plot": "参数量相同的稠密 FFN 与 SwiGLU",
        "moe_source": "输入", "moe_source_text": "一段文本的词元", "moe_source_random": "带种子的随机向量",
        "moe_text": "文本（单词、标点和每个汉字各为一个词元）",
        "moe_n_random": "随机词元数", "moe_seed": "随机种子（词元向量和权重）",
        "moe_experts": "专家数 E", "moe_top_k": "每个词元的专家数 k", "moe_d_model": "d_model",
        "moe_d_hidden": "专家隐藏维度 h", "moe_expert_kind": "专家 FFN",
        "moe_kind_swiglu": "SwiGLU（3 个矩阵，Mixtral）", "moe_kind_gelu": "GELU MLP（2 个矩阵，Switch）",
        "moe_use_capacity": "限制每个专家的容量", "moe_capacity": "容量因子 c（C = ⌈c·k·N/E⌉）",
        "moe_shared": "共享专家（始终激活，DeepSeekMoE）",
        "moe_sharpness": "路由锐度（× 路由器权重）", "moe_skew": "路由器偏向专家 E1 的偏置",
        "moe_route_plot": "路由概率与专家负载", "moe_flow_plot": "被丢弃的分配",
        "moe_loss_plot": "辅助损失，稠密与稀疏对比",
        "moe_aux_coef": "辅助损失系数 α（0 = 不用）", "moe_z_coef": "z 损失系数",
        "moe_train_capacity": "训练时的容量因子", "moe_steps": "步数",
        "moe_train_seed": "随机种子（权重和批次）",
        "moe_compare": "同时训练一个没有辅助损失的对照模型（同一种子、同样的批次）",
        "moe_train_button": "开始训练", "moe_stop": "停止",
        "moe_train_status_idle": "点击**开始训练**：一个很小的 MoE 语言模型逐字符学习内置的英文文本，图表会实时更新。",
        "moe_train_load_plot": "每一步的专家负载", "moe_train_curves_plot": "负载均衡与损失",
        "moe_train_chars_plot": "每个专家最终接收的内容",
        "moe_ffn_explain": r"""
**FFN。** 每个位置都经过 $\mathrm{FFN}(x) = W_{out}\,\phi(W_{in}\,x)$，原始 Transformer 的隐藏维度 $h = 4d$（两个矩阵，共 $2\cdot d\cdot 4d = 8d^2$ 个权重）。

**激活函数**（左：$f$，右：由 `torch.autograd` 求出的 $f'$，测试中与解析式逐点核对）：
- ReLU $\max(0, x)$：导数为 0 或 1（autograd 在 $x = 0$ 处取 0），所有负输入都"死"掉。
- GELU $x\,\Phi(x)$（BERT、GPT-2）及其 tanh 近似 $\tfrac{x}{2}\big(1+\tanh(\sqrt{2/\pi}\,(x+0.044715x^3))\big)$：两条曲线相差不到 $10^{-3}$。
- SiLU / Swish $x\,\sigma(x)$：光滑，$x<0$ 时略为负（在 $x\approx -1.28$ 处取最小值 $\approx -0.278$），$f'$ 会超过 1。

**门控单元**（Shazeer 2020）：$\mathrm{SwiGLU}(x) = W_{down}\big(\mathrm{SiLU}(x W_{gate}) \odot x W_{up}\big)$；GEGLU 用 GELU。门控单元有*两个*输入：门输入 $a$ 和数值 $b$，下图画出整个平面上的 $\mathrm{act}(a)\cdot b$。上面的曲线取对角线 $a = b = x$（门和数值权重相同时的情形），即 $x\cdot\mathrm{act}(x)$：它像 $x^2$ 一样增长，这是普通激活函数做不到的。沿 $b = 1$（绿线）看到的就是激活函数本身。

**参数量相同。** SwiGLU 有三个矩阵，参数量相同要求 $3\,d\,h = 2\cdot d\cdot 4d$，即 $h = \tfrac{8}{3}d$。Meta 的 Llama 代码先算 `int(2 * 4d / 3)`，再*向上*取整到 `multiple_of` 的倍数（Llama-2 为 256：$d=4096 \to 10922 \to 11008$）。柱状图中的两个数都来自用 PyTorch 实际构建的模块（在 meta 设备上：只有形状，不占内存）。
""",
        "moe_route_explain": r"""
**路由。** 对每个词元 $x$：路由概率 $p = \mathrm{softmax}(x W_r)$（在 $E$ 个专家上），选出 top-$k$ 个专家，权重在这 $k$ 个上重新归一化（Mixtral），$y = \sum_{j \in \text{top-}k} w_j\,\mathrm{expert}_j(x)$ 再加上共享专家（始终激活，权重 1，DeepSeekMoE）。模块再加上残差：$x + y$。

**容量。** 容量因子为 $c$ 时，每个专家最多接收 $C = \lceil c\cdot k\cdot N/E \rceil$ 个分配（$c = 1$：恰好是均衡时的份额）。优先级（GShard）：所有词元的第一选择先于任何词元的第二选择，同一名次内按词元顺序。被丢弃的分配没有任何贡献；所有选择都被丢弃的词元得到 $y = 0$，通过残差原样传下去（桑基图右侧零处的红色 ✕）。

**Switch 负载均衡损失** $\;\mathcal{L}_{aux} = E\sum_i f_i\,P_i$，$f_i$ 为选择专家 $i$ 的词元比例（在各自的 top-$k$ 中，$\sum_i f_i = k$），$P_i$ 为专家 $i$ 的平均路由概率。均衡时（$f_i = k/E$，$P_i = 1/E$）等于 $k$；所有词元以概率 1 去同一批专家时等于 $E$。$f$ 是计数（没有梯度），梯度经由 $P$ 传递，把概率从过载的专家那里拉走。拖动*路由器偏向 E1 的偏置*，看它向 $E$ 攀升。

**路由 z 损失**（ST-MoE）$\;\mathcal{L}_z = \frac{1}{N}\sum_t \big(\log\sum_i e^{z_{t,i}}\big)^2$ 让 logits 保持较小（在 bf16 下数值稳定）；logits 全为 0 时它等于 $(\ln E)^2$。*路由锐度*缩放 logits，z 损失随之增大。

**稠密与稀疏。** 该层存有 $E$ 个专家，但每个词元只用到其中 $k$ 个（加上路由器和共享专家）：计算量相当于宽度为 $k\cdot h$ 的稠密 FFN，参数量却是它的 $E/k$ 倍。所有计数都来自实际构建的模块。
""",
        "moe_train_explain": r"""
**训练过程。** 一个用混合专家代替 FFN 的小 Transformer（即本应用唯一的 Transformer：一个 pre-norm 模块，先是带 RoPE 的因果自注意力，2 个头，$d = 32$，再是 SwiGLU 专家组成的 MoE 层，$h = 64$）学习预测内置英文文本的下一个字符；每步 2,048 个词元，AdamW。损失 $= \mathcal{L}_{task} + \alpha\,\mathcal{L}_{aux} + \beta\,\mathcal{L}_z$。top-1 使用 Switch 的门（权重就是 $p$；若对单个权重重新归一化，它恒为 1，路由器就无法从任务中学习）；top-$k \ge 2$ 重新归一化（Mixtral）。对照模型从相同的权重出发、看到相同的批次，只是 $\alpha = 0$。

**看什么。** 没有辅助损失时路由会坍缩：早期多分到词元的专家学得更快、更有用，任务梯度又把更多词元送给它（热力图中的亮行，随机种子 0–5 的负载变异系数为 0.8–1.2）。$\alpha = 0.05$ 时负载趋于均衡（top-1 的变异系数为 0.26–0.31，top-2 为 0.08–0.15），辅助损失也更低，任务损失几乎不变。最后一张图显示每个专家最终接收了哪些字符。

**负载变异系数** = 每个专家词元数的标准差 / 均值：均衡时为 0，所有词元都去同样 $k$ 个专家时为 $\sqrt{E/k - 1}$（$E=8$、$k=1$ 时为 2.65）。
""",
    },
}


# --------------------------------------------------------------------------- FFN view


def ffn_activations(activations: list[str] = DEFAULT_ACTIVATIONS, x_min: float = -4.0, x_max: float = 4.0,
                    gated: str = "swiglu", request: gr.Request = None) -> dict:
    """The ``/ffn_activations`` endpoint: curves and derivatives, the gated unit's plane, the device line."""
    from models.ffn import activation_curves, gated_surface
    from viz.moe import activation_figure, gated_figure

    lang = lang_of(request)
    if not isinstance(activations, (list, tuple)) or not activations:
        raise ValueError(f"choose at least one activation from {', '.join(FFN_ACTIVATIONS)}")
    lo, hi = as_number("x from", x_min), as_number("x to", x_max)
    curves = activation_curves([str(a) for a in activations], lo, hi)
    limit = max(abs(lo), abs(hi))
    grid, z = gated_surface(str(gated), limit)
    values = {n: v.tolist() for n, v in curves.values.items()}
    derivs = {n: v.tolist() for n, v in curves.derivatives.items()}
    return {"act_plot": activation_figure(curves.x.tolist(), values, derivs, lang),
            "gated_plot": gated_figure(gated, grid.tolist(), z.tolist(), lang), "device": str(curves.timing)}


def ffn_sizes(d_model: int = 4096, multiple_of: int = 256, request: gr.Request = None) -> dict:
    """The ``/ffn_sizes`` endpoint: dense 4d GELU FFN vs SwiGLU at 8/3·d, counted from built modules."""
    from models.ffn import compare_ffn_sizes
    from viz.moe import ffn_sizes_figure

    lang = lang_of(request)
    s = compare_ffn_sizes(as_int("d_model", d_model, low=1, high=FFN_MAX_D_MODEL),
                          as_int("multiple_of", multiple_of, low=1, high=max(MULTIPLES)))
    fig = ffn_sizes_figure(s.d_model, s.multiple_of, s.dense, s.swiglu, s.dense_hidden, s.exact_hidden,
                           s.swiglu_hidden, lang)
    return {"sizes_plot": fig, "sizes_md": _sizes_markdown(s, lang)}


def _sizes_markdown(s, lang: str) -> str:
    change = s.swiglu_total / s.dense_total - 1
    rule = int(2 * 4 * s.d_model / 3)
    if lang == "zh-CN":
        return (f"h = 8/3 · {s.d_model:,} = {s.exact_hidden:,.2f} → Llama 的规则 `int(2·4d/3)` = {rule:,}，"
                f"向上取整到 {s.multiple_of:,} 的倍数：**{s.swiglu_hidden:,}**。"
                f"稠密 FFN：2·d·4d = **{s.dense_total:,}** 个权重；SwiGLU：3·d·h = **{s.swiglu_total:,}**（{change:+.2%}）。")
    return (f"h = 8/3 · {s.d_model:,} = {s.exact_hidden:,.2f} → Llama's rule `int(2·4d/3)` = {rule:,}, rounded up "
            f"to a multiple of {s.multiple_of:,}: **{s.swiglu_hidden:,}**. Dense FFN: 2·d·4d = **{s.dense_total:,}** "
            f"weights; SwiGLU: 3·d·h = **{s.swiglu_total:,}** ({change:+.2%}).")


# --------------------------------------------------------------------------- routing view


def _capacity(use: bool, factor) -> float | None:
    return as_number("capacity factor", factor) if use else None


def moe_route(source: str = "text", text: str = DEFAULT_TEXT, n_random: int = 64, seed: int = 0, experts: int = 8,
              top_k: int = 2, d_model: int = 32, d_hidden: int = 64, expert_kind: str = "swiglu",
              use_capacity: bool = False, capacity: float = 1.0, shared: int = 0, sharpness: float = 1.0,
              skew: float = 0.0, request: gr.Request = None) -> dict:
    """The ``/moe_route`` endpoint: routing heatmap and load, dropped assignments, losses and counts."""
    from models.moe_explore import RouteSpec, explore_routing, split_tokens
    from viz.moe import flow_figure, loss_figure, routing_figure

    lang = lang_of(request)
    if source not in SOURCES:
        raise ValueError(f"input {source!r} must be one of {', '.join(SOURCES)}")
    spec = RouteSpec(
        num_experts=as_int("experts", experts, low=2, high=MOE_MAX_EXPERTS),
        top_k=as_int("top-k", top_k, low=1, high=MOE_MAX_TOP_K),
        d_model=as_int("d_model", d_model, low=1, high=MOE_MAX_D_MODEL),
        d_hidden=as_int("expert hidden size", d_hidden, low=1, high=MOE_MAX_D_HIDDEN),
        capacity_factor=_capacity(use_capacity, capacity),
        num_shared=as_int("shared experts", shared, low=0, high=MOE_MAX_SHARED),
        expert=expert_kind, logit_scale=as_number("router sharpness", sharpness), skew=as_number("skew", skew))
    seed = as_int("seed", seed, low=0, high=SEED_MAX)
    tokens = split_tokens(text) if source == "text" else None
    ex = explore_routing(tokens, spec, n_random=as_int("random tokens", n_random, low=1, high=MOE_MAX_TOKENS),
                         seed=seed)
    kept, idx = ex.kept.tolist(), ex.topk_idx.tolist()
    load, kept_load = ex.load.tolist(), ex.kept_load.tolist()
    counts = {"total": ex.counts.total, "active": ex.counts.active, "dense": ex.counts.dense}
    return {"route_plot": routing_figure(ex.labels, ex.probs.tolist(), idx, kept, load, kept_load, ex.capacity,
                                         spec.num_shared, lang),
            "flow_plot": flow_figure(idx, kept, ex.routed_norm.tolist(), spec.num_experts, lang),
            "loss_plot": loss_figure(ex.aux_loss, ex.z_loss, spec.num_experts, spec.top_k, counts, lang),
            "summary": _route_markdown(ex, spec, lang), "device": str(ex.timing)}


def _route_markdown(ex, spec, lang: str) -> str:
    N, c = len(ex.labels), ex.counts
    cap = "—" if ex.capacity is None else f"{ex.capacity}"
    if lang == "zh-CN":
        return (f"{N} 个词元 × k = {spec.top_k} → {N * spec.top_k} 个分配 · 容量 C = {cap} · 丢弃 **{ex.dropped}** · "
                f"辅助损失 **{ex.aux_loss:.4f}**（均衡 {spec.top_k}，坍缩 {spec.num_experts}）· z 损失 **{ex.z_loss:.4f}** · "
                f"参数：全部 {c.total:,}，每个词元激活 {c.active:,}（{c.active / c.total:.1%}），"
                f"同等激活规模的稠密 FFN {c.dense:,}")
    return (f"{N} tokens × k = {spec.top_k} → {N * spec.top_k} assignments · capacity C = {cap} · dropped **{ex.dropped}** · "
            f"aux loss **{ex.aux_loss:.4f}** (balanced {spec.top_k}, collapsed {spec.num_experts}) · "
            f"z-loss **{ex.z_loss:.4f}** · parameters: total {c.total:,}, active per token {c.active:,} "
            f"({c.active / c.total:.1%}), dense FFN of equal active size {c.dense:,}")


# --------------------------------------------------------------------------- training view


def moe_train(experts: int = 8, top_k: int = 1, aux_coef: float = 0.05, z_coef: float = 0.0, use_capacity: bool = False,
              capacity: float = 1.25, steps: int = 150, seed: int = 0, compare: bool = True,
              request: gr.Request = None):
    """The ``/moe_train`` endpoint (streams): status, load heatmaps, curves, the final expert-character map, device."""
    from models.moe_train import MoETrainConfig, train_moe
    from viz.moe import expert_chars_figure, train_curves_figure, train_load_figure

    lang = lang_of(request)
    cfg = MoETrainConfig(
        num_experts=as_int("experts", experts, low=2, high=MOE_TRAIN_MAX_EXPERTS),
        top_k=as_int("top-k", top_k, low=1, high=TRAIN_MAX_TOP_K),
        aux_coef=as_number("aux-loss coefficient", aux_coef), z_coef=as_number("z-loss coefficient", z_coef),
        capacity_factor=_capacity(use_capacity, capacity), steps=as_int("steps", steps, low=1, high=MOE_TRAIN_MAX_STEPS),
        seed=as_int("seed", seed, low=0, high=SEED_MAX), compare=bool(compare))
    shown = 0.0
    # A low-priority process on the CPU (the instant tabs keep the CPU and the GIL); a thread on CUDA.
    for p in low_priority(train_moe, cfg):
        if not p.done and time.monotonic() - shown < STREAM_INTERVAL_S:
            continue                                                  # drawing costs the server: a few frames a second
        shown = time.monotonic()
        curves = {name: {"cv": h.cv, "aux": h.aux, "task": h.task} for name, h in p.runs.items()}
        chars = (expert_chars_figure(list(p.vocab), p.expert_chars, cfg.aux_coef, lang) if p.expert_chars else None)
        yield {"status": _train_markdown(p, lang),
               "load_plot": train_load_figure({n: h.load for n, h in p.runs.items()}, cfg.aux_coef, cfg.steps, lang),
               "curves_plot": train_curves_figure(curves, cfg.aux_coef, cfg.num_experts, cfg.top_k, cfg.steps, lang),
               "chars_plot": chars, "device": str(p.timing)}


def _train_markdown(p, lang: str) -> str:
    def tail(xs):                                       # mean of the last 10 steps: one batch is noisy
        last = xs[-10:]
        return sum(last) / len(last)

    rows = []
    for name, h in p.runs.items():
        label = (f"α = {p.config.aux_coef:g}" if name == "aux" else ("α = 0（对照）" if lang == "zh-CN" else "α = 0 (twin)"))
        rows.append(f"| {label} | {tail(h.cv):.3f} | {tail(h.aux):.3f} | {tail(h.task):.3f} | {tail(h.dropped):.1%} |")
    head = (f"第 **{p.step} / {p.config.steps}** 步" if lang == "zh-CN" else f"step **{p.step} / {p.config.steps}**")
    cols = ("| 运行 | 负载变异系数 | 辅助损失 | 任务损失 | 丢弃 |" if lang == "zh-CN"
            else "| run | load CV | aux loss | task loss | dropped |")
    note = ("（最后 10 步的平均）" if lang == "zh-CN" else " (means over the last 10 steps)")
    return f"{head}{note}\n\n{cols}\n|---|---|---|---|---|\n" + "\n".join(rows)


# --------------------------------------------------------------------------- layout


def train_waiting(request: gr.Request = None) -> dict:
    """The training view's figures before the first run, saying how to fill them."""
    from viz.moe import waiting_figures
    return dict(zip(TRAIN_PLOTS, waiting_figures(lang_of(request))))


def _slider(low, high, value, step, elem_id, label: str | None = None):
    """A slider whose label key is its ``elem_id`` unless another key is given."""
    return gr.Slider(low, high, value=value, step=step, label=t(label or elem_id), elem_id=elem_id)


def build() -> dict:
    """Lay out the tab's three views, wire their events, return the first-draw event: the FFN view,
    the routing view, and the training figures saying how to fill them."""
    gr.Markdown(t("moe_intro"))
    with gr.Tabs():
        with gr.Tab(t("moe_sub_ffn"), id="moe_ffn"):
            ffn = _ffn_view()
        with gr.Tab(t("moe_sub_route"), id="moe_route"):
            route = _route_view()
        with gr.Tab(t("moe_sub_train"), id="moe_train"):
            train = _train_view()
    draws = [event(ffn_activations, ffn, ACTIVATION_OUTPUTS), event(ffn_sizes, ffn, SIZE_OUTPUTS),
             event(moe_route, route, ROUTE_OUTPUTS), event(train_waiting, train, TRAIN_PLOTS)]
    return {**functools.reduce(join_draws, draws), "show_progress": "hidden"}


def _ffn_view() -> SimpleNamespace:
    ui = SimpleNamespace()
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            ui.activations = gr.CheckboxGroup([(t(f"moe_act_{a}"), a) for a in FFN_ACTIVATIONS],
                                              value=list(DEFAULT_ACTIVATIONS), label=t("moe_activations"),
                                              elem_id="moe_activations")
            with gr.Row():
                ui.x_min = _slider(-FFN_MAX_X, FFN_MAX_X, -4, 0.5, "moe_x_min")
                ui.x_max = _slider(-FFN_MAX_X, FFN_MAX_X, 4, 0.5, "moe_x_max")
            ui.gated = gr.Radio([(t(f"moe_act_{g}"), g) for g in FFN_GATED], value="swiglu", label=t("moe_gated"),
                                elem_id="moe_gated")
            ui.d_model = gr.Number(4096, precision=0, minimum=1, maximum=FFN_MAX_D_MODEL, label=t("moe_d_ffn"),
                                   elem_id="moe_d_ffn")
            ui.multiple_of = gr.Radio(list(MULTIPLES), value=256, label=t("moe_multiple"),
                                      info=t("moe_multiple_info"), elem_id="moe_multiple")
        with gr.Column(scale=3):
            ui.act_plot = gr.Plot(label=t("moe_act_plot"), elem_id="moe_act_plot")
            ui.gated_plot = gr.Plot(label=t("moe_gated_plot"), elem_id="moe_gated_plot")
            ui.sizes_plot = gr.Plot(label=t("moe_sizes_plot"), elem_id="moe_sizes_plot")
            ui.sizes_md = gr.Markdown(elem_id="moe_sizes_md")
            ui.device = device_line()
            explain("moe_ffn_explain")
    gr.on([ui.activations.input, ui.x_min.input, ui.x_max.input, ui.gated.input], api_name="ffn_activations",
          show_progress="hidden", trigger_mode="always_last", **event(ffn_activations, ui, ACTIVATION_OUTPUTS))
    gr.on([ui.d_model.submit, ui.d_model.blur, ui.multiple_of.input], api_name="ffn_sizes", show_progress="hidden",
          **event(ffn_sizes, ui, SIZE_OUTPUTS))
    return ui


def _route_view() -> SimpleNamespace:
    ui = SimpleNamespace()
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            ui.source = gr.Radio([(t(f"moe_source_{s}"), s) for s in SOURCES], value="text", label=t("moe_source"),
                                 elem_id="moe_source")
            ui.text = gr.Textbox(DEFAULT_TEXT, lines=3, max_lines=8, label=t("moe_text"), elem_id="moe_text",
                                 max_length=MOE_MAX_CHARS)
            with gr.Row():
                ui.n_random = _slider(1, MOE_MAX_TOKENS, 64, 1, "moe_n_random")
                ui.seed = gr.Number(0, precision=0, minimum=0, maximum=SEED_MAX, label=t("moe_seed"),
                                    elem_id="moe_seed")
            with gr.Row():
                ui.experts = _slider(2, MOE_MAX_EXPERTS, 8, 1, "moe_experts")
                ui.top_k = _slider(1, MOE_MAX_TOP_K, 2, 1, "moe_top_k")
            with gr.Row():
                ui.d_model = _slider(1, MOE_MAX_D_MODEL, 32, 1, "moe_d_model")
                ui.d_hidden = _slider(1, MOE_MAX_D_HIDDEN, 64, 1, "moe_d_hidden")
            ui.expert_kind = gr.Radio([(t(f"moe_kind_{k}"), k) for k in MOE_EXPERT_KINDS], value="swiglu",
                                      label=t("moe_expert_kind"), elem_id="moe_expert_kind")
            ui.use_capacity = gr.Checkbox(False, label=t("moe_use_capacity"), elem_id="moe_use_capacity")
            ui.capacity = _slider(0, 4, 1.0, 0.05, "moe_capacity")
            ui.shared = _slider(0, MOE_MAX_SHARED, 0, 1, "moe_shared")
            ui.sharpness = _slider(0, MOE_MAX_LOGIT_SCALE, 1.0, 0.1, "moe_sharpness")
            ui.skew = _slider(0, 10, 0.0, 0.1, "moe_skew")
        with gr.Column(scale=3):
            ui.route_plot = gr.Plot(label=t("moe_route_plot"), elem_id="moe_route_plot")
            ui.summary = gr.Markdown(elem_id="moe_route_md")
            ui.flow_plot = gr.Plot(label=t("moe_flow_plot"), elem_id="moe_flow_plot")
            ui.loss_plot = gr.Plot(label=t("moe_loss_plot"), elem_id="moe_loss_plot")
            ui.device = device_line()
            explain("moe_route_explain")
    sliders = [ui.n_random, ui.experts, ui.top_k, ui.d_model, ui.d_hidden, ui.capacity, ui.shared, ui.sharpness,
               ui.skew]
    gr.on([ui.source.input, ui.text.submit, ui.text.blur, ui.seed.submit, ui.seed.blur, ui.expert_kind.input,
           ui.use_capacity.input, *(s.input for s in sliders)], api_name="moe_route", show_progress="hidden",
          trigger_mode="always_last", **event(moe_route, ui, ROUTE_OUTPUTS))
    return ui


def _train_view() -> SimpleNamespace:
    ui = SimpleNamespace()
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            ui.aux_coef = _slider(0, MOE_TRAIN_MAX_AUX, 0.05, 0.005, "moe_aux_coef")
            ui.z_coef = _slider(0, MOE_TRAIN_MAX_Z, 0.0, 0.001, "moe_z_coef")
            with gr.Row():
                ui.experts = _slider(2, MOE_TRAIN_MAX_EXPERTS, 8, 1, "moe_train_experts", "moe_experts")
                ui.top_k = _slider(1, TRAIN_MAX_TOP_K, 1, 1, "moe_train_top_k", "moe_top_k")
            ui.use_capacity = gr.Checkbox(False, label=t("moe_use_capacity"), elem_id="moe_train_use_capacity")
            ui.capacity = _slider(0, 4, 1.25, 0.05, "moe_train_capacity")
            with gr.Row():
                ui.steps = _slider(10, MOE_TRAIN_MAX_STEPS, 150, 10, "moe_steps")
                ui.seed = gr.Number(0, precision=0, minimum=0, maximum=SEED_MAX, label=t("moe_train_seed"),
                                    elem_id="moe_train_seed")
            ui.compare = gr.Checkbox(True, label=t("moe_compare"), elem_id="moe_compare")
            with gr.Row():
                ui.train = gr.Button(t("moe_train_button"), variant="primary", elem_id="moe_train_button")
                ui.stop = gr.Button(t("moe_stop"), variant="stop", elem_id="moe_stop")
        with gr.Column(scale=3):
            ui.status = gr.Markdown(t("moe_train_status_idle"), elem_id="moe_train_status")
            ui.load_plot = gr.Plot(label=t("moe_train_load_plot"), elem_id="moe_train_load")
            ui.curves_plot = gr.Plot(label=t("moe_train_curves_plot"), elem_id="moe_train_curves")
            ui.chars_plot = gr.Plot(label=t("moe_train_chars_plot"), elem_id="moe_train_chars")
            ui.device = device_line()
            explain("moe_train_explain")
    run = ui.train.click(api_name="moe_train", show_progress="minimal", **HEAVY,
                         **event(moe_train, ui, TRAIN_OUTPUTS))
    ui.stop.click(None, None, None, cancels=[run], api_visibility="private")
    return ui
