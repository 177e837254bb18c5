"""The KV cache of a decoder: what each layer keeps of every earlier token, and how big it is.

During generation token ``t`` attends to the keys and values of tokens ``0 … t``. They do not
change once computed (a causal model never lets an old token see a new one), so each layer keeps
them and a decoding step computes only the new token's. Queries are not cached: only the newest
token's query is ever needed.

What is cached per layer and token:

- MHA / GQA / MQA: a key and a value per *KV head*: ``2 · n_kv_heads · head_dim`` numbers
  (Shazeer 2019, MQA: one KV head; Ainslie et al. 2023, GQA: ``n_kv_heads`` groups).
- MLA (DeepSeek-V2, §2.1.2–2.1.3): the joint latent ``c_t`` of width ``kv_latent_dim`` plus the
  decoupled RoPE key ``k^R_t`` of width ``rope_dim`` shared by all heads: ``kv_latent_dim + rope_dim``
  numbers, no factor 2 (keys and values are both decompressed from the one latent).

**Preallocated, not appended.** :class:`KVCache` allocates its buffers once, for the whole
generation (prompt + new tokens), and each step writes its slice in place. Appending with
``torch.cat`` would copy the entire cache at every step (O(T²) memory traffic over a generation,
and a fresh allocation per layer per step); preallocation is one write of the new token per layer
and keeps the shapes static, which is what CUDA graphs and ``torch.compile`` need (the choice of
Hugging Face's ``StaticCache`` and of vLLM's block tables). The cost: the capacity must be known
up front, and the unfilled part is reserved memory. :meth:`KVCache.nbytes` counts the filled part
(what the formula counts), :meth:`KVCache.capacity_nbytes` the reservation.

**The mask of a cached step is aligned bottom-right.** ``T`` new queries are the *last* ``T`` of
``S`` positions, so query ``i`` may see keys ``0 … S − T + i`` (:func:`cached_causal_mask`).
``F.scaled_dot_product_attention(is_causal=True)`` aligns top-left when ``T != S``: query 0 would
see only key 0, the classic bug of a cached prefill in chunks.

At scale (:func:`scale_up`) the sizes of published models come from the Calculator's backend
(``models.calculator``): its presets, ``kv_cache_bytes``, ``count_params``, ``cache_outgrows_weights``; a
sliding-window layer's rolling buffer is counted there (min(T, W) positions).

Not handled by :class:`KVCache` (the tiny GPT's): paged or quantised caches, evicting tokens past a sliding
window, batches of unequal lengths.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from models.checks import InputError, choice
from models.calculator import (PRESETS, ModelSpec, bytes_per_element, cache_outgrows_weights, count_params,
                               kv_elements_per_token, with_changes)
from models.calculator import kv_cache_bytes as calc_kv_bytes

if TYPE_CHECKING:                                     # the config lives beside the model
    from models.transformer.config import TransformerConfig


def _transformer_config(config) -> "TransformerConfig":
    """A :class:`~models.transformer.TransformerConfig`, also from the KV tab's ``GPTConfig``."""
    return config.transformer() if hasattr(config, "transformer") else config


def kv_cache_bytes(n_layers: int, n_kv_heads: int, head_dim: int, seq_len: int, batch: int = 1,
                   bytes_per_elem: float = 2) -> int:
    """Bytes of an MHA/GQA/MQA cache: ``2 · L · n_kv · head_dim · T · batch · bytes`` (2 = K and V).

    Llama-2-7B (32 layers, 32 KV heads of 128) at 4096 tokens in fp16 is 2 GiB:

    >>> kv_cache_bytes(32, 32, 128, 4096) / 2**30
    2.0
    """
    from models.calculator import kv_elements                         # the app's one KV-cache formula
    return int(kv_elements(n_layers, n_kv_heads=n_kv_heads, head_dim=head_dim) * seq_len * batch * bytes_per_elem)


