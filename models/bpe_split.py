"""How a text is cut into the chunks that BPE pairs may not cross: GPT-2's and GPT-4's split patterns.

The patterns need Unicode's letter and number classes (``\\p{L}``, ``\\p{N}``), which the standard
``re`` module lacks, so they run on the ``regex`` package. Most learners' texts (English prose, code)
hold only characters below U+0100, and for those the same pattern runs on ``re`` with each class
spelled out as its members below U+0100, taken from ``regex`` itself (:func:`latin1_pattern`):
the same chunks, 2.3× faster on the shipped 100 KB English corpus (6.2 against 14.0 ms), the
largest part of the tokenizer's training after the merges. A text with any character from U+0100 up
takes ``regex``.
"""
from __future__ import annotations

import functools
import re

from models.checks import choice

SPLITS: tuple[str, ...] = ("none", "gpt2", "gpt4")
# The GPT-2 release's pattern (also Hugging Face's ByteLevel pre-tokenizer and minbpe's GPT2 split).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# GPT-4's cl100k_base pattern, as tiktoken 0.14 spells it (possessive quantifiers).
GPT4_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}
# The classes the patterns use, and their complements outside a character class.
CLASSES = (r"\p{L}", r"\p{N}", r"\s")
NEGATED = {r"\S": r"\s"}
PLAIN_ESCAPES = (r"\r", r"\n", r"\t")           # other letter escapes (\w, \b, \d) differ between the engines


def split_text(text: str, split: str = "none") -> list[str]:
    """The chunks a pair may not cross: the whole text (``"none"``) or the GPT-2/GPT-4 regex matches.

    >>> split_text("Hello world's 2024!!", "gpt2")
    ['Hello', ' world', "'s", ' 2024', '!!']
    >>> split_text("Hello world's 2024!!", "gpt4")
    ['Hello', ' world', "'s", ' ', '202', '4', '!!']
    """
    choice("bpe_split", split, SPLITS)
    if split == "none":
        return [text] if text else []
    return compiled(PATTERNS[split], latin1=_latin1(text)).findall(text)


def _latin1(text: str) -> bool:
    """Whether every character of ``text`` is below U+0100 (a copy for CPython's one-byte strings)."""
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def compiled(pattern: str, latin1: bool = False):
    """``pattern`` compiled by ``regex``, or with ``latin1`` by ``re`` as :func:`latin1_pattern` spells it:
    the same matches on any text of characters below U+0100 (tested on random such texts). GPT-4's
    possessive quantifiers need Python 3.11's ``re``; before it, ``regex`` compiles that one."""
    if latin1:
        try:
            return re.compile(latin1_pattern(pattern))
        except re.error:
            pass
    import regex
    return regex.compile(pattern)


def latin1_pattern(pattern: str) -> str:
    r"""``pattern`` for the standard ``re`` module, for texts of characters below U+0100: each of
    :data:`CLASSES` (and ``\S``) replaced by its members there, as ``regex`` itself matches them.

    >>> latin1_pattern(r"\p{N}+")
    '[0123456789²³¹¼½¾]+'
    >>> import regex; text = "Ça coûte 12½ francs, ¿sí?\xa0Non"
    >>> re.findall(latin1_pattern(GPT2_PATTERN), text) == regex.findall(GPT2_PATTERN, text)
    True
    """
    out, i, depth, first = [], 0, 0, 0                  # depth: inside a character class from `first`
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            token = pattern[i:pattern.index("}", i) + 1] if pattern.startswith(r"\p", i) else pattern[i:i + 2]
            if token in CLASSES:
                out.append(_members(token) if depth else f"[{_members(token)}]")
            elif token in NEGATED and not depth:
                out.append(f"[^{_members(NEGATED[token])}]")
            elif token in PLAIN_ESCAPES or not token[1].isalnum():
                out.append(token)                       # the same character in both engines
            else:                                       # \w, \b, \d ...: `re` and `regex` differ below U+0100
                raise ValueError(f"{token} has no Latin-1 spelling here")
            i += len(token)
            continue
        if c == "[" and not depth:
            depth, first = 1, i + 1 + pattern.startswith("^", i + 1)
        elif c == "]" and depth and i > first:          # a "]" first in a class is one of its members
            depth = 0
        out.append(c)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=None)
def _members(cls: str) -> str:
    """The characters below U+0100 that ``regex`` matches by ``cls``, escaped for a character class."""
    import regex
    matches = regex.compile(cls).fullmatch
    return "".join(re.escape(chr(c)) for c in range(256) if matches(chr(c)))
