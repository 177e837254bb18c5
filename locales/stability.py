"""The training-stability section of the Normalization tab (QK-norm, z-loss, softmax overflow):
labels, figure text, findings and the backend's messages (:mod:`models.stability`)."""

EXPLAIN_EN = r"""
**Why attention logits grow.** A head's logit is $q\cdot k/\sqrt{d}$ with $q=W_Q x$, $k=W_K x$, so it can reach $\|q\|\,\|k\|/\sqrt d$. Nothing in the loss stops $W_Q$ and $W_K$ from growing: sharper attention often lowers the loss a little, and Adam moves every weight by about the learning rate per step whatever its gradient, so at a high learning rate $\|W_Q\|\,\|W_K\|$, and with it the logits, grow step after step (the left panel, log scale). Past some size softmax puts all its weight on one key: the head's entropy falls to 0 (the middle panel, "entropy collapse", Zhai et al. 2023), its gradient vanishes, and the loss stops falling or rises.

**What QK-norm fixes.** Normalise each head's $q$ and $k$ (LayerNorm or RMSNorm over $d_\text{head}$, with learned gains $g$) before the dot product (Dehghani et al. 2023; OLMo 2, Qwen3). Then $\|\hat q\|\le \max|g_q|\sqrt{d}$ and the logit is bounded by $\max|g_q|\max|g_k|\sqrt{d}$ (plus the norms' biases): it can only grow as fast as the gains, a handful of numbers. The tests check this bound on random weights.

**What the z-loss fixes.** The output softmax is unchanged if every logit moves by the same amount, so $\log Z=\log\sum_i e^{z_i}$ is free to drift; far from 0 it costs precision in bfloat16 and can diverge (Wortsman et al. § 3.2). The z-loss adds $c\cdot\operatorname{mean}(\log Z)^2$ (PaLM, $c=10^{-4}$; ST-MoE for routers) and pulls $\log Z$ to 0 (the right panel). It does nothing for attention logits: that is QK-norm's job.

**Why subtract the max.** $e^{x}$ overflows float16 past $x=\ln 65504\approx 11.09$ (float32 and bfloat16: $\approx 88.7$); the sum overflows even earlier. $\operatorname{softmax}(x)=\operatorname{softmax}(x-\max x)$, and every $e^{x-\max x}\le 1$, so the stable form never overflows; PyTorch's `softmax` does this for you. Large logits still hurt in low precision: a logit of 1000 in bfloat16 has a rounding step of 4.

**Their setting and ours.** Wortsman et al. 2023 train pre-LN decoders from 9 M to 1.2 B parameters on C4 for 10⁵ steps, AdamW with warm-up and cosine decay, learning rates $3\cdot10^{-4}$ to $3\cdot10^{-1}$, bfloat16 mixed precision; attention-logit growth breaks the larger models at high rates, and QK-layernorm removes it. Here: 2 layers, $d=64$, 4 heads, a character model of the shipped English text, 8 sequences of 32 characters per step, 200 steps, float32, AdamW (β = 0.9, 0.95, no weight decay), 10 % linear warm-up then cosine to 10 %, no gradient clipping. The model is so small that the logits grow within a few hundred steps only at rates of 0.03 and above; at 0.1, over seeds 0–2, the final loss is 0.25–0.5 nats lower with QK-norm and the largest logit without it reaches 10⁴ (with it: 19–35; measured on two CPUs, whose kernels sum in different orders, so a seed's numbers differ a little between machines). Without mixed precision the z-loss's failure does not show: you see log Z pulled to 0, not a divergence it prevents. At 0.3 and above the norms' gains grow too and the gap narrows (seed 0 at 0.3: none); at 1 every variant fails.
"""

