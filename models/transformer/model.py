"""The one transformer: ``Transformer(config)``, its ``Block``, and the ``Probe`` that looks inside.

A decoder-only language model whose every variant is a field of :class:`TransformerConfig` (the way
litgpt builds Llama, Mistral, Phi and Mixtral from one ``GPT`` class):

    x = embed(ids) [+ learned or sinusoidal positions]
    for each block:  x = sublayer(x, attention);  x = sublayer(x, FFN or MoE)
    logits = head(final_norm(x))            (final_norm for pre and sandwich placements)

where ``sublayer`` places the norm as ``placement`` says::

    post      x ← Norm(x + F(x))              Vaswani et al. 2017, BERT
    pre       x ← x + F(Norm(x))              GPT-2, Llama; a final Norm before the head
    sandwich  x ← x + Norm(F(Norm(x)))        CogView (Ding et al. 2021, § 2.4); final Norm
    deepnorm  x ← Norm(α·x + F(x))            DeepNet (Wang et al. 2022, § 2.3): α = (2L)^¼, and the
                                              value, output and FFN weights start with gain β = (8L)^−¼

Initialisation (``init``): ``"normal"``, GPT-2's N(0, 0.02²) with the residual projections scaled by
1/√(2L); ``"xavier"``, Xiong et al. 2020's setting (fairseq): Xavier-normal weights with gain 1/√2 on
q, k, v, zero biases, N(0, 1) embeddings, an N(0, 1/d) head. :meth:`Transformer.seeded` draws every
weight from one generator in a fixed order, so two configs that differ only in placement or norm
start from identical weights.

A :class:`Probe` passed to ``forward`` records, per layer, the attention probabilities, the largest
attention logit, the attention output, the residual stream and each MoE layer's routing (TransformerLens
records activations through hook points the same way, without copying the model). Logits with and
without a probe agree to float precision; the probe makes attention take its explicit softmax path.

Not handled: dropout, encoder–decoder stacks, parallel attention/FFN blocks (GPT-J), partial rotary
dimensions, biases on the LM head.
"""
from __future__ import annotations

import math
import torch
import torch.nn.functional as F
from torch import nn

from models.checks import InputError
from models.device import generator as seeded_generator
from models.ffn import FFN
from models.kv_cache import KVCache
from models.moe import MoELayer
from models.transformer.attention import SelfAttention
from models.transformer.config import TransformerConfig
from models.transformer.layers import LayerNorm, RMSNorm, make_norm
from models.transformer.probe import Probe
from models.transformer.positions import alibi_slopes, rope_tables, sinusoidal_rows

QKV_GAIN = 2 ** -0.5          # fairseq's (and nn.MultiheadAttention's) q, k, v init: variance 1/(2d)


def deepnorm_constants(n_layers: int) -> tuple[float, float]:
    """DeepNet's (α, β) for a decoder-only stack of L layers: ((2L)^¼, (8L)^−¼).

    >>> deepnorm_constants(2)       # (4^¼, 16^−¼)
    (1.4142135623730951, 0.5)
    """
    return (2 * n_layers) ** 0.25, (8 * n_layers) ** -0.25


