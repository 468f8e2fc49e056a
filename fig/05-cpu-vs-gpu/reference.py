"""Draw the reference run's figures from the results file:

    python fig/05-cpu-vs-gpu/reference.py   ->  reference-epoch-times.svg, reference-time-bars.svg

The run is the newest in results/cnn-cpu-vs-gpu.jsonl with a GPU record (cnn.reference_run);
the page's alt texts of these figures are written from the same records (cnn.alt_texts).
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import cnn
from gpulesson.records.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
draw = drawer(cnn, ("reference-epoch-times.svg", "reference-time-bars.svg"), HERE)


if __name__ == "__main__":
    main(draw)
