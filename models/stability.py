"""Training stability at small scale: QK-norm and the z-loss, and softmax overflow.

Wortsman et al. 2023 ("Small-scale proxies for large-scale Transformer training instabilities", § 3)
trained small transformers over a range of learning rates and found the two failures of large runs:

- **attention logit growth**: ``q·k`` grows with training until softmax puts all weight on one key
  (attention entropy collapses, Zhai et al. 2023) and the loss stops falling; normalising q and k
  per head before their dot product (QK-norm, Dehghani et al. 2023) bounds every logit by
  ``max|g_q| · max|g_k| · √d_head`` (the norms' gains; plus their biases for LayerNorm);
- **output logit divergence**: log Z = logsumexp of the output logits drifts; the z-loss
  ``coef · mean(log Z²)`` (PaLM, ST-MoE) pulls it back to 0.

:func:`stability_sweep` reproduces their Figure 1 on this machine: at each of several log-spaced
learning rates, four runs (no fix, QK-norm, z-loss, both) of a small character model of the shipped
corpus (:class:`models.transformer.Transformer`, pre-LN, LayerNorm) start from identical weights and
see identical batches, interleaved step by step. It yields :class:`SweepUpdate` records as it goes
(loss, the largest attention logit per layer, the worst head's attention entropy, log Z per step;
each run's final loss at its end); :class:`SweepLog` gathers them. A run whose loss, gradient or
a recorded value stops being finite ends there and says so (a :class:`Finding`); nothing
non-finite is ever returned. :func:`softmax_overflow` shows why large logits break a naive softmax in
float16 (exp overflows past ln 65504 ≈ 11.09) and why the max-subtracted form never does.

Optimiser (Wortsman et al. § 2, shortened): AdamW, β = (0.9, 0.95), ε = 1e-8, no weight decay, linear
warm-up over the first 10 % of steps, cosine decay to 10 % of the peak; no gradient clipping (it would
hide what the sweep shows). Not handled: mixed precision training, μP, the paper's
``eps``/weight-decay studies, parallel layers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator

import torch
import torch._dynamo  # noqa: F401  (AdamW's constructor imports it, ~1 s: once per server, not per worker)
import torch.nn.functional as F

from models.checks import InputError, whole
from models.device import Timing, on_gpu, resolve_device, timed
from models.limits import (STAB_LOGIT_SCALE, STAB_LR, STAB_LRS, STAB_MAX_D_MODEL, STAB_MAX_HEADS, STAB_MAX_LAYERS,
                           STAB_MAX_STEPS, STAB_MAX_WORK, STAB_Z_LOSS)
from models.norm_data import char_batch, vocabulary
from models.transformer import Probe, Transformer, TransformerConfig

# (name, QK-norm, z-loss) of the four runs at each learning rate, in the order they step and are drawn.
VARIANTS = (("plain", False, False), ("qk_norm", True, False), ("z_loss", False, True), ("both", True, True))
ENTROPY_COLLAPSE = 0.1          # nats: a head whose mean attention entropy falls below this has collapsed
WARMUP_SHARE, FINAL_LR_SHARE = 0.1, 0.1
FINAL_SHARE = 0.1               # the final loss: the mean over the last 10 % of steps
DTYPES = ("float32", "bfloat16", "float16")


# --- the losses and the bound ------------------------------------------------------------------------
def z_loss(logits: torch.Tensor) -> torch.Tensor:
    """``mean(log Z²)`` with ``log Z = logsumexp`` over the last dimension (PaLM § 5; ST-MoE eq. 5).

    >>> round(float(z_loss(torch.zeros(2, 4))), 4)      # log Z = ln 4 for every row
    1.9218
    """
    return torch.logsumexp(logits, dim=-1).square().mean()


def qk_logit_bound(model: Transformer) -> list[float]:
    """Per layer, the largest attention logit QK-norm allows: ``‖q̂‖·‖k̂‖ / √d_head`` with
    ``‖g ⊙ x̂ + b‖ ≤ max|g|·√d_head + ‖b‖`` (x̂ normalised has norm ≤ √d_head; RoPE keeps norms).

    >>> cfg = TransformerConfig(11, 1, 16, 2, 8, qk_norm=True, norm="rmsnorm")
    >>> [round(b, 4) for b in qk_logit_bound(Transformer.seeded(cfg))]    # gains 1: √8 · √8 / √8 = √8
    [2.8284]
    """
    bounds = []
    for block in model.blocks:
        attn = block.attn
        if not hasattr(attn, "q_norm"):
            raise ValueError("qk_logit_bound needs a model with qk_norm=True")
        root = math.sqrt(attn.cfg.head_dim)

        def reach(norm) -> torch.Tensor:
            size = norm.weight.abs().max() * root
            return size + norm.bias.norm() if hasattr(norm, "bias") else size
        with torch.no_grad():
            bounds.append(float(reach(attn.q_norm) * reach(attn.k_norm) * attn.scale))
    return bounds


# --- softmax overflow ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class OverflowResult:
    """The same logits through softmax in each dtype, naive and max-subtracted.

    ``probs[dtype][method]``: the probabilities as computed (may hold ``inf``/``nan``: that is the point);
    ``finite[dtype][method]``: whether all of them are finite; ``prob_sum[dtype][method]``: their sum
    (float64); ``largest_logit[dtype]``: ``ln(max)``, the largest x whose exp(x) is finite in that dtype.
    A softmax can fail with every value finite: once Σ exp(x) overflows while each exp(x) does not, every
    ``exp(x) / inf`` is 0 (float16 from x ≈ 10.8 here): :meth:`broken` says either.
    """

    logits: list[float]
    probs: dict[str, dict[str, list[float]]]
    finite: dict[str, dict[str, bool]]
    exp_sum: dict[str, float]                        # the naive path's Σ exp(x) in each dtype
    largest_logit: dict[str, float]
    prob_sum: dict[str, dict[str, float]]
    timing: Timing

    def broken(self, dtype: str, method: str) -> bool:
        """Not a distribution: a value inf or NaN, or the values not summing to 1 (within half precision's
        rounding of a few terms, 0.01)."""
        return not self.finite[dtype][method] or abs(self.prob_sum[dtype][method] - 1) > 1e-2


OVERFLOW_PATTERN = (1.0, 0.9, 0.7, 0.4, 0.0, -0.3, -0.6, -1.0)   # logits = scale · pattern


def softmax_overflow(scale: float = 12.0, *, device=None) -> OverflowResult:
    """Logits ``scale · OVERFLOW_PATTERN`` (the largest is ``scale``) through softmax in float32,
    bfloat16 and float16, naive ``exp(x) / Σ exp(x)`` and stable ``exp(x − max) / Σ exp(x − max)``.

    >>> r = softmax_overflow(12.0)
    >>> r.finite["float16"], r.finite["float32"]["naive"], round(r.largest_logit["float16"], 2)
    ({'naive': False, 'stable': True}, True, 11.09)
    >>> r = softmax_overflow(11.0)                  # each exp(x) finite in float16, their sum not: all 0
    >>> r.finite["float16"]["naive"], r.prob_sum["float16"]["naive"], r.broken("float16", "naive")
    (True, 0.0, True)
    """
    scale = STAB_LOGIT_SCALE.number("stability_logit_scale", scale)
    device = resolve_device(device)
    with timed(device) as watch:
        x = torch.tensor(OVERFLOW_PATTERN, dtype=torch.float32, device=device) * scale     # (n,)
        probs, finite, sums, largest, prob_sum = {}, {}, {}, {}, {}
        for name in DTYPES:
            dtype = getattr(torch, name)
            xd = x.to(dtype)
            e = xd.exp()                                                                  # overflows to inf
            naive = e / e.sum()                                                           # inf / inf = nan
            shifted = (xd - xd.max()).exp()                                               # ≤ 1: never overflows
            stable = shifted / shifted.sum()
            probs[name] = {"naive": naive.float().tolist(), "stable": stable.float().tolist()}
            finite[name] = {k: bool(torch.isfinite(v).all()) for k, v in (("naive", naive), ("stable", stable))}
            prob_sum[name] = {k: float(v.double().sum()) for k, v in (("naive", naive), ("stable", stable))}
            sums[name] = float(e.sum())
            largest[name] = math.log(torch.finfo(dtype).max)
    return OverflowResult(x.tolist(), probs, finite, sums, largest, prob_sum, watch.timing)


# --- the sweep -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepConfig:
    """The sweep's settings; validates itself.

    >>> [f"{lr:.3g}" for lr in SweepConfig().lrs]
    ['0.001', '0.00316', '0.01', '0.0316', '0.1']
    >>> SweepConfig(lr_min=0.1, lr_max=0.01)
    Traceback (most recent call last):
    ...
    models.checks.InputError: the smallest learning rate (0.1) must not exceed the largest (0.01)
    """

    lr_min: float = 1e-3
    lr_max: float = 0.1               # seeds 0-2: QK-norm ends 0.35-0.5 nats lower here, logits ~500× smaller
    n_lrs: int = 5
    steps: int = 200
    z_loss: float = 1e-2              # the z-loss runs' coefficient (PaLM uses 1e-4 over far longer runs)
    n_layers: int = 2
    d_model: int = 64
    n_heads: int = 4
    seq_len: int = 32
    batch: int = 8
    seed: int = 0

    def __post_init__(self):
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        set_("lr_min", STAB_LR.number("stability_lr_min", self.lr_min))
        set_("lr_max", STAB_LR.number("stability_lr_max", self.lr_max))
        if self.lr_min > self.lr_max:
            raise InputError("stability_err_lr_order", low=f"{self.lr_min:g}", high=f"{self.lr_max:g}")
        set_("n_lrs", STAB_LRS.whole("stability_n_lrs", self.n_lrs))
        set_("steps", whole("steps", self.steps, 2, STAB_MAX_STEPS))
        set_("z_loss", STAB_Z_LOSS.number("stability_z_loss", self.z_loss))
        set_("n_layers", whole("n_layers", self.n_layers, 1, STAB_MAX_LAYERS))
        set_("d_model", whole("d_model", self.d_model, 8, STAB_MAX_D_MODEL))
        set_("n_heads", whole("n_heads", self.n_heads, 1, STAB_MAX_HEADS))
        set_("seq_len", whole("seq_len", self.seq_len, 2, 128))
        set_("batch", whole("batch", self.batch, 1, 64))
        set_("seed", whole("seed", self.seed, 0, 2**31 - 1))
        self.model_config(True)                         # d_model divisible by n_heads, even head_dim
        if self.work > STAB_MAX_WORK:
            raise InputError("stability_err_work", runs=len(self.runs), steps=self.steps, layers=self.n_layers,
                             width=self.d_model, units=f"{self.work:.1f}", limit=f"{STAB_MAX_WORK:g}")

    @property
    def lrs(self) -> list[float]:
        """``n_lrs`` learning rates, log-spaced from ``lr_min`` to ``lr_max``."""
        if self.n_lrs == 1:
            return [self.lr_max]
        last = self.n_lrs - 1
        return [self.lr_min * (self.lr_max / self.lr_min) ** (i / last) if i < last else self.lr_max
                for i in range(self.n_lrs)]

    @property
    def runs(self) -> list["Run"]:
        """Every run, learning rate by learning rate, the four variants at each."""
        return [Run(i, lr, name, qk, self.z_loss if z else 0.0)
                for i, lr in enumerate(self.lrs) for name, qk, z in VARIANTS]

    @property
    def work(self) -> float:
        """Runs × steps × tokens × layers × max(d_model, 64)² / 2^30 (small widths cost their overhead)."""
        return (len(self.runs) * self.steps * self.batch * self.seq_len * self.n_layers
                * max(self.d_model, 64) ** 2 / 2**30)

    def model_config(self, qk_norm: bool) -> TransformerConfig:
        return TransformerConfig(len(vocabulary()), self.n_layers, self.d_model, self.n_heads, self.seq_len,
                                 qk_norm=qk_norm, norm="layernorm", placement="pre", ffn="gelu")

    def lr_factor(self, step: int) -> float:
        """The schedule at step ``step`` (1-based): linear warm-up, then cosine down to 10 %.

        >>> cfg = SweepConfig(steps=100)
        >>> [round(cfg.lr_factor(s), 3) for s in (1, 10, 55, 100)]
        [0.1, 1.0, 0.55, 0.1]
        """
        warm = max(1, round(WARMUP_SHARE * self.steps))
        if step <= warm:
            return step / warm
        progress = (step - warm) / max(1, self.steps - warm)
        return FINAL_LR_SHARE + (1 - FINAL_LR_SHARE) * 0.5 * (1 + math.cos(math.pi * progress))


@dataclass(frozen=True)
class Run:
    """One training run of the sweep."""

    lr_index: int
    lr: float
    variant: str                      # a VARIANTS name
    qk_norm: bool
    z_loss: float                     # its coefficient, 0 for no z-loss


@dataclass(frozen=True)
class Finding:
    """Something that happened to a run, said by a message key (``locales/stability.py``) and its step."""

    key: str                          # stability_found_nonfinite | stability_found_collapse
    step: int
    what: str = ""                    # for non-finite: loss | gradient | logit


@dataclass(frozen=True)
class StepRecord:
    """One step of one run (every value finite)."""

    run: int                          # index into ``SweepConfig.runs``
    step: int
    loss: float                       # cross-entropy (nats), without the z-loss
    logit_max: tuple[float, ...]      # per layer, the largest scaled q·k
    entropy_min: float                # the worst head's attention entropy (nats), mean over batch and queries
    log_z: float                      # mean log Z of the output softmax


@dataclass(frozen=True)
class RunEnd:
    """A finished run: its final loss (``None`` when it diverged) and what happened."""

    run: int
    final_loss: float | None
    findings: tuple[Finding, ...]


@dataclass
class SweepUpdate:
    """What the sweep yields: the records since the last update, the runs that ended, and, at the end,
    the total time."""

    records: list[StepRecord]
    ended: list[RunEnd]
    lr_index: int                     # the learning rate being trained
    step: int
    timing: Timing | None = None      # set on the last update
    done: bool = False


@dataclass
class RunCurves:
    """One run's history, gathered from the updates."""

    run: Run
    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    logit_max: list[tuple[float, ...]] = field(default_factory=list)
    entropy_min: list[float] = field(default_factory=list)
    log_z: list[float] = field(default_factory=list)
    end: RunEnd | None = None


