"""Independent references for the BPE tests and benchmark: minbpe's trainers, rewritten plainly.

``naive_train`` is Karpathy's minbpe ``BasicTokenizer.train`` (``split="none"``) and
``RegexTokenizer.train`` (a split pattern): every merge recounts every pair of the whole text
(``get_stats``) and rewrites the whole text (``merge``). Two deliberate additions, both also in
``models.bpe``: training stops when the best count is below 2, and ``tie="lowest"`` replaces
minbpe's first-seen tie rule by the lowest ``(left, right)`` pair.
"""
from __future__ import annotations


def get_stats(ids, counts=None, weight=1):
    """minbpe: ``[1, 2, 3, 1, 2] -> {(1, 2): 2, (2, 3): 1, (3, 1): 1}`` (insertion order = first seen)."""
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + weight
    return counts


def merge(ids, pair, idx):
    """minbpe: ``ids=[1, 2, 3, 1, 2], pair=(1, 2), idx=4 -> [4, 3, 4]``."""
    out, i = [], 0
    while i < len(ids):
        if ids[i] == pair[0] and i < len(ids) - 1 and ids[i + 1] == pair[1]:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def naive_train(text: str, num_merges: int, split_pattern: str | None = None, tie: str = "first",
                min_count: int = 2):
    """Merges as ``[((a, b), new_id, count), ...]``: a full recount and a full rewrite per merge."""
    if split_pattern is None:
        chunks = [list(text.encode("utf-8"))]
    else:
        import regex
        chunks = [list(ch.encode("utf-8")) for ch in regex.findall(split_pattern, text)]
    merges = []
    for i in range(num_merges):
        stats = {}
        for chunk in chunks:
            get_stats(chunk, stats)
        if not stats:
            break
        if tie == "first":
            pair = max(stats, key=stats.get)
        else:
            pair = max(stats, key=lambda p: (stats[p], -p[0], -p[1]))
        if stats[pair] < min_count:
            break
        idx = 256 + i
        chunks = [merge(chunk, pair, idx) for chunk in chunks]
        merges.append((pair, idx, stats[pair]))
    return merges, chunks
