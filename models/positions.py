"""Position encodings: RoPE (both layouts, three ways to extend the context), sinusoidal, ALiBi.

RoPE (Su et al. 2021, *RoFormer*, arXiv:2104.09864, §3.2–3.4) splits a query or key of dimension
``d`` into ``d/2`` pairs and rotates pair ``i`` of the vector at position ``m`` by the angle
``m·θ_i`` with ``θ_i = base^(-2i/d)``. Read the pair as a complex number and the rotation is a
multiplication by ``e^{i·m·θ_i}``, so ``<R_m q, R_n k> = <q, R_{n-m} k>``: the score depends on
the offset only. Two layouts of the pairs are in use:

- ``"interleaved"``: pair ``i`` is dimensions ``(2i, 2i+1)`` (Meta's Llama, RoFormer, GPT-J);
- ``"half"``: pair ``i`` is dimensions ``(i, i + d/2)`` (Hugging Face ``rotate_half``, GPT-NeoX).

They give the same scores once the dimensions are permuted (:func:`rope_permutation`); Hugging
Face's conversion script permutes the rows of ``W_q`` and ``W_k`` for exactly this reason.

Extending the context past the training length ``L`` by a factor ``s``:

- position interpolation (Chen et al. 2023, arXiv:2306.15595): positions ``m -> m/s``
  (``apply_rope(..., scale=s)``, Hugging Face ``rope_type="linear"``);
- NTK-aware scaling (bloc97, r/LocalLLaMA, June 2023): ``base -> base·α^{d/(d-2)}``, which leaves
  ``θ_0`` alone and divides the slowest ``θ_{d/2-1}`` by exactly ``α`` (``ntk_alpha=α``);
- Llama 3.1 (Meta llama-models ``apply_scaling``, Hugging Face ``rope_type="llama3"``): pairs
  whose wavelength is shorter than ``L/high_freq_factor`` keep their frequency, pairs longer than
  ``L/low_freq_factor`` are divided by ``factor``, a linear blend in between
  (:func:`llama3_inv_freq`, passed to :func:`apply_rope` as ``inv_freq``).

Sinusoidal encoding: Vaswani et al. 2017, §3.5. ALiBi: Press et al. 2022 (arXiv:2108.12409), §3,
with the rule of their reference code (``get_slopes``) for head counts that are not powers of 2.

Precision: angles ``m·θ_i`` are computed in float64 whatever the input dtype, so position 10⁶ is
as exact as position 1 (float32 angles, as most implementations use, are off by ~0.06 rad there);
cos and sin are rounded to ``x.dtype`` and the rotation runs in ``x.dtype``.

Not handled: dynamic NTK (a base that changes with the current length), YaRN's attention
temperature, partial rotary dimensions (``rotary_pct``), multimodal/2-D RoPE, xPos.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from locales import Term
from models.checks import InputError, choice, number, whole
from models.device import resolve_device
from models.limits import POS_MAX_BASE as MAX_BASE
from models.limits import POS_MAX_ELEMENTS as MAX_ELEMENTS
from models.limits import POS_MAX_FACTOR as MAX_FACTOR
from models.limits import POS_MAX_HEAD_DIM as MAX_HEAD_DIM
from models.limits import POS_MAX_HEADS as MAX_HEADS
from models.limits import POS_MAX_POSITION as MAX_POSITION

STYLES = ("half", "interleaved")


# --------------------------------------------------------------------------- validation
# Every check raises models.checks.InputError: a message key (locales/positions.py) and its values.


def check_head_dim(head_dim, name: str = "pos_head_dim", high: int = MAX_HEAD_DIM) -> int:
    """An even dimension in ``[2, high]``: RoPE rotates pairs, so ``d`` must be even.

    >>> check_head_dim(7)
    Traceback (most recent call last):
    ...
    models.checks.InputError: head dim d = 7 is odd: RoPE rotates pairs of dimensions, so d must be even (2 to 1,024)
    """
    d = whole(name, head_dim, 2, high)
    if d % 2:
        raise InputError("pos_err_odd", name=Term(name), value=d, high=f"{high:,}")
    return d


def check_base(base) -> float:
    """A base in ``(1, POS_MAX_BASE]``: ``θ_i = base^(-2i/d)`` must fall from 1 as ``i`` grows."""
    return number("pos_base", base, 1.0, MAX_BASE, above=True)


def check_factor(name: str, value, *, low: float = 0.0, inclusive: bool = False) -> float:
    """A finite factor above ``low`` (or equal to it when ``inclusive``), at most ``POS_MAX_FACTOR``."""
    return number(name, value, low, MAX_FACTOR, above=not inclusive)


def check_style(style) -> str:
    return choice("pos_style", style, STYLES)


# --------------------------------------------------------------------------- frequencies


def ntk_base(base: float, head_dim: int, alpha: float) -> float:
    """The NTK-aware base ``base·α^{d/(d-2)}``: ``θ_0`` stays 1, the slowest pair slows by ``α``.

    >>> round(ntk_base(10000.0, 128, 8.0))
    82685
    """
    head_dim = check_head_dim(head_dim)
    base = check_base(base)
    alpha = check_factor("pos_ntk_alpha", alpha, low=1.0, inclusive=True)
    if alpha == 1.0:
        return base
    if head_dim == 2:
        raise InputError("pos_err_ntk_one_pair")
    return base * alpha ** (head_dim / (head_dim - 2))


def rope_inv_freq(head_dim: int, base: float = 10000.0, *, ntk_alpha: float = 1.0,
                  device: torch.device | str | None = None, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``[d/2]`` frequencies ``θ_i = base^(-2i/d)`` (radians per position), NTK-scaled if ``ntk_alpha > 1``.

    >>> rope_inv_freq(4, 100.0).tolist()
    [1.0, 0.1]
    """
    base = ntk_base(base, head_dim, ntk_alpha)
    two_i = torch.arange(0, head_dim, 2, dtype=torch.float64, device=resolve_device(device))  # (d/2,)
    return (base ** (-two_i / head_dim)).to(dtype)


