"""Draw the matrix-multiplication benchmark's figures from the results file:

    python fig/06-why-gpus-are-fast/matmul.py   ->  matmul-gflops.svg, matmul-sync.svg

The throughput (matmul-gflops.svg) comes from the newest run of the current method (windows of
calls with one wait each), the time of one call (matmul-sync.svg) from the newest run of any
method; each prefers a run with a GPU sweep (see gpulesson.experiments.matmul.page_runs). Record
one with ``python -m gpulesson.experiments.matmul``. A test checks that the committed figures
are the ones this script draws from the committed file.

Each line shows the median of a size's timed calls or windows, with whiskers from the fastest to
the slowest and each one as a dot. The GPU's lines have the card's published peaks beside them
(gpulesson.machine.gpu_peaks: the vendor's figures, not measurements). The figures' alt texts on the
page (``ref_mm_fig_gflops_alt``, ``ref_mm_fig_sync_alt``) come from the same drawing code
(gpulesson.experiments.matmul.figures), so they describe what is drawn here.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import matmul
from gpulesson.records.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
draw = drawer(matmul, ("matmul-gflops.svg", "matmul-sync.svg"), HERE, run=matmul.page_runs,
              figures=lambda runs: matmul.figures(*runs))


if __name__ == "__main__":
    main(draw)
