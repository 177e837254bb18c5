"""The tiled FlashAttention forward against the naive path and PyTorch's SDPA; the cost measurement."""
import math

import pytest
import torch
import torch.nn.functional as F

from models import attention_cost as cost
from models.attention import flash_attention, naive_attention
from models.checks import InputError
from models.flash_explore import explore_flash, flash_frame
from models.masks import masked_attention

CPU = torch.device("cpu")


def qkv(lead, T_q, T_k, d, d_v, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*lead, T_q, d, generator=g, dtype=dtype), torch.randn(*lead, T_k, d, generator=g, dtype=dtype),
            torch.randn(*lead, T_k, d_v, generator=g, dtype=dtype))


# (leading dims, T_q, T_k, d, d_v, block, causal): odd T, block 1, block = T, block > T, T_q != T_k
SHAPES = [
    ((), 7, 7, 3, 3, 2, True),
    ((), 7, 7, 3, 5, 2, False),
    ((2,), 13, 13, 8, 8, 1, True),
    ((2, 3), 17, 17, 16, 4, 4, True),
    ((2, 3), 17, 17, 16, 4, 17, False),
    ((1, 2), 9, 9, 4, 4, 64, True),
    ((3,), 5, 11, 6, 2, 3, False),
    ((3,), 11, 5, 6, 2, 4, False),
    ((2, 2), 1, 1, 1, 1, 1, True),
    ((1,), 64, 64, 64, 64, 16, True),
]


@pytest.mark.parametrize("lead,T_q,T_k,d,d_v,block,causal", SHAPES)
def test_tiled_equals_naive_equals_sdpa_in_float64(lead, T_q, T_k, d, d_v, block, causal):
    q, k, v = qkv(lead, T_q, T_k, d, d_v, seed=T_q * 31 + block)
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    trace = flash_attention(q, k, v, block=block, causal=causal)
    naive = naive_attention(q, k, v, causal=causal)
    torch.testing.assert_close(trace.out, reference, atol=1e-12, rtol=0)
    torch.testing.assert_close(naive.out, reference, atol=1e-12, rtol=0)
    torch.testing.assert_close(naive.probs.sum(-1), torch.ones(*lead, T_q, dtype=torch.float64), atol=1e-12, rtol=0)


@pytest.mark.parametrize("seed", range(12))
def test_random_shapes(seed):
    g = torch.Generator().manual_seed(seed)
    draw = lambda low, high: int(torch.randint(low, high + 1, (1,), generator=g))   # noqa: E731
    causal = seed % 2 == 0
    T_q = draw(1, 40)
    T_k = T_q if causal else draw(1, 40)
    q, k, v = qkv((draw(1, 2), draw(1, 3)), T_q, T_k, draw(1, 12), draw(1, 12), seed)
    block = draw(1, 45)
    trace = flash_attention(q, k, v, block=block, causal=causal)
    torch.testing.assert_close(trace.out, F.scaled_dot_product_attention(q, k, v, is_causal=causal), atol=1e-12,
                               rtol=0)


@pytest.mark.parametrize("block", [1, 3, 4, 8])
def test_after_the_last_tile_l_is_the_rows_sum_of_exp_s_minus_max(block):
    q, k, v = qkv((2,), 8, 8, 4, 4, seed=block)
    trace = flash_attention(q, k, v, block=block, causal=True)
    scores = naive_attention(q, k, v, causal=True).scores                  # (2, 8, 8), -inf above the diagonal
    row_max = scores.amax(-1)
    torch.testing.assert_close(trace.m, row_max, atol=0, rtol=0)           # the running max ends at the true max
    torch.testing.assert_close(trace.l, (scores - row_max[..., None]).exp().sum(-1), atol=1e-12, rtol=0)
    torch.testing.assert_close(trace.lse, torch.logsumexp(scores, -1), atol=1e-12, rtol=0)


