"""Where the one transformer's positions come from: RoPE tables, sinusoidal and learned offsets, ALiBi.

The frequencies are :mod:`models.positions`' (the Positions tab's: ``rope_inv_freq`` with NTK
scaling, ``llama3_inv_freq``, ``rope_angles`` with position interpolation), so the model rotates
exactly as that tab draws. The rotation is the rotate-half layout of Hugging Face's Llama (pair
``i`` is dimensions ``i`` and ``i + d/2``), computed from cos/sin tables built once per model and
sliced for the positions of each forward pass (a decode step reads one row).
"""
from __future__ import annotations

import torch

from models.positions import Llama3Scaling, llama3_inv_freq, rope_angles, rope_inv_freq


def rope_tables(n_positions: int, dim: int, base: float = 10000.0, *, scale: float = 1.0, ntk_alpha: float = 1.0,
                llama3: Llama3Scaling | None = None, start: int = 0,
                device: torch.device | str | None = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """``cos, sin`` of shape ``(n_positions, dim)`` for positions ``start …``, in the rotate-half layout.

    Pair ``(i, i + dim/2)`` turns by ``(position/scale) · θ_i``, ``θ_i`` from :mod:`models.positions`.

    >>> cos, sin = rope_tables(3, 4)
    >>> cos.shape, float(sin[1, 0])                 # position 1, frequency 1: sin(1)
    (torch.Size([3, 4]), 0.8414709568023682)
    """
    inv_freq = rope_inv_freq(dim, base, ntk_alpha=ntk_alpha, device=device)          # (dim/2,) float64
    if llama3 is not None:
        inv_freq = llama3_inv_freq(inv_freq, llama3)
    positions = torch.arange(start, start + n_positions, dtype=torch.float64, device=inv_freq.device)
    angles = rope_angles(positions, inv_freq, scale)                                    # (T, dim/2)
    angles = torch.cat([angles, angles], -1)                                            # (T, dim)
    return angles.cos().float(), angles.sin().float()


def rope_rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x (..., T, dim)`` by the tables' rows for its ``T`` positions: what
    :func:`models.positions.apply_rope` computes (``style="half"``), with the tables made once.

    >>> x = torch.tensor([[1.0, 0.0]])                       # one position, one pair
    >>> cos, sin = rope_tables(2, 2)
    >>> [round(v, 4) for v in rope_rotate(x, cos[1:], sin[1:])[0].tolist()]
    [0.5403, 0.8415]
    """
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)                            # rotate_half(x)
    return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)


def sinusoidal_rows(start: int, n_positions: int, d_model: int, *, base: float = 10000.0,
                    device: torch.device | str | None = "cpu") -> torch.Tensor:
    """``(n_positions, d_model)`` rows of Vaswani et al.'s table for positions ``start …``: sin on even
    dimensions, cos on odd (:func:`models.positions.sinusoidal_encoding`'s layout).

    >>> sinusoidal_rows(1, 1, 4)[0].round(decimals=4)       # position 1: sin 1, cos 1, sin 0.01, cos 0.01
    tensor([0.8415, 0.5403, 0.0100, 1.0000])
    """
    positions = torch.arange(start, start + n_positions, dtype=torch.float64, device=device)
    angles = rope_angles(positions, rope_inv_freq(d_model, base, device=device))           # (T, d/2)
    return torch.stack((angles.sin(), angles.cos()), -1).flatten(-2).float()              # (T, d)


def alibi_slopes(n_heads: int, *, device: torch.device | str | None = "cpu") -> torch.Tensor:
    """``[H]`` ALiBi slopes (Press et al. 2022): :func:`models.positions.alibi_slopes`."""
    from models.positions import alibi_slopes as slopes
    return slopes(n_heads, device=device)


def alibi_bias(slopes: torch.Tensor, n_queries: int, n_keys: int) -> torch.Tensor:
    """``(H, T, S)`` biases ``−slope_h · (i − j)`` for the last ``T`` of ``S`` positions (queries at
    ``S − T …``): ALiBi in a causal decoder, where a key is never after its query.

    >>> alibi_bias(torch.tensor([0.5]), 2, 3)[0].tolist()      # queries at 1 and 2 (key 2 is future for 1)
    [[-0.5, 0.0, 0.5], [-1.0, -0.5, 0.0]]
    """
    q_pos = torch.arange(n_keys - n_queries, n_keys, device=slopes.device)                # (T,)
    k_pos = torch.arange(n_keys, device=slopes.device)                                    # (S,)
    return slopes[:, None, None] * (k_pos[None, :] - q_pos[:, None]).to(slopes.dtype)    # (H, T, S)
