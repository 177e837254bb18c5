"""The Calculator tab: parameters, FLOPs and memory of real models, every number with its formula."""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain
from components.i18n import lang_of, t
from components.widgets import Dropdown, Number, Radio
from components.wiring import control_names, event
from models.calculator import (DTYPE_BYTES, FIELD_CHOICES, OPTIMIZER_RECIPES, PRESETS, RECOMPUTE, RunSettings,
                               fields_of, spec_fields)
from models.limits import CALC_MAX_BATCH, CALC_MAX_CONTEXT, CALC_MAX_DIM, CALC_MAX_JSON_CHARS

FIELDS = spec_fields()
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
        "calc_recipe_16": "16", "calc_recipe_18": "18", "calc_recipe_20": "20",
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
        "calc_recipe_16": "16", "calc_recipe_18": "18", "calc_recipe_20": "20",
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


D = fields_of(PRESETS[DEFAULT_PRESET])      # the defaults of every endpoint: Llama-3-8B
RUN = RunSettings()                          # ... and the run's


def calculate(vocab_size: int = D["vocab_size"], d_model: int = D["d_model"], n_layers: int = D["n_layers"],
              n_heads: int = D["n_heads"], n_kv_heads: int = D["n_kv_heads"], head_dim: int = D["head_dim"],
              ffn_dim: int = D["ffn_dim"], ffn_type: str = D["ffn_type"], tied_embeddings: bool = D["tied_embeddings"],
              learned_positions: int = D["learned_positions"], norm: str = D["norm"], attn_bias: bool = D["attn_bias"],
              mlp_bias: bool = D["mlp_bias"], n_experts: int = D["n_experts"], top_k: int = D["top_k"],
              n_shared_experts: int = D["n_shared_experts"], expert_dim: int = D["expert_dim"],
              first_dense_layers: int = D["first_dense_layers"], kv_lora_rank: int = D["kv_lora_rank"],
              q_lora_rank: int = D["q_lora_rank"], qk_rope_head_dim: int = D["qk_rope_head_dim"],
              qk_nope_head_dim: int = D["qk_nope_head_dim"], v_head_dim: int = D["v_head_dim"],
              seq_len: int = RUN.seq_len, batch: int = RUN.batch, weight_dtype: str = RUN.weight_dtype,
              kv_dtype: str = RUN.kv_dtype, train_tokens: float = RUN.train_tokens, recipe: str = RUN.recipe,
              recompute: str = RUN.recompute, gpu_gib: float = RUN.gpu_gib, request: gr.Request = None) -> dict:
    """The ``/calculate`` endpoint: the model's fields (a config.json's, by name), then the run ->
    the summary with every formula, three figures, the device line."""
    import torch

    from models.calculator import analyze, kv_curve, run_settings, spec_from_fields
    from models.device import timed
    from viz.calculator import kv_figure, memory_figure, params_figure, summary_markdown

    given = locals()
    lang = lang_of(request)
    spec = spec_from_fields({name: given[name] for name in FIELDS})
    run = run_settings(seq_len=seq_len, batch=batch, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                       train_tokens=train_tokens, recipe=recipe, recompute=recompute, gpu_gib=gpu_gib)
    with timed(torch.device("cpu")) as watch:
        a = analyze(spec, run)
        contexts, kv, weights = kv_curve(spec, run.batch, run.kv_dtype)
    return {"summary": summary_markdown(a, lang), "params": params_figure(a.params["parts"], a.active_parts, lang),
            "memory": memory_figure(a.inference["parts"], a.training["parts"], run.gpu_gib, run.usable,
                                    a.gpus_inference, a.gpus_training, lang),
            "kv": kv_figure(contexts, kv, weights, a.crossover_tokens, lang), "device": str(watch.timing)}


