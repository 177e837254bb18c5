"""The Tensors tab: layout (storage, shape, stride, offset), number formats, matmul speed and MFU."""
from models.limits import TENSOR_MAX_DIMS, TENSOR_MAX_ELEMENTS, TENSOR_MAX_OPS

_OPS = "view, reshape, transpose, permute, t, expand, unsqueeze, squeeze, flatten, contiguous, clone"

STRINGS = {
    "en": {
        "tab_tensors": "Tensors",
        "tensors_device": "{timing} ({ops} ops, figures included)",
        "tensors_intro": "A tensor is a strip of memory read through a shape, a stride and an offset; its cost is "
                         "counted in FLOPs and judged against what the hardware can do.",
        "tensors_sub_layout": "Layout: storage, stride, view",
        "tensors_sub_formats": "Number formats",
        "tensors_sub_compute": "Matmul speed and MFU",
        # layout: controls
        "tensors_preset": "Preset",
        "tensors_preset_heads_split": "Multi-head split: [B, T, C] → view → transpose(1, 2)",
        "tensors_preset_heads_merge": "Its inverse: transpose → view fails → contiguous()",
        "tensors_preset_column": "A sliced column",
        "tensors_preset_bias": "An expanded bias (stride 0)",
        "tensors_preset_custom": "Custom",
        # layout: the presets' comments (models/tensor_presets.py)
        "tensors_note_refused": "refused",
        "tensors_note_copy": "a copy",
        "tensors_note_works": "now it works",
        "tensors_note_column": "column 2",
        "tensors_note_every_other": "every other row",
        "tensors_note_bias": "a bias b: [C], added to x: [T, C]",
        "tensors_note_stride_0": "[T, C], stride 0",
        "tensors_note_materialised": "materialised",
        "tensors_shape": "Shape of the original",
        "tensors_shape_info": f"Whole numbers separated by commas: up to {TENSOR_MAX_DIMS}-D and "
                              f"{TENSOR_MAX_ELEMENTS} elements. It holds 0, 1, 2, … in memory order.",
        "tensors_ops": "Operations, one per line",
        "tensors_ops_info": f"Up to {TENSOR_MAX_OPS} lines, each one of: {_OPS} with whole-number arguments "
                            "— view(2, -1), transpose(1, 2), flatten(1) — or indexing: [:, 2], [::2, 1:3], [..., 0], "
                            "[None]. # starts a comment. Parsed, never run as Python. A line PyTorch refuses "
                            "is shown and skipped.",
        "tensors_step": "Show step (a number past the end shows the last)",
        "tensors_memory_plot": "Storage read by each step",
        "tensors_view_plot": "One step's elements",
        # layout: figures and table
        "tensors_fig_original": "original",
        "tensors_fig_memory_title": "Each step's storage in memory order: a cell's number (and colour) is when the view reads it; grey: never",
        "tensors_fig_position": "position in storage",
        "tensors_fig_cell_hover": "position {position}<br>value {value}<br>read by the view as element # {reads}",
        "tensors_fig_bar_shared": "read # (original's storage)",
        "tensors_fig_bar_copy": "read # (a new storage)",
        "tensors_fig_written": "a write through this view lands here",
        "tensors_fig_refused": "✗ refused by PyTorch: see the table",
        "tensors_fig_view_title": "Step {step}: {op} · shape {shape}, stride {stride}, offset {offset}",
        "tensors_fig_view_hover": "index {index}<br>value {value}<br>storage position {position}",
        "tensors_fig_write_here": "the element written, and {n} more in this view at the same memory",
        "tensors_fig_write_one": "the element written",
        "tensors_fig_empty": "an empty tensor: no element to draw",
        "tensors_col_op": "operation", "tensors_col_shape": "shape", "tensors_col_stride": "stride",
        "tensors_col_offset": "offset", "tensors_col_contig": "is_contiguous()", "tensors_col_memory": "memory",
        "tensors_col_write": "write at [0, …, 0]",
        "tensors_yes": "yes", "tensors_no": "no",
        "tensors_same_storage": "the original's storage",
        "tensors_new_storage": "copies: a new storage of {n} elements",
        "tensors_copy_storage": "the storage of the copy made at step {step}",
        "tensors_write_shows": "shows in the original (position {position}), {n}× in the view",
        "tensors_write_hidden": "does not reach the original",
        "tensors_refused": "refused.",
        "tensors_refused_says": "refused. PyTorch: `{error}`",
        # layout: why an operation failed
        "tensors_why_view": "view never copies: it must reach the same memory with new strides, and these "
                            "elements (strides {stride}) are not laid out the way the new shape reads them. "
                            "Use reshape (copies when it must) or contiguous() first.",
        "tensors_why_numel": "the sizes {sizes} multiply to {product}, but the tensor has {numel} elements",
        "tensors_why_no_fit": "no size fits the -1 in {sizes}: {numel} elements are not a multiple of {known}",
        "tensors_why_infer": "only one size can be -1 (inferred)",
        "tensors_why_negative": "sizes must be positive, or -1 for one inferred size: got {sizes}",
        "tensors_why_dim": "dim {dim} is out of range for a {n}-D tensor: dims go from {low} to {high} "
                           "(negative ones count from the end)",
        "tensors_why_permute": "permute needs each of the {n} dims exactly once: got {dims}",
        "tensors_why_flatten": "flatten({start}, {end}): the start dim must not come after the end dim",
        "tensors_why_t": "t() transposes a tensor of at most 2 dims; this one has {n}: use transpose(i, j)",
        "tensors_why_expand_dims": "expand needs at least one size per dim: got {got} for a {n}-D tensor",
        "tensors_why_expand": "expand only stretches a dim of size 1 (its stride becomes 0, no copy); dim {dim} "
                              "has size {size}, not 1, and cannot become {want}",
        "tensors_why_too_many_indices": "{got} indices for a {n}-D tensor",
        "tensors_why_step": "PyTorch slices need a step of 1 or more (NumPy's negative steps do not exist here: "
                            "a negative stride is not allowed)",
        "tensors_why_ellipsis": "at most one ... in an index",
        "tensors_why_index": "index {index} is out of range for dim {dim} of size {size}",
        "tensors_why_limit": "the result would have shape {shape}: this view draws tensors of at most {dims} dims "
                             "and {max} elements (checked on the meta device, before anything was allocated)",
        "tensors_why_other": "PyTorch refused this operation: its message says why",
        # layout: input errors
        "tensors_err_shape_syntax": "shape: {text} is not a list of whole numbers like 2, 3, 4",
        "tensors_err_shape_dims": "shape {shape} has {dims} dims: from 1 to {max}",
        "tensors_err_shape_size": "shape {shape}: every size must be 1 or more",
        "tensors_err_shape_elements": "shape {shape} has {n} elements: at most {max}",
        "tensors_err_ops_text": "the operations must be text, one per line",
        "tensors_err_ops_long": "the operations are {chars:,} characters long: at most {max:,}",
        "tensors_err_too_many_ops": "more than {max} operations: at most {max} lines",
        "tensors_err_syntax": "line {line}: {text} is not an operation. Write one per line, like view(2, 3, 4), "
                              "transpose(1, 2), [:, ::2] or contiguous()",
        "tensors_err_unknown_op": "line {line}: {name} is not an operation here: use {ops} or [indexing]",
        "tensors_err_arity": "line {line}: {name} takes {expected} argument(s), got {got}",
        "tensors_err_number": "line {line}: {value} is not a whole number from -{max} to {max}",
        "tensors_err_slice": "line {line}: {text} is not a slice (start:stop:step)",
        "tensors_err_empty_index": "line {line}: [] indexes nothing: write [0], [:, 1], [::2] …",
        "term_tensors_step": "step",
        "term_tensors_preset": "preset",
        "tensors_layout_explain": r"""
**Storage, shape, stride, offset.** A tensor's numbers live in one flat block of memory, its *storage*. The tensor is a way to read it: element $[i_0, i_1, \dots]$ sits at position $\text{offset} + \sum_d i_d \cdot \text{stride}_d$. A fresh `[2, 3, 4]` tensor has strides `(12, 4, 1)`: the last index moves one element, the first jumps a whole 3×4 block. Strides count elements (×4 bytes in float32).

**Views share memory.** `view`, `transpose`, `permute`, slicing, `expand`, `unsqueeze` and `t` only compute a new shape, stride and offset: no number moves, and a write through the view shows up in the original (the cells outlined in red in the strips). `transpose(1, 2)` swaps two strides; the elements are then no longer read in memory order, so `is_contiguous()` is False.

**view vs reshape vs contiguous.** `view` never copies: it works only if the new shape can be read from the same memory with some strides. After a transpose it often cannot, and PyTorch refuses ("view size is not compatible with input tensor's size and stride"). `reshape` is `view` when possible and a copy otherwise; `contiguous()` copies into a new storage in row-major order (orange strips), after which `view` works again. This is the line `y.transpose(1, 2).contiguous().view(B, T, C)` at the end of every attention layer.

**The multi-head split.** `x.view(B, T, H, d)` just relabels C = H·d (same memory), and `.transpose(1, 2)` makes `[B, H, T, d]`, so that each head's `T × d` block can be multiplied as a batch, without moving a byte.

**Stride 0.** `expand` stretches a size-1 dim by giving it stride 0: every row of an expanded bias reads the same 4 numbers (one write shows up in every row). Slicing with a step multiplies a stride: `[::2]` doubles it; a column `[:, 2]` has stride C and offset 2.

How it is computed: the original is `torch.arange(n, dtype=float32)`, so each value is its own position in memory. After each step the shape, `stride()`, `storage_offset()` and `is_contiguous()` are PyTorch's; the cells read are the positions $0 \dots n-1$ read through `torch.as_strided` with the view's own size, stride and offset; sharing is `untyped_storage().data_ptr()`; the write is a real write of −1 at `[0, …, 0]`, undone afterwards. Each step runs on the meta device first, so nothing over the limits is allocated.
""",
        # number formats
        "tensors_value": "A value to store",
        "tensors_value_info": "Try 65504 and 65520 (fp16's edge), 0.1, 1e-8, 448, 3e38.",
        "tensors_bits_plot": "Bit layouts",
        "tensors_rounding_plot": "Range and precision",
        "tensors_formats_intro": "Type a number and see how fp32, bf16, fp16, fp8 and int8 store it: the bits, the value "
                                 "each one keeps, and what rounding costs across the whole range.",
        "numfmt_bits_title": "Bit layouts", "numfmt_sign": "sign", "numfmt_exponent": "exponent",
        "numfmt_mantissa": "mantissa", "numfmt_value": "value bits",
        "numfmt_rounding_title": "Relative error of storing a number: range (where a line exists) and precision (how low it is)",
        "numfmt_magnitude": "|x| (log scale)", "numfmt_rel_error": "relative rounding error",
        "numfmt_h_cast": "{v} stored in each format",
        "numfmt_fmt": "format", "numfmt_stored": "stored value", "numfmt_error": "relative error",
        "numfmt_note": "what happened", "numfmt_range": "max", "numfmt_min_normal": "smallest normal",
        "numfmt_eps": "epsilon", "numfmt_digits": "decimal digits",
        "numfmt_exact": "exact", "numfmt_rounded": "rounded", "numfmt_overflow": "overflow → inf/NaN",
        "numfmt_saturated": "saturated: clamped to the range's end", "numfmt_underflow": "underflow → 0",
        "numfmt_subnormal": "rounded to a subnormal (fewer digits)",
        "numfmt_by_torch": "; PyTorch's `.to()` from float64 stores {v}: it rounds to float32 first, then again",
        "tensors_formats_explain": r"""
**Bits.** A float is sign × $2^{e}$ × 1.m (exponent e, mantissa m). Exponent bits buy range, mantissa bits buy precision: each cast above is a real torch tensor of that dtype, read back bit by bit. The value is rounded once, to nearest even, as IEEE 754 rounds. PyTorch's `.to()` from float64 to fp16, bf16 or fp8 rounds to float32 first and then again, and a number just past a midpoint can land on the wrong side: type 1.00048828125001 (1 + 2⁻¹¹, plus a hair) and fp16 stores 1.0009766, where `.to(torch.float16)` gives 1; the table says so where it happens.

**fp16** has 5 exponent bits: its largest value is 65,504, so large activations or gradients overflow to inf (hence loss scaling). **bf16** keeps fp32's 8 exponent bits (range to 3·10³⁸) and pays with 7 mantissa bits (≈ 2–3 decimal digits): a relative rounding error up to $2^{-8}$. **fp8 E4M3** (max 448, no inf: past it the OCP standard allows NaN or saturation, and PyTorch's cast saturates at 448) serves weights and activations; **E5M2** (max 57,344, then inf) serves gradients. **int8** here is cast as quantisation does: rounded to whole numbers and saturated at −128 and 127 (PyTorch's `.to(torch.int8)` truncates toward zero instead).

**The rounding plot.** Each line is a format's worst relative error in each binade $[2^e, 2^{e+1})$, one step per binade, computed exactly (at the binade's first midpoint, cast for real): flat across its normal range at the unit roundoff $2^{-(m+1)}$ (m mantissa bits), since a float's precision is relative; below, subnormals lose digits; where the line stops the format overflows or flushes to zero.
""",
        # compute: matmul sweep
        "compute_kind": "Sweep",
        "compute_kind_square": "square matmuls n×n · n×n",
        "compute_kind_tokens": "m tokens × a d×d weight (batching)",
        "compute_dtypes": "dtypes",
        "compute_run": "Run the sweep",
        "compute_stop": "Stop",
        "compute_matmul_plot": "Achieved FLOP/s",
        "compute_fig_matmul_title": "Real matmuls on {device}: FLOP/s = 2·m·n·k / time",
        "compute_fig_vs_size": "against size",
        "compute_fig_vs_intensity": "against arithmetic intensity",
        "compute_fig_size_square": "n (an n×n by n×n matmul)",
        "compute_fig_size_tokens": "m tokens (m×{d} by {d}×{d})",
        "compute_fig_intensity": "FLOPs per byte moved",
        "compute_fig_flops": "achieved {unit}",
        "compute_fig_peak": "{dtype} peak {value} ({source})",
        "compute_fig_measured_peak": "{dtype} best measured {value}",
        "compute_fig_roof": "memory roof: intensity × {bandwidth} TB/s",
        "compute_fig_point_hover": "{dtype} m={m} n={n} k={k}<br>{flops} in {ms} ms<br>{rate}<br>{intensity} FLOP/byte",
        "compute_fig_waiting": "Press “Run the sweep”: real matmuls, one point per size and dtype, as they are measured.",
        "compute_peak_known": "Detected **{device}**: peaks from the table ({name}, {source}; dense, no sparsity).",
        "compute_peak_unknown": "Detected **{device}**: not in the table of published peaks (or a MIG slice), so no "
                                "peak line: FLOP/s are shown as measured.",
        "compute_device_line": "{device} · {threads} thread(s) · {n} matmul sizes in {s:.1f} s",
        "mfu_device_line": "{device} · {threads} thread(s) · {dtype} · {done}/{steps} steps in {s:.1f} s",
        "compute_peak_cpu": "Detected **{device}** ({threads} thread(s)): a CPU has no peak here; the line is the "
                            "best this sweep measured: **measured, not a datasheet figure**.",
        "compute_row": "- **{dtype}**: {best} at {size}{share}; the smallest size reached {small}",
        "compute_row_share": " ({percent} of the peak)",
        "compute_skip_time": "{dtype}: sizes from {size} skipped, one matmul would take about {seconds} s here",
        "compute_skip_memory": "size {size} skipped: its operands need {gib} GiB, more than a quarter of the free memory",
        "compute_skip_fp8_shape": "fp8 at size {size} skipped: torch._scaled_mm needs sizes divisible by 16",
        "compute_why_fp8": "fp8 needs an NVIDIA GPU with FP8 tensor cores (compute capability 8.9 or newer: Ada, "
                           "Hopper); this device: {device} (compute capability {cc})",
        "compute_why_bf16": "bf16 needs compute capability 8.0 or newer (Ampere); this device: {device} "
                            "(compute capability {cc})",
        "compute_err_no_dtype": "pick at least one dtype: {choices}",
        "term_compute_dtype": "dtype",
        "term_compute_kind": "sweep",
        "term_compute_gpu": "GPU",
        "mfu_heading": "### MFU of a training step: the one transformer, trained for real",
        "mfu_layers": "layers", "mfu_heads": "heads", "mfu_d_model": "d_model",
        "mfu_seq_len": "sequence length T", "mfu_batch": "batch B", "mfu_steps": "timed steps",
        "mfu_run": "Train and measure",
        "mfu_plot": "Training steps",
        "mfu_fig_title": "Each timed step: its FLOPs / its time, under the peak",
        "mfu_fig_rate": "achieved FLOP/s", "mfu_fig_loss": "loss", "mfu_fig_loss_axis": "cross-entropy (nats)",
        "mfu_fig_step": "step", "mfu_fig_hover": "step {step}: {ms} ms<br>{rate}<br>MFU {mfu}",
        "mfu_fig_peak": "peak {value}",
        "mfu_fig_waiting": "Press “Train and measure”: a few real AdamW steps on the shipped corpus, each timed.",
        "mfu_h_flops": "FLOPs of one training step (forward + backward) on {tokens} tokens (B = {batch} × T = {seq})",
        "mfu_rule": "6·N·tokens, N = {n} weights that multiply (every Linear, the LM head included)",
        "mfu_attention": "+ attention: q·kᵀ and softmax·v, forward and backward (formula − 6·N·tokens)",
        "mfu_formula": "= the formula: count_flops(config, {batch}, {seq}, backward=True)",
        "mfu_counted": "PyTorch's FlopCounterMode on the same step",
        "mfu_equal": "✓ equal", "mfu_differ": "✗ differs by {diff}",
        "mfu_plain": "plain FlopCounterMode, as torch 2.13 ships it",
        "mfu_missed": "misses {missed}: it has no formula for the CPU's fused attention kernel "
                      "aten._scaled_dot_product_flash_attention_for_cpu; the counter above is given PyTorch's own "
                      "SDPA formulas for it (custom_mapping)",
        "mfu_params": "The model has {total} parameters; {matmul} of them multiply. Embedding lookups, norms, softmax, "
                      "RoPE, the activation and the optimizer are not matmuls: not counted.",
        "mfu_result": "Median step: **{ms} ms** ({dtype}) → achieved **{rate}** → **MFU {mfu}** against {peak}.",
        "mfu_peak_sheet": "the {dtype} dense peak {value} ({source})",
        "mfu_peak_measured": "{value}, the best fp32 matmul measured on this CPU just before ({threads} thread(s)): "
                             "measured, not a datasheet figure",
        "mfu_no_peak": "no peak: {device} is not in the table of published peaks, so no MFU",
        "mfu_above_peak": "Above 100%: the quick matmul probe underestimated this CPU's best (run the sweep above).",
        "compute_err_mfu_budget": "this run would take {flops} FLOPs (all its steps): at most {max} on {device}. "
                                  "Make the model, the batch, T or the number of steps smaller",
        "term_mfu_seq_len": "sequence length",
        "term_mfu_batch": "batch",
        "compute_estimate_heading": "### On paper: how long would a real training run take?",
        "compute_params": "parameters N",
        "compute_tokens": "training tokens D",
        "compute_gpus": "GPUs",
        "compute_gpu": "GPU kind",
        "compute_mfu": "MFU (%)",
        "compute_estimate_text": "**{flops}** to train: 6·N·D = 6 · {n} parameters · {d} tokens. On {gpus} × {gpu} "
                                 "({peak} dense {dtype} each) at {mfu} MFU the cluster does {rate}: "
                                 "**{days} days** ({gpu_hours} GPU-hours).",
        "term_compute_params": "parameters",
        "term_compute_tokens": "tokens",
        "term_compute_gpus": "GPUs",
        "term_compute_mfu": "MFU (%)",
        "term_tensors_value": "value",
        "compute_explain": r"""
**Counting FLOPs.** An (m×k)·(k×n) matmul computes m·n dot products of length k: a multiply and an add per term, $2mnk$ FLOPs (PyTorch's `FlopCounterMode` counts the same). Achieved FLOP/s is that over the measured time (the fastest of several timed runs after a warm-up; on a GPU after `synchronize`).

**Arithmetic intensity.** A matmul must at least read A and B and write C: $(mk + kn + mn)\cdot b$ bytes for b-byte numbers. FLOPs per byte moved is its intensity: $2n/3b$ for a square one, under 1 for a single token times a weight (m = 1). A device does at most $\min(P,\ I \cdot W)$ for peak $P$, intensity $I$ and memory bandwidth $W$: the *roofline*: small or skinny matmuls are limited by memory, not by arithmetic. That is why batching matters: m tokens share one read of the weight, so the intensity, and the FLOP/s, grow with m until the peak.

**MFU.** Model FLOPs utilisation = the FLOPs a training step needs (by the formula) / its measured time / the device's peak. A weight costs 6 FLOPs per token in training: 2 forward (a multiply and an add), 2 for the gradient of its input, 2 for its own gradient; hence $6ND$ for a run of $D$ tokens. Attention adds its $T^2$ terms: $2BHT^2(d_{qk}+d_v)$ forward, and $2BHT^2(3d_{qk}+2d_v)$ backward for a fused kernel that recomputes the scores (FlashAttention's count). PyTorch's `FlopCounterMode` counts matmuls as they run and must agree with the formula; torch 2.13 has no formula for the CPU's fused attention kernel (`aten._scaled_dot_product_flash_attention_for_cpu`), so this app passes it PyTorch's own SDPA formulas through `custom_mapping`: without them a CPU count misses attention (the "plain" row). Large runs reach 35–55 % MFU on H100s; a small model reaches far less: its matmuls are too small to fill the device (the sweep above), and norms, softmax, the optimizer and Python take time without FLOPs.

**On paper.** $t = 6ND / (n \cdot P \cdot \mathrm{MFU})$ for $n$ GPUs of peak $P$: 7 B parameters on 1 T tokens is 4.2·10²² FLOPs, a bit over a day on 1,024 H100s at 40 %.

**Peaks.** On a GPU the lines are the vendor's dense peaks for the detected device (H100, H200, A100, L4, L40S, T4, A10, A10G, MI300X; sources in `models/compute.py`): fp32 is the CUDA-core rate, since PyTorch does not use TF32 for fp32 matmuls by default. A device not in the table gets no line. On a CPU the line is the best this sweep measured: **measured, not a datasheet figure**. Without bf16 units (AVX512-BF16, AMX) a CPU converts bf16 and fp16 on the fly, slower than fp32.
""",
    },
    "zh-CN": {
        "tab_tensors": "张量",
        "tensors_device": "{timing}（{ops} 个操作，含绘图）",
        "tensors_intro": "张量就是一段内存，按形状、步长和偏移去读；它的计算开销按 FLOPs 计数，再与硬件的能力对照。",
        "tensors_sub_layout": "布局：存储、步长、视图",
        "tensors_sub_formats": "数值格式",
        "tensors_sub_compute": "矩阵乘法速度与 MFU",
        "tensors_preset": "预设",
        "tensors_preset_heads_split": "多头拆分：[B, T, C] → view → transpose(1, 2)",
        "tensors_preset_heads_merge": "它的逆操作：transpose → view 失败 → contiguous()",
        "tensors_preset_column": "切出的一列",
        "tensors_preset_bias": "扩展的偏置（步长为 0）",
        "tensors_preset_custom": "自定义",
        "tensors_note_refused": "PyTorch 报错",
        "tensors_note_copy": "复制一份",
        "tensors_note_works": "现在可以了",
        "tensors_note_column": "下标为 2 的列",
        "tensors_note_every_other": "每隔一行取一行",
        "tensors_note_bias": "偏置 b：[C]，加到 x：[T, C] 上",
        "tensors_note_stride_0": "[T, C]，步长 0",
        "tensors_note_materialised": "真正复制出来（物化）",
        "tensors_shape": "原张量的形状",
        "tensors_shape_info": f"用逗号分隔的整数：最多 {TENSOR_MAX_DIMS} 维、{TENSOR_MAX_ELEMENTS} 个元素。"
                              "它按内存顺序存放 0, 1, 2, …。",
        "tensors_ops": "操作，每行一个",
        "tensors_ops_info": f"最多 {TENSOR_MAX_OPS} 行，每行是 {_OPS} 之一，参数为整数"
                            "——view(2, -1)、transpose(1, 2)、flatten(1)——或者索引：[:, 2]、[::2, 1:3]、[..., 0]、"
                            "[None]。# 之后是注释。只做解析，不会当作 Python 执行。PyTorch 拒绝的行会显示出来并跳过。",
        "tensors_step": "显示第几步（超出则显示最后一步）",
        "tensors_memory_plot": "每一步读取的存储",
        "tensors_view_plot": "某一步的元素",
        "tensors_fig_original": "原张量",
        "tensors_fig_memory_title": "每一步的存储，按内存顺序排列：格子里的数字（和颜色）是视图读取它的次序；灰色：不读取",
        "tensors_fig_position": "在存储中的位置",
        "tensors_fig_cell_hover": "位置 {position}<br>值 {value}<br>视图把它读作第 {reads} 个元素",
        "tensors_fig_bar_shared": "原存储",                    # above the bar: the figure's title says "读取次序"
        "tensors_fig_bar_copy": "新存储",
        "tensors_fig_written": "通过这个视图写入的值落在这里",
        "tensors_fig_refused": "✗ PyTorch 拒绝了：见下表",
        "tensors_fig_view_title": "第 {step} 步：{op} · 形状 {shape}，步长 {stride}，偏移 {offset}",
        "tensors_fig_view_hover": "索引 {index}<br>值 {value}<br>存储位置 {position}",
        "tensors_fig_write_here": "被写入的元素，以及这个视图中另外 {n} 个位于同一内存的元素",
        "tensors_fig_write_one": "被写入的元素",
        "tensors_fig_empty": "空张量：没有元素可画",
        "tensors_col_op": "操作", "tensors_col_shape": "形状", "tensors_col_stride": "步长",
        "tensors_col_offset": "偏移", "tensors_col_contig": "is_contiguous()", "tensors_col_memory": "内存",
        "tensors_col_write": "在 [0, …, 0] 处写入",
        "tensors_yes": "是", "tensors_no": "否",
        "tensors_same_storage": "原张量的存储",
        "tensors_new_storage": "复制：{n} 个元素的新存储",
        "tensors_copy_storage": "第 {step} 步复制出的存储",
        "tensors_write_shows": "出现在原张量中（位置 {position}），在视图中出现 {n} 次",
        "tensors_write_hidden": "不会影响原张量",
        "tensors_refused": "被拒绝。",
        "tensors_refused_says": "被拒绝。PyTorch：`{error}`",
        "tensors_why_view": "view 从不复制：它必须用新的步长读同一块内存，而这些元素（步长 {stride}）的排列方式"
                            "不符合新形状的读取顺序。请用 reshape（必要时复制）或先调用 contiguous()。",
        "tensors_why_numel": "尺寸 {sizes} 相乘得 {product}，但张量有 {numel} 个元素",
        "tensors_why_no_fit": "{sizes} 中的 -1 无解：{numel} 个元素不是 {known} 的倍数",
        "tensors_why_infer": "只能有一个尺寸为 -1（自动推断）",
        "tensors_why_negative": "尺寸必须为正，或用 -1 表示一个自动推断的尺寸：收到 {sizes}",
        "tensors_why_dim": "维度 {dim} 超出了 {n} 维张量的范围：维度从 {low} 到 {high}（负数从末尾数起）",
        "tensors_why_permute": "permute 需要 {n} 个维度各出现一次：收到 {dims}",
        "tensors_why_flatten": "flatten({start}, {end})：起始维度不能在结束维度之后",
        "tensors_why_t": "t() 只转置至多 2 维的张量；这个有 {n} 维：请用 transpose(i, j)",
        "tensors_why_expand_dims": "expand 的尺寸个数不能少于维度数：{n} 维张量只给了 {got} 个",
        "tensors_why_expand": "expand 只能拉伸大小为 1 的维度（其步长变为 0，不复制）；维度 {dim} 的大小是 {size}，"
                              "不是 1，不能变成 {want}",
        "tensors_why_too_many_indices": "{n} 维张量给了 {got} 个索引",
        "tensors_why_step": "PyTorch 切片的间隔（step）必须 ≥ 1（这里没有 NumPy 那样的负间隔：不允许负步长）",
        "tensors_why_ellipsis": "一个索引里最多只能有一个 ...",
        "tensors_why_index": "索引 {index} 超出了维度 {dim} 的范围（大小 {size}）",
        "tensors_why_limit": "结果的形状会是 {shape}：本页只画最多 {dims} 维、{max} 个元素的张量"
                             "（在 meta 设备上检查，尚未分配任何内存）",
        "tensors_why_other": "PyTorch 拒绝了这个操作：原因见它的报错信息",
        "tensors_err_shape_syntax": "形状：{text} 不是像 2, 3, 4 这样的整数列表",
        "tensors_err_shape_dims": "形状 {shape} 有 {dims} 维：应为 1 到 {max} 维",
        "tensors_err_shape_size": "形状 {shape}：每个尺寸都必须 ≥ 1",
        "tensors_err_shape_elements": "形状 {shape} 有 {n} 个元素：最多 {max} 个",
        "tensors_err_ops_text": "操作必须是文本，每行一个",
        "tensors_err_ops_long": "操作共 {chars:,} 个字符：最多 {max:,} 个",
        "tensors_err_too_many_ops": "操作超过 {max} 个：最多 {max} 行",
        "tensors_err_syntax": "第 {line} 行：{text} 不是一个操作。每行写一个，例如 view(2, 3, 4)、transpose(1, 2)、"
                              "[:, ::2] 或 contiguous()",
        "tensors_err_unknown_op": "第 {line} 行：这里没有 {name} 这个操作：可用 {ops} 或 [索引]",
        "tensors_err_arity": "第 {line} 行：{name} 需要 {expected} 个参数，收到 {got} 个",
        "tensors_err_number": "第 {line} 行：{value} 不是 -{max} 到 {max} 之间的整数",
        "tensors_err_slice": "第 {line} 行：{text} 不是切片（start:stop:step）",
        "tensors_err_empty_index": "第 {line} 行：[] 什么也没索引：请写 [0]、[:, 1]、[::2] …",
        "term_tensors_step": "步",
        "term_tensors_preset": "预设",
        "tensors_layout_explain": r"""
**存储、形状、步长、偏移。** 张量的数值存放在一整块连续内存里，即它的*存储*（storage）。张量只是读取它的一种方式：元素 $[i_0, i_1, \dots]$ 位于 $\text{offset} + \sum_d i_d \cdot \text{stride}_d$。新建的 `[2, 3, 4]` 张量步长为 `(12, 4, 1)`：最后一个索引每次移动一个元素，第一个索引跳过整块 3×4。步长以元素计（float32 下 ×4 字节）。

**视图共享内存。** `view`、`transpose`、`permute`、切片、`expand`、`unsqueeze` 和 `t` 只计算新的形状、步长和偏移：没有任何数值被移动，通过视图写入会出现在原张量中（条带上红框标出的格子）。`transpose(1, 2)` 交换两个步长；此后元素不再按内存顺序读取，`is_contiguous()` 为 False。

**view、reshape 与 contiguous。** `view` 从不复制：只有新形状能用某组步长从同一块内存读出时才可行。transpose 之后往往不行，PyTorch 会拒绝（"view size is not compatible with input tensor's size and stride"）。`reshape` 能用 `view` 时就是 `view`，否则复制；`contiguous()` 按行优先顺序复制到新的存储（橙色条带），之后 `view` 又能用了。这正是每个注意力层末尾那行 `y.transpose(1, 2).contiguous().view(B, T, C)`。

**多头拆分。** `x.view(B, T, H, d)` 只是把 C 重新解读为 H·d（同一块内存），`.transpose(1, 2)` 得到 `[B, H, T, d]`，这样每个注意力头的 `T × d` 块可以批量相乘，一个字节也不用移动。

**步长为 0。** `expand` 把大小为 1 的维度拉伸，方法是让它的步长为 0：扩展后的偏置每一行都读同样的 4 个数（写一次，每一行都变）。带间隔的切片会放大步长：`[::2]` 使步长翻倍；列 `[:, 2]` 的步长为 C、偏移为 2。

计算方式：原张量是 `torch.arange(n, dtype=float32)`，所以每个值就是它在内存中的位置。每一步之后的形状、`stride()`、`storage_offset()` 和 `is_contiguous()` 都来自 PyTorch；被读取的格子是把位置 $0 \dots n-1$ 用视图自己的尺寸、步长和偏移经 `torch.as_strided` 读出的；是否共享看 `untyped_storage().data_ptr()`；写入是在 `[0, …, 0]` 处真实写入 −1，之后再恢复。每一步先在 meta 设备上运行，因此超出限制的结果不会分配任何内存。
""",
        "tensors_value": "要存储的数值",
        "tensors_value_info": "试试 65504 和 65520（fp16 的边界）、0.1、1e-8、448、3e38。",
        "tensors_bits_plot": "位布局",
        "tensors_rounding_plot": "范围与精度",
        "tensors_formats_intro": "输入一个数，看 fp32、bf16、fp16、fp8 和 int8 各自怎样存它：每一位、实际存下的值，以及整个范围内的舍入误差。",
        "numfmt_bits_title": "位布局", "numfmt_sign": "符号", "numfmt_exponent": "指数",
        "numfmt_mantissa": "尾数", "numfmt_value": "数值位",
        "numfmt_rounding_title": "存储一个数的相对误差：范围（曲线存在之处）与精度（曲线的高低）",
        "numfmt_magnitude": "|x|（对数坐标）", "numfmt_rel_error": "相对舍入误差",
        "numfmt_h_cast": "{v} 在各格式中的存储值",
        "numfmt_fmt": "格式", "numfmt_stored": "存储值", "numfmt_error": "相对误差",
        "numfmt_note": "发生了什么", "numfmt_range": "最大值", "numfmt_min_normal": "最小正规数",
        "numfmt_eps": "机器精度 eps", "numfmt_digits": "十进制有效位",
        "numfmt_exact": "精确", "numfmt_rounded": "舍入", "numfmt_overflow": "溢出 → inf/NaN",
        "numfmt_saturated": "饱和：截断到范围端点", "numfmt_underflow": "下溢 → 0",
        "numfmt_subnormal": "舍入为次正规数（有效位更少）",
        "numfmt_by_torch": "；PyTorch 从 float64 直接 `.to()` 得到 {v}：先舍入到 float32，再舍入一次",
        "tensors_formats_explain": r"""
**位。** 浮点数 = 符号 × $2^{e}$ × 1.m（e 为指数，m 为尾数）。指数位决定范围，尾数位决定精度：上面每次转换得到的都是该 dtype 的真实 torch 张量，再逐位读出。数值只舍入一次（就近舍入、平局取偶），与 IEEE 754 相同。PyTorch 从 float64 `.to()` 到 fp16、bf16 或 fp8 时先舍入到 float32、再舍入一次，刚好越过中点一点的数可能被舍到错误的一侧：输入 1.00048828125001（1 + 2⁻¹¹ 再多一点点），fp16 存为 1.0009766，而 `.to(torch.float16)` 得到 1；出现这种情况时表格会注明。

**fp16** 只有 5 个指数位，最大值为 65,504，大的激活或梯度会溢出为 inf（因此需要损失缩放）。**bf16** 保留 fp32 的 8 个指数位（范围到 3·10³⁸），代价是只有 7 个尾数位（约 2–3 位十进制有效数字）：相对舍入误差最高 $2^{-8}$。**fp8 E4M3**（最大 448，没有 inf：超出时 OCP 标准允许得到 NaN 或饱和，PyTorch 的转换饱和到 448）用于权重和激活；**E5M2**（最大 57,344，再大就是 inf）用于梯度。**int8** 在这里按量化的方式转换：舍入到整数，并在 −128 和 127 处饱和（PyTorch 的 `.to(torch.int8)` 则是向零截断）。

**舍入误差图。** 每条线是某个格式在每个二进制区间 $[2^e, 2^{e+1})$ 内的最大相对误差，每个区间一级台阶，精确计算（取区间内第一个中点，真实地转换一次）：在正规数范围内是一条水平线，等于单位舍入 $2^{-(m+1)}$（m 为尾数位数），因为浮点数的精度是相对的；更小的数是次正规数，有效位减少；曲线中断之处，该格式上溢，或下溢为零。
""",
        "compute_kind": "扫描方式",
        "compute_kind_square": "方阵乘法 n×n · n×n",
        "compute_kind_tokens": "m 个词元 × d×d 权重（批处理）",
        "compute_dtypes": "数据类型",
        "compute_run": "运行扫描",
        "compute_stop": "停止",
        "compute_matmul_plot": "实测 FLOP/s",
        "compute_fig_matmul_title": "在 {device} 上的真实矩阵乘法：FLOP/s = 2·m·n·k / 时间",
        "compute_fig_vs_size": "随尺寸变化",
        "compute_fig_vs_intensity": "随算术强度变化",
        "compute_fig_size_square": "n（n×n 乘 n×n）",
        "compute_fig_size_tokens": "m 个词元（m×{d} 乘 {d}×{d}）",
        "compute_fig_intensity": "每搬运一字节的 FLOPs",
        "compute_fig_flops": "实测 {unit}",
        "compute_fig_peak": "{dtype} 峰值 {value}（{source}）",
        "compute_fig_measured_peak": "{dtype} 实测最佳 {value}",
        "compute_fig_roof": "内存带宽上限：强度 × {bandwidth} TB/s",
        "compute_fig_point_hover": "{dtype} m={m} n={n} k={k}<br>{flops}，用时 {ms} ms<br>{rate}<br>{intensity} FLOP/字节",
        "compute_fig_waiting": "点击“运行扫描”：真实的矩阵乘法，每个尺寸和数据类型一个点，测完即画。",
        "compute_peak_known": "检测到 **{device}**：峰值来自表格（{name}，{source}；稠密，不含稀疏）。",
        "compute_peak_unknown": "检测到 **{device}**：不在已公布峰值的表格中（或是 MIG 切片），因此没有峰值线："
                                "FLOP/s 按实测显示。",
        "compute_device_line": "{device} · {threads} 个线程 · {n} 个矩阵乘法尺寸，用时 {s:.1f} 秒",
        "mfu_device_line": "{device} · {threads} 个线程 · {dtype} · {done}/{steps} 步，用时 {s:.1f} 秒",
        "compute_peak_cpu": "检测到 **{device}**（{threads} 个线程）：CPU 在这里没有峰值；这条线是本次扫描测得的最佳值，"
                            "**是实测值，不是规格表数据**。",
        "compute_row": "- **{dtype}**：在尺寸 {size} 达到 {best}{share}；最小尺寸时为 {small}",
        "compute_row_share": "（峰值的 {percent}）",
        "compute_skip_time": "{dtype}：从尺寸 {size} 起跳过，这里一次矩阵乘法约需 {seconds} 秒",
        "compute_skip_memory": "跳过尺寸 {size}：操作数需要 {gib} GiB，超过空闲显存的四分之一",
        "compute_skip_fp8_shape": "跳过 fp8 的尺寸 {size}：torch._scaled_mm 要求尺寸能被 16 整除",
        "compute_why_fp8": "fp8 需要带 FP8 张量核心的 NVIDIA GPU（计算能力 8.9 及以上：Ada、Hopper）；"
                           "当前设备：{device}（计算能力 {cc}）",
        "compute_why_bf16": "bf16 需要计算能力 8.0 及以上（Ampere）；当前设备：{device}（计算能力 {cc}）",
        "compute_err_no_dtype": "请至少选择一种数据类型：{choices}",
        "term_compute_dtype": "数据类型",
        "term_compute_kind": "扫描方式",
        "term_compute_gpu": "GPU",
        "mfu_heading": "### 训练一步的 MFU：真实训练本应用的 Transformer",
        "mfu_layers": "层数", "mfu_heads": "注意力头数", "mfu_d_model": "d_model",
        "mfu_seq_len": "序列长度 T", "mfu_batch": "批大小 B", "mfu_steps": "计时的步数",
        "mfu_run": "训练并测量",
        "mfu_plot": "训练步",
        "mfu_fig_title": "每个计时步：FLOPs / 用时，与峰值对比",
        "mfu_fig_rate": "实测 FLOP/s", "mfu_fig_loss": "损失", "mfu_fig_loss_axis": "交叉熵（nats）",
        "mfu_fig_step": "步", "mfu_fig_hover": "第 {step} 步：{ms} ms<br>{rate}<br>MFU {mfu}",
        "mfu_fig_peak": "峰值 {value}",
        "mfu_fig_waiting": "点击“训练并测量”：在自带语料上真实地做几步 AdamW 训练，每一步都计时。",
        "mfu_h_flops": "训练一步（前向 + 反向）的 FLOPs，共 {tokens} 个词元（B = {batch} × T = {seq}）",
        "mfu_rule": "6·N·词元数，N = {n} 个参与乘法的权重（所有 Linear，包括输出头）",
        "mfu_attention": "+ 注意力：q·kᵀ 与 softmax·v 的前向和反向（公式 − 6·N·词元数）",
        "mfu_formula": "= 公式：count_flops(config, {batch}, {seq}, backward=True)",
        "mfu_counted": "PyTorch 的 FlopCounterMode 对同一步的计数",
        "mfu_equal": "✓ 相等", "mfu_differ": "✗ 相差 {diff}",
        "mfu_plain": "torch 2.13 自带的 FlopCounterMode",
        "mfu_missed": "漏掉 {missed}：它没有 CPU 融合注意力内核 aten._scaled_dot_product_flash_attention_for_cpu "
                      "的计数公式；上面的计数器为它传入了 PyTorch 自己的 SDPA 公式（custom_mapping）",
        "mfu_params": "模型共有 {total} 个参数，其中 {matmul} 个参与矩阵乘法。嵌入查表、归一化、softmax、RoPE、"
                      "激活函数和优化器都不是矩阵乘法，不计入。",
        "mfu_result": "每步用时中位数：**{ms} ms**（{dtype}）→ 实测 **{rate}** → **MFU {mfu}**（相对于 {peak}）。",
        "mfu_peak_sheet": "{dtype} 稠密峰值 {value}（{source}）",
        "mfu_peak_measured": "{value}，即刚刚在这台 CPU 上测得的最佳 fp32 矩阵乘法（{threads} 个线程）："
                             "是实测值，不是规格表数据",
        "mfu_no_peak": "没有峰值：{device} 不在已公布峰值的表格中，因此没有 MFU",
        "mfu_above_peak": "超过 100%：快速矩阵乘法探测低估了这台 CPU 的最佳速度（请运行上面的扫描）。",
        "compute_err_mfu_budget": "这次运行需要 {flops} FLOPs（所有步）：在 {device} 上最多 {max}。"
                                  "请减小模型、批大小、T 或步数",
        "term_mfu_seq_len": "序列长度",
        "term_mfu_batch": "批大小",
        "compute_estimate_heading": "### 纸上估算：一次真实的训练要多久？",
        "compute_params": "参数量 N",
        "compute_tokens": "训练词元数 D",
        "compute_gpus": "GPU 数量",
        "compute_gpu": "GPU 型号",
        "compute_mfu": "MFU（%）",
        "compute_estimate_text": "训练需要 **{flops}**：6·N·D = 6 · {n} 个参数 · {d} 个词元。用 {gpus} 张 {gpu}"
                                 "（每张稠密 {dtype} 峰值 {peak}），MFU 为 {mfu} 时整个集群的实际算力为 {rate}："
                                 "**{days} 天**（{gpu_hours} GPU 小时）。",
        "term_compute_params": "参数量",
        "term_compute_tokens": "词元数",
        "term_compute_gpus": "GPU 数量",
        "term_compute_mfu": "MFU（%）",
        "term_tensors_value": "数值",
        "compute_explain": r"""
**计算 FLOPs。** (m×k)·(k×n) 的矩阵乘法要算 m·n 个长度为 k 的点积：每一项一次乘法和一次加法，共 $2mnk$ FLOPs（PyTorch 的 `FlopCounterMode` 也这样计数）。实测 FLOP/s 是它除以测得的时间（预热之后多次计时中最快的一次；GPU 上在 `synchronize` 之后计时）。

**算术强度。** 矩阵乘法至少要读 A、B 并写 C：b 字节的数共 $(mk + kn + mn)\cdot b$ 字节。每搬运一字节的 FLOPs 就是它的算术强度：方阵为 $2n/3b$，单个词元乘一个权重矩阵（m = 1）则不到 1。设备最多能做到 $\min(P,\ I \cdot W)$（$P$ 为峰值，$I$ 为算术强度，$W$ 为内存带宽），即*屋顶线*（roofline）：小的或细长的矩阵乘法受限于内存而不是算力。这就是批处理重要的原因：m 个词元共用一次权重读取，强度和 FLOP/s 随 m 增长，直到触及峰值。

**MFU。** 模型 FLOPs 利用率 = 训练一步所需的 FLOPs（按公式）/ 实测用时 / 设备峰值。训练时每个权重每个词元花 6 FLOPs：前向 2 次（一次乘、一次加），对输入求梯度 2 次，对权重本身求梯度 2 次；因此在 $D$ 个词元上训练为 $6ND$。注意力另加 $T^2$ 项：前向 $2BHT^2(d_{qk}+d_v)$，融合内核在反向时重算分数，反向为 $2BHT^2(3d_{qk}+2d_v)$（FlashAttention 的计数）。PyTorch 的 `FlopCounterMode` 在运行时统计矩阵乘法，必须与公式一致；torch 2.13 没有 CPU 融合注意力内核（`aten._scaled_dot_product_flash_attention_for_cpu`）的公式，所以本应用通过 `custom_mapping` 为它传入 PyTorch 自己的 SDPA 公式：否则 CPU 上的计数会漏掉注意力（表中“自带”一行）。大规模训练在 H100 上能达到 35–55 % 的 MFU；小模型远达不到：它的矩阵乘法太小，填不满设备（见上面的扫描），而归一化、softmax、优化器和 Python 都要花时间却不产生 FLOPs。

**纸上估算。** $t = 6ND / (n \cdot P \cdot \mathrm{MFU})$（$n$ 张峰值为 $P$ 的 GPU）：70 亿参数、1 万亿词元是 4.2·10²² FLOPs，在 1,024 张 H100 上以 40 % 的 MFU 需要一天多。

**峰值。** 在 GPU 上，这些线是厂商为检测到的设备公布的稠密峰值（H100、H200、A100、L4、L40S、T4、A10、A10G、MI300X；出处见 `models/compute.py`）：fp32 取 CUDA 核心的速率，因为 PyTorch 默认不对 fp32 矩阵乘法使用 TF32。不在表中的设备没有峰值线。在 CPU 上，这条线是本次扫描测得的最佳值：**是实测值，不是规格表数据**。没有 bf16 运算单元（AVX512-BF16、AMX）的 CPU 会临时转换 bf16 和 fp16，比 fp32 还慢。
""",
    },
}
