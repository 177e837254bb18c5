"""Attention inside a trained model: the heads, step by step, why √d, the next token.

What the Attention tab computes beside FlashAttention (:mod:`models.attention`), one section per view, all on the one transformer
(:mod:`models.transformer`) and the KV tab's trained character-level checkpoints (MHA, GQA-2, MQA and
MLA, :func:`models.tiny_gpt.load_tiny_gpt`):

- **The heads** (:func:`look_at_heads`): every layer's attention probabilities on a prompt, recorded by
  a :class:`~models.transformer.Probe`, and the patterns the trained heads learned, *measured*
  (:func:`head_patterns`): the mean weight a head puts on the previous character, on the start of the
  current word, on the last space, on the first character and on itself, against a uniform causal
  head, on held-out text and on the prompt. (Clark et al. 2019, "What does BERT look at?", measure
  BERT's heads the same way; BertViz draws them.)
- **Step by step** (:func:`attention_steps`): one layer and head in the order of the code in the notes,
  ``x → norm → W_qkv → split → view → transpose → RoPE → q @ kᵀ → / √d → mask → softmax → @ v →
  transpose → contiguous → view → W_o``, recording at every stage the tensor's shape, stride,
  contiguity and storage as torch reports them. ``view`` right after the transpose raises, and the
  message is kept. The result equals the model's own attention output (``Probe.attn_out``). MLA
  runs in the absorbed form the model uses (DeepSeek-V2 §2.1.2), checked against the naive form.
- **Why √d** (:func:`entropy_curve`, :func:`scale_effect`): softmax entropy against ``d`` for random
  vectors with and without the ``1/√d``, beside closed forms; and the trained model with its scale
  multiplied: attention sharpens toward one-hot and the held-out loss rises.
- **The next token** (:func:`next_token`): the next-character distribution through the sampler that
  generation uses (:func:`models.generation.filter_logits`) and the logit lens (nostalgebraist 2020):
  :meth:`~models.transformer.Transformer.readout` of the residual stream after every layer.

The models are loaded once per variant and device and never changed: a view that changes the scale
works on a copy. Not handled: batches (one prompt), tokenisers other than the checkpoints' characters.
"""
from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from models.checks import InputError, choice, number, whole
from models.device import Timing, resolve_device, timed
from models.generation import Filtered, check_sampling, filter_logits, generate
from models.limits import (ATTN_BROAD_THRESHOLD, ATTN_ENTROPY_ROWS, ATTN_LOSS_BLOCK, ATTN_LOSS_CHARS, ATTN_MAX_DIM, ATTN_MAX_KEYS,
                           ATTN_MAX_MULTIPLIER, ATTN_MAX_PROMPT, ATTN_MIN_DIM, ATTN_PATTERN_CHARS, ATTN_PATTERN_THRESHOLD,
                           KV_TRAINED_GQA,
                           KV_TRAINED_LATENT, KV_VARIANTS, SEED_MAX)
from models.transformer import Probe, Transformer
from models.transformer.positions import rope_rotate

VARIANTS = KV_VARIANTS                          # "mha", "gqa", "mqa", "mla": the four trained checkpoints


# --------------------------------------------------------------------------- the trained models and the text
@functools.lru_cache(maxsize=2 * len(VARIANTS))
def _load(variant: str, device: str):
    from models.tiny_gpt import load_tiny_gpt
    return load_tiny_gpt(variant, n_kv_heads=KV_TRAINED_GQA, kv_latent_dim=KV_TRAINED_LATENT, device=device)


def trained_model(variant: str, device: torch.device | str | None = None):
    """The KV tab's trained checkpoint of ``variant`` (a :class:`models.tiny_gpt.Loaded`), loaded once
    per device and shared: read it, never change it."""
    choice("attn_view_model", variant, VARIANTS)
    return _load(variant, str(resolve_device(device)))


@functools.cache
def held_out_text() -> str:
    """The tail of ``data/corpus/en.txt`` the checkpoints never trained on (their validation text)."""
    from models.tiny_gpt import CORPUS, split_corpus
    return split_corpus(CORPUS.read_text(encoding="utf-8"))[1]


def encode_prompt(loaded, prompt: str) -> list[int]:
    """The prompt's character ids, or ``InputError``: empty, over the limit, or a character the model
    never saw (named, with its position)."""
    if not isinstance(prompt, str) or not prompt:
        raise InputError("kv_err_empty_prompt")
    if len(prompt) > ATTN_MAX_PROMPT:
        raise InputError("attn_view_err_long", chars=len(prompt), max=ATTN_MAX_PROMPT)
    return loaded.vocab.encode(prompt)


@torch.no_grad()
def _forward(model: Transformer, ids: list[int] | torch.Tensor, *, probs: bool = True) -> tuple[torch.Tensor, Probe]:
    """Logits ``(T, V)`` of one sequence and the probe that recorded it."""
    probe = Probe(want_attn_probs=probs)
    ids = torch.as_tensor(ids, device=model.head.weight.device)
    logits, _ = Transformer.forward(model, ids[None], probe=probe)                 # (1, T, V)
    return logits[0], probe


