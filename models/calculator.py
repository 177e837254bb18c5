"""Parameters, FLOPs and memory of real transformer LLMs, exactly, with the formulas shown.

Counts follow the modules a Hugging Face implementation builds (GPT-2, Llama, Mistral, Mixtral, Qwen2/3
and their MoE, Gemma 1–3, Phi-3, DeepSeek-V2/V3): embeddings, per-layer attention (MHA/GQA/MQA with
explicit ``head_dim``, biases on all four projections or on q, k, v only, per-head q/k norms, or
DeepSeek's MLA), the FFN (GELU MLP with two matrices, or SwiGLU with three), MoE experts with a router
and optional shared experts (gated or not), norms (two per layer, four with Gemma 2's sandwich), and the
LM head (shared with the embedding when tied).

``active`` counts the parameters one token uses: the router's top-k experts (plus shared ones),
everything else, both embedding matrices included (the convention of Mixtral's "12.9B active").

The KV cache has one formula, :func:`kv_elements` (MHA/GQA/MQA and MLA), which the KV Cache tab
(:mod:`models.kv_cache`) and the transformer (``TransformerConfig.cache_elements_per_token``) call too.

References: Kaplan et al. 2020 (C ~ 2N forward, 6N per trained token, N without embeddings; here 6·N
counts them, as Hoffmann et al. 2022 do: see :func:`compute_conventions`); Rajbhandari et al. 2020
(ZeRO: 16 bytes per parameter for mixed-precision Adam) and the other recipes of :data:`OPTIMIZER_RECIPES`; Korthikanti et al. 2022
(activation memory s·b·h·(34 + 5·a·s/h) bytes per layer, for GPT-3 blocks). Not handled: pipeline/tensor
parallel sharding, vision towers, Phi-2's single norm per layer and LM-head bias, Qwen-MoE dense layers
after MoE ones (refused). Both kinds of q/k norm are counted: per head (Qwen3, Gemma 3) and over all heads
(OLMoE, OLMo 2: ``H·head_dim + n_kv·head_dim`` weights per layer). Sliding-window and
YOCO caches: :mod:`models.kv_layouts`. A spec from a ``config.json``: :mod:`models.calculator_config`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Literal

from locales import Term
from models.checks import InputError, choice, divides, flag, number, shown, whole
from models.limits import (CALC_BATCH, CALC_CONTEXT, CALC_MAX_CONTEXT, CALC_MAX_DIM, CALC_MAX_EXPERTS,
                           CALC_MAX_HEADS, CALC_MAX_LAYERS, CALC_MAX_PARAMS, CALC_TRAIN_TOKENS)

DTYPE_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
GiB = 2**30
FIELD_CHOICES = {"ffn_type": ("gelu", "swiglu"), "norm": ("layernorm", "rmsnorm")}
BOOL_FIELDS = ("tied_embeddings", "attn_bias", "qkv_bias", "mlp_bias", "qk_norm", "qk_norm_all", "sandwich_norm",
               "shared_expert_gate")
# Every whole-number field's range as the UI takes it (a range from 0: 0 means derived, or none): one
# source for the fields' first check, their number boxes and so their messages, which name one range
# below and above it. ModelSpec then checks what depends on other fields.
FIELD_RANGES = {"vocab_size": (1, CALC_MAX_DIM), "d_model": (1, CALC_MAX_DIM), "n_layers": (1, CALC_MAX_LAYERS),
                "n_heads": (1, CALC_MAX_HEADS), "n_kv_heads": (0, CALC_MAX_HEADS), "head_dim": (0, CALC_MAX_DIM),
                "ffn_dim": (0, CALC_MAX_DIM), "learned_positions": (0, CALC_MAX_CONTEXT),
                "n_experts": (0, CALC_MAX_EXPERTS), "top_k": (0, CALC_MAX_EXPERTS),
                "n_shared_experts": (0, CALC_MAX_EXPERTS), "expert_dim": (0, CALC_MAX_DIM),
                "first_dense_layers": (0, CALC_MAX_LAYERS), "kv_lora_rank": (0, CALC_MAX_DIM),
                "q_lora_rank": (0, CALC_MAX_DIM), "qk_rope_head_dim": (0, CALC_MAX_DIM),
                "qk_nope_head_dim": (0, CALC_MAX_DIM), "v_head_dim": (0, CALC_MAX_DIM),
                "sliding_window": (0, CALC_MAX_CONTEXT), "sliding_layers": (0, CALC_MAX_LAYERS)}


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer as its published config describes it."""

    name: str
    # core sizes
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int | None = None          # None -> n_heads (MHA); 1 -> MQA; between -> GQA
    head_dim: int | None = None            # None -> d_model // n_heads
    ffn_dim: int = 0                       # 0 -> 4 * d_model
    ffn_type: Literal["gelu", "swiglu"] = "swiglu"
    # embeddings, norms, biases
    tied_embeddings: bool = False
    learned_positions: int = 0             # GPT-2: a learned table of this many positions
    norm: Literal["layernorm", "rmsnorm"] = "rmsnorm"
    attn_bias: bool = False                # biases on q, k, v and the output projection (GPT-2)
    qkv_bias: bool = False                 # biases on q, k, v only (Qwen2)
    mlp_bias: bool = False
    qk_norm: bool = False                  # a norm over each head's q and k (Qwen3, Gemma 3): 2 per layer, head_dim wide
    qk_norm_all: bool = False              # ... over all heads' q and all k (OLMoE, OLMo 2): H·hd, n_kv·hd wide
    sandwich_norm: bool = False            # a norm after each sublayer too (Gemma 2, 3): 4 per layer
    # mixture of experts (n_experts 0 = dense)
    n_experts: int = 0
    top_k: int = 0
    n_shared_experts: int = 0
    expert_dim: int = 0                    # 0 -> ffn_dim
    first_dense_layers: int = 0            # DeepSeek: first_k_dense_replace
    shared_expert_gate: bool = False       # Qwen2-MoE: sigmoid(x · w_g) scales the shared experts (d weights)
    # multi-head latent attention (DeepSeek-V2); kv_lora_rank 0 = standard attention
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # sliding-window attention: that many layers attend to (and cache) the last W tokens only (0 = none)
    sliding_window: int = 0                # W (Mistral-7B v0.1: 4,096 on every layer; Gemma 3: 1,024 on 5 of 6)
    sliding_layers: int = 0

    def __post_init__(self):
        check = whole                                              # InputError: the field, its value, its range
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "learned_positions", "n_experts"):
            check(name, getattr(self, name), *FIELD_RANGES[name])         # as the UI's fields take them
        check("n_kv_heads", self.kv_heads, 1, self.n_heads)
        divides("n_kv_heads", self.kv_heads, "n_heads", self.n_heads)
        if self.head_dim is None and self.d_model % self.n_heads:
            raise InputError("calc_err_heads_divide", heads=self.n_heads, d=self.d_model)
        check("head_dim", self.hd, 1, CALC_MAX_DIM)
        check("ffn_dim", self.ffn, 1, CALC_MAX_DIM)
        choice("ffn_type", self.ffn_type, FIELD_CHOICES["ffn_type"])
        choice("norm", self.norm, FIELD_CHOICES["norm"])
        if self.is_moe:
            check("top_k", self.top_k, 1, self.n_experts)
            check("expert_dim", self.expert_ffn, 1, CALC_MAX_DIM)
            check("n_shared_experts", self.n_shared_experts, 0, CALC_MAX_EXPERTS)
            check("first_dense_layers", self.first_dense_layers, 0, self.n_layers)
            if self.shared_expert_gate and not self.n_shared_experts:
                raise InputError("calc_err_shared_gate")
        if self.qk_norm_all and not self.qk_norm:
            raise InputError("calc_err_qk_norm_all")
        for name in ("sliding_window", "sliding_layers"):
            check(name, getattr(self, name), *FIELD_RANGES[name])
        check("sliding_layers", self.sliding_layers, 0, self.n_layers)
        if (self.sliding_window == 0) != (self.sliding_layers == 0):
            raise InputError("calc_err_window", window=self.sliding_window, layers=self.sliding_layers)
        if self.kv_lora_rank:
            for name in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
                check(name, getattr(self, name), 1, CALC_MAX_DIM)
            check("q_lora_rank", self.q_lora_rank, 0, CALC_MAX_DIM)
            if self.attn_bias or self.qkv_bias or self.qk_norm:            # DeepSeek's MLA has none of them
                raise InputError("calc_err_mla_extras")
        if count_params(self)["total"] > CALC_MAX_PARAMS:
            raise InputError("calc_err_too_big", name=said_name(self.name), limit=CALC_MAX_PARAMS)

    # derived sizes ----------------------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def hd(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def ffn(self) -> int:
        return self.ffn_dim or 4 * self.d_model

    @property
    def expert_ffn(self) -> int:
        return self.expert_dim or self.ffn

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def full_layers(self) -> int:
        """Layers that attend to (and cache) every token: those without a sliding window."""
        return self.n_layers - self.sliding_layers


