"""Draw the feeding benchmark's figures from its results file:

    python fig/09-feeding-the-gpu/figures.py [FOLDER] [RESULTS]
        ->  FOLDER/feeding-pipelines.svg, FOLDER/feeding-ceiling.svg, FOLDER/feeding-workers.svg

FOLDER defaults to fig/09-feeding-the-gpu/, RESULTS to results/feeding.jsonl (the ceiling's and
Grain's workers' results files beside it); each device from its experiment's reference run.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import ceiling, feeding, workers
from gpulesson.records.figure_scripts import drawer, main

FOLDER = Path(__file__).resolve().parent
FIGURES = ("feeding-pipelines.svg",)
_draw = drawer(feeding, FIGURES, FOLDER)
# Drawn from their own results files, beside the feeding benchmark's, when they are there.
BESIDE = [(ceiling, drawer(ceiling, (ceiling.FILE,), FOLDER)),
          (workers, drawer(workers, (workers.FILE,), FOLDER))]


def draw(folder=FOLDER, results=feeding.RESULTS_FILE) -> list[Path]:
    # The folder comes first here: the script is also run to draw into another folder.
    written = _draw(results, folder)
    for experiment, draw_beside in BESIDE:
        beside = Path(results).with_name(experiment.RESULTS_FILE.name)
        if beside.is_file():
            written += draw_beside(beside, folder)
    return written


if __name__ == "__main__":
    main(draw, 2)