def mla_cache_bytes(n_layers: int, kv_latent_dim: int, rope_dim: int, seq_len: int, batch: int = 1,
                    bytes_per_elem: float = 2) -> int:
    """Bytes of an MLA cache: ``L · (latent + rope key) · T · batch · bytes`` (no factor 2).

    DeepSeek-V2 (60 layers, latent 512, RoPE key 64) at 4096 tokens in bf16:

    >>> mla_cache_bytes(60, 512, 64, 4096) / 2**20
    270.0
    """
    from models.calculator import kv_elements
    return int(kv_elements(n_layers, kv_latent_dim=kv_latent_dim, rope_dim=rope_dim) * seq_len * batch * bytes_per_elem)


def cached_causal_mask(n_queries: int, n_keys: int, device: torch.device | str | None = None) -> torch.Tensor:
    """``[T, S]`` boolean mask (True = may attend) for the last ``T`` of ``S`` positions: bottom-right.

    Two new tokens after three cached ones: query 0 is position 3, so it sees keys 0…3.

    >>> cached_causal_mask(2, 5).int().tolist()
    [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    """
    if not 1 <= n_queries <= n_keys:
        raise InputError("kv_err_queries", queries=n_queries, keys=n_keys)
    ones = torch.ones(n_queries, n_keys, dtype=torch.bool, device=device)
    return ones.tril(diagonal=n_keys - n_queries)                    # (T, S)


def cache_rows(config) -> list[tuple[str, int]]:
    """What one layer caches per token, as ``(name, numbers)`` rows in picture order.

    >>> from models.transformer import TransformerConfig
    >>> cache_rows(TransformerConfig(10, 1, 16, 4, 8, n_kv_heads=2))
    [('K0', 4), ('K1', 4), ('V0', 4), ('V1', 4)]
    >>> cache_rows(TransformerConfig(10, 1, 16, 4, 8, attention="mla", kv_latent_dim=6, rope_dim=2))
    [('latent c', 6), ('RoPE key', 2)]
    """
    config = _transformer_config(config)
    if config.attention == "mla":
        return [("latent c", config.kv_latent_dim), ("RoPE key", config.rope_dim)]
    return ([(f"K{h}", config.head_dim) for h in range(config.n_kv_heads)]
            + [(f"V{h}", config.v_head_dim) for h in range(config.n_kv_heads)])


@dataclass(frozen=True)
class LayerCache:
    """What one layer caches per token, against an MHA cache of the same model.

    >>> from models.transformer import TransformerConfig
    >>> layer = layer_cache(TransformerConfig(10, 1, 16, 4, 8, n_kv_heads=2))
    >>> layer.numbers, layer.mha_numbers, layer.fraction_of_mha
    (16, 32, 0.5)
    """

    rows: list[tuple[str, int]]          # (name, numbers per token), in picture order: :func:`cache_rows`
    numbers: int                         # their sum
    mha_numbers: int                     # MHA: a key and a value per query head, 2 · n_heads · head_dim
    n_layers: int

    @property
    def fraction_of_mha(self) -> float:
        return self.numbers / self.mha_numbers

    @property
    def mha_numbers_all_layers(self) -> int:
        """Numbers an MHA cache keeps per token in all layers: the full height of the cache picture."""
        return self.n_layers * self.mha_numbers


def layer_cache(config) -> LayerCache:
    """:class:`LayerCache` of ``config`` (a ``TransformerConfig`` or the KV tab's ``GPTConfig``)."""
    config = _transformer_config(config)
    rows = cache_rows(config)
    mha = config.n_heads * (config.head_dim + config.v_head_dim)
    return LayerCache(rows, sum(width for _, width in rows), mha, config.n_layers)


def config_cache_bytes(config, tokens: int, bytes_per_elem: float, batch: int = 1) -> int:
    """Bytes of ``tokens`` positions of ``config``'s cache by the formula: numbers per token (all layers)
    × tokens × batch × bytes per number. :meth:`KVCache.nbytes` measures the same from the tensors.

    >>> from models.transformer import TransformerConfig
    >>> config_cache_bytes(TransformerConfig(10, 2, 16, 4, 8, n_kv_heads=2), 3, 4)     # 2·2·2·4·3·4
    384
    """
    return int(_transformer_config(config).cache_elements_per_token() * tokens * batch * bytes_per_elem)


