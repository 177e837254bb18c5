"""Characters of the shipped English corpus (``data/corpus/en.txt``) as batches of ids.

The vocabulary is the sorted set of the corpus's characters; a batch is ``B`` windows of ``T``
consecutive characters at seeded random offsets (drawn on the CPU, so every device gets the same
batch for a seed). Read once per process and cached: the text is read-only.

Not handled: text outside the corpus's alphabet (:func:`encode` refuses it), subword tokens.
"""
from __future__ import annotations

import functools
from pathlib import Path

import torch

from models.device import generator, resolve_device

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "en.txt"


@functools.cache
def corpus_text() -> str:
    """The corpus as one string."""
    return CORPUS.read_text(encoding="utf-8")


@functools.cache
def vocabulary() -> tuple[str, ...]:
    """The corpus's characters, sorted: id ``i`` is ``vocabulary()[i]``."""
    return tuple(sorted(set(corpus_text())))


def encode(text: str) -> list[int]:
    """Character ids of ``text``; ``ValueError`` for a character the corpus never uses.

    >>> decode(encode("the cat"))
    'the cat'
    """
    index = {c: i for i, c in enumerate(vocabulary())}
    missing = sorted({c for c in text if c not in index})
    if missing:
        raise ValueError(f"characters not in the corpus alphabet: {''.join(missing[:10])!r}")
    return [index[c] for c in text]


def decode(ids: list[int]) -> str:
    """The text of character ids (inverse of :func:`encode`)."""
    vocab = vocabulary()
    return "".join(vocab[i] for i in ids)


@functools.cache
def unigram_entropy() -> float:
    """The corpus's character entropy in nats: the loss of a model that knows only letter frequencies."""
    counts = torch.bincount(_corpus_ids()).double()
    p = counts[counts > 0] / counts.sum()
    return float(-(p * p.log()).sum())


@functools.cache
def _corpus_ids() -> torch.Tensor:
    return torch.tensor(encode(corpus_text()), dtype=torch.long)                  # (N,)


def char_batch(batch: int, length: int, *, seed: int, device=None) -> torch.Tensor:
    """``[batch, length]`` ids: windows of the corpus at offsets drawn with ``seed``.

    >>> a, b = char_batch(2, 8, seed=1), char_batch(2, 8, seed=1)
    >>> a.shape, bool((a == b).all())
    (torch.Size([2, 8]), True)
    """
    ids = _corpus_ids()
    if not 1 <= length < len(ids):
        raise ValueError(f"a window of {length} characters does not fit in the corpus ({len(ids)} characters)")
    starts = torch.randint(0, len(ids) - length + 1, (batch,), generator=generator(seed, torch.device("cpu")))
    windows = starts[:, None] + torch.arange(length)                                # (B, T)
    return ids[windows].to(resolve_device(device))                                  # (B, T)
