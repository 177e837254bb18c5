"""The shared torch backend: which device computes, how results are seeded and timed, ZeroGPU.

Every backend entry point takes ``device=None`` meaning "the shared device" (:func:`get_device`)
and, when it draws random numbers, a ``seed`` so that the same call on the same device gives the
same numbers. Results carry a :class:`Timing` that the UI prints as "computed on cpu in 4.2 ms".

Not handled: multi-GPU placement (every tab fits on one device) and MPS (not a target of Spaces).
"""
from __future__ import annotations

import ctypes
import os
import platform
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, TypeVar

import torch

DEVICE_ENV = "LLM_ANATOMY_DEVICE"
DEVICE_CHOICES = ("auto", "cpu", "cuda")
THREADS_ENV = "LLM_ANATOMY_THREADS"   # CPU threads per torch op; the served app leaves a core free

if os.environ.get(THREADS_ENV, "").isdigit() and int(os.environ[THREADS_ENV]) > 0:
    torch.set_num_threads(int(os.environ[THREADS_ENV]))

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3          # mallopt's parameter numbers, from <malloc.h>


def keep_freed_memory(mmap_below: int = 32 << 20, trim_above: int = 256 << 20) -> bool:
    """Let glibc hand freed tensor memory to the next tensor instead of back to the kernel.

    By default glibc serves a block above a moving threshold (128 KB to 32 MB) with fresh pages from
    ``mmap`` and returns free memory at the heap's top to the kernel, so a forward pass that allocates a
    few tensors of megabytes page-faults on every 4 KB of them on every call: in ``bench/bench_moe.py``
    the floor's 5.8 MB hidden buffer made it 12.0 ms instead of 8.3, and the E = 32 layer spent a third
    of its rounds' CPU time in the kernel. Fixed thresholds keep blocks under ``mmap_below`` on the
    heap and up to ``trim_above`` bytes of free heap mapped (the price: a process keeps its peak).
    Larger blocks still come from ``mmap``. Called once at import.

    Returns whether glibc took both settings (False elsewhere: macOS, Windows, musl).

    >>> keep_freed_memory() == (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")
    True
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, mmap_below)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, trim_above))


keep_freed_memory()

F = TypeVar("F", bound=Callable)


def get_device() -> torch.device:
    """CUDA when available, else the CPU; ``LLM_ANATOMY_DEVICE=cpu|cuda|auto`` overrides.

    >>> get_device().type in ("cpu", "cuda")
    True
    """
    choice = os.environ.get(DEVICE_ENV, "auto").strip().lower() or "auto"
    if choice not in DEVICE_CHOICES:
        raise ValueError(f"{DEVICE_ENV}={choice!r} is not one of {', '.join(DEVICE_CHOICES)}")
    if choice == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{DEVICE_ENV}=cuda but no CUDA device is available")
    if choice == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda")


def resolve_device(device: torch.device | str | None) -> torch.device:
    """``None`` -> the shared device; a string or device -> that device."""
    return get_device() if device is None else torch.device(device)


def device_name(device: torch.device) -> str:
    """A short human name: ``"cpu"`` or ``"cuda (NVIDIA H100 80GB HBM3)"``."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type


def generator(seed: int, device: torch.device) -> torch.Generator:
    """A fresh generator seeded with ``seed`` on ``device``: the same seed gives the same draws."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise ValueError(f"seed = {seed!r} must be an integer in [0, 2^63)")
    return torch.Generator(device=device).manual_seed(seed)


@dataclass(frozen=True)
class Timing:
    """Where and how fast a result was computed."""

    device: str
    ms: float

    def __str__(self) -> str:
        """``cpu · 4.2 ms``; from 10 s, seconds (a training's total: ``cpu · 27.3 s``, not 27272.6 ms).

        >>> str(Timing("cpu", 4.2)), str(Timing("cpu", 27272.6))
        ('cpu · 4.2 ms', 'cpu · 27.3 s')
        """
        return f"{self.device} · {self.ms / 1000:.1f} s" if self.ms >= 10_000 else f"{self.device} · {self.ms:.1f} ms"


class _Stopwatch:
    timing: Timing


def wait_for(device: torch.device) -> None:
    """Wait until the work this thread queued on ``device`` is done: on CUDA its current stream, not the
    whole device (a device-wide synchronize in one thread breaks a CUDA-graph recording in another,
    :mod:`models.transformer.decode`); nothing to wait for on a CPU.

    >>> wait_for(torch.device("cpu"))
    """
    if device.type == "cuda":
        torch.cuda.current_stream(device).synchronize()


@contextmanager
def timed(device: torch.device) -> Iterator[_Stopwatch]:
    """Time a block of work on ``device`` (this thread's CUDA work is waited for before the clock stops).

    >>> with timed(torch.device("cpu")) as sw:
    ...     _ = torch.ones(3).sum()
    >>> sw.timing.device
    'cpu'
    """
    watch = _Stopwatch()
    wait_for(device)
    start = time.perf_counter()
    try:
        yield watch
    finally:
        wait_for(device)
        watch.timing = Timing(device_name(device), (time.perf_counter() - start) * 1e3)


def on_gpu(fn: F | None = None, *, duration: int | None = None) -> F | Callable[[F], F]:
    """Mark a GPU-heavy entry point: ``spaces.GPU`` on Hugging Face ZeroGPU, unchanged elsewhere.

    Use bare (``@on_gpu``) or with a time budget in seconds (``@on_gpu(duration=120)``).
    Outside a ZeroGPU Space (``SPACES_ZERO_GPU`` unset) ``spaces.GPU`` itself returns the
    function unchanged, so the package being installed locally changes nothing.
    """
    try:
        import spaces  # on ZeroGPU this must come before CUDA is initialised; importing torch does not
    except ImportError:
        spaces = None

    def wrap(f: F) -> F:
        if spaces is None:
            return f
        return spaces.GPU(f, duration=duration) if duration else spaces.GPU(f)

    return wrap(fn) if fn is not None else wrap
