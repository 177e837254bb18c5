"""The FFN & MoE tab in a real browser: each view draws, a control changes the plot, training streams."""
import re

import pytest
from playwright.sync_api import expect

from tests.conftest import pushed_margins, text_overlaps

pytestmark = pytest.mark.e2e


APP_TABS = ("moe",)                 # this tab alone (conftest.server_url)


ACT = "#moe_act_plot .js-plotly-plot"
ROUTE = "#moe_route_plot .js-plotly-plot"


CHOICES = "t => /^[0-9]+$/.test(t.name || '')"      # the routing figure's "choice 1 2 …" traces

# Boxes drawn over one another in the routing figure: the legend and the notes above the load bars,
# the colorbar's labels and the load bars' expert labels.
OVERLAPS = [(".legend .traces", ".annotation"), (".colorbar .cbaxis text", ".yaxislayer-above .y2tick text")]


def n_traces(page, selector, where="t => true"):
    return page.locator(selector).evaluate(f"g => g.data.filter({where}).length")


def wait_traces(page, selector, count, where="t => true"):
    page.wait_for_function(
        f"() => document.querySelector('{selector}').data.filter({where}).length === {count}", timeout=30_000)


def set_number(page, elem_id, value):
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")
    box.blur()                                       # a slider's number box fires .release on blur


def test_ffn_routing_and_training(page, server_url, shot):
    page.goto(f"{server_url}?tab=moe")
    page.locator("[data-tab-id=moe]").click()
    expect(page.locator(ACT)).to_be_visible(timeout=60_000)
    assert n_traces(page, ACT) == 8                                  # 4 activations × (f, f')
    page.locator("#moe_activations label").filter(has_text="ReLU").click()
    wait_traces(page, ACT, 6)
    expect(page.locator("#moe_sizes_md")).to_contain_text("11,008")
    # Regression: the colorbar and the bar names pushed margins (60 and 108 px): each figure drew twice.
    assert [pushed_margins(page.locator(f"#moe_{name}_plot .js-plotly-plot")) for name in ("gated", "sizes")] == [[]] * 2
    shot(page, "moe-ffn-en")

    page.locator("[data-tab-id=moe_route]").click()
    expect(page.locator(ROUTE)).to_be_visible(timeout=30_000)
    assert n_traces(page, ROUTE, CHOICES) == 2
    set_number(page, "moe_top_k", 3)
    wait_traces(page, ROUTE, 3, CHOICES)
    expect(page.locator(f"{ROUTE} .gtitle")).to_have_text(re.compile("top-3"))
    page.locator("#moe_use_capacity label").click()                  # capacity factor 1 with top-3: drops
    expect(page.locator("#moe_route_md")).to_contain_text(re.compile(r"dropped \*?\*?[1-9]"), timeout=30_000)
    expect(page.locator(".toast-body")).to_have_count(0)
    shot(page, "moe-route-en")
    set_number(page, "moe_experts", 32)                              # the widest legend, the most labels
    set_number(page, "moe_top_k", 8)
    wait_traces(page, ROUTE, 8, CHOICES)
    assert text_overlaps(page.locator(ROUTE), OVERLAPS) == []
    # Gated shared experts (Qwen2-MoE): their rows show each token's gate. Regression: with shared
    # experts the load axis began at −10 (Plotly's autorange); counts begin at 0.
    set_number(page, "moe_shared", 1)
    page.locator("#moe_shared_gate label").click()
    page.wait_for_function(f"() => new Set(document.querySelector('{ROUTE}').data.filter(t => t.type === 'heatmap')"
                           ".at(-1).z[0]).size > 1", timeout=30_000)
    assert page.locator(ROUTE).evaluate("g => g._fullLayout.xaxis2.range[0]") == 0

    page.locator("[data-tab-id=moe_train]").click()
    # Regression: the figures took their curly quotes from the Chinese font, an em wide ("Press  “Train” : …").
    waiting = page.locator("#moe_train_load .js-plotly-plot .annotation-text")
    expect(waiting).to_contain_text("Press “Train”", timeout=30_000)
    width = "t => t.getSubStringLength(t.textContent.indexOf('“'), 1) / parseFloat(getComputedStyle(t).fontSize)"
    assert waiting.evaluate(width) < 0.5                              # in ems: a Latin quote is ~0.4, a CJK one 1
    set_number(page, "moe_steps", 20)
    page.locator("#moe_train_button").click()
    expect(page.locator("#moe_train_status")).to_contain_text("20 / 20", timeout=300_000)
    expect(page.locator("#moe_train_chars .js-plotly-plot")).to_be_visible(timeout=30_000)
    assert page.locator("#moe_train_load .js-plotly-plot").evaluate("g => g.data.length") == 2   # run and twin
    # The run's end is said, so that a Stop pressed after it leaves the line (components.common.stopped:
    # it said "Stopped · step 20 / 20").
    expect(page.locator("#moe_train_status")).to_contain_text(re.compile(r"^\s*✓ Done · "), timeout=30_000)
    # Regression: Plotly labelled every other character of the 61, the rest could be read by hover only.
    from models.moe_train import corpus
    ticks = page.locator("#moe_train_chars .js-plotly-plot").evaluate("g => g.querySelectorAll('.xtick text').length")
    assert ticks == len(corpus()[1])
    shot(page, "moe-train-en")


