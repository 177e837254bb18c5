"""Messages of the one transformer (:mod:`models.transformer`): its config, its context, loading Hugging Face weights."""

STRINGS = {
    "en": {
        "transformer_err_head_dim": "n_heads = {n_heads} must divide d_model = {d_model} (or give head_dim explicitly)",
        "transformer_err_mla_kv_heads": "MLA decompresses a key and a value for every head: n_kv_heads = {n_kv_heads} "
                                        "must equal n_heads = {n_heads}",
        "transformer_err_mla_rope": "MLA's decoupled key carries RoPE: positions = {positions} is not possible with it",
        "transformer_err_mla_only": "kv_latent_dim, q_latent_dim and rope_dim are MLA settings: use attention = 'mla'",
        "transformer_err_rope_odd": "RoPE rotates pairs of dimensions: its width {width} must be even",
        "transformer_err_llama3": "rope_llama3 must be a Llama3Scaling (factor, low_freq_factor, high_freq_factor, "
                                  "original_max_position)",
        "transformer_err_sinusoidal_odd": "sinusoidal positions pair dimensions: d_model = {d_model} must be even",
        "transformer_err_moe_only": "n_experts, top_k, n_shared_experts, moe_d_ff, capacity_factor, moe_first_dense "
                                    "and moe_shared_gate are mixture-of-experts settings: use ffn = 'moe'",
        "transformer_err_shared_gate": "moe_shared_gate gates the shared experts: set n_shared_experts ≥ 1",
        "transformer_err_qk_norm_scope": "qk_norm_scope = '{scope}' says where the q/k norms act: set qk_norm too",
        "transformer_err_unknown_fields": "unknown config fields: {fields}",
        "transformer_err_context": "{cached} cached + {new} new tokens exceed the model's context of {context} tokens",
        "transformer_err_hf_config": "a Hugging Face config must be a dict (the contents of config.json)",
        "transformer_err_hf_missing": "the weights lack {names}",
        "transformer_err_hf_missing_more": "the weights lack {names} and {more} more",
        "transformer_err_hf_unexpected": "the weights hold tensors this model does not have: {names}",
        "transformer_err_hf_unexpected_more": "the weights hold tensors this model does not have: {names} and {more} more",
        "transformer_err_hf_shape": "weight {name} has shape {shape}; this config needs {expected}",
    },
    "zh-CN": {
        "transformer_err_head_dim": "n_heads = {n_heads} 必须整除 d_model = {d_model}（或者显式给出 head_dim）",
        "transformer_err_mla_kv_heads": "MLA 为每个头解压出一个键和一个值：n_kv_heads = {n_kv_heads} 必须等于 n_heads = {n_heads}",
        "transformer_err_mla_rope": "MLA 的解耦键携带 RoPE：不能与 positions = {positions} 一起使用",
        "transformer_err_mla_only": "kv_latent_dim、q_latent_dim 和 rope_dim 是 MLA 的设置：请使用 attention = 'mla'",
        "transformer_err_rope_odd": "RoPE 成对旋转维度：它的宽度 {width} 必须是偶数",
        "transformer_err_llama3": "rope_llama3 必须是 Llama3Scaling（factor、low_freq_factor、high_freq_factor、"
                                  "original_max_position）",
        "transformer_err_sinusoidal_odd": "正弦位置编码把维度两两配对：d_model = {d_model} 必须是偶数",
        "transformer_err_moe_only": "n_experts、top_k、n_shared_experts、moe_d_ff、capacity_factor、moe_first_dense "
                                    "和 moe_shared_gate 是混合专家的设置：请使用 ffn = 'moe'",
        "transformer_err_shared_gate": "moe_shared_gate 是共享专家的门控：请设置 n_shared_experts ≥ 1",
        "transformer_err_qk_norm_scope": "qk_norm_scope = '{scope}' 说明 q/k 归一化作用的范围：请同时设置 qk_norm",
        "transformer_err_unknown_fields": "未知的配置字段：{fields}",
        "transformer_err_context": "已缓存 {cached} 个词元加上 {new} 个新词元，超出了模型 {context} 个词元的上下文",
        "transformer_err_hf_config": "Hugging Face 配置必须是一个字典（config.json 的内容）",
        "transformer_err_hf_missing": "权重缺少 {names}",
        "transformer_err_hf_missing_more": "权重缺少 {names}，以及另外 {more} 个",
        "transformer_err_hf_unexpected": "权重中有本模型没有的张量：{names}",
        "transformer_err_hf_unexpected_more": "权重中有本模型没有的张量：{names}，以及另外 {more} 个",
        "transformer_err_hf_shape": "权重 {name} 的形状是 {shape}；该配置需要 {expected}",
    },
}
