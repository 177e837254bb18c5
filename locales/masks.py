"""The Attention masks tab: its widgets, its figures, and the messages of :mod:`models.masks`."""
from models.limits import MASKS_MAX_SEQUENCES as MAX_SEQUENCES
from models.limits import MASKS_MAX_TOKENS as MAX_TOKENS

STRINGS = {
    "en": {
        "tab_masks": "Attention masks",
        "masks_intro": "Compose the masks a transformer uses and see the softmax they produce. "
                       "One sequence per line, tokens split on spaces "
                       f"(at most {MAX_SEQUENCES} lines × {MAX_TOKENS} tokens).",
        "masks_preset": "Preset",
        "masks_preset_encoder": "Encoder (BERT): all see all but padding",
        "masks_preset_decoder": "Decoder (GPT): causal",
        "masks_preset_prefix": "Prefix-LM (UniLM, GLM): prefix sees itself, rest causal",
        "masks_preset_custom": "Custom",
        "masks_text": "Sentences (one per line)",
        "masks_padding": "Padding mask",
        "masks_padding_side": "Pad on the",
        "masks_side_right": "right",
        "masks_side_left": "left",
        "masks_causal": "Causal (look-ahead) mask",
        "masks_causal_in_prefix": "Left to Prefix-LM while it is on: its mask is already causal after the prefix.",
        "masks_use_window": "Sliding window",
        "masks_window": "Window W (query i sees keys i−W+1 … i)",
        "masks_use_prefix": "Prefix-LM",
        "masks_prefix": "Prefix length P",
        "masks_packed": "Packed documents (separate them with | in a line)",
        "masks_convention": "Show the boolean mask as",
        "masks_conv_allow": "PyTorch: True = may attend",
        "masks_conv_masked": "Tutorials: 1 = masked (triu(ones, 1))",
        "masks_heads": "Heads",
        "masks_seed": "Seed (random queries and keys)",
        "masks_seq": "Show sequence",
        "masks_head": "Show head",
        "masks_panels": "Mask, additive mask, softmax",
        "masks_composition": "How the rules combine",
        "masks_nan": "The fully-masked-row trap",
        "masks_explain": r"""
**Scaled dot-product attention with a mask**

$$\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d}} + M\Big)V,\qquad M_{ij}=\begin{cases}0 & \text{query } i \text{ may attend to key } j\\ -\infty & \text{otherwise}\end{cases}$$

- **Two conventions, one mask.** PyTorch's `scaled_dot_product_attention` takes a boolean mask with `True` = *may attend*. Many tutorials build a "look-ahead mask" `triu(ones, 1)` with `1` = *masked*. They are complements: `causal = ~triu(ones, 1)`. The toggle switches the left grid between them.
- **Why AND.** Each rule says when a key is forbidden: it is padding, it is in the future, it is outside the window, it is in another document. A key may be attended only if *no* rule forbids it, so the boolean masks are combined with AND (equivalently, the additive masks are summed: any $-\infty$ wins; in the "1 = masked" convention the same rule reads as OR: masked if any rule masks). Look at "How the rules combine".
- **Padding masks keys.** A padding *query* still attends to real keys; its output is simply ignored by the loss. Turn the padding mask off and the real tokens attend to `[PAD]`: their outputs change with the batch they happen to be in.
- **The trap.** If every key of a query is masked (pad on the *left* with a causal mask: the first pad query sees only pads), the row is $\mathrm{softmax}(-\infty,\dots,-\infty)=0/0=$ **NaN**, and one NaN spreads to every later layer and to the loss. The backend detects rows with no allowed key and returns zero weights and zero output instead. PyTorch's SDPA and FlashAttention make the same choice in recent versions.
- Masked cells of the softmax are *exactly* zero: $e^{-\infty}=0$.
""",
        # figures (viz.masks)
        "masks_fig_mask_allow": "Boolean mask (True = may attend)",
        "masks_fig_mask_masked": "Boolean mask (1 = masked)",
        "masks_fig_additive": "Additive mask (added to scores)",
        "masks_fig_weights": "Attention weights after softmax",
        "masks_fig_query": "query position i",
        "masks_fig_key": "key position j",
        "masks_fig_padding": "padding (keys)",
        "masks_fig_causal": "causal",
        "masks_fig_prefix": "prefix-LM",
        "masks_fig_window": "sliding window",
        "masks_fig_documents": "packed documents",
        "masks_fig_combined": "= AND of all",
        "masks_fig_combined_masked": "= OR of all (masked if any rule masks)",
        "masks_fig_naive": "Naive: masked_fill(−inf) + softmax",
        "masks_fig_safe": "Backend: fully masked rows → 0",
        "masks_fig_nan_rows": "{n} fully masked query {n:|row|rows}: NaN in the naive softmax",
        "masks_fig_no_nan_rows": "No query row is fully masked here (try left padding + causal)",
        "masks_fig_weight": "weight",
        # messages (models.masks)
        "masks_err_not_text": "the sentences must be text, one sequence per line",
        "masks_err_too_long": "the text has {chars:,} characters: at most {max:,}",
        "masks_err_empty": "type at least one sentence (one sequence per line)",
        "masks_err_too_many_lines": "{lines} sequences is too many: at most {max} lines",
        "masks_err_only_separators": "line {line} has no tokens besides document separators",
        "masks_err_too_many_tokens": "line {line} has {tokens} tokens: at most {max} per sequence",
        "masks_err_beyond_longest": "{name} = {value} must be between 1 and the longest sequence's length {length}",
        "masks_err_lengths": "every length must be between 0 and seq_len = {seq_len}, got {lengths}",
        "term_masks_sequence": "sequence",
        "term_masks_head": "head",
        "term_masks_heads": "heads",
        "term_masks_window": "window",
        "term_masks_prefix": "prefix",
        "term_masks_padding_side": "padding side",
        "term_masks_convention": "convention",
        "term_masks_padding": "padding mask",
        "term_masks_causal": "causal mask",
        "term_masks_use_window": "sliding window",
        "term_masks_use_prefix": "prefix-LM",
        "term_masks_packed": "packed documents",
    },
    "zh-CN": {
        "tab_masks": "注意力掩码",
        "masks_intro": "组合 Transformer 使用的各种掩码，观察它们产生的 softmax。"
                       "每行一个序列，按空格切分词元"
                       f"（最多 {MAX_SEQUENCES} 行 × {MAX_TOKENS} 个词元）。",
        "masks_preset": "预设",
        "masks_preset_encoder": "编码器（BERT）：除填充外互相可见",
        "masks_preset_decoder": "解码器（GPT）：因果",
        "masks_preset_prefix": "前缀 LM（UniLM、GLM）：前缀内互相可见，其余因果",
        "masks_preset_custom": "自定义",
        "masks_text": "句子（每行一个）",
        "masks_padding": "填充掩码",
        "masks_padding_side": "填充位置",
        "masks_side_right": "右侧",
        "masks_side_left": "左侧",
        "masks_causal": "因果（前瞻）掩码",
        "masks_causal_in_prefix": "前缀 LM 打开时由它决定：它的掩码在前缀之后本来就是因果的。",
        "masks_use_window": "滑动窗口",
        "masks_window": "窗口 W（查询 i 可以关注键 i−W+1 … i）",
        "masks_use_prefix": "前缀 LM",
        "masks_prefix": "前缀长度 P",
        "masks_packed": "打包文档（在一行内用 | 分隔）",
        "masks_convention": "布尔掩码的显示约定",
        "masks_conv_allow": "PyTorch：True = 可以关注",
        "masks_conv_masked": "常见教程：1 = 被遮蔽（triu(ones, 1)）",
        "masks_heads": "注意力头数",
        "masks_seed": "随机种子（随机的查询和键）",
        "masks_seq": "显示第几个序列",
        "masks_head": "显示第几个头",
        "masks_panels": "掩码、加性掩码、softmax",
        "masks_composition": "各条规则如何组合",
        "masks_nan": "整行被遮蔽的陷阱",
        "masks_explain": r"""
**带掩码的缩放点积注意力**

$$\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d}} + M\Big)V,\qquad M_{ij}=\begin{cases}0 & \text{查询 } i \text{ 可以关注键 } j\\ -\infty & \text{否则}\end{cases}$$

- **两种约定，同一个掩码。** PyTorch 的 `scaled_dot_product_attention` 使用布尔掩码，`True` 表示*可以关注*。很多教程构造“前瞻掩码” `triu(ones, 1)`，`1` 表示*被遮蔽*。两者互为补集：`causal = ~triu(ones, 1)`。用这个开关可以让左侧网格在两种约定之间切换。
- **为什么用 AND。** 每条规则都说明某个键何时被禁止：它是填充、它在未来、它在窗口之外、它属于另一篇文档。只有*没有任何*规则禁止时，键才能被关注，所以布尔掩码用 AND 组合（等价地，把加性掩码相加：只要有一个 $-\infty$，结果就是 $-\infty$；在“1 = 屏蔽”的约定下，同一条规则读作 OR：任一规则屏蔽即屏蔽）。请看“各条规则如何组合”。
- **填充掩码遮的是键。** 填充位置的*查询*仍会关注真实的键，只是它的输出会被损失函数忽略。关闭填充掩码，真实词元就会关注 `[PAD]`：它们的输出会随自己恰好所在的批次而改变。
- **陷阱。** 如果某个查询的所有键都被遮蔽（在*左侧*填充并使用因果掩码：第一个填充查询只能看到填充），这一行就是 $\mathrm{softmax}(-\infty,\dots,-\infty)=0/0=$ **NaN**，一个 NaN 会传播到后面所有层和损失。后端会检测没有任何可关注键的行，并返回全零的权重和输出。较新版本的 PyTorch SDPA 和 FlashAttention 也是这样处理的。
- softmax 中被遮蔽的格子*恰好*为零：$e^{-\infty}=0$。
""",
        # figures (viz.masks)
        "masks_fig_mask_allow": "布尔掩码（True = 可以关注）",
        "masks_fig_mask_masked": "布尔掩码（1 = 被遮蔽）",
        "masks_fig_additive": "加性掩码（加到注意力分数上）",
        "masks_fig_weights": "softmax 之后的注意力权重",
        "masks_fig_query": "查询位置 i",
        "masks_fig_key": "键位置 j",
        "masks_fig_padding": "填充（键）",
        "masks_fig_causal": "因果",
        "masks_fig_prefix": "前缀 LM",
        "masks_fig_window": "滑动窗口",
        "masks_fig_documents": "打包文档",
        "masks_fig_combined": "= 以上全部取 AND",
        "masks_fig_combined_masked": "= 以上全部取 OR（任一规则屏蔽即屏蔽）",
        "masks_fig_naive": "朴素写法：masked_fill(−inf) + softmax",
        "masks_fig_safe": "后端：整行被遮蔽 → 0",
        "masks_fig_nan_rows": "{n} 个查询行被完全遮蔽：朴素 softmax 得到 NaN",
        "masks_fig_no_nan_rows": "这里没有被完全遮蔽的查询行（试试左填充 + 因果）",
        "masks_fig_weight": "权重",
        # messages (models.masks)
        "masks_err_not_text": "句子必须是文本，每行一个序列",
        "masks_err_too_long": "文本有 {chars:,} 个字符：最多 {max:,} 个",
        "masks_err_empty": "请至少输入一个句子（每行一个序列）",
        "masks_err_too_many_lines": "{lines} 个序列太多了：最多 {max} 行",
        "masks_err_only_separators": "第 {line} 行除了文档分隔符之外没有词元",
        "masks_err_too_many_tokens": "第 {line} 行有 {tokens} 个词元：每个序列最多 {max} 个",
        "masks_err_beyond_longest": "{name} = {value} 必须在 1 到最长序列的长度 {length} 之间",
        "masks_err_lengths": "每个长度都必须在 0 到 seq_len = {seq_len} 之间，收到的是 {lengths}",
        "term_masks_sequence": "序列",
        "term_masks_head": "注意力头",
        "term_masks_heads": "注意力头数",
        "term_masks_window": "窗口",
        "term_masks_prefix": "前缀",
        "term_masks_padding_side": "填充位置",
        "term_masks_convention": "显示约定",
        "term_masks_padding": "填充掩码",
        "term_masks_causal": "因果掩码",
        "term_masks_use_window": "滑动窗口",
        "term_masks_use_prefix": "前缀 LM",
        "term_masks_packed": "打包文档",
    },
}
