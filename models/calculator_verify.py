"""Check the calculator against the model the app runs: build the one transformer from a spec, count it.

:func:`transformer_config` turns the calculator's :class:`ModelSpec` into a
:class:`~models.transformer.TransformerConfig` (GPT-2's learned positions and biases, Llama's GQA,
Qwen2's q, k, v biases, Qwen3's q/k norms, Gemma 2's sandwich norms, Mixtral's experts, Qwen2-MoE's gated
shared expert, DeepSeek-V2's MLA with query compression and its first dense layers), and
:func:`verify` builds that :class:`~models.transformer.Transformer`, independently of the counting
formulas in :mod:`models.calculator`:

- **Run it** when the spec has at most ``CALC_RUN_MAX_PARAMS`` parameters (the KV Cache tab's tiny
  GPTs among them): real weights, ``sum(p.numel())`` counted, and a forward pass over ``seq_len``
  tokens fills a real KV cache whose bytes are read off its tensors (fp32).
- Otherwise **build it on PyTorch's meta device** (shapes, no memory), so even a 236B model is built
  in seconds, and allocate the cache a decoder of that shape keeps on the meta device too, in the
  chosen cache dtype (int4 allocated as int8, its bytes packed two values to one).
  Bounded by the number of linear layers, ``CALC_BUILD_MAX_MODULES``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from models.calculator import ModelSpec, count_params, kv_cache_bytes, said_name
from models.checks import InputError, choice
from models.kv_cache import KVCache
from models.limits import CALC_BUILD_MAX_MODULES, CALC_RUN_MAX_PARAMS
from models.transformer import Transformer, TransformerConfig


def transformer_config(spec: ModelSpec, seq_len: int) -> TransformerConfig:
    """The one transformer's config of ``spec``, with a context of at least ``seq_len`` tokens.

    >>> from models.calculator import PRESETS
    >>> c = transformer_config(PRESETS["DeepSeek-V2-Lite"], 16)
    >>> c.attention, c.kv_latent_dim, c.rope_dim, c.n_experts, c.moe_first_dense
    ('mla', 512, 64, 64, 1)
    """
    mla = spec.is_mla
    moe = dict(ffn="moe", expert_ffn=spec.ffn_type, n_experts=spec.n_experts, top_k=spec.top_k,
               n_shared_experts=spec.n_shared_experts, moe_d_ff=spec.expert_ffn,
               moe_first_dense=spec.first_dense_layers,
               moe_shared_gate=spec.shared_expert_gate) if spec.is_moe else dict(ffn=spec.ffn_type)
    attention = dict(attention="mla", kv_latent_dim=spec.kv_lora_rank, q_latent_dim=spec.q_lora_rank or None,
                     rope_dim=spec.qk_rope_head_dim, head_dim=spec.qk_nope_head_dim,
                     v_head_dim=spec.v_head_dim) if mla else dict(n_kv_heads=spec.kv_heads, head_dim=spec.hd)
    positions = dict(positions="learned", max_seq_len=max(spec.learned_positions, seq_len)) \
        if spec.learned_positions else dict(positions="rope", max_seq_len=seq_len)
    return TransformerConfig(
        vocab_size=spec.vocab_size, n_layers=spec.n_layers, d_model=spec.d_model, n_heads=spec.n_heads,
        norm=spec.norm, placement="sandwich" if spec.sandwich_norm else "pre", qk_norm=spec.qk_norm,
        qk_norm_scope="all" if spec.qk_norm_all else "head",
        d_ff=spec.ffn, ffn_bias=spec.mlp_bias, qkv_bias=spec.attn_bias or spec.qkv_bias, out_bias=spec.attn_bias,
        tie_embeddings=spec.tied_embeddings, **attention, **moe, **positions)


def spec_of_gpt(config, name: str) -> ModelSpec:
    """The calculator's :class:`ModelSpec` of a KV-tab model (a ``GPTConfig`` or its ``TransformerConfig``).

    >>> from models.generation import GPTConfig
    >>> spec_of_gpt(GPTConfig(61, 4, 128, 4, 2, 512), "tiny").kv_heads
    2
    """
    config = config.transformer() if hasattr(config, "transformer") else config
    mla = config.attention == "mla"
    return ModelSpec(name, vocab_size=config.vocab_size, d_model=config.d_model, n_layers=config.n_layers,
                     n_heads=config.n_heads, n_kv_heads=config.n_kv_heads, head_dim=config.head_dim,
                     ffn_dim=config.d_ff, ffn_type="swiglu", norm="rmsnorm",
                     kv_lora_rank=config.kv_latent_dim if mla else 0,
                     qk_rope_head_dim=config.rope_dim if mla else 0,
                     qk_nope_head_dim=config.head_dim if mla else 0, v_head_dim=config.v_head_dim if mla else 0)


def build_model(spec: ModelSpec, seq_len: int = 128) -> Transformer:
    """``spec``'s :class:`~models.transformer.Transformer` on the meta device (shapes, no memory)."""
    linears = spec.n_layers * (8 + 3 * (spec.n_experts + 1))
    if linears > CALC_BUILD_MAX_MODULES:
        raise InputError("calc_err_too_many_modules", name=said_name(spec.name), linears=linears,
                         limit=CALC_BUILD_MAX_MODULES)
    return Transformer(transformer_config(spec, seq_len), device="meta")


