"""The masks tab in a real browser (Debian Chromium): draw, change a control, see the plot change."""
import re
import time

import pytest
from playwright.sync_api import expect

from tests.conftest import errors_seen, text_overlaps

pytestmark = pytest.mark.e2e


APP_TABS = ("masks",)                 # this tab alone (conftest.server_url)


PANELS = "#masks_panels .js-plotly-plot"


# The panels whose row labels reach into the grid: each y axis's labels against its x axis's left edge.
LABELS_INTO_PANELS = """g => Object.keys(g._fullLayout).filter((k) => /^yaxis\\d*$/.test(k)).filter((k) => {
    const left = g.querySelector(".main-svg").getBoundingClientRect().left + g._fullLayout["x" + k.slice(1)]._offset;
    const id = k.slice(5);
    return [...g.querySelectorAll(`.y${id}tick text`)].some((t) => t.getBoundingClientRect().right > left);
})"""

FIGURES = "#tab_masks .js-plotly-plot"
# Every masks figure drawn at the margins it set (Plotly measured no label to push them, so it drew once),
# no tick label or axis title past its figure's edge, and no row label on the panel to its left: the
# problems, as text.
MARGINS_FIT = """(sel) => [...document.querySelectorAll(sel)].flatMap((g) => {
    const id = g.closest("[id]").id, svg = g.querySelector(".main-svg").getBoundingClientRect();
    const set = g._fullLayout.margin, drawn = g._fullLayout._size;
    const moved = ["l", "r", "t", "b"].filter((side) => Math.abs(drawn[side] - set[side]) > 1).map((side) => `${id} ${side}`);
    const boxes = (s) => [...g.querySelectorAll(s)].map((t) => [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => r.width);
    const out = boxes(".xtick text, .ytick text, .g-xtitle text, .g-ytitle text").filter(([, r]) =>
        r.left < svg.left || r.right > svg.right || r.top < svg.top || r.bottom > svg.bottom).map(([t]) => `${id} cuts ${t}`);
    // A panel's row labels stop short of the panel on its left (long tokens' labels lay over its cells).
    const onLeft = Object.keys(g._fullLayout).filter((k) => /^yaxis[2-9]$/.test(k)).flatMap((k) => {
        const left = Number(k.slice(5)) - 1, x = g._fullLayout["xaxis" + (left > 1 ? left : "")];
        return boxes(`.y${k.slice(5)}tick text`).filter(([, r]) => r.left < svg.left + x._offset + x._length)
            .map(([t]) => `${id} ${k} label ${t} on the panel to its left`);
    });
    return [...moved, ...out, ...onLeft];
})"""
TITLES_ON_LABELS = [(".g-xtitle text", ".xtick text"), (".g-ytitle text", ".ytick text")]


def margins_fit(page) -> list[str]:
    """What :data:`MARGINS_FIT` finds, and every axis title lying on a tick label, in the three masks figures."""
    figures = page.locator(FIGURES)
    expect(figures).to_have_count(3)
    return page.evaluate(MARGINS_FIT, FIGURES) + [
        overlap for i in range(3) for overlap in text_overlaps(figures.nth(i), TITLES_ON_LABELS)]


def mask_grid(page):
    return page.locator(PANELS).evaluate("g => g._fullData[0].z")