EXPLAIN_ZH = r"""
**注意力 logit 为什么会增长。** 一个注意力头的 logit 是 $q\cdot k/\sqrt{d}$，其中 $q=W_Q x$、$k=W_K x$，所以它最大可达 $\|q\|\,\|k\|/\sqrt d$。损失函数里没有任何东西阻止 $W_Q$、$W_K$ 变大：更尖锐的注意力往往能让损失略微下降，而 Adam 每一步让每个权重移动大约一个学习率，与梯度大小无关；因此在高学习率下 $\|W_Q\|\,\|W_K\|$ 以及 logit 一步步增长（左图，对数坐标）。超过一定大小后，softmax 把全部权重放在一个键上：该头的熵降到 0（中图，“熵坍缩”，Zhai 等 2023），梯度消失，损失不再下降甚至上升。

**QK-norm 解决什么。** 在点积之前对每个头的 $q$ 和 $k$ 做归一化（在 $d_\text{head}$ 上做 LayerNorm 或 RMSNorm，带可学习的增益 $g$；Dehghani 等 2023；OLMo 2、Qwen3）。于是 $\|\hat q\|\le \max|g_q|\sqrt{d}$，logit 的上界是 $\max|g_q|\max|g_k|\sqrt{d}$（再加上归一化的偏置）：它最多只能和增益（寥寥几个数）增长得一样快。测试在随机权重上检查了这个上界。

**z-loss 解决什么。** 所有 logit 同时平移时输出 softmax 不变，所以 $\log Z=\log\sum_i e^{z_i}$ 可以自由漂移；远离 0 时在 bfloat16 下会损失精度，甚至发散（Wortsman 等 § 3.2）。z-loss 加上 $c\cdot\operatorname{mean}(\log Z)^2$（PaLM 取 $c=10^{-4}$；ST-MoE 用在路由器上），把 $\log Z$ 拉回 0（右图）。它对注意力 logit 不起作用：那是 QK-norm 的事。

**为什么要减去最大值。** 当 $x>\ln 65504\approx 11.09$ 时 $e^{x}$ 在 float16 中溢出（float32 和 bfloat16：$\approx 88.7$），求和溢出得更早。$\operatorname{softmax}(x)=\operatorname{softmax}(x-\max x)$，而每个 $e^{x-\max x}\le 1$，所以稳定形式永远不会溢出；PyTorch 的 `softmax` 已经替你这样做了。即便如此，大 logit 在低精度下仍然有害：bfloat16 中 1000 附近的舍入步长是 4。

**论文的设置与这里的设置。** Wortsman 等（2023）在 C4 上训练 9 M 到 1.2 B 参数的 Pre-LN 解码器，训练 10⁵ 步，AdamW 加预热和余弦衰减，学习率 $3\cdot10^{-4}$ 到 $3\cdot10^{-1}$，bfloat16 混合精度；在高学习率下，注意力 logit 的增长让较大的模型训练失败，QK-layernorm 消除了这一问题。这里：2 层，$d=64$，4 个注意力头，在自带英文文本上训练的字符级模型，每步 8 个 32 字符的序列，200 步，float32，AdamW（β = 0.9、0.95，无权重衰减），前 10 % 线性预热，然后余弦衰减到 10 %，不做梯度裁剪。模型很小，只有学习率达到 0.03 以上时，logit 才会在几百步内增长；在 0.1 下（种子 0–2），加 QK-norm 的最终损失低 0.25–0.5 nats，不加时最大 logit 达到 10⁴（加上后：19–35；在两种 CPU 上测得，它们的内核求和顺序不同，所以同一种子的数字在不同机器上略有差异）。没有混合精度，z-loss 所防止的失败不会出现：你看到的是 log Z 被拉回 0，而不是它阻止了一次发散。在 0.3 及以上，归一化的增益也会增长，差距缩小（种子 0 在 0.3 下：没有差距）；到 1 时所有变体都会失败。
"""

