"""Draw the reference run's figures from the results file:

    python fig/05-cpu-vs-gpu/reference.py   ->  reference-epoch-times.svg, reference-time-bars.svg

The run is the newest one in results/cnn-cpu-vs-gpu.jsonl with a GPU record (see
gpulesson.experiments.cnn.reference_run); record a new one with ``python -m gpulesson.experiments.cnn``.
A test checks that the committed figures are the ones this script draws from the committed file.
Both figures show the spread of the epochs after the warm-up (the lesson's measurement rule,
gpulesson.experiments.common); their alt texts on the episode page ({{ ref_fig_epoch_times_alt }},
{{ ref_fig_time_bars_alt }}) are written by the same code from the same records
(gpulesson.experiments.cnn.alt_texts), so they describe what is drawn.
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
