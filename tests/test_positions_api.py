"""The Positions tab through its named endpoints, as a script would call them; the bad inputs of the issue."""
import json
import math
import re

import pytest
from gradio_client.exceptions import AppError

from components.positions import HANDLERS
from tests.conftest import plot_json, raw_call

ENDPOINTS = [f"/{api_name}" for _, api_name, _ in HANDLERS.values()]
# What the tests change from each endpoint's defaults (the tab's own), by parameter name.
SETTINGS = {
    "/rope": {},
    "/rope_relative": dict(head_dim=64, seq_len=24, max_distance=2000),
    "/rope_frequencies": dict(span=64),
    "/rope_extrapolation": dict(base=500000),
    "/rope_conventions": {},
    "/positions_compare": dict(compare_len=16, d_model=32),
}


def call(client, name, **changes):
    """Endpoint ``name`` by keyword: its defaults, this file's settings, then ``changes``."""
    return client.predict(**SETTINGS[name] | changes, api_name=name)


def traces(fig, **where):
    return [t for t in fig["data"] if all(t.get(k) == v for k, v in where.items())]


def no_nan(value) -> bool:
    text = json.dumps(value)
    return "NaN" not in text and "Infinity" not in text


def test_every_view_is_a_named_public_endpoint(client):
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert all(name in named for name in ENDPOINTS)
    assert [p["parameter_name"] for p in named["/rope"]["parameters"]] == [
        "head_dim", "base", "seed", "style", "pair", "q_pos", "k_pos"]
    assert [p["parameter_name"] for p in named["/rope_extrapolation"]["parameters"]] == [
        "head_dim", "base", "original_max_position", "factor", "low_freq_factor", "high_freq_factor", "methods"]


@pytest.mark.parametrize("name", ENDPOINTS)
def test_every_endpoint_draws_with_its_defaults_alone(client, name):
    out = client.predict(api_name=name)
    assert out[-1].endswith("ms")
    assert all(no_nan(plot_json(v)) for v in out[:-1])


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_rope_arrows_turn_by_m_theta(client, style):
    d, base, m, n = 64, 500000, 9, 4
    fig, clock, matrix, device = call(client, "/rope", head_dim=d, base=base, style=style, pair=10, q_pos=m, k_pos=n)
    fig = plot_json(fig)
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    pairs = [int(re.search(r"pair (\d+)", t).group(1)) for t in titles]
    assert pairs == [0, 10, 21, 31]                                          # first, picked, two between, last
    for p, i in enumerate(pairs):
        axis = "x" if p == 0 else f"x{p + 1}"
        theta = base ** (-2 * i / d)
        for before, after, pos in (("q (position 0)", "q rotated to m", m), ("k (position 0)", "k rotated to n", n)):
            (x0, y0), (x1, y1) = ((t["x"][1], t["y"][1]) for t in
                                  (traces(fig, xaxis=axis, name=before)[0], traces(fig, xaxis=axis, name=after)[0]))
            c, s = math.cos(pos * theta), math.sin(pos * theta)
            assert (x1, y1) == pytest.approx((c * x0 - s * y0, s * x0 + c * y0), abs=1e-9)
        dims = (i, i + d // 2) if style == "half" else (2 * i, 2 * i + 1)
        assert f"dims {dims[0]}, {dims[1]}" in titles[p]
    scores = re.findall(r"\*\*(-?[\d.e+-]+)\*\*", matrix)
    assert len(scores) == 2 and float(scores[0]) == pytest.approx(float(scores[1]), rel=1e-9)
    bars = traces(plot_json(clock), type="bar")[0]["y"]
    assert sum(bars) == pytest.approx(float(scores[0]), rel=1e-9, abs=1e-9)
    assert device.split()[0] in ("cpu", "cuda") and device.endswith("ms")


def test_relative_heatmap_is_constant_along_diagonals_for_rope_only(client):
    rope, decay, _ = call(client, "/rope_relative")
    z = traces(plot_json(rope), type="heatmap")[0]["z"]
    T = len(z)
    for offset in (-5, 0, 3):
        diagonal = [z[m][m + offset] for m in range(T) if 0 <= m + offset < T]
        assert max(diagonal) - min(diagonal) <= 1e-4                         # values are rounded to 4 decimals
    assert "depends on n − m only" in plot_json(rope)["layout"]["title"]["text"]
    sinusoidal, _, _ = call(client, "/rope_relative", encoding="sinusoidal")
    z = traces(plot_json(sinusoidal), type="heatmap")[0]["z"]
    assert max(z[m][m] for m in range(T)) - min(z[m][m] for m in range(T)) > 0.1
    ones = traces(plot_json(decay), name="q = k = (1, …, 1): mean cos(Δθ<sub>i</sub>)")[0]
    thetas = [10000 ** (-2 * i / 64) for i in range(32)]
    for x, y in list(zip(ones["x"], ones["y"]))[::150]:
        assert y == pytest.approx(sum(math.cos(x * t) for t in thetas) / 32, abs=1e-9)


def test_frequencies_wavelengths_and_title(client):
    fig, _ = call(client, "/rope_frequencies", head_dim=128, base=10000, train_len=4096)
    fig = plot_json(fig)
    ours = traces(fig, name="base 10,000")[0]["y"]
    expected = [2 * math.pi * 10000 ** (2 * i / 128) for i in range(64)]
    assert ours == pytest.approx(expected, rel=1e-12)
    slow = sum(w > 4096 for w in expected)
    title = fig["layout"]["title"]["text"]
    assert title.startswith(f"{slow} of 64 pairs never complete a turn")
    assert f"the slowest turns once every {2 * math.pi * 10000 ** (126 / 128):,.0f} tokens" in title   # 54,410
    assert traces(fig, name="base 500,000")                                   # the reference base is drawn
    # At the largest L and d the one-line title ran 133 px past a 1280 px window's figure: two lines now.
    fig, _ = call(client, "/rope_frequencies", head_dim=1024, base=1e9, train_len=10_000_000)
    lines = plot_json(fig)["layout"]["title"]["text"].split("<br>")
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines)


