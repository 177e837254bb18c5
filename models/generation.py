"""The KV tab's tiny GPT and generation with a KV cache, on the one transformer.

:class:`GPTConfig` names the tiny GPT's few choices (sizes, MHA/GQA/MQA by ``n_kv_heads``, or MLA with
its latent width); :meth:`GPTConfig.transformer` turns them into the :class:`~models.transformer.TransformerConfig`
of a Llama-shaped decoder (pre-norm RMSNorm, rotary positions, SwiGLU FFN, no biases, GPT-2's init).
:class:`TinyGPT` is that :class:`~models.transformer.Transformer` whose ``forward(ids)`` without a cache
creates one, fills it and returns it (the contract of the KV tab; the transformer itself keeps none
unless given one). Attention variants and MLA's absorbed form: :mod:`models.transformer.attention`.

Generation (:func:`generate_steps`): prefill runs the prompt once and fills the cache; each decode
step feeds one token (through :class:`~models.transformer.decode.DecodeStep`, the same weights in
fewer ops, where the configuration allows). ``use_cache=False`` recomputes the whole sequence every step, for
comparison. Each next token is drawn by :func:`sample_next` from the distribution that
:func:`filter_logits` leaves after temperature, top-k and top-p (the Attention tab draws the same
filters). Not handled: batched generation of unequal lengths, beam search, repetition penalties,
min-p and typical sampling.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Iterator, Literal

import numpy as np
import torch

from models.checks import InputError, number, whole
from models.device import Timing, device_name, generator, timed
from models.kv_cache import KVCache, kv_cache_bytes, mla_cache_bytes
from models.limits import SAMPLING_MAX_TEMPERATURE as MAX_TEMPERATURE
from models.transformer import Transformer, TransformerConfig
from models.transformer.decode import DecodeStep, supports
from models.transformer.positions import rope_rotate, rope_tables

__all__ = ["GPTConfig", "TinyGPT", "KVCache", "GenerationTrace", "Step", "Pair", "Filtered", "filter_logits",
           "sample_next", "generate", "generate_steps", "side_by_side", "kv_cache_bytes", "mla_cache_bytes",
           "rope_rotate", "rope_tables"]


@dataclass(frozen=True)
class GPTConfig:
    """The shape of a :class:`TinyGPT`; validates itself (through its :class:`TransformerConfig`).

    >>> GPTConfig(vocab_size=96, n_layers=4, d_model=128, n_heads=4, n_kv_heads=2, max_seq_len=256).variant
    'GQA'
    >>> GPTConfig(96, 4, 128, 4, 3, 256)
    Traceback (most recent call last):
    ...
    models.checks.InputError: n_kv_heads = 3 must divide n_heads = 4
    """

    vocab_size: int
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int                        # = n_heads: MHA; 1: MQA; between: GQA (MLA: = n_heads)
    max_seq_len: int                       # the context: positions 0 … max_seq_len − 1
    attention: Literal["mha", "mla"] = "mha"
    kv_latent_dim: int | None = None       # MLA: width of the cached latent c_t
    rope_dim: int | None = None            # MLA: width of the decoupled RoPE key (None: head_dim / 2)
    ffn_dim: int | None = None             # SwiGLU width (None: 8/3 · d_model, rounded up to 32)
    rope_base: float = 10000.0

    def __post_init__(self):                                    # the transformer's config validates every field
        object.__setattr__(self, "_transformer", TransformerConfig(
            vocab_size=self.vocab_size, n_layers=self.n_layers, d_model=self.d_model, n_heads=self.n_heads,
            max_seq_len=self.max_seq_len, n_kv_heads=self.n_kv_heads, attention=self.attention,
            kv_latent_dim=self.kv_latent_dim, rope_dim=self.rope_dim, rope_base=self.rope_base, d_ff=self.ffn_dim,
            positions="rope", norm="rmsnorm", placement="pre", ffn="swiglu", init="normal"))

    def transformer(self) -> TransformerConfig:
        """The one transformer's config of this tiny GPT."""
        return self._transformer

    # what the KV tab reads, from the transformer's config
    head_dim = property(lambda self: self.transformer().head_dim)
    group_size = property(lambda self: self.transformer().group_size)
    rope_width = property(lambda self: self.transformer().rope_width)
    ffn_width = property(lambda self: self.transformer().d_ff)
    variant = property(lambda self: self.transformer().variant)

    def cache_elements_per_token(self) -> int:
        """Numbers cached per token, all layers: 2·L·n_kv·head_dim, or L·(latent + rope) for MLA.

        >>> GPTConfig(96, 4, 128, 4, 1, 256).cache_elements_per_token()
        256
        """
        return self.transformer().cache_elements_per_token()


