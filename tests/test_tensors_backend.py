"""The Tensors tab's backend against PyTorch itself: layouts replayed step by step, number formats cast
for real, matmul FLOPs counted by FlopCounterMode, the peaks table and its sources."""
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from locales import tr
from models import tensors
from models.checks import InputError
from models.compute import (PEAK_NAMES, PEAKS, MatmulPoint, MatmulSkip, arithmetic_intensity, bytes_moved,
                            check_dtypes, matmul_flops, measured_peak, mfu, peak_by_name, peak_for, sweep,
                            training_seconds)
from models.limits import TENSOR_MAX_ELEMENTS, TENSOR_MAX_OPS
from models.numformats import FORMATS, bits_of, cast, facts
from models.tensors import Op, parse_ops, parse_shape, read_positions, replay

# (shape, operations, the same chain written directly in PyTorch): the independent reference.
CHAINS = [
    ("2, 3, 8", "view(2, 3, 2, 4)\ntranspose(1, 2)", lambda x: [x.view(2, 3, 2, 4), x.view(2, 3, 2, 4).transpose(1, 2)]),
    ("2, 2, 3, 4", "transpose(1, 2)\ncontiguous()\nview(2, 3, 8)",
     lambda x: [x.transpose(1, 2), x.transpose(1, 2).contiguous(), x.transpose(1, 2).contiguous().view(2, 3, 8)]),
    ("4, 6", "[:, 2]\nunsqueeze(1)\n[::2]", lambda x: [x[:, 2], x[:, 2].unsqueeze(1), x[:, 2].unsqueeze(1)[::2]]),
    ("4", "unsqueeze(0)\nexpand(3, 4)\ncontiguous()",
     lambda x: [x.unsqueeze(0), x.unsqueeze(0).expand(3, 4), x.unsqueeze(0).expand(3, 4).contiguous()]),
    ("3, 4, 5", "permute(2, 0, 1)\nreshape(5, 12)\nflatten()",
     lambda x: [x.permute(2, 0, 1), x.permute(2, 0, 1).reshape(5, 12), x.permute(2, 0, 1).reshape(5, 12).flatten()]),
    ("2, 3, 4, 2", "[1, ..., ::3, 1]\nt()\n[None]\nsqueeze(0)",
     lambda x: [x[1, ..., ::3, 1], x[1, ..., ::3, 1].t(), x[1, ..., ::3, 1].t()[None],
                x[1, ..., ::3, 1].t()[None].squeeze(0)]),
    ("6, 4", "[1:5:2, 1:]\nreshape(-1)\nclone()\nview(3, 2)",
     lambda x: [x[1:5:2, 1:], x[1:5:2, 1:].reshape(-1), x[1:5:2, 1:].reshape(-1).clone(),
                x[1:5:2, 1:].reshape(-1).clone().view(3, 2)]),
    ("16, 16", "transpose(0, 1)\nflatten(0, 1)\n[3::5]",
     lambda x: [x.t(), x.t().flatten(0, 1), x.t().flatten(0, 1)[3::5]]),
]


@pytest.mark.parametrize("shape,ops,reference", CHAINS)
def test_every_step_reports_what_pytorch_reports(shape, ops, reference):
    sizes = tuple(int(s) for s in shape.split(","))
    x = torch.arange(math.prod(sizes), dtype=torch.float32).view(sizes)
    trace = replay(shape, ops)
    expected = [x, *reference(x)]
    assert len(trace.steps) == len(expected) and all(s.ok for s in trace.steps)
    for step, want in zip(trace.steps, expected):
        assert step.shape == tuple(want.shape)
        assert step.stride == want.stride()
        assert step.offset == want.storage_offset()
        assert step.contiguous == want.is_contiguous()
        assert step.shares == (want.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())
        assert step.values == want.flatten().tolist()


@pytest.mark.parametrize("shape,ops,reference", CHAINS)
def test_highlighted_positions_reproduce_the_view_through_as_strided(shape, ops, reference):
    for step in replay(shape, ops).steps:
        storage = torch.tensor(step.storage)
        assert [step.storage[p] for p in step.reads] == step.values
        again = torch.as_strided(storage, step.shape, step.stride, step.offset)
        assert again.flatten().tolist() == step.values


def test_read_order_by_hand():
    assert read_positions(torch.arange(6.).view(2, 3).t()).tolist() == [0, 3, 1, 4, 2, 5]
    assert read_positions(torch.arange(24.).view(4, 6)[:, 2]).tolist() == [2, 8, 14, 20]      # stride 6, offset 2
    assert read_positions(torch.arange(4.).expand(3, 4)).tolist() == [0, 1, 2, 3] * 3         # stride 0


