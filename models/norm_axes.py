"""Which axes each norm averages over, on a small ``[batch, tokens, features]`` tensor.

- LayerNorm (Ba et al. 2016): per token, over its features: ``(x − mean_f) / √(var_f + eps)``.
- RMSNorm (Zhang & Sennrich 2019): per token, over its features, no centring: ``x / √(mean_f x² + eps)``.
- BatchNorm (Ioffe & Szegedy 2015), training mode: per feature, over every item and token of the
  batch: ``(x − mean_bt) / √(var_bt + eps)``; its statistics mix the examples of a batch, which is
  why transformers, whose batches mix sequences of different lengths, use the first two.

Our LayerNorm and RMSNorm are :mod:`models.norms`'s, checked here against ``torch.nn.LayerNorm``,
``torch.nn.RMSNorm`` and ``torch.nn.BatchNorm1d`` on the same tensor (the result carries the
largest difference). Gains are 1 and biases 0, as at initialisation.

Not handled: GroupNorm and InstanceNorm, BatchNorm's running statistics (evaluation mode).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from models.device import Timing, generator, resolve_device, timed
from models.limits import NORM_AXES_MAX
from models.checks import InputError, whole
from models.norms import EPS, LayerNorm, RMSNorm

KINDS = ("layernorm", "rmsnorm", "batchnorm")


def batch_norm(x: torch.Tensor, eps: float = EPS) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """BatchNorm of ``[B, T, F]`` in training mode: statistics per feature over batch and tokens.

    Returns ``(y, mean[F], std[F])`` with the biased variance, as ``torch.nn.BatchNorm1d`` normalises.

    >>> y, mean, std = batch_norm(torch.tensor([[[1.0, 10.0]], [[3.0, 10.0]]]))
    >>> mean.tolist(), y[:, 0, 0].tolist()
    ([2.0, 10.0], [-0.9999949932098389, 0.9999949932098389])
    """
    mean = x.mean(dim=(0, 1))                                                        # (F,)
    var = (x - mean).pow(2).mean(dim=(0, 1))                                         # (F,)
    return (x - mean) * torch.rsqrt(var + eps), mean, var.sqrt()


@dataclass(frozen=True)
class AxesView:
    """The input, each norm's output and statistics, and the distance to PyTorch's modules."""

    x: list                                # [B][T][F]
    outputs: dict[str, list]               # kind -> [B][T][F]
    stats: dict[str, list]                 # layernorm: [B][T] (mean, std); rmsnorm: [B][T] rms; batchnorm: [F] (mean, std)
    max_error: dict[str, float]            # kind -> max |ours − torch.nn's|
    timing: Timing


def example_tensor(batch: int, tokens: int, features: int, *, seed: int = 0, device=None) -> torch.Tensor:
    """``[B, T, F]`` values with a different offset and scale per feature and per token (one decimal),
    so that normalising rows and normalising columns visibly differ.

    >>> example_tensor(2, 3, 4, seed=1).shape
    torch.Size([2, 3, 4])
    """
    device = resolve_device(device)
    gen = generator(seed, torch.device("cpu"))
    noise = torch.randn(batch, tokens, features, generator=gen)                     # (B, T, F)
    feature_scale = torch.linspace(0.5, 2.0, features)                              # (F,)
    feature_shift = torch.randn(features, generator=gen) * 2                        # (F,)
    token_shift = torch.randn(batch, tokens, 1, generator=gen)                      # (B, T, 1)
    return (noise * feature_scale + feature_shift + token_shift).mul(10).round().div(10).to(device)


def norm_axes(batch: int = 2, tokens: int = 4, features: int = 6, *, seed: int = 0, device=None) -> AxesView:
    """Normalise one example tensor three ways and check each against PyTorch.

    >>> v = norm_axes(2, 3, 4)
    >>> len(v.outputs["batchnorm"][1][2]), all(e < 1e-5 for e in v.max_error.values())
    (4, True)
    """
    for name, value in (("batch", batch), ("tokens", tokens), ("features", features)):
        whole(name, value, 2 if name == "features" else 1, NORM_AXES_MAX)
    if batch * tokens < 2:
        raise InputError("norms_err_batchnorm")
    device = resolve_device(device)
    with timed(device) as watch, torch.no_grad():
        x = example_tensor(batch, tokens, features, seed=seed, device=device)       # (B, T, F)
        ln, rms = LayerNorm(features).to(device), RMSNorm(features).to(device)
        y_ln, y_rms = ln(x), rms(x)                                                 # (B, T, F) each
        y_bn, bn_mean, bn_std = batch_norm(x)
        ln_mean, ln_std = x.mean(-1), x.var(-1, unbiased=False).sqrt()             # (B, T) each
        rms_value = x.pow(2).mean(-1).sqrt()                                        # (B, T)
        refs = {
            "layernorm": torch.nn.LayerNorm(features, eps=EPS).to(device)(x),
            "rmsnorm": torch.nn.RMSNorm(features, eps=EPS).to(device)(x),
            "batchnorm": torch.nn.BatchNorm1d(features, eps=EPS, affine=False, track_running_stats=False)
                         .to(device)(x.transpose(1, 2)).transpose(1, 2),            # BatchNorm1d wants (B, F, T)
        }
        outputs = {"layernorm": y_ln, "rmsnorm": y_rms, "batchnorm": y_bn}
        errors = {k: (outputs[k] - refs[k]).abs().max().item() for k in KINDS}
        stats = {"layernorm": torch.stack([ln_mean, ln_std], -1).tolist(), "rmsnorm": rms_value.tolist(),
                 "batchnorm": torch.stack([bn_mean, bn_std], -1).tolist()}
        values, outputs = x.tolist(), {k: v.tolist() for k, v in outputs.items()}
    return AxesView(values, outputs, stats, errors, watch.timing)
