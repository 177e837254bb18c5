"""The normalization tab in a real browser (Debian Chromium): draw, change controls, train, stop."""
import re

import pytest
from playwright.sync_api import expect

from tests.conftest import events_sent, gap_under_label, pushed_margins

pytestmark = pytest.mark.e2e


APP_TABS = ("norms",)                 # this tab alone (conftest.server_url)


GRADS = "#norm_grads_plot .js-plotly-plot"
AXES = "#norm_axes_plot .js-plotly-plot"
TRAIN = "#norm_train_plot .js-plotly-plot"


def open_tab(page, server_url, name):
    events = events_sent(page)
    page.goto(f"{server_url}?tab=norms")
    tab = page.locator("[data-tab-id=norms]")
    expect(tab).to_have_text(name, timeout=30_000)
    tab.click()
    # Once in a clean-clone run the first figure was not drawn within 60 s: the events say which step stalled.
    try:
        expect(page.locator(GRADS)).to_be_visible(timeout=60_000)
    except AssertionError as error:
        raise AssertionError(f"the tab's first figure was not drawn; events sent:\n{events()}") from error


def set_slider(page, elem_id, value):
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")
    box.blur()                                   # blurring the number box fires the slider's release


def test_depth_and_placement_change_the_plot_and_training_streams(page, server_url, shot):
    open_tab(page, server_url, "Normalization")
    expect(page.locator("#norm_train_plot")).to_contain_text("Press “Train the four models”")   # not an empty box
    # the gradients follow the first draw (the axes, the waiting figures): 12 layers per placement
    page.wait_for_function(f"() => document.querySelector('{GRADS}')._fullData[0]?.x?.length === 12",
                           timeout=120_000)
    set_slider(page, "norm_layers", 4)
    page.wait_for_function(f"() => document.querySelector('{GRADS}')._fullData[0].x.length === 4", timeout=60_000)
    page.locator("#norm_variants label").filter(has_text="DeepNorm").click()
    page.wait_for_function(f"() => document.querySelector('{GRADS}')._fullData.some(t => t.name === 'DeepNorm')",
                           timeout=60_000)
    expect(page.locator("#norm_summary")).to_contain_text("Post-LN")

    # the axes view: moving the highlighted feature moves BatchNorm's outlined column
    expect(page.locator(AXES)).to_be_visible()
    column = "g => g.layout.shapes.filter(s => s.type === 'rect' && s.xref === 'x4')[0].x0"
    assert page.locator(AXES).evaluate(column) == 1.5
    set_slider(page, "norm_axes_f", 5)
    page.wait_for_function(f"() => document.querySelector('{AXES}').layout.shapes"
                           ".filter(s => s.type === 'rect' && s.xref === 'x4')[0].x0 === 3.5", timeout=30_000)
    expect(page.locator("#norm_axes_check")).to_contain_text("torch.nn.LayerNorm")
    # Regression: the figure's label covered the first line ("input x") of the first panel's two-line title.
    assert gap_under_label(page.locator("#norm_axes_plot"), "input x") >= 0
    # Regression: the highlight sliders went to 8 whatever the shape (2 items, 4 tokens, 6 features by
    # default), and fewer features than the one highlighted answered with an error. They end at the shape.
    assert [page.locator(f"#norm_axes_{c} input[type=range]").get_attribute("max") for c in "btf"] == ["2", "4", "6"]
    set_slider(page, "norm_axes_features", 4)
    expect(page.locator("#norm_axes_f input[type=range]")).to_have_attribute("max", "4")
    expect(page.locator("#norm_axes_f input[type=number]")).to_have_value("4")                  # 5 moved to the end
    page.wait_for_function(f"() => document.querySelector('{AXES}').layout.shapes"
                           ".filter(s => s.type === 'rect' && s.xref === 'x4')[0].x0 === 2.5", timeout=30_000)

    # a short training run streams, then finishes; Stop is there
    set_slider(page, "norm_steps", 10)
    set_slider(page, "norm_warmup", 5)
    page.locator("#norm_train").click()
    expect(page.locator(TRAIN)).to_be_visible(timeout=60_000)
    expect(page.locator("#norm_train_status").locator("input, textarea")).to_have_value(re.compile(r"^✓ Done · 10 / 10"),
                                                                                 timeout=400_000)
    assert page.locator(TRAIN).evaluate("g => g._fullData.filter(t => t.mode === 'lines').length") == 8
    expect(page.locator("#norm_stop")).to_be_visible()
    expect(page.locator(".toast-body")).to_have_count(0)
    shot(page, "norms-en")


def test_chinese_ui_and_a_clear_error(browser, server_url, shot):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1366, "height": 900})
    page = context.new_page()
    open_tab(page, server_url, "归一化")
    expect(page.locator("#norm_grads_plot .gtitle")).to_have_text(re.compile("初始化时"), timeout=30_000)
    # Regression: the Chinese legend's second row pushed the bottom margin 9 px: Plotly drew the figure twice.
    assert pushed_margins(page.locator("#norm_grads_plot .js-plotly-plot")) == []
    set_slider(page, "norm_width", 96)
    set_slider(page, "norm_heads", 5)
    expect(page.locator(".toast-body").first).to_contain_text("必须能被 n_heads = 5 整除", timeout=30_000)   # in Chinese
    shot(page, "norms-zh")
    context.close()


def test_a_refused_training_says_so_in_the_toast_alone(page, server_url):
    """Regression: a refused learning rate left red "Error" labels over the training figure (on its
    "Press 'Train the four models'" text) and over the progress line until a run went through."""
    open_tab(page, server_url, "Normalization")
    lr = page.locator("#norm_lr input")
    lr.fill("-1")
    lr.press("Enter")
    page.locator("#norm_train").click()
    expect(page.locator(".toast-body.error")).to_contain_text("learning rate", timeout=30_000)
    page.locator(".toast-body.error [data-testid='toast-close']").click()
    expect(page.locator(".toast-body")).to_have_count(0)
    shown = "es => es.filter(e => e.checkVisibility({opacityProperty: true, visibilityProperty: true})).length"
    assert page.locator("#norm_train_plot .error, #norm_train_status .error").evaluate_all(shown) == 0