class Block(nn.Module):
    """Attention and an FFN (or MoE), each a residual sublayer placed by ``config.placement``."""

    def __init__(self, cfg: TransformerConfig, layer: int, **factory):
        super().__init__()
        self.placement = cfg.placement
        self.alpha = deepnorm_constants(cfg.n_layers)[0] if cfg.placement == "deepnorm" else 1.0
        self.attn = SelfAttention(cfg, layer, **factory)
        if cfg.is_moe_layer(layer):
            self.ffn = MoELayer(cfg.d_model, cfg.moe_d_ff, cfg.n_experts, cfg.top_k,
                                capacity_factor=cfg.capacity_factor, num_shared=cfg.n_shared_experts,
                                expert=cfg.expert_ffn, renormalize=cfg.moe_renormalize,
                                shared_gate=cfg.moe_shared_gate, **factory)
        else:                                                      # (DeepSeek's first layers stay dense)
            kind = cfg.expert_ffn if cfg.ffn == "moe" else cfg.ffn
            self.ffn = FFN(cfg.d_model, cfg.d_ff, kind, bias=cfg.ffn_bias, **factory)
        self.attn_norm = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, **factory)
        self.ffn_norm = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, **factory)
        if cfg.placement == "sandwich":                            # Sandwich-LN: a Norm on F's output too
            self.attn_out_norm = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, **factory)
            self.ffn_out_norm = make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, **factory)

    def sublayer(self, x: torch.Tensor, f, norm: nn.Module, out_norm: nn.Module | None) -> torch.Tensor:
        """One residual sublayer ``f`` with the norms where ``placement`` puts them."""
        if self.placement in ("post", "deepnorm"):
            return norm(self.alpha * x + f(x))                     # Norm(α·x + F(x)), α = 1 for Post-LN
        h = f(norm(x))                                             # Pre-LN: F(Norm(x))
        return x + (out_norm(h) if out_norm is not None else h)    # Sandwich: x + Norm(F(Norm(x)))

    def forward(self, x: torch.Tensor, rope=None, cache: KVCache | None = None, probe: Probe | None = None,
                alibi: torch.Tensor | None = None) -> torch.Tensor:   # (B, T, d) -> (B, T, d)
        def attention(h):
            out = self.attn(h, rope, cache, probe, alibi)
            if probe is not None:
                probe.attn_out.append(out.detach())
            return out

        def ffn(h):
            if isinstance(self.ffn, MoELayer):
                out = self.ffn(h)
                if probe is not None:
                    probe.moe.append(out)
                return out.y
            return self.ffn(h)

        sandwich = self.placement == "sandwich"
        x = self.sublayer(x, attention, self.attn_norm, self.attn_out_norm if sandwich else None)
        return self.sublayer(x, ffn, self.ffn_norm, self.ffn_out_norm if sandwich else None)


