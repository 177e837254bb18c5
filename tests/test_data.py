"""The shipped corpora in data/corpus: encoding hygiene, sizes, and what each file promises."""
import ast
import io
import tokenize
import unicodedata

import pytest

from tests.conftest import ROOT

CORPUS = ROOT / "data" / "corpus"

# name -> (min bytes, max bytes): the bands data/README.md promises.
SIZES = {
    "en.txt": (80_000, 150_000),
    "zh.txt": (28_000, 45_000),
    "code.py.txt": (20_000, 40_000),
    "mixed.txt": (8_000, 14_000),
}

ZWJ = "\u200d"


def text(name: str) -> str:
    return (CORPUS / name).read_bytes().decode("utf-8", errors="strict")


@pytest.mark.parametrize("name", sorted(SIZES))
def test_corpus_is_clean_utf8_within_its_size_band(name):
    raw = (CORPUS / name).read_bytes()
    low, high = SIZES[name]
    assert low <= len(raw) <= high, f"{name}: {len(raw)} bytes, expected {low}..{high}"
    assert not raw.startswith(b"\xef\xbb\xbf"), f"{name} starts with a BOM"
    assert b"\r" not in raw, f"{name} has CR line endings"
    assert b"\x00" not in raw, f"{name} has a NUL byte"
    decoded = raw.decode("utf-8", errors="strict")
    assert "\ufeff" not in decoded, f"{name} has a stray U+FEFF"
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in decoded), f"{name} has a lone surrogate"
    assert decoded.endswith("\n")


def paragraphs(body: str) -> list[str]:
    return [p.strip() for p in body.split("\n\n") if p.strip()]


def test_en_is_prose_without_repeated_paragraphs():
    paras = paragraphs(text("en.txt"))
    assert len(paras) >= 100
    repeated = {p[:60] for p in paras if paras.count(p) > 1}
    assert not repeated, f"repeated paragraphs: {sorted(repeated)}"
    body = text("en.txt")
    letters = sum(c.isascii() and c.isalpha() for c in body)
    assert letters / len(body) > 0.7                                # prose, not numbers or markup
    assert not any(c.isdigit() for c in body)


def test_zh_is_chinese_prose_with_the_camping_sentence():
    body = text("zh.txt")
    assert "天气晴朗，适合露营。" in body
    hanzi = sum(unicodedata.name(c, "").startswith("CJK UNIFIED IDEOGRAPH") for c in body)
    assert hanzi >= 9_000
    assert not any(c in body for c in ",.;:?!()"), "zh.txt should use full-width punctuation"


def test_code_parses_as_python_with_four_space_indents():
    source = text("code.py.txt")
    tree = ast.parse(source)
    assert sum(isinstance(n, ast.ClassDef) for n in ast.walk(tree)) >= 5
    assert sum(isinstance(n, ast.FunctionDef) for n in ast.walk(tree)) >= 30
    assert "\t" not in source
    indents = {len(tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
               if tok.type == tokenize.INDENT}                  # blocks only, not aligned continuations
    assert indents and all(i % 4 == 0 for i in indents), sorted(indents)


def scripts(body: str) -> set[str]:
    """First word of the Unicode name of every letter: LATIN, CJK, HANGUL, ARABIC, ..."""
    return {unicodedata.name(c, "?").split()[0] for c in body if c.isalpha()}


def test_mixed_stresses_the_tokenizer():
    body = text("mixed.txt")
    assert "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466" in body     # ZWJ family
    assert any(ZWJ in chunk for chunk in body.split())
    flags = [a + b for a, b in zip(body, body[1:])
             if 0x1F1E6 <= ord(a) <= 0x1F1FF and 0x1F1E6 <= ord(b) <= 0x1F1FF]
    assert "\U0001F1E8\U0001F1F3" in flags                                           # 🇨🇳
    assert any(unicodedata.combining(c) and b.isascii() for b, c in zip(body, body[1:]))  # e + U+0301
    assert "\ufe0f\u20e3" in body                                                     # a keycap
    assert any(0x1F3FB <= ord(c) <= 0x1F3FF for c in body)                           # a skin tone
    found = scripts(body)
    wanted = {"LATIN", "CJK", "HIRAGANA", "HANGUL", "CYRILLIC", "GREEK", "ARABIC", "HEBREW"}
    assert len(found & wanted) >= 6, found
    assert "https://" in body and "#" in body
