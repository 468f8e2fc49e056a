"""What episode 9's feeding page sets beside its own records, from elsewhere: episode 5's run
of the same CNN on the same GPU (:func:`episode5_note`), the published peaks of the reference
run's GPU (:func:`gpu_peaks_text`, :mod:`gpulesson.gpu_peaks`). Every number comes from the
records, and every comparison from the lesson's rule
(:func:`~gpulesson.experiments.common.compare_middle`), with the epochs or calls it compared.
The other episodes' records are only read.

Imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson.devices import BACKEND_TITLES
from gpulesson.experiments import parts
from gpulesson.experiments.common import (
    NO_DIFFERENCE,
    as_rate,
    compare_middle,
    reordered_by_fit,
)
from gpulesson.experiments.feeding.reading import _why, apart
from gpulesson.experiments.feeding.records import (
    find,
    rate_summary,
    rate_text,
)
from gpulesson.results import data_label, hardware
from gpulesson.results import duration as seconds_text


def episode5_note(records, cnn_path=None) -> str:
    """Episode 5's run of the same CNN and generator on the same GPU, backend and batch size
    beside this run's rate from the lesson's generator, in the rule's words: where the two
    disagree measurably, a sentence says so, by which factor, and that the next GPU run
    measures both again; '' where episode 5 has no such run (read from ``cnn_path``, its
    results file)."""
    from gpulesson.experiments.cnn import records as cnn  # read only: episode 5's records

    lesson = find(records, "gpu", "lesson")
    if not lesson or cnn_path is None:
        return ""
    theirs = next((r for r in cnn.reference_run(cnn_path) if r.get("device_kind") == "gpu"
                   and (r.get("gpu") or {}).get("name") == (lesson.get("gpu") or {}).get("name")
                   and r.get("backend") == lesson.get("backend")
                   and r.get("batch_size") == lesson.get("batch_size")), None)
    summary = cnn.epoch_summary(theirs)
    if not summary:
        return ""
    rate, ours = as_rate(summary, theirs["n_train"]), rate_summary(lesson)
    said = compare_middle(rate, ours, higher_is_better=True)
    same = parts.machine([theirs]) == parts.machine([lesson])
    data = "" if data_label([theirs]) == data_label([lesson]) else f" on the {data_label([theirs])}"
    measured = (f"Episode 5's run of the same model and generator "
                f"{'on the same hardware' if same else f'on {parts.machine([theirs])}'}{data} "
                f"({BACKEND_TITLES.get(theirs['backend'], theirs['backend'])}, batch "
                f"{theirs['batch_size']}, run {theirs['run_id']}) measured "
                f"{rate_text(rate['median'])} images/s (epochs of {theirs['n_train']:,} images, "
                f"median {seconds_text(summary['median'])})")
    if not said.measurable:
        return (f"{measured}: {NO_DIFFERENCE} from `lesson` here ({_why(rate, ours)}).")
    cause = ("One known difference: this run's `fit` reordered the generator's batches, "
             "episode 5's did not." if reordered_by_fit(lesson) else
             "Both kept the generator's order; no other difference in method is known.")
    # The comparison's words give its size only from a certain size on; else say it here.
    factor = max(said.ratio, 1 / said.ratio)
    by = "" if said.text != f"{said.word} than" else f", by a factor of {factor:.2g}"
    return f"{measured}: {said.text} `lesson` here{by} ({apart(rate, ours)}). {cause}"


def gpu_peaks_text(records) -> str:
    """The published dense peaks of the reference run's GPU (:mod:`gpulesson.gpu_peaks`), for
    the page's estimate of the TFLOP/s the goal needs; a pointer to the table where the lesson
    has none for that card, or no GPU was recorded."""
    from gpulesson.gpu_peaks import peaks_for

    name = hardware(records).get("GPU")
    peaks = peaks_for(name)
    if not peaks:
        return ("your GPU's published peaks (`gpulesson.gpu_peaks` has those of the cards the "
                "lesson was measured on; episode 5 sets the CNN's rate beside them)")
    return (f"the {name}'s published dense peaks, {peaks['fp32']:g} TFLOP/s in FP32, "
            f"{peaks['tf32']:g} in TF32 and {peaks['bf16']:g} in BF16 (the vendor's data sheet, "
            "not measurements; episode 5 sets the CNN's rate beside them)")
