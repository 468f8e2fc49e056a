"""Draw the contention figures from the results file:

    python fig/05-cpu-vs-gpu/contention.py   ->  contention.svg, contention-watched.svg

Each is drawn from the newest run of its part in results/contention.jsonl (see
gpulesson.experiments.contention.reference_run); record them on an otherwise quiet machine with
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
FIGURES = ("contention.svg", "contention-watched.svg")
_copies = drawer(contention, FIGURES[:1], HERE)
_watched = drawer(contention, FIGURES[1:], HERE,
                  run=lambda results: contention.reference_run(results, "watched"),
                  figures=contention.watched_figures,
                  command="python -m gpulesson.experiments.contention --parts watched")


def draw(results=contention.RESULTS_FILE, folder=HERE) -> list[Path]:
    return _copies(results, folder) + _watched(results, folder)


if __name__ == "__main__":
    main(draw)
