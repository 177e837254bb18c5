"""Messages of the Calculator's backend (:mod:`models.calculator_verify`)."""

STRINGS = {
    "en": {
        "calc_err_too_many_modules": "{name} has too many modules to build here (~{linears:,} linear layers; "
                                     "verification builds up to {limit:,})",
    },
    "zh-CN": {
        "calc_err_too_many_modules": "{name} 的模块太多，无法在这里构建（约 {linears:,} 个线性层；核对最多构建 {limit:,} 个）",
    },
}
