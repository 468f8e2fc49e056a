"""Draw the matrix-multiplication benchmark's figures from the results file:

    python fig/06-why-gpus-are-fast/matmul.py   ->  matmul-gflops.svg, matmul-sync.svg

The run is the newest one in results/matmul.jsonl with a GPU sweep, else the newest run (see
gpulesson.experiments.matmul.reference_run); record one with
``python -m gpulesson.experiments.matmul``. A test checks that the committed figures are the ones
this script draws from the committed file.

Each line shows the median of a size's timed calls, with whiskers from the fastest to the slowest
call and the calls as dots. The figures' alt texts on the page (``ref_mm_fig_gflops_alt``,
``ref_mm_fig_sync_alt``) come from the same drawing code
(gpulesson.experiments.matmul.alt_texts), so they describe what is drawn here.
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
