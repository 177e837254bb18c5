"""The two norms of a transformer, one definition each for every model in the app.

- :class:`LayerNorm` (Ba et al. 2016): ``(x − mean) / √(var + eps) · weight + bias`` over the last
  dimension, the biased variance (divide by d), as ``torch.nn.LayerNorm``.
- :class:`RMSNorm` (Zhang & Sennrich 2019): ``x / √(mean(x²) + eps) · weight``: no centring, no bias
  (Llama, Mistral, Qwen, DeepSeek).

Both run PyTorch's fused kernels (``F.layer_norm``, ``F.rms_norm``); the formula above is what they
compute (tests check them against it), in float32 for half-precision inputs as Hugging Face does.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

EPS = 1e-5
HALF = (torch.float16, torch.bfloat16)      # normalised in float32, as Hugging Face does


class LayerNorm(nn.Module):
    """``(x − mean) / √(var + eps) · weight + bias`` over the last dimension.

    >>> LayerNorm(4)(torch.tensor([[1.0, 2.0, 3.0, 6.0]])).round(decimals=4)
    tensor([[-1.0690, -0.5345,  0.0000,  1.6036]], grad_fn=<RoundBackward1>)
    """

    def __init__(self, d: int, eps: float = EPS, *, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(d, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype in HALF:
            y = F.layer_norm(x.float(), self.weight.shape, self.weight.float(), self.bias.float(), self.eps)
            return y.to(x.dtype)
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


class RMSNorm(nn.Module):
    """``x / √(mean(x²) + eps) · weight``: no centring, no bias.

    >>> RMSNorm(2)(torch.tensor([[3.0, 4.0]])).round(decimals=4)    # rms = √12.5
    tensor([[0.8485, 1.1314]], grad_fn=<RoundBackward1>)
    """

    def __init__(self, d: int, eps: float = EPS, *, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype in HALF:
            return (F.rms_norm(x.float(), self.weight.shape, None, self.eps) * self.weight.float()).to(x.dtype)
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)


NORMS = {"layernorm": LayerNorm, "rmsnorm": RMSNorm}


def make_norm(kind: str, d: int, eps: float = EPS, **factory) -> nn.Module:
    """A :class:`LayerNorm` or :class:`RMSNorm` of width ``d``."""
    return NORMS[kind](d, eps, **factory)
