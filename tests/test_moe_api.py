"""The FFN & MoE tab through its named endpoints, as a script would call them."""
import math

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from tests.conftest import cancel_after_first_update, cancel_and_settle, plot_json, raw_call

ACTS = ["relu", "gelu", "gelu_tanh", "silu", "geglu", "swiglu"]
ROUTE = dict(source="text", text="the cat sat on the mat , the dog sat on the log", n_random=64, seed=0, experts=8,
             top_k=2, d_model=32, d_hidden=64, expert_kind="swiglu", use_capacity=False, capacity=1.0, shared=0,
             shared_gate=False, sharpness=1.0, skew=0.0)
TRAIN = dict(experts=8, top_k=1, aux_coef=0.05, z_coef=0.0, use_capacity=False, capacity=1.25, steps=20, seed=0,
             compare=True)


def route(client, **changes):
    """``/moe_route`` by its parameters' names: the tab's defaults, a short sentence, ``changes``."""
    return client.predict(**(ROUTE | changes), api_name="/moe_route")


def traces(fig, kind=None):
    return [t for t in plot_json(fig)["data"] if kind is None or t["type"] == kind]


def routing_marks(fig):
    """The probability heatmap, every kept assignment (merged over choice ranks), the dropped ones."""
    heat = traces(fig, "heatmap")[0]
    marks = [t for t in traces(fig, "scatter") if t["name"].isdigit()]          # the legend's "choice 1 2 …"
    chosen = {"x": [x for t in marks for x in t["x"]], "y": [y for t in marks for y in t["y"]]}
    dropped = next(t for t in traces(fig, "scatter") if t["name"] == "dropped by capacity")
    return heat, chosen, dropped


def test_endpoints_are_named_and_public(client):
    names = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/ffn_activations", "/ffn_sizes", "/moe_route", "/moe_train"} <= set(names)


def test_instant_endpoints_answer_with_their_defaults_only(client):
    acts, gated, device = client.predict(api_name="/ffn_activations")
    assert [t["legendgroup"] for t in traces(acts)][::2] == ["relu", "gelu", "silu", "swiglu"]
    fig, text = client.predict(api_name="/ffn_sizes")
    assert "11,008" in text                                          # d = 4096, multiple 256: Llama-2-7B
    routing, flow, losses, summary, device = client.predict(api_name="/moe_route")
    heat, chosen, _ = routing_marks(routing)
    assert len(heat["y"]) == 8 and len(chosen["x"]) == 2 * len(heat["x"])   # E = 8, top-2
    assert device.endswith("ms")


def test_training_answers_with_its_defaults_only(server_url):
    """The default run (150 steps with its twin) starts and streams; its first update is enough.
    A client of its own: the cancelled job must not reach the shared client's next call."""
    import time
    own = Client(server_url, verbose=False, download_files=False, analytics_enabled=False)
    job = own.submit(api_name="/moe_train")
    deadline = time.monotonic() + 120
    while not job.outputs() and time.monotonic() < deadline:
        time.sleep(0.2)
    cancel_and_settle(job)
    status, load, *_ = job.outputs()[0]
    assert "/ 150" in status and len(traces(load, "heatmap")) == 2    # the run and its twin


