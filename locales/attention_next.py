"""The Attention tab's "Next token" view: widgets, figures, the Explain text."""

STRINGS = {
    "en": {
        "attn_next_intro": "The model's distribution over the next character, through the three filters of "
                           "sampling: temperature, top-k, top-p. These are the same functions the KV tab's "
                           "generation calls, and the continuation below is drawn with them. Then the logit lens: "
                           "what the residual stream would predict after each layer.",
        "attn_next_temperature": "Temperature T (0 = greedy)",
        "attn_next_top_k": "top-k",
        "attn_next_top_k_info": "keep the k most likely characters; empty = keep all",
        "attn_next_top_p": "top-p",
        "attn_next_top_p_info": "keep the smallest set whose probability reaches p; 1 = keep all",
        "attn_next_continue": "Characters to generate with these settings",
        "attn_next_seed": "Seed (sampling)",
        "attn_next_bars": "The next character: what each filter keeps",
        "attn_next_continuation": "Prompt + a continuation sampled with these settings",
        "attn_next_lens": "The logit lens",
        "attn_next_off": "off",
        "attn_next_fig_kept": "kept",
        "attn_next_fig_cut_k": "cut by top-k",
        "attn_next_fig_cut_p": "cut by top-p",
        "attn_next_fig_t1": "at T = 1",
        "attn_next_fig_after_t": "after T",
        "attn_next_fig_final": "sampled from",
        "attn_next_fig_settings": "T = {t}, top-k = {k}, top-p = {p}: {n} of {v} characters can be drawn",
        "attn_next_fig_embedding": "embedding",
        "attn_next_fig_layer": "layer {n}",
        "attn_next_fig_lens": "Top prediction of readout(residual) at each layer and position",
        "attn_next_fig_lens_last": "Last position: final top 5",
        "attn_next_fig_position": "position (the character the prediction follows)",
        "attn_next_fig_lens_check": "Logit lens: readout = final norm + output head; last layer = the model's "
                                    "logits (max difference {diff})",
        "attn_next_explain": r"""
**From logits to a character.** The model outputs logits $z$ over its 61 characters. Sampling divides them by the temperature, $p = \mathrm{softmax}(z / T)$: $T < 1$ sharpens the distribution, $T > 1$ flattens it, and $T = 0$ is greedy (all mass on the largest logit). Then two filters cut the tail:
- **top-k** keeps the $k$ most likely characters (ties at the $k$-th all stay, as in Hugging Face);
- **top-p** (nucleus sampling, Holtzman et al. 2020) sorts what is left and keeps the smallest set whose probability reaches $p$. A character stays while the mass above it is below $p$, so the most likely one always stays.

They apply in this order (temperature → top-k → top-p, as Hugging Face's `generate` does). The survivors are renormalised, and one character is drawn with a seeded generator. The top panel colours each bar by the filter that keeps or cuts it; the black ticks are the distribution at $T = 1$. The bottom panel is what is actually sampled from. `top-k = 1` is greedy at any temperature.

**The same sampler as generation.** `models.generation.filter_logits` computes these filters and `sample_next` draws from them. The KV tab's `generate` calls the same two functions at every step, and the continuation above is drawn by `generate` with these settings and this seed.

**The logit lens** (nostalgebraist 2020). The residual stream after layer $\ell$, $x_\ell$, goes through the model's *final* norm and output head as if the later layers were not there: $\mathrm{readout}(x_\ell) = W_{head}\,\mathrm{RMSNorm}(x_\ell)$. The *embedding* row predicts from the character alone (a bigram guess); each layer then refines it. The last row is exactly the model's output (the difference is in the title). Hover a cell for the top 3. Look at how late the prediction settles in the middle of a word and at its end.
""",
    },
    "zh-CN": {
        "attn_next_intro": "模型对下一个字符的分布，依次经过采样的三个过滤步骤：温度、top-k、top-p。KV 缓存页的生成调用的"
                           "也是这几个函数，下面的续写就是用它们抽出来的。然后是 logit 透镜（logit lens）：残差流在每一层之后"
                           "会预测什么。",
        "attn_next_temperature": "温度 T（0 = 贪心）",
        "attn_next_top_k": "top-k",
        "attn_next_top_k_info": "保留概率最高的 k 个字符；留空 = 全部保留",
        "attn_next_top_p": "top-p",
        "attn_next_top_p_info": "保留概率之和达到 p 的最小集合；1 = 全部保留",
        "attn_next_continue": "按这些设置生成的字符数",
        "attn_next_seed": "随机种子（采样）",
        "attn_next_bars": "下一个字符：每个过滤步骤保留了什么",
        "attn_next_continuation": "提示词 + 按这些设置采样的续写",
        "attn_next_lens": "logit 透镜",
        "attn_next_off": "关闭",
        "attn_next_fig_kept": "保留",
        "attn_next_fig_cut_k": "被 top-k 去掉",
        "attn_next_fig_cut_p": "被 top-p 去掉",
        "attn_next_fig_t1": "T = 1 时",
        "attn_next_fig_after_t": "除以温度之后",
        "attn_next_fig_final": "实际采样的分布",
        "attn_next_fig_settings": "T = {t}，top-k = {k}，top-p = {p}：{v} 个字符中有 {n} 个可能被抽到",
        "attn_next_fig_embedding": "嵌入",
        "attn_next_fig_layer": "第 {n} 层",
        "attn_next_fig_lens": "readout(残差流) 在每一层、每个位置的首选预测",
        "attn_next_fig_lens_last": "最后一个位置：最终的前 5 名",
        "attn_next_fig_position": "位置（预测紧跟在这个字符之后）",
        "attn_next_fig_lens_check": "logit 透镜：readout = 最终归一化 + 输出头；最后一层 = 模型的 logits（最大差 {diff}）",
        "attn_next_explain": r"""
**从 logits 到一个字符。** 模型在它的 61 个字符上输出 logits $z$。采样先除以温度：$p = \mathrm{softmax}(z / T)$。$T < 1$ 让分布更尖锐，$T > 1$ 更平坦，$T = 0$ 就是贪心（全部概率给最大的 logit）。然后两个过滤步骤去掉尾部：
- **top-k** 保留概率最高的 $k$ 个字符（与第 $k$ 名打平的全部保留，和 Hugging Face 一样）；
- **top-p**（核采样，Holtzman 等 2020）把剩下的排序，保留概率之和达到 $p$ 的最小集合。只要排在它前面的概率之和还小于 $p$，这个字符就保留，所以概率最高的字符总会保留。

顺序是温度 → top-k → top-p（和 Hugging Face 的 `generate` 一致）。保留下来的字符重新归一化，再用带种子的随机数生成器抽一个。上图按每根柱子被哪个过滤步骤保留或去掉来着色，黑色短线是 $T = 1$ 时的分布。下图是实际采样所用的分布。`top-k = 1` 在任何温度下都是贪心。

**与生成使用同一个采样器。** `models.generation.filter_logits` 计算这些过滤步骤，`sample_next` 从中抽取。KV 缓存页的 `generate` 每一步都调用同样这两个函数，上面的续写就是 `generate` 用这些设置和这个种子抽出来的。

**logit 透镜**（nostalgebraist 2020）。把第 $\ell$ 层之后的残差流 $x_\ell$ 直接送进模型*最终*的归一化和输出头，就像后面的层不存在一样：$\mathrm{readout}(x_\ell) = W_{head}\,\mathrm{RMSNorm}(x_\ell)$。*嵌入*一行只根据当前字符本身预测（相当于二元语法的猜测），之后每一层逐步修正。最后一行正好等于模型的输出（差值见标题）。悬停格子可看前 3 名。注意看在单词中间和单词结尾处，预测要到多晚才定下来。
""",
    },
}
