"""The Attention tab's "Step by step" view: widgets, the stages' names, the table, the checks, Explain."""

STRINGS = {
    "en": {
        "attn_steps_intro": "One layer and one head of a trained tiny GPT, run line by line in the order of the code "
                            "in the notes. Every row of the table is a tensor as torch reports it: its shape, its "
                            "stride, whether it is contiguous, and whether it shares storage with the tensor it came "
                            "from. The figure shows the chosen query token's numbers at every stage.",
        "attn_steps_numbers": "The chosen query token's numbers, stage by stage",
        "attn_steps_yes": "yes",
        "attn_steps_no": "no",
        "attn_steps_col_n": "#",
        "attn_steps_col_stage": "stage",
        "attn_steps_col_code": "code",
        "attn_steps_col_tensor": "tensor",
        "attn_steps_col_shape": ".shape",
        "attn_steps_col_stride": ".stride()",
        "attn_steps_col_contiguous": ".is_contiguous()",
        "attn_steps_col_storage": "storage (…data_ptr +offset)",
        "attn_steps_col_shares": "input's storage?",
        "attn_steps_stage_x": "input x, the residual stream into the block",
        "attn_steps_stage_norm": "norm",
        "attn_steps_stage_qkv": "W_qkv",
        "attn_steps_stage_split": "split",
        "attn_steps_stage_view": "view into heads",
        "attn_steps_stage_transpose": "transpose(1, 2)",
        "attn_steps_stage_split_rope": "split q: content | RoPE part",
        "attn_steps_stage_kv_norm": "normalise the latent c, the one cached",
        "attn_steps_stage_rope": "RoPE",
        "attn_steps_stage_absorb": "absorb W_UK into q",
        "attn_steps_stage_repeat_kv": "repeat KV heads (GQA/MQA)",
        "attn_steps_stage_scores": "q @ kᵀ",
        "attn_steps_stage_scale": "÷ √d",
        "attn_steps_stage_mask": "causal mask",
        "attn_steps_stage_softmax": "softmax",
        "attn_steps_stage_weighted": "@ v",
        "attn_steps_stage_up": "W_UV: latent → values",
        "attn_steps_stage_transpose_back": "transpose(1, 2)",
        "attn_steps_stage_view_fails": "view without contiguous",
        "attn_steps_stage_contiguous": ".contiguous()",
        "attn_steps_stage_merge": "view(B, T, C)",
        "attn_steps_stage_out": "W_o",
        "attn_steps_check_out": "**Check:** max |last stage − the model's own attention output of layer {layer} "
                                "(`Probe.attn_out`)| = **{diff}** {ok} (within 1e-6)",
        "attn_steps_check_sdpa": "softmax(q kᵀ/√d) v against `F.scaled_dot_product_attention(q, k, v, "
                                 "is_causal=True)` on the same q, k, v: max difference **{diff}**",
        "attn_steps_check_mla": "MLA runs in the *absorbed* form, as the model does: `W_UK` folded into the query, "
                                "attention over the cached latent `c` (keys and values are never built), `W_UV` "
                                "applied after the weighted sum. The naive form, with keys materialised as "
                                "`k = W_UK c`, gives the same scores: max difference **{diff}** (float32 rounding, "
                                "scores of size ~10).",
        "attn_steps_check_view": "`view` right after the transpose raises: *{error}*",
        "attn_steps_fig_title": "Layer {layer}, head {head} (▶), query {query} '{char}': its numbers at each stage",
        "attn_steps_explain": r"""
**The code, in the notes' order.** For MHA, GQA and MQA:
```python
h = norm(x)                                         # (B, T, C)
q, k, v = W_qkv(h).split([H*d, n_kv*d, n_kv*d], -1)  # three views of one buffer
q = q.view(B, T, H, d).transpose(1, 2)              # (B, H, T, d): new strides, same storage
k = k.view(B, T, n_kv, d).transpose(1, 2)           # (B, n_kv, T, d), and v the same
q, k = rope(q), rope(k)                             # new tensors
k, v = k.repeat_interleave(H // n_kv, 1), …         # GQA/MQA: each KV head serves its group
scores = q @ k.transpose(-2, -1) / math.sqrt(d)     # (B, H, T, T)
probs = scores.masked_fill(~causal, float("-inf")).softmax(-1)
y = probs @ v                                       # (B, H, T, d)
y = y.transpose(1, 2).contiguous().view(B, T, C)    # heads side by side again
out = W_o(y)
```

**Stride.** `stride()[k]` is how many elements to step in memory to move one index along dimension $k$. A freshly allocated tensor is *row-major*: the last dimension has stride 1, and each earlier one the product of the sizes after it. That is what `is_contiguous()` checks.

**Views share storage.** `split`, `view` and `transpose` copy nothing: they return a new shape and strides over the *same* storage (same `data_ptr()`; `k` and `v` start at a different `storage_offset`). So `q` after the split still has the stride of the whole `qkv` row ($3C$ for MHA), and `transpose(1, 2)` simply swaps two strides. The table's storage column shows the last six hex digits of `untyped_storage().data_ptr()`, then `+storage_offset()` when that is not 0.

**`view` after the transpose raises.** `view` may merge dimensions only where they are adjacent in memory; after the transpose, the heads of one token are $T \cdot d$ elements apart, so merging them into $C$ is impossible without a copy. torch refuses with the message shown. `reshape` would copy silently; the seeds' code calls `.contiguous()`, which copies into a fresh row-major buffer (new storage), after which `view` is free (same storage again). With a one-character prompt ($T = 1$) the transpose is already contiguous, and the same `view` succeeds.

**New tensors.** RoPE, matmul, masked_fill, softmax and the linear layers allocate their results (the "input's storage?" column says no). `repeat_interleave` copies too: the keys of one KV head appear once per query head in its group, so the rows of a group are identical (GQA-2: H1 = H2, H3 = H4; MQA: all four).

**MLA** (DeepSeek-V2 §2.1) caches one latent $c$ per token. Because $q^\top (W_{UK} c) = (W_{UK}^\top q)^\top c$, the model folds $W_{UK}$ into the query and attends directly over $c$, with the RoPE part on a separate shared key $k^R$. The score is $(q_{nope}W_{UK} \cdot c + q^R \cdot k^R) / \sqrt{d_h + d_R}$, and $W_{UV}$ comes after the weighted sum. The stages follow that absorbed form, and the check line compares it with the naive form.

**The checks** compare the last stage with the model's own attention output, recorded by the `Probe` during a normal forward pass, and the attention weights times the values with PyTorch's fused `scaled_dot_product_attention`. The stage multiplies by `1 / math.sqrt(d)`, exactly as the model does. Dividing by `math.sqrt(d)` gives the same numbers up to float32 rounding (about 1e-6); multiplying makes the two results identical.
""",
    },
    "zh-CN": {
        "attn_steps_intro": "训练好的小型 GPT 的一层、一个注意力头，按笔记中代码的顺序逐行执行。表格的每一行是 torch 报告的一个张量："
                            "形状、步长（stride）、是否连续（contiguous），以及是否与它的来源张量共享存储。"
                            "下图给出所选查询词元在每一步的数值。",
        "attn_steps_numbers": "所选查询词元在每一步的数值",
        "attn_steps_yes": "是",
        "attn_steps_no": "否",
        "attn_steps_col_n": "#",
        "attn_steps_col_stage": "步骤",
        "attn_steps_col_code": "代码",
        "attn_steps_col_tensor": "张量",
        "attn_steps_col_shape": ".shape",
        "attn_steps_col_stride": ".stride()",
        "attn_steps_col_contiguous": ".is_contiguous()",
        "attn_steps_col_storage": "存储（…data_ptr +偏移）",
        "attn_steps_col_shares": "共享输入的存储？",
        "attn_steps_stage_x": "输入 x，进入本层的残差流",
        "attn_steps_stage_norm": "归一化",
        "attn_steps_stage_qkv": "W_qkv",
        "attn_steps_stage_split": "split 切分",
        "attn_steps_stage_view": "view 分出注意力头",
        "attn_steps_stage_transpose": "transpose(1, 2)",
        "attn_steps_stage_split_rope": "切分 q：内容部分 | RoPE 部分",
        "attn_steps_stage_kv_norm": "归一化潜在向量 c（缓存的就是它）",
        "attn_steps_stage_rope": "RoPE",
        "attn_steps_stage_absorb": "把 W_UK 吸收进 q",
        "attn_steps_stage_repeat_kv": "复制 KV 头（GQA/MQA）",
        "attn_steps_stage_scores": "q @ kᵀ",
        "attn_steps_stage_scale": "÷ √d",
        "attn_steps_stage_mask": "因果掩码",
        "attn_steps_stage_softmax": "softmax",
        "attn_steps_stage_weighted": "@ v",
        "attn_steps_stage_up": "W_UV：潜在向量 → 值",
        "attn_steps_stage_transpose_back": "transpose(1, 2)",
        "attn_steps_stage_view_fails": "不调用 contiguous 直接 view",
        "attn_steps_stage_contiguous": ".contiguous()",
        "attn_steps_stage_merge": "view(B, T, C)",
        "attn_steps_stage_out": "W_o",
        "attn_steps_check_out": "**核对：** max |最后一步 − 模型自己第 {layer} 层的注意力输出（`Probe.attn_out`）| = "
                                "**{diff}** {ok}（在 1e-6 以内）",
        "attn_steps_check_sdpa": "softmax(q kᵀ/√d) v 与同一组 q、k、v 上的 `F.scaled_dot_product_attention(q, k, v, "
                                 "is_causal=True)` 相比：最大差 **{diff}**",
        "attn_steps_check_mla": "MLA 按模型实际的*吸收*形式计算：`W_UK` 并入查询，注意力直接在缓存的潜在向量 `c` 上计算"
                                "（从不构造键和值），加权求和之后再乘 `W_UV`。把键显式构造成 `k = W_UK c` 的朴素形式"
                                "得到相同的分数：最大差 **{diff}**（float32 舍入误差，分数大小约为 10）。",
        "attn_steps_check_view": "紧跟在 transpose 之后的 `view` 会报错：*{error}*",
        "attn_steps_fig_title": "第 {layer} 层，第 {head} 个头（▶），查询 {query} '{char}'：它在每一步的数值",
        "attn_steps_explain": r"""
**按笔记顺序的代码。** MHA、GQA、MQA：
```python
h = norm(x)                                         # (B, T, C)
q, k, v = W_qkv(h).split([H*d, n_kv*d, n_kv*d], -1)  # 同一块缓冲区的三个视图
q = q.view(B, T, H, d).transpose(1, 2)              # (B, H, T, d)：新的步长，同一块存储
k = k.view(B, T, n_kv, d).transpose(1, 2)           # (B, n_kv, T, d)，v 同理
q, k = rope(q), rope(k)                             # 新张量
k, v = k.repeat_interleave(H // n_kv, 1), …         # GQA/MQA：每个 KV 头服务一组查询头
scores = q @ k.transpose(-2, -1) / math.sqrt(d)     # (B, H, T, T)
probs = scores.masked_fill(~causal, float("-inf")).softmax(-1)
y = probs @ v                                       # (B, H, T, d)
y = y.transpose(1, 2).contiguous().view(B, T, C)    # 把各个头重新并排
out = W_o(y)
```

**步长（stride）。** `stride()[k]` 表示沿第 $k$ 维移动一个下标，在内存中要跨过多少个元素。新分配的张量是*行优先*的：最后一维步长为 1，前面每一维的步长是其后各维大小之积。`is_contiguous()` 检查的就是这一点。

**视图共享存储。** `split`、`view`、`transpose` 都不复制数据：它们只是在*同一块*存储上给出新的形状和步长（`data_ptr()` 相同；`k` 和 `v` 的 `storage_offset` 不同）。所以切分之后的 `q` 仍然带着整行 `qkv` 的步长（MHA 为 $3C$），而 `transpose(1, 2)` 只是交换两个步长。表格的存储一列给出 `untyped_storage().data_ptr()` 的最后六位十六进制数字，偏移 `storage_offset()` 不为 0 时再加上 `+偏移`。

**transpose 之后直接 view 会报错。** `view` 只能合并在内存中相邻的维度；transpose 之后，同一个词元的各个头相隔 $T \cdot d$ 个元素，不复制就无法把它们合并成 $C$。torch 拒绝并给出上面的报错信息。`reshape` 会悄悄复制；笔记中的代码调用 `.contiguous()`，把数据复制到一块新的行优先缓冲区（新的存储），之后 `view` 就不需要复制（又是同一块存储）。如果提示词只有一个字符（$T = 1$），transpose 之后本来就是连续的，同样的 `view` 就能成功。

**新张量。** RoPE、矩阵乘法、masked_fill、softmax 和线性层都会为结果分配新内存（“共享输入的存储？”一列为否）。`repeat_interleave` 也会复制：一个 KV 头的键会为组内每个查询头各出现一次，所以同一组的行完全相同（GQA-2：H1 = H2，H3 = H4；MQA：四行全部相同）。

**MLA**（DeepSeek-V2 §2.1）每个词元只缓存一个潜在向量 $c$。由于 $q^\top (W_{UK} c) = (W_{UK}^\top q)^\top c$，模型把 $W_{UK}$ 并入查询，直接在 $c$ 上做注意力，RoPE 部分放在单独的共享键 $k^R$ 上。分数为 $(q_{nope}W_{UK} \cdot c + q^R \cdot k^R) / \sqrt{d_h + d_R}$，$W_{UV}$ 在加权求和之后才乘上。各步骤按这种吸收形式排列，核对行把它与朴素形式相比较。

**核对**把最后一步与模型自己的注意力输出比较（由 `Probe` 在一次正常前向传播中记录），并把注意力权重乘以值的结果与 PyTorch 融合的 `scaled_dot_product_attention` 比较。这一步和模型一样乘以 `1 / math.sqrt(d)`。除以 `math.sqrt(d)` 得到的数值只差 float32 舍入误差（约 1e-6）；改成相乘之后，两者的结果完全相同。
""",
    },
}
