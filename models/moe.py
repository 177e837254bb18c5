"""A Mixture-of-Experts layer that returns what the picture needs: router, experts, load, losses.

The layer replaces one FFN by ``E`` expert FFNs and a router (Shazeer et al. 2017; Switch
Transformer, Fedus et al. 2021; Mixtral, Jiang et al. 2024). For each token ``x``:

    p = softmax(x W_r)                    router probabilities over the E experts (float32)
    top-k experts by p, weights w = p_topk / sum(p_topk)    (renormalised, as Mixtral; optional)
    y = sum_j w_j · expert_j(x)  [+ shared experts, always on (DeepSeekMoE, Dai et al. 2024),
                                   scaled by sigmoid(x · w_g) with a shared gate (Qwen2-MoE)]

Dispatch is vectorised: the (token, slot) assignments are sorted by expert (a stable sort), the
tokens gathered in that order, and every expert runs on its contiguous block of rows. The experts'
weights are stored stacked (:class:`Experts`: ``w_in (E, d, 2h)``, ``w_out (E, h, d)``), so on the CPU
narrow experts all run as one grouped matmul each way (``torch._grouped_mm``); on a GPU, where a launch
costs more than a small matmul, each group is padded with zero rows to the largest and all run as one
``bmm`` each way while the padded buffer stays under ``Experts.PADDED_BELOW`` bytes; wide experts, float64
on the CPU and larger padded buffers take one matmul per expert. Each token's k outputs are then summed
with its top-k weights by one ``embedding_bag`` (a gather and a weighted sum: deterministic, no atomic adds). There is never a
Python loop over tokens.

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

import functools
import math
from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from models.checks import InputError, number, shown, whole
from models.ffn import FFN, FFN_KINDS, GATED, FFNKind, activate, init_linear_


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
        raise InputError("moe_err_capacity", value=shown(cf, number=True))


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
    shared_gate: bool = False              # Qwen2-MoE: the shared experts' output times sigmoid(x · w_g)

    def __post_init__(self):
        _check_int("d_model", self.d_model, 1)
        _check_int("d_hidden", self.d_hidden, 1)
        _check_int("num_experts", self.num_experts, 1)
        _check_int("top_k", self.top_k, 1)
        _check_int("num_shared", self.num_shared, 0)
        check_top_k(self.top_k, self.num_experts)
        check_capacity(self.capacity_factor)
        if self.shared_gate and not self.num_shared:
            raise ValueError("shared_gate needs shared experts (num_shared > 0)")
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
    router_logits: torch.Tensor     # (N, E)
    kept: torch.Tensor              # (N, k) bool: the assignment survived capacity
    capacity: int | None            # assignments each expert may take, None = unlimited
    shared_y: torch.Tensor | None = None        # (N, d) what the shared experts added (gated); None without
    shared_weight: torch.Tensor | None = None   # (N,) the shared gate's sigmoid; None without a gate

    # The two router losses are computed when first read (in the grad mode of that moment): training
    # reads them; inference, which throws them away in most MoE code, does not pay for them.
    @functools.cached_property
    def aux_loss(self) -> torch.Tensor:
        """() Switch's E · Σ f_i P_i (:func:`load_balancing_loss`): k when balanced, E when collapsed."""
        return load_balancing_loss(self.router_probs, self.topk_idx, self.router_probs.shape[-1], self.expert_load)

    @functools.cached_property
    def z_loss(self) -> torch.Tensor:
        """() ST-MoE's mean(logsumexp(logits)²) (:func:`router_z_loss`)."""
        return router_z_loss(self.router_logits)


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


def _grouped_mm_fits(x: torch.Tensor, *widths: int) -> bool:
    """Whether ``torch._grouped_mm`` takes these rows: on the CPU (the CUDA kernels want other dtypes and
    GPUs), float32/bfloat16/float16, every row a multiple of 16 bytes."""
    return (hasattr(torch, "_grouped_mm") and x.device.type == "cpu"
            and x.dtype in (torch.float32, torch.bfloat16, torch.float16)
            and all(w * x.element_size() % 16 == 0 for w in widths))


def _largest(counts: torch.Tensor | list[int]) -> int:
    """The largest group: ``max(counts)``, 0 for no experts (read back to the host from a GPU)."""
    return int(torch.as_tensor(counts).max()) if len(counts) else 0


