"""LLM Anatomy: a visual playground for the parts of a large language model.

``python app.py`` serves it (``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT`` choose where). Importing
this module builds the UI only: torch is imported by the first event that computes.
"""
from __future__ import annotations

import gc
import importlib.util
import os
import sys
import threading
import time

import gradio as gr

from components import (attention, bpe, calculator, compression, kv, links, masks, moe, norms, positions, share,
                        tensors, widgets)
from components.i18n import build_i18n, t
from components.toasts import TOAST_JS
from components.touch import TOUCH_JS

# (tab id, label key, module) in the order a learner meets them, from text to tokens to a whole model.
# Deleting a tab is deleting its line here and its module.
TABS = [
    ("tokenizer", "tab_tokenizer", bpe),
    ("positions", "tab_positions", positions),
    ("masks", "tab_masks", masks),
    ("attention", "tab_attention", attention),
    ("norms", "tab_norms", norms),
    ("moe", "tab_moe", moe),
    ("kv", "tab_kv", kv),
    ("calculator", "tab_calculator", calculator),
    ("tensors", "tab_tensors", tensors),
]

i18n = build_i18n()

# Gradio's queue rebuilds a pandas summary of up to 10,000 past events after every event (for its
# monitoring page, which this app does not serve): 4 ms at start, 12 ms once 10,000 are recorded, each
# time in a worker thread beside the handlers. Once per thousand events is plenty (read when the queue
# is made, in build_demo).
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")

# Gradio tries two optional imports each time it builds a config, for every page load and every new
# session: Plot.get_config `import bokeh` once per plot (62), the config's "is_colab" `import IPython`.
# Without them each try searches sys.path again (Python does not remember a failed import): ~30 ms of
# the event loop per new visitor. Record their absence once (IPython is absent on a Space).
for _optional in ("bokeh", "IPython"):
    if importlib.util.find_spec(_optional) is None:
        sys.modules.setdefault(_optional, None)    # `import` now fails at once, as it would anyway

# Gradio's queue looks for a new event every 1 ms while it has none (``Queue.sleep_when_free``): 9.5 % of
# a core for an idle server here, taken from the requests of a busy one and from every test process
# that serves the app. Every 5 ms: 3.6 % (``bench/bench_idle.py``), for at most 5 ms more before an event starts.
QUEUE_POLL_S = 0.005


def build_demo(only: tuple[str, ...] | None = None) -> gr.Blocks:
    """One tab per concept, share links and data export for each, the URL applied on load, each tab drawn
    when it is first shown; its queue set. ``only``: the ids of the tabs to build (all by default), e.g.
    ``("masks",)`` for a page that loads in about two thirds of the whole app's time (a tab's browser tests
    use one)."""
    chosen = [tab for tab in TABS if only is None or tab[0] in only]
    with widgets.Blocks(title="LLM Anatomy") as blocks:
        header = gr.Markdown(t("app_header"))
        tab_blocks, tab_controls, draws = {}, {}, {}
        with gr.Tabs() as tabs:
            for tab_id, label, module in chosen:
                with gr.Tab(t(label), id=tab_id, elem_id=f"tab_{tab_id}") as tab:
                    draws[tab_id] = module.build()    # the event that draws the tab, or None
                    tab_controls[tab_id] = share.controls_of(tab)
                    share.share_row(tab_id, tab_controls[tab_id], getattr(module, "LINK_LEAVES_OUT", {}))
                tab_blocks[tab_id] = tab
        moved = {old: where for _, _, module in chosen for old, where in getattr(module, "MOVED_LINKS", {}).items()}
        share.wire(blocks, tabs, tab_blocks, tab_controls, draws, moved)
        offers, opens = (draws.get("kv") or {}).get("look_inside"), (draws.get("attention") or {}).get("opens")
        links.look_inside(tabs, offers, opens)
        blocks.hidden_progress_on(header)
        blocks.edits_never_dropped()
    blocks.queue(default_concurrency_limit=4, max_size=128)
    blocks._queue.sleep_when_free = QUEUE_POLL_S
    return blocks


