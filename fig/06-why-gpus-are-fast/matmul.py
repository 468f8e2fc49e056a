"""Draw the matrix-multiplication benchmark's figures from the results file:

    python fig/06-why-gpus-are-fast/matmul.py   ->  matmul-gflops.svg, matmul-sync.svg

The run is the newest one in results/matmul.jsonl with a GPU sweep, else the newest run (see
gpulesson.experiments.matmul.reference_run); record one with
``python -m gpulesson.experiments.matmul``. A test checks that the committed figures are the ones
this script draws from the committed file.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import matmul
from gpulesson.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
draw = drawer(matmul, ("matmul-gflops.svg", "matmul-sync.svg"), HERE)


if __name__ == "__main__":
    main(draw)
