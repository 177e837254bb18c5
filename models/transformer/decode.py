"""One decode step of the one transformer, as few PyTorch ops as the arithmetic needs.

A cached decode step of a small model on a CPU is bound by overhead, not arithmetic: one new token
is a handful of vector × matrix products, and each op costs microseconds of dispatch whatever its
size (more once the weights streaming through the caches have evicted PyTorch's own code and data).
The module tree pays for its generality on every step: a Python call per module, a closure per
sublayer, a split and a transpose per tensor, a dtype check per norm, PyTorch's composite RMSNorm
(ten ops on a CPU), the flash-attention kernel's set-up for a single query. :class:`DecodeStep` runs
the *same* model (its norms and embeddings read by reference, its matrices copied once per generation
into the ``(in, out)`` layout a one-row product streams fastest) for the plain Llama-shaped
configuration, about 30 calls per layer (the bench model: 370 ATen ops per token against the
forward's 790; the weights' matmuls are then most of a step):

    x ← embed[token]
    per layer:  h = RMSNorm(x) (x·x by addmm);  [q | k | v] = h W_qkvᵀ (mm)
                q, k ← RoPE (a mul, a fixed permutation for the roll, an addcmul; q's rows carry 1/√d_head)
                cache[pos] ← k, v (two copy_ into views taken once per step for all layers)
                y = softmax(q Kᵀ) V (two bmm; GQA by grouping q's heads, no repeat)
                x ← x + y W_outᵀ (one addmm);  x ← x + FFN(RMSNorm(x)) (its last matmul an addmm)
    logits = head(RMSNorm(x))

On a GPU the same step is launch-bound instead: ~370 kernels of a few microseconds, each waiting for
the CPU to launch it (~1.3 ms a token on an H100, no faster than two CPU cores). There the step is
*static* (``static=True``, the default on CUDA): the position is read from a tensor and attention spans
the whole cache, the slots past the token masked, so every step runs the same kernels on the same
buffers; it is recorded as a CUDA graph before the generation's first decode step
(:meth:`DecodeStep.record`, outside that step's time) and each step replays it (one launch). Recording
is no compilation: 9–11 ms on an H100 (476 ms the first time in a process); where it fails, the step
runs its kernels one by one as on a CPU.

The numbers are the forward pass's to float rounding (tests: the logits of every step against the
plain uncached forward, and the tokens). :func:`supports` says which configurations take this path;
everything else (a probe, MLA, ALiBi, post-norm, qk-norm, a sliding window, MoE, biases, half
precision, a batch) runs :meth:`Transformer.forward <models.transformer.Transformer.forward>`.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from models.checks import InputError
from models.ffn import GATED, PLAIN
from models.transformer.layers import HALF

if TYPE_CHECKING:
    from models.kv_cache import KVCache
    from models.transformer.model import Transformer

# One capture at a time in the process: learners' generations run in threads side by side on CUDA.
_RECORDING = threading.Lock()
# Set once a capture failed after it began: torch's allocator may be left mid-capture, so no more graphs.
_NO_MORE_GRAPHS = threading.Event()


def supports(model: "Transformer", cache: "KVCache | None", ids: torch.Tensor) -> bool:
    """Whether :class:`DecodeStep` computes ``model(ids, cache)``: one token of a batch of one, with a
    cache, for a pre-norm MHA/GQA/MQA model without biases, in float32 or float64."""
    cfg = model.config
    return (cache is not None and tuple(ids.shape) == (1, 1) and cache.buffers[0].shape[1] == 1
            and cfg.attention == "mha" and cfg.positions in ("rope", "none") and cfg.placement == "pre"
            and not cfg.qk_norm and cfg.sliding_window is None and cfg.ffn != "moe"
            and not (cfg.qkv_bias or cfg.out_bias or cfg.ffn_bias)
            and model.head.weight.dtype not in HALF and model.head.bias is None
            and len({block.attn.scale for block in model.blocks}) == 1)        # one scale folded into q


class DecodeStep:
    """``step(ids (1, 1)) -> logits (1, 1, vocab)``, writing the token's keys and values into ``cache``:
    what ``model(ids, cache)`` returns, for a model and cache that :func:`supports` accepts.

    Built once per generation (the matrices copied then, see :func:`_in_out`: a model changed between
    two generations is read afresh by the next one). ``static``: the position-independent step that a
    CUDA graph records (default: on CUDA, where :meth:`record` or the first call records it; on a CPU it
    runs eagerly, for tests).

    >>> from models.transformer import Transformer, TransformerConfig
    >>> model = Transformer.seeded(TransformerConfig(11, 2, 16, 4, 8, n_kv_heads=2))
    >>> ids = torch.tensor([[1, 2, 3, 4]])
    >>> full, _ = model(ids)                                        # no cache: the plain forward
    >>> cache = model.new_cache(capacity=4)
    >>> _ = model(ids[:, :3], cache)                                # the prefill fills 3 positions
    >>> step = DecodeStep(model, cache)
    >>> torch.allclose(step(ids[:, 3:]), full[:, 3:], atol=1e-6), cache.length
    (True, 4)
    """

    def __init__(self, model: "Transformer", cache: "KVCache", *, static: bool | None = None):
        cfg = self.config = model.config
        self.cache = cache
        self.embed, self.head_t = model.embed.weight, _in_out(model.head.weight)
        self.H, self.n_kv, self.hd, self.vd = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim
        self.rms, self.eps = cfg.norm == "rmsnorm", cfg.norm_eps
        self.final_norm = _norm(model.final_norm)
        self.layers = [(_norm(block.attn_norm), _in_out(block.attn.qkv.weight), _in_out(block.attn.out.weight),
                        _norm(block.ffn_norm), _in_out(block.ffn.w_in.weight), _in_out(block.ffn.w_out.weight))
                       for block in model.blocks]                             # (in, out): x @ W by mm
        self.keys, self.values = (b[:, 0] for b in cache.buffers)              # (L, n_kv, capacity, ·)
        self.ffn_kind, self.ffn_hidden = cfg.ffn, cfg.d_ff
        dtype = self.embed.dtype
        # q's rows carry the attention scale 1/√head_dim, k's rows 1: q·k comes out scaled
        self.scale = torch.tensor([model.blocks[0].attn.scale] * self.H + [1.0] * self.n_kv, dtype=dtype,
                                  device=self.embed.device)[:, None]          # (H + n_kv, 1)
        self.rope = None
        if cfg.positions == "rope":
            cos, sin = model._table("rope", cache.capacity, self.embed.device)   # (≥ capacity, hd)
            half = cfg.rope_width // 2
            # rotate_half(x)·sin = roll(x, half)·[−sin₁ | sin₂], and the roll one index_select by a fixed
            # permutation (2 µs for (8, 64) where roll takes 8: it is a narrow and a cat)
            self.rope = cos.to(dtype), torch.cat([-sin[:, :half], sin[:, half:]], -1).to(dtype)
            self.rolled = (torch.arange(self.hd, device=self.embed.device) - half) % self.hd    # (hd,)
        self.static = self.embed.is_cuda if static is None else static
        self.graph = None
        if self.static:
            device = self.embed.device
            self.token = torch.zeros(1, 1, dtype=torch.long, device=device)    # the step's inputs, in place
            self.pos = torch.zeros(1, dtype=torch.long, device=device)
            self.slots = torch.arange(cache.capacity, device=device)           # (capacity,)

    def norm(self, x: torch.Tensor, norm: tuple) -> torch.Tensor:
        """RMSNorm (or LayerNorm) of ``x (1, d)``: ``x · rsqrt(x·x / d + eps) · w``, the mean square in one
        ``addmm`` (PyTorch's CPU ``rms_norm`` is a composite of ten ops, ``pow`` + ``mean`` two more)."""
        weight, bias, eps = norm
        if self.rms:
            return torch.mul(x, torch.addmm(eps, x, x.mT, alpha=1 / x.shape[-1]).rsqrt_()).mul_(weight)
        return F.layer_norm(x, weight.shape[-1:], weight.view(-1), bias, self.eps)

    @torch.inference_mode()                    # a decode step records nothing for autograd, wherever it is called
    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        cache = self.cache
        pos = cache.length                                                     # this token's position
        if pos + 1 > cache.capacity:
            raise InputError("kv_err_cache_full", capacity=cache.capacity, filled=pos, more=1)
        self.record()
        if self.static:
            self.token.copy_(ids)
            self.pos.fill_(pos)
            if self.graph is not None:
                self.graph.replay()                                            # the whole step: one launch
                logits = self.logits.clone()                                   # the next replay overwrites it
            else:
                logits = self._static_step()
        else:
            logits = self._step(ids, pos)
        cache.advance(1)
        return logits

    def record(self) -> None:
        """On CUDA, record the static step now for the cache's next position (else the first call does):
        a generation's set-up, kept out of the time of its first step. Nothing on a CPU, once recorded,
        or with the cache full; a failed recording leaves the step as on a CPU."""
        if not (self.static and self.graph is None and self.embed.is_cuda):
            return
        if _NO_MORE_GRAPHS.is_set():
            self.static = False
        elif self.cache.length < self.cache.capacity:
            self.pos.fill_(self.cache.length)
            self.graph, self.logits = _recorded(self)
            self.static = self.graph is not None

    def _step(self, ids: torch.Tensor, pos: int) -> torch.Tensor:
        """The step at ``pos``: attention reads the cache's first ``pos + 1`` positions."""
        new_k, new_v = self.keys.select(2, pos).unbind(0), self.values.select(2, pos).unbind(0)    # (n_kv, ·)
        past_kt = self.keys.narrow(2, 0, pos + 1).transpose(2, 3).unbind(0)                     # (n_kv, hd, S)
        past_v = self.values.narrow(2, 0, pos + 1).unbind(0)                                    # (n_kv, S, vd)
        rope = None if self.rope is None else (self.rope[0][pos] * self.scale, self.rope[1][pos] * self.scale)

        def store(i: int, k: torch.Tensor, v: torch.Tensor) -> None:
            new_k[i].copy_(k)                                                  # into the cache, in place
            new_v[i].copy_(v)

        return self._layers(F.embedding(ids[0], self.embed), rope, store, past_kt, past_v, None)

    def _static_step(self) -> torch.Tensor:
        """The step at ``self.pos`` (a tensor) for ``self.token``: the same kernels on the same buffers
        whatever the position (attention spans the whole cache, the slots past the token masked), so
        that CUDA can record it once and replay it."""
        pos = self.pos
        rope = None if self.rope is None else (self.rope[0].index_select(0, pos) * self.scale,
                                               self.rope[1].index_select(0, pos) * self.scale)
        keys, values = self.keys.unbind(0), self.values.unbind(0)             # (n_kv, capacity, ·) each

        def store(i: int, k: torch.Tensor, v: torch.Tensor) -> None:
            keys[i].index_copy_(1, pos, k[:, None])
            values[i].index_copy_(1, pos, v[:, None])

        later = self.slots > pos                                               # (capacity,): not yet written
        return self._layers(F.embedding(self.token[0], self.embed), rope, store,
                            self.keys.transpose(2, 3).unbind(0), values, later)

    def _layers(self, x, rope, store, past_kt, past_v, later) -> torch.Tensor:
        """Every layer and the head for the new token ``x (1, d)``: ``rope`` the (cos, sin) rows of its
        position (q's scaled), ``store(i, k, v)`` writes layer i's new key and value into the cache,
        ``past_kt[i] (n_kv, hd, S)`` and ``past_v[i] (n_kv, S, vd)`` are what layer i attends to, and
        ``later (S,)``, if given, masks the slots past the token."""
        H, n_kv, hd = self.H, self.n_kv, self.hd
        group, width = H // n_kv, H * self.vd
        for i, (attn_norm, w_qkv_t, w_out_t, ffn_norm, w_in_t, w_out2_t) in enumerate(self.layers):
            qkv = torch.mm(self.norm(x, attn_norm), w_qkv_t)                  # (1, (H + n_kv)·hd + n_kv·vd)
            if self.vd == hd:                                                  # rows of one head: one view
                qk, v = qkv.view(-1, hd).split_with_sizes((H + n_kv, n_kv))    # (H + n_kv, hd), (n_kv, hd)
            else:
                qk, v = qkv[0].split_with_sizes(((H + n_kv) * hd, n_kv * self.vd))
                qk, v = qk.view(H + n_kv, hd), v.view(n_kv, self.vd)
            if rope is not None:                                               # RoPE on q and k at once
                qk = torch.addcmul(qk * rope[0], qk.index_select(1, self.rolled), rope[1])   # (H + n_kv, hd)
            else:
                qk = qk * self.scale
            q, k = qk.split_with_sizes((H, n_kv))                              # (H, hd), (n_kv, hd)
            store(i, k, v)
            scores = torch.bmm(q.view(n_kv, group, hd), past_kt[i])            # (n_kv, group, S): GQA groups
            if later is not None:
                scores = scores.masked_fill_(later, float("-inf"))
            y = torch.bmm(scores.softmax(-1), past_v[i])                       # (n_kv, group, vd)
            x = torch.addmm(x, y.view(1, width), w_out_t)                      # (1, d): residual + out proj
            u = torch.mm(self.norm(x, ffn_norm), w_in_t)                       # (1, h) or (1, 2h)
            if self.ffn_kind in GATED:
                gate, up = u.split_with_sizes((self.ffn_hidden, self.ffn_hidden), -1)
                u = GATED[self.ffn_kind](gate).mul_(up)                        # act(gate) ⊙ up
            else:
                u = PLAIN[self.ffn_kind](u)
            x = torch.addmm(x, u, w_out2_t)                                    # (1, d): residual + FFN out
        return torch.mm(self.norm(x, self.final_norm), self.head_t)[None]      # (1, 1, vocab)


@torch.inference_mode()
def _recorded(step: DecodeStep) -> tuple["torch.cuda.CUDAGraph | None", torch.Tensor | None]:
    """``step``'s static step at ``step.pos`` recorded as a CUDA graph, and the logits buffer each replay
    fills; ``(None, None)`` (and a warning in the log) where the recording fails.

    Two warm-up steps on a side stream first (cuBLAS's handles and workspaces are made outside the
    capture), then the capture on that stream, in this thread's capture mode, one capture at a time in the
    process; the thread's stream is restored whatever happens. The warm-up writes the slot at ``pos``,
    which the step being taken writes next. Other threads must not synchronise the whole device meanwhile
    (:func:`models.device.wait_for` waits for one stream). A capture that fails once begun turns graphs
    off for the process (torch's allocator may be left mid-capture); a refused start does not.
    """
    device = step.embed.device
    here, side, began = torch.cuda.current_stream(device), torch.cuda.Stream(device), False
    try:
        with _RECORDING:                        # the streams' waits too: the pool may hand two threads one stream
            side.wait_stream(here)                                             # the prefill's cache, first
            try:
                with torch.cuda.stream(side):
                    for _ in range(2):
                        step._static_step()
                    graph = torch.cuda.CUDAGraph()
                    graph.capture_begin(capture_error_mode="thread_local")
                    began = True
                    try:
                        logits = step._static_step()                           # (1, 1, vocab)
                    finally:
                        graph.capture_end()
            finally:
                here.wait_stream(side)                                         # the warm-up's writes, before the step's
        return graph, logits
    except RuntimeError as error:                                              # e.g. capture refused by the driver
        if began:
            _NO_MORE_GRAPHS.set()
        logging.getLogger(__name__).warning("decode step not recorded as a CUDA graph%s: %s",
                                            " (no more in this process)" if began else "", error)
        return None, None


def _in_out(weight: torch.Tensor) -> torch.Tensor:
    """``nn.Linear``'s ``(out, in)`` weight as a contiguous ``(in, out)`` copy for ``x @ W``: a one-row
    product then streams W row by row. One thread, d = 256 (AMD EPYC, MKL): 28 / 46 µs for the
    (256, 768) / (256, 1,408) products against 39 / 64 µs through the transposed view; the copy (the
    bench model: 13 MB, a few ms) is made once per generation, so a weight changed between two
    generations is read afresh."""
    return weight.t().contiguous()


def _norm(module) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """A norm module's weight ``(1, d)``, bias (LayerNorm) and eps as a ``(1, 1)`` tensor (RMSNorm's ``addmm``)."""
    weight = module.weight
    return weight[None], getattr(module, "bias", None), torch.full((1, 1), module.eps, dtype=weight.dtype,
                                                                    device=weight.device)
