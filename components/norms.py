"""The Normalization tab: where the norm goes (Post-LN, Pre-LN, Sandwich, DeepNorm), live.

Four parts: the gradients at initialisation (instant, ``/norm_gradients``) with a depth sweep
(``/norm_depth_sweep``, streams), a real training run of four models (``/norm_train``, streams on
the heavy queue, with Stop), the axes each norm averages over (``/norm_axes``, instant), and
training stability (``/softmax_overflow``, ``/stability_sweep``: :mod:`components.norms_stability`).
"""
from __future__ import annotations

import time

import gradio as gr

from components import norms_stability
from components.common import HEAVY, as_int, as_number, device_line, explain, low_priority, user_errors
from components.i18n import lang_of, t
from models.limits import (NORM_AXES_MAX, NORM_MAX_BATCH, NORM_MAX_D_MODEL, NORM_MAX_HEADS, NORM_MAX_LAYERS,
                           NORM_MAX_SEQ_LEN, NORM_MIN_LAYERS, NORM_TRAIN_MAX_LR, NORM_TRAIN_MAX_STEPS, SEED_MAX)

VARIANTS = ("post", "pre", "sandwich", "deepnorm")       # models.norms.VARIANTS, without importing torch
NORMS = ("layernorm", "rmsnorm")
STREAM_EVERY_S = 0.5                                     # a training figure at most this often
SECTIONS = (norms_stability,)                            # parts built by their own module

