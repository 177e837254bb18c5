"""The app on a phone: a touch screen 390 px wide, in a real browser."""
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e
APP_TABS = ("positions", "moe", "tokenizer")     # these tabs alone (conftest.server_url)

HEATMAP = "#pos_relative_plot .js-plotly-plot"
FIGURE = """() => { const g = document.querySelector('%s'); let box = g.parentElement;
    while (getComputedStyle(box).overflowX !== 'auto') box = box.parentElement;
    return {dragmode: g._fullLayout.dragmode, x: g._fullLayout.xaxis.range, y: g._fullLayout.yaxis.range,
            scrollLeft: box.scrollLeft, rows: g.data[0].z.length}; }""" % HEATMAP


def swipe(page, cdp, start, end):
    """A finger from ``start`` to ``end`` (page coordinates of the viewport) in ten moves."""
    def touch(kind, x, y):
        points = [] if kind == "touchEnd" else [{"x": x, "y": y}]
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})
    touch("touchStart", *start)
    for k in range(1, 11):
        touch("touchMove", start[0] + (end[0] - start[0]) * k / 10, start[1] + (end[1] - start[1]) * k / 10)
        page.wait_for_timeout(30)
    touch("touchEnd", *end)
    page.wait_for_timeout(500)


def test_a_swipe_over_a_figure_scrolls_the_page_and_its_box(browser, server_url, page):
    """Regression: on a phone a swipe over a figure zoomed its axes ("Double-click to zoom back out") where
    the learner meant to scroll the page; the figures fill the width there, so scrolling mostly zoomed.
    On a touch screen every figure, also once drawn again, drags nothing (components/touch.py)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone = context.new_page()
    phone.goto(f"{server_url}?tab=positions&view=relative")
    expect(phone.locator(HEATMAP)).to_be_visible(timeout=60_000)
    box = phone.locator("#pos_T input[type=number]")
    box.fill("40")
    box.blur()
    phone.wait_for_function(f"() => document.querySelector('{HEATMAP}').data[0].z.length === 40", timeout=30_000)
    phone.locator(HEATMAP).scroll_into_view_if_needed()
    phone.wait_for_function(f"() => document.querySelector('{HEATMAP}')._fullLayout.dragmode === false",
                            timeout=10_000)                          # also after the figure was drawn again
    before, top = phone.evaluate(FIGURE), phone.evaluate("() => window.scrollY")
    area = phone.locator(HEATMAP).bounding_box()
    cdp = context.new_cdp_session(phone)
    swipe(phone, cdp, (200, area["y"] + 250), (200, area["y"] + 50))          # up: the page scrolls down
    assert phone.evaluate("() => window.scrollY") > top + 100
    phone.locator(HEATMAP).evaluate("g => g.scrollIntoView({block: 'center'})")
    middle = phone.locator(HEATMAP).bounding_box()["y"] + 220                    # the figure's middle, now
    swipe(phone, cdp, (300, middle), (80, middle))                              # left: the figure's box scrolls
    after = phone.evaluate(FIGURE)
    assert after["scrollLeft"] > 100
    assert (after["x"], after["y"]) == (before["x"], before["y"])               # no zoom
    context.close()
    # A mouse keeps the drag to zoom.
    page.goto(f"{server_url}?tab=positions&view=relative")
    expect(page.locator(HEATMAP)).to_be_visible(timeout=60_000)
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert page.locator(HEATMAP).evaluate("g => g._fullLayout.dragmode") == "zoom"    # the script had its frame


def test_a_figures_name_leaves_its_title_in_view(browser, server_url):
    """Regression: a figure's name, floated over its top left, wrapped to two lines on a phone and hid the
    figure's title, which may hold the result (the MoE routing figure's; 11 figures in English)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone = context.new_page()
    phone.goto(f"{server_url}?tab=moe&view=moe_route")
    expect(phone.locator("#moe_route_plot .js-plotly-plot .gtitle")).to_be_visible(timeout=60_000)
    figures = phone.evaluate("""() => [...document.querySelectorAll('.block:has(> .js-plotly-plot)')]
        .filter((block) => block.offsetParent && block.querySelector('.gtitle'))
        .map((block) => [block.id, block.querySelector('[data-testid="block-label"]').getBoundingClientRect(),
                         block.querySelector('.gtitle').getBoundingClientRect()])
        .map(([id, label, title]) => [id, label.bottom > title.top && label.right > title.left])""")
    assert "moe_route_plot" in dict(figures)
    assert [name for name, overlaps in figures if overlaps] == []
    context.close()


def test_an_empty_figures_message_is_whole_on_a_phone(browser, server_url):
    """Regression: the message of a figure waiting for its run was centred in the figure's 840 px, so a phone
    showed "Press “Train”: each expert's sha" and "… and here the loa"."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone = context.new_page()
    phone.goto(f"{server_url}?tab=moe&view=moe_train")
    messages = phone.locator("#moe_train_load .annotation-text, #moe_train_curves .annotation-text")
    expect(messages.first).to_contain_text("Press “Train”", timeout=60_000)
    cut = phone.evaluate("""() => [...document.querySelectorAll('#moe_train_load, #moe_train_curves')].map((block) => {
        const text = block.querySelector('.annotation-text').getBoundingClientRect();
        return text.right - block.getBoundingClientRect().right; }).filter((past) => past > 0)""")
    assert cut == []                                               # px past the visible box, per figure
    context.close()


def test_a_chinese_table_keeps_its_phrases_on_a_phone(browser, server_url):
    """Regression: a squeezed column of a Chinese table stacked its text a character per line (the browser may
    break Chinese between any two characters): "400 次合并内从未合成" took nine lines. Cells now break at spaces
    and punctuation only, and the table scrolls sideways in its box."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  locale="zh-CN")
    phone = context.new_page()
    phone.goto(f"{server_url}?tab=tokenizer")
    expect(phone.locator("#bpe_chars table")).to_be_visible(timeout=60_000)
    stacked = phone.evaluate("""() => [...document.querySelectorAll('#bpe_chars td, #bpe_chars th')]
        .filter((cell) => /[\\u4e00-\\u9fff]{4}/.test(cell.textContent))
        .filter((cell) => { const style = getComputedStyle(cell);
            const text = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
            return text < 3 * parseFloat(style.fontSize); })
        .map((cell) => cell.textContent.trim())""")
    assert stacked == []                                      # room for fewer than three characters a line
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390    # the page does not scroll
    context.close()


def test_small_controls_are_big_enough_for_a_finger(browser, server_url):
    """Regression: on a phone a slider's number box was 22 px high, its reset button 27 × 22 and an accordion's
    header 20 px, under the 24 px a touch target should have at the least."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone = context.new_page()
    phone.goto(f"{server_url}?tab=positions")
    expect(phone.locator("#pos_rotate_plot .js-plotly-plot")).to_be_visible(timeout=60_000)
    sizes = phone.evaluate("""() => [...document.querySelectorAll(
            'input[data-testid="number-input"], .reset-button, button.label-wrap')]
        .filter((control) => control.offsetParent)
        .map((control) => [control.className, control.getBoundingClientRect().height])""")
    assert len(sizes) >= 5
    assert [name for name, height in sizes if height < 24] == []
    context.close()
