"""The Tensors tab in a real browser (Debian Chromium): layout chains, the moved number formats and
their old links, the matmul sweep, in English and Chinese."""
import re

import pytest
from playwright.sync_api import expect

from tests.conftest import pushed_margins

pytestmark = pytest.mark.e2e


APP_TABS = ("tensors",)                 # this tab alone (conftest.server_url)


MEMORY = "#tensors_memory .js-plotly-plot"
VIEW = "#tensors_view .js-plotly-plot"


def open_tensors(page, server_url, name="Tensors"):
    page.goto(f"{server_url}?tab=tensors")
    tab = page.get_by_role("tab", name=name, exact=True)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    expect(page.locator(MEMORY)).to_be_visible(timeout=30_000)


def test_layout_chain_a_refused_view_and_a_preset(page, server_url, shot):
    open_tensors(page, server_url)
    expect(page.locator("#tensors_table")).to_contain_text("[24, 4, 8, 1]", timeout=15_000)   # after transpose(1, 2)
    assert page.locator(MEMORY).evaluate("g => g._fullData[1].y.length") == 3          # original + 2 steps
    assert pushed_margins(page.locator(MEMORY)) == []            # regression: the axis title pushed it 3 px
    shot(page, "layout-split")

    ops = page.locator("#tensors_ops textarea")
    ops.fill("transpose(0, 1)\nview(48)\nreshape(48)")
    ops.press("Enter")                                  # a key typed (fill alone fires no input event)
    ops.blur()
    table = page.locator("#tensors_table")
    expect(table).to_contain_text("view size is not compatible", timeout=15_000)      # PyTorch's own message
    expect(table).to_contain_text("view never copies")                                # and why
    expect(table).to_contain_text("copies: a new storage of 48 elements")             # reshape had to copy
    # The refused step's long message wraps inside its cell: every column stays in the box.
    assert table.evaluate("e => [e.querySelector('table').scrollWidth, e.clientWidth]") == [
        table.evaluate("e => e.clientWidth")] * 2
    expect(page.locator("#tensors_preset input[value=custom]")).to_be_checked()
    expect(page.locator(".toast-body")).to_have_count(0)

    page.locator("#tensors_preset label").filter(has_text="expanded bias").click()
    expect(page.locator("#tensors_shape input")).to_have_value("4")
    expect(table).to_contain_text("[0, 1]", timeout=15_000)                            # expand's stride 0
    step = page.locator("#tensors_step input[type=number]")
    step.fill("2")
    step.press("Enter")
    expect(page.locator(f"{VIEW} .gtitle")).to_contain_text("Step 2: expand(3, 4)", timeout=15_000)
    shot(page, "layout-bias")

    shape = page.locator("#tensors_shape input")
    shape.fill("16, 17")
    shape.press("Enter")
    expect(page.locator(".toast-body").first).to_contain_text("272 elements: at most 256", timeout=15_000)


def test_old_number_formats_link_opens_the_new_place(page, server_url, shot):
    page.goto(f"{server_url}?tab=calculator&calc_value=65520")
    expect(page.get_by_role("tab", name="Tensors", exact=True)).to_have_attribute("aria-selected", "true",
                                                                                  timeout=30_000)
    expect(page.get_by_role("tab", name="Number formats")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#tensors_value input")).to_have_value("65520")
    expect(page.locator("#tensors_formats_table")).to_contain_text("65520.0 stored in each format", timeout=30_000)
    expect(page.locator("#tensors_formats_table")).to_contain_text("overflow")
    shot(page, "formats-old-link")


def test_matmul_sweep_in_chinese(browser, server_url, shot):
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    open_tensors(page, server_url, "张量")
    expect(page.locator("#tensors_table")).to_contain_text("原张量的存储", timeout=15_000)
    # A preset's comments in the page's language; its link leaves its text out, so that whoever opens it
    # reads the comments in their own language.
    ops = page.locator("#tensors_ops textarea")
    page.locator("#tensors_preset label").filter(has_text="它的逆操作").click()
    expect(ops).to_have_value(re.compile(r"view\(2, 3, 8\) +# PyTorch 报错\n"))
    expect(page.locator("#tensors_table")).to_contain_text("contiguous()")
    shot(page, "layout-zh")
    page.locator("#share_tensors").click()
    link = page.locator("#share_url_tensors textarea")
    expect(link).to_have_value(re.compile(r"tensors_preset=heads_merge"))
    assert "tensors_ops" not in link.input_value() and "tensors_shape" not in link.input_value()
    english = browser.new_page()
    english.goto(link.input_value())
    expect(english.locator("#tensors_ops textarea")).to_have_value(re.compile(r"view\(2, 3, 8\) +# refused\n"))
    english.close()
    page.get_by_role("tab", name="矩阵乘法速度与 MFU").click()
    for dtype in ("bf16", "fp16"):                                  # fp32 only: a quick sweep
        page.locator("#compute_dtypes label").filter(has_text=dtype).click()
    page.locator("#compute_run").click()
    summary = page.locator("#matmul_summary")
    expect(summary).to_contain_text("实测值，不是规格表数据", timeout=60_000)
    # Regression: the line was English ("1 thread(s) · 20 matmul sizes in 2.0 s") and never said done.
    expect(page.locator("#compute_device input")).to_have_value(
        re.compile(r"^✓ 已完成 · .* 个线程 · \d+ 个矩阵乘法尺寸，用时 [\d.]+ 秒$"), timeout=60_000)
    plot = page.locator("#matmul_plot .js-plotly-plot")
    assert plot.evaluate("g => g._fullData.filter(t => t.name === 'fp32')[0].x.length") >= 5
    shot(page, "matmul-zh")
    context.close()


def test_mfu_of_a_training_step(page, server_url, shot):
    open_tensors(page, server_url)
    page.get_by_role("tab", name="Matmul speed and MFU").click()
    expect(page.locator("#mfu_plot .js-plotly-plot")).to_be_visible(timeout=15_000)     # says what fills it
    for elem_id, value in (("mfu_layers", "2"), ("mfu_d_model", "64"), ("mfu_seq_len", "32"), ("mfu_steps", "5")):
        box = page.locator(f"#{elem_id} input[type=number]")
        box.fill(value)
        box.press("Enter")
    page.locator("#mfu_run").click()
    summary = page.locator("#mfu_summary")
    expect(summary).to_contain_text("✓ equal", timeout=60_000)                          # formula = FlopCounterMode
    expect(page.locator("#mfu_device input")).to_have_value(re.compile(r"^✓ Done · .*5/5 steps in [\d.]+ s$"),
                                                              timeout=60_000)
    expect(summary).to_contain_text(re.compile(r"MFU \d+(\.\d+)?%"))
    expect(summary).to_contain_text("count_flops(config, 8, 32, backward=True)")
    page.locator("#compute_mfu input[type=number]").fill("50")
    page.locator("#compute_mfu input[type=number]").press("Enter")
    expect(page.locator("#compute_estimate")).to_contain_text("at 50% MFU", timeout=15_000)
    shot(page, "mfu-en")
