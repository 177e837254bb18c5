"""Pictures of the tokenizer tab: coloured tokens, the merge card, competing pairs, curves, GPT-4.

Tokens are drawn as HTML spans (one colour per position, cycling, so neighbours always differ;
the token made by the current merge is outlined); figures are plain dicts through
:func:`viz.common.plain_figure`. Everything here takes lists, bytes and numbers, never a trace.
"""
from __future__ import annotations

import html

from locales import tr
from viz.common import ALLOWED_COLOR, PlainFigure, axis_ref, base_layout, finite, plain_figure, label_margin, subplot_row

TOKEN_COLORS = ("#fde68a", "#bbf7d0", "#bfdbfe", "#fbcfe8", "#ddd6fe", "#fed7aa", "#a5f3fc")
TIE_COLOR = "#f59e0b"        # amber: tied with the winner
OTHER_COLOR = "#cbd5e1"      # slate: lost on count
CL100K_COLOR = "#10b981"     # green: GPT-4
# Control characters drawn as their Unicode "control pictures" (U+2400…), so none is invisible.
VISIBLE = {**{chr(c): chr(0x2400 + c) for c in range(32) if chr(c) not in "\n\t"}, "\x7f": "␡",
           "\t": "⇥\t", "\n": "↵\n"}
# A byte's escape (.bpe-byte) is nowrap: a line breaks between escapes, never inside one ("\xe" | "8").
STYLE = """<style>
.bpe-tokens{font-family:ui-monospace,'WenQuanYi Micro Hei',monospace;font-size:13px;line-height:1.9;
 white-space:pre-wrap;overflow-wrap:anywhere;max-height:420px;overflow-y:auto;padding:8px;
 border:1px solid #e5e7eb;border-radius:8px;background:#fff;color:#111827}
.bpe-tokens span{border-radius:3px;padding:1px 0}
.bpe-tokens .bpe-new{box-shadow:inset 0 -3px 0 #4f46e5;font-weight:700;color:#312e81}
.bpe-tokens .bpe-byte{font-size:11px;color:#7c2d12;white-space:nowrap}
.bpe-note{font-size:12px;color:#6b7280;margin:4px 0}
</style>"""

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
    spans, chars, at, sizes = [], None, 0, {}
    for i, (tid, token) in enumerate(tokens):
        cls = " class='bpe-new'" if tid == highlight else ""
        if len(token) not in sizes:                        # "1 byte", "3 bytes": one translation per length
            sizes[len(token)] = tr(lang, "bpe_fig_bytes", n=len(token))
        title = f"id {tid} · {sizes[len(token)]} · {token.hex(' ')}"
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:                         # a piece of a character: say which
            chars = chars or char_of_byte(b"".join(token for _, token in tokens))
            cut = dict.fromkeys(c for c in chars[at:at + len(token)] if c and len(c.encode("utf-8")) > 1)
            if cut:
                title += " · " + tr(lang, "bpe_fig_part_of", chars=" ".join(html.escape(c) for c in cut))
        at += len(token)
        spans.append(f"<span{cls} style='background:{TOKEN_COLORS[i % len(TOKEN_COLORS)]}' "
                     f"title='{title}'>{token_html(token)}</span>")
    note = (tr(lang, "bpe_fig_shown", shown=len(tokens), total=total) if len(tokens) < total
            else tr(lang, "bpe_fig_all_shown", total=total))
    body = "".join(spans) or html.escape(tr(lang, "bpe_fig_empty"))
    return f"{STYLE}<div class='bpe-note'>{note}</div><div class='bpe-tokens'>{body}</div>"


# ----------------------------------------------------------------------------- the merge card
def merge_card(k: int, m: int, tokens: list[int], *, left: bytes = b"", right: bytes = b"",
               left_id: int = 0, right_id: int = 0, new_id: int = 0, count: int = 0, replaced: int = 0,
               tied: int = 1, rule: str = "first", lang: str = "en") -> str:
    """Markdown for step ``k``: the pair merged, its count, the tokens before and after, any tie."""
    if k == 0:
        return tr(lang, "bpe_fig_step0", tokens=tokens[0])
    tie = (tr(lang, "bpe_fig_no_tie") if tied <= 1 else
           tr(lang, "bpe_fig_tie", tied=tied, count=count, rule=tr(lang, f"bpe_fig_rule_{rule}")))
    overlap = tr(lang, "bpe_fig_overlap", replaced=replaced) if replaced != count else ""
    return tr(lang, "bpe_fig_merge", k=k, m=m, left=f"`{token_label(left)}` ({left_id})",
              right=f"`{token_label(right)}` ({right_id})", new=new_id,
              text=f"`{token_label(left + right)}` = `{(left + right).hex(' ')}`", count=count, overlap=overlap,
              before=tokens[k - 1], after=tokens[k], bpt=tokens[0] / tokens[k], vocab=256 + k, tie=tie)


