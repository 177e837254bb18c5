"""The matmul FLOPs of one pass of the transformer, counted the way PyTorch's own counter counts them.

A matmul of ``(m × k)`` by ``(k × n)`` is ``2·m·k·n`` FLOPs (a multiply and an add per term). One
forward of :class:`Transformer` over ``B`` sequences of ``T`` tokens (``N = B·T``):

- every linear layer: ``2·N·in·out`` (q, k, v and output projections, the FFN's two or three
  matrices, an MoE router and the experts each token is routed to, the LM head);
- attention: ``2·B·H·T²·d_qk`` for the scores ``q·kᵀ`` and ``2·B·H·T²·d_v`` for ``softmax(·)·v``,
  the whole ``T × T`` square although a causal kernel could skip half (PyTorch counts it whole);
  MLA's absorbed form adds ``q·W_UK`` and ``·W_UVᵀ`` per head;
- an MoE layer's weighted sum of its top-k outputs, ``2·N·k·d`` (an einsum);
- nothing for norms, softmax, RoPE, activations or embeddings (they are not matmuls).

The backward pass costs twice the forward for every linear (the gradient of the input and of the
weight); the fused attention kernel recomputes the scores, so its backward is ``2·B·H·T²·(3·d_qk + 2·d_v)``
(FlashAttention's, which PyTorch's counter uses) rather than twice its forward. Training's
``6·N·params`` rule is the linear part of this: 2 forward + 4 backward per weight and token.

:func:`count_flops` assumes no MoE assignment is dropped by a capacity limit. :func:`flop_counter` is
``torch.utils.flop_counter.FlopCounterMode`` with the one kernel it does not know yet (torch 2.13):
the CPU's fused attention, given the formulas PyTorch registers for the CUDA kernels.
"""
from __future__ import annotations

import math

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from models.checks import whole
from models.transformer.config import GATED, TransformerConfig


def _linear(n: int, fan_in: int, fan_out: int) -> int:
    return 2 * n * fan_in * fan_out


def _ffn(n: int, d: int, hidden: int, kind: str) -> int:
    """One FFN on ``n`` tokens: ``w_in`` (``2h`` wide when gated), then ``w_out``."""
    return _linear(n, d, 2 * hidden if kind in GATED else hidden) + _linear(n, hidden, d)


def fused_attention(config: TransformerConfig, device: torch.device | str | None = None) -> bool:
    """Whether ``F.scaled_dot_product_attention`` runs a fused kernel for this config on ``device``
    (its backward then recomputes the scores), rather than PyTorch's math path of two matmuls.

    ALiBi always takes the model's explicit path. On a CPU the fused kernel needs q, k and v of one
    head width (MLA's latent attention has ``d_qk = r + d_rope`` against ``d_v = r``); CUDA's
    memory-efficient kernel takes unequal widths.
    """
    from models.device import resolve_device
    if config.positions == "alibi":
        return False
    d_qk, d_v = _attention_widths(config)
    return resolve_device(device).type == "cuda" or d_qk == d_v


def _attention_widths(cfg: TransformerConfig) -> tuple[int, int]:
    if cfg.attention == "mla":
        return cfg.kv_latent_dim + cfg.rope_dim, cfg.kv_latent_dim                 # attention over the latent
    return cfg.head_dim, cfg.v_head_dim


def count_flops(config: TransformerConfig, batch: int, seq_len: int, *, backward: bool = False,
                device: torch.device | str | None = None) -> int:
    """FLOPs of one forward (``backward=True``: forward and backward) over ``batch × seq_len`` tokens on
    ``device`` (the shared one by default: it decides the attention kernel, :func:`fused_attention`).

    A 2-layer GPT-style model, d = 64, 4 heads, vocabulary 100, 8 × 32 tokens:

    >>> cfg = TransformerConfig(100, 2, 64, 4, 32, ffn="gelu", positions="learned")
    >>> n = 8 * 32
    >>> per_layer = 2*n*64*(3*64) + 2*8*4*32*32*(16 + 16) + 2*n*64*64 + 2*n*64*256*2
    >>> count_flops(cfg, 8, 32) == 2 * per_layer + 2*n*64*100
    True
    """
    cfg = config
    B = whole("batch", batch, 1)
    T = whole("seq_len", seq_len, 1, cfg.max_seq_len)
    N, d, H = B * T, cfg.d_model, cfg.n_heads
    hd, vd = cfg.head_dim, cfg.v_head_dim
    d_qk, d_v = _attention_widths(cfg)
    fused = fused_attention(cfg, device)
    linear = attention = 0
    for layer in range(cfg.n_layers):
        # attention: projections
        if cfg.attention == "mla":
            r, dr = cfg.kv_latent_dim, cfg.rope_dim
            q_width = cfg.q_latent_dim or H * (hd + dr)
            linear += _linear(N, d, q_width + r + dr)
            if cfg.q_latent_dim:
                linear += _linear(N, cfg.q_latent_dim, H * (hd + dr))
            linear += _linear(N * H, hd, r) + _linear(N * H, r, vd)                 # q·W_UK, o·W_UVᵀ per head
        else:
            linear += _linear(N, d, (H + cfg.n_kv_heads) * hd + cfg.n_kv_heads * vd)
        linear += _linear(N, H * vd, d)                                              # output projection
        scores = B * H * T * T
        forward_attention = 2 * scores * (d_qk + d_v)
        if backward:
            attention += forward_attention + (2 * scores * (3 * d_qk + 2 * d_v) if fused else 2 * forward_attention)
        else:
            attention += forward_attention
        # feed-forward
        if cfg.is_moe_layer(layer):
            k = cfg.top_k
            linear += _linear(N, d, cfg.n_experts)                                   # router
            linear += _ffn(N * k, d, cfg.moe_d_ff, cfg.expert_ffn)                  # each token's k experts
            if cfg.n_shared_experts:
                linear += _ffn(N, d, cfg.n_shared_experts * cfg.moe_d_ff, cfg.expert_ffn)
            if cfg.moe_shared_gate:
                linear += _linear(N, d, 1)                                           # the shared experts' gate
            linear += 2 * N * k * d                                                  # weighted sum of the k outputs
        else:
            linear += _ffn(N, d, cfg.d_ff, cfg.expert_ffn if cfg.ffn == "moe" else cfg.ffn)
    linear += _linear(N, d, cfg.vocab_size)                                          # LM head
    return (3 * linear if backward else linear) + attention


