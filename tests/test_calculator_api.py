"""The calculator through its named endpoints, called by the parameters' names."""
import pytest
from gradio_client.exceptions import AppError

from components.calculator import FIELDS, calculate as calculate_handler, set_preset, verify_spec
from components.wiring import control_names
from tests.conftest import plot_json

OUTPUTS = ("summary", "params", "memory", "kv", "layouts", "device")


def calculate(client, preset="Llama-3-8B", **changes):
    """``/calculate`` on a preset's fields, with ``changes`` (fields or run settings) by name."""
    return dict(zip(OUTPUTS, client.predict(**{**set_preset(preset), **changes}, api_name="/calculate")))


def test_parameters_are_the_config_fields_then_the_run():
    assert control_names(calculate_handler)[:len(FIELDS)] == FIELDS
    assert control_names(calculate_handler)[len(FIELDS):] == ["seq_len", "batch", "weight_dtype", "kv_dtype",
                                                              "train_tokens", "recipe", "recompute", "attention",
                                                              "gpu_gib"]
    assert control_names(verify_spec) == [*FIELDS, "kv_dtype"]           # the cache it allocates


def test_defaults_alone_answer_with_llama_3_8b(client):
    out = dict(zip(OUTPUTS, client.predict(api_name="/calculate")))
    assert "8,030,261,248" in out["summary"]                          # Llama-3-8B, its published total
    assert out["device"].endswith("ms")
    assert client.predict(api_name="/calculate_verify").count("✓") == 2


def test_the_rule_of_thumb_line_names_what_it_is_compared_with(client):
    """Regression: the line read "12·L·d² rule of thumb: 6.44 B (off by -7.7%)" under "Parameters: 8.03 B",
    against which the gap is -19.8%: the -7.7% is against the parameters outside the embeddings, and says so.
    Llama-3-8B: 12·32·4096² = 6,442,450,944; 8,030,261,248 − 2·128,256·4,096 = 6,979,588,096 outside them."""
    summary = calculate(client)["summary"]
    rule, outside = 12 * 32 * 4096**2, 8_030_261_248 - 2 * 128_256 * 4_096
    assert f"{100 * (rule / outside - 1):+.1f}% against the 6.98 B parameters outside the embeddings" in summary


def test_mixtral_totals_and_kv_in_the_response(client):
    out = calculate(client, "Mixtral-8x7B")
    assert "46,702,792,704" in out["summary"] and "12,879,925,248" in out["summary"]
    bars = plot_json(out["params"])["data"]
    assert sum(b["x"][0] for b in bars) == 46_702_792_704                 # the stacked total bar
    assert sum(b["x"][1] for b in bars) == 12_879_925_248                 # the active bar
    inference = {b["name"]: b["y"][0] for b in plot_json(out["memory"])["data"]}
    assert inference["KV cache"] == pytest.approx(2 * 32 * 8 * 128 * 4096 * 2 / 2**30)
    assert out["device"].endswith("ms")


def test_editing_kv_heads_changes_the_cache(client):
    gqa = calculate(client, n_kv_heads=8)["kv"]
    mha = calculate(client, n_kv_heads=32)["kv"]
    y = lambda fig: plot_json(fig)["data"][0]["y"]                     # noqa: E731
    assert [round(m / g, 6) for m, g in zip(y(mha), y(gqa))] == [4.0] * len(y(gqa))


def test_verify_endpoint(client):
    out = client.predict(**set_preset("DeepSeek-V2-Lite"), api_name="/calculate_verify")
    assert out.count("✓") == 2 and "15,706,484,224" in out


@pytest.mark.parametrize("kv_dtype,nbytes", [("bf16", 2), ("fp8", 1), ("int4", 0.5)])
def test_verify_allocates_the_chosen_cache_dtype(client, kv_dtype, nbytes):
    """Regression: Verify compared an fp16 cache whatever the chosen dtype (labelled fp16 beside bf16)."""
    out = client.predict(kv_dtype=kv_dtype, api_name="/calculate_verify")              # Llama-3-8B
    expected = int(2 * 32 * 8 * 128 * 128 * nbytes)                   # k and v · L · n_kv · head dim · T · bytes
    assert out.count("✓") == 2 and f"({kv_dtype}," in out and f"{expected:,} B" in out


