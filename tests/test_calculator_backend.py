"""The calculator against published numbers, closed forms, built PyTorch modules and real casts."""
import dataclasses
import math
import json

import numpy as np
import pytest
import torch

from models.calculator import (GiB, PRESETS, ModelSpec, RunSettings, activation_bytes, analyze, cache_outgrows_weights,
                               cached_positions, count_params, flops_per_token, gpus_needed, kv_cache_bytes,
                               rule_of_thumb, training_memory)
from models.calculator_config import spec_from_config
from models.calculator_verify import build_model, verify
from viz.calculator import layouts_markdown

# Totals published by the model authors / computed by summing the released checkpoints' tensors.
PUBLISHED = {
    "GPT-2 (124M)": (124_439_808, 124_439_808),
    "Llama-2-7B": (6_738_415_616, 6_738_415_616),
    "Llama-2-70B": (68_976_648_192, 68_976_648_192),
    "Llama-3-8B": (8_030_261_248, 8_030_261_248),
    "Mistral-7B v0.1": (7_241_732_096, 7_241_732_096),
    "Mixtral-8x7B": (46_702_792_704, 12_879_925_248),
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_totals(name):
    counts = count_params(PRESETS[name])
    assert (counts["total"], counts["active"]) == PUBLISHED[name]
    assert sum(counts["parts"].values()) == counts["total"]


def test_deepseek_v2_lite_is_the_published_15_7b_with_2_4b_active_without_embeddings():
    counts = count_params(PRESETS["DeepSeek-V2-Lite"])
    assert round(counts["total"] / 1e9, 1) == 15.7                    # model card: 15.7B total
    non_embedding_active = counts["active"] - counts["parts"]["embedding"]
    assert round(non_embedding_active / 1e9, 1) == 2.5                # card: 2.4B activated (rounding)


def test_deepseek_v2_is_the_published_236b_with_21b_active():
    counts = count_params(PRESETS["DeepSeek-V2"])
    assert round(counts["total"] / 1e9) == 236                        # paper: 236B total
    assert round(counts["active"] / 1e9) == 21                        # paper: 21B activated per token


@pytest.mark.parametrize("field,value,message", [("gpu_gib", None, "GPU memory"), ("gpu_gib", 0.5, "GPU memory"),
                                                 ("recipe", "17", "recipe"), ("kv_dtype", "fp12", "dtype"),
                                                 ("train_tokens", float("nan"), "training tokens")])
def test_run_settings_validate_themselves(field, value, message):
    with pytest.raises(ValueError, match=message):
        RunSettings(**{field: value})


@pytest.mark.parametrize("name", PRESETS)
def test_formula_equals_numel_of_built_modules_and_real_cache(name):
    v = verify(PRESETS[name], seq_len=64, batch=2)
    assert v.formula_params == v.built_params
    assert v.formula_kv_bytes == v.built_kv_bytes


def test_tied_embeddings_are_counted_once():
    spec = dataclasses.replace(PRESETS["Llama-2-7B"], n_layers=1, tied_embeddings=True)
    model = build_model(spec)
    assert model.head.weight is model.embed.weight
    assert count_params(spec)["parts"]["lm_head"] == 0


def test_kv_cache_closed_forms():
    assert kv_cache_bytes(PRESETS["Llama-2-7B"], 4096, 1, "fp16") == 2 * GiB
    assert kv_cache_bytes(PRESETS["Llama-3-8B"], 8192, 1, "fp16") == 1 * GiB
    assert kv_cache_bytes(PRESETS["Llama-3-8B"], 8192, 1, "int4") == GiB // 4
    assert kv_cache_bytes(PRESETS["Llama-3-8B"], 8192, 1, 3) == 3 * GiB // 2   # a byte count works too
    mla = PRESETS["DeepSeek-V2-Lite"]                                   # latent 512 + RoPE key 64, no factor 2
    assert kv_cache_bytes(mla, 1000, 3, "bf16") == 27 * (512 + 64) * 1000 * 3 * 2


def test_gqa_shrinks_the_cache_by_heads_over_kv_heads():
    mha = dataclasses.replace(PRESETS["Llama-3-8B"], n_kv_heads=32)
    assert kv_cache_bytes(mha, 100) == 4 * kv_cache_bytes(PRESETS["Llama-3-8B"], 100)


def test_rule_of_thumb_is_exact_for_a_gpt_like_stack_without_embeddings():
    spec = ModelSpec("toy", vocab_size=1, d_model=64, n_layers=3, n_heads=4, ffn_dim=256, ffn_type="gelu",
                     tied_embeddings=True)
    counts = count_params(spec)
    assert counts["parts"]["attention"] + counts["parts"]["ffn"] == rule_of_thumb(spec) == 12 * 3 * 64**2


def test_flops_and_training_memory_by_hand():
    spec = PRESETS["Llama-2-7B"]
    f = flops_per_token(spec, 4096)
    assert f["matmul"] == 2 * (6_738_415_616 - 32000 * 4096)            # the input embedding is a lookup
    assert f["attention"] == 2 * 32 * 4096 * 32 * (128 + 128)
    mem = training_memory(spec, seq_len=2048, batch=1, recipe="mixed_bf16", recompute="full")
    assert mem["parts"]["weights"] + mem["parts"]["gradients"] + mem["parts"]["master"] + mem["parts"]["optimizer"] \
        == 16 * 6_738_415_616
    assert mem["parts"]["activations"] == 32 * 2 * 2048 * 4096
    assert activation_bytes(spec, 2048, 1, "none") == 32 * 2048 * 4096 * (34 + 5 * 32 * 2048 / 4096)
    assert gpus_needed(mem["total"], 80) == int(np.ceil(mem["total"] / (80 * GiB * 0.9)))


def test_analysis_of_mixtral():
    a = analyze(PRESETS["Mixtral-8x7B"], RunSettings(seq_len=32768, batch=1))
    assert a.active_parts["experts"] == 32 * 2 * 3 * 4096 * 14336
    assert a.inference["parts"]["kv_cache"] == 2 * 32 * 8 * 128 * 32768 * 2


CONFIGS = {
    "llama3": ({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
                "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
                "vocab_size": 128256, "tie_word_embeddings": False, "hidden_act": "silu", "head_dim": 128},
               8_030_261_248),
    "gpt2": ({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024,
              "vocab_size": 50257, "activation_function": "gelu_new"}, 124_439_808),
    "mixtral": ({"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
                 "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
                 "num_experts_per_tok": 2, "hidden_act": "silu"}, 46_702_792_704),
    "deepseek": ({"hidden_size": 2048, "intermediate_size": 10944, "num_attention_heads": 16,
                  "num_hidden_layers": 27, "num_key_value_heads": 16, "vocab_size": 102400, "n_routed_experts": 64,
                  "n_shared_experts": 2, "num_experts_per_tok": 6, "moe_intermediate_size": 1408,
                  "first_k_dense_replace": 1, "kv_lora_rank": 512, "q_lora_rank": None, "qk_rope_head_dim": 64,
                  "qk_nope_head_dim": 128, "v_head_dim": 128, "tie_word_embeddings": False},
                 count_params(PRESETS["DeepSeek-V2-Lite"])["total"]),
    # Qwen/Qwen3-30B-A3B and Qwen/Qwen1.5-MoE-A2.7B as published; totals: transformers' models built from them
    # on the meta device (their cards: 30.5B total / 3.3B activated; 14.3B / 2.7B)
    "qwen3-moe": ({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                   "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32,
                   "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "num_experts": 128,
                   "num_experts_per_tok": 8, "tie_word_embeddings": False, "decoder_sparse_step": 1,
                   "mlp_only_layers": []}, 30_532_122_624),
    "qwen1.5-moe": ({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
                     "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_hidden_layers": 24,
                     "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936, "num_experts": 60,
                     "num_experts_per_tok": 4, "tie_word_embeddings": False, "decoder_sparse_step": 1,
                     "mlp_only_layers": []}, 14_315_784_192),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_config_json_parsing(name):
    config, total = CONFIGS[name]
    assert count_params(spec_from_config(json.dumps(config)))["total"] == total


@pytest.mark.parametrize("text,match", [
    ("", "paste"), ("{not json", "not valid JSON"), ("[1, 2]", r'JSON object \("key": value pairs\), not a list'),
    ('{"hidden_size": 64}', "lacks num_hidden_layers"),
    ('{"hidden_size": 100, "num_hidden_layers": 2, "num_attention_heads": 3, "vocab_size": 10}', "must divide d_model"),
    ('{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 3, "vocab_size": 10}',
     "n_kv_heads = 3 must divide n_heads = 8"),
    ('{"hidden_size": -4, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10}', "d_model = -4"),
    ('{"hidden_size": 1000000, "num_hidden_layers": 1000, "num_attention_heads": 1000, "vocab_size": 10, '
     '"intermediate_size": 1000}',
     "parameters is beyond"),
    ("x" * 200_000, "at most"),
])
def test_bad_configs(text, match):
    with pytest.raises(ValueError, match=match):
        spec_from_config(text)


def test_bad_runs():
    with pytest.raises(ValueError, match="context length = 0"):
        kv_cache_bytes(PRESETS["Llama-2-7B"], 0)
    with pytest.raises(ValueError, match="dtype = 'fp64'"):
        kv_cache_bytes(PRESETS["Llama-2-7B"], 10, 1, "fp64")
    with pytest.raises(ValueError, match="recomputation = .some."):
        training_memory(PRESETS["Llama-2-7B"], recompute="some")


@pytest.mark.parametrize("variant", ["mha", "gqa", "mqa", "mla"])
def test_the_kv_tabs_trained_models_match_the_calculator(variant):
    """The calculator's counts for the KV Cache tab's models, against the committed checkpoints run for real."""
    from models.calculator_verify import spec_of_gpt
    from models.tiny_gpt import CHECKPOINT_DIR, checkpoint_name, load_checkpoint, trained_configs
    config = trained_configs(61)[variant]
    model = load_checkpoint(CHECKPOINT_DIR / f"{checkpoint_name(config)}.pt").model
    spec = spec_of_gpt(model.config, variant)
    assert count_params(spec)["total"] == sum(p.numel() for p in model.parameters())
    with torch.no_grad():
        _, cache = model(torch.randint(0, 61, (2, 50), device=model.head.weight.device), model.new_cache(batch=2, capacity=50))
    assert kv_cache_bytes(spec, 50, 2, "fp32") == cache.nbytes()


def test_verify_runs_small_models_and_builds_the_rest_on_meta():
    from models.calculator_verify import spec_of_gpt, verify
    from models.generation import GPTConfig
    small = spec_of_gpt(GPTConfig(100, 2, 64, 4, 2, 32), "small")
    assert verify(small, seq_len=20).how == "run" and verify(small, seq_len=20).ok
    assert verify(PRESETS["Llama-3-8B"], seq_len=20).how == "meta"          # too big to run here
    assert verify(PRESETS["GPT-2 (124M)"], seq_len=20).how == "meta"        # 124M: built on the meta device


@pytest.mark.parametrize("call,key,zh", [
    (lambda: spec_from_config("{not json"), "calc_err_json", "不是有效的 JSON"),
    (lambda: dataclasses.replace(PRESETS["Llama-3-8B"], n_kv_heads=3), "error_divides", "KV 头数 n_kv_heads = 3"),
    (lambda: RunSettings(seq_len=0), "error_whole_number", "上下文长度 = 0"),
])
def test_backend_errors_are_keys_said_in_the_learners_language(call, key, zh):
    from models.checks import InputError
    with pytest.raises(InputError) as error:
        call()
    assert error.value.key == key and zh in error.value.render("zh-CN")


# Elements cached per token, all layers, from each model's config.json, by hand:
# Llama-2-7B (MHA)  2 · 32 layers · 32 KV heads · 128  = 262,144
# Llama-3-8B (GQA)  2 · 32 layers ·  8 KV heads · 128  =  65,536
# DeepSeek-V2 (MLA) 60 layers · (512 latent + 64 RoPE) =  34,560
KV_BY_HAND = {"Llama-2-7B": 262_144, "Llama-3-8B": 65_536, "DeepSeek-V2": 34_560}


@pytest.mark.parametrize("name", KV_BY_HAND)
def test_every_kv_cache_formula_of_the_app_agrees_with_the_hand_count(name):
    from models import kv_cache
    from models.calculator import kv_elements, kv_elements_per_token
    from models.calculator_verify import transformer_config
    spec, expected = PRESETS[name], KV_BY_HAND[name]
    assert kv_elements_per_token(spec) == expected
    assert transformer_config(spec, 16).cache_elements_per_token() == expected           # the one transformer
    assert kv_cache_bytes(spec, 1000, 3, "bf16") == expected * 1000 * 3 * 2
    if spec.is_mla:
        assert kv_elements(spec.n_layers, kv_latent_dim=512, rope_dim=64) == expected
    else:
        assert kv_elements(spec.n_layers, n_kv_heads=spec.kv_heads, head_dim=128) == expected
        assert kv_cache.kv_cache_bytes(spec.n_layers, spec.kv_heads, 128, 1000, 3, 2) == expected * 1000 * 3 * 2


# --------------------------------------------------------------------------- corrections of the review
def test_12_l_d2_fits_llama_2_7b_without_embeddings_and_says_why_it_fails_elsewhere():
    from models.calculator import rule_check
    c = rule_check(PRESETS["Llama-2-7B"])
    non_embedding = 6_738_415_616 - 2 * 32000 * 4096                    # the published total minus both matrices
    assert c.rule == 12 * 32 * 4096**2 and c.non_embedding == non_embedding
    assert c.off == pytest.approx(-0.0052, abs=5e-5) and c.reasons == ()  # SwiGLU at 11008 ≈ 8/3·4096
    from locales.calculator import STRINGS                              # the Explain states these figures
    figures = f"{-100 * c.off:.2f}%", f"{c.rule / 1e9:.2f} B", f"{c.non_embedding / 1e9:.2f} B"
    assert all(f in STRINGS[lang]["calc_explain"] for f in figures for lang in STRINGS), figures
    assert rule_check(PRESETS["Llama-3-8B"]).reasons == ("gqa", "ffn")  # 8 KV heads; 14336 = 3.5·d
    assert rule_check(PRESETS["Llama-3-8B"]).attention_d2 == (2 * 4096**2 + 2 * 4096 * 1024) / 4096**2
    assert "moe" in rule_check(PRESETS["Mixtral-8x7B"]).reasons
    gpt2 = rule_check(PRESETS["GPT-2 (124M)"])                          # MHA, 4d GELU: only the vocabulary
    assert gpt2.reasons == ("vocab",) and round(gpt2.embedding_share, 3) == round((50257 + 1024) * 768 / 124_439_808, 3)


@pytest.mark.parametrize("recipe,parts", [("mixed_bf16", (2, 2, 4, 8)), ("mixed_fp32_grads", (2, 4, 4, 8)),
                                          ("fp32", (4, 4, 0, 8)), ("adam_8bit", (2, 2, 4, 2))])
def test_training_recipes_are_named_sourced_and_add_up(recipe, parts):
    from locales import tr
    mem = training_memory(PRESETS["Llama-2-7B"], seq_len=2048, recipe=recipe, recompute="full")
    n = 6_738_415_616
    assert mem["bytes_per_param"] == sum(parts)
    assert [mem["parts"][k] for k in ("weights", "gradients", "master", "optimizer")] == [b * n for b in parts]
    for lang in ("en", "zh-CN"):
        assert str(sum(parts)) in tr(lang, f"calc_recipe_{recipe}") and tr(lang, f"calc_recipe_{recipe}_source")


def test_flash_attention_drops_the_scores_term_of_korthikanti():
    from models.calculator import activations
    spec, s = PRESETS["Llama-2-7B"], 4096
    eager = activations(spec, s, 2, "none", "eager")
    flash = activations(spec, s, 2, "none", "flash")
    assert eager.factor == 34 + 5 * 32 * s / 4096 and eager.bytes == 32 * s * 2 * 4096 * (34 + 5 * 32)
    assert flash.factor == 34 and flash.bytes == 32 * s * 2 * 4096 * 34
    assert activations(spec, s, 2, "full", "eager").bytes == 32 * s * 2 * 4096 * 2


def test_3x_forward_and_6n_use_different_n():
    from models.calculator import compute_conventions
    c = compute_conventions(PRESETS["Llama-3-8B"], 4096)
    total, embedding = 8_030_261_248, 128256 * 4096
    attention = 2 * 32 * 4096 * 32 * (128 + 128)
    assert c.six_n == 6 * total and c.n_matmul == total - embedding
    assert c.three_forward == 3 * (2 * (total - embedding) + attention)
    assert round(c.ratio, 3) == 1.068                                   # ≈ 7% apart at 4K


# Published configs (config.json on the Hub), written out here; totals summed from the released tensors.
GEMMA_2B = {"architectures": ["GemmaForCausalLM"], "model_type": "gemma", "head_dim": 256,
            "hidden_act": "gelu_pytorch_tanh", "hidden_size": 2048, "intermediate_size": 16384,
            "max_position_embeddings": 8192, "num_attention_heads": 8, "num_hidden_layers": 18,
            "num_key_value_heads": 1, "rms_norm_eps": 1e-06, "vocab_size": 256000}          # google/gemma-2b
PHI_2 = {"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_act": "gelu_new", "hidden_size": 2560,
         "intermediate_size": 10240, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
         "partial_rotary_factor": 0.4, "tie_word_embeddings": False, "vocab_size": 51200}   # microsoft/phi-2
PHI_3_MINI = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_act": "silu", "hidden_size": 3072,
              "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
              "num_key_value_heads": 32, "tie_word_embeddings": False, "vocab_size": 32064}  # Phi-3-mini-4k


def test_gemmas_gated_gelu_mlp_has_three_matrices():
    """Regression: ``hidden_act: gelu_pytorch_tanh`` made Gemma's gated MLP (gate, up, down) a 2-matrix MLP,
    and its untied default (Gemma ties the LM head) counted the 524M vocabulary matrix twice."""
    counts = count_params(spec_from_config(json.dumps(GEMMA_2B)))
    assert counts["parts"]["ffn"] == 18 * 3 * 2048 * 16384
    assert counts["total"] == 2_506_172_416                              # google/gemma-2b, all tensors


# google/gemma-3-12b-it's config.json as published: a vision-language model whose sparse text_config leaves
# vocab_size (262,208) and head_dim (256) to Gemma3TextConfig's defaults.
GEMMA_3_12B = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
               "text_config": {"hidden_size": 3840, "intermediate_size": 15360, "model_type": "gemma3_text",
                               "num_attention_heads": 16, "num_hidden_layers": 48, "num_key_value_heads": 8,
                               "sliding_window": 1024},
               "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model", "num_hidden_layers": 27}}