class SweepLog:
    """Every run's curves and ends, gathered from :func:`stability_sweep`'s updates.

    >>> cfg = SweepConfig(n_lrs=1, steps=2, n_layers=1, d_model=16, n_heads=2, seq_len=8, batch=2)
    >>> log = SweepLog(cfg)
    >>> for update in stability_sweep(cfg):
    ...     log.add(update)
    >>> [len(c.loss) for c in log.curves], log.done
    ([2, 2, 2, 2], True)
    """

    def __init__(self, config: SweepConfig):
        self.config = config
        self.curves = [RunCurves(run) for run in config.runs]
        self.lr_index, self.step, self.done, self.timing = 0, 0, False, None

    def add(self, update: SweepUpdate) -> None:
        for r in update.records:
            c = self.curves[r.run]
            c.steps.append(r.step)
            c.loss.append(r.loss)
            c.logit_max.append(r.logit_max)
            c.entropy_min.append(r.entropy_min)
            c.log_z.append(r.log_z)
        for end in update.ended:
            self.curves[end.run].end = end
        self.lr_index, self.step, self.done = update.lr_index, update.step, update.done
        self.timing = update.timing or self.timing

    @property
    def uniform_loss(self) -> float:
        """ln V: the loss of guessing every character equally; diverged runs are drawn there."""
        return math.log(len(vocabulary()))

    def summary(self) -> dict | None:
        """At the highest learning rate whose four runs have ended: its value, and per variant the final
        loss (``None``: diverged), the largest attention logit and the last log Z."""
        done = [i for i in range(self.config.n_lrs)
                if all(c.end is not None for c in self.curves if c.run.lr_index == i)]
        if not done:
            return None
        runs = [c for c in self.curves if c.run.lr_index == done[-1]]
        return {"lr": runs[0].run.lr,
                "final": {c.run.variant: c.end.final_loss for c in runs},
                "logit_max": {c.run.variant: max((max(m) for m in c.logit_max), default=None) for c in runs},
                "log_z": {c.run.variant: c.log_z[-1] if c.log_z else None for c in runs}}

    def final_losses(self) -> dict[str, list[float | None]]:
        """Per variant, the final loss at each learning rate (``None``: not finished or diverged)."""
        out = {name: [None] * self.config.n_lrs for name, _, _ in VARIANTS}
        for c in self.curves:
            if c.end is not None:
                out[c.run.variant][c.run.lr_index] = c.end.final_loss
        return out


