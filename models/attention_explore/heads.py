"""The heads: every layer's attention probabilities on a prompt, recorded by a
:class:`~models.transformer.Probe`, and the patterns the trained heads learned, *measured*
(:func:`head_patterns`): the mean weight a head puts on the previous character, on the start of the
current word, on the last space, on the first character and on itself, against a uniform causal head,
on held-out text and on the prompt. (Clark et al. 2019, "What does BERT look at?", measure BERT's heads
the same way; BertViz draws them.)"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from models.attention_explore.trained import (VARIANTS, encode_prompt, held_out_text, kv_heads, probed_forward,
                                              row_entropy, trained_model)
from models.checks import choice
from models.device import Timing, resolve_device, timed
from models.limits import ATTN_BROAD_THRESHOLD, ATTN_PATTERN_CHARS, ATTN_PATTERN_THRESHOLD


PATTERNS = ("previous", "word_start", "last_space", "first", "self")
PATTERN_THRESHOLD = ATTN_PATTERN_THRESHOLD
BROAD_THRESHOLD = ATTN_BROAD_THRESHOLD


def pattern_targets(text: str) -> dict[str, tuple[list[int], list[int]]]:
    """For each pattern, the queries it is measured on and the key each of them would read.

    - ``previous``: every query but the first reads the character before it.
    - ``word_start``: a query inside a word, at least two characters after the word's first
      character (nearer, the start is the previous character or the query itself), reads that first character.
    - ``last_space``: a query at least two characters after the last whitespace before it reads that
      whitespace.
    - ``first``: every query from position 2 reads position 0 (an "attention sink").
    - ``self``: every query but the first reads itself.

    >>> t = pattern_targets("ab cde")
    >>> t["previous"]
    ([1, 2, 3, 4, 5], [0, 1, 2, 3, 4])
    >>> t["word_start"], t["last_space"]           # "e" reads "c"; "d" and "e" read the space
    (([5], [3]), ([4, 5], [2, 2]))
    """
    n = len(text)
    starts, spaces = [], []
    start, space = 0, -1
    for i, char in enumerate(text):
        spaces.append(space)                           # the last whitespace strictly before i
        if char.isspace():
            space, start = i, i + 1
        starts.append(start)                           # the first character of i's word
    word = [i for i in range(n) if not text[i].isspace() and starts[i] <= i - 2]
    after_space = [i for i in range(n) if spaces[i] >= 0 and spaces[i] <= i - 2]
    return {
        "previous": (list(range(1, n)), list(range(n - 1))),
        "word_start": (word, [starts[i] for i in word]),
        "last_space": (after_space, [spaces[i] for i in after_space]),
        "first": (list(range(2, n)), [0] * max(0, n - 2)),
        "self": (list(range(1, n)), list(range(1, n))),
    }


@dataclass(frozen=True)
class HeadPatterns:
    """How much each head attends where each pattern points, measured on ``chars`` characters of text.

    ``share[l, h, p]``: the mean weight head ``h`` of layer ``l`` puts on pattern ``p``'s key (NaN when the
    text has no query for it); ``chance[p]``: the same for a uniform causal head (query ``i`` gives every
    key ``1/(i+1)``); ``queries[p]``: how many queries were averaged. ``entropy[l, h]``: the mean entropy
    of the head's rows (nats), ``uniform_entropy`` a uniform causal head's.
    """

    share: torch.Tensor                 # (L, H, P)
    chance: list[float]                 # (P,)
    queries: list[int]                  # (P,)
    entropy: torch.Tensor               # (L, H)
    uniform_entropy: float
    chars: int

    def found(self, threshold: float = PATTERN_THRESHOLD,
              broad: float = BROAD_THRESHOLD) -> list[tuple[str, int, int, float]]:
        """``(pattern, layer, head, value)`` for every head that shows a pattern, 1-based, strongest first:
        ``share ≥ threshold``, or (pattern ``"broad"``, value = entropy / uniform entropy) ``≥ broad``."""
        hits = [(PATTERNS[p], l + 1, h + 1, float(self.share[l, h, p]))
                for l, h, p in (self.share >= threshold).nonzero().tolist()]
        ratio = self.entropy / self.uniform_entropy
        hits += [("broad", l + 1, h + 1, float(ratio[l, h])) for l, h in (ratio >= broad).nonzero().tolist()]
        return sorted(hits, key=lambda hit: (PATTERNS + ("broad",)).index(hit[0]) * 10 - hit[3])


def head_patterns(probs: torch.Tensor, text: str) -> HeadPatterns:
    """Measure :data:`PATTERNS` on attention probabilities ``(L, H, T, T)`` of ``text`` (``T = len(text)``).

    >>> T = 4                                            # a head that always reads the previous character
    >>> prev = torch.zeros(1, 1, T, T); prev[0, 0, 0, 0] = 1; prev[0, 0, torch.arange(1, T), torch.arange(T - 1)] = 1
    >>> m = head_patterns(prev, "ab c")
    >>> float(m.share[0, 0, PATTERNS.index("previous")]), m.found()[0][:3]
    (1.0, ('previous', 1, 1))
    """
    L, H, T, _ = probs.shape
    if T != len(text):
        raise ValueError(f"{T} attention rows for a text of {len(text)} characters")
    shares, chance, counts = [], [], []
    for pattern in PATTERNS:
        queries, keys = pattern_targets(text)[pattern]
        counts.append(len(queries))
        if not queries:
            shares.append(torch.full((L, H), math.nan))
            chance.append(math.nan)
            continue
        shares.append(probs[:, :, queries, keys].float().mean(-1).cpu())          # (L, H)
        chance.append(sum(1 / (i + 1) for i in queries) / len(queries))
    positions = torch.arange(1, T + 1, dtype=torch.float64)
    return HeadPatterns(torch.stack(shares, -1), chance, counts, row_entropy(probs.float()).mean(-1).cpu(),
                        float(positions.log().mean()), T)


@dataclass(frozen=True)
class HeadsView:
    """Every head of a trained model on a prompt, and the patterns they show."""

    name: str                           # the checkpoint
    variant: str                        # MHA, GQA, MQA, MLA
    labels: list[str]                   # the prompt's characters
    probs: torch.Tensor                 # (L, H, T, T) on the CPU
    kv_heads: list[int | None]          # per query head: the KV head it reads (None: MLA's shared latent)
    prompt: HeadPatterns                # measured on the prompt
    held_out: HeadPatterns              # measured on ATTN_PATTERN_CHARS held-out characters
    timing: Timing


@functools.lru_cache(maxsize=2 * len(VARIANTS))
def _held_out_patterns(variant: str, device: str) -> HeadPatterns:
    loaded = trained_model(variant, device)
    text = held_out_text()[:ATTN_PATTERN_CHARS]
    _, probe = probed_forward(loaded.model, loaded.vocab.encode(text))
    return head_patterns(torch.cat(probe.attn_probs), text)                         # (L, H, T, T)


def held_out_patterns(variant: str, device: torch.device | str | None = None) -> HeadPatterns:
    """The head patterns of ``variant`` on the first ``ATTN_PATTERN_CHARS`` held-out characters
    (measured once per variant and device: they do not depend on the prompt)."""
    choice("attn_view_model", variant, VARIANTS)
    return _held_out_patterns(variant, str(resolve_device(device)))


def look_at_heads(variant: str, prompt: str, *, device: torch.device | str | None = None) -> HeadsView:
    """Every layer × head's attention on ``prompt``, and the head patterns measured on it and on held-out text.

    >>> v = look_at_heads("gqa", "the cat")
    >>> tuple(v.probs.shape), v.kv_heads
    ((4, 4, 7, 7), [0, 0, 1, 1])
    """
    loaded = trained_model(variant, device)
    ids = encode_prompt(loaded, prompt)
    device = loaded.model.head.weight.device
    with timed(device) as watch:
        held_out = held_out_patterns(variant, device)
        _, probe = probed_forward(loaded.model, ids)
        probs = torch.cat(probe.attn_probs).cpu()                                  # (L, H, T, T)
        measured = head_patterns(probs, prompt)
    return HeadsView(loaded.name, loaded.model.config.variant, list(prompt), probs, kv_heads(loaded.model.config),
                     measured, held_out, watch.timing)
