"""Incremental pair counting for BPE training: a merge touches only its own occurrences.

The distinct chunks of the text are laid end to end in arrays indexed by byte position:
``tok[i]`` the token starting at ``i`` (``-1`` once absorbed by its left neighbour), ``nxt``/``prv``
a doubly linked list (``-1`` at a chunk's ends, so no pair crosses a chunk), ``weight[i]`` the
frequency of the chunk holding ``i``. Beside them: ``counts[pair]`` (weighted, overlapping
occurrences counted), ``where[pair]`` (ascending positions, possibly stale: checked on use), a lazy
max-heap of ``(-count, tie key, pair)``, and ``hist[count]`` = how many pairs have that count (to
say how many tied). A pair ``(a, b)`` is packed into one int, ``a << 16 | b``: hashing an int is
cheaper than a tuple.

A merge visits the positions of its pair only and, around each, moves the counts of the
neighbouring pairs ``(left, a) -> (left, new)`` and ``(b, right) -> (new, right)``. Merges with many
occurrences take a vectorised NumPy path over the same arrays (NumPy views of the ``array``
buffers); the rest a plain loop, which is faster for a handful of positions. Both give exactly the
result of the naive algorithm (tests compare them with a full rescan at every step).

Why the lazy heap is exact: a pair's count only grows in the step that creates its newer token
(every new adjacency involves the new token), and then the pair is pushed; afterwards its key only
gets worse (count down, first position later), so an entry is never better than the truth and a
stale one is refreshed when it reaches the top.
"""
from __future__ import annotations

import gc
import heapq
import time
from array import array
from collections import Counter, defaultdict
from contextlib import contextmanager
from typing import Iterator, Sequence

import numpy as np

from models.bpe_trace import (FIRST_ID, TIES, BPETrace, Merge, Step, check_corpus, split_text)
from models.checks import InputError, choice
from models.device import Timing
from models.limits import BPE_TOP_PAIRS

SHIFT = 16                 # pair (a, b) -> a << 16 | b: token ids stay below 65,536
LOW = (1 << SHIFT) - 1
VECTOR_MIN = 256           # a merge with at least this many candidate positions goes through NumPy


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector around training.

    Training allocates many small lists and tuples, which triggers collections; a full one walks
    every object of the process (torch and Gradio hold millions) and was measured at ~130 ms, for
    nothing: the trainer's structures hold no reference cycles and reference counting frees them.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def unpack(code: int) -> tuple[int, int]:
    """The pair packed in ``code``.

    >>> unpack(97 << SHIFT | 98)
    (97, 98)
    """
    return code >> SHIFT, code & LOW


