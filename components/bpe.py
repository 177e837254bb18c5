"""The Tokenizer tab: train byte-level BPE, step through its merges, compare with GPT-4's cl100k, and
cut the same text by characters, words, bytes and both BPEs.

Every handler takes its controls by name, with defaults that draw the tab, and returns its outputs by
name (:func:`components.wiring.event`). The trained tokenizer lives in the visitor's ``gr.State``:
``/bpe_train`` fills it, the other endpoints read it (with the same client session).
"""
from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from components.common import device_line, explain, finished, long_run, low_priority
from components.i18n import lang_of, t
from components.widgets import Radio, Slider, StepButton
from components.wiring import event, grouped
from locales import Term, tr
from models.bpe_trace import CORPORA, SPLITS, TIES, load_corpus
from models.checks import InputError, choice, whole
from models.limits import BPE_MAX_CORPUS_BYTES, BPE_MAX_ENCODE_CHARS, BPE_MAX_MERGES, BPE_MERGES, BPE_SHOW_TOKENS

CORPUS_CHOICES = (*CORPORA, "custom")
DEFAULT_TEXT = "Tokenization is where every LLM course starts. 露营 costs more tokens than camp 🏕️!"
DEFAULT_WORD = " tokenization"
REPLAY_MAX_BYTES = 48              # a word's merge-by-merge replay draws one row per merge
PLAY_SECONDS = 0.4                 # one timer tick
PLAY_FRAMES = 150                  # a whole playback takes about this many ticks
DOWNLOAD_DIR = "llm-anatomy-bpe"   # under the system temp dir; files are named by their content's hash
DOWNLOAD_MAX_AGE_S = 3600

# Every view of a step: the outputs of /bpe_step, and part of every other event's.
VIEW = ("card", "segmentation", "competitors", "curves", "encoded", "encode_summary", "chars", "compare",
        "compare_plot", "cl100k_tokens", "replay", "granularity_plot", "granularity_table", "device")
TRAIN_OUTPUTS = ("state", "status", "text", "step", "table", "download", *VIEW)
ENCODE_OUTPUTS = ("encoded", "encode_summary", "chars")
COMPARE_OUTPUTS = ("state", "compare", "compare_plot", "cl100k_tokens", "replay", "granularity_plot",
                   "granularity_table")


# ----------------------------------------------------------------------------- views
def _session(state) -> dict | None:
    return state if isinstance(state, dict) and "trace" in state else None


def _check_text(text, what: str = "bpe_your_text") -> str:
    """A text a learner typed: a string of at most BPE_MAX_ENCODE_CHARS characters (``what`` names it)."""
    if not isinstance(text, str):
        raise InputError("bpe_err_not_text", what=Term(what), type=type(text).__name__)
    if len(text) > BPE_MAX_ENCODE_CHARS:
        raise InputError("bpe_err_text_too_long", what=Term(what), chars=f"{len(text):,}",
                         most=f"{BPE_MAX_ENCODE_CHARS:,}")
    return text


def _step(session: dict | None, step) -> int:
    """The step a learner asked for, within the merges this session's tokenizer learned (one range in
    the message, whatever the number: 0 to the merges learned); before any training, within the slider."""
    if session is None:
        return whole("bpe_step", step, 0, BPE_MAX_MERGES)
    return session["trace"].check_step(step)


def _moved(session: dict | None, step, by: int) -> int:
    """Where Previous, Next and a Play frame go from the box's step: ``step + by`` moved into 0 to the
    merges learned, whatever the box held (a number typed past the end goes back to it). Anything but a
    whole number is the error that names that range, as a typed step's is."""
    m = len(session["trace"].merges) if session else 0
    try:
        k = whole("bpe_step", step, 0)
    except InputError:
        whole("bpe_step", step, 0, m)                 # the error, naming 0 to the merges learned
        raise
    return min(max(k + by, 0), m)


def _empty_views(lang: str) -> dict:
    """Before any training (a fresh API session): the message, and empty panels."""
    from viz.common import plain_figure
    empty = plain_figure([], {"height": 120, "xaxis": {"visible": False}, "yaxis": {"visible": False}})
    figures = ("competitors", "curves", "compare_plot", "granularity_plot")
    return {name: empty if name in figures else "" for name in VIEW} | {"card": tr(lang, "bpe_no_trace")}


def _step_views(trace, k: int, lang: str) -> dict:
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
    return {"card": card,
            "segmentation": tokens_html([(i, vocab[i]) for i in ids], trace.tokens[k], lang, highlight=highlight),
            "competitors": competitors_figure(k, pairs, tied, lang)}