def verify_spec(vocab_size: int = D["vocab_size"], d_model: int = D["d_model"], n_layers: int = D["n_layers"],
                n_heads: int = D["n_heads"], n_kv_heads: int = D["n_kv_heads"], head_dim: int = D["head_dim"],
                ffn_dim: int = D["ffn_dim"], ffn_type: str = D["ffn_type"],
                tied_embeddings: bool = D["tied_embeddings"], learned_positions: int = D["learned_positions"],
                norm: str = D["norm"], attn_bias: bool = D["attn_bias"], mlp_bias: bool = D["mlp_bias"],
                n_experts: int = D["n_experts"], top_k: int = D["top_k"], n_shared_experts: int = D["n_shared_experts"],
                expert_dim: int = D["expert_dim"], first_dense_layers: int = D["first_dense_layers"],
                kv_lora_rank: int = D["kv_lora_rank"], q_lora_rank: int = D["q_lora_rank"],
                qk_rope_head_dim: int = D["qk_rope_head_dim"], qk_nope_head_dim: int = D["qk_nope_head_dim"],
                v_head_dim: int = D["v_head_dim"], request: gr.Request = None) -> dict:
    """The ``/calculate_verify`` endpoint: the counts of a really built model and a really allocated cache."""
    from models.calculator import spec_from_fields
    from models.calculator_verify import verify
    from viz.calculator import verification_markdown

    given = locals()
    spec = spec_from_fields({name: given[name] for name in FIELDS})
    return {"verification": verification_markdown(verify(spec, seq_len=VERIFY_TOKENS), VERIFY_TOKENS,
                                                  lang_of(request))}


def _tiny_spec(name: str):
    from models.calculator_verify import spec_of_gpt
    from models.tiny_gpt import CHECKPOINT_DIR, checkpoint_name, load_checkpoint, tiny_config, trained_configs
    vocab = len(load_checkpoint(CHECKPOINT_DIR / f"{checkpoint_name(tiny_config('mha', 1))}.pt").vocab)
    return spec_of_gpt(trained_configs(vocab)[TINY_PRESETS[name]], name)


def set_preset(preset: str = DEFAULT_PRESET) -> dict:
    """The fields of a preset (a published config, or one of the KV tab's trained GPTs); "custom" keeps them."""
    if preset in PRESETS:
        return fields_of(PRESETS[preset])
    if preset in TINY_PRESETS:
        return fields_of(_tiny_spec(preset))
    return {}


def check_config(config: str = "") -> None:
    """Raise the message a config.json that cannot be read deserves; nothing when it can."""
    from models.calculator import spec_from_config
    spec_from_config(config)


def load_config(config: str = "") -> dict:
    """The fields of a pasted config.json; the preset becomes "custom"."""
    from models.calculator import spec_from_config
    return {"preset": "custom", **fields_of(spec_from_config(config))}


def _field(name: str, value):
    label = t(f"calc_f_{name}")
    if name in FIELD_CHOICES:
        return Radio([(t(f"calc_c_{c}"), c) for c in FIELD_CHOICES[name]], value=value, label=label,
                     elem_id=f"calc_{name}")
    if name in BOOL_FIELDS:
        return gr.Checkbox(value, label=label, elem_id=f"calc_{name}")
    return Number(value, precision=0, minimum=0, maximum=CALC_MAX_DIM, label=label, elem_id=f"calc_{name}")


