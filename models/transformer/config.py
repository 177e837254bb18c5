"""``TransformerConfig``: the shape of the one transformer, every variant a field, validated on creation.

The fields are the axes the notes vary: attention (MHA / GQA / MQA by ``n_kv_heads``, or MLA), where
positions come from, which norm and where it goes, which FFN (or a mixture of experts), biases,
tied embeddings, and the initialisation. ``None`` fields take their usual value once the config is
created (``n_kv_heads=None`` is MHA, ``head_dim=None`` is ``d_model // n_heads``, ``d_ff=None`` is
SwiGLU's 8/3·d rounded up to a multiple of 32, or 4·d), so a built config is fully explicit:

>>> c = TransformerConfig(vocab_size=100, n_layers=2, d_model=64, n_heads=4, max_seq_len=32, n_kv_heads=2)
>>> c.head_dim, c.d_ff, c.variant, c.group_size
(16, 192, 'GQA', 2)
>>> TransformerConfig(100, 2, 64, 4, 32, n_kv_heads=3)
Traceback (most recent call last):
...
models.checks.InputError: n_kv_heads = 3 must divide n_heads = 4
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal

from models.checks import InputError, choice, divides, number, whole
from models.ffn import llama_hidden_size
from models.positions import Llama3Scaling

Attention = Literal["mha", "mla"]
Positions = Literal["rope", "sinusoidal", "learned", "alibi", "none"]
NormKind = Literal["layernorm", "rmsnorm"]
Placement = Literal["pre", "post", "sandwich", "deepnorm"]
FFNKind = Literal["swiglu", "geglu", "gelu", "gelu_tanh", "relu", "moe"]
Init = Literal["normal", "xavier"]
QKNormScope = Literal["head", "all"]

ATTENTIONS: tuple[str, ...] = ("mha", "mla")
QK_NORM_SCOPES: tuple[str, ...] = ("head", "all")
POSITIONS: tuple[str, ...] = ("rope", "sinusoidal", "learned", "alibi", "none")
NORMS: tuple[str, ...] = ("layernorm", "rmsnorm")
PLACEMENTS: tuple[str, ...] = ("pre", "post", "sandwich", "deepnorm")
FFNS: tuple[str, ...] = ("swiglu", "geglu", "gelu", "gelu_tanh", "relu", "moe")
EXPERT_FFNS: tuple[str, ...] = ("swiglu", "geglu", "gelu", "gelu_tanh", "relu")
GATED: tuple[str, ...] = ("swiglu", "geglu")
INITS: tuple[str, ...] = ("normal", "xavier")
MAX_DIM = 1_000_000          # any width, vocabulary or context a published model has (and then some)
MAX_LAYERS = 1_000
MAX_HEADS = 4_096
MAX_EXPERTS = 1_024


def ffn_width(d_model: int, kind: str) -> int:
    """The FFN's hidden width when a config does not give one: 4·d for a plain FFN; for a gated one
    (three matrices) 2/3 of that, rounded up to a multiple of 32, so both hold ~8·d² weights
    (:func:`models.ffn.llama_hidden_size`, whose ``multiple_of`` is 256 at Llama's scale).

    >>> ffn_width(128, "swiglu"), ffn_width(128, "relu")
    (352, 512)
    """
    return llama_hidden_size(d_model, multiple_of=32) if kind in GATED else 4 * d_model


@dataclass(frozen=True)
class TransformerConfig:
    """A decoder-only transformer. Validates itself; ``None`` fields are resolved on creation."""

    # sizes
    vocab_size: int
    n_layers: int
    d_model: int
    n_heads: int
    max_seq_len: int                       # positions 0 … max_seq_len − 1
    # attention
    n_kv_heads: int | None = None          # None: n_heads (MHA); 1: MQA; between: GQA
    head_dim: int | None = None            # None: d_model // n_heads (Gemma, Qwen3 give it explicitly)
    attention: Attention = "mha"
    kv_latent_dim: int | None = None       # MLA: width of the cached latent c (DeepSeek's kv_lora_rank)
    q_latent_dim: int | None = None        # MLA: query compression width (q_lora_rank); None: none
    rope_dim: int | None = None            # MLA: width of the decoupled RoPE key; None: head_dim // 2
    v_head_dim: int | None = None          # None: head_dim
    qk_norm: bool = False                  # normalise q and k before q·k (Dehghani et al. 2023)
    qk_norm_scope: QKNormScope = "head"    # each head's q and k (Qwen3, Gemma 3), or all heads' at once (OLMoE)
    sliding_window: int | None = None      # query i sees keys i − W + 1 … i (Mistral: 4096)
    qkv_bias: bool = False                 # biases of the q, k, v projections (GPT-2, Qwen2)
    out_bias: bool = False                 # bias of the attention's output projection (GPT-2)
    # positions
    positions: Positions = "rope"
    rope_base: float = 10000.0
    rope_scale: float = 1.0                # position interpolation: positions divided by this
    rope_ntk_alpha: float = 1.0            # NTK-aware base scaling
    rope_llama3: Llama3Scaling | None = None   # Llama 3.1's frequency-dependent scaling
    # norms
    norm: NormKind = "rmsnorm"
    norm_eps: float = 1e-5
    placement: Placement = "pre"
    # feed-forward
    ffn: FFNKind = "swiglu"
    d_ff: int | None = None                # hidden width; None: ffn_width(d_model, ffn or expert kind)
    ffn_bias: bool = False
    # mixture of experts (ffn = "moe")
    n_experts: int = 0
    top_k: int = 0
    n_shared_experts: int = 0              # always-on experts (DeepSeekMoE)
    expert_ffn: str = "swiglu"             # each expert's FFN kind
    moe_d_ff: int | None = None            # each expert's width; None: d_ff
    capacity_factor: float | None = None   # None: no capacity limit
    moe_renormalize: bool = True           # top-k weights renormalised (Mixtral); Switch: not
    moe_first_dense: int = 0               # the first layers keep a dense FFN (DeepSeek's first_k_dense_replace)
    moe_shared_gate: bool = False          # Qwen2-MoE: the shared experts' output times sigmoid(x · w_g)
    # embeddings and head
    tie_embeddings: bool = False
    # initialisation
    init: Init = "normal"                  # N(0, init_std²) as GPT-2, or Xavier as Xiong et al. 2020
    init_std: float = 0.02

    def __post_init__(self):
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        for name, high in (("vocab_size", MAX_DIM), ("n_layers", MAX_LAYERS), ("d_model", MAX_DIM),
                           ("n_heads", MAX_HEADS), ("max_seq_len", 100 * MAX_DIM)):
            set_(name, whole(name, getattr(self, name), 1, high))
        for name, options in (("attention", ATTENTIONS), ("positions", POSITIONS), ("norm", NORMS),
                              ("placement", PLACEMENTS), ("ffn", FFNS), ("expert_ffn", EXPERT_FFNS),
                              ("init", INITS)):
            choice(name, getattr(self, name), options)
        # attention
        if self.head_dim is None and self.d_model % self.n_heads:
            raise InputError("transformer_err_head_dim", n_heads=self.n_heads, d_model=self.d_model)
        kv = self.n_heads if self.n_kv_heads is None else whole("n_kv_heads", self.n_kv_heads, 1, self.n_heads)
        divides("n_kv_heads", kv, "n_heads", self.n_heads)
        set_("n_kv_heads", kv)
        set_("head_dim", whole("head_dim", self.head_dim or self.d_model // self.n_heads, 1, MAX_DIM))
        set_("v_head_dim", whole("v_head_dim", self.v_head_dim or self.head_dim, 1, MAX_DIM))
        if self.attention == "mla":
            set_("kv_latent_dim", whole("kv_latent_dim", self.kv_latent_dim, 1, MAX_DIM))
            if self.q_latent_dim is not None:
                set_("q_latent_dim", whole("q_latent_dim", self.q_latent_dim, 1, MAX_DIM))
            set_("rope_dim", whole("rope_dim", self.rope_dim or max(2, self.head_dim // 2), 2, MAX_DIM))
            if self.n_kv_heads != self.n_heads:
                raise InputError("transformer_err_mla_kv_heads", n_kv_heads=self.n_kv_heads, n_heads=self.n_heads)
            if self.positions != "rope":
                raise InputError("transformer_err_mla_rope", positions=self.positions)
        elif (self.kv_latent_dim, self.q_latent_dim, self.rope_dim) != (None, None, None):
            raise InputError("transformer_err_mla_only")
        if self.rope_width % 2:
            raise InputError("transformer_err_rope_odd", width=self.rope_width)
        choice("qk_norm_scope", self.qk_norm_scope, QK_NORM_SCOPES)
        if self.qk_norm_scope != "head" and not self.qk_norm:
            raise InputError("transformer_err_qk_norm_scope", scope=self.qk_norm_scope)
        if self.sliding_window is not None:
            set_("sliding_window", whole("sliding_window", self.sliding_window, 1, 100 * MAX_DIM))
        # positions
        number("rope_base", self.rope_base, 1, 1e12, above=True)
        number("rope_scale", self.rope_scale, 1, 1e6)
        number("rope_ntk_alpha", self.rope_ntk_alpha, 1, 1e6)
        if self.rope_llama3 is not None and not isinstance(self.rope_llama3, Llama3Scaling):
            raise InputError("transformer_err_llama3")
        if self.positions == "sinusoidal" and self.d_model % 2:
            raise InputError("transformer_err_sinusoidal_odd", d_model=self.d_model)
        # norms
        number("norm_eps", self.norm_eps, 0, 1, above=True)
        # feed-forward
        moe = self.ffn == "moe"
        kind = self.expert_ffn if moe else self.ffn
        set_("d_ff", whole("d_ff", self.d_ff or ffn_width(self.d_model, kind), 1, MAX_DIM))
        if moe:
            set_("n_experts", whole("n_experts", self.n_experts, 1, MAX_EXPERTS))
            set_("top_k", whole("top_k", self.top_k, 1, self.n_experts))
            set_("n_shared_experts", whole("n_shared_experts", self.n_shared_experts, 0, MAX_EXPERTS))
            set_("moe_d_ff", whole("moe_d_ff", self.moe_d_ff or self.d_ff, 1, MAX_DIM))
            set_("moe_first_dense", whole("moe_first_dense", self.moe_first_dense, 0, self.n_layers))
            if self.moe_shared_gate and not self.n_shared_experts:
                raise InputError("transformer_err_shared_gate")
            if self.capacity_factor is not None:
                number("capacity_factor", self.capacity_factor, 0, 1e3, above=True)
        elif (self.n_experts, self.top_k, self.n_shared_experts, self.moe_first_dense) != (0, 0, 0, 0) \
                or self.moe_d_ff is not None or self.capacity_factor is not None or self.moe_shared_gate:
            raise InputError("transformer_err_moe_only")
        number("init_std", self.init_std, 0, 10, above=True)

    # derived -----------------------------------------------------------------------------------
    @property
    def group_size(self) -> int:
        """Query heads per KV head."""
        return self.n_heads // self.n_kv_heads

    @property
    def variant(self) -> str:
        """"MHA", "GQA", "MQA" or "MLA"."""
        if self.attention == "mla":
            return "MLA"
        return "MHA" if self.n_kv_heads == self.n_heads else "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def qk_dim(self) -> int:
        """Width of one head's q·k dot product: head_dim, plus the decoupled RoPE part for MLA."""
        return self.head_dim + (self.rope_dim if self.attention == "mla" else 0)

    @property
    def rope_width(self) -> int:
        """Dimensions RoPE rotates per head: the whole head, or MLA's decoupled part (0 without RoPE)."""
        if self.positions != "rope":
            return 0
        return self.rope_dim if self.attention == "mla" else self.head_dim

    def cache_elements_per_token(self) -> int:
        """Numbers cached per token, all layers: ``L·n_kv·(head_dim + v_head_dim)``, or ``L·(latent + rope)`` for MLA.

        >>> TransformerConfig(96, 4, 128, 4, 256, n_kv_heads=1).cache_elements_per_token()
        256
        """
        from models.calculator import kv_elements                     # the app's one KV-cache formula
        if self.attention == "mla":
            return kv_elements(self.n_layers, kv_latent_dim=self.kv_latent_dim, rope_dim=self.rope_dim)
        return kv_elements(self.n_layers, n_kv_heads=self.n_kv_heads, head_dim=self.head_dim,
                           v_head_dim=self.v_head_dim)

    def is_moe_layer(self, layer: int) -> bool:
        return self.ffn == "moe" and layer >= self.moe_first_dense

    def with_changes(self, **changes) -> "TransformerConfig":
        """A copy with some fields changed (and re-validated); resolved defaults stay unless changed."""
        return replace(self, **changes)

    def as_dict(self) -> dict:
        """The fields as plain values (a checkpoint's ``config``); :meth:`from_dict` reads it back."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.rope_llama3 is not None:
            out["rope_llama3"] = {f.name: getattr(self.rope_llama3, f.name) for f in fields(self.rope_llama3)}
        return out

    @classmethod
    def from_dict(cls, values: dict) -> "TransformerConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InputError("transformer_err_unknown_fields", fields=", ".join(unknown))
        llama3 = values.get("rope_llama3")
        return cls(**{**values, "rope_llama3": Llama3Scaling(**llama3) if isinstance(llama3, dict) else llama3})


__all__ = ["TransformerConfig", "ffn_width"]
