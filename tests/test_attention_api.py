"""The Attention tab's FlashAttention view through its named endpoints, by keyword."""
import re

import pytest
import torch
from gradio_client.exceptions import AppError

from tests.conftest import plot_json


def tiles(client, **changes):
    """``/attention_flash``: (step, tiles figure, rows figure, status, recurrence, device line); the step
    comes as the slider's update, ``{"value": step, "maximum": number of tiles}``."""
    step, tiles_plot, rows_plot, status, recurrence, device = client.predict(**changes, api_name="/attention_flash")
    return step, plot_json(tiles_plot), plot_json(rows_plot), status, recurrence, device


def heatmaps(fig):
    return [trace for trace in fig["data"] if trace["type"] == "heatmap"]


def test_endpoints_are_named_and_public(client):
    names = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/attention_flash", "/attention_cost"} <= set(names)
    params = [p["parameter_name"] for p in names["/attention_flash"]["parameters"]]
    assert params == ["T", "head_dim", "block", "causal", "dtype", "seed", "step"]


def test_defaults_draw_the_first_tile(client):
    step, fig, rows, status, recurrence, device = tiles(client)
    assert (step["value"], step["maximum"]) == (1, 10)
    assert status.startswith("**Tile 1 of 10**") and "6 of 16 tiles skipped" in status
    assert fig["layout"]["title"]["text"].startswith("Tile 1 of 10: query rows 0–3 × keys 0–3")
    assert "Query row 0, keys 0–3" in recurrence and r"\max(-\infty" in recurrence
    assert device.split()[0] in ("cpu", "cuda") and device.endswith("ms")


def test_the_last_tile_equals_the_naive_output(client):
    step, fig, rows, status, _, _ = tiles(client, T=23, block=5, causal=False, dtype="float64", step=4096)
    assert step["value"] == step["maximum"] == 25                          # ceil(23/5)² tiles, none skipped
    tiled, naive = (torch.tensor(h["z"], dtype=torch.float64) for h in heatmaps(fig)[3:5])
    assert tiled.shape == (23, 8)
    torch.testing.assert_close(tiled, naive, atol=1e-12, rtol=0)
    diff = float(re.search(r"\|tiled − naive\| = (\S+)", status).group(1))
    assert diff <= 1e-12 and "✓" in status and "23 of 23 output rows final" in status
    probs = torch.tensor(heatmaps(fig)[2]["z"], dtype=torch.float64)
    torch.testing.assert_close(probs.sum(-1), torch.ones(23, dtype=torch.float64))


def test_rows_fill_in_and_running_sums_meet_the_naive_ones(client):
    # Causal, T = 8, block 4: tile 1 = rows 0-3 × keys 0-3 (their last), 2 = rows 4-7 × keys 0-3, 3 = rows 4-7 × 4-7.
    _, fig, rows, _, _, _ = tiles(client, T=8, block=4, causal=True, step=1)
    out = heatmaps(fig)[3]["z"]                                            # the tiled output so far
    assert all(v is not None for row in out[:4] for v in row) and all(v is None for row in out[4:] for v in row)
    m_bars, m_ref, l_bars, l_ref, rescale = rows["data"]
    assert m_bars["y"][4:] == [None] * 4                                   # rows 4-7 not reached: m = −inf
    assert l_bars["y"][:4] == pytest.approx(l_ref["y"][:4], rel=1e-5)     # finished rows: ℓ = Σ exp(s − max)
    assert m_bars["y"][:4] == pytest.approx(m_ref["y"][:4], rel=1e-6)
    _, _, rows, _, _, _ = tiles(client, T=8, block=4, causal=True, step=2)
    assert rows["data"][4]["y"] == [None] * 4 + [0] * 4                    # rows 4-7's first tile: exp(−∞) = 0
    _, fig, rows, _, _, _ = tiles(client, T=8, block=4, causal=True, step=3)
    m_bars, m_ref, l_bars, l_ref, rescale = rows["data"]
    assert all(0 < r <= 1 for r in rescale["y"][4:])
    assert l_bars["y"] == pytest.approx(l_ref["y"], rel=1e-5)


@pytest.mark.parametrize("changes,message", [
    (dict(T=0), "sequence length T = 0: must be a whole number from 1 to 64"),
    (dict(T=65), "sequence length T = 65"),
    (dict(head_dim=0), "head dim d = 0"),
    (dict(head_dim=65), "head dim d = 65"),
    (dict(block=0), "block size = 0: must be a whole number from 1 to 64"),
    (dict(block=100), "block size = 100"),
    (dict(step=-1), "tile step = -1"),
    (dict(dtype="float16"), "precision = 'float16': must be one of float32, float64"),
])
def test_bad_input_gives_a_clear_message_and_server_keeps_serving(client, changes, message):
    with pytest.raises(AppError, match=re.escape(message)):
        client.predict(**changes, api_name="/attention_flash")
    assert tiles(client)[0]["value"] == 1


def test_cost_sweep_measures_and_names_the_backend(client):
    # The largest T as text, as the API describes its choices (Literal['auto', '1024', …]); it was refused.
    cost_plot, kv_plot, status, device = client.predict(max_T="1024", head_dim=32, heads=2, batch=1,
                                                        api_name="/attention_cost")
    backend = "the CPU's fused flash kernel" if device.startswith("cpu") else ""
    assert f"SDPA ran **{backend}" in status
    fig = plot_json(cost_plot)
    naive = next(tr for tr in fig["data"] if tr["name"].startswith("naive") and tr.get("xaxis") == "x")
    assert naive["x"] == [256, 512, 1024]
    # Measured bytes: scores + probabilities + output, 2·B·H·T² + B·H·T·d numbers of 4 bytes.
    assert naive["y"] == [4 * (2 * 2 * T * T + 2 * T * 32) for T in (256, 512, 1024)]
    kv = plot_json(kv_plot)
    assert kv["data"][0]["x"][:3] == [8, 16, 32] and all(ms > 0 for ms in kv["data"][0]["y"])
    assert "Tiny GPT, one cached decode step" in status and device.startswith(("✓ Done · cpu", "✓ Done · cuda"))


@pytest.mark.parametrize("changes,message", [
    (dict(max_T=3000), "largest T = 3000: must be one of auto, 1024"),
    (dict(max_T=16384, head_dim=256, heads=64, batch=16), "does not fit the memory budget"),
    (dict(heads=0), "heads = 0"),
    (dict(dtype="int8"), "precision = 'int8': must be one of float32, bfloat16, float16"),
])
def test_cost_sweep_bad_input(client, changes, message):
    with pytest.raises(AppError, match=re.escape(message)):
        client.predict(**changes, api_name="/attention_cost")


def test_cost_sweep_beyond_the_device_is_refused(client):
    if torch.cuda.is_available():
        pytest.skip("the GPU's bound is the largest choice")
    with pytest.raises(AppError, match="beyond this device's bound: at most 16,384 on cpu"):
        client.predict(max_T=32768, api_name="/attention_cost")
