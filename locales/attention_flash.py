"""The Attention tab's FlashAttention view (tiles, cost at scale): labels, figures and messages."""
from models.limits import (ATTN_COST_MAX_SECONDS, ATTN_COST_MAX_T_CPU, ATTN_COST_MAX_T_CUDA, ATTN_DECODE_STEPS,
                           ATTN_FLASH_MAX_D, ATTN_FLASH_MAX_T)

STRINGS = {
    "en": {
        # the tiles view
        "attn_flash_intro": "FlashAttention never builds the T × T score matrix: it walks the keys in tiles and "
                            "keeps, for every query row, a running maximum **m**, a running sum **ℓ** and a "
                            "rescaled output. Step through it tile by tile and compare with the naive path "
                            f"(T ≤ {ATTN_FLASH_MAX_T}, d ≤ {ATTN_FLASH_MAX_D}, one seeded head). This loop is "
                            "for reading; in practice PyTorch's fused kernels (`F.scaled_dot_product_attention`) "
                            "run it, measured below.",
        "attn_T": "Sequence length T",
        "attn_head_dim": "Head dim d",
        "attn_block": "Block size (queries × keys per tile)",
        "attn_causal": "Causal (skip the tiles above the diagonal)",
        "term_attn_causal": "causal",
        "attn_dtype": "Precision",
        "attn_seed": "Seed (random q, k, v)",
        "attn_step": "Tile (0 = before the first)",
        "attn_prev": "◀ Previous",
        "attn_next": "Next ▶",
        "attn_play": "Play",
        "attn_pause": "Pause",
        "attn_tiles_plot": "Tiles, the naive softmax, the output filling in",
        "attn_rows_plot": "Running max m and sum ℓ of every query row",
        "attn_flash_explain": r"""
**The online softmax.** For one query row with scores $s_1, \dots, s_T$ the output is $o = \sum_j \frac{e^{s_j - m}}{\ell} v_j$ with $m = \max_j s_j$ and $\ell = \sum_j e^{s_j - m}$ (subtracting $m$ changes nothing mathematically and keeps $e^{x}$ from overflowing). FlashAttention reads the keys and values in tiles and keeps three running quantities per row: $m$, $\ell$ and an unnormalised output $\mathrm{acc}$. For each tile of scores $s_j$:
$$m_{new} = \max\big(m_{old}, \max_j s_j\big),\qquad \ell_{new} = e^{m_{old}-m_{new}}\,\ell_{old} + \sum_j e^{s_j - m_{new}},\qquad \mathrm{acc}_{new} = e^{m_{old}-m_{new}}\,\mathrm{acc}_{old} + \sum_j e^{s_j - m_{new}}\, v_j$$
and after the row's last tile $o = \mathrm{acc} / \ell$. Before the first tile $m = -\infty$, $\ell = 0$, $\mathrm{acc} = 0$ (so the first rescale factor is $e^{-\infty} = 0$).

**Why it is exact, not an approximation.** Every term already summed was computed as $e^{s - m_{old}}$; multiplying by $e^{m_{old} - m_{new}}$ turns it into $e^{s - m_{new}}$, exactly what it would have been had $m_{new}$ been known from the start. After the last tile $m$ is the row's true maximum and $\ell$ the true $\sum_j e^{s_j - m}$ (the markers in the second figure), so $\mathrm{acc}/\ell$ is the softmax-weighted sum. The only difference from the naive path is the order of floating-point additions: ~1e-7 in float32, ~1e-16 in float64.

**Why it matters.** The naive path writes the $T \times T$ scores and probabilities to memory: $2T^2$ numbers per head (at T = 16K in float32, 2 GiB per head). The tiled loop only ever holds one tile and $O(T \cdot d)$ for q, k, v and the output. On a GPU the tile lives in on-chip SRAM, so the big matrix never travels to HBM: fewer bytes moved, which is what makes it fast, not fewer FLOPs (it does the same multiply-adds). **Causal** attention skips the tiles entirely above the diagonal: nearly half of them.

**FlashAttention-2 and -3 change the work split, not the math.** FlashAttention-1 (2022) loops over key/value tiles outside and query tiles inside, rescaling the output in memory at every step. FlashAttention-2 (2023) swaps the loops (query tiles outside, as here), so each row's $m, \ell, \mathrm{acc}$ stay on chip, divides by $\ell$ once at the end, and splits the work across the sequence as well as across heads and batch. FlashAttention-3 (2024) targets NVIDIA Hopper: asynchronous tensor-core and memory operations overlap the softmax of one tile with the matrix multiply of the next, and it supports FP8. The recurrence above is the same in all three. PyTorch's `F.scaled_dot_product_attention` picks FlashAttention-2, a memory-efficient kernel, cuDNN, a CPU flash kernel or the plain math path depending on the device, dtype and shape: the measurement below names the one it ran.
""",
        "attn_rec_heading": "**This tile, one row, with its numbers** (the row where the maximum moved most):",
        "attn_rec_start": "Before the first tile every row has $m = -\\infty$, $\\ell = 0$, $\\mathrm{acc} = 0$. "
                          "Press **Next ▶** or **Play**.",
        "attn_rec_tile": "**Query row {row}, keys {cols}**\n\n"
                         "$m_{{new}} = \\max(m_{{old}}, \\max_j s_j) = \\max({m_old},\\ {tile_max}) = {m_new}$\n\n"
                         "$e^{{m_{{old}} - m_{{new}}}} = {rescale}$ (the rescale factor)\n\n"
                         "$\\ell_{{new}} = e^{{m_{{old}} - m_{{new}}}}\\,\\ell_{{old}} + \\sum_j e^{{s_j - m_{{new}}}}"
                         " = {rescale} \\times {l_old} + {tile_sum} = {l_new}$\n\n"
                         "$\\mathrm{{acc}}_{{new}} = {rescale} \\times \\mathrm{{acc}}_{{old}} + "
                         "\\sum_j e^{{s_j - m_{{new}}}}\\, v_j$",
        "attn_rec_last": "This was the row's last tile: its output is written, $o = \\mathrm{acc} / \\ell$, and "
                         "$\\ell$ now equals the row's full $\\sum_j e^{s_j - \\max s}$.",
        "attn_rec_more": "More tiles of this row follow: $m$ and $\\ell$ are not final yet.",
        "attn_status_step": "**Tile {step} of {n}**",
        "attn_status_skipped": "{skipped} of {total} tiles skipped (every cell masked: never computed)",
        "attn_status_rows": "{done} of {T} output rows final",
        "attn_status_diff_ok": "largest |tiled − naive| = {diff} ({dtype}: ≤ {tol} ✓), |tiled − SDPA| = {sdpa}",
        "attn_status_diff_bad": "largest |tiled − naive| = {diff} ({dtype}: above {tol} ✗), |tiled − SDPA| = {sdpa}",
        # figures (viz.attention_flash)
        "attn_fig_tiles": "Scores qkᵀ/√d, tile by tile",
        "attn_fig_probs": "Naive: softmax P",
        "attn_fig_out_tiled": "Output: tiled",
        "attn_fig_out_naive": "Output: naive",
        "attn_fig_key": "key j",
        "attn_fig_dim": "dim",
        "attn_fig_query": "query row i",
        "attn_fig_hover_cell": "query %{y} · key %{x}: %{z:.4g}<extra></extra>",
        "attn_fig_hover_out": "row %{y} · dim %{x}: %{z:.4g}<extra></extra>",
        "attn_fig_title_start": "Before the first tile: {n} tiles to compute (faded: not yet, grey: skipped)",
        "attn_fig_title_step": "Tile {step} of {n}: query rows {rows} × keys {cols} (outlined)",
        "attn_fig_m": "Running max m (bars)<br>and the row's max (—)",
        "attn_fig_l": "Running sum ℓ (bars)<br>and Σ exp(s − max) (—)",
        "attn_fig_rescale": "This tile's rescale<br>exp(m_old − m_new)",
        "attn_fig_naive_max": "naive: max of the row",
        "attn_fig_naive_sum": "naive: Σ exp(s − max)",
        "attn_fig_hover_m": "row %{x}: m = %{y:.4g}<extra></extra>",
        "attn_fig_hover_l": "row %{x}: ℓ = %{y:.4g}<extra></extra>",
        "attn_fig_hover_rescale": "row %{x}: exp(m_old − m_new) = %{y:.4g}<extra></extra>",
        # the cost sweep
        "attn_cost_heading": "### At scale: the T² wall, measured\nFor T = 256, 512, … the naive path, PyTorch's "
                             "`scaled_dot_product_attention` and our tiled loop run on this machine's device; their "
                             "memory is measured (not computed from a formula) and drawn beside the formulas. Below: "
                             "the decode side, where a KV cache grows with T and every step reads all of it.",
        "attn_max_T": "Largest T",
        # The choice itself short enough for its box (the long one was cut at "16K on"); its info says the rest.
        "attn_max_T_auto": f"auto: {ATTN_COST_MAX_T_CPU // 1024}K CPU · {ATTN_COST_MAX_T_CUDA // 1024}K GPU",
        "attn_max_T_info": "auto: the largest this device is allowed "
                           f"({ATTN_COST_MAX_T_CPU // 1024}K on a CPU, {ATTN_COST_MAX_T_CUDA // 1024}K on a GPU)",
        "attn_cost_head_dim": "Head dim d",
        "attn_cost_heads": "Heads H",
        "attn_cost_batch": "Batch B",
        "attn_cost_dtype": "dtype",
        "attn_measure": "Measure",
        "attn_stop": "Stop",
        "attn_cost_plot": "Memory and time per call against T (log-log)",
        "attn_kv_plot": "The decode side: KV cache",
        "attn_cost_waiting": "Press Measure: the points appear as they are measured "
                             f"(at most {ATTN_COST_MAX_SECONDS:.0f} s; Stop ends it)",
        "attn_cost_naive": "naive (scores + softmax built)",
        "attn_cost_sdpa": "SDPA: {backend}",
        "attn_cost_tiled": "our tiled loop (block {block})",
        "attn_cost_formula_matrices": "formula 2·B·H·T²·bytes (scores + probabilities)",
        "attn_cost_formula_rows": "formula B·H·T·d·bytes (the output: the O(T·d) part a call allocates)",
        "attn_cost_formula_window": "formula, sliding window W = {window} (Mistral): 2·B·H·T·min(T, W)·bytes",
        "attn_cost_budget": "budget {budget}",
        "attn_cost_wall": "naive: needs {need}, not run",
        "attn_cost_memory_title": "Peak bytes allocated by one call (measured)",
        "attn_cost_time_title": "Milliseconds per call (measured)",
        "attn_cost_bytes": "bytes",
        "attn_cost_ms": "ms",
        "attn_backend_cpu_flash": "the CPU's fused flash kernel",
        "attn_backend_flash": "FlashAttention-2",
        "attn_backend_efficient": "memory-efficient attention (xFormers)",
        "attn_backend_cudnn": "cuDNN attention",
        "attn_backend_math": "the math path (builds T × T)",
        "attn_backend_overrideable": "a device-specific fused kernel",
        "attn_backend_unknown": "an unrecognised kernel",
        "attn_cost_backend": "SDPA ran **{backend}** (`{op}`, read from the profiler's op names).",
        "attn_cost_at": "At T = {T}: naive **{naive}** in {naive_ms} ms, SDPA **{sdpa}** in {sdpa_ms} ms: "
                        "{mem_ratio}× less memory, {time_ratio}× faster; largest |naive − SDPA| = {diff}.",
        "attn_cost_skip_memory": "{name}: not run from T = {T} on: it would need {need}, over the budget "
                                 "(checked before allocating).",
        "attn_cost_skip_time": "{name}: not run from T = {T} on: predicted {need} per call (time budget).",
        "attn_cost_ended_time": "The sweep stopped after {seconds} s: its time budget.",
        "attn_kv_summary": "Tiny GPT, one cached decode step: {ms0} ms with {first} tokens cached, {ms1} ms with {last} "
                           "({bytes} of cache read every step); fitted: +{per100} µs per 100 cached tokens.",
        "attn_cost_method_cpu": "Memory on the CPU: the peak of the allocations `torch.profiler` records "
                                "(`profile_memory=True`) during one call, its output included. Time: median of up to "
                                "3 calls, on {threads} thread(s) (a served sweep runs in a low-priority worker).",
        "attn_cost_method_cuda": "Memory on CUDA: `torch.cuda.max_memory_allocated` during one call, above what was "
                                 "allocated before, its output included. Time: median of up to 3 synchronised calls.",
        "attn_kv_step_title": "Tiny GPT: one cached decode step (measured)",
        "attn_kv_cache_title": "Mistral-7B's KV cache (bf16): full vs. window",
        "attn_kv_context": "tokens in the cache",
        "attn_kv_measured": f"one decode step (fastest of {ATTN_DECODE_STEPS})",
        "attn_kv_hover": "%{x} cached tokens (%{customdata}): %{y:.3f} ms<extra></extra>",
        "attn_kv_fit": "fit: {a} ms + {per100} µs per 100 tokens",
        "attn_kv_full": "full cache: grows with T",
        "attn_kv_window": "rolling cache of the window W = {window}: flat after W",
        # messages (models.attention, models.attention_cost)
        "attn_err_rank": "q, k and v must have the same number of dims (at least 2), got {q}, {k}, {v}",
        "attn_err_shapes": "shapes do not fit attention: q (…, T_q, d), k (…, T_k, d), v (…, T_k, d_v), "
                           "got {q}, {k}, {v}",
        "attn_err_causal_lengths": "causal attention needs as many queries as keys, got T_q = {t_q}, T_k = {t_k}",
        "attn_err_beyond_device": "the largest T = {value:,} is beyond this device's bound: at most {bound:,} on {device}",
        "attn_err_beyond_budget": "T = {value:,} does not fit the memory budget: q, k, v and the output alone "
                                  "need {need}, the budget is {budget}. Choose a smaller T, fewer heads or a smaller batch",
        "term_attn_T": "sequence length T",
        "term_attn_head_dim": "head dim d",
        "term_attn_block": "block size",
        "term_attn_step": "tile step",
        "term_attn_dtype": "precision",
        "term_attn_max_T": "largest T",
        "term_attn_heads": "heads",
        "term_attn_batch": "batch",
    },
    "zh-CN": {
        "attn_flash_intro": "FlashAttention 从不构造 T × T 的分数矩阵：它按分块遍历键，为每个查询行维护一个当前最大值 **m**、"
                            "一个累加和 **ℓ** 以及一个经过重新缩放的输出。逐块单步执行，并与朴素做法对比"
                            f"（T ≤ {ATTN_FLASH_MAX_T}，d ≤ {ATTN_FLASH_MAX_D}，一个带随机种子的注意力头）。"
                            "这个循环是为了阅读而写的；实际运行它的是 PyTorch 的融合内核"
                            "（`F.scaled_dot_product_attention`），下方有实测。",
        "attn_T": "序列长度 T",
        "attn_head_dim": "头维度 d",
        "attn_block": "分块大小（每块的查询数 × 键数）",
        "attn_causal": "因果（跳过对角线上方的分块）",
        "term_attn_causal": "因果",
        "attn_dtype": "精度",
        "attn_seed": "随机种子（随机的 q、k、v）",
        "attn_step": "分块（0 = 第一块之前）",
        "attn_prev": "◀ 上一块",
        "attn_next": "下一块 ▶",
        "attn_play": "播放",
        "attn_pause": "暂停",
        "attn_tiles_plot": "分块、朴素 softmax、逐行填入的输出",
        "attn_rows_plot": "每个查询行的当前最大值 m 与累加和 ℓ",
        "attn_flash_explain": r"""
**在线 softmax。** 对一个查询行，分数为 $s_1, \dots, s_T$，输出为 $o = \sum_j \frac{e^{s_j - m}}{\ell} v_j$，其中 $m = \max_j s_j$，$\ell = \sum_j e^{s_j - m}$（减去 $m$ 在数学上不改变结果，只是防止 $e^{x}$ 溢出）。FlashAttention 按分块读取键和值，每行维护三个随分块更新的量：$m$、$\ell$ 和未归一化的输出 $\mathrm{acc}$。对每个分块的分数 $s_j$：
$$m_{new} = \max\big(m_{old}, \max_j s_j\big),\qquad \ell_{new} = e^{m_{old}-m_{new}}\,\ell_{old} + \sum_j e^{s_j - m_{new}},\qquad \mathrm{acc}_{new} = e^{m_{old}-m_{new}}\,\mathrm{acc}_{old} + \sum_j e^{s_j - m_{new}}\, v_j$$
该行最后一个分块之后 $o = \mathrm{acc} / \ell$。第一个分块之前 $m = -\infty$、$\ell = 0$、$\mathrm{acc} = 0$（所以第一次的缩放因子是 $e^{-\infty} = 0$）。

**为什么它是精确的，而不是近似。** 已经累加的每一项都是按 $e^{s - m_{old}}$ 算的；乘以 $e^{m_{old} - m_{new}}$ 就变成 $e^{s - m_{new}}$，和一开始就知道 $m_{new}$ 时完全一样。最后一个分块之后，$m$ 就是该行真正的最大值，$\ell$ 就是真正的 $\sum_j e^{s_j - m}$（第二幅图中的标记），所以 $\mathrm{acc}/\ell$ 就是按 softmax 加权的和。与朴素做法唯一的区别是浮点加法的顺序：float32 下约 1e-7，float64 下约 1e-16。

**为什么重要。** 朴素做法要把 $T \times T$ 的分数和概率写入内存：每个注意力头 $2T^2$ 个数（T = 16K、float32 时每个头 2 GiB）。分块循环任何时候只持有一个分块，外加 q、k、v 和输出所需的 $O(T \cdot d)$。在 GPU 上分块放在片上 SRAM 中，大矩阵从不写回 HBM：搬运的字节更少，这才是它快的原因，而不是 FLOPs 更少（乘加次数相同）。**因果**注意力会整块跳过对角线上方的分块：几乎一半。

**FlashAttention-2 和 -3 改变的是工作划分，不是数学。** FlashAttention-1（2022）外层循环遍历键/值分块、内层遍历查询分块，每一步都要在内存中重新缩放输出。FlashAttention-2（2023）交换了两层循环（外层是查询分块，和这里一样），每行的 $m, \ell, \mathrm{acc}$ 一直留在片上，最后只除一次 $\ell$，并且除了按注意力头和批次，还按序列长度划分工作。FlashAttention-3（2024）面向 NVIDIA Hopper：张量核心与内存的异步操作让一个分块的 softmax 与下一个分块的矩阵乘法重叠，并支持 FP8。上面的递推在三者中完全相同。PyTorch 的 `F.scaled_dot_product_attention` 会根据设备、数据类型和形状选择 FlashAttention-2、内存高效内核、cuDNN、CPU flash 内核或普通的 math 路径：下方的测量结果会注明它实际运行的是哪一个。
""",
        "attn_rec_heading": "**当前分块中的一行，代入具体数值**（最大值变化最大的那一行）：",
        "attn_rec_start": "第一个分块之前，每行都是 $m = -\\infty$、$\\ell = 0$、$\\mathrm{acc} = 0$。"
                          "请按 **下一块 ▶** 或 **播放**。",
        "attn_rec_tile": "**查询行 {row}，键 {cols}**\n\n"
                         "$m_{{new}} = \\max(m_{{old}}, \\max_j s_j) = \\max({m_old},\\ {tile_max}) = {m_new}$\n\n"
                         "$e^{{m_{{old}} - m_{{new}}}} = {rescale}$（缩放因子）\n\n"
                         "$\\ell_{{new}} = e^{{m_{{old}} - m_{{new}}}}\\,\\ell_{{old}} + \\sum_j e^{{s_j - m_{{new}}}}"
                         " = {rescale} \\times {l_old} + {tile_sum} = {l_new}$\n\n"
                         "$\\mathrm{{acc}}_{{new}} = {rescale} \\times \\mathrm{{acc}}_{{old}} + "
                         "\\sum_j e^{{s_j - m_{{new}}}}\\, v_j$",
        "attn_rec_last": "这是该行的最后一个分块：输出已写入，$o = \\mathrm{acc} / \\ell$，"
                         "此时 $\\ell$ 等于整行的 $\\sum_j e^{s_j - \\max s}$。",
        "attn_rec_more": "该行后面还有分块：$m$ 和 $\\ell$ 还不是最终值。",
        "attn_status_step": "**第 {step} / {n} 个分块**",
        "attn_status_skipped": "跳过了 {total} 个分块中的 {skipped} 个（所有格子都被遮蔽：从未计算）",
        "attn_status_rows": "{T} 个输出行中 {done} 个已是最终值",
        "attn_status_diff_ok": "|分块 − 朴素| 最大为 {diff}（{dtype}：≤ {tol} ✓），|分块 − SDPA| = {sdpa}",
        "attn_status_diff_bad": "|分块 − 朴素| 最大为 {diff}（{dtype}：超过 {tol} ✗），|分块 − SDPA| = {sdpa}",
        "attn_fig_tiles": "分数 qkᵀ/√d，逐块计算",
        "attn_fig_probs": "朴素做法：softmax P",
        "attn_fig_out_tiled": "输出：分块",
        "attn_fig_out_naive": "输出：朴素",
        "attn_fig_key": "键 j",
        "attn_fig_dim": "维度",
        "attn_fig_query": "查询行 i",
        "attn_fig_hover_cell": "查询 %{y} · 键 %{x}：%{z:.4g}<extra></extra>",
        "attn_fig_hover_out": "行 %{y} · 维度 %{x}：%{z:.4g}<extra></extra>",
        "attn_fig_title_start": "第一个分块之前：共 {n} 个分块要计算（淡色：尚未计算，灰色：跳过）",
        "attn_fig_title_step": "第 {step} / {n} 个分块：查询行 {rows} × 键 {cols}（描边）",
        "attn_fig_m": "当前最大值 m（柱）<br>与该行最大值（—）",
        "attn_fig_l": "累加和 ℓ（柱）<br>与 Σ exp(s − max)（—）",
        "attn_fig_rescale": "本分块的缩放因子<br>exp(m_old − m_new)",
        "attn_fig_naive_max": "朴素：该行的最大值",
        "attn_fig_naive_sum": "朴素：Σ exp(s − max)",
        "attn_fig_hover_m": "行 %{x}：m = %{y:.4g}<extra></extra>",
        "attn_fig_hover_l": "行 %{x}：ℓ = %{y:.4g}<extra></extra>",
        "attn_fig_hover_rescale": "行 %{x}：exp(m_old − m_new) = %{y:.4g}<extra></extra>",
        "attn_cost_heading": "### 放大规模：实测 T² 之墙\n对 T = 256、512、…，朴素做法、PyTorch 的 "
                             "`scaled_dot_product_attention` 和我们的分块循环都在本机设备上运行；内存是实测的"
                             "（不是按公式算的），并与公式画在一起。下方是解码一侧：KV 缓存随 T 增长，每一步都要读完它。",
        "attn_max_T": "最大 T",
        "attn_max_T_auto": f"自动：CPU {ATTN_COST_MAX_T_CPU // 1024}K · GPU {ATTN_COST_MAX_T_CUDA // 1024}K",
        "attn_max_T_info": f"自动：本设备允许的上限（CPU 为 {ATTN_COST_MAX_T_CPU // 1024}K，"
                           f"GPU 为 {ATTN_COST_MAX_T_CUDA // 1024}K）",
        "attn_cost_head_dim": "头维度 d",
        "attn_cost_heads": "注意力头数 H",
        "attn_cost_batch": "批大小 B",
        "attn_cost_dtype": "数据类型",
        "attn_measure": "测量",
        "attn_stop": "停止",
        "attn_cost_plot": "每次调用的内存与时间随 T 的变化（双对数）",
        "attn_kv_plot": "解码一侧：KV 缓存",
        "attn_cost_waiting": f"按“测量”：每测完一个点就显示出来（最多 {ATTN_COST_MAX_SECONDS:.0f} 秒；“停止”可随时结束）",
        "attn_cost_naive": "朴素（构造分数和 softmax）",
        "attn_cost_sdpa": "SDPA：{backend}",
        "attn_cost_tiled": "我们的分块循环（分块 {block}）",
        "attn_cost_formula_matrices": "公式 2·B·H·T²·字节（分数 + 概率）",
        "attn_cost_formula_rows": "公式 B·H·T·d·字节（输出：一次调用分配的 O(T·d) 部分）",
        "attn_cost_formula_window": "公式，滑动窗口 W = {window}（Mistral）：2·B·H·T·min(T, W)·字节",
        "attn_cost_budget": "预算 {budget}",
        "attn_cost_wall": "朴素：需要 {need}，未运行",
        "attn_cost_memory_title": "一次调用分配的峰值字节数（实测）",
        "attn_cost_time_title": "每次调用的毫秒数（实测）",
        "attn_cost_bytes": "字节",
        "attn_cost_ms": "毫秒",
        "attn_backend_cpu_flash": "CPU 的融合 flash 内核",
        "attn_backend_flash": "FlashAttention-2",
        "attn_backend_efficient": "内存高效注意力（xFormers）",
        "attn_backend_cudnn": "cuDNN 注意力",
        "attn_backend_math": "math 路径（构造 T × T）",
        "attn_backend_overrideable": "设备专用的融合内核",
        "attn_backend_unknown": "无法识别的内核",
        "attn_cost_backend": "SDPA 运行的是 **{backend}**（`{op}`，从性能分析器的算子名读出）。",
        "attn_cost_at": "T = {T} 时：朴素 **{naive}**，{naive_ms} 毫秒；SDPA **{sdpa}**，{sdpa_ms} 毫秒："
                        "内存只需朴素做法的 1/{mem_ratio}，速度是它的 {time_ratio} 倍；|朴素 − SDPA| 最大为 {diff}。",
        "attn_cost_skip_memory": "{name}：从 T = {T} 起不再运行：它需要 {need}，超出预算（分配之前检查）。",
        "attn_cost_skip_time": "{name}：从 T = {T} 起不再运行：预计每次调用 {need}（时间预算）。",
        "attn_cost_ended_time": "测量在 {seconds} 秒后停止：达到时间预算。",
        "attn_kv_summary": "小型 GPT，一个带缓存的解码步骤：缓存 {first} 个词元时 {ms0} 毫秒，{last} 个时 {ms1} 毫秒"
                           "（每一步读取 {bytes} 的缓存）；拟合：每多缓存 100 个词元 +{per100} 微秒。",
        "attn_cost_method_cpu": "CPU 上的内存：一次调用期间 `torch.profiler`（`profile_memory=True`）记录的分配的峰值，"
                                "包括输出。时间：最多 3 次调用的中位数，使用 {threads} 个线程"
                                "（在线服务时测量在低优先级的工作进程中运行）。",
        "attn_cost_method_cuda": "CUDA 上的内存：一次调用期间 `torch.cuda.max_memory_allocated` 超出调用前已分配的部分，"
                                 "包括输出。时间：最多 3 次同步调用的中位数。",
        "attn_kv_step_title": "小型 GPT：一个带缓存的解码步骤（实测）",
        "attn_kv_cache_title": "Mistral-7B 的 KV 缓存（bf16）：完整与滑动窗口",
        "attn_kv_context": "缓存中的词元数",
        "attn_kv_measured": f"一个解码步骤（{ATTN_DECODE_STEPS} 次中最快的一次）",
        "attn_kv_hover": "缓存 %{x} 个词元（%{customdata}）：%{y:.3f} 毫秒<extra></extra>",
        "attn_kv_fit": "拟合：{a} 毫秒 + 每 100 个词元 {per100} 微秒",
        "attn_kv_full": "完整缓存：随 T 增长",
        "attn_kv_window": "窗口 W = {window} 的滚动缓存：超过 W 后保持不变",
        "attn_err_rank": "q、k、v 的维数必须相同（至少 2 维），收到的是 {q}、{k}、{v}",
        "attn_err_shapes": "形状不符合注意力的要求：q (…, T_q, d)、k (…, T_k, d)、v (…, T_k, d_v)，收到的是 {q}、{k}、{v}",
        "attn_err_causal_lengths": "因果注意力要求查询数与键数相同，收到的是 T_q = {t_q}、T_k = {t_k}",
        "attn_err_beyond_device": "最大 T = {value:,} 超出本设备的上限：{device} 上最多 {bound:,}",
        "attn_err_beyond_budget": "T = {value:,} 超出内存预算：仅 q、k、v 和输出就需要 {need}，预算为 {budget}。"
                                  "请选择更小的 T、更少的注意力头或更小的批大小",
        "term_attn_T": "序列长度 T",
        "term_attn_head_dim": "头维度 d",
        "term_attn_block": "分块大小",
        "term_attn_step": "分块序号",
        "term_attn_dtype": "精度",
        "term_attn_max_T": "最大 T",
        "term_attn_heads": "注意力头数",
        "term_attn_batch": "批大小",
    },
}
