"""The KV Cache tab: watch the cache grow while a tiny GPT generates, then scale it up on paper."""
from __future__ import annotations

import time

import gradio as gr

from components.common import HEAVY, as_int, as_number, device_line, explain, low_priority, user_errors
from components.i18n import lang_of, t
from models.calculator import PRESETS
from models.limits import (CALC_MAX_CONTEXT, KV_CONTEXT, KV_MAX_LATENT, KV_MAX_NEW_TOKENS, KV_MAX_TEMPERATURE,
                           KV_N_HEADS, KV_SCALE_MAX_BATCH, KV_TRAINED_GQA, KV_TRAINED_LATENT, KV_VARIANTS, SEED_MAX)

DEFAULT_PROMPT = "The kettle began to sing"
SCALE_PRESETS = ("Llama-2-7B", "Llama-3-8B", "Mistral-7B v0.1", "DeepSeek-V2")   # the four the tab compares
SCALE_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "int4")
KV_OF_VARIANT = {"mha": KV_N_HEADS, "mqa": 1}          # GQA reads the slider
PLOT_INTERVAL_S = 1.0                                  # figures redraw at most this often while streaming

STRINGS = {
    "en": {
        "tab_kv": "KV cache",
        "kv_intro": "A tiny GPT (character-level, 4 layers, d = 128, 4 heads, trained in this repository on "
                    "`data/corpus/en.txt`) writes while you watch its KV cache fill in. It decodes twice in "
                    "lockstep, with and without the cache, so both timings are measured and the outputs can "
                    f"be compared. Prompt + new tokens ≤ {KV_CONTEXT} characters.",
        "kv_prompt": "Prompt",
        "kv_attention": "Attention",
        "kv_mha": "MHA: every head its own K, V",
        "kv_gqa": "GQA: heads share K, V in groups",
        "kv_mqa": "MQA: one K, V for all heads",
        "kv_mla": "MLA: a shared latent (DeepSeek)",
        "kv_n_kv": "KV heads n_kv (GQA groups; must divide the 4 query heads)",
        "kv_latent": "MLA latent width (kv_latent_dim)",
        "kv_latent_info": f"trained: {KV_TRAINED_LATENT}; other widths run with random weights",
        "kv_new_tokens": "New tokens",
        "kv_temperature": "Temperature (0 = greedy; both decodes sample with the same seed)",
        "kv_seed": "Seed (sampling)",
        "kv_generate": "Generate",
        "kv_stop": "Stop",
        "kv_text": "Text so far (prompt, then generated)",
        "kv_cache_plot": "The cache: layers × cached vectors × positions",
        "kv_growth_plot": "Bytes and time per step",
        "kv_groups_plot": "Query heads and the K/V they read",
        "kv_scale_heading": "### Scale it up on paper\nThe same formula for real models (the Calculator's presets "
                            "and backend): how big the cache gets, and at which context it outgrows the weights.",
        "kv_preset": "Model",
        "kv_context": "Context length T (tokens)",
        "kv_batch": "Batch (sequences)",
        "kv_dtype": "Cache and weights dtype",
        "kv_scale_plot": "KV cache vs. context",
        "kv_explain": r"""
**What is cached, and why not the queries.** Attention at position $t$ needs the query of $t$ and the keys and values of $0 \dots t$. In a causal model an old token never sees a new one, so the keys and values of earlier tokens never change: compute them once, keep them, and each step computes only the newest token's $q, k, v$. The newest query is used once and thrown away; no later step needs it, so queries are not cached.

**Prefill, then decode.** The prompt runs in one pass (*prefill*: many tokens at once, compute-bound, the orange diamond) and fills the cache; then each *decode* step feeds one token, attends to everything cached and appends its own $k, v$. Without the cache every step recomputes the whole prefix, so its time climbs with the length; with it, a step does one token's work (plus reading the cache), so the line stays flat.

**The mask of a cached step is aligned bottom-right.** With $S$ keys and $T$ new queries (the last $T$ positions), query $i$ may see keys $0 \dots S-T+i$: the causal triangle sits in the bottom-right corner of the $T\times S$ score matrix. `scaled_dot_product_attention(is_causal=True)` aligns it top-left when $T \ne S$ (query 0 would see only key 0), so a cached step uses an explicit bottom-right mask (`torch.nn.attention.bias.causal_lower_right` builds the same). For a single new token there is nothing to mask.

**Its size.** Per token and layer the cache holds a key and a value per *KV head*:
$$\text{bytes} = 2 \cdot L \cdot n_{kv} \cdot d_{head} \cdot T \cdot \text{batch} \cdot \text{bytes per number}$$
MHA has $n_{kv} = n_{heads}$; GQA lets groups of query heads share one K/V head ($n_{heads}/n_{kv}$ per group); MQA keeps one. MLA (DeepSeek-V2) caches, per layer, one latent $c_t$ of width $d_c$ from which every head's $K$ and $V$ are rebuilt ($k = W_{UK} c$, $v = W_{UV} c$), plus one small RoPE key shared by all heads: $L \cdot (d_c + d_R) \cdot T$ numbers, no factor 2. At decode time $W_{UK}$ folds into the query and $W_{UV}$ into the output, so attention runs directly on the cached latents (this model does exactly that).

**Why a decoupled RoPE key.** RoPE rotates keys by their position; a rotation between $W_{UK}$ and $c$ would stop $W_{UK}$ from folding into the query. So positions ride on a separate small key $k^R$ (and a matching part of each query); the latent stays position-free.

**Preallocated.** This cache reserves its buffers for prompt + new tokens once and writes each step's slice in place (grey = reserved, not yet written). Appending with `torch.cat` would copy the whole cache every step.

What to notice: switch MHA → GQA → MQA → MLA and the cache picture shrinks (4 : 2 : 1, then 192/1024 of MHA), the bytes stay on the formula's line, and the text does not change between the cached and uncached decodes (greedy at temperature 0; when sampling, both draw the same seeded random numbers). At scale, the cache outgrows the weights: Llama-2-7B (MHA) at about 26K tokens, Llama-3-8B (GQA-8) at about 123K.
""",
    },
    "zh-CN": {
        "tab_kv": "KV 缓存",
        "kv_intro": "一个小型 GPT（字符级，4 层，d = 128，4 个头，在本仓库中用 `data/corpus/en.txt` 训练）"
                    "一边写作，一边让你看着它的 KV 缓存被填满。它同时进行两次解码（使用缓存和不用缓存，逐步交替），"
                    f"因此两种耗时都是实测的，两者的输出也可以对比。提示 + 新词元 ≤ {KV_CONTEXT} 个字符。",
        "kv_prompt": "提示",
        "kv_attention": "注意力",
        "kv_mha": "MHA：每个头有自己的 K、V",
        "kv_gqa": "GQA：头按组共享 K、V",
        "kv_mqa": "MQA：所有头共用一组 K、V",
        "kv_mla": "MLA：共享的潜在向量（DeepSeek）",
        "kv_n_kv": "KV 头数 n_kv（GQA 的组数；必须整除 4 个查询头）",
        "kv_latent": "MLA 潜在维度（kv_latent_dim）",
        "kv_latent_info": f"已训练：{KV_TRAINED_LATENT}；其他维度使用随机权重",
        "kv_new_tokens": "新词元数",
        "kv_temperature": "温度（0 = 贪心；两次解码用同一随机种子采样）",
        "kv_seed": "随机种子（采样）",
        "kv_generate": "生成",
        "kv_stop": "停止",
        "kv_text": "目前的文本（提示，然后是生成的部分）",
        "kv_cache_plot": "缓存：层 × 缓存向量 × 位置",
        "kv_growth_plot": "字节数与每步耗时",
        "kv_groups_plot": "查询头及其读取的 K/V",
        "kv_scale_heading": "### 按比例放大（纸上计算）\n对真实模型使用同一公式（计算器的预设和后端）："
                            "缓存有多大，以及在多长的上下文时超过权重。",
        "kv_preset": "模型",
        "kv_context": "上下文长度 T（词元）",
        "kv_batch": "批大小（序列数）",
        "kv_dtype": "缓存与权重的数据类型",
        "kv_scale_plot": "KV 缓存与上下文长度",
        "kv_explain": r"""
**缓存什么，为什么不缓存查询。** 位置 $t$ 的注意力需要 $t$ 的查询，以及 $0 \dots t$ 的键和值。因果模型中旧词元永远看不到新词元，所以之前词元的键和值不会再变：算一次、存起来，之后每一步只需计算最新词元的 $q, k, v$。最新的查询只用一次就丢弃，之后的步骤不再需要它，所以查询不缓存。

**先预填充，再解码。** 提示一次性处理完（*预填充*：很多词元同时计算，受算力限制，图中橙色菱形），并填满缓存；之后每个*解码*步骤只输入一个词元，关注所有已缓存的内容，再追加自己的 $k, v$。不用缓存时，每一步都要重新计算整个前缀，耗时随长度增长；使用缓存时，每步只做一个词元的计算（外加读取缓存），曲线保持平坦。

**带缓存的步骤，掩码右下对齐。** 有 $S$ 个键和 $T$ 个新查询（最后 $T$ 个位置）时，查询 $i$ 可以看到键 $0 \dots S-T+i$：因果三角位于 $T\times S$ 分数矩阵的右下角。`scaled_dot_product_attention(is_causal=True)` 在 $T \ne S$ 时按左上角对齐（查询 0 只能看到键 0），所以带缓存的步骤使用显式的右下对齐掩码（`torch.nn.attention.bias.causal_lower_right` 构造的也是它）。只有一个新词元时无需掩码。

**缓存的大小。** 每个词元、每层为每个 *KV 头* 缓存一个键和一个值：
$$\text{字节数} = 2 \cdot L \cdot n_{kv} \cdot d_{head} \cdot T \cdot \text{批大小} \cdot \text{每个数的字节数}$$
MHA 的 $n_{kv} = n_{heads}$；GQA 让一组查询头共享一个 K/V 头（每组 $n_{heads}/n_{kv}$ 个）；MQA 只保留一个。MLA（DeepSeek-V2）每层只缓存一个宽度为 $d_c$ 的潜在向量 $c_t$，每个头的 $K$、$V$ 都由它重建（$k = W_{UK} c$，$v = W_{UV} c$），外加一个所有头共享的小 RoPE 键：$L \cdot (d_c + d_R) \cdot T$ 个数，没有因子 2。解码时 $W_{UK}$ 可并入查询、$W_{UV}$ 可并入输出，注意力直接在缓存的潜在向量上计算（本模型正是这样做的）。

**为什么要解耦的 RoPE 键。** RoPE 按位置旋转键；如果在 $W_{UK}$ 和 $c$ 之间插入旋转，$W_{UK}$ 就无法并入查询。因此位置信息由一个单独的小键 $k^R$（以及每个查询中对应的部分）承载，潜在向量保持与位置无关。

**预分配。** 本缓存一次性为提示 + 新词元预留缓冲区，每步原地写入自己的切片（灰色 = 已预留、尚未写入）。用 `torch.cat` 追加会在每一步复制整个缓存。

值得注意：依次切换 MHA → GQA → MQA → MLA，缓存图缩小（4 : 2 : 1，然后是 MHA 的 192/1024），字节数始终落在公式的直线上，使用与不用缓存生成的文本完全相同（温度为 0 时是贪心解码；采样时两次解码使用同一组带种子的随机数）。放大到真实模型时，缓存会超过权重：Llama-2-7B（MHA）约在 2.6 万词元，Llama-3-8B（GQA-8）约在 12.3 万词元。
""",
    },
}


