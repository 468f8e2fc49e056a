"""The ceiling of ``fit`` (episode 9, "What limits fit"): how many images per second each
backend's training loop takes with a model that does almost nothing, fed from memory and from
the lesson's generator. Importing it imports no deep-learning framework.

    python -m gpulesson.experiments.ceiling                   # every installed backend, CPU then GPU
    python -m gpulesson.experiments.ceiling --backends jax --devices gpu

A Keras process has one backend: the command runs itself once per backend, all appending to one run.
"""

from gpulesson.experiments import cli
from gpulesson.experiments.ceiling import page
from gpulesson.experiments.ceiling.measure import SIZES

RECORDS, RESULTS_FILE, table = page.RECORDS, page.RECORDS.results_file, page.table  # episode 9's
COMMAND = cli.Command(
    __name__, "The ceiling of ``fit`` on each Keras backend: its command line.",
    cli.backends(RECORDS.backends, "Keras backends, one process each (default: every one installed)"),
    cli.devices("devices (default: cpu, then gpu if the backend sees one)"),
    cli.option("--pipelines", nargs="+", choices=list(page.PIPELINES), default=None,
               help="ways of feeding fit (default: all that the device has)"),
    cli.sizes(SIZES), cli.out(RESULTS_FILE), cli.RUN_ID, at_least_one=("n_images", "batch_size"),
    per_backend=True)