# ----------------------------------------------------------------------------- figures
def competitors_figure(k: int, pairs: list[tuple[str, int]], tied: int, lang: str = "en") -> PlainFigure:
    """Horizontal bars of the best pairs at merge ``k`` (winner on top): chosen, tied, lower."""
    if not pairs:
        return plain_figure([], base_layout(height=260, title=tr(lang, "bpe_fig_competitors", k=k)))
    best = pairs[0][1]
    kinds = ["chosen" if i == 0 else "tied" if c == best else "lost" for i, (_, c) in enumerate(pairs)]
    colors = {"chosen": ALLOWED_COLOR, "tied": TIE_COLOR, "lost": OTHER_COLOR}
    labels = [f"{i + 1}. {label}" for i, (label, _) in enumerate(pairs)]
    data = [{"type": "bar", "orientation": "h", "y": [lab for lab, kd in zip(labels, kinds) if kd == kind],
             "x": [c for (_, c), kd in zip(pairs, kinds) if kd == kind], "name": tr(lang, "bpe_fig_" + kind),
             "marker": {"color": colors[kind]}, "texttemplate": "%{x:,}", "textposition": "outside",
             "cliponaxis": False, "textfont": {"size": 11}, "hovertemplate": "%{y}: %{x:,}<extra></extra>"}
            for kind in ("chosen", "tied", "lost") if kind in kinds]
    # The colours' key is the title's second line: beside the title a legend covers a long (Chinese) title's
    # end, and below the axis a ~150-px plot (beside the pair labels) stacks it three lines high.
    key = " ".join(f"<span style='color:{colors[kind]}'>■</span> {tr(lang, 'bpe_fig_' + kind)}"
                   for kind in ("chosen", "tied", "lost") if kind in kinds)
    title = tr(lang, "bpe_fig_competitors", k=k) + f"<br><span style='font-size:11px'>{key}</span>"
    # A left margin that holds the pair labels: short of it, Plotly's automargin pushes it and draws the
    # figure twice, on every step of Play.
    margin = {"l": label_margin(labels, mono=True), "t": 104}
    layout = base_layout(height=max(274, 84 + 26 * len(pairs)), title=title, margin=margin) | {
        "yaxis": {"categoryorder": "array", "categoryarray": labels[::-1], "automargin": True,
                  "tickfont": {"family": "ui-monospace, 'WenQuanYi Micro Hei', monospace"}},
        "xaxis": {"title": {"text": tr(lang, "bpe_fig_count")}, "range": [0, best * 1.18]},
        "showlegend": False, "barmode": "overlay", "bargap": 0.25}
    return plain_figure(data, layout)


