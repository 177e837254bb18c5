"""The Positions tab: rotate vectors with RoPE, and compare it with sinusoidal and ALiBi.

Six views in sub-tabs, each with its own named endpoint (a few milliseconds each). Head dim, base
and seed sit above the views and apply to all of them; changing one redraws the view on screen.
"""
from __future__ import annotations

import gradio as gr

from components.common import as_int, as_number, device_line, explain, user_errors
from components.i18n import lang_of, t
from models.limits import POS_CURVE_POINTS, POS_MAX_COMPARE_LEN, POS_MAX_D_MODEL, POS_MAX_DIAGRAM_DIM
from models.limits import POS_MAX_HEAD_DIM, POS_MAX_HEADS, POS_MAX_HEATMAP, POS_MAX_POSITION
from models.limits import POS_SLIDER_MAX_POSITION, SEED_MAX

VIEWS = ("rotate", "relative", "frequencies", "extrapolation", "conventions", "compare")
METHODS = ("original", "pi", "ntk", "llama3")          # the order of models.positions_explore.METHODS
LLAMA31 = dict(head_dim=128, base=500000.0, train_len=8192, factor=8.0, low=1.0, high=4.0)
PLAY_INTERVAL = 0.3                                # seconds between two frames of Play
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]

STRINGS = {
    "en": {
        "tab_positions": "Positions (RoPE)",
        "pos_intro": "Attention alone cannot tell “天气晴朗，适合露营” from “露营晴朗，适合天气”: it sees a bag of "
                     "tokens. Position has to be put in. Here RoPE rotates q and k by their positions; the last "
                     "view sets it beside sinusoidal encodings and ALiBi. Everything is computed live by the "
                     "backend's `apply_rope`.",
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
                           "pairs spin, the last barely move. Tick “move k with q” and the angle between q and k "
                           "stays put while both turn — so does their score.",
        "pos_style": "pair layout",
        "pos_style_half": "half: (i, i + d/2), Hugging Face rotate_half",
        "pos_style_interleaved": "interleaved: (2i, 2i + 1), Meta Llama",
        "pos_pair": "pair i (highlighted)", "pos_m": "q position m", "pos_n": "k position n",
        "pos_both": "move k with q", "pos_speed": "positions per frame",
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
        "pos_extrapolation_note": "Past L, slow pairs reach angles the model never saw. Three ways to stretch a "
                                  "model by s: interpolate every position, raise the base (NTK-aware), or scale by "
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

- **Frequencies.** $\theta_0 = 1$ rad per token, a turn every $2\pi \approx 6.3$ tokens; the last pair turns once every $\approx 2\pi\cdot\text{base}$ tokens (63 k for 10,000; 3.1 M for 500,000). Fast pairs tell neighbours apart, slow pairs carry the long range.
- **Decay.** For $q = k$ the score is $\sum_i |q^{(i)}|^2\cos((m-n)\theta_i)$: cosines of different periods add up at distance 0 and drift out of phase as it grows (RoFormer §3.4.3 bounds it).
- **Layouts.** Meta pairs $(2i, 2i+1)$. Hugging Face pairs $(i, i+d/2)$ and writes $x\cos + \mathrm{rotate\_half}(x)\sin$ with $\mathrm{rotate\_half}(x_1, x_2) = (-x_2, x_1)$. Same scores once the rows of $W_q$, $W_k$ are permuted — what HF's conversion script does.
- **Past the training length $L$.** Pairs with a wavelength above $L$ never turned once in training; past $L$ they reach new angles. Position interpolation ($m \to m/s$): no new angles, but neighbours are $s$ times closer. NTK-aware ($\text{base}\cdot s^{d/(d-2)}$): fast pairs untouched, the slowest slowed by exactly $s$. Llama 3.1: wavelengths below $L/4$ kept, above $L$ divided by 8, a linear blend between.
- **Sinusoidal and ALiBi.** Vaswani et al. add $PE_{p,2i} = \sin(p/\text{base}^{2i/d})$, $PE_{p,2i+1} = \cos(p/\text{base}^{2i/d})$ to the token: the cross terms $x\cdot p_n + p_m\cdot x$ depend on $m$ and $n$ themselves. ALiBi adds $-\text{slope}_h\,|m-n|$ to the scores with slopes $2^{-8/H}, 2^{-16/H}, \dots$
""",
    },
    "zh-CN": {
        "tab_positions": "位置编码（RoPE）",
        "pos_intro": "仅靠注意力分不清“天气晴朗，适合露营”和“露营晴朗，适合天气”：它看到的只是一袋词元。"
                     "位置必须另外加进去。这里 RoPE 按位置旋转 q 和 k；最后一页把它和正弦位置编码、ALiBi 放在一起比较。"
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
        "pos_rotate_note": "q 的每一对维度都是一个二维向量，被旋转 m·θ_i。按“播放”：前面的对飞快旋转，后面的几乎不动。"
                           "勾选“k 跟着 q 一起走”，两者都在转，但它们之间的夹角不变——分数也不变。",
        "pos_style": "维度配对方式",
        "pos_style_half": "对半：(i, i + d/2)，Hugging Face 的 rotate_half",
        "pos_style_interleaved": "交错：(2i, 2i + 1)，Meta 的 Llama",
        "pos_pair": "维度对 i（高亮）", "pos_m": "q 的位置 m", "pos_n": "k 的位置 n",
        "pos_both": "k 跟着 q 一起走", "pos_speed": "每帧前进的位置数",
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
        "pos_frequencies_note": "第 i 对每 2π/θ_i 个词元转一圈。波长超过训练长度 L 的对在训练中一圈都没转完（橙色点）。",
        "pos_freq_train": "训练上下文 L（词元）", "pos_span": "热力图中的位置数",
        "pos_freq_plot": "波长",
        "pos_extrapolation_note": "超过 L 之后，慢的对会转到模型从未见过的角度。把模型拉长 s 倍的三种做法：所有位置都插值、"
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

- **频率。** $\theta_0 = 1$ 弧度/词元，每 $2\pi \approx 6.3$ 个词元转一圈；最后一对大约每 $2\pi\cdot\text{base}$ 个词元才转一圈（底数 10,000 时约 6.3 万，500,000 时约 310 万）。快的对区分相邻词元，慢的对负责远距离。
- **衰减。** 当 $q = k$ 时分数为 $\sum_i |q^{(i)}|^2\cos((m-n)\theta_i)$：不同周期的余弦在距离 0 处同相相加，距离增大后逐渐错开（RoFormer §3.4.3 给出了上界）。
- **两种布局。** Meta 配对 $(2i, 2i+1)$。Hugging Face 配对 $(i, i+d/2)$，写成 $x\cos + \mathrm{rotate\_half}(x)\sin$，其中 $\mathrm{rotate\_half}(x_1, x_2) = (-x_2, x_1)$。只要把 $W_q$、$W_k$ 的行重排，分数就完全相同——HF 的转换脚本正是这样做的。
- **超过训练长度 $L$。** 波长大于 $L$ 的对在训练中一圈都没转完；超过 $L$ 后会转到新的角度。位置插值（$m \to m/s$）：没有新角度，但相邻词元靠近了 $s$ 倍。NTK-aware（$\text{base}\cdot s^{d/(d-2)}$）：快的对不变，最慢的一对恰好慢 $s$ 倍。Llama 3.1：波长小于 $L/4$ 的不变，大于 $L$ 的除以 8，中间线性过渡。
- **正弦编码与 ALiBi。** Vaswani 等人把 $PE_{p,2i} = \sin(p/\text{base}^{2i/d})$、$PE_{p,2i+1} = \cos(p/\text{base}^{2i/d})$ 加到词元上：交叉项 $x\cdot p_n + p_m\cdot x$ 依赖 $m$ 和 $n$ 本身。ALiBi 给分数加上 $-\text{slope}_h\,|m-n|$，斜率为 $2^{-8/H}, 2^{-16/H}, \dots$
""",
    },
}