STRINGS = {
    "en": {
        "tab_norms": "Normalization",
        "norm_intro": "Why did GPT-2 move the LayerNorm? Build a stack of transformer blocks with the norm in "
                      "different places and measure, for real, the gradients one backward pass gives at "
                      "initialisation; then train four small models and watch Post-LN without warm-up stall.",
        "norm_init_heading": "### 1 · Gradients at initialisation",
        "norm_layers": "Layers L", "norm_width": "Width d_model", "norm_heads": "Heads",
        "norm_kind": "Norm", "norm_layernorm": "LayerNorm", "norm_rmsnorm": "RMSNorm",
        "norm_variants": "Placements to compare",
        "norm_post": "Post-LN: Norm(x + F(x))", "norm_pre": "Pre-LN: x + F(Norm(x))",
        "norm_sandwich": "Sandwich-LN: x + Norm(F(Norm(x)))", "norm_deepnorm": "DeepNorm: Norm(α·x + F(x))",
        "norm_log": "Log scale", "norm_seq": "Tokens per sequence", "norm_batch": "Sequences in the batch",
        "norm_seed": "Seed (weights and batch)",
        "norm_grads_plot": "Gradient norm per layer", "norm_sweep": "Sweep the depth (1 … L layers)",
        "norm_sweep_plot": "Top layer vs depth",
        "norm_train_heading": "### 2 · In training: Post-LN and Pre-LN, with and without warm-up",
        "norm_train_intro": "Four character-level models of the shipped English text (6 layers, d = 64), "
                            "trained with Adam, interleaved step by step from the same weights on the same "
                            "batches. No gradient clipping.",
        "norm_lr": "Learning rate (Adam)", "norm_steps": "Steps", "norm_warmup": "Warm-up steps (linear from 0)",
        "norm_train_seed": "Seed", "norm_train_button": "Train the four models", "norm_stop": "Stop",
        "norm_train_plot": "Loss and gradient norm per step", "norm_train_status": "Progress",
        "norm_axes_heading": "### 3 · The norms themselves: which axis each averages over",
        "norm_axes_batch": "Batch items B", "norm_axes_tokens": "Tokens T", "norm_axes_features": "Features F",
        "norm_axes_seed": "Seed", "norm_axes_b": "Highlight: item", "norm_axes_t": "token", "norm_axes_f": "feature",
        "norm_axes_plot": "Normalisation groups", "norm_summary": "What the figure shows",
        "norm_explain": r"""
**Two places for the norm.** A sublayer $F$ (attention or the FFN) sits on a residual connection:

$$\text{Post-LN: } x_{l+1}=\mathrm{Norm}\big(x_l+F(x_l)\big)\qquad\qquad \text{Pre-LN: } x_{l+1}=x_l+F\big(\mathrm{Norm}(x_l)\big)$$

Sandwich-LN (CogView) adds a Norm on $F$'s output, $x+\mathrm{Norm}(F(\mathrm{Norm}(x)))$; DeepNorm (DeepNet) keeps Post-LN but up-weights the residual, $\mathrm{Norm}(\alpha x+F(x))$, with $\alpha=(2M)^{1/4}$ and the value, output and FFN weights initialised $\beta=(8M)^{-1/4}$ times smaller, for a decoder of $M$ layers.

**The gradient bound (Xiong et al. 2020, Theorem 1).** At Xavier initialisation the gradient of the last FFN weight $W^{2,L}$ satisfies

$$\Big\|\frac{\partial \mathcal L}{\partial W^{2,L}}\Big\|_F = O\big(d\sqrt{\ln d}\big)\ \text{(Post-LN)},\qquad O\Big(d\sqrt{\tfrac{\ln d}{L}}\Big)\ \text{(Pre-LN)}.$$

In Pre-LN the residual stream grows ($\|x_l\|^2$ rises about linearly with $l$: look at the stream-RMS panel), and the final Norm divides the gradient by $\|x_L\|$; each layer's gradient scales as $1/\|x_l\|$, so it *falls slowly* from bottom to top and shrinks as $1/\sqrt L$ with depth (the sweep). NormFormer (Shleifer et al. 2021) reports the same: in Pre-LN the early layers get larger gradients than the late ones; Xiong et al.'s "the same for every layer" holds for the stream-normalised gradient. In Post-LN every layer's output is normalised, nothing shrinks with depth, and every Norm on the way down divides the gradient by the spread of $x+F(x)$: the largest gradients sit near the output and do not shrink as you add layers.

**Why warm-up matters.** Adam moves every weight by about the learning rate per step, whatever its gradient. In Post-LN the output depends strongly on every layer's branch, so full-size steps at initialisation push the model into a bad region: here it stalls at the loss of guessing letter frequencies (≈ 3.0 nats on the shipped text). A warm-up keeps the first steps small until the gradients settle; Pre-LN's identity path keeps it trainable without one. Try 2·10⁻³ (Post-LN recovers) or a huge one (watch for a divergence: it is reported, never plotted).

**What this stack is.** A decoder-only character model: embeddings $\sim\mathcal N(0,1)$ plus sinusoidal positions, causal attention and a ReLU FFN of width $4d$, Xavier-normal weights (gain $1/\sqrt2$ on $W_Q,W_K,W_V$, as fairseq), zero biases, one backward pass of the next-character cross-entropy on a seeded batch of the corpus. Post-LN and Pre-LN built with one seed have identical weights.

**The norms.** LayerNorm: $(x-\mu)/\sqrt{\sigma^2+\epsilon}$ per token over its features. RMSNorm: $x/\sqrt{\overline{x^2}+\epsilon}$, no centring (Llama). BatchNorm: per feature over the whole batch, which mixes examples; our LayerNorm and RMSNorm are checked against `torch.nn.LayerNorm` and `torch.nn.RMSNorm` on every redraw.
""",
    },
    "zh-CN": {
        "tab_norms": "归一化",
        "norm_intro": "GPT-2 为什么挪动了 LayerNorm？把归一化放在不同位置搭出一叠 Transformer 块，真实测量初始化时"
                      "一次反向传播得到的梯度；再训练四个小模型，看没有预热的 Post-LN 如何停滞。",
        "norm_init_heading": "### 1 · 初始化时的梯度",
        "norm_layers": "层数 L", "norm_width": "宽度 d_model", "norm_heads": "注意力头数",
        "norm_kind": "归一化类型", "norm_layernorm": "LayerNorm", "norm_rmsnorm": "RMSNorm",
        "norm_variants": "要比较的放置方式",
        "norm_post": "Post-LN：Norm(x + F(x))", "norm_pre": "Pre-LN：x + F(Norm(x))",
        "norm_sandwich": "Sandwich-LN：x + Norm(F(Norm(x)))", "norm_deepnorm": "DeepNorm：Norm(α·x + F(x))",
        "norm_log": "对数坐标", "norm_seq": "每个序列的词元数", "norm_batch": "批次中的序列数",
        "norm_seed": "随机种子（权重和批次）",
        "norm_grads_plot": "每层的梯度范数", "norm_sweep": "扫描深度（1 … L 层）",
        "norm_sweep_plot": "最顶层与深度",
        "norm_train_heading": "### 2 · 训练中：Post-LN 与 Pre-LN，有无预热",
        "norm_train_intro": "四个字符级模型（6 层，d = 64）在随附的英文文本上用 Adam 训练，"
                            "从相同的权重出发、使用相同的批次，逐步交替进行。不做梯度裁剪。",
        "norm_lr": "学习率（Adam）", "norm_steps": "步数", "norm_warmup": "预热步数（从 0 线性增加）",
        "norm_train_seed": "随机种子", "norm_train_button": "训练四个模型", "norm_stop": "停止",
        "norm_train_plot": "每步的损失和梯度范数", "norm_train_status": "进度",
        "norm_axes_heading": "### 3 · 归一化本身：各自在哪个轴上求平均",
        "norm_axes_batch": "批次样本数 B", "norm_axes_tokens": "词元数 T", "norm_axes_features": "特征数 F",
        "norm_axes_seed": "随机种子", "norm_axes_b": "高亮：样本", "norm_axes_t": "词元", "norm_axes_f": "特征",
        "norm_axes_plot": "归一化分组", "norm_summary": "图中可以看到",
        "norm_explain": r"""
**归一化的两个位置。** 子层 $F$（注意力或 FFN）位于残差连接上：

$$\text{Post-LN: } x_{l+1}=\mathrm{Norm}\big(x_l+F(x_l)\big)\qquad\qquad \text{Pre-LN: } x_{l+1}=x_l+F\big(\mathrm{Norm}(x_l)\big)$$

Sandwich-LN（CogView）在 $F$ 的输出上再加一个 Norm：$x+\mathrm{Norm}(F(\mathrm{Norm}(x)))$；DeepNorm（DeepNet）保留 Post-LN，但放大残差：$\mathrm{Norm}(\alpha x+F(x))$，对 $M$ 层的解码器取 $\alpha=(2M)^{1/4}$，并把值、输出和 FFN 的权重初始化缩小为 $\beta=(8M)^{-1/4}$ 倍。

**梯度上界（Xiong 等 2020，定理 1）。** 在 Xavier 初始化下，最后一个 FFN 权重 $W^{2,L}$ 的梯度满足

$$\Big\|\frac{\partial \mathcal L}{\partial W^{2,L}}\Big\|_F = O\big(d\sqrt{\ln d}\big)\ \text{（Post-LN）},\qquad O\Big(d\sqrt{\tfrac{\ln d}{L}}\Big)\ \text{（Pre-LN）}.$$

Pre-LN 的残差流不断增大（$\|x_l\|^2$ 大约随 $l$ 线性增长，见残差流 RMS 子图），最后的 Norm 把梯度除以 $\|x_L\|$；每层的梯度按 $1/\|x_l\|$ 缩放，所以从底层到顶层*缓慢下降*，并随深度按 $1/\sqrt L$ 缩小（见深度扫描）。NormFormer（Shleifer 等，2021）也观察到：Pre-LN 中靠前的层梯度比靠后的层大；Xiong 等所说的“各层相同”对按残差流归一化后的梯度成立。Post-LN 每层的输出都被归一化，没有任何量随深度缩小，而反向传播每经过一个 Norm，梯度都要除以 $x+F(x)$ 的标准差：最大的梯度集中在靠近输出的层，并且加层也不会变小。

**为什么需要预热。** Adam 每一步让每个权重移动大约一个学习率，与梯度大小无关。Post-LN 的输出强烈依赖每一层的分支，初始化时就用满步长会把模型推入糟糕的区域：这里它停在只会猜字母频率的损失（在附带的文本上 ≈ 3.0 nats）。预热让最初几步足够小，直到梯度稳定；Pre-LN 的恒等通路让它不需要预热也能训练。试试 2·10⁻³（Post-LN 会恢复）或极大的学习率（注意发散：它会被报告出来，而不会画成 NaN）。

**这里的模型。** 一个仅解码器的字符级模型：嵌入 $\sim\mathcal N(0,1)$ 加正弦位置编码，因果注意力和宽度 $4d$ 的 ReLU FFN，Xavier 正态初始化（$W_Q,W_K,W_V$ 的增益为 $1/\sqrt2$，与 fairseq 相同），偏置为零，在语料的一个带种子的批次上对下一个字符的交叉熵做一次反向传播。用同一个种子构建的 Post-LN 和 Pre-LN 权重完全相同。

**归一化本身。** LayerNorm：对每个词元在其特征上计算 $(x-\mu)/\sqrt{\sigma^2+\epsilon}$。RMSNorm：$x/\sqrt{\overline{x^2}+\epsilon}$，不减均值（Llama）。BatchNorm：对每个特征在整个批次上计算，会把不同样本混在一起；每次重绘都会把我们的 LayerNorm 和 RMSNorm 与 `torch.nn.LayerNorm`、`torch.nn.RMSNorm` 对照检查。
""",
    },
}


