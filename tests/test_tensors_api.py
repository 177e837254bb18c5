"""The Tensors tab through its named endpoints, by keyword."""
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from models.compute import dtype_support
from models.device import get_device
from tests.conftest import plot_json

ON_GPU = get_device().type == "cuda"                # the app's server runs in this process, on this device

ENDPOINTS = ("/tensor_layout", "/number_formats", "/compute_matmul", "/compute_mfu", "/compute_estimate")


@pytest.fixture(scope="module")
def zh(server_url):
    return Client(server_url, verbose=False, download_files=False, analytics_enabled=False,
                  headers={"accept-language": "zh-CN,zh;q=0.9"})


def test_endpoints_are_named_and_answer_with_no_arguments(client):
    names = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert set(ENDPOINTS) <= set(names)
    memory, view, table, device = client.predict(api_name="/tensor_layout")
    assert "[24, 4, 8, 1]" in table and device.startswith("cpu") or device.startswith("cuda")
    assert len(client.predict(api_name="/number_formats")) == 3
    assert "days" in client.predict(api_name="/compute_estimate")


def test_layout_by_keyword(client):
    memory, view, table, _ = client.predict(shape="4, 6", ops="[:, 2]\nunsqueeze(1)", step=1,
                                            api_name="/tensor_layout")
    assert "| 1 | `[:, 2]` | [4] | [6] | 2 | no |" in table
    rows = plot_json(memory)["data"][1]                                   # read order, step by step
    assert rows["y"] == ["0 · original", "1 · [:, 2]", "2 · unsqueeze(1)"]
    assert [i for i, v in enumerate(rows["z"][1]) if v is not None] == [2, 8, 14, 20]   # column 2 of 4 × 6
    title = plot_json(view)["layout"]["title"]["text"]
    assert title == "Step 1: [:, 2] · shape [4], stride [6], offset 2"


def test_a_refused_view_comes_back_as_data_in_the_pages_language(client, zh):
    ops = "transpose(1, 2)\nview(2, 3, 8)\ncontiguous()\nview(2, 3, 8)"
    table = client.predict(shape="2, 2, 3, 4", ops=ops, api_name="/tensor_layout")[2]
    assert "view size is not compatible with input tensor's size and stride" in table      # PyTorch's words
    assert "view never copies" in table and "| 4 | `view(2, 3, 8)` | [2, 3, 8] | [24, 8, 1] | 0 | yes |" in table
    table_zh = zh.predict(shape="2, 2, 3, 4", ops=ops, api_name="/tensor_layout")[2]
    assert "view 从不复制" in table_zh and "view size is not compatible" in table_zh


@pytest.mark.parametrize("shape,ops,english,chinese", [
    ("16, 17", "", "272 elements: at most 256", "272 个元素：最多 256 个"),
    ("2, 3", "transpose(0)", r"transpose takes 2 argument\(s\), got 1", "transpose 需要 2 个参数"),
    ("2, 3", "os.system('ls')", "is not an operation", "不是一个操作"),
    ("2, 3", "view(2, 3)", None, None),
])
def test_bad_input_gets_a_clear_message(client, zh, shape, ops, english, chinese):
    if english is None:                                                   # a valid call, for contrast
        assert client.predict(shape=shape, ops=ops, api_name="/tensor_layout")[2]
        return
    with pytest.raises(AppError, match=english):
        client.predict(shape=shape, ops=ops, api_name="/tensor_layout")
    with pytest.raises(AppError, match=chinese):
        zh.predict(shape=shape, ops=ops, api_name="/tensor_layout")


def test_dims_out_of_range_and_sizes_that_do_not_multiply_out(client, zh):
    table = client.predict(shape="2, 3, 4", ops="transpose(0, 3)\nview(5, 5)", api_name="/tensor_layout")[2]
    assert "dim 3 is out of range for a 3-D tensor: dims go from -3 to 2" in table
    assert "the sizes (5, 5) multiply to 25, but the tensor has 24 elements" in table
    table_zh = zh.predict(shape="2, 3, 4", ops="transpose(0, 3)\nview(5, 5)", api_name="/tensor_layout")[2]
    assert "维度 3 超出了 3 维张量的范围" in table_zh and "相乘得 25" in table_zh


def test_number_formats_endpoint(client):
    bits, rounding, table = client.predict(value=65520.0, api_name="/number_formats")
    assert "| fp16 | 65504 |" in table and "inf" in table
    rows = {t["y"][0] for t in plot_json(bits)["data"]}
    assert rows == {"fp32", "fp16", "bf16", "fp8 E4M3", "fp8 E5M2", "int8"}
    curves = {t["name"]: t for t in plot_json(rounding)["data"]}
    fp16, bf16 = curves["fp16"], curves["bf16"]
    assert fp16["x"][-1] == 65504 and fp16["line"]["shape"] == "hv"           # the line ends at the largest value
    assert max(bf16["y"]) == pytest.approx(2.0**-8 / (1 + 2.0**-8)) and bf16["x"][-1] > 3e38   # half an ulp


