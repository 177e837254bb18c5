"""Byte-level BPE with a full trace: every merge, the pairs it beat, the text at every step.

Byte pair encoding (Sennrich et al. 2016, §3.2) made byte-level by GPT-2 (Radford et al. 2019,
§2.2): the base vocabulary is the 256 byte values, so any text can be encoded and nothing is ever
unknown; merge ``i`` joins the most frequent adjacent pair into the new token ``256 + i``. The
``split`` mode chooses what a pair may span: ``"none"`` trains on the raw byte stream (minbpe's
``BasicTokenizer``); ``"gpt2"`` and ``"gpt4"`` first cut the text with the GPT-2 and GPT-4
(``cl100k_base``) regular expressions, and no pair crosses a chunk boundary.

- Counts include overlapping occurrences, as minbpe's ``get_stats`` does ("aaa" holds ``(a, a)``
  twice), within chunks, weighted by how often a chunk occurs. Training stops early when no pair
  occurs twice (Hugging Face's ``min_frequency=2``).
- **Tie rule** when pairs share the top count (``tie``): ``"first"`` (default) takes the pair that
  occurs first in the text, which is minbpe's ``max(stats, key=stats.get)`` (Python's ``max``
  returns the first of equal keys, and the dict is filled in text order); ``"lowest"`` takes the
  lowest ``(left id, right id)``, the rule of Hugging Face ``tokenizers`` (in its own id order).
- Counting is incremental (:mod:`models.bpe_trainer`): a merge visits only its own occurrences,
  never the whole text. The trace keeps, per merge, the top competing pairs and how many tied.
- The trace steps back and forth without retraining (:mod:`models.bpe_trace`).

Runs on the CPU: training is a chain of dependent dictionary and heap updates, with nothing for a
GPU to do. Not handled: special tokens (``<|endoftext|>`` is plain text here), Unicode
normalisation, and more than :data:`models.limits.BPE_MAX_MERGES` merges.
"""
from __future__ import annotations

import time
from typing import Iterator

import torch

from models.bpe_trace import (FIRST_ID, GPT2_PATTERN, GPT4_PATTERN, PATTERNS, SPLITS, TIES, BPEConfig,
                              BPETrace, Merge, Split, Step, Tie, check_corpus, merge_lowest_rank, split_text,
                              utf8)
from models.bpe_trainer import BPETrainer
from models.device import Timing, timed

__all__ = ["FIRST_ID", "GPT2_PATTERN", "GPT4_PATTERN", "PATTERNS", "SPLITS", "TIES", "BPEConfig", "BPETrace",
           "BPETrainer", "Merge", "Step", "check_corpus", "merge_lowest_rank", "split_text", "train_bpe", "train_bpe_slices", "utf8"]


def train_bpe(text: str, num_merges: int, *, split: Split = "none", tie: Tie = "first") -> BPETrace:
    """Train byte-level BPE on ``text`` with up to ``num_merges`` merges (see the module docstring).

    minbpe's worked example: ``aa`` -> 256; then ``(256, a)`` and ``(a, b)`` tie at count 2 and
    ``(256, a)`` occurs first -> 257; then ``(257, b)`` -> 258.

    >>> trace = train_bpe("aaabdaaabac", 3)
    >>> [m.pair for m in trace.merges], trace.encode("aaabdaaabac")
    ([(97, 97), (256, 97), (257, 98)], [258, 100, 258, 97, 99])
    >>> trace.steps[1].tied, train_bpe("aaabdaaabac", 3, tie="lowest").merges[1]
    (2, Merge(pair=(97, 98), new_id=257, count=2))
    """
    config = BPEConfig(num_merges, split, tie)
    with timed(torch.device("cpu")) as watch:
        trainer = BPETrainer(text, split=config.split, tie=config.tie)
        trainer.train(config.num_merges)
    return trainer.trace(config.num_merges, watch.timing)


def train_bpe_slices(text: str, num_merges: int, *, split: Split = "none", tie: Tie = "first",
                     seconds: float = 0.25) -> Iterator[int | BPETrace]:
    """:func:`train_bpe` in time slices of ``seconds``: yields the number of merges made after each
    slice that did not finish, then the trace. What the UI streams its progress from.

    >>> *progress, trace = train_bpe_slices("aaabdaaabac", 3)
    >>> trace.encode("aaabdaaabac")
    [258, 100, 258, 97, 99]
    """
    config = BPEConfig(num_merges, split, tie)
    start = time.perf_counter()
    trainer = BPETrainer(text, split=config.split, tie=config.tie)
    while not trainer.train(config.num_merges, seconds=seconds):
        yield len(trainer.merges)
    yield trainer.trace(config.num_merges, Timing("cpu", (time.perf_counter() - start) * 1e3))