def test_extrapolation_frequencies_and_summary(client):
    freq, scores, table, _ = call(client, "/rope_extrapolation")
    freq = plot_json(freq)
    ratio = {t["name"]: t["y"] for t in freq["data"] if t.get("xaxis") == "x2"}
    assert ratio["position interpolation"] == pytest.approx([1 / 8] * 64, rel=1e-12)
    assert ratio["NTK-aware"][0] == pytest.approx(1.0) and ratio["NTK-aware"][-1] == pytest.approx(1 / 8, rel=1e-9)
    thetas = [500000 ** (-2 * i / 128) for i in range(64)]
    from tests.test_positions_backend import ref_llama3
    assert ratio["Llama 3.1"] == pytest.approx([a / b for a, b in zip(ref_llama3(thetas), thetas)], rel=1e-12)
    assert "| original RoPE | nothing (base 500,000) | 1 | 8,192 |" in table
    assert "| Llama 3.1 |" in table and table.count("65,536") >= 3
    # Its bands in tokens, not only as L over a factor ("λ > L/1" said little): 8,192 / 4 and 8,192 / 1.
    assert "λ < L/4 = 2,048, divided by s where λ > L/1 = 8,192" in table
    *_, longer, _ = call(client, "/rope_extrapolation", original_max_position=131072)
    assert "λ < L/4 = 32,768, divided by s where λ > L/1 = 131,072" in longer     # not "3.277e+04"
    unseen = {t["name"]: t for t in plot_json(scores)["data"] if t.get("xaxis") == "x"}
    pi = unseen["position interpolation"]
    assert all(y == 0 for x, y in zip(pi["x"], pi["y"]) if x <= 65536)
    only_pi, *_ = call(client, "/rope_extrapolation", methods=["pi"])
    assert {t["name"] for t in plot_json(only_pi)["data"]} == {"position interpolation"}


def test_extrapolation_at_factor_one_draws_one_context_line(client):
    """Regression: at s = 1 the labels "L = 8,192" and "s·L = 8,192" were written over each other."""
    for fig in call(client, "/rope_extrapolation", factor=1)[:2]:
        notes = [a["text"] for a in plot_json(fig)["layout"]["annotations"] if "8,192" in a.get("text", "")]
        assert notes and all(n == "L = 8,192 = s·L = 8,192" for n in notes), notes


def test_conventions_permutation_and_matrices(client):
    pairing, matrices, check, _ = call(client, "/rope_conventions", diagram_dim=8, position=3)
    assert "perm = [0, 2, 4, 6, 1, 3, 5, 7]" in plot_json(pairing)["layout"]["title"]["text"]
    inter, half, permuted = (t["z"] for t in traces(plot_json(matrices), type="heatmap"))
    assert half == permuted
    perm = [0, 2, 4, 6, 1, 3, 5, 7]
    assert [[inter[a][b] for b in perm] for a in perm] == half
    assert inter[0][1] == pytest.approx(-math.sin(3), abs=1e-4) and half[0][4] == pytest.approx(-math.sin(3), abs=1e-4)
    f64, f32 = (float(v) for v in re.findall(r"\*\*([\d.e+-]+)\*\* in float", check))
    assert f64 < 1e-13 and f32 < 1e-5


