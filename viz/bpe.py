"""Pictures of the tokenizer tab: coloured tokens, the merge card, competing pairs, curves, GPT-4.

Tokens are drawn as HTML spans (one colour per position, cycling, so neighbours always differ;
the token made by the current merge is outlined); figures are plain dicts through
:func:`viz.common.figure`. Everything here takes lists, bytes and numbers, never a trace.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go

from viz.common import ALLOWED_COLOR, axis_ref, base_layout, figure, finite, subplot_row, tr

TOKEN_COLORS = ("#fde68a", "#bbf7d0", "#bfdbfe", "#fbcfe8", "#ddd6fe", "#fed7aa", "#a5f3fc")
TIE_COLOR = "#f59e0b"        # amber: tied with the winner
OTHER_COLOR = "#cbd5e1"      # slate: lost on count
CL100K_COLOR = "#10b981"     # green: GPT-4
# Control characters drawn as their Unicode "control pictures" (U+2400…), so none is invisible.
VISIBLE = {**{chr(c): chr(0x2400 + c) for c in range(32) if chr(c) not in "\n\t"}, "\x7f": "␡",
           "\t": "⇥\t", "\n": "↵\n"}
STYLE = """<style>
.bpe-tokens{font-family:ui-monospace,'WenQuanYi Micro Hei',monospace;font-size:13px;line-height:1.9;
 white-space:pre-wrap;overflow-wrap:anywhere;max-height:420px;overflow-y:auto;padding:8px;
 border:1px solid #e5e7eb;border-radius:8px;background:#fff;color:#111827}
.bpe-tokens span{border-radius:3px;padding:1px 0}
.bpe-tokens .bpe-new{box-shadow:inset 0 -3px 0 #4f46e5;font-weight:700;color:#312e81}
.bpe-tokens .bpe-byte{font-size:11px;color:#7c2d12}
.bpe-note{font-size:12px;color:#6b7280;margin:4px 0}
</style>"""

TEXT = {
    "en": {
        "shown": "First {shown:,} of {total:,} tokens drawn (the counts cover the whole text). "
                 "Hover a token for its id and bytes; <b>underlined</b>: the token this merge made; "
                 "<span class='bpe-byte'>\\xe9</span>: a byte of a character cut in two.",
        "all_shown": "{total:,} tokens. Hover a token for its id and bytes; <b>underlined</b>: the token "
                     "this merge made; <span class='bpe-byte'>\\xe9</span>: a byte of a character cut in two.",
        "empty": "(no text)",
        "bytes": "bytes",
        "part_of": "bytes of {chars}",
        "step0": "### Step 0: raw bytes\nThe text is **{tokens:,} tokens**, one per UTF-8 byte "
                 "(vocabulary: the 256 byte values). Press ▶ or move the slider to see the merges.",
        "merge": "### Merge {k:,} of {m:,}\n{left} + {right} → **token {new}** {text}\n\n"
                 "- count of the pair: **{count:,}**{overlap}\n"
                 "- tokens in the text: {before:,} → **{after:,}** ({bpt:.2f} bytes per token)\n"
                 "- vocabulary: 256 bytes + {k:,} merges = **{vocab:,}** tokens\n- {tie}",
        "overlap": " (merged {replaced:,} times: overlapping occurrences, as in `aaa`, merge once)",
        "no_tie": "no tie: this pair's count was the highest on its own",
        "tie": "**tie**: {tied:,} pairs had count {count:,}; the rule ({rule}) chose this one",
        "rule_first": "the pair that occurs first in the text wins",
        "rule_lowest": "the pair with the lowest (left id, right id) wins",
        "competitors": "Pairs competing at merge {k:,}",
        "count": "count",
        "chosen": "chosen",
        "tied": "tied with it",
        "lost": "lower count",
        "curves_tokens": "Tokens in the training text",
        "curves_bpt": "Bytes per token (compression)",
        "vocab_size": "vocabulary size (256 + merges)",
        "now": "step {k:,}",
        "cl100k_line": "GPT-4 cl100k: {bpt:.2f}",
        "stopped": "⚠️ Training stopped after {got:,} of {asked:,} merges: {reason}.",
        "trained": "Trained **{got:,} merges** on {bytes:,} bytes ({split}, tie rule: {rule}) in {ms:,.1f} ms.",
        "nul": " The text holds {n:,} NUL character(s), drawn as ␀: byte-level BPE treats byte 0 like any other.",
        "encode_summary": "**{tokens:,} tokens** for {chars:,} characters = {bytes:,} bytes "
                          "({bpt:.2f} bytes per token) with the first {k:,} merges. Ids: `{ids}`",
        "ascii_only": "Every character here is one byte (ASCII), so each starts as its own token.",
        "char": "character", "code": "code point", "utf8": "UTF-8 bytes", "now_tokens": "tokens now (step {k:,})",
        "joined": "one token from", "merge_n": "merge {n:,}", "never": "never in {m:,} merges",
        "compare_title": "Bytes per token: your tokenizer and GPT-4's (tokens on the bars)",
        "bpt_axis": "bytes / token",
        "training_text": "training text", "your_text": "your text",
        "ours_k": "yours, step {k:,} ({v:,} tokens)", "ours_all": "yours, all {m:,} merges ({v:,} tokens)",
        "cl100k": "GPT-4 cl100k_base (100,277 tokens)",
        "sha_ok": "GPT-4's `cl100k_base` read offline from `{path}`: SHA-256 `{sha}` ✓ equals the hash "
                  "tiktoken expects. {ranks:,} merge ranks, parsed in {ms:.0f} ms (once per server).",
        "cmp_row": "| {what} | {ours_k:,} | {ours_all:,} | {cl:,} |",
        "cmp_head": "| tokens | yours, step {k:,} | yours, all merges | GPT-4 cl100k |\n|---|---:|---:|---:|",
        "replay_title": "{word}, merge by merge (lowest rank first)",
        "replay_ours": "yours ({n} merges)", "replay_cl100k": "GPT-4 ({n} merges)",
        "replay_empty": "Type a word to replay.",
        "replay_start": "UTF-8 bytes", "replay_ours_row": "merge {n:,}", "replay_cl100k_row": "rank {n:,}",
        "h_merge": "merge", "h_id": "id", "h_token": "token", "h_left": "left", "h_right": "right",
        "h_count": "count", "h_tied": "pairs tied",
        "replay_long": "(only the first {n} bytes are replayed)",
    },
    "zh-CN": {
        "shown": "只画出前 {shown:,} 个词元，共 {total:,} 个（计数覆盖全文）。"
                 "把鼠标移到词元上可看到它的 id 和字节；<b>下划线</b>：这次合并产生的词元；"
                 "<span class='bpe-byte'>\\xe9</span>：被切开的字符的一个字节。",
        "all_shown": "共 {total:,} 个词元。把鼠标移到词元上可看到它的 id 和字节；<b>下划线</b>：这次合并产生的词元；"
                     "<span class='bpe-byte'>\\xe9</span>：被切开的字符的一个字节。",
        "empty": "（没有文本）",
        "bytes": "字节",
        "part_of": "属于 {chars} 的字节",
        "step0": "### 第 0 步：原始字节\n文本共 **{tokens:,} 个词元**，每个 UTF-8 字节一个"
                 "（词表：256 个字节值）。按 ▶ 或拖动滑块查看每次合并。",
        "merge": "### 第 {k:,} 次合并（共 {m:,} 次）\n{left} + {right} → **词元 {new}** {text}\n\n"
                 "- 这个字节对的出现次数：**{count:,}**{overlap}\n"
                 "- 文本中的词元数：{before:,} → **{after:,}**（每个词元 {bpt:.2f} 字节）\n"
                 "- 词表：256 个字节 + {k:,} 次合并 = **{vocab:,}** 个词元\n- {tie}",
        "overlap": "（实际合并 {replaced:,} 处：重叠的出现，例如 `aaa`，只合并一次）",
        "no_tie": "没有并列：这个字节对的次数独占最高",
        "tie": "**并列**：有 {tied:,} 个字节对的次数都是 {count:,}；规则（{rule}）选中了这一个",
        "rule_first": "在文本中最先出现的字节对胜出",
        "rule_lowest": "（左 id，右 id）最小的字节对胜出",
        "competitors": "第 {k:,} 次合并时相互竞争的字节对",
        "count": "次数",
        "chosen": "被选中",
        "tied": "与之并列",
        "lost": "次数较少",
        "curves_tokens": "训练文本中的词元数",
        "curves_bpt": "每个词元的字节数（压缩率）",
        "vocab_size": "词表大小（256 + 合并次数）",
        "now": "第 {k:,} 步",
        "cl100k_line": "GPT-4 cl100k：{bpt:.2f}",
        "stopped": "⚠️ 训练在 {got:,} 次合并后停止（要求 {asked:,} 次）：{reason}。",
        "trained": "在 {bytes:,} 字节上训练了 **{got:,} 次合并**（{split}，并列规则：{rule}），用时 {ms:,.1f} 毫秒。",
        "nul": " 文本中有 {n:,} 个 NUL 字符，显示为 ␀：字节级 BPE 把字节 0 当作普通字节处理。",
        "encode_summary": "用前 {k:,} 次合并：{chars:,} 个字符 = {bytes:,} 字节 → **{tokens:,} 个词元**"
                          "（每个词元 {bpt:.2f} 字节）。id：`{ids}`",
        "ascii_only": "这里每个字符都是一个字节（ASCII），所以一开始各自就是一个词元。",
        "char": "字符", "code": "码位", "utf8": "UTF-8 字节", "now_tokens": "当前的词元（第 {k:,} 步）",
        "joined": "合成一个词元于", "merge_n": "第 {n:,} 次合并", "never": "{m:,} 次合并内从未合成",
        "compare_title": "每个词元的字节数：你的分词器与 GPT-4 的（柱上为词元数）",
        "bpt_axis": "字节 / 词元",
        "training_text": "训练文本", "your_text": "你的文本",
        "ours_k": "你的，第 {k:,} 步（{v:,} 个词元）", "ours_all": "你的，全部 {m:,} 次合并（{v:,} 个词元）",
        "cl100k": "GPT-4 cl100k_base（100,277 个词元）",
        "sha_ok": "GPT-4 的 `cl100k_base` 离线读取自 `{path}`：SHA-256 `{sha}` ✓ 与 tiktoken 期望的哈希一致。"
                  "共 {ranks:,} 个合并排名，解析用时 {ms:.0f} 毫秒（每个服务器进程一次）。",
        "cmp_row": "| {what} | {ours_k:,} | {ours_all:,} | {cl:,} |",
        "cmp_head": "| 词元数 | 你的，第 {k:,} 步 | 你的，全部合并 | GPT-4 cl100k |\n|---|---:|---:|---:|",
        "replay_title": "{word} 的逐次合并（排名最低者先合并）",
        "replay_ours": "你的（{n} 次合并）", "replay_cl100k": "GPT-4（{n} 次合并）",
        "replay_empty": "输入一个词来重放。",
        "replay_start": "UTF-8 字节", "replay_ours_row": "第 {n:,} 次合并", "replay_cl100k_row": "排名 {n:,}",
        "h_merge": "合并", "h_id": "id", "h_token": "词元", "h_left": "左", "h_right": "右",
        "h_count": "次数", "h_tied": "并列的字节对数",
        "replay_long": "（只重放前 {n} 个字节）",
    },
}


# ----------------------------------------------------------------------------- token text
def visible(text: str) -> str:
    """Text with control characters made visible (newline -> ↵ then a real line break).

    >>> visible("a\\tb\\n\\x00")
    'a⇥\\tb↵\\n␀'
    """
    return "".join(VISIBLE.get(c, c) for c in text)


def token_html(token: bytes) -> str:
    """A token's text as HTML: UTF-8 where valid, ``\\xNN`` (styled) for a cut character's bytes.

    >>> token_html("露".encode()[:2] + b"<")
    "<span class='bpe-byte'>\\\\xe9</span><span class='bpe-byte'>\\\\x9c</span>&lt;"
    """
    out, rest = [], token
    while rest:
        try:
            out.append(html.escape(visible(rest.decode("utf-8"))))
            break
        except UnicodeDecodeError as exc:
            if exc.start:
                out.append(html.escape(visible(rest[:exc.start].decode("utf-8"))))
            out += [f"<span class='bpe-byte'>\\x{b:02x}</span>" for b in rest[exc.start:exc.end]]
            rest = rest[exc.end:]
    return "".join(out)


def token_label(token: bytes) -> str:
    """A short quoted label for a token in Markdown or an axis: ``'th'``, ``'\\xe9'``, ``'␣the'``.

    >>> token_label(b" the"), token_label("露".encode())
    ("'␣the'", "'露'")
    """
    text = visible(token.decode("utf-8", errors="backslashreplace")).replace(" ", "␣").replace("\n", "")
    return f"'{text}'"


def char_of_byte(data: bytes) -> list[str | None]:
    """For every byte of ``data``, the UTF-8 character it belongs to (``None`` for a broken sequence).

    >>> char_of_byte("a露".encode())
    ['a', '露', '露', '露']
    """
    out: list[str | None] = []
    i = 0
    while i < len(data):
        lead = data[i]
        size = 1 if lead < 0x80 else 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4 if lead >> 3 == 0b11110 else 1
        try:
            char = data[i:i + size].decode("utf-8")
        except UnicodeDecodeError:
            char, size = None, 1
        out += [char] * size
        i += size
    return out[:len(data)]


def tokens_html(tokens: list[tuple[int, bytes]], total: int, lang: str = "en", *,
                highlight: int | None = None) -> str:
    """The tokens as coloured spans (title = id, bytes, and the character a cut token belongs to),
    and a note on how many are drawn."""
    spans, chars, at = [], None, 0
    for i, (tid, token) in enumerate(tokens):
        cls = " class='bpe-new'" if tid == highlight else ""
        title = f"id {tid} · {len(token)} {tr(TEXT, 'bytes', lang)} · {token.hex(' ')}"
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:                         # a piece of a character: say which
            chars = chars or char_of_byte(b"".join(token for _, token in tokens))
            cut = dict.fromkeys(c for c in chars[at:at + len(token)] if c and len(c.encode("utf-8")) > 1)
            if cut:
                title += " · " + tr(TEXT, "part_of", lang).format(chars=" ".join(html.escape(c) for c in cut))
        at += len(token)
        spans.append(f"<span{cls} style='background:{TOKEN_COLORS[i % len(TOKEN_COLORS)]}' "
                     f"title='{title}'>{token_html(token)}</span>")
    note = (tr(TEXT, "shown", lang).format(shown=len(tokens), total=total) if len(tokens) < total
            else tr(TEXT, "all_shown", lang).format(total=total))
    body = "".join(spans) or html.escape(tr(TEXT, "empty", lang))
    return f"{STYLE}<div class='bpe-note'>{note}</div><div class='bpe-tokens'>{body}</div>"


# ----------------------------------------------------------------------------- the merge card
def merge_card(k: int, m: int, tokens: list[int], *, left: bytes = b"", right: bytes = b"",
               left_id: int = 0, right_id: int = 0, new_id: int = 0, count: int = 0, replaced: int = 0,
               tied: int = 1, rule: str = "first", lang: str = "en") -> str:
    """Markdown for step ``k``: the pair merged, its count, the tokens before and after, any tie."""
    if k == 0:
        return tr(TEXT, "step0", lang).format(tokens=tokens[0])
    tie = (tr(TEXT, "no_tie", lang) if tied <= 1 else
           tr(TEXT, "tie", lang).format(tied=tied, count=count, rule=tr(TEXT, f"rule_{rule}", lang)))
    overlap = tr(TEXT, "overlap", lang).format(replaced=replaced) if replaced != count else ""
    return tr(TEXT, "merge", lang).format(
        k=k, m=m, left=f"`{token_label(left)}` ({left_id})", right=f"`{token_label(right)}` ({right_id})",
        new=new_id, text=f"`{token_label(left + right)}` = `{(left + right).hex(' ')}`", count=count,
        overlap=overlap, before=tokens[k - 1], after=tokens[k], bpt=tokens[0] / tokens[k], vocab=256 + k,
        tie=tie)


# ----------------------------------------------------------------------------- figures
def competitors_figure(k: int, pairs: list[tuple[str, int]], tied: int, lang: str = "en") -> go.Figure:
    """Horizontal bars of the best pairs at merge ``k`` (winner on top): chosen, tied, lower."""
    if not pairs:
        return figure([], base_layout(height=260, title=tr(TEXT, "competitors", lang).format(k=k)))
    best = pairs[0][1]
    kinds = ["chosen" if i == 0 else "tied" if c == best else "lost" for i, (_, c) in enumerate(pairs)]
    colors = {"chosen": ALLOWED_COLOR, "tied": TIE_COLOR, "lost": OTHER_COLOR}
    labels = [f"{i + 1}. {label}" for i, (label, _) in enumerate(pairs)]
    data = [{"type": "bar", "orientation": "h", "y": [lab for lab, kd in zip(labels, kinds) if kd == kind],
             "x": [c for (_, c), kd in zip(pairs, kinds) if kd == kind], "name": tr(TEXT, kind, lang),
             "marker": {"color": colors[kind]}, "texttemplate": "%{x:,}", "textposition": "outside",
             "cliponaxis": False, "textfont": {"size": 11}, "hovertemplate": "%{y}: %{x:,}<extra></extra>"}
            for kind in ("chosen", "tied", "lost") if kind in kinds]
    title = tr(TEXT, "competitors", lang).format(k=k)
    layout = base_layout(height=max(260, 70 + 26 * len(pairs)), title=title) | {
        "yaxis": {"categoryorder": "array", "categoryarray": labels[::-1], "automargin": True,
                  "tickfont": {"family": "ui-monospace, 'WenQuanYi Micro Hei', monospace"}},
        "xaxis": {"title": {"text": tr(TEXT, "count", lang)}, "range": [0, best * 1.18]},
        "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        "barmode": "overlay", "bargap": 0.25}
    return figure(data, layout)


def curves_figure(tokens: list[int], k: int, cl100k_bpt: float | None = None, lang: str = "en") -> go.Figure:
    """Tokens in the text and bytes per token against vocabulary size, a marker at step ``k``."""
    vocab = list(range(256, 256 + len(tokens)))
    bpt = finite([tokens[0] / t for t in tokens])
    marker = {"color": "#dc2626", "size": 10}
    data = [
        {"type": "scatter", "mode": "lines", "x": vocab, "y": tokens, "line": {"color": ALLOWED_COLOR},
         "hovertemplate": "%{x:,}: %{y:,}<extra></extra>", "showlegend": False, **axis_ref(0)},
        {"type": "scatter", "mode": "markers", "x": [256 + k], "y": [tokens[k]], "marker": marker,
         "name": tr(TEXT, "now", lang).format(k=k), "hovertemplate": "%{x:,}: %{y:,}<extra></extra>",
         "showlegend": False, **axis_ref(0)},
        {"type": "scatter", "mode": "lines", "x": vocab, "y": bpt, "line": {"color": ALLOWED_COLOR},
         "hovertemplate": "%{x:,}: %{y:.3f}<extra></extra>", "showlegend": False, **axis_ref(1)},
        {"type": "scatter", "mode": "markers", "x": [256 + k], "y": [bpt[k]], "marker": marker,
         "hovertemplate": "%{x:,}: %{y:.3f}<extra></extra>", "showlegend": False, **axis_ref(1)},
    ]
    layout = subplot_row([tr(TEXT, "curves_tokens", lang), tr(TEXT, "curves_bpt", lang)], spacing=0.1)
    for suffix in ("", "2"):
        layout[f"xaxis{suffix}"]["title"] = {"text": tr(TEXT, "vocab_size", lang)}
        layout[f"xaxis{suffix}"]["gridcolor"] = layout[f"yaxis{suffix}"]["gridcolor"] = "#eef2f7"
    layout["yaxis"]["rangemode"] = "tozero"
    if cl100k_bpt:
        layout["shapes"] = [{"type": "line", "xref": "x2 domain", "x0": 0, "x1": 1, "yref": "y2",
                             "y0": cl100k_bpt, "y1": cl100k_bpt, "line": {"color": CL100K_COLOR, "dash": "dash"}}]
        layout["annotations"].append({"text": tr(TEXT, "cl100k_line", lang).format(bpt=cl100k_bpt),
                                      "xref": "x2 domain", "x": 0.02, "xanchor": "left", "yref": "y2",
                                      "y": cl100k_bpt, "yanchor": "bottom", "showarrow": False,
                                      "font": {"color": CL100K_COLOR}})
        layout["yaxis2"]["range"] = [0, max(max(b for b in bpt if b), cl100k_bpt) * 1.12]
    return figure(data, layout | base_layout(height=330))


def compare_figure(k: int, m: int, rows: list[tuple[str, int, int, int, int]], lang: str = "en") -> go.Figure:
    """Grouped bars of bytes per token; ``rows`` = (what, bytes, ours at k, ours at m, cl100k)."""
    names = [tr(TEXT, what, lang) for what, *_ in rows]
    series = [("ours_k", 2, "#a5b4fc"), ("ours_all", 3, ALLOWED_COLOR), ("cl100k", 4, CL100K_COLOR)]
    data = []
    for key, col, color in series:
        counts = [row[col] for row in rows]
        data.append({"type": "bar", "x": names, "y": finite([row[1] / max(row[col], 1) for row in rows]),
                     "text": [f"{c:,}" for c in counts], "textposition": "outside", "cliponaxis": False,
                     "marker": {"color": color},
                     "name": tr(TEXT, key, lang).format(k=k, m=m, v=256 + (k if key == "ours_k" else m)),
                     "hovertemplate": "%{x}: %{y:.2f} B/token, %{text} tokens<extra></extra>"})
    top = max([v for trace in data for v in trace["y"] if v is not None] or [1.0])
    layout = base_layout(height=340, title=tr(TEXT, "compare_title", lang)) | {
        "barmode": "group", "yaxis": {"range": [0, top * 1.22], "title": {"text": tr(TEXT, "bpt_axis", lang)}},
        "legend": {"orientation": "h", "y": -0.15}}
    return figure(data, layout)


# ----------------------------------------------------------------------------- markdown
def training_summary(got: int, asked: int, n_bytes: int, split: str, rule: str, ms: float,
                     reason: str | None, nul: int, lang: str = "en") -> str:
    text = tr(TEXT, "trained", lang).format(got=got, bytes=n_bytes, split=split, rule=tr(TEXT, f"rule_{rule}", lang),
                                            ms=ms)
    if nul:
        text += tr(TEXT, "nul", lang).format(n=nul)
    if reason:
        text += "\n\n" + tr(TEXT, "stopped", lang).format(got=got, asked=asked, reason=reason)
    return text


def encode_summary(ids: list[int], text: str, k: int, lang: str = "en", max_ids: int = 200) -> str:
    n_bytes = len(text.encode("utf-8"))
    shown = ", ".join(map(str, ids[:max_ids])) + (", …" if len(ids) > max_ids else "")
    return tr(TEXT, "encode_summary", lang).format(tokens=len(ids), chars=len(text), bytes=n_bytes,
                                                  bpt=n_bytes / max(len(ids), 1), k=k, ids=shown)


def char_table(rows: list[tuple[str, bytes, int | None, list[bytes]]], k: int, m: int, lang: str = "en") -> str:
    """Markdown: each multi-byte character, its bytes, its tokens at step ``k``, when it became one token."""
    if not rows:
        return tr(TEXT, "ascii_only", lang)
    head = (f"| {tr(TEXT, 'char', lang)} | {tr(TEXT, 'code', lang)} | {tr(TEXT, 'utf8', lang)} | "
            f"{tr(TEXT, 'now_tokens', lang).format(k=k)} | {tr(TEXT, 'joined', lang)} |\n|---|---|---|---|---|")
    lines = [head]
    for char, raw, joined, now in rows:
        when = tr(TEXT, "never", lang).format(m=m) if joined is None else tr(TEXT, "merge_n", lang).format(n=joined)
        if joined is not None and joined <= k:
            when = f"**{when}** ✓"
        parts = " ".join(f"`{token_label(t)}`" for t in now)
        lines.append(f"| {html.escape(visible(char))} | U+{ord(char):04X} | `{raw.hex(' ')}` | {parts} | {when} |")
    return "\n".join(lines)


def compare_markdown(sha_line: str, k: int, rows: list[tuple[str, int, int, int, int]], lang: str = "en") -> str:
    body = [tr(TEXT, "cmp_head", lang).format(k=k)]
    for what, _, ours_k, ours_all, cl in rows:
        body.append(tr(TEXT, "cmp_row", lang).format(what=tr(TEXT, what, lang), ours_k=ours_k,
                                                      ours_all=ours_all, cl=cl))
    return sha_line + "\n\n" + "\n".join(body)


def sha_line(path: str, sha: str, ranks: int, ms: float, lang: str = "en") -> str:
    return tr(TEXT, "sha_ok", lang).format(path=path, sha=sha, ranks=ranks, ms=ms)


def replay_html(word: str, ours: list[tuple[list[bytes], str]], cl100k: list[tuple[list[bytes], str]],
                truncated: int | None, lang: str = "en") -> str:
    """Two columns: the word's parts after each merge, ours and GPT-4's; each row = (parts, label of the
    merge that made it); the part a row's merge made is underlined."""
    if not word:
        return f"<div class='bpe-note'>{html.escape(tr(TEXT, 'replay_empty', lang))}</div>"

    def column(title: str, history: list[tuple[list[bytes], str]]) -> str:
        rows, before = [], None
        for parts, label in history:
            made = next((i for i, (x, y) in enumerate(zip(parts, before)) if x != y), len(parts) - 1) \
                if before is not None else -1
            new = " class='bpe-new'"
            spans = "".join(f"<span{new if i == made else ''} "
                            f"style='background:{TOKEN_COLORS[i % len(TOKEN_COLORS)]}'>{token_html(p)}</span>"
                            for i, p in enumerate(parts))
            rows.append(f"<div>{spans} <span class='bpe-note'>{html.escape(label)}</span></div>")
            before = parts
        return (f"<div style='flex:1;min-width:220px'><div class='bpe-note'><b>{html.escape(title)}</b></div>"
                f"<div class='bpe-tokens' style='max-height:300px'>{''.join(rows)}</div></div>")

    title = tr(TEXT, "replay_title", lang).format(word=f"<b>{html.escape(visible(word))}</b>")
    note = f" {tr(TEXT, 'replay_long', lang).format(n=truncated)}" if truncated else ""
    return (f"{STYLE}<div class='bpe-note'>{title}{note}</div>"
            f"<div style='display:flex;gap:12px;flex-wrap:wrap'>"
            f"{column(tr(TEXT, 'replay_ours', lang).format(n=len(ours) - 1), ours)}"
            f"{column(tr(TEXT, 'replay_cl100k', lang).format(n=len(cl100k) - 1), cl100k)}</div>")


def replay_label(kind: str, number: int | None, lang: str = "en") -> str:
    """The label of a replay row: the bytes, our merge number, or GPT-4's rank."""
    return tr(TEXT, "replay_start" if number is None else f"replay_{kind}_row", lang).format(n=number)


def merges_table(rows: list[tuple[int, bytes, bytes, int, int, int, int]], lang: str = "en"
                 ) -> tuple[list[str], list[list]]:
    """Headers and rows of the merges table; ``rows`` = (new id, left bytes, right bytes, left id,
    right id, count, pairs tied)."""
    headers = [tr(TEXT, f"h_{key}", lang) for key in ("merge", "id", "token", "left", "right", "count", "tied")]
    data = [[k + 1, new, token_label(left + right), f"{token_label(left)} ({a})", f"{token_label(right)} ({b})",
             count, tied] for k, (new, left, right, a, b, count, tied) in enumerate(rows)]
    return headers, data


def merges_html(headers: list[str], data: list[list]) -> str:
    """The merges table as HTML in a scrolling box, header fixed.

    One string, not a Dataframe: the server keeps every output of every visitor's session, and
    5,000 rows as lists are 5,000 objects that each garbage collection walks; a string is none.

    >>> merges_html(["merge", "id"], [[1, "<s>"]])
    '<div class="bpe-table" ...<tr><td>1</td><td>&lt;s&gt;</td></tr></tbody></table></div>'
    """
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in data)
    return (f'<div class="bpe-table" style="max-height:360px;overflow:auto"><table>'
            f'<thead style="position:sticky;top:0;background:var(--background-fill-primary)"><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")
