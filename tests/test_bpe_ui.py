"""The tokenizer tab in a real browser (Debian Chromium): train, step, play, retrain, type, upload."""
import functools
import re
import threading
import time

import pytest
from playwright.sync_api import expect

from tests.conftest import eventually, message_shown, pushed_margins, slow_down, wait_until_still

pytestmark = pytest.mark.e2e


APP_TABS = ("tokenizer",)                 # this tab alone (conftest.server_url)


CARD = "#bpe_card"


# The figures a step redraws.
STEP_FIGURES = ("bpe_competitors", "bpe_curves", "bpe_compare_plot", "bpe_granularity_plot")


def open_tab(page, server_url, name="Tokenizer (BPE)"):
    page.goto(server_url)
    page.get_by_role("tab", name=name).click()
    expect(page.locator("#bpe_curves .js-plotly-plot")).to_be_visible(timeout=60_000)


def chosen_count(page) -> int:
    return page.locator("#bpe_competitors .js-plotly-plot").evaluate("g => g._fullData[0].x[0]")


def test_step_retrain_and_encode(page, server_url, shot):
    open_tab(page, server_url)
    card = page.locator(CARD)
    expect(card).to_contain_text("Merge 1 of 400", timeout=30_000)
    first = chosen_count(page)
    page.locator("#bpe_next").click()
    expect(card).to_contain_text("Merge 2 of 400", timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('#bpe_competitors .js-plotly-plot')._fullData[0].x[0] != {first}")
    assert chosen_count(page) <= first                              # counts never grow from merge to merge
    # Regression: the pair labels, the axis titles and the legends pushed the figures' margins (by 3 to 49 px),
    # so Plotly drew each of them twice on every step (and every frame of Play).
    assert [pushed_margins(page.locator(f"#{name} .js-plotly-plot")) for name in STEP_FIGURES] == [[]] * 4
    expect(page.locator("#bpe_segmentation")).to_contain_text("First 1,500 of")
    # Regression: the replay box showed "tokenization" and replayed " tokenization" without saying so.
    assert page.locator("#bpe_word textarea").input_value().startswith(" ")
    expect(page.locator("#bpe_word")).to_contain_text("A leading space is part of the word")
    # Regression: a number typed in the step box (Enter, no blur) used to change nothing until the box lost focus.
    page.locator("#bpe_step input[type=number]").fill("57")
    page.locator("#bpe_step input[type=number]").press("Enter")
    expect(card).to_contain_text("Merge 57 of 400", timeout=15_000)
    # Regression: a step typed past the merges learned stayed in the box while the card kept merge 57.
    page.locator("#bpe_step input[type=number]").fill("999")
    page.locator("#bpe_step input[type=number]").press("Enter")
    expect(card).to_contain_text("Merge 400 of 400", timeout=15_000)
    expect(page.locator("#bpe_step input[type=number]")).to_have_value("400")
    expect(message_shown(page, "this tokenizer learned 400 merges")).to_be_visible()
    page.locator("#bpe_step input[type=number]").fill("57")
    page.locator("#bpe_step input[type=number]").press("Enter")
    expect(card).to_contain_text("Merge 57 of 400", timeout=15_000)
    page.locator("#bpe_prev").click()
    expect(card).to_contain_text("Merge 56 of 400", timeout=15_000)

    page.locator("#bpe_split label").filter(has_text="none: raw bytes").click()    # retrain, same step
    expect(page.locator("#bpe_status")).to_contain_text("(no split, tie rule", timeout=60_000)
    expect(card).to_contain_text("Merge 56 of 400")

    box = page.locator("#bpe_your_text textarea")
    box.fill("天气晴朗，适合露营。")
    box.blur()
    expect(page.locator("#bpe_encode_summary")).to_contain_text("10 characters = 30 bytes", timeout=15_000)
    expect(page.locator("#bpe_chars")).to_contain_text("U+9732")
    # Granularity follows your text: one whitespace "word" for the whole clause, 10 characters, 30 bytes.
    table = page.locator("#bpe_granularity_table")
    expect(table).to_contain_text("whitespace words", timeout=15_000)
    rows = table.locator("tr")
    expect(rows.filter(has_text="whitespace words").locator("td").nth(2)).to_have_text("1")
    expect(rows.filter(has_text="bytes (UTF-8)").locator("td").nth(2)).to_have_text("30")
    expect(page.locator(".toast-body")).to_have_count(0)
    shot(page, "tokenizer-en")


def test_a_second_step_pressed_while_the_first_is_on_its_way_moves_again(page, server_url, monkeypatch):
    """Regression: Next pressed twice moved one merge when the second press came before the first landed
    (Gradio's default trigger mode drops it); slowed here so that it always does."""
    from components import bpe
    open_tab(page, server_url)
    card = page.locator(CARD)
    expect(card).to_contain_text("Merge 1 of 400", timeout=30_000)
    slow_down(monkeypatch, bpe, "_views")
    page.locator("#bpe_next").click()
    page.locator("#bpe_next").click()
    expect(card).to_contain_text("Merge 3 of 400", timeout=15_000)
    page.locator("#bpe_prev").click()
    page.locator("#bpe_prev").click()
    expect(card).to_contain_text("Merge 1 of 400", timeout=15_000)


def test_play_advances_and_pause_stops(page, server_url):
    open_tab(page, server_url)
    expect(page.locator(CARD)).to_contain_text("Merge 1 of 400", timeout=30_000)
    page.locator("#bpe_play").click()
    expect(page.locator(CARD)).to_contain_text(re.compile(r"Merge (1[0-9]|[2-9]\d|\d{3}) of 400"), timeout=30_000)
    page.locator("#bpe_pause").click()
    stopped = int(wait_until_still(page, "#bpe_step input[type=number]"))   # times out if Play goes on
    assert 10 <= stopped < 400
    expect(page.locator(CARD)).to_contain_text(f"Merge {stopped} of 400", timeout=15_000)


def test_chinese_ui_and_a_file_that_is_not_utf8(browser, server_url, shot, tmp_path):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto(server_url)
    page.get_by_role("tab", name="分词器（BPE）").click()
    expect(page.locator(CARD)).to_contain_text("第 1 次合并", timeout=60_000)
    page.locator("#bpe_corpus label").filter(has_text="中文文本").click()
    expect(page.locator("#bpe_status")).to_contain_text("32,387 字节", timeout=60_000)
    expect(page.locator("#bpe_competitors .gtitle")).to_contain_text("相互竞争的相邻词元对")
    step = page.locator("#bpe_step input[type=number]")
    step.fill("34")                                                   # two pairs tied at 104: three legend entries
    step.press("Enter")
    expect(page.locator("#bpe_competitors .gtitle")).to_contain_text("第 34 次合并", timeout=15_000)
    # Regression: the legend sat at the top right, over the longer Chinese title; the colours' key is the
    # title's second line now.
    expect(page.locator("#bpe_competitors .gtitle")).to_contain_text("■ 被选中 ■ 与之并列 ■ 次数较少")
    expect(page.locator("#bpe_competitors .legendtext")).to_have_count(0)
    # Regression: most lines of the Chinese training text broke inside a byte's escape ("\xe" | "8").
    escapes = page.locator("#bpe_segmentation .bpe-byte")
    expect(escapes.first).to_be_visible()
    assert escapes.evaluate_all("bs => bs.filter(b => b.getClientRects().length > 1).map(b => b.textContent)") == []
    expect(page.locator("#bpe_word")).to_contain_text("开头的空格也是这个词的一部分")
    assert [pushed_margins(page.locator(f"#{name} .js-plotly-plot")) for name in STEP_FIGURES] == [[]] * 4
    shot(page, "tokenizer-zh")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("café crème brûlée".encode("latin-1"))
    page.locator("#bpe_upload input[type=file]").set_input_files(str(latin))
    expect(page.locator(".toast-body").first).to_contain_text("文件不是 UTF-8 文本：偏移 3 处的字节 0xe9",
                                                              timeout=15_000)       # in Chinese
    # Regression: the refused file stayed listed in the box, as if it were the corpus.
    expect(page.locator("#bpe_upload")).not_to_contain_text("latin1", timeout=10_000)   # "latin1 .txt 17.0 B"
    expect(page.locator("#bpe_granularity_table")).to_contain_text("按空格切分的词")
    # Only the toast (shown above, with the error state set): no "错误" block over the corpus radios and
    # the text they fill (it stayed until a reload and took the radios' clicks).
    shown = "es => es.filter(e => e.checkVisibility({opacityProperty: true, visibilityProperty: true})).length"
    assert page.locator("#bpe_corpus .error, #bpe_text .error").evaluate_all(shown) == 0
    page.locator("#bpe_corpus label").filter(has_text="中文文本").click(timeout=5_000)
    context.close()


def test_pasted_training_text_becomes_the_corpus(page, server_url):
    """Regression: a paste (or a deletion) into the training text fired no input event in Gradio 6, so
    the corpus stayed on the preset and Train trained on it, then filled the box with it: the paste was lost."""
    open_tab(page, server_url)
    expect(page.locator("#bpe_status")).to_contain_text("99,979 bytes", timeout=60_000)     # English prose
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    pasted = "low lower lowest newer " * 50                                    # 1,150 bytes
    box = page.locator("#bpe_text textarea")
    box.click()
    page.keyboard.press("Control+A")
    page.evaluate("text => navigator.clipboard.writeText(text)", pasted)
    page.keyboard.press("Control+V")
    expect(page.locator("#bpe_corpus input[value=custom]")).to_be_checked(timeout=15_000)
    page.locator("#bpe_train").click()
    expect(page.locator("#bpe_status")).to_contain_text("on 1,150 bytes", timeout=60_000)
    assert box.input_value() == pasted
    page.locator("#bpe_corpus label").filter(has_text="Chinese").click()        # a preset again: the box follows
    expect(page.locator("#bpe_status")).to_contain_text("32,387 bytes", timeout=60_000)
    expect(page.locator("#bpe_corpus input[value=zh]")).to_be_checked()


def test_a_file_uploaded_while_a_training_runs_trains_after_it(page, server_url, monkeypatch, tmp_path):
    """Regression: a file uploaded while Train ran started a second training beside the first (a separate
    event): both streamed into the same status and figures, and whichever ended last was shown. The first
    training runs in a thread of this process and is held, progress every 0.3 s, until the file has been
    read, so that the upload always lands during it."""
    from components import bpe, worker
    open_tab(page, server_url)
    expect(page.locator(CARD)).to_contain_text("Merge 1 of 400", timeout=30_000)
    monkeypatch.setattr(worker, "uses_processes", lambda: False)
    runs, job, read = [], bpe._trained, threading.Event()           # runs: (bytes, "started" | "ended")

    @functools.wraps(job)                       # a job is named after its function
    def held(text, *args):
        runs.append((len(text.encode()), "started"))
        try:
            while len(runs) == 1 and not read.wait(0.3):               # the first, until the file is read
                yield 0
            yield from job(text, *args)
        finally:
            runs.append((len(text.encode()), "ended"))
    monkeypatch.setattr(bpe, "_trained", held)

    page.locator("#bpe_train").click()
    status = page.locator("#bpe_status")
    expect(status).to_contain_text("0 / 400", timeout=30_000)          # English prose is training
    upload = tmp_path / "words.txt"
    upload.write_text("low lower lowest newer " * 50)                  # 1,150 bytes
    page.locator("#bpe_upload input[type=file]").set_input_files(str(upload))
    expect(page.locator("#bpe_corpus input[value=custom]")).to_be_checked(timeout=30_000)   # the file is read
    page.wait_for_timeout(500)                  # a training the file started beside the first would start now
    read.set()
    expect(status).to_contain_text("on 1,150 bytes", timeout=60_000)
    eventually(lambda: len(runs) == 4)
    assert runs == [(99_979, "started"), (99_979, "ended"), (1_150, "started"), (1_150, "ended")]
    expect(status).to_contain_text("on 1,150 bytes")


def test_stop_marks_a_training_stopped_and_leaves_a_finished_one(page, server_url, monkeypatch):
    """Regression: Stop cancelled the training but its status kept "Training… 0 / 400 merges", as if it
    still ran (the other long runs say "■ Stopped · …"). The training runs in a thread of this process,
    held with progress every 0.3 s until Stop."""
    from components import bpe, worker
    open_tab(page, server_url)
    status = page.locator("#bpe_status")
    expect(status).to_contain_text("✓ Done · Trained 400 merges", timeout=30_000)     # the first draw's
    monkeypatch.setattr(worker, "uses_processes", lambda: False)
    job = bpe._trained

    @functools.wraps(job)                       # a job is named after its function
    def endless(text, *args):
        while True:
            time.sleep(0.3)
            yield 0
    monkeypatch.setattr(bpe, "_trained", endless)
    page.locator("#bpe_train").click()
    expect(status).to_contain_text("Training… 0 / 400", timeout=30_000)
    page.locator("#bpe_stop").click()
    expect(status).to_have_text(re.compile(r"^\s*■ Stopped · Training… 0 / 400 merges\s*$"), timeout=15_000)
    # A Train pressed while the cancel is still on its way is deferred behind it, and Gradio drops it when
    # the cancelled stream ends: the worker has ended first.
    eventually(lambda: not worker.running_jobs())
    monkeypatch.setattr(bpe, "_trained", job)
    page.locator("#bpe_train").click()
    expect(status).to_contain_text("✓ Done · Trained 400 merges", timeout=60_000)
    page.locator("#bpe_stop").click()                                   # after the end: the line stays
    page.wait_for_timeout(1_000)
    expect(status).to_contain_text("✓ Done · Trained 400 merges")
