"""models.stability: the QK-norm bound, the z-loss, softmax overflow against NumPy, and the sweep's claim."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from models.checks import InputError
from models.norm_data import char_batch
from models.stability import (OVERFLOW_PATTERN, SweepConfig, SweepLog, _Trainer, qk_logit_bound, softmax_overflow,
                              stability_sweep, z_loss)
from models.transformer import Probe, Transformer, TransformerConfig


# --- QK-norm bounds every logit ----------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_qk_norm_bounds_attention_logits(norm, seed):
    """With QK-norm the largest logit stays under max|g_q|·max|g_k|·√d_head (+ the biases), however large
    the projections; without it, the same weights give logits far above that bound."""
    gen = torch.Generator().manual_seed(seed)
    cfg = TransformerConfig(50, 2, 32, 4, 16, qk_norm=True, norm=norm)
    model = Transformer.seeded(cfg, seed)
    plain = Transformer.seeded(TransformerConfig(50, 2, 32, 4, 16, norm=norm), seed)
    with torch.no_grad():
        for m in (model, plain):
            for block in m.blocks:
                block.attn.qkv.weight.mul_(30.0)                            # huge q and k
        for block in model.blocks:                                          # random gains (and biases)
            for n in (block.attn.q_norm, block.attn.k_norm):
                n.weight.copy_(torch.randn(n.weight.shape, generator=gen) * 2)
                if hasattr(n, "bias"):
                    n.bias.copy_(torch.randn(n.bias.shape, generator=gen))
    ids = torch.randint(0, 50, (3, 16), generator=gen)
    probe, plain_probe = Probe(), Probe()
    model(ids, probe=probe)
    plain(ids, probe=plain_probe)
    bounds = qk_logit_bound(model)
    for got, bound in zip(probe.attn_logit_max, bounds):
        assert got <= bound * (1 + 1e-5)
    # the bound is not vacuous: the un-normalised model's logits at gains 1 exceed √d_head many times over
    assert min(plain_probe.attn_logit_max) > 10 * math.sqrt(cfg.head_dim)


def test_qk_logit_bound_refuses_a_model_without_qk_norm():
    with pytest.raises(ValueError, match="qk_norm"):
        qk_logit_bound(Transformer.seeded(TransformerConfig(11, 1, 16, 2, 8)))


# --- the z-loss --------------------------------------------------------------------------------------
def test_z_loss_is_mean_squared_log_partition():
    logits = torch.randn(3, 5, 7, dtype=torch.float64) * 10
    m = logits.amax(-1, keepdim=True)
    log_z = (m + (logits - m).exp().sum(-1, keepdim=True).log()).squeeze(-1)       # by hand, stable
    torch.testing.assert_close(z_loss(logits), (log_z ** 2).mean())
    assert float(z_loss(torch.zeros(1, 4, dtype=torch.float64))) == pytest.approx(math.log(4) ** 2)


def test_z_loss_gradient():
    logits = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(z_loss, (logits,))
    z_loss(logits).backward()                                       # d/dx mean(lse²) = 2·lse·softmax / N
    lse = torch.logsumexp(logits.detach(), -1, keepdim=True)
    torch.testing.assert_close(logits.grad, 2 * lse * logits.detach().softmax(-1) / 4)


# --- softmax overflow against NumPy ------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1.0, 8.0, 11.0, 11.2, 12.0, 50.0, 100.0, 200.0])
def test_overflow_matches_numpy_float16(scale):
    r = softmax_overflow(scale)
    x = np.array(OVERFLOW_PATTERN, dtype=np.float32) * np.float32(scale)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x.astype(np.float16))
        naive = e / e.sum(dtype=np.float16)
        shifted = np.exp(x.astype(np.float16) - x.astype(np.float16).max())
        stable = shifted / shifted.sum(dtype=np.float16)
    got = np.array(r.probs["float16"]["naive"])
    assert r.finite["float16"]["naive"] == bool(np.isfinite(naive).all())
    np.testing.assert_array_equal(np.isnan(got), np.isnan(naive))
    np.testing.assert_allclose(got[np.isfinite(naive)], naive[np.isfinite(naive)], rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(r.probs["float16"]["stable"], stable, rtol=2e-3, atol=1e-4)
    if scale > math.log(65504):                                    # exp(x) itself overflows
        assert not r.finite["float16"]["naive"]
    if scale <= 8:
        assert r.finite["float16"]["naive"]
    for dtype in ("float32", "bfloat16", "float16"):
        assert r.finite[dtype]["stable"]
        assert sum(r.probs[dtype]["stable"]) == pytest.approx(1, abs=1e-2)


def test_largest_finite_logit_per_dtype():
    r = softmax_overflow(100.0)
    assert r.largest_logit["float16"] == pytest.approx(math.log(np.finfo(np.float16).max))     # 11.09
    assert r.largest_logit["float32"] == pytest.approx(math.log(np.finfo(np.float32).max))     # 88.72
    assert r.largest_logit["bfloat16"] == pytest.approx(88.72, abs=0.01)
    assert r.finite["float32"]["naive"] is False and r.finite["bfloat16"]["naive"] is False    # 100 > 88.7


# --- the sweep -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sweep_qk_norm_wins_at_the_highest_learning_rate(seed, one_thread):
    """Wortsman et al.'s Figure 1 at its highest rate. Smaller than the default sweep so it costs ~4 s:
    one learning rate (the default's highest, 0.1) and 100 steps instead of five rates × 200 steps;
    the model is the default's (2 layers, d = 64). d = 32 did not show the loss gap for every seed."""
    cfg = SweepConfig(n_lrs=1, lr_max=0.1, steps=100, seed=seed)
    log = SweepLog(cfg)
    for update in stability_sweep(cfg):
        log.add(update)
    final = log.final_losses()
    assert final["qk_norm"][0] < final["plain"][0]
    peak = {c.run.variant: max(max(m) for m in c.logit_max) for c in log.curves}
    assert peak["plain"] > 5 * peak["qk_norm"]
    for c in log.curves:                                            # nothing non-finite is ever returned
        assert all(math.isfinite(v) for v in (*c.loss, *c.entropy_min, *c.log_z))
    assert log.done and log.timing is not None


def test_diverged_run_is_a_finding_not_a_nan():
    cfg = SweepConfig(n_lrs=1, steps=4, n_layers=1, d_model=16, n_heads=2, seq_len=8, batch=2)
    trainer = _Trainer(0, cfg.runs[0], cfg, torch.device("cpu"))
    ids = char_batch(2, 9, seed=0, device="cpu")
    assert trainer.step(ids, 1) is not None
    with torch.no_grad():
        trainer.model.head.weight[0, 0] = float("nan")
    assert trainer.step(ids, 2) is None
    assert trainer.result.final_loss is None
    assert [(f.key, f.step, f.what) for f in trainer.result.findings] == [("stability_found_nonfinite", 2, "loss")]


def test_sweep_streams_and_shares_init_and_batches(one_thread):
    cfg = SweepConfig(n_lrs=2, lr_min=1e-3, lr_max=1e-2, steps=6, n_layers=1, d_model=16, n_heads=2, seq_len=8,
                      batch=2, z_loss=0.0)
    updates = list(stability_sweep(cfg, every=2))
    assert len(updates) > 2 and updates[-1].done and not updates[0].done
    log = SweepLog(cfg)
    for u in updates:
        log.add(u)
    first = {c.run.variant: c.loss[0] for c in log.curves if c.run.lr_index == 0}
    # same weights, same batch, QK-norm gains at 1 do change the logits; z-loss 0 changes nothing
    assert first["plain"] == first["z_loss"] and first["qk_norm"] == first["both"]
    assert [lr for lr in cfg.lrs] == pytest.approx([1e-3, 1e-2])


@pytest.mark.parametrize("settings, key", [
    (dict(lr_max=0.0), "error_number"),
    (dict(lr_max=1e3), "error_number"),
    (dict(lr_min=0.1, lr_max=0.01), "stability_err_lr_order"),
    (dict(n_lrs=50), "error_whole_number"),
    (dict(steps=10_000), "error_whole_number"),
    (dict(z_loss=-1e-3), "error_number"),
    (dict(n_lrs=8, steps=500, d_model=128), "stability_err_work"),
    (dict(d_model=60, n_heads=8), "transformer_err_head_dim"),
])
def test_bad_settings_say_what_is_wrong(settings, key):
    with pytest.raises(InputError) as info:
        SweepConfig(**settings)
    assert info.value.key == key
    assert info.value.render("zh-CN") != info.value.render("en")


def test_overflow_scale_is_checked():
    with pytest.raises(InputError, match="logit scale"):
        softmax_overflow(1e6)


def test_a_softmax_whose_sum_overflowed_is_broken_though_finite():
    """Regression: at a largest logit of 11, float16's Σ exp(x) overflows while each exp(x) is finite, so
    the naive softmax is all zeros; the tab called it finite."""
    from viz.stability import overflow_summary
    r = softmax_overflow(11.0)
    x = np.array(r.logits, dtype=np.float16)
    with np.errstate(over="ignore"):
        e = np.exp(x)
        naive = e / e.sum(dtype=np.float16)                                # numpy: each finite, all 0
    assert np.isfinite(e).all() and np.isinf(e.sum(dtype=np.float16)) and not naive.any()
    assert r.finite["float16"]["naive"] and r.prob_sum["float16"]["naive"] == 0
    assert r.broken("float16", "naive") and not r.broken("float16", "stable") and not r.broken("float32", "naive")
    line = next(row for row in overflow_summary(r, "en").splitlines() if row.startswith("- **float16**"))
    assert "naive softmax **broken: every value finite, but they sum to 0**" in line


def test_overflow_labels_sit_above_the_bars():
    """Regression: "NaN" was written at p = 0.95, over the stable softmax's bar of p = 1 (largest logit 89)."""
    from viz.stability import overflow_figure
    fig = overflow_figure(softmax_overflow(89.0), "en")
    layout = fig["layout"]
    for label in (t for t in fig["data"] if t["type"] == "scatter" and "NaN" in t["text"]):
        axis = label.get("yaxis", "y").replace("y", "yaxis")
        bars = [p for t in fig["data"] if t["type"] == "bar" and t.get("yaxis", "y") == label.get("yaxis", "y")
                for p in t["y"] if p is not None]
        assert max(bars) < min(label["y"]) < layout[axis]["range"][1]
