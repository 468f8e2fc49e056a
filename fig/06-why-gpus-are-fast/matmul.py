"""Draw the matrix-multiplication benchmark's figures from its results file:

    python fig/06-why-gpus-are-fast/matmul.py [RESULTS]   ->  matmul-gflops.svg, matmul-sync.svg

RESULTS defaults to results/matmul.jsonl. The throughput comes from the newest run of a
throughput method, the time of one call from the newest run of any
(gpulesson.experiments.matmul.page_runs); the page's alt texts come from the same lines. Record
a run with ``python -m gpulesson.experiments.matmul``.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import matmul
from gpulesson.records.figure_scripts import drawer, main

draw = drawer(matmul, matmul.page.FIGURES, Path(__file__).resolve().parent, run=matmul.page_runs,
              figures=lambda runs: matmul.figures(*runs))


if __name__ == "__main__":
    main(draw)