def test_compare_alibi_slopes_and_sinusoidal(client):
    same, sinusoidal, alibi, slopes, _ = call(client, "/positions_compare", n_heads=12, compare_len=10, d_model=16)
    assert "12 heads: 8 heads' slopes, then every other slope of 16 heads" in slopes
    assert "1: 1/2" in slopes and "9: 0.7071" in slopes and "12: 0.08839" in slopes      # 2^-0.5, 2^-3.5
    alibi = plot_json(alibi)
    panels = traces(alibi, type="heatmap")
    assert [a["text"] for a in alibi["layout"]["annotations"]][:2] == ["head 1 · slope 1/2", "head 3 · slope 1/8"]
    assert panels[0]["z"][2][9] == -0.5 * 7
    pe = traces(plot_json(sinusoidal), type="heatmap")[0]["z"]
    assert pe[5][2] == pytest.approx(math.sin(5 / 10000 ** (2 / 16)), abs=1e-4)
    assert pe[5][3] == pytest.approx(math.cos(5 / 10000 ** (2 / 16)), abs=1e-4)
    titles = [a["text"] for a in plot_json(same)["layout"]["annotations"]]
    assert "diagonal spread 0" in titles[2] and not titles[0].endswith("spread 0")


def test_extreme_settings_draw_without_nan(client):
    outputs = [call(client, "/rope", head_dim=1024, base=1e9, q_pos=4096, k_pos=0, pair=511),
               call(client, "/rope_relative", head_dim=1024, base=1e9, seq_len=256, max_distance=10_000_000),
               call(client, "/rope_frequencies", head_dim=2, base=1.0001, train_len=1, span=256),
               call(client, "/rope_extrapolation", head_dim=1024, base=1e9, original_max_position=4_000_000,
                    factor=1.25, low_freq_factor=0.001, high_freq_factor=1000),
               call(client, "/rope_conventions", diagram_dim=64, position=64),
               call(client, "/positions_compare", compare_len=128, d_model=512, n_heads=64)]
    for out in outputs:
        assert no_nan([plot_json(v) for v in out])


BAD = [
    ("/rope", dict(head_dim=7), "head dim d = 7 is odd"),
    ("/rope", dict(head_dim=1e300), "head dim d = 1e\\+300: must be a whole number from 2 to 1024"),
    ("/rope", dict(head_dim=0), "head dim d = 0: must be a whole number from 2 to 1024"),
    ("/rope", dict(head_dim=1_000_000), "head dim d = 1000000: must be a whole number from 2 to 1024"),
    ("/rope", dict(base=1), "base = 1: must be a number above 1"),
    ("/rope", dict(base=0.5), "base = 0.5: must be a number above 1"),
    ("/rope", dict(base=-10), "base = -10: must be a number above 1"),
    ("/rope", dict(pair=64), "pair i = 64: must be a whole number from 0 to 63"),
    ("/rope", dict(q_pos=-1), "q position m = -1: must be a whole number from 0"),
    ("/rope", dict(seed=-1), "seed = -1: must be a whole number from 0"),
    ("/rope", dict(style="neox"), "style = 'neox': must be one of half, interleaved"),
    ("/rope_relative", dict(encoding="learned"), "encoding = 'learned': must be one of rope, sinusoidal"),
    ("/rope_relative", dict(max_distance=-5), "distance = -5: must be a whole number from 1"),
    ("/rope_relative", dict(seq_len=2.5), "sequence length T = 2.5: must be a whole number"),
    ("/rope_frequencies", dict(head_dim=9), "head dim d = 9 is odd"),
    ("/rope_frequencies", dict(train_len=0), "training context L = 0: must be a whole number from 1"),
    ("/rope_extrapolation", dict(factor=0), "factor s = 0: must be a number from 1 to 1024"),
    ("/rope_extrapolation", dict(factor=-2), "factor s = -2: must be a number from 1"),
    ("/rope_extrapolation", dict(low_freq_factor=4, high_freq_factor=2),
     "high_freq_factor = 2 must be greater than low_freq_factor = 4"),
    ("/rope_extrapolation", dict(low_freq_factor=0), "low_freq_factor = 0: must be a number above 0"),
    ("/rope_extrapolation", dict(methods=[]), "tick at least one method"),
    ("/rope_extrapolation", dict(methods=["yarn"]), "methods \\['yarn'\\]: pick one or more of original, pi"),
    ("/rope_extrapolation", dict(factor=1000, original_max_position=10**6), "too long"),
    ("/rope_extrapolation", dict(head_dim=2, methods=["ntk"]), "needs head dim d ≥ 4"),
    ("/rope_conventions", dict(diagram_dim=66), "d for the diagram = 66: must be a whole number from 2 to 64"),
    ("/rope_conventions", dict(diagram_dim=9), "d for the diagram = 9 is odd"),
    ("/rope_conventions", dict(base=1), "base = 1: must be a number above 1"),
    ("/positions_compare", dict(d_model=7), "d_model = 7 is odd"),
    ("/positions_compare", dict(base=0), "base = 0: must be a number above 1"),
    ("/positions_compare", dict(n_heads=0), "heads = 0: must be a whole number from 1 to 64"),
]

