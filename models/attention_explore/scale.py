"""Why √d: softmax entropy against ``d`` for random vectors with and without the ``1/√d``, beside
closed forms (:func:`entropy_curve`); and the trained model with its scale multiplied
(:func:`scale_effect`): attention sharpens toward one-hot and the held-out loss rises."""
from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from models.attention_explore.trained import (encode_prompt, held_out_text, probed_forward, row_entropy,
                                              trained_model)
from models.checks import whole
from models.device import Timing, resolve_device, timed
from models.limits import (ATTN_ENTROPY_ROWS, ATTN_KEYS, ATTN_LOSS_BLOCK, ATTN_LOSS_CHARS, ATTN_MAX_DIM, ATTN_MIN_DIM,
                           ATTN_MULTIPLIER, SEED)
from models.transformer import Transformer


def scaled_entropy(n: int, sigma2: float = 1.0) -> float:
    """The mean entropy (nats) of ``softmax`` over ``n`` logits drawn i.i.d. from N(0, σ²), for σ² ≪ 2 ln n.

    With ``Z = Σ e^{s_j}`` and ``E[e^s] = e^{σ²/2}``: ``H = ln Z − Σ p_j s_j ≈ ln n − σ²/2``, plus the
    second-order terms of the delta method, ``−(e^{σ²} − 1)/(2n) + σ² e^{σ²}/n``. Scaled attention on
    random unit-variance vectors has σ² = |q|²/d ≈ 1 at every d.

    >>> round(scaled_entropy(64), 4), round(math.log(64) - 0.5, 4)
    (3.6879, 3.6589)
    """
    return math.log(n) - sigma2 / 2 - (math.exp(sigma2) - 1) / (2 * n) + sigma2 * math.exp(sigma2) / n


@functools.cache
def top_gap_density(n: int) -> float:
    """The density at 0 of the gap between the two largest of ``n`` standard normals:
    ``n(n−1) ∫ φ(x)² Φ(x)^{n−2} dx`` (a 1-D integral, by the trapezoid rule on [−12, 12]).

    >>> round(top_gap_density(2), 4), round(1 / math.sqrt(math.pi), 4)      # n = 2: |x − y| has density 2·φ(0)/√2
    (0.5642, 0.5642)
    """
    x = torch.linspace(-12, 12, 24_001, dtype=torch.float64)
    phi = torch.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
    return float(n * (n - 1) * torch.trapezoid(phi ** 2 * cdf ** (n - 2), x))


def frozen_entropy(n: int, d: int) -> float:
    """The mean softmax entropy of ``n`` unscaled scores ``q·k_j`` of random N(0, I_d) vectors, for large d.

    Given q the scores are i.i.d. N(0, |q|²); once |q| is large only the top two compete, and a pair
    with gap g has entropy H₂(|q|g); averaging over the gap (density f₀ at 0, :func:`top_gap_density`):
    ``E[H] ≈ f₀ · E[1/|q|] · ∫₀^∞ H₂(x) dx = f₀ · E[1/|q|] · π²/6``, with
    ``E[1/|q|] = Γ((d−1)/2) / (√2 Γ(d/2))`` (|q| is chi-distributed). So it falls like ``1/√d``.

    >>> round(frozen_entropy(64, 1024) / frozen_entropy(64, 256), 2)         # 1/√d: ÷2 for 4× d
    0.5
    """
    inverse_norm = math.exp(math.lgamma((d - 1) / 2) - math.lgamma(d / 2)) / math.sqrt(2)
    return math.pi ** 2 / 6 * top_gap_density(n) * inverse_norm


QUERIES_PER_DRAW = 32              # random queries that share one draw of keys


@dataclass(frozen=True)
class EntropyCurve:
    """Softmax rows over ``n_keys`` random keys, with and without ``1/√d``, for each ``d`` in ``dims``."""

    dims: list[int]
    n_keys: int
    rows: int
    std_unscaled: list[float]           # std of q·k: √d in theory
    std_scaled: list[float]             # std of q·k/√d: 1
    entropy_unscaled: list[float]       # mean row entropy, nats
    entropy_scaled: list[float]
    max_unscaled: list[float]           # mean of the row's largest weight
    max_scaled: list[float]
    closed_scaled: float                # :func:`scaled_entropy` (the same at every d)
    closed_unscaled: list[float]        # :func:`frozen_entropy` (the large-d limit)
    uniform: float                      # ln n: every key equal


