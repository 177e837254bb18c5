"""The KV Cache tab through its named endpoints, as a script would call them:
``/kv_generate`` (streams), ``/kv_plan`` and ``/kv_scale`` (instant)."""
import re

import pytest
from gradio_client.exceptions import AppError

from models import tiny_gpt
from models.calculator import PRESETS
from models.calculator import kv_cache_bytes as calc_kv_cache_bytes
from models.device import get_device
from models.generation import kv_cache_bytes, mla_cache_bytes
from tests.conftest import SlowJob, cancel_after_first_update, plot_array, plot_json

PROMPT = "The door was open"
ARGS = dict(prompt=PROMPT, attention="mha", n_kv_heads=4, kv_latent_dim=32, max_new_tokens=24, temperature=0,
            seed=0)


def generate(client, **changes):
    """Every update of a streamed generation, in order."""
    job = client.submit(**(ARGS | changes), api_name="/kv_generate")
    job.result(timeout=300)
    return job.outputs()


def traces(fig: dict, kind: str) -> list[dict]:
    return [t for t in fig["data"] if t["type"] == kind]


def test_endpoints_are_named_and_public(client):
    names = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/kv_generate", "/kv_plan", "/kv_scale"} <= set(names)


def test_defaults_alone_answer_every_endpoint(client):
    groups, summary, cache, growth, text, device = client.predict(api_name="/kv_plan")
    assert "2 × 4 × 32 = 256 numbers" in summary                          # MHA: 4 KV heads of 32, K and V
    assert "preallocated for 223 positions" in plot_json(cache)["layout"]["title"]["text"]    # 24 + 200 − 1
    fig, md, *_ = client.predict(api_name="/kv_scale")
    assert "**Llama-3-8B**" in md and "= **1,073,741,824 B" in md          # 2·32·8·128·8192·2 B = 1 GiB
    job = client.submit(api_name="/kv_generate")
    job.result(timeout=300)
    text, status, cache, growth, device = job.outputs()[-1]
    assert "step 200 of 200" in status and "The kettle began to sing" in text


def test_generate_streams_and_its_bytes_follow_the_formula(client):
    updates = generate(client)
    text, status, cache, growth, device = updates[-1]
    assert PROMPT in text and "step 24 of 24" in status and "identical tokens so far ✓" in status
    assert device.split()[0] in ("cpu", "cuda") and "ms/token" in device
    growth = plot_json(growth)
    measured = next(t for t in growth["data"] if t.get("name", "").startswith("measured"))
    # 4 layers, 4 KV heads of 32, fp32: the closed form at every step's cache length
    x, y = plot_array(measured["x"]), plot_array(measured["y"])
    assert y == [kv_cache_bytes(4, 4, 32, T, bytes_per_elem=4) for T in x]
    assert x == list(range(len(PROMPT), len(PROMPT) + 24))
    cache = plot_json(cache)
    rows = [row for t in traces(cache, "heatmap") for row in plot_array(t["z"])]
    assert len(rows) == 4 * 8                                                  # layers × (K, V) × 4 KV heads
    assert all(len(row) == len(PROMPT) + 23 and min(row) > 0 for row in rows)


@pytest.mark.parametrize("attention,n_kv,ratio", [("mha", 4, 1), ("gqa", 2, 2), ("mqa", 1, 4), ("mla", 4, 1024 / 192)])
def test_switching_the_variant_shrinks_the_cache_by_the_expected_factor(client, attention, n_kv, ratio):
    *_, (text, status, cache, growth, _) = generate(client, attention=attention, n_kv_heads=n_kv, max_new_tokens=8)
    measured = next(t for t in plot_json(growth)["data"] if t.get("name", "").startswith("measured"))
    T, last = plot_array(measured["x"])[-1], plot_array(measured["y"])[-1]
    assert kv_cache_bytes(4, 4, 32, T, bytes_per_elem=4) / last == pytest.approx(ratio)
    if attention == "mla":
        assert last == mla_cache_bytes(4, 32, 16, T, bytes_per_elem=4)
    assert "trained weights" in status


