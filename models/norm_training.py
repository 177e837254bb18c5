"""A short real training run: Post-LN and Pre-LN, each with and without learning-rate warm-up.

Xiong et al. 2020 (§ 3.4, § 4): Post-LN's large gradients near the output make Adam's first steps
at the full learning rate unstable, which is why Post-LN needs warm-up; Pre-LN does not. Here the
four runs (Post/Pre × warm-up yes/no) train a small character-level model of the shipped corpus
with Adam at the learner's learning rate. They start from identical weights (one seed: Post-LN and
Pre-LN differ only in where the norms are), see the same batches in the same order, and advance
**interleaved, one step each in turn**, so all four curves grow together while they stream.

Warm-up is linear from 0 to the learning rate over ``warmup`` steps, then constant (no decay, so
the only difference between a pair of runs is the warm-up). No gradient clipping: clipping would
hide the very instability the comparison shows. A run whose loss or gradient norm stops being
finite, or whose loss climbs above ``BLOW_UP`` times its first value, is stopped there and
reported ("loss became NaN at step 37": ``RunCurve.diverged_what`` is ``"loss_nan"``, a key of
``locales/norms.py``); its curve ends, nothing non-finite is returned.

Not handled: dropout, weight decay, learning-rate decay, validation loss, mixed precision.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Iterator, Literal

import torch
import torch._dynamo  # noqa: F401  (an optimizer's constructor imports it, ~1 s: here, once per server,
#                                 not in every forked training worker)

from models.device import Timing, on_gpu, resolve_device, timed
from models.limits import (NORM_MAX_BATCH, NORM_MAX_SEQ_LEN, NORM_TRAIN_MAX_LR, NORM_TRAIN_MAX_STEPS,
                           NORM_TRAIN_MAX_WORK)
from models.norm_data import char_batch, vocabulary
from models.checks import choice, number, whole
from models.norms import NORM_KINDS, StackConfig, build_stack, check_work

# (variant, warm-up) of the four runs, in the order they are stepped and drawn.
RUNS = (("post", True), ("post", False), ("pre", True), ("pre", False))
# Adam bounds each step, so a huge learning rate rarely reaches NaN behind LayerNorm: the loss climbs to
# thousands instead. A run whose loss exceeds this multiple of its first loss has diverged too.
BLOW_UP = 3.0
BLEW_UP = "blew_up"                   # RunCurve.diverged_what of such a run


@dataclass(frozen=True)
class TrainConfig:
    """The comparison's settings; validates itself.

    >>> TrainConfig(lr=0)
    Traceback (most recent call last):
    ...
    models.checks.InputError: learning rate = 0: must be a number above 0 and at most 10
    """

    lr: float = 5e-3                  # Adam's peak learning rate: Post-LN without warm-up stalls (seeds 0-2)
    steps: int = 300                  # per run
    warmup: int = 100                 # linear warm-up steps of the "with warm-up" runs
    # the model: a small character-level LM
    n_layers: int = 6
    d_model: int = 64
    n_heads: int = 4
    norm: str = "layernorm"
    seq_len: int = 64
    batch: int = 8
    seed: int = 0

    def __post_init__(self):
        number("learning_rate", self.lr, 0, NORM_TRAIN_MAX_LR, above=True)
        whole("steps", self.steps, 1, NORM_TRAIN_MAX_STEPS)
        whole("norms_warmup_steps", self.warmup, 1, NORM_TRAIN_MAX_STEPS)
        whole("seq_len", self.seq_len, 2, NORM_MAX_SEQ_LEN)
        whole("batch", self.batch, 1, NORM_MAX_BATCH)
        whole("seed", self.seed, 0, 2**31 - 1)
        choice("norms_norm", self.norm, NORM_KINDS)
        self.stack("pre")                                   # validates depth, width and heads
        check_work(self.n_layers, self.d_model, self.seq_len * self.batch * self.steps, len(RUNS),
                   limit=NORM_TRAIN_MAX_WORK)

    def stack(self, variant: str) -> StackConfig:
        return StackConfig(vocab_size=len(vocabulary()), n_layers=self.n_layers, d_model=self.d_model,
                           n_heads=self.n_heads, variant=variant, norm=self.norm, max_seq_len=self.seq_len)

    def lr_at(self, step: int, warmup: bool) -> float:
        """The learning rate of step ``step`` (1-based): linear warm-up, then constant.

        >>> cfg = TrainConfig(lr=1e-3, warmup=4)
        >>> [cfg.lr_at(s, True) for s in (1, 2, 4, 9)], cfg.lr_at(1, False)
        ([0.00025, 0.0005, 0.001, 0.001], 0.001)
        """
        return self.lr * min(1.0, step / self.warmup) if warmup else self.lr


@dataclass
class RunCurve:
    """One run's curves so far: loss and global gradient norm per step (finite values only)."""

    variant: str
    warmup: bool
    loss: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    diverged_at: int | None = None     # the step whose loss or gradient stopped being finite
    diverged_what: str = ""            # what stopped being finite: "loss_nan", "grad_inf", … or BLEW_UP

    @property
    def name(self) -> str:
        return f"{self.variant}{'+warmup' if self.warmup else ''}"