STRINGS = {
    "en": {
        # backend messages and field names
        "stability_err_lr_order": "the smallest learning rate ({low}) must not exceed the largest ({high})",
        "stability_err_work": "{runs} runs × {steps} steps × {layers} layers × width {width} is too much work for "
                              "one request ({units} units, at most {limit}): use fewer learning rates, fewer "
                              "steps, fewer layers or a smaller width",
        "term_stability_lr_min": "smallest learning rate",
        "term_stability_lr_max": "largest learning rate",
        "term_stability_n_lrs": "number of learning rates",
        "term_stability_z_loss": "z-loss coefficient",
        "term_stability_logit_scale": "logit scale",
        "stability_found_nonfinite": "{run}: {what} became non-finite at step {step}; the run stopped there",
        "stability_found_collapse": "{run}: attention entropy fell below 0.1 at step {step} (a head attends to one key)",
        "stability_what_loss": "the loss", "stability_what_gradient": "the gradient",
        "stability_what_logit": "an attention logit", "stability_what_log_z": "log Z",
        # figures
        "stability_overflow_title": "The same logits (the largest is {scale}) through softmax in three dtypes",
        "stability_overflow_panel": "{dtype} (largest finite logit {largest})",
        "stability_method_naive": "naive exp(x) / Σ exp(x)",
        "stability_method_stable": "stable exp(x − max) / Σ exp(x − max)",
        "stability_prob": "probability", "stability_logit": "logit x",
        "stability_overflow_row": "**{dtype}**: exp(x) is finite up to x = {largest}; naive Σ exp(x) = {total}, "
                                  "naive softmax {naive}, stable softmax {stable}",
        "stability_ok": "finite, sums to 1", "stability_overflowed": "**overflowed (inf/NaN)**",
        "stability_sum_lost": "**broken: every value finite, but they sum to {total}** (exp(x) / inf = 0)",
        "stability_variant_plain": "no fix", "stability_variant_qk_norm": "QK-norm",
        "stability_variant_z_loss": "z-loss", "stability_variant_both": "QK-norm + z-loss",
        "stability_final_loss": "final loss (nats)", "stability_diverged": "diverged",
        "stability_final_title": "Final loss against the learning rate ({steps} steps each; ✕ = diverged)",
        "stability_lr": "peak learning rate (AdamW)",
        "stability_curves_title": "At learning rate {lr}: what grows during training",
        "stability_panel_logit": "largest attention logit (per layer)",
        "stability_panel_entropy": "worst head's attention entropy",
        "stability_panel_log_z": "log Z of the output softmax",
        "stability_layer": "layer {layer}", "stability_logit_axis": "max q·k/√d (log scale)",
        "stability_nats": "nats", "stability_step": "step",
        "stability_summary": "**At learning rate {lr}:** final loss {plain} without QK-norm, {qk} with it; the "
                             "largest attention logit {logit_plain} against {logit_qk}. log Z ends at {z_plain} "
                             "without the z-loss and {z_loss} with it.",
        "stability_run": "{variant} at learning rate {lr}",
        "stability_status": "learning rate {i} of {n} ({lr}) · step {step} of {steps}",
        # widgets
        "stability_heading": "### 4 · Training stability: QK-norm and the z-loss",
        "stability_intro": "Large models diverge in two known ways: attention logits grow until softmax puts all "
                           "its weight on one key, and the output logits drift. Wortsman et al. (2023) showed "
                           "both on models small enough to train in minutes. Reproduce it here: four small models "
                           "per learning rate (no fix, QK-norm, z-loss, both) from the same weights on the same "
                           "batches.",
        "stability_overflow_heading": "**Softmax overflow**: why large logits break a naive softmax in half precision",
        "stability_scale": "Largest logit",
        "stability_sweep_heading": "**Learning-rate sweep** (streams; about a minute at the defaults)",
        "stability_lr_min": "Smallest learning rate", "stability_lr_max": "Largest learning rate",
        "stability_n_lrs": "Learning rates (log-spaced)", "stability_steps": "Steps per run",
        "stability_width": "Width d_model", "stability_z_coef": "z-loss coefficient",
        "stability_seed": "Seed (weights and batches)",
        "stability_run_button": "Run the sweep", "stability_stop": "Stop",
        "stability_overflow_plot": "Softmax in float32, bfloat16, float16",
        "stability_final_plot": "Final loss against the learning rate",
        "stability_curves_plot": "Attention logits, entropy and log Z over steps",
        "stability_status_label": "Progress",
        "stability_wait_sweep": "Press “Run the sweep”: 4 models per learning rate train here, streamed",
        "stability_explain": EXPLAIN_EN,
    },
    "zh-CN": {
        "stability_err_lr_order": "最小学习率（{low}）不能大于最大学习率（{high}）",
        "stability_err_work": "{runs} 次运行 × {steps} 步 × {layers} 层 × 宽度 {width}，对一次请求来说计算量太大"
                              "（{units} 个单位，最多 {limit}）：请减少学习率个数、步数、层数或宽度",
        "term_stability_lr_min": "最小学习率",
        "term_stability_lr_max": "最大学习率",
        "term_stability_n_lrs": "学习率个数",
        "term_stability_z_loss": "z-loss 系数",
        "term_stability_logit_scale": "logit 尺度",
        "stability_found_nonfinite": "{run}：第 {step} 步{what}变成了非有限值，该运行就此停止",
        "stability_found_collapse": "{run}：第 {step} 步注意力熵降到 0.1 以下（一个注意力头只关注一个键）",
        "stability_what_loss": "损失", "stability_what_gradient": "梯度",
        "stability_what_logit": "某个注意力 logit", "stability_what_log_z": "log Z",
        "stability_overflow_title": "同一组 logit（最大为 {scale}）分别用三种数据类型做 softmax",
        "stability_overflow_panel": "{dtype}（最大有限 logit {largest}）",
        "stability_method_naive": "朴素 exp(x) / Σ exp(x)",
        "stability_method_stable": "稳定 exp(x − max) / Σ exp(x − max)",
        "stability_prob": "概率", "stability_logit": "logit x",
        "stability_overflow_row": "**{dtype}**：x 不超过 {largest} 时 exp(x) 有限；朴素 Σ exp(x) = {total}，"
                                  "朴素 softmax {naive}，稳定 softmax {stable}",
        "stability_ok": "有限，和为 1", "stability_overflowed": "**溢出（inf/NaN）**",
        "stability_sum_lost": "**失效：每个值都有限，但它们的和是 {total}**（exp(x) / inf = 0）",
        "stability_variant_plain": "不加修正", "stability_variant_qk_norm": "QK-norm",
        "stability_variant_z_loss": "z-loss", "stability_variant_both": "QK-norm + z-loss",
        "stability_final_loss": "最终损失（nats）", "stability_diverged": "发散",
        "stability_final_title": "最终损失随学习率的变化（每次 {steps} 步；✕ = 发散）",
        "stability_lr": "峰值学习率（AdamW）",
        "stability_curves_title": "学习率 {lr}：训练中不断增长的量",
        "stability_panel_logit": "最大注意力 logit（每层）",
        "stability_panel_entropy": "最差注意力头的注意力熵",
        "stability_panel_log_z": "输出 softmax 的 log Z",
        "stability_layer": "第 {layer} 层", "stability_logit_axis": "max q·k/√d（对数坐标）",
        "stability_nats": "nats", "stability_step": "步",
        "stability_summary": "**学习率 {lr}：** 不加 QK-norm 的最终损失为 {plain}，加上后为 {qk}；最大注意力 logit "
                             "分别为 {logit_plain} 和 {logit_qk}。不加 z-loss 时 log Z 最后为 {z_plain}，加上后为 {z_loss}。",
        "stability_run": "学习率 {lr} 下的“{variant}”",
        "stability_status": "第 {i} / {n} 个学习率（{lr}）· 第 {step} / {steps} 步",
        "stability_heading": "### 4 · 训练稳定性：QK-norm 与 z-loss",
        "stability_intro": "大模型有两种已知的发散方式：注意力 logit 不断增长，直到 softmax 把全部权重放在一个键上；"
                           "输出 logit 不断漂移。Wortsman 等（2023）在几分钟就能训练完的小模型上展示了这两种现象。"
                           "这里复现这一实验：每个学习率训练四个小模型（不加修正、QK-norm、z-loss、两者都加），"
                           "从相同的权重出发、使用相同的批次。",
        "stability_overflow_heading": "**Softmax 溢出**：为什么大 logit 会让半精度下的朴素 softmax 失效",
        "stability_scale": "最大 logit",
        "stability_sweep_heading": "**学习率扫描**（流式显示；默认设置约一分钟）",
        "stability_lr_min": "最小学习率", "stability_lr_max": "最大学习率",
        "stability_n_lrs": "学习率个数（对数等距）", "stability_steps": "每次运行的步数",
        "stability_width": "宽度 d_model", "stability_z_coef": "z-loss 系数",
        "stability_seed": "随机种子（权重和批次）",
        "stability_run_button": "开始扫描", "stability_stop": "停止",
        "stability_overflow_plot": "float32、bfloat16、float16 下的 softmax",
        "stability_final_plot": "最终损失随学习率的变化",
        "stability_curves_plot": "注意力 logit、熵和 log Z 随步数的变化",
        "stability_status_label": "进度",
        "stability_wait_sweep": "点击“开始扫描”：每个学习率训练 4 个模型，结果流式显示在这里",
        "stability_explain": EXPLAIN_ZH,
    },
}
