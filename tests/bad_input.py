"""Bad input and faults: the register of the lesson's tests that feed it something wrong.

A test that gives the lesson a missing, corrupt or truncated file, interrupts or kills it, takes
away the network, the GPU or a package, or passes a wrong argument, is marked with the kind of
fault it tries::

    @pytest.mark.bad_input("truncated file")
    def test_truncated_file(good_file):
        ...

Such a test passes only if the lesson stops with a clear message (naming the file or setting
and saying what to do) and loses nothing: no half-written file, an existing good file kept, the
completed epochs of a run kept. At the end of a test run one line counts the faults tried, per
kind, and says whether each got a clear message with nothing lost.

tests/conftest.py registers the marker and this module as a plugin (see ``configure``).
"""

from collections import Counter

MARKER = "bad_input"

# The kinds of bad input and fault, in the order the summary lists them.
KINDS = {
    "missing file": "a data file, archive, notebook or download that is not there",
    "corrupt file": "a file that is not what the lesson expects: random bytes, wrong shape or "
                    "type, a failed checksum, a damaged archive",
    "truncated file": "a file cut short, as an interrupted copy or download leaves it",
    "interrupted write": "writing or converting a data file stopped half-way (an error, Ctrl-C)",
    "no internet": "a download on a node without internet, or an unreachable mirror",
    "no GPU": "a GPU asked for on a machine where none is visible",
    "no energy counter": "an energy counter (powercap/RAPL, NVML) that is missing, unreadable "
                         "or not supported",
    "wrong backend": "Keras on another backend than the code needs",
    "missing package": "an optional framework or package that is not installed",
    "bad labels": "labels outside the classes, of the wrong type or number",
    "bad argument": "a wrong option, setting or argument value",
    "not under Slurm": "a job script started outside the batch system it needs",
    "killed job": "a training run killed, interrupted or stopped by the time limit",
    "unwritable folder": "a data folder that cannot be created or written to (read-only, shared)",
    "run as root": "JupyterLab or a command started as root, as in containers and on some nodes",
    "bad form input": "an Open OnDemand form value that is not valid or that the cluster "
                      "cannot grant",
}

_PROPERTY = "bad_input_kind"


def configure(config) -> None:
    """Register the marker (so that --strict-markers accepts it) and the counting hooks."""
    config.addinivalue_line(
        "markers", f'{MARKER}(kind): a test of bad input or a fault; kind is one of: '
                   + ", ".join(KINDS))
    import sys

    config.pluginmanager.register(sys.modules[__name__], "gpulesson-bad-input")


def pytest_collection_modifyitems(config, items):
    for item in items:
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            continue
        kind = marker.args[0] if marker.args else None
        if kind not in KINDS:
            raise ValueError(f"{item.nodeid}: @pytest.mark.{MARKER}({kind!r}): the kind must "
                             f"be one of {', '.join(map(repr, KINDS))} (tests/bad_input.py)")
        # Kept with the test's reports, so that the count also works across processes.
        item.user_properties.append((_PROPERTY, kind))


class _Tally:
    """Per test (node id): its kind and whether every phase that ran passed."""

    def __init__(self):
        self.kind: dict[str, str] = {}
        self.failed: set[str] = set()
        self.skipped: set[str] = set()

    def add(self, report) -> None:
        kind = dict(report.user_properties).get(_PROPERTY)
        if kind is None:
            return
        if report.skipped:
            self.skipped.add(report.nodeid)
            return
        self.kind[report.nodeid] = kind
        if report.failed:
            self.failed.add(report.nodeid)

    def counts(self) -> tuple[Counter, Counter]:
        """(tried per kind, failed per kind); a test skipped in any phase was not tried."""
        tried, failed = Counter(), Counter()
        for nodeid, kind in self.kind.items():
            if nodeid in self.skipped and nodeid not in self.failed:
                continue
            tried[kind] += 1
            if nodeid in self.failed:
                failed[kind] += 1
        return tried, failed


_tally = _Tally()


def pytest_runtest_logreport(report):
    _tally.add(report)


def summary_line(tried: Counter | dict, failed: Counter | dict | None = None) -> str:
    """The one line: how many bad inputs and faults were tried, per kind, and how they went."""
    failed = Counter(failed or {})
    total, bad = sum(tried.values()), sum(failed.values())
    order = list(KINDS) + sorted(set(tried) - set(KINDS))
    kinds = ", ".join(f"{kind} {tried[kind]}" for kind in order if tried.get(kind))
    head = f"Bad input and faults: {total} tried ({kinds})" if total else \
        "Bad input and faults: none tried"
    if not total:
        return head + "."
    if not bad:
        return head + ": each got a clear message, nothing lost."
    which = ", ".join(f"{kind} {failed[kind]}" for kind in order if failed.get(kind))
    return (head + f": {bad} of them did NOT get a clear message or lost something ({which}); "
            "see the failures above.")


def terminal_summary(terminalreporter) -> None:
    tried, failed = _tally.counts()
    if tried:
        terminalreporter.write_line(summary_line(tried, failed),
                                    red=bool(failed), green=not failed, bold=True)
