"""What the gradient exchange of data-parallel training costs: a ring all-reduce model (pure Python)."""

from __future__ import annotations

from dataclasses import dataclass

LESSON_CNN_PARAMETERS = 787_530  # build_cnn().count_params()
RESNET50_PARAMETERS = 25_636_712  # keras.applications.ResNet50(weights=None)

INTERCONNECTS = {
    # Published nominal bandwidths in ONE direction, GB/s (10**9 bytes): in a ring all-reduce
    # every GPU sends and receives at once, so one direction is what a step waits for. What an
    # all-reduce reaches is lower. The links of one H200 SXM node (the card of the lesson's reference run)
    # and two networks between nodes; INTERCONNECT_SOURCES says where each figure comes from.
    "10 Gb/s Ethernet": 1.25,
    "InfiniBand NDR (400 Gb/s)": 50.0,
    "PCIe Gen5 x16 (H200)": 64.0,
    "NVLink 4 (H200 SXM)": 450.0,
}
INTERCONNECT_SOURCES = {
    "10 Gb/s Ethernet": "IEEE 802.3ae: 10 Gb/s = 1.25 GB/s in each direction",
    "InfiniBand NDR (400 Gb/s)": "InfiniBand Trade Association, NDR: 400 Gb/s per port "
                                 "(4 lanes) = 50 GB/s in each direction",
    "PCIe Gen5 x16 (H200)": "NVIDIA H200 specifications (www.nvidia.com/en-us/data-center/"
                            "h200/): PCIe Gen5 128 GB/s, both directions together",
    "NVLink 4 (H200 SXM)": "NVIDIA H200 specifications (www.nvidia.com/en-us/data-center/"
                           "h200/): NVLink 900 GB/s per GPU, both directions together",
}

# The latency of a ring all-reduce as NCCL's own cost model has it (the model NCCL uses to pick
# its algorithm): a base latency per all-reduce, and one per step of the ring, of which an
# all-reduce over N GPUs takes 2 (N - 1). Ring algorithm, Simple protocol (NCCL's protocol for
# large messages), microseconds.
ALLREDUCE_BASE_US = 8.4
STEP_LATENCY_US = {
    "10 Gb/s Ethernet": 14.0,  # NCCL's "network" row: the same for every network
    "InfiniBand NDR (400 Gb/s)": 14.0,
    "PCIe Gen5 x16 (H200)": 5.7,
    "NVLink 4 (H200 SXM)": 3.4,
}
LATENCY_SOURCE = ("NCCL's tuning model (NVIDIA/nccl, src/graph/tuning.cc, commit b647562: "
                  "baseLat and hwLat, ring algorithm, Simple protocol): 8.4 µs per all-reduce, "
                  "and per step of the ring 3.4 µs over NVLink, 5.7 µs over PCIe, 14 µs over "
                  "a network")

# ResNet-50's arithmetic, published: He et al., "Deep Residual Learning for Image Recognition"
# (CVPR 2016), Table 1 gives 3.8 x 10^9 FLOPs for the 50-layer network on a 224 x 224 image,
# counted as multiply-adds (2 operations each).
RESNET50_MULTIPLY_ADDS = 3.8e9
RESNET50_SOURCE = ("He et al., Deep Residual Learning for Image Recognition (CVPR 2016), "
                   "Table 1: 3.8 × 10⁹ multiply-adds for a 224 × 224 image")
TRAINING_PASSES = 3  # forward + the two products of the backward pass, as in episode 9


def whole(**values) -> None:
    """ValueError unless every value is a whole number >= 1 (the message names it)."""
    for name, value in values.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")


def positive(**values) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be > 0, not {value!r}")


def resnet50_step_ms(batch_size: int, tflops: float) -> float:
    """Milliseconds of one ResNet-50 training step at ``tflops``: a lower bound at a large
    matrix product's rate, as ResNet-50's layers compute slower than that."""
    whole(batch_size=batch_size)
    positive(tflops=tflops)
    return batch_size * TRAINING_PASSES * 2 * RESNET50_MULTIPLY_ADDS / (tflops * 1e12) * 1e3


def ring_allreduce_bytes(n_parameters: int, n_gpus: int, bytes_per_parameter: int = 4) -> float:
    """Bytes each GPU sends (and receives) in a ring all-reduce of all the gradients:
    ``2 (N-1)/N * B``, N-1 steps to sum the pieces and N-1 to share the sums, B/N each."""
    whole(n_parameters=n_parameters, n_gpus=n_gpus)
    positive(bytes_per_parameter=bytes_per_parameter)
    return 2 * (n_gpus - 1) / n_gpus * n_parameters * bytes_per_parameter


def parameter_server_bytes(n_parameters: int, n_gpus: int, bytes_per_parameter: int = 4) -> float:
    """Bytes that reach one parameter server per step from N GPUs: ``N * B``, growing with the
    GPUs where a ring all-reduce stays below ``2 B`` per GPU."""
    ring_allreduce_bytes(n_parameters, n_gpus, bytes_per_parameter)  # the same checks
    return n_gpus * n_parameters * bytes_per_parameter


