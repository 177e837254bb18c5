"""A :class:`~models.calculator.ModelSpec` from a Hugging Face ``config.json``: the keys each family's
config uses, and what its modeling code builds that its config does not say (:data:`ARCHITECTURES`).

Checked against ``transformers``' own models built from a small config of each family on the meta device
(``tests/test_calculator_backend.py``). Every value is checked before it sizes anything: a config is
text from the web.
"""
from __future__ import annotations

import json

from models.calculator import ModelSpec
from models.checks import InputError, whole
from models.limits import CALC_MAX_CONTEXT, CALC_MAX_DIM, CALC_MAX_JSON_CHARS, CALC_MAX_LAYERS

# What a config.json leaves to its model_type's code in transformers (the defaults of its Config class
# and the modules its modeling file builds). Unknown types: gated unless the activation is a GELU.
ARCHITECTURES = {
    "gpt2": dict(gated=False, tied=True, norm="layernorm", bias=True),
    "gpt_neox": dict(gated=False, norm="layernorm", bias=True, mha=True),   # no num_key_value_heads
    "phi": dict(gated=False, norm="layernorm", bias=True),            # PhiMLP: fc1, fc2 (gelu_new)
    "starcoder2": dict(gated=False, norm="layernorm", bias=True),     # c_fc, c_proj (gelu_pytorch_tanh)
    "gemma": dict(gated=True, tied=True),                             # GemmaMLP: gate, up, down (GELU)
    "gemma2": dict(gated=True, tied=True, sandwich=True),             # a norm before and after each sublayer
    # Gemma 3's published configs leave out the fields equal to Gemma3TextConfig's defaults
    "gemma3_text": dict(gated=True, tied=True, sandwich=True, qk_norm=True, defaults=dict(
        vocab_size=262_208, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
        num_attention_heads=8, num_key_value_heads=4, head_dim=256)),
    "phi3": dict(gated=True),                                         # fused gate_up_proj, down_proj (SiLU)
    "llama": dict(gated=True), "mistral": dict(gated=True), "mixtral": dict(gated=True),
    "deepseek_v2": dict(gated=True), "deepseek_v3": dict(gated=True),
    # Qwen2's q, k, v projections have biases and its output projection none, whatever attention_bias says;
    # Qwen3 normalises each head's q and k; Qwen2-MoE gates its shared expert.
    "qwen2": dict(gated=True, qkv_bias=True), "qwen2_moe": dict(gated=True, qkv_bias=True, shared_gate=True),
    "qwen3": dict(gated=True, qk_norm=True), "qwen3_moe": dict(gated=True, qk_norm=True),
    # OLMoE and OLMo 2 normalise all heads' q as one vector and all k as another (OLMo 2 after each
    # sublayer rather than before it: the same count).
    "olmoe": dict(gated=True, qk_norm=True, qk_norm_all=True),
    "olmo2": dict(gated=True, qk_norm=True, qk_norm_all=True),
}