def curves_figure(tokens: list[int], k: int, cl100k_bpt: float | None = None, lang: str = "en") -> PlainFigure:
    """Tokens in the text and bytes per token against vocabulary size, a marker at step ``k``."""
    vocab = list(range(256, 256 + len(tokens)))
    bpt = finite([tokens[0] / t for t in tokens])
    marker = {"color": "#dc2626", "size": 10}
    data = [
        {"type": "scatter", "mode": "lines", "x": vocab, "y": tokens, "line": {"color": ALLOWED_COLOR},
         "hovertemplate": "%{x:,}: %{y:,}<extra></extra>", "showlegend": False, **axis_ref(0)},
        {"type": "scatter", "mode": "markers", "x": [256 + k], "y": [tokens[k]], "marker": marker,
         "name": tr(lang, "bpe_fig_now", k=k), "hovertemplate": "%{x:,}: %{y:,}<extra></extra>",
         "showlegend": False, **axis_ref(0)},
        {"type": "scatter", "mode": "lines", "x": vocab, "y": bpt, "line": {"color": ALLOWED_COLOR},
         "hovertemplate": "%{x:,}: %{y:.3f}<extra></extra>", "showlegend": False, **axis_ref(1)},
        {"type": "scatter", "mode": "markers", "x": [256 + k], "y": [bpt[k]], "marker": marker,
         "hovertemplate": "%{x:,}: %{y:.3f}<extra></extra>", "showlegend": False, **axis_ref(1)},
    ]
    layout = subplot_row([tr(lang, "bpe_fig_curves_tokens"), tr(lang, "bpe_fig_curves_bpt")], spacing=0.1)
    for suffix in ("", "2"):
        layout[f"xaxis{suffix}"]["title"] = {"text": tr(lang, "bpe_fig_vocab_size")}
        layout[f"xaxis{suffix}"]["gridcolor"] = layout[f"yaxis{suffix}"]["gridcolor"] = "#eef2f7"
    layout["yaxis"]["rangemode"] = "tozero"
    if len(tokens) <= 10:          # a vocabulary size is whole: below ~10 merges Plotly would tick 256.2, 256.4, …
        layout["xaxis"]["dtick"] = layout["xaxis2"]["dtick"] = 1
    if cl100k_bpt:
        layout["shapes"] = [{"type": "line", "xref": "x2 domain", "x0": 0, "x1": 1, "yref": "y2",
                             "y0": cl100k_bpt, "y1": cl100k_bpt, "line": {"color": CL100K_COLOR, "dash": "dash"}}]
        layout["annotations"].append({"text": tr(lang, "bpe_fig_cl100k_line", bpt=cl100k_bpt),
                                      "xref": "x2 domain", "x": 0.02, "xanchor": "left", "yref": "y2",
                                      "y": cl100k_bpt, "yanchor": "bottom", "showarrow": False,
                                      "font": {"color": CL100K_COLOR}})
        layout["yaxis2"]["range"] = [0, max(max(b for b in bpt if b), cl100k_bpt) * 1.12]
    return plain_figure(data, layout | base_layout(height=330))


def compare_figure(k: int, m: int, rows: list[tuple[str, int, int, int, int]], cl100k_ranks: int,
                   lang: str = "en") -> PlainFigure:
    """Grouped bars of bytes per token; ``rows`` = (what, bytes, ours at k, ours at m, cl100k)."""
    vocab = {"ours_k": 256 + k, "ours_all": 256 + m, "cl100k": cl100k_ranks}
    hover = tr(lang, "bpe_fig_bpt_hover", bpt="%{y:.2f}", tokens="%{text}")
    names = [tr(lang, "bpe_fig_" + what) for what, *_ in rows]
    series = [("ours_k", 2, "#a5b4fc"), ("ours_all", 3, ALLOWED_COLOR), ("cl100k", 4, CL100K_COLOR)]
    data = []
    for key, col, color in series:
        counts = [row[col] for row in rows]
        data.append({"type": "bar", "x": names, "y": finite([row[1] / max(row[col], 1) for row in rows]),
                     "text": [f"{c:,}" for c in counts], "textposition": "outside", "cliponaxis": False,
                     "marker": {"color": color},
                     "name": tr(lang, "bpe_fig_" + key, k=k, m=m, v=vocab[key]),
                     "hovertemplate": "%{x}: " + hover + "<extra></extra>"})
    top = max([v for trace in data for v in trace["y"] if v is not None] or [1.0])
    layout = base_layout(height=340, title=tr(lang, "bpe_fig_compare_title"), margin={"b": 72}) | {   # the legend
        "barmode": "group", "yaxis": {"range": [0, top * 1.22], "title": {"text": tr(lang, "bpe_fig_bpt_axis")}},
        "legend": {"orientation": "h", "y": -0.15}}
    return plain_figure(data, layout)


# ----------------------------------------------------------------------------- markdown
def training_summary(got: int, asked: int, n_bytes: int, split: str, rule: str, ms: float,
                     reason: str | None, nul: int, lang: str = "en") -> str:
    """What training did; ``reason``: why it stopped early, a message key of ``locales/bpe.py``."""
    text = tr(lang, "bpe_fig_trained", got=got, bytes=n_bytes, split=tr(lang, f"bpe_fig_split_{split}"),
              rule=tr(lang, f"bpe_fig_rule_{rule}"), ms=ms)
    if nul:
        text += tr(lang, "bpe_fig_nul", n=nul)
    if reason:
        text += "\n\n" + tr(lang, "bpe_fig_stopped", got=got, asked=asked, reason=tr(lang, reason))
    return text


