"""Attention, step by step and tiled.

Two ways to compute the same ``softmax(q kᵀ / √d) v``, written to be read beside the picture:

* :func:`naive_attention` builds the whole ``T_q × T_k`` score matrix and its softmax, as the
  textbook formula says (and as every tutorial's first version does). Its memory grows with T².
* :func:`flash_attention` is FlashAttention's forward (Dao et al. 2022, "FlashAttention: Fast and
  Memory-Efficient Exact Attention with IO-Awareness", Algorithm 1, in the loop order of
  FlashAttention-2, Dao 2023, Algorithm 1): it walks the keys and values in tiles and keeps, for
  every query row, a running maximum ``m``, a running sum ``ℓ`` and an unnormalised output. When a
  tile raises a row's maximum, what was summed so far is rescaled by ``exp(m_old − m_new)``; the
  division by ``ℓ`` happens once, after the row's last tile. The result is exact, not an
  approximation: it equals ``F.scaled_dot_product_attention`` to rounding.

The tiled loop is for teaching: a Python loop over tiles, each tile vectorised, that records what
happened in every tile (:class:`Tile`) so a view can replay it. PyTorch's fused kernels
(``F.scaled_dot_product_attention``) are what runs in practice; :mod:`models.attention_cost`
measures them against the naive path. Attention inside the trained models (the heads, the code
step by step, √d, the next token) is :mod:`models.attention_explore`.

Conventions: tensors are ``[..., T, d]`` with any leading dims (batch, heads); a boolean ``mask``
is ``True`` where a query may attend (PyTorch's, :mod:`models.masks`); ``causal`` aligns the
triangle top-left as ``is_causal=True`` does, and needs ``T_q == T_k``. A query row with no key to
attend gets zero output, never NaN (as :func:`models.masks.masked_attention`).

Not handled: dropout, a float (additive) mask, the backward pass (FlashAttention recomputes the
tiles from the saved ``m + log ℓ``; here autograd simply differentiates the loop), and separate
block sizes for queries and keys (one ``block`` for both).

>>> q = k = v = torch.eye(3)[None]                      # (1, 3, 3): one sequence of 3 tokens
>>> trace = flash_attention(q, k, v, block=2, causal=True)
>>> len(trace.tiles), trace.skipped                      # tile (rows 0-1, keys 2) is above the diagonal
(3, [((0, 2), (2, 3))])
>>> torch.allclose(trace.out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from models.checks import InputError, whole

Span = tuple[int, int]              # [start, stop) of a block of rows or columns


@dataclass(frozen=True)
class NaiveAttention:
    """The textbook path, every intermediate kept: what the tiled path never builds."""

    scores: torch.Tensor            # (..., T_q, T_k) q·k/√d, −inf where masked
    probs: torch.Tensor             # (..., T_q, T_k) softmax of each row (a row with no key: zeros)
    out: torch.Tensor               # (..., T_q, d_v)


@dataclass(frozen=True)
class Tile:
    """One tile of the loop: queries ``rows`` against keys ``cols``, and the running state of those rows."""

    rows: Span
    cols: Span
    scores: torch.Tensor            # (..., bq, bk) this tile's q·k/√d, −inf where masked
    m_old: torch.Tensor             # (..., bq) running maximum before the tile (−inf before the first)
    m_new: torch.Tensor             # (..., bq) after: max(m_old, the tile's row maxima)
    rescale: torch.Tensor           # (..., bq) exp(m_old − m_new): what ℓ and the output are multiplied by
    l_old: torch.Tensor             # (..., bq) running sum of exp(s − m_old)
    l_new: torch.Tensor             # (..., bq) rescale · l_old + Σ exp(s − m_new) over this tile
    acc: torch.Tensor               # (..., bq, d_v) unnormalised output after the tile: Σ exp(s − m_new) v
    last: bool                      # the last tile of its rows: their output acc / ℓ is written after it

    @property
    def partial(self) -> torch.Tensor:
        """``acc / ℓ``: the attention output over the keys seen so far (zeros where no key was allowed)."""
        return _divide(self.acc, self.l_new)


@dataclass
class FlashTrace:
    """The tiled forward's result and what each tile did."""

    out: torch.Tensor               # (..., T_q, d_v)
    m: torch.Tensor                 # (..., T_q) each row's maximum score (−inf: no key allowed)
    l: torch.Tensor                 # (..., T_q) Σ_j exp(s_j − m): the softmax's denominator, shifted
    tiles: list[Tile]               # the tiles computed, in the order computed
    skipped: list[tuple[Span, Span]]  # (rows, cols) of the tiles never computed: every cell masked
    block: int
    causal: bool
    shape: tuple[int, int]          # (T_q, T_k)

    @property
    def lse(self) -> torch.Tensor:
        """``m + log ℓ``: each row's log-sum-exp, what FlashAttention saves for its backward pass."""
        return self.m + self.l.log()

    def state(self, step: int) -> "RowState":
        """Every query row's running ``m``, ``ℓ`` and output after the first ``step`` computed tiles.

        Rows whose block is finished hold their final values; the current block's rows hold the
        state after tile ``step``; rows not reached yet hold ``m = −inf``, ``ℓ = 0`` and NaN output
        (nothing written). ``step = 0`` is before any tile, ``len(tiles)`` after the last.
        """
        whole("attn_step", step, 0, len(self.tiles))
        m = torch.full_like(self.m, -math.inf)
        l = torch.zeros_like(self.l)
        out = torch.full_like(self.out, math.nan)
        done_to = self.shape[0] if step == len(self.tiles) else 0         # rows [0, done_to) are finished
        if 0 < step < len(self.tiles):
            tile = self.tiles[step - 1]
            done_to = tile.rows[1] if tile.last else tile.rows[0]
            r0, r1 = tile.rows
            m[..., r0:r1], l[..., r0:r1] = tile.m_new, tile.l_new
            out[..., r0:r1, :] = tile.partial
        m[..., :done_to], l[..., :done_to] = self.m[..., :done_to], self.l[..., :done_to]
        out[..., :done_to, :] = self.out[..., :done_to, :]
        return RowState(m, l, out, done_to)