def test_a_write_through_a_view_shows_in_the_original():
    steps = replay("4, 6", "[:, 2]\ncontiguous()").steps
    assert steps[1].written == [2] and steps[1].marked == 1                 # the column's first element
    assert steps[2].written == [] and not steps[2].shares                   # a copy: the original is untouched
    bias = replay("4", "unsqueeze(0)\nexpand(3, 4)").steps[2]
    assert bias.written == [0] and bias.marked == 3                          # one write, every row


def test_storage_made_by_the_step_that_copied():
    steps = replay("2, 3, 4", "transpose(1, 2)\ncontiguous()\nview(24)\nclone()").steps
    assert [s.storage_step for s in steps] == [0, 0, 2, 2, 4]


FAILURES = [  # operation on a [2, 3, 4] tensor after transpose(1, 2) -> (why key, parameters it must carry)
    ("view(24)", "tensors_why_view", {}),
    ("view(5, 5)", "tensors_why_numel", {"product": 25, "numel": 24}),
    ("view(7, -1)", "tensors_why_no_fit", {"known": 7}),
    ("view(-1, -1)", "tensors_why_infer", {}),
    ("transpose(0, 5)", "tensors_why_dim", {"dim": 5, "n": 3}),
    ("permute(0, 0, 1)", "tensors_why_permute", {}),
    ("expand(2, 4, 5)", "tensors_why_expand", {"dim": 2, "size": 3, "want": 5}),
    ("expand(4)", "tensors_why_expand_dims", {"got": 1, "n": 3}),
    ("[::-1]", "tensors_why_step", {}),
    ("[5]", "tensors_why_index", {"index": 5, "dim": 0, "size": 2}),
    ("[0, 0, 0, 0]", "tensors_why_too_many_indices", {"got": 4}),
    ("t()", "tensors_why_t", {"n": 3}),
    ("unsqueeze(9)", "tensors_why_dim", {"dim": 9}),
]


@pytest.mark.parametrize("op,why,params", FAILURES)
def test_a_refused_operation_is_data_with_pytorchs_message_and_why(op, why, params):
    x = torch.arange(24.).view(2, 3, 4).transpose(1, 2)
    with pytest.raises((RuntimeError, IndexError, ValueError)) as refused:
        parse_ops(op)[0].apply(x)
    trace = replay("2, 3, 4", f"transpose(1, 2)\n{op}\nflatten()")
    failed = trace.steps[2]
    assert not failed.ok and failed.error == str(refused.value).strip()     # PyTorch's own words
    assert failed.why == why and params.items() <= failed.why_params.items()
    assert tr("en", failed.why, **failed.why_params) and tr("zh-CN", failed.why, **failed.why_params)
    assert trace.steps[3].ok and trace.steps[3].shape == (24,)               # the chain goes on from step 1


def test_nothing_is_allocated_for_a_result_over_the_limit(monkeypatch):
    applied_on = []
    real_apply = Op.apply
    monkeypatch.setattr(Op, "apply", lambda self, t: (applied_on.append(t.device.type), real_apply(self, t))[1])
    trace = replay("4", "unsqueeze(0)\nexpand(100, 4)\nunsqueeze(0)")
    assert trace.steps[2].why == "tensors_why_limit" and "(100, 4)" in trace.steps[2].why_params["shape"]
    assert applied_on == ["meta", "cpu", "meta", "meta", "cpu"]               # expand ran on meta only


def test_the_shape_is_checked_before_anything_is_allocated(monkeypatch):
    monkeypatch.setattr(torch, "arange", lambda *a, **k: pytest.fail("allocated before the check"))
    for text, key in [("16, 17", "tensors_err_shape_elements"), ("1, 1, 1, 1, 1", "tensors_err_shape_dims"),
                      ("2, 0", "tensors_err_shape_size"), ("2 x 3", "tensors_err_shape_syntax"),
                      ("99999999999", "tensors_err_shape_syntax")]:
        with pytest.raises(InputError) as error:
            replay(text, "")
        assert error.value.key == key
    assert parse_shape(f"{TENSOR_MAX_ELEMENTS}") == (TENSOR_MAX_ELEMENTS,)


