"""The layout view's presets, as (shape, operations) the learner could have typed: the seeds'
multi-head split and its inverse, a sliced column, an expanded bias. Torch-free: the UI shows them
without importing torch; :func:`models.tensors.replay` runs them."""

PRESETS = {
    "heads_split": ("2, 3, 8", "# x: [B, T, C], C = H·d = 2·4\n"
                               "view(2, 3, 2, 4)  # [B, T, H, d]\n"
                               "transpose(1, 2)   # [B, H, T, d]"),
    "heads_merge": ("2, 2, 3, 4", "# y: [B, H, T, d] → [B, T, C]\n"
                                  "transpose(1, 2)   # [B, T, H, d]\n"
                                  "view(2, 3, 8)     # refused\n"
                                  "contiguous()      # a copy\n"
                                  "view(2, 3, 8)     # now it works"),
    "column": ("4, 6", "[:, 2]          # column 2\n"
                       "unsqueeze(1)    # [4, 1]\n"
                       "[::2]           # every other row"),
    "bias": ("4", "# a bias b: [C], added to x: [T, C]\n"
                  "unsqueeze(0)    # [1, C]\n"
                  "expand(3, 4)    # [T, C], stride 0\n"
                  "contiguous()    # materialised"),
}