@dataclass(frozen=True)
class DecodeTimes:
    """The timings of a side-by-side decode so far (step 0 of the cached run is the prefill).

    >>> t = decode_times([20.0, 2.0, 2.0, 4.0], [5.0, 10.0, 15.0, 20.0], window=2)
    >>> t.prefill_ms, t.cached_ms, t.uncached_ms, t.speedup, t.window, t.top_ms
    (20.0, 2.6666666666666665, 12.5, 5.833333333333333, 2, None)
    """

    prefill_ms: float
    cached_ms: float                     # mean ms per decode step with the cache (the prefill while alone)
    uncached_ms: float                   # mean ms per step without it
    speedup: float | None                # without / with the cache over the last ``window`` decode steps
    window: int
    top_ms: float | None = None          # the time axis's top when a few steps pass it (see time_axis)
    above: int = 0                       # ... how many steps do
    above_max_ms: float = 0.0            # ... and the slowest of them


def time_axis(ms_cached: list[float], ms_uncached: list[float], window: int = 9, headroom: float = 1.25
              ) -> tuple[float | None, int, float]:
    """The top of an axis of ms per step that a lone slow step (the machine paused: a collection, another
    process) does not stretch: ``headroom`` × the largest running median of each series over ``window``
    steps, or the prefill's time if larger. Returns ``(top, steps above it, the slowest of them)``; the
    top is ``None`` when every step fits under it (the axis then scales itself).

    A real trend survives the median (the uncached step grows with the context); one spike does not.

    >>> time_axis([5.0, 1, 1, 1, 30, 1, 1, 1, 1], [10.0, 11, 12, 13, 14, 15, 16, 17, 18])
    (22.5, 1, 30.0)
    >>> time_axis([5.0, 1, 1, 1], [10.0, 11, 12, 13])
    (None, 0, 0.0)
    """
    tops = [ms_cached[0]] if ms_cached else []
    values = []
    for series in (ms_cached[1:], ms_uncached):
        finite = [v for v in series if math.isfinite(v)]
        values += finite
        half = window // 2
        padded = finite[:1] * half + finite + finite[-1:] * half            # the ends repeated
        tops += [statistics.median(padded[i:i + window]) for i in range(len(finite))]
    top = headroom * max(tops, default=0.0)
    above = [v for v in values if v > top]
    return (top, len(above), float(max(above))) if above and top > 0 else (None, 0, 0.0)


def decode_times(ms_cached: list[float], ms_uncached: list[float], window: int = 20) -> DecodeTimes:
    """:class:`DecodeTimes` of per-step timings; no speed-up before the first decode step (or at 0 ms)."""
    decode = ms_cached[1:] or ms_cached
    n = min(window, len(ms_cached) - 1)
    recent = sum(ms_cached[-n:]) if n >= 1 else 0.0
    speedup = sum(ms_uncached[-n:]) / recent if recent > 0 else None
    return DecodeTimes(ms_cached[0], sum(decode) / len(decode), sum(ms_uncached) / len(ms_uncached), speedup,
                       max(n, 0), *time_axis(ms_cached, ms_uncached))


