"""What a trained byte-level BPE tokenizer is: its merges, vocabulary, encoder and history.

The split (:mod:`models.bpe_split`, re-exported here), input checks, the :class:`Merge` and
:class:`BPETrace` records that :func:`models.bpe.train_bpe` returns, and
:func:`merge_lowest_rank`, the encoder both our tokenizer and the cl100k replay use.

The token boundaries of any step come from the merge tree: a token of id ``256 + i`` exists at
step ``k`` iff ``i < k`` (a token is always younger than its two parts), so the text at step ``k``
is every final token unmerged down to ids below ``256 + k`` (:meth:`BPETrace.segmentation_ids`);
nothing is retrained to step back.
"""
from __future__ import annotations

import bisect
import functools
from array import array
import heapq
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Sequence

from locales import Term
from models.bpe_split import GPT2_PATTERN, GPT4_PATTERN, PATTERNS, SPLITS, split_text  # noqa: F401 (re-exported)
from models.checks import InputError, choice, whole
from models.limits import BPE_MAX_CORPUS_BYTES, BPE_MERGES

if TYPE_CHECKING:                    # torch-free on purpose: the UI reads the choices below at build time
    from models.device import Timing

Split = Literal["none", "gpt2", "gpt4"]
Tie = Literal["first", "lowest"]
TIES: tuple[str, ...] = ("first", "lowest")
# Shipped corpora (data/corpus/): preset name -> file.
CORPORA = {"en": "en.txt", "zh": "zh.txt", "code": "code.py.txt", "mixed": "mixed.txt"}
CORPUS_DIR = Path(__file__).resolve().parents[1] / "data" / "corpus"
FIRST_ID = 256                      # merge i makes token 256 + i

Pair = tuple[int, int]


def load_corpus(name: str) -> str:
    """The text of a shipped corpus preset (:data:`CORPORA`)."""
    choice("bpe_corpus", name, CORPORA)
    path = CORPUS_DIR / CORPORA[name]
    if not path.is_file():
        raise InputError("bpe_err_corpus_missing", file=f"data/corpus/{CORPORA[name]}")
    return text_from_bytes(path.read_bytes(), f"data/corpus/{CORPORA[name]}")


def utf8(text: str, what: str = "bpe_text") -> bytes:
    """``text`` as UTF-8, or an ``InputError`` that says where a lone surrogate sits (``what`` names
    the text: a term of ``locales/bpe.py``).

    >>> utf8("露营")
    b'\\xe9\\x9c\\xb2\\xe8\\x90\\xa5'
    """
    if not isinstance(text, str):
        raise InputError("bpe_err_not_text", what=Term(what), type=type(text).__name__)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError("bpe_err_surrogate", what=Term(what), position=exc.start) from None


def check_corpus(text: str) -> bytes:
    """The training text as UTF-8 bytes, after the checks a learner's corpus must pass."""
    data = utf8(text, "bpe_corpus_text")
    if not text.strip():
        raise InputError("bpe_err_corpus_empty")
    if len(data) > BPE_MAX_CORPUS_BYTES:
        raise InputError("bpe_err_corpus_too_big", bytes=f"{len(data):,}", most=f"{BPE_MAX_CORPUS_BYTES:,}",
                         mb=f"{BPE_MAX_CORPUS_BYTES / 1_000_000:g}")
    return data


@dataclass(frozen=True)
class BPEConfig:
    """What to train: how many merges, what a pair may span, how ties are broken. Validates itself.

    >>> BPEConfig(0)
    Traceback (most recent call last):
    ...
    models.checks.InputError: number of merges = 0: must be a whole number from 1 to 5000
    """

    num_merges: int
    split: Split = "none"          # "none": raw bytes; "gpt2"/"gpt4": pairs stay inside regex chunks
    tie: Tie = "first"             # "first": first occurrence in the text; "lowest": lowest (left, right)

    def __post_init__(self):
        object.__setattr__(self, "num_merges", BPE_MERGES.whole("bpe_merges", self.num_merges))
        choice("bpe_split", self.split, SPLITS)
        choice("bpe_tie", self.tie, TIES)


