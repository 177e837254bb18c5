"""The T² wall, measured: what attention costs in memory and time as the context grows.

For T = 256, 512, … up to a bound, on the shared device, three implementations of the same
attention run on the same seeded ``q, k, v`` (``batch × heads × T × d``):

* ``naive``: :func:`models.attention.naive_attention`, which builds the ``T × T`` scores and
  probabilities (their bytes grow with T²);
* ``sdpa``: ``F.scaled_dot_product_attention``, PyTorch's fused kernel. Which backend it picked
  (FlashAttention, memory-efficient, cuDNN, math, or the CPU's fused flash kernel) is read from the
  profiler's op names, not assumed;
* ``tiled``: our teaching loop :func:`models.attention.flash_attention` (``record=False``), which
  needs ``O(T·d)`` besides one tile.

Memory is measured, never computed from a formula: on CUDA the peak of
``torch.cuda.max_memory_allocated`` during the call; on the CPU the peak of the running sum of the
allocations and frees that ``torch.profiler`` records with ``profile_memory=True`` (the c10 CPU
allocator reports each one; for the naive path this equals the ``nbytes`` of the scores,
probabilities and output it returns, which the tests check). Formulas are drawn beside the
measurements, not instead of them.

Nothing is allocated before its size is checked: a call whose predicted bytes exceed the budget
(:func:`byte_budget`) is not run (the naive line stops at the "wall"), and a call predicted to take
longer than ``ATTN_COST_MAX_CALL_S`` (its time at the last T, × 4 per doubling) is not run either.
The KV-cache side is measured on the tiny GPT of the KV-cache tab: one cached decode step's time
at several context lengths.

Not handled: the backward pass, causal masking in the sweep (a causal naive path adds a ``T × T``
mask), several devices.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, replace
from typing import Callable, Iterator

import torch
import torch.nn.functional as F

from models.attention import flash_attention, naive_attention
from models.checks import InputError, choice, whole
from models.device import device_name, generator, on_gpu, resolve_device, wait_for
from models.limits import (ATTN_COST_BATCH, ATTN_COST_CUDA_FREE_FRACTION, ATTN_COST_DTYPES, ATTN_COST_HEAD_DIM,
                           ATTN_COST_MAX_BYTES_CPU, ATTN_COST_MAX_BYTES_CUDA, ATTN_COST_MAX_CALL_S,
                           ATTN_COST_HEADS, ATTN_COST_MAX_SECONDS,
                           ATTN_COST_MAX_T_CPU, ATTN_COST_MAX_T_CUDA, ATTN_COST_MIN_T, ATTN_COST_TILED_BLOCK,
                           ATTN_DECODE_STEPS, KV_CONTEXT)

IMPLEMENTATIONS = ("naive", "sdpa", "tiled")
# The op that SDPA dispatched to, as the profiler names it -> the backend's key (locales: attn_backend_<key>).
SDPA_BACKENDS = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": "cpu_flash",
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_scaled_dot_product_attention_math": "math",
    "aten::_scaled_dot_product_fused_attention_overrideable": "overrideable",
}
DECODE_CONTEXTS = (8, 16, 32, 64, 128, 256, KV_CONTEXT - ATTN_DECODE_STEPS)
TIME_BUDGET_PER_POINT_S = 0.5       # timed repeats of one call stop after this long (at least one, at most 3)


# --------------------------------------------------------------------------- measuring one call
@dataclass(frozen=True)
class Call:
    """One call measured: the peak bytes it allocated (its output included), its time, its ops."""

    peak_bytes: int
    ms: float                       # median over `runs` timed calls (after one profiled call)
    runs: int
    ops: frozenset[str]


@dataclass(frozen=True)
class Skipped:
    """A call not run: ``reason`` "memory" (``need`` bytes over the budget) or "time" (``need`` seconds)."""

    reason: str
    need: float


def _peak_from_profile(prof) -> int | None:
    """Peak of the running sum of the allocations (+) and frees (−) the profiler saw, in bytes.

    Reads the profiler's event tree (``experimental_event_tree``: the allocation events with their
    sizes and times, what ``torch.profiler``'s own memory timeline is built from). ``None`` when
    this torch does not offer it.
    """
    try:
        from torch._C._profiler import _EventType
        stack = list(prof.profiler.kineto_results.experimental_event_tree())
    except (AttributeError, ImportError):                                   # pragma: no cover
        return None
    events = []
    while stack:
        event = stack.pop()
        if event.tag == _EventType.Allocation:
            events.append((event.start_time_ns, event.extra_fields.alloc_size))
        stack.extend(event.children)
    running = peak = 0
    for _, size in sorted(events):
        running += size
        peak = max(peak, running)
    return peak


def measure_peak(fn: Callable[[], object], device: torch.device) -> tuple[object, int, frozenset[str], float]:
    """Run ``fn()`` once under the profiler: its result, the peak bytes it allocated, the ops it ran,
    and its milliseconds (profiler included).

    CUDA: ``torch.cuda.max_memory_allocated`` above what was allocated before. CPU: the profiler's
    allocation events (:func:`_peak_from_profile`).

    >>> _, peak, ops, _ = measure_peak(lambda: torch.ones(256, 256), torch.device("cpu"))
    >>> peak, "aten::ones" in ops
    (262144, True)
    """
    from torch.profiler import ProfilerActivity, profile

    # Kineto (the profiler's backend) logs two lines per profile at its highest level, "USDT": ~44 lines of
    # the server's log per measurement. Level 6 is above every level, so its errors go unsaid too (a failed
    # profile reads as no peak: the result's own size is used). Kineto reads it at its first profile in a
    # process (each job's process is new).
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    start = time.perf_counter()
    if device.type == "cuda":
        wait_for(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            result = fn()
            wait_for(device)
        peak = torch.cuda.max_memory_allocated(device) - before
    else:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            result = fn()
        peak = _peak_from_profile(prof)
        if peak is None:                                                    # pragma: no cover
            peak = _nbytes(result)
    ms = (time.perf_counter() - start) * 1e3
    return result, int(peak), frozenset(e.name for e in prof.events()), ms


def _nbytes(result) -> int:
    tensors = [result] if isinstance(result, torch.Tensor) else [
        getattr(result, name) for name in ("scores", "probs", "out") if hasattr(result, name)]
    return sum(t.nbytes for t in tensors if isinstance(t, torch.Tensor))


def time_call(fn: Callable[[], object], device: torch.device, *, budget_s: float = TIME_BUDGET_PER_POINT_S,
              max_runs: int = 3) -> tuple[float, int]:
    """Median milliseconds of ``fn()`` over up to ``max_runs`` calls, fewer once ``budget_s`` is spent."""
    times = []
    while len(times) < max_runs and (not times or sum(times) < budget_s):
        wait_for(device)
        start = time.perf_counter()
        fn()
        wait_for(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, len(times)


def sdpa_backend(ops: frozenset[str]) -> str:
    """The backend SDPA ran, from the op names of one profiled call ("unknown" if none matches).

    >>> sdpa_backend(frozenset({"aten::scaled_dot_product_attention",
    ...                         "aten::_scaled_dot_product_flash_attention_for_cpu"}))
    'cpu_flash'
    """
    found = [key for op, key in SDPA_BACKENDS.items() if op in ops]
    return found[0] if found else "unknown"


# --------------------------------------------------------------------------- the budget
def _available_cpu_bytes() -> int | None:
    """MemAvailable from ``/proc/meminfo`` (Linux), else ``None``."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:                                                         # pragma: no cover
        return None
    return None                                                             # pragma: no cover


