"""Where the norm goes: Post-LN, Pre-LN, Sandwich-LN and DeepNorm, and the gradients they give.

The one transformer (:mod:`models.transformer`) with the placement of its norms a config switch
(``variant``, the transformer's ``placement``)::

    post      x ← Norm(x + F(x))              Vaswani et al. 2017, BERT
    pre       x ← x + F(Norm(x))              GPT-2; a final Norm before the head
    sandwich  x ← x + Norm(F(Norm(x)))        CogView (Ding et al. 2021, § 2.4); final Norm
    deepnorm  x ← Norm(α·x + F(x))            DeepNet (Wang et al. 2022, § 2.3): decoder-only,
                                              α = (2M)^¼, and the value, output and FFN weights
                                              start Xavier-normal with gain β = (8M)^−¼

``F`` is causal multi-head self-attention, then a ReLU FFN of width 4·d, each a residual
sublayer; ``Norm`` is :class:`LayerNorm` or :class:`RMSNorm` (Zhang & Sennrich 2019). The stack of
this tab is :meth:`StackConfig.transformer`: sinusoidal positions, biases, Xavier init, no tied head.

:func:`layer_gradient_norms` repeats the experiment of Xiong et al. 2020, "On Layer Normalization in
the Transformer Architecture" (§ 3, Figure 3): at initialisation (Xavier-normal weights, zero
biases, unit-variance embeddings plus sinusoidal positions, as fairseq's Transformer), one backward
pass of the language-model loss on a real batch of the shipped English corpus, and the Frobenius
norm of each weight's gradient, layer by layer. Post-LN's FFN-out gradient grows toward the top
(each Norm on the way down divides the gradient by the standard deviation of ``x + F(x)``, which
is above 1), Pre-LN's is the same at every layer; their Theorem 1 gives the top layer's scale,
O(d√(ln d)) for Post-LN whatever the depth L and O(d√(ln d / L)) for Pre-LN (:func:`depth_sweep`).

The training comparison (:func:`train_compare`) lives in :mod:`models.norm_training`; the
normalisation-axes view (LayerNorm vs RMSNorm vs BatchNorm) in :mod:`models.norm_axes`.

Not handled: dropout, encoder-decoder stacks (the stack here is a decoder-only character LM, the
setting of GPT-2 and of DeepNet's decoder-only α, β), learned positions, mixed precision.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Literal

import torch

from models.checks import InputError, choice, whole
from models.device import Timing, on_gpu, resolve_device, timed
from models.limits import (GRAD_BATCH, GRAD_D_MODEL, GRAD_SEQ_LEN, NORM_MAX_BATCH, NORM_MAX_D_MODEL, NORM_MAX_HEADS,
                           NORM_MAX_LAYERS, NORM_MAX_SEQ_LEN, NORM_MAX_WORK, NORM_SWEEP_MAX_WORK)
from models.transformer import Block, Transformer, TransformerConfig, deepnorm_constants
from models.transformer.layers import EPS, NORMS, LayerNorm, RMSNorm

__all__ = ["LayerNorm", "RMSNorm", "NORMS", "EPS", "Block", "StackConfig", "build_stack", "deepnorm_constants",
           "layer_gradient_norms", "compare_variants", "gradients_by_variant", "depth_sweep", "sweep_depths",
           "GradNorms", "DepthPoint", "Trend", "gradient_trend", "GRAD_BATCH", "GRAD_D_MODEL", "GRAD_SEQ_LEN"]

Variant = Literal["post", "pre", "sandwich", "deepnorm"]
NormKind = Literal["layernorm", "rmsnorm"]
VARIANTS: tuple[Variant, ...] = ("post", "pre", "sandwich", "deepnorm")
NORM_KINDS: tuple[NormKind, ...] = ("layernorm", "rmsnorm")
# Parameter groups reported per layer, bottom to top; "total" is every parameter of the block.
GROUPS = ("attn_q", "attn_k", "attn_v", "attn_qkv", "attn_out", "ffn_in", "ffn_out", "total")


@dataclass(frozen=True)
class StackConfig:
    """A decoder-only character LM whose blocks all use one norm placement.

    >>> StackConfig(vocab_size=10, d_model=96, n_heads=5)
    Traceback (most recent call last):
    ...
    models.checks.InputError: d_model = 96 must be divisible by n_heads = 5 (try 4 / 6 heads)
    """

    vocab_size: int
    n_layers: int = 12
    d_model: int = 256
    n_heads: int = 4
    # placement and kind of the norms
    variant: Variant = "pre"
    norm: NormKind = "layernorm"
    max_seq_len: int = NORM_MAX_SEQ_LEN

    def __post_init__(self):
        whole("vocab_size", self.vocab_size, 2, 1_000_000)
        whole("n_layers", self.n_layers, 1, NORM_MAX_LAYERS)
        whole("d_model", self.d_model, 2, NORM_MAX_D_MODEL)
        whole("n_heads", self.n_heads, 1, NORM_MAX_HEADS)
        whole("max_seq_len", self.max_seq_len, 1, NORM_MAX_SEQ_LEN)
        if self.d_model % 2:                                              # first: a suggested head count
            raise InputError("norms_err_odd", d_model=self.d_model)      # would still fail for an odd d
        if self.d_model % self.n_heads:
            fits = [h for h in range(1, NORM_MAX_HEADS + 1) if self.d_model % h == 0]
            below = [h for h in fits if h < self.n_heads][-1:]            # the nearest on either side
            above = [h for h in fits if h > self.n_heads][:1]
            raise InputError("norms_err_heads", d_model=self.d_model, n_heads=self.n_heads,
                             near=" / ".join(map(str, below + above)))
        choice("norms_variant", self.variant, VARIANTS)
        choice("norms_norm", self.norm, NORM_KINDS)

    def transformer(self) -> TransformerConfig:
        """The one transformer in Xiong et al.'s setting with this placement and norm."""
        return TransformerConfig(
            vocab_size=self.vocab_size, n_layers=self.n_layers, d_model=self.d_model, n_heads=self.n_heads,
            max_seq_len=self.max_seq_len, positions="sinusoidal", norm=self.norm, norm_eps=EPS,
            placement=self.variant, ffn="relu", d_ff=4 * self.d_model, qkv_bias=True, out_bias=True, ffn_bias=True,
            init="xavier")


