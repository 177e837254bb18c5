"""A short real training run of a tiny MoE language model: collapse without the aux loss, balance with it.

The model is the one transformer (:mod:`models.transformer`) with a mixture of experts in place of
its FFN: one pre-norm block of causal self-attention (RoPE, 2 heads, d = 32) and an MoE layer of
SwiGLU experts (h = 64), reading the shipped English corpus (``data/corpus/en.txt``) one character
at a time and predicting the next one. Loss: cross-entropy + ``aux_coef · aux_loss`` +
``z_coef · z_loss`` (Switch Transformer, Fedus et al. 2021, eq. 4; ST-MoE, Zoph et al. 2022, eq. 5),
the MoE outputs read from a :class:`~models.transformer.Probe` that leaves attention on its fused kernel.

Why it collapses (the rich get richer): an expert that happens to receive more tokens early is
trained more, becomes more useful, and the task gradient raises its router probability for every
token that tried it; the router's weights are shared by all tokens, so the others follow. Top-1
routing (Switch) collapses fastest; its gate weight is the probability ``p`` itself (renormalising a
single weight would make it 1 and cut the router off from the task gradient). Top-k ≥ 2 renormalises
over the k (Mixtral). Every weight, the router's included, starts ``N(0, 0.02²)`` (GPT-2's init, HF's
``initializer_range``), so that early drift, not the random initialisation, decides the routing.

With the defaults (E = 8, top-1, 150 steps, batches of 2,048 characters) the load CV, the mean of
the last 10 steps (:meth:`History.tail`, the figure the tab shows), ends at 0.64–1.15 without the aux
loss (a few experts take most tokens) and 0.24–0.38 with ``aux_coef = 0.05``, for seeds 0–5; top-2:
0.98–1.20 against 0.06–0.15 (measured with this module on an Intel CPU, one thread; a Zen 5 EPYC, whose
kernels sum in another order, gives 0.57–1.03 and 0.29–0.47;
``tests/test_moe_backend.py`` checks seeds 0–2). The task loss differs by ≤ 0.05 nats.
``compare=True`` trains a twin with ``aux_coef = 0``, same initial weights, same batches, in
lockstep, so the two load pictures differ only by the aux loss.

Not handled: learning-rate schedules, expert-choice routing, more than one layer.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterator

import torch
import torch._dynamo  # noqa: F401  (an optimizer's constructor imports it, ~1 s: here, once per server,
#                                 not in every forked training worker)
import torch.nn.functional as F

from models.device import Timing, generator, on_gpu, resolve_device, timed
from models.limits import (MOE_MAX_CAPACITY_FACTOR, MOE_TRAIN_MAX_AUX, MOE_TRAIN_MAX_EXPERTS,
                           MOE_TRAIN_MAX_STEPS, MOE_TRAIN_MAX_TOP_K, MOE_TRAIN_MAX_Z, SEED_MAX)
from models.moe import check_capacity, check_number, check_top_k, load_cv
from models.transformer import Probe, Transformer, TransformerConfig

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "en.txt"
TAIL_STEPS = 10                          # the run's summary: means over its last steps (one batch is noisy)


@functools.cache
def corpus() -> tuple[str, tuple[str, ...]]:
    """The shipped English text and its sorted characters (the vocabulary)."""
    text = CORPUS.read_text(encoding="utf-8")
    return text, tuple(sorted(set(text)))


@dataclass(frozen=True)
class MoETrainConfig:
    """What the learner chooses, then the fixed tiny architecture. Validates itself."""

    # chosen in the tab
    num_experts: int = 8
    top_k: int = 1
    aux_coef: float = 0.05               # Switch used 1e-2; 0 shows the collapse
    z_coef: float = 0.0                  # ST-MoE used 1e-3
    capacity_factor: float | None = None
    steps: int = 150
    seed: int = 0
    compare: bool = True                 # also train an aux_coef = 0 twin in lockstep
    # the tiny model and its optimiser
    d_model: int = 32
    d_hidden: int = 64                   # each expert's hidden width
    n_heads: int = 2
    batch: int = 32
    seq_len: int = 64                    # batch · seq_len = 2048 tokens per step
    lr: float = 1e-2

    def __post_init__(self):
        check_number("moe_experts", self.num_experts, 2, MOE_TRAIN_MAX_EXPERTS, integer=True)
        check_number("moe_top_k", self.top_k, 1, MOE_TRAIN_MAX_TOP_K, integer=True)
        check_top_k(self.top_k, self.num_experts)
        check_number("moe_aux_coef", self.aux_coef, 0, MOE_TRAIN_MAX_AUX)
        check_number("moe_z_coef", self.z_coef, 0, MOE_TRAIN_MAX_Z)
        check_number("steps", self.steps, 1, MOE_TRAIN_MAX_STEPS, integer=True)
        check_number("seed", self.seed, 0, SEED_MAX, integer=True)
        check_capacity(self.capacity_factor, MOE_MAX_CAPACITY_FACTOR)
        for name in ("d_model", "d_hidden", "n_heads", "batch", "seq_len"):
            check_number(name, getattr(self, name), 1, 4096, integer=True)

    @property
    def runs(self) -> tuple[str, ...]:
        """``"aux"`` (the chosen coefficient) and, when comparing, ``"no_aux"``."""
        return ("aux", "no_aux") if self.compare and self.aux_coef > 0 else ("aux",)


    def transformer(self, vocab_size: int) -> TransformerConfig:
        """The one transformer with one MoE block: what this run trains."""
        return TransformerConfig(
            vocab_size=vocab_size, n_layers=1, d_model=self.d_model, n_heads=self.n_heads, max_seq_len=self.seq_len,
            ffn="moe", n_experts=self.num_experts, top_k=self.top_k, moe_d_ff=self.d_hidden, expert_ffn="swiglu",
            capacity_factor=self.capacity_factor, moe_renormalize=self.top_k > 1)


@dataclass
class History:
    """One run, one entry per step."""

    load: list[list[float]] = field(default_factory=list)   # [step][E] fraction of the assignments
    cv: list[float] = field(default_factory=list)           # std/mean of the load
    aux: list[float] = field(default_factory=list)          # E·Σ f P (unscaled)
    z: list[float] = field(default_factory=list)
    task: list[float] = field(default_factory=list)         # cross-entropy, nats per character
    dropped: list[float] = field(default_factory=list)      # fraction of assignments over capacity

    def copy(self) -> "History":
        """A snapshot: training goes on appending to the original."""
        return History(*(list(getattr(self, f.name)) for f in fields(self)))

    def tail(self, key: str, n: int = TAIL_STEPS) -> float:
        """The mean of ``key`` (``"cv"``, ``"aux"``, ``"task"``, ``"dropped"``) over the last ``n`` steps:
        the figure the tab reports for a run.

        >>> History(cv=[9.0, 0.2, 0.4]).tail("cv", 2)
        0.30000000000000004
        """
        last = getattr(self, key)[-n:]
        return sum(last) / len(last) if last else float("nan")

    def binned_load(self, max_columns: int = 150) -> tuple[list[float], list[list[float]]]:
        """The load heatmap's columns: see :func:`binned_steps`."""
        return binned_steps(self.load, max_columns)