class BPETrainer:
    """Incremental BPE training on a text: :meth:`step` makes one merge (see the module docstring).

    ``tie="first"``: among pairs with the top count, the one whose first occurrence comes first
    in the text (minbpe). ``tie="lowest"``: the lowest ``(left, right)``, byte tokens ranked by
    ``byte_order`` (default: byte value), merged tokens by id. ``top``: how many competing pairs
    each step records; ``vector_min``: the candidate positions from which a merge goes through
    NumPy (tests set 1 and 10**9 to check both paths against the naive trainer).

    >>> trainer = BPETrainer("aaabdaaabac")
    >>> trainer.step(), trainer.step().pair
    (Merge(pair=(97, 97), new_id=256, count=4), (256, 97))
    """

    def __init__(self, text: str, *, split: str = "none", tie: str = "first",
                 byte_order: Sequence[int] | None = None, top: int = BPE_TOP_PAIRS,
                 vector_min: int = VECTOR_MIN):
        choice("bpe_tie", tie, TIES)
        check_corpus(text)
        with gc_paused():
            self._build(text, split, tie, byte_order, top, vector_min)

    def _build(self, text: str, split: str, tie: str, byte_order: Sequence[int] | None, top: int,
               vector_min: int) -> None:
        chunks = split_text(text, split)
        freq = Counter(chunks)                                  # insertion order = first appearance
        index = {chunk: u for u, chunk in enumerate(freq)}
        self.text, self.split, self.tie, self.top_k, self.vector_min = text, split, tie, top, vector_min
        self.order = [index[c] for c in chunks]
        self._rank = list(range(FIRST_ID))
        if byte_order is not None:
            if sorted(byte_order) != self._rank:
                raise InputError("bpe_err_byte_order")
            for r, b in enumerate(byte_order):
                self._rank[b] = r

        starts, tok, weight = self._lay_out(freq)
        n = len(tok)                                            # >= 1: check_corpus refused empty text
        nxt, prv = np.arange(1, n + 1), np.arange(-1, n - 1)                          # (N,), (N,)
        nxt[starts[1:] - 1] = -1
        nxt[-1] = -1
        prv[starts] = -1
        # array buffers for fast scalar access in Python, NumPy views of the same memory for the bulk path
        self.tok, self.nxt, self.prv, self.weight = (array("q", x.astype(np.int64).tobytes())
                                                     for x in (tok, nxt, prv, weight))
        self._np = {name: np.frombuffer(getattr(self, name), dtype=np.int64)
                    for name in ("tok", "nxt", "prv", "weight")}
        self.starts = starts
        self.counts, self.where = self._count_pairs(tok, weight, nxt)
        self.hist = Counter(self.counts.values())
        self.heap = [self._key(code, c) for code, c in self.counts.items()]
        heapq.heapify(self.heap)
        self.merges: list[Merge] = []
        self.steps: list[Step] = []
        self.tokens = [int(weight.sum())]                       # tokens of the text after each merge
        self.stop_reason: str | None = None

    @staticmethod
    def _lay_out(freq: Counter) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct chunks' bytes end to end: chunk starts, ``tok[N]`` and ``weight[N]``."""
        data = [chunk.encode("utf-8") for chunk in freq]
        lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))        # (chunks,)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)      # (chunks,)
        tok = np.frombuffer(b"".join(data), dtype=np.uint8).astype(np.int64)          # (N,)
        freqs = np.fromiter(freq.values(), dtype=np.int64, count=len(data))           # (chunks,)
        return starts, tok, np.repeat(freqs, lengths)                                 # ..., (N,)

    @staticmethod
    def _count_pairs(tok: np.ndarray, weight: np.ndarray, nxt: np.ndarray
                     ) -> tuple[dict[int, int], defaultdict[int, list[int]]]:
        """Every adjacent pair inside a chunk: its weighted count and its positions, ascending."""
        where: defaultdict[int, list[int]] = defaultdict(list)
        pos = np.flatnonzero(nxt >= 0)                                                # (P,)
        if not len(pos):
            return {}, where
        codes = tok[pos] << SHIFT | tok[pos + 1]                                      # (P,)
        order = np.argsort(codes, kind="stable")                # grouped by pair, positions ascending
        codes, pos = codes[order], pos[order]
        first = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])                  # (pairs,)
        sums = np.add.reduceat(weight[pos], first)                                    # (pairs,)
        pairs, bounds, positions = codes[first].tolist(), [*first.tolist(), len(pos)], pos.tolist()
        where.update((pair, positions[bounds[g]:bounds[g + 1]]) for g, pair in enumerate(pairs))
        return dict(zip(pairs, sums.tolist())), where

    # ----------------------------------------------------------------- the heap
    def _key(self, code: int, count: int) -> tuple[int, int, int]:
        """Heap entry: the smallest entry wins (highest count, then the lowest tie key)."""
        if self.tie == "first":
            return (-count, self._first(code), code)
        a, b, rank = code >> SHIFT, code & LOW, self._rank
        return (-count, (rank[a] if a < FIRST_ID else a) << SHIFT | (rank[b] if b < FIRST_ID else b), code)

    def _first(self, code: int) -> int:
        """The first position where the pair occurs now (dropping stale positions in front)."""
        positions, tok, nxt = self.where[code], self.tok, self.nxt
        a, b = code >> SHIFT, code & LOW
        for k, i in enumerate(positions):
            j = nxt[i]
            if tok[i] == a and j >= 0 and tok[j] == b:
                if k:
                    del positions[:k]
                return i
        raise AssertionError(f"pair {a, b} has a count but no position")  # pragma: no cover

    def _top(self) -> list[tuple[int, int, int]]:
        """The best ``top_k`` heap entries with their current keys, in tie-rule order."""
        heap, counts, found, seen, first = self.heap, self.counts, [], set(), self.tie == "first"
        while heap and len(found) < self.top_k:
            entry = heapq.heappop(heap)
            code = entry[2]
            count = counts.get(code, 0)
            if count == 0 or code in seen:
                continue                                        # merged away, or a duplicate
            # Stale (the count fell, or the first occurrence moved): back in at its true place.
            # Under "lowest" the tie key never changes, so comparing counts is enough.
            fresh = self._key(code, count) if first else (-count, entry[1], code)
            if fresh != entry:
                heapq.heappush(heap, fresh)
                continue
            found.append(entry)
            seen.add(code)
        for entry in found:
            heapq.heappush(heap, entry)
        return found

    # ----------------------------------------------------------------- one merge
    def step(self) -> Merge | None:
        """Merge the best pair everywhere; ``None`` (and ``stop_reason`` set) when no pair occurs twice."""
        if self.stop_reason:
            return None
        top = self._top()
        if not top or -top[0][0] < 2:
            self.stop_reason = "bpe_stop_single_tokens" if not top else "bpe_stop_no_repeats"
            return None
        count, code = -top[0][0], top[0][2]
        tied = self.hist[count]
        merge = Merge(unpack(code), FIRST_ID + len(self.merges), count)
        positions = self.where.pop(code)
        if len(positions) >= self.vector_min:
            delta, replaced = self._merge_vector(code, merge.new_id, positions)
        else:
            delta, replaced = self._merge_loop(code, merge.new_id, positions)
        delta[code] = -self.counts[code]                        # every occurrence is gone (overlaps too)
        self._apply(delta)
        self.merges.append(merge)
        self.steps.append(Step(tuple(x for e in top for x in (*unpack(e[2]), -e[0])), tied, replaced))
        self.tokens.append(self.tokens[-1] - replaced)
        return merge

    def _merge_loop(self, code: int, new_id: int, positions: list[int]) -> tuple[dict[int, int], int]:
        """Merge left to right in Python; return the count changes of the neighbouring pairs."""
        a, b = code >> SHIFT, code & LOW
        tok, nxt, prv, weight, where = self.tok, self.nxt, self.prv, self.weight, self.where
        delta: defaultdict[int, int] = defaultdict(int)
        new_left = new_id << SHIFT
        replaced = 0
        for i in positions:
            if tok[i] != a:
                continue                                        # absorbed, or already merged
            j = nxt[i]
            if j < 0 or tok[j] != b:
                continue                                        # stale position
            w = weight[i]
            p = prv[i]
            n = nxt[j]
            if p >= 0:                                          # (left, a) -> (left, new)
                left = tok[p] << SHIFT
                delta[left | a] -= w
                delta[left | new_id] += w
                where[left | new_id].append(p)                  # positions of a new pair arrive ascending
            if n >= 0:                                          # (b, right) -> (new, right)
                right = tok[n]
                delta[b << SHIFT | right] -= w
                delta[new_left | right] += w
                where[new_left | right].append(i)
                prv[n] = i
            tok[i] = new_id
            tok[j] = -1
            nxt[i] = n
            replaced += w
        return delta, replaced

    def _merge_vector(self, code: int, new_id: int, positions: list[int]) -> tuple[dict[int, int], int]:
        """The same merge as :meth:`_merge_loop`, vectorised over all occurrences at once."""
        a, b = code >> SHIFT, code & LOW
        tok, nxt, prv, weight = (self._np[k] for k in ("tok", "nxt", "prv", "weight"))
        P = np.asarray(positions, dtype=np.int64)                                     # (K,) candidates
        J = nxt[P]                                                                    # (K,)
        ok = (tok[P] == a) & (J >= 0) & (tok[J] == b)           # tok[-1] is read but masked by J >= 0
        P, J = P[ok], J[ok]
        if a == b:       # runs like "aaaa" overlap: left to right, every other occurrence of a run merges
            run = np.r_[False, P[1:] == J[:-1]]                 # continues the previous occurrence
            starts = np.flatnonzero(~run)
            index_in_run = np.arange(len(P)) - starts[np.cumsum(~run) - 1]
            P, J = P[index_in_run % 2 == 0], J[index_in_run % 2 == 0]
        L, R, w = prv[P], nxt[J], weight[P]                                           # (K,) each
        linked = R[:-1] == P[1:]                                # "abab": occurrence k+1 right after k
        left_free = (L >= 0) & ~np.r_[False, linked]            # left neighbour not merged in this step
        right_new = np.where(np.r_[linked, False], new_id, tok[np.maximum(R, 0)])    # right token after
        has_right = R >= 0
        old = np.concatenate([tok[L[left_free]] << SHIFT | a, b << SHIFT | tok[R[has_right]]])
        new = np.concatenate([tok[L[left_free]] << SHIFT | new_id, new_id << SHIFT | right_new[has_right]])
        at = np.concatenate([L[left_free], P[has_right]])       # where each new pair starts
        ws = np.concatenate([w[left_free], w[has_right]])
        tok[P], tok[J], nxt[P] = new_id, -1, R                  # the linked list after the merge
        prv[R[has_right]] = P[has_right]
        # Sum the changes per pair (old and new pairs are disjoint: only new ones hold new_id).
        keys, inverse = np.unique(np.concatenate([old, new]), return_inverse=True)
        sums = np.bincount(inverse, weights=np.concatenate([-ws, ws]), minlength=len(keys))
        delta = dict(zip(keys.tolist(), sums.astype(np.int64).tolist()))
        order = np.lexsort((at, new))                           # new pairs' positions, grouped, ascending
        new, at = new[order].tolist(), at[order].tolist()
        where, start = self.where, 0
        for end in range(1, len(new) + 1):
            if end == len(new) or new[end] != new[start]:
                where[new[start]] += at[start:end]
                start = end
        return delta, int(w.sum())

    def _apply(self, delta: dict[int, int]) -> None:
        """Add the count changes; push every pair that grew (the only time a pair's key improves)."""
        counts, hist, heap, where = self.counts, self.hist, self.heap, self.where
        for q, d in delta.items():
            if d == 0:
                continue
            old = counts.get(q, 0)
            new = old + d
            if old:
                hist[old] -= 1
            if new:
                hist[new] += 1
                counts[q] = new
            else:
                del counts[q]
                where.pop(q, None)
            if d > 0:
                heapq.heappush(heap, self._key(q, new))

    def train(self, num_merges: int, *, seconds: float | None = None) -> bool:
        """Merge until there are ``num_merges`` merges, no pair occurs twice, or ``seconds`` have passed.

        Returns True when training is over (the first two cases); call again to continue after a
        time slice (the UI streams progress between slices).

        >>> trainer = BPETrainer("aaabdaaabac")
        >>> trainer.train(10), len(trainer.merges), trainer.stop_reason
        (True, 3, 'bpe_stop_no_repeats')
        """
        deadline = None if seconds is None else time.perf_counter() + seconds
        with gc_paused():
            while len(self.merges) < num_merges:
                if self.step() is None:
                    return True
                if deadline is not None and time.perf_counter() > deadline:
                    return False
        return True

    def trace(self, requested: int, timing: Timing | None = None) -> BPETrace:
        """The trace of the merges made so far: each distinct chunk's final tokens, in position order."""
        tok = self._np["tok"]
        alive = tok >= 0                                                              # (N,)
        ends = np.r_[self.starts[1:], len(tok)]                                       # (chunks,)
        bounds = [0, *np.cumsum(alive)[ends - 1].tolist()]      # tokens alive up to each chunk's end
        tokens = tok[alive].tolist()
        final = [tuple(tokens[bounds[u]:bounds[u + 1]]) for u in range(len(bounds) - 1)]
        stop = self.stop_reason if len(self.merges) < requested else None
        return BPETrace(self.text, self.split, self.tie, requested, list(self.merges), list(self.steps),
                        list(self.tokens), final, self.order, stop, timing)