def test_verify_runs_the_kv_tabs_model(client):
    out = client.predict(**set_preset("Tiny GPT · MLA r=32 (KV tab)"), api_name="/calculate_verify")
    assert out.count("✓") == 2 and "778,752" in out and "one transformer" in out and "fp32" in out


def test_figures_and_formulas_follow_the_browser_language(server_url):
    """Regression: ``calculate(*args, request=None)`` never got the request (Gradio injects it only into
    positional parameters), so a Chinese browser saw English figures and formulas."""
    from gradio_client import Client
    zh = Client(server_url, verbose=False, download_files=False, analytics_enabled=False,
                headers={"accept-language": "zh-CN,zh;q=0.9"})
    summary, params, *_ = zh.predict(api_name="/calculate")
    assert "参数量" in summary and plot_json(params)["layout"]["title"]["text"] == "各部分参数量"
    assert "与 PyTorch 核对" in zh.predict(api_name="/calculate_verify")


@pytest.mark.parametrize("changes,message", [
    (dict(n_kv_heads=3), "n_kv_heads = 3 must divide n_heads = 32"),
    (dict(d_model=4100, head_dim=0), "must divide d_model"),
    (dict(n_layers=0), "n_layers = 0"),
    (dict(top_k=3, n_experts=2), "top_k = 3"),
    (dict(seq_len=0), "context length = 0"),
    (dict(recipe="17"), "recipe = '17'"),
])
def test_bad_specs(client, changes, message):
    with pytest.raises(AppError, match=message):
        calculate(client, **changes)


def test_yoco_layouts_in_the_response(client):
    """Llama-3-8B, bf16, one sequence: standard 32·2048·T·2 bytes; YOCO (16·2048·min(T, 4096) + 2048·T)·2."""
    out = calculate(client)
    lines = {line["name"]: dict(zip(line["x"], line["y"])) for line in plot_json(out["layouts"])["data"]}
    T = 131_072
    assert lines["standard decoder"][T] == 32 * 2048 * T * 2 == 16 * 2**30
    assert lines["YOCO (L/2 sliding-window + 1 global KV)"][T] == (16 * 2048 * 4096 + 2048 * T) * 2
    assert lines["sliding window W = 4,096"][T] == 32 * 2048 * 4096 * 2
    assert "0.0469" in out["summary"] and "0.0332" in out["summary"]   # YOCO / standard at 128K and 1M


def test_gpu_lines_say_they_are_drawn_at_90_percent_and_the_legend_clears_the_axis_title(client):
    out = calculate(client, "Llama-3-8B")
    notes = [a["text"] for a in plot_json(out["memory"])["layout"]["annotations"]]
    assert notes == ["1 × 80 GiB GPU at 90% usable = 72.0 GiB", "2 × 80 GiB GPU at 90% usable = 144.0 GiB"]
    legend = plot_json(out["params"])["layout"]["legend"]
    assert legend["yanchor"] == "bottom" and legend["y"] >= 1                 # above the plot, the title below


def test_each_number_box_offers_the_range_its_field_takes():
    """The calculator's boxes were all 0 to 1,000,000 whatever the field (the learned positions' table
    takes 10,000,000; d_model starts at 1): each now reads models.calculator.FIELD_RANGES."""
    import app
    from models.calculator import FIELD_RANGES
    boxes = {c["props"]["elem_id"]: (c["props"]["minimum"], c["props"]["maximum"])
             for c in app.demo.get_config_file()["components"] if c["type"] == "number"
             and str(c["props"].get("elem_id")).removeprefix("calc_") in FIELD_RANGES}
    assert boxes == {f"calc_{name}": tuple(bounds) for name, bounds in FIELD_RANGES.items()}
    assert boxes["calc_learned_positions"] == (0, 10_000_000) and boxes["calc_d_model"] == (1, 1_000_000)