def flop_counter(display: bool = False) -> FlopCounterMode:
    """PyTorch's ``FlopCounterMode``, also counting the CPU's fused attention kernel.

    torch 2.13 registers FLOP formulas for the CUDA attention kernels (flash, memory-efficient,
    cuDNN) but not for ``_scaled_dot_product_flash_attention_for_cpu``, which ``F.scaled_dot_product_attention``
    runs on a CPU: without this mapping a CPU count misses attention entirely. The formulas are
    PyTorch's own for the flash kernel (same arguments, same math).

    >>> import torch.nn.functional as F
    >>> q = torch.randn(1, 2, 8, 4)
    >>> with flop_counter() as counter:
    ...     _ = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    >>> counter.get_total_flops() == 2 * (2 * 1 * 2 * 8 * 8 * 4)
    True
    """
    aten = torch.ops.aten
    mapping = {aten._scaled_dot_product_flash_attention_for_cpu: _sdpa,
               aten._scaled_dot_product_flash_attention_for_cpu_backward: _sdpa_backward,
               aten._grouped_mm: _grouped_mm,
               aten._embedding_bag: _weighted_bag, aten._embedding_bag_forward_only: _weighted_bag,
               aten._embedding_bag_backward: _weighted_bag_backward,
               aten._embedding_bag_per_sample_weights_backward: _bag_weights_backward}
    return FlopCounterMode(display=display, custom_mapping=mapping)


# The MoE layer's two ops that torch 2.13 has no formula for (models/moe.py): the experts' grouped matmul
# and the embedding_bag that sums each token's k expert outputs with its top-k weights. A weighted bag of
# n rows of width d is the matmul (1 × n)·(n × d): 2nd FLOPs, and 2nd for each of its two gradients.


def _grouped_mm(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """``(M, K) @ (G, K, N)`` (groups along M) or ``(K, M) @ (M, N)`` (groups along M, the weight
    gradient): 2·M·K·N in both, however M is split."""
    if len(a_shape) == 2 and len(b_shape) == 3:
        return 2 * a_shape[0] * a_shape[1] * b_shape[2]
    if len(a_shape) == 2 and len(b_shape) == 2:
        return 2 * a_shape[0] * a_shape[1] * b_shape[1]
    return 2 * math.prod(out_shape) * a_shape[-1]                  # (G, M, K) @ (G, K, N): a bmm


def _weighted_bag(weight_shape, indices_shape, offsets_shape, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights_shape=None, *args, out_shape=None, **kwargs) -> int:
    return 0 if per_sample_weights_shape is None else 2 * math.prod(indices_shape) * weight_shape[1]


def _weighted_bag_backward(grad_shape, indices_shape, offsets_shape, offset2bag_shape, bag_size_shape,
                           max_indices_shape, num_weights, scale_grad_by_freq, mode, sparse,
                           per_sample_weights_shape=None, *args, out_shape=None, **kwargs) -> int:
    return 0 if per_sample_weights_shape is None else 2 * math.prod(indices_shape) * grad_shape[1]


def _bag_weights_backward(grad_shape, weight_shape, indices_shape, *args, out_shape=None, **kwargs) -> int:
    return 2 * math.prod(indices_shape) * grad_shape[1]


def _per_query_head(query_shape, shape) -> tuple[int, ...]:
    """A GQA key or value ``(B, H_kv, S, d)`` counted as ``(B, H, S, d)``: every query head attends over
    it (torch before 2.13 asserts equal heads in ``sdpa_flop_count``)."""
    return (*shape[:-3], query_shape[-3], *shape[-2:])


def _sdpa(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query_shape, _per_query_head(query_shape, key_shape),
                           _per_query_head(query_shape, value_shape))


def _sdpa_backward(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return sdpa_backward_flop_count(grad_out_shape, query_shape, _per_query_head(query_shape, key_shape),
                                    _per_query_head(query_shape, value_shape))