@pytest.mark.parametrize("text,key", [
    ("__import__('os').system('true')", "tensors_err_unknown_op"),
    ("view(2**8)", "tensors_err_number"),
    ("view(eval('1'))", "tensors_err_number"),
    ("transpose(1)", "tensors_err_arity"),
    ("x.view(2)", "tensors_err_syntax"),
    ("[1:2:3:4]", "tensors_err_slice"),
    ("[]", "tensors_err_empty_index"),
    ("contiguous()\n" * (TENSOR_MAX_OPS + 1), "tensors_err_too_many_ops"),
    ("view(" + "1" * 8 + ")", "tensors_err_number"),
])
def test_the_grammar_refuses_anything_else(text, key):
    with pytest.raises(InputError) as error:
        parse_ops(text)
    assert error.value.key == key
    assert "第" in error.value.render("zh-CN") or key == "tensors_err_too_many_ops"


def test_the_grammar_reads_comments_dots_and_blank_lines():
    ops = parse_ops("  .view(2, -1)   # rows\n\n# only a comment\n[..., None, 1:]\n")
    assert [(op.name, op.args) for op in ops] == [("view", (2, -1)), ("index", (Ellipsis, None, slice(1, None)))]


def test_presets_tell_their_story():
    split = replay(*tensors.PRESETS["heads_split"]).steps
    assert split[-1].shape == (2, 2, 3, 4) and split[-1].stride == (24, 4, 8, 1) and split[-1].shares
    merge = replay(*tensors.PRESETS["heads_merge"]).steps
    assert [s.ok for s in merge] == [True, True, False, True, True] and merge[2].why == "tensors_why_view"
    assert merge[-1].shape == (2, 3, 8) and not merge[-1].shares
    column = replay(*tensors.PRESETS["column"]).steps
    assert column[1].stride == (6,) and column[1].offset == 2 and not column[1].contiguous
    bias = replay(*tensors.PRESETS["bias"]).steps
    assert bias[2].stride == (0, 1) and len(bias[3].storage) == 12


@pytest.mark.parametrize("name", tensors.PRESETS)
def test_a_preset_said_in_chinese_runs_the_same_steps_with_its_comments_in_chinese(name):
    """A preset's comments are notation or words from locales/tensors.py: in Chinese, no English word is
    left, and the operations, hence every step, are the English preset's."""
    from models.tensor_presets import preset_text
    english, chinese = preset_text(name, "en"), preset_text(name, "zh-CN")
    steps = [replay(*said).steps for said in (english, chinese)]
    assert [(s.op, s.shape, s.stride, s.ok) for s in steps[0]] == [(s.op, s.shape, s.stride, s.ok) for s in steps[1]]
    for line in chinese[1].splitlines():                     # a shape, or words in Chinese (and names)
        assert not re.search(r"[a-z]{2,}", line.split("#")[1].replace("PyTorch", "")), line


def test_the_write_legend_counts_the_other_elements_at_the_written_memory():
    """expand(3, 4) of a [1, 4] bias: stride 0 down the rows, so the element written at [0, 0] is also [1, 0]
    and [2, 0], 2 more; a view without stride 0 has none. The legend said "its 1 alias(es)" for none."""
    from viz.tensors import view_figure
    steps = [s for s in replay(*tensors.PRESETS["bias"]).steps if s.ok]
    legends = [[t["name"] for t in view_figure(s)["data"] if t.get("mode") == "markers"] for s in steps]
    assert legends == [["the element written"]] * 2 + [
        ["the element written, and 2 more in this view at the same memory"], ["the element written"]]


# ------------------------------------------------------------------- number formats (moved from the calculator)
def test_format_facts_are_the_published_ones():
    by_name = {f.name: facts(f) for f in FORMATS}
    assert by_name["fp16"].max == 65504 and by_name["fp16"].smallest_normal == 2.0**-14
    assert by_name["bf16"].eps == 2.0**-7 and by_name["fp32"].eps == 2.0**-23
    assert by_name["fp8 E4M3"].max == 448 and by_name["fp8 E5M2"].max == 57344
    assert all(f.bits == {torch.int8: 8}.get(f.dtype, f.dtype.itemsize * 8) for f in FORMATS)


@pytest.mark.parametrize("value", [0.1, 1 / 3, 65504.0, 65520.0, 1e-8, -2.5, 1e5])
def test_fp16_cast_equals_numpy(value):
    c = cast(value, FORMATS[1])
    expected = float(np.float16(value))
    assert c.stored == expected or (np.isinf(expected) and np.isinf(c.stored))
    assert c.bits == format(int(np.array(value, dtype=np.float16).view(np.uint16)), "016b")