def _encode_views(trace, text: str, k: int, lang: str) -> dict:
    """Your text at step ``k``: coloured tokens, ids, and when each multi-byte character became whole."""
    from viz.bpe import char_table, encode_summary, tokens_html
    vocab = trace.vocab
    ids = trace.encode(text, k)
    return {"encoded": tokens_html([(i, vocab[i]) for i in ids[:BPE_SHOW_TOKENS]], len(ids), lang),
            "encode_summary": encode_summary(ids, text, k, lang),
            "chars": char_table(trace.char_merges(text, k), k, len(trace.merges), lang)}


def _replay(word: bytes, trace, k: int, lang: str) -> tuple[list, list]:
    """One word merge by merge through our first ``k`` merges and through GPT-4's, rows labelled."""
    from models.bpe_cl100k import replay_cl100k
    from viz.bpe import replay_label
    return ([(parts, replay_label("ours", n, lang)) for n, parts in trace.replay(word, k)],
            [(parts, replay_label("cl100k", rank, lang)) for rank, parts in replay_cl100k(word)])


def _compare_views(session: dict, text: str, word: str, k: int, lang: str) -> dict:
    """GPT-4's side: the verified file, token counts side by side, GPT-4's tokens, a word's replay, and the
    text cut five ways (characters, words, bytes, ours, GPT-4's)."""
    from models.bpe_cl100k import encode_cl100k, load_cl100k
    from models.bpe_granularity import granularity
    from viz.bpe import (compare_figure, compare_markdown, granularity_figure, granularity_markdown, replay_html,
                         sha_line, tokens_html)
    trace = session["trace"]
    m, cl = len(trace.merges), load_cl100k()
    cached = session.get("cl_text")
    theirs = cached[1] if cached and cached[0] == text else encode_cl100k(text)
    rows = [("training_text", trace.n_bytes, trace.tokens[k], trace.tokens[m], session["cl_corpus"]),
            ("your_text", len(text.encode("utf-8")), len(trace.encode(text, k)), len(trace.encode(text)),
             len(theirs.ids))]
    head = sha_line(Path(cl.path).name, cl.sha256, len(cl.ranks), cl.single_bytes, cl.merges, cl.load_ms, lang)
    raw = word.encode("utf-8")
    cut = raw[:REPLAY_MAX_BYTES].decode("utf-8", errors="ignore")                      # whole characters
    ours, gpt4 = _replay(cut.encode("utf-8"), trace, k, lang) if cut else ([], [])
    cuts = granularity(text, cut, session["vocabularies"], trace, k, theirs.ids)
    return {"compare": compare_markdown(head, k, rows, lang),
            "compare_plot": compare_figure(k, m, rows, len(cl.ranks), lang),
            "cl100k_tokens": tokens_html(list(zip(theirs.ids[:BPE_SHOW_TOKENS], theirs.tokens)), len(theirs.ids),
                                         lang),
            "replay": replay_html(cut, ours, gpt4, REPLAY_MAX_BYTES if len(cut.encode()) < len(raw) else None, lang),
            "granularity_plot": granularity_figure(cuts, k, lang),
            "granularity_table": granularity_markdown(cuts, k, cut, lang)}


def _views(session: dict | None, k: int, text: str, word: str, lang: str) -> dict:
    """Every view of step ``k`` (see :data:`VIEW`), and the time it took on the server."""
    from viz.bpe import curves_figure
    if session is None:
        return _empty_views(lang)
    start = time.perf_counter()
    trace = session["trace"]
    views = {**_step_views(trace, k, lang), "curves": curves_figure(trace.tokens, k, session["cl_corpus_bpt"], lang),
             **_encode_views(trace, text, k, lang), **_compare_views(session, text, word, k, lang)}
    ms = f"{(time.perf_counter() - start) * 1e3:.1f}"
    return views | {"device": tr(lang, "bpe_device_view", ms=ms, k=k, m=len(trace.merges))}


# ----------------------------------------------------------------------------- handlers
def show_step(state: dict | None = None, step: int = 1, your_text: str = DEFAULT_TEXT, word: str = DEFAULT_WORD,
              request: gr.Request = None) -> dict:
    """The ``/bpe_step`` endpoint: everything at step ``step`` of this session's tokenizer (no retraining)."""
    session = _session(state)
    k = _step(session, step)
    return _views(session, k, _check_text(your_text), _check_text(word, "bpe_word"), lang_of(request))


