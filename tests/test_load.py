"""Twenty learners at once while the long work runs: what must always hold, on any machine.

The harness is :mod:`tests.load_harness`. Asserted here: no call fails, every instant endpoint is
served its share, the long runs keep running for the whole test, and no endpoint's p95 passes an
absolute ceiling far above what a learner would notice as slow. How much slower the instant tabs
answer under load than idle is a measurement, not a pass/fail test on a shared machine:
``python bench/bench_load.py`` prints it against its 3x goal.

It runs in the default ``pytest -n 2``, in the worker beside the browser tests: its ceilings are for a
busy machine, and ~50 s alone at the end of the run were ~50 s of the test command's critical path.
"""
from __future__ import annotations

import json

import pytest

from tests.load_harness import measure

pytestmark = pytest.mark.load

DURATION = 20.0                    # s of twenty learners: each endpoint gets 12-17 calls (alone)
MIN_CALLS = 6                      # per instant endpoint under load (18-22 in 30 s measured on 2 cores)
# p95 over all instant calls: 63-109 ms measured with the machine otherwise idle; 1,000.8 ms once in a
# clean-clone .ci/run, every endpoint slow alike (a saturated machine, not a stuck server).
POOLED_CEILING_MS = 2_000
ENDPOINT_CEILING_MS = 2_500        # p95 of each instant endpoint


def test_twenty_learners_at_once(own_app_url, tmp_path_factory):
    run = measure(own_app_url, DURATION, idle_calls=0)      # idle latencies are the benchmark's (ratios)
    report = run.report()
    (tmp_path_factory.mktemp("load") / "load.json").write_text(json.dumps(report, indent=1))
    print("\nload test:", json.dumps(report))
    assert not run.failures, run.failures[:5]
    assert all(run.heavy_running), "the long work must run for the whole test"
    for name, row in report.items():
        if name.startswith("/"):
            assert row["calls"] >= MIN_CALLS, (name, row)
            assert row["load_p95_ms"] <= ENDPOINT_CEILING_MS, (name, row)
    assert report["pooled"]["load_p95_ms"] <= POOLED_CEILING_MS, report["pooled"]
