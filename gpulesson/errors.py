"""Exceptions with messages a learner can act on.

Every message names the file or URL concerned and says how to fix the problem, because these
errors are usually read in a notebook on a cluster, far from this source code.
"""


class LessonDataError(Exception):
    """Base class: something is wrong with the lesson's data (the message says what to do)."""


class DataUnavailableError(LessonDataError):
    """The data cannot be obtained here, e.g. the download fails on a node without internet."""


class DataFileError(LessonDataError):
    """A data file is missing, truncated, corrupt or not what the lesson expects."""