@dataclass(frozen=True, slots=True)     # no __dict__: a trace keeps thousands
class Merge:
    """One merge: ``pair`` became token ``new_id``; ``count`` = the pair's count when it was chosen."""

    pair: Pair
    new_id: int
    count: int


@dataclass(frozen=True, slots=True)     # no __dict__: a trace keeps thousands
class Step:
    """What the UI shows about one merge besides the merge itself.

    The competing pairs are one flat tuple of ints, which the garbage collector stops tracking: as
    nested tuples, a 5,000-merge trace was ~100k objects for every full collection to walk.

    >>> Step((97, 98, 5, 98, 99, 5), tied=2, replaced=5).top
    (((97, 98), 5), ((98, 99), 5))
    """

    flat_top: tuple[int, ...]           # the best pairs in tie-rule order, the winner first: left, right, count
    tied: int                           # how many pairs had the winning count (1 = no tie)
    replaced: int                       # occurrences actually merged (fewer than count when they overlap)

    @property
    def top(self) -> tuple[tuple[Pair, int], ...]:
        """The best pairs as ``((left, right), count)``, the winner first."""
        f = self.flat_top
        return tuple(((f[i], f[i + 1]), f[i + 2]) for i in range(0, len(f), 3))


@dataclass
class BPETrace:
    """A trained tokenizer and its history.

    ``tokens[k]`` is the number of tokens of the training text after ``k`` merges (``tokens[0]`` is
    its byte count). The text is kept as its distinct chunks (``final``: each chunk's tokens after
    every merge) and ``order`` (which distinct chunk comes next in the text).
    """

    text: str
    split: str
    tie: str
    requested: int                      # merges asked for
    merges: list[Merge]
    steps: list[Step]
    tokens: list[int]
    final: list[tuple[int, ...]]
    order: list[int]
    stop_reason: str | None = None      # why training stopped early: a message key (locales/bpe.py)
    timing: Timing | None = None

    def __reduce__(self):
        """Pickle as flat integer arrays: a trace goes from the training worker to the server, where
        unpickling ten thousand small objects one by one held the GIL for ~0.1 s per 5,000 merges.

        >>> import pickle
        >>> from models.bpe import train_bpe
        >>> trace = train_bpe("aaabdaaabac", 3)
        >>> pickle.loads(pickle.dumps(trace)) == trace
        True
        """
        merges = array("q", [x for m in self.merges for x in (*m.pair, m.new_id, m.count)])
        steps = array("q", [x for st in self.steps for x in (st.tied, st.replaced, len(st.flat_top))])
        tops = array("q", [x for st in self.steps for x in st.flat_top])
        return (_unpack_trace, (self.text, self.split, self.tie, self.requested, merges.tobytes(),
                                steps.tobytes(), tops.tobytes(), self.tokens, self.final, self.order,
                                self.stop_reason, self.timing))

    # ----------------------------------------------------------------- vocabulary and merge tree
    @functools.cached_property
    def vocab(self) -> dict[int, bytes]:
        """Token id -> its bytes: the 256 bytes, then one entry per merge."""
        vocab = {i: bytes([i]) for i in range(FIRST_ID)}
        for m in self.merges:
            vocab[m.new_id] = vocab[m.pair[0]] + vocab[m.pair[1]]
        return vocab

    @functools.cached_property
    def ranks(self) -> dict[Pair, int]:
        """Pair -> the index of the merge that joins it."""
        return {m.pair: i for i, m in enumerate(self.merges)}

    @property
    def n_bytes(self) -> int:
        return self.tokens[0]

    def check_step(self, step: int) -> int:
        """``step`` as an ``int`` if it is a whole number from 0 to the number of merges learned."""
        return whole("bpe_step", step, 0, len(self.merges))

    def unmerge(self, token: int, step: int) -> list[int]:
        """The tokens that ``token`` was made of after ``step`` merges (itself if it existed then).

        >>> from models.bpe import train_bpe
        >>> trace = train_bpe("aaabdaaabac", 3)
        >>> trace.unmerge(258, 1), trace.unmerge(258, 3)
        ([256, 97, 98], [258])
        """
        cut, merges, out, stack = FIRST_ID + step, self.merges, [], [token]
        while stack:
            t = stack.pop()
            if t < cut:
                out.append(t)
            else:
                left, right = merges[t - FIRST_ID].pair
                stack += (right, left)
        return out

    def segmentation_ids(self, step: int, limit: int | None = None) -> list[int]:
        """The token ids of the training text after ``step`` merges (the first ``limit`` of them).

        >>> from models.bpe import train_bpe
        >>> train_bpe("aaabdaaabac", 3).segmentation_ids(2)
        [257, 98, 100, 257, 98, 97, 99]
        """
        cut = FIRST_ID + self.check_step(step)
        out: list[int] = []
        expanded: dict[int, list[int]] = {}
        for u in self.order:
            for t in self.final[u]:
                if t < cut:
                    out.append(t)
                else:
                    if t not in expanded:
                        expanded[t] = self.unmerge(t, step)
                    out += expanded[t]
            if limit is not None and len(out) >= limit:
                return out[:limit]
        return out

    def segmentation(self, step: int) -> list[bytes]:
        """The training text after ``step`` merges, one ``bytes`` per token.

        >>> from models.bpe import train_bpe
        >>> train_bpe("aaabdaaabac", 3).segmentation(1)
        [b'aa', b'a', b'b', b'd', b'aa', b'a', b'b', b'a', b'c']
        """
        vocab = self.vocab
        return [vocab[t] for t in self.segmentation_ids(step)]

    # ----------------------------------------------------------------- encoding new text
    def encode(self, text: str, steps: int | None = None) -> list[int]:
        """``text`` encoded with the first ``steps`` merges (all by default), split as in training.

        Inside a chunk the merge with the lowest index is applied first, leftmost occurrence first,
        until none applies; on the training text this gives exactly :meth:`segmentation_ids`.

        >>> from models.bpe import train_bpe
        >>> trace = train_bpe("aaabdaaabac", 3)
        >>> trace.encode("aaabdaaabac")
        [258, 100, 258, 97, 99]
        >>> trace.encode("aaab", steps=1)
        [256, 97, 98]
        """
        data = utf8(text)
        steps = len(self.merges) if steps is None else self.check_step(steps)
        ranks = self.ranks

        def lookup(left: int, right: int):
            rank = ranks.get((left, right))
            return None if rank is None or rank >= steps else (rank, FIRST_ID + rank)

        if self.split == "none":
            return merge_lowest_rank(list(data), lookup)
        done: dict[str, list[int]] = {}
        out: list[int] = []
        for chunk in split_text(text, self.split):
            if chunk not in done:
                done[chunk] = merge_lowest_rank(list(chunk.encode("utf-8")), lookup)
            out += done[chunk]
        return out

    def replay(self, word: bytes, steps: int | None = None) -> list[tuple[int | None, list[bytes]]]:
        """``word`` merge by merge with the first ``steps`` merges: ``(merge number, parts)`` per row,
        the bytes first (merge number ``None``).

        >>> from models.bpe import train_bpe
        >>> train_bpe("aaabdaaabac", 3).replay(b"aaab")
        [(None, [b'a', b'a', b'a', b'b']), (1, [b'aa', b'a', b'b']), (2, [b'aaa', b'b']), (3, [b'aaab'])]
        """
        steps = len(self.merges) if steps is None else self.check_step(steps)
        ranks, vocab, history = self.ranks, self.vocab, []

        def lookup(left: int, right: int):
            rank = ranks.get((left, right))
            return None if rank is None or rank >= steps else (rank, FIRST_ID + rank)

        merge_lowest_rank(list(word), lookup, history)
        return [(None, [bytes([b]) for b in word])] + [(rank + 1, [vocab[t] for t in ids]) for rank, ids in history]

    def char_merges(self, text: str, steps: int | None = None, limit: int = 24
                    ) -> list[tuple[str, bytes, int | None, list[bytes]]]:
        """The first ``limit`` distinct multi-byte characters of ``text``: each with its UTF-8 bytes,
        the merge after which they lie inside one token (``None``: never, with these merges), and
        the tokens that hold them after ``steps`` merges (all by default).

        That merge is the smallest node of the merge tree that covers the character's bytes: the
        token it makes is the first one that holds the whole character.

        >>> from models.bpe import train_bpe
        >>> train_bpe("露营 露营 露营", 3).char_merges("露营", steps=1)
        [('露', b'\\xe9\\x9c\\xb2', 2, [b'\\xe9\\x9c', b'\\xb2']), ('营', b'\\xe8\\x90\\xa5', None, [b'\\xe8', b'\\x90', b'\\xa5'])]
        """
        now = self.encode(text, steps)
        now_ends, end = [], 0
        for t in now:
            end += len(self.vocab[t])
            now_ends.append(end)
        ids = self.encode(text)
        vocab, merges = self.vocab, self.merges
        ends, end = [], 0
        for t in ids:
            end += len(vocab[t])
            ends.append(end)
        found: dict[str, tuple[str, bytes, int | None, list[bytes]]] = {}
        offset, k = 0, 0                                       # byte offset of the character, its token
        for char in text:
            raw = char.encode("utf-8")
            start, stop = offset, offset + len(raw)
            offset = stop
            while ends[k] <= start:
                k += 1
            if len(raw) < 2 or char in found:
                continue
            first = bisect.bisect_right(now_ends, start)        # the tokens holding it after ``steps``
            holding = [vocab[t] for t in now[first:bisect.bisect_left(now_ends, stop) + 1]]
            node, left_edge = ids[k], ends[k] - len(vocab[ids[k]])
            if stop > ends[k]:
                found[char] = (char, raw, None, holding)        # the character spans two final tokens
            else:
                while node >= FIRST_ID:                         # descend while one child covers it all
                    left, right = merges[node - FIRST_ID].pair
                    middle = left_edge + len(vocab[left])
                    if stop <= middle:
                        node = left
                    elif start >= middle:
                        node, left_edge = right, middle
                    else:
                        break
                found[char] = (char, raw, node - FIRST_ID + 1, holding)
            if len(found) >= limit:
                break
        return list(found.values())

    def to_json(self) -> dict:
        """The merges and vocabulary as plain JSON data, also in Hugging Face's byte-level form.

        ``hf_vocab``/``hf_merges`` spell bytes with GPT-2's byte-to-character map, so
        ``tokenizers.models.BPE(hf_vocab, hf_merges)`` loads them (with the ByteLevel pre-tokenizer).
        """
        vocab, chars = self.vocab, gpt2_byte_chars()
        spell = lambda t: "".join(chars[b] for b in vocab[t])          # noqa: E731
        return {
            "format": "LLM Anatomy byte-level BPE, version 1",
            "split": self.split, "pattern": PATTERNS.get(self.split), "tie_rule": self.tie,
            "merges": [{"rank": i, "pair": list(m.pair), "id": m.new_id, "count": m.count,
                        "bytes_hex": vocab[m.new_id].hex(), "text": display_text(vocab[m.new_id])}
                       for i, m in enumerate(self.merges)],
            "vocab": {str(t): b.hex() for t, b in vocab.items()},
            "hf_vocab": {spell(t): t for t in vocab},
            "hf_merges": [f"{spell(m.pair[0])} {spell(m.pair[1])}" for m in self.merges],
            "tokens_per_step": self.tokens,
            "stop_reason": self.stop_reason,
        }

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``; bytes that are not valid UTF-8 become U+FFFD.

        >>> from models.bpe import train_bpe
        >>> train_bpe("aaabdaaabac", 3).decode([258, 100])
        'aaabd'
        """
        vocab = self.vocab
        try:
            data = b"".join(vocab[i] for i in ids)
        except (KeyError, TypeError):
            bad = next((i for i in ids if not isinstance(i, int) or i not in vocab), None)
            raise InputError("bpe_err_token_id", id=repr(bad), last=len(vocab) - 1) from None
        return data.decode("utf-8", errors="replace")


def _unpack_trace(text, split, tie, requested, merges, steps, tops, *rest) -> BPETrace:
    """The inverse of :meth:`BPETrace.__reduce__`."""
    m, st, tp = array("q"), array("q"), array("q")
    m.frombytes(merges)
    st.frombytes(steps)
    tp.frombytes(tops)
    out_merges = [Merge((a, b), new_id, count) for a, b, new_id, count in zip(m[0::4], m[1::4], m[2::4], m[3::4])]
    out_steps, at = [], 0
    for tied, replaced, n in zip(st[0::3], st[1::3], st[2::3]):
        out_steps.append(Step(tuple(tp[at:at + n]), tied, replaced))
        at += n
    return BPETrace(text, split, tie, requested, out_merges, out_steps, *rest)


def merge_lowest_rank(parts: list, lookup: Callable[[object, object], tuple[int, object] | None],
                      history: list[tuple[int, list]] | None = None) -> list:
    """Apply merges to ``parts``: always the lowest-rank adjacent pair, leftmost first, until none is left.

    ``lookup(left, right)`` returns ``(rank, merged)`` or ``None``. This is tiktoken's
    ``byte_pair_merge`` (and ``_educational.bpe_encode``), with a heap instead of a rescan per merge.
    When ``history`` is a list, ``(rank, parts)`` is appended to it after each merge.

    >>> ranks = {(1, 2): (0, 9), (9, 3): (1, 7)}
    >>> merge_lowest_rank([1, 2, 3, 1, 2], lambda a, b: ranks.get((a, b)))
    [7, 9]
    """
    n = len(parts)
    if n < 2:
        return list(parts)
    parts = list(parts)
    nxt = [*range(1, n), -1]
    prv = list(range(-1, n - 1))
    heap = []
    for i in range(n - 1):
        found = lookup(parts[i], parts[i + 1])
        if found is not None:
            heap.append((found[0], i, found[1], parts[i], parts[i + 1]))
    heapq.heapify(heap)
    while heap:
        rank, i, merged, left, right = heapq.heappop(heap)
        j = nxt[i]
        if j < 0 or parts[i] != left or parts[j] != right:
            continue                                            # this pair was changed by an earlier merge
        parts[i], parts[j] = merged, None
        k = nxt[j]
        nxt[i] = k
        if k >= 0:
            prv[k] = i
            found = lookup(merged, parts[k])
            if found is not None:
                heapq.heappush(heap, (found[0], i, found[1], merged, parts[k]))
        p = prv[i]
        if p >= 0:
            found = lookup(parts[p], merged)
            if found is not None:
                heapq.heappush(heap, (found[0], p, found[1], parts[p], merged))
        if history is not None:
            history.append((rank, _walk(parts, nxt)))
    return _walk(parts, nxt)


def _walk(parts: list, nxt: list[int]) -> list:
    out, i = [], 0
    while i >= 0:
        out.append(parts[i])
        i = nxt[i]
    return out


@functools.lru_cache(maxsize=1)
def gpt2_byte_chars() -> tuple[str, ...]:
    """GPT-2's ``bytes_to_unicode``: a printable character for each byte (space -> ``Ġ``).

    >>> gpt2_byte_chars()[ord(" ")], gpt2_byte_chars()[ord("a")]
    ('Ġ', 'a')
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return tuple(chars[b] for b in range(256))


def display_text(token: bytes) -> str:
    """A token's text: UTF-8 where it is valid, ``\\xNN`` for bytes of a character cut in two.

    >>> display_text("露".encode()[:2]), display_text(b" the")
    ('\\\\xe9\\\\x9c', ' the')
    """
    return token.decode("utf-8", errors="backslashreplace")


def text_from_bytes(data: bytes, what: str = "bpe_file") -> str:
    """Decode an upload as strict UTF-8 (a leading byte-order mark is dropped), or say where it fails.

    >>> text_from_bytes(b"\\xef\\xbb\\xbfhi")
    'hi'
    >>> text_from_bytes(b"caf\\xe9")
    Traceback (most recent call last):
    ...
    models.checks.InputError: the file is not UTF-8 text: byte 0xe9 at offset 3 cannot start or continue a character (Latin-1 or UTF-16 text, or a binary file?). Save it as UTF-8 and upload it again
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("bpe_err_not_utf8", what=Term(what), byte=f"0x{data[exc.start]:02x}",
                         offset=f"{exc.start:,}") from None
    return text.removeprefix("\ufeff")
