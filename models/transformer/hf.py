"""A :class:`Transformer` from a Hugging Face ``config.json`` and its weights: Llama, Mistral, Qwen2,
GPT-2, Mixtral and OLMoE.

:func:`config_from_hf` reads the config (both the ``rope_theta`` / ``rope_scaling`` keys of
transformers 4 and the ``rope_parameters`` of transformers 5); :func:`load_hf` renames and reshapes
the weights into ours and loads them strictly: a missing, unexpected or mis-shaped tensor is an
error that names it. The logits then equal the Hugging Face model's (``tests/test_transformer_hf.py``
builds small random models of each type with ``transformers`` and compares).

What changes on the way in: Llama-family ``q_proj``, ``k_proj``, ``v_proj`` are concatenated into
our fused ``qkv`` (and ``gate_proj``, ``up_proj`` into the FFN's ``w_in``); GPT-2's ``Conv1D``
weights are stored transposed (``in × out``) and are transposed back; Mixtral's experts come either
fused (transformers 5: ``gate_up_proj [E, 2h, d]``, ``down_proj [E, d, h]``) or one by one
(checkpoints on the Hub: ``w1`` = gate, ``w3`` = up, ``w2`` = down), and are stored stacked and
transposed (``experts.w_in [E, d, 2h]``, ``experts.w_out [E, h, d]``: one grouped matmul each way), as
OLMoE's are; OLMoE normalises all heads' q and all k at once (``qk_norm_scope="all"``) and keeps the
router's top-k probabilities as they are unless ``norm_topk_prob``.
Buffers that some checkpoints carry (GPT-2's causal ``attn.bias``, Llama's ``rotary_emb.inv_freq``)
are not weights and are skipped.

Not handled: other architectures (Gemma's embedding scale and ``(1 + w)`` norms, Phi's partial rotary,
DeepSeek's MLA checkpoints), dynamic or YaRN RoPE scaling, quantised weights.
"""
from __future__ import annotations

import re
from typing import Mapping

import torch

from models.checks import InputError, choice
from models.positions import Llama3Scaling
from models.transformer.config import TransformerConfig
from models.transformer.model import Transformer

MODEL_TYPES = ("llama", "mistral", "qwen2", "gpt2", "mixtral", "olmoe")
SKIPPED = re.compile(r"(\.attn\.(masked_)?bias|rotary_emb\.inv_freq)$")


def _get(config: Mapping, *names, default=None):
    for name in names:
        if config.get(name) is not None:
            return config[name]
    return default


def _rope(config: Mapping) -> dict:
    """RoPE base and scaling from either transformers 4 (``rope_theta``, ``rope_scaling``) or 5 (``rope_parameters``)."""
    params = dict(config.get("rope_parameters") or {})
    scaling = dict(config.get("rope_scaling") or {})
    base = _get(params, "rope_theta") or _get(config, "rope_theta", default=10000.0)
    kind = _get(params, "rope_type", "type") or _get(scaling, "rope_type", "type") or "default"
    source = params if params.get("rope_type", "default") != "default" else scaling
    out = {"rope_base": float(base)}
    choice("rope_type", kind, ("default", "linear", "llama3"))
    if kind == "linear":
        out["rope_scale"] = float(source["factor"])
    elif kind == "llama3":
        out["rope_llama3"] = Llama3Scaling(float(source["factor"]), float(source["low_freq_factor"]),
                                           float(source["high_freq_factor"]),
                                           int(source["original_max_position_embeddings"]))
    return out


