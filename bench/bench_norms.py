"""Normalization tab: gradients at initialisation and the training comparison, against their targets
and against PyTorch's own ``nn.TransformerEncoderLayer`` stack of the same size, in the same run.

    python bench/bench_norms.py [--quick] [--device cpu|cuda] [--repeats 3] [--app 7]

Rows:
- Post-LN + Pre-LN per-layer gradient norms, 12 layers, d = 128, 8 × 32 tokens (the tab's default,
  models.limits.GRAD_BATCH × GRAD_SEQ_LEN) vs the same two backward passes through a stack of
  ``nn.TransformerEncoderLayer(norm_first=False/True)`` with a causal mask.
- with ``--app N``: ``/norm_gradients`` at its defaults through ``gradio_client`` on ``python app.py``
  (the heavy queue's worker process), N calls: the median time to the first update (Post-LN) and to the
  last (both); target 0.5 s for the last. The same computation in this process is the reference.
- the training comparison: time to the first streamed points (target < 2 s) and the whole default
  run (4 × 300 steps; target < 60 s).
``--quick`` shrinks everything to run in seconds (the ratios against targets then mean little).
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
from models.limits import GRAD_BATCH, GRAD_D_MODEL, GRAD_SEQ_LEN  # noqa: E402
from models.norm_data import char_batch, vocabulary  # noqa: E402
from models.norm_training import TrainConfig, train_steps  # noqa: E402
from models.norms import compare_variants  # noqa: E402
from models.transformer.positions import sinusoidal_rows  # noqa: E402


class TorchStack(torch.nn.Module):
    """The reference: the same decoder-only LM built from PyTorch's encoder layers (causal mask)."""

    def __init__(self, vocab: int, n_layers: int, d: int, heads: int, norm_first: bool, seq_len: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.register_buffer("positions", sinusoidal_rows(0, seq_len, d))
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="relu", batch_first=True,
                                                 norm_first=norm_first)
        self.layers = torch.nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.final = torch.nn.LayerNorm(d) if norm_first else torch.nn.Identity()
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def loss(self, ids: torch.Tensor) -> torch.Tensor:
        x = ids[:, :-1]
        T = x.shape[1]
        mask = torch.nn.Transformer.generate_square_subsequent_mask(T, device=ids.device)
        h = self.layers(self.embed(x) + self.positions[:T], mask=mask, is_causal=True)
        logits = self.head(self.final(h))
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())


def reference_gradients(n_layers: int, d: int, heads: int, seq_len: int, batch: int, device) -> None:
    """Build, forward, backward and read the FFN-out gradient norms: what ours does, with PyTorch's layer."""
    for norm_first in (False, True):
        torch.manual_seed(0)
        model = TorchStack(len(vocabulary()), n_layers, d, heads, norm_first, seq_len).to(device)
        model.loss(char_batch(batch, seq_len + 1, seed=0, device=device)).backward()
        torch.stack([layer.linear2.weight.grad.norm() for layer in model.layers.layers]).tolist()


def best_of(fn, repeats: int, device) -> float:
    """The fastest of ``repeats`` runs, in seconds (the others share the CPU with their neighbours)."""
    times = []
    for _ in range(repeats):
        with timed(device) as watch:
            fn()
        times.append(watch.timing.ms / 1e3)
    return min(times)


def through_app(calls: int) -> tuple[float, float]:
    """Median seconds from ``submit`` to the first and to the last update of ``/norm_gradients``."""
    from gradio_client import Client

    from tests.load_harness import served_app
    firsts, lasts = [], []
    with served_app() as url:
        client = Client(url, verbose=False)
        for call in range(calls + 1):                      # the first call warms the worker's imports up
            start = time.perf_counter()
            job = client.submit(api_name="/norm_gradients")
            while not job.outputs():
                time.sleep(0.002)
            first = time.perf_counter() - start
            job.result()
            if call:
                firsts.append(first)
                lasts.append(time.perf_counter() - start)
    return statistics.median(firsts), statistics.median(lasts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: runs in seconds")
    parser.add_argument("--device", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--app", type=int, default=0, metavar="N", help="also N calls through the served app")
    args = parser.parse_args()
    device = resolve_device(args.device)
    size = (dict(n_layers=4, d_model=64, n_heads=4, seq_len=32, batch=4) if args.quick
            else dict(n_layers=12, d_model=GRAD_D_MODEL, n_heads=4, seq_len=GRAD_SEQ_LEN, batch=GRAD_BATCH))
    train = TrainConfig(steps=20, warmup=10) if args.quick else TrainConfig()

    compare_variants(2, ["post"], d_model=32, n_heads=2, seq_len=8, batch=1, device=device)     # warm up
    ours = best_of(lambda: compare_variants(size["n_layers"], ["post", "pre"], d_model=size["d_model"],
                                            n_heads=size["n_heads"], seq_len=size["seq_len"], batch=size["batch"],
                                            device=device), args.repeats, device)
    ref = best_of(lambda: reference_gradients(size["n_layers"], size["d_model"], size["n_heads"], size["seq_len"],
                                              size["batch"], device), args.repeats, device)

    start = time.perf_counter()
    first = None
    steps_seen = 0
    for progress in train_steps(train, device=device):
        if first is None:
            first = time.perf_counter() - start
        steps_seen = progress.step
    total = time.perf_counter() - start
    if device.type == "cuda":
        torch.cuda.synchronize(device)

    what = (f"{size['n_layers']} layers, d = {size['d_model']}, {size['batch']} × {size['seq_len']} tokens, "
            "Post-LN + Pre-LN")
    rows = [
        ("gradients at init, " + what, ours, "target 0.5 s", ours / 0.5),
        ("  same with nn.TransformerEncoderLayer (reference)", ref, "ours / reference", ours / ref),
        ("training: first streamed points (4 runs, step 1)", first, "target 2 s", first / 2.0),
        (f"training: whole run (4 × {steps_seen} steps)", total, "target 60 s", total / 60.0),
    ]
    if args.app:
        first_update, last_update = through_app(args.app)
        rows += [("/norm_gradients at its defaults via gradio_client: first update", first_update,
                  "in-process", first_update / ours),
                 ("/norm_gradients at its defaults via gradio_client: last update", last_update, "target 0.5 s",
                  last_update / 0.5)]
    print(f"device: {device} · torch threads {torch.get_num_threads()}" + (" · --quick" if args.quick else ""))
    print(f"{'measurement':<78} {'seconds':>8}  {'against':<18} {'ratio':>6}")
    for name, seconds, against, ratio in rows:
        print(f"{name:<78} {seconds:>8.3f}  {against:<18} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
