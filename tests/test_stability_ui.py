"""The Normalization tab's training-stability section in a real browser: one page per language."""
import re

import pytest
from playwright.sync_api import expect

from tests.conftest import pushed_margins

pytestmark = pytest.mark.e2e


APP_TABS = ("norms",)                 # this tab alone (conftest.server_url)


OVERFLOW = "#stability_overflow .js-plotly-plot"
FINAL = "#stability_final .js-plotly-plot"
CURVES = "#stability_curves .js-plotly-plot"


def open_section(page, server_url, name):
    page.goto(f"{server_url}?tab=norms")
    tab = page.locator("[data-tab-id=norms]")
    expect(tab).to_have_text(name, timeout=30_000)
    tab.click()
    expect(page.locator(OVERFLOW)).to_be_visible(timeout=60_000)
    page.locator("#stability_overflow").scroll_into_view_if_needed()


def fill(page, elem_id, value, *, submit=False):
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    if submit:
        box.press("Enter")
    box.blur()                                   # blurring a slider's number box fires its release


def test_overflow_and_a_short_sweep(page, server_url, shot):
    page.set_viewport_size({"width": 1366, "height": 900})
    open_section(page, server_url, "Normalization")
    expect(page.locator("#stability_final")).to_contain_text("Press “Run the sweep”")
    # at the default scale 12 the naive float16 softmax overflows: a NaN label, no bar
    labels = "g => g._fullData.filter(t => t.mode === 'text').map(t => t.text.join()).join()"
    assert page.locator(OVERFLOW).evaluate(labels) == "NaN"
    expect(page.locator("#stability_overflow_summary")).to_contain_text("overflowed")
    fill(page, "stability_scale", 5, submit=True)
    page.wait_for_function(f"() => !document.querySelector('{OVERFLOW}')._fullData.some(t => t.mode === 'text')",
                           timeout=30_000)
    expect(page.locator("#stability_overflow_summary")).not_to_contain_text("overflowed")

    # a short sweep streams to its end; Stop is there
    fill(page, "stability_n_lrs", 2, submit=True)
    fill(page, "stability_steps", 20, submit=True)
    fill(page, "stability_width", 16, submit=True)
    fill(page, "stability_lr_min", 0.01)
    page.locator("#stability_run").click()
    status = page.locator("#stability_status").locator("input, textarea")
    expect(status).to_have_value(re.compile(r"learning rate 2 of 2 .* step 20 of 20 · "), timeout=120_000)
    assert page.locator(FINAL).evaluate("g => g._fullData.filter(t => t.mode === 'lines+markers').length") == 4
    # 4 variants × (2 layers + entropy + log Z), and a legend key for each layer's dash
    assert page.locator(CURVES).evaluate("g => g._fullData.length") == 16 + 2
    expect(page.locator("#stability_findings")).to_contain_text("At learning rate 0.1")
    expect(page.locator("#stability_stop")).to_be_visible()
    expect(page.locator(".toast-body")).to_have_count(0)
    page.locator("#stability_final").scroll_into_view_if_needed()
    shot(page, "stability-en")


def test_chinese_text_and_a_clear_error(browser, server_url, shot):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1366, "height": 900})
    page = context.new_page()
    open_section(page, server_url, "归一化")
    expect(page.locator(f"{OVERFLOW} .gtitle")).to_have_text(re.compile("三种数据类型"), timeout=30_000)
    expect(page.locator("#stability_overflow_summary")).to_contain_text("溢出")
    assert pushed_margins(page.locator(OVERFLOW)) == []          # regression: the legend pushed it 12 px
    fill(page, "stability_lr_min", 0.5)
    page.locator("#stability_run").click()
    expect(page.locator(".toast-body").first).to_contain_text("最小学习率（0.5）不能大于最大学习率（0.1）",
                                                             timeout=30_000)
    shot(page, "stability-zh")
    context.close()
