"""The one transformer (models/transformer/): Hugging Face parity, the probe, the cache, FLOPs, bad input.

References are independent of our code: ``transformers``' own models built from small random configs,
PyTorch's ``FlopCounterMode`` and ``scaled_dot_product_attention``, and closed forms.
"""
from __future__ import annotations

import ast
import math
import pathlib

import pytest
import torch
import torch.nn.functional as F

from models.checks import InputError
from models.positions import alibi_slopes
from models.transformer import Probe, Transformer, TransformerConfig, count_flops, flop_counter, load_hf
from models.transformer.flops import fused_attention
from tests.conftest import ROOT

VOCAB = 61
# One config per variant the app runs: every field the transformer switches on appears at least once.
VARIANTS = {
    "llama-gqa": dict(n_kv_heads=2),
    "mqa": dict(n_kv_heads=1),
    "mla": dict(attention="mla", kv_latent_dim=12, rope_dim=4),
    "mla-q-latent": dict(attention="mla", kv_latent_dim=12, rope_dim=4, q_latent_dim=10, v_head_dim=6),
    "alibi": dict(positions="alibi"),
    "xiong-post": dict(positions="sinusoidal", norm="layernorm", placement="post", ffn="relu", init="xavier",
                       qkv_bias=True, out_bias=True, ffn_bias=True),
    "gpt2-like": dict(positions="learned", norm="layernorm", ffn="gelu_tanh", tie_embeddings=True, qkv_bias=True),
    "sandwich": dict(placement="sandwich"),
    "deepnorm": dict(placement="deepnorm", norm="layernorm"),
    "qk-norm": dict(qk_norm=True),
    "qk-norm-all": dict(qk_norm=True, qk_norm_scope="all", n_kv_heads=2),      # OLMoE's, over all heads
    "window": dict(sliding_window=3),
    "no-positions": dict(positions="none"),
    "moe": dict(ffn="moe", n_experts=4, top_k=2, n_shared_experts=1, moe_first_dense=1),
    "moe-shared-gate": dict(ffn="moe", n_experts=4, top_k=2, n_shared_experts=1, moe_shared_gate=True),   # Qwen2-MoE
    "head-dim": dict(head_dim=16, v_head_dim=4),
}


def model_of(name: str, dtype=torch.float64) -> Transformer:
    return Transformer.seeded(TransformerConfig(VOCAB, 2, 32, 4, 48, **VARIANTS[name]), seed=0).to(dtype).eval()


def ids_of(B: int = 2, T: int = 12, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (B, T), generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------- Hugging Face parity
def _hf_models():
    from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, MistralConfig,
                              MistralForCausalLM, MixtralConfig, MixtralForCausalLM, OlmoeConfig, OlmoeForCausalLM,
                              Qwen2Config, Qwen2ForCausalLM)
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    common = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 16}
    return {
        "llama": lambda: LlamaForCausalLM(LlamaConfig(**common, rope_theta=500000.0)),
        "llama-3.1-scaling": lambda: LlamaForCausalLM(LlamaConfig(**common, rope_scaling=llama3)),
        "llama-linear-scaling": lambda: LlamaForCausalLM(LlamaConfig(**common, rope_scaling={"rope_type": "linear",
                                                                                           "factor": 4.0})),
        "llama-biases": lambda: LlamaForCausalLM(LlamaConfig(**common, attention_bias=True, mlp_bias=True)),
        "mistral-window": lambda: MistralForCausalLM(MistralConfig(**common, sliding_window=5)),
        "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(**common, tie_word_embeddings=True)),
        "gpt2": lambda: GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64)),
        "mixtral": lambda: MixtralForCausalLM(MixtralConfig(**common, num_local_experts=4, num_experts_per_tok=2)),
        # q and k normalised over all heads at once; top-k weights not renormalised, then renormalised
        "olmoe": lambda: OlmoeForCausalLM(OlmoeConfig(**common, num_experts=4, num_experts_per_tok=2)),
        "olmoe-renormalised": lambda: OlmoeForCausalLM(OlmoeConfig(**common, num_experts=4, num_experts_per_tok=2,
                                                                   norm_topk_prob=True)),
    }