def build_stack(cfg: StackConfig, *, seed: int = 0, device=None, drawn: Transformer | None = None) -> Transformer:
    """The stack of ``cfg`` on ``device``, initialised with ``seed`` (drawn on the CPU, so every device starts
    from the same weights, and Post-LN and Pre-LN built with one seed have identical weights: only the
    placement of the norms differs).

    ``drawn``: a stack built with the same seed whose drawn weights are copied instead of drawn again
    (~10x cheaper: 40 ms of the 180 ms of one gradient measurement at 12 layers). Post, Pre and
    Sandwich draw the same numbers in the same order; DeepNorm scales them, so it always draws.

    >>> cfg = StackConfig(vocab_size=8, n_layers=2, d_model=16, n_heads=2)
    >>> post = build_stack(cfg, seed=1)
    >>> sandwich = StackConfig(**{**cfg.__dict__, "variant": "sandwich"})
    >>> a, b = build_stack(sandwich, seed=1).state_dict(), build_stack(sandwich, seed=1, drawn=post).state_dict()
    >>> list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    True
    """
    if drawn is None or "deepnorm" in (cfg.variant, drawn.config.placement):
        return Transformer.seeded(cfg.transformer(), seed, device=resolve_device(device))
    model = Transformer(cfg.transformer(), device="meta").to_empty(device=drawn.embed.weight.device)
    if model.config.tie_embeddings:                                 # to_empty makes one tensor per module
        model.head.weight = model.embed.weight
    model.init_fixed()
    fixed = model.undrawn()
    theirs = drawn.state_dict()
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name in theirs and theirs[name].shape == tensor.shape:
                tensor.copy_(theirs[name])
            elif name not in fixed:
                raise ValueError(f"{name} is drawn, and {drawn.config.placement}'s stack has no such weight")
    return model


