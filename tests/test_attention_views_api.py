"""The Attention tab's views of a trained model through their named endpoints, by keyword, as a script
would call them: ``/attention_heads``, ``/attention_steps``, ``/attention_scale``, ``/attention_next``."""
import math
import re

import pytest
from gradio_client.exceptions import AppError

from components.attention_heads import DEFAULT_PROMPT
from tests.conftest import plot_array, plot_json

ENDPOINTS = ("/attention_heads", "/attention_steps", "/attention_scale", "/attention_next")


def heatmaps(fig):
    return [trace for trace in fig["data"] if trace["type"] == "heatmap"]


def test_endpoints_are_named_and_public(client):
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert set(ENDPOINTS) <= set(named)
    params = [p["parameter_name"] for p in named["/attention_next"]["parameters"]]
    assert params == ["model", "prompt", "temperature", "top_k", "top_p", "continue_chars", "seed"]


def test_heads_defaults_draw_every_head(client):
    grid, detail, patterns, summary, device = client.predict(api_name="/attention_heads")
    maps = heatmaps(plot_json(grid))
    assert len(maps) == 16                                                         # 4 layers x 4 heads
    for m in maps:
        z = plot_array(m["z"])
        assert len(z) == 64
        assert all(math.isclose(sum(row), 1, abs_tol=0.02) for row in z)            # rounded to 3 decimals
        assert all(v == 0 for i, row in enumerate(z) for v in row[i + 1:])         # causal
    assert "previous char" in summary and "L4 H2" in summary
    assert "Layer 4, head 2: query 64" in plot_json(detail)["layout"]["title"]["text"]
    assert device.endswith("ms")


def test_heads_of_gqa_name_their_kv_head(client):
    grid, *_ = client.predict(model="gqa", prompt="The kettle began to sing", layer=2, head=3,
                              api_name="/attention_heads")
    labels = [a["text"] for a in plot_json(grid)["layout"]["annotations"]]
    assert labels[:4] == ["L1 H1 · KV 1", "L1 H2 · KV 1", "L1 H3 · KV 2", "L1 H4 · KV 2"]
    assert len(plot_array(heatmaps(plot_json(grid))[0]["z"])) == len("The kettle began to sing")


def test_steps_show_the_view_error_and_the_check(client):
    table, check, numbers, device = client.predict(model="mqa", layer=3, head=1, query=10,
                                                   api_name="/attention_steps")
    assert "view size is not compatible with input tensor&#x27;s size and stride" in table     # HTML-escaped
    assert re.search(r">\(1, 64, 192\)</td><td [^>]*>\(12288, 192, 1\)</td>", table)     # qkv: C + 2·1·32 wide
    diff = float(re.search(r"attn_out`\)\| = \*\*([0-9.e+-]+)\*\*", check).group(1))
    assert diff <= 1e-6
    strips = heatmaps(plot_json(numbers))
    assert len(strips) == 17                                                       # every stage with numbers
    assert "query 10" in plot_json(numbers)["layout"]["title"]["text"]


def test_steps_of_mla_say_what_differs(client):
    _, check, _, _ = client.predict(model="mla", api_name="/attention_steps")
    assert "absorbed" in check and "k = W_UK c" in check


def test_scale_removed_raises_the_held_out_loss(client):
    curve, effect, device = client.predict(api_name="/attention_scale")
    title = plot_json(effect)["layout"]["title"]["text"]
    before, after = (float(x) for x in re.search(r"loss ([0-9.]+) → ([0-9.]+)", title).groups())
    assert after > before + 0.5 and "1,024 of" in title
    traces = plot_json(curve)["data"]
    assert [len(plot_array(t["x"])) for t in traces] == [8] * len(traces)       # d = 8 ... 1024


def test_scale_multiplier_one_changes_nothing(client):
    _, effect, _ = client.predict(scale="multiplied", multiplier=1.0, api_name="/attention_scale")
    title = plot_json(effect)["layout"]["title"]["text"]
    before, after = re.search(r"loss ([0-9.]+) → ([0-9.]+)", title).groups()
    assert before == after and "(+0.000)" in title


def test_next_token_filters(client):
    bars, lens, continuation, device = client.predict(top_k=1, continue_chars=0, api_name="/attention_next")
    assert "1 of 61 characters can be drawn" in plot_json(bars)["layout"]["title"]["text"]
    assert continuation == DEFAULT_PROMPT
    bars, *_ = client.predict(top_k=None, top_p=1.0, temperature=1.0, continue_chars=0, api_name="/attention_next")
    assert "61 of 61" in plot_json(bars)["layout"]["title"]["text"]
    _, lens, continuation, _ = client.predict(continue_chars=12, seed=3, api_name="/attention_next")
    assert len(continuation) == 64 + 12
    assert "max difference 0.0e+00" in plot_json(lens)["layout"]["title"]["text"]


@pytest.mark.parametrize("endpoint,changes,message", [
    ("/attention_heads", dict(prompt=""), "the prompt is empty"),
    ("/attention_heads", dict(prompt="a" * 129), "129 characters: at most 128"),
    ("/attention_heads", dict(prompt="café 天气"), "these are not among them"),
    ("/attention_heads", dict(layer=5), "layer = 5: must be a whole number from 1 to 4"),
    ("/attention_steps", dict(head=0), "head = 0: must be a whole number from 1 to 4"),
    ("/attention_steps", dict(model="gpt2"), "model = 'gpt2': must be one of mha, gqa, mqa, mla"),
    ("/attention_scale", dict(multiplier=-2, scale="multiplied"), "multiplier = -2"),
    ("/attention_next", dict(temperature=-0.5), "temperature = -0.5"),
    ("/attention_next", dict(top_p=0), "top-p = 0: must be a number from 0.01 to 1"),
    ("/attention_next", dict(top_p=1.5), "top-p = 1.5"),
    ("/attention_next", dict(top_k=0), "top-k = 0: must be a whole number from 1 to 61"),
    # Regression: a whole-number box rounded a fraction silently (2.5 drew top-k = 2).
    ("/attention_next", dict(top_k=2.5), "top-k = 2.5: must be a whole number from 1 to 61"),
])
def test_bad_input_gives_a_clear_message_and_the_server_keeps_serving(client, endpoint, changes, message):
    with pytest.raises(AppError, match=re.escape(message)):
        client.predict(**changes, api_name=endpoint)
    assert client.predict(continue_chars=0, api_name="/attention_next")[2]           # still serving
