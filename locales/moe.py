"""The FFN & MoE tab: its widgets, its figures (viz.moe), the text the server builds (components.moe)
and the messages of models.ffn, models.moe, models.moe_explore and models.moe_train."""

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
        "moe_kind_swiglu": "SwiGLU (3 matrices, Mixtral)", "moe_kind_relu": "ReLU MLP (2 matrices, Switch)",
        "moe_use_capacity": "Limit each expert's capacity", "moe_capacity": "Capacity factor c (C = ⌈c·k·N/E⌉)",
        "moe_shared": "Shared experts (always on, DeepSeekMoE)",
        "moe_shared_gate": "Gate the shared experts: × sigmoid(x · w_g) (Qwen2-MoE)",
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
**The FFN.** Each position goes through $\mathrm{FFN}(x) = W_{\mathrm{out}}\,\phi(W_{\mathrm{in}}\,x)$, with hidden size $h = 4d$ in the original Transformer (two matrices, $2\cdot d\cdot 4d = 8d^2$ weights).

**Activations** (left: $f$, right: $f'$ by `torch.autograd`, checked in the tests against the closed forms):
- ReLU $\max(0, x)$: derivative 0 or 1 (autograd uses 0 at $x = 0$), dead for every negative input.
- GELU $x\,\Phi(x)$ (BERT, GPT-2) and its tanh approximation $\tfrac{x}{2}\big(1+\tanh(\sqrt{2/\pi}\,(x+0.044715x^3))\big)$: the two curves are within $10^{-3}$ of each other.
- SiLU / Swish $x\,\sigma(x)$: smooth, slightly negative for $x<0$ (minimum $\approx -0.278$ at $x\approx -1.28$), $f'$ overshoots 1.

**Gated units** (Shazeer 2020): $\mathrm{SwiGLU}(x) = W_{down}\big(\mathrm{SiLU}(x W_{gate}) \odot x W_{up}\big)$; GEGLU uses GELU. A gated unit takes *two* numbers, the gate input $a$ and the value $b$: the lower plot shows $\mathrm{act}(a)\cdot b$ over the whole plane. The curves above show the diagonal $a = b = x$ (what tied gate and value weights would give), $x\cdot\mathrm{act}(x)$: it grows like $x^2$, unlike any plain activation. Along $b = 1$ (green) you see the bare activation.

**Equal parameters.** SwiGLU has three matrices, so at equal parameter count $3\,d\,h = 2\cdot d\cdot 4d$, i.e. $h = \tfrac{8}{3}d$. Meta's Llama code computes `int(2 * 4d / 3)` and rounds *up* to `multiple_of` (256 in Llama-2: $d=4096 \to 10922 \to 11008$). Both counts in the bar chart come from modules built with PyTorch (on the meta device: shapes, no memory).
""",
        "moe_route_explain": r"""
**Routing.** For each token $x$: router probabilities $p = \mathrm{softmax}(x W_r)$ over $E$ experts, the top-$k$ experts, their weights renormalised over the $k$ (Mixtral), and $y = \sum_{j \in \text{top-}k} w_j\,\mathrm{expert}_j(x)$ + the shared experts (always on, DeepSeekMoE: weight 1; Qwen2-MoE gates them: × sigmoid(x · w_g)). The block adds the residual: $x + y$.

**Capacity.** With a factor $c$ each expert takes at most $C = \lceil c\cdot k\cdot N/E \rceil$ assignments ($c = 1$: exactly the balanced share). Priority (GShard): every token's first choice is served before any token's second choice, and tokens in order within a rank. A dropped assignment contributes nothing; a token whose every choice was dropped gets $y = 0$ and passes through the residual unchanged (red ✕ at zero, right of the Sankey).

**Switch load-balancing loss** $\;\mathcal{L}_{aux} = E\sum_i f_i\,P_i$, $f_i$ = fraction of tokens that chose expert $i$ (among their top-$k$, $\sum_i f_i = k$), $P_i$ = mean router probability of expert $i$. Balanced ($f_i = k/E$, $P_i = 1/E$) gives $k$; all tokens on the same experts with probability 1 gives $E$. $f$ is a count (no gradient); the gradient flows through $P$ and pulls probability away from overloaded experts. Drag *router bias toward E1* and watch it climb toward $E$.

**Router z-loss** (ST-MoE) $\;\mathcal{L}_z = \frac{1}{N}\sum_t \big(\log\sum_i e^{z_{t,i}}\big)^2$ keeps the logits small (numerically stable in bf16); with all logits 0 it equals $(\ln E)^2$. *Router sharpness* scales the logits: the z-loss grows with it.

**Dense vs sparse.** The layer stores $E$ experts but each token touches $k$ of them (+ router, + shared): the FLOPs of a dense FFN of width $k\cdot h$, with $E/k$ times the parameters. All counts come from the built modules.
""",
        "moe_train_explain": r"""
**The run.** A tiny transformer with a mixture of experts in place of its FFN (the app's one transformer: one pre-norm block of causal self-attention with RoPE, 2 heads, $d = 32$, then an MoE layer of SwiGLU experts with $h = 64$) learns to predict the next character of the shipped English text; 2,048 tokens per step, AdamW. Loss $= \mathcal{L}_{task} + \alpha\,\mathcal{L}_{aux} + \beta\,\mathcal{L}_z$. Top-1 uses Switch's gate (the weight is $p$ itself; renormalising one weight would make it 1 and the router would learn nothing from the task); top-$k \ge 2$ renormalises (Mixtral). The twin starts from the same weights and sees the same batches, with $\alpha = 0$.

**What to see.** Without the aux loss the router drifts toward collapse: an expert that gets more tokens early learns faster, becomes more useful, and the task gradient sends it still more tokens (bright rows in the heatmap). At the defaults a few experts end up with most tokens (load CV about 0.6–1.2; one expert taking everything would be $\sqrt{E-1} \approx 2.6$). With $\alpha = 0.05$ the load evens out and the aux loss is lower, for about the same task loss: the table above the plots gives each run's load CV as measured, the mean of its last 10 steps. The last plot shows which characters each expert ended up taking.

**Load CV** = std / mean of the tokens per expert: 0 when balanced, $\sqrt{E/k - 1}$ when every token goes to the same $k$ experts (2.65 for $E=8$, $k=1$).
""",
        # figures (viz.moe)
        "moe_fig_wait_load": "Press “Train”: each expert's share of the tokens streams in here, step by step",
        "moe_fig_wait_curves": "… and here the load's coefficient of variation, the aux loss and the task loss",
        "moe_fig_wait_chars": "After training: which characters each expert took",
        "moe_fig_act_values": "f(x)", "moe_fig_act_derivs": "f′(x) by autograd", "moe_fig_x": "x",
        "moe_fig_relu": "ReLU", "moe_fig_gelu": "GELU (exact, x·Φ(x))", "moe_fig_gelu_tanh": "GELU (tanh approx.)", "moe_fig_silu": "SiLU / Swish",
        "moe_fig_geglu": "GEGLU on a = b = x: x·GELU(x)", "moe_fig_swiglu": "SwiGLU on a = b = x: x·SiLU(x)",
        "moe_fig_gated_title": "{name}(a, b) = {act}(a) · b over the gate input a and the value b",
        "moe_fig_gate_a": "gate pre-activation a = x·W_gate", "moe_fig_value_b": "value b = x·W_up",
        "moe_fig_diagonal": "a = b (the slice plotted above)", "moe_fig_b_one": "b = 1: the bare activation",
        "moe_fig_sizes_title": "d = {d:,}: dense GELU FFN (h = 4d) vs SwiGLU (h = 8/3·d → {h:,}, a multiple of {m:,})",
        "moe_fig_dense": "dense GELU, h = {h:,}", "moe_fig_exact": "SwiGLU, h = 8/3·d = {h:.1f}", "moe_fig_rounded": "SwiGLU, h = {h:,}",
        "moe_fig_in": "W_in", "moe_fig_out": "W_out", "moe_fig_gate": "W_gate", "moe_fig_up": "W_up", "moe_fig_down": "W_down", "moe_fig_weights": "weights",
        "moe_fig_route_title": "Router probabilities (circles: the top-{k} choices; ✕: dropped by capacity) and each expert's load",
        "moe_fig_token": "token", "moe_fig_expert": "expert", "moe_fig_prob": "p", "moe_fig_load": "assignments",
        "moe_fig_kept": "processed", "moe_fig_dropped": "dropped by capacity", "moe_fig_balanced": "balanced N·k/E = {v:g}",
        "moe_fig_capacity": "capacity C = {c}", "moe_fig_shared": "S{i} shared", "moe_fig_shared_hover": "shared expert: every token",
        "moe_fig_shared_weight": "shared experts' weight (1, or sigmoid(x · w_g) when gated)",
        "moe_fig_flow_title": "Where the assignments went: {dropped} of {total} dropped",
        "moe_fig_choice": "choice {r}", "moe_fig_choices": "choice", "moe_fig_residual": "dropped → residual only", "moe_fig_routed_norm": "‖routed output‖ / ‖x‖ per token",
        "moe_fig_slots_all": "all {k} slots kept", "moe_fig_slots_some": "some dropped", "moe_fig_slots_none": "all dropped: y = x + 0",
        "moe_fig_loss_title": "aux loss {aux:.3f} (balanced {k}, collapsed {E}) · z-loss {z:.3f}",
        "moe_fig_aux": "aux = E·Σ f·P", "moe_fig_aux_balanced": "balanced = k", "moe_fig_aux_collapsed": "collapsed = E",
        "moe_fig_params": "parameters", "moe_fig_flops": "FLOPs per token", "moe_fig_moe_total": "MoE, all experts",
        "moe_fig_moe_active": "MoE, active per token", "moe_fig_dense_eq": "dense FFN, same active size",
        "moe_fig_train_load_title": "Share of assignments per expert over training steps",
        "moe_fig_run_aux": "aux coefficient {c:g}", "moe_fig_run_no_aux": "without aux loss (twin, same seed)",
        "moe_fig_step": "step", "moe_fig_share": "share",
        "moe_fig_curves_cv": "load CV (std/mean; 0 = balanced)", "moe_fig_curves_aux": "aux loss (dotted: k = balanced; E = collapsed)",
        "moe_fig_curves_task": "task loss (nats per character)",
        "moe_fig_chars_title": "What each expert took at the end: share of each character's tokens",
        "moe_fig_char": "current character",
        # server-built text (components.moe)
        "moe_sizes_md": "h = 8/3 · {d:,} = {exact:,.2f} → Llama's rule `int(2·4d/3)` = {rule:,}, rounded up to a "
                        "multiple of {m:,}: **{h:,}**. Dense FFN: 2·d·4d = **{dense:,}** weights; "
                        "SwiGLU: 3·d·h = **{swiglu:,}** ({change:+.2%}).",
        "moe_route_md": "{n} tokens × k = {k} → {assignments} assignments · capacity C = {capacity} · dropped **{dropped}** · "
                        "aux loss **{aux:.4f}** (balanced {k}, collapsed {E}) · z-loss **{z:.4f}** · parameters: "
                        "total {total:,}, active per token {active:,} ({share:.1%}), dense FFN of equal active size {dense:,}",
        "moe_route_ties": "\n\n**{n} of {N} tokens tie** between their k-th choice and an expert left out (equal "
                          "probabilities): `topk` picks which, not the router, so the load can pile onto a few experts "
                          "while the aux loss reads balanced (its mean probabilities P are even).",
        "moe_train_head": "step **{step} / {steps}** (means over the last {n} steps)",
        "moe_train_cols": "| run | load CV | aux loss | task loss | dropped |",
        "moe_train_row": "| {run} | {cv:.3f} | {aux:.3f} | {task:.3f} | {dropped:.1%} |",
        "moe_train_run_aux": "α = {c:g}",
        "moe_train_run_no_aux": "α = 0 (twin)",
        # messages (models.ffn, models.moe, models.moe_explore, models.moe_train)
        "moe_err_no_activation": "choose at least one activation from {choices}",
        "moe_err_x_order": "x from = {x_min} must be smaller than x to = {x_max}",
        "moe_err_top_k": "top-k = {top_k} must be at most the number of experts, {experts}: "
                         "a token cannot choose more experts than there are",
        "moe_err_capacity": "capacity factor = {value}: must be a number above 0 (or off, for no limit)",
        "moe_err_shared_gate": "the shared gate scales the shared experts' output: set Shared experts to at least 1",
        "moe_err_text_type": "the text must be a string",
        "moe_err_text_chars": "the text has {chars:,} characters: at most {max:,}",
        "moe_err_text_empty": "type at least one word (or choose random tokens)",
        "moe_err_text_tokens": "the text has {tokens} tokens: at most {max}",
        "term_moe_activations": "activation",
        "term_moe_x_min": "x from",
        "term_moe_x_max": "x to",
        "term_moe_gated": "gated unit",
        "term_moe_d_ffn": "d_model",
        "term_moe_multiple": "multiple_of",
        "term_moe_source": "input",
        "term_moe_n_random": "random tokens",
        "term_moe_experts": "experts E",
        "term_moe_top_k": "top-k",
        "term_moe_d_model": "d_model",
        "term_moe_d_hidden": "expert hidden size h",
        "term_moe_expert_kind": "expert FFN",
        "term_moe_capacity": "capacity factor",
        "term_moe_shared": "shared experts",
        "term_moe_sharpness": "router sharpness",
        "term_moe_skew": "router bias toward E1",
        "term_moe_aux_coef": "aux-loss coefficient",
        "term_moe_z_coef": "z-loss coefficient",
        "term_moe_use_capacity": "capacity limit",
        "term_moe_shared_gate": "shared-expert gate",
        "term_moe_compare": "twin without the aux loss",
    },
    "zh-CN": {
        "tab_moe": "FFN 与 MoE",
        "moe_intro": "先看 Transformer 的前馈网络，再看它的稀疏版本：路由器把每个词元送到 E 个专家 FFN 中的 k 个。"
                     "所有结果都由 PyTorch 实时计算。",
        "moe_sub_ffn": "FFN 与激活函数", "moe_sub_route": "路由", "moe_sub_train": "训练",
        "moe_activations": "激活函数（门控类沿 a = b = x 取值）",
        "moe_act_relu": "ReLU", "moe_act_gelu": "GELU（精确）", "moe_act_gelu_tanh": "GELU（tanh 近似）",
        "moe_act_silu": "SiLU / Swish", "moe_act_geglu": "GEGLU", "moe_act_swiglu": "SwiGLU",
        "moe_x_min": "x 起点", "moe_x_max": "x 终点", "moe_gated": "门控单元（在 (a, b) 平面上）",
        "moe_d_ffn": "d_model（FFN 的输入输出维度）",
        "moe_multiple": "SwiGLU 隐藏维度向上取整到此数的倍数",
        "moe_multiple_info": "Llama-2 用 256（d = 4096 → 11008）",
        "moe_act_plot": "激活函数及其导数", "moe_gated_plot": "门控单元在两个输入上的取值",
        "moe_sizes_plot": "参数量相同的稠密 FFN 与 SwiGLU",
        "moe_source": "输入", "moe_source_text": "一段文本的词元", "moe_source_random": "带种子的随机向量",
        "moe_text": "文本（单词、标点和每个汉字各为一个词元）",
        "moe_n_random": "随机词元数", "moe_seed": "随机种子（词元向量和权重）",
        "moe_experts": "专家数 E", "moe_top_k": "每个词元的专家数 k", "moe_d_model": "d_model",
        "moe_d_hidden": "专家隐藏维度 h", "moe_expert_kind": "专家 FFN",
        "moe_kind_swiglu": "SwiGLU（3 个矩阵，Mixtral）", "moe_kind_relu": "ReLU MLP（2 个矩阵，Switch）",
        "moe_use_capacity": "限制每个专家的容量", "moe_capacity": "容量因子 c（C = ⌈c·k·N/E⌉）",
        "moe_shared": "共享专家（始终激活，DeepSeekMoE）",
        "moe_shared_gate": "共享专家加门控：× sigmoid(x · w_g)（Qwen2-MoE）",
        "moe_sharpness": "路由器锐度（乘在路由器权重上）", "moe_skew": "路由器对专家 E1 的偏置",
        "moe_route_plot": "路由概率与专家负载", "moe_flow_plot": "被丢弃的分配",
        "moe_loss_plot": "辅助损失；稠密与稀疏对比",
        "moe_aux_coef": "辅助损失系数 α（0 = 不加）", "moe_z_coef": "z-loss 系数",
        "moe_train_capacity": "训练时的容量因子", "moe_steps": "步数",
        "moe_train_seed": "随机种子（权重和批次）",
        "moe_compare": "同时训练一个没有辅助损失的对照模型（同一种子、同样的批次）",
        "moe_train_button": "开始训练", "moe_stop": "停止",
        "moe_train_status_idle": "点击**开始训练**：一个很小的 MoE 语言模型逐字符学习内置的英文文本，图表会实时更新。",
        "moe_train_load_plot": "每一步的专家负载", "moe_train_curves_plot": "负载均衡与损失",
        "moe_train_chars_plot": "每个专家学会了接收哪些字符",
        "moe_ffn_explain": r"""
**FFN。** 每个位置都经过 $\mathrm{FFN}(x) = W_{\mathrm{out}}\,\phi(W_{\mathrm{in}}\,x)$，原始 Transformer 的隐藏维度 $h = 4d$（两个矩阵，共 $2\cdot d\cdot 4d = 8d^2$ 个权重）。

**激活函数**（左：$f$；右：由 `torch.autograd` 求出的 $f'$，测试中已与解析式核对）：
- ReLU $\max(0, x)$：导数为 0 或 1（autograd 在 $x = 0$ 处取 0），对所有负输入都“死”掉。
- GELU $x\,\Phi(x)$（BERT、GPT-2）及其 tanh 近似 $\tfrac{x}{2}\big(1+\tanh(\sqrt{2/\pi}\,(x+0.044715x^3))\big)$：两条曲线相差不到 $10^{-3}$。
- SiLU / Swish $x\,\sigma(x)$：光滑，$x<0$ 时略为负（在 $x\approx -1.28$ 处取最小值 $\approx -0.278$），$f'$ 会超过 1。

**门控单元**（Shazeer 2020）：$\mathrm{SwiGLU}(x) = W_{down}\big(\mathrm{SiLU}(x W_{gate}) \odot x W_{up}\big)$；GEGLU 用 GELU。门控单元接收*两个*数：门输入 $a$ 和值分支 $b$；下图画出整个平面上的 $\mathrm{act}(a)\cdot b$。上面的曲线取对角线 $a = b = x$（门与值分支共用同一权重时的情形），即 $x\cdot\mathrm{act}(x)$：它像 $x^2$ 一样增长，任何普通激活函数都不会这样。沿 $b = 1$（绿线）看到的就是激活函数本身。

**参数量相同。** SwiGLU 有三个矩阵，参数量相同要求 $3\,d\,h = 2\cdot d\cdot 4d$，即 $h = \tfrac{8}{3}d$。Meta 的 Llama 代码先算 `int(2 * 4d / 3)`，再*向上*取整到 `multiple_of` 的倍数（Llama-2 为 256：$d=4096 \to 10922 \to 11008$）。柱状图中的两个参数量都来自用 PyTorch 实际构建的模块（在 meta 设备上构建：只有形状，不占内存）。
""",
        "moe_route_explain": r"""
**路由。** 对每个词元 $x$：先算出 $E$ 个专家上的路由概率 $p = \mathrm{softmax}(x W_r)$，选出 top-$k$ 个专家，把它们的权重在这 $k$ 个之间重新归一化（Mixtral），再算 $y = \sum_{j \in \text{top-}k} w_j\,\mathrm{expert}_j(x)$ 加上共享专家的输出（始终激活，DeepSeekMoE：权重 1；Qwen2-MoE 加门控：× sigmoid(x · w_g)）。整个块再加上残差：$x + y$。

**容量。** 容量因子为 $c$ 时，每个专家最多接收 $C = \lceil c\cdot k\cdot N/E \rceil$ 个分配（$c = 1$：恰好是均衡时的份额）。优先级（GShard）：先满足所有词元的第一选择，再处理任何词元的第二选择；同一顺位内按词元顺序。被丢弃的分配没有任何贡献；所有选择都被丢弃的词元得到 $y = 0$，只经残差原样传下去（桑基图右侧零值处的红色 ✕）。

**Switch 负载均衡损失** $\;\mathcal{L}_{aux} = E\sum_i f_i\,P_i$，$f_i$ 为把专家 $i$ 选入自己 top-$k$ 的词元比例（$\sum_i f_i = k$），$P_i$ 为专家 $i$ 的平均路由概率。均衡时（$f_i = k/E$，$P_i = 1/E$）等于 $k$；所有词元都以概率 1 选同一批专家时等于 $E$。$f$ 是计数（没有梯度），梯度经由 $P$ 回传，把概率从过载的专家身上移走。拖动*路由器对专家 E1 的偏置*，看它向 $E$ 攀升。

**路由器 z-loss**（ST-MoE）$\;\mathcal{L}_z = \frac{1}{N}\sum_t \big(\log\sum_i e^{z_{t,i}}\big)^2$ 让 logits 保持较小（在 bf16 下数值稳定）；logits 全为 0 时它等于 $(\ln E)^2$。*路由器锐度*会放大 logits，z-loss 随之增大。

**稠密与稀疏。** 该层存有 $E$ 个专家，但每个词元只用到其中 $k$ 个（另加路由器和共享专家）：计算量相当于宽度为 $k\cdot h$ 的稠密 FFN，参数量却是它的 $E/k$ 倍。所有计数都来自实际构建的模块。
""",
        "moe_train_explain": r"""
**训练过程。** 一个用混合专家层代替 FFN 的小 Transformer（即本应用各页共用的那个 Transformer：一个 Pre-LN 块，先是带 RoPE 的因果自注意力，2 个注意力头，$d = 32$，然后是由 SwiGLU 专家组成的 MoE 层，$h = 64$）学习预测内置英文文本的下一个字符；每步 2,048 个词元，AdamW。损失 $= \mathcal{L}_{task} + \alpha\,\mathcal{L}_{aux} + \beta\,\mathcal{L}_z$。top-1 采用 Switch 的门控（权重就是 $p$ 本身；若对单个权重重新归一化，它恒为 1，路由器就无法从任务损失中学到任何东西）；top-$k \ge 2$ 重新归一化（Mixtral）。对照模型从相同的权重出发、看到相同的批次，只是 $\alpha = 0$。

**观察要点。** 没有辅助损失时路由会走向坍缩：早期多分到词元的专家学得更快、变得更有用，任务梯度又把更多词元送给它（热力图中的亮行）。默认设置下，少数几个专家最终拿走了大部分词元（负载变异系数约 0.6–1.2；全部词元都给一个专家时是 $\sqrt{E-1} \approx 2.6$）。$\alpha = 0.05$ 时负载趋于均衡，辅助损失更低，任务损失则几乎不变：图表上方的表格给出每次运行实测的负载变异系数（最后 10 步的均值）。最后一张图显示每个专家最终接收了哪些字符。

**负载变异系数** = 每个专家词元数的标准差 / 均值：均衡时为 0，所有词元都去同样 $k$ 个专家时为 $\sqrt{E/k - 1}$（$E=8$、$k=1$ 时为 2.65）。
""",
        # figures (viz.moe)
        "moe_fig_wait_load": "点击“开始训练”：每个专家分到的词元比例会逐步出现在这里",
        "moe_fig_wait_curves": "……这里则是负载变异系数、辅助损失和任务损失",
        "moe_fig_wait_chars": "训练结束后：每个专家接收了哪些字符",
        "moe_fig_act_values": "f(x)", "moe_fig_act_derivs": "f′(x)（自动求导）", "moe_fig_x": "x",
        "moe_fig_relu": "ReLU", "moe_fig_gelu": "GELU（精确，x·Φ(x)）", "moe_fig_gelu_tanh": "GELU（tanh 近似）", "moe_fig_silu": "SiLU / Swish",
        "moe_fig_geglu": "GEGLU 取 a = b = x：x·GELU(x)", "moe_fig_swiglu": "SwiGLU 取 a = b = x：x·SiLU(x)",
        "moe_fig_gated_title": "{name}(a, b) = {act}(a) · b，横轴为门输入 a，纵轴为值分支 b",
        "moe_fig_gate_a": "门控的预激活值 a = x·W_gate", "moe_fig_value_b": "值分支 b = x·W_up",
        "moe_fig_diagonal": "a = b（即上图画出的切片）", "moe_fig_b_one": "b = 1：激活函数本身",
        "moe_fig_sizes_title": "d = {d:,}：稠密 GELU FFN（h = 4d）对比 SwiGLU（h = 8/3·d → {h:,}，{m:,} 的倍数）",
        "moe_fig_dense": "稠密 GELU，h = {h:,}", "moe_fig_exact": "SwiGLU，h = 8/3·d = {h:.1f}", "moe_fig_rounded": "SwiGLU，h = {h:,}",
        "moe_fig_in": "W_in", "moe_fig_out": "W_out", "moe_fig_gate": "W_gate", "moe_fig_up": "W_up", "moe_fig_down": "W_down", "moe_fig_weights": "权重数",
        "moe_fig_route_title": "路由概率（圆圈：top-{k} 选择；✕：因容量被丢弃）与每个专家的负载",
        "moe_fig_token": "词元", "moe_fig_expert": "专家", "moe_fig_prob": "p", "moe_fig_load": "分配数",
        "moe_fig_kept": "已处理", "moe_fig_dropped": "因容量被丢弃", "moe_fig_balanced": "均衡 N·k/E = {v:g}",
        "moe_fig_capacity": "容量 C = {c}", "moe_fig_shared": "S{i} 共享", "moe_fig_shared_hover": "共享专家：每个词元都经过",
        "moe_fig_shared_weight": "共享专家的权重（1；加门控时为 sigmoid(x · w_g)）",
        "moe_fig_flow_title": "分配的去向：{total} 个中丢弃 {dropped} 个",
        "moe_fig_choice": "第 {r} 选", "moe_fig_choices": "第几选", "moe_fig_residual": "丢弃 → 只走残差", "moe_fig_routed_norm": "每个词元的 ‖路由输出‖ / ‖x‖",
        "moe_fig_slots_all": "{k} 个槽位全部保留", "moe_fig_slots_some": "部分被丢弃", "moe_fig_slots_none": "全部丢弃：y = x + 0",
        "moe_fig_loss_title": "辅助损失 {aux:.3f}（均衡 {k}，坍缩 {E}）· z-loss {z:.3f}",
        "moe_fig_aux": "辅助损失 = E·Σ f·P", "moe_fig_aux_balanced": "均衡 = k", "moe_fig_aux_collapsed": "坍缩 = E",
        "moe_fig_params": "参数量", "moe_fig_flops": "每个词元的 FLOPs", "moe_fig_moe_total": "MoE，全部专家",
        "moe_fig_moe_active": "MoE，每个词元激活的部分", "moe_fig_dense_eq": "激活规模相同的稠密 FFN",
        "moe_fig_train_load_title": "训练过程中每个专家分到的份额",
        "moe_fig_run_aux": "辅助损失系数 {c:g}", "moe_fig_run_no_aux": "无辅助损失（对照模型，同一种子）",
        "moe_fig_step": "步", "moe_fig_share": "份额",
        "moe_fig_curves_cv": "负载变异系数（std/mean；0 = 均衡）", "moe_fig_curves_aux": "辅助损失（虚线：k = 均衡；E = 坍缩）",
        "moe_fig_curves_task": "任务损失（nats/字符）",
        "moe_fig_chars_title": "训练结束时每个专家接收的内容：各字符的词元分给各专家的比例",
        "moe_fig_char": "当前字符",
        # server-built text (components.moe)
        "moe_sizes_md": "h = 8/3 · {d:,} = {exact:,.2f} → Llama 的规则 `int(2·4d/3)` = {rule:,}，"
                        "向上取整到 {m:,} 的倍数：**{h:,}**。稠密 FFN：2·d·4d = **{dense:,}** 个权重；"
                        "SwiGLU：3·d·h = **{swiglu:,}**（{change:+.2%}）。",
        "moe_route_md": "{n} 个词元 × k = {k} → {assignments} 个分配 · 容量 C = {capacity} · 丢弃 **{dropped}** · "
                        "辅助损失 **{aux:.4f}**（均衡 {k}，坍缩 {E}）· z-loss **{z:.4f}** · 参数量：总计 {total:,}，"
                        "每个词元激活 {active:,}（{share:.1%}），同等激活规模的稠密 FFN {dense:,}",
        "moe_route_ties": "\n\n**{N} 个词元中有 {n} 个出现并列**：第 k 个选择与一个落选专家的概率相同，由 `topk` "
                          "决定谁入选，而不是路由器；因此负载可能堆在少数专家上，而辅助损失仍显示均衡（平均概率 P 是均匀的）。",
        "moe_train_head": "第 **{step} / {steps}** 步（最后 {n} 步的均值）",
        "moe_train_cols": "| 运行 | 负载变异系数 | 辅助损失 | 任务损失 | 丢弃 |",
        "moe_train_row": "| {run} | {cv:.3f} | {aux:.3f} | {task:.3f} | {dropped:.1%} |",
        "moe_train_run_aux": "α = {c:g}",
        "moe_train_run_no_aux": "α = 0（对照）",
        # messages (models.ffn, models.moe, models.moe_explore, models.moe_train)
        "moe_err_no_activation": "请至少选择一个激活函数（可选：{choices}）",
        "moe_err_x_order": "x 起点 = {x_min} 必须小于 x 终点 = {x_max}",
        "moe_err_top_k": "top-k = {top_k} 不能超过专家数 {experts}：一个词元不可能选出比现有专家更多的专家",
        "moe_err_capacity": "容量因子 = {value}：必须大于 0（或关闭，不限容量）",
        "moe_err_shared_gate": "共享门控缩放的是共享专家的输出：请把共享专家数设为至少 1",
        "moe_err_text_type": "文本必须是字符串",
        "moe_err_text_chars": "文本有 {chars:,} 个字符：最多 {max:,} 个",
        "moe_err_text_empty": "请至少输入一个词（或选择随机词元）",
        "moe_err_text_tokens": "文本有 {tokens} 个词元：最多 {max} 个",
        "term_moe_activations": "激活函数",
        "term_moe_x_min": "x 起点",
        "term_moe_x_max": "x 终点",
        "term_moe_gated": "门控单元",
        "term_moe_d_ffn": "d_model",
        "term_moe_multiple": "取整倍数 multiple_of",
        "term_moe_source": "输入",
        "term_moe_n_random": "随机词元数",
        "term_moe_experts": "专家数 E",
        "term_moe_top_k": "每个词元的专家数 top-k",
        "term_moe_d_model": "d_model",
        "term_moe_d_hidden": "专家隐藏维度 h",
        "term_moe_expert_kind": "专家 FFN",
        "term_moe_capacity": "容量因子",
        "term_moe_shared": "共享专家数",
        "term_moe_sharpness": "路由器锐度",
        "term_moe_skew": "路由器对 E1 的偏置",
        "term_moe_aux_coef": "辅助损失系数",
        "term_moe_z_coef": "z-loss 系数",
        "term_moe_use_capacity": "容量限制",
        "term_moe_shared_gate": "共享专家门控",
        "term_moe_compare": "无辅助损失的对照模型",
    },
}
