"""Every size a user can ask for, bounded so that a public Space cannot be exhausted.

Torch-free on purpose: the UI reads these to set slider ranges without importing torch, and the
backend enforces them. One block per tab.
"""

# Attention masks: sequences (lines) x tokens, and heads of random queries and keys.
MASKS_MAX_SEQUENCES = 16
MASKS_MAX_TOKENS = 64
MASKS_MAX_HEADS = 8
MASKS_MAX_CHARS = 20_000

SEED_MAX = 2**31 - 1

# Calculator: any spec up to these sizes (10^15 parameters would overflow nothing, but is refused).
CALC_MAX_PARAMS = 10**13            # 10 T parameters
CALC_MAX_DIM = 1_000_000            # d_model, ffn size, vocabulary
CALC_MAX_LAYERS = 1_000
CALC_MAX_HEADS = 4_096
CALC_MAX_EXPERTS = 1_024
CALC_MAX_CONTEXT = 10_000_000
CALC_MAX_BATCH = 100_000
CALC_MAX_JSON_CHARS = 100_000
CALC_BUILD_MAX_MODULES = 200_000  # "verify" builds the module tree (meta device) up to this many Linear layers

# KV cache: the tiny GPT (its shape is fixed by the committed checkpoints) and what one run may ask.
KV_CONTEXT = 512                    # the tiny GPT's context: prompt + new tokens
KV_N_HEADS = 4                      # its query heads, so n_kv_heads is 1, 2 or 4
KV_D_MODEL = 128
KV_N_LAYERS = 4
KV_MAX_LATENT = KV_D_MODEL          # MLA latent width: 1 … d_model
KV_MAX_NEW_TOKENS = KV_CONTEXT - 1
KV_VARIANTS = ("mha", "gqa", "mqa", "mla")   # attention choices (GQA: n_kv_heads; MLA: latent width)
KV_TRAINED_LATENT = 32              # the MLA checkpoint's latent width; other widths get random weights
KV_TRAINED_GQA = 2                  # the GQA checkpoint's KV heads
KV_MAX_TEMPERATURE = 2.0
KV_SCALE_MAX_BATCH = 1_024          # the on-paper scale-up (context bounds: CALC_MAX_CONTEXT)