def _randomised(hf):
    """Every weight N(0, 0.2²): far from the init, so a wrong transpose or order cannot hide."""
    torch.manual_seed(0)
    with torch.no_grad():
        for p in hf.parameters():
            p.normal_(0, 0.2)
    return hf.eval()


@pytest.mark.parametrize("name", list(_hf_models()))
def test_logits_equal_hugging_face(name):
    hf = _randomised(_hf_models()[name]())
    ours = load_hf(hf.config.to_dict(), hf.state_dict())
    ids = ids_of(2, 20)
    with torch.no_grad():
        torch.testing.assert_close(ours(ids)[0], hf(ids).logits, atol=2e-5, rtol=1e-4)


def test_mixtral_experts_load_from_the_hub_layout_too():
    """Checkpoints on the Hub store each expert's w1 (gate), w3 (up), w2 (down); transformers 5 fuses them."""
    hf = _randomised(_hf_models()["mixtral"]())
    state = {}
    for key, value in hf.state_dict().items():
        if key.endswith("experts.gate_up_proj"):
            gate, up = value.chunk(2, dim=1)                                 # (E, h, d) each
            for e in range(value.shape[0]):
                state[key.replace("mlp.experts.gate_up_proj", f"block_sparse_moe.experts.{e}.w1.weight")] = gate[e]
                state[key.replace("mlp.experts.gate_up_proj", f"block_sparse_moe.experts.{e}.w3.weight")] = up[e]
        elif key.endswith("experts.down_proj"):
            for e in range(value.shape[0]):
                state[key.replace("mlp.experts.down_proj", f"block_sparse_moe.experts.{e}.w2.weight")] = value[e]
        else:
            state[key.replace("mlp.gate.weight", "block_sparse_moe.gate.weight")] = value
    ours = load_hf(hf.config.to_dict(), state)
    ids = ids_of()
    with torch.no_grad():
        torch.testing.assert_close(ours(ids)[0], hf(ids).logits, atol=2e-5, rtol=1e-4)


def test_bad_hugging_face_input_names_the_problem():
    hf = _hf_models()["llama"]()
    config, state = hf.config.to_dict(), hf.state_dict()
    with pytest.raises(InputError, match="model_type = 'bert': must be one of llama, mistral, qwen2, gpt2, mixtral, olmoe"):
        load_hf({**config, "model_type": "bert"}, state)
    missing = {k: v for k, v in state.items() if k != "model.layers.1.mlp.up_proj.weight"}
    with pytest.raises(InputError, match="lack model.layers.1.mlp.up_proj.weight"):
        load_hf(config, missing)
    bad = dict(state, **{"model.norm.weight": torch.ones(31)})
    with pytest.raises(InputError, match=r"final_norm.weight has shape \(31,\); this config needs \(32,\)"):
        load_hf(config, bad)
    with pytest.raises(InputError, match="hold tensors this model does not have: model.extra.weight"):
        load_hf(config, dict(state, **{"model.extra.weight": torch.ones(1)}))
    with pytest.raises(InputError, match="n_kv_heads = 3 must divide n_heads = 4"):
        load_hf({**config, "num_key_value_heads": 3}, state)


@pytest.mark.parametrize("fields,message", [
    (dict(n_heads=5), "n_heads = 5 must divide d_model = 32"),
    (dict(n_kv_heads=3), "n_kv_heads = 3 must divide n_heads = 4"),
    (dict(attention="mla", kv_latent_dim=0), "kv_latent_dim = 0: must be a whole number from 1"),
    (dict(attention="mla", kv_latent_dim=8, n_kv_heads=2), "n_kv_heads = 2 must equal n_heads = 4"),
    (dict(ffn="moe", n_experts=4, top_k=5), "top_k = 5: must be a whole number from 1 to 4"),
    (dict(n_experts=4), "are mixture-of-experts settings"),
    (dict(placement="middle"), "placement = 'middle': must be one of pre, post, sandwich, deepnorm"),
    (dict(rope_base=0.5), "rope_base = 0.5: must be a number above 1"),
    (dict(d_model=2.5), "d_model = 2.5: must be a whole number"),
])
def test_config_refuses_with_a_message_naming_the_field(fields, message):
    with pytest.raises(InputError, match=message):
        TransformerConfig(**{**dict(vocab_size=VOCAB, n_layers=2, d_model=32, n_heads=4, max_seq_len=48), **fields})


