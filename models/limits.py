"""Every size a user can ask for, bounded so that a public Space cannot be exhausted.

Torch-free on purpose: the UI reads these to set slider ranges without importing torch, and the
backend enforces them. One block per tab. A :class:`~models.checks.Span` is one control's range, declared
once: its widget is built from it and its check (in the backend or at the endpoint) reads it.
"""
from models.checks import Span

# Attention masks: sequences (lines) x tokens, and heads of random queries and keys.
MASKS_MAX_SEQUENCES = 16
MASKS_MAX_TOKENS = 64
MASKS_MAX_HEADS = 8
MASKS_MAX_CHARS = 20_000

# Attention tab (a trained tiny GPT's heads, attention step by step, why √d, the next token): the KV tab's
# checkpoints on a prompt of at most ATTN_MAX_PROMPT characters; held-out text for the measured numbers.
ATTN_MAX_PROMPT = 128
ATTN_PATTERN_CHARS = 512            # held-out characters the head patterns are measured on
ATTN_PATTERN_THRESHOLD = 0.2        # a head "shows" a pattern when a fifth of its weight goes to that one key,
ATTN_BROAD_THRESHOLD = 0.8          # ... is "broad" when its rows' entropy is this share of a uniform head's
ATTN_LOSS_CHARS = 1_024             # held-out characters the √d view's validation loss covers by default
ATTN_LOSS_BLOCK = 256               # ... in windows of this many characters, one batch
ATTN_MAX_MULTIPLIER = 16.0          # the √d view multiplies the scaled scores by m in [0, this]
ATTN_MULTIPLIER = Span(0, ATTN_MAX_MULTIPLIER, step=0.25)
ATTN_MIN_DIM, ATTN_MAX_DIM = 8, 1024   # the √d view's random vectors: d = 8, 16, … 1024
ATTN_MAX_KEYS = 1024                # ... softmax rows over this many keys at most
ATTN_KEYS = Span(2, ATTN_MAX_KEYS)
ATTN_ENTROPY_ROWS = 256             # ... rows averaged per d
SAMPLING_MAX_TEMPERATURE = 10.0     # any sampler: temperature in [0, this], top-p in (0, 1]
TEMPERATURE = Span(0, 2.0, step=0.05)     # ... the temperature sliders (generation, the next-token view)
TOP_P = Span(0.01, 1.0, step=0.01)        # ... the top-p slider
ATTN_MAX_CONTINUE = 128             # characters the next-token view generates after the prompt

SEED_MAX = 2**31 - 1
SEED = Span(0, SEED_MAX)           # every seed box

# Calculator: any spec up to these sizes (10^15 parameters would overflow nothing, but is refused).
CALC_MAX_PARAMS = 10**13            # 10 T parameters
CALC_MAX_DIM = 1_000_000            # d_model, ffn size, vocabulary
CALC_MAX_LAYERS = 1_000
CALC_MAX_HEADS = 4_096
CALC_MAX_EXPERTS = 1_024
CALC_MAX_CONTEXT = 10_000_000
CALC_MAX_BATCH = 100_000
CALC_MAX_TRAIN_TOKENS = 1e16        # training tokens (the calculator's from 1, the compute estimate's from 1e6)
CALC_CONTEXT, CALC_BATCH = Span(1, CALC_MAX_CONTEXT), Span(1, CALC_MAX_BATCH)   # a run's sequence length, batch
CALC_TRAIN_TOKENS = Span(1, CALC_MAX_TRAIN_TOKENS)
CALC_MAX_JSON_CHARS = 100_000
CALC_BUILD_MAX_MODULES = 200_000  # "verify" builds the module tree (meta device) up to this many Linear layers
CALC_RUN_MAX_PARAMS = 30_000_000  # ... or builds and runs a Llama-shaped spec for real up to this many parameters

