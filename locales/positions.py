"""The Positions tab: its widgets, its figures (viz/positions.py, viz/positions_compare.py) and the
messages of models/positions.py and models/positions_explore.py."""
from models.limits import POS_MAX_HEAD_DIM

STRINGS = {
    "en": {
        "tab_positions": "Positions (RoPE)",
        "pos_intro": "Without a causal mask, attention alone cannot tell “the dog bit the man” from “the man bit the dog”: "
                     "to it the input is a bag of tokens. A causal decoder can infer position even without an "
                     "encoding (NoPE: token i attends over i + 1 tokens, and that count shows through), but models "
                     "still put position in explicitly. Here RoPE rotates q and k by their positions; the last view "
                     "sets it beside sinusoidal encodings and ALiBi. Everything is computed live by the backend's "
                     "`apply_rope`.",
        "pos_head_dim": "head dim d (even)",
        "pos_head_dim_info": f"64 (GPT-2 heads), 128 (Llama), at most {POS_MAX_HEAD_DIM}",
        "pos_base": "base θ",
        "pos_base_info": "10,000: RoFormer, Llama 2 · 500,000: Llama 3 · 1,000,000: Qwen2",
        "pos_seed": "seed (random q and k)",
        "pos_view": "view",
        "pos_sub_rotate": "Rotate", "pos_sub_relative": "Relative position", "pos_sub_frequencies": "Frequencies",
        "pos_sub_extrapolation": "Extrapolation", "pos_sub_conventions": "Conventions",
        "pos_sub_compare": "Sinusoidal · RoPE · ALiBi",
        "pos_rotate_note": "Each pair of dimensions of q is a 2-D vector turned by m·θ_i. Press Play: the first "
                           "pairs spin, the last barely move. Tick “Play moves k with q” and the angle between q and k "
                           "stays put while both turn — so does their score.",
        "pos_style": "pair layout",
        "pos_style_half": "half: (i, i + d/2), Hugging Face rotate_half",
        "pos_style_interleaved": "interleaved: (2i, 2i + 1), Meta Llama",
        "pos_pair": "pair i (highlighted)", "pos_m": "q position m", "pos_n": "k position n",
        "pos_both": "Play moves k with q", "pos_speed": "positions per frame",
        "term_pos_both": "Play moves k with q",
        "pos_play": "▶ Play", "pos_pause": "Pause",
        "pos_rotate_plot": "q and k, pair by pair", "pos_clock_plot": "All pairs",
        "pos_matrix": "The rotation of the picked pair",
        "pos_relative_note": "q and k are the same two vectors at every position; only their positions change. "
                             "With RoPE every diagonal of the score map (fixed n − m) holds one value; add "
                             "sinusoidal encodings instead and it does not.",
        "pos_encoding": "position enters by",
        "pos_encoding_rope": "RoPE: rotate q and k",
        "pos_encoding_sinusoidal": "sinusoidal: add p_m to q and p_n to k",
        "pos_T": "sequence length T", "pos_max_distance": "decay curve up to distance",
        "pos_relative_plot": "Scores over (m, n)", "pos_decay_plot": "Long-range decay",
        "pos_frequencies_note": "Pair i turns once every 2π/θ_i tokens. Pairs above the training length L never "
                                "turned once during training (orange markers).",
        "pos_freq_train": "training context L (tokens)", "pos_span": "positions in the heatmap",
        "pos_freq_plot": "Wavelengths",
        "pos_extrapolation_note": "Past L, slow pairs reach angles the model never saw. Three ways to extend the "
                                  "context s times: interpolate every position, raise the base (NTK-aware), or scale by "
                                  "wavelength (Llama 3.1).",
        "pos_ext_train": "training context L", "pos_factor": "extension factor s",
        "pos_low": "Llama 3.1 low_freq_factor", "pos_high": "Llama 3.1 high_freq_factor",
        "pos_methods": "methods",
        "pos_method_original": "original RoPE", "pos_method_pi": "position interpolation (m → m/s)",
        "pos_method_ntk": "NTK-aware (base·s^(d/(d−2)))", "pos_method_llama3": "Llama 3.1 (by wavelength)",
        "pos_llama31": "Llama 3.1 settings (d 128, base 500,000, L 8,192, s 8, factors 1 and 4)",
        "pos_ext_freq_plot": "Frequencies per method", "pos_ext_score_plot": "Past the training length",
        "pos_ext_table": "Summary",
        "pos_conventions_note": "Same rotation, two ways to lay out the pairs. Meta rotates neighbours (2i, 2i+1); "
                                "Hugging Face rotates halves (i, i + d/2). A fixed permutation of the dimensions "
                                "turns one into the other.",
        "pos_conv_dim": "d for the diagram", "pos_conv_m": "position m",
        "pos_pairing_plot": "Which dimensions pair up", "pos_matrices_plot": "Rotation matrices",
        "pos_conv_check": "The permutation, checked",
        "pos_compare_note": "Three ways to put position in, on the same sequence. Sinusoidal adds a vector to "
                            "each token; RoPE rotates q and k; ALiBi adds −slope·distance to the scores, one slope "
                            "per head.",
        "pos_cmp_T": "sequence length T", "pos_cmp_d": "d_model (sinusoidal, RoPE)", "pos_cmp_heads": "ALiBi heads",
        "pos_sin_plot": "Sinusoidal encoding", "pos_alibi_plot": "ALiBi biases", "pos_same_plot": "One token, three schemes",
        "pos_slopes": "ALiBi slopes",
        "pos_explain": r"""
**RoPE with complex numbers, in a few lines.** Read pair $i$ of a query as one complex number $q^{(i)} = q_{2i} + \mathrm{i}\,q_{2i+1}$. RoPE multiplies it by $e^{\mathrm{i}m\theta_i}$, with $\theta_i = \text{base}^{-2i/d}$:

$$f(q,m)^{(i)} = q^{(i)}\,e^{\mathrm{i}m\theta_i} \quad\Longleftrightarrow\quad \begin{pmatrix}q'_{2i}\\ q'_{2i+1}\end{pmatrix} = \begin{pmatrix}\cos m\theta_i & -\sin m\theta_i\\ \sin m\theta_i & \cos m\theta_i\end{pmatrix}\begin{pmatrix}q_{2i}\\ q_{2i+1}\end{pmatrix}$$

The score of query $m$ and key $n$ is the real part of a sum over pairs:

$$\langle f(q,m), f(k,n)\rangle = \mathrm{Re}\sum_i q^{(i)}\,\overline{k^{(i)}}\;e^{\mathrm{i}(m-n)\theta_i} = q^\top R_{n-m}\,k$$

Only $m-n$ is left: absolute positions go in, a relative position comes out, and no norm changes ($|e^{\mathrm{i}\phi}|=1$).

- **Frequencies.** $\theta_0 = 1$ rad per token, a turn every $2\pi \approx 6.3$ tokens; the last pair, $\theta_{d/2-1} = \text{base}^{-(d-2)/d}$, turns once every $2\pi\cdot\text{base}^{(d-2)/d}$ tokens (for $d = 128$: ≈ 54 K with base 10,000, ≈ 2.6 M with base 500,000; a little under $2\pi\cdot\text{base}$). Fast pairs tell neighbours apart, slow pairs carry the long range. The Frequencies view prints it for your d and base.
- **Decay.** For $q = k$ the score is $\sum_i |q^{(i)}|^2\cos((m-n)\theta_i)$: cosines of different periods add up at distance 0 and drift out of phase as it grows (RoFormer §3.4.3 bounds it).
- **Layouts.** Meta pairs $(2i, 2i+1)$. Hugging Face pairs $(i, i+d/2)$ and writes $x\cos + \mathrm{rotate\_half}(x)\sin$ with $\mathrm{rotate\_half}(x_1, x_2) = (-x_2, x_1)$. Same scores once the rows of $W_q$, $W_k$ are permuted — what HF's conversion script does.
- **Past the training length $L$.** Pairs with a wavelength above $L$ never turned once in training; past $L$ they reach new angles. Position interpolation ($m \to m/s$): no new angles, but neighbours are $s$ times closer. NTK-aware ($\text{base}\cdot s^{d/(d-2)}$): fast pairs untouched, the slowest slowed by exactly $s$. Llama 3.1: pairs with a wavelength below $L/4$ kept, those above $L$ turned 8 times slower (frequency divided by 8, so wavelength times 8), a linear blend of the two between.
- **Sinusoidal and ALiBi.** Vaswani et al. add $PE_{p,2i} = \sin(p/\text{base}^{2i/d})$, $PE_{p,2i+1} = \cos(p/\text{base}^{2i/d})$ to the token: the cross terms $x\cdot p_n + p_m\cdot x$ depend on $m$ and $n$ themselves. ALiBi adds $-\text{slope}_h\,|m-n|$ to the scores with slopes $2^{-8/H}, 2^{-16/H}, \dots$
""",
        # figures (viz.positions)
        "pos_fig_rotate_title": "q at position m = {m}, k at n = {n}:  q<sub>m</sub>·k<sub>n</sub> = {s}  =  "
                        "qᵀR<sub>n−m</sub>k = {r}",
        "pos_fig_pair_title": "pair {i} · dims {a}, {b}<br>θ {theta} · mθ {turns} turns",
        "pos_fig_q0": "q (position 0)", "pos_fig_qm": "q rotated to m", "pos_fig_k0": "k (position 0)", "pos_fig_kn": "k rotated to n",
        "pos_fig_trail": "q's path up to m",
        "pos_fig_clock_title": "Every pair at once: q at m (●) and k at n (○), fast pairs outside",
        "pos_fig_contrib_title": "Each pair's share of q<sub>m</sub>·k<sub>n</sub> (the bars sum to the score)",
        "pos_fig_pair": "pair i", "pos_fig_contribution": "contribution", "pos_fig_selected": "selected pair",
        "pos_fig_heat_rope": "RoPE: q<sub>m</sub>·k<sub>n</sub> = (R<sub>m</sub>q)·(R<sub>n</sub>k)",
        "pos_fig_heat_sinusoidal": "Sinusoidal: (q + p<sub>m</sub>)·(k + p<sub>n</sub>)",
        "pos_fig_diag_title": "Score against n − m: every cell of a diagonal",
        "pos_fig_spread_flat": "Largest spread along a diagonal: {s} (float64): the score depends on n − m only",
        "pos_fig_spread_not": "Largest spread along a diagonal: {s}: the score depends on m and n, not only on n − m",
        "pos_fig_query_pos": "query position m", "pos_fig_key_pos": "key position n", "pos_fig_offset": "n − m", "pos_fig_score": "score",
        "pos_fig_highest": "highest on the diagonal", "pos_fig_lowest": "lowest on the diagonal",
        "pos_fig_decay_title": "Long-range decay: score against distance for q = k (1 at distance 0)",
        "pos_fig_ones": "q = k = (1, …, 1): mean cos(Δθ<sub>i</sub>)", "pos_fig_random": "q = k = the random vector above",
        "pos_fig_bound": "RoFormer Fig. 2: (2/d)·Σ<sub>j</sub>|S<sub>j</sub>|, the bound's distance term, over its value at 0, (d/2 + 1)/2", "pos_fig_distance": "relative distance |m − n| (tokens)",
        "pos_fig_freq_title": "{slow} of {pairs} pairs never complete a turn within L = {L} tokens;<br>"
                              "the slowest turns once every {longest} tokens (2π·base<sup>(d−2)/d</sup>)",
        "pos_fig_wavelength": "wavelength 2π/θ<sub>i</sub> (tokens)", "pos_fig_base": "base {b}", "pos_fig_train": "L = {L}",
        "pos_fig_wave_title": "Wavelength of each pair (log scale)",
        "pos_fig_cos_title": "cos(m·θ<sub>i</sub>) for positions 0…{P}", "pos_fig_position": "position m",
        "pos_fig_turns_hover": "pair {pair}<br>wavelength {wavelength} tokens",
        "pos_fig_pair_n": "pair {i}", "pos_fig_tokens_n": "{n} tokens",
        "pos_fig_ext_wave": "Wavelength per pair", "pos_fig_ext_ratio": "Frequency kept: θ′<sub>i</sub> / θ<sub>i</sub>",
        "pos_fig_ratio": "θ′ / θ", "pos_fig_target": "s·L = {T}",
        "pos_fig_ext_unseen": "Pairs at an angle never seen in training",
        "pos_fig_ext_score": "Score against distance, q = k = (1, …, 1)",
        "pos_fig_fraction": "fraction of pairs", "pos_fig_blend": "Llama 3.1 blend",
        "pos_fig_original": "original RoPE", "pos_fig_pi": "position interpolation", "pos_fig_ntk": "NTK-aware", "pos_fig_llama3": "Llama 3.1",
        "pos_fig_m_pair": "**Pair {i}** (dimensions {a} and {b}): θ<sub>{i}</sub> = {base}<sup>−{two_i}/{d}</sup> = {theta} rad per position.",
        "pos_fig_m_q": "q at m = {m}: angle mθ = {angle} rad ({deg}° after whole turns)",
        "pos_fig_m_k": "k at n = {n}: angle nθ = {angle} rad ({deg}°)",
        "pos_fig_m_rel": "The score only sees the difference: R(mθ)ᵀR(nθ) = R((n − m)θ), here n − m = {o}",
        "pos_fig_m_scores": "Over all {d} dimensions: q<sub>m</sub>·k<sub>n</sub> = **{s}** (both rotated) and qᵀR<sub>n−m</sub>k = **{r}** (only the offset)",
        "pos_fig_t_method": "method", "pos_fig_t_change": "what it changes", "pos_fig_t_fast": "fastest pair θ′₀/θ₀",
        "pos_fig_t_safe": "every angle seen in training up to",
        "pos_fig_c_original": "nothing (base {b})", "pos_fig_c_pi": "positions m → m/s",
        "pos_fig_c_ntk": "base → base·s<sup>d/(d−2)</sup> = {b}",
        "pos_fig_c_llama3": "frequency kept where λ < L/{h} = {Lh}, divided by s where λ > L/{l} = {Ll}, blended between",
        "pos_fig_all_turned": "∞ (every pair turned fully in training)",
        "pos_fig_ext_note": "s = {s}, L = {L}: the target context is s·L = {T} tokens.",
        # figures (viz.positions_compare)
        "pos_fig_pairing_title": "Which dimensions pair up: perm = {perm} (interleaved dim perm[j] → half dim j)",
        "pos_fig_interleaved": "interleaved (Meta)", "pos_fig_half": "half (HF rotate_half)", "pos_fig_dim": "dimension",
        "pos_fig_dim_hover": "dim {dim}: pair {pair}",
        "pos_fig_r_interleaved": "R<sub>m</sub>, interleaved", "pos_fig_r_half": "R<sub>m</sub>, half",
        "pos_fig_r_permuted": "R<sub>m</sub> interleaved, rows and columns permuted",
        "pos_fig_matrices_title": "Rotation matrices at m = {m}: max |R<sub>half</sub> − P R<sub>interleaved</sub> Pᵀ| = {d}",
        "pos_fig_row": "output dim", "pos_fig_col": "input dim",
        "pos_fig_sin_title": "Sinusoidal encoding PE[p, j]: sin on even j, cos on odd j",
        "pos_fig_alibi_title": "ALiBi bias −slope·|i − j| per head (added to the scores)",
        "pos_fig_head": "head {h} · slope {s}", "pos_fig_query": "query i", "pos_fig_key": "key j", "pos_fig_position_p": "position p",
        "pos_fig_same_title": "One token at every position: logit of query m with key n",
        "pos_fig_s_sinusoidal": "sinusoidal (x + p<sub>m</sub>)·(x + p<sub>n</sub>)/√d<br>diagonal spread {s}",
        "pos_fig_s_rope": "RoPE (R<sub>m</sub>x)·(R<sub>n</sub>x)/√d<br>diagonal spread {s}",
        "pos_fig_s_alibi": "ALiBi x·x/√d − slope<sub>1</sub>·|m − n|<br>diagonal spread {s}",
        "pos_fig_logit": "logit", "pos_fig_bias": "bias",
        "pos_fig_h_perm": "The permutation", "pos_fig_h_check": "Checked now", "pos_fig_code": "in code",
        "pos_fig_code_perm": "even dims, then odd",
        "pos_fig_perm_line": "`perm` = {perm} · inverse `perm.argsort()` = {inv}",
        "pos_fig_check_x": "max |half(x[…, perm]) − interleaved(x)[…, perm]| over a random x of shape [2, 3, 16, {d}]: "
                   "**{f64}** in float64, **{f32}** in float32",
        "pos_fig_check_w": "Meta weights + interleaved: q<sub>m</sub>·k<sub>0</sub> = **{meta}** · the same weights with their "
                   "rows permuted (`W[perm]`, as Hugging Face's conversion script does) + rotate_half: **{hf}**",
        "pos_fig_slopes": "**Slopes** ({h} heads{rule}): {list}",
        "pos_fig_rule_pow2": ", a power of 2: 2^(−8k/{h})",
        "pos_fig_rule_other": ": {n} heads' slopes, then every other slope of {n2} heads",
        # messages (models.positions, models.positions_explore)
        "pos_err_odd": "{name} = {value} is odd: RoPE rotates pairs of dimensions, so d must be even (2 to {high})",
        "pos_err_ntk_one_pair": "NTK-aware scaling needs head dim d ≥ 4: with one pair, θ_0 = base^0 = 1 does not "
                                "depend on the base",
        "pos_err_freq_factors": "high_freq_factor = {high} must be greater than low_freq_factor = {low}",
        "pos_err_positions_dtype": "positions must be real numbers, got dtype {dtype}",
        "pos_err_positions_length": "positions has shape {shape}: its last dimension must be T = {T}",
        "pos_err_positions_broadcast": "positions of shape {shape} do not broadcast to x's {batch} (x is [..., T, D]; "
                                       "for [B, H, T, D] pass [T] or [B, 1, T])",
        "pos_err_positions_finite": "positions must be finite numbers",
        "pos_err_positions_negative": "positions must be ≥ 0 (position 0 is the first token), got {value}",
        "pos_err_x_float": "x must be a floating-point tensor [..., T, D]",
        "pos_err_x_shape": "x has shape {shape}: it must be [..., T, D]",
        "pos_err_inv_freq": "inv_freq has shape {shape}: it must be [D/2] = [{half}]",
        "pos_err_too_many": "{what} = {count} values is too many: at most {most}",
        "pos_err_methods": "methods {bad}: pick one or more of {choices}",
        "pos_err_no_method": "tick at least one method to compare",
        "pos_err_too_long": "factor × L = {factor} × {L} is too long: the view draws distances up to twice that, "
                            "at most {most}",
        "term_pos_head_dim": "head dim d",
        "term_pos_diagram_dim": "d for the diagram",
        "term_pos_base": "base",
        "term_pos_style": "style",
        "term_pos_pair": "pair i",
        "term_pos_q_pos": "q position m",
        "term_pos_k_pos": "k position n",
        "term_pos_speed": "positions per frame",
        "term_pos_encoding": "encoding",
        "term_pos_seq_len": "sequence length T",
        "term_pos_compare_len": "sequence length T",
        "term_pos_max_distance": "distance",
        "term_pos_train_len": "training context L",
        "term_pos_span": "positions shown",
        "term_pos_original_max_position": "training context L",
        "term_pos_factor": "factor s",
        "term_pos_low_freq_factor": "low_freq_factor",
        "term_pos_high_freq_factor": "high_freq_factor",
        "term_pos_ntk_alpha": "NTK alpha",
        "term_pos_scale": "scale",
        "term_pos_method": "method",
        "term_pos_position": "position m",
        "term_pos_heads": "heads",
        "term_pos_view": "view",
    },
    "zh-CN": {
        "tab_positions": "位置编码（RoPE）",
        "pos_intro": "没有因果掩码时，仅靠注意力分不清“天气晴朗，适合露营”和“露营晴朗，适合天气”：在它看来，输入只是无序的词袋。"
                     "因果解码器即使不加位置编码也能推断位置（NoPE：第 i 个词元对 i + 1 个词元做注意力，这个个数本身就透露了位置），"
                     "但模型通常仍会显式加入位置信息。这里 RoPE 按位置旋转 q 和 k；最后一页把它和正弦位置编码、ALiBi 放在一起比较。"
                     "所有结果都由后端的 `apply_rope` 实时计算。",
        "pos_head_dim": "头维度 d（偶数）",
        "pos_head_dim_info": f"64（GPT-2 的头），128（Llama），最大 {POS_MAX_HEAD_DIM}",
        "pos_base": "底数 θ",
        "pos_base_info": "10,000：RoFormer、Llama 2 · 500,000：Llama 3 · 1,000,000：Qwen2",
        "pos_seed": "随机种子（随机的 q 和 k）",
        "pos_view": "视图",
        "pos_sub_rotate": "旋转", "pos_sub_relative": "相对位置", "pos_sub_frequencies": "频率",
        "pos_sub_extrapolation": "外推", "pos_sub_conventions": "两种布局",
        "pos_sub_compare": "正弦 · RoPE · ALiBi",
        "pos_rotate_note": "q 的每一对维度都是一个二维向量，旋转角度为 m·θ_i。按“播放”：前面的维度对飞快旋转，后面的几乎不动。"
                           "勾选“播放时 k 随 q 一起移动”：两者都在转，但它们之间的夹角不变，分数也就不变。",
        "pos_style": "维度配对方式",
        "pos_style_half": "对半：(i, i + d/2)，Hugging Face 的 rotate_half",
        "pos_style_interleaved": "交错：(2i, 2i + 1)，Meta 的 Llama",
        "pos_pair": "维度对 i（高亮）", "pos_m": "q 的位置 m", "pos_n": "k 的位置 n",
        "pos_both": "播放时 k 随 q 一起移动", "pos_speed": "每帧前进的位置数",
        "term_pos_both": "播放时 k 随 q 一起移动",
        "pos_play": "▶ 播放", "pos_pause": "暂停",
        "pos_rotate_plot": "逐对看 q 和 k", "pos_clock_plot": "所有维度对",
        "pos_matrix": "所选维度对的旋转",
        "pos_relative_note": "q 和 k 在每个位置上都是同样的两个向量，只有位置在变。用 RoPE 时，分数图的每条对角线"
                             "（固定 n − m）只有一个值；改为加正弦位置编码，就不再如此。",
        "pos_encoding": "位置加入的方式",
        "pos_encoding_rope": "RoPE：旋转 q 和 k",
        "pos_encoding_sinusoidal": "正弦：给 q 加 p_m，给 k 加 p_n",
        "pos_T": "序列长度 T", "pos_max_distance": "衰减曲线画到的距离",
        "pos_relative_plot": "(m, n) 上的分数", "pos_decay_plot": "远程衰减",
        "pos_frequencies_note": "第 i 对每 2π/θ_i 个词元转一圈。波长超过训练长度 L 的维度对在训练中一圈都没转完（橙色点）。",
        "pos_freq_train": "训练上下文 L（词元）", "pos_span": "热力图中的位置数",
        "pos_freq_plot": "波长",
        "pos_extrapolation_note": "超过 L 之后，慢的维度对会转到模型从未见过的角度。把上下文扩展 s 倍的三种做法：对所有位置插值、"
                                  "调大底数（NTK-aware），或按波长分别缩放（Llama 3.1）。",
        "pos_ext_train": "训练上下文 L", "pos_factor": "扩展倍数 s",
        "pos_low": "Llama 3.1 的 low_freq_factor", "pos_high": "Llama 3.1 的 high_freq_factor",
        "pos_methods": "方法",
        "pos_method_original": "原始 RoPE", "pos_method_pi": "位置插值（m → m/s）",
        "pos_method_ntk": "NTK-aware（底数·s^(d/(d−2))）", "pos_method_llama3": "Llama 3.1（按波长）",
        "pos_llama31": "Llama 3.1 的设置（d 128，底数 500,000，L 8,192，s 8，因子 1 和 4）",
        "pos_ext_freq_plot": "各方法的频率", "pos_ext_score_plot": "超过训练长度之后",
        "pos_ext_table": "汇总",
        "pos_conventions_note": "同一个旋转，两种配对布局。Meta 旋转相邻的 (2i, 2i+1)；Hugging Face 旋转前后两半 (i, i + d/2)。"
                                "对维度做一个固定的置换，就能把一种变成另一种。",
        "pos_conv_dim": "示意图的 d", "pos_conv_m": "位置 m",
        "pos_pairing_plot": "哪些维度配成一对", "pos_matrices_plot": "旋转矩阵",
        "pos_conv_check": "置换及其验证",
        "pos_compare_note": "在同一序列上比较三种加入位置的方法。正弦编码给每个词元加一个向量；RoPE 旋转 q 和 k；"
                            "ALiBi 给分数加上 −斜率·距离，每个头一个斜率。",
        "pos_cmp_T": "序列长度 T", "pos_cmp_d": "d_model（正弦、RoPE）", "pos_cmp_heads": "ALiBi 头数",
        "pos_sin_plot": "正弦位置编码", "pos_alibi_plot": "ALiBi 偏置", "pos_same_plot": "同一个词元，三种方案",
        "pos_slopes": "ALiBi 斜率",
        "pos_explain": r"""
**用复数几行推出 RoPE。** 把查询的第 $i$ 对看成一个复数 $q^{(i)} = q_{2i} + \mathrm{i}\,q_{2i+1}$。RoPE 把它乘以 $e^{\mathrm{i}m\theta_i}$，其中 $\theta_i = \text{base}^{-2i/d}$：

$$f(q,m)^{(i)} = q^{(i)}\,e^{\mathrm{i}m\theta_i} \quad\Longleftrightarrow\quad \begin{pmatrix}q'_{2i}\\ q'_{2i+1}\end{pmatrix} = \begin{pmatrix}\cos m\theta_i & -\sin m\theta_i\\ \sin m\theta_i & \cos m\theta_i\end{pmatrix}\begin{pmatrix}q_{2i}\\ q_{2i+1}\end{pmatrix}$$

查询 $m$ 与键 $n$ 的分数是各对乘积之和的实部：

$$\langle f(q,m), f(k,n)\rangle = \mathrm{Re}\sum_i q^{(i)}\,\overline{k^{(i)}}\;e^{\mathrm{i}(m-n)\theta_i} = q^\top R_{n-m}\,k$$

只剩下 $m-n$：输入的是绝对位置，得到的是相对位置，而且任何范数都不变（$|e^{\mathrm{i}\phi}|=1$）。

- **频率。** $\theta_0 = 1$ 弧度/词元，每 $2\pi \approx 6.3$ 个词元转一圈；最后一对 $\theta_{d/2-1} = \text{base}^{-(d-2)/d}$，每 $2\pi\cdot\text{base}^{(d-2)/d}$ 个词元才转一圈（$d = 128$ 时：底数 10,000 约 5.4 万，底数 500,000 约 260 万；比 $2\pi\cdot\text{base}$ 略小）。快的维度对区分相邻词元，慢的维度对负责远距离。“频率”页会按你的 d 和底数算出这个值。
- **衰减。** 当 $q = k$ 时分数为 $\sum_i |q^{(i)}|^2\cos((m-n)\theta_i)$：不同周期的余弦在距离 0 处同相相加，距离增大后逐渐错开（RoFormer §3.4.3 给出了上界）。
- **两种布局。** Meta 配对 $(2i, 2i+1)$。Hugging Face 配对 $(i, i+d/2)$，写成 $x\cos + \mathrm{rotate\_half}(x)\sin$，其中 $\mathrm{rotate\_half}(x_1, x_2) = (-x_2, x_1)$。只要把 $W_q$、$W_k$ 的行重排，分数就完全相同——HF 的转换脚本正是这样做的。
- **超过训练长度 $L$。** 波长大于 $L$ 的维度对在训练中一圈都没转完；超过 $L$ 后会转到新的角度。位置插值（$m \to m/s$）：不会出现新角度，但相邻位置之间的角度差缩小为原来的 $1/s$。NTK-aware（$\text{base}\cdot s^{d/(d-2)}$）：快的维度对不变，最慢的一对频率恰好降为原来的 $1/s$。Llama 3.1：波长小于 $L/4$ 的维度对不变，大于 $L$ 的转慢 8 倍（频率除以 8，即波长乘以 8），中间在两者之间线性过渡。
- **正弦编码与 ALiBi。** Vaswani 等人把 $PE_{p,2i} = \sin(p/\text{base}^{2i/d})$、$PE_{p,2i+1} = \cos(p/\text{base}^{2i/d})$ 加到词元上：交叉项 $x\cdot p_n + p_m\cdot x$ 依赖 $m$ 和 $n$ 本身。ALiBi 给分数加上 $-\text{slope}_h\,|m-n|$，斜率为 $2^{-8/H}, 2^{-16/H}, \dots$
""",
        # figures (viz.positions)
        "pos_fig_rotate_title": "q 位于位置 m = {m}，k 位于 n = {n}：q<sub>m</sub>·k<sub>n</sub> = {s} = "
                        "qᵀR<sub>n−m</sub>k = {r}",
        "pos_fig_pair_title": "第 {i} 对 · 维度 {a}、{b}<br>θ {theta} · mθ {turns} 圈",
        "pos_fig_q0": "q（位置 0）", "pos_fig_qm": "q 旋转到 m", "pos_fig_k0": "k（位置 0）", "pos_fig_kn": "k 旋转到 n",
        "pos_fig_trail": "q 到 m 为止的轨迹",
        "pos_fig_clock_title": "所有维度对一起看：q 在 m（●），k 在 n（○），快的维度对在外圈",
        "pos_fig_contrib_title": "每一对对 q<sub>m</sub>·k<sub>n</sub> 的贡献（各柱之和就是分数）",
        "pos_fig_pair": "维度对 i", "pos_fig_contribution": "贡献", "pos_fig_selected": "选中的维度对",
        "pos_fig_heat_rope": "RoPE：q<sub>m</sub>·k<sub>n</sub> = (R<sub>m</sub>q)·(R<sub>n</sub>k)",
        "pos_fig_heat_sinusoidal": "正弦编码：(q + p<sub>m</sub>)·(k + p<sub>n</sub>)",
        "pos_fig_diag_title": "分数与 n − m 的关系：对角线上的每个格子",
        "pos_fig_spread_flat": "同一对角线上的最大差值：{s}（float64）：分数只取决于 n − m",
        "pos_fig_spread_not": "同一对角线上的最大差值：{s}：分数取决于 m 和 n，而不只是 n − m",
        "pos_fig_query_pos": "查询位置 m", "pos_fig_key_pos": "键位置 n", "pos_fig_offset": "n − m", "pos_fig_score": "分数",
        "pos_fig_highest": "对角线上的最大值", "pos_fig_lowest": "对角线上的最小值",
        "pos_fig_decay_title": "远程衰减：q = k 时分数随距离的变化（距离 0 处为 1）",
        "pos_fig_ones": "q = k = (1, …, 1)：cos(Δθ<sub>i</sub>) 的平均", "pos_fig_random": "q = k = 上面的随机向量",
        "pos_fig_bound": "RoFormer 图 2：(2/d)·Σ<sub>j</sub>|S<sub>j</sub>|，上界中随距离变化的项，除以它在 0 处的值 (d/2 + 1)/2", "pos_fig_distance": "相对距离 |m − n|（词元）",
        "pos_fig_freq_title": "{pairs} 对中有 {slow} 对在 L = {L} 个词元内转不满一圈；<br>"
                              "最慢的一对每 {longest} 个词元转一圈（2π·base<sup>(d−2)/d</sup>）",
        "pos_fig_wavelength": "波长 2π/θ<sub>i</sub>（词元）", "pos_fig_base": "底数 {b}", "pos_fig_train": "L = {L}",
        "pos_fig_wave_title": "每一对的波长（对数坐标）",
        "pos_fig_cos_title": "位置 0…{P} 上的 cos(m·θ<sub>i</sub>)", "pos_fig_position": "位置 m",
        "pos_fig_turns_hover": "第 {pair} 对<br>波长 {wavelength} 个词元",
        "pos_fig_pair_n": "第 {i} 对", "pos_fig_tokens_n": "{n} 个词元",
        "pos_fig_ext_wave": "每一对的波长", "pos_fig_ext_ratio": "保留的频率：θ′<sub>i</sub> / θ<sub>i</sub>",
        "pos_fig_ratio": "θ′ / θ", "pos_fig_target": "s·L = {T}",
        "pos_fig_ext_unseen": "处于训练中从未见过的角度的维度对",
        "pos_fig_ext_score": "分数随距离的变化，q = k = (1, …, 1)",
        "pos_fig_fraction": "维度对的比例", "pos_fig_blend": "Llama 3.1 过渡区",
        "pos_fig_original": "原始 RoPE", "pos_fig_pi": "位置插值", "pos_fig_ntk": "NTK-aware", "pos_fig_llama3": "Llama 3.1",
        "pos_fig_m_pair": "**第 {i} 对**（维度 {a} 和 {b}）：θ<sub>{i}</sub> = {base}<sup>−{two_i}/{d}</sup> = {theta} 弧度/位置。",
        "pos_fig_m_q": "q 在 m = {m}：角度 mθ = {angle} 弧度（去掉整圈后为 {deg}°）",
        "pos_fig_m_k": "k 在 n = {n}：角度 nθ = {angle} 弧度（{deg}°）",
        "pos_fig_m_rel": "分数只看差值：R(mθ)ᵀR(nθ) = R((n − m)θ)，这里 n − m = {o}",
        "pos_fig_m_scores": "在全部 {d} 个维度上：q<sub>m</sub>·k<sub>n</sub> = **{s}**（两者都旋转）与 qᵀR<sub>n−m</sub>k = **{r}**（只用偏移）",
        "pos_fig_t_method": "方法", "pos_fig_t_change": "改变了什么", "pos_fig_t_fast": "最快一对 θ′₀/θ₀",
        "pos_fig_t_safe": "所有角度都在训练中见过的最远距离",
        "pos_fig_c_original": "不变（底数 {b}）", "pos_fig_c_pi": "位置 m → m/s",
        "pos_fig_c_ntk": "底数 → 底数·s<sup>d/(d−2)</sup> = {b}",
        "pos_fig_c_llama3": "λ < L/{h} = {Lh} 处频率不变，λ > L/{l} = {Ll} 处频率除以 s，中间线性过渡",
        "pos_fig_all_turned": "∞（训练中每一对都转满了一圈）",
        "pos_fig_ext_note": "s = {s}，L = {L}：目标上下文为 s·L = {T} 个词元。",
        # figures (viz.positions_compare)
        "pos_fig_pairing_title": "哪些维度配成一对：perm = {perm}（交错布局的维度 perm[j] → 对半布局的维度 j）",
        "pos_fig_interleaved": "交错（Meta）", "pos_fig_half": "对半（HF rotate_half）", "pos_fig_dim": "维度",
        "pos_fig_dim_hover": "维度 {dim}：第 {pair} 对",
        "pos_fig_r_interleaved": "R<sub>m</sub>，交错", "pos_fig_r_half": "R<sub>m</sub>，对半",
        "pos_fig_r_permuted": "交错的 R<sub>m</sub>，行和列按 perm 重排",
        "pos_fig_matrices_title": "m = {m} 处的旋转矩阵：max |R<sub>half</sub> − P R<sub>interleaved</sub> Pᵀ| = {d}",
        "pos_fig_row": "输出维度", "pos_fig_col": "输入维度",
        "pos_fig_sin_title": "正弦位置编码 PE[p, j]：偶数 j 用 sin，奇数 j 用 cos",
        "pos_fig_alibi_title": "ALiBi 每个头的偏置 −slope·|i − j|（加到注意力分数上）",
        "pos_fig_head": "头 {h} · 斜率 {s}", "pos_fig_query": "查询 i", "pos_fig_key": "键 j", "pos_fig_position_p": "位置 p",
        "pos_fig_same_title": "同一个词元放在每个位置：查询 m 与键 n 的 logit",
        "pos_fig_s_sinusoidal": "正弦 (x + p<sub>m</sub>)·(x + p<sub>n</sub>)/√d<br>对角线差值 {s}",
        "pos_fig_s_rope": "RoPE (R<sub>m</sub>x)·(R<sub>n</sub>x)/√d<br>对角线差值 {s}",
        "pos_fig_s_alibi": "ALiBi x·x/√d − slope<sub>1</sub>·|m − n|<br>对角线差值 {s}",
        "pos_fig_logit": "logit", "pos_fig_bias": "偏置",
        "pos_fig_h_perm": "置换", "pos_fig_h_check": "现场验证", "pos_fig_code": "代码",
        "pos_fig_code_perm": "先取偶数维，再取奇数维",
        "pos_fig_perm_line": "`perm` = {perm} · 逆置换 `perm.argsort()` = {inv}",
        "pos_fig_check_x": "对形状为 [2, 3, 16, {d}] 的随机 x，max |half(x[…, perm]) − interleaved(x)[…, perm]|："
                   "float64 下 **{f64}**，float32 下 **{f32}**",
        "pos_fig_check_w": "Meta 权重 + 交错：q<sub>m</sub>·k<sub>0</sub> = **{meta}** · 同一权重按行重排（`W[perm]`，"
                   "即 Hugging Face 转换脚本的做法）+ rotate_half：**{hf}**",
        "pos_fig_slopes": "**斜率**（{h} 个头{rule}）：{list}",
        "pos_fig_rule_pow2": "，2 的幂：2^(−8k/{h})",
        "pos_fig_rule_other": "：先取 {n} 个头的斜率，再从 {n2} 个头的斜率中每隔一个取一个",
        # messages (models.positions, models.positions_explore)
        "pos_err_odd": "{name} = {value} 是奇数：RoPE 按维度对旋转，所以 d 必须是偶数（2 到 {high}）",
        "pos_err_ntk_one_pair": "NTK-aware 缩放需要头维度 d ≥ 4：只有一对维度时 θ_0 = base^0 = 1，与底数无关",
        "pos_err_freq_factors": "high_freq_factor = {high} 必须大于 low_freq_factor = {low}",
        "pos_err_positions_dtype": "位置必须是实数，收到的 dtype 是 {dtype}",
        "pos_err_positions_length": "位置的形状是 {shape}：最后一维必须是 T = {T}",
        "pos_err_positions_broadcast": "形状为 {shape} 的位置无法广播到 x 的 {batch}（x 是 [..., T, D]；"
                                       "对 [B, H, T, D] 请传 [T] 或 [B, 1, T]）",
        "pos_err_positions_finite": "位置必须是有限的数",
        "pos_err_positions_negative": "位置必须 ≥ 0（位置 0 是第一个词元），收到 {value}",
        "pos_err_x_float": "x 必须是形状为 [..., T, D] 的浮点张量",
        "pos_err_x_shape": "x 的形状是 {shape}：必须是 [..., T, D]",
        "pos_err_inv_freq": "inv_freq 的形状是 {shape}：必须是 [D/2] = [{half}]",
        "pos_err_too_many": "{what} = {count} 个值太多了：最多 {most} 个",
        "pos_err_methods": "方法 {bad}：请从 {choices} 中选一个或多个",
        "pos_err_no_method": "请至少勾选一种要比较的方法",
        "pos_err_too_long": "factor × L = {factor} × {L} 太长了：这个视图要画到它的两倍距离，最多 {most}",
        "term_pos_head_dim": "头维度 d",
        "term_pos_diagram_dim": "示意图的 d",
        "term_pos_base": "底数 base",
        "term_pos_style": "配对方式 style",
        "term_pos_pair": "维度对 i",
        "term_pos_q_pos": "q 的位置 m",
        "term_pos_k_pos": "k 的位置 n",
        "term_pos_speed": "每帧前进的位置数",
        "term_pos_encoding": "位置编码方式",
        "term_pos_seq_len": "序列长度 T",
        "term_pos_compare_len": "序列长度 T",
        "term_pos_max_distance": "距离",
        "term_pos_train_len": "训练上下文 L",
        "term_pos_span": "显示的位置数",
        "term_pos_original_max_position": "训练上下文 L",
        "term_pos_factor": "扩展倍数 s",
        "term_pos_low_freq_factor": "low_freq_factor",
        "term_pos_high_freq_factor": "high_freq_factor",
        "term_pos_ntk_alpha": "NTK alpha",
        "term_pos_scale": "缩放 scale",
        "term_pos_method": "方法",
        "term_pos_position": "位置 m",
        "term_pos_heads": "注意力头数",
        "term_pos_view": "视图",
    },
}