class TinyGPT(Transformer):
    """The KV tab's decoder: a :class:`Transformer` of a :class:`GPTConfig`. Modules are built on the
    CPU; callers move them. ``forward(ids)`` without a cache creates, fills and returns one.

    >>> cfg = GPTConfig(vocab_size=11, n_layers=2, d_model=16, n_heads=4, n_kv_heads=2, max_seq_len=8)
    >>> logits, cache = TinyGPT(cfg)(torch.tensor([[1, 2, 3]]))
    >>> logits.shape, cache.length, cache.nbytes() == kv_cache_bytes(2, 2, 4, 3, bytes_per_elem=4)
    (torch.Size([1, 3, 11]), 3, True)
    """

    def __init__(self, config: GPTConfig):
        super().__init__(config.transformer())

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None, probe=None, *,
                use_cache: bool = True) -> tuple[torch.Tensor, KVCache | None]:
        """``ids (B, T)`` -> ``logits (B, T, vocab)`` and the cache, now holding ``ids`` too.

        ``use_cache=False`` keeps nothing (training, and decoding without a cache) and returns ``None``.
        """
        if use_cache and cache is None:
            cache = self.new_cache(batch=ids.shape[0])
        return super().forward(ids, cache if use_cache else None, probe)


# --------------------------------------------------------------------------- generation
@dataclass(frozen=True)
class Step:
    """One generated token: what it is, how long the step took, and the cache after it."""

    token: int
    ms: float
    cache_bytes: int
    cache_bytes_per_layer: list[int]
    context: int                            # positions this step attends over: prompt + earlier new tokens


@dataclass
class GenerationTrace:
    """One entry per step; ``step_ms[0]`` is the prefill (the whole prompt at once)."""

    new_tokens: list[int] = field(default_factory=list)
    cache_bytes: list[int] = field(default_factory=list)
    cache_bytes_per_layer: list[list[int]] = field(default_factory=list)
    step_ms: list[float] = field(default_factory=list)
    timing: Timing | None = None


def check_generation(config: TransformerConfig, prompt_len: int, max_new_tokens: int, temperature: float,
                     top_k: int | None = None, top_p: float | None = None) -> None:
    """``InputError`` unless a prompt of ``prompt_len`` and ``max_new_tokens`` fit the model and the
    sampling settings are valid (:func:`check_sampling`)."""
    if prompt_len < 1:
        raise InputError("kv_err_empty_prompt")
    whole("max_new_tokens", max_new_tokens, 1)
    if prompt_len + max_new_tokens > config.max_seq_len:
        raise InputError("kv_err_too_long", prompt=prompt_len, new=max_new_tokens, total=prompt_len + max_new_tokens,
                         context=config.max_seq_len)
    check_sampling(temperature, top_k, top_p, config.vocab_size)


def check_sampling(temperature: float, top_k: int | None, top_p: float | None,
                   vocab_size: int) -> tuple[float, int | None, float | None]:
    """The sampling settings in their types, or ``InputError``: temperature in [0, 10], top-k a whole
    number from 1 to the vocabulary (``None``: off), top-p in (0, 1] (``None``: off).

    >>> check_sampling(0.7, 5.0, 1, 61)
    (0.7, 5, 1.0)
    >>> check_sampling(1.0, None, 0.0, 61)
    Traceback (most recent call last):
    ...
    models.checks.InputError: top-p = 0: must be a number above 0 and at most 1
    """
    return (number("temperature", temperature, 0, MAX_TEMPERATURE),
            None if top_k is None else whole("sample_top_k", top_k, 1, vocab_size),
            None if top_p is None else number("sample_top_p", top_p, 0, 1, above=True))


@dataclass(frozen=True)
class Filtered:
    """The next-token distribution at each filter, on the last dimension (``…, vocab``).

    ``probs``: ``softmax(logits / temperature)`` (one-hot on the argmax at temperature 0);
    ``top_k`` / ``top_p``: True where a token survives that filter (top-p applied after top-k);
    ``final``: ``probs`` restricted to the survivors and renormalised, what :func:`sample_next` draws from.
    """

    probs: torch.Tensor
    top_k: torch.Tensor
    top_p: torch.Tensor
    final: torch.Tensor


