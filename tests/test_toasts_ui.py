"""Error toasts (components/toasts.py): the newest message only, under a title in the page's language,
closed by the learner's next action, and only by it. Without the page script Gradio titles every toast
"Error", stacks each new message under the old, and keeps the error up for 10 s after a good value has
been drawn."""
import re

import pytest
from playwright.sync_api import expect

from tests.conftest import eventually, slow_down

pytestmark = pytest.mark.e2e
# The tabs these tests raise errors in (conftest.server_url); the toasts' page script comes with every
# app that conftest.launch serves (app.LAUNCH_KWARGS).
APP_TABS = ("positions", "masks", "norms")


@pytest.mark.parametrize("locale, tab, title, first, second", [
    ("zh-CN", "注意力掩码", "出错了", "请至少输入一个句子", "最多 64 个"),
    ("en-US", "Attention masks", "Error", "at least one sentence", "at most 64"),
])
def test_a_new_error_replaces_the_old_and_a_good_value_closes_it(browser, server_url, shot, locale, tab, title,
                                                                first, second):
    context = browser.new_context(locale=locale)
    page = context.new_page()
    page.goto(f"{server_url}?tab=masks")
    page.get_by_role("tab", name=tab, exact=True).click()
    box = page.locator("#masks_text textarea")
    box.fill("")
    box.blur()
    toast = page.locator(".toast-body.error").first
    expect(toast).to_contain_text(first, ignore_case=True, timeout=30_000)
    box.fill("a " * 70)
    box.blur()
    shown = toast.locator(".toast-message-item:visible")
    expect(shown).to_have_count(1)
    expect(shown).to_contain_text(second, timeout=30_000)
    expect(toast.locator(".toast-title")).to_contain_text(title)            # Gradio's own: "Error (2)"
    expect(toast.locator(".toast-count")).to_be_hidden()
    shot(page, f"toast-{locale}")
    box.fill("The cat sat.")
    box.blur()                                                              # a good value: the error goes
    expect(page.locator(".toast-body.error")).to_have_count(0, timeout=5_000)   # well before Gradio's 10 s
    context.close()


def test_an_error_stays_until_the_next_action(page, server_url):
    """Regression: a refused value's error closed after Gradio's 10 s, and the figures went on showing the
    last values drawn beside the refused one with nothing to say so. It now stays until the learner acts."""
    page.clock.install()                                             # the page's timers, moved on below
    page.goto(f"{server_url}?tab=masks")
    expect(page.locator("#masks_panels .js-plotly-plot")).to_be_visible(timeout=30_000)
    box = page.locator("#masks_text textarea")
    box.fill("")
    box.blur()
    toast = page.locator(".toast-body.error")
    expect(toast).to_contain_text("at least one sentence", timeout=30_000)
    page.clock.run_for(60_000)                                       # a minute of the page's time
    page.wait_for_timeout(1_000)                                     # Gradio's close and fade-out, had they come
    expect(toast).to_have_count(1)
    expect(toast).to_be_visible()
    # Regression: at the top right it covered the last tabs of the row (Tensors and Calculator at 1366 px),
    # which could not be clicked while it stayed.
    shown, tabs = toast.bounding_box(), page.locator(".tab-wrapper").first.bounding_box()
    assert shown["y"] > tabs["y"] + tabs["height"], (shown, tabs)
    box.fill("The cat sat.")
    box.blur()
    expect(toast).to_have_count(0)


def open_norms(page, server_url: str, field: str):
    """The norms tab drawn at its defaults: (the gradients figure's title, the number box of ``field``)."""
    page.goto(f"{server_url}?tab=norms")
    title = page.locator("#norm_grads_plot .gtitle").first
    expect(title).to_contain_text("12 layers", timeout=60_000)
    return title, page.locator(f"#{field} input[type=number]")


def test_an_error_raised_while_typing_stays_when_the_value_is_committed(page, server_url):
    """A slider's number box sends each keystroke; the error it causes must not be closed by the blur that
    commits the same bad value (only errors shown before the learner began typing are)."""
    _, box = open_norms(page, server_url, "norm_heads")
    box.click()
    box.press("Control+a")
    box.type("3")                                                   # in range; 128 is not divisible by 3
    toast = page.locator(".toast-body.error")
    expect(toast).to_contain_text("divisible by n_heads = 3", timeout=30_000)
    box.blur()
    page.wait_for_timeout(1_000)                                     # a close would have happened at once
    expect(toast).to_have_count(1)
    box.click()
    box.press("Control+a")
    box.type("2")
    box.blur()
    expect(toast).to_have_count(0, timeout=5_000)


def test_an_error_about_a_value_typed_on_the_way_closes_at_the_next_key(page, server_url):
    """Typing 15 where 2 is the least: the 1 is refused, and when its error comes back before the 5 is
    typed (a busy machine's timing, forced here) the 15 is drawn and the error about 1 must go with it.
    It stayed: only a value committed by the box closed errors, and this one came after typing began."""
    title, box = open_norms(page, server_url, "norm_layers")
    box.click()
    box.press("Control+a")
    box.type("1")
    toast = page.locator(".toast-body.error")
    expect(toast).to_contain_text("L = 1", timeout=30_000)
    box.type("5")
    box.press("Tab")
    expect(title).to_contain_text("15 layers", timeout=30_000)
    expect(toast).to_have_count(0, timeout=5_000)


