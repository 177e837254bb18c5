"""Hostile input to every named endpoint, parameter by parameter, over raw HTTP.

Raw HTTP rather than gradio_client, because the client refuses to send some of what an attacker
can: lone surrogates, NaN. Every call must end in a result or a clear error message (no traceback,
no internal error), and the server must answer the next normal call.
"""
import json

import httpx
import pytest

import app
from tests.conftest import raw_call

# A fast, valid baseline for endpoints whose defaults would start long work.
BASELINE = {
    "norm_gradients": {"n_layers": 2, "d_model": 32, "seq_len": 8, "batch": 1},
    "norm_depth_sweep": {"n_layers": 2, "d_model": 32, "seq_len": 8, "batch": 1},
    "norm_train": {"steps": 10, "warmup": 5},
    "bpe_train": {"corpus": "custom", "text": "the cat sat on the mat. " * 20, "merges": 20},
    "moe_train": {"steps": 10, "compare": False},
    "kv_generate": {"prompt": "The", "max_new_tokens": 2},
    "attention_cost": {"max_T": 1024, "head_dim": 16},
    "compute_matmul": {"dtypes": ["fp32"]},
    "stability_sweep": {"n_lrs": 1, "steps": 10, "d_model": 16},
    "compute_mfu": {"n_layers": 1, "d_model": 32, "seq_len": 16, "batch": 1, "steps": 2},
}
# Streaming endpoints: a call is accepted once its first update arrives; it is then cancelled.
HUGE = "x" * 2_000_000
STRINGS = ["", " \t\n", HUGE, "\x00\x00", "\ud800 lone", "😀🫀 emoji", "../../etc/passwd",
           "__import__('os').system('true')"]
NUMBERS = [-1, 0, 1e308, -1e308, float("nan"), 2**63, 0.5]
WRONG_TYPES = [None, [1, 2], {"a": 1}, "abc", True]
BAD_MARKERS = ("Traceback", "internal error", "postprocess", 'File "')


def endpoints(client):
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    return {name.lstrip("/"): info["parameters"] for name, info in api.items()}


# Every named endpoint, as the app describes its API (the same description gradio_client reads); one
# test each, so that pytest -n spreads them over its workers.
ENDPOINTS = {name.lstrip("/"): info["parameters"] for name, info in app.demo.get_api_info()["named_endpoints"].items()}


def hostile_values(param):
    kind = param["python_type"]["type"]
    if kind == "str":
        return STRINGS + [1, None, ["a"]]
    if kind in ("float", "int"):
        return NUMBERS + WRONG_TYPES
    if kind == "bool":
        return ["yes", 2, None]
    return WRONG_TYPES


def check(event, payload, what):
    assert event in ("complete", "error", "generating", "rejected"), f"{what}: stream ended with {event}"
    if event in ("error", "rejected"):
        message = json.loads(payload).get("error") if payload.startswith("{") else payload
        assert message and message != "null", f"{what}: an error without a message"
        assert not any(m in str(message) for m in BAD_MARKERS), f"{what}: {str(message)[:300]}"


def test_the_server_describes_the_endpoints_fuzzed_here(own_app_url):
    from gradio_client import Client
    served = endpoints(Client(own_app_url, verbose=False, download_files=False, analytics_enabled=False))
    assert "masks" in served and set(served) == set(ENDPOINTS)


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
def test_named_endpoint_survives_hostile_input(own_app_url, name):
    """One session for all of an endpoint's calls, one call at a time: a new session costs the server
    ~40 ms (Gradio builds the config of every block for it), ten times a call; in order, so that a
    failure that depends on what an earlier call left in the session's state happens again."""
    server_url, params = own_app_url, ENDPOINTS[name]
    with httpx.Client() as http:
        def call(data):
            return raw_call(server_url, name, data, client=http, session=f"fuzz-{name}")

        base = [BASELINE.get(name, {}).get(p["parameter_name"], p["parameter_default"]) for p in params]
        event, payload = call(base)
        assert event in ("complete", "generating"), f"/{name} baseline failed: {payload[:300]}"
        for i, param in enumerate(params):
            for value in hostile_values(param):
                data = list(base)
                data[i] = value
                check(*call(data), f"/{name} {param['parameter_name']}={str(value)[:30]!r}")
        event, payload = call(base)                                    # still serving
        assert event in ("complete", "generating"), f"/{name} after fuzzing: {payload[:300]}"


def test_lone_surrogate_gets_a_clear_message(server_url, client):
    params = endpoints(client)["masks"]
    data = [p["parameter_default"] for p in params]
    data[0] = "a \ud800 b"
    event, payload = raw_call(server_url, "masks", data)
    assert event == "error" and "lone UTF-16 surrogate" in payload


BOOL_PARAMS = sorted((name, i) for name, params in ENDPOINTS.items()
                     for i, p in enumerate(params) if p["python_type"]["type"] == "bool")


@pytest.mark.parametrize("name,i", BOOL_PARAMS)
def test_a_checkbox_takes_true_or_false_only(own_app_url, name, i):
    """The API's text "false" is refused by name, not read as true (``bool("false")`` is ``True``)."""
    params = ENDPOINTS[name]
    data = [BASELINE.get(name, {}).get(p["parameter_name"], p["parameter_default"]) for p in params]
    data[i] = "false"
    event, payload = raw_call(own_app_url, name, data, session=f"flag-{name}-{i}")
    assert event == "error" and "'false': must be one of true, false" in payload, payload[:300]