def _rounded_exactly(value: float, fmt) -> float:
    """``value`` rounded to ``fmt`` in exact rational arithmetic (``Fraction``, whose ``round`` takes ties to
    even): the spacing where it lies is 2^(max(e, emin) − mantissa bits), e its binade."""
    from fractions import Fraction
    if value == 0:
        return 0.0
    emin = math.frexp(torch.finfo(fmt.dtype).smallest_normal)[1] - 1
    step = Fraction(2) ** (max(math.frexp(value)[1] - 1, emin) - fmt.mantissa)
    return float(round(Fraction(value) / step) * step)


def _near_midpoints(fmt, n: int = 400, seed: int = 0) -> list[float]:
    """Values at, a hair above and a hair below midpoints between neighbours of ``fmt``, in every kind of
    binade it has (subnormal, normal, near its largest value), both signs."""
    g = torch.Generator().manual_seed(seed)
    info = torch.finfo(fmt.dtype)
    emin, emax = math.frexp(info.smallest_normal)[1] - 1, math.frexp(info.max)[1] - 2   # below the top binade
    values = []
    for _ in range(n):
        e = int(torch.randint(emin - 1, emax + 1, (1,), generator=g))
        step = 2.0 ** (max(e, emin) - fmt.mantissa)
        k = int(torch.randint(0, 2 ** fmt.mantissa, (1,), generator=g))
        mid = (2.0 ** e if e >= emin else 0.0) + (k + 0.5) * step
        sign = -1.0 if int(torch.randint(0, 2, (1,), generator=g)) else 1.0
        values += [sign * mid, sign * mid * (1 + 2.0**-40), sign * mid * (1 - 2.0**-40)]
    return values


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp8 E4M3", "fp8 E5M2"])
def test_a_cast_rounds_once_as_ieee_does(name):
    """Regression: casts went through ``.to(dtype)``, which from float64 rounds to float32 first and then
    again: 1 + 2^-11 + 2^-40 was 1.0 in fp16 (numpy and IEEE: 1 + 2^-10). Checked against exact rational
    rounding on 1,200 values at and beside midpoints, subnormals included; fp16 against numpy too."""
    from models.numformats import relative_errors, round_to_format
    fmt = next(f for f in FORMATS if f.name == name)
    values = _near_midpoints(fmt)
    expected = [_rounded_exactly(v, fmt) for v in values]
    got = round_to_format(torch.tensor(values, dtype=torch.float64), fmt).tolist()
    assert got == expected
    if name == "fp16":
        assert expected == [float(np.float16(v)) for v in values]
    twice = torch.tensor(values, dtype=torch.float64).to(fmt.dtype).to(torch.float64).tolist()
    assert twice != expected                                             # .to() alone gets some wrong
    stored = [cast(v, fmt).stored for v in values[:60]]
    assert stored == expected[:60]
    positive = torch.tensor([abs(v) for v in values if v], dtype=torch.float64)
    exact = torch.tensor([abs(_rounded_exactly(abs(v), fmt)) for v in values if v], dtype=torch.float64)
    errors = relative_errors(fmt, positive)
    kept = exact != 0                                                    # flushed to zero: NaN, as the cast says
    assert torch.equal(errors[kept], ((exact - positive).abs() / positive)[kept])


def test_a_cast_says_where_pytorchs_own_cast_differs():
    c = cast(1 + 2**-11 + 2**-40, FORMATS[1])
    assert (c.stored, c.by_torch, c.note) == (1 + 2**-10, 1.0, "rounded")
    assert c.bits == format(int(np.array(1 + 2**-10, dtype=np.float16).view(np.uint16)), "016b")
    assert cast(0.1, FORMATS[1]).by_torch is None and cast(1.0, FORMATS[2]).by_torch is None


def test_the_error_curves_lose_a_number_where_the_cast_does():
    """Regression: the error curves counted every number past the largest value as lost, though fp16 rounds
    65,510 to 65,504 (numpy agrees) and E4M3 rounds 450 to 448; int8 rounds 127.4 to 127."""
    from models.numformats import relative_errors
    by_name = {f.name: f for f in FORMATS}
    fp16 = relative_errors(by_name["fp16"], torch.tensor([65510.0, 65519.0, 65520.0], dtype=torch.float64))
    expected = [abs(float(np.float16(v)) - v) / v for v in (65510.0, 65519.0)]
    assert fp16[:2].tolist() == pytest.approx(expected) and math.isnan(fp16[2])        # 65,520 overflows
    e4m3 = relative_errors(by_name["fp8 E4M3"], torch.tensor([450.0, 463.0, 464.0], dtype=torch.float64))
    assert e4m3[:2].tolist() == pytest.approx([2 / 450, 15 / 463]) and math.isnan(e4m3[2])
    int8 = relative_errors(by_name["int8"], torch.tensor([127.4, 127.6], dtype=torch.float64))
    assert int8[0].item() == pytest.approx(0.4 / 127.4) and math.isnan(int8[1])
    for fmt, v in (("fp16", 65510.0), ("fp8 E4M3", 450.0), ("fp16", 65520.0), ("fp8 E4M3", 464.0)):
        lost = math.isnan(relative_errors(by_name[fmt], torch.tensor([v], dtype=torch.float64)).item())
        assert lost == (cast(v, by_name[fmt]).note in ("overflow", "saturated"))