def build() -> dict:
    """Lay out the tab, wire it, return the first-draw event."""
    ui = SimpleNamespace()
    gr.Markdown(t("calc_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            ui.preset = Dropdown([*PRESETS, *TINY_PRESETS, ("custom", "custom")], value=DEFAULT_PRESET,
                                 label=t("calc_preset"), elem_id="calc_preset")
            with gr.Accordion(t("calc_paste"), open=False):
                ui.config = gr.Textbox(lines=6, label=t("calc_json"), max_length=CALC_MAX_JSON_CHARS,
                                       elem_id="calc_json")
                load = gr.Button(t("calc_load"), size="sm", elem_id="calc_load")
            for group, names in GROUPS.items():
                with gr.Accordion(t(group), open=group == "calc_core"):
                    for i in range(0, len(names), 2):                        # two fields per row
                        with gr.Row():
                            for name in names[i:i + 2]:
                                setattr(ui, name, _field(name, D[name]))
            with gr.Accordion(t("calc_run"), open=True):
                ui.seq_len = Number(RUN.seq_len, precision=0, minimum=1, maximum=CALC_MAX_CONTEXT,
                                    label=t("calc_seq"), elem_id="calc_seq")
                ui.batch = Number(RUN.batch, precision=0, minimum=1, maximum=CALC_MAX_BATCH, label=t("calc_batch"),
                                  elem_id="calc_batch")
                ui.weight_dtype = Dropdown(list(DTYPE_BYTES), value=RUN.weight_dtype, label=t("calc_wdtype"),
                                           elem_id="calc_wdtype")
                ui.kv_dtype = Dropdown(list(DTYPE_BYTES), value=RUN.kv_dtype, label=t("calc_kvdtype"),
                                       elem_id="calc_kvdtype")
                ui.train_tokens = Number(RUN.train_tokens, minimum=1, maximum=1e16, label=t("calc_tokens"),
                                         elem_id="calc_tokens")
                ui.recipe = Radio([(t(f"calc_recipe_{r}"), r) for r in OPTIMIZER_RECIPES], value=RUN.recipe,
                                  label=t("calc_recipe"), elem_id="calc_recipe")
                ui.recompute = Radio([(t(f"calc_c_{r}"), r) for r in RECOMPUTE], value=RUN.recompute,
                                     label=t("calc_recompute"), elem_id="calc_recompute")
                ui.gpu_gib = Dropdown(list(GPU_CHOICES), value=RUN.gpu_gib, label=t("calc_gpu"), elem_id="calc_gpu")
        with gr.Column(scale=2):
            ui.summary = gr.Markdown(elem_id="calc_summary", latex_delimiters=[])
            ui.params = gr.Plot(label=t("calc_params_plot"), elem_id="calc_params_plot")
            ui.memory = gr.Plot(label=t("calc_memory_plot"), elem_id="calc_memory_plot")
            ui.kv = gr.Plot(label=t("calc_kv_plot"), elem_id="calc_kv_plot")
            verify_button = gr.Button(t("calc_verify"), size="sm", elem_id="calc_verify")
            ui.verification = gr.Markdown(elem_id="calc_verification")
            ui.device = device_line()
    gr.Markdown(t("calc_formats_moved"))
    explain("calc_explain")

    # One named endpoint; a number recomputes on Enter or leaving the field, a choice at once.
    main = event(calculate, ui, ("summary", "params", "memory", "kv", "device"), show_progress="hidden")
    controls = [getattr(ui, name) for name in control_names(calculate)]
    typed = [w for w in controls if isinstance(w, (gr.Number, gr.Textbox))]
    picked = [w for w in controls if not isinstance(w, (gr.Number, gr.Textbox))]
    gr.on([*(w.submit for w in typed), *(w.blur for w in typed), *(w.input for w in picked)],
          api_name="calculate", **main)
    for name in FIELDS:                                               # an edited field: no longer the preset
        w = getattr(ui, name)
        (w.submit if isinstance(w, gr.Number) else w.input)(
            lambda: "custom", None, ui.preset, api_visibility="private", show_progress="hidden")
    ui.preset.input(**event(set_preset, ui, FIELDS, api_visibility="private", show_progress="hidden")).then(
        api_visibility="private", **main)
    # Checked first by an event with no outputs: a refused config raised in load_config would mark
    # each field "Error" over its value; this way only the message says what was wrong.
    load.click(**event(check_config, ui, api_visibility="private")).success(
        **event(load_config, ui, ("preset", *FIELDS), api_visibility="private")).success(
        api_visibility="private", **main)
    verify_button.click(api_name="calculate_verify", **event(verify_spec, ui, ("verification",)))
    return main
