"""The episode's ``ref_cont_*`` values, from the newest run of k copies at once: the run, and one
copy alone's images/s, which the section's ``{{ if }}`` asks for before it shows the figure."""

from __future__ import annotations

from gpulesson.experiments.contention.figures import alt_text
from gpulesson.experiments.contention.records import (
    RESULTS_FILE,
    condition_summary,
    find_in,
    reference_run,
)
from gpulesson.experiments.pagewords import run_values
from gpulesson.records.results import NOT_RECORDED


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Episode 5's ``ref_cont_*`` values; NOT_RECORDED for everything the run lacks."""
    records = reference_run(path)
    alone = find_in(records, 1, None)
    summary = condition_summary(alone)
    return {
        **run_values("ref_cont", records, "date", "cpu"),
        "ref_cont_data": records[0].get("data_label", NOT_RECORDED) if records else NOT_RECORDED,
        # One copy alone, by its median epoch.
        "ref_cont_alone_rate": (f"{alone['n_images'] / summary['median']:,.0f} images/s"
                                if summary else NOT_RECORDED),
        # The figure's alt text, made from what it draws.
        "ref_cont_fig_alt": alt_text(records) if records else NOT_RECORDED,
    }