def _grid(values) -> list:
    """A tensor for a heatmap, rounded to 4 decimals (what the hover shows): a third of the JSON."""
    return values.round(decimals=4).tolist()


def _whole(name: str, value) -> int:
    """A whole number from a UI field; the backend checks its range and says what is allowed."""
    number = as_number(name, value)
    if not number.is_integer():
        raise ValueError(f"{name} = {value!r} must be a whole number")
    return int(number)


def _spec(head_dim, base, style: str = "half"):
    from models.positions_explore import RopeSpec
    return RopeSpec(head_dim=_whole("head dim d", head_dim), base=as_number("base", base), style=style)


def _seed(seed) -> int:
    return as_int("seed", seed, low=0, high=SEED_MAX)


@user_errors
def rope(head_dim: float, base: float, seed: float, style: str, pair: float, q_pos: float, k_pos: float,
         request: gr.Request = None):
    """The ``/rope`` endpoint (Rotate): pair panels, all pairs, the picked pair's matrices, device line."""
    from models.positions_explore import rotate_view
    from viz.positions import clock_figure, rotate_figure, rotation_markdown

    lang = lang_of(request)
    spec = _spec(head_dim, base, style)
    v = rotate_view(spec, as_int("q position m", q_pos, low=0, high=POS_MAX_POSITION),
                    as_int("k position n", k_pos, low=0, high=POS_MAX_POSITION),
                    as_int("pair i", pair, low=0, high=spec.pairs - 1), seed=_seed(seed))
    picked = next(p for p in v.panels if p.pair == v.selected)
    return (rotate_figure(v.panels, v.selected, v.q_pos, v.k_pos, v.score, v.relative_score, lang),
            clock_figure(v.thetas, v.contributions, v.q_pos, v.k_pos, v.selected, lang),
            rotation_markdown(picked, spec.head_dim, spec.base, v.q_pos, v.k_pos, v.score, v.relative_score, lang),
            str(v.timing))


