"""What the gradient exchange of data-parallel training costs: a ring all-reduce model.

Pure Python: it needs no framework.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- The cost model of the all-reduce ---------------------------------------------------------

LESSON_CNN_PARAMETERS = 787_530
"""Parameters of the lesson's CNN (``build_cnn().count_params()``)."""

RESNET50_PARAMETERS = 25_636_712
"""Parameters of ResNet-50 as ``keras.applications.ResNet50(weights=None)`` builds it."""

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
"""Where each of :data:`INTERCONNECTS`' figures comes from (published, not measured)."""


def ring_allreduce_bytes(n_parameters: int, n_gpus: int, bytes_per_parameter: int = 4) -> float:
    """Bytes each GPU sends (and receives) in a ring all-reduce of all the gradients.

    A ring all-reduce of ``B`` bytes over ``N`` GPUs sends ``2 (N-1)/N * B`` per GPU:
    ``N-1`` steps to sum the pieces (reduce-scatter), ``N-1`` to share the sums
    (all-gather), each step moving ``B/N``. It is 0 on one GPU, and tends to ``2 B``.
    """
    if int(n_parameters) != n_parameters or n_parameters < 1:
        raise ValueError(f"n_parameters must be a whole number >= 1, not {n_parameters!r}")
    if int(n_gpus) != n_gpus or n_gpus < 1:
        raise ValueError(f"n_gpus must be a whole number >= 1, not {n_gpus!r}")
    if bytes_per_parameter <= 0:
        raise ValueError(f"bytes_per_parameter must be > 0, not {bytes_per_parameter!r}")
    return 2 * (n_gpus - 1) / n_gpus * n_parameters * bytes_per_parameter


def parameter_server_bytes(n_parameters: int, n_gpus: int, bytes_per_parameter: int = 4) -> float:
    """Bytes that reach one parameter server per step, from ``N`` GPUs: ``N * B``.

    The older picture of data parallelism: every GPU sends its gradients (``B`` bytes) to one
    server, which averages them and sends the new weights (``B`` bytes) back to every GPU. The
    server's link carries ``N * B`` in each direction, so it grows with the GPUs, where a ring
    all-reduce (:func:`ring_allreduce_bytes`) stays below ``2 B`` per GPU.
    """
    ring_allreduce_bytes(n_parameters, n_gpus, bytes_per_parameter)  # the same checks
    return n_gpus * n_parameters * bytes_per_parameter


def allreduce_seconds(n_parameters: int, n_gpus: int, bandwidth_gb_s: float,
                      bytes_per_parameter: int = 4) -> float:
    """Seconds one step's all-reduce takes: bytes per GPU over the link's bandwidth (GB/s).

    Back-of-the-envelope: no latency per message, no overlap with the computation, the
    nominal bandwidth reached. Real all-reduces are slower; overlapping them with the
    backward pass hides part of them.
    """
    if not bandwidth_gb_s > 0:
        raise ValueError(f"bandwidth_gb_s must be > 0, not {bandwidth_gb_s!r}")
    return ring_allreduce_bytes(n_parameters, n_gpus, bytes_per_parameter) / (bandwidth_gb_s * 1e9)


def scaling_efficiency(compute_seconds: float, communication_seconds: float) -> float:
    """Fraction of the ideal speed-up reached: ``compute / (compute + communication)``.

    ``compute_seconds`` is one step's forward and backward pass on one GPU's batch (the same
    on every GPU: the per-replica batch stays fixed); the speed-up on N GPUs is then
    ``N * efficiency``.
    """
    if not compute_seconds > 0:
        raise ValueError(f"compute_seconds must be > 0, not {compute_seconds!r}")
    if communication_seconds < 0:
        raise ValueError(f"communication_seconds must be >= 0, not {communication_seconds!r}")
    return compute_seconds / (compute_seconds + communication_seconds)


@dataclass(frozen=True)
class CostRow:
    model: str
    n_parameters: int
    interconnect: str
    bandwidth_gb_s: float
    n_gpus: int
    megabytes_per_gpu: float
    communication_ms: float
    compute_ms: float
    efficiency: float

    @property
    def speedup(self) -> float:
        return self.n_gpus * self.efficiency


def cost_table(models: dict[str, tuple[int, float]], interconnects: dict[str, float] | None = None,
               gpus=(2, 4, 8), bytes_per_parameter: int = 4) -> list[CostRow]:
    """One row per model, interconnect and GPU count.

    ``models`` maps a name to ``(parameters, compute milliseconds per step on one GPU)``;
    ``interconnects`` a name to a bandwidth in GB/s (default :data:`INTERCONNECTS`).
    """
    interconnects = INTERCONNECTS if interconnects is None else interconnects
    rows = []
    for name, (n_parameters, compute_ms) in models.items():
        for link, bandwidth in interconnects.items():
            for n in gpus:
                seconds = allreduce_seconds(n_parameters, n, bandwidth, bytes_per_parameter)
                rows.append(CostRow(
                    name, n_parameters, link, bandwidth, n,
                    ring_allreduce_bytes(n_parameters, n, bytes_per_parameter) / 1e6,
                    seconds * 1e3, compute_ms,
                    scaling_efficiency(compute_ms / 1e3, seconds)))
    return rows


def format_cost_table(rows: list[CostRow]) -> str:
    """The rows as a plain-text table, each column as wide as its widest entry, so that the
    table fits where it is printed (a notebook, a web page's output box: about 80 characters
    with the lesson's models and interconnects)."""
    columns = [  # header, how a row shows it, left-aligned
        ("model", lambda r: r.model, True),
        ("parameters", lambda r: f"{r.n_parameters:,}", False),
        ("interconnect", lambda r: r.interconnect, True),
        ("GPUs", lambda r: str(r.n_gpus), False),
        ("MB/GPU", lambda r: f"{r.megabytes_per_gpu:.1f}", False),
        ("comm ms", lambda r: f"{r.communication_ms:.2f}", False),
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


def print_cost_table(models, interconnects=None, gpus=(2, 4, 8), bytes_per_parameter=4):
    """Print :func:`cost_table` as a table (float32: 4 bytes per parameter)."""
    print(format_cost_table(cost_table(models, interconnects, gpus, bytes_per_parameter)))