def block_gradient_norms(block: Block) -> torch.Tensor:
    """``[len(GROUPS)]`` Frobenius norms of one block's weight gradients (after ``backward``)."""
    qkv = block.attn.qkv.weight.grad
    q, k, v = qkv.split(block.attn.split, 0)
    weights = [q, k, v, qkv, block.attn.out.weight.grad, block.ffn.w_in.weight.grad, block.ffn.w_out.weight.grad]
    every = [p.grad for p in block.parameters() if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in every]))
    return torch.stack([*(torch.linalg.vector_norm(w) for w in weights), total])


def check_work(n_layers: int, d_model: int, tokens: int, runs: int = 1, *, limit: float = NORM_MAX_WORK) -> None:
    """Refuse a request whose multiply-adds would keep a public Space busy for too long.

    One unit is 2^30 of layers × d_model² × tokens (about 12 × 2^30 multiply-adds forward and back).

    >>> check_work(24, 512, 4096, runs=4)
    Traceback (most recent call last):
    ...
    models.checks.InputError: 24 layers × width 512 × 4096 tokens × 4 runs is too much work for one request (96 units, at most 8): use fewer layers, a smaller width, fewer tokens or fewer variants
    """
    units = n_layers * d_model ** 2 * tokens * runs / 2 ** 30
    if units > limit:
        raise InputError("norms_err_work", layers=n_layers, width=d_model, tokens=tokens, runs=runs,
                         units=f"{units:.0f}", limit=f"{limit:g}")


@dataclass(frozen=True)
class GradNorms:
    """Per-layer gradient norms of one variant at initialisation, bottom layer first."""

    variant: str
    norm: str
    per_layer: dict[str, list[float]]      # GROUPS -> one value per layer
    stream_rms: list[float]                # RMS of the residual stream after each block
    loss: float                            # the loss whose gradient this is (≈ ln vocab at init)
    timing: Timing


def _batch_args(seq_len: int, batch: int) -> None:
    whole("seq_len", seq_len, 2, NORM_MAX_SEQ_LEN)
    whole("batch", batch, 1, NORM_MAX_BATCH)


def _gradient_norms(n_layers: int, *, variant: Variant, d_model: int = GRAD_D_MODEL, n_heads: int = 4,
                    seq_len: int = GRAD_SEQ_LEN, batch: int = GRAD_BATCH, seed: int = 0,
                    norm: NormKind = "layernorm", device=None,
                    drawn: list[Transformer] | None = None) -> GradNorms:
    """One backward pass at initialisation on a seeded batch of the corpus; per-layer gradient norms.

    The same ``seed`` gives the same batch and the same initial weights for every variant. ``drawn``: a list
    holding a stack built with the same seed and size to copy the weights from (see :func:`build_stack`),
    or an empty list that this call fills with its own stack.

    >>> g = _gradient_norms(4, variant="post", d_model=32, n_heads=2, seq_len=16, batch=2)
    >>> len(g.per_layer["ffn_out"]), sorted(g.per_layer) == sorted(GROUPS)
    (4, True)
    """
    from models.norm_data import char_batch, vocabulary

    _batch_args(seq_len, batch)
    device = resolve_device(device)
    cfg = StackConfig(vocab_size=len(vocabulary()), n_layers=n_layers, d_model=d_model, n_heads=n_heads,
                      variant=variant, norm=norm, max_seq_len=seq_len)
    check_work(n_layers, d_model, seq_len * batch)
    with timed(device) as watch:
        model = build_stack(cfg, seed=seed, device=device, drawn=drawn[0] if drawn else None)
        if drawn is not None and not drawn and variant != "deepnorm":
            drawn.append(model)
        ids = char_batch(batch, seq_len + 1, seed=seed, device=device)            # (B, T+1)
        rms: list[torch.Tensor] = []
        hooks = [b.register_forward_hook(lambda _m, _i, out: rms.append(out.detach().pow(2).mean().sqrt()))
                 for b in model.blocks]
        loss = model.loss(ids)
        loss.backward()
        for hook in hooks:
            hook.remove()
        norms = torch.stack([block_gradient_norms(b) for b in model.blocks])       # (L, groups)
        rows, stream, loss_value = norms.T.tolist(), torch.stack(rms).tolist(), loss.item()
    return GradNorms(variant, norm, dict(zip(GROUPS, rows)), stream, loss_value, watch.timing)


