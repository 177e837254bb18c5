"""Attention step by step: one layer and head in the order of the code in the notes,
``x → norm → W_qkv → split → view → transpose → RoPE → q @ kᵀ → / √d → mask → softmax → @ v →
transpose → contiguous → view → W_o``, recording at every stage the tensor's shape, stride, contiguity
and storage as torch reports them. ``view`` right after the transpose raises, and the message is kept.
The result equals the model's own attention output (``Probe.attn_out``). MLA runs in the absorbed form
the model uses (DeepSeek-V2 §2.1.2), checked against the naive form."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from models.attention_explore.trained import encode_prompt, kv_heads, probed_forward, trained_model
from models.checks import whole
from models.device import Timing, timed
from models.limits import ATTN_MAX_PROMPT
from models.transformer.positions import rope_rotate


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
        _, probe = probed_forward(model, ids, probs=False)
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
    steps.add("x", "x", {"x": (x, None)}, x[0, i])
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
    steps.add("x", "x", {"x": (x, None)}, x[0, i])
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
    steps.add("kv_norm", "c = kv_norm(c)", {"c": (cn, ("c", c))}, cn[0, i])
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