# --------------------------------------------------------------------------- parameters
def _norm_params(spec: ModelSpec, dim: int) -> int:
    return 2 * dim if spec.norm == "layernorm" else dim          # LayerNorm has a bias, RMSNorm not


def _qk_norm_params(spec: ModelSpec) -> int:
    """One layer's q and k norms: head_dim wide each (Qwen3), or over all heads' q and all k (OLMoE)."""
    if not spec.qk_norm:
        return 0
    if spec.qk_norm_all:
        return _norm_params(spec, spec.n_heads * spec.hd) + _norm_params(spec, spec.kv_heads * spec.hd)
    return 2 * _norm_params(spec, spec.hd)


def _ffn_params(spec: ModelSpec, hidden: int) -> int:
    """One FFN: GELU MLP = 2 matrices, SwiGLU = 3 (gate, up, down)."""
    d = spec.d_model
    if spec.ffn_type == "gelu":
        return 2 * d * hidden + (hidden + d if spec.mlp_bias else 0)
    return 3 * d * hidden + (2 * hidden + d if spec.mlp_bias else 0)


def _attention_params(spec: ModelSpec) -> int:
    d, H = spec.d_model, spec.n_heads
    if spec.is_mla:                                               # DeepSeek-V2 MLA
        qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        if spec.q_lora_rank:
            q = d * spec.q_lora_rank + spec.q_lora_rank + spec.q_lora_rank * H * qk   # a, norm, b
        else:
            q = d * H * qk
        kv_a = d * (spec.kv_lora_rank + spec.qk_rope_head_dim) + spec.kv_lora_rank  # + kv_a_layernorm
        kv_b = spec.kv_lora_rank * H * (spec.qk_nope_head_dim + spec.v_head_dim)
        return q + kv_a + kv_b + H * spec.v_head_dim * d
    q_out, kv_out = H * spec.hd, spec.kv_heads * spec.hd
    weights = d * q_out + 2 * d * kv_out + q_out * d
    return weights + (q_out + 2 * kv_out if spec.attn_bias or spec.qkv_bias else 0) + (d if spec.attn_bias else 0)


