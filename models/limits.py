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

# Tokenizer (BPE): the corpus in UTF-8 bytes (uploads are capped at 1 MB by the app as well), merges,
# the text typed to encode, tokens drawn as coloured spans (counts always cover the whole text),
# and the competing pairs recorded per merge.
BPE_MAX_CORPUS_BYTES = 1_000_000
BPE_MAX_MERGES = 5_000
BPE_MAX_ENCODE_CHARS = 10_000
BPE_SHOW_TOKENS = 1_500
BPE_TOP_PAIRS = 10