def _entropy_min(probs: list[torch.Tensor]) -> float:
    """The smallest per-head attention entropy over layers: ``H(p) = −Σ p ln p`` per query row,
    averaged over the batch and the queries (``torch.special.entr`` gives 0 for p = 0)."""
    return min(float(torch.special.entr(p).sum(-1).mean((0, 2)).min()) for p in probs)   # (B, H, T, S) -> (H,)


class _Trainer:
    """One run: its model and optimiser, stepped by :func:`stability_sweep`."""

    def __init__(self, index: int, run: Run, config: SweepConfig, device: torch.device):
        self.index, self.run, self.config = index, run, config
        self.model = Transformer.seeded(config.model_config(run.qk_norm), config.seed, device=device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=run.lr, betas=(0.9, 0.95), eps=1e-8,
                                     weight_decay=0.0)
        self.losses: list[float] = []
        self.findings: list[Finding] = []
        self.alive = True

    def step(self, ids: torch.Tensor, step: int) -> StepRecord | None:
        """One AdamW step; a non-finite value ends the run as a finding (``None`` then)."""
        for group in self.opt.param_groups:
            group["lr"] = self.run.lr * self.config.lr_factor(step)
        probe = Probe(want_residual=False)
        logits, _ = self.model(ids[:, :-1], probe=probe)                                 # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
        log_z = torch.logsumexp(logits.detach().float(), -1).mean()
        total = loss + self.run.z_loss * z_loss(logits.float()) if self.run.z_loss else loss
        self.opt.zero_grad(set_to_none=True)
        total.backward()
        grads = torch.stack([torch.linalg.vector_norm(p.grad) for p in self.model.parameters() if p.grad is not None])
        loss_v, log_z_v, grad_v = torch.stack([loss.detach(), log_z, torch.linalg.vector_norm(grads)]).tolist()
        logit_max = probe.attn_logit_max
        for what, value in (("loss", loss_v), ("gradient", grad_v), ("logit", max(logit_max)), ("log_z", log_z_v)):
            if not math.isfinite(value):
                self.end_with(Finding("stability_found_nonfinite", step, what))
                return None
        entropy = _entropy_min(probe.attn_probs)
        if entropy < ENTROPY_COLLAPSE and not any(f.key == "stability_found_collapse" for f in self.findings):
            self.findings.append(Finding("stability_found_collapse", step))
        self.opt.step()
        self.losses.append(loss_v)
        return StepRecord(self.index, step, loss_v, tuple(logit_max), entropy, log_z_v)

    def end_with(self, finding: Finding | None = None) -> RunEnd:
        if finding is not None:
            self.findings.append(finding)
        self.alive = False
        diverged = any(f.key == "stability_found_nonfinite" for f in self.findings)
        tail = self.losses[-max(1, round(FINAL_SHARE * self.config.steps)):]
        final = None if diverged or not tail else sum(tail) / len(tail)
        self.result = RunEnd(self.index, final, tuple(self.findings))
        return self.result


