"""Where the norm goes: Post-LN, Pre-LN, Sandwich-LN and DeepNorm, and the gradients they give.

One transformer block, the placement of its norms a config switch (``variant``)::

    post      x ← Norm(x + F(x))              Vaswani et al. 2017, BERT
    pre       x ← x + F(Norm(x))              GPT-2; a final Norm before the head
    sandwich  x ← x + Norm(F(Norm(x)))        CogView (Ding et al. 2021, § 2.4); final Norm
    deepnorm  x ← Norm(α·x + F(x))            DeepNet (Wang et al. 2022, § 2.3): decoder-only,
                                              α = (2M)^¼, and the value, output and FFN weights
                                              start Xavier-normal with gain β = (8M)^−¼

``F`` is causal multi-head self-attention, then a ReLU FFN of width 4·d, each a residual
sublayer; ``Norm`` is :class:`LayerNorm` or :class:`RMSNorm` (Zhang & Sennrich 2019).

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
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from models.device import Timing, generator, on_gpu, resolve_device, timed
from models.limits import (NORM_MAX_BATCH, NORM_MAX_D_MODEL, NORM_MAX_HEADS, NORM_MAX_LAYERS,
                           NORM_MAX_SEQ_LEN, NORM_MAX_WORK, NORM_SWEEP_MAX_WORK)

Variant = Literal["post", "pre", "sandwich", "deepnorm"]
NormKind = Literal["layernorm", "rmsnorm"]
VARIANTS: tuple[Variant, ...] = ("post", "pre", "sandwich", "deepnorm")
NORM_KINDS: tuple[NormKind, ...] = ("layernorm", "rmsnorm")
# Parameter groups reported per layer, bottom to top; "total" is every parameter of the block.
GROUPS = ("attn_q", "attn_k", "attn_v", "attn_qkv", "attn_out", "ffn_in", "ffn_out", "total")
EPS = 1e-5
# fairseq's (and torch.nn.MultiheadAttention's) q, k, v init: Xavier with gain 1/√2, i.e. variance 1/(2d).
QKV_GAIN = 2 ** -0.5


class LayerNorm(nn.Module):
    """Ba et al. 2016: ``(x − mean) / √(var + eps) · weight + bias`` over the last dimension.

    The variance is the biased one (divide by d), as ``torch.nn.LayerNorm``.

    >>> LayerNorm(4)(torch.tensor([[1.0, 2.0, 3.0, 6.0]])).round(decimals=4)
    tensor([[-1.0690, -0.5345,  0.0000,  1.6036]], grad_fn=<RoundBackward1>)
    """

    def __init__(self, d: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)                                    # (..., 1)
        var = (x - mean).pow(2).mean(-1, keepdim=True)                     # (..., 1)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias


class RMSNorm(nn.Module):
    """Zhang & Sennrich 2019: ``x / √(mean(x²) + eps) · weight``: no centring, no bias.

    >>> RMSNorm(2)(torch.tensor([[3.0, 4.0]])).round(decimals=4)    # rms = √12.5
    tensor([[0.8485, 1.1314]], grad_fn=<RoundBackward1>)
    """

    def __init__(self, d: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


NORMS = {"layernorm": LayerNorm, "rmsnorm": RMSNorm}


def deepnorm_constants(n_layers: int) -> tuple[float, float]:
    """DeepNet's (α, β) for a decoder-only stack of M layers: ((2M)^¼, (8M)^−¼).

    >>> deepnorm_constants(2)       # (4^¼, 16^−¼)
    (1.4142135623730951, 0.5)
    """
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
        raise ValueError(f"n_layers = {n_layers!r} must be a positive integer")
    return (2 * n_layers) ** 0.25, (8 * n_layers) ** -0.25


def _check_int(name: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} = {value!r} must be a whole number from {low} to {high}")


@dataclass(frozen=True)
class StackConfig:
    """A decoder-only character LM whose blocks all use one norm placement.

    >>> StackConfig(vocab_size=10, d_model=96, n_heads=5)
    Traceback (most recent call last):
    ...
    ValueError: d_model = 96 must be divisible by n_heads = 5 (try 4 or 6 heads)
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
        _check_int("vocab_size", self.vocab_size, 2, 1_000_000)
        _check_int("n_layers", self.n_layers, 1, NORM_MAX_LAYERS)
        _check_int("d_model", self.d_model, 2, NORM_MAX_D_MODEL)
        _check_int("n_heads", self.n_heads, 1, NORM_MAX_HEADS)
        _check_int("max_seq_len", self.max_seq_len, 1, NORM_MAX_SEQ_LEN)
        if self.d_model % self.n_heads:
            fits = [h for h in range(1, NORM_MAX_HEADS + 1) if self.d_model % h == 0]
            near = sorted(fits, key=lambda h: abs(h - self.n_heads))[:2]
            raise ValueError(f"d_model = {self.d_model} must be divisible by n_heads = {self.n_heads} "
                             f"(try {' or '.join(map(str, sorted(near)))} heads)")
        if self.d_model % 2:
            raise ValueError(f"d_model = {self.d_model} must be even (sinusoidal positions pair dimensions)")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant {self.variant!r} must be one of {', '.join(VARIANTS)}")
        if self.norm not in NORM_KINDS:
            raise ValueError(f"norm {self.norm!r} must be one of {', '.join(NORM_KINDS)}")

    @property
    def alpha(self) -> float:
        """The residual scale: DeepNet's α for ``deepnorm``, 1 otherwise."""
        return deepnorm_constants(self.n_layers)[0] if self.variant == "deepnorm" else 1.0

    @property
    def beta(self) -> float:
        """The init gain of value, output and FFN weights: DeepNet's β for ``deepnorm``, 1 otherwise."""
        return deepnorm_constants(self.n_layers)[1] if self.variant == "deepnorm" else 1.0