def test_config_round_trips_through_a_dict():
    cfg = TransformerConfig(VOCAB, 2, 32, 4, 48, **VARIANTS["mla-q-latent"])
    assert TransformerConfig.from_dict(cfg.as_dict()) == cfg


# --------------------------------------------------------------------------- the probe
@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_probe_changes_no_number(name):
    model = model_of(name, torch.float32)
    ids = ids_of()
    probe = Probe()
    with torch.no_grad():
        plain, _ = model(ids)
        probed, _ = model(ids, probe=probe)
    torch.testing.assert_close(probed, plain, atol=1e-5, rtol=1e-5)
    L = model.config.n_layers
    assert len(probe.attn_probs) == len(probe.attn_logit_max) == len(probe.attn_out) == L
    assert len(probe.residual) == L + 1
    for probs in probe.attn_probs:                                      # (B, H, T, T)
        torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:-1]))
        assert probs.triu(1).abs().max() == 0                          # causal: nothing above the diagonal
    # the logit lens of the last layer is the model's output
    torch.testing.assert_close(model.readout(probe.residual[-1]), plain, atol=1e-5, rtol=1e-5)


def layer0_scores(name: str, T: int, bias: torch.Tensor | float = 0.0) -> tuple[Probe, torch.Tensor]:
    """A probed forward of ``name``'s model, and layer 0's causal scores recomputed by hand from its own
    weights: q·kᵀ/√d (+ ``bias``), rotated first when the model has RoPE, KV heads repeated for GQA."""
    from models.transformer.positions import rope_rotate
    model = model_of(name)
    probe = Probe()
    with torch.no_grad():
        model(ids_of(1, T), probe=probe)
        attn, cfg = model.blocks[0].attn, model.config
        q, k, _ = attn.qkv(model.blocks[0].attn_norm(probe.residual[0])).split(attn.split, -1)
        q = q.view(1, T, cfg.n_heads, cfg.head_dim).transpose(1, 2)                        # (1, H, T, d)
        k = k.view(1, T, cfg.n_kv_heads, cfg.head_dim).transpose(1, 2)                     # (1, n_kv, T, d)
        if cfg.positions == "rope":
            cos, sin = model.rope(0, T, q.device)
            q, k = rope_rotate(q, cos, sin), rope_rotate(k, cos, sin)
        k = k.repeat_interleave(cfg.group_size, 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(cfg.head_dim) + bias
    return probe, scores.masked_fill(~torch.ones(T, T).tril().bool(), -math.inf)


def test_attention_probabilities_equal_an_explicit_softmax_of_the_layers_own_q_and_k():
    probe, scores = layer0_scores("llama-gqa", 9)
    torch.testing.assert_close(probe.attn_probs[0], scores.softmax(-1))
    assert probe.attn_logit_max[0] == pytest.approx(scores.max().item())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_at_scale_zero_each_query_averages_the_values_it_sees(dtype):
    """Logits × 0 (the "why √d" view's m = 0): uniform weights over the causal prefix, so query t returns
    the mean of v_0 … v_t. PyTorch's CPU flash kernel returns NaN for is_causal at scale 0."""
    attn = model_of("gpt2-like", dtype).blocks[0].attn
    attn.scale = 0.0
    q, k, v = torch.randn(3, 2, 4, 7, 8, dtype=dtype)                              # (B, H, T, E) each
    expected = v.cumsum(-2) / torch.arange(1, 8, dtype=dtype)[:, None]             # running mean over keys
    torch.testing.assert_close(attn._attend(q, k, v, None, None), expected)


def test_qk_norm_bounds_the_attention_logits():
    """With q and k RMS-normalised per head, |q·k|/√d ≤ ‖q̂‖‖k̂‖/√d = g_q·g_k·d/√d, whatever the input."""
    model = model_of("qk-norm")
    with torch.no_grad():
        for block in model.blocks:
            block.attn.q_norm.weight.fill_(1.5), block.attn.k_norm.weight.fill_(2.0)
            block.attn.qkv.weight.mul_(50)                                                # huge pre-norm q, k
        probe = Probe()
        model(ids_of(3, 40), probe=probe)
    d = model.config.head_dim
    assert max(probe.attn_logit_max) <= 1.5 * 2.0 * d / math.sqrt(d) + 1e-9


def test_alibi_adds_minus_slope_times_distance():
    i = torch.arange(6)
    bias = -alibi_slopes(4, device="cpu").double()[:, None, None] * (i[:, None] - i[None, :]).abs()          # (H, T, T)
    probe, scores = layer0_scores("alibi", 6, bias)
    torch.testing.assert_close(probe.attn_probs[0], scores.softmax(-1))


def test_sliding_window_attention_equals_sdpa_with_the_window_mask():
    model = model_of("window")
    ids = ids_of(1, 10)
    probe = Probe()
    with torch.no_grad():
        model(ids, probe=probe)
    i = torch.arange(10)
    allowed = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - 3)            # keys i−2 … i
    assert torch.equal(probe.attn_probs[0][0, 0] > 0, allowed)


