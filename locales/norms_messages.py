"""Messages of the Normalization tab's backend (:mod:`models.norms`, :mod:`models.norm_training`)."""

STRINGS = {
    "en": {
        "norms_err_heads": "d_model = {d_model} must be divisible by n_heads = {n_heads} (try {near} heads)",
        "norms_err_odd": "d_model = {d_model} must be even (sinusoidal positions pair dimensions)",
        "norms_err_work": "{layers} layers × width {width} × {tokens} tokens × {runs} runs is too much work for one "
                          "request ({units} units, at most {limit}): use fewer layers, a smaller width, fewer tokens "
                          "or fewer variants",
        "norms_err_no_variant": "choose at least one variant of {variants}",
        "norms_err_sweep_empty": "the depth sweep needs at least one depth and one variant",
        "norms_err_batchnorm": "BatchNorm needs at least two values per feature: use batch × tokens ≥ 2",
        "term_norms_warmup_steps": "warm-up steps",
        "term_norms_variant": "variant",
        "term_norms_norm": "norm",
    },
    "zh-CN": {
        "norms_err_heads": "d_model = {d_model} 必须能被 n_heads = {n_heads} 整除（试试 {near} 个头）",
        "norms_err_odd": "d_model = {d_model} 必须是偶数（正弦位置编码把维度两两配对）",
        "norms_err_work": "{layers} 层 × 宽度 {width} × {tokens} 个词元 × {runs} 次运行，对一次请求来说计算量太大"
                          "（{units} 个单位，最多 {limit}）：请减少层数、宽度、词元数或变体数",
        "norms_err_no_variant": "请至少从 {variants} 中选择一种变体",
        "norms_err_sweep_empty": "深度扫描至少需要一个深度和一种变体",
        "norms_err_batchnorm": "BatchNorm 每个特征至少需要两个值：请让 batch × tokens ≥ 2",
        "term_norms_warmup_steps": "预热步数",
        "term_norms_variant": "变体",
        "term_norms_norm": "归一化",
    },
}