class Block(nn.Module):
    """Causal self-attention and a ReLU FFN (width 4·d), each a residual sublayer placed by ``variant``."""

    def __init__(self, cfg: StackConfig):
        super().__init__()
        d, norm = cfg.d_model, NORMS[cfg.norm]
        self.variant, self.alpha, self.n_heads = cfg.variant, cfg.alpha, cfg.n_heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ffn_in = nn.Linear(d, 4 * d)
        self.ffn_out = nn.Linear(4 * d, d)
        self.norm_attn, self.norm_ffn = norm(d), norm(d)           # before F (pre) or after the sum (post)
        sandwich = cfg.variant == "sandwich"
        self.norm_attn_out = norm(d) if sandwich else None         # Sandwich-LN: Norm on F's output too
        self.norm_ffn_out = norm(d) if sandwich else None

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).unbind(2)   # 3 × (B, T, H, hs)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)                              # (B, H, T, hs)
        return self.out(y.transpose(1, 2).reshape(B, T, C))                             # (B, T, C)

    def ffn(self, x: torch.Tensor) -> torch.Tensor:
        return self.ffn_out(F.relu(self.ffn_in(x)))                                     # (B, T, C)

    def sublayer(self, x: torch.Tensor, f, norm: nn.Module, norm_out: nn.Module | None) -> torch.Tensor:
        """One residual sublayer ``f`` with the norms where ``variant`` puts them."""
        if self.variant in ("post", "deepnorm"):
            return norm(self.alpha * x + f(x))                   # Norm(α·x + F(x)), α = 1 for Post-LN
        h = f(norm(x))                                           # Pre-LN: F(Norm(x))
        return x + (norm_out(h) if norm_out is not None else h)  # Sandwich: x + Norm(F(Norm(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:          # (B, T, C) -> (B, T, C)
        x = self.sublayer(x, self.attention, self.norm_attn, self.norm_attn_out)
        return self.sublayer(x, self.ffn, self.norm_ffn, self.norm_ffn_out)


