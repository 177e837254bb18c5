"""What the browser spends: a page load, and one slider move on a fresh page and after every tab.

    python bench/bench_page.py [--quick] [--moves 3]

The server answers a slider move in ~0.1 s (``bench_endpoints.py``); this measures the learner's
side of it. Debian's Chromium, headless as the browser tests run it, opens ``?tab=masks`` on
``python app.py``; Chromium's count of main-thread task time (CDP ``Performance.getMetrics``,
``TaskDuration``) is read around

1. the page load, up to the masks panels drawn;
2. a move of the masks tab's "Show sequence" (1 <-> 2), up to the panels redrawn plus 2 s for
   the work that follows (Gradio's resize of each figure, the statuses): the median of ``--moves``
   (one with ``--quick``);
3. the same move after every other tab has been opened and drawn (what a learner who has used
   the app pays for each event).

4. the move of (2) on a fresh page where every axis is drawn with ``automargin`` off (set in the page
   before each ``Plotly.react``): what Plotly's measuring of tick labels costs the tab's figures,
   ~1x for the masks figures, which size their own margins (``viz.masks._token_margin``).

5. a step of the Tokenizer tab (Next) on a fresh ``?tab=tokenizer`` page, up to the merge card's
   new merge plus 1.5 s: four figures and the coloured text redrawn (what each frame of Play costs);
6. the same with every axis's automargin off: ~1x, since the step's figures set margins that no
   label pushes (checked by ``tests/test_bpe_ui.py``).

The reference is (2): the ratio (3)/(2) says how much more each event costs once every tab has
been used, (4)/(2) what the axes' automargin costs; (6)/(5) the same for the Tokenizer's step. Each line also says how much of it went to
``Plotly.react`` (drawing the figures).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import TABS  # noqa: E402
from tests.conftest import CHROMIUM  # noqa: E402
from tests.load_harness import served_app  # noqa: E402

PANELS = "#masks_panels .js-plotly-plot"
STEP = "#bpe_step input[type=number]"
# Time spent inside Plotly.react, summed in the page (window.__plotlyMs).
COUNT_PLOTLY = """() => { window.__plotlyMs = 0; const react = window.Plotly.react;
    window.Plotly.react = function (...args) { const t = performance.now();
        try { return react.apply(this, args); } finally { window.__plotlyMs += performance.now() - t; } }; }"""

# Before each Plotly.react, every axis of the figure (and the template's) gets automargin: false.
AUTOMARGIN_OFF = """(() => { let plotly;
  const patch = (P) => { const react = P.react;
    P.react = function (gd, data, layout, config) {
      for (const key of Object.keys(layout || {})) if (/^[xy]axis\\d*$/.test(key)) layout[key].automargin = false;
      for (const axis of ["xaxis", "yaxis"]) if (layout?.template?.layout?.[axis]) layout.template.layout[axis].automargin = false;
      return react.call(this, gd, data, layout, config); };
    return P; };
  Object.defineProperty(window, "Plotly", {configurable: true, get: () => plotly, set: (P) => { plotly = patch(P); }}); })();"""


def task_seconds(cdp) -> float:
    """Seconds of main-thread tasks the page has run so far (Chromium's own count)."""
    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")


def moves(page, cdp, n: int) -> tuple[float, float]:
    """Median main-thread seconds of ``n`` moves of the masks tab's sequence slider, and of their Plotly share."""
    total, plotly = [], []
    box = page.locator("#masks_seq input[type=number]")
    for i in range(n):
        value = "2" if box.input_value() == "1" else "1"
        before_z = page.locator(PANELS).evaluate("g => JSON.stringify(g._fullData[0].z)")
        page.evaluate("() => { window.__plotlyMs = 0; }")
        start = task_seconds(cdp)
        box.fill(value)
        box.press("Enter")
        page.wait_for_function("([sel, z]) => JSON.stringify(document.querySelector(sel)._fullData[0].z) !== z",
                               arg=[PANELS, before_z])
        page.wait_for_timeout(2000)
        total.append(task_seconds(cdp) - start)
        plotly.append(page.evaluate("() => window.__plotlyMs") / 1000)
    return statistics.median(total), statistics.median(plotly)


def steps(page, cdp, n: int) -> tuple[float, float]:
    """Median main-thread seconds of ``n`` Tokenizer steps (Next), and of their Plotly share."""
    total, plotly = [], []
    for _ in range(n):
        k = int(page.locator(STEP).input_value()) + 1
        page.evaluate("() => { window.__plotlyMs = 0; }")
        start = task_seconds(cdp)
        page.locator("#bpe_next").click()
        page.locator("#bpe_card").get_by_text(f"Merge {k} of").wait_for()
        page.wait_for_timeout(1500)
        total.append(task_seconds(cdp) - start)
        plotly.append(page.evaluate("() => window.__plotlyMs") / 1000)
    return statistics.median(total), statistics.median(plotly)


def tab_page(browser, url: str, init: str | None = None, tab: str = "masks", drawn: str = PANELS):
    """A page of its own (a new context) on ``?tab=<tab>``, ``drawn`` shown, and its CDP session counting
    main-thread time from before the load; ``init`` runs in the page before the app's scripts."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(120_000)
    if init:
        page.add_init_script(init)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.goto(f"{url}?tab={tab}")
    page.locator(drawn).first.wait_for()
    return page, cdp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one move each (a smoke run)")
    parser.add_argument("--moves", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.moves = 1
    from playwright.sync_api import sync_playwright

    with served_app() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--disable-gpu"])
        page, cdp = tab_page(browser, url)
        load = task_seconds(cdp)
        page.wait_for_timeout(2000)
        page.evaluate(COUNT_PLOTLY)
        fresh, fresh_plotly = moves(page, cdp, args.moves)
        for tab_id, _, _ in TABS:
            if tab_id != "masks":
                page.locator(f"[data-tab-id={tab_id}]").click()
                page.locator(f"#tab_{tab_id} .js-plotly-plot").first.wait_for()
                page.wait_for_timeout(1000)
        page.locator("[data-tab-id=masks]").click()
        page.wait_for_timeout(2000)
        used, used_plotly = moves(page, cdp, args.moves)

        page, cdp = tab_page(browser, url, init=AUTOMARGIN_OFF)
        page.wait_for_timeout(2000)
        page.evaluate(COUNT_PLOTLY)
        bare, bare_plotly = moves(page, cdp, args.moves)

        step, step_plotly, step_bare, step_bare_plotly = 0.0, 0.0, 0.0, 0.0
        for init in (None, AUTOMARGIN_OFF):
            page, cdp = tab_page(browser, url, init=init, tab="tokenizer", drawn="#bpe_competitors .js-plotly-plot")
            page.wait_for_timeout(2000)
            page.evaluate(COUNT_PLOTLY)
            if init:
                step_bare, step_bare_plotly = steps(page, cdp, args.moves)
            else:
                step, step_plotly = steps(page, cdp, args.moves)
        browser.close()

    print(f"Chromium {CHROMIUM}, main-thread task seconds (CDP TaskDuration), medians of {args.moves} moves\n")
    print("| what | main thread | of it in Plotly.react |")
    print("|---|---|---|")
    print(f"| page load (`?tab=masks`, to its panels drawn) | {load:.2f} s | |")
    print(f"| a slider move, fresh page (reference) | {fresh:.2f} s | {fresh_plotly:.2f} s |")
    print(f"| the same move after every tab was opened | {used:.2f} s | {used_plotly:.2f} s |")
    print(f"| the move of the reference, every axis's automargin off | {bare:.2f} s | {bare_plotly:.2f} s |")
    print(f"| a Tokenizer step (Next), fresh page | {step:.2f} s | {step_plotly:.2f} s |")
    print(f"| the same step, every axis's automargin off | {step_bare:.2f} s | {step_bare_plotly:.2f} s |")
    print(f"\nafter every tab / fresh: {used / fresh:.2f}x; automargin off / fresh: {bare / fresh:.2f}x; "
          f"step, automargin off / on: {step_bare / step:.2f}x")


if __name__ == "__main__":
    main()