def config_from_hf(config: Mapping) -> TransformerConfig:
    """Our config of a Hugging Face ``config.json`` (a dict).

    >>> config_from_hf({"model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096,
    ...                 "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    ...                 "num_key_value_heads": 8, "max_position_embeddings": 32768, "rope_theta": 1e6,
    ...                 "sliding_window": 4096, "rms_norm_eps": 1e-5, "hidden_act": "silu"}).variant
    'GQA'
    """
    if not isinstance(config, Mapping):
        raise InputError("transformer_err_hf_config")
    kind = choice("model_type", config.get("model_type"), MODEL_TYPES)
    if kind == "gpt2":
        act = choice("activation_function", config.get("activation_function", "gelu_new"),
                     ("gelu_new", "gelu_pytorch_tanh", "gelu", "relu"))
        d = config["n_embd"]
        return TransformerConfig(
            vocab_size=config["vocab_size"], n_layers=config["n_layer"], d_model=d, n_heads=config["n_head"],
            max_seq_len=config.get("n_positions", 1024), positions="learned", norm="layernorm",
            norm_eps=config.get("layer_norm_epsilon", 1e-5), ffn={"gelu": "gelu", "relu": "relu"}.get(act, "gelu_tanh"),
            d_ff=config.get("n_inner") or 4 * d, qkv_bias=True, out_bias=True, ffn_bias=True,
            tie_embeddings=config.get("tie_word_embeddings", True))
    choice("hidden_act", config.get("hidden_act", "silu"), ("silu",))
    common = dict(
        vocab_size=config["vocab_size"], n_layers=config["num_hidden_layers"], d_model=config["hidden_size"],
        n_heads=config["num_attention_heads"], n_kv_heads=config.get("num_key_value_heads"),
        head_dim=config.get("head_dim"), max_seq_len=config.get("max_position_embeddings", 4096),
        norm="rmsnorm", norm_eps=config.get("rms_norm_eps", 1e-6), ffn="swiglu", d_ff=config["intermediate_size"],
        tie_embeddings=config.get("tie_word_embeddings", False), **_rope(config))
    if kind in ("llama", "olmoe"):
        common.update(qkv_bias=bool(config.get("attention_bias")), out_bias=bool(config.get("attention_bias")),
                      ffn_bias=bool(config.get("mlp_bias")))
        if kind == "olmoe":
            choice("clip_qkv", config.get("clip_qkv"), (None,))
            common.update(qk_norm=True, qk_norm_scope="all")
    elif kind == "qwen2":
        common.update(qkv_bias=True)
        if config.get("use_sliding_window"):
            common.update(sliding_window=config.get("sliding_window"))
    else:                                                          # mistral, mixtral
        common.update(sliding_window=config.get("sliding_window"))
    if kind in ("mixtral", "olmoe"):
        common.update(ffn="moe", expert_ffn="swiglu", n_experts=_get(config, "num_local_experts", "num_experts"),
                      top_k=config["num_experts_per_tok"], moe_d_ff=config["intermediate_size"], d_ff=None,
                      moe_renormalize=kind == "mixtral" or bool(config.get("norm_topk_prob")))
    return TransformerConfig(**common)


def load_hf(config: Mapping, state_dict: Mapping[str, torch.Tensor]) -> Transformer:
    """A :class:`Transformer` with the Hugging Face model's weights, in evaluation mode, on the CPU.

    ``config`` is the ``config.json`` dict; ``state_dict`` the model's (``model.state_dict()`` or the
    tensors of its safetensors files), with or without the ``lm_head`` of a tied model.
    """
    cfg = config_from_hf(config)
    ours = _rename(config["model_type"], cfg, state_dict)
    model = Transformer(cfg, device="meta")
    expected = model.state_dict()
    missing = sorted(k for k in expected if k not in ours and not (cfg.tie_embeddings and k == "head.weight"))
    unexpected = sorted(k for k in ours if k not in expected)
    if missing:
        raise _listed("transformer_err_hf_missing", missing)
    if unexpected:
        raise _listed("transformer_err_hf_unexpected", unexpected)
    for name, tensor in ours.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise InputError("transformer_err_hf_shape", name=name, shape=tuple(tensor.shape),
                             expected=tuple(expected[name].shape))
    model = model.to_empty(device="cpu")
    if cfg.tie_embeddings:
        model.head.weight = model.embed.weight
        ours.pop("head.weight", None)
    model.load_state_dict({k: v.to(torch.float32) for k, v in ours.items()}, strict=not cfg.tie_embeddings)
    return model.eval()


