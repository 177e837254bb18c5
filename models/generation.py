"""A tiny GPT with a KV cache, and one attention class whose variant is a config switch.

The decoder is Llama-shaped (pre-norm RMSNorm, rotary positions, SwiGLU FFN, no biases). Attention:

- **MHA / GQA / MQA** by ``n_kv_heads`` (``= n_heads`` / between / ``1``): query head ``h`` reads KV
  head ``h // (n_heads / n_kv_heads)`` (Ainslie et al. 2023, GQA, §2; Shazeer 2019, MQA).
- **MLA** (``attention="mla"``, DeepSeek-AI 2024, DeepSeek-V2 §2.1): the hidden state is compressed
  into one latent ``c = RMSNorm(W_DKV h)`` of width ``kv_latent_dim``; per head, ``k = W_UK c`` and
  ``v = W_UV c``. RoPE would make ``W_UK`` position-dependent, so positions ride on a *decoupled*
  key ``k^R = RoPE(W_KR h)`` of width ``rope_dim`` shared by all heads, and a per-head ``q^R``; the
  score is ``(q·k + q^R·k^R) / sqrt(head_dim + rope_dim)`` (eq. 14–18). The cache holds only ``c``
  and ``k^R``. Attention runs in the *absorbed* form for prefill and decode alike: ``W_UK`` is
  folded into the query (``q·W_UK c = (W_UKᵀ q)·c``) and ``W_UV`` applied after the weighted sum,
  so attention is MQA over the latent and the keys and values are never materialised.

Positions: RoPE everywhere (rotate-half form of HF Llama, on the whole head for MHA/GQA/MQA, on the
decoupled part for MLA). DeepSeek's low-rank *query* compression (``q_lora_rank``) is left out:
it saves training activations, not cache (DeepSeek-V2-Lite has none either).

Generation (:func:`generate_steps`): prefill runs the prompt once and fills the cache; each decode
step feeds one token. ``use_cache=False`` recomputes the whole sequence every step, for
comparison. Not handled: batched generation of unequal lengths, beam search, top-k/top-p.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Iterator, Literal

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from models.device import Timing, device_name, generator, timed
from models.kv_cache import KVCache, cached_causal_mask, kv_cache_bytes, mla_cache_bytes

__all__ = ["GPTConfig", "TinyGPT", "KVCache", "GenerationTrace", "Step", "Pair", "generate", "generate_steps",
           "side_by_side",
           "kv_cache_bytes", "mla_cache_bytes", "rope_rotate", "rope_tables"]


@dataclass(frozen=True)
class GPTConfig:
    """The shape of a :class:`TinyGPT`; validates itself.

    >>> GPTConfig(vocab_size=96, n_layers=4, d_model=128, n_heads=4, n_kv_heads=2, max_seq_len=256).variant
    'GQA'
    >>> GPTConfig(96, 4, 128, 4, 3, 256)
    Traceback (most recent call last):
    ...
    ValueError: n_kv_heads = 3 must divide n_heads = 4
    """

    vocab_size: int
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int                        # = n_heads: MHA; 1: MQA; between: GQA (MLA: = n_heads)
    max_seq_len: int                       # the context: positions 0 … max_seq_len − 1
    attention: Literal["mha", "mla"] = "mha"
    kv_latent_dim: int | None = None       # MLA: width of the cached latent c_t
    rope_dim: int | None = None            # MLA: width of the decoupled RoPE key (None: head_dim / 2)
    ffn_dim: int | None = None             # SwiGLU width (None: 8/3 · d_model, rounded up to 32)
    rope_base: float = 10000.0

    def __post_init__(self):
        def whole(name, value, low=1):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} = {value!r} must be a whole number ≥ {low}")
        for name in ("vocab_size", "n_layers", "d_model", "n_heads", "n_kv_heads", "max_seq_len"):
            whole(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads = {self.n_heads} must divide d_model = {self.d_model}")
        if self.n_kv_heads > self.n_heads:
            raise ValueError(f"n_kv_heads = {self.n_kv_heads} must be from 1 to n_heads = {self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads = {self.n_kv_heads} must divide n_heads = {self.n_heads}")
        if self.attention not in ("mha", "mla"):
            raise ValueError(f"attention = {self.attention!r} must be 'mha' (MHA/GQA/MQA by n_kv_heads) or 'mla'")
        if self.attention == "mla":
            whole("kv_latent_dim", self.kv_latent_dim)
            if self.n_kv_heads != self.n_heads:
                raise ValueError(f"MLA decompresses a key and value for every head: n_kv_heads = "
                                 f"{self.n_kv_heads} must equal n_heads = {self.n_heads}")
            if self.rope_dim is not None:
                whole("rope_dim", self.rope_dim, low=2)
        elif self.kv_latent_dim is not None or self.rope_dim is not None:
            raise ValueError("kv_latent_dim and rope_dim are MLA settings: use attention='mla'")
        if self.rope_width % 2:
            raise ValueError(f"RoPE rotates pairs: its width {self.rope_width} must be even")
        if self.ffn_dim is not None:
            whole("ffn_dim", self.ffn_dim)
        if not (isinstance(self.rope_base, (int, float)) and self.rope_base > 1):
            raise ValueError(f"rope_base = {self.rope_base!r} must be a number > 1")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def group_size(self) -> int:
        """Query heads per KV head."""
        return self.n_heads // self.n_kv_heads

    @property
    def rope_width(self) -> int:
        """Dimensions RoPE rotates: the whole head (MHA/GQA/MQA) or the decoupled part (MLA)."""
        if self.attention == "mla":
            return self.rope_dim if self.rope_dim is not None else self.head_dim // 2
        return self.head_dim

    @property
    def ffn_width(self) -> int:
        return self.ffn_dim or 32 * math.ceil(8 * self.d_model / 3 / 32)

    @property
    def variant(self) -> str:
        """"MHA", "GQA", "MQA" or "MLA"."""
        if self.attention == "mla":
            return "MLA"
        return "MHA" if self.n_kv_heads == self.n_heads else "MQA" if self.n_kv_heads == 1 else "GQA"

    def cache_elements_per_token(self) -> int:
        """Numbers cached per token, all layers: 2·L·n_kv·head_dim, or L·(latent + rope) for MLA.

        >>> GPTConfig(96, 4, 128, 4, 1, 256).cache_elements_per_token()
        256
        """
        if self.attention == "mla":
            return self.n_layers * (self.kv_latent_dim + self.rope_width)
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim


# --------------------------------------------------------------------------- rotary positions
def rope_tables(n_positions: int, dim: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos, sin`` of shape ``(n_positions, dim)`` for the rotate-half form (HF Llama).

    Pair ``(i, i + dim/2)`` turns by ``position · base^(−2i/dim)``.

    >>> cos, sin = rope_tables(3, 4)
    >>> cos.shape, float(sin[1, 0])                 # position 1, frequency 1: sin(1)
    (torch.Size([3, 4]), 0.8414709568023682)
    """
    from models.positions import rope_angles, rope_inv_freq      # the Positions tab's frequencies
    angles = rope_angles(torch.arange(n_positions), rope_inv_freq(dim, base, device="cpu"))   # (T, dim/2)
    angles = torch.cat([angles, angles], -1)                                       # (T, dim)
    return angles.cos().float(), angles.sin().float()