@pytest.mark.parametrize("name,changes,message", BAD)
def test_bad_input_gives_a_clear_message_and_server_keeps_serving(client, name, changes, message):
    with pytest.raises(AppError, match=message):
        call(client, name, **changes)
    assert call(client, name)[-1].endswith("ms")


def test_a_learner_error_is_in_chinese_for_a_chinese_page(server_url):
    """The page's language reaches the backend's messages (raw HTTP with the browser's Accept-Language)."""
    import httpx
    with httpx.Client(headers={"accept-language": "zh-CN,zh;q=0.9"}) as http:
        event, payload = raw_call(server_url, "rope", [7, 10000, 0, "half", 3, 5, 2], client=http)
    assert event == "error" and "头维度 d = 7 是奇数：RoPE 按维度对旋转" in json.loads(payload)["error"]
    with httpx.Client(headers={"accept-language": "zh-CN"}) as http:
        event, payload = raw_call(server_url, "rope_extrapolation", [128, 10000, 8192, 0, 1, 4, ["pi"]], client=http)
    assert event == "error" and json.loads(payload)["error"] == "扩展倍数 s = 0：必须是 1 到 1024 之间的数"


def test_lowering_head_dim_below_the_pair_draws_the_last_pair():
    """d = 4 has pairs 0 and 1: with pair i = 3 selected the redraw fits the slider and draws pair 1 (it
    refused "pair i = 3: must be from 0 to 0", blaming a control the learner had not touched)."""
    from components.positions import HANDLERS, redraw
    out = redraw(head_dim=4, pair=3)
    assert out["pair"]["maximum"] == 1 and out["pair"]["visible"]
    rotate = HANDLERS["rotate"][0](head_dim=4, pair=1)
    assert all(out[name] == value for name, value in rotate.items() if name != "device")


@pytest.mark.parametrize("view", ["rotate", "frequencies"])
def test_head_dim_2_draws_its_one_pair(view):
    """Regression: d = 2 (allowed: "2 to 1,024") answered "Slider minimum must be less than maximum" and left
    the figures at the last d. Its one pair is drawn and the pair slider, with one choice, hidden."""
    from components.positions import HANDLERS, redraw
    out = redraw(view=view, head_dim=2, pair=3)
    assert out["pair"]["visible"] is False and out["pair"]["value"] == 0
    drawn = HANDLERS[view][0](head_dim=2, pair=0) if view == "rotate" else HANDLERS[view][0](head_dim=2)
    assert all(out[name] == value for name, value in drawn.items() if name != "device")


@pytest.mark.parametrize("q,k,both,speed,expected", [
    (4096, 2, False, 1, (0, 2)),           # q at the end: back to the start, k stays
    (4096, 4093, True, 1, (3, 0)),         # tied: both go back, n - m kept
    (4090, 4000, True, 8, (90, 0)),        # the next step of 8 would pass the end
    (40, 2, True, 1, None),                # room left: Play just starts
])
def test_play_at_the_end_rewinds(q, k, both, speed, expected):
    """Regression: Play at the last frame did nothing (the first tick stopped the timer at once)."""
    from components.positions import play_start
    out = play_start(q_pos=q, k_pos=k, both=both, speed=speed)
    assert out["timer"].active is True
    assert (out.get("q_pos"), out.get("k_pos")) == (expected or (None, None))


def test_selecting_a_sub_tab_sets_the_view_in_the_page():
    """Regression: the view a sub-tab names was set by a server answer. Gradio selects the first sub-tab as
    the sub-tabs mount, and under load that answer came after a link's own selection's: the Extrapolation
    view on screen, "rotate" in the view control (its share link said pos_view=rotate, and a change of d
    would have redrawn the hidden Rotate view). The page now sets it at once, in selection order."""
    import app
    config = app.demo.get_config_file()
    ids = {c["props"].get("elem_id"): c["id"] for c in config["components"]}
    for view in HANDLERS:
        select = next(d for d in config["dependencies"] if d["targets"] == [(ids[f"pos_sub_{view}"], "select")])
        assert not select["backend_fn"] and select["outputs"] == [ids["pos_view"]], view
        assert select["js"].replace(" ", "") == f'()=>"{view}"', view