def filter_logits(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None) -> Filtered:
    """Temperature, then top-k, then top-p, in the order of Hugging Face's ``generate`` warpers.

    - **temperature** T divides the logits (T = 0: greedy, all mass on the largest logit; ties go to the
      first, as ``argmax``).
    - **top-k** keeps the tokens whose logit is at least the k-th largest (ties at the k-th all stay,
      as Hugging Face's ``TopKLogitsWarper``); ``None`` keeps all.
    - **top-p** (nucleus, Holtzman et al. 2020) keeps, of the top-k survivors renormalised, the smallest
      set of most likely tokens whose mass reaches p: sorted by probability, a token stays while the
      mass before it is below p (so the most likely token always stays); ``None`` or 1 keeps all.

    >>> f = filter_logits(torch.tensor([0.5, 0.3, 0.15, 0.05]).log(), top_p=0.8)
    >>> f.top_p.tolist(), [round(p, 3) for p in f.final.tolist()]     # 0.5 + 0.3 reaches 0.8
    ([True, True, False, False], [0.625, 0.375, 0.0, 0.0])
    >>> filter_logits(torch.tensor([1.0, 3.0, 3.0, 0.0]), top_k=1).top_k.tolist()   # a tie at the k-th stays
    [False, True, True, False]
    """
    logits = logits.float()
    if temperature == 0:
        probs = torch.zeros_like(logits).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    else:
        probs = torch.softmax(logits / temperature, -1)                               # (…, V)
    keep_k = torch.ones_like(probs, dtype=torch.bool)
    if top_k is not None and top_k < logits.shape[-1]:
        kth = probs.topk(top_k, -1).values[..., -1:]                                  # (…, 1): the k-th largest
        keep_k = probs >= kth
    kept = torch.where(keep_k, probs, 0.0)
    kept = kept / kept.sum(-1, keepdim=True)                                          # renormalised over top-k
    keep_p = keep_k.clone()
    if top_p is not None and top_p < 1:
        sorted_p, order = kept.sort(-1, descending=True)                             # (…, V)
        before = sorted_p.cumsum(-1) - sorted_p                                       # mass of the tokens above
        keep_p = torch.zeros_like(keep_k).scatter_(-1, order, before < top_p) & keep_k
    final = torch.where(keep_p, kept, 0.0)
    return Filtered(probs, keep_k, keep_p, final / final.sum(-1, keepdim=True))


def sample_next(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None, draw: torch.Generator | None = None) -> torch.Tensor:
    """One token per row of ``logits (B, vocab)`` -> ``(B, 1)``, from :func:`filter_logits`'s ``final``.

    Greedy (``argmax``, no random number drawn) when ``temperature == 0`` or ``top_k == 1``; otherwise
    ``torch.multinomial`` with the generator ``draw``. Without top-k and top-p this is exactly a sample
    from ``softmax(logits / temperature)``.

    >>> sample_next(torch.tensor([[0.0, 5.0, 1.0]]), temperature=0.0).tolist()
    [[1]]
    """
    if temperature == 0 or top_k == 1:
        return logits.argmax(-1, keepdim=True)                                        # (B, 1)
    return torch.multinomial(filter_logits(logits, temperature, top_k, top_p).final, 1, generator=draw)


