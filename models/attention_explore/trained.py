"""The four trained checkpoints the Attention tab looks inside (the KV tab's character-level models:
MHA, GQA-2, MQA, MLA), loaded once per device and never changed, their held-out text, and what every
view shares: a prompt's ids, one recorded forward pass, the KV head of each query head, a row's entropy."""
from __future__ import annotations

import functools

import torch

from models.checks import InputError, choice
from models.device import resolve_device
from models.limits import ATTN_MAX_PROMPT, KV_TRAINED_GQA, KV_TRAINED_LATENT, KV_VARIANTS
from models.transformer import Probe, Transformer

VARIANTS = KV_VARIANTS                          # "mha", "gqa", "mqa", "mla": the four trained checkpoints


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
def probed_forward(model: Transformer, ids: list[int] | torch.Tensor, *,
                   probs: bool = True) -> tuple[torch.Tensor, Probe]:
    """Logits ``(T, V)`` of one sequence and the probe that recorded it (every view reads the model
    through this)."""
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
