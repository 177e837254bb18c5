"""The next token: the next-character distribution through the sampler that generation uses
(:func:`models.generation.filter_logits`), and the logit lens (nostalgebraist 2020):
:meth:`~models.transformer.Transformer.readout` of the residual stream after every layer."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from models.attention_explore.trained import encode_prompt, probed_forward, trained_model
from models.checks import whole
from models.device import Timing, timed
from models.generation import Filtered, check_sampling, filter_logits, generate
from models.limits import ATTN_MAX_CONTINUE, SEED


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
    n_more = whole("attn_next_continue", continue_chars, 0, min(ATTN_MAX_CONTINUE, cfg.max_seq_len - len(ids)))
    seed = SEED.whole("seed", seed)
    dev = model.head.weight.device
    with timed(dev) as watch:
        logits, probe = probed_forward(model, ids, probs=False)                    # (T, V)
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