def attention_formula(spec: ModelSpec) -> tuple[str, str]:
    """One layer's attention parameters as a formula and with ``spec``'s values in it: the two sides of
    what :func:`count_params` adds up as attention (biases included; DeepSeek's query compression when it
    has one; q/k norms are counted with the norms).

    >>> attention_formula(PRESETS["GPT-2 (124M)"])
    ('d·H·hd + 2·d·n_kv·hd + H·hd·d + (H·hd + 2·n_kv·hd) + d', '768·12·64 + 2·768·12·64 + 12·64·768 + (12·64 + 2·12·64) + 768')
    """
    d, H = spec.d_model, spec.n_heads
    if spec.is_mla:
        nope, rope, v, r = spec.qk_nope_head_dim, spec.qk_rope_head_dim, spec.v_head_dim, spec.kv_lora_rank
        if spec.q_lora_rank:
            rq = spec.q_lora_rank
            q = ("d·r_q + r_q + r_q·H·(nope+rope)", f"{d}·{rq} + {rq} + {rq}·{H}·({nope}+{rope})")
        else:
            q = ("d·H·(nope+rope)", f"{d}·{H}·({nope}+{rope})")
        kv = ("d·(r_kv+rope) + r_kv + r_kv·H·(nope+v) + H·v·d",
              f"{d}·({r}+{rope}) + {r} + {r}·{H}·({nope}+{v}) + {H}·{v}·{d}")
        return f"{q[0]} + {kv[0]}", f"{q[1]} + {kv[1]}"
    hd, kv = spec.hd, spec.kv_heads
    terms = [("d·H·hd + 2·d·n_kv·hd + H·hd·d", f"{d}·{H}·{hd} + 2·{d}·{kv}·{hd} + {H}·{hd}·{d}")]
    if spec.attn_bias or spec.qkv_bias:
        terms.append(("(H·hd + 2·n_kv·hd)", f"({H}·{hd} + 2·{kv}·{hd})"))
    if spec.attn_bias:
        terms.append(("d", f"{d}"))
    return " + ".join(t[0] for t in terms), " + ".join(t[1] for t in terms)


def count_params(spec: ModelSpec) -> dict:
    """``{"parts": {name: count}, "total": int, "active": int}``.

    >>> count_params(PRESETS["GPT-2 (124M)"])["total"]
    124439808
    """
    L, d = spec.n_layers, spec.d_model
    moe_layers = L - spec.first_dense_layers if spec.is_moe else 0
    dense_layers = L - moe_layers
    expert = _ffn_params(spec, spec.expert_ffn)
    shared = _ffn_params(spec, spec.expert_ffn * spec.n_shared_experts) if spec.n_shared_experts else 0
    shared += d if spec.shared_expert_gate else 0
    router = d * spec.n_experts
    parts = {
        "embedding": spec.vocab_size * d + spec.learned_positions * d,
        "attention": L * _attention_params(spec),
        "ffn": dense_layers * _ffn_params(spec, spec.ffn),
        "experts": moe_layers * spec.n_experts * expert,
        "shared_experts": moe_layers * shared,
        "router": moe_layers * router,
        "norms": L * (4 if spec.sandwich_norm else 2) * _norm_params(spec, d) + _norm_params(spec, d)
                 + L * _qk_norm_params(spec),
        "lm_head": 0 if spec.tied_embeddings else spec.vocab_size * d,
    }
    total = sum(parts.values())
    active = total - parts["experts"] + moe_layers * spec.top_k * expert
    return {"parts": parts, "total": total, "active": active}


def rule_of_thumb(spec: ModelSpec) -> int:
    """12·L·d²: attention 4d² + a 4d GELU MLP 8d² per layer, nothing else.

    >>> rule_of_thumb(PRESETS["GPT-2 (124M)"])
    84934656
    """
    return 12 * spec.n_layers * spec.d_model**2


@dataclass(frozen=True)
class RuleCheck:
    """12·L·d² against the parameters it stands for, and the per-layer sizes that decide whether it holds."""

    rule: int                   # 12·L·d²
    non_embedding: int          # total - input embedding - LM head (Kaplan et al.'s N)
    off: float                  # (rule - non_embedding) / non_embedding
    off_total: float            # (rule - total) / total
    attention_d2: float         # attention parameters per layer / d²: 4 for MHA with H·hd = d
    ffn_d2: float               # FFN (all experts) parameters per layer / d²: 8 for a 4d GELU MLP or SwiGLU at 8/3·d
    embedding_share: float      # (input embedding + LM head) / total
    reasons: tuple[str, ...]    # why it fails: "gqa", "head_dim", "ffn", "moe", "vocab" (empty: it holds)

    @property
    def cancels(self) -> bool:
        """Its per-layer assumptions fail, yet it lands within 2 % of N: the errors cancel (Llama-3.1-405B:
        fewer K, V weights under GQA, a wider FFN, +1.05 %). A large vocabulary ("vocab") is about the total,
        not N.

        >>> RuleCheck(0, 1, 0.0105, 0.0, 3.0, 9.0, 0.0, ("gqa", "ffn")).cancels
        True
        """
        return bool(set(self.reasons) - {"vocab"}) and abs(self.off) < 0.02


