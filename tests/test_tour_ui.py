"""A tour of every tab in a real browser: English, Chinese, and a phone-sized screen."""
import pytest
from playwright.sync_api import expect

import app
from tests.conftest import broken_words

pytestmark = pytest.mark.e2e

VIEWPORTS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


# English on both screens (its labels are the longer ones), Chinese where space is short.
@pytest.mark.parametrize("screen, locale", [("desktop", "en-US"), ("phone", "en-US"), ("phone", "zh-CN")])
def test_every_tab_opens_and_draws(browser, server_url, shot, locale, screen):
    context = browser.new_context(locale=locale, viewport=VIEWPORTS[screen])
    page = context.new_page()
    lang = "zh-CN" if locale == "zh-CN" else "en"
    page.goto(server_url)
    expect(page.locator("button[role=tab]").first).to_be_visible(timeout=30_000)
    for tab_id, label_key, _ in app.TABS:
        label = app.i18n.translations[lang][label_key]
        tab = page.locator(f"[data-tab-id={tab_id}]").filter(visible=True)
        if tab.count() == 0:        # on a phone, tabs overflow into a menu whose buttons carry only their label
            page.locator("button[aria-label='More tabs']").first.click()      # the app's tab bar comes first
            tab = page.locator(".overflow-dropdown button").filter(has_text=label)
        expect(tab.first).to_have_text(label)
        tab.first.click()
        panel = page.locator(f"#tab_{tab_id}")
        expect(panel).to_be_visible(timeout=15_000)
        # Every tab draws when it is first shown.
        expect(panel.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)
        # The page itself never scrolls sideways (a wide figure or table scrolls inside its own box).
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
        # Regression: on a phone Gradio's Markdown broke table cells anywhere ("c h a r a c t e r s", a letter a line).
        assert broken_words(panel, ".prose td, .prose th") == []
        expect(page.locator(".toast-body")).to_have_count(0)
        shot(page, f"{tab_id}-{screen}-{lang}")
    context.close()


def test_a_multi_panel_figure_keeps_its_width_on_a_tablet(browser, server_url):
    """At 800 px the figure column is ~390 px: the six gradient panels' ticks and titles ran into each other.
    Below 1000 px a figure keeps 840 px and scrolls sideways in its own box; the page does not."""
    context = browser.new_context(locale="zh-CN", viewport={"width": 800, "height": 1000})
    page = context.new_page()
    page.goto(f"{server_url}?tab=norms")
    page.wait_for_function("() => document.querySelector('#norm_grads_plot .js-plotly-plot')"
                           "?.getBoundingClientRect().width >= 840", timeout=60_000)
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    # Regression: the box hid its overflow (Gradio's own style), so the panels past its edge were cut off.
    box = page.locator("#norm_grads_plot")
    assert box.evaluate("b => getComputedStyle(b).overflowX") == "auto"
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")                     # there is more to scroll to
    context.close()
