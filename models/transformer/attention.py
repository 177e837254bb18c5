"""Causal self-attention of the one transformer: MHA, GQA, MQA or MLA, by configuration.

- **MHA / GQA / MQA** by ``n_kv_heads`` (``= n_heads`` / between / ``1``): query head ``h`` reads KV
  head ``h // group_size`` (Ainslie et al. 2023, GQA, §2; Shazeer 2019, MQA). One fused input
  projection ``qkv`` produces ``[q | k | v]``.
- **MLA** (``attention="mla"``, DeepSeek-AI 2024, DeepSeek-V2 §2.1): the hidden state is compressed
  into one latent ``c = RMSNorm(W_DKV h)`` of width ``kv_latent_dim``; per head ``k = W_UK c`` and
  ``v = W_UV c``. RoPE would make ``W_UK`` position-dependent, so positions ride on a *decoupled* key
  ``k^R = RoPE(W_KR h)`` of width ``rope_dim`` shared by all heads, and a per-head ``q^R``; the score
  is ``(q·k + q^R·k^R) / √(head_dim + rope_dim)`` (eq. 14–18). The cache holds ``c`` and ``k^R`` only.
  Attention runs in the *absorbed* form: ``W_UK`` is folded into the query (``q·W_UK c = (W_UKᵀq)·c``)
  and ``W_UV`` applied after the weighted sum, so attention is MQA over the latent and keys and values
  are never materialised. ``qkv`` produces ``[q (or its latent, with q_latent_dim) | c | k^R]``.

Options: ``qk_norm`` normalises q and k before RoPE and q·k (Dehghani et al. 2023): each head's
(``qk_norm_scope="head"``: Qwen3, Gemma 3) or all heads' q as one vector and all k as another (``"all"``:
OLMoE, OLMo 2); ``sliding_window`` W lets query ``i`` see keys ``i − W + 1 … i`` (Mistral); ALiBi adds
``−slope_h·(i − j)`` to the scores (Press et al. 2022).

Two paths, the same numbers: PyTorch's fused ``scaled_dot_product_attention``, and an explicit one
(``q @ kᵀ · scale``, mask, softmax, ``@ v``) taken when a :class:`~models.transformer.Probe` asks for
the attention probabilities or ALiBi adds a bias. The mask of ``T`` new queries after ``S − T`` cached
positions is aligned bottom-right (:func:`models.kv_cache.cached_causal_mask`).
"""
from __future__ import annotations

import math
import torch
import torch.nn.functional as F
from torch import nn

from models.kv_cache import KVCache, cached_causal_mask
from models.transformer.config import TransformerConfig
from models.transformer.layers import HALF, make_norm
from models.transformer.positions import alibi_bias, rope_rotate
from models.transformer.probe import Probe


def causal_mask(n_queries: int, n_keys: int, window: int | None, device: torch.device) -> torch.Tensor | None:
    """``(T, S)`` True where a query may attend, for the last ``T`` of ``S`` positions; ``None`` when
    every key is allowed (one decode step inside the window).

    >>> causal_mask(2, 4, 2, torch.device("cpu")).int().tolist()      # queries at 2 and 3, window 2
    [[0, 1, 1, 0], [0, 0, 1, 1]]
    """
    if n_queries == 1 and (window is None or window >= n_keys):
        return None
    mask = cached_causal_mask(n_queries, n_keys, device)                             # (T, S)
    if window is not None and window < n_keys:
        mask = mask & ~cached_causal_mask(n_queries, n_keys, device).tril(n_keys - n_queries - window)
    return mask


