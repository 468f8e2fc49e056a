"""Data-parallel training of the lesson's CNN, and what the gradient exchange costs.

The command line of :mod:`gpulesson.experiments.parallel`: ``train`` runs the engine of
:mod:`~gpulesson.experiments.parallel.training`, ``cost`` prints the table of
:mod:`~gpulesson.experiments.parallel.cost`.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpulesson.experiments.parallel.cost import (
    LESSON_CNN_PARAMETERS,
    RESNET50_PARAMETERS,
    print_cost_table,
)
from gpulesson.experiments.parallel.training import (
    local_weights,
    replicas_in_sync,
    run_training,
    start_processes,
    use_jax,
)


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {value}")
    return value


def _parser():
    parser = argparse.ArgumentParser(prog="python -m gpulesson.experiments.parallel",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train the lesson's CNN data-parallel (JAX backend)")
    train.add_argument("--per-replica-batch", type=_positive_int, default=64,
                       help="images per device and step (default 64)")
    train.add_argument("--steps", type=_positive_int, default=20,
                       help="training steps (global batches) (default 20)")
    train.add_argument("--learning-rate", type=_positive_float, default=0.01,
                       help="SGD learning rate for a global batch of --base-batch (default 0.01)")
    train.add_argument("--base-batch", type=_positive_int, default=64,
                       help="the batch the learning rate is tuned for; the rate is scaled "
                            "linearly to the global batch (default 64)")
    train.add_argument("--data", default="synthetic",
                       help="'synthetic' (made in memory) or a lesson HDF5 file")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--cpu-devices", type=_positive_int,
                       help="use this many logical CPU devices (to try it without GPUs)")
    multi = train.add_argument_group("several processes")
    multi.add_argument("--slurm", action="store_true",
                       help="join the other tasks of this Slurm job step (run under srun)")
    multi.add_argument("--coordinator", help="host:port of process 0, outside Slurm")
    multi.add_argument("--num-processes", type=_positive_int)
    multi.add_argument("--process-id", type=int)
    multi.add_argument("--save-weights",
                       help="write the final weights here (.npz); '{process}' in the path "
                            "becomes the process number, so that every task writes its own")

    cost = sub.add_parser("cost", help="print the all-reduce cost model")
    cost.add_argument("--compute-ms", type=_positive_float, required=True,
                      help="one step's compute time on one GPU for the lesson's CNN (ms); "
                           "measure it, e.g. with the CPU-vs-GPU episode")
    cost.add_argument("--large-compute-ms", type=_positive_float,
                      help="the same for the ResNet-50-sized model (default: the same as "
                           "--compute-ms, which isolates the effect of the model's size)")
    cost.add_argument("--gpus", type=_positive_int, nargs="+", default=[2, 4, 8])
    return parser


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


def _cost(args) -> int:
    large = args.large_compute_ms or args.compute_ms
    print("Ring all-reduce of float32 gradients at nominal bandwidth, not overlapped with "
          "the computation; the compute times per step are inputs"
          f"{'' if args.large_compute_ms else ' (the same for both models)'}.")
    print_cost_table({"lesson CNN": (LESSON_CNN_PARAMETERS, args.compute_ms),
                      "ResNet-50 size": (RESNET50_PARAMETERS, large)}, gpus=args.gpus)
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "cost":
        return _cost(args)
    from gpulesson.errors import DataFileError

    try:
        return _train(args)
    except (DataFileError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from exc