def kv_heads(config) -> list[int | None]:
    """The KV head each query head reads (``h // group``); ``None`` for MLA, whose heads all read one latent.

    >>> from models.transformer import TransformerConfig
    >>> kv_heads(TransformerConfig(10, 1, 16, 4, 8, n_kv_heads=2))
    [0, 0, 1, 1]
    """
    if config.attention == "mla":
        return [None] * config.n_heads
    return [h // config.group_size for h in range(config.n_heads)]


def row_entropy(probs: torch.Tensor) -> torch.Tensor:
    """The entropy (nats) of each distribution on the last dimension; ``0 · log 0 = 0``.

    >>> row_entropy(torch.tensor([[0.5, 0.5], [1.0, 0.0]])).tolist()
    [0.6931471824645996, 0.0]
    """
    return (-probs * probs.clamp_min(1e-30).log()).sum(-1)


# --------------------------------------------------------------------------- the heads and their patterns
PATTERNS = ("previous", "word_start", "last_space", "first", "self")
PATTERN_THRESHOLD = ATTN_PATTERN_THRESHOLD
BROAD_THRESHOLD = ATTN_BROAD_THRESHOLD


def pattern_targets(text: str) -> dict[str, tuple[list[int], list[int]]]:
    """For each pattern, the queries it is measured on and the key each of them would read.

    - ``previous``: every query but the first reads the character before it.
    - ``word_start``: a query inside a word, at least two characters after the word's first
      character (nearer, the start is the previous character or the query itself), reads that first character.
    - ``last_space``: a query at least two characters after the last whitespace before it reads that
      whitespace.
    - ``first``: every query from position 2 reads position 0 (an "attention sink").
    - ``self``: every query but the first reads itself.

    >>> t = pattern_targets("ab cde")
    >>> t["previous"]
    ([1, 2, 3, 4, 5], [0, 1, 2, 3, 4])
    >>> t["word_start"], t["last_space"]           # "e" reads "c"; "d" and "e" read the space
    (([5], [3]), ([4, 5], [2, 2]))
    """
    n = len(text)
    starts, spaces = [], []
    start, space = 0, -1
    for i, char in enumerate(text):
        spaces.append(space)                           # the last whitespace strictly before i
        if char.isspace():
            space, start = i, i + 1
        starts.append(start)                           # the first character of i's word
    word = [i for i in range(n) if not text[i].isspace() and starts[i] <= i - 2]
    after_space = [i for i in range(n) if spaces[i] >= 0 and spaces[i] <= i - 2]
    return {
        "previous": (list(range(1, n)), list(range(n - 1))),
        "word_start": (word, [starts[i] for i in word]),
        "last_space": (after_space, [spaces[i] for i in after_space]),
        "first": (list(range(2, n)), [0] * max(0, n - 2)),
        "self": (list(range(1, n)), list(range(1, n))),
    }


@dataclass(frozen=True)
class HeadPatterns:
    """How much each head attends where each pattern points, measured on ``chars`` characters of text.

    ``share[l, h, p]``: the mean weight head ``h`` of layer ``l`` puts on pattern ``p``'s key (NaN when the
    text has no query for it); ``chance[p]``: the same for a uniform causal head (query ``i`` gives every
    key ``1/(i+1)``); ``queries[p]``: how many queries were averaged. ``entropy[l, h]``: the mean entropy
    of the head's rows (nats), ``uniform_entropy`` a uniform causal head's.
    """

    share: torch.Tensor                 # (L, H, P)
    chance: list[float]                 # (P,)
    queries: list[int]                  # (P,)
    entropy: torch.Tensor               # (L, H)
    uniform_entropy: float
    chars: int

    def found(self, threshold: float = PATTERN_THRESHOLD,
              broad: float = BROAD_THRESHOLD) -> list[tuple[str, int, int, float]]:
        """``(pattern, layer, head, value)`` for every head that shows a pattern, 1-based, strongest first:
        ``share ≥ threshold``, or (pattern ``"broad"``, value = entropy / uniform entropy) ``≥ broad``."""
        hits = [(PATTERNS[p], l + 1, h + 1, float(self.share[l, h, p]))
                for l, h, p in (self.share >= threshold).nonzero().tolist()]
        ratio = self.entropy / self.uniform_entropy
        hits += [("broad", l + 1, h + 1, float(ratio[l, h])) for l, h in (ratio >= broad).nonzero().tolist()]
        return sorted(hits, key=lambda hit: (PATTERNS + ("broad",)).index(hit[0]) * 10 - hit[3])


def head_patterns(probs: torch.Tensor, text: str) -> HeadPatterns:
    """Measure :data:`PATTERNS` on attention probabilities ``(L, H, T, T)`` of ``text`` (``T = len(text)``).

    >>> T = 4                                            # a head that always reads the previous character
    >>> prev = torch.zeros(1, 1, T, T); prev[0, 0, 0, 0] = 1; prev[0, 0, torch.arange(1, T), torch.arange(T - 1)] = 1
    >>> m = head_patterns(prev, "ab c")
    >>> float(m.share[0, 0, PATTERNS.index("previous")]), m.found()[0][:3]
    (1.0, ('previous', 1, 1))
    """
    L, H, T, _ = probs.shape
    if T != len(text):
        raise ValueError(f"{T} attention rows for a text of {len(text)} characters")
    shares, chance, counts = [], [], []
    for pattern in PATTERNS:
        queries, keys = pattern_targets(text)[pattern]
        counts.append(len(queries))
        if not queries:
            shares.append(torch.full((L, H), math.nan))
            chance.append(math.nan)
            continue
        shares.append(probs[:, :, queries, keys].float().mean(-1).cpu())          # (L, H)
        chance.append(sum(1 / (i + 1) for i in queries) / len(queries))
    positions = torch.arange(1, T + 1, dtype=torch.float64)
    return HeadPatterns(torch.stack(shares, -1), chance, counts, row_entropy(probs.float()).mean(-1).cpu(),
                        float(positions.log().mean()), T)


@dataclass(frozen=True)
class HeadsView:
    """Every head of a trained model on a prompt, and the patterns they show."""

    name: str                           # the checkpoint
    variant: str                        # MHA, GQA, MQA, MLA
    labels: list[str]                   # the prompt's characters
    probs: torch.Tensor                 # (L, H, T, T) on the CPU
    kv_heads: list[int | None]          # per query head: the KV head it reads (None: MLA's shared latent)
    prompt: HeadPatterns                # measured on the prompt
    held_out: HeadPatterns              # measured on ATTN_PATTERN_CHARS held-out characters
    timing: Timing


@functools.lru_cache(maxsize=2 * len(VARIANTS))
def _held_out_patterns(variant: str, device: str) -> HeadPatterns:
    loaded = trained_model(variant, device)
    text = held_out_text()[:ATTN_PATTERN_CHARS]
    _, probe = _forward(loaded.model, loaded.vocab.encode(text))
    return head_patterns(torch.cat(probe.attn_probs), text)                         # (L, H, T, T)


def held_out_patterns(variant: str, device: torch.device | str | None = None) -> HeadPatterns:
    """The head patterns of ``variant`` on the first ``ATTN_PATTERN_CHARS`` held-out characters
    (measured once per variant and device: they do not depend on the prompt)."""
    choice("attn_view_model", variant, VARIANTS)
    return _held_out_patterns(variant, str(resolve_device(device)))


def look_at_heads(variant: str, prompt: str, *, device: torch.device | str | None = None) -> HeadsView:
    """Every layer × head's attention on ``prompt``, and the head patterns measured on it and on held-out text.

    >>> v = look_at_heads("gqa", "the cat")
    >>> tuple(v.probs.shape), v.kv_heads
    ((4, 4, 7, 7), [0, 0, 1, 1])
    """
    loaded = trained_model(variant, device)
    ids = encode_prompt(loaded, prompt)
    device = loaded.model.head.weight.device
    with timed(device) as watch:
        held_out = held_out_patterns(variant, device)
        _, probe = _forward(loaded.model, ids)
        probs = torch.cat(probe.attn_probs).cpu()                                  # (L, H, T, T)
        measured = head_patterns(probs, prompt)
    return HeadsView(loaded.name, loaded.model.config.variant, list(prompt), probs, kv_heads(loaded.model.config),
                     measured, held_out, watch.timing)


# --------------------------------------------------------------------------- attention step by step
@dataclass(frozen=True)
class TensorInfo:
    """A tensor at one stage, as torch reports it: ``.shape``, ``.stride()``, ``.is_contiguous()``,
    ``.storage_offset()``, ``.untyped_storage().data_ptr()``, and whether that storage is the one of
    the tensor it was made from (``source``)."""

    name: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    contiguous: bool
    storage_offset: int
    storage: int
    source: str | None
    shares_storage: bool | None         # None: no source (the stage's input)

    @classmethod
    def of(cls, name: str, tensor: torch.Tensor, source: tuple[str, torch.Tensor] | None) -> "TensorInfo":
        storage = tensor.untyped_storage().data_ptr()
        return cls(name, tuple(tensor.shape), tuple(tensor.stride()), tensor.is_contiguous(),
                   tensor.storage_offset(), storage, source[0] if source else None,
                   storage == source[1].untyped_storage().data_ptr() if source else None)


@dataclass(frozen=True)
class Stage:
    """One line of the code: what it made, and the numbers of the chosen query token.

    ``values``: a small matrix (rows × columns) for the chosen query token, ``rows``: ``"heads"`` (one row
    per head), ``"one"`` (a vector); ``columns``: ``"dims"`` or ``"keys"`` (one column per key position).
    ``error``: torch's message when the line raises (``view`` after a transpose).
    """

    key: str
    code: str                           # the line(s) of code; one line per tensor where each has its own
    tensors: tuple[TensorInfo, ...]
    values: torch.Tensor | None = None
    rows: str = "one"
    columns: str = "dims"
    error: str | None = None


@dataclass(frozen=True)
class StepTrace:
    """Attention of one layer, stage by stage, for one head and query token, checked against the model."""

    name: str
    variant: str
    labels: list[str]
    layer: int                          # 1-based, as shown
    head: int
    query: int
    kv_head: int | None
    head_dim: int                       # d of q·k (MLA: head_dim + rope_dim)
    stages: list[Stage]
    out: torch.Tensor                   # (1, T, C): the last stage
    model_out: torch.Tensor             # (1, T, C): the model's own attention output (Probe.attn_out)
    out_diff: float                     # max |out − model_out|
    sdpa_diff: float                    # max |softmax(q kᵀ/√d) v − F.scaled_dot_product_attention(q, k, v)|
    naive_diff: float | None            # MLA: max |absorbed scores − scores of materialised keys|
    tensors: dict[str, torch.Tensor]    # q, k, v as attended (KV heads repeated), probs, y (B, H, T, ·)
    timing: Timing


class _Stages:
    """Collects :class:`Stage` records for one query token ``i`` and head ``h``."""

    def __init__(self, query: int, head: int):
        self.i, self.h, self.stages = query, head, []

    def add(self, key: str, code: str, tensors: dict[str, tuple[torch.Tensor, tuple[str, torch.Tensor] | None]],
            values: torch.Tensor | None = None, rows: str = "one", columns: str = "dims") -> None:
        infos = tuple(TensorInfo.of(name, t, src) for name, (t, src) in tensors.items())
        shown = None if values is None else values.detach().float().cpu().reshape(-1, values.shape[-1])
        self.stages.append(Stage(key, code, infos, shown, rows, columns))

    def fails(self, key: str, code: str, line) -> None:
        """Run ``line``; record torch's message if it raises (and the result's layout if it does not)."""
        try:
            result = line()
        except RuntimeError as exc:
            self.stages.append(Stage(key, code, (), error=str(exc).split("\n")[0]))
        else:
            self.stages.append(Stage(key, code, (TensorInfo.of("y", result, None),)))


@torch.no_grad()
def attention_steps(variant: str, prompt: str, layer: int = 1, head: int = 1, query: int | None = None, *,
                    device: torch.device | str | None = None) -> StepTrace:
    """Layer ``layer``'s attention on ``prompt``, line by line, for ``head`` and query position ``query``
    (1-based; ``None`` or past the prompt's end: its last character).

    >>> t = attention_steps("mha", "the cat", layer=2, head=3)
    >>> [s.key for s in t.stages][:6], t.out_diff < 1e-6
    (['x', 'norm', 'qkv', 'split', 'view', 'transpose'], True)
    >>> next(s for s in t.stages if s.key == "view_fails").error[:40]
    'view size is not compatible with input t'
    """
    loaded = trained_model(variant, device)
    ids = encode_prompt(loaded, prompt)
    model, cfg = loaded.model, loaded.model.config
    l = whole("attn_view_layer", layer, 1, cfg.n_layers) - 1
    h = whole("attn_view_head", head, 1, cfg.n_heads) - 1
    i = len(ids) if query is None else min(whole("attn_view_query", query, 1, ATTN_MAX_PROMPT), len(ids))
    i -= 1                                                                           # a query past the end: the last
    dev = model.head.weight.device
    with timed(dev) as watch:
        _, probe = _forward(model, ids, probs=False)
        x = probe.residual[l]                                                        # (1, T, C): the block's input
        steps = _Stages(i, h)
        run = _mla_steps if cfg.attention == "mla" else _mha_steps
        out, tensors, sdpa_diff, naive_diff = run(model.blocks[l], model.rope(0, len(ids), dev), x, steps)
        model_out = probe.attn_out[l]
        out_diff = float((out - model_out).abs().max())
    return StepTrace(loaded.name, cfg.variant, list(prompt), l + 1, h + 1, i + 1, kv_heads(cfg)[h], cfg.qk_dim,
                     steps.stages, out.cpu(), model_out.cpu(), out_diff, sdpa_diff, naive_diff,
                     {k: v.cpu() for k, v in tensors.items()}, watch.timing)


def _attend_steps(steps: _Stages, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, d: int,
                  names: tuple[str, str, str]) -> tuple[torch.Tensor, torch.Tensor]:
    """``q @ kᵀ → / √d → causal mask → softmax → @ v`` on ``(B, H, T, ·)``, recorded. Returns probs, y."""
    i, h = steps.i, steps.h
    T = q.shape[-2]
    qn, kn, vn = names
    scores = q @ k.transpose(-2, -1)                                                 # (B, H, T, T)
    steps.add("scores", f"scores = {qn} @ {kn}.transpose(-2, -1)", {"scores": (scores, None)},
              scores[0, h, i], columns="keys")
    scaled = scores * (1 / math.sqrt(d))                                             # (B, H, T, T): the model's scale
    steps.add("scale", f"scores = scores * (1 / math.sqrt({d}))", {"scores": (scaled, ("scores", scores))},
              scaled[0, h, i], columns="keys")
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()                # (T, T): True = may attend
    masked = scaled.masked_fill(~mask, float("-inf"))                                # (B, H, T, T)
    steps.add("mask", "scores = scores.masked_fill(~causal, float('-inf'))", {"scores": (masked, ("scores", scaled))},
              masked[0, h, i], columns="keys")
    probs = masked.softmax(-1)                                                       # (B, H, T, T)
    steps.add("softmax", "probs = scores.softmax(-1)", {"probs": (probs, ("scores", masked))},
              probs[0, h, i], columns="keys")
    y = probs @ v                                                                    # (B, H, T, dv)
    steps.add("weighted", f"y = probs @ {vn}", {"y": (y, None)}, y[0, :, i], rows="heads")
    return probs, y


def _merge_steps(steps: _Stages, y: torch.Tensor, w_o: torch.nn.Linear) -> torch.Tensor:
    """``y (B, H, T, dv) → transpose(1, 2) → view`` (raises) ``→ contiguous() → view(B, T, C) → W_o``, recorded."""
    B, H, T, dv = y.shape
    i = steps.i
    yt = y.transpose(1, 2)                                                           # (B, T, H, dv): a view
    steps.add("transpose_back", "y = y.transpose(1, 2)", {"y": (yt, ("y", y))}, yt[0, i], rows="heads")
    steps.fails("view_fails", f"y.view({B}, {T}, {H * dv})", lambda: yt.view(B, T, H * dv))
    yc = yt.contiguous()                                                             # (B, T, H, dv): a copy
    steps.add("contiguous", "y = y.contiguous()", {"y": (yc, ("y", yt))}, yc[0, i], rows="heads")
    merged = yc.view(B, T, H * dv)                                                   # (B, T, C)
    steps.add("merge", f"y = y.view({B}, {T}, {H * dv})", {"y": (merged, ("y", yc))}, merged[0, i])
    out = w_o(merged)                                                                # (B, T, C)
    steps.add("out", "out = W_o(y)", {"out": (out, None)}, out[0, i])
    return out


def _mha_steps(block, rope, x: torch.Tensor, steps: _Stages):
    """MHA / GQA / MQA: the seeds' code, with the KV heads repeated for their query-head groups."""
    attn, cfg = block.attn, block.attn.cfg
    B, T, C = x.shape
    H, n_kv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    i = steps.i
    steps.add("x", "x  # the residual stream into the block", {"x": (x, None)}, x[0, i])
    hx = block.attn_norm(x)                                                          # (B, T, C)
    steps.add("norm", "h = norm(x)", {"h": (hx, ("x", x))}, hx[0, i])
    qkv = attn.qkv(hx)                                                               # (B, T, (H + 2·n_kv)·d)
    steps.add("qkv", "qkv = W_qkv(h)", {"qkv": (qkv, ("h", hx))}, qkv[0, i])
    q, k, v = qkv.split(attn.split, -1)                                              # (B, T, H·d), (B, T, n_kv·d) ×2
    steps.add("split", f"q, k, v = qkv.split({attn.split}, -1)",
              {"q": (q, ("qkv", qkv)), "k": (k, ("qkv", qkv)), "v": (v, ("qkv", qkv))}, q[0, i])
    qv, kv, vv = q.view(B, T, H, d), k.view(B, T, n_kv, d), v.view(B, T, n_kv, d)    # (B, T, heads, d)
    steps.add("view", f"q = q.view({B}, {T}, {H}, {d})\nk = k.view({B}, {T}, {n_kv}, {d})\n"
                      f"v = v.view({B}, {T}, {n_kv}, {d})",
              {"q": (qv, ("q", q)), "k": (kv, ("k", k)), "v": (vv, ("v", v))}, qv[0, i], rows="heads")
    qt, kt, vt = qv.transpose(1, 2), kv.transpose(1, 2), vv.transpose(1, 2)          # (B, heads, T, d)
    steps.add("transpose", "q = q.transpose(1, 2)\nk = k.transpose(1, 2)\nv = v.transpose(1, 2)",
              {"q": (qt, ("q", qv)), "k": (kt, ("k", kv)), "v": (vt, ("v", vv))}, qt[0, :, i], rows="heads")
    if rope is not None:
        qr, kr = rope_rotate(qt, *rope), rope_rotate(kt, *rope)                      # (B, heads, T, d): new tensors
        steps.add("rope", "q = rope(q)\nk = rope(k)", {"q": (qr, ("q", qt)), "k": (kr, ("k", kt))},
                  qr[0, :, i], rows="heads")
    else:
        qr, kr = qt, kt
    group = H // n_kv
    ka, va = kr, vt
    if group > 1:
        ka, va = kr.repeat_interleave(group, 1), vt.repeat_interleave(group, 1)     # (B, H, T, d): copies
        steps.add("repeat_kv", f"k = k.repeat_interleave({group}, 1)\nv = v.repeat_interleave({group}, 1)",
                  {"k": (ka, ("k", kr)), "v": (va, ("v", vt))}, ka[0, :, i], rows="heads")
    probs, y = _attend_steps(steps, qr, ka, va, d, ("q", "k", "v"))
    reference = F.scaled_dot_product_attention(qr, kr, vt, is_causal=True, enable_gqa=group > 1)
    out = _merge_steps(steps, y, attn.out)
    return out, {"q": qr, "k": ka, "v": va, "probs": probs, "y": y}, float((y - reference).abs().max()), None


def _mla_steps(block, rope, x: torch.Tensor, steps: _Stages):
    """MLA in the absorbed form the model runs (DeepSeek-V2 eq. 9–19): ``W_UK`` folded into the query,
    attention over the cached latent, ``W_UV`` applied after; the naive scores (keys materialised as
    ``W_UK c``) are computed beside it to show they agree."""
    attn, cfg = block.attn, block.attn.cfg
    B, T, C = x.shape
    H, hd, dr, r, vd = cfg.n_heads, cfg.head_dim, cfg.rope_dim, cfg.kv_latent_dim, cfg.v_head_dim
    i = steps.i
    steps.add("x", "x  # the residual stream into the block", {"x": (x, None)}, x[0, i])
    hx = block.attn_norm(x)                                                          # (B, T, C)
    steps.add("norm", "h = norm(x)", {"h": (hx, ("x", x))}, hx[0, i])
    qkv = attn.qkv(hx)                                                               # (B, T, H·(hd+dr) + r + dr)
    steps.add("qkv", "qkv = W_qkv(h)  # [q | c | k_rope]", {"qkv": (qkv, ("h", hx))}, qkv[0, i])
    q, c, k_rope = qkv.split(attn.split, -1)
    steps.add("split", f"q, c, k_rope = qkv.split({attn.split}, -1)",
              {"q": (q, ("qkv", qkv)), "c": (c, ("qkv", qkv)), "k_rope": (k_rope, ("qkv", qkv))}, q[0, i])
    qv = q.view(B, T, H, hd + dr)                                                    # (B, T, H, hd + dr)
    steps.add("view", f"q = q.view({B}, {T}, {H}, {hd + dr})", {"q": (qv, ("q", q))}, qv[0, i], rows="heads")
    qt = qv.transpose(1, 2)                                                          # (B, H, T, hd + dr)
    steps.add("transpose", "q = q.transpose(1, 2)", {"q": (qt, ("q", qv))}, qt[0, :, i], rows="heads")
    q_nope, q_rope = qt.split([hd, dr], -1)                                          # (B, H, T, hd), (B, H, T, dr)
    steps.add("split_rope", f"q_nope, q_rope = q.split([{hd}, {dr}], -1)",
              {"q_nope": (q_nope, ("q", qt)), "q_rope": (q_rope, ("q", qt))}, q_nope[0, :, i], rows="heads")
    cn = attn.kv_norm(c)                                                             # (B, T, r)
    steps.add("kv_norm", "c = kv_norm(c)  # the cached latent", {"c": (cn, ("c", c))}, cn[0, i])
    q_rot, k_rot = rope_rotate(q_rope, *rope), rope_rotate(k_rope[:, None], *rope)  # (B, H, T, dr), (B, 1, T, dr)
    steps.add("rope", "q_rope = rope(q_rope)\nk_rope = rope(k_rope[:, None])",
              {"q_rope": (q_rot, ("q_rope", q_rope)), "k_rope": (k_rot, ("k_rope", k_rope))}, q_rot[0, :, i],
              rows="heads")
    w_uk, w_uv = attn.kv_up.weight.view(H, hd + vd, r).split([hd, vd], 1)          # (H, hd, r), (H, vd, r)
    q_lat = torch.cat([q_nope @ w_uk, q_rot], -1)                                    # (B, H, T, r + dr)
    keys = torch.cat([cn[:, None], k_rot], -1)                                       # (B, 1, T, r + dr)
    steps.add("absorb", "q = cat([q_nope @ W_UK, q_rope], -1)\nk = cat([c, k_rope], -1)",
              {"q": (q_lat, None), "k": (keys, None)}, q_lat[0, :, i], rows="heads")
    ka, va = keys.repeat_interleave(H, 1), cn[:, None].repeat_interleave(H, 1)       # (B, H, T, ·): one latent, all heads
    probs, y_lat = _attend_steps(steps, q_lat, ka, va, hd + dr, ("q", "k", "c"))
    y = y_lat @ w_uv.transpose(1, 2)                                                 # (B, H, T, vd)
    steps.add("up", "y = y @ W_UV.transpose(1, 2)", {"y": (y, ("y", y_lat))}, y[0, :, i], rows="heads")
    reference = F.scaled_dot_product_attention(q_lat, keys, cn[:, None], is_causal=True, enable_gqa=True,
                                               scale=1 / math.sqrt(hd + dr))
    k_nope = (cn @ attn.kv_up.weight.T).view(B, T, H, hd + vd)[..., :hd].transpose(1, 2)   # (B, H, T, hd): W_UK c
    naive = q_nope @ k_nope.transpose(-2, -1) + q_rot @ k_rot.transpose(-2, -1)            # (B, H, T, T)
    absorbed = q_lat @ keys.transpose(-2, -1)
    out = _merge_steps(steps, y, attn.out)
    return (out, {"q": q_lat, "k": ka, "v": va, "probs": probs, "y": y}, float((y_lat - reference).abs().max()),
            float((naive - absorbed).abs().max()))


# --------------------------------------------------------------------------- why √d
def scaled_entropy(n: int, sigma2: float = 1.0) -> float:
    """The mean entropy (nats) of ``softmax`` over ``n`` logits drawn i.i.d. from N(0, σ²), for σ² ≪ 2 ln n.

    With ``Z = Σ e^{s_j}`` and ``E[e^s] = e^{σ²/2}``: ``H = ln Z − Σ p_j s_j ≈ ln n − σ²/2``, plus the
    second-order terms of the delta method, ``−(e^{σ²} − 1)/(2n) + σ² e^{σ²}/n``. Scaled attention on
    random unit-variance vectors has σ² = |q|²/d ≈ 1 at every d.

    >>> round(scaled_entropy(64), 4), round(math.log(64) - 0.5, 4)
    (3.6879, 3.6589)
    """
    return math.log(n) - sigma2 / 2 - (math.exp(sigma2) - 1) / (2 * n) + sigma2 * math.exp(sigma2) / n


@functools.cache
def top_gap_density(n: int) -> float:
    """The density at 0 of the gap between the two largest of ``n`` standard normals:
    ``n(n−1) ∫ φ(x)² Φ(x)^{n−2} dx`` (a 1-D integral, by the trapezoid rule on [−12, 12]).

    >>> round(top_gap_density(2), 4), round(1 / math.sqrt(math.pi), 4)      # n = 2: |x − y| has density 2·φ(0)/√2
    (0.5642, 0.5642)
    """
    x = torch.linspace(-12, 12, 24_001, dtype=torch.float64)
    phi = torch.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
    return float(n * (n - 1) * torch.trapezoid(phi ** 2 * cdf ** (n - 2), x))


def frozen_entropy(n: int, d: int) -> float:
    """The mean softmax entropy of ``n`` unscaled scores ``q·k_j`` of random N(0, I_d) vectors, for large d.

    Given q the scores are i.i.d. N(0, |q|²); once |q| is large only the top two compete, and a pair
    with gap g has entropy H₂(|q|g); averaging over the gap (density f₀ at 0, :func:`top_gap_density`):
    ``E[H] ≈ f₀ · E[1/|q|] · ∫₀^∞ H₂(x) dx = f₀ · E[1/|q|] · π²/6``, with
    ``E[1/|q|] = Γ((d−1)/2) / (√2 Γ(d/2))`` (|q| is chi-distributed). So it falls like ``1/√d``.

    >>> round(frozen_entropy(64, 1024) / frozen_entropy(64, 256), 2)         # 1/√d: ÷2 for 4× d
    0.5
    """
    inverse_norm = math.exp(math.lgamma((d - 1) / 2) - math.lgamma(d / 2)) / math.sqrt(2)
    return math.pi ** 2 / 6 * top_gap_density(n) * inverse_norm


QUERIES_PER_DRAW = 32              # random queries that share one draw of keys


@dataclass(frozen=True)
class EntropyCurve:
    """Softmax rows over ``n_keys`` random keys, with and without ``1/√d``, for each ``d`` in ``dims``."""

    dims: list[int]
    n_keys: int
    rows: int
    std_unscaled: list[float]           # std of q·k: √d in theory
    std_scaled: list[float]             # std of q·k/√d: 1
    entropy_unscaled: list[float]       # mean row entropy, nats
    entropy_scaled: list[float]
    max_unscaled: list[float]           # mean of the row's largest weight
    max_scaled: list[float]
    closed_scaled: float                # :func:`scaled_entropy` (the same at every d)
    closed_unscaled: list[float]        # :func:`frozen_entropy` (the large-d limit)
    uniform: float                      # ln n: every key equal


def dims_range(low: int = ATTN_MIN_DIM, high: int = ATTN_MAX_DIM) -> list[int]:
    """Powers of two from ``low`` to ``high``.

    >>> dims_range(8, 64)
    [8, 16, 32, 64]
    """
    return [2 ** e for e in range(low.bit_length() - 1, high.bit_length()) if low <= 2 ** e <= high]


def entropy_curve(n_keys: int = 64, *, rows: int = ATTN_ENTROPY_ROWS, seed: int = 0, dims: list[int] | None = None,
                  device: torch.device | str | None = None) -> EntropyCurve:
    """Measure, for each d, ``rows`` softmax rows of random N(0, I_d) queries against ``n_keys`` random keys
    (``QUERIES_PER_DRAW`` queries share a draw of keys), with and without the ``1/√d``. Seeded, so the
    same arguments give the same curve (kept for the next call).

    >>> c = entropy_curve(64, rows=512, dims=[16, 256])
    >>> [round(s / math.sqrt(d), 1) for s, d in zip(c.std_unscaled, c.dims)], abs(c.entropy_scaled[1] - c.closed_scaled) < 0.05
    ([1.0, 1.0], True)
    """
    n = whole("attn_scale_keys", n_keys, 2, ATTN_MAX_KEYS)
    seed = whole("seed", seed, 0, SEED_MAX)
    return _entropy_curve(n, rows, seed, tuple(dims or dims_range()), str(resolve_device(device)))


@functools.lru_cache(maxsize=32)
def _entropy_curve(n: int, rows: int, seed: int, dims: tuple[int, ...], dev: str) -> EntropyCurve:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    per_draw = QUERIES_PER_DRAW
    draws = max(1, rows // per_draw)
    out: dict[str, list[float]] = {k: [] for k in ("su", "ss", "eu", "es", "mu", "ms")}
    for d in dims:
        q = torch.randn(draws, per_draw, d, generator=gen).to(dev)                   # (draws, per_draw, d)
        k = torch.randn(draws, n, d, generator=gen).to(dev)                          # (draws, n, d)
        scores = (q @ k.transpose(-2, -1)).flatten(0, 1)                             # (rows, n)
        scaled = scores / math.sqrt(d)
        for tag, s in (("u", scores), ("s", scaled)):
            p = s.softmax(-1)
            out["s" + tag].append(float(s.std()))
            out["e" + tag].append(float(row_entropy(p).mean()))
            out["m" + tag].append(float(p.amax(-1).mean()))
    return EntropyCurve(list(dims), n, draws * per_draw, out["su"], out["ss"], out["eu"], out["es"], out["mu"], out["ms"],
                        scaled_entropy(n), [frozen_entropy(n, d) for d in dims], math.log(n))


def with_scale(model: Transformer, multiplier: float) -> Transformer:
    """A copy of ``model`` whose attention logits are multiplied by ``multiplier`` (its scale becomes
    ``multiplier / √d``; ``√d`` removes the scale). The model itself is not touched.

    >>> from models.transformer import TransformerConfig
    >>> m = Transformer.seeded(TransformerConfig(10, 1, 16, 4, 8), seed=0)
    >>> with_scale(m, 2.0).blocks[0].attn.scale / m.blocks[0].attn.scale
    2.0
    """
    changed = copy.deepcopy(model)
    for block in changed.blocks:
        block.attn.scale = block.attn.scale * multiplier
    return changed


@torch.no_grad()
def held_out_loss(model: Transformer, ids: torch.Tensor, block: int = ATTN_LOSS_BLOCK) -> float:
    """Mean cross-entropy (nats per character) of predicting ``ids[1:]`` in non-overlapping windows of
    ``block``: what :func:`models.tiny_gpt.validation_loss` computes with the same ``block``, with the
    full windows in one batch."""
    n = len(ids) - 1
    full = n // block
    dev = model.head.weight.device
    total = 0.0
    if full:
        x = ids[:full * block].view(full, block).to(dev)                             # (windows, block)
        y = ids[1:full * block + 1].view(full, block).to(dev)
        logits, _ = Transformer.forward(model, x)                                    # (windows, block, V)
        total += F.cross_entropy(logits.flatten(0, 1).double(), y.flatten(), reduction="sum").item()
    if n > full * block:                                                             # the last, shorter window
        window = ids[full * block:].to(dev)
        logits, _ = Transformer.forward(model, window[None, :-1])
        total += F.cross_entropy(logits[0].double(), window[1:], reduction="sum").item()
    return total / n


@functools.lru_cache(maxsize=8)
def _scaled(variant: str, multiplier: float, device: str) -> Transformer:
    model = trained_model(variant, device).model
    return model if multiplier == 1 else with_scale(model, multiplier)


@functools.lru_cache(maxsize=64)
def _loss_at(variant: str, multiplier: float, chars: int, device: str) -> float:
    """The held-out loss of ``variant`` with its logits multiplied (measured once per setting)."""
    ids = torch.tensor(trained_model(variant, device).vocab.encode(held_out_text()[:chars + 1]))
    return held_out_loss(_scaled(variant, multiplier, device), ids)


@dataclass(frozen=True)
class ScaleEffect:
    """The trained model with its attention logits multiplied by ``multiplier``, against itself at 1."""

    name: str
    variant: str
    labels: list[str]
    multiplier: float
    head_dim: int                       # d of q·k: the trained scale is 1/√head_dim
    layer: int
    head: int
    probs_trained: torch.Tensor         # (T, T) of the chosen layer and head
    probs_changed: torch.Tensor
    entropy_trained: torch.Tensor       # (L, H): mean row entropy on the prompt (nats)
    entropy_changed: torch.Tensor
    max_trained: torch.Tensor           # (L, H): mean largest weight of a row
    max_changed: torch.Tensor
    uniform_entropy: float              # of a uniform causal head on the prompt
    loss_trained: float                 # nats per character on `loss_chars` held-out characters
    loss_changed: float
    loss_chars: int
    held_out_chars: int
    timing: Timing


def scale_effect(variant: str, prompt: str, multiplier: float, layer: int = 1, head: int = 1, *,
                 full_text: bool = False, device: torch.device | str | None = None) -> ScaleEffect:
    """Multiply every attention logit of the trained model by ``multiplier`` (``√d`` = the scale removed):
    the prompt's attention patterns and the held-out loss (``ATTN_LOSS_CHARS`` characters, or all of
    the held-out text with ``full_text``), beside the trained model's."""
    loaded = trained_model(variant, device)
    ids = encode_prompt(loaded, prompt)
    cfg = loaded.model.config
    m = number("attn_scale_multiplier", multiplier, 0, ATTN_MAX_MULTIPLIER)
    l = whole("attn_view_layer", layer, 1, cfg.n_layers) - 1
    h = whole("attn_view_head", head, 1, cfg.n_heads) - 1
    dev = loaded.model.head.weight.device
    chars = len(held_out_text()) - 1 if full_text else ATTN_LOSS_CHARS
    with timed(dev) as watch:
        _, trained = _forward(loaded.model, ids)
        _, changed = _forward(_scaled(variant, m, str(dev)), ids)
        p0, p1 = torch.cat(trained.attn_probs).cpu(), torch.cat(changed.attn_probs).cpu()     # (L, H, T, T)
        loss0 = _loss_at(variant, 1.0, chars, str(dev))
        loss1 = _loss_at(variant, m, chars, str(dev))
    positions = torch.arange(1, len(ids) + 1, dtype=torch.float64)
    return ScaleEffect(loaded.name, cfg.variant, list(prompt), m, cfg.qk_dim, l + 1, h + 1, p0[l, h], p1[l, h],
                       row_entropy(p0).mean(-1), row_entropy(p1).mean(-1), p0.amax(-1).mean(-1), p1.amax(-1).mean(-1),
                       float(positions.log().mean()), loss0, loss1, chars, len(held_out_text()), watch.timing)


# --------------------------------------------------------------------------- the next token and the logit lens
@dataclass(frozen=True)
class NextToken:
    """The next character after a prompt: the sampler's filters, the logit lens, a sampled continuation."""

    name: str
    variant: str
    labels: list[str]                   # the prompt's characters
    vocab: list[str]                    # the model's characters, in id order
    temperature: float
    top_k: int | None
    top_p: float | None
    model_probs: torch.Tensor           # (V,) softmax(logits) at temperature 1
    filtered: Filtered                  # (V,) each: after temperature, top-k, top-p, renormalised
    lens: torch.Tensor                  # (L + 1, T, V): softmax(readout(residual)) after the embedding, each layer
    lens_diff: float                    # max |readout(last residual) − the model's logits|
    continuation: str                   # what generation draws with these settings
    seed: int
    timing: Timing


def next_token(variant: str, prompt: str, temperature: float = 1.0, top_k: int | None = None,
               top_p: float | None = None, *, continue_chars: int = 0, seed: int = 0,
               device: torch.device | str | None = None) -> NextToken:
    """The next-character distribution after ``prompt`` through temperature, top-k and top-p
    (:func:`models.generation.filter_logits`, the sampler generation uses), the logit lens at every
    layer, and ``continue_chars`` characters generated with the same settings.

    >>> t = next_token("mha", "the kettle began to sin", temperature=0.0)
    >>> t.vocab[int(t.filtered.final.argmax())], int((t.filtered.final > 0).sum()), t.lens_diff < 1e-4
    ('g', 1, True)
    """
    loaded = trained_model(variant, device)
    ids = encode_prompt(loaded, prompt)
    model, cfg = loaded.model, loaded.model.config
    temperature, top_k, top_p = check_sampling(temperature, top_k, top_p, cfg.vocab_size)
    n_more = whole("attn_next_continue", continue_chars, 0, cfg.max_seq_len - len(ids))
    seed = whole("seed", seed, 0, SEED_MAX)
    dev = model.head.weight.device
    with timed(dev) as watch:
        logits, probe = _forward(model, ids, probs=False)                          # (T, V)
        filtered = filter_logits(logits[-1], temperature, top_k, top_p)
        with torch.no_grad():
            lens_logits = torch.stack([model.readout(r[0]) for r in probe.residual])  # (L + 1, T, V)
        text = ""
        if n_more:
            trace = generate(model, ids, n_more, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
            text = loaded.vocab.decode(trace.new_tokens)
    return NextToken(loaded.name, cfg.variant, list(prompt), list(loaded.vocab.chars), temperature, top_k, top_p,
                     logits[-1].softmax(-1).cpu(), Filtered(*(t.cpu() for t in (filtered.probs, filtered.top_k,
                                                                               filtered.top_p, filtered.final))),
                     lens_logits.softmax(-1).cpu(), float((lens_logits[-1] - logits).abs().max()), text, seed,
                     watch.timing)