@user_errors
def rope_relative(head_dim: float, base: float, seed: float, encoding: str, seq_len: float, max_distance: float,
                  request: gr.Request = None):
    """The ``/rope_relative`` endpoint: the score map over (m, n) and its diagonals, the decay curves."""
    from models.positions_explore import relative_view
    from viz.positions import decay_figure, relative_figure

    lang = lang_of(request)
    v = relative_view(_spec(head_dim, base), as_int("sequence length T", seq_len, low=1, high=POS_MAX_HEATMAP),
                      as_int("distance", max_distance, low=1, high=POS_MAX_POSITION), encoding=encoding,
                      seed=_seed(seed))
    return (relative_figure(_grid(v.scores), v.offsets.tolist(), v.low.tolist(), v.high.tolist(), encoding,
                            v.spread, lang),
            decay_figure(v.distances.tolist(), {k: c.tolist() for k, c in v.curves.items()}, lang), str(v.timing))


@user_errors
def rope_frequencies(head_dim: float, base: float, train_len: float, span: float, request: gr.Request = None):
    """The ``/rope_frequencies`` endpoint: wavelength per pair against L, and cos(m·θ_i)."""
    from models.positions_explore import frequencies_view
    from viz.positions import frequencies_figure

    v = frequencies_view(_spec(head_dim, base), as_int("training context L", train_len, low=1, high=POS_MAX_POSITION),
                         as_int("positions shown", span, low=1, high=POS_MAX_HEATMAP))
    return (frequencies_figure(v.wavelengths.tolist(), {b: w.tolist() for b, w in v.references.items()},
                               v.train_len, _grid(v.cos), v.spec.base, lang_of(request)), str(v.timing))


@user_errors
def rope_extrapolation(head_dim: float, base: float, train_len: float, factor: float, low_freq_factor: float,
                       high_freq_factor: float, methods: list[str], request: gr.Request = None):
    """The ``/rope_extrapolation`` endpoint: frequencies per method, angles and scores past L, summary."""
    import math

    from models.positions import Llama3Scaling
    from models.positions_explore import extrapolation_view
    from viz.positions import extrapolation_frequency_figure, extrapolation_markdown, extrapolation_score_figure

    lang = lang_of(request)
    if not isinstance(methods, (list, tuple)) or not all(isinstance(m, str) for m in methods):
        raise ValueError(f"methods must be a list of {', '.join(METHODS)}")
    scaling = Llama3Scaling(factor=as_number("factor s", factor), low_freq_factor=as_number("low_freq_factor", low_freq_factor),
                            high_freq_factor=as_number("high_freq_factor", high_freq_factor),
                            original_max_position=as_int("training context L", train_len, low=1, high=POS_MAX_POSITION))
    v = extrapolation_view(_spec(head_dim, base), scaling, [m for m in METHODS if m in methods] or list(methods))
    original = v.original
    thetas = {m: th.tolist() for m, th in v.thetas.items()}
    wavelength = 2 * math.pi / original
    high_band, low_band = scaling.band
    blended = ((wavelength >= high_band) & (wavelength <= low_band)).nonzero().flatten().tolist()
    blend = (blended[0], blended[-1]) if "llama3" in v.methods and blended else None
    fastest = {m: th[0] / original[0].item() for m, th in thetas.items()}
    L = scaling.original_max_position
    distances = v.distances.tolist()
    return (extrapolation_frequency_figure(original.tolist(), thetas, L, scaling.factor, blend, lang),
            extrapolation_score_figure(distances, {m: u.tolist() for m, u in v.unseen.items()},
                                       {m: s.tolist() for m, s in v.scores.items()}, L, scaling.factor, lang),
            extrapolation_markdown(v.methods, v.bases, fastest, v.safe_length, scaling.factor, L,
                                   scaling.low_freq_factor, scaling.high_freq_factor, lang),
            str(v.timing))


