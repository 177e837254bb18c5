"""Incremental pair counting for BPE training: a merge touches only its own occurrences.

The distinct chunks of the text are laid end to end in arrays indexed by byte position:
``tok[i]`` the token starting at ``i`` (``-1`` once absorbed by its left neighbour), ``nxt``/``prv``
a doubly linked list (``-1`` at a chunk's ends, so no pair crosses a chunk), ``weight[i]`` the
frequency of the chunk holding ``i``. Beside them: ``counts[pair]`` (weighted, overlapping
occurrences counted), ``where[pair]`` (a tuple of ascending positions, possibly stale: checked on
use), a lazy max-heap of ``(-count, tie key, pair)`` packed in one int, and ``hist[count]`` = how
many pairs have that count (to say how many tied). A pair ``(a, b)`` is packed into one int,
``a << 16 | b``: hashing an int is cheaper than a tuple.

Tuples and ints, not lists and tuples, for the garbage collector: it stops tracking a tuple of
ints at its first pass, and an int is no GC object, so a run does not promote thousands of
objects to the old generation, where they bring on full collections (~100 ms with torch loaded).

A merge visits the positions of its pair only and, around each, moves the counts of the
neighbouring pairs ``(left, a) -> (left, new)`` and ``(b, right) -> (new, right)``. Merges with many
occurrences take a vectorised NumPy path over the same arrays (NumPy views of the ``array``
buffers); the rest a plain loop, which is faster for a handful of positions. Both give exactly the
result of the naive algorithm (tests compare them with a full rescan at every step). (Python lists
index faster than ``array`` buffers in a micro-benchmark, but at 100 KB the contiguous buffers won:
lists of boxed ints miss the cache.)

A merge's count is never above the last one's: a new pair occurs at most once per merged
occurrence, and the other pairs only lose. So no count ever exceeds the first step's largest.

Why the lazy heap is exact: a pair's count only grows in the step that creates its newer token
(every new adjacency involves the new token), and then the pair is pushed; afterwards its key only
gets worse (count down, first position later), so an entry is never better than the truth and a
stale one is refreshed when it reaches the top.
"""
from __future__ import annotations