def test_the_error_curves_are_each_binades_worst_case():
    """Regression: the curves took the worst of 64 log-spaced samples in each eighth of a decade, which
    zig-zagged between 0.43 and 1.0 of the unit roundoff (a bin holding no power of two misses the worst
    case, just above one) and ran past each format's largest value (points drawn at bins' centres)."""
    from models.numformats import error_curves
    curves = error_curves()
    for fmt in (f for f in FORMATS if f.is_float):
        xs, errs = curves[fmt.name]
        u = 2.0 ** -(fmt.mantissa + 1)                                  # the unit roundoff
        normal = [e for x, e in zip(xs, errs) if x >= facts(fmt).smallest_normal]
        assert normal == pytest.approx([u / (1 + u)] * len(normal), rel=1e-12), fmt.name
        assert xs[-1] == min(facts(fmt).max, 2.0**133) and xs == sorted(xs), fmt.name
    xs, errs = curves["fp16"]                                           # against numpy, on a dense grid
    for e in (3, -20, -24):                                             # normal, subnormal, the smallest
        grid = 2.0**e * (1 + np.arange(2**14) / 2**14)                 # holds every midpoint of the binade
        stored = grid.astype(np.float16).astype(np.float64)
        worst = (np.abs(stored - grid) / grid)[stored > 0].max()
        assert errs[xs.index(2.0**e)] == pytest.approx(worst, rel=1e-12), e


def test_the_table_names_digits_subnormals_and_clamps_as_textbooks_do():
    """Regression: "decimal digits" was −log10(eps) (fp32 6.92), where IEEE 754 tables give log10(2^p)
    (7.22, 3.31, 2.41); 1e-40 in bf16 was only "rounded", though stored as a subnormal with 8 % error; int8's
    −128.6 read "saturated at max" where it was clamped at its minimum."""
    from viz.numformats import formats_markdown
    by_name = {f.name: f for f in FORMATS}
    assert [facts(by_name[n]).decimal_digits for n in ("fp32", "fp16", "bf16")] == [7.22, 3.31, 2.41]
    assert cast(1e-6, by_name["fp16"]).note == "subnormal"                     # below fp16's 6.1e-5
    assert cast(1e-6, by_name["fp16"]).stored == float(np.float16(1e-6))
    assert cast(1e-4, by_name["fp16"]).note == "rounded" and cast(2.0**-24, by_name["fp16"]).note == "exact"
    table = formats_markdown(-128.6, [cast(-128.6, f) for f in FORMATS], [facts(f) for f in FORMATS])
    assert "| int8 | 127 | — | — | — | -128 |" in table and "clamped to the range's end" in table


def test_bits_and_notes_by_hand():
    assert bits_of(torch.tensor([1.0])) == "0" + "01111111" + "0" * 23
    assert cast(70000.0, FORMATS[1]).note == "overflow"                 # fp16 tops out at 65,504
    assert cast(70000.0, FORMATS[2]).stored == 70144.0                  # bf16: 8 bits of precision
    assert cast(1.0, FORMATS[0]).note == "exact"
    assert cast(300.0, FORMATS[5]).note == "saturated" and cast(300.0, FORMATS[5]).stored == 127
    with pytest.raises(ValueError, match="finite number"):
        cast(float("nan"), FORMATS[0])


