"""The routing explorer: a sentence (or seeded random vectors) through one freshly built MoE layer.

Each distinct token (a whitespace-separated word, or one CJK character) gets a fixed random vector
drawn from a generator seeded by the seed and the token's CRC-32, so the same word always meets the
router with the same vector and is always routed the same way (a real model's hidden state would
also depend on the context). The layer is :class:`models.moe.MoELayer`, seeded; two knobs act on
its router only: ``logit_scale`` multiplies the router weights (sharper or flatter probabilities)
and ``skew`` adds a bias to expert 1's logit (a router that prefers one expert: what collapse looks
like from the inside).

:func:`sparsity_counts` compares the layer, counted from its built modules, with a dense FFN of the
same *active* size: a MoE holds ``E/k`` times the expert weights for the FLOPs of ``k`` experts.

Not handled: context-dependent hidden states (no attention before the layer), batching.
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

import torch

from models.checks import InputError, choice
from models.device import Timing, generator, resolve_device, timed
from models.ffn import FFN
from models.limits import (MOE_EXPERT_KINDS, MOE_MAX_CAPACITY_FACTOR, MOE_MAX_CHARS, MOE_MAX_D_HIDDEN, MOE_MAX_D_MODEL,
                           MOE_MAX_EXPERTS, MOE_MAX_LOGIT_SCALE, MOE_MAX_SHARED, MOE_MAX_TOKENS, MOE_MAX_TOP_K,
                           SEED_MAX)
from models.moe import MoELayer, check_capacity, check_number, check_top_k

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
TOKEN_RE = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+|[^\\w\\s]")     # a CJK character | a word | a punctuation mark


def split_tokens(text: str) -> list[str]:
    """Words and punctuation marks; every CJK character is a token of its own. Bounded.

    >>> split_tokens("the cat, 天气晴朗。")
    ['the', 'cat', ',', '天', '气', '晴', '朗', '。']
    """
    if not isinstance(text, str):
        raise InputError("moe_err_text_type")
    if len(text) > MOE_MAX_CHARS:
        raise InputError("moe_err_text_chars", chars=len(text), max=MOE_MAX_CHARS)
    tokens = TOKEN_RE.findall(text)
    if not tokens:
        raise InputError("moe_err_text_empty")
    if len(tokens) > MOE_MAX_TOKENS:
        raise InputError("moe_err_text_tokens", tokens=len(tokens), max=MOE_MAX_TOKENS)
    return tokens


def token_vectors(tokens: list[str], d_model: int, seed: int, device: torch.device) -> torch.Tensor:
    """``[N, d]``: a fixed N(0, 1) vector per distinct token, from ``seed`` and the token's CRC-32.

    >>> v = token_vectors(["a", "b", "a"], 4, 0, torch.device("cpu"))
    >>> torch.equal(v[0], v[2]), torch.equal(v[0], v[1])
    (True, False)
    """
    table = {}
    for tok in dict.fromkeys(tokens):                                  # distinct, in order
        g = generator(seed * 2**32 + zlib.crc32(tok.encode("utf-8")), torch.device("cpu"))
        table[tok] = torch.randn(d_model, generator=g)                 # (d,)
    return torch.stack([table[t] for t in tokens]).to(device)          # (N, d)


@dataclass(frozen=True)
class RouteSpec:
    """The layer the explorer builds. Validates its bounds; :class:`models.moe.MoEConfig` the rest."""

    num_experts: int = 8
    top_k: int = 2
    d_model: int = 32
    d_hidden: int = 64
    capacity_factor: float | None = None
    num_shared: int = 0
    shared_gate: bool = False          # the shared experts' output × sigmoid(x · w_g) (Qwen2-MoE)
    expert: str = "swiglu"            # "swiglu" (Mixtral) or "relu" (Switch Transformer's experts)
    logit_scale: float = 1.0           # × router weights: sharper (> 1) or flatter (< 1) probabilities
    skew: float = 0.0                  # + bias on expert 1's logit

    def __post_init__(self):
        check_number("moe_experts", self.num_experts, 2, MOE_MAX_EXPERTS, integer=True)
        check_number("moe_top_k", self.top_k, 1, MOE_MAX_TOP_K, integer=True)
        check_top_k(self.top_k, self.num_experts)
        check_number("moe_d_model", self.d_model, 1, MOE_MAX_D_MODEL, integer=True)
        check_number("moe_d_hidden", self.d_hidden, 1, MOE_MAX_D_HIDDEN, integer=True)
        check_number("moe_shared", self.num_shared, 0, MOE_MAX_SHARED, integer=True)
        if self.shared_gate and not self.num_shared:
            raise InputError("moe_err_shared_gate")
        check_capacity(self.capacity_factor, MOE_MAX_CAPACITY_FACTOR)
        choice("moe_expert_kind", self.expert, MOE_EXPERT_KINDS)
        check_number("moe_sharpness", self.logit_scale, 0, MOE_MAX_LOGIT_SCALE)
        check_number("moe_skew", self.skew, -MOE_MAX_LOGIT_SCALE, MOE_MAX_LOGIT_SCALE)


@dataclass(frozen=True)
class SparsityCounts:
    """Weights of the layer from its modules, against a dense FFN of equal active size."""

    router: int
    expert: int                    # one routed expert
    shared: int                    # all shared experts together, and their gate
    total: int                     # router + every expert + shared
    active: int                    # router + k experts + shared: what one token touches
    dense_hidden: int              # (k + shared)·h
    dense: int                     # a dense FFN of that width, built

    @property
    def flops_moe(self) -> int:    # a multiply and an add per weight touched
        return 2 * self.active

    @property
    def flops_dense(self) -> int:
        return 2 * self.dense

    @property
    def active_share(self) -> float:
        """The fraction of the layer's weights one token touches."""
        return self.active / self.total


