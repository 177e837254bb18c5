"""The KV Cache tab in a real browser (Debian Chromium): plan, switch variant, generate, stop."""
import re
import time

import pytest
from playwright.sync_api import expect

from tests.conftest import pushed_margins, text_overlaps

pytestmark = pytest.mark.e2e


APP_TABS = ("kv",)                 # this tab alone (conftest.server_url)


CACHE = "#kv_cache_plot .js-plotly-plot"


ROWS = ("() => document.querySelector('" + CACHE + "')._fullData.filter(t => t.type === 'heatmap')"
        ".flatMap(t => Array.from(t.z || [], r => r.length))")


def heatmap_lengths(page) -> list[int]:
    """The number of filled positions of each cached row (K or V of a KV head, or MLA's latent or RoPE key)."""
    return page.evaluate(ROWS)


LABEL_HEIGHT = ("id => document.querySelector(`#${id} label span, #${id} [data-testid=block-info]`)"
                ".getBoundingClientRect().height")


def assert_one_line_label(page, elem_id: str) -> None:
    """Regression: the KV-heads slider's long label wrapped into a three-line badge beside its number box
    (clipped in narrower columns). Its label is now as tall as a one-word label's; the rest is info text."""
    assert page.evaluate(LABEL_HEIGHT, elem_id) == page.evaluate(LABEL_HEIGHT, "kv_new_tokens")


def set_slider(page, elem_id: str, value: int) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def open_tab(page, server_url: str, name: str) -> None:
    page.goto(f"{server_url}?tab=kv")
    tab = page.get_by_role("tab", name=name)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    expect(page.locator(CACHE)).to_be_visible(timeout=60_000)


def test_switch_variant_generate_and_stop(page, server_url, shot):
    open_tab(page, server_url, "KV cache")
    assert not any(heatmap_lengths(page))                                             # preallocated, empty
    # Regression: the presets' legend pushed the bottom margin 77 px, so Plotly drew the figure twice.
    assert pushed_margins(page.locator("#kv_scale_plot .js-plotly-plot")) == []
    assert_one_line_label(page, "kv_n_kv")
    assert_one_line_label(page, "kv_temperature")

    page.locator("#kv_attention label").filter(has_text="GQA").click()
    page.wait_for_function(f"() => document.querySelector('{CACHE}').data.filter(t => t.type === 'heatmap')"
                           ".reduce((n, t) => n + t.z.length, 0) === 16")            # 4 layers × K,V × 2 heads
    expect(page.locator("#kv_n_kv input[type=number]")).to_have_value("2")
    expect(page.locator("#kv_variant")).to_contain_text("2 × 2 × 32 = 128 numbers")

    set_slider(page, "kv_new_tokens", 60)
    page.locator("#kv_generate").click()
    # The run's end, not its last step: Generate is "once" per run, and a click between the last step and
    # the stream's end (a worker starved of CPU by the browser takes seconds to close) is dropped.
    expect(page.locator("#kv_status")).to_contain_text("✓ Done · step 60 of 60", timeout=120_000)
    expect(page.locator("#kv_status")).to_contain_text("identical tokens so far ✓")
    prompt = page.locator("#kv_prompt textarea").input_value()
    lengths = heatmap_lengths(page)
    assert len(lengths) == 16 and set(lengths) == {len(prompt) + 59}
    generated = page.locator("#kv_text span").nth(1).text_content()
    assert len(generated) == 60
    expect(page.locator("#kv_growth_plot .js-plotly-plot")).to_contain_text("without / with the cache")
    # Regression: the speed-up note sat in the time panel's top left, over the prefill's diamond.
    notes = page.locator("#kv_growth_plot .js-plotly-plot").evaluate(
        "g => g.layout.annotations.filter(a => /without \\/ with/.test(a.text)).map(a => a.y)")
    assert notes == [1.0]                                             # in the panel's title, above the plot
    # Regression: the time panel's "0" (ms) and its first context tick met at the corner.
    assert text_overlaps(page.locator("#kv_growth_plot .js-plotly-plot"),
                         [(".xtick text", ".ytick text"), (".x2tick text", ".y2tick text")]) == []
    # Regression: the layer labels and the bytes axis pushed margins (12 and 8 px), so Plotly drew both
    # figures twice on every update of the stream.
    assert pushed_margins(page.locator(CACHE)) == pushed_margins(page.locator("#kv_growth_plot .js-plotly-plot")) == []
    expect(page.locator(".toast-body")).to_have_count(0)
    shot(page, "kv-en")

    # 480 tokens take seconds (the uncached decode alone is ~190 GFLOP): Stop lands mid-way.
    set_slider(page, "kv_new_tokens", 480)
    page.locator("#kv_generate").click()
    expect(page.locator("#kv_status")).to_contain_text(re.compile(r"step \d+ of 480"), timeout=60_000)
    page.locator("#kv_stop").click()
    # Said, with the step it reached (before: nothing); the stream is closed first, so nothing overwrites it.
    # The Markdown itself: Gradio may mark the cancelled event's outputs "Error" beside it, on a loaded machine.
    status = page.locator("#kv_status [data-testid=markdown]")
    # (On a runner starved of CPU the 480 tokens may end first: then the line says so, and Stop leaves it.)
    expect(status).to_contain_text(re.compile(r"^\s*(■ Stopped · step \d+|✓ Done · step 480) of 480"), timeout=30_000)
    stopped = status.text_content()
    time.sleep(2.5)
    assert status.text_content() == stopped                                              # no more updates
    # That Stop lands mid-way is tested through the API (tests/test_kv_api.py): on a runner starved of
    # CPU the page took longer to send Stop than the worker took to finish 480 tokens.


