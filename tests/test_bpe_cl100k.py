"""GPT-4's cl100k_base, read offline: the file tiktoken expects, and a replay equal to tiktoken's encode."""
import ast
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from models.bpe_cl100k import CL100K_SHA256, cl100k_path, encode_chunk, encode_cl100k, load_cl100k, replay_cl100k
from models.bpe_trace import CORPORA, load_corpus
from tests.conftest import ROOT

tiktoken = pytest.importorskip("tiktoken")
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
TRICKY = ["", "hello world", "  leading and trailing  ", "露营 costs more than camp", "1234567 99",
          "I'm can't they'LL", "👨‍👩‍👧‍👦🇨🇳1️⃣", "e\u0301", "\x00\x01\n\r\n\t", "<|endoftext|> is plain text here",
          "a" * 300, " " * 40 + "x", "https://example.com/a?b=c#d"]


@pytest.fixture(scope="module")
def tiktoken_cl100k(tmp_path_factory):
    """tiktoken's own ``cl100k_base``, offline: its download cache pre-filled with the shipped file.

    tiktoken looks for the URL's file under ``TIKTOKEN_CACHE_DIR/sha1(url)`` and checks the SHA-256
    itself, so this is ``tiktoken.get_encoding("cl100k_base")`` exactly, with no network.
    """
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    shutil.copy(cl100k_path(), cache / hashlib.sha1(CL100K_URL.encode()).hexdigest())
    mp = pytest.MonkeyPatch()
    mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    yield tiktoken.get_encoding("cl100k_base")
    mp.undo()


def test_the_expected_hash_is_the_one_tiktoken_uses():
    """Read tiktoken_ext/openai_public.py as text: the expected_hash passed for cl100k_base."""
    from tiktoken_ext import openai_public
    tree = ast.parse(Path(openai_public.__file__).read_text())
    function = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "cl100k_base")
    hashes = [kw.value.value for node in ast.walk(function) if isinstance(node, ast.Call)
              for kw in node.keywords if kw.arg == "expected_hash"]
    assert hashes == [CL100K_SHA256]
    assert hashlib.sha256(cl100k_path().read_bytes()).hexdigest() == CL100K_SHA256


def test_ranks_load_once_read_only_and_complete(tiktoken_cl100k):
    cl = load_cl100k()
    assert load_cl100k() is cl                                     # parsed once per process
    assert dict(cl.ranks) == tiktoken_cl100k._mergeable_ranks
    assert sorted(cl.ranks.values()) == list(range(len(cl.ranks)))
    assert cl.sha256 == CL100K_SHA256
    with pytest.raises(TypeError):
        cl.ranks[b"x"] = 1                                          # type: ignore[index]


def test_cl100k_is_256_single_bytes_and_100000_merges(tiktoken_cl100k):
    """Issue 19 (1): 100,256 ranks, not 100,256 merges. Counted here from tiktoken's own table; the 5
    special tokens, not ranks, bring tiktoken's n_vocab to 100,277."""
    cl = load_cl100k()
    theirs = tiktoken_cl100k._mergeable_ranks
    singles = sum(len(token) == 1 for token in theirs)
    assert (len(cl.ranks), cl.single_bytes, cl.merges) == (len(theirs), singles, len(theirs) - singles)
    assert (cl.single_bytes, cl.merges) == (256, 100_000)
    specials = tiktoken_cl100k._special_tokens                    # 5 tokens at ids up to 100,276, not ranks
    assert len(specials) == 5 and tiktoken_cl100k.n_vocab == max(specials.values()) + 1 == 100_277
    import locales
    for lang, words in (("en", "100,256 ranks: the 256 single bytes and 100,000 merges"),
                        ("zh-CN", "100,256 个排名：256 个单字节加上 100,000 次合并")):
        assert words in locales.catalog()[lang]["bpe_explain"]


def test_the_file_is_found_and_parsed_without_importing_tiktoken():
    code = ("import sys; from models.bpe_cl100k import encode_cl100k; "
            "assert encode_cl100k('hello world').ids == [15339, 1917]; "
            "assert 'tiktoken' not in sys.modules, 'tiktoken imported'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


@pytest.mark.parametrize("name", list(CORPORA))
def test_replay_equals_tiktoken_on_the_corpora(name, tiktoken_cl100k):
    text = load_corpus(name)
    assert encode_cl100k(text).ids == tiktoken_cl100k.encode(text)


@pytest.mark.parametrize("text", TRICKY)
def test_replay_equals_tiktoken_on_tricky_text(text, tiktoken_cl100k):
    ours = encode_cl100k(text)
    assert ours.ids == tiktoken_cl100k.encode(text, disallowed_special=())
    assert b"".join(ours.tokens) == text.encode("utf-8") and ours.n_bytes == len(text.encode("utf-8"))


def test_replay_merges_the_lowest_rank_pair_each_time():
    """tiktoken's _educational.bpe_encode, one merge at a time, against our replay's rows."""
    ranks = load_cl100k().ranks
    rows = replay_cl100k(" tokenization".encode())
    assert rows[-1][1] == encode_chunk(" tokenization".encode()) == [b" token", b"ization"]
    for (_, before), (rank, after) in zip(rows, rows[1:]):
        pairs = [(ranks[a + b], i) for i, (a, b) in enumerate(zip(before, before[1:])) if a + b in ranks]
        best, i = min(pairs)                                        # the lowest rank, leftmost on a tie
        assert rank == best and after == before[:i] + [before[i] + before[i + 1]] + before[i + 2:]


def test_every_cl100k_token_is_reachable_by_its_own_merges():
    """Why replaying merges equals tiktoken's shortcut (a chunk that is a token is returned whole)."""
    ranks = load_cl100k().ranks
    sample = [token for token, rank in ranks.items() if rank % 97 == 0 and len(token) > 1]
    assert all(encode_chunk(token) == [token] for token in sample)
