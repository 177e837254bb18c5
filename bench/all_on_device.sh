#!/usr/bin/env bash
# Every benchmark that computes on the torch device, one after another, on one device:
#
#     bench/all_on_device.sh [cuda|cpu] [--quick]
#
# Each prints its own ratios against the reference it measures in the same run. Left out: the BPE
# bench (pure Python and Rust, no torch device) and the load bench (many clients, not the device).
# Each bench stops after $BENCH_TIMEOUT seconds (default 150) so that one slow bench cannot take
# the others' time on a lent machine.
set -uo pipefail
cd "$(dirname "$0")/.."
device=${1:-cuda}
quick=${2:-}
export LLM_ANATOMY_DEVICE=$device PYTHONUNBUFFERED=1 GRADIO_ANALYTICS_ENABLED=False
limit=${BENCH_TIMEOUT:-150}

bench() {
  echo; echo "=== $* ($(date +%T))"
  timeout "$limit" python3 "$@" || echo "=== exit $? (124: stopped after $limit s)"
}

python3 -c "import torch; from models.device import get_device, device_name; \
print('torch', torch.__version__, '| device:', device_name(get_device()))"
bench bench/bench_kv.py --device "$device" $quick
bench bench/bench_moe.py --device "$device" $quick
bench bench/bench_attention.py --device "$device" --quick
bench bench/bench_attention_views.py --device "$device" $quick
bench bench/bench_norms.py --device "$device" $quick
bench bench/bench_positions.py $quick
bench bench/bench_stability.py --device "$device" $quick
bench bench/bench_tensors.py $quick
bench bench/bench_endpoints.py $quick
bench bench/bench_cold_start.py --runs 3