def allreduce_seconds(n_parameters: int, n_gpus: int, bandwidth_gb_s: float,
                      bytes_per_parameter: int = 4) -> float:
    """Seconds one step's all-reduce spends on its bytes: per GPU, over the bandwidth.
    Back-of-the-envelope: the nominal bandwidth reached, and no overlap with the backward pass,
    which would hide part of it."""
    positive(bandwidth_gb_s=bandwidth_gb_s)
    return ring_allreduce_bytes(n_parameters, n_gpus, bytes_per_parameter) / (bandwidth_gb_s * 1e9)


def link_latency_seconds(n_gpus: int, link: str) -> float:
    """The latency of an all-reduce over ``link`` (NCCL's), seconds: a base latency and one per
    step of the ring's ``2 (N - 1)``; none on one GPU."""
    if link not in STEP_LATENCY_US:
        raise ValueError(f"unknown link {link!r}: one of {', '.join(STEP_LATENCY_US)}")
    return 0.0 if n_gpus == 1 else (ALLREDUCE_BASE_US
                                    + 2 * (n_gpus - 1) * STEP_LATENCY_US[link]) / 1e6


def link_allreduce_seconds(n_parameters: int, n_gpus: int, link: str) -> float:
    """An all-reduce over a named link: NCCL's latency and the bytes over its bandwidth."""
    return (link_latency_seconds(n_gpus, link)
            + allreduce_seconds(n_parameters, n_gpus, INTERCONNECTS[link]))


def scaling_efficiency(compute_seconds: float, communication_seconds: float) -> float:
    """Fraction of the ideal speed-up reached, ``compute / (compute + communication)``: the
    per-replica batch stays fixed, so N GPUs speed up ``N * efficiency`` times."""
    positive(compute_seconds=compute_seconds)
    if communication_seconds < 0:
        raise ValueError(f"communication_seconds must be >= 0, not {communication_seconds!r}")
    return compute_seconds / (compute_seconds + communication_seconds)


@dataclass(frozen=True)
class CostRow:
    model: str
    interconnect: str
    n_gpus: int
    megabytes_per_gpu: float
    communication_ms: float  # latency and bandwidth together
    latency_ms: float
    compute_ms: float
    efficiency: float

    @property
    def bound(self) -> str:
        """What the all-reduce waits for most: "latency" or "bandwidth"."""
        return "latency" if 2 * self.latency_ms > self.communication_ms else "bandwidth"

    @property
    def speedup(self) -> float:
        return self.n_gpus * self.efficiency


def cost_table(models: dict[str, tuple[int, float]], interconnects: dict[str, float] | None = None,
               gpus=(2, 4, 8)) -> list[CostRow]:
    """One row per model (name: ``(parameters, compute ms per step on one GPU)``), link (name:
    GB/s; NCCL's latencies where it knows the link) and GPU count."""
    rows = []
    for name, (n_parameters, compute_ms) in models.items():
        for link, bandwidth in (INTERCONNECTS if interconnects is None else interconnects).items():
            for n in gpus:
                latency = link_latency_seconds(n, link) if link in STEP_LATENCY_US else 0.0
                seconds = latency + allreduce_seconds(n_parameters, n, bandwidth)
                rows.append(CostRow(name, link, n, ring_allreduce_bytes(n_parameters, n) / 1e6,
                                    seconds * 1e3, latency * 1e3, compute_ms,
                                    scaling_efficiency(compute_ms / 1e3, seconds)))
    return rows


def format_cost_table(rows: list[CostRow]) -> str:
    """The rows as plain text, each column as wide as its widest entry, so that the table fits
    a notebook's or a web page's output box (about 80 characters)."""
    columns = [  # header, how a row shows it, left-aligned
        ("model", lambda r: r.model, True),
        ("interconnect", lambda r: r.interconnect, True),
        ("GPUs", lambda r: str(r.n_gpus), False),
        ("MB/GPU", lambda r: f"{r.megabytes_per_gpu:.1f}", False),
        ("comm ms", lambda r: f"{r.communication_ms:.2f}", False),
        ("bound", lambda r: r.bound, True),
        ("compute ms", lambda r: f"{r.compute_ms:.1f}", False),
        ("efficiency", lambda r: f"{r.efficiency:.0%}", False),
        ("speed-up", lambda r: f"{r.speedup:.2f}", False),
    ]
    cells = [[show(r) for _, show, _ in columns] for r in rows]
    widths = [max([len(name)] + [len(row[i]) for row in cells]) for i, (name, _, _) in enumerate(columns)]

    def line(values):
        return " ".join(v.ljust(w) if left else v.rjust(w)
                        for v, w, (_, _, left) in zip(values, widths, columns, strict=True)).rstrip()

    header = line([name for name, _, _ in columns])
    return "\n".join([header, "-" * len(header)] + [line(row) for row in cells])


def print_cost_table(models, interconnects=None, gpus=(2, 4, 8)):
    print(format_cost_table(cost_table(models, interconnects, gpus)))
