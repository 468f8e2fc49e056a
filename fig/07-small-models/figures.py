"""Draw episode 7's figures, each from the reference run of its part in
results/mlp-cpu-vs-gpu.jsonl (a script, not the declared FIGURES: the two parts have two runs):

    python fig/07-small-models/figures.py   ->  comparison-epoch-times.svg, sweep.svg
"""

import sys
from functools import partial
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import small_models as sm
from gpulesson.records.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
DRAWERS = [drawer(sm, [name], HERE, run=partial(sm.reference_run, part),
                  figures=lambda records, figure=figure: [figure(records)],
                  command=f"python -m {sm.__name__} --parts {part}")
           for part, name, figure in (("comparison", "comparison-epoch-times.svg", sm.comparison_figure),
                                      ("sweep", "sweep.svg", sm.sweep_figure))]


def draw(results=sm.RESULTS_FILE, folder=HERE) -> list[Path]:
    return [path for part in DRAWERS for path in part(results, folder)]


if __name__ == "__main__":
    main(draw)
