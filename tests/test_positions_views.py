"""What the Positions tab draws (``models.positions_explore``), checked against loops and closed forms."""
import cmath
import math

import pytest
import torch
from torch.testing import assert_close

from models.positions import Llama3Scaling, rope_inv_freq
from models.positions_explore import (METHODS, RopeSpec, compare_view, conventions_view, decay_curves, diagonal_range,
                                      distance_grid, extrapolation_view, frequencies_view, relative_view, rotate_view,
                                      shown_heads, shown_pairs, unseen_angles)
from tests.test_positions_backend import RULE, ref_inv_freq, ref_llama3, ref_rotation_matrix

F64 = torch.float64


def rotate2(xy, angle):
    c, s = math.cos(angle), math.sin(angle)
    return [c * xy[0] - s * xy[1], s * xy[0] + c * xy[1]]


@pytest.mark.parametrize("style", ["half", "interleaved"])
@pytest.mark.parametrize("m,n,pair", [(5, 2, 3), (0, 0, 0), (4096, 17, 63), (1, 3000, 40)])
def test_rotate_view_turns_each_pair_by_m_theta(style, m, n, pair):
    v = rotate_view(RopeSpec(head_dim=128, base=10000.0, style=style), m, n, pair, seed=3, device="cpu")
    assert [p.pair for p in v.panels] == shown_pairs(64, pair) and pair in [p.pair for p in v.panels]
    assert v.thetas == pytest.approx(ref_inv_freq(128, 10000.0).tolist(), rel=1e-15)
    for p in v.panels:
        theta = 10000.0 ** (-2 * p.pair / 128)
        assert p.dims == ((p.pair, p.pair + 64) if style == "half" else (2 * p.pair, 2 * p.pair + 1))
        assert p.q_rot == pytest.approx(rotate2(p.q, m * theta), abs=1e-12)
        assert p.k_rot == pytest.approx(rotate2(p.k, n * theta), abs=1e-12)
        assert p.q_trail[-1] == pytest.approx(p.q_rot, abs=1e-12)
    assert v.score == pytest.approx(v.relative_score, rel=1e-10, abs=1e-10)
    assert sum(v.contributions) == pytest.approx(v.score, rel=1e-10, abs=1e-10)
    assert v.timing.device == "cpu"


def test_rotate_view_is_seeded():
    a = rotate_view(RopeSpec(head_dim=8), 3, 1, seed=5, device="cpu")
    b = rotate_view(RopeSpec(head_dim=8), 3, 1, seed=5, device="cpu")
    c = rotate_view(RopeSpec(head_dim=8), 3, 1, seed=6, device="cpu")
    assert a.panels[0].q == b.panels[0].q != c.panels[0].q


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_relative_scores_are_q_transpose_r_k_and_constant_on_diagonals(style):
    d, base, T = 32, 10000.0, 12
    v = relative_view(RopeSpec(head_dim=d, base=base, style=style), T, 100, seed=1, device="cpu")
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, d, generator=g, dtype=F64)                          # the view's seeded vectors
    for m, n in [(0, 0), (3, 7), (11, 2), (5, 5)]:
        expected = q @ ref_rotation_matrix(d, n - m, base, style) @ k
        assert v.scores[m, n].item() == pytest.approx(expected.item(), abs=1e-12)
    assert v.spread < 1e-12
    assert_close(v.low, v.high, rtol=0, atol=1e-12)
    assert v.offsets.tolist() == list(range(-(T - 1), T))


def test_sinusoidal_scores_are_not_constant_on_diagonals():
    d, base, T = 16, 10000.0, 10
    v = relative_view(RopeSpec(head_dim=d, base=base), T, 10, encoding="sinusoidal", seed=2, device="cpu")
    g = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, d, generator=g, dtype=F64)
    pe = torch.tensor([[math.sin(p / base ** (j / d)) if j % 2 == 0 else math.cos(p / base ** ((j - 1) / d))
                        for j in range(d)] for p in range(T)], dtype=F64)
    assert_close(v.scores, (q + pe) @ (k + pe).T, rtol=1e-13, atol=1e-13)
    assert v.spread > 0.1