def longest_wavelength(head_dim: int, base: float = 10000.0) -> float:
    """Tokens per turn of the slowest pair: ``2π/θ_{d/2-1} = 2π·base^((d-2)/d)``, a little under
    ``2π·base`` (by the factor ``base^(-2/d)``).

    >>> round(longest_wavelength(128, 1e4)), round(longest_wavelength(128, 5e5))
    (54410, 2559196)
    """
    return 2 * math.pi / rope_inv_freq(head_dim, base)[-1].item()


@dataclass(frozen=True)
class Llama3Scaling:
    """Llama 3.1's ``rope_scaling`` (values of its published config.json by default)."""

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position: int = 8192      # the training context L

    def __post_init__(self):
        check_factor("pos_factor", self.factor, low=1.0, inclusive=True)
        check_factor("pos_low_freq_factor", self.low_freq_factor)
        check_factor("pos_high_freq_factor", self.high_freq_factor)
        if self.high_freq_factor <= self.low_freq_factor:
            raise InputError("pos_err_freq_factors", high=f"{self.high_freq_factor:g}",
                             low=f"{self.low_freq_factor:g}")
        whole("pos_original_max_position", self.original_max_position, 1, MAX_POSITION)

    @property
    def band(self) -> tuple[float, float]:
        """Wavelengths ``(L/high_freq_factor, L/low_freq_factor)``: kept below, divided above."""
        return (self.original_max_position / self.high_freq_factor,
                self.original_max_position / self.low_freq_factor)


