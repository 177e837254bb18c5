"""The calculator through its named endpoints."""
import pytest
from gradio_client.exceptions import AppError

from components.calculator import FIELDS, _preset_values
from tests.conftest import plot_json

RUN = [4096, 1, "bf16", "bf16", 1e12, "16", "selective", 80.0]


def calculate(client, preset="Llama-3-8B", **changes):
    fields = dict(zip(FIELDS, _preset_values(preset))) | changes
    return client.predict(*fields.values(), *RUN, api_name="/calculate")


def test_mixtral_totals_and_kv_in_the_response(client):
    summary, params, memory, kv, device = calculate(client, "Mixtral-8x7B")
    assert "46,702,792,704" in summary and "12,879,925,248" in summary
    bars = plot_json(params)["data"]
    assert sum(b["x"][0] for b in bars) == 46_702_792_704                 # the stacked total bar
    assert sum(b["x"][1] for b in bars) == 12_879_925_248                 # the active bar
    inference = {b["name"]: b["y"][0] for b in plot_json(memory)["data"]}
    assert inference["KV cache"] == pytest.approx(2 * 32 * 8 * 128 * 4096 * 2 / 2**30)
    assert device.endswith("ms")


def test_editing_kv_heads_changes_the_cache(client):
    gqa = calculate(client, n_kv_heads=8)[3]
    mha = calculate(client, n_kv_heads=32)[3]
    y = lambda fig: plot_json(fig)["data"][0]["y"]                     # noqa: E731
    assert [round(m / g, 6) for m, g in zip(y(mha), y(gqa))] == [4.0] * len(y(gqa))


def test_verify_endpoint(client):
    fields = _preset_values("DeepSeek-V2-Lite")
    out = client.predict(*fields, api_name="/calculate_verify")
    assert out.count("✓") == 2 and "15,706,484,224" in out


def test_verify_runs_the_kv_tabs_model(client):
    out = client.predict(*_preset_values("Tiny GPT · MLA r=32 (KV tab)"), api_name="/calculate_verify")
    assert out.count("✓") == 2 and "778,752" in out and "one transformer" in out and "fp32" in out


def test_figures_and_formulas_follow_the_browser_language(server_url):
    """Regression: ``calculate(*args, request=None)`` never got the request (Gradio injects it only into
    positional parameters), so a Chinese browser saw English figures and formulas."""
    from gradio_client import Client
    zh = Client(server_url, verbose=False, download_files=False, analytics_enabled=False,
                headers={"accept-language": "zh-CN,zh;q=0.9"})
    fields = _preset_values("Llama-3-8B")
    summary, params, *_ = zh.predict(*fields, *RUN, api_name="/calculate")
    assert "参数量" in summary and plot_json(params)["layout"]["title"]["text"] == "各部分参数量"
    assert "与 PyTorch 核对" in zh.predict(*fields, api_name="/calculate_verify")


@pytest.mark.parametrize("changes,message", [
    (dict(n_kv_heads=3), "n_kv_heads = 3 must divide n_heads = 32"),
    (dict(d_model=4100, head_dim=0), "must divide d_model"),
    (dict(n_layers=0), "n_layers = 0"),
    (dict(top_k=3, n_experts=2), "top_k = 3"),
])
def test_bad_specs(client, changes, message):
    with pytest.raises(AppError, match=message):
        calculate(client, **changes)
