"""Draw the contention figure from the results file:

    python fig/05-cpu-vs-gpu/contention.py   ->  contention.svg

It is drawn from the newest run of k copies at once in results/contention.jsonl (see
gpulesson.experiments.contention.reference_run); record one on an otherwise quiet machine with
``python -m gpulesson.experiments.contention``. Without a run, the script says so and draws
nothing.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import contention
from gpulesson.records.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
draw = drawer(contention, ("contention.svg",), HERE)


if __name__ == "__main__":
    main(draw)