def spec_from_config(text: str, name: str = "pasted config") -> ModelSpec:
    """A :class:`ModelSpec` from a Hugging Face ``config.json`` (the families of :data:`ARCHITECTURES`; others
    are read by the keys they share with Llama).

    >>> spec_from_config('{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, '
    ...                  '"vocab_size": 100, "intermediate_size": 128}').kv_heads
    4
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError("calc_err_paste")
    if len(text) > CALC_MAX_JSON_CHARS:
        raise InputError("calc_err_json_long", n=len(text), limit=CALC_MAX_JSON_CHARS)
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError("calc_err_json", msg=exc.msg, line=exc.lineno, col=exc.colno) from None
    if not isinstance(cfg, dict):
        raise InputError("calc_err_json_object")
    text = cfg.get("text_config")
    if isinstance(text, dict) and text.get("model_type") in ARCHITECTURES:   # a vision-language checkpoint
        cfg = {**cfg, **text}                        # (Gemma 3): its language model; the vision tower is not counted
    gpt2 = cfg.get("model_type") == "gpt2" or "n_embd" in cfg
    family = ARCHITECTURES.get("gpt2" if gpt2 else str(cfg.get("model_type")), {})
    cfg = {**cfg, **{key: value for key, value in family.get("defaults", {}).items() if cfg.get(key) is None}}

    def get(*keys, default=None):
        for key in keys:
            if cfg.get(key) is not None:
                return cfg[key]
        return default

    d = get("hidden_size", "n_embd", "d_model")
    layers = get("num_hidden_layers", "n_layer", "num_layers")
    heads = get("num_attention_heads", "n_head")
    vocab = get("vocab_size")
    missing = [k for k, v in (("hidden_size", d), ("num_hidden_layers", layers),
                              ("num_attention_heads", heads), ("vocab_size", vocab)) if v is None]
    if missing:
        raise InputError("calc_err_config_lacks", keys=", ".join(missing))
    act = str(get("hidden_activation", "hidden_act", "activation_function", default="silu"))
    # The number of FFN matrices is the architecture's, not the activation's: Gemma's gated MLP runs GELU
    # (gelu_pytorch_tanh) through gate, up and down; Phi-2's plain MLP runs gelu_new through fc1, fc2.
    gated = family.get("gated", "gelu" not in act)
    experts = get("num_local_experts", "n_routed_experts", "num_experts", default=0) or 0
    expert_dim = get("moe_intermediate_size", default=0) or 0
    shared = get("n_shared_experts", default=0) or 0
    first_dense = get("first_k_dense_replace", default=0) or 0
    if experts:                                                       # what the MoE keys add up to, checked first
        layers = whole("num_hidden_layers", layers, 1, CALC_MAX_LAYERS)
        experts_width = whole("moe_intermediate_size", expert_dim or get("intermediate_size") or 0, 0, CALC_MAX_DIM)
        if get("shared_expert_intermediate_size"):                    # Qwen2-MoE: one shared expert this wide
            shared = _shared_experts(get("shared_expert_intermediate_size"), experts_width)
        first_dense = _first_dense_layers(first_dense, get("decoder_sparse_step", default=1),
                                          get("mlp_only_layers", default=[]), layers)
    kwargs = dict(
        vocab_size=vocab, d_model=d, n_layers=layers, n_heads=heads,
        n_kv_heads=None if family.get("mha") else get("num_key_value_heads"), head_dim=get("head_dim"),
        ffn_dim=get("intermediate_size", "n_inner", default=0) or 0,
        ffn_type="swiglu" if gated else "gelu",
        tied_embeddings=bool(get("tie_word_embeddings", default=family.get("tied", False))),
        learned_positions=get("n_positions", default=0) if gpt2 else 0,
        norm=family.get("norm", "rmsnorm"),
        attn_bias=bool(get("attention_bias", default=family.get("bias", False))) and not family.get("qkv_bias"),
        qkv_bias=bool(get("qkv_bias", default=family.get("qkv_bias", False))),   # Qwen2MoeConfig has the key
        mlp_bias=bool(get("mlp_bias", default=family.get("bias", False))),
        qk_norm=family.get("qk_norm", False), qk_norm_all=family.get("qk_norm_all", False),
        sandwich_norm=family.get("sandwich", False),
        n_experts=experts, top_k=get("num_experts_per_tok", default=0) if experts else 0,
        n_shared_experts=shared, expert_dim=expert_dim, first_dense_layers=first_dense if experts else 0,
        shared_expert_gate=bool(experts and shared and family.get("shared_gate", False)),
        kv_lora_rank=get("kv_lora_rank", default=0) or 0, q_lora_rank=get("q_lora_rank", default=0) or 0,
        qk_rope_head_dim=get("qk_rope_head_dim", default=0) or 0,
        qk_nope_head_dim=get("qk_nope_head_dim", default=0) or 0, v_head_dim=get("v_head_dim", default=0) or 0,
        **_sliding_window(cfg, layers),
    )
    for key, value in kwargs.items():
        if isinstance(value, float) and value.is_integer():
            kwargs[key] = int(value)
    if kwargs["kv_lora_rank"]:
        kwargs["head_dim"] = kwargs["head_dim"] or kwargs["qk_nope_head_dim"] + kwargs["qk_rope_head_dim"]
    return ModelSpec(name=str(cfg.get("_name_or_path") or name)[:80], **kwargs)


# The default of each Qwen config class that has the key (Qwen3-MoE has none: every layer gets the window).
MAX_WINDOW_LAYERS = {"qwen2": 28, "qwen3": 28, "qwen2_moe": 28}


def _sliding_window(cfg: dict, layers) -> dict:
    """``sliding_window`` and ``sliding_layers`` of a config: its ``layer_types`` where it lists them
    ("sliding_attention" or "full_attention" per layer), else its family's rule in ``transformers``: Gemma 2
    every other layer from the first; all but every ``sliding_window_pattern``-th layer (Gemma 3: 6 when
    unsaid, Cohere 2); with ``use_sliding_window``, Qwen2 and Qwen3 the layers from ``max_window_layers`` on
    (28 when unsaid), Qwen2-MoE the even ones below it, Qwen3-MoE all; any other family (Mistral, Phi-3,
    Starcoder2) every layer. A null or absent ``sliding_window``: no window.

    >>> _sliding_window({"model_type": "gemma3_text", "sliding_window": 1024}, 62)
    {'sliding_window': 1024, 'sliding_layers': 52}
    >>> _sliding_window({"model_type": "qwen2", "sliding_window": 32768, "use_sliding_window": False}, 28)
    {'sliding_window': 0, 'sliding_layers': 0}
    """
    window = cfg.get("sliding_window")
    if not window:
        return {"sliding_window": 0, "sliding_layers": 0}
    window = whole("sliding_window", window, 1, CALC_MAX_CONTEXT)
    layers = whole("num_hidden_layers", layers, 1, CALC_MAX_LAYERS)
    kinds, family = cfg.get("layer_types"), str(cfg.get("model_type"))
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) != layers:
            raise InputError("calc_err_layer_types", n=layers)
        local = sum(kind == "sliding_attention" for kind in kinds)
    elif family == "gemma2":
        local = (layers + 1) // 2
    elif family == "gemma3_text" or cfg.get("sliding_window_pattern") is not None:
        pattern = whole("sliding_window_pattern", cfg.get("sliding_window_pattern") or 6, 1, CALC_MAX_LAYERS)
        local = layers - layers // pattern
    elif "use_sliding_window" in cfg:
        first = cfg.get("max_window_layers")
        first = whole("max_window_layers", MAX_WINDOW_LAYERS.get(family, 0) if first is None else first, 0,
                      CALC_MAX_LAYERS)
        if not cfg["use_sliding_window"]:
            local = 0
        elif family == "qwen2_moe":                      # the even layers below max_window_layers
            local = (min(first, layers) + 1) // 2
        else:
            local = max(layers - first, 0)
    else:
        local = layers
    return {"sliding_window": window if local else 0, "sliding_layers": local}


def _shared_experts(width, expert_dim) -> int:
    """Qwen2-MoE's shared expert of ``width`` as that many experts of ``expert_dim`` (the same weights:
    an FFN's hidden units side by side), or ``InputError`` if it is not a whole number of them.

    >>> _shared_experts(5632, 1408)                                  # Qwen1.5-MoE-A2.7B
    4
    """
    width = whole("shared_expert_intermediate_size", width, 1, CALC_MAX_DIM)
    if not expert_dim or width % expert_dim:
        raise InputError("calc_err_shared_width", width=width, expert=expert_dim)
    return width // expert_dim


def _first_dense_layers(first_k, step, dense_layers, layers: int) -> int:
    """How many first layers of ``layers`` (checked: at most ``CALC_MAX_LAYERS``) keep a dense FFN:
    DeepSeek's ``first_k_dense_replace``, or the layers Qwen's MoE leaves dense (``mlp_only_layers``, and
    every layer but each ``decoder_sparse_step``-th), which must then be the first ones.

    >>> _first_dense_layers(1, 1, [], 27), _first_dense_layers(0, 1, [0, 1], 24), _first_dense_layers(0, 1, [], 24)
    (1, 2, 0)
    """
    first_k = whole("first_k_dense_replace", first_k, 0, layers)
    step = whole("decoder_sparse_step", step or 1, 1, CALC_MAX_LAYERS)
    if not isinstance(dense_layers, list) or not all(isinstance(i, int) for i in dense_layers):
        raise InputError("calc_err_dense_layers")
    listed = set(dense_layers)
    dense = {i for i in range(layers) if i in listed or (i + 1) % step}
    first = first_k + len(dense)
    if dense != set(range(len(dense))) or first > layers:
        raise InputError("calc_err_dense_layers")
    return first
