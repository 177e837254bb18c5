"""Attention inside a trained model: what the Attention tab computes beside FlashAttention
(:mod:`models.attention`), one module per view, all on the one transformer (:mod:`models.transformer`)
and the KV tab's trained character-level checkpoints (MHA, GQA-2, MQA and MLA,
:func:`models.tiny_gpt.load_tiny_gpt`):

- :mod:`~models.attention_explore.trained`: the checkpoints, loaded once per variant and device and never
  changed (a view that changes the scale works on a copy), their held-out text, one recorded forward pass.
- :mod:`~models.attention_explore.heads`: every head on a prompt, and the patterns the trained heads
  learned, measured on the prompt and on held-out text (:func:`look_at_heads`).
- :mod:`~models.attention_explore.steps`: one layer and head line by line, each tensor's shape, stride,
  contiguity and storage as torch reports them (:func:`attention_steps`).
- :mod:`~models.attention_explore.scale`: why √d, in closed form, on random vectors and in the trained
  model (:func:`entropy_curve`, :func:`scale_effect`).
- :mod:`~models.attention_explore.lens`: the next token through the sampler generation uses, and the
  logit lens (:func:`next_token`).

Not handled: batches (one prompt), tokenisers other than the checkpoints' characters.
"""
from models.attention_explore.heads import (BROAD_THRESHOLD, PATTERN_THRESHOLD, PATTERNS, HeadPatterns, HeadsView,
                                            head_patterns, held_out_patterns, look_at_heads, pattern_targets)
from models.attention_explore.lens import NextToken, next_token
from models.attention_explore.scale import (EntropyCurve, ScaleEffect, dims_range, entropy_curve, frozen_entropy,
                                            held_out_loss, scale_effect, scaled_entropy, top_gap_density, with_scale)
from models.attention_explore.steps import Stage, StepTrace, TensorInfo, attention_steps
from models.attention_explore.trained import VARIANTS, encode_prompt, held_out_text, kv_heads, row_entropy, trained_model

__all__ = [
    "BROAD_THRESHOLD", "PATTERN_THRESHOLD", "PATTERNS", "VARIANTS", "EntropyCurve", "HeadPatterns", "HeadsView",
    "NextToken", "ScaleEffect", "Stage", "StepTrace", "TensorInfo", "attention_steps", "dims_range", "encode_prompt",
    "entropy_curve", "frozen_entropy", "head_patterns", "held_out_loss", "held_out_patterns", "held_out_text",
    "kv_heads", "look_at_heads", "next_token", "pattern_targets", "row_entropy", "scale_effect", "scaled_entropy",
    "top_gap_density", "trained_model", "with_scale",
]