def dims_range(low: int = ATTN_MIN_DIM, high: int = ATTN_MAX_DIM) -> list[int]:
    """Powers of two from ``low`` to ``high``.

    >>> dims_range(8, 64)
    [8, 16, 32, 64]
    """
    return [2 ** e for e in range(low.bit_length() - 1, high.bit_length()) if low <= 2 ** e <= high]


def entropy_curve(n_keys: int = 64, *, rows: int = ATTN_ENTROPY_ROWS, seed: int = 0, dims: list[int] | None = None,
                  device: torch.device | str | None = None) -> EntropyCurve:
    """Measure, for each d, ``rows`` softmax rows of random N(0, I_d) queries against ``n_keys`` random keys
    (``QUERIES_PER_DRAW`` queries share a draw of keys), with and without the ``1/√d``. Seeded, so the
    same arguments give the same curve (kept for the next call).

    >>> c = entropy_curve(64, rows=512, dims=[16, 256])
    >>> [round(s / math.sqrt(d), 1) for s, d in zip(c.std_unscaled, c.dims)], abs(c.entropy_scaled[1] - c.closed_scaled) < 0.05
    ([1.0, 1.0], True)
    """
    n = ATTN_KEYS.whole("attn_scale_keys", n_keys)
    seed = SEED.whole("seed", seed)
    return _entropy_curve(n, rows, seed, tuple(dims or dims_range()), str(resolve_device(device)))


