"""The transformer's feed-forward network: activations, the gated GLU family, and sizing SwiGLU.

- Activations (each with its derivative by autograd): ReLU; GELU exact, x·Φ(x) (Hendrycks & Gimpel
  2016), and its tanh approximation (GPT-2, BERT); SiLU/Swish-1, x·σ(x) (Ramachandran et al. 2017).
- Gated linear units (Shazeer 2020, "GLU Variants Improve Transformer"): ``act(x W_gate) ⊙ (x W_up)``,
  GEGLU with GELU and SwiGLU with SiLU. A gated unit is a function of *two* numbers, the gate
  pre-activation ``a`` and the value ``b``; :func:`activation_curves` plots it along the diagonal
  ``a = b = x`` (what a tied gate and value would give: ``x·act(x)``, quadratic for large ``x``), and
  :func:`gated_surface` gives the whole ``(a, b)`` plane.
- :class:`FFN`: one class, a ``kind`` switch (``"gelu"``/``"relu"`` = two matrices, ``"swiglu"``/``"geglu"`` =
  three, gate and up fused in one ``w_in`` as Mixtral's ``gate_up_proj``); no biases (Llama, Mixtral).
- :func:`llama_hidden_size`: why SwiGLU's hidden size is 8/3·d rounded up to a multiple (Meta's
  Llama ``model.py``: ``multiple_of`` 256 for Llama-2-7B → 11008), and :func:`compare_ffn_sizes`
  counting both FFNs from modules built on the meta device (shapes only, no memory).

Not handled: FFN biases, dropout, the ReGLU/Bilinear GLU variants.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal

import torch
import torch.nn.functional as F
from torch import nn

from models.checks import InputError, choice, number, shown, whole
from models.device import Timing, resolve_device, timed

FFNKind = Literal["gelu", "gelu_tanh", "relu", "swiglu", "geglu"]
FFN_KINDS = ("gelu", "gelu_tanh", "relu", "swiglu", "geglu")


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


GATED = {"swiglu": F.silu, "geglu": F.gelu}                    # gated kind -> the gate's activation
PLAIN = {"gelu": F.gelu, "gelu_tanh": _gelu_tanh, "relu": F.relu}


# name -> (activation of the gate input a, gated?). Gated units multiply act(a) by the value b.
ACTIVATIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], bool]] = {
    "relu": (F.relu, False),
    "gelu": (F.gelu, False),
    "gelu_tanh": (_gelu_tanh, False),
    "silu": (F.silu, False),
    "geglu": (F.gelu, True),
    "swiglu": (F.silu, True),
}


def _check_range(x_min: float, x_max: float, points: int, bound: float, max_points: int) -> tuple[float, float, int]:
    """The plotted range as numbers, each in ``[-bound, bound]``, ``x_min < x_max``; else :class:`InputError`."""
    lo, hi = number("moe_x_min", x_min, -bound, bound), number("moe_x_max", x_max, -bound, bound)
    if not lo < hi:
        raise InputError("moe_err_x_order", x_min=shown(lo, number=True), x_max=shown(hi, number=True))
    return lo, hi, whole("points", points, 2, max_points)


@dataclass
class Curves:
    """Each activation and its autograd derivative on a grid (gated ones along ``a = b = x``)."""

    x: torch.Tensor                                    # (P,)
    values: dict[str, torch.Tensor]                    # name -> (P,)
    derivatives: dict[str, torch.Tensor]               # name -> (P,): d value / dx by autograd
    timing: Timing = field(default=None)               # type: ignore[assignment]


def activation_curves(names: list[str], x_min: float = -4.0, x_max: float = 4.0, points: int = 401, *,
                      device: torch.device | str | None = None) -> Curves:
    """``f(x)`` and ``f'(x)`` by autograd for each named activation, in float64.

    A gated unit ``act(a)·b`` is evaluated on the diagonal ``a = b = x``: ``f(x) = x·act(x)`` and its
    derivative is the total one, ``act(x) + x·act'(x)``. ReLU's derivative at 0 is autograd's 0.

    >>> c = activation_curves(["relu", "swiglu"], -1.0, 1.0, 3)
    >>> c.values["relu"].tolist(), c.derivatives["relu"].tolist()
    ([0.0, 0.0, 1.0], [0.0, 0.0, 1.0])
    >>> round(c.values["swiglu"][2].item(), 6)           # 1·SiLU(1) = σ(1)
    0.731059
    """
    from models.limits import FFN_MAX_POINTS, FFN_MAX_X
    if not isinstance(names, (list, tuple)) or not names:
        raise InputError("moe_err_no_activation", choices=", ".join(ACTIVATIONS))
    for name in names:
        choice("moe_activations", name, ACTIVATIONS)
    x_min, x_max, points = _check_range(x_min, x_max, points, FFN_MAX_X, FFN_MAX_POINTS)
    device = resolve_device(device)
    with timed(device) as watch:
        x = torch.linspace(x_min, x_max, points, dtype=torch.float64, device=device)    # (P,)
        values, derivatives = {}, {}
        for name in names:
            act, gated = ACTIVATIONS[name]
            xg = x.clone().requires_grad_(True)
            y = act(xg) * xg if gated else act(xg)                                        # (P,)
            (dy,) = torch.autograd.grad(y.sum(), xg)                                      # (P,)
            values[name], derivatives[name] = y.detach(), dy
        result = Curves(x, values, derivatives)
    result.timing = watch.timing
    return result


def gated_surface(name: str, limit: float = 3.0, points: int = 61, *,
                  device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(grid (P,), z (P, P))`` with ``z[i, j] = act(a_j)·b_i``: a gated unit over its two inputs.

    >>> grid, z = gated_surface("swiglu", 1.0, 3)
    >>> z[2].tolist() == F.silu(grid).tolist(), z[1].abs().sum().item()   # b = 1: SiLU(a); b = 0: 0
    (True, 0.0)
    """
    from models.limits import FFN_MAX_POINTS, FFN_MAX_X
    choice("moe_gated", name, GATED)
    lo, hi, points = _check_range(-limit, limit, points, FFN_MAX_X, FFN_MAX_POINTS)
    grid = torch.linspace(lo, hi, points, dtype=torch.float64, device=resolve_device(device))  # (P,)
    return grid, grid[:, None] * GATED[name](grid)[None, :]                                        # (P, P)