layer_gradient_norms = on_gpu(_gradient_norms)    # the public entry point; the private one nests in others


def _each_variant(n_layers: int, variants: list[str], **kwargs) -> Iterator[GradNorms]:
    """:func:`layer_gradient_norms` of each variant in turn, with one seed (the same weights and batch);
    the work bound counts them all, and is checked before the first is measured."""
    if not variants:
        raise InputError("norms_err_no_variant", variants=", ".join(VARIANTS))
    for variant in variants:
        choice("norms_variant", variant, VARIANTS)
    seq_len, batch = kwargs.get("seq_len", GRAD_SEQ_LEN), kwargs.get("batch", GRAD_BATCH)
    _batch_args(seq_len, batch)
    check_work(n_layers, kwargs.get("d_model", GRAD_D_MODEL), seq_len * batch, len(variants))
    drawn: list[Transformer] = []                   # the first stack's weights, copied by the others
    for variant in dict.fromkeys(variants):
        yield _gradient_norms(n_layers, variant=variant, drawn=drawn, **kwargs)


@on_gpu(duration=60)
def gradients_by_variant(n_layers: int, variants: list[str], **kwargs) -> Iterator[GradNorms]:
    """:func:`compare_variants` one variant at a time: each :class:`GradNorms` as soon as it is measured
    (what ``/norm_gradients`` streams: the first placement after half the work of two).

    >>> [g.variant for g in gradients_by_variant(2, ["pre", "post"], d_model=16, n_heads=2, seq_len=8, batch=1)]
    ['pre', 'post']
    """
    yield from _each_variant(n_layers, variants, **kwargs)


@on_gpu
def compare_variants(n_layers: int, variants: list[str], **kwargs) -> dict[str, GradNorms]:
    """:func:`layer_gradient_norms` of several variants with one seed (the same weights and batch);
    the work bound counts them all. ``kwargs`` go to :func:`layer_gradient_norms`.

    >>> g = compare_variants(2, ["post", "pre"], d_model=16, n_heads=2, seq_len=8, batch=1)
    >>> list(g), len(g["pre"].stream_rms)
    (['post', 'pre'], 2)
    """
    return {g.variant: g for g in _each_variant(n_layers, variants, **kwargs)}


# A gradient that changes by less than this factor from the bottom layer to the top is "about flat".
FLAT_WITHIN = 1.1


@dataclass(frozen=True)
class Trend:
    """How the placements' FFN-out gradients change from the bottom layer to the top: the numbers the
    tab's summary states. Each dict is keyed by variant, in the order measured."""

    bottom: dict[str, float]               # layer 1's FFN-out gradient norm
    top: dict[str, float]                  # the top layer's
    ratio: dict[str, float]                # top / bottom (inf when the bottom is 0)
    direction: dict[str, str]              # "rises", "falls" or "flat" (within FLAT_WITHIN)
    stream_top: dict[str, float]           # residual stream RMS after the last block
    post_over_pre: float | None            # Post-LN's top gradient / Pre-LN's, when both were measured


def gradient_trend(per_layer: dict[str, list[float]], stream_rms: dict[str, list[float]]) -> Trend:
    """The :class:`Trend` of the FFN-out gradients ``per_layer[variant]`` (bottom layer first).

    >>> t = gradient_trend({"post": [1.0, 2.0], "pre": [1.0, 0.5]}, {"post": [1.0, 1.0], "pre": [1.0, 2.0]})
    >>> t.ratio, t.direction, t.post_over_pre
    ({'post': 2.0, 'pre': 0.5}, {'post': 'rises', 'pre': 'falls'}, 4.0)
    """
    bottom = {v: values[0] for v, values in per_layer.items()}
    top = {v: values[-1] for v, values in per_layer.items()}
    ratio = {v: top[v] / bottom[v] if bottom[v] else float("inf") for v in per_layer}
    direction = {v: "rises" if r > FLAT_WITHIN else "falls" if r < 1 / FLAT_WITHIN else "flat" for v, r in ratio.items()}
    both = "post" in top and "pre" in top and top["pre"] > 0
    return Trend(bottom, top, ratio, direction, {v: rms[-1] for v, rms in stream_rms.items()},
                 top["post"] / top["pre"] if both else None)


