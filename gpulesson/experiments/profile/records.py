"""The profile's names that episode 5's page reads (``cnn.gpu_use``), until it reads them from
:mod:`gpulesson.experiments.profile.page`, where they live."""

from gpulesson.experiments.profile.page import RESULTS_FILE, find, overhead, reference_run

__all__ = ["RESULTS_FILE", "find", "overhead", "reference_run"]