class ExpertView:
    """Expert ``e`` of an :class:`Experts`, read and called like an :class:`~models.ffn.FFN`: ``w_in.weight``
    ``(width, d)`` and ``w_out.weight`` ``(d, h)`` are views of the stacked weights in ``nn.Linear``'s layout
    (writing into them writes the layer; gradients flow to the stacked parameters)."""

    def __init__(self, experts: "Experts", e: int):
        self.kind, self.d_hidden = experts.kind, experts.d_hidden
        self.w_in = SimpleNamespace(weight=experts.w_in[e].T)                # (width, d)
        self.w_out = SimpleNamespace(weight=experts.w_out[e].T)              # (d, h)

    def parameters(self):
        return iter((self.w_in.weight, self.w_out.weight))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(activate(F.linear(x, self.w_in.weight), self.kind, self.d_hidden), self.w_out.weight)


class Experts(nn.Module):
    """``num_experts`` bias-free FFNs of one kind, their weights stacked for grouped matmuls:
    ``w_in (E, d, width)`` (``width = 2h`` gated: gate columns, then up) and ``w_out (E, h, d)``, both in
    ``x @ W`` layout. ``experts[e]`` is expert ``e`` as an :class:`ExpertView` (an FFN sharing the storage).

    >>> ex = Experts(3, 4, 8, "swiglu")
    >>> ex.w_in.shape, ex.w_out.shape, ex[1].w_in.weight.shape, len(ex)
    (torch.Size([3, 4, 16]), torch.Size([3, 8, 4]), torch.Size([16, 4]), 3)
    """

    GROUPED_BELOW = 1 << 20                # bytes of one expert's hidden block (CPU); see path
    PADDED_BELOW = 1 << 28                 # bytes of the padded hidden buffer (other devices); see path

    def __init__(self, num_experts: int, d_model: int, d_hidden: int, kind: FFNKind = "swiglu", *,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        super().__init__()
        self.kind, self.d_hidden = kind, d_hidden
        width = 2 * d_hidden if kind in GATED else d_hidden
        self.w_in = nn.Parameter(torch.empty(num_experts, d_model, width, device=device, dtype=dtype))
        self.w_out = nn.Parameter(torch.empty(num_experts, d_hidden, d_model, device=device, dtype=dtype))
        if self.w_in.device.type != "meta":
            self.init_(None)

    def __len__(self) -> int:
        return self.w_in.shape[0]

    def __getitem__(self, e: int) -> ExpertView:
        if not -len(self) <= e < len(self):
            raise IndexError(f"expert {e} of {len(self)}")
        return ExpertView(self, e % len(self))

    def __iter__(self):
        return (self[e] for e in range(len(self)))

    @torch.no_grad()
    def init_(self, generator: torch.Generator | None) -> "Experts":
        """``nn.Linear``'s default init, U(±1/√fan_in), drawn expert by expert (``w_in``, then ``w_out``) in
        ``nn.Linear``'s layout: the same numbers as a list of :class:`~models.ffn.FFN` seeded alike."""
        for expert in self:
            for w in (expert.w_in.weight, expert.w_out.weight):                  # (out, in) views
                bound = 1 / math.sqrt(w.shape[1])
                w.copy_(torch.empty(w.shape, dtype=w.dtype, device=w.device).uniform_(-bound, bound,
                                                                                      generator=generator))
        return self

    def path(self, x: torch.Tensor, counts: torch.Tensor | list[int]) -> str:
        """Which way :meth:`forward` runs these rows: ``"grouped"``, ``"padded"`` or ``"looped"``.

        On the CPU narrow experts run as one grouped matmul each way: a call per expert would cost more
        than its matmul. Once an expert's hidden block (its rows × ``width``) averages ``GROUPED_BELOW``
        bytes, a call per expert runs at full speed too and keeps the intermediates cache-sized instead of
        one ``(M, width)`` buffer of tens of megabytes (one thread: 1024 rows, E = 8, h = 704, 0.7 MB
        blocks: grouped 8.6–8.8 ms, per expert 9.0–9.3; 4096 rows, 2.9 MB blocks: per expert 34.6, grouped
        35.6). Padding is slower there: a padded ``bmm`` row costs 1.85–2.0 µs against the grouped call's
        2.3–2.4, so it pays only below ~24% extra rows, and routing is rarely that even.

        On any other device a launch (~5–10 µs) costs more than these matmuls: the groups padded to
        the largest run as two ``bmm`` calls whatever E, while the padded buffer stays under
        ``PADDED_BELOW`` bytes.

        >>> ex = Experts(4, 8, 16)
        >>> ex.path(torch.zeros(6, 8), [1, 2, 3, 0]), ex.path(torch.zeros(6, 8, device="meta"), [1, 2, 3, 0])
        ('grouped', 'padded')
        """
        d, width = self.w_in.shape[1:]
        if x.device.type != "cpu":
            padded = len(self) * _largest(counts) * width * x.element_size()
            return "padded" if padded < self.PADDED_BELOW else "looped"
        block = x.shape[0] * width * x.element_size() / len(self)               # bytes per expert
        if block < self.GROUPED_BELOW and _grouped_mm_fits(x, d, width, self.d_hidden):
            return "grouped"
        return "looped"

    def forward(self, x: torch.Tensor, counts: torch.Tensor | list[int]) -> torch.Tensor:
        """Rows grouped by expert, ``x[M, d]`` with ``counts[e]`` rows for expert ``e`` (an ``(E,)`` integer
        tensor, or a list), -> ``[M, d]``, the way :meth:`path` picks. The grouped path reads the counts
        where they are; the padded one reads the largest back to the host (one sync), the looped one all."""
        return getattr(self, self.path(x, counts))(x, counts)

    def grouped(self, x: torch.Tensor, counts: torch.Tensor | list[int]) -> torch.Tensor:
        """Two ``torch._grouped_mm`` calls (CPU; float32/bfloat16/float16, rows of 16-byte multiples)."""
        offs = torch.as_tensor(counts, device=x.device).cumsum(0, dtype=torch.int32)      # (E,) group ends
        u = torch._grouped_mm(x, self.w_in, offs=offs)                                   # (M, width)
        return torch._grouped_mm(activate(u, self.kind, self.d_hidden), self.w_out, offs=offs)   # (M, d)

    def padded(self, x: torch.Tensor, counts: torch.Tensor | list[int]) -> torch.Tensor:
        """Each group copied into a zero ``(E, C, d)`` buffer, ``C`` the largest group, two ``bmm`` calls,
        and the real rows read back. A zero row gives a zero output row (the experts have no bias)."""
        E, M, d = len(self), x.shape[0], x.shape[1]
        counts = torch.as_tensor(counts, device=x.device)                                # (E,)
        C = _largest(counts)
        expert = torch.repeat_interleave(torch.arange(E, device=x.device), counts, output_size=M)  # (M,)
        slot = torch.arange(M, device=x.device) - (counts.cumsum(0) - counts)[expert]    # (M,)
        where = expert * C + slot                                                        # (M,) buffer rows
        buffer = x.new_zeros(E * C, d).index_copy(0, where, x).view(E, C, d)             # (E, C, d)
        u = torch.bmm(buffer, self.w_in)                                                 # (E, C, width)
        out = torch.bmm(activate(u, self.kind, self.d_hidden), self.w_out)               # (E, C, d)
        return out.view(E * C, d).index_select(0, where)                                 # (M, d)

    def looped(self, x: torch.Tensor, counts: torch.Tensor | list[int]) -> torch.Tensor:
        """One matmul each way per expert with rows."""
        sizes = torch.as_tensor(counts).tolist()
        outs = [activate(rows @ self.w_in[e], self.kind, self.d_hidden) @ self.w_out[e]
                for e, rows in enumerate(x.split(sizes)) if sizes[e]]
        return torch.cat(outs) if outs else x.new_zeros(x.shape)


class MoELayer(nn.Module):
    """Router + ``num_experts`` FFN experts (+ optional shared experts); ``forward(x[B, T, d])``.

    >>> layer = MoELayer(8, 16, 4, 2)
    >>> out = layer(torch.randn(2, 3, 8))
    >>> out.y.shape, out.router_probs.shape, out.topk_idx.shape, int(out.expert_load.sum())
    (torch.Size([2, 3, 8]), torch.Size([6, 4]), torch.Size([6, 2]), 12)
    """

    def __init__(self, d_model: int, d_hidden: int, num_experts: int, top_k: int, *,
                 capacity_factor: float | None = None, num_shared: int = 0, expert: FFNKind = "swiglu",
                 renormalize: bool = True, router_bias: bool = False, shared_gate: bool = False,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        super().__init__()
        self.config = MoEConfig(d_model, d_hidden, num_experts, top_k, capacity_factor, num_shared,
                                expert, renormalize, router_bias, shared_gate)
        factory = dict(device=device, dtype=dtype)
        self.router = nn.Linear(d_model, num_experts, bias=router_bias, **factory)
        self.experts = Experts(num_experts, d_model, d_hidden, expert, **factory)
        # s shared experts of width h are one FFN of width s·h (their hidden units side by side).
        self.shared = FFN(d_model, num_shared * d_hidden, expert, **factory) if num_shared else None
        self.shared_gate = nn.Linear(d_model, 1, bias=False, **factory) if shared_gate else None

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
        init_linear_(layer.router, generator)                              # drawn in module order
        layer.experts.init_(generator)
        if layer.shared is not None:
            init_linear_(layer.shared, generator)
        if layer.shared_gate is not None:
            init_linear_(layer.shared_gate, generator)
        return layer

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

        # Assignment a = token·k + slot, sorted by expert with a stable sort. Under a capacity the key is
        # expert·k + slot, so that each expert's queue is in priority order: slot 0 of every token first.
        expert_of = idx.reshape(-1)                                        # (N·k,)
        key = expert_of if capacity is None else expert_of * k + torch.arange(k, device=x.device).repeat(N)
        order = torch.argsort(key, stable=True)                            # (N·k,) grouped by expert
        load = torch.bincount(expert_of, minlength=E)                      # (E,)
        if capacity is None:
            kept_order, kept_load = order, load
        else:
            start = load.cumsum(0) - load                                  # (E,) first sorted position
            rank = torch.arange(k * N, device=x.device) - start.repeat_interleave(load, output_size=k * N)  # (N·k,)
            kept_order = order[rank < capacity]                            # (M,) still grouped by expert
            kept_load = load.clamp(max=capacity)                           # (E,)

        M = kept_order.numel()                                             # assignments kept
        gathered = flat.index_select(0, kept_order // k)                   # (M, d) grouped by expert
        expert_out = self.experts(gathered, kept_load)                     # (M, d)
        # row[a]: the row of expert_out that assignment a went to. Each token's bag of rows (its k slots,
        # less the dropped ones) is summed with its top-k weights by one embedding_bag: a gather and a
        # weighted sum, deterministic (no atomic adds).
        rows = torch.arange(M, device=x.device)                            # (M,)
        bag_weight = weight.to(expert_out.dtype).reshape(-1)               # (N·k,)
        if M == k * N:
            kept = torch.ones(N, k, dtype=torch.bool, device=x.device)     # (N, k)
            bags = torch.empty_like(order).scatter_(0, order, rows)        # (N·k,) token by token
            offsets = torch.arange(0, k * N, k, device=x.device)           # (N,) where each bag starts
        else:
            row = torch.full((N * k,), -1, dtype=torch.long, device=x.device).scatter_(0, kept_order, rows)
            kept = (row >= 0).view(N, k)                                   # (N, k)
            bags, bag_weight = row[row >= 0], bag_weight[row >= 0]         # (M,) token by token
            per_token = kept.sum(dim=1)                                    # (N,) kept slots of each token
            offsets = per_token.cumsum(0) - per_token                      # (N,)
        y = F.embedding_bag(bags, expert_out, offsets, mode="sum", per_sample_weights=bag_weight)  # (N, d)
        shared = gate = None
        if self.shared is not None:
            shared = self.shared(flat)                                     # (N, d)
            if self.shared_gate is not None:
                gate = torch.sigmoid(self.shared_gate(flat))[:, 0]         # (N,)
                shared = gate[:, None] * shared                            # (N, 1) · (N, d)
            y = y + shared

        return MoEOutput(
            y=y.view(B, T, d), router_probs=probs, topk_idx=idx, topk_weight=weight, expert_load=load,
            dropped=k * N - M, router_logits=logits, kept=kept, capacity=capacity, shared_y=shared,
            shared_weight=gate)


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
    for t in range(N if layer.shared is not None else 0):                  # always on, gated or not
        gate = 1 if layer.shared_gate is None else torch.sigmoid(flat[t] @ layer.shared_gate.weight[0])
        out[t] = out[t] + gate * layer.shared(flat[t:t + 1])[0]
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
    if layer.shared is not None:                                           # Qwen2MoeSparseMoeBlock's shared expert
        gate = 1 if layer.shared_gate is None else torch.sigmoid(F.linear(flat, layer.shared_gate.weight))
        y = y + gate * layer.shared(flat)
    return y.view(x.shape)