class KVCache:
    """Per-layer buffers preallocated for ``capacity`` positions, filled ``length`` positions deep.

    MHA/GQA/MQA keep ``keys`` ``(L, B, n_kv, capacity, head_dim)`` and ``values`` ``(L, B, n_kv,
    capacity, v_head_dim)``; MLA keeps one buffer ``(L, B, 1, capacity, latent + rope)`` whose first
    ``latent`` columns are ``c_t`` and whose last ``rope`` columns are the decoupled RoPE key (one "KV
    head": at decode time MLA is MQA over the latent, DeepSeek-V2 appendix C).

    >>> from models.transformer import TransformerConfig
    >>> cfg = TransformerConfig(vocab_size=10, n_layers=2, d_model=16, n_heads=4, max_seq_len=8, n_kv_heads=2)
    >>> cache = KVCache(cfg, capacity=5)
    >>> cache.keys.shape, cache.length, cache.nbytes()
    (torch.Size([2, 1, 2, 5, 4]), 0, 0)
    """

    def __init__(self, config: "TransformerConfig", *, batch: int = 1, capacity: int | None = None,
                 device: torch.device | str | None = None, dtype: torch.dtype = torch.float32):
        config = _transformer_config(config)
        capacity = config.max_seq_len if capacity is None else capacity
        if not 1 <= capacity <= config.max_seq_len:
            raise InputError("kv_err_capacity", capacity=capacity, context=config.max_seq_len)
        self.config, self.length = config, 0
        L = config.n_layers
        if config.attention == "mla":
            width = config.kv_latent_dim + config.rope_dim
            self.buffers = (torch.zeros(L, batch, 1, capacity, width, device=device, dtype=dtype),)
            self.names = ("latent",)
        else:
            shape = (L, batch, config.n_kv_heads, capacity)
            self.buffers = (torch.zeros(*shape, config.head_dim, device=device, dtype=dtype),
                            torch.zeros(*shape, config.v_head_dim, device=device, dtype=dtype))
            self.names = ("keys", "values")

    # what is stored --------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        return self.buffers[0].shape[3]

    @property
    def keys(self) -> torch.Tensor:
        return self._named("keys")

    @property
    def values(self) -> torch.Tensor:
        return self._named("values")

    @property
    def latent(self) -> torch.Tensor:
        """MLA: the latents ``c_t`` (L, B, 1, capacity, kv_latent_dim)."""
        return self._named("latent")[..., : self.config.kv_latent_dim]

    @property
    def rope_keys(self) -> torch.Tensor:
        """MLA: the decoupled RoPE keys ``k^R_t`` (L, B, 1, capacity, rope_dim), already rotated."""
        return self._named("latent")[..., self.config.kv_latent_dim:]

    def _named(self, name: str) -> torch.Tensor:
        if name not in self.names:
            raise AttributeError(f"a {self.config.variant} cache holds {', '.join(self.names)}, not {name}")
        return self.buffers[self.names.index(name)]

    # writing ---------------------------------------------------------------------------------
    def update(self, layer: int, *new: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Write the new positions of ``layer`` (each ``(B, n, T, width)``) after the filled ones.

        Returns every buffer of that layer up to and including the new positions: the keys and
        values (or the latent) that this step attends to. :meth:`advance` moves ``length`` once all
        layers have written.
        """
        start, T = self.length, new[0].shape[2]
        if start + T > self.capacity:
            raise InputError("kv_err_cache_full", capacity=self.capacity, filled=start, more=T)
        for buffer, x in zip(self.buffers, new):
            buffer[layer, :, :, start:start + T] = x                  # (B, n, T, width) in place
        return tuple(buffer[layer, :, :, : start + T] for buffer in self.buffers)   # (B, n, start+T, width)

    def advance(self, n_tokens: int) -> None:
        self.length += n_tokens

    # sizes -----------------------------------------------------------------------------------
    def nbytes(self) -> int:
        """Bytes of the filled positions, all layers: the tensors' own sizes, not a formula."""
        return sum(self.nbytes_per_layer())

    def nbytes_per_layer(self) -> list[int]:
        """Every layer caches as much: the filled part of all layers' buffers, divided by ``L``."""
        L = self.config.n_layers
        return [sum(b.narrow(3, 0, self.length).nbytes for b in self.buffers) // L] * L

    def capacity_nbytes(self) -> int:
        """Bytes reserved by the preallocated buffers (filled or not)."""
        return sum(b.nbytes for b in self.buffers)

    # what the picture shows -----------------------------------------------------------------
    def rows(self) -> list[tuple[str, int]]:
        """The cached streams of one layer as ``(name, numbers per token)``: :func:`cache_rows`."""
        return cache_rows(self.config)

    def rms_map(self, batch_index: int = 0) -> torch.Tensor:
        """``(L, rows, length)``: the root-mean-square of each cached vector, in :meth:`rows` order."""
        T = self.length
        if self.config.attention == "mla":
            parts = [self.latent[:, batch_index, 0, :T], self.rope_keys[:, batch_index, 0, :T]]  # (L, T, w)
            return torch.stack([p.float().pow(2).mean(-1).sqrt() for p in parts], 1)          # (L, 2, T)
        kv = torch.cat([b[:, batch_index, :, :T] for b in self.buffers], 1)                    # (L, 2·n_kv, T, hd)
        return kv.float().pow(2).mean(-1).sqrt()                                               # (L, 2·n_kv, T)


# --------------------------------------------------------------------------- on paper, at scale
@dataclass(frozen=True)
class ScaleUp:
    """The KV cache of a published model (the calculator's preset) at one context, batch and dtype."""

    spec: ModelSpec
    seq_len: int
    batch: int
    dtype: str
    bytes_per_elem: float
    elements_per_token: int          # all layers: 2·L·n_kv·head_dim, or L·(latent + rope) for MLA
    cache_bytes: int
    params: int
    weights_bytes: float             # the weights in the same dtype
    crossover_tokens: int | None     # the context at which the cache holds as many bytes as the weights
    baseline_bytes: int              # MHA/GQA/MQA: as MHA (n_kv = n_heads); MLA: its decompressed K and V
    baseline: str                    # "mha" or "decompressed"

    @property
    def per_token_bytes(self) -> float:
        """Bytes per token of context (all layers, one sequence)."""
        return self.elements_per_token * self.bytes_per_elem

    @property
    def per_token_bytes_past_window(self) -> float:
        """Bytes per token once every window is full: the layers without one only (0 when all have one).

        >>> s = scale_up("Gemma-3-12B", 8192)                # 8 of its 48 layers attend to everything
        >>> s.per_token_bytes / 1024, s.per_token_bytes_past_window / 1024
        (384.0, 64.0)
        """
        return self.per_token_bytes * self.spec.full_layers / self.spec.n_layers

    @property
    def baseline_ratio(self) -> float:
        """How many times the cache the baseline would be (4 for Llama-3-8B: 32 query heads, 8 KV heads)."""
        return self.baseline_bytes / self.cache_bytes


def scale_up(preset: str, seq_len: int, batch: int = 1, dtype: str = "bf16") -> ScaleUp:
    """The cache of ``preset`` (a key of :data:`models.calculator.PRESETS`), computed by the calculator.

    >>> s = scale_up("Llama-3-8B", 8192, 1, "bf16")
    >>> s.cache_bytes / 2**30, s.baseline_bytes // s.cache_bytes      # 8 KV heads of 32 query heads
    (1.0, 4)
    """
    choice("kv_model", preset, PRESETS)
    spec = PRESETS[preset]
    cache = calc_kv_bytes(spec, seq_len, batch, dtype)              # validates context, batch, dtype
    bpe = bytes_per_element(dtype)
    params = count_params(spec)["total"]
    if spec.is_mla:
        per_head = spec.qk_nope_head_dim + spec.qk_rope_head_dim + spec.v_head_dim
        baseline = math.ceil(spec.n_layers * spec.n_heads * per_head * seq_len * batch * bpe)
    else:
        baseline = calc_kv_bytes(with_changes(spec, n_kv_heads=spec.n_heads), seq_len, batch, dtype)
    return ScaleUp(spec, seq_len, batch, dtype, bpe, kv_elements_per_token(spec), cache, params, params * bpe,
                   cache_outgrows_weights(spec, batch, dtype), baseline, "decompressed" if spec.is_mla else "mha")


def scale_curves(names: list[str], batch: int = 1, dtype: str = "bf16",
                 points: int = 41) -> tuple[list[int], dict[str, list[int]]]:
    """Contexts from 1K to 1M tokens (log-spaced) and each preset's cache bytes at them."""
    contexts = sorted({round(2 ** (10 + 10 * i / (points - 1))) for i in range(points)})
    return contexts, {n: [calc_kv_bytes(PRESETS[n], t, batch, dtype) for t in contexts] for n in names}


def same_caches(curves: dict[str, list[int]]) -> dict[str, str]:
    """For each preset whose cache curve equals one listed before it, that earlier preset (Mixtral-8x7B's
    cache, 32 layers × 8 KV heads × 128, is Llama-3-8B's).

    >>> same_caches({"Llama-3-8B": [1, 2], "Llama-2-7B": [4, 8], "Mixtral-8x7B": [1, 2]})
    {'Mixtral-8x7B': 'Llama-3-8B'}
    """
    first: dict[tuple[int, ...], str] = {}                      # a curve -> the first preset with it
    same = {}
    for name, values in curves.items():
        if tuple(values) in first:
            same[name] = first[tuple(values)]
        else:
            first[tuple(values)] = name
    return same
