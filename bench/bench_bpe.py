"""BPE training and stepping, each against a reference measured side by side in the same run.

    python bench/bench_bpe.py [--quick] [--repeats 3]

1. 100 KB (``data/corpus/en.txt``, 99,979 bytes), 400 merges, split ``none``: ``models.bpe`` against
   the naive full-rescan trainer (minbpe's ``BasicTokenizer`` algorithm, ``tests/bpe_naive.py``).
   Both must learn the same merges (checked). Target: at least 30x.
2. GPT-2 split, 400 merges, at 100 KB and 1 MB: against Hugging Face ``tokenizers`` (Rust):
   ByteLevel pre-tokenizer without prefix space, ``BpeTrainer(vocab_size=256 + 400,
   min_frequency=2)``, the text given as one string (so both split it identically). Ours runs with
   Hugging Face's tie rule and byte order, and the merges must be identical (checked). 1 MB = the
   four shipped corpora concatenated (en, zh, code, mixed: 178,677 bytes), repeated, cut to
   1,000,000 bytes at a character boundary.
3. A step of the tab on the server (every view of a step: merge card, coloured text, competing
   pairs, curves, your text, the GPT-4 comparison) at 100 KB, median and worst over 40 steps.
4. GPT-4's cl100k on 100 KB: our Python replay against tiktoken's ``encode`` (Rust), same ids (checked).

``--quick``: 20 KB, 100 merges, 1 repeat, no 1 MB row (seconds, for a smoke run).
Timings are wall-clock medians over ``--repeats`` runs, the two sides interleaved, each run after a
``gc.collect()``.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.bpe import BPETrainer, train_bpe  # noqa: E402
from models.bpe_trace import CORPORA, gpt2_byte_chars, load_corpus  # noqa: E402
from tests.bpe_naive import naive_train  # noqa: E402

MERGES = 400


def cut(text: str, n_bytes: int) -> str:
    """The first ``n_bytes`` of ``text``'s UTF-8, ending on a character boundary."""
    return text.encode("utf-8")[:n_bytes].decode("utf-8", errors="ignore")


