"""The training-stability section through its named endpoints, by keyword, as a script would call them."""
from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
from gradio_client.exceptions import AppError

from components import worker
from components.worker import running_jobs
from models import stability
from models.device import get_device
from tests.conftest import SlowJob, plot_json

SMALL = dict(lr_min=1e-3, lr_max=1e-2, n_lrs=2, steps=10, d_model=16, z_loss=1e-2, seed=0)


def test_endpoints_are_named_and_public(client):
    names = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/softmax_overflow", "/stability_sweep"} <= set(names)


def test_overflow_at_defaults_matches_numpy(client):
    fig, summary, device = client.predict(api_name="/softmax_overflow")              # scale 12
    fig = plot_json(fig)
    bars = {(t["name"], t.get("xaxis", "x")): t["y"] for t in fig["data"] if t["type"] == "bar"}
    x = np.array([1.0, 0.9, 0.7, 0.4, 0.0, -0.3, -0.6, -1.0], dtype=np.float32) * 12
    shifted = np.exp(x - x.max())
    stable = shifted / shifted.sum()
    float32 = next(y for (name, axis), y in bars.items() if axis == "x" and name.startswith("stable"))
    assert float32 == pytest.approx(stable.tolist(), rel=1e-5)
    naive16 = next(y for (name, axis), y in bars.items() if axis == "x3" and name.startswith("naive"))
    # float16: exp(12) = inf, so Σ = inf: inf/inf = NaN (no bar, a "NaN" label), finite/inf = 0
    assert naive16[0] is None and naive16[1:] == [0] * 7
    texts = [t for t in fig["data"] if t["type"] == "scatter" and t.get("xaxis") == "x3"]
    assert [t["text"] for t in texts] == [["NaN"]]
    assert "11.09" in summary and "88.72" in summary
    assert "ms" in device


def test_overflow_scale_changes_the_verdict(client):
    _, summary, _ = client.predict(scale=5.0, api_name="/softmax_overflow")
    assert "overflowed" not in summary
    _, summary, _ = client.predict(scale=100.0, api_name="/softmax_overflow")
    assert summary.count("overflowed") == 3                          # 100 > ln(max) of every dtype


def test_sweep_streams_to_the_end(client):
    job = client.submit(**SMALL, api_name="/stability_sweep")
    final, curves, findings, status = job.result(timeout=120)
    final, curves = plot_json(final), plot_json(curves)
    lines = {t["name"]: t["y"] for t in final["data"] if t["mode"] == "lines+markers"}
    assert set(lines) == {"no fix", "QK-norm", "z-loss", "QK-norm + z-loss"}
    assert all(len(y) == 2 and all(v is not None and 0 < v < 10 for v in y) for y in lines.values())
    assert final["layout"]["xaxis"]["type"] == "log"
    assert "learning rate 2 of 2" in status and "step 10 of 10" in status and "ms" in status
    assert "At learning rate 0.01" in findings
    assert len(curves["data"]) == 4 * (2 + 2) + 2                   # 4 variants × (2 layers + entropy + log Z)
    # Regression: the layers' dashes were unexplained; the legend keys them (grey, no data).
    keys = [t for t in curves["data"] if t.get("legendgroup") == "layers"]
    assert [(t["name"], t["line"]["dash"]) for t in keys] == [("layer 1", "solid"), ("layer 2", "dash")]
    drawn = {t["line"]["dash"] for t in curves["data"] if t.get("xaxis", "x") == "x" and t["y"] != [None]}
    assert drawn == {"solid", "dash"}


def test_diverging_sweep_is_reported_and_leaves_no_worker(client):
    _, curves, findings, status = client.predict(lr_min=10.0, lr_max=10.0, n_lrs=1, steps=20, d_model=16,
                                                 api_name="/stability_sweep")
    curves = plot_json(curves)
    for trace in curves["data"]:
        assert all(v is None or math.isfinite(v) for v in trace["y"])
    assert "entropy fell below 0.1" in findings or "non-finite" in findings
    deadline = time.time() + 10
    while running_jobs() and time.time() < deadline:
        time.sleep(0.1)
    assert not running_jobs()


@pytest.mark.parametrize("runner", ["process", "thread"])
def test_stop_ends_the_worker(client, monkeypatch, runner):
    """The run would take ~20 s and stream 100 updates; Stop ends its worker early: a process on the CPU,
    gone within 5 s; a thread on CUDA (the server runs in this process: its choice of runner is patched
    here), its updates 0.2 s apart (:class:`SlowJob`: on a GPU shared by a whole test run, 5 s was not
    always an update), gone before the run's end. A forked process cannot use CUDA, so the app never
    forks there, and neither does this test."""
    if runner == "process" and get_device().type == "cuda":
        pytest.skip("CUDA does not survive a fork: the app runs its jobs in threads there")
    slow = SlowJob(monkeypatch, stability, "stability_sweep", pace=0.2) if runner == "thread" else None
    if not slow:                                        # (SlowJob runs its job in a thread)
        monkeypatch.setattr(worker, "uses_processes", lambda: True)
    job = client.submit(lr_min=1e-2, lr_max=1e-2, n_lrs=1, steps=500, d_model=64, api_name="/stability_sweep")
    deadline = time.time() + 60
    while not job.outputs() and time.time() < deadline:
        time.sleep(0.05)
    assert job.outputs(), "no streamed update within 60 s"
    def sweeps():                                       # the worker is named after its job
        return [name for name in running_jobs() if name == "models.stability.stability_sweep"]
    assert sweeps()
    job.cancel()
    deadline = time.time() + (60 if slow else 5)
    while sweeps() and time.time() < deadline:
        time.sleep(0.1)
    assert not sweeps()
    if slow:
        assert slow.items < 50                          # of the whole run's 100


@pytest.mark.parametrize("settings, message", [
    (dict(lr_max=0.0), "largest learning rate = 0"),
    (dict(lr_min=-1.0), "smallest learning rate = -1"),
    (dict(lr_max=1e6), "largest learning rate = 1e+06"),
    (dict(lr_min=0.1, lr_max=0.01), "must not exceed"),
    (dict(n_lrs=50), "number of learning rates = 50"),
    (dict(steps=100_000), "steps = 100000"),
    (dict(z_loss=-0.1), "z-loss coefficient = -0.1"),
    (dict(n_lrs=8, steps=500, d_model=128), "too much work"),
])
def test_bad_sweep_settings_say_what_is_wrong(client, settings, message):
    with pytest.raises(AppError, match=re.escape(message)):
        client.predict(**settings, api_name="/stability_sweep")


def test_bad_overflow_scale(client):
    with pytest.raises(AppError, match="logit scale = 1e\\+06"):
        client.predict(scale=1e6, api_name="/softmax_overflow")
