"""Profile training steps of the lesson's CNN on each device, and record where their time goes.

    KERAS_BACKEND=jax python -m gpulesson.experiments.profile            # CPU, then GPU if visible
    KERAS_BACKEND=jax python -m gpulesson.experiments.profile --devices gpu --out my-profile.jsonl

Appends one record per device to ``--out``; ``--run-id`` goes on with an earlier run, skipping
the devices it has. Needs the Keras backend JAX (its profiler).
"""

from gpulesson.experiments import cli
from gpulesson.records.recordset import RecordSet

BATCH_SIZE, QUICK_STEPS = 256, 4
PROFILE_STEPS = {"gpu": 100, "cpu": 10}  # batches profiled (quick mode: at most 4)
# One record a device; a GPU node's run of the GPU alone leaves an older run's CPU record on
# the page (the reference run: for each device, the newest run that profiled it).
RECORDS = RecordSet("profile", ("device_kind",), complete=bool)
COMMAND = cli.Command(
    "profile", __doc__,
    cli.devices(),
    cli.option("--batch-size", type=int, default=BATCH_SIZE,
               help=f"images per batch (default {BATCH_SIZE}; quick mode: at most 64)"),
    cli.option("--steps", type=int, default=None,
               help=f"batches profiled (default: GPU {PROFILE_STEPS['gpu']}, CPU "
                    f"{PROFILE_STEPS['cpu']}; quick mode {QUICK_STEPS})"),
    cli.quick("2 timed epochs and 4 profiled steps (also when LESSON_QUICK=1)"),
    cli.out(RECORDS.results_file), cli.SEED, cli.RUN_ID, at_least_one=("batch_size", "steps"))