def test_chinese_mla_and_a_clear_error(browser, server_url, shot):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    open_tab(page, server_url, "KV 缓存")
    assert_one_line_label(page, "kv_n_kv")
    assert_one_line_label(page, "kv_temperature")
    page.locator("#kv_attention label").filter(has_text="MLA").click()
    page.wait_for_function(f"() => document.querySelector('{CACHE}').data.filter(t => t.type === 'heatmap')"
                           ".reduce((n, t) => n + t.z.length, 0) === 8")             # 4 layers × (latent, RoPE key)
    set_slider(page, "kv_new_tokens", 40)
    page.locator("#kv_generate").click()
    expect(page.locator("#kv_status")).to_contain_text("✓ 已完成 · 第 40 / 40 步", timeout=120_000)   # ended
    expect(page.locator("#kv_groups_plot .js-plotly-plot")).to_contain_text("c：潜在向量（32 个数）")
    assert pushed_margins(page.locator(CACHE)) == pushed_margins(page.locator("#kv_growth_plot .js-plotly-plot")) == []
    shot(page, "kv-zh")

    box = page.locator("#kv_prompt textarea")
    box.fill("价格 42")
    page.locator("#kv_generate").click()
    expect(page.locator(".toast-body").first).to_contain_text("以下字符不在其中", timeout=30_000)     # in Chinese
    context.close()


def test_new_tokens_end_where_the_prompt_leaves_the_context(page, server_url):
    """Regression: the slider offered 511 new tokens after any prompt; after the 24-character default, 489
    to 511 were refused ("the prompt (24 tokens) plus 511 new tokens is 535 …")."""
    open_tab(page, server_url, "KV cache")
    ends = "() => +document.querySelector('#kv_new_tokens input[type=range]').max"
    page.wait_for_function(f"() => ({ends})() === {512 - 24}", timeout=30_000)
    prompt = page.locator("#kv_prompt textarea")
    prompt.fill("The kettle began to sing " * 12)                          # 300 characters
    prompt.blur()
    page.wait_for_function(f"() => ({ends})() === 212", timeout=30_000)
    expect(page.locator("#kv_new_tokens input[type=number]")).to_have_value("200")   # still within: kept
    set_slider(page, "kv_new_tokens", 500)
    page.locator("#kv_new_tokens input[type=number]").blur()             # the box clamps to its end on blur
    expect(page.locator("#kv_new_tokens input[type=number]")).to_have_value("212", timeout=10_000)


def test_a_refused_generation_then_stop_says_nothing_ran(page, server_url):
    """Regression: a Generate refused before it started put the empty line back, and a Stop after it wrote
    "■ Stopped" though nothing ran."""
    open_tab(page, server_url, "KV cache")
    prompt = page.locator("#kv_prompt textarea")
    prompt.fill("")
    prompt.blur()                                                         # the plan refuses it first
    expect(page.locator(".toast-body.error").first).to_contain_text("the prompt is empty", timeout=30_000)
    page.evaluate("""() => { const status = document.querySelector('#kv_status'); window.__kvLines = [];
        new MutationObserver(() => window.__kvLines.push(status.innerText.trim()))
            .observe(status, { childList: true, subtree: true, characterData: true }); }""")
    page.locator("#kv_generate").click()
    # Generate's own refusal: its "…" mark, then the empty line put back.
    page.wait_for_function("() => window.__kvLines.includes('…') && window.__kvLines.at(-1) === ''", timeout=30_000)
    page.locator("#kv_stop").click()
    page.wait_for_timeout(1_500)                                          # Stop's mark is a request away
    assert page.locator("#kv_status").inner_text().strip() == ""