def encode_summary(ids: list[int], text: str, k: int, lang: str = "en", max_ids: int = 200) -> str:
    """Markdown: the token count, bytes per token and ids of ``text`` after ``k`` merges (an empty text
    says so: it has no bytes per token).

    >>> encode_summary([], "", 1)
    'Type some text above to see it encoded.'
    """
    if not ids:
        return tr(lang, "bpe_fig_encode_empty")
    n_bytes = len(text.encode("utf-8"))
    shown = ", ".join(map(str, ids[:max_ids])) + (", …" if len(ids) > max_ids else "")
    return tr(lang, "bpe_fig_encode_summary", tokens=len(ids), chars=len(text), bytes=n_bytes,
              bpt=n_bytes / max(len(ids), 1), k=k, ids=shown)


def char_table(rows: list[tuple[str, bytes, int | None, list[bytes]]], k: int, m: int, lang: str = "en") -> str:
    """Markdown: each multi-byte character, its bytes, its tokens at step ``k``, when it became one token."""
    if not rows:
        return tr(lang, "bpe_fig_ascii_only")
    head = (f"| {tr(lang, 'bpe_fig_char')} | {tr(lang, 'bpe_fig_code')} | {tr(lang, 'bpe_fig_utf8')} | "
            f"{tr(lang, 'bpe_fig_now_tokens', k=k)} | {tr(lang, 'bpe_fig_joined')} |\n|---|---|---|---|---|")
    lines = [head]
    for char, raw, joined, now in rows:
        when = tr(lang, "bpe_fig_never", m=m) if joined is None else tr(lang, "bpe_fig_merge_n", n=joined)
        if joined is not None and joined <= k:
            when = f"**{when}** ✓"
        parts = " ".join(f"`{token_label(t)}`" for t in now)
        lines.append(f"| {html.escape(visible(char))} | U+{ord(char):04X} | `{raw.hex(' ')}` | {parts} | {when} |")
    return "\n".join(lines)


def compare_markdown(sha_line: str, k: int, rows: list[tuple[str, int, int, int, int]], lang: str = "en") -> str:
    body = [tr(lang, "bpe_fig_cmp_head", k=k)]
    for what, _, ours_k, ours_all, cl in rows:
        body.append(tr(lang, "bpe_fig_cmp_row", what=tr(lang, "bpe_fig_" + what), ours_k=ours_k, ours_all=ours_all,
                       cl=cl))
    return sha_line + "\n\n" + "\n".join(body)


def sha_line(path: str, sha: str, ranks: int, single_bytes: int, merges: int, ms: float, lang: str = "en") -> str:
    """Where GPT-4's ranks were read, their hash, and what they hold: single bytes plus merges."""
    return tr(lang, "bpe_fig_sha_ok", path=path, sha=sha, ranks=ranks, bytes=single_bytes, merges=merges, ms=ms)


def replay_html(word: str, ours: list[tuple[list[bytes], str]], cl100k: list[tuple[list[bytes], str]],
                truncated: int | None, lang: str = "en") -> str:
    """Two columns: the word's parts after each merge, ours and GPT-4's; each row = (parts, label of the
    merge that made it); the part a row's merge made is underlined."""
    if not word:
        return f"<div class='bpe-note'>{html.escape(tr(lang, 'bpe_fig_replay_empty'))}</div>"

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

    title = tr(lang, "bpe_fig_replay_title", word=f"<b>{html.escape(visible(word))}</b>")
    note = f" {tr(lang, 'bpe_fig_replay_long', n=truncated)}" if truncated else ""
    return (f"{STYLE}<div class='bpe-note'>{title}{note}</div>"
            f"<div style='display:flex;gap:12px;flex-wrap:wrap'>"
            f"{column(tr(lang, 'bpe_fig_replay_ours', n=len(ours) - 1), ours)}"
            f"{column(tr(lang, 'bpe_fig_replay_cl100k', n=len(cl100k) - 1), cl100k)}</div>")


def replay_label(kind: str, number: int | None, lang: str = "en") -> str:
    """The label of a replay row: the bytes, our merge number, or GPT-4's rank."""
    return tr(lang, "bpe_fig_replay_start" if number is None else f"bpe_fig_replay_{kind}_row", n=number)


def merges_table(rows: list[tuple[int, bytes, bytes, int, int, int, int]], lang: str = "en"
                 ) -> tuple[list[str], list[list]]:
    """Headers and rows of the merges table; ``rows`` = (new id, left bytes, right bytes, left id,
    right id, count, pairs tied)."""
    headers = [tr(lang, f"bpe_fig_h_{key}") for key in ("merge", "id", "token", "left", "right", "count", "tied")]
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