def sinusoids(seq_len: int, d: int) -> torch.Tensor:
    """``[T, d]`` positions of Vaswani et al.: sin on even dimensions, cos on odd.

    >>> sinusoids(2, 4)[1].round(decimals=4)              # position 1: sin 1, cos 1, sin 0.01, cos 0.01
    tensor([0.8415, 0.5403, 0.0100, 1.0000])
    """
    pos = torch.arange(seq_len, dtype=torch.float64)[:, None]                           # (T, 1)
    freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)                  # (d/2,)
    table = torch.zeros(seq_len, d, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return table.float()


class NormStack(nn.Module):
    """Embedding + sinusoidal positions, ``n_layers`` blocks, a final Norm where the residual stream
    is not normalised (pre, sandwich), and a linear head to next-character logits."""

    def __init__(self, cfg: StackConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.register_buffer("positions", sinusoids(cfg.max_seq_len, cfg.d_model), persistent=False)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.final_norm = NORMS[cfg.norm](cfg.d_model) if cfg.variant in ("pre", "sandwich") else nn.Identity()
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    @torch.no_grad()
    def initialise(self, seed: int) -> "NormStack":            # on the CPU
        """Xiong et al.'s setting (fairseq's Transformer), reproducible: Xavier-normal weights, with
        gain 1/√2 on q, k, v and DeepNet's extra gain β on value, output and FFN weights (as in
        torchscale); zero biases; N(0, 1) embeddings (fairseq's N(0, 1/d) times √d); an N(0, 1/d) head;
        unit norm gains.

        The draws come in the same order for every variant, so Post-LN and Pre-LN built with one
        seed have identical weights: only the placement of the norms differs.
        """
        gen = generator(seed, torch.device("cpu"))
        d, beta = self.cfg.d_model, self.cfg.beta
        self.embed.weight.normal_(0.0, 1.0, generator=gen)
        for block in self.blocks:
            q, k, v = block.qkv.weight.view(3, d, d).unbind(0)                      # 3 × (d, d)
            for weight, gain in ((q, QKV_GAIN), (k, QKV_GAIN), (v, QKV_GAIN * beta), (block.out.weight, beta),
                                 (block.ffn_in.weight, beta), (block.ffn_out.weight, beta)):
                nn.init.xavier_normal_(weight, gain=gain, generator=gen)
            for lin in (block.qkv, block.out, block.ffn_in, block.ffn_out):
                lin.bias.zero_()
        self.head.weight.normal_(0.0, d ** -0.5, generator=gen)
        for module in self.modules():
            if isinstance(module, (LayerNorm, RMSNorm)):
                module.weight.fill_(1.0)
                if isinstance(module, LayerNorm):
                    module.bias.zero_()
        return self

    def forward(self, ids: torch.Tensor) -> torch.Tensor:          # (B, T) int -> (B, T, V)
        T = ids.shape[1]
        x = self.embed(ids) + self.positions[:T]                     # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x))                         # (B, T, V)

    def loss(self, ids: torch.Tensor) -> torch.Tensor:
        """Mean next-character cross-entropy over a batch ``[B, T+1]`` of ids."""
        logits = self(ids[:, :-1])                                   # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())


def build_stack(cfg: StackConfig, *, seed: int = 0, device=None) -> NormStack:
    """A :class:`NormStack` on ``device``, initialised with ``seed`` (drawn on the CPU, so every device
    starts from the same weights)."""
    return NormStack(cfg).initialise(seed).to(resolve_device(device))


def block_gradient_norms(block: Block) -> torch.Tensor:
    """``[len(GROUPS)]`` Frobenius norms of one block's weight gradients (after ``backward``)."""
    d = block.out.weight.shape[0]
    q, k, v = block.qkv.weight.grad.view(3, d, d).unbind(0)
    weights = [q, k, v, block.qkv.weight.grad, block.out.weight.grad, block.ffn_in.weight.grad,
               block.ffn_out.weight.grad]
    every = [p.grad for p in block.parameters() if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in every]))
    return torch.stack([*(torch.linalg.vector_norm(w) for w in weights), total])


