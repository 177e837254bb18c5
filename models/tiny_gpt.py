"""The tiny GPT of the KV Cache tab: its characters, its committed checkpoints, how it was trained.

One checkpoint per attention variant in ``data/tiny_gpt/`` (MHA, GQA with 2 KV heads, MQA, MLA),
each written by ``scripts/train_tiny_gpt.py`` from ``data/corpus/en.txt``: a character-level model
(4 layers, d_model 128, 4 heads, a 512-token context), the one transformer configured by
:class:`GPTConfig`. A checkpoint is a plain dict that ``torch.load(weights_only=True)`` reads:
``config`` (the :class:`~models.transformer.TransformerConfig` fields), ``vocab`` (the
characters, in id order), ``state_dict`` (fp16 tensors of :class:`~models.transformer.Transformer`),
``val_loss`` (nats per character on the
held-out tail of the corpus, measured on the fp16-rounded weights, so a load can be checked against
it) and ``train`` (the recipe).

A setting without a checkpoint (an MLA latent width nobody trained) is built with seeded random
weights: the cache, its bytes and the timings are real, the text is noise, and the tab says so.

Not handled: other tokenisers (a character model keeps the cache picture one column per character).
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import torch
import torch.nn.functional as F

from models.checks import InputError, choice, whole
from models.device import device_name, on_gpu, resolve_device
from models.generation import GPTConfig, Pair, side_by_side
from models.transformer import Transformer, TransformerConfig
from models.limits import (KV_CONTEXT, KV_D_MODEL, KV_MAX_LATENT, KV_MAX_NEW_TOKENS, KV_N_HEADS, KV_N_LAYERS,
                           KV_TRAINED_GQA, KV_TRAINED_LATENT, KV_VARIANTS)

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT_DIR = ROOT / "data" / "tiny_gpt"
CORPUS = ROOT / "data" / "corpus" / "en.txt"
VAL_FRACTION = 0.1                 # the last 10 % of the corpus is held out
VARIANTS = KV_VARIANTS
DTYPE = torch.float32              # compute and cache, on every device (the checkpoints store fp16)
BYTES_PER_ELEM = torch.finfo(DTYPE).bits // 8


class CharVocab:
    """Characters <-> ids. Text with a character the model never saw is refused, by name.

    >>> v = CharVocab(" abc")
    >>> v.encode("cab a"), v.decode([3, 1, 2])
    ([3, 1, 2, 0, 1], 'cab')
    >>> v.encode("abd")
    Traceback (most recent call last):
    ...
    models.checks.InputError: the model knows 4 characters; these are not among them (character, position): 'd' (2)
    """

    def __init__(self, chars: str):
        if len(set(chars)) != len(chars) or not chars:
            raise InputError("kv_err_vocab")
        self.chars = chars
        self.index = {c: i for i, c in enumerate(chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        unknown = [(i, c) for i, c in enumerate(text) if c not in self.index]
        if unknown:
            listed = ", ".join(f"{c!r} ({i})" for i, c in unknown[:5])
            raise InputError("kv_err_unknown_chars", known=len(self), listed=listed, more=max(0, len(unknown) - 5))
        return [self.index[c] for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)

    @classmethod
    def of_text(cls, text: str) -> "CharVocab":
        return cls("".join(sorted(set(text))))


def tiny_config(variant: str, vocab_size: int, *, n_kv_heads: int | None = None,
                kv_latent_dim: int | None = None) -> GPTConfig:
    """The tiny GPT's config for ``variant`` ("mha", "gqa", "mqa", "mla").

    ``n_kv_heads`` is read for "gqa" only (MHA has ``n_heads``, MQA 1); ``kv_latent_dim`` for "mla".

    >>> tiny_config("gqa", 90, n_kv_heads=2).variant, tiny_config("mqa", 90).n_kv_heads
    ('GQA', 1)
    """
    choice("attention", variant, VARIANTS)
    base = dict(vocab_size=vocab_size, n_layers=KV_N_LAYERS, d_model=KV_D_MODEL, n_heads=KV_N_HEADS,
                max_seq_len=KV_CONTEXT)
    if variant == "mla":
        latent = whole("kv_latent_dim", kv_latent_dim, 1, KV_MAX_LATENT)
        return GPTConfig(**base, n_kv_heads=KV_N_HEADS, attention="mla", kv_latent_dim=latent)
    kv = {"mha": KV_N_HEADS, "mqa": 1, "gqa": n_kv_heads}[variant]
    return GPTConfig(**base, n_kv_heads=whole("n_kv_heads", kv, 1, KV_N_HEADS))


def check_prompt(prompt: str, max_new_tokens: int) -> int:
    """``max_new_tokens`` as an ``int`` if ``prompt`` is text of the model's characters and it and the new
    tokens fit the context (one character = one token), else :class:`~models.checks.InputError`.

    >>> check_prompt("The", 10.0)
    10
    >>> check_prompt("x" * 500, 20)
    Traceback (most recent call last):
    ...
    models.checks.InputError: the prompt (500 tokens) plus 20 new tokens is 520: the model's context is 512 tokens
    """
    if not isinstance(prompt, str):
        raise InputError("kv_err_prompt_not_text")
    if not prompt:
        raise InputError("kv_err_empty_prompt")
    n_new = whole("max_new_tokens", max_new_tokens, 1, KV_MAX_NEW_TOKENS)
    if len(prompt) + n_new > KV_CONTEXT:
        raise InputError("kv_err_too_long", prompt=len(prompt), new=n_new, total=len(prompt) + n_new,
                         context=KV_CONTEXT)
    vocabulary().encode(prompt)                        # a character the model never saw, named
    return n_new


def checkpoint_name(config: GPTConfig) -> str:
    """``mha-kv4``, ``mha-kv2``, ``mha-kv1`` or ``mla-r32``: the file a config's weights live in.

    >>> checkpoint_name(tiny_config("mla", 90, kv_latent_dim=32))
    'mla-r32'
    """
    if config.attention == "mla":
        return f"mla-r{config.kv_latent_dim}"
    return f"mha-kv{config.n_kv_heads}"


def trained_configs(vocab_size: int) -> dict[str, GPTConfig]:
    """The four checkpoints the training script writes, by variant."""
    return {"mha": tiny_config("mha", vocab_size), "gqa": tiny_config("gqa", vocab_size, n_kv_heads=KV_TRAINED_GQA),
            "mqa": tiny_config("mqa", vocab_size), "mla": tiny_config("mla", vocab_size, kv_latent_dim=KV_TRAINED_LATENT)}


def variant_sizes(kv_latent_dim: int = KV_TRAINED_LATENT) -> dict[str, int]:
    """Numbers cached per token (all layers) by each variant of the tiny GPT, by label.

    >>> variant_sizes(32)
    {'MHA': 1024, 'GQA-2': 512, 'MQA': 256, 'MLA r=32': 192}
    """
    shapes = {"MHA": tiny_config("mha", 1), f"GQA-{KV_TRAINED_GQA}": tiny_config("gqa", 1, n_kv_heads=KV_TRAINED_GQA),
              "MQA": tiny_config("mqa", 1), f"MLA r={kv_latent_dim}": tiny_config("mla", 1, kv_latent_dim=kv_latent_dim)}
    return {label: cfg.cache_elements_per_token() for label, cfg in shapes.items()}


def other_variant_bytes(config: GPTConfig, bytes_per_elem: float) -> dict[str, float]:
    """Bytes per token of the variants other than ``config``'s (the lines drawn for scale), by label;
    MLA at ``config``'s latent width (the trained one for the others).

    >>> other_variant_bytes(tiny_config("gqa", 1, n_kv_heads=2), 4)
    {'MHA': 4096, 'MQA': 1024, 'MLA r=32': 768}
    """
    mine = config.cache_elements_per_token()
    sizes = variant_sizes(config.kv_latent_dim or KV_TRAINED_LATENT)
    return {label: n * bytes_per_elem for label, n in sizes.items() if n != mine}


def has_checkpoint(config: GPTConfig, directory: Path = CHECKPOINT_DIR) -> bool:
    """Whether trained weights exist for this shape (the vocabulary size aside)."""
    return (directory / f"{checkpoint_name(config)}.pt").exists()


# --------------------------------------------------------------------------- checkpoints
@dataclass
class Loaded:
    """A model ready to generate, its vocabulary, and whether its weights were trained."""

    model: Transformer
    vocab: CharVocab
    trained: bool
    val_loss: float | None
    name: str


def save_checkpoint(path: Path, model: Transformer, vocab: CharVocab, val_loss: float, train: dict) -> None:
    state = {k: v.detach().to("cpu", torch.float16) for k, v in model.state_dict().items()}
    torch.save({"config": model.config.as_dict(), "vocab": vocab.chars, "state_dict": state,
                "val_loss": float(val_loss), "train": train}, path)


def load_checkpoint(path: Path, device: torch.device | str | None = None) -> Loaded:
    """A committed checkpoint as an fp32 model in eval mode on ``device``."""
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = Transformer(TransformerConfig.from_dict(blob["config"]), device="meta").to_empty(device="cpu")
    model.load_state_dict({k: v.to(DTYPE) for k, v in blob["state_dict"].items()})
    return Loaded(model.to(resolve_device(device)).eval(), CharVocab(blob["vocab"]), True,
                  blob["val_loss"], path.stem)


@functools.cache
def vocabulary(directory: Path = CHECKPOINT_DIR) -> CharVocab:
    """The characters the tiny GPT knows, shared by every checkpoint (read from the MHA one, once per
    process): a prompt is checked against it (:func:`check_prompt`) before anything is planned or generated.

    >>> len(vocabulary()), vocabulary().encode("The")[:1] == vocabulary().encode("T")
    (61, True)
    >>> vocabulary().encode("Room 42")
    Traceback (most recent call last):
    ...
    models.checks.InputError: the model knows 61 characters; these are not among them (character, position): '4' (5), '2' (6)
    """
    blob = torch.load(directory / f"{checkpoint_name(tiny_config('mha', 1))}.pt", map_location="cpu",
                      weights_only=True, mmap=True)
    return CharVocab(blob["vocab"])


def load_tiny_gpt(variant: str, *, n_kv_heads: int | None = None, kv_latent_dim: int | None = None,
                  device: torch.device | str | None = None, seed: int = 0,
                  directory: Path = CHECKPOINT_DIR) -> Loaded:
    """The trained model for a setting, or (no checkpoint for it) the same shape with random weights."""
    vocab = vocabulary(directory)
    config = tiny_config(variant, len(vocab), n_kv_heads=n_kv_heads, kv_latent_dim=kv_latent_dim)
    path = directory / f"{checkpoint_name(config)}.pt"
    if path.exists():
        return load_checkpoint(path, device)
    return Loaded(Transformer.seeded(config.transformer(), seed, device=resolve_device(device)).eval(),
                  vocab, False, None, checkpoint_name(config))


# --------------------------------------------------------------------------- the tab's run
@dataclass(frozen=True)
class RunInfo:
    """What a run of the tab generates with: model, cache layout, sizes."""

    name: str
    config: TransformerConfig
    trained: bool
    val_loss: float | None
    rows: list[tuple[str, int]]          # the cached streams of one layer: (name, numbers per token)
    prompt_len: int
    capacity: int                        # positions preallocated: prompt + new tokens − 1
    bytes_per_elem: int
    device: str


@dataclass(frozen=True)
class Frame:
    """One step of the side-by-side decode, with the text so far."""

    info: RunInfo
    pair: Pair
    text: str                            # the cached decode's new text so far
    identical: bool                      # the uncached decode produced the same tokens so far


@on_gpu(duration=120)
def stream_tiny_gpt(variant: str, prompt: str, max_new_tokens: int, *, n_kv_heads: int | None = None,
                    kv_latent_dim: int | None = None, temperature: float = 0.0, top_k: int | None = None,
                    top_p: float | None = None, seed: int = 0,
                    device: torch.device | str | None = None) -> Iterator[Frame]:
    """Generate from ``prompt`` with the chosen variant, cached and uncached side by side, step by step.

    Everything yielded is plain data (no tensors on the device), so it crosses a ZeroGPU fork.
    """
    from models.generation import check_generation
    from models.kv_cache import cache_rows
    if not isinstance(prompt, str) or not prompt:
        raise InputError("kv_err_empty_prompt")
    loaded = load_tiny_gpt(variant, n_kv_heads=n_kv_heads, kv_latent_dim=kv_latent_dim, device=device)
    config = loaded.model.config
    check_generation(config, len(prompt), max_new_tokens, temperature, top_k, top_p)
    ids = loaded.vocab.encode(prompt)
    info = RunInfo(loaded.name, config, loaded.trained, loaded.val_loss, cache_rows(config),
                   len(ids), len(ids) + max_new_tokens - 1, loaded.model.head.weight.element_size(),
                   device_name(loaded.model.head.weight.device))
    tokens, same = [], True
    for pair in side_by_side(loaded.model, ids, max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                             seed=seed):
        tokens.append(pair.cached.token)
        same = same and pair.cached.token == pair.uncached.token
        yield Frame(info, pair, loaded.vocab.decode(tokens), same)


# --------------------------------------------------------------------------- data and training
def split_corpus(text: str, val_fraction: float = VAL_FRACTION) -> tuple[str, str]:
    """The first ``1 − val_fraction`` of the text for training, the tail held out.

    >>> split_corpus("abcdefghij", 0.2)
    ('abcdefgh', 'ij')
    """
    cut = round(len(text) * (1 - val_fraction))
    return text[:cut], text[cut:]


@torch.no_grad()
def validation_loss(model: Transformer, ids: torch.Tensor, block: int | None = None) -> float:
    """Mean cross-entropy (nats per character) of predicting ``ids[1:]`` in consecutive windows.

    The windows are ``block`` tokens (the context by default) and do not overlap; every token but
    the first is predicted exactly once.
    """
    block = block or model.config.max_seq_len
    device = model.head.weight.device
    total, count = 0.0, 0
    for start in range(0, len(ids) - 1, block):
        window = ids[start:start + block + 1].to(device)                   # (≤ block + 1,)
        logits, _ = Transformer.forward(model, window[None, :-1])           # (1, T, vocab)
        total += F.cross_entropy(logits[0].double(), window[1:], reduction="sum").item()
        count += len(window) - 1
    return total / count


def train_tiny_gpt(config: GPTConfig, train_ids: torch.Tensor, val_ids: torch.Tensor, *, steps: int = 600,
                   batch: int = 8, lr: float = 3e-3, warmup: int = 40, eval_every: int = 50, seed: int = 0,
                   log: Callable[[str], None] = print) -> tuple[Transformer, dict]:
    """AdamW with warm-up and cosine decay on random windows of ``max_seq_len`` characters.

    The weights kept are those of the evaluation with the lowest validation loss (a 100 KB corpus
    is memorised long before the schedule ends). Returns the model and the recipe with its curve.
    """
    model = Transformer.seeded(config.transformer(), seed)
    block = config.max_seq_len
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95))
    draw = torch.Generator().manual_seed(seed)
    best, best_state, curve, start = math.inf, None, [], time.perf_counter()
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            model.eval()
            val = validation_loss(model, val_ids)
            model.train()
            curve.append((step, round(val, 4)))
            if val < best:
                best, best_state = val, {k: v.clone() for k, v in model.state_dict().items()}
            log(f"{checkpoint_name(config)} step {step:4d}  val {val:.4f}  best {best:.4f}  "
                f"{time.perf_counter() - start:6.0f} s")
        if step == steps:
            break
        scale = min(1.0, (step + 1) / warmup) * (0.1 + 0.45 * (1 + math.cos(math.pi * step / steps)))
        for group in opt.param_groups:
            group["lr"] = lr * scale
        starts = torch.randint(0, len(train_ids) - block - 1, (batch,), generator=draw)
        x = torch.stack([train_ids[s:s + block] for s in starts])           # (batch, block)
        y = torch.stack([train_ids[s + 1:s + block + 1] for s in starts])   # (batch, block)
        logits, _ = model(x)                                                # (batch, block, vocab)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.load_state_dict(best_state)
    recipe = dict(steps=steps, batch=batch, block=block, lr=lr, warmup=warmup, seed=seed, best_val=round(best, 4),
                  curve=curve, seconds=round(time.perf_counter() - start))
    return model.eval(), recipe
