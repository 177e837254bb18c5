"""Backend properties of models/masks.py against hand-computed masks and PyTorch's SDPA."""
import math

import pytest
import torch
import torch.nn.functional as F

from models.masks import (MaskSpec, additive_mask, attention_mask, causal_mask, document_mask,
                          explore_masks, masked_attention, naive_masked_softmax, padding_mask,
                          parse_batch, prefix_lm_mask, sliding_window_mask)


@pytest.mark.parametrize("T", [1, 2, 5, 17])
def test_causal_is_tril_and_complement_of_lookahead(T):
    assert torch.equal(causal_mask(T), torch.tril(torch.ones(T, T)).bool())
    lookahead = torch.triu(torch.ones(T, T), diagonal=1).bool()           # tutorials: 1 = masked
    assert torch.equal(causal_mask(T), ~lookahead)


def test_padding_mask_by_hand():
    assert padding_mask([2, 0, 3], 3).tolist() == [[True, True, False], [False] * 3, [True] * 3]
    assert padding_mask([1], 3, side="left").tolist() == [[False, False, True]]


@pytest.mark.parametrize("T,w", [(6, 1), (6, 3), (6, 6)])
def test_sliding_window_definition(T, w):
    mask = sliding_window_mask(T, w)
    for i in range(T):
        assert [j for j in range(T) if mask[i, j]] == list(range(max(0, i - w + 1), i + 1))
    if w == T:
        assert torch.equal(mask, causal_mask(T))


