"""Messages of the KV cache tab's backend (:mod:`models.kv_cache`, :mod:`models.generation`, :mod:`models.tiny_gpt`)."""

STRINGS = {
    "en": {
        "kv_err_capacity": "cache capacity = {capacity} must be from 1 to the context, {context}",
        "kv_err_cache_full": "the cache holds {capacity} positions: {filled} are filled, {more} more do not fit",
        "kv_err_queries": "{queries} new queries need 1 ≤ queries ≤ keys = {keys}",
        "kv_err_empty_prompt": "the prompt is empty: type at least one character",
        "kv_err_too_long": "the prompt ({prompt} tokens) plus {new} new tokens is {total}: the model's context is "
                           "{context} tokens",
        "kv_err_token_ids": "token ids must be from 0 to {high}",
        "kv_err_vocab": "a vocabulary is a non-empty string of distinct characters",
        "kv_err_unknown_chars": "the model knows {known} characters; these are not among them (character, position): {listed}",
        "term_kv_model": "model",
    },
    "zh-CN": {
        "kv_err_capacity": "缓存容量 = {capacity} 必须在 1 到上下文长度 {context} 之间",
        "kv_err_cache_full": "缓存共 {capacity} 个位置：已填 {filled} 个，再放 {more} 个就放不下了",
        "kv_err_queries": "{queries} 个新查询需要满足 1 ≤ 查询数 ≤ 键数 = {keys}",
        "kv_err_empty_prompt": "提示词是空的：请至少输入一个字符",
        "kv_err_too_long": "提示词（{prompt} 个词元）加上 {new} 个新词元共 {total} 个：模型的上下文只有 {context} 个词元",
        "kv_err_token_ids": "词元 id 必须在 0 到 {high} 之间",
        "kv_err_vocab": "词表必须是由互不相同的字符组成的非空字符串",
        "kv_err_unknown_chars": "模型只认识 {known} 个字符；以下字符不在其中（字符，位置）：{listed}",
        "term_kv_model": "模型",
    },
}
