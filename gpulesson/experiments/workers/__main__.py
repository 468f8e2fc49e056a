"""Grain's worker processes, with and without per-item work: the command line.

    python -m gpulesson.experiments.workers                  # JAX and PyTorch, CPU (then GPU)
    python -m gpulesson.experiments.workers --backends jax --devices gpu --workers 0 2 8

One process per backend, all appending to one run (PyTorch's with :data:`SETTINGS`).
"""

from __future__ import annotations

from gpulesson.experiments import cli
from gpulesson.experiments.ceiling.measure import SIZES  # the ceiling's epoch: the same model
from gpulesson.experiments.workers.page import BACKENDS, EXPERIMENT, RESULTS_FILE, WORK, condition
from gpulesson.machine.devices import installed_backends

# PyTorch's OpenMP threads spinning beside Grain's stalled some epochs for seconds on 2 cores.
SETTINGS = {"torch": {"OMP_WAIT_POLICY": "PASSIVE"}}

COMMAND = cli.Command(
    "workers", __doc__,
    cli.backends(BACKENDS, "Keras backends, one process each (default: JAX and PyTorch, those "
                           "installed)"),
    cli.devices("devices the model trains on (default: cpu, then gpu if the backend sees one)"),
    cli.option("--works", nargs="+", choices=list(WORK), default=None,
               help="what is done to each block (default: all)"),
    cli.option("--workers", nargs="+", type=int, default=None,
               help="numbers of worker processes (default: 0, 1, 2, 4, ... up to the cores "
                    "available, at most 8)"),
    cli.sizes(SIZES), cli.out(RESULTS_FILE), cli.RUN_ID, at_least_one=("n_images", "batch_size"))
_parser = COMMAND.parser


def _measure_here(args, *, quick: bool, run_id: str, done: set) -> list[dict]:
    from gpulesson.experiments.workers.measure import measure

    return measure(devices=cli.devices_here(args.devices), works=args.works or list(WORK),
                   workers=args.workers,
                   **cli.rule_arguments(args, SIZES, quick=quick, run_id=run_id, done=done))


def main(argv=None) -> int:
    parser, args = COMMAND.parse(argv)
    if any(n < 0 for n in args.workers or ()):
        parser.error("--workers takes 0 (none) or more worker processes")
    return cli.per_backend_command(
        parser, args, module=COMMAND.module, experiment=EXPERIMENT,
        condition=condition, installed=[b for b in installed_backends() if b in BACKENDS],
        measure_here=_measure_here, passed=("devices", "works", "workers", "n_images", "batch_size"),
        settings=SETTINGS)


if __name__ == "__main__":
    raise SystemExit(main())
