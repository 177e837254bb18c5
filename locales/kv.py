"""The KV cache tab: its widgets' labels, the text of its figures (:mod:`viz.kv`), and the messages of
its backend (:mod:`models.kv_cache`, :mod:`models.generation`, :mod:`models.tiny_gpt`)."""
from models.limits import KV_CONTEXT, KV_TRAINED_LATENT

STRINGS = {
    "en": {
        # widgets (components.kv)
        "tab_kv": "KV cache",
        "kv_intro": "A tiny GPT (character-level, 4 layers, d = 128, 4 heads, trained in this repository on "
                    "`data/corpus/en.txt`) writes while you watch its KV cache fill in. It decodes twice in "
                    "lockstep, with and without the cache, so both timings are measured and the outputs can "
                    f"be compared. Prompt + new tokens ≤ {KV_CONTEXT} characters. A cached decode step still "
                    "reads the whole cache, so its time grows with the context (decoding is memory-bound); at "
                    "this toy scale the growth is small, at a real model's scale it is the cost (Explain).",
        "kv_prompt": "Prompt",
        "kv_prompt_info": "the model's 61 characters only: letters (no capital X) and é, space, new line and "
                          ". , ; : ? ' \" - (no digits)",
        "kv_attention": "Attention",
        "kv_mha": "MHA: every head its own K, V",
        "kv_gqa": "GQA: heads share K, V in groups",
        "kv_mqa": "MQA: one K, V for all heads",
        "kv_mla": "MLA: a shared latent (DeepSeek)",
        "kv_n_kv": "KV heads n_kv",
        "kv_n_kv_info": "GQA groups; must divide the 4 query heads (4 = MHA, 1 = MQA)",
        "kv_latent": "MLA latent width",
        "kv_latent_info": f"kv_latent_dim; trained: {KV_TRAINED_LATENT}; other widths run with random weights",
        "kv_new_tokens": "New tokens",
        "kv_temperature": "Temperature",
        "kv_temperature_info": "0 = greedy; both decodes sample with the same seed",
        "kv_seed": "Seed (sampling)",
        "kv_generate": "Generate",
        "kv_stop": "Stop",
        "kv_look_inside": "Look inside: this text in the Attention tab (its last 128 characters) →",
        "kv_text": "Text so far (prompt, then generated)",
        "kv_cache_plot": "The cache: layers × cached vectors × positions",
        "kv_growth_plot": "Bytes and time per step",
        "kv_groups_plot": "Query heads and the K/V they read",
        "kv_scale_heading": r"""### Scale it up on paper
The same formula for real models (the Calculator's presets and backend): how big the cache gets as each model's config has it, and at which context it outgrows the weights. Most layers keep every token; Mistral-7B v0.1 attends to a 4,096-token window on every layer and keeps a rolling buffer of it, so its cache stops growing there, 0.5 GiB in bf16 (Hugging Face's cache keeps 4,095 between steps and adds the step's own). Gemma-3-12B interleaves them: 40 of its 48 layers keep a 1,024-token window, so past 1,024 tokens its cache grows at a sixth of the rate, with its 8 global layers. Below it, the chosen model's cache in four layouts: the standard decoder, a sliding window (the model's own W, or Mistral's 4,096 tokens), YOCO (a self-decoder with a window cache, then one global KV shared by the cross-decoder's layers) and MLA (one latent per token), with each formula and the YOCO / standard ratio at 128K and 1M tokens.""",
        "kv_preset": "Model",
        "kv_context": "Context length T (tokens)",
        "kv_batch": "Batch (sequences)",
        "kv_dtype": "Cache and weights dtype",
        "kv_scale_plot": "KV cache vs. context",
        "kv_explain": r"""
**What is cached, and why not the queries.** Attention at position $t$ needs the query of $t$ and the keys and values of $0 \dots t$. In a causal model an old token never sees a new one, so the keys and values of earlier tokens never change: compute them once, keep them, and each step computes only the newest token's $q, k, v$. The newest query is used once and thrown away; no later step needs it, so queries are not cached.

**Prefill, then decode.** The prompt runs in one pass (*prefill*: many tokens at once, compute-bound, the orange diamond) and fills the cache; then each *decode* step feeds one token, attends to everything cached and appends its own $k, v$. Without the cache every step recomputes the whole prefix, so its time climbs with the length. With it, a step computes one token's $q, k, v$ but still **reads the whole cache**: $T$ keys and values in every layer. Decoding is memory-bound (each number read from memory is used in about one multiply-add), so a cached step's time also grows with $T$, linearly, only far more slowly. Here that line looks almost flat because the model is tiny: its whole cache is at most 2 MiB (MHA, 512 tokens, fp32) and its weights 3.1 MiB, so a step's time is mostly the fixed cost of launching a few dozen small operations. At scale the slope is the cost: Llama-3-8B in bf16 on an H100 (3.35 TB/s) reads its 15 GiB of weights in about 4.8 ms per step, plus 128 KiB per cached token: 0.3 ms more at 8K tokens, 5.1 ms more at 128K, where a step takes about twice as long as with an empty cache. That is why GQA, MQA and MLA shrink the cache: fewer bytes to read at every step, not only less memory.

**The mask of a cached step is aligned bottom-right.** With $S$ keys and $T$ new queries (the last $T$ positions), query $i$ may see keys $0 \dots S-T+i$: the causal triangle sits in the bottom-right corner of the $T\times S$ score matrix. `scaled_dot_product_attention(is_causal=True)` aligns it top-left when $T \ne S$ (query 0 would see only key 0), so a cached step uses an explicit bottom-right mask (`torch.nn.attention.bias.causal_lower_right` builds the same). For a single new token there is nothing to mask.

**Its size.** Per token and layer the cache holds a key and a value per *KV head*:
$$M = 2 \cdot L \cdot n_{kv} \cdot d_{head} \cdot T \cdot B \cdot s$$
where $M$ is the bytes of $L$ layers, $T$ tokens, a batch of $B$ sequences at $s$ bytes per number. MHA has $n_{kv} = n_{heads}$; GQA lets groups of query heads share one K/V head ($n_{heads}/n_{kv}$ per group); MQA keeps one. MLA (DeepSeek-V2) caches, per layer, one latent $c_t$ of width $d_c$ from which every head's $K$ and $V$ are rebuilt ($k = W_{UK} c$, $v = W_{UV} c$), plus one small RoPE key shared by all heads: $L \cdot (d_c + d_R) \cdot T$ numbers, no factor 2. At decode time $W_{UK}$ folds into the query and $W_{UV}$ into the output, so attention runs directly on the cached latents (this model does exactly that).

**Why a decoupled RoPE key.** RoPE rotates keys by their position; a rotation between $W_{UK}$ and $c$ would stop $W_{UK}$ from folding into the query. So positions ride on a separate small key $k^R$ (and a matching part of each query); the latent stays position-free.

**Preallocated.** This cache reserves its buffers for prompt + new tokens once and writes each step's slice in place (grey = reserved, not yet written). Appending with `torch.cat` would copy the whole cache every step.

**What the speed-up measures.** A cached step here runs as one fused one-token step over the same weights (`models.transformer.decode.DecodeStep`: fewer, larger operations); the uncached decode runs the ordinary forward over the whole prefix. So on a CPU the ratio is the cache's saving times about 1.2× from the leaner step (`bench/bench_kv.py`: 11.8× before the fused step, 14× with it). On a GPU each small operation costs a few microseconds of launch whatever its size, so there the cached step is recorded once as a CUDA graph and replayed: 3–4× faster than launching its operations one by one on an H100, most of the ratio you see there. The tokens are identical either way.

What to notice: switch MHA → GQA → MQA → MLA and the cache picture shrinks (4 : 2 : 1, then 192/1024 of MHA), the bytes stay on the formula's line, the time per cached step stays nearly flat at this scale (it grows with $T$ at scale, see above), and the text does not change between the cached and uncached decodes (greedy at temperature 0; when sampling, both draw the same seeded random numbers). At scale, the cache outgrows the weights: Llama-2-7B (MHA) at about 26K tokens, Llama-3-8B (GQA-8) at about 123K.
""",
        "kv_device_line": "{device} · prefill {prefill:.1f} ms · decode with the cache {cached:.2f} ms/token, without {uncached:.2f} ms/token · {tokens} tokens",
        # figures and the text under them (viz.kv)
        "kv_fig_cache_title": "KV cache: {filled} of {capacity} preallocated positions filled · {bytes}",
        "kv_fig_cache_plan": "KV cache, preallocated for {capacity} positions (prompt + new tokens − 1), empty",
        "kv_fig_position": "position in the sequence (one character = one token)",
        "kv_fig_per_token": "numbers cached per token, stacked by layer (full height = MHA)",
        "kv_fig_layer": "layer {n}",
        "kv_fig_prompt": "prompt │ generated",
        "kv_fig_rms": "RMS of the<br>cached vector",
        "kv_fig_layout_mha": "each layer caches, per token: {rows}",
        "kv_fig_mha_height": "MHA would fill the full height",
        "kv_fig_bytes_title": "Cache bytes: measured vs. formula",
        "kv_fig_time_title": "Time per step",
        "kv_fig_tokens_cached": "tokens in the cache T",
        "kv_fig_context": "tokens attended over",
        "kv_fig_bytes": "bytes",
        "kv_fig_ms": "ms per step",
        "kv_fig_measured": "measured: nbytes()",
        "kv_fig_formula": "formula {formula}",
        "kv_fig_with_cache": "decode with the cache",
        "kv_fig_prefill": "prefill",
        "kv_fig_without_cache": "without the cache",
        "kv_fig_speedup": "without / with the cache: ×{x:.1f} (last {n} steps)",
        "kv_fig_above": "↑ {n} lone {n:|step|steps} off the top (slowest {ms:.1f} ms)",
        "kv_fig_press": "press Generate to measure",
        "kv_fig_query": "query heads",
        "kv_fig_kv": "K/V heads",
        "kv_fig_mla_legend": "c: the latent ({r} numbers), read by each<br>head through its own W_UK, W_UV<br>kᴿ: one RoPE key ({d}), shared by all heads",
        "kv_fig_q": "Q{n}",
        "kv_fig_kvh": "K/V{n}",
        "kv_fig_per_layer": "cached per layer and token: {expr} = {n} numbers",
        "kv_fig_vs_mha": "{x} of MHA's {mha}",
        "kv_fig_untrained": "no checkpoint for this shape: random weights",
        "kv_fig_scale_title": "KV cache as the context grows (batch {batch}, {dtype})",
        "kv_fig_scale_context": "context length T (tokens)",
        "kv_fig_gib": "GiB",
        "kv_fig_weights": "{name} weights",
        "kv_fig_cross": "cache = weights at {t:,} tokens",
        "kv_fig_here": "{t:,} tokens: {size}",
        "kv_fig_step": "step {i} of {n}",
        "kv_fig_in_cache": "{t} tokens in the cache",
        "kv_fig_bytes_ok": "{measured:,} B = {formula} = {expected:,} B ✓",
        "kv_fig_bytes_bad": "{measured:,} B measured ≠ {formula} = {expected:,} B ✗",
        "kv_fig_identical": "with and without the cache: identical tokens so far ✓",
        "kv_fig_diverged": "with and without the cache: the tokens differ ✗",
        "kv_fig_trained": "trained weights `{name}` (validation loss {loss:.3f} nats/character)",
        "kv_fig_random": "no trained weights for `{name}`: random weights. The text is noise; the cache, its bytes and the timings are real",
        "kv_fig_s_shape": "{layers} layers · {heads} query heads · n_kv = {kv} KV heads (`num_key_value_heads`) · hd = {hd} (`head_dim`)",
        "kv_fig_s_shape_mla": "{layers} layers · {heads} query heads · latent r_kv = {r} (`kv_lora_rank`) · RoPE key rope = {rope} (`qk_rope_head_dim`, shared by all heads)",
        "kv_fig_s_cache": "KV cache",
        "kv_fig_s_per_token": "per token",
        "kv_fig_s_per_token_window": "per token, until the windows fill",
        "kv_fig_s_past_window": "past T = {w:,}, the {full} layers without a window only: {formula} = {size} a token",
        "kv_fig_s_past_window_none": "past T = {w:,}, nothing: every layer's window is full",
        "kv_fig_s_weights": "weights ({params:,} parameters × {b:g} B)",
        "kv_fig_s_cross": "the cache outgrows the weights at",
        "kv_fig_same_cache": "{name} (the same cache as {other})",
        "kv_fig_s_tokens": "tokens",
        "kv_fig_s_as_mha": "as MHA (n_kv = n_heads = {heads})",
        "kv_fig_s_decompressed": "if it cached each head's decompressed K ({k}) and V ({v})",
        "kv_fig_s_no2": "no factor 2: K and V are both rebuilt from the one latent",
        "kv_fig_s_window": "{local} of the {layers} layers keep only their last W = {w:,} tokens, a rolling buffer",
        "kv_fig_s_no_cross": "every layer's window fills at T = {w:,}: the cache stops growing there, below the weights",
        "kv_fig_s_times": "×{x:.3g} the cache",
        # messages (models.kv_cache, models.generation, models.tiny_gpt)
        "kv_err_capacity": "cache capacity = {capacity} must be from 1 to the context, {context}",
        "kv_err_cache_full": "the cache holds {capacity} positions: {filled} are filled, {more} more do not fit",
        "kv_err_queries": "{queries} new queries need 1 ≤ queries ≤ keys = {keys}",
        "kv_err_empty_prompt": "the prompt is empty: type at least one character",
        "kv_err_too_long": "the prompt ({prompt} tokens) plus {new} new tokens is {total}: the model's context is {context} tokens",
        "kv_err_token_ids": "token ids must be from 0 to {high}",
        "kv_err_vocab": "a vocabulary is a non-empty string of distinct characters",
        "kv_err_unknown_chars": "the model knows {known} characters; these are not among them (character, position): {listed}",
        "term_kv_model": "model",
        "kv_err_prompt_not_text": "the prompt must be text",
        "term_attention": "attention",
        "term_kv_latent_dim": "kv_latent_dim",
        "term_max_new_tokens": "max_new_tokens",
        "term_kv_context": "context length",
        "term_kv_batch": "batch",
        "term_kv_dtype": "dtype",
    },
    "zh-CN": {
        # widgets (components.kv)
        "tab_kv": "KV 缓存",
        "kv_intro": "一个小型 GPT（字符级，4 层，d = 128，4 个头，在本仓库中用 `data/corpus/en.txt` 训练）"
                    "一边生成文本，一边让你看着它的 KV 缓存逐步填满。它同时做两次解码（用缓存和不用缓存，逐步交替进行），"
                    f"因此两种耗时都是实测的，两者的输出也可以对比。提示词 + 新词元 ≤ {KV_CONTEXT} 个字符。"
                    "带缓存的解码步骤仍要读取整个缓存，所以耗时随上下文增长（解码受内存带宽限制）；"
                    "在这个玩具规模下增长很小，到了真实模型的规模，这正是主要开销（见“讲解”）。",
        "kv_prompt": "提示词",
        "kv_prompt_info": "只能用模型认识的 61 个字符：字母（没有大写 X）和 é、空格、换行以及 "
                          ". , ; : ? ' \" -（没有数字）",
        "kv_attention": "注意力",
        "kv_mha": "MHA：每个头有自己的 K、V",
        "kv_gqa": "GQA：头按组共享 K、V",
        "kv_mqa": "MQA：所有头共用一组 K、V",
        "kv_mla": "MLA：共享的潜在向量（DeepSeek）",
        "kv_n_kv": "KV 头数 n_kv",
        "kv_n_kv_info": "GQA 的组数；必须能整除查询头数 4（4 = MHA，1 = MQA）",
        "kv_latent": "MLA 潜在维度",
        "kv_latent_info": f"kv_latent_dim；有训练好权重的宽度：{KV_TRAINED_LATENT}；其他宽度使用随机权重",
        "kv_new_tokens": "新词元数",
        "kv_temperature": "温度",
        "kv_temperature_info": "0 = 贪心；两次解码用同一随机种子采样",
        "kv_seed": "随机种子（采样）",
        "kv_generate": "生成",
        "kv_stop": "停止",
        "kv_look_inside": "看看内部：在注意力页打开这段文字（最后 128 个字符）→",
        "kv_text": "目前的文本（提示词 + 生成的部分）",
        "kv_cache_plot": "缓存：层 × 缓存向量 × 位置",
        "kv_growth_plot": "字节数与每步耗时",
        "kv_groups_plot": "查询头及其读取的 K/V",
        "kv_scale_heading": r"""### 放大到真实规模（纸上计算）
把同一公式用到真实模型上（沿用“计算器”页的预设和后端）：按各模型的配置，缓存会有多大，上下文多长时它会超过权重。大多数层保留每个词元；Mistral-7B v0.1 的每一层都只关注 4,096 个词元的窗口，并用滚动缓冲区保存它，所以缓存到这里就不再增长，bf16 下为 0.5 GiB（Hugging Face 的缓存在两步之间保留 4,095 个，再加上当前这一步自己的）。Gemma-3-12B 则把两者交替排列：48 层中有 40 层只保留 1,024 个词元的窗口，所以超过 1,024 个词元后，只有 8 个全局层还在增长，缓存的增速只有原来的六分之一。下方是所选模型的缓存在四种布局下的大小：标准解码器、滑动窗口（模型自己的 W，没有则用 Mistral 的 4,096 个词元）、YOCO（自解码器只缓存一个窗口，之后交叉解码器的各层共享一份全局 KV）和 MLA（每个词元一个潜向量），并给出各自的公式，以及 128K 和 1M 词元时 YOCO 与标准布局之比。""",
        "kv_preset": "模型",
        "kv_context": "上下文长度 T（词元）",
        "kv_batch": "批大小（序列数）",
        "kv_dtype": "缓存与权重的数据类型",
        "kv_scale_plot": "KV 缓存随上下文长度的变化",
        "kv_explain": r"""
**缓存什么，为什么不缓存查询。** 位置 $t$ 的注意力需要 $t$ 的查询，以及 $0 \dots t$ 的键和值。因果模型中旧词元永远看不到新词元，所以之前词元的键和值不会再变：算一次、存起来，之后每一步只需计算最新词元的 $q, k, v$。最新的查询只用一次就丢弃，之后的步骤不再需要它，所以查询不缓存。

**先预填充，再解码。** 提示词一次性处理完（*预填充*：很多词元同时计算，受算力限制，图中橙色菱形），并填满缓存；之后每个*解码*步骤只输入一个词元，对所有已缓存的内容做注意力，再追加自己的 $k, v$。不用缓存时，每一步都要重新计算整个前缀，耗时随长度攀升。使用缓存时，每步只计算一个词元的 $q, k, v$，但仍要**读取整个缓存**：每一层的 $T$ 个键和值。解码受内存带宽限制（从内存读出的每个数只参与约一次乘加），所以带缓存的每步耗时同样随 $T$ 线性增长，只是慢得多。这里的曲线看起来几乎是平的，因为模型太小：整个缓存最多 2 MiB（MHA，512 个词元，fp32），权重 3.1 MiB，每步耗时主要是启动几十个小运算的固定开销。放大到真实模型，这个斜率就是主要开销：Llama-3-8B 用 bf16 在 H100（3.35 TB/s）上每步读取 15 GiB 权重约需 4.8 ms，每个已缓存的词元还要多读 128 KiB：8K 词元时多 0.3 ms，128K 时多 5.1 ms，此时每步耗时约为缓存为空时的两倍。这正是 GQA、MQA 和 MLA 缩小缓存的原因：不只是省内存，每一步要读的字节也更少。

**带缓存的步骤，掩码右下对齐。** 有 $S$ 个键和 $T$ 个新查询（最后 $T$ 个位置）时，查询 $i$ 可以看到键 $0 \dots S-T+i$：因果三角位于 $T\times S$ 分数矩阵的右下角。`scaled_dot_product_attention(is_causal=True)` 在 $T \ne S$ 时按左上角对齐（查询 0 只能看到键 0），所以带缓存的步骤使用显式的右下对齐掩码（`torch.nn.attention.bias.causal_lower_right` 构造的正是同样的掩码）。只有一个新词元时无需掩码。

**缓存的大小。** 每个词元、每层为每个 *KV 头* 缓存一个键和一个值：
$$M = 2 \cdot L \cdot n_{kv} \cdot d_{head} \cdot T \cdot B \cdot s$$
其中 $M$ 为 $L$ 层、$T$ 个词元、$B$ 个序列（批大小）的总字节数，$s$ 为每个数的字节数。MHA 的 $n_{kv} = n_{heads}$；GQA 让一组查询头共享一个 K/V 头（每组 $n_{heads}/n_{kv}$ 个）；MQA 只保留一个。MLA（DeepSeek-V2）每层只缓存一个宽度为 $d_c$ 的潜在向量 $c_t$，每个头的 $K$、$V$ 都由它重建（$k = W_{UK} c$，$v = W_{UV} c$），外加一个所有头共享的小 RoPE 键：$L \cdot (d_c + d_R) \cdot T$ 个数，没有因子 2。解码时 $W_{UK}$ 可并入查询、$W_{UV}$ 可并入输出，注意力直接在缓存的潜在向量上计算（本模型正是这样做的）。

**为什么 RoPE 键要解耦。** RoPE 按位置旋转键；如果 $W_{UK}$ 和 $c$ 之间夹着一次旋转，$W_{UK}$ 就无法并入查询。因此位置信息由一个单独的小键 $k^R$（以及每个查询中对应的部分）承载，潜在向量保持与位置无关。

**预分配。** 本缓存一次性为提示词 + 新词元预留缓冲区，之后每步原地写入自己那一片（灰色 = 已预留、尚未写入）。用 `torch.cat` 追加会在每一步复制整个缓存。

**加速比衡量的是什么。** 这里用缓存的每一步走的是一个融合的单词元步骤（`models.transformer.decode.DecodeStep`，权重相同，算子更少、更大）；不用缓存的解码走的是对整个前缀的普通前向。所以在 CPU 上，这个比值是缓存省下的计算再乘上精简步骤带来的约 1.2 倍（`bench/bench_kv.py`：融合前 11.8 倍，融合后约 14 倍）。在 GPU 上，每个小算子无论大小都要花几微秒来启动，所以带缓存的这一步会被录制成一个 CUDA 图（CUDA graph）并反复重放：在 H100 上比逐个启动这些算子快 3–4 倍，占了你在那里看到的比值的大部分。两种方式生成的词元完全相同。

观察要点：依次切换 MHA → GQA → MQA → MLA，缓存图随之缩小（4 : 2 : 1，然后是 MHA 的 192/1024），字节数始终落在公式的直线上，带缓存的每步耗时在这个规模下几乎不变（放大后随 $T$ 增长，见上文），用与不用缓存生成的文本完全相同（温度为 0 时是贪心解码；采样时两次解码使用同一组带种子的随机数）。放大到真实模型时，缓存会超过权重：Llama-2-7B（MHA）约在 2.6 万词元，Llama-3-8B（GQA-8）约在 12.3 万词元。
""",
        "kv_device_line": "{device} · 预填充 {prefill:.1f} ms · 用缓存解码 {cached:.2f} ms/词元，不用缓存 {uncached:.2f} ms/词元 · 共 {tokens} 个词元",
        # figures and the text under them (viz.kv)
        "kv_fig_cache_title": "KV 缓存：预分配的 {capacity} 个位置已填入 {filled} 个 · {bytes}",
        "kv_fig_cache_plan": "KV 缓存：为 {capacity} 个位置预分配（提示词 + 新词元 − 1），目前为空",
        "kv_fig_position": "序列中的位置（一个字符 = 一个词元）",
        "kv_fig_per_token": "每个词元缓存的数值个数，按层堆叠（满高 = MHA）",
        "kv_fig_layer": "第 {n} 层",
        "kv_fig_prompt": "提示词 │ 生成部分",
        "kv_fig_rms": "缓存向量的<br>均方根",
        "kv_fig_layout_mha": "每层为每个词元缓存：{rows}",
        "kv_fig_mha_height": "MHA 会占满整个高度",
        "kv_fig_bytes_title": "缓存字节数：实测与公式",
        "kv_fig_time_title": "每步耗时",
        "kv_fig_tokens_cached": "缓存中的词元数 T",
        "kv_fig_context": "本步注意力覆盖的词元数",
        "kv_fig_bytes": "字节",
        "kv_fig_ms": "每步耗时（ms）",
        "kv_fig_measured": "实测：nbytes()",
        "kv_fig_formula": "公式 {formula}",
        "kv_fig_with_cache": "用缓存解码",
        "kv_fig_prefill": "预填充",
        "kv_fig_without_cache": "不用缓存",
        "kv_fig_speedup": "不用缓存 / 用缓存：×{x:.1f}（最近 {n} 步）",
        "kv_fig_above": "↑ {n} 个孤立的步超出上沿（最慢 {ms:.1f} ms）",
        "kv_fig_press": "点击“生成”开始测量",
        "kv_fig_query": "查询头",
        "kv_fig_kv": "K/V 头",
        "kv_fig_mla_legend": "c：潜在向量（{r} 个数），<br>每个头用自己的 W_UK、W_UV 读取<br>kᴿ：所有头共享的 RoPE 键（{d}）",
        "kv_fig_q": "Q{n}",
        "kv_fig_kvh": "K/V{n}",
        "kv_fig_per_layer": "每层每个词元缓存：{expr} = {n} 个数",
        "kv_fig_vs_mha": "是 MHA（{mha} 个数）的 {x}",
        "kv_fig_untrained": "这种形状没有训练好的检查点：使用随机权重",
        "kv_fig_scale_title": "KV 缓存随上下文增长（批大小 {batch}，{dtype}）",
        "kv_fig_scale_context": "上下文长度 T（词元）",
        "kv_fig_gib": "GiB",
        "kv_fig_weights": "{name} 权重",
        "kv_fig_cross": "在 {t:,} 个词元时缓存 = 权重",
        "kv_fig_here": "{t:,} 个词元：{size}",
        "kv_fig_step": "第 {i} / {n} 步",
        "kv_fig_in_cache": "缓存中有 {t} 个词元",
        "kv_fig_bytes_ok": "{measured:,} B = {formula} = {expected:,} B ✓",
        "kv_fig_bytes_bad": "实测 {measured:,} B ≠ {formula} = {expected:,} B ✗",
        "kv_fig_identical": "用与不用缓存：到目前为止生成的词元完全相同 ✓",
        "kv_fig_diverged": "用与不用缓存：生成的词元出现了差异 ✗",
        "kv_fig_trained": "已训练的权重 `{name}`（验证损失 {loss:.3f} nats/字符）",
        "kv_fig_random": "`{name}` 没有训练好的权重：使用随机权重。生成的文字是噪声，但缓存、字节数和计时都是真实的",
        "kv_fig_s_shape": "{layers} 层 · {heads} 个查询头 · n_kv = {kv} 个 KV 头（`num_key_value_heads`）· hd = {hd}（`head_dim`）",
        "kv_fig_s_shape_mla": "{layers} 层 · {heads} 个查询头 · 潜在维度 r_kv = {r}（`kv_lora_rank`）· RoPE 键 rope = {rope}（`qk_rope_head_dim`，所有头共享）",
        "kv_fig_s_cache": "KV 缓存",
        "kv_fig_s_per_token": "每个词元",
        "kv_fig_s_per_token_window": "每个词元（直到各窗口填满）",
        "kv_fig_s_past_window": "T 超过 {w:,} 后，只剩没有窗口的 {full} 层还在增长：{formula} = 每个词元 {size}",
        "kv_fig_s_past_window_none": "T 超过 {w:,} 后不再增长：每一层的窗口都已填满",
        "kv_fig_s_weights": "权重（{params:,} 个参数 × {b:g} B）",
        "kv_fig_s_cross": "缓存超过权重的临界点为",
        "kv_fig_same_cache": "{name}（缓存与 {other} 相同）",
        "kv_fig_s_tokens": "个词元",
        "kv_fig_s_as_mha": "若为 MHA（n_kv = n_heads = {heads}）",
        "kv_fig_s_decompressed": "若缓存每个头解压后的 K（{k}）和 V（{v}）",
        "kv_fig_s_no2": "没有因子 2：K 和 V 都由同一个潜在向量重建",
        "kv_fig_s_window": "{layers} 层中有 {local} 层只保留最近 W = {w:,} 个词元，即滚动缓冲区",
        "kv_fig_s_no_cross": "每一层的窗口在 T = {w:,} 时填满：缓存从此不再增长，始终小于权重",
        "kv_fig_s_times": "是该缓存的 {x:.3g} 倍",
        # messages (models.kv_cache, models.generation, models.tiny_gpt)
        "kv_err_capacity": "缓存容量 = {capacity} 必须在 1 到上下文长度 {context} 之间",
        "kv_err_cache_full": "缓存共 {capacity} 个位置：已填 {filled} 个，放不下再多 {more} 个",
        "kv_err_queries": "{queries} 个新查询需要满足 1 ≤ 查询数 ≤ 键数 = {keys}",
        "kv_err_empty_prompt": "提示词是空的：请至少输入一个字符",
        "kv_err_too_long": "提示词（{prompt} 个词元）加上 {new} 个新词元共 {total} 个：模型的上下文只有 {context} 个词元",
        "kv_err_token_ids": "词元 id 必须在 0 到 {high} 之间",
        "kv_err_vocab": "词表必须是由互不相同的字符组成的非空字符串",
        "kv_err_unknown_chars": "模型只认识 {known} 个字符；以下字符不在其中（字符，位置）：{listed}",
        "term_kv_model": "模型",
        "kv_err_prompt_not_text": "提示词必须是文本",
        "term_attention": "注意力类型",
        "term_kv_latent_dim": "潜在维度 kv_latent_dim",
        "term_max_new_tokens": "新词元数 max_new_tokens",
        "term_kv_context": "上下文长度",
        "term_kv_batch": "批大小",
        "term_kv_dtype": "数据类型",
    },
}