@on_gpu(duration=120)
def stability_sweep(config: SweepConfig | None = None, *, device=None, every: int = 5,
                    **settings) -> Iterator[SweepUpdate]:
    """Train every run of ``config`` (or ``SweepConfig(**settings)``); yield a :class:`SweepUpdate` every
    ``every`` steps and when each learning rate's four runs end.

    The four variants at one learning rate start from the same seed (QK-norm only adds norms whose
    gains start at 1) and see the same batches, step by step; every learning rate starts over from the
    same weights.
    """
    config = config or SweepConfig(**settings)
    device = resolve_device(device)
    elapsed, pending = 0.0, []
    runs = config.runs
    last = SweepUpdate([], [], 0, 0)
    for lr_index in range(config.n_lrs):
        with timed(device) as watch:
            trainers = [_Trainer(i, run, config, device) for i, run in enumerate(runs) if run.lr_index == lr_index]
        elapsed += watch.timing.ms
        for step in range(1, config.steps + 1):
            with timed(device) as watch:
                ids = char_batch(config.batch, config.seq_len + 1, seed=config.seed * 100_003 + step, device=device)
                ended = []
                for trainer in trainers:
                    if trainer.alive:
                        record = trainer.step(ids, step)
                        if record is None:
                            ended.append(trainer.result)
                        else:
                            pending.append(record)
                if step == config.steps:
                    ended += [t.end_with() for t in trainers if t.alive]
            elapsed += watch.timing.ms
            stop = not any(t.alive for t in trainers)
            final = stop and lr_index == config.n_lrs - 1
            if ended or step % every == 0 or stop:
                last = SweepUpdate(pending, ended, lr_index, step, Timing(watch.timing.device, elapsed) if final else None,
                                   done=final)
                yield last
                pending = []
            if stop:
                break
    if not last.done:                                                      # pragma: no cover (every run ends)
        yield SweepUpdate(pending, [], config.n_lrs - 1, config.steps, Timing(str(device), elapsed), done=True)