def test_each_tile_rescales_by_exp_m_old_minus_m_new():
    q, k, v = qkv((), 10, 10, 4, 4, seed=3)
    trace = flash_attention(q, k, v, block=3)
    first_of_rows = set()
    for tile in trace.tiles:
        if tile.rows not in first_of_rows:                                 # a row block's first tile: m_old = -inf
            first_of_rows.add(tile.rows)
            assert torch.all(tile.m_old == -math.inf) and torch.all(tile.rescale == 0)
            continue
        torch.testing.assert_close(tile.rescale, torch.exp(tile.m_old - tile.m_new))
        assert torch.all(tile.rescale <= 1) and torch.all(tile.m_new >= tile.m_old)
        expected = tile.rescale * tile.l_old + torch.exp(tile.scores - tile.m_new[:, None]).sum(-1)
        torch.testing.assert_close(tile.l_new, expected)


@pytest.mark.parametrize("T,block", [(16, 4), (13, 4), (9, 1), (5, 8)])
def test_causal_tiles_above_the_diagonal_are_skipped_and_every_tile_is_accounted_for(T, block):
    q, k, v = qkv((), T, T, 2, 2, seed=T)
    trace = flash_attention(q, k, v, block=block, causal=True)
    grid = math.ceil(T / block)
    above = {((r, min(r + block, T)), (c, min(c + block, T)))
             for r in range(0, T, block) for c in range(0, T, block) if c > min(r + block, T) - 1}
    assert set(trace.skipped) == above
    assert len(trace.tiles) + len(trace.skipped) == grid * grid
    assert len(above) == grid * (grid - 1) // 2
    assert not {(t.rows, t.cols) for t in trace.tiles} & above


def test_a_fully_masked_row_gives_zeros_not_nan():
    q, k, v = qkv((2,), 6, 6, 4, 3, seed=1)
    mask = torch.ones(2, 6, 6, dtype=torch.bool)
    mask[0, 2] = False                                                     # query 2 of sequence 0 sees nothing
    mask[1, :, 4:] = False                                                 # keys 4, 5 of sequence 1 are padding
    expected, _ = masked_attention(q, k, v, mask)
    for block in (1, 2, 4, 6):
        trace = flash_attention(q, k, v, block=block, mask=mask)
        assert not torch.isnan(trace.out).any()
        assert torch.equal(trace.out[0, 2], torch.zeros(3, dtype=torch.float64))
        torch.testing.assert_close(trace.out, expected, atol=1e-12, rtol=0)
        assert trace.l[0, 2] == 0 and trace.m[0, 2] == -math.inf
    naive = naive_attention(q, k, v, mask=mask)
    assert torch.equal(naive.probs[0, 2], torch.zeros(6, dtype=torch.float64))
    torch.testing.assert_close(naive.out, expected, atol=1e-12, rtol=0)
    # A tile whose every cell is masked (in every sequence and head) is skipped, as causal ones are.
    all_masked = torch.zeros(1, 4, 4, dtype=torch.bool)
    assert len(flash_attention(*qkv((1,), 4, 4, 2, 2, 0), block=2, mask=all_masked).tiles) == 0


def test_float32_within_1e6_of_naive():
    for T, block, causal in [(64, 7, True), (64, 64, False), (33, 5, False), (1, 1, True)]:
        ex = explore_flash(T=T, head_dim=64, block=block, causal=causal, dtype="float32", seed=T)
        assert ex.max_diff <= 1e-6 and ex.max_diff_sdpa <= 1e-6


def test_the_tile_by_tile_view_computes_on_the_cpu_whatever_the_shared_device():
    """Thousands of tiny recorded steps: 13x slower on an H200 than on two CPU cores (1.9 s vs 0.14 s)."""
    assert explore_flash(T=4, head_dim=2, block=2).timing.device == "cpu"


def test_a_trace_copied_to_the_cpu_is_the_same_trace():
    from models.flash_explore import _cpu
    trace = explore_flash(T=6, head_dim=2, block=4, dtype="float64").trace
    copy = _cpu(trace)
    assert torch.equal(copy.out, trace.out) and len(copy.tiles) == len(trace.tiles) == 3
    assert torch.equal(copy.tiles[-1].acc, trace.tiles[-1].acc) and copy.skipped == trace.skipped