def rope_rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` of shape ``(..., T, dim)`` by the tables' rows for its ``T`` positions: what
    :func:`models.positions.apply_rope` computes (``style="half"``), with the tables made once per model
    for the decode loop."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)                      # rotate_half(x)
    return x * cos + rotated * sin


# --------------------------------------------------------------------------- the model
def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal attention of ``T`` new queries (the last ``T`` of ``S`` positions) over ``S`` keys.

    ``q (B, H, T, E)``, ``k (B, n_kv, S, E)``, ``v (B, n_kv, S, Ev)`` with ``n_kv`` dividing ``H``
    (consecutive query heads share a KV head) -> ``(B, H, T, Ev)``.
    """
    T, S = q.shape[-2], k.shape[-2]
    if T == 1:                      # one decode step: the newest token sees every cached key
        mask, causal = None, False
    elif T == S:                    # nothing cached before: the square causal mask
        mask, causal = None, True
    else:                           # queries are the last T positions: aligned bottom-right
        mask, causal = cached_causal_mask(T, S, q.device), False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale,
                                          enable_gqa=k.shape[1] != q.shape[1])


class Attention(nn.Module):
    """Causal self-attention; ``n_kv_heads`` picks MHA/GQA/MQA, ``attention="mla"`` picks MLA."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        H, hd = cfg.n_heads, cfg.head_dim
        if cfg.attention == "mla":
            r, dr = cfg.kv_latent_dim, cfg.rope_width
            self.split = [H * (hd + dr), r, dr]              # queries (per head: hd | rope), W_DKV, W_KR
            self.kv_norm = nn.RMSNorm(r, eps=1e-5)
            self.kv_up = nn.Linear(r, H * 2 * hd, bias=False)   # W_UK and W_UV, head by head
            self.scale = 1 / math.sqrt(hd + dr)
        else:
            self.split = [H * hd, cfg.n_kv_heads * hd, cfg.n_kv_heads * hd]
            self.scale = 1 / math.sqrt(hd)
        self.qkv = nn.Linear(cfg.d_model, sum(self.split), bias=False)
        self.out = nn.Linear(H * hd, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVCache | None,
                layer: int) -> torch.Tensor:
        B, T, _ = x.shape
        H, hd = self.cfg.n_heads, self.cfg.head_dim
        q, kv_a, kv_b = self.qkv(x).split(self.split, -1)                  # MHA: k, v; MLA: c, k^R
        if self.cfg.attention == "mla":
            y = self._mla(q, kv_a, kv_b, cos, sin, cache, layer)            # (B, H, T, hd)
        else:
            q = rope_rotate(q.view(B, T, H, hd).transpose(1, 2), cos, sin)     # (B, H, T, hd)
            k = rope_rotate(kv_a.view(B, T, -1, hd).transpose(1, 2), cos, sin)  # (B, n_kv, T, hd)
            v = kv_b.view(B, T, -1, hd).transpose(1, 2)                       # (B, n_kv, T, hd)
            if cache is not None:
                k, v = cache.update(layer, k, v)                            # (B, n_kv, S, hd)
            y = attend(q, k, v, self.scale)                                 # (B, H, T, hd)
        return self.out(y.transpose(1, 2).reshape(B, T, H * hd))            # (B, T, d)

    def _mla(self, q, c, k_rope, cos, sin, cache, layer):
        """DeepSeek-V2 eq. 9–19 in the absorbed form; the cache gets ``[c_t, k^R_t]`` only."""
        B, T, _ = q.shape
        H, hd, r = self.cfg.n_heads, self.cfg.head_dim, self.cfg.kv_latent_dim
        q = q.view(B, T, H, -1).transpose(1, 2)                             # (B, H, T, hd + dr)
        q_nope, q_rope = q.split([hd, self.cfg.rope_width], -1)
        latent = torch.cat([self.kv_norm(c)[:, None],                       # (B, 1, T, r): c_t
                            rope_rotate(k_rope[:, None], cos, sin)], -1)     # (B, 1, T, r + dr): + k^R_t
        if cache is not None:
            (latent,) = cache.update(layer, latent)                         # (B, 1, S, r + dr)
        w_uk, w_uv = self.kv_up.weight.view(H, 2 * hd, r).split(hd, 1)      # (H, hd, r) each
        q_latent = torch.cat([q_nope @ w_uk,                                # (B, H, T, r): W_UK absorbed
                              rope_rotate(q_rope, cos, sin)], -1)            # (B, H, T, r + dr)
        o_latent = attend(q_latent, latent, latent[..., :r], self.scale)    # (B, H, T, r): MQA on c
        return o_latent @ w_uv.transpose(1, 2)                              # (B, H, T, hd): W_UV absorbed


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, hidden: int):
        super().__init__()
        self.gate_up = nn.Linear(d_model, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, -1)                             # (B, T, hidden) each
        return self.down(F.silu(gate) * up)                                 # (B, T, d)


class Block(nn.Module):
    """Pre-norm: ``x + attn(norm(x))``, then ``x + ffn(norm(x))``."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.attn_norm, self.ffn_norm = nn.RMSNorm(cfg.d_model, eps=1e-5), nn.RMSNorm(cfg.d_model, eps=1e-5)
        self.attn, self.ffn = Attention(cfg), SwiGLU(cfg.d_model, cfg.ffn_width)

    def forward(self, x, cos, sin, cache, layer):
        x = x + self.attn(self.attn_norm(x), cos, sin, cache, layer)
        return x + self.ffn(self.ffn_norm(x))


class TinyGPT(nn.Module):
    """A decoder-only language model. Modules are built on the CPU; callers move them.

    >>> cfg = GPTConfig(vocab_size=11, n_layers=2, d_model=16, n_heads=4, n_kv_heads=2, max_seq_len=8)
    >>> logits, cache = TinyGPT(cfg)(torch.tensor([[1, 2, 3]]))
    >>> logits.shape, cache.length, cache.nbytes() == kv_cache_bytes(2, 2, 4, 3, bytes_per_elem=4)
    (torch.Size([1, 3, 11]), 3, True)
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = nn.RMSNorm(config.d_model, eps=1e-5)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        cos, sin = rope_tables(config.max_seq_len, config.rope_width, config.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)            # (max_seq_len, rope)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init)
        for block in self.blocks:                                           # GPT-2: residual writes scaled
            for proj in (block.attn.out, block.ffn.down):
                nn.init.normal_(proj.weight, std=0.02 / math.sqrt(2 * config.n_layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None, *,
                use_cache: bool = True) -> tuple[torch.Tensor, KVCache | None]:
        """``ids (B, T)`` -> ``logits (B, T, vocab)`` and the cache, now holding ``ids`` too.

        With ``cache=None`` a fresh cache of the full context is created and filled. With a cache,
        ``ids`` are the next positions after those it holds. ``use_cache=False`` keeps nothing
        (training, and decoding without a cache) and returns ``None`` for the cache.
        """
        B, T = ids.shape
        if use_cache and cache is None:
            cache = KVCache(self.config, batch=B, device=ids.device, dtype=self.head.weight.dtype)
        start = cache.length if cache is not None else 0
        if start + T > self.config.max_seq_len:
            raise ValueError(f"{start} cached + {T} new tokens exceed the context of "
                             f"{self.config.max_seq_len} tokens")
        cos, sin = self.rope_cos[start:start + T], self.rope_sin[start:start + T]   # (T, rope)
        x = self.embed(ids)                                                 # (B, T, d)
        for layer, block in enumerate(self.blocks):
            x = block(x, cos, sin, cache if use_cache else None, layer)
        if cache is not None and use_cache:
            cache.advance(T)
        return self.head(self.norm(x)), (cache if use_cache else None)      # (B, T, vocab)


# --------------------------------------------------------------------------- generation
@dataclass(frozen=True)
class Step:
    """One generated token: what it is, how long the step took, and the cache after it."""

    token: int
    ms: float
    cache_bytes: int
    cache_bytes_per_layer: list[int]
    context: int                            # positions this step attends over: prompt + earlier new tokens


@dataclass
class GenerationTrace:
    """One entry per step; ``step_ms[0]`` is the prefill (the whole prompt at once)."""

    new_tokens: list[int] = field(default_factory=list)
    cache_bytes: list[int] = field(default_factory=list)
    cache_bytes_per_layer: list[list[int]] = field(default_factory=list)
    step_ms: list[float] = field(default_factory=list)
    timing: Timing | None = None


def check_generation(config: GPTConfig, prompt_len: int, max_new_tokens: int, temperature: float) -> None:
    """``ValueError`` unless a prompt of ``prompt_len`` and ``max_new_tokens`` fit the model."""
    if prompt_len < 1:
        raise ValueError("the prompt is empty: type at least one character")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens = {max_new_tokens!r} must be a whole number ≥ 1")
    if prompt_len + max_new_tokens > config.max_seq_len:
        raise ValueError(f"the prompt ({prompt_len} tokens) plus {max_new_tokens} new tokens is "
                         f"{prompt_len + max_new_tokens}: the model's context is {config.max_seq_len} tokens")
    if not (isinstance(temperature, (int, float)) and 0 <= temperature <= 10):
        raise ValueError(f"temperature = {temperature!r} must be a number from 0 (greedy) to 10")


@torch.no_grad()
def generate_steps(model: TinyGPT, prompt_ids: list[int], max_new_tokens: int, *, use_cache: bool = True,
                   temperature: float = 0.0, seed: int = 0) -> Iterator[tuple[Step, KVCache | None]]:
    """Generate token by token, yielding each :class:`Step` and the live cache (``None`` uncached).

    With the cache: step 0 is the prefill (the prompt at once, filling the cache), every later
    step feeds only the newest token. Without: every step runs the whole sequence again.
    The cache is preallocated for exactly ``len(prompt) + max_new_tokens − 1`` positions (the last
    token is returned, never fed back).
    """
    cfg = model.config
    check_generation(cfg, len(prompt_ids), max_new_tokens, temperature)
    if min(prompt_ids) < 0 or max(prompt_ids) >= cfg.vocab_size:
        raise ValueError(f"token ids must be from 0 to {cfg.vocab_size - 1}")
    device = model.head.weight.device
    draw = generator(seed, device) if temperature > 0 else None
    seq = torch.tensor([prompt_ids], device=device)                         # (1, P)
    cache = (KVCache(cfg, capacity=len(prompt_ids) + max_new_tokens - 1, device=device,
                     dtype=model.head.weight.dtype) if use_cache else None)
    feed = seq
    for step in range(max_new_tokens):
        with timed(device) as watch:
            logits, _ = model(feed, cache, use_cache=use_cache)             # (1, T, vocab)
            token = _pick(logits[:, -1], temperature, draw)                 # (1, 1)
            if use_cache:
                feed = token
            else:
                feed = seq = torch.cat([seq, token], 1)                     # (1, P + step + 1)
            token_id = int(token)
        per_layer = cache.nbytes_per_layer() if cache is not None else [0] * cfg.n_layers
        yield (Step(token_id, watch.timing.ms, sum(per_layer), per_layer, len(prompt_ids) + step), cache)


def _pick(logits: torch.Tensor, temperature: float, draw: torch.Generator | None) -> torch.Tensor:
    """Greedy (``temperature == 0``) or a sample from ``softmax(logits / temperature)``."""
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)                              # (1, 1)
    probs = torch.softmax(logits.float() / temperature, -1)                 # (1, vocab)
    return torch.multinomial(probs, 1, generator=draw)                      # (1, 1)


def generate(model: TinyGPT, prompt_ids: list[int], max_new_tokens: int, *, use_cache: bool = True,
             temperature: float = 0.0, seed: int = 0) -> GenerationTrace:
    """All of :func:`generate_steps` at once.

    >>> _ = torch.manual_seed(0); model = TinyGPT(GPTConfig(11, 2, 16, 4, 1, 16))
    >>> cached = generate(model, [1, 2, 3], 5)
    >>> cached.new_tokens == generate(model, [1, 2, 3], 5, use_cache=False).new_tokens
    True
    >>> cached.cache_bytes == [kv_cache_bytes(2, 1, 4, t, bytes_per_elem=4) for t in range(3, 8)]
    True
    """
    trace = GenerationTrace()
    device = model.head.weight.device
    with timed(device) as watch:
        for step, _ in generate_steps(model, prompt_ids, max_new_tokens, use_cache=use_cache,
                                      temperature=temperature, seed=seed):
            trace.new_tokens.append(step.token)
            trace.cache_bytes.append(step.cache_bytes)
            trace.cache_bytes_per_layer.append(step.cache_bytes_per_layer)
            trace.step_ms.append(step.ms)
    trace.timing = Timing(device_name(device), watch.timing.ms)
    return trace


@dataclass(frozen=True)
class Pair:
    """Step ``step`` of the cached and of the uncached decode, run in lockstep."""

    step: int
    cached: Step
    uncached: Step
    picture: np.ndarray | None                  # (L, rows, length) float32: RMS of each cached vector, when due


def side_by_side(model: TinyGPT, prompt_ids: list[int], max_new_tokens: int, *, temperature: float = 0.0,
                 seed: int = 0, picture_interval_s: float = 0.2) -> Iterator[Pair]:
    """Decode with and without the cache, one step of each in turn (same machine load for both).

    Each decode follows its own tokens, so equal tokens are a real check that the cache changes
    nothing. The cache picture (:meth:`KVCache.rms_map`, on the CPU) rides along on the first and
    last steps and whenever ``picture_interval_s`` seconds of decoding have passed since the
    consumer finished with the previous one (drawing it does not eat into the decoding time).
    """
    cached = generate_steps(model, prompt_ids, max_new_tokens, temperature=temperature, seed=seed)
    uncached = generate_steps(model, prompt_ids, max_new_tokens, use_cache=False, temperature=temperature,
                              seed=seed)
    last = -math.inf
    for i, ((c, cache), (u, _)) in enumerate(zip(cached, uncached)):
        if i == max_new_tokens - 1 or time.perf_counter() - last >= picture_interval_s:
            yield Pair(i, c, u, cache.rms_map().cpu().numpy())
            last = time.perf_counter()                                      # the consumer is done with it
        else:
            yield Pair(i, c, u, None)