def test_gemma_3_reads_its_text_config_and_counts_a_gated_mlp():
    spec = spec_from_config(json.dumps(GEMMA_3_12B))
    counts = count_params(spec)
    d, f, L, hd = 3840, 15360, 48, 256
    assert counts["parts"]["ffn"] == L * 3 * d * f                       # gate, up, down
    assert counts["parts"]["attention"] == L * (d * 16 * hd + 2 * d * 8 * hd + 16 * hd * d)
    assert spec.vocab_size == 262_208 and spec.tied_embeddings        # the LM head is the embedding
    assert 11.5e9 < counts["total"] < 12.0e9                             # "12B" with a ~0.4B vision tower left out


def test_the_gemma_3_preset_is_its_published_config_and_transformers_count():
    """The preset is what the pasted config reads as, and as many parameters as transformers 5.23's
    Gemma3ForCausalLM built on the meta device from that text_config: 11,766,034,176 (vocabulary
    262,208 and head_dim 256 from Gemma3TextConfig's defaults). 40 of its 48 layers keep 1,024 positions."""
    preset = PRESETS["Gemma-3-12B"]
    assert preset == dataclasses.replace(spec_from_config(json.dumps(GEMMA_3_12B)), name="Gemma-3-12B")
    assert count_params(preset)["total"] == 11_766_034_176
    per_position = 2 * 8 * 256                                          # K and V, 8 KV heads of 256, a layer
    assert kv_cache_bytes(preset, 131072, 1, "bf16") == (8 * 131072 + 40 * 1024) * per_position * 2


