"""Every slider and bounded number box offers the range its endpoint accepts.

A value typed into a slider's box reaches the server before the box clamps it (on blur), and an API
caller sends what it likes: in both cases the refusal must name the range the learner sees. The test reads
each input's range from the page's config, sends the nearest values outside it to every named endpoint the
input feeds, and expects a refusal that names exactly those ends.

Example: ``pos_span`` is a slider from 8 to 256 feeding ``/rope_frequencies``; 7 and 257 must both be
refused with "... from 8 to 256".
"""
import json
import re

import pytest

import app
from tests.conftest import raw_call
from tests.test_fuzz import BASELINE, ENDPOINTS

# Inputs whose allowed range shrinks with another input: the refusal names that narrower range, which
# must lie within the widget's (the widget's own ends are its widest case).
DEPENDENT = {
    "masks_seq": "the sequences typed",
    "masks_head": "the heads slider",
    "norm_axes_b": "batch items B", "norm_axes_t": "tokens T", "norm_axes_f": "features F",
    "pos_pair": "d / 2 pairs of the head dim",
    "bpe_step": "the merges this session's tokenizer learned",
    "attn_next_continue": "the model's context left after the prompt",
}
# The refusals word a range as "from a to b" or, for an open end, "above a and at most b". A number box
# may stand for an open end (its minimum is the bound, excluded: HTML has no open minimum); a slider may
# not: dragged to its left end, it sends its minimum.
RANGE = re.compile(r"(from|above) (-?[\d.,e+-]+) (?:to|and at most) (-?[\d.,e+-]+)")


def _bounded_inputs():
    """``(endpoint, parameter index, elem_id, minimum, maximum, step)`` for every slider and every number
    box with both ends set, in each named endpoint it feeds (``gr.State`` inputs are not parameters)."""
    config = app.demo.config
    components = {c["id"]: c for c in config["components"]}
    cases = []
    for dep in config["dependencies"]:
        name = dep.get("api_name")
        if name not in ENDPOINTS:
            continue
        params = [components[i] for i in dep["inputs"] if components[i]["type"] != "state"]
        assert len(params) == len(ENDPOINTS[name]), name
        for index, component in enumerate(params):
            props = component["props"]
            low, high = props.get("minimum"), props.get("maximum")
            if component["type"] in ("slider", "number") and low is not None and high is not None:
                cases.append((name, index, props["elem_id"], low, high, props.get("step") or 1, component["type"]))
    return cases


CASES = _bounded_inputs()


def _outside(low, high, step):
    """The nearest values past each end on the widget's grid: 7 and 257 for a slider from 8 to 256 in
    steps of 1, 0 and 528 for one from 16 to 512 in steps of 16 (15 would be refused for its step)."""
    if all(float(v).is_integer() for v in (low, high, step)):
        below, above = int(low - step), int(high + step)
    else:
        below, above = round(low - step, 6), round(high + step, 6)
    # Past 2**53 a step is lost in the float the server reads (1e16 + 1 == 1e16): go twice as far.
    return [below if float(below) != float(low) else 2 * low, above if float(above) != float(high) else 2 * high]


def _named_range(message: str) -> tuple[str, float, float] | None:
    """("from" or "above", the low end, the high end) of the range a refusal names."""
    found = RANGE.search(message)
    return found and (found[1], *(float(v.replace(",", "")) for v in found.groups()[1:]))


def test_the_cases_cover_every_kind_of_bounded_input():
    kinds = {elem_id.split("_")[0] for _, _, elem_id, *_ in CASES}
    assert {"pos", "masks", "attn", "norm", "stability", "moe", "kv", "mfu", "calc", "bpe"} <= kinds
    assert len(CASES) > 100
    assert set(DEPENDENT) <= {elem_id for _, _, elem_id, *_ in CASES}


@pytest.mark.parametrize("name", sorted({case[0] for case in CASES}))
def test_an_endpoint_refuses_what_its_widgets_do_not_offer(own_app_url, name):
    params = ENDPOINTS[name]
    base = [BASELINE.get(name, {}).get(p["parameter_name"], p["parameter_default"]) for p in params]
    wrong = []
    for _, index, elem_id, low, high, step, kind in (case for case in CASES if case[0] == name):
        for value in _outside(low, high, step):
            data = list(base)
            data[index] = value
            event, payload = raw_call(own_app_url, name, data, session=f"ranges-{name}")
            message = json.loads(payload).get("error") if payload.startswith("{") else payload
            if event != "error":
                wrong.append(f"{elem_id} = {value}: accepted (the widget offers {low} to {high})")
                continue
            opening, lo, hi = _named_range(str(message)) or (None, None, None)
            fits = lo is not None and (low <= lo <= hi <= high if elem_id in DEPENDENT else (lo, hi) == (low, high))
            if opening == "above" and kind == "slider":
                fits = False                                   # the slider sends its minimum, refused
            if not fits:
                wrong.append(f"{elem_id} = {value}: {message!r} (the widget offers {low} to {high})")
    assert not wrong, f"/{name}:\n" + "\n".join(wrong)
