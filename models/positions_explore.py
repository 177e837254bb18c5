"""What the Positions tab draws: one function per view, each returning a result with its timing.

Every view is computed in float64 from :mod:`models.positions` (the same ``apply_rope`` a model
would call), on the shared device, seeded where it draws random vectors. The views:

- :func:`rotate_view`: q at position m and k at position n, pair by pair, as 2-D arrows;
- :func:`relative_view`: the score ``q_m·k_n`` over (m, n) and its decay with the distance;
- :func:`frequencies_view`: the wavelength of every pair against the training context;
- :func:`extrapolation_view`: position interpolation, NTK-aware scaling and Llama 3.1 past ``L``;
- :func:`conventions_view`: interleaved vs half pairs, the permutation between them, verified;
- :func:`compare_view`: sinusoidal, RoPE and ALiBi on the same sequence.

Not handled: learned absolute position tables (nothing to compute without a trained model).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from locales import Term
from models.checks import InputError, choice, whole
from models.device import Timing, generator, resolve_device, timed
from models.limits import POS_CURVE_POINTS as CURVE_POINTS
from models.limits import POS_MAX_COMPARE_LEN as MAX_COMPARE_LEN
from models.limits import POS_MAX_D_MODEL as MAX_D_MODEL
from models.limits import POS_MAX_DIAGRAM_DIM as MAX_DIAGRAM_DIM
from models.limits import POS_MAX_HEADS as MAX_HEADS
from models.limits import POS_MAX_HEATMAP as MAX_HEATMAP
from models.limits import POS_MAX_POSITION as MAX_POSITION
from models.positions import (Llama3Scaling, alibi_bias, alibi_power_of_two, alibi_slopes, apply_rope, check_base,
                              check_head_dim, check_style, llama3_inv_freq, ntk_base, pair_dims,
                              rope_inv_freq, rope_permutation, sinusoidal_encoding)

F64 = torch.float64
METHODS = ("original", "pi", "ntk", "llama3")        # original RoPE, position interpolation, NTK-aware, Llama 3.1
REFERENCE_BASES = (10000.0, 500000.0)            # RoFormer / Llama 2, Llama 3


@dataclass(frozen=True)
class RopeSpec:
    """The RoPE every view shares: head dimension, base and pair layout. Validates itself (and keeps
    ``head_dim`` as an ``int``, ``base`` as a ``float``, whatever number type the UI sent).

    >>> RopeSpec(head_dim=64.0, base=10000).head_dim
    64
    """

    head_dim: int = 128
    base: float = 10000.0
    style: str = "half"

    def __post_init__(self):
        object.__setattr__(self, "head_dim", check_head_dim(self.head_dim))
        object.__setattr__(self, "base", check_base(self.base))
        check_style(self.style)

    @property
    def pairs(self) -> int:
        return self.head_dim // 2


def _random_vectors(n: int, dim: int, seed: int, device: torch.device) -> torch.Tensor:
    """``n`` seeded standard-normal vectors ``[n, dim]`` in float64."""
    return torch.randn(n, dim, generator=generator(seed, device), device=device, dtype=F64)


def _pair_index(spec: RopeSpec, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(first, second)`` dimension of every pair, ``[d/2]`` each, in ``spec.style``."""
    i = torch.arange(spec.pairs, device=device)                              # (d/2,)
    return (i, i + spec.pairs) if spec.style == "half" else (2 * i, 2 * i + 1)