@user_errors
def rope_conventions(base: float, seed: float, head_dim: float, position: float, request: gr.Request = None):
    """The ``/rope_conventions`` endpoint: pairing diagram, rotation matrices, the permutation checked."""
    from models.positions_explore import conventions_view
    from viz.positions_compare import conventions_markdown, matrices_figure, pairing_figure

    lang = lang_of(request)
    v = conventions_view(_whole("head dim d", head_dim), as_number("base", base),
                         as_int("position m", position, low=0, high=POS_MAX_POSITION), seed=_seed(seed))
    return (pairing_figure(v.perm, v.pair_of_dim, lang),
            matrices_figure({k: _grid(r) for k, r in v.rotations.items()}, v.position, v.matrix_diff, lang),
            conventions_markdown(v.perm, v.max_diff, v.scores, lang), str(v.timing))


@user_errors
def positions_compare(base: float, seed: float, seq_len: float, d_model: float, n_heads: float,
                      request: gr.Request = None):
    """The ``/positions_compare`` endpoint: one token under all three schemes, the sinusoidal heatmap, ALiBi
    per head, the slopes."""
    from models.positions_explore import compare_view
    from viz.positions_compare import alibi_figure, same_token_figure, sinusoidal_figure, slopes_markdown

    lang = lang_of(request)
    v = compare_view(as_int("sequence length T", seq_len, low=1, high=POS_MAX_COMPARE_LEN),
                     _whole("d_model", d_model), as_int("heads", n_heads, low=1, high=POS_MAX_HEADS),
                     as_number("base", base), seed=_seed(seed))
    slopes = v.slopes.tolist()
    return (same_token_figure({k: _grid(s) for k, s in v.same_token.items()}, v.spread, lang),
            sinusoidal_figure(_grid(v.pe), lang), alibi_figure(_grid(v.bias), v.heads, slopes, lang),
            slopes_markdown(slopes, lang), str(v.timing))


def _pair_range(head_dim, pair):
    """Keep the pair slider within 0 … d/2 − 1 when d changes (a bad d is reported by the redraw)."""
    try:
        pairs = as_int("head dim d", head_dim, low=2, high=POS_MAX_HEAD_DIM) // 2
        picked = as_int("pair i", pair, low=0, high=POS_MAX_HEAD_DIM)
    except ValueError:
        return gr.skip()
    return gr.Slider(maximum=pairs - 1, value=min(picked, pairs - 1))


def play_frame(request: gr.Request, head_dim, base, seed, style, pair, q_pos, k_pos, both, speed):
    """One frame of Play: q (and k, if tied) move on and the rotate view is redrawn; the timer stops at
    the end of the sliders or on an error (shown once as a warning, not every frame)."""
    stop = [gr.skip()] * 6 + [gr.Timer(active=False)]
    try:
        step = as_int("positions per frame", speed, low=1, high=POS_SLIDER_MAX_POSITION)
        q_next = as_int("q position m", q_pos, low=0, high=POS_SLIDER_MAX_POSITION) + step
        k_next = as_int("k position n", k_pos, low=0, high=POS_SLIDER_MAX_POSITION) + (step if both else 0)
        if max(q_next, k_next) > POS_SLIDER_MAX_POSITION:
            return stop
        return [q_next, k_next, *rope(head_dim, base, seed, style, pair, q_next, k_next, request=request), gr.skip()]
    except (ValueError, gr.Error) as exc:
        gr.Warning(str(exc))
        return stop