def test_chinese_ui_and_a_clear_error(browser, server_url, shot):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto(f"{server_url}?tab=moe")
    page.get_by_role("tab", name="FFN 与 MoE").click()
    expect(page.locator(ACT)).to_be_visible(timeout=60_000)
    page.get_by_role("tab", name="路由").click()
    expect(page.locator(f"{ROUTE} .gtitle")).to_have_text(re.compile("路由概率"), timeout=30_000)
    # The capacity slider runs 0.05 to 8, the factors the endpoint takes (it began at a refused 0).
    assert page.locator("#moe_capacity input[type=range]").evaluate("e => [+e.min, +e.max]") == [0.05, 8]
    set_number(page, "moe_experts", 2)
    set_number(page, "moe_top_k", 3)
    expect(page.locator(".toast-body").first).to_contain_text("top-k = 3 不能超过专家数 2", timeout=30_000)
    shot(page, "moe-route-zh")
    context.close()


def test_stop_before_the_first_update_marks_this_run_and_a_refused_run_keeps_the_line(page, server_url,
                                                                                         monkeypatch):
    """A Stop pressed before a run's first update said nothing of it: the last run's "✓ Done" stayed
    (components.common.long_run). The run here is held before its worker starts, until after Stop."""
    import threading

    from components import moe

    page.goto(f"{server_url}?tab=moe")
    page.locator("[data-tab-id=moe_train]").click()
    status = page.locator("#moe_train_status")
    expect(page.locator("#moe_train_load .annotation-text")).to_contain_text("Press “Train”", timeout=60_000)
    # Regression: the status began as Train's explanation, and a Stop before any run made it
    # "■ Stopped · Press Train: a tiny MoE language model learns …".
    page.locator("#moe_stop").click()
    page.wait_for_timeout(1_500)                                      # Stop's mark is a request away
    assert status.inner_text().strip() == ""
    set_number(page, "moe_steps", 10)
    page.locator("#moe_compare label").click()                       # one run, not two
    page.locator("#moe_train_button").click()
    expect(status).to_contain_text(re.compile(r"^\s*✓ Done · step \*?\*?10 / 10"), timeout=120_000)

    release = threading.Event()

    def held(*args, **kwargs):
        release.wait(60)
        raise RuntimeError("released after Stop: never shown")
    monkeypatch.setattr(moe, "low_priority", held)
    try:
        page.locator("#moe_train_button").click()
        expect(status).to_have_text("…", timeout=10_000)             # set in the page, before the run starts
        page.locator("#moe_stop").click()
        expect(status).to_have_text(re.compile(r"^\s*■ Stopped\s*$"), timeout=30_000)
    finally:
        release.set()

    set_number(page, "moe_train_experts", 2)
    set_number(page, "moe_train_top_k", 3)                           # refused: top-k 3 of 2 experts
    page.locator("#moe_train_button").click()
    expect(page.locator(".toast-body.error").first).to_contain_text("top-k = 3", timeout=30_000)
    expect(status).to_have_text(re.compile(r"^\s*■ Stopped\s*$"), timeout=10_000)   # its line back


def test_a_trigger_while_a_run_goes_leaves_its_line(page, server_url, monkeypatch):
    """Regression: every trigger set the status to "…" in the page, a running one's too, and the run's next
    update wrote its progress back: a drag of the BPE merges slider over a training made the line flicker.
    Here the run shows its first update, then holds; a second press of Train must leave that line."""
    import threading

    from components import moe

    release = threading.Event()

    def first_then_hold(fn, *args, **kwargs):
        yield next(iter(fn(*args, **kwargs)))
        release.wait(60)
    monkeypatch.setattr(moe, "low_priority", first_then_hold)
    try:
        page.goto(f"{server_url}?tab=moe")
        page.locator("[data-tab-id=moe_train]").click()
        status = page.locator("#moe_train_status")
        expect(page.locator("#moe_train_load .annotation-text")).to_contain_text("Press “Train”", timeout=60_000)
        page.locator("#moe_train_button").click()
        expect(status).to_contain_text(re.compile(r"step \*?\*?\d+ / 150"), timeout=60_000)
        line = status.inner_text()
        page.locator("#moe_train_button").click()
        page.wait_for_timeout(1_000)                                     # the page's listener runs at once
        assert status.inner_text() == line
        page.locator("#moe_stop").click()
        expect(status).to_contain_text(re.compile(r"^\s*■ Stopped · step"), timeout=30_000)
    finally:
        release.set()                                                # the held worker ends
