"""A tensor is a strip of storage read through a shape, a stride and an offset: layout operations
replayed on a real tensor, step by step.

The learner types a shape and a chain of operations, one per line (the grammar is small and parsed
here, never evaluated)::

    view(2, 3, 2, 4)        # a method call: whole numbers only, -1 where view/reshape/expand allow it
    transpose(1, 2)
    [:, ::2, 1]             # indexing: whole numbers, start:stop:step slices, ..., None
    contiguous()            # everything after # is a comment

Operations: view, reshape, transpose, permute, t, expand, unsqueeze, squeeze, flatten, contiguous,
clone, and indexing. The original is ``torch.arange(n, dtype=float32).view(shape)``: each element's
value is its position in memory, so a view's values say where it reads from.

After each step :func:`replay` records what PyTorch reports (shape, ``stride()``,
``storage_offset()``, ``is_contiguous()``), whether the result still reads the original's memory
(``untyped_storage().data_ptr()``), the storage it reads in memory order and the positions it reads
in the order it reads them (computed with ``torch.as_strided`` over the positions, never by a
formula of ours), and what a real write through it changes in the original. An operation PyTorch
refuses is returned as data: PyTorch's own message and a reason (a message key for ``locales/``);
the chain goes on from the tensor before it.

Every step runs first on the meta device (shapes and strides, no memory), so a result over the
limits (``models.limits``) is refused before anything is allocated. Not handled: keyword arguments,
tensors as indices (advanced indexing), ops that take or make several tensors.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from models.checks import InputError
from models.tensor_presets import PRESETS  # noqa: F401 (part of this module's API)
from models.limits import (TENSOR_MAX_ARG, TENSOR_MAX_DIMS, TENSOR_MAX_ELEMENTS, TENSOR_MAX_OPS,
                           TENSOR_MAX_OPS_CHARS)

# name -> (fewest, most) arguments. Sizes of view/reshape/expand and dims of permute are variadic.
OPS = {
    "view": (1, 8), "reshape": (1, 8), "expand": (1, 8), "permute": (1, 8), "transpose": (2, 2),
    "t": (0, 0), "unsqueeze": (1, 1), "squeeze": (0, 1), "flatten": (0, 2), "contiguous": (0, 0),
    "clone": (0, 0),
}
MARK = -1.0                  # the value written through each view (the original holds 0 … n-1)
_CALL = re.compile(r"^\.?([A-Za-z_]\w*)\s*\((.*)\)$")
_INT = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True)
class Op:
    """One parsed line: a method call (``name``, ``args``) or indexing (``name == "index"``)."""

    text: str                # the line as typed, comment and spaces trimmed
    name: str
    args: tuple

    def apply(self, t: torch.Tensor) -> torch.Tensor:
        if self.name == "index":
            return t[self.args]
        return getattr(t, self.name)(*self.args)


@dataclass(frozen=True)
class Step:
    """A tensor of the chain (step 0 is the original) or an operation that failed on it."""

    index: int
    op: str                          # the line ("" for the original)
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    contiguous: bool
    shares: bool                     # reads the original's storage (same data_ptr)
    storage: list[float]             # the storage it reads, in memory order
    reads: list[int]                 # positions in that storage, in the order the view reads them
    values: list[float]              # the view's elements, row-major (= storage[reads])
    written: list[int]               # positions of the ORIGINAL changed by writing MARK at view[0, …, 0]
    marked: int                      # elements of the view that show the write (> 1 after expand)
    storage_step: int = 0            # the step whose operation made the storage it reads (0: the original)
    error: str | None = None         # PyTorch's message when the operation failed
    why: str | None = None           # a locales key saying why it failed …
    why_params: dict = field(default_factory=dict)   # … and its parameters

    @property
    def ok(self) -> bool:
        return self.error is None and self.why is None


@dataclass(frozen=True)
class LayoutTrace:
    shape: tuple[int, ...]
    steps: list[Step]                # the original, then one per line (failed ones included)
    ms: float

    @property
    def last(self) -> Step:
        """The last tensor the chain produced (failed steps produce none)."""
        return [s for s in self.steps if s.ok][-1]


# ----------------------------------------------------------------------------------------------- parsing

def _whole(text: str, line: int) -> int:
    """A whole number typed in line ``line``.

    >>> _whole(" -1 ", 1)
    -1
    """
    text = text.strip()
    if not _INT.match(text) or abs(int(text)) > TENSOR_MAX_ARG:
        raise InputError("tensors_err_number", line=line, value=text[:20], max=f"{TENSOR_MAX_ARG:,}")
    return int(text)


def _index_item(text: str, line: int) -> Any:
    """One item of ``[...]``: a whole number, a ``start:stop:step`` slice, ``...`` or ``None``.

    >>> _index_item("::2", 1), _index_item("1:", 1), _index_item("...", 1)
    (slice(None, None, 2), slice(1, None, None), Ellipsis)
    """
    text = text.strip()
    if text == "...":
        return Ellipsis
    if text == "None":
        return None
    if ":" in text:
        parts = text.split(":")
        if len(parts) > 3:
            raise InputError("tensors_err_slice", line=line, text=text[:30])
        return slice(*[_whole(p, line) if p.strip() else None for p in parts])
    return _whole(text, line)


def parse_ops(text: str) -> list[Op]:
    """The chain typed by the learner, one operation per line; blank lines and ``# comments`` skipped.

    >>> [(op.name, op.args) for op in parse_ops("view(2, -1)  # rows\\n\\n.transpose(0,1)\\n[:, ::2]")]
    [('view', (2, -1)), ('transpose', (0, 1)), ('index', (slice(None, None, None), slice(None, None, 2)))]
    >>> parse_ops("__import__('os')")
    Traceback (most recent call last):
    ...
    models.checks.InputError: line 1: __import__ is not an operation here: use view, reshape, expand, permute, transpose, t, unsqueeze, squeeze, flatten, contiguous, clone or [indexing]
    """
    if not isinstance(text, str):
        raise InputError("tensors_err_ops_text")
    if len(text) > TENSOR_MAX_OPS_CHARS:
        raise InputError("tensors_err_ops_long", chars=len(text), max=TENSOR_MAX_OPS_CHARS)
    ops = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(ops) == TENSOR_MAX_OPS:
            raise InputError("tensors_err_too_many_ops", max=TENSOR_MAX_OPS)
        if line.startswith("[") and line.endswith("]"):
            inner = line[1:-1].strip()
            items = tuple(_index_item(item, number) for item in inner.split(",")) if inner else ()
            if not items:
                raise InputError("tensors_err_empty_index", line=number)
            ops.append(Op(line, "index", items))
            continue
        call = _CALL.match(line)
        if not call:
            raise InputError("tensors_err_syntax", line=number, text=line[:40])
        name, inner = call.group(1), call.group(2).strip()
        if name not in OPS:
            raise InputError("tensors_err_unknown_op", line=number, name=name[:30],
                             ops=", ".join(OPS))
        args = tuple(_whole(a, number) for a in inner.split(",")) if inner else ()
        low, high = OPS[name]
        if not low <= len(args) <= high:
            raise InputError("tensors_err_arity", line=number, name=name, got=len(args),
                             expected=str(low) if low == high else f"{low}–{high}")
        ops.append(Op(line, name, args))
    return ops


def parse_shape(text: str) -> tuple[int, ...]:
    """A shape typed as whole numbers separated by commas or spaces, checked against the limits
    (before anything is allocated).

    >>> parse_shape("[2, 3, 4]"), parse_shape("5")
    ((2, 3, 4), (5,))
    >>> parse_shape("16, 17")
    Traceback (most recent call last):
    ...
    models.checks.InputError: shape (16, 17) has 272 elements: at most 256
    """
    if not isinstance(text, str):
        raise InputError("tensors_err_shape_syntax", text=repr(text)[:30])
    parts = [p for p in re.split(r"[,\s]+", text.strip().strip("()[]")) if p]
    if not parts or not all(_INT.match(p) and len(p) <= 7 for p in parts):
        raise InputError("tensors_err_shape_syntax", text=text[:30])
    shape = tuple(int(p) for p in parts)
    if not 1 <= len(shape) <= TENSOR_MAX_DIMS:
        raise InputError("tensors_err_shape_dims", shape=str(shape), dims=len(shape), max=TENSOR_MAX_DIMS)
    if min(shape) < 1:
        raise InputError("tensors_err_shape_size", shape=str(shape))
    n = math.prod(shape)
    if n > TENSOR_MAX_ELEMENTS:
        raise InputError("tensors_err_shape_elements", shape=str(shape), n=n, max=TENSOR_MAX_ELEMENTS)
    return shape


# ----------------------------------------------------------------------------------------------- replay

def storage_of(t: torch.Tensor) -> torch.Tensor:
    """The whole storage under ``t``, as a 1-D tensor in memory order.

    >>> storage_of(torch.arange(6.).view(2, 3)[:, 1]).tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    """
    n = t.untyped_storage().nbytes() // t.element_size()
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (n,), (1,))


def read_positions(t: torch.Tensor) -> torch.Tensor:
    """The storage position of each element of ``t`` in row-major order: the positions 0 … n-1 read
    through ``t``'s own size, stride and offset with ``torch.as_strided``.

    >>> read_positions(torch.arange(6.).view(2, 3).t()).tolist()
    [0, 3, 1, 4, 2, 5]
    """
    positions = torch.arange(storage_of(t).numel())
    return torch.as_strided(positions, t.shape, t.stride(), t.storage_offset()).flatten()


def _meta_like(t: torch.Tensor) -> torch.Tensor:
    """``t``'s size, stride and offset over a storage of the same length, on the meta device."""
    return torch.empty(storage_of(t).numel(), device="meta").as_strided(t.shape, t.stride(), t.storage_offset())