def rule_check(spec: ModelSpec) -> RuleCheck:
    """Where 12·L·d² holds and why it fails, for ``spec``.

    It assumes attention 4·d² per layer and an FFN of 8·d² (a 4d GELU MLP: 2·d·4d, or a SwiGLU at
    8/3·d: 3·d·8d/3) and no embeddings. Llama-2-7B (MHA, SwiGLU at 11008 ≈ 8/3·4096) fits within 0.52%:

    >>> c = rule_check(PRESETS["Llama-2-7B"])
    >>> round(100 * c.off, 2), c.attention_d2, round(c.ffn_d2, 2), c.reasons
    (-0.52, 4.0, 8.06, ())
    >>> rule_check(PRESETS["Llama-3-8B"]).reasons
    ('gqa', 'ffn')
    >>> rule_check(with_changes(PRESETS["Llama-2-7B"], n_heads=48, n_kv_heads=48, head_dim=96)).reasons  # MHA, 4608 ≠ d
    ('head_dim',)
    """
    counts = count_params(spec)
    parts, L, d2 = counts["parts"], spec.n_layers, spec.d_model**2
    embeddings = parts["embedding"] + parts["lm_head"]
    non_embedding = counts["total"] - embeddings
    rule = rule_of_thumb(spec)
    attention_d2 = parts["attention"] / L / d2
    ffn_d2 = (parts["ffn"] + parts["experts"] + parts["shared_experts"] + parts["router"]) / L / d2
    share = embeddings / counts["total"]
    attention_off = abs(attention_d2 - 4) > 0.04
    reasons = tuple(name for name, fails in (
        ("gqa", attention_off and (spec.is_mla or spec.kv_heads < spec.n_heads)),   # K, V shared or compressed
        ("head_dim", attention_off and not spec.is_mla and spec.n_heads * spec.hd != spec.d_model),  # Gemma-7B
        ("ffn", not spec.is_moe and abs(ffn_d2 - 8) > 0.2),   # an FFN not sized 4d (GELU) or 8/3·d (SwiGLU)
        ("moe", spec.is_moe),                             # every expert is an FFN
        ("vocab", share > 0.2),                           # small models: the vocabulary dominates
    ) if fails)
    return RuleCheck(rule, non_embedding, (rule - non_embedding) / non_embedding,
                     (rule - counts["total"]) / counts["total"], attention_d2, ffn_d2, share, reasons)


# --------------------------------------------------------------------------- published presets
# Every value from the model's config.json on the Hugging Face Hub (names in comments).
PRESETS: dict[str, ModelSpec] = {
    "GPT-2 (124M)": ModelSpec(  # openai-community/gpt2
        "GPT-2 (124M)", vocab_size=50257, d_model=768, n_layers=12, n_heads=12, ffn_dim=3072,
        ffn_type="gelu", tied_embeddings=True, learned_positions=1024, norm="layernorm",
        attn_bias=True, mlp_bias=True),
    "Llama-2-7B": ModelSpec(  # meta-llama/Llama-2-7b-hf
        "Llama-2-7B", vocab_size=32000, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=32,
        ffn_dim=11008),
    "Llama-2-70B": ModelSpec(  # meta-llama/Llama-2-70b-hf
        "Llama-2-70B", vocab_size=32000, d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8,
        ffn_dim=28672),
    "Llama-3-8B": ModelSpec(  # meta-llama/Meta-Llama-3-8B
        "Llama-3-8B", vocab_size=128256, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8,
        ffn_dim=14336),
    "Mistral-7B v0.1": ModelSpec(  # mistralai/Mistral-7B-v0.1
        "Mistral-7B v0.1", vocab_size=32000, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8,
        ffn_dim=14336, sliding_window=4096, sliding_layers=32),
    "Gemma-3-12B": ModelSpec(  # google/gemma-3-12b-it, its text_config (the vision tower is not counted)
        "Gemma-3-12B", vocab_size=262208, d_model=3840, n_layers=48, n_heads=16, n_kv_heads=8, head_dim=256,
        ffn_dim=15360, tied_embeddings=True, qk_norm=True, sandwich_norm=True, sliding_window=1024,
        sliding_layers=40),
    "Mixtral-8x7B": ModelSpec(  # mistralai/Mixtral-8x7B-v0.1
        "Mixtral-8x7B", vocab_size=32000, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8,
        ffn_dim=14336, n_experts=8, top_k=2),
    "DeepSeek-V2-Lite": ModelSpec(  # deepseek-ai/DeepSeek-V2-Lite
        "DeepSeek-V2-Lite", vocab_size=102400, d_model=2048, n_layers=27, n_heads=16, n_kv_heads=16,
        ffn_dim=10944, n_experts=64, top_k=6, n_shared_experts=2, expert_dim=1408, first_dense_layers=1,
        kv_lora_rank=512, q_lora_rank=0, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128),
    "DeepSeek-V2": ModelSpec(  # deepseek-ai/DeepSeek-V2
        "DeepSeek-V2", vocab_size=102400, d_model=5120, n_layers=60, n_heads=128, n_kv_heads=128,
        ffn_dim=12288, n_experts=160, top_k=6, n_shared_experts=2, expert_dim=1536, first_dense_layers=1,
        kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128),
}


# --------------------------------------------------------------------------- KV cache
def bytes_per_element(dtype: str | float | int) -> float:
    """Bytes of one element: a dtype name (fp32, fp16, bf16, fp8, int8, int4) or a number of bytes."""
    if isinstance(dtype, str):
        if dtype in DTYPE_BYTES:
            return DTYPE_BYTES[dtype]
    elif _is_number(dtype) and 0 < dtype <= 16:
        return float(dtype)
    raise InputError("calc_err_dtype", value=shown(dtype), choices=", ".join(DTYPE_BYTES))