def test_state_replays_the_loop():
    ex = explore_flash(T=10, head_dim=3, block=3, causal=True, dtype="float64")
    trace = ex.trace
    start = trace.state(0)
    assert torch.all(start.m == -math.inf) and torch.all(start.l == 0) and torch.isnan(start.out).all()
    end = trace.state(len(trace.tiles))
    assert torch.equal(end.out, trace.out) and torch.equal(end.l, trace.l) and end.done_rows == 10
    done = [trace.state(s).done_rows for s in range(len(trace.tiles) + 1)]
    assert done == sorted(done)                                            # rows only ever finish
    for s, tile in enumerate(trace.tiles, start=1):
        state = trace.state(s)
        r0, r1 = tile.rows
        torch.testing.assert_close(state.m[r0:r1], tile.m_new)
        if tile.last:                                                      # written: the final output rows
            torch.testing.assert_close(state.out[r0:r1], ex.naive.out[r0:r1], atol=1e-12, rtol=0)
    frame = flash_frame(ex, 1)
    assert frame.recurrence.row == 0 and frame.recurrence.m_old == -math.inf and frame.recurrence.rescale == 0


def test_recurrence_numbers_add_up():
    ex = explore_flash(T=12, head_dim=4, block=4, causal=False, dtype="float64", seed=5)
    for step in range(1, ex.n_steps + 1):
        r = flash_frame(ex, step).recurrence
        assert r.m_new == max(r.m_old, r.tile_max)
        assert math.isclose(r.l_new, r.rescale * r.l_old + r.tile_sum, rel_tol=1e-12)