def test_untrained_latent_width_runs_with_random_weights_and_says_so(client):
    *_, (_, status, *_) = generate(client, attention="mla", kv_latent_dim=8, max_new_tokens=4)
    assert "random weights" in status and "mla-r8" in status


def test_plan_draws_the_groups_and_the_empty_preallocated_cache(client):
    groups, summary, cache, growth, text, device = client.predict(prompt=PROMPT, attention="gqa", n_kv_heads=2,
                                                                  max_new_tokens=10, api_name="/kv_plan")
    assert device.split()[0] in ("cpu", "cuda") and device.endswith("ms")
    edges = [t for t in plot_json(groups)["data"] if t["mode"] == "lines"]
    # query head h (x = h, y = 1) reads KV head h // 2, drawn under its pair: x = 0.5 or 2.5
    assert [(e["x"][0], e["x"][1]) for e in edges] == [(0, 0.5), (1, 0.5), (2, 2.5), (3, 2.5)]
    assert "2 × 2 × 32 = 128 numbers" in summary
    cache = plot_json(cache)
    rows = [row for t in traces(cache, "heatmap") for row in t["z"]]
    assert rows == [[]] * 16                                                    # 4 layers × 4 rows, all empty
    assert "preallocated for 26 positions" in cache["layout"]["title"]["text"]  # 17 + 10 − 1
    assert PROMPT in text


def test_plan_mla_draws_the_latent_and_the_rope_key(client):
    groups, summary, *_ = client.predict(prompt=PROMPT, attention="mla", max_new_tokens=10, api_name="/kv_plan")
    labels = [a["text"] for a in plot_json(groups)["layout"]["annotations"]]
    assert any("c (32)" in label for label in labels) and any("kᴿ (16)" in label for label in labels)
    assert any("one RoPE key (16), shared by all heads" in label for label in labels)
    assert "32 + 16 = 48 numbers" in summary


@pytest.mark.parametrize("preset", ["Llama-2-7B", "Llama-3-8B", "Mistral-7B v0.1", "Gemma-3-12B", "DeepSeek-V2"])
def test_scale_formula_with_numbers_plugged_in_evaluates_to_the_calculator(client, preset):
    """... and is written as the Calculator writes it (the KV tab spaced out): one notation for the same
    formula in both tabs."""
    from models.calculator import RunSettings
    from viz.calculator import _kv_formula
    fig, md, *_ = client.predict(preset=preset, context=32768, batch=2, dtype="fp16", api_name="/kv_scale")
    symbolic = re.search(r"\*\* = `([^`]+)`", md).group(1)
    calculator = _kv_formula(PRESETS[preset], RunSettings(seq_len=32768, batch=2, kv_dtype="fp16"), "en")
    assert symbolic.replace(" ", "") == calculator.split(" = ")[0].replace(" ", "")
    expected = calc_kv_cache_bytes(PRESETS[preset], 32768, 2, "fp16")
    plugged = re.search(r"= `([^`]+)` = \*\*([\d,]+) B", md)
    product = plugged.group(1).replace(" B", "").replace(",", "").replace("·", "*")
    assert eval(product) == expected == int(plugged.group(2).replace(",", ""))   # noqa: S307 (our own digits)
    if preset == "DeepSeek-V2":
        assert "512 + 64" in md and "no factor 2" in md
    else:
        assert plugged.group(1).startswith("2 · ")
    bold = next(t for t in plot_json(fig)["data"] if t.get("name", "").startswith(preset))
    assert bold["line"]["width"] == 4