def check_work(n_layers: int, d_model: int, tokens: int, runs: int = 1, *, limit: float = NORM_MAX_WORK) -> None:
    """Refuse a request whose multiply-adds would keep a public Space busy for too long.

    One unit is 2^30 of layers × d_model² × tokens (about 12 × 2^30 multiply-adds forward and back).

    >>> check_work(24, 512, 4096, runs=4)
    Traceback (most recent call last):
    ...
    ValueError: 24 layers × width 512 × 4096 tokens × 4 runs is too much work for one request (96 units, at most 8): use fewer layers, a smaller width, fewer tokens or fewer variants
    """
    units = n_layers * d_model ** 2 * tokens * runs / 2 ** 30
    if units > limit:
        raise ValueError(f"{n_layers} layers × width {d_model} × {tokens} tokens × {runs} runs is too much work "
                         f"for one request ({units:.0f} units, at most {limit:g}): use fewer layers, a smaller "
                         "width, fewer tokens or fewer variants")


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
    _check_int("seq_len", seq_len, 2, NORM_MAX_SEQ_LEN)
    _check_int("batch", batch, 1, NORM_MAX_BATCH)


def _gradient_norms(n_layers: int, *, variant: Variant, d_model: int = 256, n_heads: int = 4,
                    seq_len: int = 64, batch: int = 16, seed: int = 0, norm: NormKind = "layernorm",
                    device=None) -> GradNorms:
    """One backward pass at initialisation on a seeded batch of the corpus; per-layer gradient norms.

    The same ``seed`` gives the same batch and the same initial weights for every variant.

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
        model = build_stack(cfg, seed=seed, device=device)
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


@on_gpu
def compare_variants(n_layers: int, variants: list[str], **kwargs) -> dict[str, GradNorms]:
    """:func:`layer_gradient_norms` of several variants with one seed (the same weights and batch);
    the work bound counts them all. ``kwargs`` go to :func:`layer_gradient_norms`.

    >>> g = compare_variants(2, ["post", "pre"], d_model=16, n_heads=2, seq_len=8, batch=1)
    >>> list(g), len(g["pre"].stream_rms)
    (['post', 'pre'], 2)
    """
    if not variants:
        raise ValueError(f"choose at least one variant of {', '.join(VARIANTS)}")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"variant {unknown[0]!r} must be one of {', '.join(VARIANTS)}")
    _batch_args(kwargs.get("seq_len", 64), kwargs.get("batch", 16))
    check_work(n_layers, kwargs.get("d_model", 256), kwargs.get("seq_len", 64) * kwargs.get("batch", 16),
               len(variants))
    return {v: _gradient_norms(n_layers, variant=v, **kwargs) for v in dict.fromkeys(variants)}


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

    Xiong et al.'s Theorem 1: the top FFN's gradient does not shrink with depth in Post-LN and
    shrinks as 1/√L in Pre-LN. ``kwargs`` go to :func:`layer_gradient_norms`.

    >>> [(p.variant, p.n_layers) for p in depth_sweep([1, 2], ["pre"], d_model=16, n_heads=2, seq_len=8, batch=1)]
    [('pre', 1), ('pre', 2)]
    """
    if not depths or not variants:
        raise ValueError("the depth sweep needs at least one depth and one variant")
    check_work(sum(depths), kwargs.get("d_model", 256), kwargs.get("seq_len", 64) * kwargs.get("batch", 16),
               len(variants), limit=NORM_SWEEP_MAX_WORK)
    for n_layers in depths:
        for variant in variants:
            g = _gradient_norms(n_layers, variant=variant, **kwargs)
            yield DepthPoint(variant, n_layers, {k: v[-1] for k, v in g.per_layer.items()}, g.timing)


def sweep_depths(max_layers: int) -> list[int]:
    """The depths a sweep visits up to ``max_layers``: roughly doubling, the maximum included.

    >>> sweep_depths(24)
    [1, 2, 3, 4, 6, 8, 12, 16, 24]
    >>> sweep_depths(5)
    [1, 2, 3, 4, 5]
    """
    _check_int("max_layers", max_layers, 1, NORM_MAX_LAYERS)
    ladder = [1, 2, 3, 4, 6, 8, 12, 16, 24]
    return [d for d in ladder if d < max_layers] + [max_layers]


def train_compare(*args, **kwargs):
    """The training comparison: see :func:`models.norm_training.train_compare`."""
    from models.norm_training import train_compare as run
    return run(*args, **kwargs)
