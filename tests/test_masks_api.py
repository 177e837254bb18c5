"""The masks tab through its named endpoint ``/masks``, as a script or another app would call it."""
import math

import pytest
import torch
from gradio_client.exceptions import AppError

from tests.conftest import plot_json

def call(client, **changes):
    """``/masks`` on two sentences, the endpoint's defaults otherwise, by the parameters' names."""
    return client.predict(**{"text": "the cat sat\nhi", "window": 2, **changes}, api_name="/masks")


def heatmaps(fig):
    return [trace for trace in fig["data"] if trace["type"] == "heatmap"]


def test_endpoint_is_named_and_public(client):
    assert "/masks" in client.view_api(print_info=False, return_format="dict")["named_endpoints"]


def test_defaults_alone_draw_the_tab(client):
    panels, composition, trap, device = client.predict(api_name="/masks")
    assert len(heatmaps(plot_json(panels))[0]["z"]) == 6                   # "the cat sat on the mat" = 6 tokens
    assert device.endswith("ms")


def test_causal_padding_grid_matches_hand_built_mask(client):
    panels, composition, trap, device = call(client, seq=2)
    allowed = heatmaps(plot_json(panels))[0]["z"]                       # 1 = may attend
    # Sequence 2 is "hi" padded to 3 tokens: keys 1 and 2 are padding, and causal below that.
    expected = (torch.tensor([True, False, False])[None, :] & torch.ones(3, 3).tril().bool()).int()
    assert allowed == expected.tolist()
    assert device.split()[0] in ("cpu", "cuda") and device.endswith("ms")


def test_weights_are_a_softmax_over_allowed_keys(client):
    panels, *_ = call(client, causal=False)
    mask, _, weights = (h["z"] for h in heatmaps(plot_json(panels)))
    for row_mask, row in zip(mask, weights):
        assert math.isclose(sum(row), 1.0, rel_tol=1e-5)
        assert all(w == 0 for m, w in zip(row_mask, row) if not m)


def test_masked_convention_shows_ones_where_masked(client):
    panels, *_ = call(client, convention="masked")
    grid = heatmaps(plot_json(panels))[0]
    text = [[int(c) for c in row] for row in grid["text"]]
    assert text == (1 - torch.ones(3, 3).tril()).int().tolist()          # triu(ones, 1)


def test_left_padding_with_causal_shows_nan_trap_without_nan_in_data(client):
    _, _, trap, _ = call(client, padding_side="left", seq=2)
    fig = plot_json(trap)
    naive, nan_cells, safe = heatmaps(fig)
    assert nan_cells["text"][0] == ["NaN", "NaN", "NaN"] and nan_cells["text"][1][:2] == ["NaN", "NaN"]
    assert safe["z"][0] == [0, 0, 0]
    assert "NaN" not in str(naive["z"]) and "nan" not in str(safe["z"]).lower()
    assert "2 fully masked" in fig["layout"]["title"]["text"]


def test_composition_lists_each_rule(client):
    _, composition, _, _ = call(client, use_window=True, window=2)
    titles = [a["text"] for a in plot_json(composition)["layout"]["annotations"]]
    assert titles == ["padding (keys)", "causal", "sliding window", "= AND of all"]


def test_with_1_for_masked_the_combination_is_an_or(client):
    """In the "1 = masked" convention a cell of the combination is 1 where any rule's is 1 (De Morgan on
    the AND of 'may attend'), and the panel says OR: it said "= AND of all" above the ORed 1s."""
    _, composition, _, _ = call(client, use_window=True, window=2, convention="masked")
    fig = plot_json(composition)
    assert fig["layout"]["annotations"][-1]["text"] == "= OR of all (masked if any rule masks)"
    *parts, combined = [trace["text"] for trace in heatmaps(fig)]                 # the cells' 0 / 1 labels
    assert combined == [[max(p[i][j] for p in parts) for j in range(len(row))] for i, row in enumerate(combined)]
    assert any("1" in row for row in combined) and any("0" in row for row in combined)


@pytest.mark.parametrize("changes,message", [
    (dict(text=""), "at least one sentence"),
    (dict(text="a\n" * 10_000), "at most 16 lines"),
    (dict(text="w " * 100), "at most 64 per sequence"),
    (dict(text="z" * 100_000), "at most 20,000"),
    (dict(use_window=True, window=10), "window = 10 must be between 1 and"),
    (dict(use_prefix=True, prefix=9), "prefix = 9 must be between 1 and"),
    (dict(seq=5), "sequence = 5: must be a whole number from 1 to 2"),
])
def test_bad_input_gives_a_clear_message_and_server_keeps_serving(client, changes, message):
    with pytest.raises(AppError, match=message):
        call(client, **changes)
    assert call(client)[3].endswith("ms")


def test_the_view_sliders_fit_the_batch():
    """``fit_views`` (the masks tab's private event before a text or head-count change is drawn): each view
    slider ends at the batch's count, a value past it moves to it, one choice hides the slider, and a value
    that is not a whole number changes only the end (the draw names it)."""
    from components.masks import fit_views
    two_lines = "a b\n\nc"                                             # the empty line is not a sequence
    out = fit_views(two_lines, 3, 5, 2)
    assert (out["seq"]["maximum"], out["seq"]["value"], out["seq"]["visible"]) == (2, 2, True)
    assert (out["head"]["maximum"], out["head"]["value"]) == (3, 2)
    out = fit_views("a b", 1, 1, 1)
    assert out["seq"] == {"__type__": "update", "visible": False, "value": 1} and out["head"]["visible"] is False
    out = fit_views(two_lines, 2, float("nan"), True)
    assert "value" not in out["seq"] and "value" not in out["head"] and out["seq"]["maximum"] == 2
    assert fit_views("", 0, 1, 1) == {}                               # no valid text nor head count: nothing moves
    assert set(fit_views("", 4, 1, 9)) == {"head"}
