"""The Calculator tab: parameters, FLOPs and memory of real models, every number with its formula."""
from __future__ import annotations

import gradio as gr

from components.common import as_int, as_number, device_line, explain, user_errors
from components.i18n import lang_of, t
from models.calculator import DTYPE_BYTES, OPTIMIZER_RECIPES, PRESETS, RECOMPUTE, spec_fields
from models.limits import CALC_MAX_BATCH, CALC_MAX_CONTEXT, CALC_MAX_DIM, CALC_MAX_JSON_CHARS

FIELDS = spec_fields()
CHOICE_FIELDS = {"ffn_type": ("gelu", "swiglu"), "norm": ("layernorm", "rmsnorm")}
BOOL_FIELDS = ("tied_embeddings", "attn_bias", "mlp_bias")
GROUPS = {  # accordion -> fields, in the order a config.json lists them
    "calc_core": ["vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "ffn_dim", "ffn_type",
                  "tied_embeddings", "learned_positions", "norm", "attn_bias", "mlp_bias"],
    "calc_moe": ["n_experts", "top_k", "n_shared_experts", "expert_dim", "first_dense_layers"],
    "calc_mla": ["kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"],
}
GPU_CHOICES = (24.0, 40.0, 48.0, 80.0, 141.0)
DEFAULT_PRESET = "Llama-3-8B"
VERIFY_TOKENS = 128                 # the cache checked by "Verify" holds this many tokens
# The KV Cache tab's trained tiny GPTs, by preset name -> variant (their specs come from the checkpoints).
TINY_PRESETS = {"Tiny GPT · MHA (KV tab)": "mha", "Tiny GPT · GQA-2 (KV tab)": "gqa",
                "Tiny GPT · MQA (KV tab)": "mqa", "Tiny GPT · MLA r=32 (KV tab)": "mla"}

_FIELD_EN = {
    "vocab_size": "vocabulary size", "d_model": "d_model (hidden_size)", "n_layers": "layers",
    "n_heads": "attention heads", "n_kv_heads": "KV heads (num_key_value_heads)", "head_dim": "head_dim (0 = d_model / heads)",
    "ffn_dim": "FFN size (intermediate_size; 0 = 4·d)", "ffn_type": "FFN type", "tied_embeddings": "tied embeddings",
    "learned_positions": "learned position table (GPT-2; 0 = RoPE)", "norm": "norm", "attn_bias": "attention biases",
    "mlp_bias": "FFN biases", "n_experts": "routed experts (0 = dense)", "top_k": "experts per token (top-k)",
    "n_shared_experts": "shared experts", "expert_dim": "expert FFN size (moe_intermediate_size)",
    "first_dense_layers": "first dense layers (first_k_dense_replace)", "kv_lora_rank": "KV latent rank (0 = no MLA)",
    "q_lora_rank": "Q latent rank (0 = none)", "qk_rope_head_dim": "RoPE key dim", "qk_nope_head_dim": "non-RoPE q/k dim",
    "v_head_dim": "value head dim",
}
_FIELD_ZH = {
    "vocab_size": "词表大小", "d_model": "d_model（hidden_size）", "n_layers": "层数", "n_heads": "注意力头数",
    "n_kv_heads": "KV 头数（num_key_value_heads）", "head_dim": "head_dim（0 = d_model / 头数）",
    "ffn_dim": "FFN 宽度（intermediate_size；0 = 4·d）", "ffn_type": "FFN 类型", "tied_embeddings": "输入输出嵌入共享",
    "learned_positions": "可学习位置表（GPT-2；0 = RoPE）", "norm": "归一化", "attn_bias": "注意力偏置", "mlp_bias": "FFN 偏置",
    "n_experts": "路由专家数（0 = 稠密）", "top_k": "每个词元的专家数（top-k）", "n_shared_experts": "共享专家数",
    "expert_dim": "专家 FFN 宽度（moe_intermediate_size）", "first_dense_layers": "前几层为稠密（first_k_dense_replace）",
    "kv_lora_rank": "KV 潜在秩（0 = 不用 MLA）", "q_lora_rank": "Q 潜在秩（0 = 无）", "qk_rope_head_dim": "RoPE 键维度",
    "qk_nope_head_dim": "非 RoPE 的 q/k 维度", "v_head_dim": "值头维度",
}

