"""KV-cache bytes against context for four cache layouts of one model: the standard decoder, sliding-window
attention, YOCO and MLA.

- **standard**: every layer caches K and V of every token, ``L·e·T`` numbers, ``e`` = one layer's
  :func:`models.calculator.kv_elements` (``2·n_kv·head_dim``).
- **sliding window**: each layer keeps the last W tokens only, ``L·e·min(T, W)``; W is the model's own
  window where it has one, Mistral-7B v0.1's 4,096 otherwise.
- **YOCO** (You Only Cache Once, Sun et al. 2024, §2): the first L/2 layers (the self-decoder) use
  efficient self-attention, here sliding-window attention, ``(L/2)·e·min(T, W)``; the self-decoder's output
  is projected once into one global K, V cache, ``e·T``, that all L/2 cross-decoder layers attend to.
  Total ``(L/2)·e·min(T, W) + e·T``: at long context about 1/L of the standard cache.
- **MLA** (DeepSeek-V2): one latent and one shared RoPE key per layer, ``L·(r_kv + rope)·T``; the model's
  own sizes when it has MLA, DeepSeek-V2's (512 + 64) otherwise.

Not handled: YOCO's gated-retention self-decoder (its cache is O(1) in T: smaller still), paged or
quantized caches, and whether a model trained with one layout works with another.
"""
from __future__ import annotations

from dataclasses import dataclass

from models.calculator import PRESETS, ModelSpec, bytes_per_element, kv_elements
from models.limits import CALC_MAX_CONTEXT

LAYOUTS = ("standard", "sliding", "yoco", "mla")
MISTRAL_WINDOW = PRESETS["Mistral-7B v0.1"].sliding_window   # 4,096
DEEPSEEK_V2_MLA = (512, 64)          # kv_lora_rank, qk_rope_head_dim of DeepSeek-V2
RATIO_AT = (131_072, 1_048_576)      # 128K and 1M tokens


@dataclass(frozen=True)
class Layouts:
    """Cache bytes of each layout at each context, and the sizes the formulas use."""

    contexts: list[int]
    bytes: dict[str, list[int]]      # layout -> bytes at each context
    n_layers: int
    self_layers: int                 # YOCO's self-decoder layers, L // 2
    per_layer: int                   # e: numbers one standard layer caches per token
    mla_per_layer: int               # r_kv + rope
    mla_own: bool                    # the model has MLA (else DeepSeek-V2's sizes)
    window: int
    bytes_per_element: float
    batch: int
    ratios: dict[int, float]         # context -> YOCO / standard


def layout_elements(layout: str, T: int, *, n_layers: int, per_layer: int, mla_per_layer: int,
                    window: int = MISTRAL_WINDOW) -> int:
    """Numbers cached for ``T`` tokens (one sequence) under ``layout``.

    Llama-3-8B (32 layers, e = 2·8·128 = 2048) at 128K tokens:

    >>> [layout_elements(k, 131072, n_layers=32, per_layer=2048, mla_per_layer=576) for k in LAYOUTS]
    [8589934592, 268435456, 402653184, 2415919104]
    """
    if layout == "standard":
        return n_layers * per_layer * T
    if layout == "sliding":
        return n_layers * per_layer * min(T, window)
    if layout == "yoco":
        return (n_layers // 2) * per_layer * min(T, window) + per_layer * T   # self-decoder + one global KV
    if layout == "mla":
        return n_layers * mla_per_layer * T
    raise ValueError(f"layout {layout!r} must be one of {', '.join(LAYOUTS)}")


def kv_layouts(spec: ModelSpec, *, dtype: str = "bf16", batch: int = 1, window: int | None = None,
               points: int = 40) -> Layouts:
    """The four layouts of ``spec`` from 1K to 1M tokens (log-spaced, 128K and 1M included); the sliding
    window ``window``, by default the model's own (Gemma-3-12B: 1,024) or, for a model without one, Mistral's.

    >>> from models.calculator import PRESETS
    >>> r = kv_layouts(PRESETS["Llama-3-8B"]).ratios
    >>> r[131072], r[1048576]
    (0.046875, 0.033203125)
    """
    if spec.is_mla:                  # its standard counterpart: every head's key (nope + rope) and value
        per_layer = kv_elements(1, n_kv_heads=spec.n_heads, head_dim=spec.qk_nope_head_dim + spec.qk_rope_head_dim,
                                v_head_dim=spec.v_head_dim)
        mla = kv_elements(1, kv_latent_dim=spec.kv_lora_rank, rope_dim=spec.qk_rope_head_dim)
    else:
        per_layer = kv_elements(1, n_kv_heads=spec.kv_heads, head_dim=spec.hd)
        mla = kv_elements(1, kv_latent_dim=DEEPSEEK_V2_MLA[0], rope_dim=DEEPSEEK_V2_MLA[1])
    top = min(CALC_MAX_CONTEXT, RATIO_AT[-1])
    contexts = sorted({round(1024 * (top / 1024) ** (i / (points - 1))) for i in range(points)} | set(RATIO_AT))
    bpe = bytes_per_element(dtype)
    window = window or spec.sliding_window or MISTRAL_WINDOW
    sizes = dict(n_layers=spec.n_layers, per_layer=per_layer, mla_per_layer=mla, window=window)
    nbytes = {k: [round(layout_elements(k, T, **sizes) * batch * bpe) for T in contexts] for k in LAYOUTS}
    ratios = {T: layout_elements("yoco", T, **sizes) / layout_elements("standard", T, **sizes) for T in RATIO_AT}
    return Layouts(contexts, nbytes, spec.n_layers, spec.n_layers // 2, per_layer, mla, spec.is_mla, window, bpe,
                   batch, ratios)