def _record(index: int, op: str, t: torch.Tensor, base: torch.Tensor, storage_step: int = 0) -> Step:
    """What PyTorch says about ``t`` and what a write through it does to ``base``."""
    storage = storage_of(t)
    reads = read_positions(t)
    written, marked = [], 0
    if t.numel():
        at = (0,) * t.dim()
        original = storage_of(base)
        before_base, before = original.clone(), t[at].item()
        t[at] = MARK                                          # a real write through the view …
        written = (original != before_base).nonzero().flatten().tolist()
        marked = int((t == MARK).sum())
        t[at] = before                                        # … undone, so later steps see the original
    return Step(index, op, tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.is_contiguous(),
                t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr(),
                storage.tolist(), reads.tolist(), t.flatten().tolist(), written, marked, storage_step)


def _failed(index: int, op: Op, t: torch.Tensor, error: str | None, why: tuple[str, dict]) -> Step:
    """A refused operation: the tensor it was applied to stays the chain's current one."""
    return Step(index, op.text, tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.is_contiguous(),
                False, [], [], [], [], 0, error=error, why=why[0], why_params=why[1])


def _refusal(op: Op, t: torch.Tensor, meta_refusal: Exception) -> str:
    """PyTorch's message for ``op`` on ``t`` itself (a message may name the device: "MetaFloatType");
    an operation refused on the meta device fails on shape checks, before allocating anything."""
    try:
        op.apply(t)
    except Exception as refusal:                               # noqa: BLE001
        return str(refusal).strip()
    return str(meta_refusal).strip()