def test_config_defaults_fill_what_is_missing_and_only_decoders_text_configs_are_read():
    sparse = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "hidden_size": 2560,
                                                      "intermediate_size": 10240, "num_hidden_layers": 34,
                                                      "head_dim": None}}     # google/gemma-3-4b-it, sparse
    spec = spec_from_config(json.dumps(sparse))
    assert (spec.n_heads, spec.kv_heads, spec.head_dim, spec.vocab_size) == (8, 4, 256, 262_208)   # the class's
    clip = {"model_type": "clip", "text_config": {"model_type": "clip_text_model", "hidden_size": 512,
                                                  "num_hidden_layers": 12, "num_attention_heads": 8}}
    from models.checks import InputError
    with pytest.raises(InputError):                                      # an encoder: not read as a decoder
        spec_from_config(json.dumps(clip))


def test_phi_mlps_plain_and_gated():
    phi2 = count_params(spec_from_config(json.dumps(PHI_2)))
    assert phi2["parts"]["ffn"] == 32 * (2 * 2560 * 10240 + 10240 + 2560)   # fc1, fc2 with biases
    # Published 2,779,683,840: Phi-2 has one LayerNorm per layer (parallel block) and an LM-head bias,
    # which this calculator does not model (+32·2·2560 - 51200).
    assert phi2["total"] - 2_779_683_840 == 32 * 2 * 2560 - 51200
    assert count_params(spec_from_config(json.dumps(PHI_3_MINI)))["total"] == 3_821_079_552