# A job's process (components.worker) runs this file again as "__mp_main__", as every process that
# multiprocessing starts by spawn or forkserver does with the main module: it needs the imports, not the UI.
if __name__ != "__mp_main__":
    if __name__ == "__main__":
        # What the imports made and what the build makes live as long as the server: out of the garbage
        # collector's view (as warm_up does later), a full collection no longer walks Gradio's ~300k objects
        # while the page is built (~0.1 s) and again in the first page's request (~0.12 s). The price: the
        # few hundred objects already garbage at each freeze are never freed.
        gc.freeze()
    demo = build_demo()

CSS = """
/* Toasts at the bottom right: an error stays until the learner's next action (components/toasts.py), and
   at the top right it covered the last tabs of the row (Tensors and Calculator at 1366 px wide). */
.toast-wrap { top: auto !important; bottom: var(--size-4); }
.device-line textarea { font-family: ui-monospace, monospace; font-size: 0.85em; }
/* A label naming a config key ("num_key_value_heads") breaks inside it rather than run out of a narrow field. */
[data-testid="block-info"] { overflow-wrap: anywhere; }
.mono textarea { font-family: ui-monospace, monospace; }
/* A table's cells break between words: Gradio's prose breaks anywhere, which cut a column's header
   mid-word ("metho|d" over a one-method extrapolation table at 1366 px). */
.prose th, .prose td { overflow-wrap: break-word; word-break: normal; }
.bpe-table table { font-size: 0.9em; }
.bpe-table td, .bpe-table th { padding: 2px 10px; }
/* The Tensors layout table: headers and shapes whole, the table scrolls sideways when narrow. */
#tensors_table { overflow-x: auto; }
#tensors_table th, #tensors_table td:nth-child(-n+6) { white-space: nowrap; }
/* ...but a refused step's message wraps, rather than push every column past the box. */
#tensors_table td:has(> .refused) { white-space: normal; min-width: 10em; }
/* A slider in a narrow column (two in a row on a phone): its number box moves under the label rather
   than squeeze the label to a letter per line. */
.head:has(> .tab-like-container) > label { flex: 1 1 7em; min-width: min(7em, 100%); }
/* A touch screen: a slider's number box, its reset button and an accordion's header are at least 32 px
   high (Gradio draws them 20-22 px, under the 24 px a finger is asked to hit at the least). */
@media (pointer: coarse) {
  input[data-testid="number-input"], .reset-button, button.label-wrap { min-height: 32px; }
  .reset-button { min-width: 32px; }
}
/* Phones and tablets (a figure's column is then under ~600 px): a multi-panel figure keeps a readable
   width and scrolls sideways inside its own box; at 800 px its ticks and subplot titles overlapped. */
@media (max-width: 1000px) {
  /* (Gradio's block hides its overflow in its style attribute: without !important the rest of the figure was cut off.) */
  div:has(> .js-plotly-plot) { overflow-x: auto !important; }
  .js-plotly-plot { min-width: 840px; }
  /* A figure's name takes its own line above the figure, and stays in view as the box scrolls: floated over
     the figure it wrapped to two lines on a phone and hid the figure's title (which may hold the result). */
  .block:has(> .js-plotly-plot) > [data-testid="block-label"] {
    position: sticky; left: var(--block-label-margin); top: auto;
    margin: var(--block-label-margin) 0 4px var(--block-label-margin);
  }
  /* A Markdown table wider than its column scrolls sideways too, and its cells break between words:
     Gradio's prose breaks anywhere, which on a phone stacked each word of a squeezed column letter by letter.
     Chinese has no spaces between words: keep-all breaks it at spaces and punctuation only, where a squeezed
     column stacked it a character per line ("400 次合并内从未合成" in nine lines). */
  .prose table { display: block; overflow-x: auto; }
  .prose th, .prose td { overflow-wrap: normal; word-break: keep-all; }
  /* A SHA-256 or another long identifier in a sentence's code breaks rather than run past its box. */
  .prose p code, .prose li code { overflow-wrap: anywhere; }
}
"""
# System fonts only: a Space or a sandbox may not reach a font CDN.
THEME = gr.themes.Soft(font=["Inter", "ui-sans-serif", "system-ui", "WenQuanYi Micro Hei", "sans-serif"],
                       font_mono=["ui-monospace", "monospace"])
