"""``Probe``: what a forward pass of the one transformer recorded, for the views that look inside it.

TransformerLens records activations through hook points without copying the model; here the model
itself hands what a picture needs to the probe passed to ``forward``, and nothing else changes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from models.moe import MoEOutput


@dataclass
class Probe:
    """What one forward pass recorded, layer by layer (bottom first). Pass it to ``Transformer.forward``.

    Choose what to keep: the attention probabilities of every layer are ``B·H·T²`` numbers each, so a
    training loop that needs only the largest logit asks for ``want_attn_probs=False``; one that needs
    only the MoE layers' losses asks for ``want_attention=False`` and attention keeps its fused kernel.

    >>> from models.transformer import Transformer, TransformerConfig
    >>> model = Transformer.seeded(TransformerConfig(11, 2, 16, 4, 8), seed=0)
    >>> probe = Probe()
    >>> _ = model(torch.tensor([[1, 2, 3]]), probe=probe)
    >>> len(probe.attn_probs), probe.attn_probs[0].shape, len(probe.residual)
    (2, torch.Size([1, 4, 3, 3]), 3)
    """

    want_attention: bool = True          # attention takes the explicit path: logit max (and probabilities)
    want_attn_probs: bool = True
    want_residual: bool = True
    attn_probs: list[torch.Tensor] = field(default_factory=list)     # per layer (B, H, Tq, Tk), detached
    attn_out: list[torch.Tensor] = field(default_factory=list)       # per layer (B, T, d): attention sublayer's output
    residual: list[torch.Tensor] = field(default_factory=list)       # embedding output, then after each block
    moe: list[MoEOutput] = field(default_factory=list)               # per MoE layer (losses keep their graph)
    _logit_max: list[torch.Tensor] = field(default_factory=list)

    @property
    def attn_logit_max(self) -> list[float]:
        """Per layer, the largest scaled ``q·k`` logit over the allowed (unmasked) keys."""
        return torch.stack(self._logit_max).tolist() if self._logit_max else []

    def record_attention(self, layer: int, scores: torch.Tensor, probs: torch.Tensor) -> None:
        """Called by each attention layer with its masked scores (−inf where masked) and probabilities."""
        self._logit_max.append(scores.detach().amax())
        if self.want_attn_probs:
            self.attn_probs.append(probs.detach())

    def aux_loss(self) -> torch.Tensor | float:
        """The MoE layers' load-balancing losses, summed (0 without MoE layers)."""
        return torch.stack([o.aux_loss for o in self.moe]).sum() if self.moe else 0.0

    def z_loss(self) -> torch.Tensor | float:
        """The MoE routers' z-losses, summed (0 without MoE layers)."""
        return torch.stack([o.z_loss for o in self.moe]).sum() if self.moe else 0.0