@dataclass
class TrainProgress:
    """What a stream yields: every run's curves after ``step`` steps (each run one step per round)."""

    step: int
    config: TrainConfig
    runs: list[RunCurve]
    timing: Timing | None = None       # set on the last yield

    @property
    def done(self) -> bool:
        return self.step >= self.config.steps or all(r.diverged_at for r in self.runs)


def _non_finite(value: float) -> str:
    """``"nan"``, ``"inf"`` or ``"neg_inf"``: how a value stopped being finite."""
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "neg_inf")


@on_gpu(duration=120)
def train_steps(config: TrainConfig, *, device=None, every: int = 1) -> Iterator[TrainProgress]:
    """Train the four runs interleaved; yield their curves every ``every`` rounds and at the end.

    The curves are the same lists, growing: a consumer that keeps them sees the whole history.

    >>> cfg = TrainConfig(steps=3, warmup=2, n_layers=1, d_model=16, n_heads=2, seq_len=8, batch=2)
    >>> last = list(train_steps(cfg))[-1]
    >>> last.step, [len(r.loss) for r in last.runs]
    (3, [3, 3, 3, 3])
    """
    device = resolve_device(device)
    with timed(device) as watch:
        models = [build_stack(config.stack(variant), seed=config.seed, device=device) for variant, _ in RUNS]
        optimizers = [torch.optim.Adam(m.parameters(), lr=config.lr) for m in models]
        runs = [RunCurve(variant, warmup) for variant, warmup in RUNS]
    elapsed = watch.timing.ms
    for step in range(1, config.steps + 1):
        with timed(device) as watch:
            ids = char_batch(config.batch, config.seq_len + 1, seed=config.seed * 100_003 + step, device=device)
            for model, opt, run in zip(models, optimizers, runs):
                if run.diverged_at is None:
                    _step(model, opt, run, ids, step, config.lr_at(step, run.warmup))
        elapsed += watch.timing.ms
        progress = TrainProgress(step, config, runs)
        if progress.done:
            progress.timing = Timing(watch.timing.device, elapsed)
            yield progress
            return
        if step % every == 0:
            yield progress


def _step(model, opt, run: RunCurve, ids: torch.Tensor, step: int, lr: float) -> None:
    """One Adam step of one run; a non-finite loss or gradient norm ends the run as a finding."""
    for group in opt.param_groups:
        group["lr"] = lr
    opt.zero_grad(set_to_none=True)
    loss = model.loss(ids)
    loss.backward()
    grad_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad)
                                                      for p in model.parameters() if p.grad is not None]))
    loss_value, norm_value = (float(v) for v in torch.stack([loss.detach(), grad_norm]).tolist())
    for what, value in (("loss", loss_value), ("grad", norm_value)):
        if not math.isfinite(value):
            run.diverged_at, run.diverged_what = step, f"{what}_{_non_finite(value)}"
            return
    if run.loss and loss_value > BLOW_UP * run.loss[0]:
        run.diverged_at, run.diverged_what = step, BLEW_UP
        return
    run.loss.append(loss_value)
    run.grad_norm.append(norm_value)
    opt.step()