@pytest.mark.parametrize("kwargs,message", [
    (dict(T=0), "sequence length T = 0: must be a whole number from 1 to 64"),
    (dict(T=65), "sequence length T = 65: must be a whole number from 1 to 64"),
    (dict(head_dim=0), "head dim d = 0: must be a whole number from 1 to 64"),
    (dict(head_dim=100), "head dim d = 100"),
    (dict(block=0), "block size = 0: must be a whole number from 1 to 64"),
    (dict(block=65), "block size = 65"),
    (dict(block=2.5), "block size = 2.5"),
    (dict(dtype="float16"), "precision = 'float16': must be one of float32, float64"),
])
def test_bad_sizes_are_refused_with_a_clear_message(kwargs, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        explore_flash(**kwargs)


def test_bad_input_to_the_kernel():
    q, k, v = qkv((), 4, 5, 2, 2, seed=0)
    with pytest.raises(InputError, match="causal attention needs as many queries as keys"):
        flash_attention(q, k, v, block=2, causal=True)
    with pytest.raises(InputError, match="block size = 0"):
        flash_attention(q, k, v, block=0)
    with pytest.raises(InputError, match="shapes do not fit"):
        flash_attention(q, k[..., :1], v, block=2)
    assert InputError("attn_err_causal_lengths", t_q=4, t_k=5).render("zh-CN").startswith("因果注意力")


# --------------------------------------------------------------------------- the cost measurement
def test_measured_naive_bytes_equal_the_tensors_nbytes(one_thread):
    """One thread: the CPU flash kernel also holds a scratch block per thread (with 16 threads its peak
    was 9.2 MB, more than a tenth of the naive 17 MB)."""
    q, k, v = qkv((1, 2), 1024, 1024, 32, 32, seed=0, dtype=torch.float32)
    naive, peak, ops, _ = cost.measure_peak(lambda: naive_attention(q, k, v), CPU)
    assert peak == naive.scores.nbytes + naive.probs.nbytes + naive.out.nbytes
    assert naive.scores.nbytes == 2 * 1024 * 1024 * 4 and "aten::_softmax" in ops
    out, sdpa_peak, sdpa_ops, _ = cost.measure_peak(lambda: F.scaled_dot_product_attention(q, k, v), CPU)
    assert out.nbytes <= sdpa_peak < peak / 10                              # O(T·d), not T²
    assert cost.sdpa_backend(sdpa_ops) == "cpu_flash"


def test_sweep_streams_points_with_measured_bytes_and_a_named_backend(one_thread):
    sweeps = list(cost.cost_sweep(512, head_dim=16, heads=2, batch=1, decode=False, device=CPU))
    final = sweeps[-1]
    assert final.ended == "done" and [p.T for p in final.points] == [256, 512]
    assert [len(s.points) for s in sweeps] == [1, 2, 2]                    # one update per point, then the end
    assert final.backend == "cpu_flash"
    for p in final.points:
        naive = p.calls["naive"]
        assert naive.peak_bytes == p.matrices_bytes + p.rows_bytes          # scores + probs + out
        assert p.matrices_bytes == 2 * 2 * p.T * p.T * 4 and p.max_diff < 1e-5
        # Regression: the T·d formula counted q, k, v and out (4·B·H·T·d) against peaks measured during the
        # call, where q, k, v already exist: SDPA's measured peak (its output and the kernel's scratch) lay
        # below that floor (1.07 MiB against 2 MiB at T = 2,048). The floor is the output now.
        assert p.rows_bytes <= p.calls["sdpa"].peak_bytes
        assert p.calls["sdpa"].peak_bytes < naive.peak_bytes and p.calls["tiled"].runs >= 1


def test_the_naive_path_stops_at_the_budget_before_allocating(monkeypatch):
    monkeypatch.setattr(cost, "byte_budget", lambda device: 5 * 2**20)     # 5 MiB: naive fits at 512, not 1024
    allocated = []
    real = cost.naive_attention
    monkeypatch.setattr(cost, "naive_attention", lambda *a, **kw: allocated.append(a[0].shape[-2]) or real(*a, **kw))
    final = list(cost.cost_sweep(2048, head_dim=8, decode=False, device=CPU))[-1]
    calls = {p.T: p.calls["naive"] for p in final.points}
    assert isinstance(calls[512], cost.Call) and calls[1024] == cost.Skipped("memory", calls[1024].need)
    assert calls[1024].need > 5 * 2**20 and isinstance(calls[2048], cost.Skipped)
    assert sorted(set(allocated)) == [256, 512]                            # never called beyond the budget
    assert all(isinstance(p.calls["sdpa"], cost.Call) for p in final.points)   # SDPA goes on


def test_time_budget_skips_calls_predicted_too_slow():
    final = list(cost.cost_sweep(1024, head_dim=8, decode=False, device=CPU, max_call_s=1e-9))[-1]
    assert all(isinstance(final.points[0].calls[i], cost.Call) for i in cost.IMPLEMENTATIONS)
    assert all(p.calls[i].reason == "time" for p in final.points[1:] for i in cost.IMPLEMENTATIONS)


def test_sweep_requests_beyond_the_budget_are_refused():
    with pytest.raises(InputError, match="largest T = 32,768 is beyond this device's bound: at most 16,384 on cpu"):
        cost.check_sweep(32768, 64, 1, 1, "float32", CPU)
    with pytest.raises(InputError, match="does not fit the memory budget") as refused:
        cost.check_sweep(16384, 256, 64, 16, "float32", CPU)
    assert refused.value.render("zh-CN").startswith("T = 16,384 超出内存预算：仅 q、k、v 和输出就需要 65,536 MiB")
    with pytest.raises(InputError, match="largest T = 100: must be a whole number ≥ 256"):
        cost.check_sweep(100, 64, 1, 1, "float32", CPU)
    with pytest.raises(InputError, match="heads = 0"):
        cost.check_sweep(1024, 64, 0, 1, "float32", CPU)


def test_decode_steps_read_a_cache_that_grows_with_the_context():
    from models.kv_cache import kv_cache_bytes
    points = list(cost.decode_step_times((8, 64, 256), steps=3, device=CPU))
    assert [p.context for p in points] == [8, 64, 256]
    for p in points:
        assert p.cache_bytes == kv_cache_bytes(4, 4, 32, p.context, bytes_per_elem=4)   # the tiny GPT, fp32
        assert p.ms > 0


def test_mistral_cache_is_flat_after_the_window():
    rows = cost.mistral_window_cache([2048, 4096, 8192, 32768])
    assert [full for _, full, _ in rows] == [2048 * 131072 // 1, 4096 * 131072, 8192 * 131072, 32768 * 131072]
    assert [window for _, _, window in rows] == [2048 * 131072] + [4096 * 131072] * 3


def test_a_measurement_writes_nothing_to_the_log():
    """Regression: each profile wrote two lines of Kineto's ("USDT: ... profiler_start", "... profiler_stop")
    to stderr: ~44 lines of the server's log per cost sweep. Run where nothing set Kineto's level."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    code = ("import torch; from models import attention_cost as c; "
            "c.measure_peak(lambda: torch.ones(8), torch.device('cpu'))")
    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "profiler_start" not in out.stderr and "USDT" not in out.stderr, out.stderr[-2000:]
