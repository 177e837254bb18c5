"""MoE dispatch speed: the vectorised layer against a per-token loop, the arithmetic floor, and the
per-expert ``index_add_`` loop of Hugging Face's Mixtral block, all measured side by side in one run.

    python bench/bench_moe.py            # the issue's setting: 512 tokens, d=256, E=8, k=2, one thread
    python bench/bench_moe.py --quick    # seconds

Every contender computes the same layer (SwiGLU experts, h = 704 = 8/3·256 rounded up to a multiple
of 64) and is checked against the vectorised output before timing:

- **vectorised**: ``MoELayer.forward`` (sort by expert, gather, the experts as one grouped matmul
  each way on the CPU, one padded ``bmm`` each way on a GPU, or one call per wide expert, one
  ``embedding_bag`` for the weighted sum over the k slots); the full forward, router and losses included.
- **floor**: one expert MLP on all N·k assignments as a single batch (no routing, no gather, no
  scatter): the matrix work any correct dispatch must do, in the most efficient shape.
- **experts' matmuls**: ``layer.experts`` on the same N·k rows split into the group sizes this input
  routes to: the same matrix work with every expert's weights read once, still no routing, gather
  or combine. The vectorised layer over this row is the dispatch's own cost; this row over the floor
  is what E weight matrices cost over one (at E = 32, h = 176: 17 MB of weights through the caches and
  32 GEMMs of ~128 rows instead of one of 4,096).
- **experts one by one**: the same rows, one matmul each way per expert (``Experts.looped``): what
  the grouped call (CPU) or the padded ``bmm`` (GPU) saves.
- **per-token loop**: :func:`models.moe.moe_reference`, each token through its k experts one by one.
- **index_add_ (ours)**: :func:`models.moe.moe_index_add`, the Mixtral algorithm written from its source.
- **HF Mixtral**: ``transformers``' ``MixtralSparseMoeBlock`` (eager experts) holding the same weights.

Timings are interleaved (each contender in turn, every round) and the median of the rounds is
reported, so that a busy machine slows every contender alike. In each round a contender (but the slow
per-token loop) is called once untimed first, so that each is timed with its own data in the caches
(as a kernel benchmark times it), not with what the previous contender left there.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.device import timed  # noqa: E402
from models.ffn import llama_hidden_size  # noqa: E402
from models.moe import MoELayer, moe_index_add, moe_reference  # noqa: E402


def hf_block(layer: MoELayer):
    """HF's Mixtral sparse block with ``layer``'s weights, or None without ``transformers``."""
    try:
        from transformers.models.mixtral import modeling_mixtral as mixtral
    except ImportError:
        return None
    cfg = layer.config
    config = mixtral.MixtralConfig(hidden_size=cfg.d_model, intermediate_size=cfg.d_hidden,
                                   num_local_experts=cfg.num_experts, num_experts_per_tok=cfg.top_k,
                                   hidden_act="silu", router_jitter_noise=0.0)
    config._experts_implementation = "eager"
    block = mixtral.MixtralSparseMoeBlock(config).to(layer.router.weight.device).eval()
    with torch.no_grad():
        block.gate.weight.copy_(layer.router.weight)
        for e, expert in enumerate(layer.experts):
            block.experts.gate_up_proj[e].copy_(expert.w_in.weight)
            block.experts.down_proj[e].copy_(expert.w_out.weight)
    return block


def measure(fns: dict, rounds: int, device: torch.device, slow: set[str],
            slow_rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall milliseconds (``timed``: synchronised on CUDA) and, on the CPU, this thread's CPU milliseconds
    (immune to other processes taking the core: the fair figure on a shared machine)."""
    wall, cpu = {name: [] for name in fns}, {name: [] for name in fns}
    for r in range(rounds):
        for name, fn in fns.items():
            if name in slow and r >= slow_rounds:
                continue
            if name not in slow:
                fn()                                                            # its own data in the caches
            start = time.thread_time()
            with timed(device) as watch:
                fn()
            cpu[name].append((time.thread_time() - start) * 1e3)
            wall[name].append(watch.timing.ms)
    return wall, cpu