# The table's numbers: the "final loss" is the mean of the last FINAL_WINDOW steps (one step is noisy); a
# finished run whose final loss is not STALL_MARGIN nats below the plateau (the entropy of the letter
# frequencies, models.norm_data.unigram_entropy) learned the letter frequencies and nothing more: it stalled.
# A run shorter than FINAL_WINDOW steps is too short to call a stall: it is "short", not "trained".
FINAL_WINDOW = 20
STALL_MARGIN = 0.1


@dataclass(frozen=True)
class Finding:
    """What one run shows so far, in numbers: its row in the tab's table.

    ``status``: ``"diverged"`` (``what`` at ``step``), else ``"running"`` until the comparison is done,
    then ``"trained"`` (below the plateau), ``"stalled"`` (not below it) or ``"short"`` (not below it
    after fewer than FINAL_WINDOW steps: too few to tell).
    """

    status: Literal["running", "trained", "stalled", "short", "diverged"]
    final: float | None                # mean loss of the last `window` steps; None before the first step
    best: float | None                 # lowest loss
    max_grad: float | None             # largest global gradient norm
    what: str = ""                     # diverged: RunCurve.diverged_what
    step: int | None = None            # diverged: the step it happened
    window: int = 0                    # how many steps `final` averages: min(FINAL_WINDOW, steps run)


def finding(run: RunCurve, *, plateau: float, done: bool) -> Finding:
    """The finding of ``run``: trained, stalled near ``plateau`` nats, diverged, or still running.

    >>> stuck = RunCurve("post", False, loss=[3.5] * 5 + [3.0] * 20, grad_norm=[0.5] * 25)
    >>> finding(stuck, plateau=3.05, done=True)
    Finding(status='stalled', final=3.0, best=3.0, max_grad=0.5, what='', step=None, window=20)
    >>> finding(stuck, plateau=3.05, done=False).status, finding(stuck, plateau=3.5, done=True).status
    ('running', 'trained')
    >>> early = RunCurve("post", False, loss=[4.0, 3.6], grad_norm=[1.0, 1.0])
    >>> found = finding(early, plateau=3.0, done=True)
    >>> found.status, found.final, found.window
    ('short', 3.8, 2)
    >>> finding(RunCurve("pre", True, diverged_at=1, diverged_what="loss_nan"), plateau=3.0, done=False)
    Finding(status='diverged', final=None, best=None, max_grad=None, what='loss_nan', step=1, window=0)
    """
    loss = run.loss                                          # finite: a run stops at its first non-finite step
    window = min(FINAL_WINDOW, len(loss))
    final = statistics.fmean(loss[-window:]) if loss else None
    numbers = (final, min(loss) if loss else None, max(run.grad_norm) if run.grad_norm else None)
    if run.diverged_at:
        return Finding("diverged", *numbers, what=run.diverged_what, step=run.diverged_at, window=window)
    if not done:
        return Finding("running", *numbers, window=window)
    if final < plateau - STALL_MARGIN:
        return Finding("trained", *numbers, window=window)
    return Finding("stalled" if window == FINAL_WINDOW else "short", *numbers, window=window)


@dataclass(frozen=True)
class TrainResult:
    """The finished comparison."""

    config: TrainConfig
    runs: list[RunCurve]
    timing: Timing


def train_compare(config: TrainConfig | None = None, *, device=None, **settings) -> TrainResult:
    """Run the whole comparison and return the curves (``settings`` build a :class:`TrainConfig`).

    >>> r = train_compare(steps=2, warmup=1, n_layers=1, d_model=16, n_heads=2, seq_len=8, batch=2)
    >>> [run.name for run in r.runs]
    ['post+warmup', 'post', 'pre+warmup', 'pre']
    """
    config = config or TrainConfig(**settings)
    for progress in train_steps(config, device=device, every=config.steps):
        if progress.done:
            return TrainResult(config, progress.runs, progress.timing)
    raise AssertionError("train_steps ended without a final progress")  # pragma: no cover
