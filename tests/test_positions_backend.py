"""RoPE, sinusoidal and ALiBi against independent references: complex multiplication, HF's rotate_half,
explicit rotation matrices, Meta's Llama 3.1 ``apply_scaling`` loop, the ALiBi paper's slopes, the
sinusoidal formula of Vaswani et al., each written here from the published definition."""
import math

import pytest
import torch
from torch.testing import assert_close

from models.positions import (Llama3Scaling, alibi_bias, alibi_power_of_two, alibi_slopes, apply_rope,
                              llama3_inv_freq, longest_wavelength, ntk_base, pair_dims, rope_inv_freq,
                              rope_permutation, sinusoidal_encoding)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
F64 = torch.float64


# --------------------------------------------------------------------------- independent references


def ref_inv_freq(d: int, base: float) -> torch.Tensor:
    """θ_i = base^(-2i/d), one Python float at a time."""
    return torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=F64)


def ref_interleaved(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """Meta's Llama: pairs (2i, 2i+1) as complex numbers times e^{i m θ_i} (torch.polar)."""
    d = x.shape[-1]
    angles = positions.to(F64)[..., None] * ref_inv_freq(d, base).to(x.device)      # (..., T, d/2)
    freqs_cis = torch.polar(torch.ones_like(angles), angles)
    xc = torch.view_as_complex(x.to(F64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(xc * freqs_cis).flatten(-2)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Hugging Face's rotate_half, written again: (x1, x2) -> (-x2, x1)."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def ref_half(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """Hugging Face's Llama: emb = cat(freqs, freqs); x·cos + rotate_half(x)·sin, in float64."""
    d = x.shape[-1]
    freqs = positions.to(F64)[..., None] * ref_inv_freq(d, base).to(x.device)
    emb = torch.cat((freqs, freqs), dim=-1)
    x = x.to(F64)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def ref_rotation_matrix(d: int, m: float, base: float, style: str) -> torch.Tensor:
    """RoFormer eq. (15): the block rotation R_m built entry by entry."""
    R = torch.zeros(d, d, dtype=F64)
    for i in range(d // 2):
        a, b = (2 * i, 2 * i + 1) if style == "interleaved" else (i, i + d // 2)
        angle = m * base ** (-2 * i / d)
        R[a, a], R[a, b] = math.cos(angle), -math.sin(angle)
        R[b, a], R[b, b] = math.sin(angle), math.cos(angle)
    return R


def ref_llama3(freqs: list[float], factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, old_context_len=8192):
    """Llama 3.1's ``apply_scaling`` as Meta's reference code states it: a loop over the frequencies."""
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    new_freqs = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            new_freqs.append(freq)
        elif wavelen > low_freq_wavelen:
            new_freqs.append(freq / factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            new_freqs.append((1 - smooth) * freq / factor + smooth * freq)
    return new_freqs


# --------------------------------------------------------------------------- frequencies


@pytest.mark.parametrize("d,base", [(2, 10000.0), (8, 100.0), (64, 10000.0), (128, 500000.0), (1024, 1e6)])
def test_inv_freq_is_base_to_the_minus_2i_over_d(d, base):
    assert_close(rope_inv_freq(d, base, device="cpu"), ref_inv_freq(d, base), rtol=1e-15, atol=0)


@pytest.mark.parametrize("d,base", [(2, 10000.0), (64, 10000.0), (128, 10000.0), (128, 500000.0), (1024, 1e9)])
def test_longest_wavelength_is_two_pi_base_to_the_d_minus_2_over_d(d, base):
    """The slowest pair is θ_{d/2-1} = base^(-(d-2)/d): one turn every 2π·base^((d-2)/d) tokens."""
    assert longest_wavelength(d, base) == pytest.approx(2 * math.pi * base ** ((d - 2) / d), rel=1e-12)


def test_longest_wavelengths_the_tab_quotes():
    """Issue 19 (6): ≈ 54K for d = 128 with base 10⁴, ≈ 2.6M with base 5·10⁵ (not 2π·base: 63K, 3.1M)."""
    assert round(longest_wavelength(128, 1e4), -3) == 54_000
    assert round(longest_wavelength(128, 5e5), -5) == 2_600_000
    import locales
    explain = locales.catalog()
    assert "≈ 54 K with base 10,000, ≈ 2.6 M with base 500,000" in explain["en"]["pos_explain"]
    assert "底数 10,000 约 5.4 万，底数 500,000 约 260 万" in explain["zh-CN"]["pos_explain"]


def test_ntk_aware_base_keeps_the_fastest_pair_and_slows_the_slowest_by_alpha():
    d, base, alpha = 128, 10000.0, 8.0
    assert ntk_base(base, d, alpha) == pytest.approx(base * alpha ** (128 / 126), rel=1e-15)
    plain, scaled = rope_inv_freq(d, base, device="cpu"), rope_inv_freq(d, base, ntk_alpha=alpha, device="cpu")
    assert scaled[0].item() == 1.0
    assert (plain[-1] / scaled[-1]).item() == pytest.approx(alpha, rel=1e-12)
    assert torch.all(scaled <= plain)
    assert_close(scaled, ref_inv_freq(d, base * alpha ** (d / (d - 2))), rtol=1e-14, atol=0)


@pytest.mark.parametrize("scaling", [Llama3Scaling(), Llama3Scaling(factor=4, low_freq_factor=2, high_freq_factor=8,
                                                                     original_max_position=4096),
                                     Llama3Scaling(factor=32, low_freq_factor=1, high_freq_factor=4,
                                                   original_max_position=8192)])
@pytest.mark.parametrize("d,base", [(128, 500000.0), (64, 10000.0), (256, 1e6)])
def test_llama31_scaling_matches_metas_reference_loop(scaling, d, base):
    freqs = [base ** (-2 * i / d) for i in range(d // 2)]
    expected = ref_llama3(freqs, scaling.factor, scaling.low_freq_factor, scaling.high_freq_factor,
                          scaling.original_max_position)
    got = llama3_inv_freq(torch.tensor(freqs, dtype=F64), scaling)
    assert_close(got, torch.tensor(expected, dtype=F64), rtol=1e-14, atol=0)


def test_llama31_scaling_across_every_band_edge():
    """Wavelengths swept densely through both edges (L/4 = 2048 and L = 8192) and the blend between."""
    wavelengths = torch.logspace(math.log10(500), math.log10(40000), 2001, dtype=F64)
    freqs = (2 * math.pi / wavelengths).tolist()
    assert_close(llama3_inv_freq(torch.tensor(freqs, dtype=F64)), torch.tensor(ref_llama3(freqs), dtype=F64),
                 rtol=1e-14, atol=0)


def test_llama31_published_setting_keeps_fast_pairs_and_divides_slow_ones_by_8():
    """Llama 3.1 8B: head dim 128, base 500,000, factor 8, low 1, high 4, original 8,192."""
    thetas = rope_inv_freq(128, 500000.0, device="cpu")
    scaled = llama3_inv_freq(thetas)
    wavelength = 2 * math.pi / thetas
    kept, divided = wavelength < 8192 / 4, wavelength > 8192 / 1
    assert_close(scaled[kept], thetas[kept], rtol=0, atol=0)
    assert_close(scaled[divided], thetas[divided] / 8, rtol=1e-15, atol=0)
    middle = ~kept & ~divided
    assert middle.any() and torch.all(scaled[middle] < thetas[middle]) and torch.all(scaled[middle] > thetas[middle] / 8)
    # the blend is continuous at both edges: the smooth factor is 0 at λ = L and 1 at λ = L/4
    edge = torch.tensor([2 * math.pi / 8192, 2 * math.pi / 2048], dtype=F64)
    assert_close(llama3_inv_freq(edge), torch.stack([edge[0] / 8, edge[1]]), rtol=1e-14, atol=0)


# --------------------------------------------------------------------------- apply_rope


def random_input(shape, device, dtype=F64, seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(*shape, generator=g, device=device, dtype=dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(5, 8), (2, 7, 16), (2, 4, 9, 64), (2, 3, 2, 6, 32)])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_interleaved_equals_complex_multiplication(device, shape, base):
    x = random_input(shape, device)
    positions = torch.arange(shape[-2], device=device) * 37 + 3                 # arbitrary, non-contiguous steps
    assert_close(apply_rope(x, positions, base=base, style="interleaved"), ref_interleaved(x, positions, base),
                 rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(5, 8), (2, 7, 16), (2, 4, 9, 64), (2, 3, 2, 6, 32)])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_half_equals_cos_sin_with_rotate_half(device, shape, base):
    x = random_input(shape, device)
    positions = torch.arange(shape[-2], device=device) * 37 + 3
    assert_close(apply_rope(x, positions, base=base, style="half"), ref_half(x, positions, base),
                 rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_rotation_is_the_block_matrix_of_roformer(style):
    d, base = 12, 100.0
    x = random_input((4, 5, d), "cpu")
    positions = torch.tensor([0.0, 1.0, 2.5, 17.0, 1000.0])
    out = apply_rope(x, positions, base=base, style=style)
    for t, m in enumerate(positions.tolist()):
        expected = x[:, t] @ ref_rotation_matrix(d, m, base, style).T               # row vectors: x R^T
        assert_close(out[:, t], expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("d", [2, 4, 8, 128, 1024])
def test_permutation_turns_one_layout_into_the_other(d):
    perm = rope_permutation(d, device="cpu")
    assert perm.tolist() == list(range(0, d, 2)) + list(range(1, d, 2))         # even dims, then odd
    x = random_input((2, 3, 11, d), "cpu")
    inter, half = apply_rope(x, style="interleaved"), apply_rope(x[..., perm], style="half")
    assert_close(half, inter[..., perm], rtol=0, atol=1e-13)
    inverse = perm.argsort()
    assert_close(apply_rope(x, style="half")[..., inverse], apply_rope(x[..., inverse], style="interleaved"),
                 rtol=0, atol=1e-13)


def test_permuted_weights_give_the_same_scores():
    """HF's conversion script permutes the rows of W_q and W_k; then rotate_half gives Meta's scores."""
    d, d_model, T = 16, 32, 10
    perm = rope_permutation(d, device="cpu")
    w_q, w_k, tokens = random_input((d, d_model), "cpu", seed=1), random_input((d, d_model), "cpu", seed=2), \
        random_input((T, d_model), "cpu", seed=3)
    meta_q, meta_k = apply_rope(tokens @ w_q.T, style="interleaved"), apply_rope(tokens @ w_k.T, style="interleaved")
    hf_q, hf_k = apply_rope(tokens @ w_q[perm].T, style="half"), apply_rope(tokens @ w_k[perm].T, style="half")
    assert_close(hf_q @ hf_k.T, meta_q @ meta_k.T, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(apply_rope(tokens @ w_q.T, style="half") @ apply_rope(tokens @ w_k.T, style="half").T,
                              meta_q @ meta_k.T, atol=1e-3)                     # unpermuted weights: different scores


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_norms_are_preserved_pair_by_pair(style):
    d = 64
    x = random_input((3, 20, d), "cpu")
    out = apply_rope(x, torch.arange(20) * 1000, style=style)
    assert_close(out.norm(dim=-1), x.norm(dim=-1), rtol=1e-14, atol=0)
    for i in range(d // 2):
        a, b = pair_dims(d, i, style)
        assert_close(out[..., [a, b]].norm(dim=-1), x[..., [a, b]].norm(dim=-1), rtol=1e-13, atol=0)


@pytest.mark.parametrize("style", ["half", "interleaved"])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_score_depends_only_on_the_offset(style, base):
    """q_m · k_n = q_{m+s} · k_{n+s} = qᵀ R_{n-m} k, in float64, for large positions too."""
    d = 128
    q, k = random_input((2, d), "cpu")
    for m, n, shift in [(5, 2, 1), (0, 100, 4096), (70000, 3, 123456), (10, 10, 10**6)]:
        def score(a, b):
            return (apply_rope(q[None], [a], base=base, style=style) @ apply_rope(k[None], [b], base=base, style=style).T).item()
        reference = score(m, n)
        assert score(m + shift, n + shift) == pytest.approx(reference, rel=1e-10, abs=1e-10)
        offset_only = q @ ref_rotation_matrix(d, n - m, base, style) @ k
        assert reference == pytest.approx(offset_only.item(), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-6), (torch.float64, 1e-13), (torch.bfloat16, 2e-2),
                                       (torch.float16, 2e-3)])
@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_dtype_is_preserved_and_accurate(dtype, tol, style):
    x64 = random_input((2, 4, 33, 64), "cpu")
    out = apply_rope(x64.to(dtype), style=style)
    assert out.dtype == dtype and out.shape == x64.shape
    reference = ref_half(x64.to(dtype), torch.arange(33), 10000.0) if style == "half" else \
        ref_interleaved(x64.to(dtype), torch.arange(33), 10000.0)
    assert_close(out.to(F64), reference, rtol=tol, atol=tol * 4)


def test_float32_angles_are_computed_in_float64():
    """At position 10⁶ a float32 angle is off by ~0.03 rad; ours matches the float64 reference to float32 precision."""
    x = random_input((1, 1, 64), "cpu")
    positions = torch.tensor([1_000_003.0])
    out = apply_rope(x.float(), positions, style="interleaved")
    assert_close(out.to(F64), ref_interleaved(x, positions, 10000.0), rtol=0, atol=1e-5)


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_positions_broadcast_per_sequence(style):
    B, H, T, d = 3, 2, 5, 8
    x = random_input((B, H, T, d), "cpu")
    positions = torch.tensor([[0, 1, 2, 3, 4], [10, 11, 12, 13, 14], [7, 3, 5, 1, 0]])     # (B, T)
    out = apply_rope(x, positions[:, None, :], style=style)                   # (B, 1, T) over heads
    for b in range(B):
        assert_close(out[b], apply_rope(x[b], positions[b], style=style), rtol=0, atol=0)


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_position_interpolation_divides_the_positions(style):
    x = random_input((2, 9, 16), "cpu")
    positions = torch.arange(9) * 5.0
    assert_close(apply_rope(x, positions, style=style, scale=4.0), apply_rope(x, positions / 4, style=style),
                 rtol=0, atol=1e-14)
    assert_close(apply_rope(x, style=style, ntk_alpha=3.0), apply_rope(x, style=style, base=ntk_base(10000.0, 16, 3.0)),
                 rtol=0, atol=1e-14)
    custom = llama3_inv_freq(rope_inv_freq(16, 10000.0, device="cpu"), Llama3Scaling(original_max_position=64))
    angles = positions[:, None].double() * custom                                # explicit frequencies
    out = apply_rope(x, positions, style=style, inv_freq=custom)
    a, b = pair_dims(16, 7, style)
    rotated = torch.complex(x[..., a], x[..., b]) * torch.polar(torch.ones(9, dtype=F64), angles[:, 7])
    assert_close(out[..., a], rotated.real, rtol=0, atol=1e-13)
    assert_close(out[..., b], rotated.imag, rtol=0, atol=1e-13)


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_non_contiguous_and_offset_inputs(style):
    x = random_input((2, 7, 3, 33), "cpu")                                    # (B, T, H, D+1)
    view = x[..., 1:].transpose(1, 2)                                          # (B, H, T, 32), odd offset, strided
    assert not view.is_contiguous()
    assert_close(apply_rope(view, style=style), apply_rope(view.contiguous(), style=style), rtol=0, atol=0)


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_autograd_flows_through_the_rotation(style):
    x = random_input((2, 5, 8), "cpu").requires_grad_()
    out = apply_rope(x, style=style)
    assert_close(out.detach(), apply_rope(x.detach(), style=style), rtol=0, atol=1e-15)
    assert torch.autograd.gradcheck(lambda t: apply_rope(t, style=style), (x,))
    (out ** 2).sum().backward()                                                # a rotation: d|Rx|²/dx = 2x
    assert_close(x.grad, 2 * x.detach(), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- sinusoidal and ALiBi


@pytest.mark.parametrize("T,d,base", [(1, 2, 10000.0), (7, 6, 10000.0), (50, 16, 10000.0), (20, 10, 100.0)])
def test_sinusoidal_is_the_papers_formula(T, d, base):
    pe = sinusoidal_encoding(T, d, base, device="cpu", dtype=F64)
    expected = torch.zeros(T, d, dtype=F64)
    for pos in range(T):
        for i in range(0, d, 2):
            expected[pos, i] = math.sin(pos / base ** (i / d))                 # PE(pos, 2i) = sin(pos/10000^(2i/d))
            expected[pos, i + 1] = math.cos(pos / base ** (i / d))             # PE(pos, 2i+1) = cos(...)
    assert_close(pe, expected, rtol=1e-13, atol=1e-13)
    assert sinusoidal_encoding(T, d, base).dtype == torch.float32


def test_alibi_slopes_for_8_heads_are_one_half_to_one_over_256():
    assert alibi_slopes(8, dtype=F64).tolist() == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]


# Press et al.'s rule for a head count that is not a power of 2: the slopes of the largest power of 2
# below it, then every other slope (the 1st, 3rd, 5th, ...) of twice that many heads. Worked by hand:
RULE = {
    # 4 heads: 2^-2, 2^-4, 2^-6, 2^-8; then of 8 heads (2^-1 ... 2^-8) the 1st and 3rd: 2^-1, 2^-3
    6: [-2, -4, -6, -8, -1, -3],
    # 8 heads: 2^-1 ... 2^-8; then of 16 heads (2^-0.5k) the 1st, 3rd, 5th, 7th: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
    12: [-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5],
    # 16 heads: 2^-0.5k; then of 32 heads (2^-0.25k) the 1st, 3rd, 5th, 7th: 2^-0.25, 2^-0.75, 2^-1.25, 2^-1.75
    20: [-0.5 * k for k in range(1, 17)] + [-0.25, -0.75, -1.25, -1.75],
    1: [-8], 2: [-4, -8], 3: [-4, -8, -2],
}


@pytest.mark.parametrize("heads", sorted(RULE))
def test_alibi_slopes_follow_the_papers_rule(heads):
    assert_close(alibi_slopes(heads, dtype=F64, device="cpu"), torch.tensor([2.0 ** e for e in RULE[heads]], dtype=F64),
                 rtol=1e-15, atol=0)


@pytest.mark.parametrize("heads,first", [(1, 1), (2, 2), (7, 4), (8, 8), (12, 8), (64, 64), (100, 64)])
def test_alibi_power_of_two_is_the_largest_below(heads, first):
    assert alibi_power_of_two(heads) == first


def test_alibi_bias_is_minus_slope_times_distance():
    bias = alibi_bias(6, 5, dtype=F64)
    slopes = [2.0 ** e for e in RULE[6]]
    for h in range(6):
        for i in range(5):
            for j in range(5):
                assert bias[h, i, j].item() == -slopes[h] * abs(i - j)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call,message", [
    (lambda: rope_inv_freq(7), "head dim d = 7 is odd"),
    (lambda: rope_inv_freq(0), "head dim d = 0: must be a whole number from 2 to 1024"),
    (lambda: rope_inv_freq(10**6), "head dim d = 1000000: must be a whole number from 2 to 1024"),
    (lambda: apply_rope(torch.zeros(3, 7)), "head dim d = 7 is odd"),
    (lambda: apply_rope(torch.zeros(3, 0)), "head dim d = 0: must be"),
    (lambda: apply_rope(torch.zeros(3, 4), [0, -1, 2]), "positions must be ≥ 0"),
    (lambda: apply_rope(torch.zeros(3, 4), [0, float("nan"), 2]), "positions must be finite"),
    (lambda: apply_rope(torch.zeros(3, 4), [0, 1]), "last dimension must be T = 3"),
    (lambda: apply_rope(torch.zeros(2, 3, 4), torch.zeros(5, 3)), "do not broadcast"),
    (lambda: apply_rope(torch.zeros(3, 4), base=1.0), "base = 1: must be a number above 1 and at most 1e\\+09"),
    (lambda: apply_rope(torch.zeros(3, 4), base=0.5), "base = 0.5: must be a number above 1"),
    (lambda: apply_rope(torch.zeros(3, 4), base=-3), "base = -3: must be a number above 1"),
    (lambda: apply_rope(torch.zeros(3, 4), base=float("inf")), "base = inf: must be a number above 1"),
    (lambda: apply_rope(torch.zeros(3, 4), scale=0.0), "scale = 0: must be a number above 0 and at most 1024"),
    (lambda: apply_rope(torch.zeros(3, 4), scale=-2.0), "scale = -2: must be a number above 0"),
    (lambda: apply_rope(torch.zeros(3, 4), ntk_alpha=0.5), "NTK alpha = 0.5: must be a number from 1 to 1024"),
    (lambda: apply_rope(torch.zeros(3, 2), ntk_alpha=2.0), "needs head dim d ≥ 4"),
    (lambda: apply_rope(torch.zeros(3, 4), style="rotary"), "style = 'rotary': must be one of half, interleaved"),
    (lambda: apply_rope(torch.zeros(4)), "it must be \\[..., T, D\\]"),
    (lambda: apply_rope(torch.zeros(3, 4, dtype=torch.int64)), "floating-point"),
    (lambda: Llama3Scaling(low_freq_factor=4, high_freq_factor=4), "high_freq_factor = 4 must be greater"),
    (lambda: Llama3Scaling(factor=0), "factor s = 0: must be a number from 1 to 1024"),
    (lambda: sinusoidal_encoding(10, 5), "d_model = 5 is odd"),
    (lambda: sinusoidal_encoding(0, 4), "sequence length T = 0"),
    (lambda: sinusoidal_encoding(10**6, 1024), "too many"),
    (lambda: alibi_slopes(0), "heads = 0: must be a whole number from 1 to 128"),
    (lambda: alibi_bias(8, 10**4), "too many"),
])
def test_bad_input_gets_a_clear_message(call, message):
    with pytest.raises(ValueError, match=message):
        call()