@dataclass(frozen=True)
class DepthPoint:
    """The top layer's gradient norms of one variant at one depth."""

    variant: str
    n_layers: int
    top: dict[str, float]                  # GROUPS -> the top layer's value
    timing: Timing


@on_gpu(duration=60)
def depth_sweep(depths: list[int], variants: list[str], **kwargs):
    """Yield a :class:`DepthPoint` per (depth, variant), shallow first: the paper's Figure 3 idea.

    Xiong et al.'s Theorem 1 gives the top FFN's gradient a rate: constant in Post-LN, O(1/√L) in
    Pre-LN. What a sweep measures falls more slowly than 1/√L in Pre-LN at these depths, steepening as
    the stack deepens (:func:`depth_slope`: −0.17 over 1-12 layers at the tab's defaults, −0.30 over
    1-24), and does not fall in Post-LN.
    ``kwargs`` go to :func:`layer_gradient_norms`.

    >>> [(p.variant, p.n_layers) for p in depth_sweep([1, 2], ["pre"], d_model=16, n_heads=2, seq_len=8, batch=1)]
    [('pre', 1), ('pre', 2)]
    """
    if not depths or not variants:
        raise InputError("norms_err_sweep_empty")
    tokens = kwargs.get("seq_len", GRAD_SEQ_LEN) * kwargs.get("batch", GRAD_BATCH)
    check_work(sum(depths), kwargs.get("d_model", GRAD_D_MODEL), tokens, len(variants), limit=NORM_SWEEP_MAX_WORK)
    for n_layers in depths:
        for variant in variants:
            g = _gradient_norms(n_layers, variant=variant, **kwargs)
            yield DepthPoint(variant, n_layers, {k: v[-1] for k, v in g.per_layer.items()}, g.timing)


def sweep_depths(max_layers: int) -> list[int]:
    """The depths a sweep visits up to ``max_layers``: roughly doubling, the maximum included, and no
    depth within 1.25× below it (16 beside 17 would be one more point and two overlapping labels).

    >>> sweep_depths(24)
    [1, 2, 3, 4, 6, 8, 12, 16, 24]
    >>> sweep_depths(5), sweep_depths(17)
    ([1, 2, 3, 4, 5], [1, 2, 3, 4, 6, 8, 12, 17])
    """
    whole("max_layers", max_layers, 1, NORM_MAX_LAYERS)
    ladder = [1, 2, 3, 4, 6, 8, 12, 16, 24]
    return [d for d in ladder if 1.25 * d <= max_layers] + [max_layers]


def depth_slope(points: list[tuple[int, float]]) -> float | None:
    """The least-squares slope of log(gradient) against log(L) over a sweep's ``(L, gradient)`` points:
    how a placement's top gradient scales with depth, g ∝ L^slope (Theorem 1's Pre-LN bound: −0.5).
    None until two depths have a finite, positive gradient.

    >>> round(depth_slope([(1, 3.0), (4, 1.5), (16, 0.75)]), 6), depth_slope([(4, 1.0)])
    (-0.5, None)
    """
    kept = [(math.log(L), math.log(g)) for L, g in points if g > 0 and math.isfinite(g)]
    if len({x for x, _ in kept}) < 2:
        return None
    mx = sum(x for x, _ in kept) / len(kept)
    my = sum(y for _, y in kept) / len(kept)
    return sum((x - mx) * (y - my) for x, y in kept) / sum((x - mx) ** 2 for x, _ in kept)