# show_error: Gradio sends str(exception), never a traceback; a wrong-typed API value then says
# "Expected a `float`, but the value passed ... was 'abc'" instead of a generic failure.
WARM_UP_AFTER_S = 1.0
FORKSERVER_WAIT_S = 60.0                         # warm_up waits this long at most for the forkserver's imports
# js, once when the page loads: error toasts show the newest message under a translated title
# (components/toasts.py); on a touch screen a swipe over a figure scrolls (components/touch.py).
PAGE_JS = ("() => { [%s].forEach((run) => { try { run(); } catch (error) { console.error(error); } }); }"
           % ", ".join(s.strip() for s in (TOAST_JS, TOUCH_JS)))                  # one failing leaves the others
# ssr_mode off, as everywhere it is tested: a Space sets GRADIO_SSR_MODE=true, and Gradio's Node server would then
# start beside the app (seconds of cold start) and serve the page itself, out of the app's compression's reach.
LAUNCH_KWARGS = dict(i18n=i18n, theme=THEME, css=CSS, js=PAGE_JS, max_file_size="1mb", show_error=True,
                     footer_links=["api", "gradio", "settings"], ssr_mode=False,
                     app_kwargs={"middleware": compression.MIDDLEWARE})



def warm_up() -> None:
    """Start the server of forks for long work (:mod:`components.worker`), import what the first events
    would (torch, Plotly, every model and view), wait until the server of forks has imported them too,
    then take every object alive now out of the garbage collector's view.

    With torch, Gradio and Plotly loaded, the server holds ~400k objects that live as long as it
    does; each full collection walked them all (~175 ms holding the GIL, every few BPE trainings:
    the slowest instant requests under load). ``gc.freeze`` leaves only what requests create.
    """
    import importlib

    from components import worker
    if worker.uses_processes():
        worker.start_forkserver()                # it imports the models in its own process, meanwhile
    for name in worker.PRELOAD:                  # every model and view (the app's own modules are loaded)
        importlib.import_module(name)
    import plotly.graph_objects  # noqa: F401
    from models.bpe_cl100k import load_cl100k
    from models.bpe_trace import split_text
    load_cl100k()                                # GPT-4's ranks, parsed once
    split_text("warm up", "gpt4")                # imports `regex` and compiles the split patterns
    if worker.uses_processes():
        # The forkserver's own imports, which the first run would wait on. In a thread, for at most
        # FORKSERVER_WAIT_S: one that fails says so there (and at the first run), and the app serves on.
        ready = threading.Thread(target=worker.await_forkserver, name="await-forkserver", daemon=True)
        ready.start()
        ready.join(timeout=FORKSERVER_WAIT_S)
    gc.collect()
    gc.freeze()
    print(f"Warmed up: {gc.get_freeze_count():,} objects frozen out of the garbage collector's view", flush=True)


if __name__ == "__main__":
    # Serving many learners: one torch op uses all cores but one, so a training run never takes the
    # core that answers the instant tabs. Set LLM_ANATOMY_THREADS to override.
    os.environ.setdefault("LLM_ANATOMY_THREADS", str(max(1, (os.cpu_count() or 2) - 1)))
    gc.freeze()                                  # the built page too, before its first request (see above)
    demo.launch(prevent_thread_lock=True, **LAUNCH_KWARGS)   # the page is served from here on
    time.sleep(WARM_UP_AFTER_S)                              # (the first page first)
    warm_up()
    demo.block_thread()
