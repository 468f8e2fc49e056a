"""Draw the contention figure from the results file:

    python fig/05-cpu-vs-gpu/contention.py   ->  contention.svg

The run is the newest one in results/contention.jsonl (see
gpulesson.experiments.contention.reference_run); record one on an otherwise quiet machine with
``python -m gpulesson.experiments.contention``. Without a run, the script says so and draws
nothing.
"""

from pathlib import Path

from gpulesson.experiments import contention
from gpulesson.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
FIGURES = ("contention.svg",)
draw = drawer(contention, FIGURES, HERE)


if __name__ == "__main__":
    main(draw)
