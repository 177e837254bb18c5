"""The Positions tab in a real browser (Debian Chromium): rotate, play, switch views, English and Chinese."""
import re

import pytest
from playwright.sync_api import expect

from tests.conftest import message_shown, pushed_margins, wait_until_still

pytestmark = pytest.mark.e2e


APP_TABS = ("positions", "masks")       # this tab, and one to leave it for (Play pauses): conftest.server_url


ROTATE = "#pos_rotate_plot .js-plotly-plot"
CLOCK = "#pos_clock_plot .js-plotly-plot"


def open_tab(page, server_url, label):
    page.goto(f"{server_url}?tab=positions")
    page.locator("[data-tab-id=positions]").click()
    expect(page.get_by_role("tab", name=label)).to_have_attribute("aria-selected", "true")
    expect(page.locator(ROTATE)).to_be_visible(timeout=60_000)


def test_rotate_play_and_conventions(page, server_url, shot):
    open_tab(page, server_url, "Positions (RoPE)")
    title = page.locator(f"{ROTATE} .gtitle")
    expect(title).to_have_text(re.compile(r"q at position m = 5, k at n = 2"), timeout=30_000)
    first = page.locator(ROTATE).evaluate("g => g.data.find(t => t.name === 'q rotated to m' && t.xaxis === 'x').x[1]")

    box = page.locator("#pos_m input[type=number]")
    box.fill("40")
    box.press("Enter")
    expect(title).to_have_text(re.compile(r"m = 40, k at n = 2"), timeout=15_000)
    moved = page.locator(ROTATE).evaluate("g => g.data.find(t => t.name === 'q rotated to m' && t.xaxis === 'x').x[1]")
    assert moved != first
    # Regression: the legend and the pair axis pushed the bottom margins 2 and 3 px, so Plotly drew each
    # frame of Play twice.
    assert pushed_margins(page.locator(ROTATE)) == pushed_margins(page.locator(CLOCK)) == []

    page.locator("#pos_both input").check()
    page.locator("#pos_play").click()
    page.wait_for_function("() => +document.querySelector('#pos_m input[type=number]').value >= 43", timeout=20_000)
    page.locator("#pos_pause").click()
    wait_until_still(page, "#pos_m input[type=number]")                      # times out if Play goes on
    # m, n and the title read in one go: a frame that lands between two reads cannot split them.
    stopped_m, stopped_n, shown = page.evaluate(
        """() => [+document.querySelector('#pos_m input[type=number]').value,
                  +document.querySelector('#pos_n input[type=number]').value,
                  document.querySelector('#pos_rotate_plot .gtitle').textContent]""")
    assert stopped_n - 2 == stopped_m - 40 > 0                                # k moved with q
    assert re.search(rf"m = {stopped_m}, k at n = {stopped_n}", shown), shown
    shot(page, "rotate-en")

    page.locator("#pos_play").click()                                         # leaving the tab pauses Play
    page.wait_for_function(f"() => +document.querySelector('#pos_m input[type=number]').value > {stopped_m}",
                           timeout=20_000)
    page.locator("[data-tab-id=masks]").click()
    wait_until_still(page, "#pos_m input[type=number]")
    page.locator("[data-tab-id=positions]").click()

    page.get_by_role("tab", name="Conventions").click()
    pairing = page.locator("#pos_pairing_plot .gtitle")
    expect(pairing).to_have_text(re.compile(r"perm = \[0, 2, 4, 6, 1, 3, 5, 7\]"), timeout=30_000)
    dim = page.locator("#pos_conv_dim input[type=number]")
    dim.fill("12")
    dim.press("Enter")
    expect(pairing).to_have_text(re.compile(r"perm = \[0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11\]"), timeout=15_000)
    expect(page.locator("#pos_conv_check")).to_contain_text("in float64")

    page.get_by_role("tab", name="Extrapolation").click()
    expect(page.locator("#pos_ext_table")).to_contain_text("original RoPE", timeout=30_000)
    page.locator("#pos_llama31").click()
    expect(page.locator("#pos_base input")).to_have_value("500000", timeout=15_000)
    expect(page.locator("#pos_ext_table")).to_contain_text("nothing (base 500,000)", timeout=15_000)
    expect(page.locator(".toast-body")).to_have_count(0)
    shot(page, "extrapolation-en")
    # Regression: with every method unticked, the Llama 3.1 button set its settings and left nothing to draw
    # (the refusal came again, naming the methods by their ids).
    for box in page.locator("#pos_methods input[type=checkbox]").all():
        box.uncheck()
    expect(message_shown(page, "tick at least one method to compare")).to_be_visible(timeout=15_000)
    page.locator("#pos_llama31").click()
    llama = page.locator("#pos_methods label").filter(has_text="Llama 3.1").locator("input")
    expect(llama).to_be_checked(timeout=15_000)
    expect(page.locator("#pos_methods input:checked")).to_have_count(1)
    expect(page.locator(".toast-body")).to_have_count(0, timeout=15_000)
    expect(page.locator("#pos_ext_table")).to_contain_text("Llama 3.1")
    # Regression: Gradio's prose breaks anywhere: the narrow first column's header read "metho|d".
    # Polled: a table being replaced by the next update has no rects for a moment (read once, CI saw 0);
    # a header broken in two keeps 2 and times out.
    page.wait_for_function("""() => { const th = document.querySelector('#pos_ext_table th');
        if (!th) return false; const r = document.createRange(); r.selectNodeContents(th);
        return r.getClientRects().length === 1; }""", timeout=15_000)