def _config(attention: str, n_kv_heads, kv_latent_dim):
    """The tiny GPT's config for the controls (n_kv read for GQA only, the latent for MLA only)."""
    from models.tiny_gpt import tiny_config
    if attention not in KV_VARIANTS:
        raise ValueError(f"attention = {attention!r} must be one of {', '.join(KV_VARIANTS)}")
    n_kv = as_int("n_kv_heads", n_kv_heads, low=1, high=KV_N_HEADS) if attention == "gqa" else None
    latent = (as_int("kv_latent_dim", kv_latent_dim, low=1, high=KV_MAX_LATENT) if attention == "mla" else None)
    return tiny_config(attention, 1, n_kv_heads=n_kv, kv_latent_dim=latent)


def _capacity(prompt: str, max_new_tokens) -> tuple[int, int]:
    if not isinstance(prompt, str) or not prompt:
        raise ValueError("the prompt is empty: type at least one character")
    n_new = as_int("new tokens", max_new_tokens, low=1, high=KV_MAX_NEW_TOKENS)
    if len(prompt) + n_new > KV_CONTEXT:
        raise ValueError(f"the prompt ({len(prompt)} characters) plus {n_new} new tokens is {len(prompt) + n_new}: "
                         f"the model's context is {KV_CONTEXT} tokens")
    return len(prompt), n_new


