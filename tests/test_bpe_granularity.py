"""The Tokenizer tab's granularity section (models/bpe_granularity.py): one text cut by characters,
whitespace words, bytes, a trained BPE and GPT-4's cl100k, checked against counts made by hand."""
import pytest

from models.bpe import train_bpe
from models.bpe_cl100k import load_cl100k
from models.bpe_granularity import SCHEMES, Vocabularies, by_bytes, by_characters, by_words, granularity

CORPUS = "the cat sat on the mat"
# by hand: characters t h e ␣ c a s o n m (10); words the cat sat on mat (5)


def cuts(text, word, steps=3):
    trace = train_bpe(CORPUS, steps)
    return {c.scheme: c for c in granularity(text, word, Vocabularies.of(CORPUS), trace, steps)}


def test_vocabularies_are_what_the_corpus_holds():
    v = Vocabularies.of(CORPUS)
    assert len(v.chars) == 10 and v.words == {"the", "cat", "sat", "on", "mat"}


def test_a_seen_text_costs_no_unknown():
    c = cuts("the mat", "mat")
    assert [(c[s].tokens, c[s].unknown) for s in ("chars", "words", "bytes")] == [(7, 0), (2, 0), (7, 0)]
    assert c["words"].pieces == ("mat",) and not c["words"].lost


def test_an_unseen_word_is_unk_for_words_and_pieces_for_bpe():
    c = cuts("the dog sat", " dog")
    # characters: d, g are new (o is in "on"); words: "dog" is new; bytes and BPE: nothing is unknown
    assert (c["chars"].tokens, c["chars"].unknown) == (11, 2)
    assert c["chars"].pieces == (" ", None, "o", None) and c["chars"].lost
    assert (c["words"].tokens, c["words"].unknown, c["words"].pieces) == (3, 1, (None,))
    assert (c["bytes"].vocab, c["bytes"].tokens, c["bytes"].unknown) == (256, 11, 0)
    assert c["bytes"].pieces == (b" ", b"d", b"o", b"g")
    # our 3 merges on the corpus: "at" (count 3), then "th" (2, first of the ties), then "the"
    assert c["bpe"].vocab == 259 and c["bpe"].unknown == 0 and not c["bpe"].lost
    assert b"".join(c["bpe"].pieces) == b" dog" and c["bpe"].tokens == 1 + 1 + 4 + 2   # the ␣ d o g ␣ s at
    assert c["cl100k"].vocab == len(load_cl100k().ranks) == 100_256
    assert c["cl100k"].pieces == (b" dog",) and c["cl100k"].tokens == 3


def test_chinese_has_no_spaces_so_a_word_is_a_whole_clause():
    text = "天气晴朗，适合露营"
    assert by_words(text, text, frozenset()).tokens == 1                      # one "word"
    assert by_characters(text, text, frozenset("天气晴朗")).unknown == 5        # ，适合露营
    assert by_bytes(text, text).tokens == 9 * 3                                # 3 UTF-8 bytes per character


def test_every_scheme_in_order_and_the_step_is_checked():
    assert list(cuts("a", "a")) == list(SCHEMES)
    trace = train_bpe(CORPUS, 3)
    with pytest.raises(ValueError, match="step = 4: must be a whole number from 0 to 3"):
        granularity("a", "a", Vocabularies.of(CORPUS), trace, 4)


def test_more_merges_never_cost_more_tokens_and_never_lose_anything():
    text = "the cat sat on the mat, then a dog came"
    counts = [cuts(text, " dog", k)["bpe"].tokens for k in range(1, 6)]
    assert counts == sorted(counts, reverse=True) and counts[0] < len(text.encode())
