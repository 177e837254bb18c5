"""Published dense peaks of data-centre accelerators: FLOP/s per dtype and memory bandwidth, each with
its source. Torch-free, so the UI lists the GPUs without importing torch; :mod:`models.compute` uses it.

Dense means without 2:4 structured sparsity: the datasheets' starred figures assume it and are twice
the dense rate. fp32 is the CUDA-core rate: PyTorch's fp32 matmul does not use TF32 tensor cores unless
asked (``torch.backends.cuda.matmul.allow_tf32`` / ``torch.set_float32_matmul_precision("high")``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from models.checks import choice


@dataclass(frozen=True)
class Peak:
    """One GPU's published dense peaks: TFLOP/s per dtype, memory bandwidth in TB/s."""

    name: str
    pattern: str                          # a regex searched in torch.cuda.get_device_name()
    tflops: dict[str, float]
    bandwidth_tbs: float
    source: str


# Order matters: the first pattern that matches wins (H100 NVL before H100).
PEAKS = (
    # NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100): SXM FP32 67 TF,
    # BF16/FP16 1,979 TF* and FP8 3,958 TF* with sparsity, 3.35 TB/s; PCIe FP32 51, BF16 1,513*,
    # FP8 3,026*, 2 TB/s; NVL FP32 60, BF16 1,671*, FP8 3,341*, 3.9 TB/s.
    Peak("H100 NVL", r"H100.*NVL", {"fp32": 60, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5}, 3.9,
         "NVIDIA H100 datasheet"),
    Peak("H100 PCIe", r"H100.*PCIe", {"fp32": 51, "bf16": 756.5, "fp16": 756.5, "fp8": 1513}, 2.0,
         "NVIDIA H100 datasheet"),
    Peak("H100 SXM", r"H100", {"fp32": 67, "bf16": 989.5, "fp16": 989.5, "fp8": 1979}, 3.35,
         "NVIDIA H100 datasheet"),
    # NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200): SXM FP32 67 TF,
    # BF16/FP16 1,979 TF*, FP8 3,958 TF*, 4.8 TB/s; NVL FP32 60, BF16 1,671*, FP8 3,341*, 4.8 TB/s.
    Peak("H200 NVL", r"H200.*NVL", {"fp32": 60, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5}, 4.8,
         "NVIDIA H200 datasheet"),
    Peak("H200 SXM", r"H200", {"fp32": 67, "bf16": 989.5, "fp16": 989.5, "fp8": 1979}, 4.8,
         "NVIDIA H200 datasheet"),
    # NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100): FP32 19.5 TF,
    # BF16/FP16 312 TF (624* sparse); 40GB PCIe 1,555 GB/s, 80GB PCIe 1,935 GB/s, 80GB SXM 2,039 GB/s.
    Peak("A100 80GB PCIe", r"A100.*80GB.*PCI", {"fp32": 19.5, "bf16": 312, "fp16": 312}, 1.935,
         "NVIDIA A100 datasheet"),
    Peak("A100 80GB SXM", r"A100.*SXM.*80GB", {"fp32": 19.5, "bf16": 312, "fp16": 312}, 2.039,
         "NVIDIA A100 datasheet"),
    Peak("A100 40GB", r"A100", {"fp32": 19.5, "bf16": 312, "fp16": 312}, 1.555, "NVIDIA A100 datasheet"),
    # NVIDIA L40S datasheet: FP32 91.6 TF, BF16/FP16 362.05 TF (733* sparse), FP8 733 TF (1,466*), 864 GB/s.
    Peak("L40S", r"L40S", {"fp32": 91.6, "bf16": 362.05, "fp16": 362.05, "fp8": 733}, 0.864,
         "NVIDIA L40S datasheet"),
    # NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3 TF, BF16/FP16 242 TF*, FP8 485 TF*, 300 GB/s.
    Peak("L4", r"\bL4\b", {"fp32": 30.3, "bf16": 121, "fp16": 121, "fp8": 242.5}, 0.3, "NVIDIA L4 datasheet"),
    # NVIDIA A10 Tensor Core GPU datasheet: FP32 31.2 TF, BF16/FP16 125 TF (250* sparse), 600 GB/s.
    Peak("A10", r"\bA10\b", {"fp32": 31.2, "bf16": 125, "fp16": 125}, 0.6, "NVIDIA A10 datasheet"),
    # A10G (AWS G5, Hugging Face's "a10g" Spaces): NVIDIA publishes no datasheet; the figures are those
    # tabulated by Baseten, "NVIDIA A10 vs A10G for ML model inference" (FP32 35 TF, FP16/BF16 tensor
    # 70 TF, 600 GB/s: more CUDA-core and less tensor throughput than the A10).
    Peak("A10G", r"A10G", {"fp32": 35, "bf16": 70, "fp16": 70}, 0.6, "Baseten, A10 vs A10G (no NVIDIA datasheet)"),
    # NVIDIA T4 datasheet: FP32 8.1 TF, mixed-precision FP16 65 TF (no bf16 on Turing), 320 GB/s.
    Peak("T4", r"\bT4\b", {"fp32": 8.1, "fp16": 65}, 0.32, "NVIDIA T4 datasheet"),
    # AMD Instinct MI300X datasheet (amd.com): FP32 matrix 163.4 TF, BF16/FP16 1,307.4 TF,
    # FP8 2,614.9 TF (dense), 5.3 TB/s.
    Peak("MI300X", r"MI300X", {"fp32": 163.4, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9}, 5.3,
         "AMD Instinct MI300X datasheet"),
)
PEAK_NAMES = tuple(p.name for p in PEAKS)


def peak_for(name: str) -> Peak | None:
    """The table's entry for a device name as ``torch.cuda.get_device_name`` spells it; ``None`` when
    the device is not in the table, or is a MIG slice (a fraction of a GPU: its share of the peak is not
    published).

    >>> peak_for("NVIDIA H100 80GB HBM3").name, peak_for("NVIDIA A100-SXM4-80GB").name, peak_for("NVIDIA A10G").name
    ('H100 SXM', 'A100 80GB SXM', 'A10G')
    >>> peak_for("NVIDIA H200 MIG 3g.71gb") is None, peak_for("cpu") is None
    (True, True)
    """
    if "MIG" in name:
        return None
    return next((p for p in PEAKS if re.search(p.pattern, name)), None)


def peak_by_name(name: str) -> Peak:
    """The table's entry called ``name`` (for the on-paper estimate's GPU choice).

    >>> peak_by_name("H100 SXM").tflops["bf16"]
    989.5
    """
    choice("compute_gpu", name, PEAK_NAMES)
    return next(p for p in PEAKS if p.name == name)
