"""The Attention tab's "All heads" view: widgets, figures, the measured patterns, the Explain text."""
from models.limits import ATTN_BROAD_THRESHOLD, ATTN_PATTERN_CHARS, ATTN_PATTERN_THRESHOLD

THRESHOLD = round(100 * ATTN_PATTERN_THRESHOLD)
BROAD = round(100 * ATTN_BROAD_THRESHOLD)

STRINGS = {
    "en": {
        "attn_heads_intro": "Every head of a trained tiny GPT on your prompt: 4 layers × 4 heads, each a map of who "
                            "reads whom (rows: the character reading, columns: the characters read). Pick one to "
                            "enlarge and a query token to follow; the table below says which patterns the heads "
                            "learned, measured.",
        "attn_heads_mode": "Enlarged head as",
        "attn_heads_mode_lines": "lines (BertViz head view)",
        "attn_heads_mode_heatmap": "heatmap",
        "attn_heads_detail": "The chosen head: which earlier characters each character reads",
        "attn_heads_grid": "Every layer × head",
        "attn_heads_patterns": "Head patterns, measured",
        "attn_heads_fig_grid": "{name}: every layer (rows) × head (columns); rows of a map = queries, columns = keys",
        "attn_heads_fig_cell": "L{layer} H{head}",
        "attn_heads_fig_cell_kv": "L{layer} H{head} · KV {kv}",
        "attn_heads_fig_detail": "Layer {layer}, head {head}: query {query} '{char}' reads {reads}",
        "attn_heads_fig_received": "attention received (sum over queries)",
        "attn_heads_fig_queries": "queries (reading) — hover a character for what it reads",
        "attn_heads_fig_keys": "keys (read)",
        "attn_heads_fig_chance": "uniform head:",
        "attn_heads_fig_share": "share",
        "attn_heads_fig_held_out": "On {chars} held-out characters",
        "attn_heads_fig_on_prompt": "On the prompt ({chars} characters)",
        "attn_heads_pattern_previous": "previous char",
        "attn_heads_pattern_word_start": "start of word",
        "attn_heads_pattern_last_space": "last space",
        "attn_heads_pattern_first": "first char",
        "attn_heads_pattern_self": "itself",
        "attn_heads_pattern_broad": "broad (entropy ÷ uniform)",
        "attn_heads_summary_intro": "**Measured on {chars} held-out characters** (text the model never trained on). "
                                    "A head shows a pattern when on average ≥ {threshold} % of its weight goes to "
                                    "that one key; in brackets, a uniform causal head's share.",
        "attn_heads_summary_line": "- **{pattern}** (uniform: {chance}): {heads}",
        "attn_heads_summary_broad": f"- **{{pattern}}** ≥ {BROAD} %: {{heads}}",
        "attn_heads_summary_best": "no head reaches it (the highest: {best:.2f})",
        "attn_heads_summary_no_head": "no head",
        "attn_heads_explain": rf"""
**One head, one distribution per query.** Head $h$ computes $\mathrm{{softmax}}\big(q_i k_j^\top/\sqrt{{d}}\big)$ over the positions $j \le i$: row $i$ of a map is how query $i$ spreads its attention over the characters up to itself. Every row sums to 1, and everything above the diagonal is exactly 0 (the causal mask). Its output for $i$ is the weighted mix of those characters' values.

**Reading a map.** A stripe just under the diagonal is a *previous-character* head. Vertical stripes are keys that many queries read, such as the spaces. A smooth triangle is a *broad* head that averages its context: here the whole first layer does that, and later layers pick out specific positions.

**How the patterns are measured.** For every head, the mean weight that a query puts on one particular key:
- *previous char*: on $i-1$;
- *start of word*: on the first character of the current word, for queries at least two characters into it;
- *last space*: on the last space or newline before $i$, for queries at least two characters after it;
- *first char*: on position 0 (an "attention sink"), from position 2 on;
- *itself*: on $i$.

A uniform causal head gives every key $1/(i+1)$; its share is printed in brackets. A head *shows* a pattern when its mean share is at least {THRESHOLD} %. On the first {ATTN_PATTERN_CHARS} held-out characters that is 18 to 25 times a uniform head's share. *Broad*: the rows' mean entropy is at least {BROAD} % of a uniform head's. The held-out numbers are steadier than the numbers on a 64-character prompt (the right-hand table). Change the model: the same kinds of heads appear in MHA, GQA, MQA and MLA, in different places.

**GQA and MQA.** The label "KV $n$" says which key/value head a query head reads. Heads in one group read the same keys and values, but with their own queries, so their maps still differ. In MLA every head reads one shared latent through its own $W_{{UK}}$.

**The lines view** is BertViz's head view. The top row holds the queries and the bottom row the keys. Red lines go from the chosen query token (the slider) to the keys it reads, thicker for larger weights; faint lines are the other queries' weights ≥ 0.1. Hover a top-row character to see the keys it reads most; hover a bottom-row character to see how much attention it receives.
""",
    },
    "zh-CN": {
        "attn_heads_intro": "在你的提示词上查看训练好的小型 GPT 的每一个注意力头：4 层 × 4 个头，每个头一张“谁读谁”的图"
                            "（行：正在读取的字符，列：被读取的字符）。选一个头放大，再选一个查询词元跟踪；"
                            "下面的表格列出各个头学到的模式，均为实测。",
        "attn_heads_mode": "放大的头显示为",
        "attn_heads_mode_lines": "连线（BertViz 的 head view）",
        "attn_heads_mode_heatmap": "热力图",
        "attn_heads_detail": "所选的头：每个字符读取前面哪些字符",
        "attn_heads_grid": "所有层 × 注意力头",
        "attn_heads_patterns": "注意力头的模式（实测）",
        "attn_heads_fig_grid": "{name}：每一层（行）× 每个头（列）；每张图的行 = 查询，列 = 键",
        "attn_heads_fig_cell": "L{layer} H{head}",
        "attn_heads_fig_cell_kv": "L{layer} H{head} · KV {kv}",
        "attn_heads_fig_detail": "第 {layer} 层第 {head} 个头：查询 {query} '{char}' 读取 {reads}",
        "attn_heads_fig_received": "收到的注意力（对所有查询求和）",
        "attn_heads_fig_queries": "查询（读取方）：悬停字符可看它读取什么",
        "attn_heads_fig_keys": "键（被读取方）",
        "attn_heads_fig_chance": "均匀头：",
        "attn_heads_fig_share": "占比",
        "attn_heads_fig_held_out": "在 {chars} 个留出字符上",
        "attn_heads_fig_on_prompt": "在提示词上（{chars} 个字符）",
        "attn_heads_pattern_previous": "前一个字符",
        "attn_heads_pattern_word_start": "词首",
        "attn_heads_pattern_last_space": "上一个空格",
        "attn_heads_pattern_first": "第一个字符",
        "attn_heads_pattern_self": "自身",
        "attn_heads_pattern_broad": "分散（熵 ÷ 均匀头）",
        "attn_heads_summary_intro": "**在 {chars} 个留出字符上实测**（模型训练时从未见过的文本）。"
                                    "如果一个头平均有 ≥ {threshold} % 的权重落在某一个键上，就说它表现出该模式；"
                                    "括号里是均匀因果头的占比。",
        "attn_heads_summary_line": "- **{pattern}**（均匀头：{chance}）：{heads}",
        "attn_heads_summary_broad": f"- **{{pattern}}** ≥ {BROAD} %：{{heads}}",
        "attn_heads_summary_best": "没有头达到（最高：{best:.2f}）",
        "attn_heads_summary_no_head": "没有任何头",
        "attn_heads_explain": rf"""
**一个头，每个查询一个分布。** 注意力头 $h$ 在位置 $j \le i$ 上计算 $\mathrm{{softmax}}\big(q_i k_j^\top/\sqrt{{d}}\big)$：图中第 $i$ 行就是查询 $i$ 把注意力分配到它之前（含自身）各个字符上的方式。每一行之和为 1，对角线以上全部恰好为 0（因果掩码）。它在位置 $i$ 的输出是这些字符的值向量按权重的混合。

**怎么看图。** 紧贴对角线下方的一条斜线，说明这是一个“前一个字符”头。竖直的条纹是被很多查询读取的键，比如空格。平滑的三角形说明这是一个“分散”的头，它在对上下文求平均：本模型的第一层全是这样，后面的层才挑出特定的位置。

**模式是怎么测的。** 对每个头，计算查询落在某一个特定键上的平均权重：
- *前一个字符*：落在 $i-1$ 上；
- *词首*：落在当前单词的第一个字符上（只统计距词首至少两个字符的查询）；
- *上一个空格*：落在 $i$ 之前最后一个空格或换行上（只统计在它之后至少两个字符的查询）；
- *第一个字符*：落在位置 0 上（“注意力汇聚点”，attention sink），从位置 2 开始统计；
- *自身*：落在 $i$ 上。

均匀因果头给每个键 $1/(i+1)$ 的权重，这个占比列在括号里。平均占比至少 {THRESHOLD} % 的头就算表现出该模式。在前 {ATTN_PATTERN_CHARS} 个留出字符上，这是均匀头占比的 18 到 25 倍。*分散*：各行平均熵至少是均匀头的 {BROAD} %。留出文本上的数字比 64 个字符的提示词上的（右侧表格）更稳定。换一个模型看看：MHA、GQA、MQA、MLA 里都会出现同样几类头，只是位置不同。

**GQA 和 MQA。** 标签 “KV $n$” 表示这个查询头读取哪个键/值头。同一组的头读取相同的键和值，但查询各不相同，所以它们的图仍然不同。MLA 中每个头都通过自己的 $W_{{UK}}$ 读取同一个共享的潜在向量。

**连线视图**就是 BertViz 的 head view。上面一行是查询，下面一行是键。红线从所选的查询词元（滑块）连到它读取的键，权重越大线越粗；淡色的线是其他查询 ≥ 0.1 的权重。把鼠标悬停在上面一行的字符上，可以看到它读得最多的键；悬停在下面一行的字符上，可以看到它总共收到多少注意力。
""",
    },
}
