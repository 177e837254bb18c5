"""The training-stability section of the Normalization tab (QK-norm, z-loss, softmax overflow):
labels, figure text, findings and the backend's messages (:mod:`models.stability`)."""

STRINGS = {
    "en": {
        # backend messages and field names
        "stability_err_lr_order": "the smallest learning rate ({low}) must not exceed the largest ({high})",
        "stability_err_work": "{runs} runs × {steps} steps × {layers} layers × width {width} is too much work for "
                              "one request ({units} units, at most {limit}): use fewer learning rates, fewer "
                              "steps, fewer layers or a smaller width",
        "term_stability_lr_min": "smallest learning rate",
        "term_stability_lr_max": "largest learning rate",
        "term_stability_n_lrs": "number of learning rates",
        "term_stability_z_loss": "z-loss coefficient",
        "term_stability_logit_scale": "logit scale",
        "stability_found_nonfinite": "{run}: {what} became non-finite at step {step}; the run stopped there",
        "stability_found_collapse": "{run}: attention entropy fell below 0.1 at step {step} (a head attends to one key)",
        "stability_what_loss": "the loss", "stability_what_gradient": "the gradient",
        "stability_what_logit": "an attention logit", "stability_what_log_z": "log Z",
    },
    "zh-CN": {
        "stability_err_lr_order": "最小学习率（{low}）不能大于最大学习率（{high}）",
        "stability_err_work": "{runs} 次运行 × {steps} 步 × {layers} 层 × 宽度 {width}，对一次请求来说计算量太大"
                              "（{units} 个单位，最多 {limit}）：请减少学习率个数、步数、层数或宽度",
        "term_stability_lr_min": "最小学习率",
        "term_stability_lr_max": "最大学习率",
        "term_stability_n_lrs": "学习率个数",
        "term_stability_z_loss": "z-loss 系数",
        "term_stability_logit_scale": "logit 尺度",
        "stability_found_nonfinite": "{run}：第 {step} 步{what}变成了非有限值，该运行就此停止",
        "stability_found_collapse": "{run}：第 {step} 步注意力熵降到 0.1 以下（一个注意力头只关注一个键）",
        "stability_what_loss": "损失", "stability_what_gradient": "梯度",
        "stability_what_logit": "某个注意力 logit", "stability_what_log_z": "log Z",
    },
}
