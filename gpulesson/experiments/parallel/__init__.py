"""Data-parallel training of the lesson's CNN, and what the gradient exchange costs.

Here the command line and a ring all-reduce's cost (pure Python); the engine is :mod:`.training`.
"""

from dataclasses import dataclass

from gpulesson.experiments import cli, train_job
from gpulesson.experiments.parallel.training import (  # noqa: F401 (the episode's names)
    build_parallel_cnn,
    global_batch_size,
    local_weights,
    process_slice,
    replica_copies,
    replicas_in_sync,
    run_training,
    scaled_learning_rate,
    use_jax,
    whole,
)

LESSON_CNN_PARAMETERS = 787_530  # build_cnn().count_params()
RESNET50_PARAMETERS = 25_636_712  # keras.applications.ResNet50(weights=None)

# Published nominal bandwidths in ONE direction (what a ring all-reduce's step waits for), GB/s:
# the links of one H200 SXM node (the card of the lesson's reference run), two networks between nodes.
INTERCONNECTS = {
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

# A ring all-reduce's latency in NCCL's cost model (ring algorithm, Simple protocol), microseconds:
# a base per all-reduce, and one per step of the ring, 2 (N - 1) steps over N GPUs.
ALLREDUCE_BASE_US = 8.4
STEP_LATENCY_US = {
    "10 Gb/s Ethernet": 14.0,  # NCCL's "network" row: the same for every network
    "InfiniBand NDR (400 Gb/s)": 14.0,
    "PCIe Gen5 x16 (H200)": 5.7,
    "NVLink 4 (H200 SXM)": 3.4,
}
LATENCY_SOURCE = ("NCCL's tuning model (NVIDIA/nccl, src/graph/tuning.cc, commit b647562: "
                  "baseLat and hwLat, ring algorithm, Simple protocol): 8.4 µs per all-reduce, "
                  "and per step of the ring 3.4 µs over NVLink, 5.7 µs over PCIe, 14 µs over a network")

RESNET50_MULTIPLY_ADDS = 3.8e9  # for a 224 x 224 image, 2 operations each
RESNET50_SOURCE = ("He et al., Deep Residual Learning for Image Recognition (CVPR 2016), "
                   "Table 1: 3.8 × 10⁹ multiply-adds for a 224 × 224 image")
TRAINING_PASSES = 3  # forward + the two products of the backward pass, as in episode 9


def positive(**values) -> None:
    """ValueError unless every value is > 0 (the message names it)."""
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be > 0, not {value!r}")


def resnet50_step_ms(batch_size: int, tflops: float) -> float:
    """Milliseconds of one ResNet-50 training step at ``tflops`` (a lower bound)."""
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
    """Bytes that reach one parameter server per step from N GPUs: ``N * B``."""
    ring_allreduce_bytes(n_parameters, n_gpus, bytes_per_parameter)  # the same checks
    return n_gpus * n_parameters * bytes_per_parameter


def allreduce_seconds(n_parameters: int, n_gpus: int, bandwidth_gb_s: float,
                      bytes_per_parameter: int = 4) -> float:
    """Seconds one step's all-reduce spends on its bytes at the nominal bandwidth, not
    overlapped with the backward pass."""
    positive(bandwidth_gb_s=bandwidth_gb_s)
    return ring_allreduce_bytes(n_parameters, n_gpus, bytes_per_parameter) / (bandwidth_gb_s * 1e9)


def link_latency_seconds(n_gpus: int, link: str) -> float:
    """NCCL's latency of an all-reduce over ``link``: none on one GPU."""
    if link not in STEP_LATENCY_US:
        raise ValueError(f"unknown link {link!r}: one of {', '.join(STEP_LATENCY_US)}")
    return 0.0 if n_gpus == 1 else (ALLREDUCE_BASE_US + 2 * (n_gpus - 1) * STEP_LATENCY_US[link]) / 1e6


def link_allreduce_seconds(n_parameters: int, n_gpus: int, link: str) -> float:
    """An all-reduce over a named link: NCCL's latency and the bytes over its bandwidth."""
    return link_latency_seconds(n_gpus, link) + allreduce_seconds(n_parameters, n_gpus, INTERCONNECTS[link])


def scaling_efficiency(compute_seconds: float, communication_seconds: float) -> float:
    """Fraction of the ideal speed-up reached, ``compute / (compute + communication)``."""
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
    GB/s) and GPU count."""
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


# The cost table's columns: header, the row's field, its format, whether left-aligned.
COST_COLUMNS = (("model", "model", "", True), ("interconnect", "interconnect", "", True),
                ("GPUs", "n_gpus", "", False), ("MB/GPU", "megabytes_per_gpu", ".1f", False),
                ("comm ms", "communication_ms", ".2f", False), ("bound", "bound", "", True),
                ("compute ms", "compute_ms", ".1f", False),
                ("efficiency", "efficiency", ".0%", False), ("speed-up", "speedup", ".2f", False))


def format_cost_table(rows: list[CostRow]) -> str:
    """The rows as plain text, each column as wide as its widest entry (about 80 characters)."""
    cells = [[name for name, *_ in COST_COLUMNS]]
    cells += [[format(getattr(r, field), spec) for _, field, spec, _ in COST_COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COST_COLUMNS))]
    lines = [" ".join(v.ljust(w) if left else v.rjust(w)
                      for v, w, (*_, left) in zip(row, widths, COST_COLUMNS, strict=True)).rstrip()
             for row in cells]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


COMMAND = cli.Command(
    "parallel", __doc__,
    subcommands={
        "train": ("train the lesson's CNN data-parallel (JAX backend)", (
            train_job.per_replica_batch("device"),
            cli.option("--steps", type=cli.positive_int, default=20,
                       help="training steps (global batches) (default 20)"),
            train_job.LEARNING_RATE, train_job.BASE_BATCH,
            cli.option("--data", default="synthetic",
                       help="'synthetic' (made in memory) or a lesson HDF5 file"),
            cli.option("--seed", type=int, default=0),
            cli.option("--cpu-devices", type=cli.positive_int,
                       help="use this many logical CPU devices (to try it without GPUs)"),
            cli.group("several processes",
                      cli.option("--slurm", action="store_true",
                                 help="join the other tasks of this Slurm job step (run under srun)"),
                      cli.option("--coordinator", help="host:port of process 0, outside Slurm"),
                      cli.option("--num-processes", type=cli.positive_int),
                      cli.option("--process-id", type=int),
                      cli.option("--save-weights", help="write the final weights here (.npz); '{process}' in "
                                 "the path becomes the process number, so that every task writes its own")))),
        "cost": ("print the all-reduce cost model", (
            cli.option("--compute-ms", type=cli.positive_float, required=True,
                       help="one step's compute time on one GPU for the lesson's CNN (ms); measure "
                            "it, e.g. with the CPU-vs-GPU episode"),
            cli.option("--large-compute-ms", type=cli.positive_float,
                       help="the same for the ResNet-50-sized model (default: the same as "
                            "--compute-ms, which isolates the effect of the model's size)"),
            cli.option("--gpus", type=cli.positive_int, nargs="+", default=[2, 4, 8])))})


def main(argv=None) -> int:
    args = COMMAND.parser().parse_args(argv)
    if args.command == "cost":
        large = args.large_compute_ms or args.compute_ms
        print("Ring all-reduce of float32 gradients at nominal bandwidth, not overlapped with "
              "the computation; the compute times per step are inputs"
              f"{'' if args.large_compute_ms else ' (the same for both models)'}.")
        print(format_cost_table(cost_table({"lesson CNN": (LESSON_CNN_PARAMETERS, args.compute_ms),
                                            "ResNet-50 size": (RESNET50_PARAMETERS, large)},
                                           gpus=args.gpus)))
        return 0
    manual = (args.coordinator, args.num_processes, args.process_id)
    if args.slurm and any(v is not None for v in manual):
        raise SystemExit("--slurm takes the processes from Slurm: leave out --coordinator, "
                         "--num-processes and --process-id")
    if not args.slurm and any(v is not None for v in manual) and None in manual:
        raise SystemExit("several processes need --coordinator, --num-processes and --process-id together")
    from gpulesson.errors import DataFileError

    try:
        keras = use_jax(args.cpu_devices)
        if args.slurm or args.coordinator:
            # Join the other processes (under srun JAX reads Slurm's variables), seeded first so
            # that every process creates the same initial weights.
            keras.utils.set_random_seed(args.seed)
            keras.distribution.initialize(args.coordinator, args.num_processes, args.process_id)
        model = run_training(per_replica_batch=args.per_replica_batch, steps=args.steps,
                             learning_rate=args.learning_rate, base_batch=args.base_batch,
                             data=args.data, seed=args.seed)
    except (DataFileError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from exc
    import jax
    import numpy as np

    synced = replicas_in_sync(model)
    print(f"process {jax.process_index()}: the weights on its {len(jax.local_devices())} "
          f"device(s) are {'identical' if synced else 'DIFFERENT'}")
    if args.save_weights:
        np.savez(args.save_weights.replace("{process}", str(jax.process_index())), *local_weights(model))
    return 0 if synced else 1
