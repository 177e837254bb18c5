"""Attention masks and masked attention that never returns NaN.

Convention (PyTorch's, as in ``F.scaled_dot_product_attention``): a boolean mask is ``True``
where a query **may attend** to a key. Many tutorials use the complement, "1 = masked": their
look-ahead mask ``torch.triu(ones, 1)`` is ``~causal_mask(T)``.

Masks compose with AND: a key is visible only if every rule allows it (it is a real token, not
padding; it is not in the future; it is inside the window; it is in the same packed document).

The trap this module exists to show: a query row whose keys are *all* masked (left padding with a
causal mask, say) gets ``softmax([-inf, ..., -inf]) = 0/0 = NaN``, and one NaN poisons every later
layer. :func:`masked_attention` gives such a row zero weights and zero output instead.

Reference: Vaswani et al. 2017 (scaled dot-product attention), PyTorch SDPA semantics.
Not handled: attention over a different key length than query length in the mask builders
(the explorer is self-attention); float masks other than 0/-inf.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from locales import Term
from models.checks import InputError, choice, whole
from models.device import Timing, generator, resolve_device, timed

from models.limits import MASKS_MAX_CHARS as MAX_CHARS
from models.limits import MASKS_MAX_HEADS as MAX_HEADS
from models.limits import MASKS_MAX_SEQUENCES as MAX_SEQUENCES
from models.limits import MASKS_MAX_TOKENS as MAX_TOKENS

PAD = "[PAD]"
DOC_SEPARATOR = "|"
PADDING_SIDES = ("right", "left")


def _check_positive(name: str, value: int, upper: int | None = None) -> None:
    whole(name, value, 1, upper)


def padding_mask(lengths: list[int] | torch.Tensor, seq_len: int, *, side: str = "right",
                 device: torch.device | None = None) -> torch.Tensor:
    """``[B, T]``, True on the real tokens: the first ``length`` positions (or the last, ``side="left"``).

    >>> padding_mask([3, 1], 4).int().tolist()
    [[1, 1, 1, 0], [1, 0, 0, 0]]
    >>> padding_mask([3, 1], 4, side="left").int().tolist()
    [[0, 1, 1, 1], [0, 0, 0, 1]]
    """
    _check_positive("seq_len", seq_len)
    choice("masks_padding_side", side, PADDING_SIDES)
    lengths = torch.as_tensor(lengths, device=device).reshape(-1)          # (B,)
    if lengths.numel() and (lengths.min() < 0 or lengths.max() > seq_len):
        raise InputError("masks_err_lengths", seq_len=seq_len, lengths=lengths.tolist())
    pos = torch.arange(seq_len, device=lengths.device)                     # (T,)
    if side == "right":
        return pos[None, :] < lengths[:, None]                             # (B, T)
    return pos[None, :] >= (seq_len - lengths)[:, None]                    # (B, T)


def causal_mask(seq_len: int, *, device: torch.device | None = None) -> torch.Tensor:
    """``[T, T]`` lower triangle with the diagonal: query i sees keys 0..i.

    >>> causal_mask(3).int().tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    _check_positive("seq_len", seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def sliding_window_mask(seq_len: int, window: int, *, device: torch.device | None = None) -> torch.Tensor:
    """``[T, T]``: query i sees keys i-window+1 .. i (Mistral-style; causal by construction).

    >>> sliding_window_mask(4, 2).int().tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    """
    _check_positive("seq_len", seq_len)
    _check_positive("window", window, seq_len)
    i = torch.arange(seq_len, device=device)
    offset = i[:, None] - i[None, :]                                       # (T, T): query - key
    return (offset >= 0) & (offset < window)


def prefix_lm_mask(seq_len: int, prefix_len: int, *, device: torch.device | None = None) -> torch.Tensor:
    """``[T, T]``: every query sees the first ``prefix_len`` keys; after the prefix, causal.

    >>> prefix_lm_mask(4, 2).int().tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    """
    _check_positive("seq_len", seq_len)
    _check_positive("prefix_len", prefix_len, seq_len)
    mask = causal_mask(seq_len, device=device)
    mask[:, :prefix_len] = True
    return mask


def document_mask(doc_ids: torch.Tensor) -> torch.Tensor:
    """``[B, T] -> [B, T, T]``: True where query and key belong to the same packed document.

    >>> document_mask(torch.tensor([[0, 0, 1]])).int().tolist()
    [[[1, 1, 0], [1, 1, 0], [0, 0, 1]]]
    """
    return doc_ids[:, :, None] == doc_ids[:, None, :]                     # (B, T, T)


def attention_mask(lengths: list[int] | torch.Tensor, seq_len: int, *, causal: bool,
                   window: int | None = None, prefix_len: int | None = None,
                   doc_ids: torch.Tensor | None = None, padding_side: str = "right",
                   device: torch.device | None = None) -> torch.Tensor:
    """``[B, 1, T, T]``: the AND of every rule that applies, ready to broadcast over heads.

    Padding masks *keys* only (as PyTorch and Hugging Face do): a padding query still attends,
    and its output is thrown away by the loss. ``prefix_len`` replaces the causal mask by the
    prefix-LM mask; ``window`` and ``doc_ids`` further restrict whatever else applies.

    >>> attention_mask([2], 3, causal=True)[0, 0].int().tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 0]]
    """
    return compose_masks(lengths, seq_len, causal=causal, window=window, prefix_len=prefix_len,
                         doc_ids=doc_ids, padding_side=padding_side, device=device)[0][:, None]


def compose_masks(lengths, seq_len: int, *, causal: bool, window: int | None = None,
                  prefix_len: int | None = None, doc_ids: torch.Tensor | None = None,
                  padding_side: str = "right", device: torch.device | None = None,
                  ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The combined ``[B, T, T]`` mask and each rule's own ``[B, T, T]`` mask, by name."""
    keys = padding_mask(lengths, seq_len, side=padding_side, device=device)   # (B, T)
    B = keys.shape[0]
    parts = {"padding": keys[:, None, :].expand(B, seq_len, seq_len)}         # (B, T, T)
    if prefix_len is not None:
        parts["prefix"] = prefix_lm_mask(seq_len, prefix_len, device=keys.device).expand(B, -1, -1)
    elif causal:
        parts["causal"] = causal_mask(seq_len, device=keys.device).expand(B, -1, -1)
    if window is not None:
        parts["window"] = sliding_window_mask(seq_len, window, device=keys.device).expand(B, -1, -1)
    if doc_ids is not None:
        parts["documents"] = document_mask(doc_ids.to(keys.device))
    combined = torch.stack(list(parts.values())).all(dim=0)                 # (B, T, T)
    return combined, parts


def additive_mask(mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The float mask added to the scores: 0 where allowed, -inf where masked.

    >>> additive_mask(torch.tensor([True, False])).tolist()
    [0.0, -inf]
    """
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, float("-inf"))


def naive_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """What most tutorials write: ``masked_fill(-inf)`` then softmax. A fully masked row -> NaN.

    >>> naive_masked_softmax(torch.zeros(1, 2), torch.tensor([[False, False]])).tolist()
    [[nan, nan]]
    """
    return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)


def masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention with a boolean mask, returning ``(out, weights)``.

    ``q: [..., T, D]``, ``k: [..., S, D]``, ``v: [..., S, Dv]``, ``mask`` broadcastable to
    ``[..., T, S]``. Equals ``F.scaled_dot_product_attention(q, k, v, attn_mask=mask)`` on every
    row with an allowed key; a row with none gets zero weights and a zero output (no NaN, also in
    the backward pass, because no ``-inf`` row ever reaches the softmax).

    >>> q = k = v = torch.ones(1, 2, 1)
    >>> out, w = masked_attention(q, k, v, torch.tensor([[False, False], [True, True]]))
    >>> w.tolist(), out.tolist()
    ([[[0.0, 0.0], [0.5, 0.5]]], [[[0.0], [1.0]]])
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])              # (..., T, S)
    mask = mask.expand_as(scores)
    has_key = mask.any(dim=-1, keepdim=True)                               # (..., T, 1)
    # Fully masked rows are left unmasked for the softmax (finite), then zeroed by the mask.
    scores = scores.masked_fill(~mask & has_key, float("-inf"))
    weights = scores.softmax(dim=-1) * mask                                # (..., T, S)
    return weights @ v, weights                                            # (..., T, Dv), (..., T, S)


# --------------------------------------------------------------------------- the explorer


@dataclass(frozen=True)
class TokenBatch:
    """A small batch of whitespace-split sentences; ``|`` separates packed documents in a row."""

    tokens: list[list[str]]          # real tokens of each row, without padding
    docs: list[list[int]]            # document index of each real token (all 0 unless packed)

    @property
    def lengths(self) -> list[int]:
        return [len(row) for row in self.tokens]


def parse_batch(text: str, *, packed: bool = False) -> TokenBatch:
    """One sequence per non-empty line, tokens split on whitespace, bounded in size.

    >>> parse_batch("the cat | a dog\\nhi", packed=True).docs
    [[0, 0, 1, 1], [0]]
    """
    if not isinstance(text, str):
        raise InputError("masks_err_not_text")
    if len(text) > MAX_CHARS:
        raise InputError("masks_err_too_long", chars=len(text), max=MAX_CHARS)
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise InputError("masks_err_empty")
    if len(lines) > MAX_SEQUENCES:
        raise InputError("masks_err_too_many_lines", lines=len(lines), max=MAX_SEQUENCES)
    tokens, docs = [], []
    for n, line in enumerate(lines, start=1):
        row, row_docs, doc = [], [], 0
        for piece in line.split():
            if packed and piece == DOC_SEPARATOR:
                doc += 1 if row_docs and row_docs[-1] == doc else 0
                continue
            row.append(piece)
            row_docs.append(doc)
        if not row:
            raise InputError("masks_err_only_separators", line=n)
        if len(row) > MAX_TOKENS:
            raise InputError("masks_err_too_many_tokens", line=n, tokens=len(row), max=MAX_TOKENS)
        tokens.append(row)
        docs.append(row_docs)
    return TokenBatch(tokens, docs)


@dataclass(frozen=True)
class MaskSpec:
    """Which rules apply. Validates itself against the batch's length in :func:`explore_masks`."""

    padding: bool = True
    causal: bool = False
    window: int | None = None
    prefix_len: int | None = None
    packed: bool = False
    padding_side: str = "right"


@dataclass
class MaskExploration:
    """Everything the masks tab draws, for every sequence and head."""

    labels: list[list[str]]               # [B][T] token labels, padding included
    mask: torch.Tensor                    # (B, T, T) bool, True = may attend
    parts: dict[str, torch.Tensor]        # rule name -> (B, T, T) bool
    additive: torch.Tensor                # (B, T, T) float, 0 / -inf
    weights: torch.Tensor                 # (B, H, T, T) safe softmax weights
    naive_weights: torch.Tensor           # (B, H, T, T) masked_fill(-inf) + softmax: NaN rows
    empty_rows: torch.Tensor              # (B, T) bool: queries with no allowed key
    timing: Timing = field(default=None)  # type: ignore[assignment]


def explore_masks(text: str, spec: MaskSpec, *, n_heads: int = 2, head_dim: int = 16, seed: int = 0,
                  device: torch.device | str | None = None) -> MaskExploration:
    """Parse ``text``, build the masks of ``spec``, and attend with seeded random q, k, v.

    >>> ex = explore_masks("a b c\\nd", MaskSpec(causal=True))
    >>> ex.mask.shape, ex.labels[1]
    (torch.Size([2, 3, 3]), ['d', '[PAD]', '[PAD]'])
    """
    batch = parse_batch(text, packed=spec.packed)
    _check_positive(Term("masks_heads"), n_heads, MAX_HEADS)
    device = resolve_device(device)
    B, T = len(batch.tokens), max(batch.lengths)
    for name, value in (("masks_window", spec.window), ("masks_prefix", spec.prefix_len)):
        if value is not None and not 1 <= value <= T:
            raise InputError("masks_err_beyond_longest", name=Term(name), value=value, length=T)
    with timed(device) as watch:
        lengths = batch.lengths if spec.padding else [T] * B
        pad_rows = [[PAD] * (T - len(row)) for row in batch.tokens]
        if spec.padding_side == "left":
            labels = [pad + row for pad, row in zip(pad_rows, batch.tokens)]
            docs = [[-1] * len(pad) + d for pad, d in zip(pad_rows, batch.docs)]
        else:
            labels = [row + pad for pad, row in zip(pad_rows, batch.tokens)]
            docs = [d + [-1] * len(pad) for pad, d in zip(pad_rows, batch.docs)]
        doc_ids = torch.tensor(docs, device=device) if spec.packed else None   # (B, T)
        mask, parts = compose_masks(lengths, T, causal=spec.causal, window=spec.window,
                                    prefix_len=spec.prefix_len, doc_ids=doc_ids,
                                    padding_side=spec.padding_side, device=device)
        if not spec.padding:
            parts.pop("padding")
        g = generator(seed, device)
        q, k, v = torch.randn(3, B, n_heads, T, head_dim, generator=g, device=device)  # (B, H, T, hd)
        m = mask[:, None]                                                  # (B, 1, T, T)
        _, weights = masked_attention(q, k, v, m)                          # (B, H, T, T)
        scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
        naive = naive_masked_softmax(scores, m)
        result = MaskExploration(labels, mask, parts, additive_mask(mask), weights, naive,
                                 ~mask.any(dim=-1))
    result.timing = watch.timing
    return result