def _check_run(seq_len: int, batch: int) -> None:
    CALC_CONTEXT.whole("calc_seq_len", seq_len)
    CALC_BATCH.whole("calc_batch", batch)


def kv_elements(n_layers: int, *, n_kv_heads: int = 0, head_dim: int = 0, v_head_dim: int | None = None,
                kv_latent_dim: int = 0, rope_dim: int = 0) -> int:
    """Numbers a decoder caches per token, all layers: the app's one KV-cache formula.

    MHA/GQA/MQA: ``L·n_kv·(head_dim + v_head_dim)`` (= ``2·L·n_kv·head_dim``: a key and a value per KV
    head; MHA has n_kv = n_heads, MQA 1). MLA (DeepSeek-V2, ``kv_latent_dim > 0``): ``L·(latent + rope)``,
    one compressed latent and one RoPE key shared by all heads, no factor 2.

    >>> kv_elements(32, n_kv_heads=32, head_dim=128)     # Llama-2-7B (MHA): 2·32·32·128
    262144
    >>> kv_elements(32, n_kv_heads=8, head_dim=128)      # Llama-3-8B (GQA, 8 KV heads): 2·32·8·128
    65536
    >>> kv_elements(60, kv_latent_dim=512, rope_dim=64)  # DeepSeek-V2 (MLA): 60·(512 + 64)
    34560
    """
    if kv_latent_dim:
        return n_layers * (kv_latent_dim + rope_dim)                   # latent c + shared RoPE key
    v_head_dim = head_dim if v_head_dim is None else v_head_dim
    return n_layers * n_kv_heads * (head_dim + v_head_dim)             # K and V of every KV head


def kv_elements_per_token(spec: ModelSpec) -> int:
    """:func:`kv_elements` of ``spec``.

    >>> kv_elements_per_token(PRESETS["Llama-3-8B"])
    65536
    """
    return kv_elements(spec.n_layers, n_kv_heads=spec.kv_heads, head_dim=spec.hd, kv_latent_dim=spec.kv_lora_rank,
                       rope_dim=spec.qk_rope_head_dim)


def kv_elements_per_position(spec: ModelSpec) -> int:
    """Numbers one layer caches per token position (every layer caches alike): :func:`kv_elements` over L.

    >>> kv_elements_per_position(PRESETS["Llama-3-8B"])          # K and V · 8 KV heads · 128
    2048
    """
    return kv_elements_per_token(spec) // spec.n_layers


def cached_positions(spec: ModelSpec, seq_len: int) -> int:
    """Token positions the cache holds at ``seq_len``, summed over the layers: ``seq_len`` in a layer that
    attends to everything, ``min(seq_len, W)`` in a sliding-window layer (a rolling buffer of the last W:
    the keys the next query attends to; Hugging Face keeps W − 1 between steps and adds the step's own).

    >>> cached_positions(PRESETS["Llama-3-8B"], 32768), cached_positions(PRESETS["Mistral-7B v0.1"], 32768)
    (1048576, 131072)
    """
    return spec.full_layers * seq_len + spec.sliding_layers * min(seq_len, spec.sliding_window)


def kv_cache_bytes(spec: ModelSpec, seq_len: int, batch: int = 1, dtype: str | float = "fp16") -> int:
    """Bytes of the KV cache for ``batch`` sequences of ``seq_len`` tokens: each layer's numbers per
    position (:func:`kv_elements`) times the positions it holds (:func:`cached_positions`).

    >>> kv_cache_bytes(PRESETS["Llama-2-7B"], 4096, 1, "fp16") / GiB
    2.0
    >>> kv_cache_bytes(PRESETS["Mistral-7B v0.1"], 32768, 1, "bf16") / GiB   # 32 layers keep 4,096 each
    0.5
    """
    _check_run(seq_len, batch)
    return math.ceil(kv_elements_per_position(spec) * cached_positions(spec, seq_len) * batch
                     * bytes_per_element(dtype))


# --------------------------------------------------------------------------- FLOPs
def flops_per_token(spec: ModelSpec, seq_len: int) -> dict:
    """Forward FLOPs of one token at context ``seq_len`` (a multiply-add = 2 FLOPs).

    ``matmul`` = 2 x (active parameters - input embedding), the embedding being a lookup;
    ``attention`` = the scores QKᵀ and the weighted sum AV against the keys each layer attends to: ``seq_len``,
    or ``min(seq_len, W)`` in a sliding-window layer (:func:`cached_positions`, summed over the layers).
    Training costs ~3x the forward (backward = 2x): 6·N per token.
    """
    _check_run(seq_len, 1)
    counts = count_params(spec)
    head = spec.vocab_size * spec.d_model if spec.tied_embeddings else 0    # the tied matrix is used twice
    matmul = 2 * (counts["active"] - counts["parts"]["embedding"] + head)
    if spec.is_mla:
        qk_dim, v_dim = spec.qk_nope_head_dim + spec.qk_rope_head_dim, spec.v_head_dim
    else:
        qk_dim = v_dim = spec.hd
    attention = 2 * cached_positions(spec, seq_len) * spec.n_heads * (qk_dim + v_dim)
    forward = matmul + attention
    return {"matmul": matmul, "attention": attention, "forward": forward, "train": 3 * forward}


