"""The lesson's experiments: one package per measurement that an episode shows.

Each records its measurements in ``results/`` and gives its episode values and figures; the site
finds them by their names (:mod:`~gpulesson.experiments.registry`, whose docstring and
contributing.md show the three files of a new one). They use the code the episodes teach and the
package's lower parts, none of which imports them; importing this package imports none of them,
and installs the hook that gives a declared package its ``python -m`` command.
"""

from gpulesson.experiments.registry import install

install()