def replay(shape: tuple[int, ...] | str, ops: list[Op] | str) -> LayoutTrace:
    """Build the original (``arange`` in ``shape``), apply ``ops`` one by one, record every step.

    >>> trace = replay("2, 3, 4", "transpose(1, 2)\\nview(24)\\ncontiguous()\\nview(24)")
    >>> [(s.op, s.stride, s.contiguous, s.shares) for s in trace.steps if s.ok]
    [('', (12, 4, 1), True, True), ('transpose(1, 2)', (12, 1, 4), False, True), ('contiguous()', (12, 3, 1), True, False), ('view(24)', (1,), True, False)]
    >>> trace.steps[2].why
    'tensors_why_view'
    """
    start = time.perf_counter()
    shape = parse_shape(shape) if isinstance(shape, str) else shape
    ops = parse_ops(ops) if isinstance(ops, str) else ops
    base = torch.arange(math.prod(shape), dtype=torch.float32).view(shape)   # sizes checked above
    steps = [_record(0, "", base, base)]
    current, steps_made = base, 0                            # steps_made: the step that made current's storage
    for i, op in enumerate(ops, start=1):
        try:
            probe = op.apply(_meta_like(current))               # shapes only: nothing is allocated
        except Exception as meta_refusal:                      # noqa: BLE001 (PyTorch's refusal, as data)
            steps.append(_failed(i, op, current, _refusal(op, current, meta_refusal), why_failed(op, current)))
            continue
        if probe.dim() > TENSOR_MAX_DIMS or probe.numel() > TENSOR_MAX_ELEMENTS:
            steps.append(_failed(i, op, current, None, ("tensors_why_limit", dict(
                shape=str(tuple(probe.shape)), dims=TENSOR_MAX_DIMS, max=TENSOR_MAX_ELEMENTS))))
            continue
        before = current.untyped_storage().data_ptr()
        current = op.apply(current)
        made = i if current.untyped_storage().data_ptr() != before else steps_made
        steps_made = made
        steps.append(_record(i, op.text, current, base, made))
    return LayoutTrace(shape, steps, (time.perf_counter() - start) * 1e3)