def _others(config, bytes_per_elem: int) -> dict[str, int]:
    """Bytes per token of the other variants (lines for scale), without the one shown."""
    from models.tiny_gpt import variant_sizes
    mine = config.cache_elements_per_token()
    latent = config.kv_latent_dim or KV_TRAINED_LATENT
    return {label: n * bytes_per_elem for label, n in variant_sizes(latent).items() if n != mine}


def _formula(config, bytes_per_elem: int, tokens: str = "T") -> str:
    from viz.kv import tiny_formula
    return tiny_formula(config.attention == "mla", config.n_layers, config.n_kv_heads, config.head_dim,
                        config.kv_latent_dim, config.rope_width, bytes_per_elem, tokens)


@user_errors
def kv_plan(prompt: str, attention: str, n_kv_heads: float, kv_latent_dim: float, max_new_tokens: float,
            request: gr.Request = None):
    """The ``/kv_plan`` endpoint: the grouping diagram, what a layer caches, the empty preallocated
    cache and the formula's line, for the chosen variant, before anything is generated."""
    from models.device import get_device, timed

    lang = lang_of(request)
    with timed(get_device()) as watch:
        outputs = _plan(prompt, attention, n_kv_heads, kv_latent_dim, max_new_tokens, lang)
    return (*outputs, str(watch.timing))


