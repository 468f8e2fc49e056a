"""The lesson's experiments: one package per measurement that an episode shows.

Each records its measurements in ``results/`` and gives its episode values and figures. The
site finds them: every package here with page values (a ``substitutions()``) fills the pages'
``{{ ref_* }}`` placeholders (:func:`~gpulesson.experiments.registry.page_sources`); each
package's docstring names its episode. They use the code the episodes teach
(:mod:`gpulesson.lesson`) and the package's lower parts (machine, datasets, records,
classroom), none of which imports them. What they share exists once: the measurement rule and
its words (:mod:`~gpulesson.records.summaries`), the command-line builder
(:mod:`~gpulesson.experiments.cli`), the records layer (:mod:`~gpulesson.records.recordset`)
and the figures' frame (:mod:`~gpulesson.records.figkit`).

A new experiment is at most three files in ``gpulesson/experiments/NAME/``, found by their names
(:mod:`~gpulesson.experiments.registry`):

- ``__init__.py``: what it is (its docstring, whose first line the command's ``--help`` shows),
  ``RECORDS = RecordSet("NAME", (the fields of a condition))`` and ``COMMAND = cli.Command(
  __name__, __doc__, ..., cli.out(RECORDS.results_file), cli.RUN_ID)``;
- ``measure.py``: ``measure(args, *, run_id, done)``, yielding each record
  (``RECORDS.record(...)``) of the conditions not in ``done`` as it is made; it imports a
  deep-learning framework only inside the function;
- ``page.py``: ``substitutions(path=RECORDS.results_file)``, the page's ``ref_NAME_*`` values;
  and, where it has them, ``describe(records)``, the command's table, and ``figures(records)``
  with ``FIGURES``, the SVGs' names, and ``FIGURE_FOLDER``, where the figures step draws them
  (:func:`~gpulesson.experiments.registry.draw_declared`: no script in ``fig/``).

``python -m gpulesson.experiments.NAME`` then runs: importing this package installs the hook that
gives a declared package its command (:func:`~gpulesson.experiments.registry.install`), so it
needs no ``__main__.py``. Importing this package imports none of the experiments.
"""

from gpulesson.experiments.registry import install

install()