def sparsity_counts(layer: MoELayer) -> SparsityCounts:
    """Count ``numel`` of the built modules; the dense FFN is built on the meta device.

    >>> c = sparsity_counts(MoELayer(8, 16, 4, 2, device="meta"))
    >>> c.total, c.active, c.dense                           # 4 experts of 3·8·16 + router 8·4
    (1568, 800, 768)
    """
    cfg = layer.config
    count = lambda module: sum(p.numel() for p in module.parameters())   # noqa: E731
    router, expert = count(layer.router), count(layer.experts[0])
    shared = sum(count(m) for m in (layer.shared, layer.shared_gate) if m is not None)
    width = (cfg.top_k + cfg.num_shared) * cfg.d_hidden
    dense = count(FFN(cfg.d_model, width, cfg.expert, device="meta"))
    return SparsityCounts(router, expert, shared, count(layer), router + cfg.top_k * expert + shared, width, dense)


@dataclass
class RouteExploration:
    """Everything the routing view draws."""

    labels: list[str]              # [N] token labels ("#0", "#1", … for random vectors)
    probs: torch.Tensor            # (N, E) router probabilities
    topk_idx: torch.Tensor         # (N, k)
    topk_weight: torch.Tensor      # (N, k)
    kept: torch.Tensor             # (N, k) bool: survived capacity
    load: torch.Tensor             # (E,) assignments before capacity
    capacity: int | None
    dropped: int
    aux_loss: float
    z_loss: float
    routed_norm: torch.Tensor      # (N,) ‖routed output‖ / ‖x‖: 0 when every slot was dropped
    shared_weight: torch.Tensor    # (N,) the shared experts' weight: 1, or sigmoid(x · w_g) when gated
    counts: SparsityCounts
    timing: Timing = field(default=None)   # type: ignore[assignment]

    @property
    def assignments(self) -> int:
        """(token, slot) pairs: N·k."""
        return self.topk_idx.numel()

    @property
    def balanced_load(self) -> float:
        """Assignments per expert when the load is even: N·k/E."""
        return self.assignments / self.load.numel()

    def flows(self) -> torch.Tensor:
        """``(k, E + 1)``: assignments of each choice rank to each expert, the last column those dropped
        by capacity (the Sankey of the routing view).

        >>> ex = explore_routing(None, RouteSpec(num_experts=4, top_k=2, capacity_factor=0.5), n_random=8, device="cpu")
        >>> f = ex.flows()
        >>> f.sum().item() == 16, f[:, -1].sum().item() == ex.dropped, f[0].sum().item()
        (True, True, 8)
        """
        k, E = self.topk_idx.shape[1], self.load.numel()
        target = torch.where(self.kept, self.topk_idx, E)                             # (N, k): E = dropped
        return torch.stack([torch.bincount(target[:, r], minlength=E + 1) for r in range(k)])   # (k, E + 1)

    @property
    def tied_tokens(self) -> int:
        """Tokens whose k-th choice ties with the best expert left out (equal probabilities): which of them
        is chosen is ``topk``'s pick, not the router's. At sharpness 0 every token ties.

        >>> tie = lambda scale: explore_routing(None, RouteSpec(num_experts=4, top_k=2, logit_scale=scale),
        ...                                     n_random=8, device="cpu").tied_tokens
        >>> tie(0.0), tie(1.0)
        (8, 0)
        """
        k = self.topk_idx.shape[1]
        if k == self.probs.shape[1]:
            return 0
        top = self.probs.topk(k + 1, dim=-1).values                                   # (N, k + 1)
        return int((top[:, k - 1] == top[:, k]).sum())

    @property
    def kept_load(self) -> torch.Tensor:
        """``(E,)`` assignments each expert actually processed."""
        E = self.load.numel()
        return torch.bincount(self.topk_idx[self.kept], minlength=E)

    @property
    def dropped_load(self) -> torch.Tensor:
        """``(E,)`` assignments each expert turned away (over its capacity).

        >>> ex = explore_routing(None, RouteSpec(num_experts=4, top_k=2, capacity_factor=0.5), n_random=8, device="cpu")
        >>> ex.capacity, ex.load.tolist(), ex.dropped_load.tolist()     # at most 2 kept per expert
        (2, [5, 5, 4, 2], [3, 3, 2, 0])
        """
        return self.load - self.kept_load

    @property
    def kept_slots(self) -> torch.Tensor:
        """``(N,)`` how many of its k choices each token kept: k, fewer, or 0 (residual only).

        >>> ex = explore_routing(None, RouteSpec(num_experts=4, top_k=2, capacity_factor=0.5), n_random=8, device="cpu")
        >>> ex.kept_slots.sum().item() == ex.assignments - ex.dropped == ex.kept_load.sum().item()
        True
        """
        return self.kept.sum(dim=1)