def test_preset_changes_the_mask(page, server_url, shot):
    page.goto(f"{server_url}?tab=masks")
    page.get_by_role("tab", name="Attention masks").click()
    expect(page.get_by_role("tab", name="Attention masks")).to_have_attribute("aria-selected", "true")
    expect(page.locator(PANELS)).to_be_visible(timeout=30_000)
    causal = mask_grid(page)
    assert all(row[i + 1:] == [0] * (len(row) - i - 1) for i, row in enumerate(causal))   # lower triangle
    # Regression: the 45° row labels reached 5.4 px into each panel and touched the first column's numbers.
    assert page.locator(PANELS).evaluate(LABELS_INTO_PANELS) == []
    # Regression: Plotly's automargin measured every label before each draw, then drew again to push the
    # margins (a third of each slider move's main thread here, bench/bench_page.py).
    assert margins_fit(page) == []

    page.locator("#masks_preset label").filter(has_text="Encoder").click()
    expect(page.locator("#masks_causal input")).not_to_be_checked()
    page.wait_for_function(f"() => document.querySelector('{PANELS}')._fullData[0].z[0][1] === 1")
    encoder = mask_grid(page)
    assert encoder != causal and all(all(row) for row in encoder)    # sequence 1 has no padding
    # Regression: "Custom" (keep the boxes as they are) answered with Gradio's "didn't return enough
    # output values" error. The Decoder click below runs after it: no toast at the end covers it.
    errors = errors_seen(page)
    page.locator("#masks_preset label").filter(has_text="Custom").click()
    expect(page.locator("#masks_causal input")).not_to_be_checked()

    page.locator("#masks_side label").filter(has_text="left").click()
    page.locator("#masks_seq input[type=number]").fill("2")
    page.locator("#masks_seq input[type=number]").press("Enter")
    page.locator("#masks_preset label").filter(has_text="Decoder").click()
    expect(page.locator("#masks_nan .gtitle")).to_have_text(re.compile(r"fully masked query row"),
                                                            timeout=15_000)
    expect(page.locator(".toast-body")).to_have_count(0)              # no error shown
    assert errors() == []                                             # nor shown and closed since Custom
    shot(page, "masks-en")

    # Regression: under prefix-LM the causal box changed nothing, and nothing said so.
    page.locator("#masks_preset label").filter(has_text="Prefix-LM").click()
    expect(page.locator("#masks_causal input")).to_be_disabled()
    expect(page.locator("#masks_causal")).to_contain_text("already causal after the prefix")
    page.locator("#masks_use_prefix input").uncheck()
    expect(page.locator("#masks_causal input")).to_be_enabled()
    expect(page.locator("#masks_causal")).not_to_contain_text("already causal")


class SlowPresets(dict):
    """The presets' boxes, looked up a second late: a preset's fill is still pending when the next click comes."""

    def get(self, *args):
        time.sleep(1.0)
        return super().get(*args)


def test_a_preset_clicked_while_the_last_is_on_its_way_is_applied(page, server_url, monkeypatch):
    """Regression: a preset clicked while the last one's fill was pending was dropped (Gradio's "once"):
    Prefix-LM chosen, its box unticked, Encoder's mask drawn. Seen on a busy CI machine; a slow fill makes
    it happen every time."""
    from components import masks
    page.goto(f"{server_url}?tab=masks")
    expect(page.locator(PANELS)).to_be_visible(timeout=30_000)
    monkeypatch.setattr(masks, "PRESETS", SlowPresets(masks.PRESETS))
    page.locator("#masks_preset label").filter(has_text="Encoder").click()
    page.locator("#masks_preset label").filter(has_text="Prefix-LM").click()
    expect(page.locator("#masks_use_prefix input")).to_be_checked()
    expect(page.locator("#masks_causal input")).not_to_be_checked()
    # Prefix-LM's mask: the first token sees the second (inside the prefix of 2), not the third.
    page.wait_for_function(f"() => {{ const z = document.querySelector('{PANELS}')._fullData[0].z; "
                           "return z[0][1] === 1 && z[0][2] === 0; }")


