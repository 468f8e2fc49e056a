"""The ceiling of ``fit`` on each Keras backend: its command line.

    python -m gpulesson.experiments.ceiling                   # every installed backend, CPU then GPU
    python -m gpulesson.experiments.ceiling --backends jax --devices gpu

A Keras process has one backend: the command runs itself once per backend, all appending to one run.
"""

from __future__ import annotations

from gpulesson.experiments import cli
from gpulesson.experiments.ceiling.measure import SIZES
from gpulesson.experiments.ceiling.records import BACKENDS, EXPERIMENT, PIPELINES, RESULTS_FILE, condition
from gpulesson.machine.devices import installed_backends

COMMAND = cli.Command(
    "ceiling", __doc__,
    cli.backends(BACKENDS, "Keras backends, one process each (default: every one installed)"),
    cli.devices("devices (default: cpu, then gpu if the backend sees one)"),
    cli.option("--pipelines", nargs="+", choices=list(PIPELINES), default=None,
               help="ways of feeding fit (default: all that the device has)"),
    cli.sizes(SIZES), cli.out(RESULTS_FILE), cli.RUN_ID, at_least_one=("n_images", "batch_size"))
_parser = COMMAND.parser


def _measure_here(args, *, quick: bool, run_id: str, done: set) -> list[dict]:
    from gpulesson.experiments.ceiling.measure import measure

    return measure(devices=cli.devices_here(args.devices), pipelines=args.pipelines,
                   **cli.rule_arguments(args, SIZES, quick=quick, run_id=run_id, done=done))


def main(argv=None) -> int:
    parser, args = COMMAND.parse(argv)
    return cli.per_backend_command(
        parser, args, module=COMMAND.module, experiment=EXPERIMENT,
        condition=condition, installed=installed_backends(), measure_here=_measure_here,
        passed=("devices", "pipelines", "n_images", "batch_size"))


if __name__ == "__main__":
    raise SystemExit(main())
