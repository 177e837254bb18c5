"""Backend of the KV Cache tab against independent references: PyTorch's own attention and masks,
a per-head loop, complex-number RoPE, closed-form byte counts, the Calculator, the committed weights."""
import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from models.calculator import PRESETS, ModelSpec, kv_cache_bytes as calc_kv_cache_bytes
from models.device import wait_for
from models.generation import (GPTConfig, KVCache, TinyGPT, rope_rotate, generate, generate_steps, kv_cache_bytes,
                               mla_cache_bytes, rope_tables, side_by_side)
from models.kv_cache import cached_causal_mask, config_cache_bytes, decode_times, layer_cache, scale_up
from models.limits import KV_CONTEXT
from models.tiny_gpt import (CHECKPOINT_DIR, CORPUS, CharVocab, checkpoint_name, load_checkpoint, load_tiny_gpt, split_corpus,
                             check_prompt, stream_tiny_gpt, tiny_config, trained_configs, validation_loss, variant_sizes)

VARIANTS = {  # name -> config of a small random model
    "MHA": GPTConfig(37, 2, 32, 4, 4, 48),
    "GQA": GPTConfig(37, 2, 32, 4, 2, 48),
    "MQA": GPTConfig(37, 2, 32, 4, 1, 48),
    "MLA": GPTConfig(37, 2, 32, 4, 4, 48, attention="mla", kv_latent_dim=12, rope_dim=4),
}


def random_model(name: str, seed: int = 0) -> TinyGPT:
    torch.manual_seed(seed)
    model = TinyGPT(VARIANTS[name]).eval()
    with torch.no_grad():                       # larger than the init, so attention is far from uniform
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(4)
    return model


# --------------------------------------------------------------------------- config
@pytest.mark.parametrize("kwargs,message", [
    (dict(n_kv_heads=3), "n_kv_heads = 3 must divide n_heads = 4"),
    (dict(n_kv_heads=8), "n_kv_heads = 8: must be a whole number from 1 to 4"),
    (dict(n_kv_heads=0), "n_kv_heads = 0: must be a whole number from 1 to 4"),
    (dict(n_heads=5), "n_heads = 5 must divide d_model = 32"),
    (dict(attention="mla", kv_latent_dim=0), "kv_latent_dim = 0: must be a whole number from 1"),
    (dict(attention="mla", kv_latent_dim=None), "kv_latent_dim = (empty, or not a finite number)"),
    (dict(attention="mla", kv_latent_dim=8, n_kv_heads=2), "n_kv_heads = 2 must equal n_heads = 4"),
    (dict(attention="mla", kv_latent_dim=8, rope_dim=3), "width 3 must be even"),
    (dict(kv_latent_dim=8), "kv_latent_dim, q_latent_dim and rope_dim are MLA settings"),
    (dict(attention="gqa"), "attention = 'gqa': must be one of mha, mla"),
])
def test_config_rejects_with_a_message_naming_the_field(kwargs, message):
    base = dict(vocab_size=10, n_layers=1, d_model=32, n_heads=4, n_kv_heads=4, max_seq_len=8)
    with pytest.raises(ValueError, match=re.escape(message)):
        GPTConfig(**(base | kwargs))


def test_variant_names():
    assert [cfg.variant for cfg in VARIANTS.values()] == list(VARIANTS)
    assert VARIANTS["GQA"].group_size == 2