@dataclass(frozen=True)
class ComputeConventions:
    """Two estimates of the training FLOPs per token, and the N each one uses."""

    six_n: int                  # 6·N, N = active parameters, embeddings in (both matrices)
    three_forward: int          # 3 × (2·N_matmul + attention)
    n_all: int                  # the N of 6·N
    n_matmul: int               # the N of the forward: without the input embedding (a lookup), LM head in
    attention: int              # forward attention FLOPs per token at this context (not in 6·N)
    ratio: float                # three_forward / six_n


def compute_conventions(spec: ModelSpec, seq_len: int) -> ComputeConventions:
    """6·N·D against 3 × the forward, for ``spec`` at context ``seq_len``.

    Llama-3-8B at 4K: the forward leaves out the 525M-parameter input embedding but adds attention
    (2·L·T·H·(d_qk + d_v) = 2.1 GFLOP per token), so 3 × forward is ~7% above 6·N:

    >>> c = compute_conventions(PRESETS["Llama-3-8B"], 4096)
    >>> c.n_all - c.n_matmul, c.attention, round(c.ratio, 3)
    (525336576, 2147483648, 1.068)
    """
    f = flops_per_token(spec, seq_len)
    n_all = count_params(spec)["active"]
    return ComputeConventions(6 * n_all, f["train"], n_all, f["matmul"] // 2, f["attention"], f["train"] / (6 * n_all))


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def training_flops_check(tokens: float) -> None:
    CALC_TRAIN_TOKENS.number("calc_train_tokens", tokens)


def training_flops(spec: ModelSpec, tokens: float) -> float:
    """6·N·D: the classic estimate of a training run on ``tokens`` tokens (N = active parameters)."""
    training_flops_check(tokens)
    return 6.0 * count_params(spec)["active"] * tokens


# --------------------------------------------------------------------------- memory
OPTIMIZER_RECIPES = {
    # name: bytes per parameter for (weights, gradients, master weights, optimizer states); the sources
    # are in locales/calculator.py ("calc_recipe_<name>_source").
    "mixed_bf16": (2, 2, 4, 8),        # ZeRO (Rajbhandari et al. 2020, §3.1): 2 + 2 + K=12 -> 16
    "mixed_fp32_grads": (2, 4, 4, 8),  # Megatron-LM distributed optimizer: bf16 params, fp32 grads -> 18
    "fp32": (4, 4, 0, 8),              # plain fp32 AdamW: no master copy (the weights are fp32) -> 16
    "adam_8bit": (2, 2, 4, 2),         # 8-bit Adam (Dettmers et al. 2022): m, v one byte each -> 10
}
RECOMPUTE = ("none", "selective", "full")
ATTENTION_KERNELS = ("eager", "flash")


@dataclass(frozen=True)
class Activations:
    """Activation bytes of one training step, and the per-layer factor of s·b·h they come from."""

    bytes: int
    factor: float               # bytes per token per layer / h: 34 + 5·a·s/h, 34 or 2
    case: str                   # which: "none" (scores stored), "flash", "selective", "full"


def activations(spec: ModelSpec, seq_len: int, batch: int, recompute: str = "none",
                attention: str = "eager") -> Activations:
    """Korthikanti et al. (2022), eq. 1-2: 16-bit activations of a GPT-3 block (MHA, a 4h GELU MLP,
    LayerNorm, dropout), no tensor/sequence parallelism, per model: L·s·b·h·factor bytes.

    none: factor 34 + 5·a·s/h, 5·a·s/h being the a×s×s attention scores, softmax and its dropout;
    FlashAttention never stores them (it recomputes them blockwise in the backward), so with it, and
    with selective recomputation, 34; full (only each layer's input kept): 2.

    >>> activations(PRESETS["Llama-2-7B"], 2048, 1, "none", "eager").factor     # 34 + 5·32·2048/4096
    114.0
    >>> activations(PRESETS["Llama-2-7B"], 2048, 1, "none", "flash").bytes == 32 * 2048 * 4096 * 34
    True
    """
    _check_run(seq_len, batch)
    choice("calc_recompute", recompute, RECOMPUTE)
    choice("calc_attention", attention, ATTENTION_KERNELS)
    s, b, h, a, L = seq_len, batch, spec.d_model, spec.n_heads, spec.n_layers
    if recompute == "full":
        factor, case = 2, "full"
    elif recompute == "selective":
        factor, case = 34, "selective"
    elif attention == "flash":
        factor, case = 34, "flash"
    else:
        factor, case = 34 + 5 * a * s / h, "none"
    return Activations(math.ceil(L * s * b * h * factor), factor, case)


def activation_bytes(spec: ModelSpec, seq_len: int, batch: int, recompute: str = "none",
                     attention: str = "eager") -> int:
    """Bytes of :func:`activations`."""
    return activations(spec, seq_len, batch, recompute, attention).bytes


def training_memory(spec: ModelSpec, *, seq_len: int = 4096, batch: int = 1, recipe: str = "mixed_bf16",
                    recompute: str = "none", attention: str = "eager") -> dict:
    """Bytes to train with Adam(W) under ``recipe``: weights, gradients, master, optimizer, activations."""
    choice("calc_recipe", recipe, OPTIMIZER_RECIPES)
    n = count_params(spec)["total"]
    w, g, m, o = OPTIMIZER_RECIPES[recipe]
    parts = {"weights": w * n, "gradients": g * n, "master": m * n, "optimizer": o * n,
             "activations": activation_bytes(spec, seq_len, batch, recompute, attention)}
    return {"parts": parts, "total": sum(parts.values()), "bytes_per_param": w + g + m + o}


def inference_memory(spec: ModelSpec, *, seq_len: int, batch: int, weight_dtype: str = "bf16",
                     kv_dtype: str = "bf16") -> dict:
    """Bytes to serve: the weights in ``weight_dtype`` plus the KV cache in ``kv_dtype``."""
    weights = math.ceil(count_params(spec)["total"] * bytes_per_element(weight_dtype))
    kv = kv_cache_bytes(spec, seq_len, batch, kv_dtype)
    return {"parts": {"weights": weights, "kv_cache": kv}, "total": weights + kv}


def gpus_needed(total_bytes: float, gpu_gib: float, usable: float = 0.9) -> int:
    """GPUs of ``gpu_gib`` GiB to hold ``total_bytes``, using ``usable`` of each (the rest: CUDA, fragments).

    >>> gpus_needed(100 * GiB, 80)
    2
    """
    number("calc_gpu_gib", gpu_gib, 0, 10_000, above=True)
    return max(1, math.ceil(total_bytes / (gpu_gib * GiB * usable)))


def usable_gib(n_gpus: int, gpu_gib: float, usable: float = 0.9) -> float:
    """GiB that ``n_gpus`` cards of ``gpu_gib`` hold at the ``usable`` fraction (the line drawn over a bar).

    >>> usable_gib(2, 80)
    144.0
    """
    return n_gpus * gpu_gib * usable


def cache_outgrows_weights(spec: ModelSpec, batch: int = 1, dtype: str = "bf16",
                           weight_dtype: str | None = None) -> int | None:
    """The context length at which the KV cache in ``dtype`` holds as many bytes as the weights in
    ``weight_dtype`` (None: ``dtype`` too); None if it never does (every layer's window fills first).
    Llama-3-8B's bf16 cache outgrows its bf16 weights at 122,533 tokens, its int4 weights four times
    sooner; Mistral-7B v0.1's stops growing at 4,096 tokens, 0.5 GiB:

    >>> cache_outgrows_weights(PRESETS["Llama-3-8B"]), cache_outgrows_weights(PRESETS["Llama-3-8B"], weight_dtype="int4")
    (122533, 30634)
    >>> cache_outgrows_weights(PRESETS["Mistral-7B v0.1"]) is None
    True
    """
    weights = count_params(spec)["total"] * bytes_per_element(weight_dtype or dtype)
    positions = weights / (kv_elements_per_position(spec) * batch * bytes_per_element(dtype))
    L, local, W = spec.n_layers, spec.sliding_layers, spec.sliding_window
    if not local or positions <= L * W:                       # reached before any window fills
        return math.ceil(positions / L)
    if local == L:
        return None
    return math.ceil((positions - local * W) / (L - local))


def spec_fields() -> list[str]:
    """The editable fields of a spec, in order (the UI builds one input per field)."""
    return [f.name for f in fields(ModelSpec) if f.name != "name"]


def fields_of(spec: ModelSpec) -> dict:
    """The editable fields of ``spec`` as the UI shows them: 0 for a ``head_dim`` derived from d_model,
    ``n_kv_heads`` spelled out.

    >>> fields_of(PRESETS["Llama-3-8B"])["n_kv_heads"], fields_of(PRESETS["Llama-3-8B"])["head_dim"]
    (8, 0)
    """
    values = asdict(spec)
    values["head_dim"] = values["head_dim"] or 0
    values["n_kv_heads"] = values["n_kv_heads"] or values["n_heads"]
    return {name: values[name] for name in spec_fields()}


UNNAMED = {"custom": "calc_custom_name", "pasted config": "calc_pasted_name"}   # -> the term a message says


def said_name(name: str) -> str:
    """A model's name as a message says it: a preset's own; "this custom model" or "the pasted config",
    translated, for a spec the learner edited or pasted."""
    return Term(UNNAMED[name]) if name in UNNAMED else name


def spec_from_fields(values: dict, name: str | None = None) -> ModelSpec:
    """A :class:`ModelSpec` from the UI's fields (the inverse of :func:`fields_of`), each checked; named
    ``name``, or after the preset whose fields these are ("custom" if none: a message names the model).

    >>> spec_from_fields(fields_of(PRESETS["GPT-2 (124M)"])).name
    'GPT-2 (124M)'
    """
    kwargs = {}
    for field in spec_fields():
        value = values[field]
        if field in FIELD_CHOICES:
            kwargs[field] = choice(field, value, FIELD_CHOICES[field])
        elif field in BOOL_FIELDS:
            kwargs[field] = flag(field, value)
        else:
            kwargs[field] = whole(field, value, *FIELD_RANGES[field])
    kwargs["head_dim"] = kwargs["head_dim"] or None
    kwargs["n_kv_heads"] = kwargs["n_kv_heads"] or None
    spec = ModelSpec(name=name or "custom", **kwargs)
    if name is None:                                   # compared as the UI shows them: n_kv_heads 0 = n_heads
        name = next((preset for preset, p in PRESETS.items() if fields_of(p) == fields_of(spec)), "custom")
    return replace(spec, name=name)


def with_changes(spec: ModelSpec, **changes) -> ModelSpec:
    """A validated copy of ``spec`` with some fields changed."""
    return replace(spec, **changes)


@dataclass(frozen=True)
class RunSettings:
    """How the model is run: the context, batch, dtypes, training budget and hardware."""

    seq_len: int = 4096
    batch: int = 1
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    train_tokens: float = 1e12
    recipe: str = "mixed_bf16"
    recompute: str = "none"
    attention: str = "flash"
    gpu_gib: float = 80.0
    usable: float = 0.9

    def __post_init__(self):
        _check_run(self.seq_len, self.batch)
        bytes_per_element(self.weight_dtype)
        bytes_per_element(self.kv_dtype)
        training_flops_check(self.train_tokens)
        choice("calc_recipe", self.recipe, OPTIMIZER_RECIPES)
        choice("calc_recompute", self.recompute, RECOMPUTE)
        choice("calc_attention", self.attention, ATTENTION_KERNELS)
        number("calc_gpu_gib", self.gpu_gib, 1, 10_000)
        number("calc_usable", self.usable, 0, 1, above=True)


def run_settings(*, seq_len, batch, weight_dtype, kv_dtype, train_tokens, recipe, recompute, attention,
                 gpu_gib) -> RunSettings:
    """:class:`RunSettings` from the UI's values, each checked (a slider's ``2.0`` becomes ``2``)."""
    return RunSettings(seq_len=CALC_CONTEXT.whole("calc_seq_len", seq_len),
                       batch=CALC_BATCH.whole("calc_batch", batch),
                       weight_dtype=choice("calc_weight_dtype", weight_dtype, DTYPE_BYTES),
                       kv_dtype=choice("calc_kv_dtype", kv_dtype, DTYPE_BYTES),
                       train_tokens=CALC_TRAIN_TOKENS.number("calc_train_tokens", train_tokens),
                       recipe=choice("calc_recipe", recipe, OPTIMIZER_RECIPES),
                       recompute=choice("calc_recompute", recompute, RECOMPUTE),
                       attention=choice("calc_attention", attention, ATTENTION_KERNELS),
                       gpu_gib=number("calc_gpu_gib", gpu_gib, 1, 10_000))


@dataclass(frozen=True)
class Analysis:
    """Everything the calculator tab shows for one spec and one run."""

    spec: ModelSpec
    run: RunSettings
    params: dict
    active_parts: dict
    rule: RuleCheck
    conventions: ComputeConventions
    activations: Activations
    flops: dict
    train_flops: float
    inference: dict
    training: dict
    gpus_inference: int
    gpus_training: int
    crossover_tokens: int | None     # None: every layer has a window, and the cache stops below the weights
    gpu_lines: list[tuple[int, float]]   # (GPUs, GiB they hold at the usable fraction): inference, training
    attention_formula: tuple[str, str]   # one layer's attention parameters: the formula, with the values in it


def fit_context(learned_positions: int, seq_len: int) -> int:
    """The longest context up to ``seq_len`` that a model with ``learned_positions`` can read: a learned
    table of P positions has no row for token P + 1 (0: rotary or no positions, any context).

    >>> fit_context(1024, 4096), fit_context(0, 4096), fit_context(1024, 512)
    (1024, 4096, 512)
    """
    return min(seq_len, learned_positions) if learned_positions else seq_len


def analyze(spec: ModelSpec, run: RunSettings) -> Analysis:
    """Count, cost and size ``spec`` under ``run``; a context past ``spec``'s learned positions is refused.

    >>> a = analyze(PRESETS["Mixtral-8x7B"], RunSettings())
    >>> a.params["active"], a.active_parts["experts"]
    (12879925248, 11274289152)
    """
    if fit_context(spec.learned_positions, run.seq_len) < run.seq_len:
        raise InputError("calc_err_past_positions", name=said_name(spec.name), t=run.seq_len,
                         p=spec.learned_positions)
    params = count_params(spec)
    moe_layers = spec.n_layers - spec.first_dense_layers if spec.is_moe else 0
    active_parts = dict(params["parts"], experts=moe_layers * spec.top_k * _ffn_params(spec, spec.expert_ffn))
    inference = inference_memory(spec, seq_len=run.seq_len, batch=run.batch, weight_dtype=run.weight_dtype,
                                 kv_dtype=run.kv_dtype)
    training = training_memory(spec, seq_len=run.seq_len, batch=run.batch, recipe=run.recipe,
                               recompute=run.recompute, attention=run.attention)
    n_inference = gpus_needed(inference["total"], run.gpu_gib, run.usable)
    n_training = gpus_needed(training["total"], run.gpu_gib, run.usable)
    return Analysis(
        spec, run, params, active_parts, rule_check(spec), compute_conventions(spec, run.seq_len),
        activations(spec, run.seq_len, run.batch, run.recompute, run.attention),
        flops_per_token(spec, run.seq_len),
        training_flops(spec, run.train_tokens), inference, training,
        n_inference, n_training, cache_outgrows_weights(spec, run.batch, run.kv_dtype, run.weight_dtype),
        [(n, usable_gib(n, run.gpu_gib, run.usable)) for n in (n_inference, n_training)], attention_formula(spec))


def kv_curve(spec: ModelSpec, batch: int, dtype: str, weight_dtype: str | None = None, *,
             points: int = 40) -> tuple[list[int], list[float], float]:
    """Context lengths (log-spaced, 128 … past the crossover), the cache in ``dtype`` in GiB at each, and
    the weights in ``weight_dtype`` (None: ``dtype``) in GiB."""
    crossover = cache_outgrows_weights(spec, batch, dtype, weight_dtype)
    top = min(CALC_MAX_CONTEXT, max(2**20, 4 * (crossover or 0)))
    contexts = sorted({round(128 * (top / 128) ** (i / (points - 1))) for i in range(points)})
    kv = [kv_cache_bytes(spec, t, batch, dtype) / GiB for t in contexts]
    return contexts, kv, count_params(spec)["total"] * bytes_per_element(weight_dtype or dtype) / GiB