def _variants(values) -> list[str]:
    if not isinstance(values, list) or not values:
        raise ValueError(f"choose at least one placement ({', '.join(VARIANTS)})")
    bad = [v for v in values if v not in VARIANTS]
    if bad:
        raise ValueError(f"placement {bad[0]!r} must be one of {', '.join(VARIANTS)}")
    return list(dict.fromkeys(values))


def _norm(value) -> str:
    if value not in NORMS:
        raise ValueError(f"norm {value!r} must be one of {', '.join(NORMS)}")
    return value


def _stack_args(n_layers, d_model, n_heads, norm, seq_len, batch, seed) -> dict:
    return dict(n_layers=as_int("layers", n_layers, low=NORM_MIN_LAYERS, high=NORM_MAX_LAYERS),
                d_model=as_int("width d_model", d_model, low=2, high=NORM_MAX_D_MODEL),
                n_heads=as_int("heads", n_heads, low=1, high=NORM_MAX_HEADS), norm=_norm(norm),
                seq_len=as_int("tokens per sequence", seq_len, low=2, high=NORM_MAX_SEQ_LEN),
                batch=as_int("sequences in the batch", batch, low=1, high=NORM_MAX_BATCH),
                seed=as_int("seed", seed, low=0, high=SEED_MAX))