def test_activation_curves_match_their_formulas(client):
    acts, gated, device = client.predict(activations=ACTS, x_min=-3.0, x_max=3.0, gated="swiglu", api_name="/ffn_activations")
    lines = traces(acts)
    assert len(lines) == 2 * len(ACTS)                              # f and f' for each
    by_name = {t["name"]: t for t in lines if t["xaxis"] == "x"}
    derivs = {t["legendgroup"]: t for t in lines if t["xaxis"] == "x2"}
    relu = by_name["ReLU"]
    assert relu["y"] == [max(0.0, x) for x in relu["x"]]
    sig = lambda x: 1 / (1 + math.exp(-x))                           # noqa: E731
    for x, y, dy in zip(relu["x"], derivs["silu"]["y"], derivs["swiglu"]["y"]):
        assert y == pytest.approx(sig(x) * (1 + x * (1 - sig(x))), abs=1e-9)
        assert dy == pytest.approx(2 * x * sig(x) + x * x * sig(x) * (1 - sig(x)), abs=1e-9)
    gelu = by_name["GELU (exact, x·Φ(x))"]
    assert all(y == pytest.approx(x * 0.5 * (1 + math.erf(x / math.sqrt(2))), abs=1e-12)
               for x, y in zip(gelu["x"], gelu["y"]))
    plane = traces(gated, "heatmap")[0]
    a, b = plane["x"], plane["y"]
    assert plane["z"][len(b) // 3][len(a) // 4] == pytest.approx(a[len(a) // 4] * sig(a[len(a) // 4]) * b[len(b) // 3])
    assert device.split()[0] in ("cpu", "cuda") and device.endswith("ms")


def test_ffn_sizes_reproduce_llama_2_7b(client):
    fig, text = client.predict(d_model=4096, multiple_of=256, api_name="/ffn_sizes")
    assert "11,008" in text and "134,217,728" in text and "135,266,304" in text and "+0.78%" in text
    bars = {t["name"]: t["x"] for t in traces(fig, "bar")}
    assert bars["W_gate"][2] == bars["W_up"][2] == bars["W_down"][2] == 4096 * 11008
    assert bars["W_in"][0] == bars["W_out"][0] == 4096 * 16384


def test_route_is_consistent_and_sums_up(client):
    routing, flow, losses, summary, device = route(client)
    heat, chosen, dropped = routing_marks(routing)
    N = len(heat["x"])
    assert N == 13 and len(heat["y"]) == 8
    for t in range(N):                                              # probabilities over experts sum to 1
        assert sum(row[t] for row in heat["z"]) == pytest.approx(1.0, abs=1e-5)
    assert len(chosen["x"]) == N * 2 and dropped["x"] == []          # 2 circles per token, nothing dropped
    for t, e in zip(chosen["x"], chosen["y"]):                      # a circled expert is among the 2 largest
        column = sorted((row[t] for row in heat["z"]), reverse=True)
        assert heat["z"][heat["y"].index(e)][t] >= column[1] - 1e-9
    _, kept_bars, _ = traces(routing, "bar")                        # shared (none here), processed, dropped
    assert sum(kept_bars["x"]) == N * 2
    assert "dropped **0**" in summary and "aux loss" in summary
    # The flow's bars name their tokens as the routing figure does (they were numbered 0, 2, 4, …).
    ticks = [plot_json(fig)["layout"]["xaxis"]["ticktext"] for fig in (routing, flow)]
    assert ticks[0] == ticks[1] == ROUTE["text"].split()
    # "the" and "sat" come twice: same vector, same experts
    words = ROUTE["text"].split()
    picks = {t: sorted(e for x, e in zip(chosen["x"], chosen["y"]) if x == t) for t in range(N)}
    assert picks[words.index("the")] == picks[len(words) - 1 - words[::-1].index("the")]
    aux = float(summary.split("aux loss **")[1].split("**")[0])
    assert f"{aux:.3f}" in plot_json(losses)["layout"]["title"]["text"]
    assert device.endswith("ms")


def test_capacity_drops_show_up_everywhere(client):
    routing, flow, losses, summary, _ = route(client, source="random", n_random=128, use_capacity=True, capacity=0.5,
                                              skew=2.0)
    heat, chosen, dropped = routing_marks(routing)
    n_dropped = int(summary.split("dropped **")[1].split("**")[0])
    capacity = int(summary.split("capacity C = ")[1].split(" ")[0])
    assert capacity == math.ceil(0.5 * 2 * 128 / 8) == 16
    assert n_dropped == len(dropped["x"]) > 0 and len(chosen["x"]) + n_dropped == 256
    _, kept_bars, dropped_bars = traces(routing, "bar")
    assert max(kept_bars["x"]) <= capacity and sum(dropped_bars["x"]) == n_dropped
    sankey = traces(flow, "sankey")[0]
    residual = len(sankey["node"]["label"]) - 1
    assert sum(v for t, v in zip(sankey["link"]["target"], sankey["link"]["value"]) if t == residual) == n_dropped
    # Only experts that take assignments are listed, stacked in order above "dropped": Plotly reads x and y
    # by position among the nodes it draws, so a listed empty expert shifted "dropped" among the experts.
    right = [i for i, x in enumerate(sankey["node"]["x"]) if x > 0.5]
    assert set(right) == set(sankey["link"]["target"])
    heights = [sankey["node"]["y"][i] for i in right]
    assert heights == sorted(heights) and 0 < heights[0] and heights[-1] < 1
    norms = next(t for t in traces(flow, "bar") if t.get("showlegend") is False)["y"]
    all_dropped = next(t for t in traces(flow, "scatter"))["x"]     # marked with ✕ at 0
    assert all_dropped and all(norms[t] == 0.0 for t in all_dropped)
    assert sum(1 for v in norms if v == 0.0) == len(all_dropped)    # y = 0 exactly when nothing was kept


def test_shared_experts_are_always_on_rows(client):
    routing, _, losses, summary, _ = route(client, shared=2)
    heat = traces(routing, "heatmap")
    ticks = plot_json(routing)["layout"]["yaxis"]["ticktext"]
    assert ticks[:3] == ["S1 shared", "S2 shared", "E1"] and heat[-1]["y"] == [0, 1] and heat[-1]["z"][0] == [1] * 13
    assert traces(routing, "bar")[0]["x"] == [13, 13]                # every token goes through each shared expert
    params = traces(losses, "bar")[1]["y"]
    d, h, E, k, s = 32, 64, 8, 2, 2
    assert params == [d * E + (E + s) * 3 * d * h, d * E + (k + s) * 3 * d * h, (k + s) * 3 * d * h]


def test_gated_shared_experts_count_their_gate(client):
    """Qwen2-MoE's gate on the shared experts: each token's weight on the shared rows (a sigmoid, no longer 1),
    and d more weights, in the total and in what every token touches."""
    routing, _, losses, _, _ = route(client, shared=2, shared_gate=True)
    weights = traces(routing, "heatmap")[-1]["z"]                     # the shared rows: each token's gate
    assert len(set(weights[0])) > 1 and all(0 < w < 1 for w in weights[0])
    params = traces(losses, "bar")[1]["y"]
    d, h, E, k, s = 32, 64, 8, 2, 2
    assert params == [d * E + (E + s) * 3 * d * h + d, d * E + (k + s) * 3 * d * h + d, (k + s) * 3 * d * h]


def test_a_gate_ticked_with_no_shared_experts_changes_nothing(client):
    """The gate scales the shared experts' output; with none it is ignored rather than refused: a gate
    left ticked while the slider went to 0 refused every later change and left the figures stale."""
    ticked, plain = route(client, shared=0, shared_gate=True, experts=16), route(client, shared=0, experts=16)
    assert ticked[:3] == plain[:3]                                    # routing, flow and cost figures
    assert traces(ticked[2], "bar")[1]["y"][0] == 32 * 16 + 16 * 3 * 32 * 64     # no gate weights counted


def test_a_flat_router_says_its_choices_are_ties(client):
    """Sharpness 0: every probability is 1/E, so every token's k-th choice ties with the experts left out and
    the load piles onto the first few while the aux loss reads balanced (k): the summary says why."""
    _, _, _, summary, _ = route(client, sharpness=0.0)
    assert "aux loss **2.0000**" in summary and "**13 of 13 tokens tie**" in summary
    assert "tie" not in route(client)[3]


def test_training_streams_and_balances(client):
    job = client.submit(**TRAIN, api_name="/moe_train")
    outputs = job.result(timeout=600) and job.outputs()
    assert len(outputs) >= 2                                         # streamed: several updates
    status, load, curves, chars, device = outputs[-1]
    assert "20 / 20" in status and "α = 0.05" in status and "α = 0 (twin)" in status
    heat = traces(load, "heatmap")
    assert len(heat) == 2 and len(heat[0]["x"]) == 20
    for step in range(20):                                          # each step's shares sum to 1
        assert sum(row[step] for row in heat[0]["z"]) == pytest.approx(1.0)
    assert len(traces(curves, "scatter")) == 6 and chars is not None
    assert device.endswith("ms")


def test_figures_follow_the_browser_language(server_url):
    zh = Client(server_url, verbose=False, download_files=False, analytics_enabled=False,
                headers={"accept-language": "zh-CN,zh;q=0.9"})
    routing, *_ = zh.predict(**ROUTE, api_name="/moe_route")
    assert "路由概率" in plot_json(routing)["layout"]["title"]["text"]
    assert plot_json(routing)["layout"]["legend"]["title"]["text"] == "第几选"
    _, text = zh.predict(d_model=4096, multiple_of=256, api_name="/ffn_sizes")
    assert "向上取整" in text
    with pytest.raises(AppError, match="专家数 E = 0：必须是 2 到 64 之间的整数"):
        zh.predict(**(ROUTE | dict(experts=0)), api_name="/moe_route")


@pytest.mark.parametrize("changes,message", [
    (dict(top_k=8, experts=4), "top-k = 8 must be at most the number of experts, 4"),
    (dict(experts=0), "experts E = 0: must be a whole number from 2 to 64"),   # the handler checks the bounds
    (dict(use_capacity=True, capacity=0.0), "capacity factor = 0: must be a number from 0.05 to 8"),
    (dict(d_model=4096), "d_model = 4096: must be a whole number from 1 to 128"),
    (dict(expert_kind="gelu"), "expert FFN = 'gelu': must be one of swiglu, relu"),
    (dict(text="w " * 300), "at most 256"),
    (dict(text=" "), "at least one word"),
])
def test_route_bad_input_gives_a_clear_message(client, changes, message):
    with pytest.raises(AppError, match=message):
        route(client, **changes)
    assert route(client)[4].endswith("ms")


@pytest.mark.parametrize("changes,message", [
    (dict(activations=["relu"], x_min=2.0, x_max=1.0), "x from = 2 must be smaller than x to = 1"),
    (dict(activations=[]), "choose at least one activation"),
])
def test_activation_bad_input(client, changes, message):
    with pytest.raises(AppError, match=message):
        client.predict(**changes, api_name="/ffn_activations")


@pytest.mark.parametrize("changes,message", [
    (dict(top_k=4, experts=2), "top-k = 4 must be at most the number of experts, 2"),
    (dict(use_capacity=True, capacity=0.0), "capacity factor = 0: must be a number from 0.05 to 8"),
    (dict(steps=5000), "steps = 5000: must be a whole number from 10 to 600"),
])
def test_train_bad_input(client, changes, message):
    with pytest.raises(AppError, match=message):
        client.predict(**(TRAIN | changes), api_name="/moe_train")


@pytest.mark.parametrize("name,data,message", [           # NaN: gradio_client refuses to send it, a raw POST can
    ("moe_route", ROUTE | dict(seed=float("nan")), "seed = nan: must be a whole number"),
    ("moe_route", ROUTE | dict(sharpness=float("nan")), "router sharpness = nan: must be a number"),
    ("ffn_activations", dict(activations=["relu"], x_min=float("nan"), x_max=1.0, gated="swiglu"),
     "x from = nan: must be a number"),
    ("moe_train", TRAIN | dict(aux_coef=float("nan")), "aux-loss coefficient = nan: must be a number"),
])
def test_nan_gets_a_clear_message(server_url, name, data, message):
    event, payload = raw_call(server_url, name, list(data.values()))
    assert event == "error" and message in payload


def test_streamed_progress_is_a_snapshot():
    from models.moe_train import MoETrainConfig, train_moe
    updates = list(train_moe(MoETrainConfig(steps=4, compare=False, batch=2, seq_len=8), every=2))
    assert [len(u.runs["aux"].cv) for u in updates] == [2, 4]       # the first update did not grow afterwards


def test_stop_ends_the_training_worker(client):
    """Stop (a cancelled job) ends the forked worker: no training keeps running for nobody."""
    updates = cancel_after_first_update(client.submit(**(TRAIN | dict(steps=600)), api_name="/moe_train"))
    assert "600 / 600" not in updates[-1][0]                         # it stopped early