def fit_step(state: dict | None = None, step: int = 1, request: gr.Request = None) -> dict:
    """A whole number typed past the merges learned goes back to the last one, and a warning says so: the
    box kept 999 while the card went on showing the previous merge. ``/bpe_step`` itself still refuses it."""
    session = _session(state)
    try:
        k = _moved(session, step, 0)
    except InputError:
        return {}                                     # not a whole number: /bpe_step says what is wrong
    if k == step:
        return {}
    gr.Warning(tr(lang_of(request), "bpe_step_fitted", step=int(step), m=k))
    return {"step": k}


def _nudge(state, step, delta: int, your_text, word, lang: str) -> dict:
    """Move one merge (clamped to the trained range) and draw."""
    session = _session(state)
    k = _moved(session, step, delta)
    return {"step": k, **_views(session, k, _check_text(your_text), _check_text(word, "bpe_word"), lang)}


def previous_step(state: dict | None = None, step: int = 1, your_text: str = DEFAULT_TEXT, word: str = DEFAULT_WORD,
                  request: gr.Request = None) -> dict:
    return _nudge(state, step, -1, your_text, word, lang_of(request))


def next_step(state: dict | None = None, step: int = 1, your_text: str = DEFAULT_TEXT, word: str = DEFAULT_WORD,
              request: gr.Request = None) -> dict:
    return _nudge(state, step, 1, your_text, word, lang_of(request))


