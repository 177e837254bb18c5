"""Check the calculator against real PyTorch modules: build a model from a spec, count its numel.

Two ways, both independent of the counting formulas in :mod:`models.calculator`:

- **Run it** when the spec is a dense Llama-shaped decoder (SwiGLU, RMSNorm, no biases, untied,
  RoPE; MHA/GQA/MQA or MLA without query compression) of at most ``CALC_RUN_MAX_PARAMS``
  parameters — the KV Cache tab's tiny GPTs among them: the :class:`models.generation.TinyGPT` of
  that shape is built with real weights, ``sum(p.numel())`` counted, and a forward pass over
  ``seq_len`` tokens fills its real KV cache, whose bytes are read off the tensors.
- Otherwise **build the module tree** from generic pieces (``nn.Embedding``, ``nn.Linear`` with the
  spec's bias flags, LayerNorm/RMSNorm, SwiGLU or GELU FFNs, routed and shared experts, MLA's
  low-rank projections) on PyTorch's meta device (shapes, no memory), so even a 236B model is
  built in seconds, and allocate the tensors a decoder caches. Bounded by the number of modules,
  ``CALC_BUILD_MAX_MODULES``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from models.calculator import ModelSpec, count_params, kv_cache_bytes
from models.limits import CALC_BUILD_MAX_MODULES, CALC_RUN_MAX_PARAMS


def _norm(spec: ModelSpec, dim: int) -> nn.Module:
    return nn.LayerNorm(dim) if spec.norm == "layernorm" else nn.RMSNorm(dim)


def _ffn(spec: ModelSpec, hidden: int) -> nn.Module:
    d, bias = spec.d_model, spec.mlp_bias
    if spec.ffn_type == "gelu":
        return nn.ModuleDict({"fc": nn.Linear(d, hidden, bias=bias), "proj": nn.Linear(hidden, d, bias=bias)})
    return nn.ModuleDict({"gate": nn.Linear(d, hidden, bias=bias), "up": nn.Linear(d, hidden, bias=bias),
                          "down": nn.Linear(hidden, d, bias=bias)})


def _attention(spec: ModelSpec) -> nn.Module:
    d, H = spec.d_model, spec.n_heads
    if spec.is_mla:
        qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        q = (nn.Sequential(nn.Linear(d, spec.q_lora_rank, bias=False), nn.RMSNorm(spec.q_lora_rank),
                           nn.Linear(spec.q_lora_rank, H * qk, bias=False))
             if spec.q_lora_rank else nn.Linear(d, H * qk, bias=False))
        return nn.ModuleDict({
            "q": q,
            "kv_a": nn.Linear(d, spec.kv_lora_rank + spec.qk_rope_head_dim, bias=False),
            "kv_a_norm": nn.RMSNorm(spec.kv_lora_rank),
            "kv_b": nn.Linear(spec.kv_lora_rank, H * (spec.qk_nope_head_dim + spec.v_head_dim), bias=False),
            "o": nn.Linear(H * spec.v_head_dim, d, bias=False)})
    bias = spec.attn_bias
    return nn.ModuleDict({
        "q": nn.Linear(d, H * spec.hd, bias=bias), "k": nn.Linear(d, spec.kv_heads * spec.hd, bias=bias),
        "v": nn.Linear(d, spec.kv_heads * spec.hd, bias=bias), "o": nn.Linear(H * spec.hd, d, bias=bias)})


def build_model(spec: ModelSpec) -> nn.Module:
    """A parameter-faithful (not runnable) module tree of ``spec``, on the meta device (no memory)."""
    linears = spec.n_layers * (8 + 3 * (spec.n_experts + 1))
    if linears > CALC_BUILD_MAX_MODULES:
        raise ValueError(f"{spec.name} has too many modules to build here (~{linears:,} linear layers; "
                         f"verification builds up to {CALC_BUILD_MAX_MODULES:,})")
    with torch.device("meta"):
        layers = nn.ModuleList()
        for i in range(spec.n_layers):
            layer = nn.ModuleDict({"norm1": _norm(spec, spec.d_model), "attn": _attention(spec),
                                   "norm2": _norm(spec, spec.d_model)})
            if spec.is_moe and i >= spec.first_dense_layers:
                layer["router"] = nn.Linear(spec.d_model, spec.n_experts, bias=False)
                layer["experts"] = nn.ModuleList(_ffn(spec, spec.expert_ffn) for _ in range(spec.n_experts))
                if spec.n_shared_experts:
                    layer["shared"] = _ffn(spec, spec.expert_ffn * spec.n_shared_experts)
            else:
                layer["ffn"] = _ffn(spec, spec.ffn)
            layers.append(layer)
        model = nn.ModuleDict({"embed": nn.Embedding(spec.vocab_size, spec.d_model), "layers": layers,
                               "norm": _norm(spec, spec.d_model)})
        if spec.learned_positions:
            model["positions"] = nn.Embedding(spec.learned_positions, spec.d_model)
        model["lm_head"] = nn.Linear(spec.d_model, spec.vocab_size, bias=False)
        if spec.tied_embeddings:
            model["lm_head"].weight = model["embed"].weight
    return model


def allocate_kv_cache(spec: ModelSpec, seq_len: int, batch: int = 1,
                      dtype: torch.dtype = torch.float16) -> list[torch.Tensor]:
    """The tensors a decoder caches (meta device): K and V per layer, or MLA's latent + RoPE key."""
    with torch.device("meta"):
        if spec.is_mla:
            return [torch.empty(batch, seq_len, spec.kv_lora_rank + spec.qk_rope_head_dim, dtype=dtype)
                    for _ in range(spec.n_layers)]
        return [torch.empty(batch, spec.kv_heads, seq_len, spec.hd, dtype=dtype)
                for _ in range(2 * spec.n_layers)]                   # (B, n_kv, T, hd), K then V