def test_number_formats_refuse_a_value_out_of_range(zh):
    with pytest.raises(AppError, match="数值 = 1e\\+301"):
        zh.predict(value=1e301, api_name="/number_formats")


def test_matmul_sweep_streams_to_a_measured_peak(client):
    plot, summary, device = client.predict(kind="tokens", dtypes=["fp32"], api_name="/compute_matmul")
    fig = plot_json(plot)
    fp32 = [t for t in fig["data"] if t.get("name") == "fp32"]
    assert len(fp32) == 2 and len(fp32[0]["x"]) >= 4 and fp32[0]["x"][0] == 1            # m = 1, 4, 16, …
    lines = [s["y0"] for s in fig["layout"]["shapes"]]                                  # one per panel
    if ON_GPU:                                          # a GPU is judged by its datasheet's peak, if listed
        import torch

        from models.peaks import peak_for
        from viz.compute import rate_unit
        assert "cuda" in device
        table = peak_for(torch.cuda.get_device_name())
        if table is None:
            assert "datasheet" not in summary and lines == []
        else:                                           # the line is the datasheet's figure, in the axis's unit
            units = dict(rate_unit([10.0 ** e]) for e in range(0, 19, 3))            # "TFLOP/s" -> 1e12, ...
            scale = units[fig["layout"]["yaxis"]["title"]["text"].split()[-1]]
            assert "datasheet" in summary
            assert lines == pytest.approx([table.tflops["fp32"] * 1e12 / scale] * 2)
    else:
        assert "measured, not a datasheet figure" in summary and "1 thread" in device
        assert lines == [max(fp32[0]["y"])] * 2                                            # the line is the best point
    assert all(a < b for a, b in zip(fp32[1]["x"], fp32[1]["x"][1:]))                    # intensity grows with m


def test_a_dtype_the_device_lacks(client, zh):
    if dtype_support(get_device())["fp8"] is not None:     # a CPU, or a GPU before Ada/Hopper
        with pytest.raises(AppError, match="fp8 needs an NVIDIA GPU with FP8 tensor cores"):
            client.predict(kind="square", dtypes=["fp32", "fp8"], api_name="/compute_matmul")
        with pytest.raises(AppError, match="fp8 需要带 FP8 张量核心"):
            zh.predict(kind="square", dtypes=["fp8"], api_name="/compute_matmul")
    with pytest.raises(AppError, match="pick at least one dtype"):
        client.predict(dtypes=[], api_name="/compute_matmul")


def test_estimate_by_keyword(client):
    text = client.predict(n_params=7e9, tokens=1e12, n_gpus=1024, gpu="H100 SXM", mfu_percent=40,
                          api_name="/compute_estimate")
    days = 6 * 7e9 * 1e12 / (1024 * 989.5e12 * 0.4) / 86400
    assert f"**{days:,.1f} days**" in text and "4.2e+22 FLOP" in text
    with pytest.raises(AppError, match="GPU = 'H900'"):
        client.predict(gpu="H900", api_name="/compute_estimate")


def test_mfu_by_keyword(client):
    plot, summary, device = client.predict(n_layers=1, d_model=32, n_heads=2, seq_len=16, batch=2, steps=3,
                                           api_name="/compute_mfu")
    assert "✓ equal" in summary and "MFU" in summary
    assert ("misses" in summary) != ON_GPU              # torch's counter lacks only the CPU attention kernel
    assert device.endswith(" s") and "3/3 steps" in device
    fig = plot_json(plot)
    assert [len(t["x"]) for t in fig["data"]] == [3, 3]                  # FLOP/s and loss per timed step


def test_mfu_bad_sizes_in_the_pages_language(client, zh):
    with pytest.raises(AppError, match="n_heads = 3 must divide d_model = 32"):
        client.predict(n_layers=1, d_model=32, n_heads=3, api_name="/compute_mfu")
    with pytest.raises(AppError, match="最多"):
        zh.predict(n_layers=12, d_model=1024, n_heads=16, seq_len=512, batch=64, steps=50, api_name="/compute_mfu")
    with pytest.raises(AppError, match="d_model = 4"):
        client.predict(d_model=4, api_name="/compute_mfu")


def test_the_layout_device_line_speaks_the_pages_language(client, zh):
    """Regression: "(2 ops, figures included)" stayed English on the Chinese page."""
    *_, device = client.predict(shape="4, 6", ops="transpose(0, 1)\ncontiguous()", api_name="/tensor_layout")
    assert device.endswith("(2 ops, figures included)")
    *_, device = zh.predict(shape="4, 6", ops="transpose(0, 1)\ncontiguous()", api_name="/tensor_layout")
    assert device.endswith("（2 个操作，含绘图）") and "ops" not in device