def test_decay_curves_against_loops():
    spec = RopeSpec(head_dim=16, base=100.0, style="interleaved")
    q = torch.randn(16, generator=torch.Generator().manual_seed(0), dtype=F64)
    distances = torch.tensor([0.0, 1.0, 7.0, 250.0, 1e6], dtype=F64)
    curves = decay_curves(spec, distances, q)
    thetas = [100.0 ** (-2 * i / 16) for i in range(8)]
    energy = [q[2 * i].item() ** 2 + q[2 * i + 1].item() ** 2 for i in range(8)]
    for j, delta in enumerate(distances.tolist()):
        assert curves["ones"][j].item() == pytest.approx(sum(math.cos(delta * t) for t in thetas) / 8, abs=1e-12)
        assert curves["random"][j].item() == pytest.approx(
            sum(e * math.cos(delta * t) for e, t in zip(energy, thetas)) / sum(energy), abs=1e-12)
        partial, total = 0j, 0.0                                              # RoFormer §3.4.3: S_j = Σ_{i<j} e^{iΔθ_i}
        for t in thetas:
            partial += cmath.exp(1j * delta * t)
            total += abs(partial)
        assert curves["bound"][j].item() == pytest.approx(total / 8 / ((8 + 1) / 2), abs=1e-12)


def test_frequencies_view():
    v = frequencies_view(RopeSpec(head_dim=64, base=10000.0), train_len=4096, span=20, device="cpu")
    wavelengths = [2 * math.pi * 10000.0 ** (2 * i / 64) for i in range(32)]
    assert v.wavelengths.tolist() == pytest.approx(wavelengths, rel=1e-14)
    assert v.slow_pairs == sum(w > 4096 for w in wavelengths)
    assert list(v.references) == [500000.0]
    assert v.cos[7, 3].item() == pytest.approx(math.cos(7 * 10000.0 ** (-6 / 64)), abs=1e-14)


def unseen_loop(delta: float, thetas: list[float], scaled: list[float], L: int) -> float:
    """The fraction of pairs whose angle at distance Δ training (distances 0..L) never produced."""
    unseen = 0
    for t, s in zip(thetas, scaled):
        arc = L * t
        if arc < 2 * math.pi and math.fmod(delta * s, 2 * math.pi) > arc * (1 + 1e-12):
            unseen += 1
    return unseen / len(thetas)


def test_unseen_angles_against_a_loop():
    thetas = ref_inv_freq(32, 10000.0)
    scaled = thetas / torch.linspace(1, 6, 16, dtype=F64)
    distances = torch.tensor([1.0, 100.0, 4000.0, 5000.0, 30000.0, 123456.0], dtype=F64)
    fraction, safe = unseen_angles(distances, thetas, scaled, 4096)
    for j, delta in enumerate(distances.tolist()):
        assert fraction[j].item() == pytest.approx(unseen_loop(delta, thetas.tolist(), scaled.tolist(), 4096))
    partial = [i for i, t in enumerate(thetas.tolist()) if 4096 * t < 2 * math.pi]
    assert safe == pytest.approx(min(4096 * thetas[i].item() / scaled[i].item() for i in partial))


def test_frequencies_view_longest_wavelength():
    v = frequencies_view(RopeSpec(head_dim=128, base=10000.0), 4096, 8, device="cpu")
    assert v.longest == pytest.approx(2 * math.pi * 10000.0 ** (126 / 128), rel=1e-12)
    assert v.slow_pairs == sum(2 * math.pi * 10000.0 ** (2 * i / 128) > 4096 for i in range(64))