STRINGS = {
    "en": {
        "tab_calculator": "Calculator",
        "calc_intro": "Parameters, FLOPs and memory of real models, exactly. Pick a preset (values from each "
                      "model's published config.json), edit any field, or paste a config.json. Open any number "
                      "to see its formula with the values plugged in.",
        "calc_preset": "Preset", "calc_custom": "custom (edited)", "calc_paste": "Paste a config.json",
        "calc_json": "config.json", "calc_load": "Load config", "calc_core": "Architecture",
        "calc_moe": "Mixture of experts", "calc_mla": "Multi-head latent attention (DeepSeek)",
        "calc_run": "Run", "calc_seq": "context length (tokens)", "calc_batch": "batch",
        "calc_wdtype": "weights dtype (inference)", "calc_kvdtype": "KV cache dtype",
        "calc_tokens": "training tokens D", "calc_recipe": "training bytes per parameter",
        "calc_recompute": "activation recomputation", "calc_gpu": "GPU memory (GiB)",
        "calc_verify": "Verify with PyTorch (build the model, allocate the cache)",
        "calc_summary": "Summary", "calc_params_plot": "Parameters", "calc_memory_plot": "Memory",
        "calc_kv_plot": "KV cache",
        "calc_formats_moved": "Number formats (fp32, bf16, fp16, fp8, int8 bit by bit) moved to the Tensors tab.",
        "calc_c_gelu": "GELU MLP (2 matrices)", "calc_c_swiglu": "SwiGLU (3 matrices)", "calc_c_layernorm": "LayerNorm", "calc_c_rmsnorm": "RMSNorm",
        "calc_c_none": "none", "calc_c_selective": "selective", "calc_c_full": "full",
        "calc_explain": r"""
**Counting.** A layer holds attention ($d\cdot H\cdot h_d$ for Q, $2\,d\cdot n_{kv}\cdot h_d$ for K and V, $H\cdot h_d\cdot d$ for the output) and an FFN ($2\,d\,f$ for a GELU MLP, $3\,d\,f$ for SwiGLU: gate, up, down). The classic $12\,L\,d^2$ assumes MHA, a $4d$ GELU MLP and no embeddings; it is off for every modern model. Mixture-of-experts models count every expert in the total but only the router's top-$k$ in the active parameters.

**Compute.** A forward pass costs about $2N$ FLOPs per token (a multiply-add per weight) plus attention's $2\,L\,T\,H\,(d_{qk}+d_v)$ at context $T$; the backward pass costs twice the forward, hence $6\,N\,D$ for training on $D$ tokens.

**Memory.** Inference: weights × bytes per weight plus the KV cache, $2\,L\,n_{kv}\,h_d\,T\,B$ elements ($n_{kv}$ from `num_key_value_heads`, not the query heads: GQA shrinks it; MLA caches one latent of rank $r_{kv}$ plus a shared RoPE key, no factor 2). Training with mixed-precision AdamW: 2 (bf16 weights) + 2 (grads) + 4 (fp32 master) + 8 (Adam $m$, $v$) = **16 bytes per parameter**, 18 with fp32 gradients, 20 when fp32 weights are kept beside the master. Activations (Korthikanti et al.): $s\,b\,h\,(34 + 5\,a\,s/h)$ bytes per layer; selective recomputation drops the $5as/h$ attention term; full recomputation keeps only each layer's input.

""",
    },
    "zh-CN": {
        "tab_calculator": "计算器",
        "calc_intro": "精确计算真实模型的参数量、FLOPs 和显存。选择预设（数值来自各模型公开的 config.json），"
                      "修改任意字段，或粘贴一个 config.json。展开任意数字即可看到代入数值的公式。",
        "calc_preset": "预设", "calc_custom": "自定义（已修改）", "calc_paste": "粘贴 config.json",
        "calc_json": "config.json", "calc_load": "载入配置", "calc_core": "结构",
        "calc_moe": "混合专家", "calc_mla": "多头潜在注意力（DeepSeek）",
        "calc_run": "运行设置", "calc_seq": "上下文长度（词元）", "calc_batch": "批大小",
        "calc_wdtype": "权重数据类型（推理）", "calc_kvdtype": "KV 缓存数据类型",
        "calc_tokens": "训练词元数 D", "calc_recipe": "训练时每个参数的字节数",
        "calc_recompute": "激活重计算", "calc_gpu": "GPU 显存（GiB）",
        "calc_verify": "用 PyTorch 核对（构建模型、分配缓存）",
        "calc_summary": "汇总", "calc_params_plot": "参数量", "calc_memory_plot": "显存",
        "calc_kv_plot": "KV 缓存",
        "calc_formats_moved": "数值格式（fp32、bf16、fp16、fp8、int8 的逐位布局）已移到“张量”页。",
        "calc_c_gelu": "GELU MLP（2 个矩阵）", "calc_c_swiglu": "SwiGLU（3 个矩阵）", "calc_c_layernorm": "LayerNorm", "calc_c_rmsnorm": "RMSNorm",
        "calc_c_none": "不重计算", "calc_c_selective": "选择性", "calc_c_full": "完全",
        "calc_explain": r"""
**计数。** 每层包含注意力（Q 为 $d\cdot H\cdot h_d$，K 和 V 为 $2\,d\cdot n_{kv}\cdot h_d$，输出为 $H\cdot h_d\cdot d$）和 FFN（GELU MLP 为 $2\,d\,f$，SwiGLU 为 $3\,d\,f$：gate、up、down）。经典的 $12\,L\,d^2$ 假设 MHA、$4d$ 宽的 GELU MLP 且不计嵌入；对现代模型都不准确。混合专家模型的总参数包含所有专家，激活参数只算路由器选出的 top-$k$ 个。

**计算量。** 前向每个词元约 $2N$ FLOPs（每个权重一次乘加），再加上下文长度 $T$ 时注意力的 $2\,L\,T\,H\,(d_{qk}+d_v)$；反向是前向的两倍，所以在 $D$ 个词元上训练约为 $6\,N\,D$。

**显存。** 推理：权重 × 每个权重的字节数，加上 KV 缓存 $2\,L\,n_{kv}\,h_d\,T\,B$ 个元素（$n_{kv}$ 取 `num_key_value_heads`，不是查询头数：GQA 会缩小缓存；MLA 只缓存一个秩为 $r_{kv}$ 的潜在向量和一个共享的 RoPE 键，没有因子 2）。混合精度 AdamW 训练：2（bf16 权重）+ 2（梯度）+ 4（fp32 主权重）+ 8（Adam 的 $m$、$v$）= **每个参数 16 字节**；梯度用 fp32 时为 18；同时保留 fp32 权重和主权重时为 20。激活（Korthikanti 等）：每层 $s\,b\,h\,(34 + 5\,a\,s/h)$ 字节；选择性重计算去掉注意力的 $5as/h$ 项；完全重计算只保留每层的输入。

""",
    },
}
STRINGS["en"].update({f"calc_f_{k}": v for k, v in _FIELD_EN.items()})
STRINGS["zh-CN"].update({f"calc_f_{k}": v for k, v in _FIELD_ZH.items()})


