"""The Attention Masks tab: compose padding, causal, window, prefix-LM and document masks."""
from __future__ import annotations

import gradio as gr

from components.common import as_int, device_line, explain, user_errors
from components.i18n import lang_of, t
from models.limits import MASKS_MAX_HEADS as MAX_HEADS
from models.limits import MASKS_MAX_SEQUENCES as MAX_SEQUENCES
from models.limits import MASKS_MAX_TOKENS as MAX_TOKENS
from models.limits import SEED_MAX

DEFAULT_TEXT = "the cat sat on the mat\n天气 晴朗 适合 露营\nhi there"

# preset -> (padding, causal, use_window, use_prefix, packed)
PRESETS = {
    "encoder": (True, False, False, False, False),
    "decoder": (True, True, False, False, False),
    "prefix": (True, False, False, True, False),
}

STRINGS = {
    "en": {
        "tab_masks": "Attention masks",
        "masks_intro": "Compose the masks a transformer uses and see the softmax they produce. "
                       "One sequence per line, tokens split on spaces "
                       f"(at most {MAX_SEQUENCES} lines × {MAX_TOKENS} tokens).",
        "masks_preset": "Preset",
        "masks_preset_encoder": "Encoder (BERT): all see all but padding",
        "masks_preset_decoder": "Decoder (GPT): causal",
        "masks_preset_prefix": "Prefix-LM (GLM/T5): prefix sees itself, rest causal",
        "masks_preset_custom": "Custom",
        "masks_text": "Sentences (one per line)",
        "masks_padding": "Padding mask",
        "masks_padding_side": "Pad on the",
        "masks_side_right": "right",
        "masks_side_left": "left",
        "masks_causal": "Causal (look-ahead) mask",
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
- **Why AND.** Each rule says when a key is forbidden: it is padding, it is in the future, it is outside the window, it is in another document. A key may be attended only if *no* rule forbids it, so the boolean masks are combined with AND (equivalently, the additive masks are summed: any $-\infty$ wins). Look at "How the rules combine".
- **Padding masks keys.** A padding *query* still attends to real keys; its output is simply ignored by the loss. Turn the padding mask off and the real tokens attend to `[PAD]`: their outputs change with the batch they happen to be in.
- **The trap.** If every key of a query is masked (pad on the *left* with a causal mask: the first pad query sees only pads), the row is $\mathrm{softmax}(-\infty,\dots,-\infty)=0/0=$ **NaN**, and one NaN spreads to every later layer and to the loss. The backend detects rows with no allowed key and returns zero weights and zero output instead. PyTorch's SDPA and FlashAttention make the same choice in recent versions.
- Masked cells of the softmax are *exactly* zero: $e^{-\infty}=0$.
""",
    },
    "zh-CN": {
        "tab_masks": "注意力掩码",
        "masks_intro": "组合 Transformer 使用的各种掩码，观察它们产生的 softmax。"
                       "每行一个序列，按空格切分词元"
                       f"（最多 {MAX_SEQUENCES} 行 × {MAX_TOKENS} 个词元）。",
        "masks_preset": "预设",
        "masks_preset_encoder": "编码器（BERT）：除填充外互相可见",
        "masks_preset_decoder": "解码器（GPT）：因果",
        "masks_preset_prefix": "前缀 LM（GLM/T5）：前缀内互相可见，其余因果",
        "masks_preset_custom": "自定义",
        "masks_text": "句子（每行一个）",
        "masks_padding": "填充掩码",
        "masks_padding_side": "填充位置",
        "masks_side_right": "右侧",
        "masks_side_left": "左侧",
        "masks_causal": "因果（前瞻）掩码",
        "masks_use_window": "滑动窗口",
        "masks_window": "窗口 W（查询 i 看到键 i−W+1 … i）",
        "masks_use_prefix": "前缀 LM",
        "masks_prefix": "前缀长度 P",
        "masks_packed": "打包文档（在一行内用 | 分隔）",
        "masks_convention": "布尔掩码的显示约定",
        "masks_conv_allow": "PyTorch：True = 可以关注",
        "masks_conv_masked": "教程：1 = 被遮蔽（triu(ones, 1)）",
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

- **两种约定，同一个掩码。** PyTorch 的 `scaled_dot_product_attention` 使用布尔掩码，`True` 表示*可以关注*。很多教程构造"前瞻掩码" `triu(ones, 1)`，`1` 表示*被遮蔽*。两者互为补集：`causal = ~triu(ones, 1)`。切换开关即可在两种约定之间转换左侧网格。
- **为什么用 AND。** 每条规则都说明某个键何时被禁止：它是填充、它在未来、它在窗口之外、它属于另一篇文档。只有*没有任何*规则禁止时，键才能被关注，所以布尔掩码用 AND 组合（等价地，加性掩码相加：任何一个 $-\infty$ 都会生效）。请看"各条规则如何组合"。
- **填充掩码遮的是键。** 填充位置的*查询*仍会关注真实的键，它的输出会被损失函数忽略。关闭填充掩码，真实词元就会关注 `[PAD]`：它们的输出会随所在批次而改变。
- **陷阱。** 如果某个查询的所有键都被遮蔽（在*左侧*填充并使用因果掩码：第一个填充查询只能看到填充），这一行就是 $\mathrm{softmax}(-\infty,\dots,-\infty)=0/0=$ **NaN**，一个 NaN 会传播到后面所有层和损失。后端会检测没有任何可关注键的行，并返回全零的权重和输出。较新版本的 PyTorch SDPA 和 FlashAttention 也是这样处理的。
- softmax 中被遮蔽的格子*恰好*为零：$e^{-\infty}=0$。
""",
    },
}


