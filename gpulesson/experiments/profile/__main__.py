"""The profile's command, as the registry gives a declared experiment (while the package keeps
``records``, which a declared one does not)."""
from functools import partial

from gpulesson.experiments import registry

COMMAND = registry.Declared("gpulesson.experiments.profile").COMMAND
_parser = COMMAND.parser
main = partial(registry.run, "gpulesson.experiments.profile")

if __name__ == "__main__":
    raise SystemExit(main())
