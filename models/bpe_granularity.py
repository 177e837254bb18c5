"""One text cut five ways: characters, whitespace words, bytes, the learner's BPE and GPT-4's cl100k.

For each way (a *scheme*): how many ids its vocabulary needs, how many tokens the text costs, and
what becomes of a word it never saw. The character and word vocabularies are what a tokenizer of
that kind would keep from the training corpus: every distinct character, every distinct
whitespace-separated word. Anything else is ``[UNK]``: its meaning is lost, and a word-level
vocabulary big enough to avoid that runs to hundreds of thousands of entries (every inflection,
name, number and typo). Bytes need 256 ids and never meet an unknown, but cost the most tokens.
Byte-level BPE keeps the 256 bytes and adds merges for frequent byte sequences: a word it never saw
is cut into more, shorter pieces, never lost. That is why GPT-2 and its successors use it
(Radford et al. 2019, §2.2; Sennrich et al. 2016 for subword BPE).

Not handled: Unicode normalisation, and scripts written without spaces (Chinese, Japanese, Thai),
for which "whitespace words" are whole clauses: the tab shows what that does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

SCHEMES = ("chars", "words", "bytes", "bpe", "cl100k")
UNK = None                                 # a piece the vocabulary does not hold


@dataclass(frozen=True)
class Vocabularies:
    """What a character-level and a word-level tokenizer would keep from a training corpus.

    >>> v = Vocabularies.of("the cat sat")
    >>> sorted(v.chars), sorted(v.words)
    ([' ', 'a', 'c', 'e', 'h', 's', 't'], ['cat', 'sat', 'the'])
    """

    chars: frozenset[str]
    words: frozenset[str]

    @classmethod
    def of(cls, corpus: str) -> Vocabularies:
        return cls(frozenset(corpus), frozenset(corpus.split()))


@dataclass(frozen=True)
class Cut:
    """One scheme on one text and one word."""

    scheme: str
    vocab: int                             # ids the scheme's vocabulary holds
    tokens: int                            # tokens the text costs
    unknown: int                           # of those, how many are [UNK]
    pieces: tuple[str | bytes | None, ...]  # the word, cut: text, bytes, or UNK (None)

    @property
    def lost(self) -> bool:
        """Whether part of the word became [UNK]."""
        return UNK in self.pieces


def by_characters(text: str, word: str, vocab: frozenset[str]) -> Cut:
    """One token per character; a character the corpus never held is [UNK].

    >>> by_characters("the dog", "dog", frozenset("the cat sat"))
    Cut(scheme='chars', vocab=7, tokens=7, unknown=3, pieces=(None, None, None))
    """
    return Cut("chars", len(vocab), len(text), sum(c not in vocab for c in text),
               tuple(c if c in vocab else UNK for c in word))


def by_words(text: str, word: str, vocab: frozenset[str]) -> Cut:
    """One token per whitespace-separated word; a word the corpus never held is [UNK].

    >>> by_words("the dog sat", " dog", frozenset({"the", "cat", "sat"}))
    Cut(scheme='words', vocab=3, tokens=3, unknown=1, pieces=(None,))
    """
    words = text.split()
    return Cut("words", len(vocab), len(words), sum(w not in vocab for w in words),
               tuple(w if w in vocab else UNK for w in word.split()))


def by_bytes(text: str, word: str) -> Cut:
    """One token per UTF-8 byte: 256 ids, nothing unknown.

    >>> by_bytes("露营", "é")
    Cut(scheme='bytes', vocab=256, tokens=6, unknown=0, pieces=(b'\\xc3', b'\\xa9'))
    """
    return Cut("bytes", 256, len(text.encode("utf-8")), 0, tuple(bytes([b]) for b in word.encode("utf-8")))


def by_bpe(scheme: str, vocab: int, text_ids: Sequence[int], word_ids: Sequence[int],
           decoder: Mapping[int, bytes]) -> Cut:
    """A byte-level BPE (ours at some step, or cl100k): its ids for the text and the word, nothing unknown.

    >>> by_bpe("bpe", 257, [256, 99], [256], {256: b"ab", 99: b"c"})
    Cut(scheme='bpe', vocab=257, tokens=2, unknown=0, pieces=(b'ab',))
    """
    return Cut(scheme, vocab, len(text_ids), 0, tuple(decoder[i] for i in word_ids))


def granularity(text: str, word: str, vocabularies: Vocabularies, trace, steps: int,
                cl100k_text_ids: Sequence[int] | None = None) -> list[Cut]:
    """Every scheme of :data:`SCHEMES` on ``text`` and ``word``: the learner's BPE after ``steps`` merges
    (a :class:`models.bpe_trace.BPETrace`), GPT-4's cl100k with all its ranks (``cl100k_text_ids``: the
    text's cl100k ids when they are known already).

    >>> from models.bpe import train_bpe
    >>> trace = train_bpe("the cat sat on the mat", 3)
    >>> [(c.scheme, c.vocab, c.tokens, c.unknown) for c in granularity("the dog", "dog", Vocabularies.of(trace.text), trace, 3)]
    [('chars', 10, 7, 2), ('words', 5, 2, 1), ('bytes', 256, 7, 0), ('bpe', 259, 5, 0), ('cl100k', 100256, 2, 0)]
    """
    from models.bpe_cl100k import encode_cl100k, load_cl100k

    steps = trace.check_step(steps)
    cl = load_cl100k()
    theirs_text = encode_cl100k(text).ids if cl100k_text_ids is None else cl100k_text_ids
    return [by_characters(text, word, vocabularies.chars), by_words(text, word, vocabularies.words),
            by_bytes(text, word),
            by_bpe("bpe", 256 + steps, trace.encode(text, steps), trace.encode(word, steps), trace.vocab),
            by_bpe("cl100k", len(cl.ranks), theirs_text, encode_cl100k(word).ids, cl.decoder)]