def distance_grid(max_distance: int, *, points: int = CURVE_POINTS, device=None) -> torch.Tensor:
    """Distances ``1..max_distance``: every integer up to ``points``, then log-spaced integers.

    >>> distance_grid(5).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0]
    >>> g = distance_grid(10**6, points=100); len(g) <= 200, g[-1].item()
    (True, 1000000.0)
    """
    max_distance = whole("pos_max_distance", max_distance, 1, MAX_POSITION)
    device = resolve_device(device)
    if max_distance <= points:
        return torch.arange(1, max_distance + 1, dtype=F64, device=device)
    dense = torch.arange(1, points // 2 + 1, dtype=F64, device=device)
    sparse = torch.logspace(math.log10(points // 2 + 1), math.log10(max_distance), points // 2,
                            dtype=F64, device=device).round()
    return torch.unique(torch.cat([dense, sparse]))                          # sorted, (N,)


def diagonal_range(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For a ``[T, T]`` score matrix: offsets ``n - m``, and the lowest and highest cell on each diagonal.

    A matrix that depends on ``n - m`` only (Toeplitz) has ``low == high`` on every diagonal.

    >>> offsets, low, high = diagonal_range(torch.tensor([[1., 2.], [0., 3.]]))
    >>> offsets.tolist(), low.tolist(), high.tolist()
    ([-1, 0, 1], [0.0, 1.0, 2.0], [0.0, 3.0, 2.0])
    """
    T = scores.shape[-1]
    pos = torch.arange(T, device=scores.device)
    index = (pos[None, :] - pos[:, None] + T - 1).flatten()                  # (T*T,) diagonal of each cell
    flat = scores.flatten()
    empty = torch.empty(2 * T - 1, dtype=scores.dtype, device=scores.device)
    low = empty.fill_(math.inf).scatter_reduce(0, index, flat, "amin")       # (2T-1,)
    high = torch.full_like(low, -math.inf).scatter_reduce(0, index, flat, "amax")
    return torch.arange(-(T - 1), T, device=scores.device), low, high


# --------------------------------------------------------------------------- rotate


@dataclass
class PairRotation:
    """One pair of q and k in its plane: before and after the rotation."""

    pair: int
    dims: tuple[int, int]
    theta: float                 # radians per position
    q: list[float]               # (2,) q's pair at position 0
    k: list[float]
    q_rot: list[float]           # (2,) after rotating by m·θ
    k_rot: list[float]           # after n·θ
    q_trail: list[list[float]]   # (positions, 2): q's tip for the last positions up to m
    q_angle: float = 0.0         # m·θ radians
    k_angle: float = 0.0         # n·θ radians

    @property
    def q_turns(self) -> float:
        """Whole and partial turns q has made at position m."""
        return self.q_angle / (2 * math.pi)


@dataclass
class RotateView:
    spec: RopeSpec
    q_pos: int
    k_pos: int
    selected: int                            # the pair the learner picked
    panels: list[PairRotation]
    thetas: list[float]                      # (d/2,) θ_i of every pair
    contributions: list[float]               # (d/2,) each pair's part of q_m · k_n (they sum to it)
    score: float                             # q_m · k_n from apply_rope on the whole vectors
    relative_score: float                    # q · R_{n-m} k: the same number from the offset alone
    timing: Timing = field(default=None)     # type: ignore[assignment]


def shown_pairs(pairs: int, selected: int) -> list[int]:
    """Pairs side by side: the first, two between, the last, and the one picked.

    >>> shown_pairs(64, 10), shown_pairs(1, 0)
    ([0, 10, 21, 42, 63], [0])
    """
    spread = {round(j * (pairs - 1) / 3) for j in range(4)}
    return sorted(spread | {selected})


def rotate_view(spec: RopeSpec, q_pos: int, k_pos: int, pair: int = 0, *, seed: int = 0, trail: int = 24,
                device: torch.device | str | None = None) -> RotateView:
    """Seeded q and k of ``spec.head_dim`` dimensions, q at position ``q_pos``, k at ``k_pos``.

    >>> v = rotate_view(RopeSpec(head_dim=4, base=100.0), 1, 0, pair=0)
    >>> [p.pair for p in v.panels], round(v.thetas[1], 6), abs(v.score - v.relative_score) < 1e-12
    ([0, 1], 0.1, True)
    """
    q_pos = whole("pos_q_pos", q_pos, 0, MAX_POSITION)
    k_pos = whole("pos_k_pos", k_pos, 0, MAX_POSITION)
    pair = whole("pos_pair", pair, 0, spec.pairs - 1)
    device = resolve_device(device)
    with timed(device) as watch:
        q, k = _random_vectors(2, spec.head_dim, seed, device)               # (D,) each
        rope = dict(base=spec.base, style=spec.style)
        q_rot = apply_rope(q[None], [q_pos], **rope)[0]                      # (D,)
        k_rot = apply_rope(k[None], [k_pos], **rope)[0]
        offset = k_pos - q_pos                                               # q_mᵀk_n = qᵀ R_{n-m} k
        if offset >= 0:
            relative = q @ apply_rope(k[None], [offset], **rope)[0]
        else:
            relative = apply_rope(q[None], [-offset], **rope)[0] @ k
        thetas = rope_inv_freq(spec.head_dim, spec.base, device=device)      # (d/2,)
        steps = torch.arange(max(0, q_pos - trail), q_pos + 1, dtype=F64, device=device)   # (P,)
        panels = []
        for i in shown_pairs(spec.pairs, pair):
            d1, d2 = pair_dims(spec.head_dim, i, spec.style)
            angle = steps * thetas[i]                                        # (P,)
            trail_xy = torch.stack((q[d1] * angle.cos() - q[d2] * angle.sin(),
                                    q[d2] * angle.cos() + q[d1] * angle.sin()), dim=-1)   # (P, 2)
            panels.append(PairRotation(i, (d1, d2), thetas[i].item(), [q[d1].item(), q[d2].item()],
                                       [k[d1].item(), k[d2].item()], [q_rot[d1].item(), q_rot[d2].item()],
                                       [k_rot[d1].item(), k_rot[d2].item()], trail_xy.tolist(),
                                       q_pos * thetas[i].item(), k_pos * thetas[i].item()))
        a, b = _pair_index(spec, device)
        contributions = q_rot[a] * k_rot[a] + q_rot[b] * k_rot[b]            # (d/2,)
        result = RotateView(spec, q_pos, k_pos, pair, panels, thetas.tolist(), contributions.tolist(),
                            (q_rot @ k_rot).item(), relative.item())
    result.timing = watch.timing
    return result


# --------------------------------------------------------------------------- relative position


ENCODINGS = ("rope", "sinusoidal")    # rotate q and k | add p_m to q and p_n to k


@dataclass
class RelativeView:
    spec: RopeSpec
    encoding: str
    scores: torch.Tensor             # (T, T) q_m · k_n, m = query position (rows), n = key position
    offsets: torch.Tensor            # (2T-1,) n - m
    low: torch.Tensor                # (2T-1,) lowest score on each diagonal
    high: torch.Tensor               # (2T-1,) highest (equal to low when the map is Toeplitz)
    distances: torch.Tensor          # (N,) |m - n| for the decay curves
    curves: dict[str, torch.Tensor]  # name -> (N,)
    timing: Timing = field(default=None)  # type: ignore[assignment]

    @property
    def spread(self) -> float:
        """The largest ``high - low`` over all diagonals: 0 up to rounding when only ``n - m`` matters."""
        return (self.high - self.low).max().item()


def decay_curves(spec: RopeSpec, distances: torch.Tensor, q: torch.Tensor) -> dict[str, torch.Tensor]:
    """Score against distance Δ for q = k, normalised to 1 at Δ = 0.

    - ``"ones"``: q = k = (1, …, 1): ``mean_i cos(Δθ_i)``;
    - ``"random"``: the seeded q = k: ``Σ_i |q_i|² cos(Δθ_i) / |q|²`` (pairs as in ``spec.style``);
    - ``"bound"``: RoFormer §3.4.3's upper bound ``(1/(d/2)) Σ_j |S_j|``, ``S_j = Σ_{i<j} e^{iΔθ_i}``,
      divided by its value at Δ = 0 (``(d/2 + 1)/2``).

    >>> c = decay_curves(RopeSpec(head_dim=4), torch.tensor([0.0]), torch.ones(4, dtype=torch.float64))
    >>> [c[name].item() for name in ("ones", "random", "bound")]
    [1.0, 1.0, 1.0]
    """
    thetas = rope_inv_freq(spec.head_dim, spec.base, device=distances.device)   # (d/2,)
    angles = distances[:, None] * thetas                                        # (N, d/2)
    a, b = _pair_index(spec, distances.device)
    energy = q[a] ** 2 + q[b] ** 2                                              # (d/2,) |q_i|²
    partial = torch.polar(torch.ones_like(angles), angles).cumsum(-1)           # (N, d/2) S_1 … S_{d/2}
    return {"ones": angles.cos().mean(-1),
            "random": (angles.cos() * energy).sum(-1) / energy.sum(),
            "bound": partial.abs().mean(-1) / ((spec.pairs + 1) / 2)}


def relative_view(spec: RopeSpec, T: int = 64, max_distance: int = 4096, *, encoding: str = "rope",
                  seed: int = 0, device: torch.device | str | None = None) -> RelativeView:
    """Seeded q and k placed at every position 0..T-1; their scores, diagonals, and decay curves.

    >>> v = relative_view(RopeSpec(head_dim=8), T=5, max_distance=10)
    >>> v.scores.shape, v.spread < 1e-12
    (torch.Size([5, 5]), True)
    """
    T = whole("pos_seq_len", T, 2, MAX_HEATMAP)          # two tokens at least: one has no distance to show
    choice("pos_encoding", encoding, ENCODINGS)
    device = resolve_device(device)
    with timed(device) as watch:
        q, k = _random_vectors(2, spec.head_dim, seed, device)               # (D,) each
        if encoding == "rope":
            Q = apply_rope(q.expand(T, -1), base=spec.base, style=spec.style)   # (T, D): q at 0..T-1
            K = apply_rope(k.expand(T, -1), base=spec.base, style=spec.style)
        else:
            pe = sinusoidal_encoding(T, spec.head_dim, spec.base, device=device, dtype=F64)   # (T, D)
            Q, K = q + pe, k + pe
        scores = Q @ K.T                                                     # (T, T)
        offsets, low, high = diagonal_range(scores)
        distances = torch.cat([torch.zeros(1, dtype=F64, device=device), distance_grid(max_distance, device=device)])
        result = RelativeView(spec, encoding, scores, offsets, low, high, distances,
                              decay_curves(spec, distances, q))
    result.timing = watch.timing
    return result


# --------------------------------------------------------------------------- frequencies


@dataclass
class FrequenciesView:
    spec: RopeSpec
    train_len: int
    thetas: torch.Tensor                     # (d/2,) radians per position
    wavelengths: torch.Tensor                # (d/2,) 2π/θ_i positions per turn
    references: dict[float, torch.Tensor]    # other base -> (d/2,) wavelengths
    positions: torch.Tensor                  # (P,) positions of the heatmap
    cos: torch.Tensor                        # (P, d/2) cos(m·θ_i)
    timing: Timing = field(default=None)     # type: ignore[assignment]

    @property
    def slow_pairs(self) -> int:
        """Pairs that never complete a turn within the training context."""
        return int((self.wavelengths > self.train_len).sum())

    @property
    def longest(self) -> float:
        """The slowest pair's wavelength, ``2π·base^((d-2)/d)`` (:func:`models.positions.longest_wavelength`)."""
        return self.wavelengths[-1].item()


def frequencies_view(spec: RopeSpec, train_len: int = 4096, span: int = 128, *,
                     device: torch.device | str | None = None) -> FrequenciesView:
    """Frequencies, wavelengths (also for the reference bases) and ``cos(m·θ_i)`` for ``m < span``.

    >>> v = frequencies_view(RopeSpec(head_dim=4, base=100.0), train_len=10, span=3)
    >>> [round(w, 2) for w in v.wavelengths.tolist()], v.slow_pairs
    ([6.28, 62.83], 1)
    """
    train_len = whole("pos_train_len", train_len, 1, MAX_POSITION)
    span = whole("pos_span", span, 1, MAX_HEATMAP)
    device = resolve_device(device)
    with timed(device) as watch:
        thetas = rope_inv_freq(spec.head_dim, spec.base, device=device)      # (d/2,)
        references = {b: 2 * math.pi / rope_inv_freq(spec.head_dim, b, device=device)
                      for b in REFERENCE_BASES if b != spec.base}
        positions = torch.arange(span, dtype=F64, device=device)            # (P,)
        result = FrequenciesView(spec, train_len, thetas, 2 * math.pi / thetas, references, positions,
                                 (positions[:, None] * thetas).cos())
    result.timing = watch.timing
    return result


# --------------------------------------------------------------------------- extrapolation


def method_inv_freq(spec: RopeSpec, method: str, scaling: Llama3Scaling, *,
                    device: torch.device | str | None = None) -> tuple[torch.Tensor, float]:
    """The frequencies a method uses to reach ``factor × L``, and its base (NaN when it changes no base).

    ``"pi"`` divides every frequency by the factor (the same as dividing the positions by it).

    >>> f, base = method_inv_freq(RopeSpec(head_dim=4, base=100.0), "pi", Llama3Scaling(factor=4))
    >>> f.tolist(), base
    ([0.25, 0.025], nan)
    """
    thetas = rope_inv_freq(spec.head_dim, spec.base, device=device)          # (d/2,)
    if method == "original":
        return thetas, spec.base
    if method == "pi":
        return thetas / scaling.factor, math.nan
    if method == "ntk":
        return (rope_inv_freq(spec.head_dim, spec.base, ntk_alpha=scaling.factor, device=device),
                ntk_base(spec.base, spec.head_dim, scaling.factor))
    if method == "llama3":
        return llama3_inv_freq(thetas, scaling), math.nan
    raise InputError("error_choice", name=Term("pos_method"), value=repr(method), choices=", ".join(METHODS))


@dataclass
class ExtrapolationView:
    spec: RopeSpec
    scaling: Llama3Scaling                   # factor, low/high frequency factors, training context L
    methods: list[str]
    thetas: dict[str, torch.Tensor]          # method -> (d/2,) frequencies
    bases: dict[str, float]                  # method -> base (NaN when the method changes no base)
    safe_length: dict[str, float]            # method -> longest distance with every angle seen in training
    distances: torch.Tensor                  # (N,)
    unseen: dict[str, torch.Tensor]          # method -> (N,) fraction of pairs at an angle never seen
    scores: dict[str, torch.Tensor]          # method -> (N,) mean_i cos(Δθ'_i): q = k = (1, …, 1)
    timing: Timing = field(default=None)     # type: ignore[assignment]

    @property
    def original(self) -> torch.Tensor:
        return rope_inv_freq(self.spec.head_dim, self.spec.base, device=self.distances.device)

    @property
    def target(self) -> int:
        """The context the methods stretch to: ``s·L`` tokens."""
        return round(self.scaling.factor * self.scaling.original_max_position)

    @property
    def fastest(self) -> dict[str, float]:
        """Method -> ``θ′_0/θ_0``: what it does to the fastest pair (1 = untouched)."""
        return {m: th[0].item() / self.original[0].item() for m, th in self.thetas.items()}

    @property
    def blend(self) -> tuple[int, int] | None:
        """The first and last pair in Llama 3.1's blend band (wavelength between ``L/high_freq_factor`` and
        ``L/low_freq_factor``), when Llama 3.1 is shown and the band holds a pair.

        >>> extrapolation_view(RopeSpec(head_dim=128, base=500000.0), Llama3Scaling()).blend
        (29, 34)
        """
        if "llama3" not in self.methods:
            return None
        wavelength = 2 * math.pi / self.original                                # (d/2,)
        high_band, low_band = self.scaling.band
        inside = ((wavelength >= high_band) & (wavelength <= low_band)).nonzero().flatten().tolist()
        return (inside[0], inside[-1]) if inside else None


def unseen_angles(distances: torch.Tensor, thetas: torch.Tensor, scaled: torch.Tensor, train_len: int
                  ) -> tuple[torch.Tensor, float]:
    """Fraction of pairs whose angle at each distance no distance ``0..L`` gave in training, and the
    longest distance at which there is none.

    Training saw pair ``i`` at angles ``[0, L·θ_i]``: every angle if ``L·θ_i ≥ 2π``, else only that arc.
    With frequencies ``θ'`` the angle at distance ``Δ`` is ``Δ·θ'_i`` (mod 2π), first outside the arc
    at ``Δ = L·θ_i/θ'_i``.

    >>> frac, safe = unseen_angles(torch.tensor([5.0, 20.0]), torch.tensor([1.0, 0.01]),
    ...                            torch.tensor([1.0, 0.01]), train_len=10)
    >>> frac.tolist(), safe
    ([0.0, 0.5], 10.0)
    """
    arc = train_len * thetas                                                  # (d/2,) angle seen in training
    partial = arc < 2 * math.pi                                               # pairs that never turned fully
    angle = torch.remainder(distances[:, None] * scaled, 2 * math.pi)         # (N, d/2)
    outside = partial & (angle > arc * (1 + 1e-12))
    safe = (arc / scaled)[partial].min().item() if partial.any() else math.inf
    return outside.to(distances.dtype).mean(-1), safe


def extrapolation_view(spec: RopeSpec, scaling: Llama3Scaling = Llama3Scaling(),
                       methods: list[str] | tuple[str, ...] = METHODS, *,
                       device: torch.device | str | None = None) -> ExtrapolationView:
    """Each method's frequencies for ``factor × L``, and what happens to angles and scores up to
    twice that distance.

    >>> v = extrapolation_view(RopeSpec(head_dim=128, base=500000.0), Llama3Scaling())
    >>> v.safe_length["original"], v.safe_length["pi"], v.safe_length["llama3"]
    (8192.0, 65536.0, 65536.0)
    """
    if not isinstance(methods, (list, tuple)) or not all(isinstance(m, str) for m in methods):
        raise InputError("pos_err_methods", bad=repr(methods)[:60], choices=", ".join(METHODS))
    if not methods:                                      # nothing to compare (a message without the ids)
        raise InputError("pos_err_no_method")
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise InputError("pos_err_methods", bad=bad, choices=", ".join(METHODS))
    methods = [m for m in METHODS if m in methods]                           # the canonical order
    device = resolve_device(device)
    L = scaling.original_max_position
    reach = math.ceil(2 * scaling.factor * L)
    if reach > MAX_POSITION:
        raise InputError("pos_err_too_long", factor=f"{scaling.factor:g}", L=f"{L:,}", most=f"{MAX_POSITION:,}")
    with timed(device) as watch:
        thetas, bases, safe, unseen, scores = {}, {}, {}, {}, {}
        original = rope_inv_freq(spec.head_dim, spec.base, device=device)    # (d/2,)
        distances = distance_grid(reach, device=device)                       # (N,)
        for method in methods:
            thetas[method], bases[method] = method_inv_freq(spec, method, scaling, device=device)
            unseen[method], safe[method] = unseen_angles(distances, original, thetas[method], L)
            scores[method] = (distances[:, None] * thetas[method]).cos().mean(-1)   # (N,)
        result = ExtrapolationView(spec, scaling, methods, thetas, bases, safe, distances, unseen, scores)
    result.timing = watch.timing
    return result


# --------------------------------------------------------------------------- conventions


@dataclass
class ConventionsView:
    head_dim: int
    base: float
    position: int
    perm: list[int]                          # interleaved dimension perm[j] goes to half dimension j
    pair_of_dim: dict[str, list[int]]        # style -> (D,) the pair each dimension belongs to
    rotations: dict[str, torch.Tensor]       # "interleaved", "half", "permuted": (D, D) matrices R_m
    max_diff: dict[str, float]               # dtype -> max |half(x[perm]) - interleaved(x)[perm]|
    matrix_diff: float                       # max |R_half - R_interleaved[perm][:, perm]|
    scores: dict[str, float]                 # "meta", "hf": q_m·k_n with original and permuted weights
    timing: Timing = field(default=None)     # type: ignore[assignment]

    @property
    def inverse(self) -> list[int]:
        """``perm.argsort()``: half dimension ``inverse[j]`` goes back to interleaved dimension ``j``."""
        return sorted(range(len(self.perm)), key=self.perm.__getitem__)


def rotation_matrix(head_dim: int, position: int, *, base: float = 10000.0, style: str = "half",
                    device: torch.device | str | None = None) -> torch.Tensor:
    """``[D, D]`` matrix ``R_m`` with ``apply_rope(x)`` at position m equal to ``R_m @ x``.

    >>> rotation_matrix(2, 0).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    eye = torch.eye(head_dim, dtype=F64, device=resolve_device(device))       # rows e_j
    return apply_rope(eye[:, None, :], [position], base=base, style=style)[:, 0, :].T   # (D, D)


def conventions_view(head_dim: int = 8, base: float = 10000.0, position: int = 1, *, seed: int = 0,
                     device: torch.device | str | None = None) -> ConventionsView:
    """Which dimensions pair up in each layout, ``R_m`` in each, and the permutation checked three ways.

    >>> v = conventions_view(4, position=3)
    >>> v.perm, v.pair_of_dim, v.matrix_diff
    ([0, 2, 1, 3], {'half': [0, 1, 0, 1], 'interleaved': [0, 0, 1, 1]}, 0.0)
    """
    head_dim = check_head_dim(head_dim, "pos_diagram_dim", MAX_DIAGRAM_DIM)
    base = check_base(base)
    position = whole("pos_position", position, 0, MAX_POSITION)
    device = resolve_device(device)
    with timed(device) as watch:
        perm = rope_permutation(head_dim, device=device)                    # (D,)
        pairs = torch.arange(head_dim // 2).tolist()
        pair_of_dim = {"half": pairs + pairs, "interleaved": [i for i in pairs for _ in range(2)]}
        rot = {style: rotation_matrix(head_dim, position, base=base, style=style, device=device)
               for style in ("interleaved", "half")}
        rot["permuted"] = rot["interleaved"][perm][:, perm]
        g = generator(seed, device)
        x = torch.randn(2, 3, 16, head_dim, generator=g, device=device, dtype=F64)   # (B, H, T, D)
        max_diff = {}
        for dtype in (torch.float64, torch.float32):
            xd = x.to(dtype)
            half = apply_rope(xd[..., perm], base=base, style="half")
            inter = apply_rope(xd, base=base, style="interleaved")[..., perm]
            max_diff[str(dtype).removeprefix("torch.")] = (half - inter).abs().max().item()
        # Hugging Face's checkpoint conversion: permute the rows of W_q and W_k, then use rotate_half.
        w_q, w_k = torch.randn(2, head_dim, 2 * head_dim, generator=g, device=device, dtype=F64)
        tokens = torch.randn(2, 2 * head_dim, generator=g, device=device, dtype=F64)   # x_m, x_n
        q, k = tokens[0] @ w_q.T, tokens[1] @ w_k.T                          # (D,)
        q_hf, k_hf = tokens[0] @ w_q[perm].T, tokens[1] @ w_k[perm].T
        at = dict(base=base)
        meta = apply_rope(q[None], [position], style="interleaved", **at) @ apply_rope(
            k[None], [0], style="interleaved", **at).T
        hf = apply_rope(q_hf[None], [position], style="half", **at) @ apply_rope(k_hf[None], [0], style="half", **at).T
        result = ConventionsView(head_dim, base, position, perm.tolist(), pair_of_dim, rot, max_diff,
                                 (rot["half"] - rot["permuted"]).abs().max().item(),
                                 {"meta": meta.item(), "hf": hf.item()})
    result.timing = watch.timing
    return result


# --------------------------------------------------------------------------- compare


MAX_BIAS_PANELS = 8


@dataclass
class CompareView:
    T: int
    d_model: int
    base: float
    pe: torch.Tensor                         # (T, d) sinusoidal encoding
    slopes: torch.Tensor                     # (H,) ALiBi slopes
    heads: list[int]                         # heads whose bias is drawn (at most 8)
    bias: torch.Tensor                       # (len(heads), T, T)
    same_token: dict[str, torch.Tensor]      # scheme -> (T, T) logit of one token repeated at every position
    spread: dict[str, float]                 # scheme -> largest max - min along a diagonal
    timing: Timing = field(default=None)     # type: ignore[assignment]

    @property
    def power_of_two(self) -> int:
        """ALiBi's rule: the slopes of this many heads (the largest power of 2 ≤ H) come first."""
        return alibi_power_of_two(len(self.slopes))


def shown_heads(n_heads: int, most: int = MAX_BIAS_PANELS) -> list[int]:
    """Every head when there are few, else ``most`` heads spread from the first to the last.

    >>> shown_heads(6), shown_heads(32)
    ([0, 1, 2, 3, 4, 5], [0, 4, 9, 13, 18, 22, 27, 31])
    """
    if n_heads <= most:
        return list(range(n_heads))
    return [round(j * (n_heads - 1) / (most - 1)) for j in range(most)]


def compare_view(T: int = 32, d_model: int = 64, n_heads: int = 8, base: float = 10000.0, *, seed: int = 0,
                 device: torch.device | str | None = None) -> CompareView:
    """Sinusoidal encoding, ALiBi biases, and one token's logits against itself under each scheme.

    The token is a seeded vector ``x`` of ``d_model`` dimensions at every position; the logit of
    query m and key n is ``q·k/√d`` with ``(x + p_m)·(x + p_n)`` (sinusoidal), ``(R_m x)·(R_n x)``
    (RoPE, interleaved pairs as in the sinusoidal layout) or ``x·x - slope_1·|m - n|`` (ALiBi, head 1).

    >>> v = compare_view(T=6, d_model=8, n_heads=2)
    >>> v.spread["rope"] < 1e-12, v.spread["alibi"] < 1e-12, v.spread["sinusoidal"] > 0.1
    (True, True, True)
    """
    T = whole("pos_compare_len", T, 1, MAX_COMPARE_LEN)
    d_model = check_head_dim(d_model, "d_model", MAX_D_MODEL)
    n_heads = whole("pos_heads", n_heads, 1, MAX_HEADS)
    base = check_base(base)
    device = resolve_device(device)
    with timed(device) as watch:
        pe = sinusoidal_encoding(T, d_model, base, device=device, dtype=F64)   # (T, d)
        slopes = alibi_slopes(n_heads, device=device, dtype=F64)               # (H,)
        heads = shown_heads(n_heads)
        bias = alibi_bias(n_heads, T, device=device, dtype=F64)[heads]          # (h, T, T)
        x = _random_vectors(1, d_model, seed, device)[0]                       # (d,)
        scale = math.sqrt(d_model)
        rotated = apply_rope(x.expand(T, -1), base=base, style="interleaved")  # (T, d)
        same = {"sinusoidal": (x + pe) @ (x + pe).T / scale,
                "rope": rotated @ rotated.T / scale,
                "alibi": x @ x / scale + bias[0]}
        spread = {}
        for name, logits in same.items():
            _, low, high = diagonal_range(logits)
            spread[name] = (high - low).max().item()
        result = CompareView(T, d_model, base, pe, slopes, heads, bias, same, spread)
    result.timing = watch.timing
    return result