import bisect
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
LIMIT, LOW32, LOW64 = 1 << 40, (1 << 32) - 1, (1 << 64) - 1     # heap entries (see BPETrainer._key)
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
    NumPy (tests set 1 and 10**9 to check each path alone against the naive trainer, and 16 to mix
    them).

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
        self.order = list(map(index.__getitem__, chunks))
        self._rank = list(range(FIRST_ID))     # tie key of every id so far; step appends merged ids as they are
        if byte_order is not None:
            if sorted(byte_order) != self._rank:
                raise InputError("bpe_err_byte_order")
            for r, b in enumerate(byte_order):
                self._rank[b] = r

        starts, tok, weight = self._lay_out(freq)
        n = len(tok)                                            # >= 1: check_corpus refused empty text
        self.pos_bits = n.bit_length()                          # a position fits in this many bits
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
        self.unit_weight = bool((weight == 1).all())           # a new pair's count is then its positions
        self.counts, self.where = self._count_pairs()
        # hist[c]: how many pairs have count c; no count ever exceeds today's largest (module docstring).
        self.hist = [0] * (max(self.counts.values(), default=0) + 1)
        for c in self.counts.values():
            self.hist[c] += 1
        self.heap = [self._key(code, c) for code, c in self.counts.items()]
        heapq.heapify(self.heap)
        self.best: list[int] = []             # the best entries, out of the heap (see _top)
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

    def _count_pairs(self) -> tuple[dict[int, int], dict[int, tuple[int, ...]]]:
        """Every adjacent pair inside a chunk: its weighted count and its positions, ascending."""
        tok, nxt = self._np["tok"], self._np["nxt"]
        pos = np.flatnonzero(nxt >= 0)                                                # (P,)
        pairs, sums, heads, at = self._group(tok[pos] << SHIFT | tok[pos + 1], pos)
        bounds, at = [*heads.tolist(), len(at)], tuple(at.tolist())
        return dict(zip(pairs, sums.tolist())), {q: at[bounds[g]:bounds[g + 1]] for g, q in enumerate(pairs)}

    # ----------------------------------------------------------------- the heap
    # An entry is one int, ``(LIMIT - count) << 64 | tie key << 32 | pair``: it orders like the tuple
    # ``(-count, tie key, pair)`` (the smallest wins), but compares faster and is no object for the
    # garbage collector to track.
    def _key(self, code: int, count: int) -> int:
        """The heap entry of ``code`` at ``count``: highest count first, then the lowest tie key."""
        if self.tie == "first":
            return (LIMIT - count) << 64 | self._first(code) << 32 | code
        return (LIMIT - count) << 64 | (self._rank[code >> SHIFT] << SHIFT | self._rank[code & LOW]) << 32 | code

    def _first(self, code: int) -> int:
        """The first position where the pair occurs now (dropping stale positions in front)."""
        positions, tok, nxt = self.where[code], self.tok, self.nxt
        a, b = code >> SHIFT, code & LOW
        for k, i in enumerate(positions):
            j = nxt[i]
            if tok[i] == a and j >= 0 and tok[j] == b:
                if k:
                    self.where[code] = positions[k:]
                return i
        raise AssertionError(f"pair {a, b} has a count but no position")  # pragma: no cover

    def _fresh(self, entry: int) -> int | None:
        """``entry`` with its pair's current key; ``None`` once the pair is merged away.

        An entry is stale exactly when its count is: a pair loses an occurrence (its first one, say)
        only by losing count, and gains occurrences only in the step that pushes it.
        """
        code = entry & LOW32
        count = self.counts.get(code, 0)
        if count == LIMIT - (entry >> 64) or count == 0:
            return entry if count else None
        if self.tie == "first":
            return self._key(code, count)
        return (LIMIT - count) << 64 | entry & LOW64                # the tie key of "lowest" never changes

    def _top(self) -> list[int]:
        """The best ``top_k`` pairs' entries with their current keys, in tie-rule order.

        The last step's best stay out of the heap (refreshed here): after a merge most of them are
        still among the best, so a step pops only the entries that beat them, not ``top_k`` again.
        """
        heap, k, counts = self.heap, self.top_k, self.counts
        # Most of last step's best are still fresh: test that inline (what _fresh tests first), call it otherwise.
        best = [e if counts.get(e & LOW32) == LIMIT - (e >> 64) else self._fresh(e) for e in self.best]
        best = sorted(e for e in best if e is not None)
        while heap and (len(best) < k or heap[0] < best[k - 1]):
            entry = heapq.heappop(heap)
            fresh = self._fresh(entry)
            if fresh is entry:
                bisect.insort(best, entry)
            elif fresh is not None:                             # stale: back in at its true place
                heapq.heappush(heap, fresh)
        for entry in best[k:]:
            heapq.heappush(heap, entry)
        self.best = best[:k]
        return self.best

    # ----------------------------------------------------------------- one merge
    def step(self) -> Merge | None:
        """Merge the best pair everywhere; ``None`` (and ``stop_reason`` set) when no pair occurs twice."""
        if self.stop_reason:
            return None
        top = self._top()
        if not top or LIMIT - (top[0] >> 64) < 2:
            self.stop_reason = "bpe_stop_single_tokens" if not top else "bpe_stop_no_repeats"
            return None
        count, code = LIMIT - (top[0] >> 64), top[0] & LOW32
        tied = self.hist[count]
        merge = Merge(unpack(code), FIRST_ID + len(self.merges), count)
        self._rank.append(merge.new_id)                         # merged tokens rank by id, after every byte
        positions = self.where.pop(code)
        if len(positions) >= self.vector_min:
            lost, born, replaced = self._merge_vector(code, merge.new_id, positions)
        else:
            lost, born, replaced = self._merge_loop(code, merge.new_id, positions)
        lost[code] = self.counts[code]                          # every occurrence is gone (overlaps too)
        self._apply(lost, born)
        self.merges.append(merge)
        flat = [x for e in top for x in ((e & LOW32) >> SHIFT, e & LOW, LIMIT - (e >> 64))]
        self.steps.append(Step(tuple(flat), tied, replaced))
        self.tokens.append(self.tokens[-1] - replaced)
        return merge

    def _merge_loop(self, code: int, new_id: int, positions: Sequence[int]
                    ) -> tuple[dict[int, int], dict[int, Sequence[int]], int]:
        """Merge left to right in Python. Returns the weight each old neighbouring pair lost, the positions
        of each new pair (ascending), and the weight of the occurrences merged."""
        a, b = code >> SHIFT, code & LOW
        tok, nxt, prv, weight = self.tok, self.nxt, self.prv, self.weight
        lost: defaultdict[int, int] = defaultdict(int)
        born: defaultdict[int, list[int]] = defaultdict(list)
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
                left = tok[p]
                if left == new_id:      # "abab": the occurrence just before merged, and its (new, a) is gone
                    born[new_left | a].pop()
                else:
                    lost[left << SHIFT | a] += w
                born[left << SHIFT | new_id].append(p)
            if n >= 0:                                          # (b, right) -> (new, right)
                right = tok[n]
                lost[b << SHIFT | right] += w
                born[new_left | right].append(i)
                prv[n] = i
            tok[i] = new_id
            tok[j] = -1
            nxt[i] = n
            replaced += w
        return lost, born, replaced

    def _merge_vector(self, code: int, new_id: int, positions: Sequence[int]
                      ) -> tuple[dict[int, int], dict[int, Sequence[int]], int]:
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
        tok[P], tok[J], nxt[P] = new_id, -1, R                  # the linked list after the merge
        prv[R[has_right]] = P[has_right]
        # Old and new pairs are disjoint (only new ones hold new_id), and so are their positions.
        lost, lost_count, _, _ = self._group(old, np.concatenate([L[left_free], J[has_right]]))
        born, _, heads, at = self._group(new, np.concatenate([L[left_free], P[has_right]]))
        bounds, at = [*heads.tolist(), len(at)], tuple(at.tolist())
        return (dict(zip(lost, lost_count.tolist())), {q: at[bounds[g]:bounds[g + 1]] for g, q in enumerate(born)},
                int(w.sum()))

    def _group(self, codes: np.ndarray, at: np.ndarray) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
        """Pairs ``codes`` starting at distinct positions ``at``, grouped by pair with positions ascending
        (one sort of ``code << pos_bits | position``): the distinct pairs, their weighted counts, where
        each group starts in the sorted positions, and the sorted positions.

        >>> t = BPETrainer("abxab")
        >>> t._group(np.array([5, 3, 5]), np.array([3, 1, 0]))[:2]
        ([3, 5], array([1, 2]))
        """
        key = np.sort(codes << self.pos_bits | at)                                   # (K,)
        codes, at = key >> self.pos_bits, key & ((1 << self.pos_bits) - 1)           # (K,), (K,)
        if not len(key):
            return [], key, key, key
        heads = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])                  # (groups,)
        return codes[heads].tolist(), np.add.reduceat(self._np["weight"][at], heads), heads, at

    def _apply(self, lost: dict[int, int], born: dict[int, Sequence[int]]) -> None:
        """Take the lost weight off the old pairs (stale heap entries are refreshed when they reach the
        top); count the new pairs, and push them: the only time a pair's key improves."""
        counts, hist, heap, where, rank = self.counts, self.hist, self.heap, self.where, self._rank
        for q, d in lost.items():
            old = counts[q]
            hist[old] -= 1
            if new := old - d:
                hist[new] += 1
                counts[q] = new
            else:
                del counts[q]
                where.pop(q, None)
        first, unit, get = self.tie == "first", self.unit_weight, self.weight.__getitem__
        for q, at in born.items():
            if not at:
                continue                                        # "abab": born and gone in the same merge
            c = len(at) if unit else sum(map(get, at))
            counts[q] = c
            hist[c] += 1
            where[q] = tuple(at)
            # self._key(q, c), inline: this runs once per new pair of every merge.
            tie = at[0] if first else rank[q >> SHIFT] << SHIFT | rank[q & LOW]
            heapq.heappush(heap, (LIMIT - c) << 64 | tie << 32 | q)

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
