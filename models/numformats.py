"""Number formats of deep learning, as bit fields, and what casting a value to each really does.

Every value shown is computed by casting a real torch tensor (fp8 included) and reading its bits.
Reference: IEEE 754 (fp32, fp16), Google Brain bfloat16, Micikevicius et al. 2022 "FP8 Formats for
Deep Learning" (E4M3 has no infinities and tops out at 448; E5M2 keeps IEEE's specials).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from models.limits import NUMFORMAT_MAX_ABS


@dataclass(frozen=True)
class Format:
    name: str
    dtype: torch.dtype
    sign: int
    exponent: int
    mantissa: int          # stored fraction bits (an int format: value bits)

    @property
    def bits(self) -> int:
        return self.sign + self.exponent + self.mantissa

    @property
    def is_float(self) -> bool:
        return self.dtype.is_floating_point

    @property
    def has_inf(self) -> bool:
        """Whether the format stores infinity: not the "fn" (finite) fp8 formats such as E4M3."""
        return self.is_float and not str(self.dtype).endswith(("fn", "fnuz"))


FORMATS = (
    Format("fp32", torch.float32, 1, 8, 23),
    Format("fp16", torch.float16, 1, 5, 10),
    Format("bf16", torch.bfloat16, 1, 8, 7),
    Format("fp8 E4M3", torch.float8_e4m3fn, 1, 4, 3),
    Format("fp8 E5M2", torch.float8_e5m2, 1, 5, 2),
    Format("int8", torch.int8, 1, 0, 7),
)
_UINT = {32: torch.int32, 16: torch.int16, 8: torch.uint8}


@dataclass(frozen=True)
class FormatFacts:
    """Range and precision of a format, from ``torch.finfo`` / ``torch.iinfo``."""

    max: float
    smallest_normal: float | None
    eps: float | None           # gap between 1 and the next representable number
    decimal_digits: float | None


def facts(fmt: Format) -> FormatFacts:
    """Largest value, smallest normal, epsilon and decimal digits of ``fmt``.

    >>> facts(FORMATS[1]).max
    65504.0
    """
    if fmt.is_float:
        info = torch.finfo(fmt.dtype)
        return FormatFacts(float(info.max), float(info.smallest_normal), float(info.eps),
                           round(-math.log10(float(info.eps)), 2))
    info = torch.iinfo(fmt.dtype)
    return FormatFacts(float(info.max), None, None, None)


@dataclass(frozen=True)
class Cast:
    """``value`` cast to a format: the stored number, its bits, and the error."""

    format: str
    stored: float               # inf past a float format's range (E4M3 has none: PyTorch saturates it)
    bits: str                   # most significant bit first
    abs_error: float | None
    rel_error: float | None
    note: str                   # "overflow", "underflow to zero", "rounded", "exact", "saturated"


def bits_of(t: torch.Tensor) -> str:
    """The bits of a one-element tensor, most significant first.

    >>> bits_of(torch.tensor([1.0], dtype=torch.float16))
    '0011110000000000'
    """
    nbits = t.element_size() * 8
    raw = int(t.view(_UINT[nbits]).item()) & ((1 << nbits) - 1)
    return format(raw, f"0{nbits}b")


def cast(value: float, fmt: Format) -> Cast:
    """Cast ``value`` to ``fmt``: a float format as PyTorch's ``.to(dtype)`` does (round to nearest even;
    past the largest value plus half a step, fp16 and E5M2 overflow to inf and E4M3, which has no inf,
    saturates at 448: clamped here first, as PyTorch 2.13 does, since older builds store NaN above
    464); int8 as quantisation does: round to nearest, then clamp to [−128, 127] (PyTorch's
    ``.to(torch.int8)`` truncates toward zero and wraps instead).

    >>> cast(70000.0, FORMATS[1]).note, cast(70000.0, FORMATS[2]).stored
    ('overflow', 70144.0)
    >>> cast(65519.0, FORMATS[1]).note, cast(65520.0, FORMATS[1]).note     # 65,504 + half a step of 32
    ('rounded', 'overflow')
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value \
            or abs(value) > NUMFORMAT_MAX_ABS:
        raise ValueError(f"value = {value!r} must be a finite number with |value| <= 1e300")
    x = torch.tensor([float(value)], dtype=torch.float64)
    if fmt.is_float:
        if not fmt.has_inf and _beyond_range(value, fmt):
            x = x.clamp(-facts(fmt).max, facts(fmt).max)
        t = x.to(fmt.dtype)
    else:
        info = torch.iinfo(fmt.dtype)
        t = x.round().clamp(info.min, info.max).to(fmt.dtype)
    stored = float(t.to(torch.float64).item())
    if not math.isfinite(stored):
        note = "overflow"
    elif _beyond_range(value, fmt):
        note = "saturated"                       # clamped, not rounded: E4M3 and int8
    elif stored == 0 and value != 0 and fmt.is_float:
        note = "underflow to zero"
    elif stored == value:
        note = "exact"
    else:
        note = "rounded"
    err = abs(stored - value) if math.isfinite(stored) else None
    rel = err / abs(value) if err is not None and value != 0 else None
    return Cast(fmt.name, stored, bits_of(t), err, rel, note)


