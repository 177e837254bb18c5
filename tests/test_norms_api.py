"""The normalization tab through its named endpoints, as a script or another app would call them."""
import math
import time

import pytest
import torch
from gradio_client.exceptions import AppError

from tests.conftest import cancel_and_settle, plot_array, plot_json

GRADIENTS = dict(n_layers=6, d_model=64, n_heads=4, norm="layernorm", variants=["post", "pre"], log_y=True,
                 seq_len=32, batch=4, seed=0)
AXES = dict(batch=2, tokens=3, features=4, seed=0, item=1, token=2, feature=3)
TRAIN = dict(lr=2e-3, steps=10, warmup=5, norm="layernorm", seed=0)


def gradients(client, **changes):
    return client.predict(**(GRADIENTS | changes), api_name="/norm_gradients")


def lines(fig, panel_title):
    """The traces of the panel titled ``panel_title``: {trace name: y}."""
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    axis = "x" if titles.index(panel_title) == 0 else f"x{titles.index(panel_title) + 1}"
    return {tr["name"]: tr["y"] for tr in fig["data"] if tr.get("xaxis", "x") == axis}


def test_endpoints_are_named_and_public(client):
    names = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/norm_gradients", "/norm_depth_sweep", "/norm_train", "/norm_axes"} <= set(names)
    params = {name: [p["parameter_name"] for p in names[name]["parameters"]] for name in names}
    assert params["/norm_axes"] == ["batch", "tokens", "features", "seed", "item", "token", "feature"]
    assert params["/norm_train"] == ["lr", "steps", "warmup", "norm", "seed"]
    assert params["/norm_gradients"] == list(GRADIENTS)


@pytest.mark.parametrize("api_name", ["/norm_gradients", "/norm_axes", "/norm_depth_sweep", "/norm_train"])
def test_every_endpoint_answers_with_its_defaults_only(client, api_name):
    """No arguments: the tab's defaults (12 layers, d = 128, …); a long run's first update is its answer."""
    job = client.submit(api_name=api_name)
    deadline = time.monotonic() + 300
    while not job.outputs() and not job.done():
        assert time.monotonic() < deadline, f"{api_name} gave nothing in 300 s"
        time.sleep(0.05)
    first = job.outputs()[0] if job.outputs() else job.result()
    cancel_and_settle(job)
    fig = plot_json(first[0])
    assert fig["data"], f"{api_name}: an empty first figure"


def test_gradients_equal_an_independent_autograd_computation(client):
    """The FFN-out panel equals torch.autograd.grad on the same model and batch, built here."""
    from models.norm_data import char_batch, vocabulary
    from models.norms import StackConfig, build_stack

    fig, summary, device = gradients(client)
    fig = plot_json(fig)
    panel = lines(fig, "FFN out W₂")
    assert set(panel) == {"Post-LN", "Pre-LN"} and len(panel["Post-LN"]) == 6
    for variant, name in (("post", "Post-LN"), ("pre", "Pre-LN")):
        model = build_stack(StackConfig(vocab_size=len(vocabulary()), n_layers=6, d_model=64, n_heads=4,
                                        variant=variant, max_seq_len=32), seed=0, device="cpu")
        ids = char_batch(4, 33, seed=0, device="cpu")
        grads = torch.autograd.grad(model.loss(ids), [b.ffn.w_out.weight for b in model.blocks])
        expected = [g.norm().item() for g in grads]
        assert panel[name] == pytest.approx(expected, rel=1e-4)
    assert "Post-LN" in summary and "Pre-LN" in summary
    assert device.split()[0] in ("cpu", "cuda") and "ms" in device


def test_log_scale_toggle_and_rmsnorm(client):
    fig = plot_json(gradients(client, log_y=False, norm="rmsnorm", variants=["sandwich", "deepnorm"])[0])
    assert fig["layout"]["yaxis"]["type"] == "linear"
    assert "RMSNorm" in fig["layout"]["title"]["text"]
    assert set(lines(fig, "FFN out W₂")) == {"Sandwich-LN", "DeepNorm"}


def test_axes_endpoint_matches_pytorch(client):
    fig, check, device = client.predict(**AXES, api_name="/norm_axes")
    fig = plot_json(fig)
    x = torch.tensor(fig["data"][0]["z"]).view(2, 3, 4)
    ln, rms, bn = (torch.tensor(fig["data"][i]["z"]) for i in (1, 2, 3))
    torch.testing.assert_close(ln.view(2, 3, 4), torch.nn.LayerNorm(4)(x).detach(), atol=1e-5, rtol=0)
    torch.testing.assert_close(rms.view(2, 3, 4), torch.nn.RMSNorm(4, eps=1e-5)(x).detach(), atol=1e-5, rtol=0)
    expected_bn = torch.nn.BatchNorm1d(4, affine=False)(x.transpose(1, 2)).transpose(1, 2)
    torch.testing.assert_close(bn.view(2, 3, 4), expected_bn, atol=1e-5, rtol=0)
    # the highlighted LayerNorm group is row (item 1, token 2) = row 1; BatchNorm's is column 3 (feature 2)
    shapes = fig["layout"]["shapes"]
    ln_box = next(s for s in shapes if s["type"] == "rect" and s["xref"] == "x2")
    bn_box = next(s for s in shapes if s["type"] == "rect" and s["xref"] == "x4")
    assert (ln_box["y0"], ln_box["y1"]) == (0.5, 1.5)
    assert (bn_box["x0"], bn_box["x1"]) == (1.5, 2.5)
    assert "torch.nn.LayerNorm" in check
    # Regression: the figure counted from 0 ("b0 t1", feature 2) where the sliders count from 1: the outlined
    # row and column are labelled with the sliders' numbers.
    assert plot_array(fig["data"][0]["y"])[1] == "b1 t2"
    axis = fig["layout"]["xaxis4"]
    assert axis["ticktext"][axis["tickvals"].index(2)] == "3"