def one_megabyte() -> str:
    joined = "".join(load_corpus(name) for name in CORPORA)
    return cut(joined * (1_000_000 // len(joined.encode("utf-8")) + 1), 1_000_000)


def timed(fn, repeats: int) -> tuple[float, object]:
    """Median seconds of ``fn`` and its result. Each call starts from a collected heap, so that neither
    side pays for a collection of garbage the other one (or torch's import) left behind."""
    times, result = [], None
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def side_by_side(ours, theirs, repeats: int) -> tuple[float, float, object, object]:
    """Median seconds of each, runs interleaved so that load on the machine hits both alike."""
    a, b, ra, rb = [], [], None, None
    for _ in range(repeats):
        ta, ra = timed(ours, 1)
        tb, rb = timed(theirs, 1)
        a.append(ta)
        b.append(tb)
    return statistics.median(a), statistics.median(b), ra, rb


def hf_train(text: str, merges: int) -> list[tuple[bytes, bytes]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=256 + merges, min_frequency=2, show_progress=False, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text], trainer=trainer)
    to_byte = {c: b for b, c in enumerate(gpt2_byte_chars())}
    pairs = [m.split(" ") if isinstance(m, str) else m for m in json.loads(tok.to_str())["model"]["merges"]]
    return [(bytes(to_byte[c] for c in a), bytes(to_byte[c] for c in b)) for a, b in pairs]


def ours_like_hf(text: str, merges: int) -> list[tuple[bytes, bytes]]:
    order = sorted(range(256), key=lambda b: ord(gpt2_byte_chars()[b]))
    trainer = BPETrainer(text, split="gpt2", tie="lowest", byte_order=order)
    trainer.train(merges)
    vocab = trainer.trace(merges).vocab
    return [(vocab[a], vocab[b]) for a, b in (m.pair for m in trainer.merges)]


def step_times(text: str, merges: int, split: str) -> list[tuple[float, float]]:
    """(wall, CPU) seconds per step of the tab's step handler (all views), 40 steps spread over the merges."""
    from components import bpe as tab
    from models.bpe_cl100k import encode_cl100k
    from models.bpe_granularity import Vocabularies
    trace = train_bpe(text, merges, split=split)
    cl = encode_cl100k(text)
    session = {"trace": trace, "cl_corpus": len(cl.ids), "cl_corpus_bpt": trace.n_bytes / len(cl.ids),
               "vocabularies": Vocabularies.of(text)}
    m = len(trace.merges)
    tab.show_step(session, 1, tab.DEFAULT_TEXT, tab.DEFAULT_WORD)               # imports, caches
    times = []
    for k in [round(i * m / 39) for i in range(40)]:
        start, cpu = time.perf_counter(), time.process_time()
        tab.show_step(session, k, tab.DEFAULT_TEXT, tab.DEFAULT_WORD)
        times.append((time.perf_counter() - start, time.process_time() - cpu))
    return times


def tiktoken_cl100k():
    """tiktoken's cl100k_base with its download cache pre-filled from the shipped file (no network)."""
    import tiktoken
    from models.bpe_cl100k import cl100k_path
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    cache = Path(tempfile.mkdtemp(prefix="tiktoken-cache-"))
    shutil.copy(cl100k_path(), cache / hashlib.sha1(url.encode()).hexdigest())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return tiktoken.get_encoding("cl100k_base")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 KB, 100 merges, 1 repeat, no 1 MB row")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    size, merges, repeats = (20_000, 100, 1) if args.quick else (100_000, MERGES, args.repeats)
    text = cut(load_corpus("en"), size)
    rows = []

    def row(what, ours_s, ref_name, ref_s, note=""):
        rows.append(f"| {what} | {ours_s * 1e3:,.0f} ms | {ref_name} {ref_s * 1e3:,.0f} ms | "
                    f"{ref_s / ours_s:.2f}× | {note} |")

    a, b, ours, naive = side_by_side(lambda: train_bpe(text, merges, split="none"),
                                     lambda: naive_train(text, merges)[0], repeats)
    assert [(m.pair, m.new_id, m.count) for m in ours.merges] == naive, "naive and incremental merges differ"
    row(f"train {len(text.encode()):,} B, {merges} merges, split none", a, "naive full rescan (minbpe Basic)", b,
        "same merges ✓")

    sizes = [(f"{size // 1000} KB", text)] + ([] if args.quick else [("1 MB", one_megabyte())])
    for name, sample in sizes:
        a, b, ours_m, hf_m = side_by_side(lambda: ours_like_hf(sample, merges), lambda: hf_train(sample, merges),
                                          repeats)
        same = "same merges ✓" if ours_m == hf_m else "merges DIFFER"
        row(f"train {name} ({len(sample.encode()):,} B), {merges} merges, GPT-2 split", a,
            "HF tokenizers (Rust)", b, same)

    for split in ("gpt2", "none"):
        times = step_times(text, merges, split)
        wall, cpu = statistics.median(t for t, _ in times), statistics.median(c for _, c in times)
        rows.append(f"| step of the tab (all views), {len(text.encode()):,} B, split {split} | median {wall * 1e3:.1f} ms "
                    f"(CPU {cpu * 1e3:.1f} ms), worst {max(t for t, _ in times) * 1e3:.1f} ms | target 50 ms | "
                    f"{0.050 / wall:.1f}× under | 40 steps |")

    from models.bpe_cl100k import encode_cl100k, load_cl100k
    load_ms = load_cl100k().load_ms                             # read, hashed and parsed at its first use
    enc = tiktoken_cl100k()
    a, b, ours_ids, theirs = side_by_side(lambda: encode_cl100k(text).ids, lambda: enc.encode(text), repeats)
    row(f"GPT-4 cl100k encode {len(text.encode()):,} B (ranks parsed once: {load_ms:.0f} ms)", a,
        "tiktoken encode (Rust)", b, "same ids ✓" if ours_ids == theirs else "ids DIFFER")

    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPU cores, repeats {repeats} (medians)\n")
    print("| what | ours | reference, same run | reference / ours | check |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