def test_chinese_ui_and_a_clear_error(browser, server_url, shot):
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    page.goto(f"{server_url}?tab=masks")
    page.get_by_role("tab", name="注意力掩码").click()
    expect(page.locator("#masks_nan .gtitle")).to_have_text(re.compile("完全遮蔽|没有被完全遮蔽"), timeout=30_000)
    box = page.locator("#masks_text textarea")
    box.fill("露营天气预报很准确吗？ TRANSFORMERS 今天")                  # the widest labels a token gets
    box.blur()
    expect(page.locator(FIGURES)).to_have_count(3)
    page.wait_for_function("sel => [...document.querySelectorAll(sel)].every((g) => "
                           "g._fullLayout.xaxis.ticktext.join() === '露营天气预报很准确…,TRANSFORM…,今天')", arg=FIGURES)
    assert margins_fit(page) == []
    box.fill("")
    box.blur()
    expect(page.locator(".toast-body").first).to_contain_text("请至少输入一个句子", timeout=15_000)   # in Chinese
    shot(page, "masks-zh")
    context.close()


def test_show_sliders_end_at_the_sequences_and_heads(page, server_url):
    """Regression: "Show sequence" went to 16 and "Show head" to 8 whatever the batch, and a text cut to
    fewer lines than the sequence shown answered with an error. They now end at the batch's sequences and
    heads, a value past the new end moves to it, and a slider with one choice is hidden."""
    page.goto(f"{server_url}?tab=masks")
    page.get_by_role("tab", name="Attention masks").click()
    expect(page.locator(PANELS)).to_be_visible(timeout=30_000)
    seq, head = page.locator("#masks_seq input[type=range]"), page.locator("#masks_head input[type=range]")
    expect(seq).to_have_attribute("max", "3")                        # the default text's three lines
    expect(head).to_have_attribute("max", "2")                       # two heads
    errors = errors_seen(page)

    box = page.locator("#masks_seq input[type=number]")
    box.fill("3")
    box.press("Enter")
    page.wait_for_function(f"() => document.querySelector('{PANELS}')._fullLayout.xaxis.ticktext[0] === 'hi'")
    text = page.locator("#masks_text textarea")
    text.fill("the cat sat on the mat\nhi")
    text.blur()
    expect(seq).to_have_attribute("max", "2")
    expect(box).to_have_value("2")
    page.wait_for_function(f"() => document.querySelector('{PANELS}')._fullLayout.xaxis.ticktext.join() === "
                           "'hi,[PAD],[PAD],[PAD],[PAD],[PAD]'")               # the last line, padded

    heads = page.locator("#masks_heads input[type=number]")
    heads.fill("1")
    heads.press("Enter")
    expect(page.locator("#masks_head")).to_be_hidden()
    heads.fill("4")
    heads.press("Enter")
    expect(head).to_have_attribute("max", "4")
    expect(page.locator(".toast-body")).to_have_count(0)
    assert errors() == []

    # A link asking for the third sequence of two and head 2 of 1 draws sequence 2 and head 1, as an edit
    # would (it answered with an error, and left both sliders ending at 3 and 2).
    page.goto(f"{server_url}?tab=masks&masks_text=a+b%0Ac&masks_seq=3&masks_heads=1&masks_head=2")
    expect(page.locator(PANELS)).to_be_visible(timeout=30_000)
    errors = errors_seen(page)
    expect(seq).to_have_attribute("max", "2")
    expect(box).to_have_value("2")
    expect(page.locator("#masks_head")).to_be_hidden()
    page.wait_for_function(f"() => document.querySelector('{PANELS}')._fullLayout.xaxis.ticktext[0] === 'c'")
    expect(page.locator(".toast-body")).to_have_count(0)
    assert errors() == []


def test_paired_sliders_keep_their_labels_on_a_phone(browser, server_url):
    """Regression: on a 390 px phone two sliders in a row squeezed each label to a letter per line
    ("Sho / w / seq / uen / ce"); the number box now moves under the label instead."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(f"{server_url}?tab=masks")
    expect(page.locator(PANELS)).to_be_visible(timeout=30_000)
    for slider in ("#masks_seq", "#masks_head", "#masks_heads", "#masks_window"):
        label = page.locator(f"{slider} .head > label").bounding_box()
        assert label["width"] >= 100 and label["height"] < 60, (slider, label)
    context.close()
