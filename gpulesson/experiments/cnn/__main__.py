"""The command line the package declares, kept as a file while tests/test_nothing_overwritten.py
reads ``run_devices`` here (gpulesson.experiments.registry gives a declared package this module)."""

from functools import partial

from gpulesson.experiments import registry
from gpulesson.experiments.cnn import COMMAND
from gpulesson.experiments.cnn.measure import train as run_devices  # noqa: F401

_parser = COMMAND.parser
main = partial(registry.run, "gpulesson.experiments.cnn")

if __name__ == "__main__":
    raise SystemExit(main())