def _rename(kind: str, cfg: TransformerConfig, hf: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The Hugging Face tensors under our names, reshaped where the layouts differ."""
    hf = {k: v for k, v in hf.items() if not SKIPPED.search(k)}
    taken: set[str] = set()

    def take(name: str) -> torch.Tensor:
        if name not in hf:
            raise _listed("transformer_err_hf_missing", [name])
        taken.add(name)
        return hf[name]

    def maybe(name: str) -> torch.Tensor | None:
        return take(name) if name in hf else None

    out: dict[str, torch.Tensor] = {}
    if kind == "gpt2":
        prefix = "transformer." if "transformer.wte.weight" in hf else ""
        out["embed.weight"] = take(f"{prefix}wte.weight")
        out["pos_embed.weight"] = take(f"{prefix}wpe.weight")
        for i in range(cfg.n_layers):
            h, b = f"{prefix}h.{i}.", f"blocks.{i}."
            for ours, theirs in (("attn_norm", "ln_1"), ("ffn_norm", "ln_2")):
                out[f"{b}{ours}.weight"], out[f"{b}{ours}.bias"] = take(f"{h}{theirs}.weight"), take(f"{h}{theirs}.bias")
            for ours, theirs in (("attn.qkv", "attn.c_attn"), ("attn.out", "attn.c_proj"),
                                 ("ffn.w_in", "mlp.c_fc"), ("ffn.w_out", "mlp.c_proj")):
                out[f"{b}{ours}.weight"] = take(f"{h}{theirs}.weight").t()        # Conv1D stores (in, out)
                out[f"{b}{ours}.bias"] = take(f"{h}{theirs}.bias")
        out["final_norm.weight"], out["final_norm.bias"] = take(f"{prefix}ln_f.weight"), take(f"{prefix}ln_f.bias")
        head = maybe("lm_head.weight")
    else:
        out["embed.weight"] = take("model.embed_tokens.weight")
        for i in range(cfg.n_layers):
            h, b = f"model.layers.{i}.", f"blocks.{i}."
            out[f"{b}attn_norm.weight"] = take(f"{h}input_layernorm.weight")
            out[f"{b}ffn_norm.weight"] = take(f"{h}post_attention_layernorm.weight")
            a = f"{h}self_attn."
            out[f"{b}attn.qkv.weight"] = torch.cat([take(f"{a}{p}_proj.weight") for p in "qkv"])
            if cfg.qkv_bias:
                out[f"{b}attn.qkv.bias"] = torch.cat([take(f"{a}{p}_proj.bias") for p in "qkv"])
            out[f"{b}attn.out.weight"] = take(f"{a}o_proj.weight")
            if cfg.qk_norm:
                out[f"{b}attn.q_norm.weight"], out[f"{b}attn.k_norm.weight"] = take(f"{a}q_norm.weight"), \
                    take(f"{a}k_norm.weight")
            if cfg.out_bias:
                out[f"{b}attn.out.bias"] = take(f"{a}o_proj.bias")
            if cfg.is_moe_layer(i):
                out.update(_mixtral_experts(f"{h}block_sparse_moe." if f"{h}block_sparse_moe.gate.weight" in hf
                                            else f"{h}mlp.", f"{b}ffn.", cfg, take, hf))
            else:
                m = f"{h}mlp."
                out[f"{b}ffn.w_in.weight"] = torch.cat([take(f"{m}gate_proj.weight"), take(f"{m}up_proj.weight")])
                out[f"{b}ffn.w_out.weight"] = take(f"{m}down_proj.weight")
                if cfg.ffn_bias:
                    out[f"{b}ffn.w_in.bias"] = torch.cat([take(f"{m}gate_proj.bias"), take(f"{m}up_proj.bias")])
                    out[f"{b}ffn.w_out.bias"] = take(f"{m}down_proj.bias")
        out["final_norm.weight"] = take("model.norm.weight")
        head = maybe("lm_head.weight")
    if head is not None and not cfg.tie_embeddings:
        out["head.weight"] = head
    left = sorted(set(hf) - taken)
    if left:
        raise _listed("transformer_err_hf_unexpected", left)
    return out


def _listed(key: str, names: list[str]) -> InputError:
    """An error listing the first five tensor names (and how many more there are)."""
    if len(names) <= 5:
        return InputError(key, names=", ".join(names))
    return InputError(f"{key}_more", names=", ".join(names[:5]), more=len(names) - 5)


def _mixtral_experts(src: str, dst: str, cfg: TransformerConfig, take, hf) -> dict[str, torch.Tensor]:
    """A Mixtral layer's router and experts, from the fused (transformers 5) or per-expert layout, into our
    stacked ``experts.w_in (E, d, 2h)`` and ``experts.w_out (E, h, d)`` (``x @ W`` layout)."""
    out = {f"{dst}router.weight": take(f"{src}gate.weight")}
    if f"{src}experts.gate_up_proj" in hf:
        gate_up, down = take(f"{src}experts.gate_up_proj"), take(f"{src}experts.down_proj")   # (E, 2h, d), (E, d, h)
    else:
        x = [f"{src}experts.{e}." for e in range(cfg.n_experts)]
        gate_up = torch.stack([torch.cat([take(f"{p}w1.weight"), take(f"{p}w3.weight")]) for p in x])  # (E, 2h, d)
        down = torch.stack([take(f"{p}w2.weight") for p in x])                                       # (E, d, h)
    out[f"{dst}experts.w_in"] = gate_up.transpose(1, 2).contiguous()                                # (E, d, 2h)
    out[f"{dst}experts.w_out"] = down.transpose(1, 2).contiguous()                                  # (E, h, d)
    return out