@user_errors
def norm_gradients(n_layers, d_model, n_heads, norm, variants, log_y, seq_len, batch, seed,
                   request: gr.Request = None):
    """The ``/norm_gradients`` endpoint: per-layer gradient norms of each placement, a summary, the device."""
    from models.norms import compare_variants
    from viz.norms import gradients_figure, gradients_summary

    lang = lang_of(request)
    args = _stack_args(n_layers, d_model, n_heads, norm, seq_len, batch, seed)
    results = compare_variants(args.pop("n_layers"), _variants(variants), **args)
    plain = {v: {"per_layer": g.per_layer, "stream_rms": g.stream_rms} for v, g in results.items()}
    fig = gradients_figure(plain, norm=args["norm"], d_model=args["d_model"], log_y=bool(log_y), lang=lang)
    timing = next(iter(results.values())).timing
    total_ms = sum(g.timing.ms for g in results.values())
    return fig, gradients_summary(plain, lang), f"{timing.device} · {total_ms:.1f} ms ({len(results)} × 1 backward)"


@user_errors
def norm_depth_sweep(n_layers, d_model, n_heads, norm, variants, seq_len, batch, seed,
                     request: gr.Request = None):
    """The ``/norm_depth_sweep`` endpoint: streams the top layer's gradient as each depth is measured."""
    from models.norms import depth_sweep, sweep_depths
    from viz.norms import sweep_figure

    lang = lang_of(request)
    args = _stack_args(n_layers, d_model, n_heads, norm, seq_len, batch, seed)
    chosen = _variants(variants)
    points: dict[str, list] = {v: [] for v in chosen}
    total_ms = 0.0
    depths = sweep_depths(args.pop("n_layers"))
    for point in low_priority(depth_sweep, depths, chosen, **args):            # the instant tabs keep the CPU
        points[point.variant].append((point.n_layers, point.top["ffn_out"]))
        total_ms += point.timing.ms
        yield sweep_figure(points, lang=lang), f"{point.timing.device} · {total_ms:.0f} ms · L = {point.n_layers}"


@user_errors
def norm_train(lr, steps, warmup, norm, seed, request: gr.Request = None):
    """The ``/norm_train`` endpoint: streams the four runs' curves, findings and progress."""
    from models.norm_data import unigram_entropy
    from models.norm_training import TrainConfig, train_steps
    from viz.norms import training_figure, training_summary

    lang = lang_of(request)
    config = TrainConfig(lr=as_number("learning rate", lr),
                         steps=as_int("steps", steps, low=1, high=NORM_TRAIN_MAX_STEPS),
                         warmup=as_int("warm-up steps", warmup, low=1, high=NORM_TRAIN_MAX_STEPS),
                         norm=_norm(norm), seed=as_int("seed", seed, low=0, high=SEED_MAX))
    last = 0.0
    for progress in low_priority(train_steps, config):                         # the instant tabs keep the CPU
        now = time.perf_counter()
        if not progress.done and now - last < STREAM_EVERY_S:
            continue
        last = now
        runs = [vars(run) for run in progress.runs]
        fig = training_figure(runs, step=progress.step, steps=config.steps, lr=config.lr, warmup=config.warmup,
                              lang=lang)
        status = f"{progress.step} / {config.steps}"
        if progress.timing:
            status += f" · {progress.timing}"
        yield fig, training_summary(runs, lang, plateau=unigram_entropy(), done=progress.done), status