# --------------------------------------------------------------------------- RoPE and the mask
def test_rope_equals_complex_rotation():
    """Rotate-half RoPE = multiplying (x_i + i·x_{i+d/2}) by e^{i·t·θ_i}, θ_i = base^(−2i/d)."""
    T, d = 7, 8
    x = torch.randn(2, T, d, dtype=torch.float64)
    cos, sin = rope_tables(T, d)
    got = rope_rotate(x, cos.double(), sin.double())
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.complex(x[..., : d // 2], x[..., d // 2:]) * torch.polar(torch.ones(T, d // 2, dtype=torch.float64),
                                                                       torch.arange(T)[:, None] * theta)
    torch.testing.assert_close(got, torch.cat([z.real, z.imag], -1), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("T,S", [(1, 1), (1, 9), (3, 3), (3, 8), (5, 6)])
def test_cached_mask_is_pytorch_causal_lower_right(T, S):
    assert torch.equal(cached_causal_mask(T, S), causal_lower_right(T, S)._materialize())
    if T < S:                                     # top-left alignment (is_causal) would differ
        assert not torch.equal(cached_causal_mask(T, S), torch.ones(T, S).tril().bool())


# --------------------------------------------------------------------------- attention against a reference
def reference_attention(attn, x: torch.Tensor, cos, sin) -> torch.Tensor:
    """One head at a time with explicit keys and values (MLA: decompressed from the latent), causal."""
    cfg = attn.cfg
    B, T, _ = x.shape
    H, hd = cfg.n_heads, cfg.head_dim
    q_all, a, b = attn.qkv(x).split(attn.split, -1)
    causal = torch.ones(T, T).tril().bool()
    heads = []
    for h in range(H):
        if cfg.attention == "mla":
            dr, r = cfg.rope_width, cfg.kv_latent_dim
            qh = q_all.view(B, T, H, hd + dr)[:, :, h]                        # (B, T, hd + dr)
            c = attn.kv_norm(a)                                               # (B, T, r)
            w = attn.kv_up.weight.view(H, 2 * hd, r)[h]                       # (2·hd, r)
            k_nope, v = c @ w[:hd].T, c @ w[hd:].T                            # decompressed: (B, T, hd)
            k = torch.cat([k_nope, rope_rotate(b, cos, sin)], -1)             # + the shared RoPE key
            q = torch.cat([qh[..., :hd], rope_rotate(qh[..., hd:], cos, sin)], -1)
        else:
            g = h // (H // cfg.n_kv_heads)                                    # the KV head of query head h
            q = rope_rotate(q_all.view(B, T, H, hd)[:, :, h], cos, sin)
            k = rope_rotate(a.view(B, T, -1, hd)[:, :, g], cos, sin)
            v = b.view(B, T, -1, hd)[:, :, g]
        scores = (q @ k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        heads.append(torch.softmax(scores.masked_fill(~causal, -math.inf), -1) @ v)
    return attn.out(torch.cat(heads, -1))


@pytest.mark.parametrize("name", list(VARIANTS))
def test_attention_equals_per_head_reference(name):
    model = random_model(name)
    attn = model.blocks[0].attn
    x = torch.randn(2, 9, model.config.d_model)
    cos, sin = model.rope(0, 9, x.device)
    with torch.no_grad():
        torch.testing.assert_close(attn(x, (cos, sin)), reference_attention(attn, x, cos, sin),
                                   atol=1e-5, rtol=1e-4)


# --------------------------------------------------------------------------- cache = no cache
@pytest.mark.parametrize("name", list(VARIANTS))
def test_cached_steps_give_the_full_forward_logits(name):
    """Prefill 5, one token, a chunk of 3 (bottom-right mask), one more: each step's logits equal the
    full forward's at the same positions."""
    model = random_model(name)
    ids = torch.randint(0, model.config.vocab_size, (2, 10), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full, _ = model(ids, use_cache=False)                                  # (2, 10, vocab)
        cache = KVCache(model.config, batch=2, capacity=10)
        for start, end in [(0, 5), (5, 6), (6, 9), (9, 10)]:
            logits, cache = model(ids[:, start:end], cache)
            torch.testing.assert_close(logits, full[:, start:end], atol=2e-5, rtol=1e-4)
            assert cache.length == end


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_generation_is_identical_with_and_without_cache(name, temperature):
    model = random_model(name, seed=1)
    prompt = [1, 5, 7, 2]
    with_cache = generate(model, prompt, 30, temperature=temperature, seed=11)
    without = generate(model, prompt, 30, use_cache=False, temperature=temperature, seed=11)
    assert with_cache.new_tokens == without.new_tokens
    assert len(set(with_cache.new_tokens)) > 3                                 # not a degenerate repeat
    assert without.cache_bytes == [0] * 30 and len(with_cache.step_ms) == 30


@pytest.mark.parametrize("variant", ["mha", "gqa", "mqa", "mla"])
def test_trained_models_greedy_identical_with_and_without_cache(variant):
    loaded = load_tiny_gpt(variant, n_kv_heads=2, kv_latent_dim=32)
    assert loaded.trained
    prompt = loaded.vocab.encode("She opened the door and")
    cached = generate(loaded.model, prompt, 120)
    assert cached.new_tokens == generate(loaded.model, prompt, 120, use_cache=False).new_tokens


def test_side_by_side_pairs_steps_and_draws_the_picture():
    model = random_model("GQA")
    pairs = list(side_by_side(model, [1, 2, 3], 12, picture_interval_s=3600))
    assert [p.step for p in pairs] == list(range(12))
    assert all(p.cached.token == p.uncached.token for p in pairs)
    assert pairs[0].picture is not None and pairs[-1].picture is not None     # first and last always
    assert all(p.picture is None for p in pairs[1:-1])
    L, rows, T = (len(pairs[-1].picture), len(pairs[-1].picture[0]), len(pairs[-1].picture[0][0]))
    assert (L, rows, T) == (2, 4, 3 + 11)                                      # K0 K1 V0 V1; prompt + 11 fed


# --------------------------------------------------------------------------- what is cached, and its bytes
def test_bytes_follow_the_formula_and_shrink_4_2_1():
    prompt = [3, 1, 4, 1, 5]
    traces = {n: generate(random_model(n), prompt, 8) for n in ("MHA", "GQA", "MQA")}
    for name, trace in traces.items():
        cfg = VARIANTS[name]
        expected = [kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, T, bytes_per_elem=4)
                    for T in range(5, 13)]
        assert trace.cache_bytes == expected
        assert trace.cache_bytes_per_layer[-1] == [expected[-1] // cfg.n_layers] * cfg.n_layers
    mha, gqa, mqa = (traces[n].cache_bytes[-1] for n in ("MHA", "GQA", "MQA"))
    assert (mha / mqa, gqa / mqa) == (4, 2)


def test_kv_cache_bytes_by_hand_and_against_the_calculator():
    assert kv_cache_bytes(2, 3, 4, 5, batch=6, bytes_per_elem=2) == 2 * 2 * 3 * 4 * 5 * 6 * 2
    assert kv_cache_bytes(32, 8, 128, 8192) == 2**30                           # Llama-3-8B, fp16: 1 GiB
    spec = ModelSpec("tiny", vocab_size=37, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2)
    assert kv_cache_bytes(2, 2, 8, 100, 3, 2) == calc_kv_cache_bytes(spec, 100, 3, "fp16")
    ds = PRESETS["DeepSeek-V2"]
    assert mla_cache_bytes(60, 512, 64, 1000) == calc_kv_cache_bytes(ds, 1000, 1, "bf16") == 60 * 576 * 1000 * 2


def test_mla_caches_only_the_latent_and_the_rope_key():
    model = random_model("MLA")
    cfg = model.config
    ids = torch.tensor([[4, 8, 15, 16, 23]])
    with torch.no_grad():
        _, cache = model(ids)
        assert len(cache.buffers) == 1 and cache.buffers[0].shape[-1] == cfg.kv_latent_dim + cfg.rope_width
        with pytest.raises(AttributeError, match="holds latent, not keys"):
            cache.keys
        assert cache.nbytes() == mla_cache_bytes(cfg.n_layers, cfg.kv_latent_dim, cfg.rope_width, 5, bytes_per_elem=4)
        # layer 0 by hand: c = RMSNorm(W_DKV h), k^R = RoPE(W_KR h), h = the normed embeddings
        block = model.blocks[0]
        h = block.attn_norm(model.embed(ids))
        _, c, k_rope = block.attn.qkv(h).split(block.attn.split, -1)
        torch.testing.assert_close(cache.latent[0, :, 0, :5], block.attn.kv_norm(c))
        torch.testing.assert_close(cache.rope_keys[0, :, 0, :5], rope_rotate(k_rope, *model.rope(0, 5, ids.device)))


def test_gqa_caches_n_kv_heads_of_keys_and_values():
    model = random_model("GQA")
    with torch.no_grad():
        _, cache = model(torch.tensor([[1, 2, 3]]))
    assert cache.keys.shape == (2, 1, 2, 48, 8) and cache.values.shape == cache.keys.shape
    assert cache.nbytes() == kv_cache_bytes(2, 2, 8, 3, bytes_per_elem=4)
    assert cache.capacity_nbytes() == kv_cache_bytes(2, 2, 8, 48, bytes_per_elem=4)


def test_cache_is_preallocated_and_written_in_place():
    model = random_model("MQA")
    steps = generate_steps(model, [1, 2, 3, 4], 20)
    _, cache = next(steps)
    pointers = {b.data_ptr() for b in cache.buffers}
    assert cache.capacity == 4 + 20 - 1
    for _, later in steps:
        assert later is cache and {b.data_ptr() for b in later.buffers} == pointers
    assert cache.length == cache.capacity


def test_cache_overflow_is_refused():
    model = random_model("MHA")
    cache = KVCache(model.config, capacity=3)
    with torch.no_grad(), pytest.raises(ValueError, match="3 positions: 0 are filled, 4 more do not fit"):
        model(torch.tensor([[1, 2, 3, 4]]), cache)


@pytest.mark.parametrize("prompt,n,message", [
    ([], 5, "the prompt is empty"),
    ([1] * 40, 9, "plus 9 new tokens is 49: the model's context is 48"),
    ([1], 0, "max_new_tokens = 0: must be a whole number ≥ 1"),
    ([1], 100_000, "plus 100000 new tokens"),
    ([99], 3, "token ids must be from 0 to 36"),
])
def test_generation_bounds(prompt, n, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        generate(random_model("MHA"), prompt, n)


# --------------------------------------------------------------------------- the committed model
def test_vocabulary_refuses_unknown_characters_by_name():
    vocab = load_tiny_gpt("mha").vocab
    assert vocab.decode(vocab.encode("The door.")) == "The door."
    with pytest.raises(ValueError, match=r"61 characters; these are not among them \(character, position\): '€' \(4\), '😀' \(6\)"):
        vocab.encode("cost€ 😀")


@pytest.mark.parametrize("variant", ["mha", "gqa", "mqa", "mla"])
def test_committed_weights_reproduce_their_validation_loss(variant):
    text = CORPUS.read_text(encoding="utf-8")
    vocab = CharVocab.of_text(text)
    config = trained_configs(len(vocab))[variant]
    loaded = load_checkpoint(CHECKPOINT_DIR / f"{checkpoint_name(config)}.pt")
    assert loaded.model.config == config.transformer() and loaded.vocab.chars == vocab.chars
    val = torch.tensor(vocab.encode(split_corpus(text)[1]))
    assert validation_loss(loaded.model, val) == pytest.approx(loaded.val_loss, abs=1e-4)
    assert loaded.val_loss < 1.9                 # far below uniform guessing over 61 characters (4.11)
    assert math.log(len(vocab)) > 4


def test_checkpoints_are_small():
    sizes = [p.stat().st_size for p in CHECKPOINT_DIR.glob("*.pt")]
    assert len(sizes) == 4 and sum(sizes) < 7e6


def test_the_trained_model_writes_english_and_random_weights_do_not():
    """Most words of its greedy text are words of the corpus; the same shape with random weights fails."""
    words = set(re.findall(r"[a-z]+", CORPUS.read_text(encoding="utf-8").lower()))

    def english_share(loaded) -> float:
        ids = loaded.vocab.encode("The morning was quiet, and ")
        text = loaded.vocab.decode(generate(loaded.model, ids, 300).new_tokens)
        found = re.findall(r"[a-z]+", text.lower())
        return sum(w in words for w in found) / max(1, len(found))

    assert english_share(load_tiny_gpt("mha")) > 0.8
    assert english_share(load_tiny_gpt("mla", kv_latent_dim=7)) < 0.5         # no checkpoint: random weights


def test_untrained_setting_is_built_with_random_weights_and_says_so():
    loaded = load_tiny_gpt("mla", kv_latent_dim=48)
    assert not loaded.trained and loaded.name == "mla-r48" and loaded.model.config.kv_latent_dim == 48


def test_stream_reports_bytes_and_identity():
    frames = list(stream_tiny_gpt("gqa", "The door", 15, n_kv_heads=2))
    info, last = frames[-1].info, frames[-1]
    assert info.trained and info.capacity == 8 + 15 - 1 and info.bytes_per_elem == 4
    assert last.identical and len(last.text) == 15
    assert last.pair.cached.cache_bytes == kv_cache_bytes(4, 2, 32, info.capacity, bytes_per_elem=4)
    with pytest.raises(ValueError, match="not among them \\(character, position\\): '7' \\(3\\)"):
        next(stream_tiny_gpt("mha", "abc7", 5))


def test_tiny_variants_and_their_sizes():
    assert variant_sizes(32) == {"MHA": 2 * 4 * 4 * 32, "GQA-2": 2 * 4 * 2 * 32, "MQA": 2 * 4 * 1 * 32,
                                 "MLA r=32": 4 * (32 + 16)}
    assert tiny_config("mha", 61).max_seq_len == KV_CONTEXT
    with pytest.raises(ValueError, match="kv_latent_dim = 0: must be a whole number from 1 to 128"):
        tiny_config("mla", 61, kv_latent_dim=0)
    with pytest.raises(ValueError, match="n_kv_heads = 3 must divide n_heads = 4"):
        tiny_config("gqa", 61, n_kv_heads=3)


# --------------------------------------------------------------------------- on paper
@pytest.mark.parametrize("name,gib_at_4k", [("Llama-2-7B", 2.0), ("Llama-3-8B", 0.5), ("Mistral-7B v0.1", 0.5)])
def test_scale_up_matches_published_numbers(name, gib_at_4k):
    """Llama-2-7B: 2·32·32·128·2 B = 512 KiB per token (the widely quoted 0.5 MB/token); GQA-8: 128 KiB."""
    s = scale_up(name, 4096, 1, "fp16")
    assert s.cache_bytes / 2**30 == gib_at_4k
    if name == "Mistral-7B v0.1":        # every layer keeps its last 4,096 tokens: no more at 1M, under the weights
        assert s.crossover_tokens is None and scale_up(name, 1_000_000, 1, "fp16").cache_bytes == s.cache_bytes
    else:
        assert s.crossover_tokens == math.ceil(s.weights_bytes / (s.elements_per_token * 2))


def test_scale_up_deepseek_v2_caches_576_numbers_per_layer():
    s = scale_up("DeepSeek-V2", 1, 1, "bf16")
    assert s.elements_per_token == 60 * (512 + 64)                           # DeepSeek-V2 §2.1.4: (d_c + d_h^R)·l
    assert s.baseline_bytes == 60 * 128 * (192 + 128) * 2
    with pytest.raises(ValueError, match="must be one of"):
        scale_up("GPT-5", 10)


def test_rope_tables_rotate_as_the_positions_tab_does():
    from models.positions import apply_rope
    x = torch.randn(2, 3, 17, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    cos, sin = rope_tables(17, 8, base=500.0)
    torch.testing.assert_close(rope_rotate(x, cos.double(), sin.double()), apply_rope(x, base=500.0, style="half"),
                               atol=1e-6, rtol=0)                   # the tables are float32


# --------------------------------------------------------------------------- what the tab shows
@pytest.mark.parametrize("variant,n_kv,latent,numbers", [("mha", 4, None, 2 * 4 * 32), ("gqa", 2, None, 2 * 2 * 32),
                                                         ("mqa", 1, None, 2 * 1 * 32), ("mla", 4, 32, 32 + 16)])
def test_layer_cache_against_mha_by_hand(variant, n_kv, latent, numbers):
    """Per layer and token MHA caches a key and a value of 32 numbers for each of the 4 query heads: 256."""
    layer = layer_cache(tiny_config(variant, 61, n_kv_heads=n_kv, kv_latent_dim=latent))
    assert (layer.numbers, layer.mha_numbers, layer.mha_numbers_all_layers) == (numbers, 256, 4 * 256)
    assert layer.fraction_of_mha == numbers / 256


def test_formula_bytes_equal_what_the_cache_tensors_hold():
    cfg = tiny_config("gqa", 61, n_kv_heads=2)
    cache = KVCache(cfg, capacity=9)
    for layer in range(4):
        cache.update(layer, torch.randn(1, 2, 7, 32), torch.randn(1, 2, 7, 32))
    cache.advance(7)
    assert config_cache_bytes(cfg, 7, 4) == cache.nbytes() == 2 * 4 * 2 * 32 * 7 * 4


def test_decode_times_by_hand():
    prefill, cached, uncached = 50.0, [1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0, 50.0]
    t = decode_times([prefill, *cached], uncached, window=3)
    assert (t.prefill_ms, t.cached_ms, t.uncached_ms) == (50.0, 2.5, 30.0)
    assert t.speedup == (30 + 40 + 50) / (2 + 3 + 4) and t.window == 3
    alone = decode_times([prefill], [12.0])                      # the prefill only: no decode step to compare
    assert (alone.cached_ms, alone.speedup, alone.window) == (50.0, None, 0)


def test_a_lone_slow_step_does_not_stretch_the_time_axis():
    """A learner saw every step squashed to the floor under one 20× step (the machine paused). The axis now
    ends above the running median of each series, the lone step is said, and a steady trend keeps autorange."""
    from viz.kv import growth_figure
    steps = 60
    cached = [8.0] + [1.0 + 0.01 * i for i in range(steps - 1)]
    uncached = [2.0 + 0.1 * i for i in range(steps)]                           # grows with the context: a trend
    spiked = cached.copy()
    spiked[30] = 120.0

    def drawn(ms):
        t = decode_times(ms, uncached)
        return growth_figure(64, "f", 1.0, {}, [1], [1], list(range(steps)), ms, uncached, t).to_plotly_json()

    layout = drawn(spiked)["layout"]
    top = layout["yaxis2"]["range"][1]
    assert max(uncached) < top < 120.0
    assert any("1 lone step off the top (slowest 120.0 ms)" in a["text"] for a in layout["annotations"])
    assert "range" not in drawn(cached)["layout"]["yaxis2"]                  # nothing above: plotly scales it


@pytest.mark.parametrize("name,per_token,ratio", [("Llama-2-7B", 2 * 32 * 32 * 128 * 2, 1),
                                                  ("Llama-3-8B", 2 * 32 * 8 * 128 * 2, 4)])
def test_scale_up_per_token_and_against_mha(name, per_token, ratio):
    s = scale_up(name, 4096, 1, "bf16")
    assert s.per_token_bytes == per_token and s.baseline_ratio == ratio      # 32 query heads share 32 or 8 KV heads


def test_check_prompt():
    assert check_prompt("The", 10.0) == 10
    with pytest.raises(ValueError, match="the prompt must be text"):
        check_prompt(None, 10)
    with pytest.raises(ValueError, match=re.escape("the prompt (500 tokens) plus 20 new tokens is 520")):
        check_prompt("x" * 500, 20)


# --------------------------------------------------------------------------- the fast decode step = the forward
FAST = {  # name -> a TransformerConfig that DecodeStep takes (float64: equal to float rounding)
    "MHA": dict(n_kv_heads=4),
    "GQA": dict(n_kv_heads=2),
    "MQA": dict(n_kv_heads=1),
    "layernorm, GELU, no positions": dict(n_kv_heads=2, norm="layernorm", ffn="gelu", positions="none"),
    "GEGLU, v_head_dim 6, tied": dict(n_kv_heads=2, ffn="geglu", v_head_dim=6, tie_embeddings=True),
}


@pytest.mark.parametrize("static", [False, True], ids=["narrowed", "static"])
@pytest.mark.parametrize("name", list(FAST))
def test_fast_decode_step_gives_the_full_forward_logits_and_cache(name, static):
    """Prefill 4 by the forward, then 8 fast steps: each step's logits equal the uncached full forward's
    at that position, and the cache equals the one the forward fills, to 1e-10 in float64. The static
    step (what a CUDA graph records: attention over the whole cache, later slots masked) too."""
    from models.transformer import Transformer, TransformerConfig
    from models.transformer.decode import DecodeStep, supports
    cfg = TransformerConfig(vocab_size=37, n_layers=2, d_model=32, n_heads=4, max_seq_len=16, **FAST[name])
    model = Transformer.seeded(cfg, seed=3, dtype=torch.float64).eval()
    with torch.no_grad():
        for p in model.parameters():                    # far from uniform attention, norms away from 1
            p.mul_(4) if p.dim() == 2 else p.uniform_(0.5, 1.5)
    ids = torch.randint(0, 37, (1, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full, _ = model(ids)                                                   # (1, 12, vocab), no cache
        fast_cache, slow_cache = model.new_cache(capacity=12), model.new_cache(capacity=12)
        model(ids[:, :4], fast_cache), model(ids[:, :4], slow_cache)
        step = DecodeStep(model, fast_cache, static=static)
        for t in range(4, 12):
            assert supports(model, fast_cache, ids[:, t:t + 1])
            logits = step(ids[:, t:t + 1])                                     # (1, 1, vocab)
            torch.testing.assert_close(logits, full[:, t:t + 1], atol=1e-10, rtol=1e-10)
            model(ids[:, t:t + 1], slow_cache)
    assert fast_cache.length == slow_cache.length == 12
    for fast, slow in zip(fast_cache.buffers, slow_cache.buffers):
        torch.testing.assert_close(fast, slow, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("change", [dict(attention="mla", kv_latent_dim=8), dict(placement="post"),
                                    dict(qk_norm=True), dict(sliding_window=4), dict(qkv_bias=True),
                                    dict(positions="alibi"), dict(positions="learned"),
                                    dict(ffn="moe", n_experts=2, top_k=1)])
def test_fast_decode_refuses_what_it_does_not_compute(change):
    from models.transformer import Transformer, TransformerConfig
    from models.transformer.decode import supports
    model = Transformer(TransformerConfig(vocab_size=37, n_layers=1, d_model=32, n_heads=4, max_seq_len=16, **change))
    plain = Transformer(TransformerConfig(vocab_size=37, n_layers=1, d_model=32, n_heads=4, max_seq_len=16))
    one = torch.tensor([[1]])
    assert not supports(model, model.new_cache(), one)
    assert supports(plain, plain.new_cache(), one)
    assert not supports(plain, plain.new_cache(batch=2), torch.tensor([[1], [2]]))     # a batch
    assert not supports(plain, plain.new_cache(), torch.tensor([[1, 2]]))              # a chunk
    assert not supports(plain.to(torch.bfloat16), plain.new_cache(), one)              # half precision


@pytest.mark.parametrize("name", ["MHA", "GQA", "MQA"])
def test_generate_takes_the_fast_path_and_keeps_the_tokens(name, monkeypatch):
    from models.transformer import decode
    model = random_model(name, seed=1)
    calls = []
    monkeypatch.setattr(decode.DecodeStep, "__call__",
                        lambda self, ids, original=decode.DecodeStep.__call__: calls.append(1) or original(self, ids))
    cached = generate(model, [1, 5, 7, 2], 30)
    assert len(calls) == 29                                                    # every step after the prefill
    assert cached.new_tokens == generate(model, [1, 5, 7, 2], 30, use_cache=False).new_tokens


def test_generation_records_its_step_before_timing_step_one(monkeypatch):
    """The CUDA graph's recording is set-up, not decoding: generate_steps asks for it after the prefill and
    before step 1's clock starts (on a CPU it records nothing; the order is what is checked here)."""
    from models import generation
    from models.transformer import decode
    events = []
    monkeypatch.setattr(decode.DecodeStep, "record", lambda self: events.append(("record", self.cache.length)))
    real_timed = generation.timed

    def timed(device):
        events.append(("clock",))
        return real_timed(device)
    monkeypatch.setattr(generation, "timed", timed)
    list(generation.generate_steps(random_model("GQA"), [1, 5, 7, 2], 4))
    assert events[:3] == [("clock",), ("record", 4), ("clock",)]        # (each call asks again: a no-op then)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
@pytest.mark.parametrize("name", ["MHA", "GQA"])
def test_cuda_decode_replays_a_graph_and_keeps_the_tokens(name):
    """On CUDA the decode step is recorded at its first call and replayed: the tokens are those of the
    uncached decode, and the logits of every step and the cache those of the plain forward."""
    from models.transformer.decode import DecodeStep
    model = random_model(name, seed=1).cuda()
    prompt = [1, 5, 7, 2]
    cached = generate(model, prompt, 30)
    assert cached.new_tokens == generate(model, prompt, 30, use_cache=False).new_tokens
    ids = torch.tensor([prompt + cached.new_tokens[:-1]], device="cuda")             # (1, 33)
    with torch.no_grad():
        full, _ = model(ids)
        cache, reference = model.new_cache(capacity=ids.shape[1]), model.new_cache(capacity=ids.shape[1])
        step = DecodeStep(model, cache)
        model(ids[:, :4], cache), model(ids, reference)
        for t in range(4, ids.shape[1]):
            torch.testing.assert_close(step(ids[:, t:t + 1]), full[:, t:t + 1], atol=1e-4, rtol=1e-4)
    assert step.graph is not None
    for mine, theirs in zip(cache.buffers, reference.buffers):
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_cuda_decode_without_its_graph_runs_as_on_a_cpu(monkeypatch):
    """A recording that fails leaves the step to its kernels one by one: the same tokens."""
    from models.transformer import decode
    model = random_model("GQA", seed=1).cuda()
    expected = generate(model, [1, 5, 7, 2], 20, use_cache=False).new_tokens

    def refuse(self, **kwargs):
        raise RuntimeError("capture refused (test)")
    monkeypatch.setattr(torch.cuda.CUDAGraph, "capture_begin", refuse)
    assert generate(model, [1, 5, 7, 2], 20).new_tokens == expected
    assert torch.cuda.current_stream() == torch.cuda.default_stream()         # the stream was given back


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_cuda_decodes_in_threads_side_by_side(caplog):
    """Learners' generations run in threads on CUDA: two at once, while a third thread keeps the device
    busy and waits for its own work, each records its graph and gets the tokens it gets alone."""
    import threading
    models = [random_model(name, seed=1).cuda() for name in ("MHA", "GQA")]
    alone = [generate(model, [1, 5, 7, 2], 40).new_tokens for model in models]
    together, errors, done = [None, None], [], threading.Event()

    def guarded(fn):
        def run(*args):
            try:
                fn(*args)
            except Exception as error:          # noqa: BLE001 (reported by the assertion below)
                errors.append(error)
        return run

    @guarded
    def other_tab():
        x = torch.randn(256, 256, device="cuda")
        while not done.is_set():
            x = (x @ x).tanh()
            wait_for(x.device)

    @guarded
    def learner(i):
        together[i] = generate(models[i], [1, 5, 7, 2], 40).new_tokens
    threads = [threading.Thread(target=learner, args=(i,)) for i in range(2)]
    noise = threading.Thread(target=other_tab)
    with caplog.at_level("WARNING", logger="models.transformer.decode"):
        noise.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        done.set()
        noise.join(5)
    assert errors == [] and together == alone
    assert "not recorded" not in caplog.text                               # both replayed their graphs


def test_a_model_that_generated_can_still_train():
    """Generation runs under inference_mode; the position tables it builds must stay ordinary tensors."""
    from models.transformer import Transformer
    model = Transformer.seeded(VARIANTS["GQA"].transformer())
    generate(model, [1, 2, 3], 40)
    model.loss(torch.randint(0, 37, (2, 30))).backward()
    assert model.blocks[0].attn.qkv.weight.grad is not None


def test_tiny_gpt_trains_through_its_loss():
    """TinyGPT's forward makes a KV cache by default; its loss must not (in-place cache writes broke
    backward)."""
    model = TinyGPT(GPTConfig(32, 2, 16, 2, 2, 16))
    ids = torch.randint(0, 32, (2, 9), generator=torch.Generator().manual_seed(0))
    model.loss(ids).backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_the_explains_decode_cost_figures_follow_from_the_formulas():
    """The KV Explain's "a cached step reads the whole cache" paragraph, in both languages: Llama-3-8B in
    bf16 on an H100 (3.35 TB/s: NVIDIA's H100 SXM datasheet), weights and cache read once per step; the
    tab's own model at its largest cache. Each figure as printed, recomputed here from its formula."""
    from locales.kv import STRINGS
    from models.calculator import count_params

    bandwidth, kib, mib, gib = 3.35e12, 2**10, 2**20, 2**30
    weights = 2 * count_params(PRESETS["Llama-3-8B"])["total"]           # bf16
    per_token = 2 * 32 * 8 * 128 * 2                                    # K and V · L · n_kv · h_d · bf16
    step_ms = 1e3 * weights / bandwidth
    more_ms = {t: 1e3 * t * per_token / bandwidth for t in (8 * 1024, 128 * 1024)}
    tiny = load_tiny_gpt("mha")
    tiny_cache = config_cache_bytes(tiny.model.config, KV_CONTEXT, 4)   # MHA, the whole context, fp32
    tiny_weights = 4 * sum(p.numel() for p in tiny.model.parameters())
    figures = [f"{weights / gib:.0f} GiB", f"{step_ms:.1f} ms", f"{per_token // kib} KiB",
               f"{more_ms[8 * 1024]:.1f} ms", f"{more_ms[128 * 1024]:.1f} ms", f"{tiny_cache / mib:.0f} MiB",
               f"{tiny_weights / mib:.1f} MiB", f"{KV_CONTEXT} tokens"]
    assert (step_ms + more_ms[128 * 1024]) / step_ms == pytest.approx(2, abs=0.1)   # "about twice as long"
    for lang in STRINGS:
        missing = [f for f in figures[:-1] if f not in STRINGS[lang]["kv_explain"]]
        assert not missing, (lang, missing)
    assert figures[-1] in STRINGS["en"]["kv_explain"], figures[-1]


def test_the_chinese_scale_up_uses_full_width_punctuation():
    """Regression: the lines were joined with ASCII ": ", "; " and ", " after Chinese text ("每个词元: …")."""
    import re

    from components.kv import SCALE_PRESETS
    from models.kv_cache import scale_up
    from viz.kv import scale_markdown
    for preset in SCALE_PRESETS:                                      # DeepSeek-V2's MLA lines too
        text = scale_markdown(scale_up(preset, 8192, 1, "bf16"), "zh-CN")
        assert not re.findall(r"[\u4e00-\u9fff）)`][:;,] ", text), (preset, text)
        assert re.search("每个词元[^`：]*：`", text) and "）：" in text      # Mistral's: "…（直到各窗口填满）："
    from locales import tr
    assert f"（{tr('zh-CN', 'kv_fig_s_no2')}）" in text                # the MLA note, last preset


def test_the_prompt_hint_lists_the_models_characters():
    """Regression: the hint said "letters, digits, punctuation"; the model knows no digit, no "!" and no
    capital X, so "Room 42" was refused under a hint that allowed it."""
    from locales import tr
    from models.tiny_gpt import vocabulary
    chars = set(vocabulary().chars)
    for lang in ("en", "zh-CN"):
        hint = tr(lang, "kv_prompt_info")
        assert f"{len(chars)} " in hint
        listed = {c for c in hint if c in ".,;:?'\"-é"}
        assert listed == {c for c in chars if not c.isalnum() and not c.isspace()} | {"é"}
    assert not any(c.isdigit() for c in chars) and "X" not in chars and "x" in chars and "\n" in chars
