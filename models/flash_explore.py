"""The FlashAttention tiles view: one seeded head, tiled once, replayed step by step.

:func:`explore_flash` checks the learner's sizes, draws ``q, k, v`` (one head, ``T × d``), runs
:func:`models.attention.flash_attention` once (every tile recorded) and the naive path beside it.
:func:`flash_frame` then gives what the picture needs after any number of tiles, without
recomputing anything: the running ``m`` and ``ℓ`` of every query row, the output rows written so
far, the current tile, and the recurrence's numbers for one row of it.

Everything kept is on the CPU (a view steps through it on the server, many times a second).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from models.attention import FlashTrace, NaiveAttention, RowState, Tile, flash_attention, naive_attention
from models.checks import choice, flag, whole
from models.device import Timing, generator, resolve_device, timed
from models.limits import ATTN_FLASH_D, ATTN_FLASH_DTYPES, ATTN_FLASH_T, SEED

TOLERANCE = {"float32": 1e-6, "float64": 1e-12}     # what "tiled = naive" means in each dtype


@dataclass
class FlashExploration:
    """One head tiled once, on the CPU: inputs, the trace, the naive path, and how far apart they are."""

    q: torch.Tensor                 # (T, d)
    k: torch.Tensor                 # (T, d)
    v: torch.Tensor                 # (T, d)
    trace: FlashTrace
    naive: NaiveAttention
    max_diff: float                 # max |tiled − naive| over the output
    max_diff_sdpa: float            # max |tiled − F.scaled_dot_product_attention|
    dtype: str
    tolerance: float
    grid: int                       # tiles per side: ceil(T / block)
    timing: Timing

    @property
    def n_steps(self) -> int:
        return len(self.trace.tiles)


@dataclass(frozen=True)
class Recurrence:
    """The online-softmax update of one query row in one tile, every number of it."""

    row: int
    m_old: float                    # −inf before the row's first tile
    tile_max: float                 # the largest score of this row in this tile (−inf: all masked)
    m_new: float
    rescale: float                  # exp(m_old − m_new)
    l_old: float
    tile_sum: float                 # Σ_j exp(s_j − m_new) over this tile
    l_new: float
    last: bool                      # the row's last tile: out = acc / ℓ next


@dataclass(frozen=True)
class FlashFrame:
    """What the view draws after ``step`` tiles."""

    step: int
    n_steps: int
    tile: Tile | None               # the tile just computed (None at step 0)
    rows: RowState
    recurrence: Recurrence | None   # for the row of the tile whose maximum moved most
    done_tiles: list[tuple[tuple[int, int], tuple[int, int]]]   # (rows, cols) computed up to this step


def explore_flash(T: int = 16, head_dim: int = 8, block: int = 4, causal: bool = True, dtype: str = "float32",
                  seed: int = 0, device: torch.device | str | None = "cpu") -> FlashExploration:
    """Seeded ``q, k, v`` of one head, attended tile by tile and naively; checked, timed.

    On the CPU unless ``device`` says otherwise (``None``: the shared device): the trace keeps every
    tile's state for the page (up to 4,096 tiles of a dozen small ops each), work a GPU does one
    launch and one copy back at a time. Measured on an H200: the largest input tiled in 1,909 ms,
    against 144 ms on two CPU cores. What attention costs on the GPU is the cost sweep's to show.

    >>> ex = explore_flash(T=5, head_dim=3, block=2, causal=True, dtype="float64")
    >>> ex.grid, ex.n_steps, len(ex.trace.skipped), ex.max_diff < ex.tolerance
    (3, 6, 3, True)
    """
    T = ATTN_FLASH_T.whole("attn_T", T)
    d = ATTN_FLASH_D.whole("attn_head_dim", head_dim)
    block = ATTN_FLASH_T.whole("attn_block", block)
    choice("attn_dtype", dtype, ATTN_FLASH_DTYPES)
    causal = flag("attn_causal", causal)
    device = resolve_device(device)
    with timed(device) as watch:
        g = generator(SEED.whole("seed", seed), device)
        q, k, v = torch.randn(3, T, d, generator=g, device=device, dtype=getattr(torch, dtype))  # (T, d) each
        trace = flash_attention(q, k, v, block=block, causal=causal)
        naive = naive_attention(q, k, v, causal=causal)
        reference = F.scaled_dot_product_attention(q, k, v, is_causal=causal)   # (T, d)
        diff = (trace.out - naive.out).abs().max().item()
        diff_sdpa = (trace.out - reference).abs().max().item()
    if device.type != "cpu":
        q, k, v, trace, naive = (_cpu(x) for x in (q, k, v, trace, naive))
    return FlashExploration(q, k, v, trace, naive, diff, diff_sdpa, dtype, TOLERANCE[dtype], math.ceil(T / block),
                            watch.timing)


def _cpu(x):
    """A tensor, or a dataclass / list of them, copied to the CPU."""
    import dataclasses
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, list):
        return [_cpu(item) for item in x]
    if dataclasses.is_dataclass(x):
        return dataclasses.replace(x, **{f.name: _cpu(getattr(x, f.name)) for f in dataclasses.fields(x)
                                         if f.init})
    return x


def flash_frame(ex: FlashExploration, step: int) -> FlashFrame:
    """The view after ``step`` computed tiles (0 … ``ex.n_steps``).

    >>> ex = explore_flash(T=4, head_dim=2, block=2, causal=False)
    >>> frame = flash_frame(ex, 2)
    >>> frame.tile.rows, frame.tile.cols, frame.rows.done_rows, frame.recurrence.last
    ((0, 2), (2, 4), 2, True)
    """
    step = whole("attn_step", step, 0, ex.n_steps)
    tile = ex.trace.tiles[step - 1] if step else None
    done = [(t.rows, t.cols) for t in ex.trace.tiles[:step]]
    return FlashFrame(step, ex.n_steps, tile, ex.trace.state(step), recurrence(tile) if tile else None, done)


def recurrence(tile: Tile) -> Recurrence:
    """The numbers of the tile's row whose running maximum moved most (the first row at a row's first tile)."""
    moved = tile.m_new - tile.m_old                                         # (bq,) +inf at a first tile
    moved = torch.where(torch.isnan(moved), torch.zeros_like(moved), moved)   # −inf − (−inf): nothing allowed yet
    i = int(moved.argmax())
    s = tile.scores[i]                                                      # (bk,)
    m_new = tile.m_new[i].item()
    shift = 0.0 if m_new == -math.inf else m_new
    return Recurrence(tile.rows[0] + i, tile.m_old[i].item(), s.max().item(), m_new, tile.rescale[i].item(),
                      tile.l_old[i].item(), torch.exp(s - shift).sum().item(), tile.l_new[i].item(), tile.last)