def _plan(prompt, attention, n_kv_heads, kv_latent_dim, max_new_tokens, lang):
    from models.kv_cache import cache_rows
    from models.tiny_gpt import BYTES_PER_ELEM, has_checkpoint
    from viz.kv import cache_figure, groups_figure, growth_figure, per_layer_markdown, text_html

    config = _config(attention, n_kv_heads, kv_latent_dim)
    prompt_len, n_new = _capacity(prompt, max_new_tokens)
    capacity, bpe = prompt_len + n_new - 1, BYTES_PER_ELEM
    rows = cache_rows(config)
    mha_per_layer = 2 * config.n_heads * config.head_dim
    summary = per_layer_markdown(rows, mha_per_layer, config.variant, has_checkpoint(config), lang)
    groups = groups_figure(config.n_heads, config.n_kv_heads, config.attention == "mla",
                           config.kv_latent_dim or 0, config.rope_width, lang)
    cache = cache_figure(rows, config.n_layers, capacity, prompt_len, None, config.n_layers * mha_per_layer, 0,
                         lang)
    growth = growth_figure(capacity, _formula(config, bpe), config.cache_elements_per_token() * bpe,
                           _others(config, bpe), [], [], [], [], [], lang)
    return groups, summary, cache, growth, text_html(prompt, "")


