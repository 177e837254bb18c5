"""The layout view's presets, as (shape, operations) the learner could have typed: the seeds'
multi-head split and its inverse, a sliced column, an expanded bias. Torch-free: the UI shows them
without importing torch; :func:`models.tensors.replay` runs them."""
from locales import tr

# Each preset: the original's shape, and its lines as (operation, comment); a comment is notation (a shape),
# the same in every language, or a key of locales/tensors.py ("tensors_note_..."); a line without an
# operation is a comment alone. The default preset's comments are all notation: the page is built once, in
# English, and its box is right in every language.
LINES = {
    "heads_split": ("2, 3, 8", [("", "x: [B, T, C], C = H·d = 2·4"),
                                ("view(2, 3, 2, 4)", "[B, T, H, d]"),
                                ("transpose(1, 2)", "[B, H, T, d]")]),
    "heads_merge": ("2, 2, 3, 4", [("", "y: [B, H, T, d] → [B, T, C]"),
                                   ("transpose(1, 2)", "[B, T, H, d]"),
                                   ("view(2, 3, 8)", "tensors_note_refused"),
                                   ("contiguous()", "tensors_note_copy"),
                                   ("view(2, 3, 8)", "tensors_note_works")]),
    "column": ("4, 6", [("[:, 2]", "tensors_note_column"),
                        ("unsqueeze(1)", "[4, 1]"),
                        ("[::2]", "tensors_note_every_other")]),
    "bias": ("4", [("", "tensors_note_bias"),
                   ("unsqueeze(0)", "[1, C]"),
                   ("expand(3, 4)", "tensors_note_stride_0"),
                   ("contiguous()", "tensors_note_materialised")]),
}


def preset_text(name: str, lang: str = "en") -> tuple[str, str]:
    """A preset's shape and operations, its comments in ``lang`` and lined up after the longest operation.

    >>> print(preset_text("column", "zh-CN")[1])
    [:, 2]        # 下标为 2 的列
    unsqueeze(1)  # [4, 1]
    [::2]         # 每隔一行取一行
    """
    shape, lines = LINES[name]
    width = max(len(op) for op, _ in lines) + 2
    said = [(op, tr(lang, note) if note.startswith("tensors_note_") else note) for op, note in lines]
    return shape, "\n".join(f"{op.ljust(width)}# {note}" if op else f"# {note}" for op, note in said)


PRESETS = {name: preset_text(name) for name in LINES}     # in English: the endpoints' defaults