@user_errors
def norm_axes_view(batch, tokens, features, seed, b, t, f, request: gr.Request = None):
    """The ``/norm_axes`` endpoint: input and three norms as grids, the chosen cell's group outlined."""
    from models.norm_axes import norm_axes
    from viz.norms import axes_figure, axes_summary

    lang = lang_of(request)
    shape = [as_int(name, v, low=low, high=NORM_AXES_MAX)
             for name, v, low in (("batch items", batch, 1), ("tokens", tokens, 1), ("features", features, 2))]
    cell = tuple(as_int(name, v, low=1, high=size) - 1
                 for name, v, size in (("item", b, shape[0]), ("token", t, shape[1]), ("feature", f, shape[2])))
    view = norm_axes(*shape, seed=as_int("seed", seed, low=0, high=SEED_MAX))
    fig = axes_figure(view.x, view.outputs, view.stats, cell, lang=lang)
    return fig, axes_summary(view.max_error, lang), str(view.timing)


def _first_draw(n_layers, d_model, n_heads, norm, variants, log_y, seq_len, batch, seed,
                ax_batch, ax_tokens, ax_features, ax_seed, ax_b, ax_t, ax_f, request: gr.Request = None):
    """Both instant parts at once when the page opens, and the long runs' figures saying how to fill them."""
    from viz.norms import waiting_figures
    return (*norm_gradients(n_layers, d_model, n_heads, norm, variants, log_y, seq_len, batch, seed,
                            request=request),
            *norm_axes_view(ax_batch, ax_tokens, ax_features, ax_seed, ax_b, ax_t, ax_f, request=request),
            *waiting_figures(lang_of(request)))