def test_extrapolation_blend_band_target_and_fastest_pair():
    """Llama 3.1 keeps wavelengths below L/4, divides those above L, blends between: the blend band is the
    pairs with L/4 ≤ 2π/θ_i ≤ L, found here by a loop."""
    d, base, L = 128, 500000.0, 8192
    v = extrapolation_view(RopeSpec(head_dim=d, base=base), Llama3Scaling(factor=8.0, original_max_position=L),
                           device="cpu")
    band = [i for i in range(d // 2) if L / 4 <= 2 * math.pi * base ** (2 * i / d) <= L]
    assert v.blend == (band[0], band[-1]) == (29, 34)
    assert v.target == 65536
    assert v.fastest == pytest.approx({"original": 1.0, "pi": 1 / 8, "ntk": 1.0, "llama3": 1.0})
    assert extrapolation_view(RopeSpec(head_dim=d, base=base), methods=["pi"], device="cpu").blend is None


def test_extrapolation_methods_come_in_the_canonical_order():
    assert extrapolation_view(RopeSpec(), methods=["llama3", "pi"], device="cpu").methods == ["pi", "llama3"]


def test_extrapolation_safe_lengths_in_closed_form():
    """Original: L. Interpolation: s·L. NTK: L·α^(2i*/(d-2)) with i* the fastest pair that never turned
    in training. Llama 3.1 with low_freq_factor 1 divides every such pair by s: s·L."""
    d, base, L, s = 128, 500000.0, 8192, 8.0
    v = extrapolation_view(RopeSpec(head_dim=d, base=base), Llama3Scaling(factor=s, original_max_position=L),
                           device="cpu")
    assert v.methods == list(METHODS)
    i_star = next(i for i in range(d // 2) if 2 * math.pi * base ** (2 * i / d) > L)
    assert v.safe_length["original"] == pytest.approx(L)
    assert v.safe_length["pi"] == pytest.approx(s * L)
    assert v.safe_length["ntk"] == pytest.approx(L * s ** (2 * i_star / (d - 2)))
    assert v.safe_length["llama3"] == pytest.approx(s * L)
    freqs = ref_inv_freq(d, base).tolist()
    assert v.thetas["llama3"].tolist() == pytest.approx(ref_llama3(freqs, s, 1, 4, L), rel=1e-14)
    assert v.thetas["pi"].tolist() == pytest.approx([f / s for f in freqs], rel=1e-15)
    assert v.bases["ntk"] == pytest.approx(base * s ** (d / (d - 2)))
    before = v.distances <= L
    assert torch.all(v.unseen["original"][before] == 0) and v.unseen["original"][~before].max() > 0
    assert torch.all(v.unseen["pi"][v.distances <= s * L] == 0)
    for j in range(0, len(v.distances), 97):                                 # mean cos(Δθ'_i), q = k = 1
        delta = v.distances[j].item()
        expected = sum(math.cos(delta * t) for t in v.thetas["ntk"].tolist()) / (d // 2)
        assert v.scores["ntk"][j].item() == pytest.approx(expected, abs=1e-9)


def test_when_every_pair_turned_in_training_nothing_is_unseen():
    v = extrapolation_view(RopeSpec(head_dim=8, base=100.0), Llama3Scaling(factor=2, original_max_position=10**4),
                           ["original"], device="cpu")
    assert v.safe_length["original"] == math.inf and v.unseen["original"].max() == 0


@pytest.mark.parametrize("d,m", [(2, 0), (8, 1), (16, 7), (64, 1000)])
def test_conventions_view(d, m):
    v = conventions_view(d, 10000.0, m, device="cpu")
    assert v.perm == list(range(0, d, 2)) + list(range(1, d, 2))
    assert_close(v.rotations["interleaved"], ref_rotation_matrix(d, m, 10000.0, "interleaved"), rtol=0, atol=1e-14)
    assert_close(v.rotations["half"], ref_rotation_matrix(d, m, 10000.0, "half"), rtol=0, atol=1e-14)
    assert v.matrix_diff == 0.0
    assert v.max_diff["float64"] < 1e-13 and v.max_diff["float32"] < 1e-5
    assert v.scores["meta"] == pytest.approx(v.scores["hf"], rel=1e-12, abs=1e-12)
    assert v.pair_of_dim["interleaved"][2 * (d // 2 - 1)] == v.pair_of_dim["half"][d - 1] == d // 2 - 1


def test_compare_view():
    T, d, H, base = 9, 12, 6, 10000.0
    v = compare_view(T, d, H, base, seed=4, device="cpu")
    for p in (0, 4, 8):
        for j in range(0, d, 2):
            assert v.pe[p, j].item() == pytest.approx(math.sin(p / base ** (j / d)), abs=1e-14)
            assert v.pe[p, j + 1].item() == pytest.approx(math.cos(p / base ** (j / d)), abs=1e-14)
    assert v.slopes.tolist() == [2.0 ** e for e in RULE[6]]
    assert v.heads == list(range(6))
    assert v.bias[2, 1, 7].item() == -(2.0 ** RULE[6][2]) * 6
    x = torch.randn(1, d, generator=torch.Generator().manual_seed(4), dtype=F64)[0]
    rope = [[(x @ ref_rotation_matrix(d, n - m, base, "interleaved") @ x).item() / math.sqrt(d) for n in range(T)]
            for m in range(T)]
    assert_close(v.same_token["rope"], torch.tensor(rope, dtype=F64), rtol=0, atol=1e-12)
    assert_close(v.same_token["alibi"], (x @ x) / math.sqrt(d) + v.bias[0], rtol=0, atol=0)
    assert v.spread["rope"] < 1e-12 and v.spread["alibi"] < 1e-12 and v.spread["sinusoidal"] > 0.01


def test_helpers():
    assert shown_heads(8) == list(range(8)) and shown_heads(20) == [0, 3, 5, 8, 11, 14, 16, 19]
    grid = distance_grid(10**7)
    assert grid[0] == 1 and grid[-1] == 10**7 and torch.all(grid[1:] > grid[:-1]) and len(grid) <= 1024
    assert distance_grid(300).tolist() == list(range(1, 301))
    offsets, low, high = diagonal_range(torch.tensor([[0.0, 5.0, 9.0], [1.0, 2.0, 6.0], [4.0, 3.0, 8.0]]))
    assert offsets.tolist() == [-2, -1, 0, 1, 2]
    assert low.tolist() == [4.0, 1.0, 0.0, 5.0, 9.0] and high.tolist() == [4.0, 3.0, 8.0, 6.0, 9.0]


@pytest.mark.parametrize("call,message", [
    (lambda: RopeSpec(head_dim=7), "head dim d = 7 is odd"),
    (lambda: RopeSpec(head_dim=0), "head dim d = 0: must be"),
    (lambda: RopeSpec(head_dim=10**6), "head dim d = 1000000: must be"),
    (lambda: RopeSpec(base=1.0), "base = 1: must be a number above 1"),
    (lambda: RopeSpec(style="neox"), "style = 'neox'"),
    (lambda: rotate_view(RopeSpec(head_dim=8), -1, 0), "q position m = -1: must be a whole number from 0"),
    (lambda: rotate_view(RopeSpec(head_dim=8), 0, 0, pair=4), "pair i = 4: must be a whole number from 0 to 3"),
    (lambda: relative_view(RopeSpec(), 257), "sequence length T = 257"),
    (lambda: relative_view(RopeSpec(), 8, encoding="alibi"), "encoding = 'alibi'"),
    (lambda: relative_view(RopeSpec(), 8, max_distance=0), "distance = 0"),
    (lambda: frequencies_view(RopeSpec(), train_len=0), "training context L = 0"),
    (lambda: extrapolation_view(RopeSpec(), methods=[]), "tick at least one method"),
    (lambda: extrapolation_view(RopeSpec(), methods=["yarn"]), "methods \\['yarn'\\]"),
    (lambda: extrapolation_view(RopeSpec(), methods=None), "methods None: pick one or more"),
    (lambda: extrapolation_view(RopeSpec(), methods=True), "methods True: pick one or more"),
    (lambda: extrapolation_view(RopeSpec(), Llama3Scaling(factor=1000, original_max_position=10**6)), "too long"),
    (lambda: extrapolation_view(RopeSpec(head_dim=2), methods=["ntk"]), "needs head dim d ≥ 4"),
    (lambda: conventions_view(66), "d for the diagram = 66: must be a whole number from 2 to 64"),
    (lambda: conventions_view(9), "d for the diagram = 9 is odd: .* \\(2 to 64\\)"),
    (lambda: compare_view(T=129), "sequence length T = 129"),
    (lambda: compare_view(d_model=7), "d_model = 7 is odd"),
    (lambda: compare_view(n_heads=0), "heads = 0"),
])
def test_bad_input_gets_a_clear_message(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_relative_view_takes_the_range_its_slider_offers():
    """Regression: T = 1 typed in the slider's box was drawn, and T = 257 said "from 1 to 256", while the
    slider runs from 2 (one token has no distance to show)."""
    import app
    slider = next(c for c in app.demo.get_config_file()["components"] if c["props"].get("elem_id") == "pos_T")
    assert (slider["props"]["minimum"], slider["props"]["maximum"]) == (2, 256)
    for T in (1, 257):
        with pytest.raises(ValueError, match=f"= {T}: must be a whole number from 2 to 256"):
            relative_view(RopeSpec(head_dim=8), T=T, max_distance=10)


def test_the_same_token_panels_name_their_axes():
    """Regression: the three "same token" heatmaps had no axis titles: which axis was the query's and which
    the key's was left to the hover."""
    from viz.positions_compare import same_token_figure
    grid = [[0.0, 1.0], [1.0, 0.0]]
    layout = same_token_figure({n: grid for n in ("sinusoidal", "rope", "alibi")},
                               {n: 0.0 for n in ("sinusoidal", "rope", "alibi")}, "zh-CN")["layout"]
    assert [layout[f"xaxis{s}"]["title"]["text"] for s in ("", "2", "3")] == ["键位置 n"] * 3
    assert layout["yaxis"]["title"]["text"] == "查询位置 m"