@user_errors
def compute_masks(text: str, padding: bool, padding_side: str, causal: bool, use_window: bool,
                  window: float, use_prefix: bool, prefix: float, packed: bool, convention: str,
                  heads: float, seed: float, seq: float, head: float, request: gr.Request = None):
    """The ``/masks`` endpoint: three figures and the device line."""
    from models.masks import MaskSpec, explore_masks
    from viz.masks import composition_figure, mask_panels, nan_trap_figure

    lang = lang_of(request)
    n_heads = as_int("heads", heads, low=1, high=MAX_HEADS)
    spec = MaskSpec(
        padding=bool(padding), causal=bool(causal), packed=bool(packed), padding_side=padding_side,
        window=as_int("window", window, low=1, high=MAX_TOKENS) if use_window else None,
        prefix_len=as_int("prefix", prefix, low=1, high=MAX_TOKENS) if use_prefix else None)
    ex = explore_masks(text, spec, n_heads=n_heads, seed=as_int("seed", seed, low=0, high=SEED_MAX))
    b = as_int("sequence", seq, low=1, high=len(ex.labels)) - 1
    h = as_int("head", head, low=1, high=n_heads) - 1
    labels = ex.labels[b]
    mask = ex.mask[b].tolist()
    panels = mask_panels(labels, mask, ex.weights[b, h].tolist(), convention, lang)
    parts = {name: part[b].tolist() for name, part in ex.parts.items()}
    composition = composition_figure(labels, parts, mask, convention, lang)
    trap = nan_trap_figure(labels, ex.naive_weights[b, h].tolist(), ex.weights[b, h].tolist(),
                           ex.empty_rows[b].tolist(), lang)
    return panels, composition, trap, str(ex.timing)


def _preset(name: str):
    """Set the rule checkboxes of a preset; "custom" leaves them as they are."""
    if name not in PRESETS:
        return (gr.skip(),) * 5
    return PRESETS[name]


def build() -> dict:
    """Lay out the tab inside the current ``gr.Tab``, wire its events, return the first-draw event."""
    gr.Markdown(t("masks_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            preset = gr.Radio([(t(f"masks_preset_{p}"), p) for p in (*PRESETS, "custom")],
                              value="decoder", label=t("masks_preset"), elem_id="masks_preset")
            text = gr.Textbox(DEFAULT_TEXT, lines=4, max_lines=MAX_SEQUENCES, label=t("masks_text"),
                              elem_id="masks_text", max_length=MAX_SEQUENCES * MAX_TOKENS * 40)
            with gr.Row():
                padding = gr.Checkbox(True, label=t("masks_padding"), elem_id="masks_padding")
                side = gr.Radio([(t("masks_side_right"), "right"), (t("masks_side_left"), "left")],
                                value="right", label=t("masks_padding_side"), elem_id="masks_side")
            causal = gr.Checkbox(True, label=t("masks_causal"), elem_id="masks_causal")
            use_window = gr.Checkbox(False, label=t("masks_use_window"), elem_id="masks_use_window")
            window = gr.Slider(1, MAX_TOKENS, value=3, step=1, label=t("masks_window"), elem_id="masks_window")
            use_prefix = gr.Checkbox(False, label=t("masks_use_prefix"), elem_id="masks_use_prefix")
            prefix = gr.Slider(1, MAX_TOKENS, value=2, step=1, label=t("masks_prefix"), elem_id="masks_prefix")
            packed = gr.Checkbox(False, label=t("masks_packed"), elem_id="masks_packed")
            convention = gr.Radio([(t("masks_conv_allow"), "allow"), (t("masks_conv_masked"), "masked")],
                                  value="allow", label=t("masks_convention"), elem_id="masks_convention")
            with gr.Row():
                heads = gr.Slider(1, MAX_HEADS, value=2, step=1, label=t("masks_heads"), elem_id="masks_heads")
                seed = gr.Number(0, precision=0, minimum=0, maximum=SEED_MAX, label=t("masks_seed"),
                                 elem_id="masks_seed")
            with gr.Row():
                seq = gr.Slider(1, MAX_SEQUENCES, value=1, step=1, label=t("masks_seq"), elem_id="masks_seq")
                head = gr.Slider(1, MAX_HEADS, value=1, step=1, label=t("masks_head"), elem_id="masks_head")
        with gr.Column(scale=3):
            panels = gr.Plot(label=t("masks_panels"), elem_id="masks_panels")
            composition = gr.Plot(label=t("masks_composition"), elem_id="masks_composition")
            trap = gr.Plot(label=t("masks_nan"), elem_id="masks_nan")
            device = device_line()
            explain("masks_explain")

    inputs = [text, padding, side, causal, use_window, window, use_prefix, prefix, packed,
              convention, heads, seed, seq, head]
    outputs = [panels, composition, trap, device]
    rules = [padding, causal, use_window, use_prefix, packed]
    # One named endpoint; every control re-runs it (a few ms), so the picture follows the hand.
    main = dict(fn=compute_masks, inputs=inputs, outputs=outputs, show_progress="hidden")
    gr.on([text.submit, text.blur, side.input, window.input, prefix.input, convention.input,
           heads.input, seed.submit, seed.blur, seq.input, head.input],
          api_name="masks", trigger_mode="always_last", **main)   # sliders follow a drag; coalesced
    preset.input(_preset, preset, rules, api_visibility="private", show_progress="hidden").then(
        api_visibility="private", **main)
    for box in rules:
        box.input(lambda: "custom", None, preset, api_visibility="private", show_progress="hidden").then(
            api_visibility="private", **main)
    return main
