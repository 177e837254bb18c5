"""How fast the hardware multiplies: a matmul sweep measured on the shared device, the published peaks
it is judged against, and the arithmetic of training time.

- :func:`sweep` runs real matmuls (``a @ b``; fp8 through ``torch._scaled_mm``) for a range of sizes
  and every dtype asked, and yields one :class:`MatmulPoint` per (size, dtype) as soon as it is
  measured: FLOPs counted as ``2·m·n·k`` (one multiply and one add per term of each dot product;
  :func:`matmul_flops` equals ``torch.utils.flop_counter.FlopCounterMode``), the bytes a matmul must
  at least move (read A and B, write C once) and their ratio, the arithmetic intensity.
- :data:`models.peaks.PEAKS` (re-exported here) holds the dense peak FLOP/s and memory bandwidth of
  data-centre GPUs, each from its vendor's datasheet; :func:`peak_for` finds the entry of a device
  name. A device not in the table gets no peak, and says so. On a CPU the only honest peak is the best
  this sweep measured.
- :func:`mfu_run`: a few real training steps of the one transformer, their FLOPs by formula
  (:func:`models.transformer.count_flops`) and by PyTorch's ``FlopCounterMode``, their time, and the
  peak they are judged against; :func:`mfu` is achieved / peak.
- :func:`training_seconds`: the time of ``6·N·D`` FLOPs on ``n`` GPUs at a given MFU.

Not handled: multi-GPU, TF32 (PyTorch's default fp32 matmul does not use it, so fp32 is judged
against the CUDA-core fp32 peak), sparsity, int8.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Iterator

import torch
import torch._dynamo  # noqa: F401  (Transformer.seeded's meta-device init imports it, 1-6 s: here, once per
#                      server, not in every forked MFU run)

from models.checks import InputError, choice
from models.device import device_name, resolve_device, wait_for
from models.limits import (MATMUL_CPU_BUDGET_S, MATMUL_CPU_SIZES, MATMUL_DTYPES, MATMUL_GPU_BUDGET_S,
                           MATMUL_GPU_SIZES, MATMUL_POINT_S, MATMUL_SWEEPS, MFU_MAX_FLOPS, MFU_PROBE_S)
from models.norm_data import char_batch, vocabulary
from models.peaks import PEAK_NAMES, PEAKS, Peak, peak_by_name, peak_for  # noqa: F401 (the compute API)
from models.transformer import Transformer, TransformerConfig, count_flops, flop_counter

DTYPES = dict(zip(MATMUL_DTYPES, (torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn)))
SWEEP_KINDS = MATMUL_SWEEPS
TOKENS_WIDTH = {"cpu": 512, "cuda": 4096}   # d of the "tokens" sweep


# ----------------------------------------------------------------------------------------------- counting

def matmul_flops(m: int, n: int, k: int) -> int:
    """FLOPs of an (m×k) @ (k×n) matmul: m·n dot products of length k, a multiply and an add per term.

    >>> matmul_flops(2, 3, 4)
    48
    """
    return 2 * m * n * k


def bytes_moved(m: int, n: int, k: int, in_bytes: int, out_bytes: int | None = None) -> int:
    """The least memory traffic of a matmul: read A (m×k) and B (k×n) once, write C (m×n) once.

    >>> bytes_moved(1024, 1024, 1024, 2)
    6291456
    """
    return (m * k + k * n) * in_bytes + m * n * (in_bytes if out_bytes is None else out_bytes)


def arithmetic_intensity(m: int, n: int, k: int, in_bytes: int, out_bytes: int | None = None) -> float:
    """FLOPs per byte moved; a square n-matmul in b-byte numbers has 2n³ / (3n²·b) = 2n / 3b.

    >>> round(arithmetic_intensity(1024, 1024, 1024, 2), 1), arithmetic_intensity(1, 4096, 4096, 2) < 1
    (341.3, True)
    """
    return matmul_flops(m, n, k) / bytes_moved(m, n, k, in_bytes, out_bytes)


# ----------------------------------------------------------------------------------------------- device

def dtype_support(device: torch.device) -> dict[str, tuple[str, dict] | None]:
    """For each dtype of :data:`DTYPES`: ``None`` when ``device`` multiplies in it, else why not (a
    locales key and its parameters)."""
    if device.type != "cuda":
        return {"fp32": None, "bf16": None, "fp16": None,
                "fp8": ("compute_why_fp8", dict(device=device_name(device), cc="—"))}
    major, minor = torch.cuda.get_device_capability(device)
    support: dict[str, tuple[str, dict] | None] = {"fp32": None, "fp16": None}
    support["bf16"] = None if major >= 8 else ("compute_why_bf16", dict(device=device_name(device), cc=f"{major}.{minor}"))
    has_fp8 = (major, minor) >= (8, 9) and hasattr(torch, "_scaled_mm")
    support["fp8"] = None if has_fp8 else ("compute_why_fp8", dict(device=device_name(device), cc=f"{major}.{minor}"))
    return support


def check_dtypes(dtypes, device: torch.device) -> tuple[str, ...]:
    """``dtypes`` if each is known and the device has it, else the :class:`InputError` that says which
    one it lacks and why (before anything is allocated)."""
    if isinstance(dtypes, str):
        dtypes = [dtypes]
    if not isinstance(dtypes, (list, tuple)) or not dtypes:
        raise InputError("compute_err_no_dtype", choices=", ".join(DTYPES))
    for name in dtypes:
        choice("compute_dtype", name, DTYPES)
    lacking = dtype_support(device)
    for name in dtypes:
        if lacking[name] is not None:
            key, params = lacking[name]
            raise InputError(key, **params)
    return tuple(dict.fromkeys(dtypes))


# ----------------------------------------------------------------------------------------------- sweep

@dataclass(frozen=True)
class MatmulPoint:
    """One measured (size, dtype): the matmul, how long it took, what that makes."""

    dtype: str
    m: int
    n: int
    k: int
    seconds: float            # per matmul, averaged over `reps`
    reps: int

    @property
    def flops(self) -> int:
        return matmul_flops(self.m, self.n, self.k)

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def intensity(self) -> float:
        in_bytes = DTYPES[self.dtype].itemsize
        return arithmetic_intensity(self.m, self.n, self.k, in_bytes, 2 if self.dtype == "fp8" else None)

    @property
    def size(self) -> int:
        """The swept dimension: n of a square sweep, m (tokens) of a tokens sweep."""
        return self.m


@dataclass(frozen=True)
class MatmulSkip:
    """A (size, dtype) the sweep did not run, and why (a locales key and its parameters)."""

    dtype: str
    size: int
    why: str
    params: dict


def sweep_shapes(kind: str, device: torch.device) -> list[tuple[int, int, int]]:
    """The (m, n, k) of each point of a sweep on ``device``.

    >>> sweep_shapes("square", torch.device("cpu"))[:2], sweep_shapes("tokens", torch.device("cpu"))[0]
    ([(16, 16, 16), (32, 32, 32)], (1, 512, 512))
    """
    choice("compute_kind", kind, SWEEP_KINDS)
    gpu = device.type == "cuda"
    if kind == "square":
        return [(s, s, s) for s in (MATMUL_GPU_SIZES if gpu else MATMUL_CPU_SIZES)]
    d = TOKENS_WIDTH["cuda" if gpu else "cpu"]
    tokens = [1, 4, 16, 64, 256, 1024, 4096, 16384] if gpu else [1, 4, 16, 64, 256, 1024]
    return [(m, d, d) for m in tokens]


def _operands(m: int, n: int, k: int, dtype: str, device: torch.device, gen: torch.Generator):
    """A, B and the function that multiplies them (fp8: ``_scaled_mm`` with B column-major, bf16 out)."""
    if dtype == "fp8":
        a = torch.randn(m, k, device=device, generator=gen).to(DTYPES["fp8"])
        b = torch.randn(n, k, device=device, generator=gen).to(DTYPES["fp8"]).t()      # (k, n), column-major
        one = torch.ones((), device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    a = torch.randn(m, k, device=device, generator=gen, dtype=DTYPES[dtype])
    b = torch.randn(k, n, device=device, generator=gen, dtype=DTYPES[dtype])
    return lambda: a @ b


def time_call(fn, device: torch.device, min_seconds: float, *, trials: int = 5) -> tuple[float, int]:
    """Seconds per call of ``fn``: after a warm-up call, ``trials`` timed runs of the same number of
    calls (chosen so that they fill ``min_seconds`` together), and the fastest run's average. The
    fastest, because whatever else the machine does only ever adds time. On CUDA the clock stops
    after the device has finished this thread's work. Returns (seconds per call, calls timed)."""
    sync = functools.partial(wait_for, device)

    def run(calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        return time.perf_counter() - start

    fn()
    sync()
    calls, elapsed = 1, run(1)
    while elapsed < min_seconds / trials and calls < 2**16:      # calibrate: one run fills its share
        calls *= 2
        elapsed = run(calls)
    best, total, spent, done = elapsed / calls, calls, elapsed, 1
    while done < trials and (spent < min_seconds or done < 2):
        elapsed = run(calls)
        best, total, spent, done = min(best, elapsed / calls), total + calls, spent + elapsed, done + 1
    return best, total


def sweep(kind: str = "square", dtypes=("fp32", "bf16", "fp16"), *, device=None, seed: int = 0,
          budget_s: float | None = None, point_s: float = MATMUL_POINT_S) -> Iterator[MatmulPoint | MatmulSkip]:
    """Measure each shape of :func:`sweep_shapes` in each dtype, smallest first; yield each point as it
    is measured.

    The whole sweep fits ``budget_s`` (default: 8 s on a CPU, 60 s on a GPU): a point whose single
    matmul would take longer than an even share of what is left (predicted from the same dtype's last
    rate) is skipped with the reason, and so are the larger sizes of that dtype. On a GPU a size whose operands would not fit in a quarter of
    the free memory is skipped too.
    """
    device = resolve_device(device)
    dtypes = check_dtypes(dtypes, device)
    shapes = sweep_shapes(kind, device)
    budget = budget_s if budget_s is not None else (MATMUL_GPU_BUDGET_S if device.type == "cuda" else MATMUL_CPU_BUDGET_S)
    gen = torch.Generator(device=device).manual_seed(seed)
    start = time.perf_counter()
    rate: dict[str, float] = {}
    stopped: set[str] = set()
    for i, (m, n, k) in enumerate(shapes):
        for dtype in dtypes:
            if dtype in stopped:
                continue
            left = budget - (time.perf_counter() - start)
            points_left = sum(1 for d in dtypes if d not in stopped) * (len(shapes) - i)
            predicted = matmul_flops(m, n, k) / rate[dtype] if dtype in rate else 0.0
            if left <= 0 or 3 * predicted > left / points_left:    # a warm-up and two timed calls at least
                stopped.add(dtype)
                yield MatmulSkip(dtype, m, "compute_skip_time", dict(dtype=dtype, size=m, seconds=f"{predicted:.2g}"))
                continue
            if dtype == "fp8" and (m % 16 or n % 16 or k % 16):
                yield MatmulSkip(dtype, m, "compute_skip_fp8_shape", dict(size=m))
                continue
            if device.type == "cuda":
                need = bytes_moved(m, n, k, DTYPES[dtype].itemsize, 4)
                if need > torch.cuda.mem_get_info(device)[0] / 4:
                    stopped.add(dtype)
                    yield MatmulSkip(dtype, m, "compute_skip_memory", dict(size=m, gib=f"{need / 2**30:.1f}"))
                    continue
            fn = _operands(m, n, k, dtype, device, gen)
            seconds, reps = time_call(fn, device, point_s)
            del fn
            point = MatmulPoint(dtype, m, n, k, seconds, reps)
            rate[dtype] = point.flops_per_s
            yield point


def measured_peak(points: list[MatmulPoint]) -> dict[str, float]:
    """The best FLOP/s measured per dtype (a CPU's peak: measured, not a datasheet figure).

    >>> measured_peak([MatmulPoint("fp32", 2, 2, 2, 1e-6, 1), MatmulPoint("fp32", 4, 4, 4, 1e-6, 1)])
    {'fp32': 128000000.0}
    """
    best: dict[str, float] = {}
    for p in points:
        best[p.dtype] = max(best.get(p.dtype, 0.0), p.flops_per_s)
    return best


# ----------------------------------------------------------------------------------------------- on paper

def training_seconds(n_params: float, tokens: float, n_gpus: int, peak_flops: float, mfu: float) -> float:
    """Seconds to train ``n_params`` on ``tokens`` (6·N·D FLOPs) on ``n_gpus`` GPUs of ``peak_flops`` each,
    at model FLOPs utilisation ``mfu``.

    >>> round(training_seconds(7e9, 1e12, 1024, 989.5e12, 0.4) / 86400, 2)   # 7B on 1T tokens, 1024 H100s
    1.2
    """
    if not (n_params > 0 and tokens > 0 and n_gpus >= 1 and peak_flops > 0 and 0 < mfu <= 1):
        raise ValueError("training_seconds needs positive sizes and 0 < mfu <= 1")
    return 6 * n_params * tokens / (n_gpus * peak_flops * mfu)


def mfu(achieved_flops_per_s: float, peak_flops_per_s: float) -> float:
    """Model FLOPs utilisation: the FLOP/s a step achieved over the device's peak.

    >>> mfu(3.0e14, 989.5e12) == 3.0e14 / 989.5e12
    True
    """
    if not (achieved_flops_per_s > 0 and peak_flops_per_s > 0 and math.isfinite(achieved_flops_per_s)):
        raise ValueError("mfu needs positive, finite rates")
    return achieved_flops_per_s / peak_flops_per_s


# ----------------------------------------------------------------------------------------------- MFU

@dataclass(frozen=True)
class MfuSetup:
    """What a training step costs, counted three ways before it is timed, and the peak it is judged by."""

    device: str
    threads: int
    dtype: str                      # the matmuls' dtype: fp32 on a CPU, bf16 autocast on a GPU (fp16 without bf16)
    n_params: int                   # every parameter
    n_matmul: int                   # parameters that multiply: every Linear's weight (the LM head included)
    tokens: int                     # per step: batch × seq_len
    rule_flops: int                 # 6 · n_matmul · tokens
    formula_flops: int              # models.transformer.count_flops(..., backward=True)
    counted_flops: int              # FlopCounterMode (with the CPU attention kernel's formulas)
    missed_flops: int               # what plain FlopCounterMode would miss (CPU fused attention), 0 on a GPU
    peak: float | None              # FLOP/s: a datasheet's, or (CPU) the best matmul measured just before
    peak_source: str | None         # the datasheet; None when measured (CPU) or unknown (no peak)


@dataclass(frozen=True)
class MfuStep:
    step: int                       # 1 …: timed steps (step 0 was the counted one)
    seconds: float
    loss: float


def mfu_config(n_layers: int, d_model: int, n_heads: int, seq_len: int):
    """The one transformer as the MFU run trains it: Llama-style defaults, characters of the corpus."""
    return TransformerConfig(len(vocabulary()), n_layers, d_model, n_heads, seq_len)


def check_mfu(n_layers: int, d_model: int, n_heads: int, seq_len: int, batch: int, steps: int, device) -> int:
    """The run's FLOPs if it fits the budget of ``device``, else :class:`InputError` (nothing built yet)."""
    config = mfu_config(n_layers, d_model, n_heads, seq_len)
    total = count_flops(config, batch, seq_len, backward=True, device=device) * (steps + 1)
    budget = MFU_MAX_FLOPS["cuda" if device.type == "cuda" else "cpu"]
    if total > budget:
        raise InputError("compute_err_mfu_budget", flops=f"{total:.3g}", max=f"{budget:.3g}",
                         device=device_name(device))
    return total


def matmul_params(model: torch.nn.Module) -> int:
    """Parameters that take part in a matmul: the weights of every ``nn.Linear`` (a tied LM head is the
    embedding's weight, counted here as the matmul it is)."""
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def cpu_peak(shapes: list[tuple[int, int, int]], *, seconds: float) -> float:
    """The best fp32 FLOP/s of ``shapes`` (m, n, k) on the CPU, each timed as in the sweep."""
    gen = torch.Generator().manual_seed(0)
    best = 0.0
    for m, n, k in shapes:
        fn = _operands(m, n, k, "fp32", torch.device("cpu"), gen)
        per_call, _ = time_call(fn, torch.device("cpu"), seconds)
        best = max(best, matmul_flops(m, n, k) / per_call)
    return best


def mfu_run(n_layers: int = 4, d_model: int = 128, n_heads: int = 4, seq_len: int = 64, batch: int = 8,
            steps: int = 10, *, device=None, seed: int = 0) -> Iterator[MfuSetup | MfuStep]:
    """Train the one transformer for ``steps`` real AdamW steps on characters of the shipped corpus;
    yield the :class:`MfuSetup` (FLOPs by formula and by PyTorch's counter, the peak), then each timed step.

    Step 0 runs under ``FlopCounterMode`` (not timed: the counter slows it); steps 1 … ``steps`` are
    timed, synchronised on a GPU. MFU = FLOPs per step / seconds per step / peak.
    """
    device = resolve_device(device)
    config = mfu_config(n_layers, d_model, n_heads, seq_len)
    check_mfu(n_layers, d_model, n_heads, seq_len, batch, steps, device)
    if device.type == "cuda":
        dtype = "bf16" if dtype_support(device)["bf16"] is None else "fp16"
        table = peak_for(torch.cuda.get_device_name(device))
        peak = table.tflops[dtype] * 1e12 if table and dtype in table.tflops else None
        source = table.source if peak else None
    else:
        dtype, source = "fp32", None
        d_ff, tokens = config.d_ff, batch * seq_len
        peak = cpu_peak([(256, 256, 256), (512, 512, 512), (tokens, d_ff, d_model), (tokens, d_model, d_ff)],
                        seconds=MFU_PROBE_S)
    model = Transformer.seeded(config, seed, device=device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    autocast = torch.autocast(device.type, dtype=DTYPES[dtype], enabled=device.type == "cuda")
    sync = functools.partial(wait_for, device)

    def step(ids: torch.Tensor) -> float:
        with autocast:
            loss = model.loss(ids)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    aten = torch.ops.aten
    with flop_counter() as counter:
        step(char_batch(batch, seq_len + 1, seed=seed, device=device))
    missed = sum(flops for op, flops in counter.get_flop_counts()["Global"].items()
                 if op in (aten._scaled_dot_product_flash_attention_for_cpu,
                           aten._scaled_dot_product_flash_attention_for_cpu_backward))
    n_matmul = matmul_params(model)
    yield MfuSetup(device_name(device), torch.get_num_threads(), dtype, sum(p.numel() for p in model.parameters()),
                   n_matmul, batch * seq_len, 6 * n_matmul * batch * seq_len,
                   count_flops(config, batch, seq_len, backward=True, device=device), counter.get_total_flops(),
                   missed, peak, source)
    for i in range(1, steps + 1):
        ids = char_batch(batch, seq_len + 1, seed=seed + i, device=device)
        sync()
        start = time.perf_counter()
        loss = step(ids)
        sync()
        yield MfuStep(i, time.perf_counter() - start, loss)
