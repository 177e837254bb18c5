"""Number formats of deep learning, as bit fields, and what casting a value to each really does.

Every value shown is rounded once to the format, as IEEE 754 rounds (:func:`round_to_format`: PyTorch's
own ``.to(dtype)`` from float64 rounds twice), stored in a real torch tensor of the format (fp8 included)
and its bits read from there.
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
    decimal_digits: float | None  # log10(2^p), p = mantissa bits + 1: the decimal digits p bits carry


def facts(fmt: Format) -> FormatFacts:
    """Largest value, smallest normal, epsilon and decimal digits of ``fmt`` (the significand's p bits as
    decimal digits, log10(2^p), as IEEE 754's tables give them: fp32 7.22, fp16 3.31, bf16 2.41).

    >>> facts(FORMATS[1]).max, [facts(f).decimal_digits for f in FORMATS[:3]]
    (65504.0, [7.22, 3.31, 2.41])
    """
    if fmt.is_float:
        info = torch.finfo(fmt.dtype)
        return FormatFacts(float(info.max), float(info.smallest_normal), float(info.eps),
                           round((fmt.mantissa + 1) * math.log10(2), 2))
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
    note: str                   # "overflow", "underflow to zero", "rounded", "subnormal", "exact", "saturated"
    by_torch: float | None = None   # what PyTorch's .to(dtype) from float64 stores, where it differs (twice rounded)


def bits_of(t: torch.Tensor) -> str:
    """The bits of a one-element tensor, most significant first.

    >>> bits_of(torch.tensor([1.0], dtype=torch.float16))
    '0011110000000000'
    """
    nbits = t.element_size() * 8
    raw = int(t.view(_UINT[nbits]).item()) & ((1 << nbits) - 1)
    return format(raw, f"0{nbits}b")


def round_to_format(x: torch.Tensor, fmt: Format) -> torch.Tensor:
    """Float64 ``x`` rounded once to the nearest number of the float format ``fmt``, ties to even (IEEE 754),
    for magnitudes below the format's range end (:func:`_float_range_end`); returned as float64.

    PyTorch's ``.to(dtype)`` from float64 to fp16, bf16 or fp8 rounds twice, to float32 and then to the
    format: a number a hair above a midpoint lands on the midpoint, and the tie goes to the even side.

    >>> x = torch.tensor([1 + 2**-11 + 2**-40], dtype=torch.float64)   # just past the midpoint of 1 and 1 + 2^-10
    >>> round_to_format(x, FORMATS[1]).item(), x.to(torch.float16).item()
    (1.0009765625, 1.0)
    """
    emin = math.frexp(torch.finfo(fmt.dtype).smallest_normal)[1] - 1     # the smallest normal is 2^emin
    _, e = torch.frexp(x)                                                # (N,) x = m · 2^e, 1/2 ≤ |m| < 1
    step = (e.long() - 1).clamp(min=emin) - fmt.mantissa                 # (N,) log2 of the spacing at x
    return torch.ldexp(torch.round(torch.ldexp(x, -step)), step)        # (N,) torch.round: ties to even


def cast(value: float, fmt: Format) -> Cast:
    """Cast ``value`` to ``fmt``: a float format as IEEE 754 rounds (once, to nearest even,
    :func:`round_to_format`; ``by_torch`` holds PyTorch's ``.to(dtype)`` where its double rounding differs;
    past the largest value plus half a step, fp16 and E5M2 overflow to inf and E4M3, which has no inf,
    saturates at 448: clamped here first, as PyTorch 2.13 does, since older builds store NaN above
    464); int8 as quantisation does: round to nearest, then clamp to [−128, 127] (PyTorch's
    ``.to(torch.int8)`` truncates toward zero and wraps instead).

    >>> cast(70000.0, FORMATS[1]).note, cast(70000.0, FORMATS[2]).stored
    ('overflow', 70144.0)
    >>> cast(65519.0, FORMATS[1]).note, cast(65520.0, FORMATS[1]).note     # 65,504 + half a step of 32
    ('rounded', 'overflow')
    >>> cast(1e-40, FORMATS[2]).note, cast(1e-40, FORMATS[2]).stored          # bf16's smallest subnormal, 2^-133
    ('subnormal', 9.183549615799121e-41)
    >>> c = cast(1 + 2**-8 + 2**-40, FORMATS[2])                             # past bf16's midpoint of 1 and 1 + 2^-7
    >>> c.stored, c.by_torch
    (1.0078125, 1.0)
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value \
            or abs(value) > NUMFORMAT_MAX_ABS:
        raise ValueError(f"value = {value!r} must be a finite number with |value| <= 1e300")
    x = torch.tensor([float(value)], dtype=torch.float64)
    by_torch = None
    if fmt.is_float and _beyond_range(value, fmt):
        t = x.to(fmt.dtype) if fmt.has_inf else x.clamp(-facts(fmt).max, facts(fmt).max).to(fmt.dtype)
    elif fmt.is_float:
        t = round_to_format(x, fmt).to(fmt.dtype)                       # exact: a number of the format
        twice = float(x.to(fmt.dtype).to(torch.float64).item())
        by_torch = twice if twice != float(t.to(torch.float64).item()) else None
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
    elif fmt.is_float and abs(stored) < facts(fmt).smallest_normal:
        note = "subnormal"                       # rounded to a number with fewer significant bits
    else:
        note = "rounded"
    err = abs(stored - value) if math.isfinite(stored) else None
    rel = err / abs(value) if err is not None and value != 0 else None
    return Cast(fmt.name, stored, bits_of(t), err, rel, note, by_torch)


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
    """``|stored - x| / x`` for positive float64 magnitudes ``x`` cast to ``fmt`` (rounded once to nearest even,
    :func:`round_to_format`); NaN where the format cannot hold the number: overflow (inf/NaN), flush to
    zero, saturation (decided as :func:`cast` decides it: a number that rounds to the largest value is
    rounded, not lost).

    >>> relative_errors(FORMATS[1], torch.tensor([1.0, 1e5, 1e-9], dtype=torch.float64)).tolist()
    [0.0, nan, nan]
    """
    if fmt.is_float:
        beyond = x >= _float_range_end(fmt)                                 # (N,)
        stored = round_to_format(x.masked_fill(beyond, 0), fmt)             # (N,) beyond: lost, below
    else:
        info = torch.iinfo(fmt.dtype)
        stored = x.round().clamp(info.min, info.max).to(fmt.dtype).to(torch.float64)
        beyond = x.round() > info.max
    lost = ~torch.isfinite(stored) | (stored == 0) | beyond
    return ((stored - x).abs() / x).masked_fill(lost, float("nan"))       # (N,)


def error_curves(low: int = -40, high: int = 133) -> dict[str, tuple[list[float], list[float]]]:
    """Each format's worst relative rounding error in each binade [2^e, 2^(e+1)), e = ``low`` … ``high`` − 1
    (about 10^-12 … 10^40), exactly: ``name -> (magnitudes, errors)``, a binade's error at its start 2^e and
    the last one repeated at the format's largest value, where its line ends.

    In a binade a format's numbers are evenly spaced, so the worst error is at the first midpoint,
    2^e + spacing/2 = 2^e·(1 + 2^-k) for the binade's k (it rounds to 2^e, ties to even): every
    2^e·(1 + 2^-k), k = 1 … 52, is cast for real and the largest error kept (a k past the spacing's
    rounds to 2^e with less). In the normal range that is u/(1 + u), u = 2^-(m+1) the unit roundoff for m
    mantissa bits (half a step over the midpoint's size), the same in every binade; below it, subnormals
    lose digits; a binade the format stores nothing of (overflow, flush to zero) has no point.

    >>> curves = error_curves(-2, 3)                  # 0.25 … 8: the last binade ends where the window does
    >>> xs, errs = curves["bf16"]
    >>> xs, set(errs) == {2.0**-8 / (1 + 2.0**-8)}
    ([0.25, 0.5, 1.0, 2.0, 4.0, 8.0], True)
    >>> [round(e, 3) for e in curves["int8"][1]]       # 0.5+ rounds to 1; 1.5 to 2, 2.5 to 2, 4.5 to 4
    [1.0, 0.333, 0.2, 0.111, 0.111]
    """
    k = torch.arange(1, 53, dtype=torch.float64)                                     # (52,)
    starts = 2.0 ** torch.arange(low, high, dtype=torch.float64)                      # (E,)
    x = starts[:, None] * (1 + 2.0 ** -k)                                             # (E, 52)
    curves = {}
    for fmt in FORMATS:
        worst = relative_errors(fmt, x.flatten()).view(x.shape).nan_to_num(-1.0).amax(dim=1)   # (E,)
        kept = [(float(s), float(w)) for s, w in zip(starts.tolist(), worst.tolist()) if w >= 0]
        end = min(facts(fmt).max, 2 * kept[-1][0]) if kept else None
        xs, ys = [s for s, _ in kept], [w for _, w in kept]
        if kept and end > xs[-1]:
            xs, ys = xs + [end], ys + [ys[-1]]
        curves[fmt.name] = (xs, ys)
    return curves