@functools.lru_cache(maxsize=32)
def _entropy_curve(n: int, rows: int, seed: int, dims: tuple[int, ...], dev: str) -> EntropyCurve:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    per_draw = QUERIES_PER_DRAW
    draws = max(1, rows // per_draw)
    out: dict[str, list[float]] = {k: [] for k in ("su", "ss", "eu", "es", "mu", "ms")}
    for d in dims:
        q = torch.randn(draws, per_draw, d, generator=gen).to(dev)                   # (draws, per_draw, d)
        k = torch.randn(draws, n, d, generator=gen).to(dev)                          # (draws, n, d)
        scores = (q @ k.transpose(-2, -1)).flatten(0, 1)                             # (rows, n)
        scaled = scores / math.sqrt(d)
        for tag, s in (("u", scores), ("s", scaled)):
            p = s.softmax(-1)
            out["s" + tag].append(float(s.std()))
            out["e" + tag].append(float(row_entropy(p).mean()))
            out["m" + tag].append(float(p.amax(-1).mean()))
    return EntropyCurve(list(dims), n, draws * per_draw, out["su"], out["ss"], out["eu"], out["es"], out["mu"], out["ms"],
                        scaled_entropy(n), [frozen_entropy(n, d) for d in dims], math.log(n))


def with_scale(model: Transformer, multiplier: float) -> Transformer:
    """A copy of ``model`` whose attention logits are multiplied by ``multiplier`` (its scale becomes
    ``multiplier / √d``; ``√d`` removes the scale). The model itself is not touched.

    >>> from models.transformer import TransformerConfig
    >>> m = Transformer.seeded(TransformerConfig(10, 1, 16, 4, 8), seed=0)
    >>> with_scale(m, 2.0).blocks[0].attn.scale / m.blocks[0].attn.scale
    2.0
    """
    changed = copy.deepcopy(model)
    for block in changed.blocks:
        block.attn.scale = block.attn.scale * multiplier
    return changed


@torch.no_grad()
def held_out_loss(model: Transformer, ids: torch.Tensor, block: int = ATTN_LOSS_BLOCK) -> float:
    """Mean cross-entropy (nats per character) of predicting ``ids[1:]`` in non-overlapping windows of
    ``block``: what :func:`models.tiny_gpt.validation_loss` computes with the same ``block``, with the
    full windows in one batch."""
    n = len(ids) - 1
    full = n // block
    dev = model.head.weight.device
    total = 0.0
    if full:
        x = ids[:full * block].view(full, block).to(dev)                             # (windows, block)
        y = ids[1:full * block + 1].view(full, block).to(dev)
        logits, _ = Transformer.forward(model, x)                                    # (windows, block, V)
        total += F.cross_entropy(logits.flatten(0, 1).double(), y.flatten(), reduction="sum").item()
    if n > full * block:                                                             # the last, shorter window
        window = ids[full * block:].to(dev)
        logits, _ = Transformer.forward(model, window[None, :-1])
        total += F.cross_entropy(logits[0].double(), window[1:], reduction="sum").item()
    return total / n


@functools.lru_cache(maxsize=8)
def _scaled(variant: str, multiplier: float, device: str) -> Transformer:
    model = trained_model(variant, device).model
    return model if multiplier == 1 else with_scale(model, multiplier)


@functools.lru_cache(maxsize=64)
def _loss_at(variant: str, multiplier: float, chars: int, device: str) -> float:
    """The held-out loss of ``variant`` with its logits multiplied (measured once per setting)."""
    ids = torch.tensor(trained_model(variant, device).vocab.encode(held_out_text()[:chars + 1]))
    return held_out_loss(_scaled(variant, multiplier, device), ids)


@dataclass(frozen=True)
class ScaleEffect:
    """The trained model with its attention logits multiplied by ``multiplier``, against itself at 1."""

    name: str
    variant: str
    labels: list[str]
    multiplier: float
    head_dim: int                       # d of q·k: the trained scale is 1/√head_dim
    layer: int
    head: int
    probs_trained: torch.Tensor         # (T, T) of the chosen layer and head
    probs_changed: torch.Tensor
    entropy_trained: torch.Tensor       # (L, H): mean row entropy on the prompt (nats)
    entropy_changed: torch.Tensor
    max_trained: torch.Tensor           # (L, H): mean largest weight of a row
    max_changed: torch.Tensor
    uniform_entropy: float              # of a uniform causal head on the prompt
    loss_trained: float                 # nats per character on `loss_chars` held-out characters
    loss_changed: float
    loss_chars: int
    held_out_chars: int
    timing: Timing


def scale_effect(variant: str, prompt: str, multiplier: float, layer: int = 1, head: int = 1, *,
                 full_text: bool = False, device: torch.device | str | None = None) -> ScaleEffect:
    """Multiply every attention logit of the trained model by ``multiplier`` (``√d`` = the scale removed):
    the prompt's attention patterns and the held-out loss (``ATTN_LOSS_CHARS`` characters, or all of
    the held-out text with ``full_text``), beside the trained model's."""
    loaded = trained_model(variant, device)
    ids = encode_prompt(loaded, prompt)
    cfg = loaded.model.config
    m = ATTN_MULTIPLIER.number("attn_scale_multiplier", multiplier)
    l = whole("attn_view_layer", layer, 1, cfg.n_layers) - 1
    h = whole("attn_view_head", head, 1, cfg.n_heads) - 1
    dev = loaded.model.head.weight.device
    chars = len(held_out_text()) - 1 if full_text else ATTN_LOSS_CHARS
    with timed(dev) as watch:
        _, trained = probed_forward(loaded.model, ids)
        _, changed = probed_forward(_scaled(variant, m, str(dev)), ids)
        p0, p1 = torch.cat(trained.attn_probs).cpu(), torch.cat(changed.attn_probs).cpu()     # (L, H, T, T)
        loss0 = _loss_at(variant, 1.0, chars, str(dev))
        loss1 = _loss_at(variant, m, chars, str(dev))
    positions = torch.arange(1, len(ids) + 1, dtype=torch.float64)
    return ScaleEffect(loaded.name, cfg.variant, list(prompt), m, cfg.qk_dim, l + 1, h + 1, p0[l, h], p1[l, h],
                       row_entropy(p0).mean(-1), row_entropy(p1).mean(-1), p0.amax(-1).mean(-1), p1.amax(-1).mean(-1),
                       float(positions.log().mean()), loss0, loss1, chars, len(held_out_text()), watch.timing)