def test_a_cache_drawn_twice_is_named_and_dotted(client):
    """Regression: a curve equal to one drawn before it (Mixtral-8x7B's, 32 layers × 8 KV heads × 128 like
    Llama-3-8B's) lay exactly under it, so its legend entry had no visible line."""
    assert calc_kv_cache_bytes(PRESETS["Mixtral-8x7B"], 4096) == calc_kv_cache_bytes(PRESETS["Llama-3-8B"], 4096)
    fig, *_ = client.predict(preset="Mixtral-8x7B", api_name="/kv_scale")
    lines = {t["name"]: t for t in plot_json(fig)["data"] if t.get("mode") == "lines"}
    mixtral = lines["Mixtral-8x7B (the same cache as Llama-3-8B)"]
    assert mixtral["line"]["dash"] == "dot" and lines["Llama-3-8B"]["line"]["dash"] == "solid"
    assert mixtral["y"] == lines["Llama-3-8B"]["y"]


def test_gemma_3_grows_by_its_8_global_layers_past_its_window(client):
    """Gemma-3-12B's 40 window layers fill at 1,024 tokens; past that each token adds a key and a value of
    8 KV heads × 256 on its 8 global layers only: 8 · 2 · 8 · 256 · 2 B = 64 KiB in bf16 (384 KiB before)."""
    fig, *_ = client.predict(preset="Mixtral-8x7B", api_name="/kv_scale")
    lines = {t["name"]: t for t in plot_json(fig)["data"] if t.get("mode") == "lines"}
    gemma = lines["Gemma-3-12B"]
    _, md, *_ = client.predict(preset="Gemma-3-12B", context=131072, api_name="/kv_scale")
    # The per-token line said 384 KiB only: × 131,072 tokens that is 48 GiB, beside the 8.31 GiB above it.
    assert ("= 384.00 KiB; past T = 1,024, the 8 layers without a window only: `2 · 8 · 256 · 8 · 2 B` = 64.00 KiB"
            in md)
    points = [(t, y * 2**30) for t, y in zip(gemma["x"], gemma["y"])]      # from 1K tokens to 1M
    assert points[0] == (1024, 48 * 1024 * 2 * 8 * 256 * 2)
    for (t0, b0), (t1, b1) in zip(points, points[1:]):
        assert b1 - b0 == pytest.approx(8 * 2 * 8 * 256 * 2 * (t1 - t0), rel=1e-9), (t0, t1)


def test_mistral_is_drawn_with_its_rolling_window(client):
    """Regression: Mistral-7B v0.1 was drawn as if every layer kept every token, Llama-3-8B's line to 1M
    tokens; each of its layers keeps the last 4,096 (its config's sliding_window), as transformers' cache does."""
    fig, *_ = client.predict(preset="Mistral-7B v0.1", api_name="/kv_scale")
    lines = {t["name"]: t for t in plot_json(fig)["data"] if t.get("mode") == "lines"}
    mistral, llama = lines["Mistral-7B v0.1"], lines["Llama-3-8B"]
    inside = [i for i, t in enumerate(mistral["x"]) if t <= 4096]
    assert inside and all(mistral["y"][i] == llama["y"][i] for i in inside)
    assert {y for t, y in zip(mistral["x"], mistral["y"]) if t >= 4096} == {0.5}     # GiB in bf16, to 1M tokens


@pytest.mark.parametrize("changes,message", [
    (dict(prompt=""), "the prompt is empty"),
    (dict(prompt="a" * 600), "the prompt (600 tokens) plus 24 new tokens is 624: the model's context is 512 tokens"),
    (dict(prompt="naïve 42"), "not among them (character, position): 'ï' (2), '4' (6), '2' (7)"),
    (dict(max_new_tokens=0), "max_new_tokens = 0: must be a whole number from 1 to 511"),
    (dict(max_new_tokens=100_000), "max_new_tokens = 100000: must be a whole number from 1 to 511"),
    (dict(prompt="x" * 400, max_new_tokens=200), "plus 200 new tokens is 600: the model's context is 512"),
    (dict(attention="gqa", n_kv_heads=3), "n_kv_heads = 3 must divide n_heads = 4"),
    (dict(attention="mla", kv_latent_dim=0), "kv_latent_dim = 0: must be a whole number from 1 to 128"),
    (dict(attention="flash"), "attention = 'flash': must be one of mha, gqa, mqa, mla"),
    (dict(temperature=3), "temperature = 3: must be a number from 0 to 2"),
])
def test_bad_input_gives_a_clear_message_and_the_server_keeps_serving(client, changes, message):
    with pytest.raises(AppError, match=re.escape(message)):
        generate(client, **changes)
    assert "step 2 of 2" in generate(client, max_new_tokens=2)[-1][1]


