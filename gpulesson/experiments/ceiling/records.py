"""Kept until its importers read these names from the page."""

from gpulesson.experiments.ceiling.page import RECORDS, share_text  # noqa: F401