def gpt_config_of(spec: ModelSpec, seq_len: int):
    """The runnable :class:`models.generation.GPTConfig` of ``spec``, or ``None`` when the spec is not
    a dense Llama-shaped decoder that TinyGPT builds (MoE, GELU, LayerNorm, biases, tied or learned
    positions, an explicit head_dim other than d_model / heads, MLA with query compression).

    >>> from models.calculator import PRESETS
    >>> gpt_config_of(PRESETS["Llama-3-8B"], 16).n_kv_heads, gpt_config_of(PRESETS["GPT-2 (124M)"], 16)
    (8, None)
    """
    from models.generation import GPTConfig

    llama_shaped = (not spec.is_moe and spec.ffn_type == "swiglu" and spec.norm == "rmsnorm"
                    and not (spec.attn_bias or spec.mlp_bias or spec.tied_embeddings or spec.learned_positions)
                    and spec.d_model % spec.n_heads == 0)
    if not llama_shaped:
        return None
    head = spec.d_model // spec.n_heads
    if spec.is_mla:
        if spec.q_lora_rank or spec.kv_heads != spec.n_heads or not spec.qk_nope_head_dim == spec.v_head_dim == head:
            return None
        return GPTConfig(spec.vocab_size, spec.n_layers, spec.d_model, spec.n_heads, spec.n_heads, seq_len,
                         attention="mla", kv_latent_dim=spec.kv_lora_rank, rope_dim=spec.qk_rope_head_dim,
                         ffn_dim=spec.ffn)
    if spec.hd != head:
        return None
    return GPTConfig(spec.vocab_size, spec.n_layers, spec.d_model, spec.n_heads, spec.kv_heads, seq_len,
                     ffn_dim=spec.ffn)


def spec_of_gpt(config, name: str) -> ModelSpec:
    """The calculator's :class:`ModelSpec` of a TinyGPT config (the KV Cache tab's models).

    >>> from models.generation import GPTConfig
    >>> spec_of_gpt(GPTConfig(61, 4, 128, 4, 2, 512), "tiny").kv_heads
    2
    """
    mla = config.attention == "mla"
    return ModelSpec(name, vocab_size=config.vocab_size, d_model=config.d_model, n_layers=config.n_layers,
                     n_heads=config.n_heads, n_kv_heads=config.n_kv_heads, head_dim=config.head_dim,
                     ffn_dim=config.ffn_width, ffn_type="swiglu", norm="rmsnorm",
                     kv_lora_rank=config.kv_latent_dim if mla else 0,
                     qk_rope_head_dim=config.rope_width if mla else 0,
                     qk_nope_head_dim=config.head_dim if mla else 0, v_head_dim=config.head_dim if mla else 0)


@dataclass(frozen=True)
class Verification:
    formula_params: int
    built_params: int
    formula_kv_bytes: int
    built_kv_bytes: int
    how: str = "meta"                  # "run": a TinyGPT built and run; "meta": the module tree on the meta device
    kv_dtype: str = "fp16"             # the dtype of the cache compared

    @property
    def ok(self) -> bool:
        return self.formula_params == self.built_params and self.formula_kv_bytes == self.built_kv_bytes


def verify(spec: ModelSpec, seq_len: int = 128, batch: int = 1) -> Verification:
    """Formula vs. built modules (``sum(p.numel())``, shared weights once) and vs. a real cache: a
    TinyGPT run over ``seq_len`` tokens (fp32 cache) when the spec is one, else meta tensors (fp16)."""
    config = gpt_config_of(spec, seq_len)
    if config is not None and count_params(spec)["total"] <= CALC_RUN_MAX_PARAMS:
        from models.generation import TinyGPT
        torch.manual_seed(0)
        model = TinyGPT(config).eval()                                # real weights, on the CPU
        ids = torch.randint(0, spec.vocab_size, (batch, seq_len))   # (B, T)
        with torch.no_grad():
            _, cache = model(ids)                                     # prefill: the cache holds T positions
        return Verification(count_params(spec)["total"], sum(p.numel() for p in model.parameters()),
                            kv_cache_bytes(spec, seq_len, batch, "fp32"), cache.nbytes(), "run", "fp32")
    model = build_model(spec)
    built = sum(p.numel() for p in model.parameters())               # .parameters() dedups tied weights
    cache = allocate_kv_cache(spec, seq_len, batch)
    return Verification(count_params(spec)["total"], built, kv_cache_bytes(spec, seq_len, batch, "fp16"),
                        sum(t.numel() * t.element_size() for t in cache))