def _spec_from_fields(values: list):
    from models.calculator import ModelSpec
    kwargs = {}
    for name, value in zip(FIELDS, values):
        if name in CHOICE_FIELDS:
            if value not in CHOICE_FIELDS[name]:
                raise ValueError(f"{name} = {value!r} must be one of {', '.join(CHOICE_FIELDS[name])}")
            kwargs[name] = value
        elif name in BOOL_FIELDS:
            kwargs[name] = bool(value)
        else:
            kwargs[name] = as_int(name, value, low=0, high=10**9)
    kwargs["head_dim"] = kwargs["head_dim"] or None
    kwargs["n_kv_heads"] = kwargs["n_kv_heads"] or None
    return ModelSpec(name="custom", **kwargs)


def _run(seq_len, batch, weight_dtype, kv_dtype, train_tokens, recipe, recompute, gpu_gib):
    from models.calculator import RunSettings
    return RunSettings(seq_len=as_int("context length", seq_len, low=1, high=CALC_MAX_CONTEXT),
                       batch=as_int("batch", batch, low=1, high=CALC_MAX_BATCH), weight_dtype=weight_dtype,
                       kv_dtype=kv_dtype, train_tokens=as_number("training tokens", train_tokens),
                       recipe=str(recipe), recompute=recompute, gpu_gib=as_number("GPU memory", gpu_gib))