class Transformer(nn.Module):
    """A decoder-only language model built from a :class:`TransformerConfig`.

    >>> cfg = TransformerConfig(vocab_size=11, n_layers=2, d_model=16, n_heads=4, max_seq_len=8, n_kv_heads=2)
    >>> model = Transformer.seeded(cfg, seed=0)
    >>> logits, cache = model(torch.tensor([[1, 2, 3]]), model.new_cache(capacity=8))
    >>> logits.shape, cache.length
    (torch.Size([1, 3, 11]), 3)
    """

    def __init__(self, config: TransformerConfig, *, device=None, dtype=None):
        super().__init__()
        cfg = self.config = config
        factory = dict(device=device, dtype=dtype)
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, **factory)
        if cfg.positions == "learned":
            self.pos_embed = nn.Embedding(cfg.max_seq_len, cfg.d_model, **factory)
        self.blocks = nn.ModuleList(Block(cfg, i, **factory) for i in range(cfg.n_layers))
        self.final_norm = (make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, **factory)
                           if cfg.placement in ("pre", "sandwich") else nn.Identity())
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False, **factory)
        if cfg.tie_embeddings:
            self.head.weight = self.embed.weight
        self._tables: dict = {}                                      # (device, kind) -> position tables
        if torch.device(device or "cpu").type != "meta":
            self.init_weights(None)

    @classmethod
    def seeded(cls, config: TransformerConfig, seed: int = 0, *, device: torch.device | str | None = None,
               dtype: torch.dtype | None = None) -> "Transformer":
        """Built on the meta device, every weight then drawn from a generator seeded with ``seed`` (on the
        CPU, so every device starts from the same weights) and moved to ``device``."""
        model = cls(config, device="meta").to_empty(device="cpu")
        if config.tie_embeddings:                                   # to_empty makes one tensor per module
            model.head.weight = model.embed.weight
        model.init_weights(seeded_generator(seed, torch.device("cpu")))
        return model.to(device=device or "cpu", dtype=dtype)

    # weights ---------------------------------------------------------------------------------
    @torch.no_grad()
    def init_weights(self, gen: torch.Generator | None) -> None:
        """``config.init``'s weights, drawn from ``gen`` (the global generator when ``None``), in a fixed
        order: embeddings, then each block's q, k, v, output, FFN (or experts and router), then the head."""
        cfg = self.config
        xavier = cfg.init == "xavier"
        beta = deepnorm_constants(cfg.n_layers)[1] if cfg.placement == "deepnorm" else 1.0
        residual_std = cfg.init_std / math.sqrt(2 * cfg.n_layers)

        def normal(weight: torch.Tensor, std: float) -> None:
            weight.copy_(_contiguous(weight).normal_(0.0, std, generator=gen))   # experts are views

        def xavier_normal(weight: torch.Tensor, gain: float) -> None:
            weight.copy_(nn.init.xavier_normal_(_contiguous(weight), gain=gain, generator=gen))

        normal(self.embed.weight, 1.0 if xavier else cfg.init_std)
        if cfg.positions == "learned":
            normal(self.pos_embed.weight, cfg.init_std)
        for block in self.blocks:
            attn = block.attn
            weights = attn.qkv.weight.split(attn.split, 0)                            # q | k | v (MLA: q | c | k^R)
            gains = (QKV_GAIN, QKV_GAIN, QKV_GAIN * beta)
            for w, gain in zip(weights, gains):
                nn.init.xavier_normal_(w, gain=gain, generator=gen) if xavier else normal(w, cfg.init_std)
            extra = [m.weight for m in (getattr(attn, "q_up", None), getattr(attn, "kv_up", None)) if m is not None]
            for w in extra:
                nn.init.xavier_normal_(w, generator=gen) if xavier else normal(w, cfg.init_std)
            nn.init.xavier_normal_(attn.out.weight, gain=beta, generator=gen) if xavier else \
                normal(attn.out.weight, residual_std)
            for ffn in _ffns(block.ffn):
                if isinstance(ffn, nn.Linear):                                        # a router, a gate
                    normal(ffn.weight, cfg.init_std)
                    continue
                for lin, is_out in ((ffn.w_in, False), (ffn.w_out, True)):
                    if xavier:
                        xavier_normal(lin.weight, beta)
                    else:
                        normal(lin.weight, residual_std if is_out else cfg.init_std)
        if not cfg.tie_embeddings:
            normal(self.head.weight, cfg.d_model ** -0.5 if xavier else cfg.init_std)
        self.init_fixed()

    def undrawn(self) -> dict[str, float]:
        """The parameters whose initial value is not drawn, by name, with that value: biases 0, norm gains 1,
        norm biases 0."""
        values = {}
        for prefix, module in self.named_modules():
            if isinstance(module, nn.Linear) and module.bias is not None:
                values[f"{prefix}.bias"] = 0.0
            elif isinstance(module, (LayerNorm, RMSNorm)):
                values[f"{prefix}.weight"] = 1.0
                if isinstance(module, LayerNorm):
                    values[f"{prefix}.bias"] = 0.0
        return values

    @torch.no_grad()
    def init_fixed(self) -> None:
        """Set the initial values that are not drawn (:meth:`undrawn`)."""
        parameters = dict(self.named_parameters())
        for name, value in self.undrawn().items():
            parameters[name].fill_(value)

    # forward ---------------------------------------------------------------------------------
    def new_cache(self, *, batch: int = 1, capacity: int | None = None) -> KVCache:
        """An empty :class:`KVCache` for this model on its device and dtype (``capacity``: the context)."""
        return KVCache(self.config, batch=batch, capacity=capacity, device=self.head.weight.device,
                       dtype=self.head.weight.dtype)

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None,
                probe: Probe | None = None) -> tuple[torch.Tensor, KVCache | None]:
        """``ids (B, T)`` -> ``logits (B, T, vocab)`` and ``cache``, now holding ``ids`` too.

        With a cache, ``ids`` are the next positions after those it holds (a decode step feeds one).
        """
        cfg = self.config
        B, T = ids.shape
        start = cache.length if cache is not None else 0
        if start + T > cfg.max_seq_len:
            raise InputError("transformer_err_context", cached=start, new=T, context=cfg.max_seq_len)
        x = self.embed(ids)                                                          # (B, T, d)
        if cfg.positions == "learned":
            x = x + self.pos_embed.weight[start:start + T]
        elif cfg.positions == "sinusoidal":
            x = x + self._table("sinusoidal", start + T, x.device)[start:start + T]
        rope = self.rope(start, T, x.device)
        alibi = self._table("alibi", 0, x.device) if cfg.positions == "alibi" else None
        if probe is not None and probe.want_residual:
            probe.residual.append(x.detach())
        for block in self.blocks:
            x = block(x, rope, cache, probe, alibi)
            if probe is not None and probe.want_residual:
                probe.residual.append(x.detach())
        if cache is not None:
            cache.advance(T)
        return self.head(self.final_norm(x)), cache                                  # (B, T, vocab)

    def rope(self, start: int, n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor] | None:
        """RoPE's ``cos, sin`` ``(n, rope_width)`` for positions ``start … start + n − 1`` (``None`` without RoPE)."""
        if self.config.positions != "rope":
            return None
        cos, sin = self._table("rope", start + n, device)
        return cos[start:start + n], sin[start:start + n]

    def readout(self, residual: torch.Tensor) -> torch.Tensor:
        """Logits from a residual stream ``(…, d)``: the final norm, then the head (the logit lens)."""
        return self.head(self.final_norm(residual))

    def loss(self, ids: torch.Tensor, probe: Probe | None = None) -> torch.Tensor:
        """Mean next-token cross-entropy over a batch ``(B, T + 1)`` of ids."""
        # Transformer.forward with no cache, also in subclasses whose forward makes one (TinyGPT): the
        # cache's in-place writes would break backward.
        logits, _ = Transformer.forward(self, ids[:, :-1], None, probe)              # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())

    def _table(self, kind: str, needed: int, device: torch.device):
        """Position tables, built once per device and grown (in powers of two, up to the context) when a
        longer sequence comes: a long-context config costs nothing until it is used."""
        cfg = self.config
        key = (device, kind)
        table = self._tables.get(key)
        if table is not None and (kind == "alibi" or _length(table) >= needed):
            return table
        with torch.inference_mode(False):      # built under inference_mode too, the tables stay usable for training
            if kind == "alibi":
                table = alibi_slopes(cfg.n_heads, device=device)
            else:
                n = min(cfg.max_seq_len, 1 << max(6, (needed - 1).bit_length()))
                table = (rope_tables(n, cfg.rope_width, cfg.rope_base, scale=cfg.rope_scale,
                                     ntk_alpha=cfg.rope_ntk_alpha, llama3=cfg.rope_llama3, device=device)
                         if kind == "rope" else sinusoidal_rows(0, n, cfg.d_model, device=device))
        self._tables[key] = table
        return table


def _length(table) -> int:
    return (table[0] if isinstance(table, tuple) else table).shape[0]


def _contiguous(weight: torch.Tensor) -> torch.Tensor:
    """An empty contiguous tensor shaped like ``weight``: a draw into it, copied into ``weight``, gives the
    numbers a contiguous weight would get even when ``weight`` is a transposed view (an MoE expert's)."""
    return torch.empty(weight.shape, dtype=weight.dtype, device=weight.device)


def _ffns(ffn: nn.Module) -> list[nn.Module]:
    """The FFN modules of a block's feed-forward part in draw order: one FFN, or the experts, the shared
    experts, the router and the shared experts' gate of an MoE layer."""
    if isinstance(ffn, MoELayer):
        return [*ffn.experts, *([ffn.shared] if ffn.shared is not None else []), ffn.router,
                *([ffn.shared_gate] if ffn.shared_gate is not None else [])]
    return [ffn]
