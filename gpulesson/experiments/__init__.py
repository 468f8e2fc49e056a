"""The lesson's experiments: one per episode that measures something.

Each records its measurements in ``results/`` and gives the episode its values and figures, with
the same parts in the same order: measure, records, values for the page (``substitutions()``,
read by ``_ext/carpentry.py`` while the site builds), figures, command line
(``python -m gpulesson.experiments.NAME``). They use the code the episodes teach
(:mod:`gpulesson.lesson`) and the helpers at the top of :mod:`gpulesson`; no helper imports them.
What they share exists once: the measurement rule and its words (:mod:`~gpulesson.experiments.common`),
the command-line builder (:mod:`~gpulesson.experiments.cli`) and the records layer
(:mod:`~gpulesson.experiments.recordset`).

- :mod:`~gpulesson.experiments.cnn`: episode 5, the CNN on the CPU and the GPU;
  :mod:`~gpulesson.experiments.contention`: episode 5, CPU epochs on a shared machine;
  :mod:`~gpulesson.experiments.calibration`: episode 5's instructor notes, the stand-in's
  calibration;
- :mod:`~gpulesson.experiments.matmul`: episode 6, matrix multiplication;
- :mod:`~gpulesson.experiments.small_models`: episode 7, the small MLP and its sweep;
- :mod:`~gpulesson.experiments.torch_reference`: episode 8, the PyTorch version;
- :mod:`~gpulesson.experiments.feeding`, :mod:`~gpulesson.experiments.layouts`,
  :mod:`~gpulesson.experiments.ceiling` and :mod:`~gpulesson.experiments.workers`: episode 9,
  input pipelines, HDF5 layouts, the ceiling of ``fit`` and Grain's worker processes;
- :mod:`~gpulesson.experiments.parallel`, :mod:`~gpulesson.experiments.train_job` and
  :mod:`~gpulesson.experiments.sweep`: episode 10, data-parallel training, the batch job and
  the job-array sweep.

Importing this package imports none of them.
"""