@user_errors
def calculate(request: gr.Request, *args):
    """The ``/calculate`` endpoint: spec fields, then run settings -> summary, three figures, device line.

    ``request`` comes first: Gradio injects it only into positional parameters, never after ``*args``.
    """
    from models.calculator import analyze, kv_curve
    from models.device import timed
    import torch
    from viz.calculator import kv_figure, memory_figure, params_figure, summary_markdown

    lang = lang_of(request)
    spec = _spec_from_fields(list(args[: len(FIELDS)]))
    run = _run(*args[len(FIELDS):])
    with timed(torch.device("cpu")) as watch:
        a = analyze(spec, run)
        contexts, kv, weights = kv_curve(spec, run.batch, run.kv_dtype)
    return (summary_markdown(a, lang), params_figure(a.params["parts"], a.active_parts, lang),
            memory_figure(a.inference["parts"], a.training["parts"], run.gpu_gib, run.usable,
                          a.gpus_inference, a.gpus_training, lang),
            kv_figure(contexts, kv, weights, a.crossover_tokens, lang), str(watch.timing))


@user_errors
def verify_spec(request: gr.Request, *fields):
    """The ``/calculate_verify`` endpoint: the counts of a really built model and a really allocated cache."""
    from models.calculator_verify import verify
    from viz.calculator import verification_markdown
    return verification_markdown(verify(_spec_from_fields(list(fields)), seq_len=VERIFY_TOKENS), VERIFY_TOKENS,
                                 lang_of(request))


def _tiny_spec(name: str):
    from models.calculator_verify import spec_of_gpt
    from models.tiny_gpt import CHECKPOINT_DIR, checkpoint_name, load_checkpoint, tiny_config, trained_configs
    vocab = len(load_checkpoint(CHECKPOINT_DIR / f"{checkpoint_name(tiny_config('mha', 1))}.pt").vocab)
    return spec_of_gpt(trained_configs(vocab)[TINY_PRESETS[name]], name)


def _preset_values(name: str):
    from dataclasses import asdict
    if name not in PRESETS and name not in TINY_PRESETS:
        return [gr.skip()] * len(FIELDS)
    spec = asdict(PRESETS[name] if name in PRESETS else _tiny_spec(name))
    spec["head_dim"] = spec["head_dim"] or 0
    spec["n_kv_heads"] = spec["n_kv_heads"] or spec["n_heads"]
    return [spec[f] for f in FIELDS]


@user_errors
def check_config(text: str) -> None:
    """Raise the message a config.json that cannot be read deserves; nothing when it can."""
    from models.calculator import spec_from_config
    spec_from_config(text)


@user_errors
def load_config(text: str):
    from dataclasses import asdict

    from models.calculator import spec_from_config
    spec = asdict(spec_from_config(text))
    spec["head_dim"] = spec["head_dim"] or 0
    spec["n_kv_heads"] = spec["n_kv_heads"] or spec["n_heads"]
    return ["custom", *[spec[f] for f in FIELDS]]


def _field(name: str, value):
    label = t(f"calc_f_{name}")
    if name in CHOICE_FIELDS:
        return gr.Radio([(t(f"calc_c_{c}"), c) for c in CHOICE_FIELDS[name]], value=value, label=label, elem_id=f"calc_{name}")
    if name in BOOL_FIELDS:
        return gr.Checkbox(value, label=label, elem_id=f"calc_{name}")
    return gr.Number(value, precision=0, minimum=0, maximum=CALC_MAX_DIM, label=label, elem_id=f"calc_{name}")


