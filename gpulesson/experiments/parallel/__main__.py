"""``python -m gpulesson.experiments.parallel``: see :mod:`gpulesson.experiments.parallel.command`."""

from gpulesson.experiments.parallel.command import main

if __name__ == "__main__":
    raise SystemExit(main())