@pytest.mark.parametrize("fmt,value,note,stored", [
    ("fp16", 65510.0, "rounded", 65504.0), ("fp16", 65519.0, "rounded", 65504.0),    # below 65,504 + 32/2
    ("fp16", 65520.0, "overflow", math.inf),
    ("fp8 E5M2", 58000.0, "rounded", 57344.0), ("fp8 E5M2", 61440.0, "overflow", math.inf),   # 57,344 + 8,192/2
    ("fp8 E4M3", 460.0, "rounded", 448.0), ("fp8 E4M3", 464.0, "saturated", 448.0),  # 448 + 32/2: no inf
    ("fp8 E4M3", 1000.0, "saturated", 448.0),
    ("int8", 2.7, "rounded", 3.0), ("int8", -127.6, "rounded", -128.0), ("int8", -128.6, "saturated", -128.0), ("int8", -300.0, "saturated", -128.0),
])
def test_rounding_to_the_largest_value_is_not_saturation(fmt, value, note, stored):
    """Regression: 65,510 in fp16 was called saturated (it rounds to 65,504, as 65,520 rounds to inf: IEEE's
    threshold is the largest value plus half a step), and int8's clamp at −128 was called rounding."""
    target = next(f for f in FORMATS if f.name == fmt)
    c = cast(value, target)
    assert (c.note, c.stored) == (note, stored)
    if target.is_float and note != "saturated":                           # what torch's own cast stores
        assert torch.tensor([value], dtype=torch.float64).to(target.dtype).double().item() == stored


def test_e4m3_saturates_whatever_torch_stores_past_its_range(monkeypatch):
    """torch 2.11 (the lent GPU machine's) did not store 448 for E4M3's 1000: its C++ conversion gives NaN
    from 480 up and rounds (464, 480) to the NaN code too. The cast clamps first: no build reaches a NaN."""
    real = torch.Tensor.to

    def old_torch(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        if out.dtype == torch.float8_e4m3fn:
            nan = real(torch.full_like(self, math.nan), out.dtype)
            out = torch.where(real(self, torch.float64).abs() > 464, nan, out)
        return out

    monkeypatch.setattr(torch.Tensor, "to", old_torch)
    e4m3 = next(f for f in FORMATS if f.name == "fp8 E4M3")
    assert (cast(1000.0, e4m3).stored, cast(-1e6, e4m3).stored, cast(470.0, e4m3).stored) == (448.0, -448.0, 448.0)
    assert not e4m3.has_inf and all(f.has_inf for f in FORMATS if f.is_float and f is not e4m3)


# ------------------------------------------------------------------- compute
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (2, 3, 4), (7, 64, 33), (128, 16, 256)])
def test_two_m_n_k_equals_flop_counter(m, n, k):
    a, b = torch.randn(m, k), torch.randn(k, n)
    with FlopCounterMode(display=False) as counter:
        a @ b
    assert counter.get_total_flops() == matmul_flops(m, n, k) == 2 * m * n * k


def test_bytes_and_intensity_by_hand():
    assert bytes_moved(2, 3, 4, 2) == (2 * 4 + 4 * 3 + 2 * 3) * 2
    assert arithmetic_intensity(4096, 4096, 4096, 2) == pytest.approx(2 * 4096 / 6)    # 2n / 3b
    assert arithmetic_intensity(1, 4096, 4096, 2) < 1                                   # one token: memory-bound
    assert MatmulPoint("fp8", 64, 64, 64, 1.0, 1).intensity == pytest.approx(2 * 64**3 / (2 * 64 * 64 + 64 * 64 * 2))


def test_sweep_streams_measured_points_within_its_budget():
    torch.manual_seed(0)
    items = list(sweep("square", ["fp32", "bf16"], budget_s=0.6, point_s=0.02, device="cpu"))
    points = [p for p in items if isinstance(p, MatmulPoint)]
    assert {p.dtype for p in points} == {"fp32", "bf16"} and points[0].m == 16
    for p in points:
        assert p.flops_per_s == pytest.approx(2 * p.m * p.n * p.k / p.seconds) and p.reps >= 2
    assert all(isinstance(s, MatmulSkip) and s.why.startswith("compute_skip") for s in items if s not in points)
    tokens = [p for p in sweep("tokens", ["fp32"], budget_s=0.3, point_s=0.01, device="cpu") if isinstance(p, MatmulPoint)]
    assert tokens[0].m == 1 and tokens[0].n == tokens[0].k == 512


def test_a_dtype_the_device_lacks_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(torch, "randn", lambda *a, **k: pytest.fail("allocated before the check"))
    with pytest.raises(InputError) as error:
        list(sweep("square", ["fp32", "fp8"], device="cpu"))
    assert error.value.key == "compute_why_fp8" and "fp8" in error.value.render("zh-CN")
    with pytest.raises(InputError, match="must be one of"):
        check_dtypes(["fp64"], torch.device("cpu"))
    with pytest.raises(InputError) as error:
        check_dtypes([], torch.device("cpu"))
    assert error.value.key == "compute_err_no_dtype"


