"""Text every tab shares: the app's header, the device line, Explain, share links, and the messages
of the shared validation helpers (:mod:`models.errors`)."""

STRINGS = {
    "en": {
        "app_header": "# LLM Anatomy\nThe parts of a large language model, computed live by PyTorch. "
                      "Change any control: every picture is recomputed, nothing is pre-drawn.",
        "computed_on": "Computed on",
        "explain": "Explain",
        "error_title": "Error",
        "run_stopped": "Stopped", "run_done": "Done",
        "sep_colon": ": ", "sep_list": "; ", "sep_comma": ", ",   # punctuation a line composes: full width in Chinese
        "sep_paren": " ({text})",
        "warning_title": "Warning",
        "error_internal": "Something went wrong on the server; the app is still running. Try other settings.",
        "error_surrogate": "the text has an invalid character at position {position} (a lone UTF-16 surrogate, "
                           "not a Unicode character): remove it",
        # models.errors: one message per kind of check
        "error_whole_number": "{name} = {value}: must be a whole number from {low} to {high}",
        "error_whole_at_least": "{name} = {value}: must be a whole number ≥ {low}",
        "error_number": "{name} = {value}: must be a number from {low} to {high}",
        "error_number_above": "{name} = {value}: must be a number above {low} and at most {high}",
        "error_choice": "{name} = {value}: must be one of {choices}",
        "error_not_a_number": "{name} must be a number, got {value}",
        "error_divides": "{name} = {value} must divide {other_name} = {other}",
        # field names shared by several tabs (Term parameters): code names stay code names in English
        "term_seed": "seed",
        "term_empty": "(empty)",
        # A number box cleared, holding letters, or past float range (1e400): the browser sends null.
        "term_empty_number": "(empty, or not a finite number)",
        "term_n_heads": "n_heads",
        "term_n_kv_heads": "n_kv_heads",
        "term_n_layers": "n_layers",
        "term_d_model": "d_model",
        "term_learning_rate": "learning rate",
        "term_steps": "steps",
        "term_temperature": "temperature",
    },
    "zh-CN": {
        "app_header": "# LLM 解剖室\n大语言模型的各个部件，由 PyTorch 实时计算。"
                      "改动任意控件，每幅图都会重新计算，没有任何预先画好的结果。",
        "computed_on": "计算设备",
        "explain": "讲解",
        "error_title": "出错了",
        "run_stopped": "已停止", "run_done": "已完成",
        "sep_colon": "：", "sep_list": "；", "sep_comma": "，",
        "sep_paren": "（{text}）",
        "warning_title": "注意",
        "error_internal": "服务器出错了，但应用仍在运行。请换一组设置再试。",
        "error_surrogate": "文本第 {position} 个位置有一个无效字符（孤立的 UTF-16 代理项，不是 Unicode 字符）：请删除它",
        "error_whole_number": "{name} = {value}：必须是 {low} 到 {high} 之间的整数",
        "error_whole_at_least": "{name} = {value}：必须是不小于 {low} 的整数",
        "error_number": "{name} = {value}：必须是 {low} 到 {high} 之间的数",
        "error_number_above": "{name} = {value}：必须大于 {low} 且不超过 {high}",
        "error_choice": "{name} = {value}：必须是 {choices} 之一",
        "error_not_a_number": "{name} 必须是数字，收到的是 {value}",
        "error_divides": "{name} = {value} 必须整除 {other_name} = {other}",
        "term_seed": "随机种子",
        "term_empty": "（空）",
        "term_empty_number": "（空，或不是有限数）",
        "term_n_heads": "注意力头数 n_heads",
        "term_n_kv_heads": "KV 头数 n_kv_heads",
        "term_n_layers": "层数 n_layers",
        "term_d_model": "d_model",
        "term_learning_rate": "学习率",
        "term_steps": "步数",
        "term_temperature": "温度",
    },
}
