"""What the feeding benchmark's tests share (episode 9): tiny sizes, a do-nothing model in place
of the lesson's CNN, and one tiny benchmark run that both test modules read."""

import pytest
from conftest import ROOT

from gpulesson.experiments import feeding
from gpulesson.experiments.ceiling.measure import tiny_model
from gpulesson.experiments.feeding import measure
from gpulesson.records import summaries
from gpulesson.records.results import append_record

FIG = ROOT / "fig" / "09-feeding-the-gpu"
N, BATCH = 96, 32  # 3 batches an epoch: every code path, in seconds
REPEATS = summaries.QUICK_REPEATS  # the rule's least, as in quick mode


def do_nothing_model(keras_device):
    """``build_model`` with the ceiling's do-nothing model in place of the lesson's CNN. These
    tests check the benchmark's bookkeeping, and compiling the CNN for every condition took most
    of their time; episode 9's notebook runs the benchmark with the CNN itself."""
    return tiny_model(keras_device, metrics=["accuracy"])


def tiny_benchmark(data_dir):
    """One tiny benchmark run: every pipeline (train and loader). The records, the progress
    lines, and the precision policy in force before (the ``feeding_measured`` fixture of
    conftest.py, run once per test module)."""
    import keras

    before = keras.mixed_precision.global_policy().name
    lines = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(measure, "build_model", do_nothing_model)
        records = feeding.run_benchmark(
            devices=["cpu"], pipelines=list(measure.PIPELINES), batch_size=BATCH, n_images=N,
            repeats=REPEATS, workers=2, data_dir=data_dir, progress=lines.append)
    return records, lines, before


def write_records(path, records):
    for r in records:
        append_record(path, r)
    return path