@user_errors
def kv_generate(prompt: str, attention: str, n_kv_heads: float, kv_latent_dim: float, max_new_tokens: float,
                temperature: float, seed: float, request: gr.Request = None):
    """The ``/kv_generate`` endpoint (streams): text, status, cache picture, bytes and time, device line."""
    from models.tiny_gpt import stream_tiny_gpt
    from viz.kv import cache_figure, growth_figure, status_markdown, text_html

    lang = lang_of(request)
    config = _config(attention, n_kv_heads, kv_latent_dim)
    _, n_new = _capacity(prompt, max_new_tokens)
    temp = as_number("temperature", temperature)
    if not 0 <= temp <= KV_MAX_TEMPERATURE:
        raise ValueError(f"temperature = {temp:g} must be from 0 (greedy) to {KV_MAX_TEMPERATURE:g}")
    seed = as_int("seed", seed, low=0, high=SEED_MAX)
    # In a worker of lower OS priority: under load the instant tabs are served first.
    frames = low_priority(stream_tiny_gpt, attention, prompt, n_new, n_kv_heads=config.n_kv_heads,
                          kv_latent_dim=config.kv_latent_dim, temperature=temp, seed=seed)
    context, cache_bytes, ms_cached, ms_uncached = [], [], [], []    # per step: T, bytes, both timings
    last_plots = -PLOT_INTERVAL_S
    for frame in frames:
        info, pair = frame.info, frame.pair
        context.append(pair.cached.context)                # = tokens in the cache after the step
        cache_bytes.append(pair.cached.cache_bytes)
        ms_cached.append(pair.cached.ms)
        ms_uncached.append(pair.uncached.ms)
        if pair.picture is None:                 # a picture comes every 0.2 s of decoding: so does an update
            continue
        cfg, bpe, T = info.config, info.bytes_per_elem, pair.cached.context
        device = (f"{info.device} · prefill {ms_cached[0]:.1f} ms · decode with the cache "
                  f"{_mean(ms_cached[1:] or ms_cached):.2f} ms/token, without {_mean(ms_uncached):.2f} "
                  f"ms/token · {pair.step + 1} tokens")
        mha_total = 2 * cfg.n_layers * cfg.n_heads * cfg.head_dim
        status = status_markdown(pair.step + 1, n_new, T, pair.cached.cache_bytes, _formula(cfg, bpe, str(T)),
                                 cfg.cache_elements_per_token() * T * bpe, frame.identical, info.trained,
                                 info.name, info.val_loss, lang)
        text = text_html(prompt, frame.text)
        # The text streams with every update; the two figures (~100 ms each to redraw in a browser)
        # at most every PLOT_INTERVAL_S and on the last step, so a slow machine keeps up.
        if time.perf_counter() - last_plots < PLOT_INTERVAL_S and pair.step < n_new - 1:
            yield text, status, gr.skip(), gr.skip(), device
            continue
        cache = cache_figure(info.rows, cfg.n_layers, info.capacity, info.prompt_len, pair.picture, mha_total,
                             pair.cached.cache_bytes, lang)
        growth = growth_figure(info.capacity, _formula(cfg, bpe), cfg.cache_elements_per_token() * bpe,
                               _others(cfg, bpe), context, cache_bytes, context, ms_cached, ms_uncached, lang)
        last_plots = time.perf_counter()
        yield text, status, cache, growth, device


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


@user_errors
def kv_scale(preset: str, context: float, batch: float, dtype: str, request: gr.Request = None):
    """The ``/kv_scale`` endpoint: a real model's cache on paper, the formula with its numbers."""
    from models.kv_cache import scale_curves, scale_up
    from viz.kv import scale_figure, scale_markdown

    lang = lang_of(request)
    s = scale_up(preset, as_int("context length", context, low=1, high=CALC_MAX_CONTEXT),
                 as_int("batch", batch, low=1, high=KV_SCALE_MAX_BATCH), dtype)
    names = list(dict.fromkeys([*SCALE_PRESETS, preset]))
    contexts, curves = scale_curves(names, s.batch, dtype)
    fig = scale_figure(contexts, curves, preset, s.weights_bytes, s.crossover_tokens, s.seq_len, s.cache_bytes,
                       s.batch, dtype, lang)
    return fig, scale_markdown(s, lang)


def _first_draw(prompt, attention, n_kv_heads, kv_latent_dim, max_new_tokens, preset, context, batch, dtype,
                request: gr.Request = None):
    return (*kv_plan(prompt, attention, n_kv_heads, kv_latent_dim, max_new_tokens, request=request),
            *kv_scale(preset, context, batch, dtype, request=request))


def _variant_to_slider(attention: str, n_kv):
    """Choosing MHA or MQA sets the KV-head slider; GQA moves it off the ends."""
    if attention in KV_OF_VARIANT:
        return KV_OF_VARIANT[attention]
    if attention == "gqa" and n_kv in (1, KV_N_HEADS):
        return KV_TRAINED_GQA
    return gr.skip()


def _slider_to_variant(n_kv, attention: str):
    """Moving the KV-head slider names the variant it makes (4: MHA, 1: MQA, else GQA)."""
    return {KV_N_HEADS: "mha", 1: "mqa"}.get(int(n_kv), "gqa")