# ----------------------------------------------------------------------------------------------- why

def _dim_ok(d: int, n: int) -> bool:
    return -max(n, 1) <= d < max(n, 1)


def why_failed(op: Op, t: torch.Tensor) -> tuple[str, dict]:
    """Why PyTorch refused ``op`` on ``t``: a locales key and its parameters, found by checking the
    tensor against the operation's rules (not by reading PyTorch's message).

    >>> why_failed(Op("view(5, 5)", "view", (5, 5)), torch.zeros(2, 3, 4))
    ('tensors_why_numel', {'sizes': '(5, 5)', 'product': 25, 'numel': 24})
    """
    n, a = t.dim(), op.args
    if op.name in ("transpose", "permute", "squeeze", "flatten"):
        for d in a:
            if not _dim_ok(d, n):
                return "tensors_why_dim", dict(dim=d, n=n, low=-max(n, 1), high=max(n, 1) - 1)
    if op.name == "unsqueeze" and not -n - 1 <= a[0] <= n:
        return "tensors_why_dim", dict(dim=a[0], n=n, low=-n - 1, high=n)
    if op.name == "permute":
        return "tensors_why_permute", dict(dims=str(a), n=n)
    if op.name == "flatten":
        return "tensors_why_flatten", dict(start=a[0], end=a[1] if len(a) > 1 else -1)
    if op.name == "t":
        return "tensors_why_t", dict(n=n)
    if op.name in ("view", "reshape"):
        if sum(1 for s in a if s == -1) > 1:
            return "tensors_why_infer", {}
        if any(s < -1 for s in a):
            return "tensors_why_negative", dict(sizes=str(a))
        known = math.prod(s for s in a if s != -1)
        if -1 in a:
            if known == 0 or t.numel() % known:
                return "tensors_why_no_fit", dict(sizes=str(a), known=known, numel=t.numel())
        elif known != t.numel():
            return "tensors_why_numel", dict(sizes=str(a), product=known, numel=t.numel())
        return "tensors_why_view", dict(stride=str(tuple(t.stride())))
    if op.name == "expand":
        if len(a) < n:
            return "tensors_why_expand_dims", dict(got=len(a), n=n)
        for d, (have, want) in enumerate(zip(t.shape, a[len(a) - n:]), start=len(a) - n):
            if want != -1 and have != 1 and have != want:
                return "tensors_why_expand", dict(dim=d, size=have, want=want)
    if op.name == "index":
        items = [x for x in a if x is not None and x is not Ellipsis]
        if len(items) > n:
            return "tensors_why_too_many_indices", dict(got=len(items), n=n)
        if any(isinstance(x, slice) and x.step is not None and x.step <= 0 for x in a):
            return "tensors_why_step", {}
        if a.count(Ellipsis) > 1:
            return "tensors_why_ellipsis", {}
        dims = _index_dims(a, n)
        for d, x in zip(dims, a):
            if isinstance(x, int) and not -t.shape[d] <= x < t.shape[d]:
                return "tensors_why_index", dict(index=x, dim=d, size=t.shape[d])
    return "tensors_why_other", {}


def _index_dims(items: tuple, n: int) -> list[int]:
    """The dimension each index item refers to (``None`` adds none, ``...`` covers the rest).

    >>> _index_dims((0, Ellipsis, 1), 4)
    [0, 1, 3]
    """
    consumed = sum(1 for x in items if x is not None and x is not Ellipsis)
    dims, d = [], 0
    for x in items:
        dims.append(d)
        if x is Ellipsis:
            d += n - consumed
        elif x is not None:
            d += 1
    return dims
