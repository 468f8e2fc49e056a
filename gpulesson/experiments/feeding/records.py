"""The old import path of names that now live in ``measure`` and ``pipelines``, kept until the
modules that still import them from here import them from there."""

from gpulesson.experiments.feeding.measure import N_IMAGES, RECORDS, TARGET_EPOCH_SECONDS, old_device_method

RESULTS_FILE = RECORDS.results_file


def __getattr__(name: str):
    if name == "DEVICE_METHODS":  # from pipelines, which imports Keras: only when asked for
        from gpulesson.experiments.feeding.pipelines import DEVICE_METHODS

        return DEVICE_METHODS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["N_IMAGES", "RECORDS", "RESULTS_FILE", "TARGET_EPOCH_SECONDS", "old_device_method"]