# --------------------------------------------------------------------------- KV-cache layouts (YOCO)
def test_a_windowed_models_layouts_use_its_own_window():
    """Gemma-3-12B's sliding-window layout and its YOCO used Mistral's W = 4,096 beside its own 1,024 (a
    learner's trial found the figure at odds with the model's fields); a model without a window keeps
    Mistral's. By hand, bf16: 48 layers · 4,096 numbers · min(T, 1,024) · 2 B."""
    from models.kv_layouts import kv_layouts
    gemma = kv_layouts(PRESETS["Gemma-3-12B"])
    at = gemma.contexts.index(131072)
    assert gemma.window == 1024
    assert gemma.bytes["sliding"][at] == 48 * 4096 * 1024 * 2
    assert gemma.bytes["yoco"][at] == (24 * 4096 * 1024 + 4096 * 131072) * 2
    assert kv_layouts(PRESETS["Llama-3-8B"]).window == 4096
    assert "this model's W" in layouts_markdown(gemma, PRESETS["Gemma-3-12B"], "en")


def test_yoco_sliding_window_and_mla_by_hand_for_llama_3_8b():
    from models.kv_layouts import kv_layouts
    lay = kv_layouts(PRESETS["Llama-3-8B"], dtype="bf16", batch=1)
    at = {k: dict(zip(lay.contexts, v)) for k, v in lay.bytes.items()}
    e, L, W = 2 * 8 * 128, 32, 4096                                    # one layer's K and V per token
    for T in (1024, 131_072, 1_048_576):
        assert at["standard"][T] == L * e * T * 2
        assert at["sliding"][T] == L * e * min(T, W) * 2
        assert at["yoco"][T] == (L // 2 * e * min(T, W) + e * T) * 2   # self-decoder + one global cache
        assert at["mla"][T] == L * (512 + 64) * T * 2                   # DeepSeek-V2's sizes, for comparison
    assert lay.ratios == {131_072: (16 * 4096 + 131_072) / (32 * 131_072),             # 0.046875
                          1_048_576: (16 * 4096 + 1_048_576) / (32 * 1_048_576)}       # 0.0332 -> 1/32
    assert lay.contexts == sorted(lay.contexts) and lay.contexts[0] == 1024 and lay.contexts[-1] == 1_048_576


def test_layouts_of_an_mla_model_compare_with_its_own_heads():
    from models.kv_layouts import kv_layouts
    lay = kv_layouts(PRESETS["DeepSeek-V2"], dtype="bf16", batch=2)
    T = 131_072
    at = {k: dict(zip(lay.contexts, v)) for k, v in lay.bytes.items()}
    assert lay.mla_own and at["mla"][T] == kv_cache_bytes(PRESETS["DeepSeek-V2"], T, 2, "bf16") == 60 * 576 * T * 2 * 2
    assert at["standard"][T] == 60 * 128 * (192 + 128) * T * 2 * 2      # 128 heads: key 128 + 64, value 128


@pytest.mark.parametrize("weight_dtype,kv_dtype", [("int4", "bf16"), ("bf16", "fp8"), ("fp16", "fp16")])
def test_the_crossover_weighs_the_weights_in_their_own_dtype(weight_dtype, kv_dtype):
    """Regression: the crossover and the KV figure's weights line costed the weights at the KV cache's
    dtype, so int4 weights with a bf16 cache were said to be outgrown at 122,533 tokens, not 30,634."""
    from models.calculator import kv_curve
    spec = PRESETS["Llama-3-8B"]
    a = analyze(spec, RunSettings(weight_dtype=weight_dtype, kv_dtype=kv_dtype))
    weights = a.inference["parts"]["weights"]                             # what the memory bars show
    assert weights == math.ceil(8_030_261_248 * {"int4": 0.5, "bf16": 2, "fp16": 2}[weight_dtype])
    per_token = 2 * 32 * 8 * 128 * {"bf16": 2, "fp8": 1, "fp16": 2}[kv_dtype]    # K and V, 32 layers, GQA-8
    assert a.crossover_tokens == math.ceil(8_030_261_248 * {"int4": 0.5, "bf16": 2, "fp16": 2}[weight_dtype] / per_token)
    assert kv_cache_bytes(spec, a.crossover_tokens, 1, kv_dtype) >= weights > kv_cache_bytes(
        spec, a.crossover_tokens - 1, 1, kv_dtype)
    _, _, weights_gib = kv_curve(spec, 1, kv_dtype, weight_dtype)
    assert weights_gib * GiB == pytest.approx(weights)


# --------------------------------------------------------------------------- config.json of each family
# A small config of each model_type (the keys its published configs use), counted by transformers itself:
# the model built from it on the meta device, every parameter's numel summed.
SMALL = dict(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, tie_word_embeddings=False)
FAMILIES = {
    "llama": {}, "mistral": {}, "phi3": {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
    "qwen2": {"attention_bias": True},                                     # q, k, v biases; never on o_proj
    "qwen3": {"head_dim": 32},                                             # q_norm, k_norm per head
    "gemma": {"head_dim": 16, "tie_word_embeddings": True},
    "gemma2": {"head_dim": 16, "tie_word_embeddings": True},              # four norms per layer
    "gemma3_text": {"head_dim": 16, "tie_word_embeddings": True},         # four norms and q/k norms
    "starcoder2": {}, "gpt_neox": {},                                      # no GQA: num_key_value_heads ignored
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen2_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24,
                  "shared_expert_intermediate_size": 48},                   # a gated shared expert of 2 × 24
    "qwen2_moe/first dense": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24,
                              "shared_expert_intermediate_size": 24, "mlp_only_layers": [0]},
    "qwen3_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24, "head_dim": 16},
    "olmoe": {"num_experts": 4, "num_experts_per_tok": 2},                 # experts intermediate_size wide
    "olmo2": {},                                                           # q and k normalised over all heads
    "deepseek_v2": {"n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
                    "moe_intermediate_size": 24, "first_k_dense_replace": 1, "kv_lora_rank": 16, "q_lora_rank": 24,
                    "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16, "num_key_value_heads": 4},
}


@pytest.mark.parametrize("family", FAMILIES)
def test_each_familys_config_counts_as_transformers_builds_it(family):
    """Regression: Qwen2/3-MoE and OLMoE name their experts ``num_experts``, which was not read (Qwen3-30B-A3B
    counted as a dense 3.3B); Qwen2's q, k, v biases, Qwen3's and Gemma 3's q/k norms and Gemma 2's four norms
    per layer were left out; OLMoE's q and k norms over all heads were not counted."""
    transformers = pytest.importorskip("transformers")
    model_type = family.split("/")[0]
    config = {"model_type": model_type, **SMALL, **FAMILIES[family]}
    hf_config = transformers.AutoConfig.for_model(model_type, **{k: v for k, v in config.items() if k != "model_type"})
    with torch.device("meta"):
        hf = transformers.AutoModelForCausalLM.from_config(hf_config)
    reference = sum(p.numel() for p in hf.parameters())
    spec = spec_from_config(json.dumps(config))
    counted = count_params(spec)["total"]
    assert counted == reference
    if spec.is_moe:
        assert spec.n_experts == 4
    built = verify(spec, seq_len=8)                   # the app's own transformer in the same shape
    assert built.formula_params == built.built_params and built.ok


def test_qwen_moe_dense_layers_must_come_first():
    config = {"model_type": "qwen3_moe", **SMALL, "num_experts": 4, "num_experts_per_tok": 2}
    assert spec_from_config(json.dumps({**config, "mlp_only_layers": [0, 1]})).first_dense_layers == 2
    from models.checks import InputError
    for dense in ({"mlp_only_layers": [2]}, {"decoder_sparse_step": 2}):
        with pytest.raises(InputError, match="must be the first ones"):
            spec_from_config(json.dumps({**config, **dense}))
    # Checked before they size anything: a public Space must not loop over 10⁹ layers; 2.0 is 2.
    assert spec_from_config(json.dumps({**config, "num_hidden_layers": 2.0})).n_layers == 2
    for bad in ({"num_hidden_layers": 10**9, "decoder_sparse_step": 2}, {"num_hidden_layers": "x"},
                {"first_k_dense_replace": 1.5}, {"moe_intermediate_size": [1]}):
        with pytest.raises(InputError, match="must be a whole number"):
            spec_from_config(json.dumps({**config, **bad}))
    with pytest.raises(InputError, match="whole number of experts"):
        spec_from_config(json.dumps({**config, "model_type": "qwen2_moe", "moe_intermediate_size": 24,
                                     "shared_expert_intermediate_size": 30}))


@pytest.mark.parametrize("preset", ["GPT-2 (124M)", "Llama-3-8B", "DeepSeek-V2", "DeepSeek-V2-Lite", "qwen2"])
def test_the_attention_formula_shown_adds_up_to_the_count(preset):
    """Regression: DeepSeek-V2's MLA formula was shown without its query compression (q_lora_rank = 1536):
    evaluated, 229,442,048 per layer where 149,227,520 were counted; GPT-2's left out its biases."""
    spec = PRESETS.get(preset) or spec_from_config(json.dumps({"model_type": preset, **SMALL}))   # q, k, v biases
    formula, values = analyze(spec, RunSettings(seq_len=1024)).attention_formula
    per_layer = count_params(spec)["parts"]["attention"] // spec.n_layers
    assert eval(values.replace("·", "*")) == per_layer                     # noqa: S307 (digits and + · ( ) only)
    names = dict(d=spec.d_model, H=spec.n_heads, hd=spec.hd, n_kv=spec.kv_heads, r_q=spec.q_lora_rank,
                 r_kv=spec.kv_lora_rank, nope=spec.qk_nope_head_dim, rope=spec.qk_rope_head_dim, v=spec.v_head_dim)
    assert eval(formula.replace("·", "*"), {}, names) == per_layer          # noqa: S307


def test_wide_heads_are_not_called_gqa():
    """Regression: Gemma-7B (MHA, 16 heads of 256 = 4,096 wide at d = 3,072) was told its attention
    misses 4·d² because GQA or MQA share K and V: it has neither; its heads are wider than d."""
    from models.calculator import rule_check
    gemma_7b = {"model_type": "gemma", "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
                "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "vocab_size": 256000}
    check = rule_check(spec_from_config(json.dumps(gemma_7b)))
    assert check.attention_d2 == pytest.approx(4 * 4096 / 3072)          # q, k, v, o: 4 · d · 4096 / d²
    assert "gqa" not in check.reasons and "head_dim" in check.reasons
    assert rule_check(PRESETS["Llama-3-8B"]).reasons[0] == "gqa"
    from viz.calculator import summary_markdown
    text = summary_markdown(analyze(spec_from_config(json.dumps(gemma_7b)), RunSettings()))
    assert "H·hd = 4,096 wide, not d = 3,072" in text


@pytest.mark.parametrize("extra", ["attn_bias", "qkv_bias", "qk_norm"])
def test_mla_refuses_what_it_does_not_count(extra):
    """Regression (review): ticking qkv_bias or qk_norm on an MLA spec was counted as nothing while the built
    transformer grew biases and norms, so Verify showed a mismatch."""
    from models.checks import InputError
    with pytest.raises(InputError, match="MLA .* has no attention biases and no q/k norms"):
        dataclasses.replace(PRESETS["DeepSeek-V2-Lite"], **{extra: True})


def test_qk_norms_over_all_heads_by_hand():
    """OLMoE-style q/k norms add H·hd + n_kv·hd RMSNorm weights per layer where Qwen3's add 2·hd, and need
    qk_norm ticked."""
    from models.checks import InputError
    base = dataclasses.replace(PRESETS["Llama-3-8B"], qk_norm=True)        # 32 layers, 32 heads, 8 KV, hd 128
    per_head = count_params(base)["parts"]["norms"]
    every = count_params(dataclasses.replace(base, qk_norm_all=True))["parts"]["norms"]
    assert every - per_head == 32 * (32 * 128 + 8 * 128 - 2 * 128)
    with pytest.raises(InputError, match="tick qk_norm too"):
        dataclasses.replace(base, qk_norm=False, qk_norm_all=True)


def test_verify_allocates_every_cache_dtype_the_calculator_offers():
    """Each dtype of the KV dropdown is allocated as itself (int4 packed two to a byte), equal to the formula."""
    from models.calculator import DTYPE_BYTES, PRESETS
    from models.calculator_verify import KV_TORCH_DTYPES, verify
    assert set(KV_TORCH_DTYPES) == set(DTYPE_BYTES)
    for name, nbytes in DTYPE_BYTES.items():
        v = verify(PRESETS["Mistral-7B v0.1"], seq_len=8, kv_dtype=name)
        assert (v.kv_dtype, v.built_kv_bytes, v.ok) == (name, int(2 * 32 * 8 * 128 * 8 * nbytes), True)


def test_a_context_past_learned_positions_is_refused():
    """Regression: the GPT-2 preset was costed at the default 4,096 tokens, past its 1,024 learned positions."""
    from models.calculator import fit_context
    from models.checks import InputError
    gpt2 = PRESETS["GPT-2 (124M)"]
    assert gpt2.learned_positions == 1024                                  # n_positions in GPT-2's config.json
    with pytest.raises(InputError, match="context length = 4,096: GPT-2 \\(124M\\) learns 1,024 positions"):
        analyze(gpt2, RunSettings(seq_len=4096))
    assert analyze(gpt2, RunSettings(seq_len=1024)).params["total"] == 124_439_808
    assert fit_context(1024, 4096) == 1024 and fit_context(0, 10**6) == 10**6   # rotary: any context


@pytest.mark.parametrize("field, low, high", [("d_model", 1, 1_000_000), ("n_layers", 1, 1_000),
                                              ("n_heads", 1, 4_096), ("head_dim", 0, 1_000_000),
                                              ("learned_positions", 0, 10_000_000), ("n_experts", 0, 1_024)])
def test_a_field_names_one_range_below_it_and_above_it(field, low, high):
    """Regression: d_model = 0 was "from 1 to 1000000" and d_model = 1,000,001 "from 0 to 1000000" (the
    UI's fields were first checked against one range for all). Ranges as models/limits.py sets them."""
    from models.calculator import fields_of, spec_from_fields
    values = fields_of(PRESETS["GPT-2 (124M)"])
    for bad in (low - 1, high + 1):
        with pytest.raises(ValueError, match=f"{field} = {bad}: must be a whole number from {low} to {high}$"):
            spec_from_fields({**values, field: bad})


def test_a_rule_that_lands_close_by_cancelling_errors_says_so():
    """Regression: for Llama-3.1-405B (its config.json: d = 16,384, 126 layers, 128 heads, 8 KV heads, FFN
    53,248) 12·L·d² lands within +1.05 % of N, yet the verdict read "It fails here": right about the
    reasons (GQA and the wider FFN cancel), odd beside a 1 % match. GPT-2's large vocabulary is about the
    total, not N: its verdict stays "fails"."""
    from models.calculator import rule_check
    from viz.calculator import summary_markdown
    llama405 = ModelSpec("Llama-3.1-405B", vocab_size=128256, d_model=16384, n_layers=126, n_heads=128,
                         n_kv_heads=8, ffn_dim=53248)
    check = rule_check(llama405)
    assert check.off == pytest.approx(0.0105, abs=5e-4) and check.reasons == ("gqa", "ffn") and check.cancels
    assert not rule_check(PRESETS["GPT-2 (124M)"]).cancels and not rule_check(PRESETS["Llama-3-8B"]).cancels
    assert "only because the errors cancel" in summary_markdown(analyze(llama405, RunSettings()))
    assert "It fails here" in summary_markdown(analyze(PRESETS["Llama-3-8B"], RunSettings()))


def test_a_refusal_names_the_preset_or_says_custom_in_the_page_language():
    """Regression: GPT-2's preset with a context of 8,192 was refused as "custom 只学习了 1,024 个位置": the
    endpoint gets the fields, not the preset, and "custom" was not translated."""
    from models.calculator import fields_of, spec_from_fields
    from models.checks import InputError
    gpt2 = fields_of(PRESETS["GPT-2 (124M)"])
    with pytest.raises(InputError) as refused:
        analyze(spec_from_fields(gpt2), RunSettings(seq_len=8192))
    assert refused.value.render("zh-CN").startswith("上下文长度 = 8,192：GPT-2 (124M) 只学习了 1,024 个位置")
    with pytest.raises(InputError) as refused:
        analyze(spec_from_fields({**gpt2, "n_layers": 13}), RunSettings(seq_len=8192))
    assert "这个自定义模型 只学习了" in refused.value.render("zh-CN")
    assert "this custom model learns 1,024 positions" in refused.value.render("en")
    llama2 = fields_of(PRESETS["Llama-2-7B"])                          # MHA: n_kv_heads 0 reads as n_heads
    assert spec_from_fields({**llama2, "n_kv_heads": 0}).name == "Llama-2-7B"
    from models.calculator_verify import build_model
    with pytest.raises(InputError) as refused:                           # /calculate_verify's refusal too
        build_model(spec_from_fields({**llama2, "n_layers": 1000, "n_experts": 64, "top_k": 2}))
    assert refused.value.render("zh-CN").startswith("这个自定义模型 的模块太多")


def test_the_chinese_summary_uses_full_width_punctuation():
    """Regression: headlines read "<b>参数量</b>: 46.70 B (…); 每个词元激活 …", ASCII after Chinese text."""
    import re

    from viz.calculator import summary_markdown
    for preset in ("Mixtral-8x7B", "DeepSeek-V2"):
        text = summary_markdown(analyze(PRESETS[preset], RunSettings()), "zh-CN")
        assert "<b>参数量</b>：" in text and "）；每个词元激活" in text
        assert not re.findall(r"</b>: |[\u4e00-\u9fff）][;,:] ", text), preset


# --------------------------------------------------------------------------- sliding-window attention
SMALL_WINDOW = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=7, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=8, sliding_window=5, max_position_embeddings=64,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2)
WINDOWED = {"mistral": {}, "mixtral": {"num_local_experts": 2, "num_experts_per_tok": 1}, "phi3": {},
            "starcoder2": {}, "qwen2": {"use_sliding_window": True, "max_window_layers": 3},
            "qwen2/off": {"use_sliding_window": False}, "qwen3": {"use_sliding_window": True, "max_window_layers": 2},
            "qwen2/28 unsaid": {"use_sliding_window": True},             # its class's default: none of 7 layers
            "qwen3_moe": {"use_sliding_window": True, "num_experts": 2, "num_experts_per_tok": 1,
                          "moe_intermediate_size": 16},                   # no max_window_layers: every layer
            "qwen2_moe": {"use_sliding_window": True, "max_window_layers": 6, "num_experts": 2,
                          "num_experts_per_tok": 1, "moe_intermediate_size": 16,
                          "shared_expert_intermediate_size": 16},         # the even layers below 6: 3 of 7
            "gemma2": {}, "gemma3_text": {}, "gemma3_text/pattern 3": {"sliding_window_pattern": 3},
            "cohere2": {"sliding_window_pattern": 4}}


@pytest.mark.parametrize("family", WINDOWED)
@pytest.mark.parametrize("listed", [True, False], ids=["layer_types", "family rule"])
def test_a_windowed_cache_holds_what_transformers_keeps(family, listed):
    """Regression: the calculator counted every token on every layer, so Mistral-7B v0.1 cached 4 GiB at 32K
    (its layers keep 4,096: 0.5 GiB) and Gemma 3, 5 of 6 layers on a 1,024 window, five times its cache.
    The reference: transformers' own cache after 11 tokens, in a model built from each family's config
    (layer by layer: 11, or W − 1 = 4 on a sliding layer), plus the 12th token's own key and value, which
    it adds before attending. The config is read with its ``layer_types`` and, as older configs, without."""
    transformers = pytest.importorskip("transformers")
    model_type = family.split("/")[0]
    hf_config = transformers.AutoConfig.for_model(model_type, **SMALL_WINDOW, **WINDOWED[family])
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    with torch.no_grad():
        cache = model(torch.randint(0, 64, (1, 11)), use_cache=True).past_key_values
    attended = [layer.keys.shape[-2] + 1 for layer in cache.layers]      # (per layer) keys the 12th token reads
    config = {**hf_config.to_dict(), **WINDOWED[family]}                # the keys a published config.json has
    if not listed:
        config.pop("layer_types", None)
    spec = spec_from_config(json.dumps(config))
    assert (spec.sliding_layers, spec.sliding_window) == (attended.count(5), 5 if 5 in attended else 0)
    assert cached_positions(spec, 12) == sum(attended)
    per_position = 2 * 2 * 8                                                # K and V · 2 KV heads · head_dim 8
    assert kv_cache_bytes(spec, 12, 1, "fp32") == per_position * sum(attended) * 4


def test_mistral_keeps_its_window_and_the_crossover_weighs_what_each_layer_keeps():
    mistral = PRESETS["Mistral-7B v0.1"]
    assert kv_cache_bytes(mistral, 32768, 1, "bf16") == 32 * 4096 * 2 * 8 * 128 * 2     # 0.5 GiB, not 4
    assert kv_cache_bytes(mistral, 2048, 1, "bf16") == 32 * 2048 * 2 * 8 * 128 * 2
    assert cache_outgrows_weights(mistral) is None
    # Half the layers on a window of 1,024 (Gemma 2's pattern): past the window only the other half grows.
    half = dataclasses.replace(PRESETS["Llama-3-8B"], sliding_window=1024, sliding_layers=16)
    for weight_dtype in ("bf16", "int4"):
        t = cache_outgrows_weights(half, weight_dtype=weight_dtype)
        weights = count_params(half)["total"] * {"bf16": 2, "int4": 0.5}[weight_dtype]
        assert kv_cache_bytes(half, t - 1, 1, "bf16") < weights <= kv_cache_bytes(half, t, 1, "bf16")
    assert analyze(mistral, RunSettings(seq_len=32768)).inference["parts"]["kv_cache"] == 2**29
    # A query reads the keys its layer keeps: QKᵀ and AV over 4,096 of them, 32 heads of 128 + 128.
    assert flops_per_token(mistral, 32768)["attention"] == 2 * 32 * 4096 * 32 * (128 + 128)
    assert flops_per_token(mistral, 2048)["attention"] == flops_per_token(PRESETS["Llama-3-8B"], 2048)["attention"]
    verified = verify(dataclasses.replace(mistral, sliding_window=64), seq_len=128, kv_dtype="bf16")
    assert verified.ok and verified.seq_len == 64                   # checked where every layer holds them all


@pytest.mark.parametrize("changes,match", [
    (dict(sliding_window=4096), "sliding_window = 4096, sliding_layers = 0"),
    (dict(sliding_layers=4), "sliding_window = 0, sliding_layers = 4"),
    (dict(sliding_window=4096, sliding_layers=33), "sliding_layers = 33: must be a whole number from 0 to 32")])
def test_a_window_needs_its_width_and_its_layers(changes, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(PRESETS["Llama-3-8B"], **changes)