def test_prefix_lm_by_hand():
    expected = [[1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    assert prefix_lm_mask(5, 3).int().tolist() == expected
    assert torch.equal(prefix_lm_mask(4, 1), causal_mask(4))              # prefix 1 is causal
    assert prefix_lm_mask(4, 4).all()                                     # full prefix is bidirectional


def test_document_mask_blocks_across_documents():
    mask = document_mask(torch.tensor([[0, 0, 1, 1, 1]]))[0]
    assert mask[:2, :2].all() and mask[2:, 2:].all()
    assert not mask[:2, 2:].any() and not mask[2:, :2].any()


def test_attention_mask_is_the_and_of_its_rules():
    lengths, T = [4, 2], 4
    got = attention_mask(lengths, T, causal=True, window=2)               # (B, 1, T, T)
    keys = padding_mask(lengths, T)[:, None, None, :]
    expected = keys & causal_mask(T) & sliding_window_mask(T, 2)
    assert got.shape == (2, 1, T, T)
    assert torch.equal(got, expected)


def test_additive_mask_values():
    add = additive_mask(torch.tensor([[True, False]]))
    assert add[0, 0] == 0 and add[0, 1] == -math.inf


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("causal,window,lengths", [(True, None, [5, 3]), (False, None, [5, 1]),
                                                   (True, 2, [5, 4]), (False, 3, [2, 5])])
def test_masked_attention_equals_sdpa_on_rows_with_a_key(dtype, causal, window, lengths):
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 2, 3, 5, 8, generator=g, dtype=dtype)         # (B, H, T, D)
    mask = attention_mask(lengths, 5, causal=causal, window=window)       # (B, 1, T, T)
    out, weights = masked_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    has_key = mask.any(-1).expand(-1, 3, -1)                              # (B, H, T)
    tol = dict(atol=1e-6, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(out[has_key], ref[has_key], **tol)
    torch.testing.assert_close(weights.sum(-1)[has_key], torch.ones_like(weights.sum(-1)[has_key]), **tol)
    assert (weights[~mask.expand_as(weights)] == 0).all()                 # masked cells exactly 0


def test_fully_masked_rows_are_zero_not_nan_forward_and_backward():
    # Left padding + causal: the first padding query sees only padding -> no allowed key.
    mask = attention_mask([2], 4, causal=True, padding_side="left")       # (1, 1, 4, 4)
    assert not mask[0, 0, 0].any() and not mask[0, 0, 1].any()
    q, k, v = (torch.randn(1, 1, 4, 8, requires_grad=True) for _ in range(3))
    out, weights = masked_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert (out[0, 0, :2] == 0).all() and (weights[0, 0, :2] == 0).all()
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    # ...while the naive version really produces NaN on those rows, and only there.
    naive = naive_masked_softmax(q @ k.transpose(-2, -1), mask)
    assert torch.isnan(naive[0, 0, :2]).all() and not torch.isnan(naive[0, 0, 2:]).any()


def test_parse_batch_packs_documents():
    batch = parse_batch("a b | c\n| d e |", packed=True)
    assert batch.tokens == [["a", "b", "c"], ["d", "e"]]
    assert batch.docs == [[0, 0, 1], [0, 0]]
    assert parse_batch("a | b").tokens == [["a", "|", "b"]]                # unpacked: | is a token


def test_explore_masks_is_seeded_and_consistent():
    spec = MaskSpec(causal=True, padding_side="left")
    a = explore_masks("x y z\nw", spec, n_heads=3, seed=7)
    b = explore_masks("x y z\nw", spec, n_heads=3, seed=7)
    assert torch.equal(a.weights, b.weights)
    assert a.labels == [["x", "y", "z"], ["[PAD]", "[PAD]", "w"]]
    assert a.empty_rows.tolist() == [[False] * 3, [True, True, False]]
    assert torch.isnan(a.naive_weights[1, :, :2]).all() and torch.isfinite(a.weights).all()
    assert set(a.parts) == {"padding", "causal"}
    assert a.timing.ms >= 0 and a.timing.device.split()[0] in ("cpu", "cuda")


@pytest.mark.parametrize("text,match", [
    ("", "at least one sentence"), ("   \n\t\n", "at least one sentence"),
    ("a\n" * 10_000, "at most 16 lines"), ("x " * 5_000, "at most 64 per sequence"),
    ("y" * 100_000, "100,000 characters: at most 20,000"), (None, "must be text"),
])
def test_bad_text(text, match):
    with pytest.raises(ValueError, match=match):
        parse_batch(text)


@pytest.mark.parametrize("spec,match", [
    (MaskSpec(window=9), "window = 9 must be between 1 and"),
    (MaskSpec(window=0), "window = 0"),
    (MaskSpec(prefix_len=4), "prefix = 4 must be between 1 and"),
    (MaskSpec(prefix_len=-1), "prefix = -1"),
    (MaskSpec(padding_side="middle"), "padding side = 'middle': must be one of right, left"),
])
def test_bad_spec(spec, match):
    with pytest.raises(ValueError, match=match):
        explore_masks("a b c", spec)


def test_bad_heads_and_seed():
    with pytest.raises(ValueError, match="heads = 0"):
        explore_masks("a", MaskSpec(), n_heads=0)
    with pytest.raises(ValueError, match="seed"):
        explore_masks("a", MaskSpec(), seed=-1)


def test_a_long_sequence_labels_every_nth_token_on_each_axis():
    """64 tokens in three panels ran their tick labels into each other: at most 12 per axis (a third of
    the row's 36), evenly spaced from the first token, each naming the token at its position."""
    from viz.masks import mask_panels, short

    labels = [f"token{i}" for i in range(64)]
    mask = causal_mask(64).tolist()
    weights = [[1 / (q + 1) if k <= q else 0.0 for k in range(64)] for q in range(64)]
    layout = mask_panels(labels, mask, weights)["layout"]
    axes = [name for name in layout if name.startswith(("xaxis", "yaxis"))]
    assert len(axes) == 6
    for name in axes:
        vals, text = layout[name]["tickvals"], layout[name]["ticktext"]
        assert 0 < len(vals) <= 12 and vals == list(range(0, 64, vals[1]))
        assert text == [short(labels[i]) for i in vals]