@pytest.mark.parametrize("changes,message", [
    (dict(preset="GPT-5"), "model = 'GPT-5': must be one of"),
    (dict(context=0), "context length = 0: must be a whole number from 1 to 10000000"),
    (dict(batch=2000), "batch = 2000: must be a whole number from 1 to 1024"),
    (dict(dtype="fp7"), "dtype = 'fp7': must be one of fp32, fp16, bf16, fp8, int8, int4"),
])
def test_scale_bad_input(client, changes, message):
    with pytest.raises(AppError, match=re.escape(message)):
        client.predict(**changes, api_name="/kv_scale")


def test_scale_up_shows_the_four_cache_layouts_of_the_preset(client):
    """YOCO, sliding window and MLA beside the standard cache (issue: YOCO in the KV tab too).
    Llama-3-8B, bf16: standard = 32 layers · 2·8·128 · T · 2 B; YOCO = 16·2048·min(T, 4096) + 2048·T
    numbers, so YOCO / standard at 128K = (16·4096 + 131072) / (32·131072) = 0.046875."""
    *_, layouts, md = client.predict(preset="Llama-3-8B", context=8192, batch=1, dtype="bf16", api_name="/kv_scale")
    standard, sliding, yoco, mla = plot_json(layouts)["data"]
    assert all(y == 32 * 2048 * x * 2 for x, y in zip(standard["x"], standard["y"]))
    assert all(y == 32 * 2048 * min(x, 4096) * 2 for x, y in zip(sliding["x"], sliding["y"]))
    assert all(y == (16 * 2048 * min(x, 4096) + 2048 * x) * 2 for x, y in zip(yoco["x"], yoco["y"]))
    assert all(y == 32 * 576 * x * 2 for x, y in zip(mla["x"], mla["y"]))     # DeepSeek-V2's 512 + 64
    assert "0.0469 at 128K" in md


@pytest.mark.parametrize("runner", ["process", "thread"])
def test_stop_ends_the_generation_worker(client, monkeypatch, runner):
    """Stop (a cancelled job) ends the worker mid-way: no generation keeps running for nobody. A process on
    the CPU; a thread on CUDA, its frames 50 ms apart (:class:`SlowJob`: 480 would take 24 s)."""
    if runner == "process" and get_device().type == "cuda":
        pytest.skip("CUDA does not survive a fork: the app runs its jobs in threads there")
    slow = SlowJob(monkeypatch, tiny_gpt, "stream_tiny_gpt", pace=0.05) if runner == "thread" else None
    updates = cancel_after_first_update(client.submit(max_new_tokens=480, api_name="/kv_generate"))
    assert "step 480 of 480" not in updates[-1][1]                   # it stopped early
    if slow:
        assert slow.items < 480


def test_the_plan_refuses_a_character_the_model_never_saw(client):
    """Regression: a Chinese prompt was drawn into the plan when the box was left and refused only at
    Generate (the Attention tab refuses it at once): the plan checks the characters too now."""
    with pytest.raises(AppError, match=re.escape("not among them (character, position): '你' (0), '好' (1)")):
        client.predict(prompt="你好", api_name="/kv_plan")
    assert client.predict(prompt="The kettle", api_name="/kv_plan")
