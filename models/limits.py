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

# FFN & mixture of experts. Choices the UI offers (models.ffn implements each, tests check the names).
FFN_ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "geglu", "swiglu")
FFN_GATED = ("swiglu", "geglu")
MOE_EXPERT_KINDS = ("swiglu", "gelu")
# Activation plots: x range and points; FFN sizes are compared on the meta device.
FFN_MAX_X = 50.0
FFN_MAX_POINTS = 2001
FFN_MAX_D_MODEL = 65_536
FFN_MAX_MULTIPLE = 8_192
# Routing explorer: one layer built per redraw (E=64, d=128, h=512 SwiGLU: 12.6 M weights, ~0.1 s).
MOE_MAX_EXPERTS = 64
MOE_MAX_TOP_K = 8
MOE_MAX_SHARED = 4
MOE_MAX_D_MODEL = 128
MOE_MAX_D_HIDDEN = 512
MOE_MAX_TOKENS = 256               # random tokens, or tokens of the typed text
MOE_MAX_CHARS = 2_000
MOE_MAX_CAPACITY_FACTOR = 8.0
MOE_MAX_LOGIT_SCALE = 20.0
# Training run: a tiny MoE language model, streamed step by step.
MOE_TRAIN_MAX_STEPS = 600
MOE_TRAIN_MAX_EXPERTS = 16
MOE_TRAIN_MAX_AUX = 1.0
MOE_TRAIN_MAX_Z = 0.1