@dataclass(frozen=True)
class RowState:
    """All query rows at one step of the tiled loop (see :meth:`FlashTrace.state`)."""

    m: torch.Tensor                 # (..., T_q)
    l: torch.Tensor                 # (..., T_q)
    out: torch.Tensor               # (..., T_q, d_v) NaN where not written yet
    done_rows: int                  # rows [0, done_rows) have their final output


def _divide(acc: torch.Tensor, l: torch.Tensor) -> torch.Tensor:
    """``acc / ℓ`` row by row; a row with ``ℓ = 0`` (no allowed key) gives zeros, not NaN."""
    safe = torch.where(l > 0, l, torch.ones_like(l))
    return torch.where((l > 0)[..., None], acc / safe[..., None], torch.zeros_like(acc))


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> None:
    """Shapes that attention accepts: ``q (..., T_q, d)``, ``k (..., T_k, d)``, ``v (..., T_k, d_v)``."""
    if q.dim() < 2 or k.dim() != q.dim() or v.dim() != q.dim():
        raise InputError("attn_err_rank", q=tuple(q.shape), k=tuple(k.shape), v=tuple(v.shape))
    if (q.shape[:-2] != k.shape[:-2] or k.shape[:-2] != v.shape[:-2] or q.shape[-1] != k.shape[-1]
            or k.shape[-2] != v.shape[-2] or min(q.shape[-2], k.shape[-2], q.shape[-1]) < 1):
        raise InputError("attn_err_shapes", q=tuple(q.shape), k=tuple(k.shape), v=tuple(v.shape))
    if causal and q.shape[-2] != k.shape[-2]:
        raise InputError("attn_err_causal_lengths", t_q=q.shape[-2], t_k=k.shape[-2])