def test_a_number_box_of_its_own_keeps_the_error_about_what_was_typed(page, server_url):
    """A number box that is not a slider's sends only the value committed. The page script counted its
    keystrokes as values queued behind the request (as a slider's are), closed the error that came back and
    sent the value again, which answered with nothing new: head_dim 127, typed key by key, showed its error
    for ~0.2 s, and the figures went on showing d = 128 with nothing to say so (a learner's trial found it)."""
    page.goto(f"{server_url}?tab=positions")
    expect(page.locator("#pos_rotate_plot .js-plotly-plot")).to_be_visible(timeout=30_000)
    box = page.locator("#pos_head_dim input[type=number]")
    box.click()
    box.press("Control+a")
    box.type("127", delay=150)
    box.press("Enter")
    toast = page.locator(".toast-body.error")
    expect(toast).to_contain_text("127", timeout=30_000)
    page.wait_for_timeout(1_500)                                     # the resend came 0.4 s after the last key
    expect(toast).to_have_count(1)
    expect(toast).to_be_visible()


def test_a_value_typed_behind_an_error_or_clamped_on_blur_is_drawn(page, server_url):
    """Gradio runs a slider's input event once at a time and drops the value queued behind a request that
    fails: typing 15 sent 1 (below the minimum of 2) and never 15, and the figure stayed at the old depth
    under an error about 1. A box that clamps 99 to 24 on blur sent nothing. The page script sends the
    box's value again in both cases (components/toasts.py)."""
    title, box = open_norms(page, server_url, "norm_layers")
    for typed, shown, drawn in (("15", "15", "15 layers"), ("99", "24", "24 layers"), ("7", "7", "7 layers")):
        box.click()
        box.press("Control+a")
        box.type(typed, delay=30)                                   # the next key before 1's error comes back
        box.press("Tab")
        expect(title).to_contain_text(drawn, timeout=30_000)
        expect(box).to_have_value(shown)
        expect(page.locator(".toast-body.error")).to_have_count(0, timeout=5_000)


def test_a_link_value_refused_twice_is_said_once(page, server_url):
    """A link whose values a sub-tab cannot draw is refused by the tab's draw (a warning: the page still
    opens) and by the sub-tab's own event (an error): the same sentence twice, under two titles."""
    page.goto(f"{server_url}?tab=positions&view=extrapolation&pos_factor=1024&pos_ext_train=10000000")
    expect(page.locator(".toast-body.error").first).to_contain_text("too long", timeout=60_000)
    expect(page.locator(".toast-body.warning")).to_have_count(1, timeout=30_000)       # both have come
    expect(page.locator(".toast-body:visible")).to_have_count(1)


def test_a_slider_dragged_past_a_refused_value_draws_where_it_stops(page, server_url, monkeypatch):
    """Regression: with d_model = 128, moving the heads slider from 4 to 8 by keyboard sent 5 (refused: it
    does not divide 128), queued 8 behind it, and Gradio dropped 8 when 5 failed: the slider read 8 under
    an error about 5, and the figure stayed at 4 heads. The page script sends the slider's value again
    (components/toasts.py). Each request is held 1 s, and the later keys are pressed once 5 has reached the
    server, so that they always queue behind it."""
    from components import norms
    open_norms(page, server_url, "norm_heads")
    gradients_drawn(page)
    calls = []                                                      # each request's stack settings
    slow_down(monkeypatch, norms, "_stack_args", seconds=1.0, calls=calls)
    page.locator("#norm_heads input[type=range]").focus()
    page.keyboard.press("ArrowRight")
    eventually(lambda: calls, every=0.02)                           # (behind a run still ending, it waits)
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(page.locator("#norm_heads input[type=number]")).to_have_value("8")
    eventually(lambda: calls[-1]["n_heads"] == 8)
    heads = [call["n_heads"] for call in calls]
    assert heads[0] == 5 and heads[-1] == 8, heads                   # 5 was refused first; 8 was sent
    expect(page.locator(".toast-body.error")).to_have_count(0, timeout=10_000)



def gradients_drawn(page) -> None:
    """Wait until the first gradients' run has ended (its device line no longer ends in "…"): a key pressed
    while it runs waits behind it, and only the last value would be sent."""
    expect(page.locator("#norm_grads_device :is(input, textarea)")).to_have_value(re.compile(r"[^…\s]$"),
                                                                              timeout=60_000)


def test_a_run_refused_after_a_drag_keeps_its_error(page, server_url):
    """Regression: a slider stepped twice (queued steps, by the page script's count), then Train refused
    (learning rate -1): the script took the error for one about a value queued behind the slider's request,
    closed it within 0.4 s and sent the slider again. The refusal of a run is said by its toast alone."""
    open_norms(page, server_url, "norm_layers")
    gradients_drawn(page)
    lr = page.locator("#norm_lr input")
    lr.fill("-1")
    page.locator("#norm_steps input[type=range]").focus()
    page.keyboard.press("ArrowLeft")                                # the training's steps: no event of their own
    page.keyboard.press("ArrowLeft")
    page.locator("#norm_train").click()
    toast = page.locator(".toast-body.error")
    expect(toast).to_contain_text("learning rate", timeout=30_000)
    page.wait_for_timeout(1_500)                                    # the script's resend, had it come (0.4 s)
    expect(toast).to_be_visible()