class SelfAttention(nn.Module):
    """Causal self-attention; ``n_kv_heads`` picks MHA/GQA/MQA, ``attention="mla"`` picks MLA."""

    def __init__(self, cfg: TransformerConfig, layer: int, **factory):
        super().__init__()
        self.cfg, self.layer = cfg, layer
        H, hd, vd = cfg.n_heads, cfg.head_dim, cfg.v_head_dim
        if cfg.attention == "mla":
            r, dr = cfg.kv_latent_dim, cfg.rope_dim
            q_width = cfg.q_latent_dim or H * (hd + dr)
            self.split = [q_width, r, dr]                                            # q (or its latent) | c | k^R
            if cfg.q_latent_dim:
                self.q_norm_latent = make_norm("rmsnorm", cfg.q_latent_dim, cfg.norm_eps, **factory)
                self.q_up = nn.Linear(cfg.q_latent_dim, H * (hd + dr), bias=False, **factory)
            self.kv_norm = make_norm("rmsnorm", r, cfg.norm_eps, **factory)
            self.kv_up = nn.Linear(r, H * (hd + vd), bias=False, **factory)           # per head [W_UK | W_UV]
        else:
            self.split = [H * hd, cfg.n_kv_heads * hd, cfg.n_kv_heads * vd]
        self.qkv = nn.Linear(cfg.d_model, sum(self.split), bias=cfg.qkv_bias, **factory)
        self.out = nn.Linear(H * vd, cfg.d_model, bias=cfg.out_bias, **factory)
        if cfg.qk_norm:
            every = cfg.qk_norm_scope == "all"
            self.q_norm = make_norm(cfg.norm, H * hd if every else hd, cfg.norm_eps, **factory)
            self.k_norm = make_norm(cfg.norm, cfg.n_kv_heads * hd if every else hd, cfg.norm_eps, **factory)
        self.scale = 1 / math.sqrt(cfg.qk_dim)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None,
                cache: KVCache | None = None, probe: Probe | None = None,
                alibi: torch.Tensor | None = None) -> torch.Tensor:
        """``x (B, T, d)`` -> ``(B, T, d)``. ``rope``: cos, sin ``(T, rope_width)`` of these positions."""
        B, T, _ = x.shape
        cfg = self.cfg
        H, hd = cfg.n_heads, cfg.head_dim
        if cfg.attention == "mla":
            q, c, k_rope = self.qkv(x).split(self.split, -1)                          # q (or its latent) | c | k^R
            q, k, v, w_uv = self._mla_inputs(q, c, k_rope, rope, cache)
        else:
            qk, v = self.qkv(x).split([self.split[0] + self.split[1], self.split[2]], -1)
            v = v.view(B, T, -1, cfg.v_head_dim).transpose(1, 2)                     # (B, n_kv, T, vd)
            per_head = cfg.qk_norm and cfg.qk_norm_scope == "head"
            if cfg.qk_norm and not per_head:                                         # one norm for all q, one for all k
                q, k = qk.split(self.split[:2], -1)                                  # (B, T, H·hd), (B, T, n_kv·hd)
                qk = torch.cat([self.q_norm(q), self.k_norm(k)], -1)                 # (B, T, (H + n_kv)·hd)
            qk = qk.view(B, T, -1, hd).transpose(1, 2)                               # (B, H + n_kv, T, hd)
            q, k = qk.split([H, cfg.n_kv_heads], 1)                                  # (B, H, T, hd), (B, n_kv, T, hd)
            if per_head:
                q, k = self.q_norm(q), self.k_norm(k)
                if rope is not None:
                    q, k = rope_rotate(q, *rope), rope_rotate(k, *rope)
            elif rope is not None:                                                   # q and k turned in one go
                q, k = rope_rotate(qk, *rope).split([H, cfg.n_kv_heads], 1)
            if cache is not None:
                k, v = cache.update(self.layer, k, v)                                # (B, n_kv, S, ·)
        y = self._attend(q, k, v, probe, alibi)                                      # (B, H, T, vd or r)
        if cfg.attention == "mla":
            y = y @ w_uv.transpose(1, 2)                                             # (B, H, T, vd): W_UV absorbed
        return self.out(y.transpose(1, 2).reshape(B, T, H * cfg.v_head_dim))         # (B, T, d)

    def _mla_inputs(self, q, c, k_rope, rope, cache):
        """DeepSeek-V2 eq. 9–19 in the absorbed form: queries over the latent, the cache gets ``[c, k^R]``."""
        cfg = self.cfg
        B, T, _ = q.shape
        H, hd, r = cfg.n_heads, cfg.head_dim, cfg.kv_latent_dim
        if cfg.q_latent_dim:
            q = self.q_up(self.q_norm_latent(q))                                     # (B, T, H·(hd + dr))
        q = q.view(B, T, H, hd + cfg.rope_dim).transpose(1, 2)                       # (B, H, T, hd + dr)
        q_nope, q_rope = q.split([hd, cfg.rope_dim], -1)
        latent = torch.cat([self.kv_norm(c)[:, None],                                # (B, 1, T, r): c_t
                            rope_rotate(k_rope[:, None], *rope)], -1)                 # (B, 1, T, r + dr)
        if cache is not None:
            (latent,) = cache.update(self.layer, latent)                             # (B, 1, S, r + dr)
        w_uk, w_uv = self.kv_up.weight.view(H, hd + cfg.v_head_dim, r).split([hd, cfg.v_head_dim], 1)
        q_latent = torch.cat([q_nope @ w_uk, rope_rotate(q_rope, *rope)], -1)        # (B, H, T, r + dr)
        return q_latent, latent, latent[..., :r], w_uv                               # MQA over the latent

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, probe: Probe | None,
                alibi: torch.Tensor | None) -> torch.Tensor:
        """``q (B, H, T, E)``, ``k (B, n_kv, S, E)``, ``v (B, n_kv, S, Ev)`` -> ``(B, H, T, Ev)``."""
        T, S = q.shape[-2], k.shape[-2]
        window = self.cfg.sliding_window
        if probe is not None and not probe.want_attention:
            probe = None
        if probe is None and alibi is None:
            # The square causal mask as is_causal, but at scale 0 (the "why √d" view's m = 0): PyTorch's
            # CPU flash kernel then returns NaN (its masked −inf times 0); the same mask as a tensor does not.
            if T == S and (window is None or window >= S) and self.scale != 0:
                mask, causal = None, T > 1
            else:
                mask, causal = causal_mask(T, S, window, q.device), False
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=self.scale,
                                                  enable_gqa=k.shape[1] != q.shape[1])
        group = q.shape[1] // k.shape[1]
        if group > 1:                                                                # each KV head serves `group` queries
            k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)       # (B, H, S, ·)
        scores = q @ k.transpose(-2, -1)                                             # (B, H, T, S)
        scores = (scores.float() if scores.dtype in HALF else scores) * self.scale
        if alibi is not None:
            scores = scores + alibi_bias(alibi, T, S)                                # (H, T, S) broadcast
        mask = causal_mask(T, S, window, q.device)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        probs = scores.softmax(-1)                                                   # (B, H, T, S) float32
        if probe is not None:
            probe.record_attention(self.layer, scores, probs)
        return probs.to(v.dtype) @ v                                                 # (B, H, T, Ev)