# --------------------------------------------------------------------------- the FFN module


def activate(u: torch.Tensor, kind: FFNKind, d_hidden: int) -> torch.Tensor:
    """``u = x W_in`` (``[*, 2h]`` gated: gate, then up; ``[*, h]`` plain) -> the hidden activations ``[*, h]``.

    >>> activate(torch.tensor([[-1.0, 2.0]]), "relu", 2).tolist()                 # plain: act(u)
    [[0.0, 2.0]]
    >>> activate(torch.tensor([[0.0, 1.0, 5.0, 6.0]]), "swiglu", 2).tolist()[0][0]  # gated: SiLU(0)·5
    0.0
    """
    if kind in GATED:
        gate, up = u.split(d_hidden, dim=-1)                               # (*, h), (*, h)
        return GATED[kind](gate) * up
    return PLAIN[kind](u)


class FFN(nn.Module):
    """A position-wise FFN ``[*, d] -> [*, d]``, the one every model of the app uses.

    ``kind="gelu"|"gelu_tanh"|"relu"``: ``W_out · act(W_in x)`` with ``W_in: d -> h`` (2·d·h weights;
    ``gelu_tanh`` is GPT-2's tanh approximation). ``kind="swiglu"|"geglu"``: ``W_out · (act(x W_gate) ⊙
    x W_up)``; gate and up are stored fused as ``w_in: d -> 2h`` (gate = first ``h`` rows, as Mixtral's
    ``gate_up_proj``), 3·d·h weights. Biases only when asked for (GPT-2 has them; Llama, Mixtral do not).

    >>> FFN(4, 8, "swiglu").w_in.weight.shape, sum(p.numel() for p in FFN(4, 8, "gelu").parameters())
    (torch.Size([16, 4]), 64)
    """

    def __init__(self, d_model: int, d_hidden: int, kind: FFNKind = "swiglu", *, bias: bool = False,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        super().__init__()
        if kind not in FFN_KINDS:
            raise ValueError(f"FFN kind {kind!r} must be one of {', '.join(FFN_KINDS)}")
        for name, v in (("d_model", d_model), ("d_hidden", d_hidden)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} = {v!r} must be a positive integer")
        self.kind, self.d_hidden = kind, d_hidden
        width = 2 * d_hidden if kind in GATED else d_hidden
        self.w_in = nn.Linear(d_model, width, bias=bias, device=device, dtype=dtype)
        self.w_out = nn.Linear(d_hidden, d_model, bias=bias, device=device, dtype=dtype)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The activations between the two matrices, ``[*, h]``."""
        return activate(self.w_in(x), self.kind, self.d_hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_out(self.hidden(x))                                  # (*, d)


def init_linear_(module: nn.Module, generator: torch.Generator) -> nn.Module:
    """PyTorch's default ``nn.Linear`` init, U(±1/√fan_in), drawn from ``generator`` (no global RNG).

    Built on the meta device and initialised here, a layer costs one draw per weight and two users
    of a server never share a random stream. Biases start at zero.
    """
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                bound = 1 / math.sqrt(m.in_features)
                m.weight.uniform_(-bound, bound, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 1.0, generator=generator)
            elif isinstance(m, (nn.RMSNorm, nn.LayerNorm)) and m.weight is not None:
                m.weight.fill_(1.0)
    return module


# --------------------------------------------------------------------------- equal parameter count


def llama_unrounded_hidden(d_model: int) -> int:
    """The first step of Llama's rule: 2/3 of the dense FFN's 4·d, truncated, ``int(2·4d/3)``.

    >>> llama_unrounded_hidden(4096)                                          # then up to 11008
    10922
    """
    return int(2 * (4 * d_model) / 3)


def llama_hidden_size(d_model: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    """SwiGLU's hidden size as Meta's Llama ``FeedForward`` computes it.

    Start from the dense FFN's 4·d, keep 2/3 of it (three matrices instead of two: equal parameters),
    optionally scale, then round *up* to a multiple of ``multiple_of`` (friendly to GPU tiles).

    >>> llama_hidden_size(4096), llama_hidden_size(5120)                      # Llama-2-7B, -13B
    (11008, 13824)
    >>> llama_hidden_size(8192, 4096, 1.3), llama_hidden_size(4096, 1024, 1.3)  # Llama-2-70B, Llama-3-8B
    (28672, 14336)
    """
    if isinstance(multiple_of, bool) or not isinstance(multiple_of, int) or multiple_of < 1:
        raise ValueError(f"multiple_of = {multiple_of!r} must be a positive integer")
    hidden = llama_unrounded_hidden(d_model)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


@dataclass(frozen=True)
class FFNSizes:
    """Dense GELU FFN (h = 4d) against SwiGLU at 8/3·d (exact, fractional) and rounded up."""

    d_model: int
    multiple_of: int
    dense_hidden: int                    # 4·d
    exact_hidden: float                  # 8/3·d
    unrounded_hidden: int                # int(2·4d/3): Llama's rule before rounding up
    swiglu_hidden: int                   # 8/3·d rounded up to multiple_of
    dense: dict[str, int]                # matrix name -> weights, from the built module
    swiglu: dict[str, int]               # "gate", "up", "down" -> weights, from the built module

    @property
    def dense_total(self) -> int:
        return sum(self.dense.values())

    @property
    def swiglu_total(self) -> int:
        return sum(self.swiglu.values())

    @property
    def exact_per_matrix(self) -> float:
        """Weights of one SwiGLU matrix at the exact, fractional h = 8/3·d."""
        return self.d_model * self.exact_hidden

    @property
    def exact_total(self) -> float:
        """3·d·(8/3·d) = 8·d²: the dense FFN's count, by construction."""
        return 3 * self.exact_per_matrix

    @property
    def exact_change(self) -> float:
        """SwiGLU at the exact h against the dense FFN: 0 up to rounding."""
        return self.exact_total / self.dense_total - 1

    @property
    def change(self) -> float:
        """SwiGLU at the rounded h against the dense FFN: ``+0.0078`` (+0.78 %) for Llama-2-7B."""
        return self.swiglu_total / self.dense_total - 1


def compare_ffn_sizes(d_model: int, multiple_of: int = 256) -> FFNSizes:
    """Build both FFNs on the meta device and count their weights (``numel`` of each matrix).

    >>> s = compare_ffn_sizes(4096)
    >>> s.swiglu_hidden, s.dense_total, s.swiglu_total                      # Llama-2-7B's FFN
    (11008, 134217728, 135266304)
    """
    from models.limits import FFN_MAX_D_MODEL, FFN_MAX_MULTIPLE
    d_model = whole("moe_d_ffn", d_model, 1, FFN_MAX_D_MODEL)
    multiple_of = whole("moe_multiple", multiple_of, 1, FFN_MAX_MULTIPLE)
    hidden = llama_hidden_size(d_model, multiple_of)
    dense = FFN(d_model, 4 * d_model, "gelu", device="meta")
    swiglu = FFN(d_model, hidden, "swiglu", device="meta")
    gate_up = swiglu.w_in.weight.numel()
    return FFNSizes(d_model, multiple_of, 4 * d_model, 8 * d_model / 3, llama_unrounded_hidden(d_model), hidden,
                    {"in": dense.w_in.weight.numel(), "out": dense.w_out.weight.numel()},
                    {"gate": gate_up // 2, "up": gate_up // 2, "down": swiglu.w_out.weight.numel()})