# ----------------------------------------------------------------------------- granularity
GRANULARITY_COLORS = {"chars": "#94a3b8", "words": "#475569", "bytes": TIE_COLOR, "bpe": ALLOWED_COLOR,
                      "cl100k": CL100K_COLOR}
UNK_COLOR = "#dc2626"        # red: [UNK], meaning lost


def _scheme_names(cuts: list, k: int, lang: str) -> list[str]:
    return [tr(lang, f"bpe_fig_gran_{c.scheme}", k=k) for c in cuts]


def granularity_figure(cuts: list, k: int, lang: str = "en") -> PlainFigure:
    """Left: the ids each scheme's vocabulary holds (log axis). Right: the tokens the text costs, the
    ``[UNK]`` ones in red. ``cuts``: :class:`models.bpe_granularity.Cut` records, one per scheme."""
    names = _scheme_names(cuts, k, lang)
    colors = [GRANULARITY_COLORS[c.scheme] for c in cuts]
    bar = {"type": "bar", "orientation": "h", "y": names, "cliponaxis": False, "textposition": "outside"}
    data = [
        {**bar, "x": [max(c.vocab, 1) for c in cuts], "marker": {"color": colors}, "showlegend": False,
         "text": [f"{c.vocab:,}" for c in cuts],
         "hovertemplate": "%{y}: %{x:,} " + tr(lang, "bpe_fig_gran_ids") + "<extra></extra>", **axis_ref(0)},
        {**bar, "x": [c.tokens - c.unknown for c in cuts], "marker": {"color": colors}, "textposition": "none",
         "name": tr(lang, "bpe_fig_gran_known"), "showlegend": False,
         "hovertemplate": "%{y}: %{x:,}<extra></extra>", **axis_ref(1)},
        {**bar, "x": [c.unknown for c in cuts], "marker": {"color": UNK_COLOR}, "name": tr(lang, "bpe_fig_gran_unk"),
         "text": [f"{c.tokens:,}" for c in cuts], "hovertemplate": "%{y}: %{x:,}<extra>[UNK]</extra>",
         **axis_ref(1)},
    ]
    layout = subplot_row([tr(lang, "bpe_fig_gran_vocab_title"), tr(lang, "bpe_fig_gran_tokens_title")], spacing=0.06)
    top_vocab = max(c.vocab for c in cuts)
    top_tokens = max(c.tokens for c in cuts) or 1
    layout["xaxis"].update(type="log", range=[0, 1.25 * len(f"{top_vocab}")], gridcolor="#eef2f7")
    layout["xaxis2"].update(range=[0, top_tokens * 1.22], gridcolor="#eef2f7")
    for suffix in ("", "2"):
        layout[f"yaxis{suffix}"].update(autorange="reversed", automargin=True)
    layout["yaxis2"]["showticklabels"] = False
    layout["legend"] = {"orientation": "h", "x": 1, "xanchor": "right", "y": -0.12}
    margin = {"l": label_margin(names, pad=12), "b": 66}                    # the scheme names, the legend
    return plain_figure(data, layout | base_layout(height=300, margin=margin) | {"barmode": "stack"})


def _pieces(cut) -> str:
    """The word as a scheme cut it: each piece quoted, ``[UNK]`` in bold."""
    return " ".join("**[UNK]**" if p is None else f"`{token_label(p if isinstance(p, bytes) else p.encode())}`"
                    for p in cut.pieces)


def granularity_markdown(cuts: list, k: int, word: str, lang: str = "en") -> str:
    """One row per scheme: vocabulary, tokens of the text, how many are ``[UNK]``, and the word, cut."""
    label = f"`{token_label(word.encode('utf-8'))}`" if word else ""
    lines = [tr(lang, "bpe_fig_gran_head", word=label)]
    for name, cut in zip(_scheme_names(cuts, k, lang), cuts):
        vocab = (tr(lang, "bpe_fig_gran_from_corpus", n=cut.vocab) if cut.scheme in ("chars", "words")
                 else f"{cut.vocab:,}")
        pieces = _pieces(cut) if word else tr(lang, "bpe_fig_gran_no_word")
        lines.append(f"| {name} | {vocab} | {cut.tokens:,} | {cut.unknown:,} | {pieces} |")
    return "\n".join(lines)