def _allowed(mask: torch.Tensor | None, causal: bool, T_q: int, T_k: int, device) -> torch.Tensor | None:
    """The combined boolean mask ``(..., T_q, T_k)``, or ``None`` when every key is allowed."""
    allowed = mask
    if causal:
        tri = torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril()   # (T_q, T_k) top-left, as SDPA
        allowed = tri if allowed is None else allowed & tri
    return allowed


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,
                    mask: torch.Tensor | None = None) -> NaiveAttention:
    """``softmax(q kᵀ/√d + M) v`` with the whole score and probability matrices built and returned.

    Without a mask or ``causal`` it allocates exactly the ``scores``, ``probs`` and ``out`` it returns
    (the scale is applied to ``q``, a ``T × d`` temporary, not to the ``T × T`` scores): the sizes
    :mod:`models.attention_cost` measures.

    >>> naive = naive_attention(torch.zeros(1, 2, 4), torch.zeros(1, 2, 4), torch.eye(2)[None], causal=True)
    >>> naive.probs[0].tolist(), naive.out[0].tolist()
    ([[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]])
    """
    check_qkv(q, k, v, causal)
    T_q, T_k = q.shape[-2], k.shape[-2]
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)   # (..., T_q, T_k)
    allowed = _allowed(mask, causal, T_q, T_k, q.device)
    if allowed is None:
        probs = scores.softmax(dim=-1)                                     # (..., T_q, T_k)
    else:
        scores = scores.masked_fill(~allowed, -math.inf)
        has_key = allowed.any(dim=-1, keepdim=True)                       # (..., T_q, 1)
        probs = torch.where(has_key, scores.softmax(dim=-1), 0.0)          # a row of −inf: 0, not NaN
    return NaiveAttention(scores, probs, probs @ v)                        # out: (..., T_q, d_v)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, block: int, causal: bool = False,
                    mask: torch.Tensor | None = None, record: bool = True) -> FlashTrace:
    """FlashAttention's forward: tiles of ``block`` queries × ``block`` keys, online softmax per row.

    ``q (..., T_q, d)``, ``k (..., T_k, d)``, ``v (..., T_k, d_v)``; ``causal`` needs ``T_q == T_k``;
    ``mask`` (optional, broadcastable to ``(..., T_q, T_k)``, True = may attend) combines with it.
    A tile whose cells are all masked (causal: fully above the diagonal) is skipped, never
    computed. ``record=False`` keeps no per-tile record (what a cost measurement wants: memory
    ``O(T·d + block²)``). ``.out`` equals ``F.scaled_dot_product_attention(q, k, v, is_causal=causal)``.

    The recurrence, for one query row and a tile of scores ``s_j`` (FlashAttention-2, Algorithm 1)::

        m_new = max(m_old, max_j s_j)
        ℓ_new = exp(m_old − m_new) · ℓ_old + Σ_j exp(s_j − m_new)
        acc_new = exp(m_old − m_new) · acc_old + Σ_j exp(s_j − m_new) · v_j
        out = acc / ℓ                       after the row's last tile

    >>> x = torch.tensor([[[0.0], [1.0], [2.0]]])             # (1, 3, 1): T = 3, d = 1
    >>> trace = flash_attention(x, x, x, block=1)
    >>> [round(t.rescale.item(), 4) for t in trace.tiles[-3:]]   # row 2: its max grows 0 -> 2 -> 4
    [0.0, 0.1353, 0.1353]
    """
    check_qkv(q, k, v, causal)
    block = whole("attn_block", block, 1)
    *lead, T_q, d = q.shape
    T_k, d_v = k.shape[-2], v.shape[-1]
    scale = 1.0 / math.sqrt(d)
    if mask is not None:
        mask = mask.to(device=q.device, dtype=torch.bool).expand(*lead, T_q, T_k)
    out = q.new_empty(*lead, T_q, d_v)
    m_all = q.new_empty(*lead, T_q)
    l_all = q.new_empty(*lead, T_q)
    tiles, skipped = [], []
    for r0 in range(0, T_q, block):
        r1 = min(r0 + block, T_q)
        q_i = q[..., r0:r1, :] * scale                                     # (..., bq, d)
        m = q.new_full((*lead, r1 - r0), -math.inf)                        # (..., bq)
        l = q.new_zeros(*lead, r1 - r0)                                    # (..., bq)
        acc = q.new_zeros(*lead, r1 - r0, d_v)                             # (..., bq, d_v)
        spans = [(c0, min(c0 + block, T_k)) for c0 in range(0, T_k, block)]
        live = []                                                          # (cols, allowed or None)
        for c0, c1 in spans:
            allowed = _tile_mask(mask, causal, r0, r1, c0, c1, q.device)
            if allowed is not None and not bool(allowed.any()):
                skipped.append(((r0, r1), (c0, c1)))
                continue
            live.append(((c0, c1), allowed))
        for n, ((c0, c1), allowed) in enumerate(live):
            s = q_i @ k[..., c0:c1, :].transpose(-2, -1)                  # (..., bq, bk)
            if allowed is not None:
                s = s.masked_fill(~allowed, -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1))                       # (..., bq)
            m_safe = torch.where(m_new == -math.inf, 0.0, m_new)          # a row with nothing allowed yet
            rescale = torch.exp(m - m_safe)                                # (..., bq); 0 before the first key
            p = torch.exp(s - m_safe[..., None])                           # (..., bq, bk), masked cells 0
            l_new = rescale * l + p.sum(dim=-1)                            # (..., bq)
            acc = rescale[..., None] * acc + p @ v[..., c0:c1, :]         # (..., bq, d_v)
            if record:
                tiles.append(Tile((r0, r1), (c0, c1), s, m, m_new, rescale, l, l_new, acc,
                                  last=n == len(live) - 1))
            m, l = m_new, l_new
        out[..., r0:r1, :] = _divide(acc, l)                               # the one division per row
        m_all[..., r0:r1], l_all[..., r0:r1] = m, l
    return FlashTrace(out, m_all, l_all, tiles, skipped, block, causal, (T_q, T_k))


def _tile_mask(mask: torch.Tensor | None, causal: bool, r0: int, r1: int, c0: int, c1: int,
               device) -> torch.Tensor | None:
    """The allowed cells of one tile, ``(..., bq, bk)``; ``None`` when all are allowed.

    The causal part is built from the indices (no ``T × T`` tensor): a tile fully below the diagonal
    needs no mask, one fully above it none of its cells.
    """
    allowed = None
    if causal and c1 - 1 > r0:                                             # some key after some query
        if c0 > r1 - 1:                                                    # every key after every query
            return torch.zeros(r1 - r0, c1 - c0, dtype=torch.bool, device=device)
        rows = torch.arange(r0, r1, device=device)[:, None]
        cols = torch.arange(c0, c1, device=device)[None, :]
        allowed = cols <= rows                                             # (bq, bk)
    if mask is not None:
        tile = mask[..., r0:r1, c0:c1]
        allowed = tile if allowed is None else tile & allowed
    return allowed
