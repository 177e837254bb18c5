"""The Attention tab's FlashAttention view in a real browser: step through the tiles, play, measure, stop."""
import re

import pytest
from playwright.sync_api import expect

from tests.conftest import gap_under_label, slow_down, text_overlaps, wait_until_still

pytestmark = pytest.mark.e2e


APP_TABS = ("attention",)                 # this tab alone (conftest.server_url)


TITLE = "#attn_tiles_plot .gtitle"
# A figure's subplot titles, side by side (four in the tiles figure, three in the rows one): no two may meet.
TITLES_SIDE_BY_SIDE = [(f'.annotation[data-index="{i}"] .annotation-text', f'.annotation[data-index="{i + 1}"] .annotation-text')
                       for i in range(3)]


def open_view(page, server_url, tab_name):
    """The Attention tab, then its FlashAttention sub-tab (drawn when first selected)."""
    page.goto(f"{server_url}?tab=attention")
    page.locator("[data-tab-id=attention]").click()
    expect(page.get_by_role("tab", name=tab_name, exact=True)).to_have_attribute("aria-selected", "true")
    page.locator("#attn_sub_flash-button, [data-tab-id=flash]").first.click()
    expect(page.locator(TITLE)).to_be_visible(timeout=60_000)


def test_a_second_step_pressed_while_the_first_is_on_its_way_moves_again(page, server_url, monkeypatch):
    """Regression: ▶ pressed twice moved one tile when the second press came before the first landed
    (Gradio's default trigger mode drops a trigger while its event is pending). Slowed here so that it
    always does; a learner on a distant Space double-clicks within a round trip."""
    from components import attention_flash
    open_view(page, server_url, "Attention")
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^Tile 1 of 10"))
    slow_down(monkeypatch, attention_flash, "_views")
    page.locator("#attn_next").click()
    page.locator("#attn_next").click()
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^Tile 3 of 10"), timeout=15_000)
    page.locator("#attn_prev").click()
    page.locator("#attn_prev").click()
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^Tile 1 of 10"), timeout=15_000)


def test_step_play_and_change_the_block(page, server_url, shot):
    open_view(page, server_url, "Attention")
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^Tile 1 of 10: query rows 0–3 × keys 0–3"))
    expect(page.locator("#attn_status")).to_contain_text("6 of 16 tiles skipped")
    page.locator("#attn_next").click()
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^Tile 2 of 10: query rows 4–7 × keys 0–3"))
    expect(page.locator("#attn_recurrence")).to_contain_text("Query row")
    page.locator("#attn_play").click()
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^Tile 10 of 10"), timeout=30_000)
    expect(page.locator("#attn_status")).to_contain_text("16 of 16 output rows final")
    expect(page.locator("#attn_status")).to_contain_text("✓")
    assert wait_until_still(page, "#attn_step input[type=number]") == "10"      # Play stopped at the end
    page.locator("#attn_prev").click()
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^Tile 9 of 10"))
    shot(page, "flash-en")

    block = page.locator("#attn_block input[type=number]")
    block.fill("5")
    block.press("Enter")
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^Tile (\d+) of 10"))          # 4×4 grid, 6 skipped
    expect(page.locator("#attn_status")).to_contain_text("6 of 16 tiles skipped")
    expect(page.locator(".toast-body")).to_have_count(0)

    # Selecting another view pauses Play (the view's select event, components.share.show_event).
    step = "#attn_step input[type=number]"
    page.locator(step).fill("1")
    page.locator(step).press("Enter")
    page.locator("#attn_play").click()
    page.wait_for_function(f"() => +document.querySelector('{step}').value >= 3", timeout=30_000)
    page.locator("#attn_sub_heads-button, [data-tab-id=heads]").first.click()
    assert int(wait_until_still(page, step)) < 10                            # 10 if Play went on to the end

    # Regression: on a tablet or a phone (a figure keeps 840 px and scrolls) the rows figure's titles ran
    # into each other; at 900 px they were 9 px apart.
    page.locator("#attn_sub_flash-button, [data-tab-id=flash]").first.click()
    page.set_viewport_size({"width": 900, "height": 900})
    for figure in ("#attn_tiles_plot .js-plotly-plot", "#attn_rows_plot .js-plotly-plot"):
        page.wait_for_function(f"() => document.querySelector('{figure} .main-svg').getBoundingClientRect().width <= 860")
        assert text_overlaps(page.locator(figure), TITLES_SIDE_BY_SIDE) == []
    assert gap_under_label(page.locator("#attn_rows_plot"), "Running max m") >= 0       # two lines, under the label


def test_measure_the_cost_then_stop_a_long_sweep(page, server_url, shot):
    open_view(page, server_url, "Attention")
    # Regression: the default choice ran past its box ("auto (this device's largest: 16K on", the arrow over it).
    expect(page.locator("#attn_max_T input")).to_have_value(re.compile("^auto"))
    assert page.locator("#attn_max_T input").evaluate("box => box.scrollWidth <= box.clientWidth")
    page.locator("#attn_max_T input").click()
    page.get_by_role("option", name="1,024", exact=True).click()
    page.locator("#attn_measure").click()
    expect(page.locator("#attn_cost_status")).to_contain_text("SDPA ran", timeout=60_000)
    expect(page.locator("#attn_cost_device :is(input, textarea)")).to_have_value(re.compile(r"^✓ Done · .*\d s$"),
                                                                             timeout=60_000)   # ended
    naive = page.locator("#attn_cost_plot .js-plotly-plot").evaluate(
        "g => g._fullData.filter(t => t.name.startsWith('naive') && t.xaxis === 'x')[0].x.length")
    assert naive == 3                                                  # T = 256, 512, 1024
    expect(page.locator("#attn_kv_plot .js-plotly-plot")).to_be_visible()
    page.locator("#attn_cost_status").scroll_into_view_if_needed()
    shot(page, "cost-en")

    page.locator("#attn_max_T input").click()
    page.get_by_role("option", name=re.compile("^auto")).click()
    page.locator("#attn_measure").click()
    # "…" alone is the page's mark of a run not yet begun (components.common.long_run): wait for a measurement.
    expect(page.locator("#attn_cost_device :is(input, textarea)")).to_have_value(re.compile(r"[\d.]+ s …$"),
                                                                             timeout=60_000)
    page.locator("#attn_stop").click()
    stopped = wait_until_still(page, "#attn_cost_device :is(input, textarea)", quiet_ms=4000)
    # Regression: the line kept its "…" after Stop, as if the sweep still ran, and nothing said it had stopped.
    assert re.fullmatch(r"■ Stopped · .+ · [\d.]+ s", stopped), stopped     # before the sweep's end


def test_chinese_ui_and_a_clear_error(browser, server_url, shot):
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    open_view(page, server_url, "注意力")
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^第 1 / 10 个分块"))
    page.locator("#attn_next").click()
    expect(page.locator(TITLE)).to_have_text(re.compile(r"^第 2 / 10 个分块"))
    expect(page.locator("#attn_recurrence")).to_contain_text("查询行")
    shot(page, "flash-zh")
    block = page.locator("#attn_block input[type=number]")
    block.fill("0")
    block.press("Enter")
    expect(page.locator(".toast-body").first).to_contain_text("分块大小 = 0：必须是 1 到 64 之间的整数",
                                                              timeout=15_000)
    shot(page, "error-zh")
    context.close()