def test_chinese_figures_and_a_clear_error(browser, server_url, shot):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1366, "height": 900})
    page = context.new_page()
    open_tab(page, server_url, "位置编码（RoPE）")
    expect(page.locator(f"{ROTATE} .gtitle")).to_have_text(re.compile("q 位于位置 m = 5"), timeout=30_000)
    assert pushed_margins(page.locator(ROTATE)) == pushed_margins(page.locator(CLOCK)) == []
    page.get_by_role("tab", name="相对位置").click()
    expect(page.locator("#pos_relative_plot .gtitle")).to_have_text(re.compile("分数只取决于 n − m"), timeout=30_000)
    shot(page, "relative-zh")
    head_dim = page.locator("#pos_head_dim input")
    head_dim.fill("7")
    head_dim.press("Enter")
    expect(page.locator(".toast-body").first).to_contain_text("头维度 d = 7 是奇数", timeout=15_000)   # in Chinese
    page.get_by_role("tab", name="正弦 · RoPE · ALiBi").click()                  # a view that has no d draws
    expect(page.locator("#pos_alibi_plot .gtitle")).to_have_text(re.compile("ALiBi 每个头的偏置"), timeout=30_000)
    shot(page, "compare-zh")
    context.close()


def test_share_link_opens_the_view_with_its_settings(page, server_url):
    page.goto(f"{server_url}?tab=positions&pos_view=extrapolation&pos_factor=4&pos_methods=%5B%22pi%22%2C%22llama3%22%5D")
    expect(page.get_by_role("tab", name="Extrapolation")).to_have_attribute("aria-selected", "true", timeout=60_000)
    table = page.locator("#pos_ext_table")
    expect(table).to_contain_text("s = 4, L = 8,192", timeout=60_000)
    expect(table).to_contain_text("position interpolation")
    expect(table).not_to_contain_text("original RoPE")
    page.locator("#share_positions").click()
    expect(page.locator("#share_url_positions textarea")).to_have_value(re.compile(r"pos_view=extrapolation"),
                                                                        timeout=15_000)


def test_a_link_naming_only_the_sub_tab_opens_it(page, server_url):
    """``&view=relative`` (the sub-tab a browser's share link names) opened the Rotate view: the draw
    selects the sub-tab its hidden view control names, which the link left at rotate."""
    page.goto(f"{server_url}?tab=positions&view=relative")
    expect(page.get_by_role("tab", name="Relative position")).to_have_attribute("aria-selected", "true",
                                                                               timeout=60_000)
    expect(page.locator("#pos_relative_plot .js-plotly-plot")).to_be_visible(timeout=30_000)
    expect(page.get_by_role("tab", name="Rotate")).to_have_attribute("aria-selected", "false")

    # A shared box typed into, then another sub-tab clicked: the box's blur redraws the view on screen and
    # must not select it again (the first click went back to Relative position).
    page.locator("#pos_base input").fill("500000")
    page.get_by_role("tab", name="Extrapolation").click()
    ntk = f"{500000 * 8 ** (128 / 126):,.0f}"                     # base · s^(d/(d−2)), s = 8, d = 128
    expect(page.locator("#pos_ext_table")).to_contain_text(ntk, timeout=30_000)
    expect(page.get_by_role("tab", name="Extrapolation")).to_have_attribute("aria-selected", "true")
