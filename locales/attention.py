"""The Attention tab: its name, its intro and its views' names (each view's text: ``locales/attention_*.py``)."""

STRINGS = {
    "en": {
        "tab_attention": "Attention",
        "attn_intro": "Attention itself, computed live on the tiny GPTs this repository trained (the KV tab's "
                      "character-level checkpoints): what every head reads, one layer line by line as the code "
                      "runs it, why the scores are divided by √d, and how the next character is chosen; then "
                      "FlashAttention's tiled softmax and what attention costs as the context grows. "
                      "The model and prompt below are the first four views' own, all four at once; "
                      "pick a view under them.",
        "attn_sub_heads": "All heads",
        "attn_sub_steps": "Step by step",
        "attn_sub_scale": "Why √d",
        "attn_sub_next": "Next token",
        "attn_sub_flash": "FlashAttention",
    },
    "zh-CN": {
        "tab_attention": "注意力",
        "attn_intro": "在本仓库训练的小型 GPT（KV 缓存页的字符级检查点）上实时计算注意力本身："
                      "每个注意力头读取什么、按代码的顺序逐行执行一层注意力、为什么分数要除以 √d、"
                      "以及下一个字符是怎样选出来的；再看 FlashAttention 的分块 softmax，以及上下文变长时注意力的代价。"
                      "下方的模型和提示词由前四个视图共用；请在它们下面选择一个视图。",
        "attn_sub_heads": "所有注意力头",
        "attn_sub_steps": "逐步计算",
        "attn_sub_scale": "为什么除以 √d",
        "attn_sub_next": "下一个词元",
        "attn_sub_flash": "FlashAttention 分块计算",
    },
}