def byte_budget(device: torch.device) -> int:
    """Bytes one sweep may allocate on ``device``: the fixed bound, and at most a fraction of what is free."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(min(ATTN_COST_MAX_BYTES_CUDA, ATTN_COST_CUDA_FREE_FRACTION * free))
    available = _available_cpu_bytes()
    return int(min(ATTN_COST_MAX_BYTES_CPU, ATTN_COST_CUDA_FREE_FRACTION * available) if available
               else ATTN_COST_MAX_BYTES_CPU)


def max_context(device: torch.device) -> int:
    """The largest T a sweep may ask for on this device."""
    return ATTN_COST_MAX_T_CUDA if device.type == "cuda" else ATTN_COST_MAX_T_CPU


def contexts(max_T: int) -> list[int]:
    """T doubling from the smallest up to ``max_T`` (a last point at ``max_T`` if it is no power of two).

    >>> contexts(2048), contexts(3000)
    ([256, 512, 1024, 2048], [256, 512, 1024, 2048, 3000])
    """
    Ts, T = [], ATTN_COST_MIN_T
    while T < max_T:
        Ts.append(T)
        T *= 2
    return Ts + [max_T]


@dataclass(frozen=True)
class Shape:
    """What one sweep measures: ``batch × heads`` heads of dim ``head_dim`` in ``dtype``."""

    batch: int
    heads: int
    head_dim: int
    dtype: str

    @property
    def bytes_per_elem(self) -> int:
        return getattr(torch, self.dtype).itemsize

    @property
    def n_heads(self) -> int:
        return self.batch * self.heads

    def matrices_bytes(self, T: int, cols: int | None = None) -> int:
        """Scores + probabilities of the naive path: ``2 · B · H · T · cols`` numbers (cols = T)."""
        return 2 * self.n_heads * T * (T if cols is None else cols) * self.bytes_per_elem

    def rows_bytes(self, T: int, n: int = 1) -> int:
        """``n`` tensors of ``B · H · T · d`` numbers (q, k, v, out: the O(T·d) a tiled kernel needs)."""
        return n * self.n_heads * T * self.head_dim * self.bytes_per_elem

    def need(self, impl: str, T: int, backend: str | None, block: int) -> int:
        """Bytes a call is predicted to allocate beyond its inputs (checked before it runs).

        Naive: scores, probabilities, output, and the scaled q. SDPA: its output and row statistics,
        unless it falls back to the math backend, which builds the scores like the naive path (and
        one more ``T × T``). Tiled: the output, the scaled q block and three tiles.
        """
        if impl == "naive" or (impl == "sdpa" and backend in (None, "math")):
            extra = self.n_heads * T * T * self.bytes_per_elem if impl == "sdpa" else 0
            return self.matrices_bytes(T) + self.rows_bytes(T, 2) + extra
        if impl == "sdpa":
            return self.rows_bytes(T, 2) + self.n_heads * T * 8
        return self.rows_bytes(T, 2) + 4 * self.n_heads * block * block * self.bytes_per_elem


def check_sweep(max_T, head_dim, heads, batch, dtype, device: torch.device) -> tuple[list[int], Shape, int]:
    """The sweep's contexts, shape and byte budget; an :class:`InputError` when it cannot fit.

    Refused before anything is allocated: a T beyond the device's bound, or inputs (q, k, v and an
    output) at the largest T that alone exceed the budget.
    """
    shape = Shape(ATTN_COST_BATCH.whole("attn_batch", batch), ATTN_COST_HEADS.whole("attn_heads", heads),
                  ATTN_COST_HEAD_DIM.whole("attn_head_dim", head_dim),
                  choice("attn_dtype", dtype, ATTN_COST_DTYPES))
    T = whole("attn_max_T", max_T, ATTN_COST_MIN_T)
    bound = max_context(device)
    if T > bound:
        raise InputError("attn_err_beyond_device", value=T, device=device.type, bound=bound)
    budget = byte_budget(device)
    need = shape.rows_bytes(T, 4)
    if need > budget:
        raise InputError("attn_err_beyond_budget", value=T, need=_mib(need), budget=_mib(budget))
    return contexts(T), shape, budget


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


# --------------------------------------------------------------------------- the sweep
@dataclass(frozen=True)
class CostPoint:
    """Everything measured at one T, and the formulas drawn beside it."""

    T: int
    calls: dict[str, Call | Skipped]      # by implementation: "naive", "sdpa", "tiled"
    matrices_bytes: int                   # formula: scores + probabilities, 2·B·H·T²·bytes
    rows_bytes: int                       # formula: the output, B·H·T·d·bytes: the O(T·d) a call must allocate
    window_bytes: int                     # formula: scores + probabilities under a sliding window W
    max_diff: float | None                # largest |naive − SDPA| (or |tiled − SDPA|) of the outputs


@dataclass(frozen=True)
class DecodePoint:
    """One cached decode step of the tiny GPT at a context length: its time and the cache it reads."""

    context: int                          # tokens cached before the step
    ms: float                             # the fastest of ATTN_DECODE_STEPS consecutive steps
    cache_bytes: int                      # KVCache.nbytes() when the step runs (measured)


@dataclass(frozen=True)
class CostSweep:
    """A sweep's state as it streams: each update holds everything measured so far."""

    device: str
    shape: Shape
    block: int
    window: int
    budget_bytes: int
    threads: int
    backend: str | None = None            # the kernel SDPA ran at the last T (None before the first)
    points: tuple[CostPoint, ...] = ()
    decode: tuple[DecodePoint, ...] = ()
    contexts: tuple[int, ...] = ()
    ended: str | None = None              # None while running; "done" or "time" (the time budget ran out)
    seconds: float = 0.0
    window_cache: tuple[tuple[int, int, int], ...] = ()   # (T, full cache, windowed cache): Mistral-7B's bytes

    def backends(self) -> list[str]:
        """Every kernel SDPA ran in this sweep, in order of T (it may change with the size)."""
        found = [sdpa_backend(p.calls["sdpa"].ops) for p in self.points if isinstance(p.calls.get("sdpa"), Call)]
        return list(dict.fromkeys(found))

    def decode_fit(self) -> tuple[float, float] | None:
        """Least-squares ``ms = a + b · context`` through the decode points: ``(a, b)``."""
        if len(self.decode) < 2:
            return None
        return fit_line([p.context for p in self.decode], [p.ms for p in self.decode])


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares intercept and slope.

    >>> fit_line([0, 1, 2], [1, 3, 5])
    (1.0, 2.0)
    """
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - slope * mx, slope


def mistral_window_cache(Ts: list[int]) -> list[tuple[int, int, int]]:
    """Mistral-7B v0.1's KV cache (bf16, one sequence) at each T: were every layer to keep every token, and
    as it is, each layer a rolling buffer of its window (the calculator's preset).

    >>> mistral_window_cache([8192])[0][1] // 2**20, mistral_window_cache([8192])[0][2] // 2**20
    (1024, 512)
    """
    from models.calculator import PRESETS, kv_cache_bytes, with_changes
    spec = PRESETS["Mistral-7B v0.1"]
    full = with_changes(spec, sliding_window=0, sliding_layers=0)
    return [(T, kv_cache_bytes(full, T, 1, "bf16"), kv_cache_bytes(spec, T, 1, "bf16")) for T in Ts]


def decode_step_times(contexts: tuple[int, ...] = DECODE_CONTEXTS, *, steps: int = ATTN_DECODE_STEPS, seed: int = 0,
                      device: torch.device | str | None = None) -> list[DecodePoint]:
    """Time one cached decode step of the tiny GPT (MHA checkpoint) at each context length.

    Each length gets its own cache, filled by a prefill (not timed). Then ``steps`` rounds each
    time one decode step at every length in turn, so a burst of load on a shared machine slows all
    lengths alike; a point is the fastest of its ``steps`` (contexts ``c … c + steps − 1``).
    """
    from models.generation import KVCache
    from models.tiny_gpt import load_tiny_gpt

    device = resolve_device(device)
    model = load_tiny_gpt("mha", device=device).model
    config = model.config
    g = generator(seed, device)
    with torch.inference_mode():
        runs = []                                                           # (context, ids, cache, times)
        for context in contexts:
            ids = torch.randint(0, config.vocab_size, (1, context + steps), generator=g, device=device)
            cache = KVCache(config, capacity=context + steps, device=device)
            model(ids[:, :context], cache)                                  # prefill: not timed
            runs.append((context, ids, cache, cache.nbytes(), []))
        for i in range(steps):
            for context, ids, cache, _, times in runs:
                token = ids[:, context + i:context + i + 1]                 # (1, 1)
                times.append(time_call(lambda: model(token, cache), device, max_runs=1)[0])
    return [DecodePoint(context, min(times), nbytes) for context, _, _, nbytes, times in runs]


def _inputs(shape: Shape, T: int, device: torch.device, seed: int) -> tuple[torch.Tensor, ...]:
    g = generator(seed, device)
    return tuple(torch.randn(shape.batch, shape.heads, T, shape.head_dim, generator=g, device=device,
                             dtype=getattr(torch, shape.dtype)) for _ in range(3))   # (B, H, T, d) each


@on_gpu(duration=150)
def cost_sweep(max_T: int = ATTN_COST_MAX_T_CPU, head_dim: int = 64, heads: int = 1, batch: int = 1,
               dtype: str = "float32", *, block: int = ATTN_COST_TILED_BLOCK, seed: int = 0,
               device: torch.device | str | None = None, decode: bool = True,
               max_seconds: float = ATTN_COST_MAX_SECONDS, max_call_s: float = ATTN_COST_MAX_CALL_S,
               ) -> Iterator[CostSweep]:
    """Measure naive, SDPA and tiled attention at each T; yield the sweep after every measured point.

    First (``decode=True``) the tiny GPT's cached decode steps at several context lengths, then
    T = 256, 512, … ``max_T``. Every call's bytes are predicted and checked against the budget
    before it runs, its time against ``max_call_s``; the whole sweep stops after ``max_seconds``.
    Everything yielded is plain data (it crosses a process boundary).
    """
    device = resolve_device(device)
    Ts, shape, budget = check_sweep(max_T, head_dim, heads, batch, dtype, device)
    start = time.perf_counter()
    from models.kv_layouts import MISTRAL_WINDOW
    sweep = CostSweep(device_name(device), shape, whole("attn_block", block, 1), MISTRAL_WINDOW, budget,
                      torch.get_num_threads() if device.type == "cpu" else 0, contexts=tuple(Ts),
                      window_cache=tuple(mistral_window_cache(contexts(ATTN_COST_MAX_T_CUDA))))
    if decode:
        sweep = replace(sweep, decode=tuple(decode_step_times(device=device)), seconds=time.perf_counter() - start)
        yield sweep
    measure_peak(lambda: torch.ones(1, device=device), device)             # the profiler's first start is slow
    last: dict[str, tuple[int, float]] = {}                                 # impl -> (T, ms) of its last run
    for T in Ts:
        if time.perf_counter() - start > max_seconds:
            yield replace(sweep, ended="time", seconds=time.perf_counter() - start)
            return
        q, k, v = _inputs(shape, T, device, seed)
        calls, outs = {}, {}
        for impl in IMPLEMENTATIONS:
            need = shape.need(impl, T, sweep.backend, sweep.block)
            room = min(budget, byte_budget(device)) - shape.rows_bytes(T, 3)   # what is free now, q, k, v made
            if need > room:
                calls[impl] = Skipped("memory", need)
                continue
            if impl in last:
                T0, ms0 = last[impl]
                predicted = ms0 / 1e3 * (T / T0) ** 2
                if predicted > max_call_s:
                    calls[impl] = Skipped("time", predicted)
                    continue
            fn = _runner(impl, q, k, v, sweep.block)
            result, peak, ops, ms = measure_peak(fn, device)
            outs[impl] = result.out if hasattr(result, "out") else result
            del result
            runs = 1                           # a slow call is timed once, profiled (the profiler adds little)
            if ms / 1e3 < TIME_BUDGET_PER_POINT_S:
                ms, runs = time_call(fn, device)
            calls[impl] = Call(peak, ms, runs, ops)
            last[impl] = (T, ms)
            if impl == "sdpa":                                          # the next T's memory check uses it
                sweep = replace(sweep, backend=sdpa_backend(ops))
        reference = outs.get("sdpa")
        other = outs.get("naive", outs.get("tiled"))
        diff = None if reference is None or other is None else (other.float() - reference.float()).abs().max().item()
        point = CostPoint(T, calls, shape.matrices_bytes(T), shape.rows_bytes(T),
                          shape.matrices_bytes(T, min(T, sweep.window)), diff)
        del q, k, v, outs, reference, other
        sweep = replace(sweep, points=(*sweep.points, point), seconds=time.perf_counter() - start)
        yield sweep
    yield replace(sweep, ended="done", seconds=time.perf_counter() - start)


def _runner(impl: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block: int) -> Callable[[], object]:
    if impl == "naive":
        return lambda: naive_attention(q, k, v)
    if impl == "sdpa":
        return lambda: F.scaled_dot_product_attention(q, k, v)
    return lambda: flash_attention(q, k, v, block=block, record=False)

