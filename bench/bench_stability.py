"""Training stability: one sweep step against a plain training step of the same model, the overflow
view, and the default sweep against its targets.

    python bench/bench_stability.py [--quick] [--device cpu|cuda] [--steps 40] [--seeds 0,1,2] [--lr-max 0.1]

Rows:
- one step of the sweep (a Probe: explicit attention with its probabilities and largest logit, the
  worst head's entropy, log Z, the z-loss, the gradient norm check) against a plain AdamW step of
  the same model (``model.loss(ids).backward()``, fused attention), for the no-fix and the
  QK-norm + z-loss variants; target ≤ 1.3×. Median of ``--steps`` steps each, interleaved.
- ``softmax_overflow`` at scale 12 (target ≤ 50 ms).
- the default sweep (5 learning rates × 4 variants × 200 steps): the first streamed records (target
  3 s) and the whole sweep (target 90 s). ``--quick`` runs a 1-rate × 20-step sweep instead.
- the finding, per seed of ``--seeds`` (the sweep again for each seed after the first): final loss
  and largest attention logit per variant at the highest learning rate (``--lr-max``), and log Z.
One torch thread, as the app's training worker runs.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from models.device import resolve_device, timed  # noqa: E402
from models.norm_data import char_batch  # noqa: E402
from models.stability import SweepConfig, SweepLog, _Trainer, softmax_overflow, stability_sweep  # noqa: E402
from models.transformer import Transformer  # noqa: E402


def step_ratio(config: SweepConfig, variant: str, steps: int, device) -> tuple[float, float]:
    """Median seconds of a sweep step and of a plain step of the same model (same weights and batches)."""
    run = next(r for r in config.runs if r.variant == variant)
    trainer = _Trainer(0, run, config, device)
    plain = Transformer.seeded(config.model_config(run.qk_norm), config.seed, device=device)
    opt = torch.optim.AdamW(plain.parameters(), lr=run.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    ours, theirs = [], []
    for step in range(1, steps + 1):
        ids = char_batch(config.batch, config.seq_len + 1, seed=step, device=device)
        with timed(device) as watch:
            trainer.step(ids, step)
        ours.append(watch.timing.ms)
        with timed(device) as watch:
            opt.zero_grad(set_to_none=True)
            plain.loss(ids).backward()
            opt.step()
        theirs.append(watch.timing.ms)
    skip = min(3, steps // 4)                                           # the first steps warm the allocator
    return statistics.median(ours[skip:]) / 1e3, statistics.median(theirs[skip:]) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short sweep: runs in seconds")
    parser.add_argument("--device", default=None)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seeds", default="0", help="comma-separated seeds of the sweep")
    parser.add_argument("--lr-max", type=float, default=0.1, help="the sweep's highest learning rate")
    args = parser.parse_args()
    device = resolve_device(args.device)
    torch.set_num_threads(1)
    config = SweepConfig(lr_max=1e-3, lr_min=1e-3, n_lrs=1)           # the default model; a calm rate
    rows = []
    for variant in ("plain", "both"):
        ours, theirs = step_ratio(config, variant, 12 if args.quick else args.steps, device)
        rows.append((f"sweep step, {variant} (2 layers, d = 64, 8 × 32 tokens)", ours, "target ≤ 1.3×", None))
        rows.append(("  plain AdamW step of the same model", theirs, "sweep / plain", ours / theirs))
    softmax_overflow(12.0, device=device)
    best = min(softmax_overflow(12.0, device=device).timing.ms for _ in range(20)) / 1e3
    rows.append(("softmax_overflow, 3 dtypes × naive/stable", best, "target 50 ms", best / 0.05))

    findings = []
    for i, seed in enumerate(int(x) for x in args.seeds.split(",")):
        sweep = (SweepConfig(n_lrs=1, lr_min=0.1, steps=20, seed=seed) if args.quick
                 else SweepConfig(lr_max=args.lr_max, seed=seed))
        log = SweepLog(sweep)
        start, first = time.perf_counter(), None
        for update in stability_sweep(sweep, device=device):
            log.add(update)
            if first is None and update.records:
                first = time.perf_counter() - start
        total = time.perf_counter() - start
        if i == 0:
            what = f"{sweep.n_lrs} rates × 4 variants × {sweep.steps} steps"
            rows.append((f"sweep: first streamed records ({what})", first, "target 3 s", first / 3.0))
            rows.append((f"sweep: whole ({what})", total, "target 90 s", total / 90.0))
        summary = log.summary()
        findings.append(f"seed {seed}, lr {summary['lr']:.3g}: " + "; ".join(
            f"{name} loss {_show(summary['final'][name])} logit {_show(summary['logit_max'][name])} "
            f"log Z {_show(summary['log_z'][name])}" for name in summary['final']))

    print(f"device: {device} · torch threads {torch.get_num_threads()}" + (" · --quick" if args.quick else ""))
    print(f"{'measurement':<62} {'seconds':>8}  {'against':<15} {'ratio':>6}")
    for name, seconds, against, ratio in rows:
        print(f"{name:<62} {seconds:>8.4f}  {against:<15} {'' if ratio is None else f'{ratio:6.2f}':>6}")
    print("\n".join(findings))


def _show(x: float | None) -> str:
    return "diverged" if x is None else f"{x:.4g}"


if __name__ == "__main__":
    main()