def build() -> dict:
    """Lay out the tab, wire it, return the first-draw event."""
    gr.Markdown(t("kv_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            prompt = gr.Textbox(DEFAULT_PROMPT, lines=3, max_length=KV_CONTEXT - 1, label=t("kv_prompt"),
                                elem_id="kv_prompt")
            attention = gr.Radio([(t(f"kv_{v}"), v) for v in KV_VARIANTS], value="mha", label=t("kv_attention"),
                                 elem_id="kv_attention")
            n_kv = gr.Slider(1, KV_N_HEADS, value=KV_N_HEADS, step=1, label=t("kv_n_kv"), elem_id="kv_n_kv")
            latent = gr.Slider(1, KV_MAX_LATENT, value=KV_TRAINED_LATENT, step=1, label=t("kv_latent"),
                               info=t("kv_latent_info"), elem_id="kv_latent")
            new_tokens = gr.Slider(1, KV_MAX_NEW_TOKENS, value=200, step=1, label=t("kv_new_tokens"),
                                   elem_id="kv_new_tokens")
            with gr.Row():
                temperature = gr.Slider(0, KV_MAX_TEMPERATURE, value=0.5, step=0.05, label=t("kv_temperature"),
                                        elem_id="kv_temperature")
                seed = gr.Number(0, precision=0, minimum=0, maximum=SEED_MAX, label=t("kv_seed"), elem_id="kv_seed")
            with gr.Row():
                generate = gr.Button(t("kv_generate"), variant="primary", elem_id="kv_generate")
                stop = gr.Button(t("kv_stop"), variant="stop", elem_id="kv_stop")
            groups_plot = gr.Plot(label=t("kv_groups_plot"), elem_id="kv_groups_plot")
            variant_md = gr.Markdown(elem_id="kv_variant", latex_delimiters=[])
        with gr.Column(scale=3):
            text = gr.HTML(elem_id="kv_text", label=t("kv_text"))
            status = gr.Markdown(elem_id="kv_status", latex_delimiters=[])
            cache_plot = gr.Plot(label=t("kv_cache_plot"), elem_id="kv_cache_plot")
            growth_plot = gr.Plot(label=t("kv_growth_plot"), elem_id="kv_growth_plot")
            device = device_line()
    gr.Markdown(t("kv_scale_heading"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            preset = gr.Dropdown(list(PRESETS), value="Llama-3-8B", label=t("kv_preset"), elem_id="kv_preset")
            context = gr.Number(8192, precision=0, minimum=1, maximum=CALC_MAX_CONTEXT, label=t("kv_context"),
                                elem_id="kv_context")
            batch = gr.Number(1, precision=0, minimum=1, maximum=KV_SCALE_MAX_BATCH, label=t("kv_batch"),
                              elem_id="kv_batch")
            dtype = gr.Dropdown(list(SCALE_DTYPES), value="bf16", label=t("kv_dtype"), elem_id="kv_dtype")
        with gr.Column(scale=3):
            scale_plot = gr.Plot(label=t("kv_scale_plot"), elem_id="kv_scale_plot")
            scale_md = gr.Markdown(elem_id="kv_scale_md", latex_delimiters=[])
    explain("kv_explain")

    plan_inputs = [prompt, attention, n_kv, latent, new_tokens]
    plan_outputs = [groups_plot, variant_md, cache_plot, growth_plot, text, device]
    plan = dict(fn=kv_plan, inputs=plan_inputs, outputs=plan_outputs, show_progress="hidden")
    gr.on([prompt.blur, prompt.submit, latent.input, new_tokens.input], api_name="kv_plan", trigger_mode="always_last",
          **plan)
    attention.input(_variant_to_slider, [attention, n_kv], n_kv, api_visibility="private",
                    show_progress="hidden").then(api_visibility="private", trigger_mode="always_last", **plan)
    # Both links "always_last": with the default ("once") a drag's last plan was dropped while the
    # previous one ran, and the figures stayed on an earlier value.
    n_kv.input(_slider_to_variant, [n_kv, attention], attention, api_visibility="private",
               show_progress="hidden", trigger_mode="always_last").then(api_visibility="private",
                                                                        trigger_mode="always_last", **plan)

    run = generate.click(kv_generate, [prompt, attention, n_kv, latent, new_tokens, temperature, seed],
                         [text, status, cache_plot, growth_plot, device], api_name="kv_generate",
                         show_progress="hidden", **HEAVY)
    stop.click(None, None, None, cancels=[run])

    scale_inputs = [preset, context, batch, dtype]
    gr.on([preset.input, context.submit, context.blur, batch.submit, batch.blur, dtype.input], kv_scale,
          scale_inputs, [scale_plot, scale_md], api_name="kv_scale", show_progress="hidden")
    return dict(fn=_first_draw, inputs=plan_inputs + scale_inputs, outputs=plan_outputs + [scale_plot, scale_md],
                show_progress="hidden")
