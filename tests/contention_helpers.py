"""Made-up records of the contention benchmark (episode 5) that its two test modules share."""

from gpulesson.experiments.contention.measure import make_record
from gpulesson.records.results import append_record

ENVIRONMENT = {"date": "2026-11-23T10:00:00+00:00", "cpu_model": "Test CPU", "cores_usable": 2,
               "cores_total": 2, "device": "CPU", "gpu_count": 0, "backend": "tensorflow",
               "versions": {"keras": "3.15.1", "tensorflow": "2.21.0"}}


def made_up_report(*epochs, start=0.0):
    return {"epoch_seconds": list(epochs), "framework_threads": {"intra_op": 2, "inter_op": 2},
            "cores": 2, "fit_start": 1000.0 + start, "fit_end": 1000.0 + start + sum(epochs)}


def made_up_conditions(factor=1.0):
    """One copy alone, then two and three at once, then three with one thread each: each copy
    a warm-up epoch and two timed ones. ``factor`` multiplies the epochs of every condition
    but the copy alone."""
    def report(*epochs, start=0.0, alone=False):
        return made_up_report(*(e * (1.0 if alone else factor) for e in epochs), start=start)

    return [
        {"copies": 1, "threads": None, "reports": [report(12.0, 9.0, 11.0, alone=True)],
         "load_before": 0.1, "load_samples": [0.5, 1.9, 2.0], "wall_seconds": 25.0},
        {"copies": 2, "threads": None,
         "reports": [report(21.0, 19.0, 21.0), report(23.0, 23.0, 25.0, start=1)],
         "load_before": 1.0, "load_samples": [2.5, 4.1], "wall_seconds": 50.0},
        {"copies": 3, "threads": None,
         "reports": [report(20.0, 39.0, 41.0), report(30.0, 44.0, 46.0, start=2),
                     report(38.0, 34.0, 36.0, start=4)],
         "load_before": 2.0, "load_samples": [4.0, 6.2], "wall_seconds": 90.0},
        {"copies": 3, "threads": 1,
         "reports": [report(16.0, 14.5, 15.5), report(16.0, 14.5, 15.5), report(16.0, 14.5, 15.5)],
         "load_before": 2.0, "load_samples": [3.0], "wall_seconds": 50.0},
    ]


def made_up_records(run_id="20261123T100000Z-abcdef", factor=1.0):
    return made_records(made_up_conditions(factor), run_id=run_id)


def made_records(conditions, *, run_id, environment=ENVIRONMENT, epochs=3):
    """The records of ``conditions`` in order, as the command makes them: each slowdown against
    the copy alone of the conditions before it."""
    records, baseline = [], None
    for condition in conditions:
        records.append(make_record(condition, run_id=run_id, n_images=1000, batch_size=100,
                                   epochs=epochs, environment=environment, baseline=baseline))
        if (condition["copies"], condition["threads"]) == (1, None):
            baseline = records[-1]["mean_epoch_seconds"]
    return records


def made_up_watched(run_id="20261123T100500Z-fedcba"):
    """Records of the former watched part (one training shown in a browser or not), as the
    results file keeps them: a newer run than the copies', which no page or figure reads."""
    return [{**record, "part": "watched", "watched": mode, "n_images": 45000}
            for record, mode in zip(made_up_records(run_id)[:2],
                                    ("no browser", "browser, bar per step"), strict=True)]


def write_made_up(path):
    """Both parts' made-up records in ``path`` (the ``contention_records`` fixture of conftest.py)."""
    for record in made_up_records() + made_up_watched():
        append_record(path, record)
    return path