# --------------------------------------------------------------------------- the cache
@pytest.mark.parametrize("name", list(VARIANTS))
def test_decoding_with_the_cache_equals_the_full_forward(name):
    """Prefill 5, one token, a chunk of 3 (bottom-right mask), one more."""
    model = model_of(name)
    ids = ids_of(2, 10)
    with torch.no_grad():
        full, _ = model(ids)
        cache = model.new_cache(batch=2, capacity=10)
        for start, end in [(0, 5), (5, 6), (6, 9), (9, 10)]:
            logits, cache = model(ids[:, start:end], cache)
            torch.testing.assert_close(logits, full[:, start:end], atol=1e-10, rtol=1e-10)
    assert cache.length == 10
    assert cache.nbytes() == 2 * 10 * model.config.cache_elements_per_token() * 8          # float64


def test_the_context_is_enforced():
    model = model_of("llama-gqa")
    with pytest.raises(InputError, match="0 cached \\+ 49 new tokens exceed the model's context of 48"):
        model(ids_of(1, 49))


def test_tied_weights_stay_tied():
    model = model_of("gpt2-like")
    assert model.head.weight is model.embed.weight
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for n, p in model.named_parameters())


# --------------------------------------------------------------------------- FLOPs
@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("backward", [False, True])
def test_count_flops_equals_pytorchs_counter(name, backward):
    model = model_of(name, torch.float32)
    ids = ids_of(3, 16)
    with flop_counter() as counter:
        if backward:
            model(ids)[0].sum().backward()
        else:
            with torch.no_grad():
                model(ids)
    assert counter.get_total_flops() == count_flops(model.config, 3, 16, backward=backward, device=ids.device)


def test_gqa_attention_is_counted_once_per_query_head():
    """Every query head attends over its group's shared keys: 2·B·H·T²·(d_qk + d_v) forward. torch 2.11's
    formula asserted equal heads and stopped the GQA models' count (seen on a GPU machine's torch)."""
    q, kv = torch.randn(1, 4, 8, 4), torch.randn(1, 2, 8, 4)                              # H = 4, H_kv = 2
    with flop_counter() as counter:
        F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
    assert counter.get_total_flops() == 2 * 1 * 4 * 8 * 8 * (4 + 4)