@torch.inference_mode()                  # no autograd bookkeeping: ~10 % of a small model's decode step on a CPU
def generate_steps(model: Transformer, prompt_ids: list[int], max_new_tokens: int, *, use_cache: bool = True,
                   temperature: float = 0.0, top_k: int | None = None, top_p: float | None = None,
                   seed: int = 0, cuda_graph: bool = True) -> Iterator[tuple[Step, KVCache | None]]:
    """Generate token by token, yielding each :class:`Step` and the live cache (``None`` uncached).

    With the cache: step 0 is the prefill (the prompt at once, filling the cache), every later
    step feeds only the newest token. Without: every step runs the whole sequence again.
    The cache is preallocated for exactly ``len(prompt) + max_new_tokens − 1`` positions (the last
    token is returned, never fed back). Each token is drawn by :func:`sample_next`. On CUDA the cached
    decode step is recorded once as a CUDA graph, before step 1 and outside its time (a set-up, like the
    step's weight copies), and replayed (:class:`DecodeStep`); ``cuda_graph=False`` launches its kernels
    one by one, for comparison.
    """
    cfg = model.config
    check_generation(cfg, len(prompt_ids), max_new_tokens, temperature, top_k, top_p)
    if min(prompt_ids) < 0 or max(prompt_ids) >= cfg.vocab_size:
        raise InputError("kv_err_token_ids", high=cfg.vocab_size - 1)
    device = model.head.weight.device
    draw = generator(seed, device) if temperature > 0 else None
    seq = torch.tensor([prompt_ids], device=device)                         # (1, P)
    cache = model.new_cache(capacity=len(prompt_ids) + max_new_tokens - 1) if use_cache else None
    fast = (DecodeStep(model, cache, static=None if cuda_graph else False)
            if use_cache and supports(model, cache, seq[:, :1]) else None)
    feed = seq
    for step in range(max_new_tokens):
        if fast is not None and step == 1:
            fast.record()                            # CUDA: the graph recorded outside the first step's time
        with timed(device) as watch:
            if fast is not None and step > 0:
                logits = fast(feed)                                         # (1, 1, vocab): the same numbers
            else:
                logits, _ = Transformer.forward(model, feed, cache)         # (1, T, vocab); no cache: none kept
            token = sample_next(logits[:, -1], temperature, top_k, top_p, draw)   # (1, 1)
            if use_cache:
                feed = token
            else:
                feed = seq = torch.cat([seq, token], 1)                     # (1, P + step + 1)
            token_id = int(token)
        per_layer = cache.nbytes_per_layer() if cache is not None else [0] * cfg.n_layers
        yield (Step(token_id, watch.timing.ms, sum(per_layer), per_layer, len(prompt_ids) + step), cache)


def generate(model: Transformer, prompt_ids: list[int], max_new_tokens: int, *, use_cache: bool = True,
             temperature: float = 0.0, top_k: int | None = None, top_p: float | None = None,
             seed: int = 0, cuda_graph: bool = True) -> GenerationTrace:
    """All of :func:`generate_steps` at once.

    >>> _ = torch.manual_seed(0); model = TinyGPT(GPTConfig(11, 2, 16, 4, 1, 16))
    >>> cached = generate(model, [1, 2, 3], 5)
    >>> cached.new_tokens == generate(model, [1, 2, 3], 5, use_cache=False).new_tokens
    True
    >>> cached.cache_bytes == [kv_cache_bytes(2, 1, 4, t, bytes_per_elem=4) for t in range(3, 8)]
    True
    """
    trace = GenerationTrace()
    device = model.head.weight.device
    with timed(device) as watch:
        for step, _ in generate_steps(model, prompt_ids, max_new_tokens, use_cache=use_cache,
                                      temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                                      cuda_graph=cuda_graph):
            trace.new_tokens.append(step.token)
            trace.cache_bytes.append(step.cache_bytes)
            trace.cache_bytes_per_layer.append(step.cache_bytes_per_layer)
            trace.step_ms.append(step.ms)
    trace.timing = Timing(device_name(device), watch.timing.ms)
    return trace


@dataclass(frozen=True)
class Pair:
    """Step ``step`` of the cached and of the uncached decode, run in lockstep."""

    step: int
    cached: Step
    uncached: Step
    picture: np.ndarray | None                  # (L, rows, length) float32: RMS of each cached vector, when due


def side_by_side(model: Transformer, prompt_ids: list[int], max_new_tokens: int, *, temperature: float = 0.0,
                 top_k: int | None = None, top_p: float | None = None, seed: int = 0,
                 picture_interval_s: float = 0.2) -> Iterator[Pair]:
    """Decode with and without the cache, one step of each in turn (same machine load for both).

    Each decode follows its own tokens, so equal tokens are a real check that the cache changes
    nothing. The cache picture (:meth:`KVCache.rms_map`, on the CPU) rides along on the first and
    last steps and whenever ``picture_interval_s`` seconds of decoding have passed since the
    consumer finished with the previous one (drawing it does not eat into the decoding time).
    """
    sampling = dict(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    cached = generate_steps(model, prompt_ids, max_new_tokens, **sampling)
    uncached = generate_steps(model, prompt_ids, max_new_tokens, use_cache=False, **sampling)
    last = -math.inf
    for i, ((c, cache), (u, _)) in enumerate(zip(cached, uncached)):
        if i == max_new_tokens - 1 or time.perf_counter() - last >= picture_interval_s:
            yield Pair(i, c, u, cache.rms_map().cpu().numpy())
            last = time.perf_counter()                                      # the consumer is done with it
        else:
            yield Pair(i, c, u, None)