def _beyond_range(value: float, fmt: Format) -> bool:
    """Whether rounding ``value`` to nearest would leave ``fmt``'s range: for a float, ``|value|`` at or
    past its largest value plus half a step there (IEEE 754 rounds that to infinity); for an integer,
    the rounded value past its ends.

    >>> _beyond_range(460.0, FORMATS[3]), _beyond_range(464.0, FORMATS[3]), _beyond_range(-128.4, FORMATS[5])
    (False, True, False)
    """
    if fmt.is_float:
        return abs(value) >= _float_range_end(fmt)
    info = torch.iinfo(fmt.dtype)
    rounded = torch.tensor(float(value), dtype=torch.float64).round().item()
    return not info.min <= rounded <= info.max


def _float_range_end(fmt: Format) -> float:
    """The magnitude from which a float format cannot round to nearest: its largest value plus half the
    spacing of its top binade (fp16: 65,504 + 16; PyTorch's E4M3: 448 + 16).

    >>> _float_range_end(FORMATS[1]), _float_range_end(FORMATS[3])
    (65520.0, 464.0)
    """
    largest = facts(fmt).max
    step = 2.0 ** (math.frexp(largest)[1] - 1) * facts(fmt).eps          # the spacing of the top binade
    return largest + step / 2


def relative_errors(fmt: Format, x: torch.Tensor) -> torch.Tensor:
    """``|stored - x| / x`` for positive float64 magnitudes ``x`` cast to ``fmt`` (round to nearest even);
    NaN where the format cannot hold the number: overflow (inf/NaN), flush to zero, saturation (decided as
    :func:`cast` decides it: a number that rounds to the largest value is rounded, not lost).

    >>> relative_errors(FORMATS[1], torch.tensor([1.0, 1e5, 1e-9], dtype=torch.float64)).tolist()
    [0.0, nan, nan]
    """
    if fmt.is_float:
        stored = x.to(fmt.dtype).to(torch.float64)                          # (N,)
        beyond = x >= _float_range_end(fmt)                                 # (N,)
    else:
        info = torch.iinfo(fmt.dtype)
        stored = x.round().clamp(info.min, info.max).to(fmt.dtype).to(torch.float64)
        beyond = x.round() > info.max
    lost = ~torch.isfinite(stored) | (stored == 0) | beyond
    return ((stored - x).abs() / x).masked_fill(lost, float("nan"))       # (N,)


def error_curves(low_exp: int = -12, high_exp: int = 40, bins_per_decade: int = 8,
                 samples: int = 64) -> tuple[list[float], dict[str, list[float | None]]]:
    """The worst relative rounding error of each format in each bin of magnitudes, 10^low_exp … 10^high_exp.

    Each bin holds ``samples`` log-spaced magnitudes, all cast for real; a bin's value is the largest
    error among those the format can store (``None`` if it stores none of them). In a format's normal
    range this is its unit roundoff, 2^-(mantissa bits + 1); below, subnormals lose precision; where the
    line stops, the format overflows or flushes to zero.

    >>> xs, curves = error_curves(-1, 1, 1, 16)
    >>> len(xs), 2.0**-9 < max(curves["bf16"]) <= 2.0**-8
    (2, True)
    """
    bins = (high_exp - low_exp) * bins_per_decade
    step = 1.0 / bins_per_decade
    exponents = torch.arange(bins * samples, dtype=torch.float64) * (step / samples) + low_exp
    x = (10.0 ** exponents).view(bins, samples)                             # (bins, samples)
    centers = [10 ** (low_exp + (i + 0.5) * step) for i in range(bins)]
    curves = {}
    for fmt in FORMATS:
        worst = relative_errors(fmt, x.flatten()).view(bins, samples).nan_to_num(-1.0).amax(dim=1)  # (bins,)
        curves[fmt.name] = [None if w < 0 else float(w) for w in worst.tolist()]
    return centers, curves