def llama3_inv_freq(inv_freq: torch.Tensor, scaling: Llama3Scaling = Llama3Scaling()) -> torch.Tensor:
    """Llama 3.1's frequencies: keep the fast pairs, divide the slow ones by ``factor``, blend between.

    With wavelength ``λ = 2π/θ`` and ``L = original_max_position``: ``λ < L/high_freq_factor`` ->
    ``θ``; ``λ > L/low_freq_factor`` -> ``θ/factor``; otherwise ``(1-s)·θ/factor + s·θ`` with
    ``s = (L/λ - low_freq_factor) / (high_freq_factor - low_freq_factor)``.

    >>> scaling = Llama3Scaling(factor=8, low_freq_factor=1, high_freq_factor=4, original_max_position=100)
    >>> [round(f, 6) for f in llama3_inv_freq(torch.tensor([1.0, 0.1, 0.001]), scaling).tolist()]
    [1.0, 0.029754, 0.000125]
    """
    wavelength = 2 * math.pi / inv_freq                                       # (d/2,)
    high_wavelength, low_wavelength = scaling.band
    smooth = (scaling.original_max_position / wavelength - scaling.low_freq_factor) / (
        scaling.high_freq_factor - scaling.low_freq_factor)
    blended = (1 - smooth) * inv_freq / scaling.factor + smooth * inv_freq
    slow = torch.where(wavelength > low_wavelength, inv_freq / scaling.factor, blended)
    return torch.where(wavelength < high_wavelength, inv_freq, slow)


# --------------------------------------------------------------------------- RoPE


def _positions(positions, T: int, batch_shape: torch.Size, device: torch.device) -> torch.Tensor:
    """Positions as float64 ``[..., T]`` broadcastable to ``batch_shape`` (``x.shape[:-1]``); checked."""
    if positions is None:
        return torch.arange(T, dtype=torch.float64, device=device)            # (T,)
    p = torch.as_tensor(positions, device=device)
    if p.dtype == torch.bool or p.is_complex():
        raise InputError("pos_err_positions_dtype", dtype=str(p.dtype))
    p = p.to(torch.float64)
    if p.dim() == 0 or p.shape[-1] != T:
        raise InputError("pos_err_positions_length", shape=tuple(p.shape), T=T)
    # Broadcasts to x's leading dims without enlarging them (torch.broadcast_shapes would do, but its
    # first call imports sympy: over a second on the first request).
    fits = p.dim() <= len(batch_shape) and all(
        a in (1, b) for a, b in zip(reversed(p.shape), reversed(batch_shape)))
    if not fits:
        raise InputError("pos_err_positions_broadcast", shape=tuple(p.shape), batch=tuple(batch_shape))
    if p.numel() and not torch.isfinite(p).all():
        raise InputError("pos_err_positions_finite")
    if p.numel() and (p < 0).any():
        raise InputError("pos_err_positions_negative", value=f"{p.min().item():g}")
    return p