# Normalization: the stack at initialisation (one backward pass per variant) and the training run.
NORM_MIN_LAYERS = 2                 # the UI's depth slider; the backend builds any depth from 1
NORM_MIN_D_MODEL = 16               # ... and its width slider (in steps of 16)
NORM_MAX_LAYERS = 24
NORM_MAX_D_MODEL = 512
NORM_MAX_HEADS = 16
NORM_MAX_SEQ_LEN = 128
NORM_MAX_BATCH = 32
# The gradients' default stack, 12 layers of d = 128 on 8 sequences × 32 characters: the finding needs no
# more (over seeds 0-19, Post-LN's FFN-out gradient ends ≥ 2× Pre-LN's on every seed and rises ≥ 1.1×
# from the bottom layer to the top on 19; Pre-LN falls on all; tests/test_norms_backend.py counts them),
# and both placements then take ~0.19 s on one CPU thread (~0.45 s at d = 256, ~1.5 s at 16 × 64 tokens).
GRAD_D_MODEL, GRAD_BATCH, GRAD_SEQ_LEN = 128, 8, 32
NORM_MAX_WORK = 8                   # layers × d_model² × tokens × variants / 2^30 for one request (~1 s per 2)
NORM_SWEEP_MAX_WORK = 32            # the same summed over the depths of a sweep
NORM_TRAIN_MAX_WORK = 32            # the same over all steps of the four training runs (default: 14)
NORM_TRAIN_MIN_STEPS, NORM_TRAIN_MAX_STEPS = 10, 600   # per run; four runs interleaved
NORM_TRAIN_MAX_LR = 10.0            # Adam's learning rate, (0, max]; large values diverge as a finding
NORM_AXES_MAX = 8                   # batch, tokens, features of the norms-axes tensor
# Training stability (QK-norm, z-loss): a learning-rate sweep of four variants from one init, and the
# softmax-overflow view. Work = runs × steps × tokens × layers × max(d_model, 64)² / 2^30 (default: 7.8).
STAB_MIN_LR, STAB_MAX_LR = 1e-5, 10.0     # AdamW's peak learning rate; large ones diverge as a finding
STAB_MAX_LRS = 8                    # learning rates in one sweep (each trains four models)
STAB_MAX_STEPS = 500                # per run
STAB_MIN_STEPS, STAB_MIN_D_MODEL = 10, 16   # the sliders' lower ends (the sweep itself takes less)
STAB_MAX_LAYERS = 4
STAB_MAX_D_MODEL = 128
STAB_MAX_HEADS = 8
STAB_MAX_Z_LOSS = 1.0               # the z-loss coefficient, [0, max] (PaLM: 1e-4)
STAB_MAX_WORK = 16.0                # the whole sweep: about twice the default's (~40 s on one core)
STAB_MAX_LOGIT_SCALE = 200.0        # the overflow view's largest logit
STAB_LR, STAB_LRS = Span(STAB_MIN_LR, STAB_MAX_LR), Span(1, STAB_MAX_LRS)   # the sweep's rates, how many
STAB_Z_LOSS, STAB_LOGIT_SCALE = Span(0, STAB_MAX_Z_LOSS), Span(0, STAB_MAX_LOGIT_SCALE, step=0.1)
STAB_STEPS = Span(STAB_MIN_STEPS, STAB_MAX_STEPS, step=10)     # the sliders; the sweep itself takes more
STAB_D_MODEL = Span(STAB_MIN_D_MODEL, STAB_MAX_D_MODEL, step=16)
# Positions (RoPE, sinusoidal, ALiBi): dimensions, lengths, tensor sizes, bases and factors.
POS_MAX_HEAD_DIM = 1024             # RoPE head dim d (even); real models use 64-256
POS_MAX_POSITION = 10_000_000       # positions, distances and context lengths (Llama 4 Scout: 10 M)
POS_MAX_ELEMENTS = 2**24            # a table or bias tensor the backend builds (64 MB in float32)
POS_MAX_HEATMAP = 256               # T of a T x T score heatmap
POS_MAX_COMPARE_LEN = 128           # T shared by the sinusoidal and ALiBi heatmaps
POS_MAX_D_MODEL = 512               # d_model of the sinusoidal heatmap
POS_MAX_DIAGRAM_DIM = 64            # d of the conventions diagram (every dimension drawn)
POS_MAX_HEADS = 128                 # ALiBi heads
POS_MAX_BASE = 1e9                  # RoPE / sinusoidal base (Llama 3: 5e5; some long-context models 1e7)
POS_MAX_FACTOR = 1024.0             # context extension factor (PI scale, NTK alpha, Llama 3.1 factor)
# ... and the Positions tab's sliders where they offer less than the backend computes (the endpoints check these)
POS_SLIDER_MAX_POSITION = 4096      # the rotate view's positions m and n
POS_MAX_SPEED = 64                  # positions per frame of Play
POS_MIN_SPAN = 8                    # positions in the frequencies view's heatmap, up to POS_MAX_HEATMAP
POS_DIAGRAM_MAX_POSITION = 64       # the conventions view's position m
POS_MIN_COMPARE_LEN = 2             # the comparison's T, up to POS_MAX_COMPARE_LEN
POS_COMPARE_MAX_HEADS = 64          # the comparison's ALiBi heads
POS_CURVE_POINTS = 1024             # points of a curve over distances (every integer up to half, then log-spaced)
# Tokenizer (BPE): the corpus in UTF-8 bytes (uploads are capped at 1 MB by the app as well), merges,
# the text typed to encode, tokens drawn as coloured spans (counts always cover the whole text),
# and the competing pairs recorded per merge.
BPE_MAX_CORPUS_BYTES = 1_000_000
BPE_MAX_MERGES = 5_000
BPE_MERGES = Span(1, BPE_MAX_MERGES)
BPE_MAX_ENCODE_CHARS = 10_000
BPE_SHOW_TOKENS = 1_500
BPE_TOP_PAIRS = 10
# FFN & mixture of experts. Choices the UI offers (models.ffn implements each, tests check the names).
FFN_ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "geglu", "swiglu")
FFN_GATED = ("swiglu", "geglu")
MOE_EXPERT_KINDS = ("swiglu", "relu")       # Mixtral's SwiGLU experts, Switch Transformer's ReLU ones
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
MOE_MIN_CAPACITY_FACTOR, MOE_MAX_CAPACITY_FACTOR = 0.05, 8.0
MOE_MAX_LOGIT_SCALE = 20.0          # the router's sharpness
MOE_MAX_SKEW = 10.0                 # a bias added to expert 1's logit
# Training run: a tiny MoE language model, streamed step by step.
MOE_TRAIN_MIN_STEPS, MOE_TRAIN_MAX_STEPS = 10, 600
MOE_TRAIN_MAX_EXPERTS = 16
MOE_TRAIN_MAX_TOP_K = 4
MOE_TRAIN_MAX_AUX = 1.0
MOE_TRAIN_MAX_Z = 0.1
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
KV_SCALE_MAX_BATCH = 1_024          # the on-paper scale-up (context bounds: CALC_MAX_CONTEXT)
# Attention at scale (FlashAttention). Tiles: one seeded head small enough to read every cell.
ATTN_FLASH_MAX_T = 64               # query and key length of the tiles view
ATTN_FLASH_MAX_D = 64               # head dim of the tiles view
ATTN_FLASH_T, ATTN_FLASH_D = Span(1, ATTN_FLASH_MAX_T), Span(1, ATTN_FLASH_MAX_D)   # T and the block; d
ATTN_FLASH_DTYPES = ("float32", "float64")
# Cost sweep: T doubles from ATTN_COST_MIN_T up to the device's bound; every allocation is checked
# against the byte budget before it is made, every call against the time budget before it runs.
ATTN_COST_MIN_T = 256
ATTN_COST_MAX_T_CPU = 16_384        # naive fp32 at 16K, one head: 2 GiB of scores + probabilities
ATTN_COST_MAX_T_CUDA = 131_072
ATTN_COST_MAX_BYTES_CPU = 5 * 2**29         # 2.5 GiB for one sweep's tensors
ATTN_COST_MAX_BYTES_CUDA = 32 * 2**30       # and at most ATTN_COST_CUDA_FREE_FRACTION of the free memory
ATTN_COST_CUDA_FREE_FRACTION = 0.6
ATTN_COST_MAX_HEAD_DIM = 256
ATTN_COST_MAX_HEADS = 64
ATTN_COST_MAX_BATCH = 16
ATTN_COST_HEAD_DIM, ATTN_COST_HEADS = Span(1, ATTN_COST_MAX_HEAD_DIM), Span(1, ATTN_COST_MAX_HEADS)
ATTN_COST_BATCH = Span(1, ATTN_COST_MAX_BATCH)
ATTN_COST_DTYPES = ("float32", "bfloat16", "float16")
ATTN_COST_MAX_CALL_S = 8.0          # a call predicted (from the last T, x4 per doubling) to take longer is not run
ATTN_COST_MAX_SECONDS = 150.0       # the whole sweep; past it the sweep ends with what it has
ATTN_COST_TILED_BLOCK = 256         # block of our tiled Python loop in the sweep
ATTN_DECODE_STEPS = 16              # cached decode steps timed at each context length of the tiny GPT
# Tensors: the layout replay (one real tensor, every step checked on the meta device first), the
# matmul sweep (sizes per device, fixed) and the MFU run (a small transformer, a few real steps).
TENSOR_MAX_DIMS = 4                 # the shape typed, and every step of the chain
TENSOR_MAX_ELEMENTS = 256           # elements of the tensor typed, and of every step's result
TENSOR_MAX_OPS = 12                 # lines of the operation chain
TENSOR_MAX_OPS_CHARS = 2_000
TENSOR_MAX_ARG = 1_000_000          # |a whole number typed as an argument|
NUMFORMAT_MAX_ABS = 1e300           # |the value cast into each number format|
MATMUL_DTYPES = ("fp32", "bf16", "fp16", "fp8")
MATMUL_SWEEPS = ("square", "tokens")  # n×n by n×n | m tokens × a d×d weight, m varies
MATMUL_CPU_SIZES = (16, 32, 64, 128, 256, 512, 1024)
MATMUL_GPU_SIZES = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
MATMUL_CPU_BUDGET_S = 8.0           # the whole CPU sweep (the issue: within 10 s on a CPU Space)
MATMUL_GPU_BUDGET_S = 60.0
MATMUL_POINT_S = 0.06               # time spent measuring one (size, dtype) point on the CPU
# MFU of a training step: the one transformer (char-level on the shipped corpus), a few real steps.
MFU_MAX_LAYERS = 12
MFU_MAX_D_MODEL = 1024
MFU_MAX_HEADS = 16
MFU_MAX_SEQ_LEN = 512
MFU_MAX_BATCH = 64
MFU_MAX_STEPS = 50
MFU_MAX_FLOPS = {"cpu": 1.5e11, "cuda": 2e14}   # FLOPs of all steps of one run (CPU: ~10-20 s in one thread)
MFU_PROBE_S = 0.08                  # per matmul shape of the CPU's peak probe
# The compute estimate (6·N·D FLOPs over GPUs at an MFU): its smallest run and its largest cluster.
COMPUTE_MIN_PARAMS = COMPUTE_MIN_TOKENS = 1e6
COMPUTE_MAX_GPUS = 1_000_000