def build() -> dict:
    """Lay out the tab: shared controls, six views in sub-tabs, the Explain accordion; wire the events."""
    from gradio.context import Context
    app_tabs = getattr(Context.block, "parent", None)           # the app's tabs, when built inside one
    gr.Markdown(t("pos_intro"))
    with gr.Row(equal_height=True):
        head_dim = gr.Number(128, precision=0, step=2, label=t("pos_head_dim"), info=t("pos_head_dim_info"),
                             elem_id="pos_head_dim")
        base = gr.Number(10000.0, label=t("pos_base"), info=t("pos_base_info"), elem_id="pos_base")
        seed = gr.Number(0, precision=0, minimum=0, maximum=SEED_MAX, label=t("pos_seed"), elem_id="pos_seed")
    view = gr.Radio([(t(f"pos_sub_{v}"), v) for v in VIEWS], value="rotate", label=t("pos_view"), visible=False,
                    elem_id="pos_view")
    timer = gr.Timer(PLAY_INTERVAL, active=False)
    with gr.Tabs(elem_id="pos_views") as subtabs:
        with gr.Tab(t("pos_sub_rotate"), id="rotate", elem_id="pos_sub_rotate") as tab_rotate:
            gr.Markdown(t("pos_rotate_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    style = gr.Radio([(t("pos_style_half"), "half"), (t("pos_style_interleaved"), "interleaved")],
                                     value="half", label=t("pos_style"), elem_id="pos_style")
                    pair = gr.Slider(0, POS_MAX_HEAD_DIM // 2 - 1, value=3, step=1, label=t("pos_pair"),
                                     elem_id="pos_pair")
                    q_pos = gr.Slider(0, POS_SLIDER_MAX_POSITION, value=5, step=1, label=t("pos_m"), elem_id="pos_m")
                    k_pos = gr.Slider(0, POS_SLIDER_MAX_POSITION, value=2, step=1, label=t("pos_n"), elem_id="pos_n")
                    both = gr.Checkbox(False, label=t("pos_both"), elem_id="pos_both")
                    speed = gr.Slider(1, 64, value=1, step=1, label=t("pos_speed"), elem_id="pos_speed")
                    with gr.Row():
                        play = gr.Button(t("pos_play"), variant="primary", size="sm", elem_id="pos_play")
                        pause = gr.Button(t("pos_pause"), size="sm", elem_id="pos_pause")
                with gr.Column(scale=3):
                    rotate_plot = gr.Plot(label=t("pos_rotate_plot"), elem_id="pos_rotate_plot")
                    clock_plot = gr.Plot(label=t("pos_clock_plot"), elem_id="pos_clock_plot")
                    matrix = gr.Markdown(label=t("pos_matrix"), elem_id="pos_matrix", latex_delimiters=LATEX)
        with gr.Tab(t("pos_sub_relative"), id="relative", elem_id="pos_sub_relative") as tab_relative:
            gr.Markdown(t("pos_relative_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    encoding = gr.Radio([(t("pos_encoding_rope"), "rope"), (t("pos_encoding_sinusoidal"), "sinusoidal")],
                                        value="rope", label=t("pos_encoding"), elem_id="pos_encoding")
                    seq_len = gr.Slider(2, POS_MAX_HEATMAP, value=48, step=1, label=t("pos_T"), elem_id="pos_T")
                    max_distance = gr.Number(4096, precision=0, minimum=1, maximum=POS_MAX_POSITION,
                                             label=t("pos_max_distance"), elem_id="pos_max_distance")
                with gr.Column(scale=3):
                    relative_plot = gr.Plot(label=t("pos_relative_plot"), elem_id="pos_relative_plot")
                    decay_plot = gr.Plot(label=t("pos_decay_plot"), elem_id="pos_decay_plot")
        with gr.Tab(t("pos_sub_frequencies"), id="frequencies", elem_id="pos_sub_frequencies") as tab_frequencies:
            gr.Markdown(t("pos_frequencies_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    freq_train = gr.Number(4096, precision=0, minimum=1, maximum=POS_MAX_POSITION,
                                           label=t("pos_freq_train"), elem_id="pos_freq_train")
                    span = gr.Slider(8, POS_MAX_HEATMAP, value=128, step=1, label=t("pos_span"), elem_id="pos_span")
                with gr.Column(scale=3):
                    freq_plot = gr.Plot(label=t("pos_freq_plot"), elem_id="pos_freq_plot")
        with gr.Tab(t("pos_sub_extrapolation"), id="extrapolation", elem_id="pos_sub_extrapolation") as tab_ext:
            gr.Markdown(t("pos_extrapolation_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    ext_train = gr.Number(8192, precision=0, minimum=1, maximum=POS_MAX_POSITION,
                                          label=t("pos_ext_train"), elem_id="pos_ext_train")
                    factor = gr.Number(8.0, label=t("pos_factor"), elem_id="pos_factor")
                    with gr.Row():
                        low = gr.Number(1.0, label=t("pos_low"), elem_id="pos_low")
                        high = gr.Number(4.0, label=t("pos_high"), elem_id="pos_high")
                    methods = gr.CheckboxGroup([(t(f"pos_method_{m}"), m) for m in METHODS], value=list(METHODS),
                                               label=t("pos_methods"), elem_id="pos_methods")
                    llama31 = gr.Button(t("pos_llama31"), size="sm", elem_id="pos_llama31")
                with gr.Column(scale=3):
                    ext_freq_plot = gr.Plot(label=t("pos_ext_freq_plot"), elem_id="pos_ext_freq_plot")
                    ext_score_plot = gr.Plot(label=t("pos_ext_score_plot"), elem_id="pos_ext_score_plot")
                    ext_table = gr.Markdown(label=t("pos_ext_table"), elem_id="pos_ext_table")
        with gr.Tab(t("pos_sub_conventions"), id="conventions", elem_id="pos_sub_conventions") as tab_conventions:
            gr.Markdown(t("pos_conventions_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    conv_dim = gr.Slider(2, POS_MAX_DIAGRAM_DIM, value=8, step=2, label=t("pos_conv_dim"),
                                         elem_id="pos_conv_dim")
                    conv_m = gr.Slider(0, 64, value=1, step=1, label=t("pos_conv_m"), elem_id="pos_conv_m")
                with gr.Column(scale=3):
                    pairing_plot = gr.Plot(label=t("pos_pairing_plot"), elem_id="pos_pairing_plot")
                    matrices_plot = gr.Plot(label=t("pos_matrices_plot"), elem_id="pos_matrices_plot")
                    conv_check = gr.Markdown(label=t("pos_conv_check"), elem_id="pos_conv_check")
        with gr.Tab(t("pos_sub_compare"), id="compare", elem_id="pos_sub_compare") as tab_compare:
            gr.Markdown(t("pos_compare_note"))
            with gr.Row():
                with gr.Column(scale=1, min_width=280):
                    cmp_T = gr.Slider(2, POS_MAX_COMPARE_LEN, value=32, step=1, label=t("pos_cmp_T"), elem_id="pos_cmp_T")
                    cmp_d = gr.Slider(2, POS_MAX_D_MODEL, value=64, step=2, label=t("pos_cmp_d"), elem_id="pos_cmp_d")
                    cmp_heads = gr.Slider(1, 64, value=8, step=1, label=t("pos_cmp_heads"), elem_id="pos_cmp_heads")
                with gr.Column(scale=3):
                    same_plot = gr.Plot(label=t("pos_same_plot"), elem_id="pos_same_plot")
                    sin_plot = gr.Plot(label=t("pos_sin_plot"), elem_id="pos_sin_plot")
                    alibi_plot = gr.Plot(label=t("pos_alibi_plot"), elem_id="pos_alibi_plot")
                    slopes = gr.Markdown(label=t("pos_slopes"), elem_id="pos_slopes")
    device = device_line()
    explain("pos_explain")

    # One named endpoint per view: (function, inputs, outputs, its own controls and how they fire).
    views = {
        "rotate": (rope, [head_dim, base, seed, style, pair, q_pos, k_pos], [rotate_plot, clock_plot, matrix, device],
                   [style.input, pair.input, q_pos.input, k_pos.input]),
        "relative": (rope_relative, [head_dim, base, seed, encoding, seq_len, max_distance],
                     [relative_plot, decay_plot, device], [encoding.input, seq_len.input, max_distance.submit,
                                                            max_distance.blur]),
        "frequencies": (rope_frequencies, [head_dim, base, freq_train, span], [freq_plot, device],
                        [freq_train.submit, freq_train.blur, span.input]),
        "extrapolation": (rope_extrapolation, [head_dim, base, ext_train, factor, low, high, methods],
                          [ext_freq_plot, ext_score_plot, ext_table, device],
                          [ext_train.submit, ext_train.blur, factor.submit, factor.blur, low.submit, low.blur,
                           high.submit, high.blur, methods.input]),
        "conventions": (rope_conventions, [base, seed, conv_dim, conv_m], [pairing_plot, matrices_plot, conv_check, device],
                        [conv_dim.input, conv_m.input]),
        "compare": (positions_compare, [base, seed, cmp_T, cmp_d, cmp_heads], [same_plot, sin_plot, alibi_plot, slopes, device],
                    [cmp_T.input, cmp_d.input, cmp_heads.input]),
    }
    api_names = {"rotate": "rope", "relative": "rope_relative", "frequencies": "rope_frequencies",
                 "extrapolation": "rope_extrapolation", "conventions": "rope_conventions", "compare": "positions_compare"}
    for name, (fn, inputs, outputs, triggers) in views.items():
        gr.on(triggers, fn, inputs, outputs, api_name=api_names[name], show_progress="hidden",
              trigger_mode="always_last")

    # The shared controls and the sub-tabs redraw whichever view is on screen.
    all_inputs = list(dict.fromkeys(c for _, ins, _, _ in views.values() for c in ins))
    all_outputs = list(dict.fromkeys(c for _, _, outs, _ in views.values() for c in outs))

    def draw(request: gr.Request, current: str, *values):
        if current not in views:
            raise gr.Error(f"view {current!r} must be one of {', '.join(VIEWS)}")
        fn, inputs, outputs, _ = views[current]
        by_input = dict(zip(map(id, all_inputs), values))
        result = dict(zip(map(id, outputs), fn(*(by_input[id(c)] for c in inputs), request=request)))
        return [result.get(id(c), gr.skip()) for c in all_outputs]

    redraw = dict(fn=draw, inputs=[view, *all_inputs], outputs=all_outputs, show_progress="hidden",
                  api_visibility="private", trigger_mode="always_last")
    for name, tab in zip(VIEWS, (tab_rotate, tab_relative, tab_frequencies, tab_ext, tab_conventions, tab_compare)):
        tab.select(lambda name=name: (name, gr.Timer(active=False)), None, [view, timer], api_visibility="private",
                   show_progress="hidden").then(**redraw)
    gr.on([head_dim.submit, head_dim.blur], _pair_range, [head_dim, pair], pair, api_visibility="private",
          show_progress="hidden").then(**redraw)
    gr.on([base.submit, base.blur, seed.submit, seed.blur], **redraw)

    # Play: the timer moves the positions; each frame redraws the rotate view.
    _, rotate_inputs, rotate_outputs, _ = views["rotate"]
    play.click(lambda: gr.Timer(active=True), None, timer, api_visibility="private", show_progress="hidden")
    pause.click(lambda: gr.Timer(active=False), None, timer, api_visibility="private", show_progress="hidden")
    timer.tick(play_frame, [*rotate_inputs, both, speed], [q_pos, k_pos, *rotate_outputs, timer],
               api_visibility="private", show_progress="hidden")
    if isinstance(app_tabs, gr.Tabs):                           # leaving the tab pauses Play
        app_tabs.select(lambda: gr.Timer(active=False), None, timer, api_visibility="private",
                        show_progress="hidden")
    llama31.click(lambda: tuple(LLAMA31.values()) + ("extrapolation",), None,
                  [head_dim, base, ext_train, factor, low, high, view], api_visibility="private",
                  show_progress="hidden").then(_pair_range, [head_dim, pair], pair, api_visibility="private",
                                               show_progress="hidden").then(**redraw)

    def first_draw(request: gr.Request, current: str, *values):
        """On load (after a share link's settings): fit the pair slider to d, select the view, draw it."""
        selected = current if current in views else "rotate"
        by_input = dict(zip(map(id, all_inputs), values))
        return [gr.Tabs(selected=selected), _pair_range(by_input[id(head_dim)], by_input[id(pair)]),
                *draw(request, selected, *values)]

    return dict(fn=first_draw, inputs=[view, *all_inputs], outputs=[subtabs, pair, *all_outputs],
                show_progress="hidden")

