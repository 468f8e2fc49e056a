"""Published (data sheet, dense) peak rates of the GPUs the lesson was measured on, by model name:
``fp32``, ``tf32``, ``bf16``, ``fp16`` in TFLOP/s, ``memory_tb_s`` in TB/s."""

# Dense peaks (TFLOP/s) and bandwidth (TB/s), from the data sheets in SOURCES.
_TABLES: dict[str, dict[str, float]] = {
    "H200": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "memory_tb_s": 4.8},
    "H100 SXM": {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "memory_tb_s": 3.35},
    "H100 PCIe": {"fp32": 51.0, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0, "memory_tb_s": 2.0},
    "A100": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "memory_tb_s": 2.039},
}

SOURCES = {
    "H200": ("NVIDIA H200 Tensor Core GPU data sheet (H200 SXM column, dense; nvidia-smi names "
             "that board \"NVIDIA H200\" and the PCIe board \"NVIDIA H200 NVL\")"),
    "H100 SXM": "NVIDIA H100 Tensor Core GPU data sheet (H100 SXM column, dense)",
    "H100 PCIe": "NVIDIA H100 Tensor Core GPU data sheet (H100 PCIe column, dense)",
    "A100": "NVIDIA A100 Tensor Core GPU data sheet (A100 80GB SXM column, dense)",
}

# How nvidia-smi and the frameworks name the cards (the record's "gpu" field), most specific first.
_NAMES = (
    ("H200", "H200"),
    ("H100 PCIe", "H100 PCIE"),
    ("H100 SXM", "H100 80GB HBM3"),
    ("H100 SXM", "H100 SXM"),
    ("A100", "A100"),
)

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")


def card(gpu_name: str | None) -> str | None:
    """The table's name for a recorded GPU model (``"NVIDIA H200"`` → ``"H200"``), or None if unknown."""
    if not gpu_name:
        return None
    upper = gpu_name.upper()
    if " NVL" in upper:  # the PCIe boards (H100 NVL, H200 NVL) have lower peaks: no table here
        return None
    return next((key for key, part in _NAMES if part in upper), None)


def float32_key(record: dict) -> str:
    """``"tf32"`` where the record's float32 convolutions (most of a CNN) ran as TF32, else ``"fp32"``."""
    mode = (record.get("float32_precision") or {}).get("convolution")
    return "tf32" if mode == "tf32" else "fp32"


def peaks_for(gpu_name: str | None) -> dict[str, float] | None:
    """The published peaks of a recorded GPU model, or None where the lesson has no table for it."""
    key = card(gpu_name)
    return dict(_TABLES[key]) if key else None


def share_of_peak(tflops: float, gpu_name: str | None, precision: str) -> float | None:
    """A measured rate as a share of the card's published peak for that precision (None if unknown)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    peaks = peaks_for(gpu_name)
    return tflops / peaks[precision] if peaks else None