# The calculator's cache dtypes PyTorch can allocate; "int4" is allocated as int8 and packed two to a byte.
KV_TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
                   "fp8": torch.float8_e4m3fn, "int8": torch.int8, "int4": torch.int8}
PACKED = {"int4": 2}                   # values per byte of the allocated dtype


@dataclass(frozen=True)
class Verification:
    formula_params: int
    built_params: int
    formula_kv_bytes: int
    built_kv_bytes: int
    how: str = "meta"                  # "run": built with weights and run; "meta": built on the meta device
    kv_dtype: str = "fp16"             # the dtype of the cache compared
    seq_len: int = 128                 # the tokens in the cache compared

    @property
    def ok(self) -> bool:
        return self.formula_params == self.built_params and self.formula_kv_bytes == self.built_kv_bytes


def verify(spec: ModelSpec, seq_len: int = 128, batch: int = 1, kv_dtype: str = "fp16") -> Verification:
    """Formula vs. the built transformer (``sum(p.numel())``, tied weights once) and vs. a real cache:
    filled by a forward pass over ``seq_len`` tokens (fp32) when the model is small enough to run here,
    allocated on the meta device in ``kv_dtype`` (a name of :data:`KV_TORCH_DTYPES`) otherwise. A model with
    a sliding window is checked at ``min(seq_len, W)`` tokens, where every layer holds them all: the built
    transformer keeps every token, as a rolling buffer does until it is full.

    >>> from models.calculator import PRESETS
    >>> v = verify(PRESETS["Llama-3-8B"], seq_len=4, kv_dtype="bf16")
    >>> v.kv_dtype, v.built_kv_bytes, v.ok              # 2 (k, v) · 32 layers · 8 heads · 128 · 4 tokens · 2 B
    ('bf16', 524288, True)
    """
    kv_dtype = choice("calc_kv_dtype", kv_dtype, KV_TORCH_DTYPES)
    seq_len = min(seq_len, spec.sliding_window or seq_len)
    formula = count_params(spec)["total"]
    if formula <= CALC_RUN_MAX_PARAMS:
        model = Transformer.seeded(transformer_config(spec, seq_len), seed=0).eval()   # real weights, CPU
        ids = torch.randint(0, spec.vocab_size, (batch, seq_len), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            _, cache = model(ids, model.new_cache(batch=batch, capacity=seq_len))   # prefill fills T positions
        return Verification(formula, sum(p.numel() for p in model.parameters()),
                            kv_cache_bytes(spec, seq_len, batch, "fp32"), cache.nbytes(), "run", "fp32", seq_len)
    model = build_model(spec, seq_len)
    built = sum(p.numel() for p in model.parameters())                # .parameters() counts tied weights once
    cache = KVCache(model.config, batch=batch, capacity=seq_len, device="meta", dtype=KV_TORCH_DTYPES[kv_dtype])
    cache_bytes = cache.capacity_nbytes() // PACKED.get(kv_dtype, 1)
    return Verification(formula, built, kv_cache_bytes(spec, seq_len, batch, kv_dtype), cache_bytes, kv_dtype=kv_dtype,
                        seq_len=seq_len)