def rope_angles(positions: torch.Tensor, inv_freq: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """``[..., T, d/2]`` angles ``(m/scale)·θ_i`` in float64.

    >>> rope_angles(torch.tensor([0.0, 2.0]), torch.tensor([1.0, 0.5]), scale=2.0).tolist()
    [[0.0, 0.0], [1.0, 0.5]]
    """
    positions = positions.to(torch.float64)
    if scale != 1.0:
        positions = positions / scale
    return positions[..., None] * inv_freq.to(torch.float64)                 # (..., T, d/2)


def _pairs(x: torch.Tensor, style: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The two components of every pair as views ``[..., d/2]``: ``(x_i, x_{i+d/2})`` or ``(x_2i, x_2i+1)``."""
    D = x.shape[-1]
    if style == "half":
        xv = x.unflatten(-1, (2, D // 2))                                     # (..., 2, d/2)
        return xv[..., 0, :], xv[..., 1, :]
    xv = x.unflatten(-1, (D // 2, 2))                                         # (..., d/2, 2)
    return xv[..., 0], xv[..., 1]


def _rotate_complex(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Interleaved pairs as complex numbers times ``cos + i·sin``: one fused kernel (float32/64)."""
    D = x.shape[-1]
    try:
        xc = torch.view_as_complex(x.unflatten(-1, (D // 2, 2)))              # (..., T, d/2) complex
    except RuntimeError:                                                      # odd strides or offset
        xc = torch.view_as_complex(x.contiguous().unflatten(-1, (D // 2, 2)))
    # cos and sin of float64 angles then one cast: polar() in float64 costs twice as much here.
    return torch.view_as_real(xc * torch.complex(cos, sin)).flatten(-2)       # (..., T, D)


def _rotate_real(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, style: str) -> torch.Tensor:
    """``(x1, x2) -> (x1·cos - x2·sin, x2·cos + x1·sin)`` on the pair views, written in place of a copy."""
    x1, x2 = _pairs(x, style)                                                 # (..., T, d/2) each
    if x.requires_grad and torch.is_grad_enabled():                           # out= has no autograd
        y = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-2 if style == "half" else -1)
        return y.flatten(-2)                                                  # (..., T, D)
    out = torch.empty_like(x)
    o1, o2 = _pairs(out, style)
    torch.mul(x1, cos, out=o1).addcmul_(x2, sin, value=-1)
    torch.mul(x2, cos, out=o2).addcmul_(x1, sin)
    return out


def apply_rope(x: torch.Tensor, positions=None, *, base: float = 10000.0, style: str = "half",
               scale: float = 1.0, ntk_alpha: float = 1.0, inv_freq: torch.Tensor | None = None) -> torch.Tensor:
    """Rotate every pair of ``x [..., T, D]`` by ``(m/scale)·θ_i``; returns a new tensor of ``x``'s dtype.

    ``positions``: ``None`` (``0..T-1``) or numbers ``≥ 0`` of shape ``[..., T]`` that broadcast to
    ``x.shape[:-1]`` (for ``[B, H, T, D]`` pass ``[T]``, or ``[B, 1, T]`` per sequence).
    ``style``: ``"half"`` (Hugging Face ``rotate_half``) or ``"interleaved"`` (Meta Llama).
    ``scale``: position interpolation factor (positions are divided by it). ``ntk_alpha``: NTK-aware
    base scaling. ``inv_freq``: ``[D/2]`` frequencies to use instead (e.g. :func:`llama3_inv_freq`);
    ``base`` and ``ntk_alpha`` are then ignored.

    >>> x = torch.tensor([[1.0, 0.0], [1.0, 0.0]])          # T = 2 positions, one pair, θ_0 = 1
    >>> [round(v, 4) for v in apply_rope(x)[1].tolist()]     # position 1: turned by 1 rad
    [0.5403, 0.8415]
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise InputError("pos_err_x_float")
    if x.dim() < 2:
        raise InputError("pos_err_x_shape", shape=tuple(x.shape))
    check_style(style)
    scale = check_factor("pos_scale", scale)
    T, D = x.shape[-2:]
    if inv_freq is None:
        inv_freq = rope_inv_freq(D, base, ntk_alpha=ntk_alpha, device=x.device)
    else:
        check_head_dim(D)
        if inv_freq.shape != (D // 2,):
            raise InputError("pos_err_inv_freq", shape=tuple(inv_freq.shape), half=D // 2)
    angles = rope_angles(_positions(positions, T, x.shape[:-1], x.device), inv_freq.to(x.device), scale)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)             # (..., T, d/2)
    if style == "interleaved" and x.dtype in (torch.float32, torch.float64):
        return _rotate_complex(x, cos, sin)
    return _rotate_real(x, cos, sin, style)


def rope_permutation(head_dim: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``perm`` with ``apply_rope(x[..., perm], style="half") == apply_rope(x, style="interleaved")[..., perm]``.

    Interleaved pair ``(2i, 2i+1)`` lands on half pair ``(i, i+d/2)``: even dimensions first, then odd.
    Its inverse, ``perm.argsort()``, maps the other way.

    >>> rope_permutation(8).tolist()
    [0, 2, 4, 6, 1, 3, 5, 7]
    """
    check_head_dim(head_dim)
    dims = torch.arange(head_dim, device=resolve_device(device))
    return dims.view(head_dim // 2, 2).t().reshape(head_dim)                 # (D,)


def pair_dims(head_dim: int, pair: int, style: str) -> tuple[int, int]:
    """The two dimensions that pair ``pair`` rotates.

    >>> pair_dims(8, 1, "half"), pair_dims(8, 1, "interleaved")
    ((1, 5), (2, 3))
    """
    head_dim = check_head_dim(head_dim)
    pair = whole("pos_pair", pair, 0, head_dim // 2 - 1)
    return (pair, pair + head_dim // 2) if check_style(style) == "half" else (2 * pair, 2 * pair + 1)


# --------------------------------------------------------------------------- sinusoidal and ALiBi


def sinusoidal_encoding(T: int, d_model: int, base: float = 10000.0, *, device: torch.device | str | None = None,
                        dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``[T, d]`` with ``PE[p, 2i] = sin(p / base^(2i/d))`` and ``PE[p, 2i+1] = cos(p / base^(2i/d))``.

    >>> [round(v, 4) for v in sinusoidal_encoding(2, 4)[1].tolist()]
    [0.8415, 0.5403, 0.01, 0.9999]
    """
    T = whole("pos_seq_len", T, 1, MAX_POSITION)
    d_model = check_head_dim(d_model, "d_model")
    if T * d_model > MAX_ELEMENTS:
        raise InputError("pos_err_too_many", what="T × d_model", count=f"{T * d_model:,}", most=f"{MAX_ELEMENTS:,}")
    angles = rope_angles(torch.arange(T, dtype=torch.float64, device=resolve_device(device)),
                         rope_inv_freq(d_model, base, device=device))        # (T, d/2)
    return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2).to(dtype)   # (T, d)


def alibi_power_of_two(n_heads: int) -> int:
    """The largest power of 2 ≤ ``n_heads``: its slopes come first (Press et al.'s rule).

    >>> alibi_power_of_two(8), alibi_power_of_two(12)
    (8, 8)
    """
    return 1 << (whole("pos_heads", n_heads, 1, MAX_HEADS).bit_length() - 1)


def alibi_slopes(n_heads: int, *, device: torch.device | str | None = None,
                 dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``[H]`` ALiBi slopes: ``2^(-8k/H)``, k = 1..H, when ``H`` is a power of 2.

    Otherwise (Press et al.'s rule): the slopes of the largest power of 2 below, ``n``, then every
    other slope of ``2n`` heads (the odd ones, ``2^(-4(2j-1)/n)``) until there are ``H``.

    >>> alibi_slopes(4).tolist(), alibi_slopes(6).tolist()
    ([0.25, 0.0625, 0.015625, 0.00390625], [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125])
    """
    n_heads = whole("pos_heads", n_heads, 1, MAX_HEADS)
    n = alibi_power_of_two(n_heads)
    exponents = [-8 * k / n for k in range(1, n + 1)]
    exponents += [-4 * (2 * j - 1) / n for j in range(1, n_heads - n + 1)]    # odd slopes of 2n heads
    return torch.tensor([2.0 ** e for e in exponents], dtype=dtype, device=resolve_device(device))


def alibi_bias(n_heads: int, T: int, *, device: torch.device | str | None = None,
               dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``[H, T, T]`` with ``bias[h, i, j] = -slope_h·|i - j|`` (added to the scores before softmax).

    >>> alibi_bias(2, 3)[0].tolist()
    [[0.0, -0.0625, -0.125], [-0.0625, 0.0, -0.0625], [-0.125, -0.0625, 0.0]]
    """
    T = whole("pos_seq_len", T, 1, MAX_POSITION)
    slopes = alibi_slopes(n_heads, device=device, dtype=dtype)                # (H,)
    if len(slopes) * T * T > MAX_ELEMENTS:
        raise InputError("pos_err_too_many", what="heads × T × T", count=f"{len(slopes) * T * T:,}",
                         most=f"{MAX_ELEMENTS:,}")
    pos = torch.arange(T, device=slopes.device)
    minus_distance = -(pos[:, None] - pos[None, :]).abs()                     # (T, T) integers: no -0.0
    return slopes[:, None, None] * minus_distance.to(dtype)                   # (H, T, T)
