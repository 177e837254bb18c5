"""Links between tabs in a real browser (Debian Chromium): the KV Cache tab's "Look inside"."""
import re

import pytest
from playwright.sync_api import expect

import app

pytestmark = pytest.mark.e2e


APP_TABS = ("kv", "attention")                 # the two tabs the link joins (conftest.server_url)
DETAIL = "#attn_heads_detail .js-plotly-plot"


def test_look_inside_opens_the_attention_tab_on_the_generated_text(page, server_url, shot):
    """Generate with GQA, then "Look inside": the Attention tab opens on the GQA checkpoint and the prompt
    plus what was generated, drawn; opened again after a longer generation, on its last 128 characters, and
    the view shown redraws (a tab already drawn keeps its figures unless told)."""
    page.goto(f"{server_url}?tab=kv")
    expect(page.locator("#kv_cache_plot .js-plotly-plot")).to_be_visible(timeout=60_000)
    page.locator("#kv_attention label").filter(has_text="GQA").click()
    expect(page.locator("#kv_n_kv input[type=number]")).to_have_value("2")
    box = page.locator("#kv_new_tokens input[type=number]")
    box.fill("30")
    box.press("Enter")
    page.locator("#kv_generate").click()
    expect(page.locator("#kv_status")).to_contain_text("✓ Done · step 30 of 30", timeout=120_000)
    spans = page.locator("#kv_text span")                                 # the prompt, then what was written
    written = spans.nth(0).text_content() + spans.nth(1).text_content()
    assert len(written) == len("The kettle began to sing") + 30

    page.locator("#kv_look_inside").click()
    tab = page.get_by_role("tab", name="Attention", exact=True)
    expect(tab).to_have_attribute("aria-selected", "true", timeout=30_000)
    expect(page.locator("#attn_prompt textarea")).to_have_value(written)
    expect(page.locator("#attn_model input[value=gqa]")).to_be_checked()
    expect(page.locator(f"{DETAIL} .gtitle")).to_have_text(re.compile(rf"query {len(written)} "), timeout=60_000)
    expect(page.locator("#attn_heads_grid .gtitle")).to_contain_text("GQA")
    assert page.locator("#attn_heads_grid .js-plotly-plot").evaluate("g => g._fullData[0].z.length") == len(written)
    expect(page.locator(".toast-body")).to_have_count(0)
    shot(page, "look-inside")

    # Back, a longer generation: the last 128 characters, and the drawn view follows.
    page.get_by_role("tab", name="KV cache").click()
    box.fill("150")
    box.press("Enter")
    page.locator("#kv_generate").click()
    expect(page.locator("#kv_status")).to_contain_text("✓ Done · step 150 of 150", timeout=120_000)
    longer = spans.nth(0).text_content() + spans.nth(1).text_content()
    page.locator("#kv_look_inside").click()
    expect(page.locator("#attn_prompt textarea")).to_have_value(longer[-128:], timeout=30_000)
    rows = "() => document.querySelector('#attn_heads_grid .js-plotly-plot')._fullData[0].z.length"
    page.wait_for_function(f"() => ({rows})() === 128", timeout=60_000)          # each map: 128 × 128

    # From FlashAttention, which reads neither model nor prompt: the link opens the first view that does.
    page.get_by_role("tab", name="FlashAttention").click()
    expect(page.locator("#attn_shared")).to_be_hidden(timeout=30_000)
    page.get_by_role("tab", name="KV cache").click()
    page.locator("#kv_look_inside").click()
    expect(page.get_by_role("tab", name="All heads")).to_have_attribute("aria-selected", "true", timeout=30_000)
    expect(page.locator("#attn_shared")).to_be_visible()
    expect(page.locator(".toast-body")).to_have_count(0)


def test_without_the_attention_tab_the_button_is_hidden():
    config = app.build_demo(only=("kv",)).config
    button = next(c for c in config["components"] if c["props"].get("elem_id") == "kv_look_inside")
    assert button["props"]["visible"] is False