def tick(state: dict | None = None, step: int = 1, your_text: str = DEFAULT_TEXT, word: str = DEFAULT_WORD,
         request: gr.Request = None) -> dict:
    """One frame of playback: advance by a stride so a whole playback takes ~PLAY_FRAMES ticks."""
    session = _session(state)
    if session is None:
        return {"timer": gr.Timer(active=False)}
    m = len(session["trace"].merges)
    k = _moved(session, step, max(1, -(-m // PLAY_FRAMES)))
    frame = {"step": k, **_views(session, k, _check_text(your_text), _check_text(word, "bpe_word"),
                                 lang_of(request))}
    # Only the last frame touches the timer: a tick that returned "active" could undo a pause.
    return frame if k < m else frame | {"timer": gr.Timer(active=False)}


def play(state: dict | None = None, step: int = 1) -> dict:
    """Start playback (from the beginning when at the last merge)."""
    session = _session(state)
    m = len(session["trace"].merges) if session else 0
    at_end = not isinstance(step, (int, float)) or step >= m
    return {"step": 0, "timer": gr.Timer(active=m > 0)} if at_end else {"timer": gr.Timer(active=m > 0)}


def encode_text(state: dict | None = None, your_text: str = DEFAULT_TEXT, step: int = 1,
                request: gr.Request = None) -> dict:
    """The ``/bpe_encode`` endpoint: your text with the first ``step`` merges, and its multi-byte characters."""
    lang = lang_of(request)
    session = _session(state)
    k = _step(session, step)
    if session is None:
        return {name: value for name, value in _empty_views(lang).items() if name in ENCODE_OUTPUTS}
    return _encode_views(session["trace"], _check_text(your_text), k, lang)


def compare(state: dict | None = None, your_text: str = DEFAULT_TEXT, word: str = DEFAULT_WORD, step: int = 1,
            request: gr.Request = None) -> dict:
    """The ``/bpe_compare`` endpoint: GPT-4's cl100k on your text, side by side with yours; a word's replay;
    the text cut by characters, words, bytes, yours and GPT-4's."""
    from models.bpe_cl100k import encode_cl100k
    lang = lang_of(request)
    session = _session(state)
    k = _step(session, step)
    if session is None:
        return {name: value for name, value in _empty_views(lang).items() if name in COMPARE_OUTPUTS}
    your_text, word = _check_text(your_text), _check_text(word, "bpe_word")
    cached = session.get("cl_text")
    if not cached or cached[0] != your_text:
        session = {**session, "cl_text": (your_text, encode_cl100k(your_text))}
    return {"state": session, **_compare_views(session, your_text, word, k, lang)}


def read_upload(upload: str | None = None, uploads: int = 0, request: gr.Request = None) -> dict:
    """An uploaded file as text: at most the corpus limit, strictly UTF-8 (the message says where not).
    ``uploads`` counts the files read: its change is what trains on the file (see :func:`build`).

    Declares ``request`` so that Gradio passes it and the message comes in the page's language: the
    one :func:`components.wiring.guarded` adds is keyword-only, which Gradio 6.31 leaves at ``None``."""
    from models.bpe_trace import text_from_bytes
    if not upload:
        return {}
    file = Path(upload)
    size = file.stat().st_size
    if size > BPE_MAX_CORPUS_BYTES:
        raise InputError("bpe_err_file_too_big", bytes=f"{size:,}", most=f"{BPE_MAX_CORPUS_BYTES:,}")
    return {"text": text_from_bytes(file.read_bytes()), "corpus": "custom", "uploads": uploads + 1}


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
    each time slice, then the session (trace, GPT-4's count on the corpus, the corpus's characters and
    words), the table and the download.

    Runs in the worker of :func:`low_priority`: after a large run, the table, the JSON file and
    cl100k on the corpus take a few hundred ms of pure Python, which in the server would hold the GIL
    that every instant tab's request needs.
    """
    from models.bpe import train_bpe_slices
    from models.bpe_cl100k import encode_cl100k
    from models.bpe_granularity import Vocabularies

    for trace in train_bpe_slices(text, config.num_merges, split=config.split, tie=config.tie):
        if isinstance(trace, int):
            yield trace
    cl = encode_cl100k(text)
    yield {"trace": trace, "cl_corpus": len(cl.ids), "cl_corpus_bpt": trace.n_bytes / max(len(cl.ids), 1),
           "vocabularies": Vocabularies.of(text), "cl_ms": cl.timing.ms, "table": _merges_table(trace, lang),
           "download": _download_file(trace)}


def _shows(box: str, text: str) -> bool:
    r"""Whether the training-text box holds ``text`` (a browser's textarea may send its line ends as CRLF).

    >>> _shows("a\r\nb", "a\nb")
    True
    """
    return box.replace("\r\n", "\n") == text


def _text_update(source: str, shown: str, text: str) -> dict:
    """The training text for the box: a preset's, unless the box already shows it (a retrain by the merges
    slider would send 100 KB back to the page at every run, and overwrite what was typed meanwhile)."""
    if source == "custom" or _shows(shown, text):
        return {}
    return {"text": text}


# What a share link leaves out (app.py passes this on): a preset corpus's text, which the preset loads.
LINK_LEAVES_OUT = {"bpe_text": lambda values: values.get("bpe_corpus") != "custom"}

# The training's controls and the view's, shared by /bpe_train and the first draw. The text box holds the
# default preset's text from the start, so the first draw sends none back and cannot overwrite typing.
TRAINING = dict(corpus=dict(corpus="en", text=load_corpus("en"), merges=400, split="gpt2", tie="first"),
                view=dict(your_text=DEFAULT_TEXT, word=DEFAULT_WORD, step=1))


def _training(corpus: dict, view: dict, lang: str, *, background: bool = True) -> Iterator[dict]:
    """Train on the corpus in time slices, yielding progress; the last item draws step ``step`` (clamped to
    the merges learned; step 1 when it is 0). Items map :data:`TRAIN_OUTPUTS` to values.

    ``background``: train in a low-priority worker (pure Python holds the GIL: in the server's thread it
    would slow every other tab).
    """
    from models.bpe_trace import BPEConfig, check_corpus
    from viz.bpe import training_summary

    source = choice("bpe_corpus", corpus["corpus"], CORPUS_CHOICES)
    config = BPEConfig(corpus["merges"], corpus["split"], corpus["tie"])
    k = whole("bpe_step", view["step"], 0, BPE_MAX_MERGES)
    your_text, word = _check_text(view["your_text"]), _check_text(view["word"], "bpe_word")
    text = load_corpus(source) if source != "custom" else corpus["text"]
    check_corpus(text)
    n = config.num_merges

    for item in low_priority(_trained, text, config, lang) if background else _trained(text, config, lang):
        if isinstance(item, int):
            yield {"status": tr(lang, "bpe_progress", done=item, total=n)}
    table, download, cl_ms = item.pop("table"), item.pop("download"), item.pop("cl_ms")
    session, trace = item, item["trace"]
    m = len(trace.merges)
    status = training_summary(m, n, trace.n_bytes, config.split, config.tie, trace.timing.ms, trace.stop_reason,
                              text.count("\x00"), lang)
    k = min(k or 1, m)
    views = _views(session, k, your_text, word, lang)
    device = tr(lang, "bpe_device_trained", training=str(trace.timing), cl_ms=f"{cl_ms:,.0f}", view=views["device"])
    # Said done first, as every long run's last status: Stop leaves it, and marks a progress line stopped.
    status = finished(status, lang=lang)
    yield {"state": session, "status": status, "step": gr.Slider(maximum=max(m, 1), value=k), "table": table,
           "download": download, **views, "device": device} | _text_update(source, corpus["text"], text)


@grouped(**TRAINING)
def train(corpus: dict, view: dict, request: gr.Request = None) -> Iterator[dict]:
    """The ``/bpe_train`` endpoint: train on a preset (``text`` is then ignored and returned filled) or on
    your ``text`` (corpus "custom"), streaming progress, then draw step ``step`` (clamped to the merges
    learned; step 1 when it is 0), so a retrain stays on its step."""
    yield from _training(corpus, view, lang_of(request))


@grouped(**TRAINING)
def first_draw(corpus: dict, view: dict, request: gr.Request = None) -> dict:
    """The tab's first draw: the same training, returned whole (the app runs a draw as a plain function)."""
    *_, last = _training(corpus, view, lang_of(request), background=False)
    return last


def set_custom(corpus: str = "en", text: str = "") -> dict:
    """Editing the training text (typing, pasting, deleting) makes it the corpus; the box filled with the
    chosen preset's text (by a training run, or the first draw) leaves the choice as it is."""
    if corpus == "custom" or corpus not in CORPUS_CHOICES or _shows(text, load_corpus(corpus)):
        return {}
    return {"corpus": "custom"}


# ----------------------------------------------------------------------------- layout
def build() -> dict:
    """Lay out the tab inside the current ``gr.Tab``, wire its events, return the first-draw event (with the
    Play timer that selecting another tab pauses)."""
    ui = SimpleNamespace()
    gr.Markdown(t("bpe_intro"))
    ui.state = gr.State(None)
    # Files read so far: a change trains. Placed at the page's root (``at_root``): a State with a change
    # listener inside a tab fires it on page loads (components/norms.py says when).
    ui.uploads = gr.State(0, render=False)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            ui.corpus = Radio([(t(f"bpe_corpus_{c}"), c) for c in CORPUS_CHOICES], value="en",
                              label=t("bpe_corpus"), elem_id="bpe_corpus")
            ui.text = gr.Textbox(TRAINING["corpus"]["text"], lines=8, max_lines=14,
                                 max_length=BPE_MAX_CORPUS_BYTES, label=t("bpe_text"), elem_id="bpe_text")
            ui.upload = gr.File(label=t("bpe_upload"), file_types=["text", ".txt", ".md", ".py", ".csv", ".json"],
                                type="filepath", height=130, elem_id="bpe_upload")
            ui.merges = Slider.over(BPE_MERGES, 400, label=t("bpe_merges"), elem_id="bpe_merges")
            ui.split = Radio([(t(f"bpe_split_{s}"), s) for s in SPLITS], value="gpt2", label=t("bpe_split"),
                             elem_id="bpe_split")
            ui.tie = Radio([(t(f"bpe_tie_{r}"), r) for r in TIES], value="first", label=t("bpe_tie"),
                           elem_id="bpe_tie")
            with gr.Row():
                ui.train = gr.Button(t("bpe_train"), variant="primary", elem_id="bpe_train")
                ui.stop = gr.Button(t("bpe_stop"), variant="stop", elem_id="bpe_stop")
            ui.status = gr.Markdown(elem_id="bpe_status")
            ui.download = gr.DownloadButton(t("bpe_download"), size="sm", elem_id="bpe_download")
        with gr.Column(scale=3):
            ui.step = Slider(0, BPE_MAX_MERGES, value=1, step=1, label=t("bpe_step"), elem_id="bpe_step")
            with gr.Row():
                ui.prev = StepButton(t("bpe_prev"), size="sm", elem_id="bpe_prev")
                ui.next = StepButton(t("bpe_next"), size="sm", elem_id="bpe_next")
                ui.play = gr.Button(t("bpe_play"), size="sm", elem_id="bpe_play")
                ui.pause = gr.Button(t("bpe_pause"), size="sm", elem_id="bpe_pause")
            with gr.Row():
                with gr.Column(scale=3):
                    ui.card = gr.Markdown(elem_id="bpe_card")
                with gr.Column(scale=2):
                    ui.competitors = gr.Plot(label=t("bpe_competitors"), elem_id="bpe_competitors")
            gr.Markdown(t("bpe_segmentation"))
            ui.segmentation = gr.HTML(elem_id="bpe_segmentation")
            ui.curves = gr.Plot(label=t("bpe_curves"), elem_id="bpe_curves")
            ui.your_text = gr.Textbox(DEFAULT_TEXT, lines=2, max_length=BPE_MAX_ENCODE_CHARS,
                                      label=t("bpe_encode_text"), elem_id="bpe_your_text")
            gr.Markdown(t("bpe_encoded"))
            ui.encoded = gr.HTML(elem_id="bpe_encoded")
            ui.encode_summary = gr.Markdown(elem_id="bpe_encode_summary")
            ui.chars = gr.Markdown(elem_id="bpe_chars")
            with gr.Accordion(t("bpe_compare_head"), open=True):
                ui.compare = gr.Markdown(elem_id="bpe_compare")
                ui.compare_plot = gr.Plot(label=t("bpe_compare_plot"), elem_id="bpe_compare_plot")
                gr.Markdown(t("bpe_cl100k_tokens"))
                ui.cl100k_tokens = gr.HTML(elem_id="bpe_cl100k_tokens")
                ui.word = gr.Textbox(DEFAULT_WORD, max_length=BPE_MAX_ENCODE_CHARS, label=t("bpe_word"),
                                     info=t("bpe_word_info"), elem_id="bpe_word")
                ui.replay = gr.HTML(elem_id="bpe_replay")
            with gr.Accordion(t("bpe_granularity"), open=True):
                gr.Markdown(t("bpe_gran_intro"))
                ui.granularity_plot = gr.Plot(label=t("bpe_gran_plot"), elem_id="bpe_granularity_plot")
                ui.granularity_table = gr.Markdown(elem_id="bpe_granularity_table")
            with gr.Accordion(t("bpe_merges_table"), open=False):
                ui.table = gr.HTML(elem_id="bpe_table")
            ui.device = device_line()
            explain("bpe_explain")
            ui.timer = gr.Timer(PLAY_SECONDS, active=False)

    quiet = dict(show_progress="hidden")
    private = dict(api_visibility="private", **quiet)
    # One event trains, so one training runs at a time. A drag of the merges slider retrains at most twice
    # (its first value, then its last), a number typed in its box retrains on Enter, and a file read counts
    # as a change too: a change made while training runs is not dropped, and trains once that one ends.
    # (An upload event of its own would train beside it: two runs streaming into one status and its figures.)
    retrain = [ui.train.click, ui.corpus.input, ui.merges.input, ui.split.input, ui.tie.input, ui.uploads.change]
    long_run(retrain, ui.stop, ui.status, api_name="bpe_train", trigger_mode="always_last",
             **event(train, ui, TRAIN_OUTPUTS))
    # Gradio's input event misses a paste and a deletion: every change of the box is checked instead.
    ui.text.change(**event(set_custom, ui, ("corpus",)), trigger_mode="always_last", **private)
    # No progress on the outputs: a refused file would leave a red "Error" over the corpus and its text,
    # covering the radios, until the page was reloaded (the toast says what was wrong).
    read = ui.upload.upload(**event(read_upload, ui, ("text", "corpus", "uploads")), **private)
    # A refused file leaves the box: listed there, it would read as the corpus, and it would have to be
    # removed (×) before another upload.
    read.failure(lambda: None, None, ui.upload, queue=False, **private)

    gr.on([ui.step.input], trigger_mode="always_last",                        # follows a drag and a typed number
          **event(fit_step, ui, ("step",)), **private).then(api_name="bpe_step", **event(show_step, ui, VIEW), **quiet)
    for button, move in ((ui.prev, previous_step), (ui.next, next_step)):
        button.click(**event(move, ui, ("step", *VIEW)), **private)
    ui.play.click(**event(play, ui, ("step", "timer")), **private)
    ui.pause.click(lambda: gr.Timer(active=False), None, ui.timer, **private)
    ui.timer.tick(**event(tick, ui, ("step", *VIEW, "timer")), **private)

    gr.on([ui.your_text.input, ui.your_text.submit, ui.your_text.blur], api_name="bpe_encode",
          trigger_mode="always_last", **event(encode_text, ui, ENCODE_OUTPUTS), **quiet).then(
        trigger_mode="always_last", **event(compare, ui, COMPARE_OUTPUTS), **private)
    gr.on([ui.word.submit, ui.word.blur], api_name="bpe_compare", **event(compare, ui, COMPARE_OUTPUTS), **quiet)
    return {**event(first_draw, ui, TRAIN_OUTPUTS), **quiet, "timers": [ui.timer], "at_root": [ui.uploads]}