def run(N: int, d: int, h: int, E: int, k: int, rounds: int, loop_rounds: int, device: torch.device) -> None:
    """Build one layer, check every contender against it, time them interleaved, print the table."""
    g = torch.Generator(device=device).manual_seed(0)
    layer = MoELayer.seeded(d, h, E, k, generator=g, device=device).eval()
    x = torch.randn(1, N, d, generator=g, device=device)                        # (1, N, d)
    repeated = x.reshape(N, d).repeat_interleave(k, dim=0)                      # (N·k, d)
    with torch.no_grad():
        sizes = layer(x).expert_load.tolist()                                   # rows per expert
    hf = hf_block(layer)
    fns = {
        "vectorised": lambda: layer(x).y,
        "floor": lambda: layer.experts[0](repeated),
        "experts' matmuls": lambda: layer.experts(repeated, sizes),
        "experts one by one": lambda: layer.experts.looped(repeated, sizes),
        "per-token loop": lambda: moe_reference(layer, x),
        "index_add_ (ours)": lambda: moe_index_add(layer, x),
    }
    if hf is not None:
        fns["HF Mixtral (eager)"] = lambda: hf(x)
    with torch.no_grad():
        expected = fns["vectorised"]()
        for name, fn in fns.items():
            if name not in ("floor", "experts' matmuls", "experts one by one"):
                torch.testing.assert_close(fn().reshape(expected.shape), expected, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(fns["experts one by one"](), fns["experts' matmuls"](), atol=1e-4, rtol=1e-4)
        for fn in fns.values():                                                 # warm up
            fn()
        wall, cpu = measure(fns, rounds, device, {"per-token loop"}, loop_rounds)

    show_cpu = device.type == "cpu"
    print(f"\nMoE forward: {N} tokens, d={d}, E={E}, k={k}, SwiGLU experts h={h}, {device.type}, "
          f"{torch.get_num_threads()} thread(s); medians of {rounds} interleaved rounds ({loop_rounds} for the "
          f"per-token loop); every output checked equal to the vectorised one first")
    print(f"{'contender':<20}{'wall ms':>9}" + (f"{'cpu ms':>9}" if show_cpu else "") + "   ratio to vectorised")
    med = {name: statistics.median(ts) for name, ts in wall.items()}
    med_cpu = {name: statistics.median(ts) for name, ts in cpu.items()}
    ref = med_cpu if show_cpu else med
    together = ref["experts' matmuls"]                                  # grouped (CPU) or padded (GPU)
    for name in fns:
        ratio = ref[name] / ref["vectorised"]
        note = {"floor": f"   vectorised / floor = {1 / ratio:.2f}x (target <= 1.3x)",
                "experts' matmuls": f"   vectorised / experts' matmuls = {1 / ratio:.2f}x (the dispatch's cost); "
                                    f"experts' matmuls / floor = {ref[name] / ref['floor']:.2f}x",
                "experts one by one": f"   experts' matmuls {ref[name] / together:.2f}x faster "
                                      f"(a call per expert instead of the {layer.experts.path(repeated, sizes)} path)",
                "per-token loop": f"   vectorised {ratio:.1f}x faster (target >= 10x)"}.get(
            name, f"   vectorised {ratio:.2f}x faster" if name != "vectorised" else "")
        print(f"{name:<20}{med[name]:>9.2f}" + (f"{med_cpu[name]:>9.2f}" if show_cpu else "") + f"   {ratio:6.2f}x{note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--multiple-of", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--loop-rounds", type=int, default=3, help="rounds for the slow per-token loop")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--fine-grained", type=int, default=4, metavar="M",
                        help="also run M·E experts of width h/M, top-(M·k) (0: skip)")
    parser.add_argument("--quick", action="store_true", help="128 tokens, d=64, few rounds")
    args = parser.parse_args()
    if args.quick:
        args.tokens, args.d_model, args.rounds, args.loop_rounds = 128, 64, 5, 1
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    d, E, k = args.d_model, args.experts, args.top_k
    h = llama_hidden_size(d, args.multiple_of)
    run(args.tokens, d, h, E, k, args.rounds, args.loop_rounds, device)
    if args.fine_grained:
        # DeepSeekMoE's fine-grained segmentation: m = 4 times more experts, each 1/m as wide, k·m chosen,
        # the same FLOPs per token. Dispatch overhead (per-expert work) now matters.
        m = args.fine_grained
        run(args.tokens, d, h // m, E * m, k * m, args.rounds, args.loop_rounds, device)


if __name__ == "__main__":
    main()
