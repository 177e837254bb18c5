"""A Mixture-of-Experts layer that returns what the picture needs: router, experts, load, losses.

The layer replaces one FFN by ``E`` expert FFNs and a router (Shazeer et al. 2017; Switch
Transformer, Fedus et al. 2021; Mixtral, Jiang et al. 2024). For each token ``x``:

    p = softmax(x W_r)                    router probabilities over the E experts (float32)
    top-k experts by p, weights w = p_topk / sum(p_topk)    (renormalised, as Mixtral; optional)
    y = sum_j w_j · expert_j(x)  [+ shared experts, always on (DeepSeekMoE, Dai et al. 2024)]

Dispatch is vectorised: the (token, slot) assignments are sorted by expert (a stable sort), each
expert runs once on its contiguous slice of the gathered tokens, and the outputs are copied back to
their slots and summed with the top-k weights (an ``index_copy`` and a weighted sum: deterministic,
no atomic adds). The only Python loop is over experts, never over tokens.

Capacity (GShard, Lepikhin et al. 2020, Algorithm 1; Switch §2.2): with a capacity factor ``c`` each
expert takes at most ``C = ceil(c · k · N / E)`` assignments (``c = 1``: exactly the balanced load).
**Priority rule**: every token's first choice is served before any token's second choice, and within
one choice rank tokens are served in order (token 0 first). An assignment beyond ``C`` is dropped: it
contributes nothing (the other weights are *not* renormalised), so a token whose every slot is dropped
gets ``y = 0`` and leaves the block unchanged through the residual ``x + y``.

Losses, both returned unscaled (the trainer multiplies by its coefficients):

- ``aux_loss = E · Σ_i f_i · P_i`` (Switch eq. 4–6), ``f_i`` = fraction of tokens that chose expert i
  among their top-k (before capacity; Σ f = k), ``P_i`` = mean router probability of expert i. Equal to
  Hugging Face's ``load_balancing_loss_func`` for one layer: ``k`` when balanced, ``E`` when collapsed.
- ``z_loss = mean(logsumexp(logits)²)`` (ST-MoE, Zoph et al. 2022, eq. 5): keeps router logits small.

Reference implementations kept for tests and benchmarks: :func:`moe_reference` (a loop over tokens,
the priority rule written out) and :func:`moe_index_add` (per-expert ``index_add_``, the way Hugging
Face's ``MixtralSparseMoeBlock`` dispatches).

Not handled: expert parallelism, router jitter noise, token-choice vs expert-choice variants
(Zhou et al. 2022), auxiliary-loss-free bias balancing (DeepSeek-V3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from models.checks import InputError, number, shown, whole
from models.ffn import FFN, FFN_KINDS, FFNKind, init_linear_


def _check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} = {value!r} must be an integer of at least {low}")


def check_number(name: str, value, low: float, high: float, *, integer: bool = False) -> None:
    """:class:`~models.checks.InputError` naming the field (a ``locales`` term) unless ``value`` is a
    finite number (a whole number) in ``[low, high]``."""
    (whole if integer else number)(name, value, low, high)


def check_top_k(top_k: int, num_experts: int) -> None:
    """:class:`~models.checks.InputError` when a token would choose more experts than there are."""
    if top_k > num_experts:
        raise InputError("moe_err_top_k", top_k=top_k, experts=num_experts)


def check_capacity(capacity_factor, upper: float = math.inf) -> None:
    """``None`` (no limit) or a finite number in ``(0, upper]``, else :class:`~models.checks.InputError`."""
    cf = capacity_factor
    if cf is None:
        return
    if math.isfinite(upper):
        number("moe_capacity", cf, 0, upper, above=True)
    elif isinstance(cf, bool) or not isinstance(cf, (int, float)) or not math.isfinite(cf) or cf <= 0:
        raise InputError("moe_err_capacity", value=shown(cf))


@dataclass(frozen=True)
class MoEConfig:
    """The shape and routing rules of a :class:`MoELayer`. Validates itself."""

    # sizes
    d_model: int
    d_hidden: int                          # hidden size of each expert (and of each shared expert)
    num_experts: int
    top_k: int
    # routing
    capacity_factor: float | None = None   # None: no capacity limit, nothing is dropped
    num_shared: int = 0                    # always-on shared experts (DeepSeekMoE)
    expert: FFNKind = "swiglu"             # "swiglu"|"geglu" (3 matrices) or "gelu"|"relu" (2)
    renormalize: bool = True               # Mixtral: weights renormalised over the top-k; Switch: not
    router_bias: bool = False              # Mixtral, Switch and DeepSeek routers have none

    def __post_init__(self):
        _check_int("d_model", self.d_model, 1)
        _check_int("d_hidden", self.d_hidden, 1)
        _check_int("num_experts", self.num_experts, 1)
        _check_int("top_k", self.top_k, 1)
        _check_int("num_shared", self.num_shared, 0)
        check_top_k(self.top_k, self.num_experts)
        check_capacity(self.capacity_factor)
        if self.expert not in FFN_KINDS:
            raise ValueError(f"expert = {self.expert!r} must be one of {', '.join(FFN_KINDS)}")


def expert_capacity(n_tokens: int, num_experts: int, top_k: int, capacity_factor: float | None) -> int | None:
    """Assignments one expert may take: ``ceil(c · k · N / E)``; ``None`` without a factor.

    >>> expert_capacity(512, 8, 2, 1.0), expert_capacity(512, 8, 2, 1.25), expert_capacity(10, 8, 1, 0.01)
    (128, 160, 1)
    """
    if capacity_factor is None:
        return None
    return max(1, math.ceil(capacity_factor * top_k * n_tokens / num_experts))


@dataclass
class MoEOutput:
    """Everything a forward pass computes, including what most MoE layers throw away."""

    y: torch.Tensor                 # (B, T, d): the layer's output (add the residual outside)
    router_probs: torch.Tensor      # (N, E) float32 softmax of the router logits, N = B·T
    topk_idx: torch.Tensor          # (N, k) chosen experts, best first
    topk_weight: torch.Tensor       # (N, k) their weights (renormalised over the k unless disabled)
    expert_load: torch.Tensor       # (E,) assignments routed to each expert, before capacity drops
    dropped: int                    # (token, slot) assignments dropped by capacity
    aux_loss: torch.Tensor          # () E · Σ f_i P_i: k when balanced, E when collapsed
    z_loss: torch.Tensor            # () mean(logsumexp(logits)²)
    router_logits: torch.Tensor     # (N, E)
    kept: torch.Tensor              # (N, k) bool: the assignment survived capacity
    capacity: int | None            # assignments each expert may take, None = unlimited


def load_balancing_loss(router_probs: torch.Tensor, topk_idx: torch.Tensor, num_experts: int,
                        counts: torch.Tensor | None = None) -> torch.Tensor:
    """Switch Transformer's auxiliary loss ``E · Σ_i f_i · P_i`` (gradient flows through ``P`` only).

    ``counts`` (the bincount of ``topk_idx``) may be passed when already computed.

    >>> probs = torch.full((4, 2), 0.5)                      # 4 tokens, 2 experts, perfectly uniform
    >>> load_balancing_loss(probs, torch.tensor([[0], [1], [0], [1]]), 2).item()
    1.0
    >>> load_balancing_loss(torch.tensor([[1.0, 0.0]] * 4), torch.zeros(4, 1, dtype=torch.long), 2).item()
    2.0
    """
    N = router_probs.shape[0]
    if counts is None:
        counts = torch.bincount(topk_idx.reshape(-1), minlength=num_experts)                    # (E,)
    f = counts.to(router_probs.dtype) / N                                                       # (E,)
    P = router_probs.mean(dim=0)                                                               # (E,)
    return num_experts * (f * P).sum()


def router_z_loss(logits: torch.Tensor) -> torch.Tensor:
    """ST-MoE's router z-loss ``mean(logsumexp(logits)²)`` over tokens.

    >>> round(router_z_loss(torch.zeros(3, 4)).item(), 6), round(math.log(4) ** 2, 6)   # uniform logits
    (1.921812, 1.921812)
    """
    return torch.logsumexp(logits.float(), dim=-1).square().mean()


def load_cv(load: torch.Tensor) -> float:
    """Coefficient of variation of the load, ``std / mean`` (population std): 0 when balanced.

    Every token on the same k of E experts gives ``sqrt(E/k - 1)``: 1.732 for E = 8, k = 2.

    >>> load_cv(torch.tensor([4, 4, 4, 4])), round(load_cv(torch.tensor([8, 8, 0, 0, 0, 0, 0, 0])), 3)
    (0.0, 1.732)
    """
    load = load.double()
    mean = load.mean()
    return 0.0 if mean == 0 else (load.std(unbiased=False) / mean).item()


class MoELayer(nn.Module):
    """Router + ``num_experts`` FFN experts (+ optional shared experts); ``forward(x[B, T, d])``.

    >>> layer = MoELayer(8, 16, 4, 2)
    >>> out = layer(torch.randn(2, 3, 8))
    >>> out.y.shape, out.router_probs.shape, out.topk_idx.shape, int(out.expert_load.sum())
    (torch.Size([2, 3, 8]), torch.Size([6, 4]), torch.Size([6, 2]), 12)
    """

    def __init__(self, d_model: int, d_hidden: int, num_experts: int, top_k: int, *,
                 capacity_factor: float | None = None, num_shared: int = 0, expert: FFNKind = "swiglu",
                 renormalize: bool = True, router_bias: bool = False,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        super().__init__()
        self.config = MoEConfig(d_model, d_hidden, num_experts, top_k, capacity_factor, num_shared,
                                expert, renormalize, router_bias)
        factory = dict(device=device, dtype=dtype)
        self.router = nn.Linear(d_model, num_experts, bias=router_bias, **factory)
        self.experts = nn.ModuleList(FFN(d_model, d_hidden, expert, **factory) for _ in range(num_experts))
        # s shared experts of width h are one FFN of width s·h (their hidden units side by side).
        self.shared = FFN(d_model, num_shared * d_hidden, expert, **factory) if num_shared else None

    @classmethod
    def seeded(cls, *args, generator: torch.Generator, device: torch.device | str | None = None,
               **kwargs) -> "MoELayer":
        """Build on the meta device, then draw every weight from ``generator`` on ``device``.

        >>> a = MoELayer.seeded(4, 8, 2, 1, generator=torch.Generator().manual_seed(0))
        >>> b = MoELayer.seeded(4, 8, 2, 1, generator=torch.Generator().manual_seed(0))
        >>> torch.equal(a.router.weight, b.router.weight)
        True
        """
        layer = cls(*args, device="meta", **kwargs).to_empty(device=device or generator.device)
        return init_linear_(layer, generator)

    @property
    def num_experts(self) -> int:
        return self.config.num_experts

    @property
    def top_k(self) -> int:
        return self.config.top_k

    def route(self, flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``flat[N, d]`` -> ``(logits[N, E], probs[N, E] float32, topk_weight[N, k], topk_idx[N, k])``."""
        logits = self.router(flat)                                         # (N, E)
        probs = logits.float().softmax(dim=-1)                             # (N, E)
        top_p, top_idx = probs.topk(self.top_k, dim=-1)                    # (N, k), (N, k)
        if self.config.renormalize:
            top_p = top_p / top_p.sum(dim=-1, keepdim=True)
        return logits, probs, top_p, top_idx

    def forward(self, x: torch.Tensor) -> MoEOutput:
        if x.dim() != 3 or x.shape[-1] != self.config.d_model:
            raise ValueError(f"x must be [B, T, {self.config.d_model}], got {list(x.shape)}")
        B, T, d = x.shape
        E, k = self.num_experts, self.top_k
        flat = x.reshape(B * T, d)                                         # (N, d)
        N = flat.shape[0]
        logits, probs, weight, idx = self.route(flat)
        capacity = expert_capacity(N, E, k, self.config.capacity_factor)

        # Assignment a = slot·N + token (slot-major: first choices before second choices), sorted by
        # expert with a stable sort, so each expert's queue is in priority order.
        expert_of = idx.t().reshape(-1)                                    # (k·N,)
        order = torch.argsort(expert_of, stable=True)                      # (k·N,) grouped by expert
        load = torch.bincount(expert_of, minlength=E)                      # (E,)
        if capacity is None:
            kept_order, kept_load = order, load
        else:
            start = load.cumsum(0) - load                                  # (E,) first sorted position
            rank = torch.arange(k * N, device=x.device) - start.repeat_interleave(load, output_size=k * N)  # (k·N,)
            kept_order = order[rank < capacity]                            # (M,) still grouped by expert
            kept_load = load.clamp(max=capacity)                           # (E,)

        tokens = kept_order % N                                            # (M,)
        gathered = flat.index_select(0, tokens)                            # (M, d)
        sizes = kept_load.tolist()                                         # one sync: slice bounds
        outs = [self.experts[e](chunk) for e, chunk in enumerate(gathered.split(sizes)) if sizes[e]]
        expert_out = torch.cat(outs) if outs else gathered                 # (M, d)
        # Back to the assignment slots (dropped ones stay zero), then the weighted sum over slots.
        full = kept_order.numel() == k * N
        slots = flat.new_empty(k * N, d) if full else flat.new_zeros(k * N, d)           # (k·N, d)
        slots.index_copy_(0, kept_order, expert_out)
        y = torch.einsum("knd,kn->nd", slots.view(k, N, d), weight.t().to(flat.dtype))   # (N, d)
        if self.shared is not None:
            y = y + self.shared(flat)

        if full:
            kept = torch.ones(N, k, dtype=torch.bool, device=x.device)     # (N, k)
        else:
            kept = torch.zeros(k * N, dtype=torch.bool, device=x.device)
            kept[kept_order] = True
            kept = kept.view(k, N).t()                                     # (N, k)
        return MoEOutput(
            y=y.view(B, T, d), router_probs=probs, topk_idx=idx, topk_weight=weight, expert_load=load,
            dropped=k * N - kept_order.numel(), aux_loss=load_balancing_loss(probs, idx, E, load),
            z_loss=router_z_loss(logits), router_logits=logits, kept=kept, capacity=capacity)