def explore_routing(tokens: list[str] | None, spec: RouteSpec, *, n_random: int = 64, seed: int = 0,
                    device: torch.device | str | None = None) -> RouteExploration:
    """Route ``tokens`` (or ``n_random`` seeded N(0, 1) vectors when ``tokens`` is None) through a seeded layer.

    >>> ex = explore_routing(["the", "cat", "the"], RouteSpec(num_experts=4, top_k=2))
    >>> ex.topk_idx[0].tolist() == ex.topk_idx[2].tolist(), int(ex.load.sum())    # same word, same experts
    (True, 6)
    """
    check_number("seed", seed, 0, SEED_MAX, integer=True)
    device = resolve_device(device)
    if tokens is None:
        check_number("moe_n_random", n_random, 1, MOE_MAX_TOKENS, integer=True)
    with timed(device) as watch:
        if tokens is None:
            x = torch.randn(n_random, spec.d_model, generator=generator(seed, device), device=device)  # (N, d)
            labels = [f"#{i}" for i in range(n_random)]
        else:
            x, labels = token_vectors(tokens, spec.d_model, seed, device), list(tokens)
        layer = MoELayer.seeded(spec.d_model, spec.d_hidden, spec.num_experts, spec.top_k,
                                capacity_factor=spec.capacity_factor, num_shared=spec.num_shared,
                                shared_gate=spec.shared_gate, expert=spec.expert, router_bias=spec.skew != 0,
                                generator=generator(seed + 1, device))
        with torch.no_grad():
            layer.router.weight.mul_(spec.logit_scale)
            if spec.skew:
                layer.router.bias[0] = spec.skew
            out = layer(x[None])                                           # y: (1, N, d)
            routed = out.y[0] - (0 if out.shared_y is None else out.shared_y)          # (N, d)
            weight = x.new_ones(x.shape[0]) if out.shared_weight is None else out.shared_weight   # (N,)
            ratio = routed.norm(dim=-1) / x.norm(dim=-1).clamp(min=1e-12)              # (N,)
        result = RouteExploration(labels, out.router_probs, out.topk_idx, out.topk_weight, out.kept,
                                  out.expert_load, out.capacity, out.dropped, out.aux_loss.item(),
                                  out.z_loss.item(), ratio, weight, sparsity_counts(layer))
    result.timing = watch.timing
    return result
