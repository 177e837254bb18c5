"""Share links and data export in a real browser."""
import json
import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e
# The tabs whose links are opened here, the first tab (the tokenizer) among them (conftest.server_url).
APP_TABS = ("tokenizer", "positions", "masks", "moe", "calculator")

PANELS = "#masks_panels .js-plotly-plot"


def test_link_opens_the_tab_with_its_settings(page, server_url, shot):
    page.goto(f"{server_url}?tab=masks&masks_causal=false&masks_text=a%20b%20c&masks_heads=3&masks_window=oops")
    # The warning comes as the link is applied, before the drawing; it stays 10 s, which a cold first draw
    # on a loaded machine can outlast: look for it first.
    expect(page.locator(".toast-body").first).to_contain_text(                                  # bad value skipped,
        re.compile(r"masks_window='oops' \(.+\) ignored: allowed \d+ to \d+"), timeout=30_000)   # and what is allowed
    expect(page.locator("#masks_causal input")).not_to_be_checked(timeout=30_000)
    expect(page.locator("#masks_heads input[type=number]")).to_have_value("3")
    # Regression: the preset stayed "Decoder (GPT): causal" beside the link's unticked causal box.
    expect(page.locator("#masks_preset input[value=custom]")).to_be_checked()
    # The first drawing already uses the link's settings: no causal mask -> everything visible.
    page.wait_for_function(f"() => document.querySelector('{PANELS}')?._fullData[0].z.length === 3")
    assert page.locator(PANELS).evaluate("g => g._fullData[0].z") == [[1, 1, 1]] * 3

    page.locator("#share_masks").click()
    link = page.locator("#share_url_masks textarea")
    expect(link).to_have_value(re.compile(r"^http://127\.0\.0\.1:\d+/\?tab=masks&.*masks_causal=false"),
                               timeout=10_000)
    assert "masks_heads=3" in link.input_value()
    shot(page, "share")


def test_a_link_with_only_a_preset_draws_that_preset(page, server_url):
    """Regression: the preset's name showed while its fields (and every number) stayed Llama-3-8B's. A
    link that sets a preset and none of its fields gets the preset's fields, as choosing it would."""
    page.goto(f"{server_url}?tab=calculator&calc_preset=DeepSeek-V2")
    expect(page.locator("#calc_d_model input")).to_have_value("5120", timeout=30_000)  # deepseek-ai/DeepSeek-V2
    summary = page.locator("#tab_calculator details summary").first
    expect(summary).not_to_contain_text("8.03 B", timeout=30_000)                    # Llama-3-8B's gone
    total, active = (float(x) for x in re.findall(r"([\d.]+) B \(", summary.inner_text()))
    assert round(total) == 236 and round(active) == 21                 # the paper: 236B, 21B activated per token


def test_a_link_to_the_first_tab_draws_it_with_the_links_settings(page, server_url):
    """Gradio selects the first tab as the page mounts, with the controls' defaults: that select must not
    draw the tab the link opens (it would be drawn once, with 400 merges, and never again)."""
    page.goto(f"{server_url}?tab=tokenizer&bpe_merges=120")
    expect(page.locator("#bpe_card")).to_contain_text("Merge 1 of 120", timeout=60_000)


def test_download_figure_data(page, server_url, tmp_path):
    page.goto(f"{server_url}?tab=masks")
    expect(page.locator(PANELS)).to_be_visible(timeout=30_000)
    with page.expect_download() as info:
        page.locator("#download_masks").click()
    path = tmp_path / "data.json"
    info.value.save_as(path)
    data = json.loads(path.read_text())
    assert data["tab"] == "masks" and len(data["figures"]) == 3
    mask = data["figures"][0]["traces"][0]["z"]
    assert mask[0][0] == 1 and mask[0][-1] == 0                        # the causal mask, as numbers


def test_a_bad_link_setting_is_named_in_chinese_on_a_chinese_page(browser, server_url):
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    page.goto(f"{server_url}?tab=positions&pos_view=frequencies&pos_span=oops")
    expect(page.locator(".toast-body").first).to_contain_text(re.compile(r"已忽略链接中的设置 pos_span='oops'（.+）：允许的值为 "),
                                                              timeout=30_000)
    expect(page.locator(".toast-body.warning .toast-title").first).to_contain_text("注意")   # not Gradio's "Warning"
    expect(page.get_by_role("tab", name="频率")).to_have_attribute("aria-selected", "true", timeout=60_000)
    expect(page.locator("#pos_freq_plot .gtitle")).to_contain_text("最慢的一对每 54,410 个词元转一圈", timeout=30_000)
    context.close()


def test_a_link_opens_the_sub_tab_it_was_shared_from(page, server_url):
    """A tab with sub-tabs (FFN & MoE: activations, routing, training) shares the one shown: before, the link
    set E = 16 but opened on the first sub-tab, so the recipient saw another view than the sender."""
    page.goto(f"{server_url}?tab=moe")
    page.get_by_role("tab", name="Routing").click()
    experts = page.locator("#moe_experts input[type=number]")
    experts.fill("16")
    experts.press("Enter")
    page.locator("#share_moe").click()
    link = page.locator("#share_url_moe textarea")
    expect(link).to_have_value(re.compile(r"&view=moe_route$"), timeout=10_000)
    assert "moe_experts=16" in link.input_value()

    page.goto(link.input_value())
    expect(page.get_by_role("tab", name="Routing")).to_have_attribute("aria-selected", "true", timeout=30_000)
    expect(page.locator("#moe_experts input[type=number]")).to_have_value("16")
    expect(page.locator("#moe_route_plot .js-plotly-plot")).to_be_visible(timeout=30_000)
    page.goto(f"{server_url}?tab=moe&view=nowhere")
    expect(page.locator(".toast-body").first).to_contain_text("view", timeout=30_000)


def test_a_text_too_long_for_a_link_is_said_when_sharing(page, server_url):
    """A training text over MAX_TEXT_IN_URL characters is left out of the link: said when the link is made,
    not found out when it opens on an empty corpus."""
    page.goto(f"{server_url}?tab=tokenizer")
    # The first training fills the box with the preset's text when it ends: typing before that is lost.
    expect(page.locator("#bpe_status")).to_contain_text("Trained", timeout=60_000)
    # Regression: the preset's own text (99,976 characters) was warned about, though the preset loads it.
    page.locator("#share_tokenizer").click()
    expect(page.locator("#share_url_tokenizer textarea")).to_have_value(re.compile(r"tab=tokenizer"))
    expect(page.locator("#share_url_tokenizer textarea")).not_to_have_value(re.compile(r"bpe_text"))
    expect(page.locator(".toast-body")).to_have_count(0)
    box = page.locator("#bpe_text textarea")
    box.fill("low lower lowest " * 300)                                       # 5,100 characters
    expect(page.locator("#bpe_corpus input[value=custom]")).to_be_checked()
    page.locator("#share_tokenizer").click()
    expect(page.locator(".toast-body").first).to_contain_text(
        re.compile(r"the link leaves out .+ \(5,100 characters; a link holds at most 4,000\)"), timeout=15_000)
    expect(page.locator("#share_url_tokenizer textarea")).to_have_value(re.compile(r"tab=tokenizer"))