def test_training_streams_and_finishes(client):
    job = client.submit(**TRAIN, api_name="/norm_train")
    outputs = job.result(timeout=300)
    fig, findings, status = outputs
    fig = plot_json(fig)
    loss_lines = [tr for tr in fig["data"] if tr.get("xaxis", "x") == "x" and tr["mode"] == "lines"]
    assert len(loss_lines) == 4 and all(len(tr["y"]) == 10 for tr in loss_lines)
    assert status.startswith("✓ Done · 10 / 10")                 # the run said it ended by itself
    assert findings.count("\n") == 5                     # header, rule, four runs
    assert "mean of last 10 steps" in findings           # the header names the steps it averages, not 20
    assert findings.count("too few steps to tell") == 4  # 10 steps at lr 2e-3: none is below the plateau yet


def test_huge_learning_rate_is_a_finding_not_a_crash(client):
    fig, findings, status = client.submit(**(TRAIN | dict(lr=10.0, steps=40)), api_name="/norm_train").result(timeout=300)
    fig = plot_json(fig)
    values = [v for tr in fig["data"] for v in (tr.get("y") or []) if v is not None]
    assert all(math.isfinite(v) for v in values)
    assert findings.count("at step") == 4                # every run's divergence is reported


@pytest.mark.parametrize("changes,message", [
    (dict(n_layers=0), "layers L = 0: must be a whole number from 2 to 24"),      # the handler's check, not Gradio's
    (dict(n_layers=1000), "layers L = 1000: must be a whole number from 2 to 24"),
    (dict(d_model=96, n_heads=5), "d_model = 96 must be divisible by n_heads = 5"),
    (dict(variants=[]), "choose at least one placement"),
    (dict(d_model=512, n_layers=24, batch=32, seq_len=128), "too much work"),
])
def test_bad_gradient_input_gives_a_clear_message(client, changes, message):
    with pytest.raises(AppError, match=message):
        gradients(client, **changes)
    assert gradients(client)[2].endswith(")")


@pytest.mark.parametrize("changes,message", [
    (dict(lr=0), r"learning rate = 0: must be a number above 0 and at most 10"),
    (dict(lr=-1), r"learning rate = -1: must be a number above 0 and at most 10"),
    (dict(lr=1e6), r"learning rate = 1e\+06: must be a number above 0 and at most 10"),
    (dict(steps=100_000), "steps = 100000: must be a whole number from 10 to 600"),
])
def test_bad_training_input_gives_a_clear_message(client, changes, message):
    with pytest.raises(AppError, match=message):
        client.predict(**(TRAIN | changes), api_name="/norm_train")


def test_axes_bad_cell(client):
    with pytest.raises(AppError, match="highlighted feature = 7: must be a whole number from 1 to 4"):
        client.predict(**(AXES | {"feature": 7}), api_name="/norm_axes")


def test_the_device_line_speaks_the_pages_language(server_url):
    """The gradients' device line counts backward passes in words of the page's language."""
    from gradio_client import Client
    zh = Client(server_url, verbose=False, download_files=False, analytics_enabled=False,
                headers={"accept-language": "zh-CN,zh;q=0.9"})
    *_, device = zh.predict(**(GRADIENTS | dict(n_layers=2, d_model=16, n_heads=2, seq_len=8, batch=1)),
                            api_name="/norm_gradients")
    assert device.endswith("（2 × 1 次反向传播）") and "backward" not in device
    assert device.split(" · ")[1].endswith(" ms（2 × 1 次反向传播）")          # models.device.Timing's form


def test_the_highlight_sliders_fit_the_shape():
    """``fit_cell`` (the axes view's private event before a shape change is drawn): each highlight slider ends
    at its size, a value past it moves to it, a size of one hides it, an invalid size leaves it alone."""
    from components.norms import fit_cell
    out = fit_cell(2, 1, 6, 5, 1, 9)
    assert (out["item"]["maximum"], out["item"]["value"]) == (2, 2)
    assert out["token"]["visible"] is False and (out["feature"]["maximum"], out["feature"]["value"]) == (6, 6)
    assert set(fit_cell(0, 4, 6, 1, 2, 3)) == {"token", "feature"}