def test_measured_peak_is_the_best_point():
    points = [MatmulPoint("fp32", 16, 16, 16, 1e-6, 10), MatmulPoint("fp32", 64, 64, 64, 1e-5, 10),
              MatmulPoint("bf16", 16, 16, 16, 1e-5, 10)]
    assert measured_peak(points) == {"fp32": 2 * 64**3 / 1e-5, "bf16": 2 * 16**3 / 1e-5}


@pytest.mark.parametrize("name,entry", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200 SXM"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB"), ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
    ("NVIDIA A100-PCIE-40GB", "A100 40GB"), ("NVIDIA L4", "L4"), ("NVIDIA L40S", "L40S"), ("Tesla T4", "T4"),
    ("NVIDIA A10", "A10"), ("NVIDIA A10G", "A10G"), ("AMD Instinct MI300X", "MI300X"),
    ("NVIDIA GeForce RTX 4090", None), ("NVIDIA H200 MIG 3g.71gb", None), ("cpu", None),
])
def test_device_names_find_their_peaks(name, entry):
    found = peak_for(name)
    assert (found.name if found else None) == entry


def test_every_peak_has_its_source_in_a_comment():
    """Each entry names its source, and the comment above its group quotes that datasheet's figures."""
    lines = (Path(__file__).parents[1] / "models" / "peaks.py").read_text().splitlines()
    for peak in PEAKS:
        assert peak.source and peak.bandwidth_tbs > 0 and all(v > 0 for v in peak.tflops.values())
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(f'Peak("{peak.name}"'))
        above = at - 1
        while not lines[above].strip().startswith("#"):                  # skip the entries of the same group
            above -= 1
        comment = []
        while lines[above].strip().startswith("#"):
            comment.insert(0, lines[above])
            above -= 1
        text = " ".join(comment)
        family = re.match(r"[A-Z]+\d+", peak.name.replace("Tesla ", "")).group(0)
        assert family in text and ("datasheet" in text or "Baseten" in text), peak.name
        assert re.search(r"\d+(\.\d+)? ?(TF|TB/s|GB/s)", text), peak.name      # the published figures
        dense = peak.tflops.get("bf16") or peak.tflops["fp16"]
        digits = text.replace(",", "")
        assert f"{dense:g}" in digits or f"{2 * dense:g}" in digits, peak.name  # as published, or its sparse twice
    assert PEAK_NAMES == tuple(p.name for p in PEAKS)


def test_training_time_and_mfu_by_hand():
    seconds = training_seconds(7e9, 1e12, 1024, 989.5e12, 0.4)
    assert seconds == pytest.approx(6 * 7e9 * 1e12 / (1024 * 989.5e12 * 0.4))
    assert mfu(2e14, peak_by_name("H100 SXM").tflops["bf16"] * 1e12) == pytest.approx(2e14 / 989.5e12)
    with pytest.raises(ValueError):
        training_seconds(7e9, 1e12, 1024, 989.5e12, 1.5)