# --------------------------------------------------------------------------- references


def moe_reference(layer: MoELayer, x: torch.Tensor) -> torch.Tensor:
    """The layer's output by a plain loop over tokens: the definition, slow and obviously right.

    Each token is routed on its own (softmax, top-k, renormalise); capacity is applied in the
    documented priority (every first choice before any second choice, tokens in order).
    Differentiable (tests compare gradients); wrap in ``torch.no_grad()`` to time it.
    """
    cfg = layer.config
    flat = x.reshape(-1, x.shape[-1])                                      # (N, d)
    N = flat.shape[0]
    choices = []
    for t in range(N):
        probs = layer.router(flat[t]).float().softmax(dim=-1)              # (E,)
        p, e = probs.topk(cfg.top_k)                                       # (k,), (k,)
        choices.append((e.tolist(), p / p.sum() if cfg.renormalize else p))
    capacity = expert_capacity(N, cfg.num_experts, cfg.top_k, cfg.capacity_factor)
    used = [0] * cfg.num_experts
    out = [torch.zeros_like(flat[0]) for _ in range(N)]
    for slot in range(cfg.top_k):
        for t in range(N):
            e, w = choices[t][0][slot], choices[t][1][slot]
            used[e] += 1
            if capacity is None or used[e] <= capacity:
                out[t] = out[t] + w.to(flat.dtype) * layer.experts[e](flat[t:t + 1])[0]
    if layer.shared is not None:
        out = [o + layer.shared(flat[t:t + 1])[0] for t, o in enumerate(out)]
    return torch.stack(out).view(x.shape)


def moe_index_add(layer: MoELayer, x: torch.Tensor) -> torch.Tensor:
    """Dispatch as Hugging Face's ``MixtralSparseMoeBlock`` does: per expert, find its tokens with
    ``torch.where`` on a one-hot mask, run the expert, ``index_add_`` the weighted rows. No capacity.
    """
    if layer.config.capacity_factor is not None:
        raise ValueError("moe_index_add has no capacity limit (Mixtral has none): use capacity_factor=None")
    flat = x.reshape(-1, x.shape[-1])                                      # (N, d)
    _, _, weight, idx = layer.route(flat)
    y = torch.zeros_like(flat)
    mask = nn.functional.one_hot(idx, num_classes=layer.num_experts).permute(2, 1, 0)   # (E, k, N)
    for e in mask.sum(dim=(1, 2)).nonzero().flatten().tolist():
        slot, token = torch.where(mask[e])                                 # (n_e,), (n_e,)
        rows = layer.experts[e](flat[token]) * weight[token, slot, None].to(flat.dtype)
        y.index_add_(0, token, rows)
    if layer.shared is not None:
        y = y + layer.shared(flat)
    return y.view(x.shape)