def build() -> dict:
    """Lay out the tab, wire its events, return the first-draw event."""
    gr.Markdown(t("norm_intro"))
    gr.Markdown(t("norm_init_heading"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            variants = gr.CheckboxGroup([(t(f"norm_{v}"), v) for v in VARIANTS], value=["post", "pre"],
                                        label=t("norm_variants"), elem_id="norm_variants")
            n_layers = gr.Slider(NORM_MIN_LAYERS, NORM_MAX_LAYERS, value=12, step=1, label=t("norm_layers"),
                                 elem_id="norm_layers")
            with gr.Row():
                d_model = gr.Slider(16, NORM_MAX_D_MODEL, value=256, step=16, label=t("norm_width"),
                                    elem_id="norm_width")
                n_heads = gr.Slider(1, NORM_MAX_HEADS, value=4, step=1, label=t("norm_heads"), elem_id="norm_heads")
            norm = gr.Radio([(t(f"norm_{k}"), k) for k in NORMS], value="layernorm", label=t("norm_kind"),
                            elem_id="norm_kind")
            with gr.Row():
                seq_len = gr.Slider(2, NORM_MAX_SEQ_LEN, value=64, step=1, label=t("norm_seq"), elem_id="norm_seq")
                batch = gr.Slider(1, NORM_MAX_BATCH, value=16, step=1, label=t("norm_batch"), elem_id="norm_batch")
            with gr.Row():
                seed = gr.Number(0, precision=0, minimum=0, maximum=SEED_MAX, label=t("norm_seed"), elem_id="norm_seed")
                log_y = gr.Checkbox(True, label=t("norm_log"), elem_id="norm_log")
            sweep = gr.Button(t("norm_sweep"), elem_id="norm_sweep")
        with gr.Column(scale=3):
            grads_plot = gr.Plot(label=t("norm_grads_plot"), elem_id="norm_grads_plot")
            summary = gr.Markdown(elem_id="norm_summary")
            sweep_plot = gr.Plot(label=t("norm_sweep_plot"), elem_id="norm_sweep_plot")
            device = device_line()

    gr.Markdown(t("norm_train_heading"))
    gr.Markdown(t("norm_train_intro"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            lr = gr.Number(5e-3, minimum=0, maximum=NORM_TRAIN_MAX_LR, label=t("norm_lr"), elem_id="norm_lr")
            steps = gr.Slider(10, NORM_TRAIN_MAX_STEPS, value=300, step=10, label=t("norm_steps"), elem_id="norm_steps")
            warmup = gr.Slider(1, NORM_TRAIN_MAX_STEPS, value=100, step=1, label=t("norm_warmup"),
                               elem_id="norm_warmup")
            train_norm = gr.Radio([(t(f"norm_{k}"), k) for k in NORMS], value="layernorm", label=t("norm_kind"),
                                  elem_id="norm_train_kind")
            train_seed = gr.Number(0, precision=0, minimum=0, maximum=SEED_MAX, label=t("norm_train_seed"),
                                   elem_id="norm_train_seed")
            with gr.Row():
                train = gr.Button(t("norm_train_button"), variant="primary", elem_id="norm_train")
                stop = gr.Button(t("norm_stop"), variant="stop", elem_id="norm_stop")
        with gr.Column(scale=3):
            train_plot = gr.Plot(label=t("norm_train_plot"), elem_id="norm_train_plot")
            findings = gr.Markdown(elem_id="norm_findings")
            status = gr.Textbox(label=t("norm_train_status"), interactive=False, max_lines=1,
                                elem_classes="device-line", elem_id="norm_train_status")

    gr.Markdown(t("norm_axes_heading"))
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            with gr.Row():
                ax_batch = gr.Slider(1, NORM_AXES_MAX, value=2, step=1, label=t("norm_axes_batch"), elem_id="norm_axes_batch")
                ax_tokens = gr.Slider(1, NORM_AXES_MAX, value=4, step=1, label=t("norm_axes_tokens"),
                                      elem_id="norm_axes_tokens")
                ax_features = gr.Slider(2, NORM_AXES_MAX, value=6, step=1, label=t("norm_axes_features"),
                                        elem_id="norm_axes_features")
            with gr.Row():
                ax_b = gr.Slider(1, NORM_AXES_MAX, value=1, step=1, label=t("norm_axes_b"), elem_id="norm_axes_b")
                ax_t = gr.Slider(1, NORM_AXES_MAX, value=2, step=1, label=t("norm_axes_t"), elem_id="norm_axes_t")
                ax_f = gr.Slider(1, NORM_AXES_MAX, value=3, step=1, label=t("norm_axes_f"), elem_id="norm_axes_f")
            ax_seed = gr.Number(0, precision=0, minimum=0, maximum=SEED_MAX, label=t("norm_axes_seed"),
                                elem_id="norm_axes_seed")
        with gr.Column(scale=3):
            axes_plot = gr.Plot(label=t("norm_axes_plot"), elem_id="norm_axes_plot")
            axes_check = gr.Markdown(elem_id="norm_axes_check")
            axes_device = device_line()
    explain("norm_explain")
    stability = norms_stability.build()                 # 4 · training stability (its own module)

    stack_inputs = [n_layers, d_model, n_heads, norm, variants, log_y, seq_len, batch, seed]
    main = dict(fn=norm_gradients, inputs=stack_inputs, outputs=[grads_plot, summary, device],
                show_progress="hidden")
    gr.on([n_layers.input, d_model.input, n_heads.input, norm.input, variants.input, log_y.input,
           seq_len.input, batch.input, seed.submit, seed.blur], api_name="norm_gradients",
          trigger_mode="always_last", **main)            # a change made while one computes is not dropped
    sweep.click(norm_depth_sweep, [n_layers, d_model, n_heads, norm, variants, seq_len, batch, seed],
                [sweep_plot, device], api_name="norm_depth_sweep", **HEAVY)
    run = train.click(norm_train, [lr, steps, warmup, train_norm, train_seed], [train_plot, findings, status],
                      api_name="norm_train", show_progress="minimal", **HEAVY)
    stop.click(None, None, None, cancels=[run])
    axes = dict(fn=norm_axes_view, inputs=[ax_batch, ax_tokens, ax_features, ax_seed, ax_b, ax_t, ax_f],
                outputs=[axes_plot, axes_check, axes_device], show_progress="hidden")
    gr.on([s.input for s in (ax_batch, ax_tokens, ax_features, ax_b, ax_t, ax_f)] + [ax_seed.submit, ax_seed.blur],
          api_name="norm_axes", trigger_mode="always_last", **axes)
    # The first draw: the gradients and the axes in one private event (the named events are the API).
    return norms_stability.join_draws(dict(fn=_first_draw, inputs=[*main["inputs"], *axes["inputs"]],
                                           outputs=[*main["outputs"], *axes["outputs"], sweep_plot, train_plot],
                                           show_progress="hidden"), stability)