# ------------------------------------------------------------------- MFU of a training step
def test_mfu_run_counts_the_step_three_ways_and_they_agree():
    from models.compute import MfuSetup, MfuStep, mfu_config, mfu_run
    L, d, H, T, B = 2, 32, 2, 16, 2
    items = list(mfu_run(L, d, H, T, B, steps=3, device="cpu"))
    setup, timed = items[0], items[1:]
    assert isinstance(setup, MfuSetup) and [s.step for s in timed] == [1, 2, 3]
    assert all(isinstance(s, MfuStep) and s.seconds > 0 and math.isfinite(s.loss) for s in timed)
    cfg = mfu_config(L, d, H, T)
    V, f = cfg.vocab_size, cfg.d_ff                                       # SwiGLU: w_in is d × 2f
    n_matmul = L * (d * 3 * d + d * d + d * 2 * f + f * d) + d * V     # by hand: qkv, out, FFN, LM head
    assert setup.n_matmul == n_matmul and setup.tokens == B * T
    assert setup.rule_flops == 6 * n_matmul * B * T
    attention = L * (2 * B * H * T * T * (2 * (d // H)) + 2 * B * H * T * T * (5 * (d // H)))   # fused: fwd + bwd
    assert setup.formula_flops == setup.rule_flops + attention
    assert setup.counted_flops == setup.formula_flops                    # FlopCounterMode, the optimizer included
    assert setup.missed_flops == attention                               # the CPU kernel torch 2.13 does not count
    assert setup.dtype == "fp32" and setup.peak > 0 and setup.peak_source is None


def test_plain_flop_counter_misses_cpu_attention():
    """Why the run passes custom_mapping: torch's own counter sees no FLOPs in the CPU's fused attention."""
    q = torch.randn(1, 2, 8, 4)
    with FlopCounterMode(display=False) as plain:
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert plain.get_total_flops() == 0


def test_mfu_at_the_defaults_is_achieved_over_peak_within_one(one_thread):
    """One thread: the peak probe and the steps then see the same cores (xdist workers share them)."""
    from models.compute import MfuSetup, mfu_run
    items = list(mfu_run(device="cpu"))
    setup = next(i for i in items if isinstance(i, MfuSetup))
    seconds = sorted(i.seconds for i in items if not isinstance(i, MfuSetup))[5]
    achieved = setup.formula_flops / seconds
    ratio = mfu(achieved, setup.peak)
    assert ratio == achieved / setup.peak and 0 < ratio <= 1


def test_a_run_over_the_budget_is_refused_before_building(monkeypatch):
    from models import compute
    monkeypatch.setattr(compute.Transformer, "seeded", lambda *a, **k: pytest.fail("built before the check"))
    with pytest.raises(InputError) as error:
        next(compute.mfu_run(12, 1024, 16, 512, 64, 50, device="cpu"))
    assert error.value.key == "compute_err_mfu_budget" and "FLOPs" in str(error.value)


def test_mfu_summary_without_a_peak_says_so():
    from models.compute import MfuSetup
    from viz.compute import mfu_markdown
    setup = MfuSetup("cuda (NVIDIA GeForce RTX 4090)", 1, "bf16", 10, 8, 4, 192, 200, 200, 0, None, None)
    text = mfu_markdown(setup, 0.01, 2e4, None, 1, 4)
    assert "no peak" in text and "MFU —" in text and "✓ equal" in text
    assert "没有峰值" in mfu_markdown(setup, 0.01, 2e4, None, 1, 4, "zh-CN")


def test_each_memory_strip_is_labelled_once():
    """The memory figure draws shared and copied steps as two heatmaps over the same rows: a row's cell
    labels belong to its own kind's heatmap only (the bias preset drew every label twice)."""
    from models.tensor_presets import PRESETS
    from models.tensors import replay
    from viz.tensors import memory_figure

    trace = replay(*PRESETS["bias"])
    maps = [t for t in memory_figure(trace.steps)["data"] if t["type"] == "heatmap" and "text" in t]
    assert len(maps) == 2                                          # the expand shares, contiguous() copies
    for r in range(len(trace.steps)):
        labelled = [m for m in maps if any(m["text"][r])]
        assert len(labelled) <= 1
        assert all(any(v is not None for v in m["z"][r]) for m in labelled)


def test_a_write_mark_leaves_the_cell_text_readable():
    """Regression: a red × sat at each written cell's centre, over its read order ("0,4,8" in the bias
    preset). Each written cell is outlined now, the outline spanning exactly that cell."""
    from models.tensor_presets import PRESETS
    from models.tensors import replay
    from viz.tensors import memory_figure

    steps = replay(*PRESETS["bias"]).steps
    fig = memory_figure(steps)
    assert not [t for t in fig["data"] if t.get("mode") == "markers" and t["x"] != [None]]
    written = sorted((x, r) for r, s in enumerate(steps) if s.ok and s.shares for x in s.written)
    cells = sorted((round(o["x0"] + 0.5), round((o["y0"] + o["y1"]) / 2)) for o in fig["layout"]["shapes"])
    assert written and cells == written
    assert all(o["x1"] - o["x0"] == 1 for o in fig["layout"]["shapes"])


def test_the_peak_lines_are_named_in_the_legend_not_over_the_data():
    """Regression: the measured bests were listed in the size panel's bottom-right corner, where a CPU's slow
    fp16 points lie (6 GFLOP/s beside "fp32 best measured 112 GFLOP/s"), far from their own dashed lines."""
    from models.compute import MatmulPoint, measured_peak
    from viz.compute import human_rate, matmul_figure
    points = [MatmulPoint(d, n, n, n, 2 * n**3 / rate, 3) for d, rate in (("fp32", 1.1e11), ("fp16", 6e9))
              for n in (64, 256, 1024)]
    peaks = measured_peak(points)
    fig = matmul_figure(points, peaks, None, None, "square", 1024, "cpu")
    assert not [a for a in fig["layout"]["annotations"] if "best" in a.get("text", "")]
    named = {t["name"]: t["line"] for t in fig["data"] if t.get("x") == [None]}
    assert set(named) == {f"{d} best measured {human_rate(p)}" for d, p in peaks.items()}
    assert all(line["dash"] == "dash" for line in named.values())