def build() -> dict:
    """Lay out the tab, wire it, return the first-draw event."""
    defaults = dict(zip(FIELDS, _preset_values(DEFAULT_PRESET)))
    gr.Markdown(t("calc_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            preset = gr.Dropdown([*PRESETS, *TINY_PRESETS, ("custom", "custom")], value=DEFAULT_PRESET,
                                 label=t("calc_preset"), elem_id="calc_preset")
            with gr.Accordion(t("calc_paste"), open=False):
                config = gr.Textbox(lines=6, label=t("calc_json"), max_length=CALC_MAX_JSON_CHARS,
                                    elem_id="calc_json")
                load = gr.Button(t("calc_load"), size="sm", elem_id="calc_load")
            widgets = {}
            for group, names in GROUPS.items():
                with gr.Accordion(t(group), open=group == "calc_core"):
                    for i in range(0, len(names), 2):                        # two fields per row
                        with gr.Row():
                            for name in names[i:i + 2]:
                                widgets[name] = _field(name, defaults[name])
            with gr.Accordion(t("calc_run"), open=True):
                seq = gr.Number(4096, precision=0, minimum=1, maximum=CALC_MAX_CONTEXT, label=t("calc_seq"),
                                elem_id="calc_seq")
                batch = gr.Number(1, precision=0, minimum=1, maximum=CALC_MAX_BATCH, label=t("calc_batch"),
                                  elem_id="calc_batch")
                wdtype = gr.Dropdown(list(DTYPE_BYTES), value="bf16", label=t("calc_wdtype"),
                                     elem_id="calc_wdtype")
                kvdtype = gr.Dropdown(list(DTYPE_BYTES), value="bf16", label=t("calc_kvdtype"),
                                      elem_id="calc_kvdtype")
                tokens = gr.Number(1e12, minimum=1, maximum=1e16, label=t("calc_tokens"), elem_id="calc_tokens")
                recipe = gr.Radio(list(OPTIMIZER_RECIPES), value="16", label=t("calc_recipe"),
                                  elem_id="calc_recipe")
                recompute = gr.Radio([(t(f"calc_c_{r}"), r) for r in RECOMPUTE], value="selective",
                                     label=t("calc_recompute"), elem_id="calc_recompute")
                gpu = gr.Dropdown(list(GPU_CHOICES), value=80.0, label=t("calc_gpu"), elem_id="calc_gpu")
        with gr.Column(scale=2):
            summary = gr.Markdown(elem_id="calc_summary", latex_delimiters=[])
            params_plot = gr.Plot(label=t("calc_params_plot"), elem_id="calc_params_plot")
            memory_plot = gr.Plot(label=t("calc_memory_plot"), elem_id="calc_memory_plot")
            kv_plot = gr.Plot(label=t("calc_kv_plot"), elem_id="calc_kv_plot")
            verify_button = gr.Button(t("calc_verify"), size="sm", elem_id="calc_verify")
            verification = gr.Markdown(elem_id="calc_verification")
            device = device_line()
    gr.Markdown(t("calc_formats_moved"))
    explain("calc_explain")

    fields = [widgets[f] for f in FIELDS]
    inputs = [*fields, seq, batch, wdtype, kvdtype, tokens, recipe, recompute, gpu]
    outputs = [summary, params_plot, memory_plot, kv_plot, device]
    main = dict(fn=calculate, inputs=inputs, outputs=outputs, show_progress="hidden")
    controls = [w for w in fields if not isinstance(w, (gr.Radio, gr.Checkbox))]
    gr.on([*(w.submit for w in controls), *(w.blur for w in controls),
           *(w.input for w in fields if isinstance(w, (gr.Radio, gr.Checkbox))),
           seq.submit, seq.blur, batch.submit, batch.blur, tokens.submit, tokens.blur,
           wdtype.input, kvdtype.input, recipe.input, recompute.input, gpu.input], api_name="calculate", **main)
    for w in fields:
        (w.input if isinstance(w, (gr.Radio, gr.Checkbox)) else w.submit)(
            lambda: "custom", None, preset, api_visibility="private", show_progress="hidden")
    preset.input(_preset_values, preset, fields, api_visibility="private", show_progress="hidden").then(
        **{**main, "api_visibility": "private"})
    # Checked first by an event with no outputs: a refused config raised in load_config would mark
    # each field "Error" over its value; this way only the message says what was wrong.
    load.click(check_config, config, None, api_visibility="private").success(
        load_config, config, [preset, *fields], api_visibility="private").success(
        **{**main, "api_visibility": "private"})
    verify_button.click(verify_spec, fields, verification, api_name="calculate_verify")
    return dict(fn=calculate, inputs=inputs, outputs=outputs, show_progress="hidden")