def binned_steps(loads: list[list[float]], max_columns: int) -> tuple[list[float], list[list[float]]]:
    """``(x, z[E][columns])``: per-step loads averaged over consecutive steps so that at most
    ``max_columns`` columns remain (a streamed figure stays small); ``x`` is each bin's mean step.

    >>> binned_steps([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], 2)
    ([1.5, 3.0], [[0.5, 0.5], [0.5, 0.5]])
    """
    width = max(1, -(-len(loads) // max_columns))                     # ceil: steps per column
    bins = [loads[i:i + width] for i in range(0, len(loads), width)]
    x = [i * width + (len(b) + 1) / 2 for i, b in enumerate(bins)]
    E = len(loads[0]) if loads else 0
    return x, [[sum(row[e] for row in b) / len(b) for b in bins] for e in range(E)]


@dataclass
class TrainProgress:
    """What one streamed update carries: every step so far, of every run."""

    config: MoETrainConfig
    step: int                                               # steps done
    runs: dict[str, History]
    timing: Timing = field(default=None)                    # type: ignore[assignment]
    vocab: tuple[str, ...] = ()
    expert_chars: dict[str, list[list[float]]] = field(default_factory=dict)  # run -> [E][V], at the end

    @property
    def done(self) -> bool:
        return self.step >= self.config.steps


def _expert_chars(model: Transformer, ids: torch.Tensor, vocab: int) -> list[list[float]]:
    """``[E][V]``: share of each character's tokens (the character read at that position) sent to each expert."""
    with torch.no_grad():
        probe = Probe(want_attention=False, want_residual=False)
        model(ids, probe=probe)
        out = probe.moe[0]
        current = ids.reshape(-1)                                              # (N,) the character at each position
        counts = torch.zeros(model.config.n_experts, vocab, device=ids.device)  # (E, V)
        for slot in range(out.topk_idx.shape[1]):
            counts.index_put_((out.topk_idx[:, slot], current), torch.ones_like(current, dtype=counts.dtype),
                              accumulate=True)
        return (counts / counts.sum(0).clamp(min=1)).tolist()


@on_gpu(duration=120)
def train_moe(cfg: MoETrainConfig, *, every: int | None = None,
              device: torch.device | str | None = None) -> Iterator[TrainProgress]:
    """Train (and, with ``cfg.compare``, its aux-free twin in lockstep); yield progress every ``every`` steps.

    The last update also carries, for each run, which expert each character is sent to.

    >>> last = list(train_moe(MoETrainConfig(steps=2, batch=2, seq_len=8)))[-1]
    >>> last.step, sorted(last.runs), len(last.runs["aux"].load[0])
    (2, ['aux', 'no_aux'], 8)
    """
    device = resolve_device(device)
    text, chars = corpus()
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], device=device)              # (L,)
    every = every or max(1, cfg.steps // 60)
    coefs = {"aux": cfg.aux_coef, "no_aux": 0.0}
    models = {name: Transformer.seeded(cfg.transformer(len(chars)), cfg.seed, device=device) for name in cfg.runs}
    optims = {name: torch.optim.AdamW(m.parameters(), lr=cfg.lr, weight_decay=0.0, foreach=True)
              for name, m in models.items()}
    runs = {name: History() for name in cfg.runs}
    g = generator(cfg.seed, device)
    window = cfg.seq_len + 1
    compute_ms = 0.0                             # time in training steps, not in the consumer's hands
    for step in range(1, cfg.steps + 1):
        with timed(device) as watch:
            starts = torch.randint(0, len(data) - window, (cfg.batch,), generator=g, device=device)
            ids = data[starts[:, None] + torch.arange(window, device=device)]   # (B, seq_len + 1)
            for name, model in models.items():
                _train_step(model, optims[name], ids, coefs[name], cfg, runs[name])
        compute_ms += watch.timing.ms
        if step % every == 0 or step == cfg.steps:
            snapshot = {name: h.copy() for name, h in runs.items()}
            progress = TrainProgress(cfg, step, snapshot, Timing(watch.timing.device, compute_ms), chars)
            if step == cfg.steps:
                progress.expert_chars = {n: _expert_chars(m, ids[:, :-1], len(chars)) for n, m in models.items()}
            yield progress


def _train_step(model: Transformer, optim: torch.optim.Optimizer, ids: torch.Tensor, aux_coef: float,
                cfg: MoETrainConfig, history: History) -> None:
    """One AdamW step on ``ids[B, seq_len + 1]``; append the step's measurements to ``history``."""
    probe = Probe(want_attention=False, want_residual=False)                   # the MoE layer's outputs
    logits, _ = model(ids[:, :-1], probe=probe)                                # (B, seq_len, V)
    out = probe.moe[0]
    task = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].reshape(-1))
    loss = task + aux_coef * out.aux_loss + cfg.z_coef * out.z_loss
    optim.zero_grad(set_to_none=True)
    loss.backward()
    optim.step()
    load = out.expert_load
    total = load.sum()
    history.load.append((load / total).tolist())
    history.cv.append(load_cv(load))
    history.aux.append(out.aux_loss.item())
    history.z.append(out.z_loss.item())
    history.task.append(task.item())
    history.dropped.append(out.dropped / total.item())
