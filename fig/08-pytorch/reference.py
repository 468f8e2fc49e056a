"""Draw the PyTorch reference run's figures from the results file:

    python fig/08-pytorch/reference.py   ->  reference-epoch-times.svg, reference-time-bars.svg

The run is the newest one in results/pytorch-cpu-vs-gpu.jsonl with a GPU record, else the newest
(see gpulesson.experiments.torch_reference.reference_run); record a new one with
``python -m gpulesson.experiments.torch_reference``. A test checks that the committed figures are the ones
this script draws from the committed file.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import torch_reference
from gpulesson.records.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
draw = drawer(torch_reference, ("reference-epoch-times.svg", "reference-time-bars.svg"),
              HERE)


if __name__ == "__main__":
    main(draw)
