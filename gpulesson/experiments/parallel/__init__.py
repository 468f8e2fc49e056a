"""Data-parallel training of the lesson's CNN, and what the gradient exchange costs.

The command line lives here; the engine is :mod:`.training`, the all-reduce model :mod:`.cost`.
"""

from __future__ import annotations

import numpy as np

from gpulesson.experiments import cli
from gpulesson.experiments.parallel.cost import (  # noqa: F401 (the episode's names)
    ALLREDUCE_BASE_US,
    INTERCONNECT_SOURCES,
    INTERCONNECTS,
    LATENCY_SOURCE,
    LESSON_CNN_PARAMETERS,
    RESNET50_PARAMETERS,
    RESNET50_SOURCE,
    STEP_LATENCY_US,
    allreduce_seconds,
    cost_table,
    format_cost_table,
    link_allreduce_seconds,
    link_latency_seconds,
    parameter_server_bytes,
    print_cost_table,
    resnet50_step_ms,
    ring_allreduce_bytes,
    scaling_efficiency,
)
from gpulesson.experiments.parallel.training import (  # noqa: F401
    build_parallel_cnn,
    global_batch_size,
    local_weights,
    process_slice,
    replica_copies,
    replicas_in_sync,
    run_training,
    scaled_learning_rate,
    start_processes,
    use_jax,
)

COMMAND = cli.Command(
    "parallel", __doc__,
    subcommands={
        "train": ("train the lesson's CNN data-parallel (JAX backend)", (
            cli.per_replica_batch("device"),
            cli.option("--steps", type=cli.positive_int, default=20,
                       help="training steps (global batches) (default 20)"),
            cli.LEARNING_RATE, cli.BASE_BATCH,
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
                      cli.option("--save-weights",
                                 help="write the final weights here (.npz); '{process}' in the path "
                                      "becomes the process number, so that every task writes its own")))),
        "cost": ("print the all-reduce cost model", (
            cli.option("--compute-ms", type=cli.positive_float, required=True,
                       help="one step's compute time on one GPU for the lesson's CNN (ms); measure "
                            "it, e.g. with the CPU-vs-GPU episode"),
            cli.option("--large-compute-ms", type=cli.positive_float,
                       help="the same for the ResNet-50-sized model (default: the same as "
                            "--compute-ms, which isolates the effect of the model's size)"),
            cli.option("--gpus", type=cli.positive_int, nargs="+", default=[2, 4, 8])))})
_parser = COMMAND.parser


def _train(args) -> int:
    manual = (args.coordinator, args.num_processes, args.process_id)
    if args.slurm and any(v is not None for v in manual):
        raise SystemExit("--slurm takes the processes from Slurm: leave out --coordinator, "
                         "--num-processes and --process-id")
    if not args.slurm and any(v is not None for v in manual) and None in manual:
        raise SystemExit("several processes need --coordinator, --num-processes and "
                         "--process-id together")
    use_jax(args.cpu_devices)
    if args.slurm or args.coordinator:
        start_processes(args.coordinator, args.num_processes, args.process_id, args.seed)
    model = run_training(per_replica_batch=args.per_replica_batch, steps=args.steps,
                         learning_rate=args.learning_rate, base_batch=args.base_batch,
                         data=args.data, seed=args.seed)
    synced = replicas_in_sync(model)
    import jax

    print(f"process {jax.process_index()}: the weights on its {len(jax.local_devices())} "
          f"device(s) are {'identical' if synced else 'DIFFERENT'}")
    if args.save_weights:
        np.savez(args.save_weights.replace("{process}", str(jax.process_index())),
                 *local_weights(model))
    return 0 if synced else 1


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "cost":
        large = args.large_compute_ms or args.compute_ms
        print("Ring all-reduce of float32 gradients at nominal bandwidth, not overlapped with "
              "the computation; the compute times per step are inputs"
              f"{'' if args.large_compute_ms else ' (the same for both models)'}.")
        print_cost_table({"lesson CNN": (LESSON_CNN_PARAMETERS, args.compute_ms),
                          "ResNet-50 size": (RESNET50_PARAMETERS, large)}, gpus=args.gpus)
        return 0
    from gpulesson.errors import DataFileError

    try:
        return _train(args)
    except (DataFileError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from exc
