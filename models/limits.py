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
