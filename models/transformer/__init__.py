"""The one transformer every tab configures: ``TransformerConfig``, ``Transformer``, ``Probe``,
``load_hf`` and ``count_flops``.

- :mod:`.config`: the configuration, every variant a field, validated on creation.
- :mod:`.layers`: LayerNorm and RMSNorm. :mod:`.positions`: RoPE tables, sinusoidal rows, ALiBi.
- :mod:`.attention`: causal self-attention, MHA/GQA/MQA/MLA, fused and explicit paths.
- :mod:`.model`: the block and the model; :mod:`.probe`: what a forward pass recorded. The FFN is :class:`models.ffn.FFN`, the mixture of
  experts :class:`models.moe.MoELayer`, the cache :class:`models.kv_cache.KVCache`.
- :mod:`.hf`: a model from a Hugging Face ``config.json`` and its weights.
- :mod:`.flops`: the matmul FLOPs of a forward (and backward) pass, equal to PyTorch's counter.
"""
from models.transformer.config import TransformerConfig, ffn_width
from models.transformer.flops import count_flops, flop_counter
from models.transformer.hf import config_from_hf, load_hf
from models.transformer.model import Block, Transformer, deepnorm_constants
from models.transformer.probe import Probe

__all__ = ["TransformerConfig", "Transformer", "Block", "Probe", "load_hf", "config_from_hf", "count_flops",
           "flop_counter", "ffn_width", "deepnorm_constants"]