def test_count_flops_is_6nd_plus_attention_for_a_dense_model():
    """Kaplan et al.'s C ≈ 6·N·D counts the weight matmuls; attention's T² part comes on top."""
    cfg = TransformerConfig(VOCAB, 2, 32, 4, 48, positions="alibi")                     # no fused-kernel recompute
    n_matmul = sum(p.numel() for name, p in Transformer(cfg, device="meta").named_parameters()
                   if p.dim() == 2 and "embed" not in name)
    B, T, L, H, d_head = 4, 16, 2, 4, 8
    attention = L * 2 * B * H * T * T * (d_head + d_head)                               # q·kᵀ and p·v, forward
    assert count_flops(cfg, B, T, backward=True) == 6 * n_matmul * B * T + 3 * attention


@pytest.mark.parametrize("preset", ["GPT-2 (124M)", "Llama-2-7B", "Llama-3-8B", "Mistral-7B v0.1", "Mixtral-8x7B"])
def test_the_calculators_flops_agree_with_count_flops(preset):
    """The calculator's 2·N + attention per token, over T tokens, is the model's own count, but for two
    things it counts differently on purpose: norms and biases are parameters (2·N counts them) but not
    matmuls, and an MoE layer's weighted sum of its top-k experts is a matmul that is no parameter.
    (MLA is not compared: the calculator counts its up-projections as weights, the model runs the
    absorbed form, which costs more FLOPs at short contexts.)"""
    from models.calculator import PRESETS, flops_per_token
    from models.calculator_verify import transformer_config
    spec, T = PRESETS[preset], 64
    cfg = transformer_config(spec, T)
    vectors = sum(p.numel() for p in Transformer(cfg, device="meta").parameters() if p.dim() == 1)
    combine = sum(cfg.is_moe_layer(layer) for layer in range(cfg.n_layers)) * 2 * cfg.top_k * cfg.d_model
    assert T * flops_per_token(spec, T)["forward"] == count_flops(cfg, 1, T) + T * (2 * vectors - combine)


def test_fused_attention_is_what_the_cpu_runs():
    assert fused_attention(TransformerConfig(VOCAB, 1, 32, 4, 8), "cpu")
    assert not fused_attention(TransformerConfig(VOCAB, 1, 32, 4, 8, attention="mla", kv_latent_dim=8), "cpu")
    assert not fused_attention(TransformerConfig(VOCAB, 1, 32, 4, 8, positions="alibi"), "cpu")


# --------------------------------------------------------------------------- the package
def test_models_has_no_import_cycles():
    """Every ``models.*`` import of every module, lazy ones included, forms a graph without cycles."""
    graph: dict[str, set[str]] = {}
    for path in (ROOT / "models").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("models"):
                deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("models")}
        graph[name] = {d for d in deps if d != name}
    # a package depends on what its __init__ imports; an import of models.x.y also runs models.x
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in graph.get(node, ()):
            if state.get(dep) == 1:
                cycles.append(" -> ".join(stack + [node, dep]))
            elif dep not in state:
                visit(dep, stack + [node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])
    assert graph and not cycles


def test_a_shared_gate_needs_shared_experts_in_an_moe():
    with pytest.raises(InputError, match="mixture-of-experts settings"):
        TransformerConfig(VOCAB, 2, 32, 4, 48, moe_shared_gate=True)
    with pytest.raises(InputError, match="set n_shared_experts ≥ 1"):
        TransformerConfig(VOCAB, 2, 32, 4, 48, ffn="moe", n_experts=4, top_k=2, moe_shared_gate=True)


def test_a_qk_norm_scope_needs_qk_norm_and_is_one_of_two():
    with pytest.raises(InputError, match="set qk_norm too"):
        TransformerConfig(VOCAB, 2, 32, 4, 48, qk_norm_scope="all")
    with pytest.raises(InputError, match="must be one of head, all"):
        TransformerConfig(VOCAB, 2, 32, 4, 48, qk_norm=True, qk_norm_scope="layer")
    attn = Transformer(TransformerConfig(VOCAB, 2, 32, 4, 48, n_kv_heads=2, qk_norm=True, qk_norm_scope="all")).blocks[0].attn
    assert (attn.q_norm.weight.shape, attn.k_norm.weight.shape) == ((32,), (16,))       # H·hd and n_kv·hd
