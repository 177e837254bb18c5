"""The Attention tab's "Why √d" view: widgets, figures, the Explain text."""
from models.limits import ATTN_ENTROPY_ROWS, ATTN_LOSS_BLOCK, ATTN_LOSS_CHARS, ATTN_MAX_DIM, ATTN_MIN_DIM

STRINGS = {
    "en": {
        "attn_scale_intro": f"Dot products of random vectors grow like √d, so without the 1/√d a softmax over them "
                            f"saturates. Measured on random vectors for d = {ATTN_MIN_DIM} … {ATTN_MAX_DIM}, next to the "
                            "closed forms. Then the trained model with its logits multiplied: removing the scale "
                            "(× √d) or any m > 1 sharpens its heads toward one-hot, m < 1 flattens them toward "
                            "uniform, and either way its loss on held-out text rises.",
        "attn_scale_random_heading": "**Random vectors**",
        "attn_scale_keys": "Keys per softmax row n",
        "attn_scale_seed": "Seed (random q and k)",
        "attn_scale_model_heading": "**The trained model**",
        "attn_scale_scale": "Attention logits",
        "attn_scale_removed": "scale removed: q·k, not q·k/√d",
        "attn_scale_multiplied": "multiplied: m · q·k/√d",
        "attn_scale_multiplier": "m (when multiplied; 1 = as trained)",
        "attn_scale_full_text": "Loss on all the held-out text",
        "term_attn_scale_full_text": "loss on all the held-out text",
        "attn_scale_full_text_info": f"default: the first {ATTN_LOSS_CHARS:,} held-out characters (fast); all: "
                                     "~10,000, about 10× slower the first time",
        "attn_scale_curve": "Random vectors: spread and entropy against d",
        "attn_scale_effect": "The trained model with its scale changed",
        "attn_scale_fig_unscaled": "q·k (no scale)",
        "attn_scale_fig_scaled": "q·k / √d",
        "attn_scale_fig_closed_scaled": "closed form ln n − 1/2 + O(1/n)",
        "attn_scale_fig_closed_unscaled": "closed form, large d: (π²/6)·f₀·E[1/|q|] ∝ 1/√d",
        "attn_scale_fig_uniform": "ln {n}: every key equal",
        "attn_scale_fig_std": "Spread of the scores (std)",
        "attn_scale_fig_entropy": "Entropy of a softmax row over {n} keys",
        "attn_scale_fig_std_axis": "std of the scores",
        "attn_scale_fig_entropy_axis": "entropy (nats)",
        "attn_scale_fig_curve_title": "{rows} rows per d, q and k ~ N(0, I_d), {n} keys per row",
        "attn_scale_fig_times": "× {m}",
        "attn_scale_fig_trained_map": "L{layer} H{head}, as trained",
        "attn_scale_fig_changed_map": "logits {times}",
        "attn_scale_fig_entropy_layers": "Mean row entropy per layer (prompt)",
        "attn_scale_fig_trained": "as trained",
        "attn_scale_fig_uniform_prompt": "uniform head",
        "attn_scale_fig_loss": "Held-out loss {before} → {after} nats/char ({rise}) with the logits {times}, on "
                               "{chars} of {total} held-out characters",
        "attn_scale_explain": rf"""
**Why dot products grow like √d.** If the components of $q$ and $k$ are independent with mean 0 and variance 1, then $q\cdot k = \sum_{{i=1}}^{{d}} q_i k_i$ is a sum of $d$ terms of variance 1: $\mathrm{{Var}}(q\cdot k) = d$, so its standard deviation is $\sqrt d$ (the left panel, measured). Dividing by $\sqrt d$ brings it back to 1 at every width (Vaswani et al. 2017, §3.2.1).

**What that does to a softmax.** Take $n$ scores drawn from $\mathcal N(0, \sigma^2)$. While $\sigma^2 \ll 2\ln n$, the entropy of their softmax is
$$H \approx \ln n - \tfrac{{\sigma^2}}{{2}} - \tfrac{{e^{{\sigma^2}} - 1}}{{2n}} + \tfrac{{\sigma^2 e^{{\sigma^2}}}}{{n}}$$
(with $\mathbb E[e^s] = e^{{\sigma^2/2}}$ and the delta method). With the scale, $\sigma^2 = |q|^2/d \approx 1$ at every $d$, so $H \approx \ln n - \tfrac12$: the dashed blue line, flat in $d$. Without it, $\sigma^2 \approx d$. Past $d \approx 2\ln n$ the softmax *freezes* onto the largest score, and only a near tie between the top two keys leaves any entropy. Averaging a two-way entropy over the gap between the two largest of $n$ normals (density $f_0$ at 0) gives the red dashed line $E[H] \approx \tfrac{{\pi^2}}{{6}} f_0\, E[1/|q|] \propto 1/\sqrt d$. It is a large-$d$ limit, so it sits below the measurement at small $d$.

**Why that hurts.** A one-hot softmax has almost no gradient: $\partial p/\partial s = \mathrm{{diag}}(p) - pp^\top \to 0$. A head whose scores are too spread out cannot learn where to look.

**On the trained model.** The view multiplies every attention logit by $m$. *Scale removed* means $m = \sqrt d$: $\sqrt{{32}} \approx 5.66$ here, or $\sqrt{{48}}$ for MLA, whose $q\cdot k$ spans head_dim + rope_dim. Every head sharpens ($m > 1$) or flattens ($m < 1$); the bars show each layer's mean row entropy both ways. The model learned its weights *with* the scale, so any other $m$ raises its loss. The loss is measured on the first {ATTN_LOSS_CHARS:,} characters of the held-out tail of `en.txt` (or on all of it), in windows of {ATTN_LOSS_BLOCK} characters batched into one forward pass. That is `models.tiny_gpt.validation_loss` with the same window size.

Random vectors: {ATTN_ENTROPY_ROWS} softmax rows per $d$ (32 queries share each draw of keys), seeded.
""",
    },
    "zh-CN": {
        "attn_scale_intro": f"随机向量的点积按 √d 增长，所以不除以 √d 的话，对它们做 softmax 会饱和。下面在 d = {ATTN_MIN_DIM} … "
                            f"{ATTN_MAX_DIM} 的随机向量上实测，并与解析式对比。然后把训练好的模型的缩放去掉或乘上一个倍数："
                            "去掉缩放（× √d）或任何 m > 1 都让注意力头变得尖锐、接近独热（one-hot），m < 1 则让它们变平、"
                            "接近均匀；两种情况下，它在留出文本上的损失都会上升。",
        "attn_scale_random_heading": "**随机向量**",
        "attn_scale_keys": "每个 softmax 行的键数 n",
        "attn_scale_seed": "随机种子（随机的 q 和 k）",
        "attn_scale_model_heading": "**训练好的模型**",
        "attn_scale_scale": "注意力 logit",
        "attn_scale_removed": "去掉缩放：q·k，而不是 q·k/√d",
        "attn_scale_multiplied": "乘以倍数：m · q·k/√d",
        "attn_scale_multiplier": "m（选“乘以倍数”时使用；1 = 与训练时相同）",
        "attn_scale_full_text": "在全部留出文本上计算损失",
        "term_attn_scale_full_text": "在全部留出文本上计算损失",
        "attn_scale_full_text_info": f"默认：前 {ATTN_LOSS_CHARS:,} 个留出字符（快）；全部：约 10,000 个，首次计算约慢 10 倍",
        "attn_scale_curve": "随机向量：分数的离散程度与熵随 d 的变化",
        "attn_scale_effect": "训练好的模型：改变缩放之后",
        "attn_scale_fig_unscaled": "q·k（不缩放）",
        "attn_scale_fig_scaled": "q·k / √d",
        "attn_scale_fig_closed_scaled": "解析式 ln n − 1/2 + O(1/n)",
        "attn_scale_fig_closed_unscaled": "解析式（大 d）：(π²/6)·f₀·E[1/|q|] ∝ 1/√d",
        "attn_scale_fig_uniform": "ln {n}：所有键权重相同",
        "attn_scale_fig_std": "分数的离散程度（标准差）",
        "attn_scale_fig_entropy": "softmax 一行（{n} 个键）的熵",
        "attn_scale_fig_std_axis": "分数的标准差",
        "attn_scale_fig_entropy_axis": "熵（nats）",
        "attn_scale_fig_curve_title": "每个 d 取 {rows} 行，q 和 k ~ N(0, I_d)，每行 {n} 个键",
        "attn_scale_fig_times": "× {m}",
        "attn_scale_fig_trained_map": "L{layer} H{head}，训练时的缩放",
        "attn_scale_fig_changed_map": "logit {times}",
        "attn_scale_fig_entropy_layers": "各层每行的平均熵（提示词）",
        "attn_scale_fig_trained": "训练时的缩放",
        "attn_scale_fig_uniform_prompt": "均匀头",
        "attn_scale_fig_loss": "logit {times} 时，留出损失 {before} → {after} nats/字符（{rise}），在 {total} 个留出字符中的 "
                               "{chars} 个上计算",
        "attn_scale_explain": rf"""
**为什么点积按 √d 增长。** 如果 $q$ 和 $k$ 的各分量相互独立、均值为 0、方差为 1，那么 $q\cdot k = \sum_{{i=1}}^{{d}} q_i k_i$ 是 $d$ 个方差为 1 的项之和：$\mathrm{{Var}}(q\cdot k) = d$，标准差为 $\sqrt d$（左图，实测）。除以 $\sqrt d$ 之后，无论宽度多大，标准差都回到 1（Vaswani 等 2017，§3.2.1）。

**这对 softmax 意味着什么。** 取 $n$ 个服从 $\mathcal N(0, \sigma^2)$ 的分数。当 $\sigma^2 \ll 2\ln n$ 时，它们的 softmax 的熵为
$$H \approx \ln n - \tfrac{{\sigma^2}}{{2}} - \tfrac{{e^{{\sigma^2}} - 1}}{{2n}} + \tfrac{{\sigma^2 e^{{\sigma^2}}}}{{n}}$$
（由 $\mathbb E[e^s] = e^{{\sigma^2/2}}$ 和 delta 方法得到）。有缩放时，无论 $d$ 多大都有 $\sigma^2 = |q|^2/d \approx 1$，所以 $H \approx \ln n - \tfrac12$：蓝色虚线，不随 $d$ 变化。没有缩放时 $\sigma^2 \approx d$。一旦 $d$ 超过约 $2\ln n$，softmax 就会*冻结*在最大的分数上，只有前两名的键几乎打平时才剩下一点熵。对 $n$ 个正态变量中最大两个之差（它在 0 处的密度为 $f_0$）求二元熵的平均，得到红色虚线 $E[H] \approx \tfrac{{\pi^2}}{{6}} f_0\, E[1/|q|] \propto 1/\sqrt d$。这是大 $d$ 极限，所以在 $d$ 较小时低于实测值。

**为什么这有害。** 独热的 softmax 几乎没有梯度：$\partial p/\partial s = \mathrm{{diag}}(p) - pp^\top \to 0$。分数差距过大的注意力头学不会该看哪里。

**在训练好的模型上。** 这个视图把每个注意力 logit 乘以 $m$。*去掉缩放*就是 $m = \sqrt d$：这里是 $\sqrt{{32}} \approx 5.66$，MLA 为 $\sqrt{{48}}$，因为它的 $q\cdot k$ 覆盖 head_dim + rope_dim。$m > 1$ 时每个头都变得更尖锐，$m < 1$ 时更平坦；柱状图给出两种情况下各层每行的平均熵。模型的权重是*带着*缩放学到的，所以任何别的 $m$ 都会让损失上升。损失在 `en.txt` 留出尾部的前 {ATTN_LOSS_CHARS:,} 个字符（或全部）上计算，每 {ATTN_LOSS_BLOCK} 个字符一个窗口，所有窗口合成一批做一次前向传播；这与窗口大小相同时的 `models.tiny_gpt.validation_loss` 一致。

随机向量：每个 $d$ 取 {ATTN_ENTROPY_ROWS} 个 softmax 行（每次抽取的一组键由 32 个查询共享），带随机种子。
""",
    },
}
