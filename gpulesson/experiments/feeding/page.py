"""The episode's ``ref_feed_*`` values and the command's table, from the reference run. Every
ranking or comparison word is the rule's, saying which epochs it compared; an epoch of which
only the first steps were timed is shown as extrapolated.
"""

from __future__ import annotations

from pathlib import Path

from gpulesson.datasets.settings import LABELS
from gpulesson.experiments.ceiling.records import share_text
from gpulesson.experiments.common import (
    MIN_RANKED,
    NO_DIFFERENCE,
    as_rate,
    compare_middle,
    markdown_table,
    reordered_by_fit,
    reordered_note,
    summary_text,
)
from gpulesson.experiments.feeding import records as fr
from gpulesson.machine.devices import BACKEND_TITLES
from gpulesson.records import parts
from gpulesson.records.pagewords import listed, met, none_yet, recorded_by
from gpulesson.records.results import NOT_RECORDED, data_label, hardware, software
from gpulesson.records.results import duration as seconds_text

DEVICES = ("cpu", "gpu")
RECORD_COMMAND = "python -m gpulesson.experiments.feeding"
STREAM = "lesson-ahead"  # the lesson's stream: its generator reading ahead (episode 4)
# Short row names of the page's table.
ROWS = {
    "classic": "classic (gzip, guessed chunks, reads all to count)",
    "lesson": "lesson, uncompressed",
    "lesson-ahead": "lesson, uncompressed, reading ahead",
    "lesson-ahead-window1": "lesson, uncompressed, reading ahead, window=1",
    "lesson-lzf": "lesson, lzf",
    "lesson-gzip": "lesson, gzip",
    "lesson-workers": "lesson, uncompressed, Keras workers",
    "lesson-gzip-workers": "lesson, gzip, Keras workers",
    "ram": "whole data set in RAM",
    "device": "data resident on the device",
}
ALT_KEYS = ("ref_feed_fig_pipelines_alt",)
NO_FIGURE = "A chart without data: no reference run has been recorded yet."
# A loader alone under this many times training's rate leaves the model waiting, where reading
# overlaps the steps (the margin absorbs the spread and the loader's share of the CPU).
LOADER_MARGIN = 1.5
# What the answer says of the pipelines of each verdict of :func:`input_verdict`.
SAID = {
    "waiting": "Training from {names} was measurably slower than from {memory} ({versus}), and "
               "the loader alone was not measurably faster than {margin:g} times training: "
               "those loaders made the model wait.",
    "adds": "Training from {names} was measurably slower than from {memory} ({versus}), "
            "although the loader alone was more than {margin:g} times faster than training: "
            "reading did not overlap the steps, so its time added to each one. The data set "
            "the pace.",
    "faster": "Training from {names} was measurably faster than from {memory} ({versus}): the "
              "data did not hold the model back.",
    "keeps up": "Training from {names} showed {none} from {memory}: the model set the pace.",
    "unclear": "For {names} the rule cannot tell ({why}).",
}


def extrapolated(record: dict) -> str:
    return f"extrapolated from {record['steps']} of {record['full_epoch_steps']} steps"


def epoch_text(record: dict) -> str:
    """A record's time for an epoch of all its images, with its range, marked as extrapolated
    where only its first steps were timed."""
    said = summary_text(fr.full_epoch_summary(record), seconds_text)
    return f"≈ {said}, {extrapolated(record)}" if record["partial_epoch"] else said


def epoch_median_text(record: dict) -> str:
    said = seconds_text(fr.full_epoch_summary(record)["median"])
    return f"≈ {said} ({extrapolated(record)})" if record["partial_epoch"] else said


def versus(a_name: str, a: dict, b_name: str, b: dict, verb: str = "trained") -> str:
    """Rate ``a`` against rate ``b`` as a clause in the rule's words, saying on which epochs."""
    verdict = compare_middle(a, b, higher_is_better=True)
    if verdict.measurable:
        return f"{a_name} {verb} {verdict.text} {b_name} ({fr.apart(a, b)})"
    return f"the lesson's rule finds {NO_DIFFERENCE} between {a_name} and {b_name} ({fr._why(a, b)})"


def targets_text(checks: dict) -> str:
    share, epoch = met(checks["share_ok"]), met(checks["epoch_ok"])
    took = (f"≈ {checks['epoch_seconds']:.2f} s, {extrapolated(checks['record'])}"
            if checks["epoch_estimated"] else f"{checks['epoch_seconds']:.2f} s, measured")
    size = "" if checks["full_size"] else f" (only {checks['n_images']:,} images: not the goal's size)"
    return (f"{checks['pipeline']}: {share_text(checks['share'])} of `{checks['reference']}`, the "
            f"fastest path from memory (goal {fr.TARGET_SHARE:.0%}: {share}); one epoch "
            f"{took} (goal {fr.TARGET_EPOCH_SECONDS:g} s: {epoch}){size}")


def wrong_data_sentence(records) -> str:
    """Which pipelines are left out because they delivered wrong data, or ''."""
    wrong = [r for r in records if fr.delivered_wrong_data(r)]
    if not wrong:
        return ""
    backends = " and ".join(sorted({BACKEND_TITLES.get(r["backend"], r["backend"])
                                    for r in wrong}))
    names = " and ".join(f"`{name}`" for name in sorted({r["pipeline"] for r in wrong},
                                                         key=list(fr.PIPELINES).index))
    return (f"The run also timed {names} with Keras worker processes on {backends}, where they "
            "delivered batches of earlier epochs: those rates are kept in the results file "
            "but not shown.")


def run_lines(records) -> list[str]:
    """One line per device and run: the run, its date, the machine and the software."""
    found: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        found.setdefault((r["device_kind"], r["run_id"]), []).append(r)
    return [f"{device.upper()}: run {run_id} of {part[0]['date'][:10]} on "
            f"{parts.machine(part)}, with {software(part)}"
            for (device, run_id), part in found.items()]


def describe(records) -> str:
    """The command's table of one run: images/s and epoch time (median, range, timed epochs)
    per record, a "*" marking partial epochs."""
    if not records:
        return "No run recorded."
    lines = [data_label(records)] + [f"  {line}" for line in run_lines(records)]
    lines.append(f"{'dev':3} {'pipeline':19} {'setting':14} {'batch':>5} {'img/s':>8} "
                 f"{'epoch s (range)':>23} n")
    partial = {(r["steps"], r["full_epoch_steps"]) for r in records if r["partial_epoch"]}
    for r in records:
        epochs = fr.epoch_summary(r)
        lines.append(
            f"{r['device_kind']:3} {r['pipeline']:19} {fr.short_setting(r):14} {r['batch_size']:>5} "
            f"{fr.rate_text(fr.rate_summary(r)['median']):>8} {epochs['median']:>7.3f} "
            f"({epochs['min']:.3f}-{epochs['max']:.3f}) {epochs['n']}"
            f"{'*' if r['partial_epoch'] else ''}"
            f"{' WRONG DATA' if fr.delivered_wrong_data(r) else ''}"
            + (f" {r['layout']}" if r.get("layout") else ""))
    for steps in sorted({steps for steps, _ in partial}):
        fulls = sorted(full for timed, full in partial if timed == steps)
        of = f"{fulls[0]}" if len(fulls) == 1 else f"{fulls[0]}-{fulls[-1]}"
        lines.append(f"* partial epochs: the first {steps} steps timed (of {of} an epoch)")
    if any(fr.delivered_wrong_data(r) for r in records):
        lines.append("WRONG DATA: Keras worker processes on this backend delivered batches of "
                     "earlier epochs; the rate is not valid.")
    checks = fr.targets(records)
    if checks:
        lines.append(targets_text(checks))
    return "\n".join(lines)


def _rate_cell(record, pipeline: str | None = None, backend: str | None = None) -> str:
    if record:
        return summary_text(fr.rate_summary(record), fr.rate_text)
    if pipeline in fr.WORKER_PIPELINES and backend in fr.WRONG_DATA_WITH_WORKERS:
        return "TensorFlow only"
    return "not measured"


def table(records) -> str:
    """The reference run as a Markdown table: training and the loader alone on each device it
    has, a row per shown pipeline, epoch times and the fastest pipeline in the rule's words."""
    if not records:
        return none_yet("reference run", RECORD_COMMAND,
                        " (the instructor note gives the whole command)")
    names = hardware(records)
    backends = {d: next(r["backend"] for r in records if r["device_kind"] == d) for d in DEVICES
                if any(r.get("device_kind") == d for r in fr.shown(records))}
    header = [title for d, backend in backends.items() for title in (
        f"{d.upper()}: {names[d.upper()]} ({BACKEND_TITLES.get(backend, backend)}), training",
        f"{d.upper()}: loader alone")]
    rows = [[ROWS[pipeline], *(_rate_cell(fr.find(records, d, pipeline, mode), pipeline, backend)
                               for d, backend in backends.items() for mode in ("train", "loader"))]
            for pipeline in fr.PIPELINES if any(fr.find(records, d, pipeline) for d in backends)]
    for pipeline, what in (("classic", "classic"), ("lesson", "lesson (uncompressed)"),
                           ("device", "on the device")):
        found = [fr.find(records, d, pipeline) for d in backends]
        if any(found):
            rows.append([f"one epoch, {what}", *(cell for c in found for cell in (
                epoch_text(c) if c else "not measured", ""))])
    rows.append(["fastest pipeline", *(cell for d in backends
                                       for cell in (fr.fastest_text(records, d), ""))])
    note = wrong_data_sentence(records)
    return markdown_table(["pipeline", *header], rows) + (f"\n\n{note}" if note else "")


def _slowdown(records, device) -> str | None:
    lesson, classic = fr.best_hdf5(records, device), fr.find(records, device, "classic")
    if not (lesson and classic):
        return None
    return versus("the classic pipeline", fr.rate_summary(classic), f"`{lesson['pipeline']}`",
                  fr.rate_summary(lesson))


def findings(records, cnn_path=None) -> str:
    """What the reference run shows, in sentences; ``cnn_path``: episode 5's results file."""
    if not records:
        return ""
    sentences = []
    cpu = _slowdown(records, "cpu")
    checks = fr.targets(records)
    if cpu and not checks:
        sentences.append(f"On the CPU, {cpu}.")
    if checks:
        top = fr.fastest_in_memory(records, "gpu")
        lesson = fr.find(records, "gpu", checks["pipeline"])
        against = versus(f"`{checks['pipeline']}`", fr.rate_summary(lesson),
                         f"`{top['pipeline']}`", fr.rate_summary(top))
        goal, epoch = met(checks["share_ok"]), met(checks["epoch_ok"])
        sentences += [
            f"On the GPU, `{checks['pipeline']}`, the lesson's fastest HDF5 pipeline, reached "
            f"**{share_text(checks['share'])}** of the rate of `{top['pipeline']}`, the fastest "
            f"path from memory in the same run: {against}.",
            f"One epoch of {checks['n_images']:,} images "
            f"{'would take' if lesson['partial_epoch'] else 'took'} "
            f"**{epoch_median_text(lesson)}** (median; from `{top['pipeline']}`: "
            f"{epoch_median_text(top)}).",
            f"The goals: at least {fr.TARGET_SHARE:.0%} ({goal}), at most "
            f"{fr.TARGET_EPOCH_SECONDS:g} s an epoch ({epoch}"
            f"{', extrapolated from the timed steps' if checks['epoch_estimated'] else ''})."]
        sentences += filter(None, [episode5_note(records, cnn_path)])
        gpu = _slowdown(records, "gpu")
        if gpu:
            sentences.append(f"On the GPU, {gpu}.")
        lesson_gpu, lesson_cpu = fr.find(records, "gpu", "lesson"), fr.find(records, "cpu", "lesson")
        if lesson_gpu and lesson_cpu and lesson_gpu["run_id"] == lesson_cpu["run_id"]:
            clause = versus("the GPU", fr.rate_summary(lesson_gpu), "the CPU",
                            fr.rate_summary(lesson_cpu))
            sentences.append(f"From the lesson's pipeline, {clause}.")
    return " ".join(sentences)


def episode5_note(records, cnn_path=None) -> str:
    """Episode 5's run of the same CNN and generator on the same GPU, backend and batch size
    beside this run's ``lesson``, in the rule's words; '' where episode 5 has no such run."""
    from gpulesson.experiments.cnn import records as cnn  # read only: episode 5's records

    lesson = fr.find(records, "gpu", "lesson")
    if not lesson or cnn_path is None:
        return ""
    theirs = next((r for r in cnn.reference_run(cnn_path) if r.get("device_kind") == "gpu"
                   and (r.get("gpu") or {}).get("name") == (lesson.get("gpu") or {}).get("name")
                   and r.get("backend") == lesson.get("backend")
                   and r.get("batch_size") == lesson.get("batch_size")), None)
    summary = cnn.epoch_summary(theirs)
    if not summary:
        return ""
    rate, ours = as_rate(summary, theirs["n_train"]), fr.rate_summary(lesson)
    said = compare_middle(rate, ours, higher_is_better=True)
    same = parts.machine([theirs]) == parts.machine([lesson])
    data = "" if data_label([theirs]) == data_label([lesson]) else f" on the {data_label([theirs])}"
    measured = (f"Episode 5's run of the same model and generator "
                f"{'on the same hardware' if same else f'on {parts.machine([theirs])}'}{data} "
                f"({BACKEND_TITLES.get(theirs['backend'], theirs['backend'])}, batch "
                f"{theirs['batch_size']}, run {theirs['run_id']}) measured "
                f"{fr.rate_text(rate['median'])} images/s (epochs of {theirs['n_train']:,} images, "
                f"median {seconds_text(summary['median'])})")
    if not said.measurable:
        return f"{measured}: {NO_DIFFERENCE} from `lesson` here ({fr._why(rate, ours)})."
    cause = ("One known difference: this run's `fit` reordered the generator's batches, "
             "episode 5's did not." if reordered_by_fit(lesson) else
             "Both kept the generator's order; no other difference in method is known.")
    # The comparison's words give its size only from a certain size on; else say it here.
    factor = max(said.ratio, 1 / said.ratio)
    by = "" if said.text != f"{said.word} than" else f", by a factor of {factor:.2g}"
    return f"{measured}: {said.text} `lesson` here{by} ({fr.apart(rate, ours)}). {cause}"


def gpu_peaks_text(records) -> str:
    """The published dense peaks of the reference run's GPU, or a pointer to the table."""
    from gpulesson.machine.gpu_peaks import peaks_for

    name = hardware(records).get("GPU")
    peaks = peaks_for(name)
    if not peaks:
        return ("your GPU's published peaks (`gpulesson.machine.gpu_peaks` has those of the cards the "
                "lesson was measured on; episode 5 sets the CNN's rate beside them)")
    return (f"the {name}'s published dense peaks, {peaks['fp32']:g} TFLOP/s in FP32, "
            f"{peaks['tf32']:g} in TF32 and {peaks['bf16']:g} in BF16 (the vendor's data sheet, "
            "not measurements; episode 5 sets the CNN's rate beside them)")


# The reading exercise: training from a pipeline against the fastest path from memory decides
# whether the data cost time (:func:`input_verdict`); the loader alone says why.
def loader_verdict(train: dict, loader: dict) -> str:
    """"ahead", "waiting" or "unclear": the loader's rate against :data:`LOADER_MARGIN` times
    training's, assuming that reading overlaps the steps."""
    rate = fr.rate_summary(train)
    scaled = {**rate, **{k: rate[k] * LOADER_MARGIN for k in ("median", "min", "max")},
              "samples": [v * LOADER_MARGIN for v in rate["samples"]]}
    verdict = compare_middle(fr.rate_summary(loader), scaled, higher_is_better=True)
    if not verdict.measurable:
        return "unclear"
    return "ahead" if verdict.word == "faster" else "waiting"


def input_verdict(train: dict, loader: dict | None, top: dict) -> str:
    """Training from a pipeline against ``top``, the fastest from memory: "waiting" (measurably
    slower, the loader not ahead), "adds" (slower although the loader was ahead: reading did
    not overlap the steps), "faster", "keeps up" (no measurable difference) or "unclear"."""
    said = compare_middle(fr.rate_summary(train), fr.rate_summary(top), higher_is_better=True)
    if min(fr.rate_summary(train)["n"], fr.rate_summary(top)["n"]) < MIN_RANKED:
        return "unclear"
    if not said.measurable:
        return "keeps up"
    if said.word == "faster":
        return "faster"
    if loader is not None and loader_verdict(train, loader) == "ahead":
        return "adds"
    return "waiting"


def device_reading(records, device: str) -> str:
    """The answer for one device: its fastest pipeline, and whether training waited for each
    pipeline that reads data."""
    top = fr.fastest_in_memory(records, device)
    reading = [p for p in fr.PIPELINES if p not in fr.IN_MEMORY and fr.find(records, device, p)]
    if not top or not reading:
        return ""
    memory = fr.quoted(top["pipeline"])
    text = [f"On the {device.upper()}, the fastest pipeline was "
            f"{fr.fastest_text(records, device)}; the fastest from memory, {memory}."]
    verdicts = {p: input_verdict(fr.find(records, device, p), fr.find(records, device, p, "loader"),
                                 top) for p in reading}
    for verdict, said in SAID.items():
        names = [p for p in reading if verdicts[p] == verdict]
        if not names:
            continue
        rates = [fr.rate_summary(fr.find(records, device, p)) for p in names]
        versus = ", ".join(f"{fr.quoted(n)} " + compare_middle(
            rate, fr.rate_summary(top), higher_is_better=True).sentence
            for n, rate in zip(names, rates, strict=True))
        why = fr._why(*rates, fr.rate_summary(top), many=True) if verdict == "unclear" else ""
        text.append(said.format(names=listed(map(fr.quoted, names)), memory=memory, versus=versus,
                                margin=LOADER_MARGIN, none=NO_DIFFERENCE, why=why))
    return " ".join(text)


def reading(records) -> str:
    """The answer to the episode's exercise on reading the benchmark, from the records."""
    found = [said for device in DEVICES if (said := device_reading(records, device))]
    if not found:
        return "No reference run has been recorded yet."
    rates = [rate for device in DEVICES for rate in fr.base_rates(records, device).values()]
    return (f"In the reference run{'s' if len(found) > 1 else ''}, every comparison reads the "
            f"{fr.basis(*rates)} of each pipeline. " + " ".join(found))


def stream_goals(records, path=fr.RESULTS_FILE) -> str:
    """The stream's goals: on the reference run's GPU, ``lesson-ahead`` at least
    :data:`TARGET_SHARE` of ``ram``; on a CPU, not measurably slower than ``lesson`` in every
    run of ``path`` that trained both (naming which ran first: a busy machine drifts)."""
    goal = f"at least {fr.TARGET_SHARE:.0%} of `ram` on the GPU"
    stream, ram = fr.find(records, "gpu", STREAM), fr.find(records, "gpu", "ram")
    if stream and ram:
        ratio = stream["images_per_second"] / ram["images_per_second"]
        said = [f"The stream's goals: {goal}, at batch {stream['batch_size']} in "
                f"{stream['precision']}: {share_text(ratio)} in run {stream['run_id']} "
                f"({met(ratio >= fr.TARGET_SHARE)})."]
    else:
        said = [f"The stream's goals: {goal}, which has not been recorded yet "
                f"{recorded_by(f'{RECORD_COMMAND} --devices gpu')}."]
    cpu = []
    for run_id, run in fr.RECORDS.runs_in(path).items():
        pair = {r["pipeline"]: r for r in run if r.get("device_kind") == "cpu"
                and r.get("mode") == "train" and r.get("group") == "pipelines"
                and r["pipeline"] in ("lesson", STREAM)}
        if len(pair) == 2:
            first = next(r["pipeline"] for r in run if r["pipeline"] in pair)
            ahead, lesson = fr.rate_summary(pair[STREAM]), fr.rate_summary(pair["lesson"])
            verdict = compare_middle(ahead, lesson, higher_is_better=True)
            busy = max(r.get("other_programs_cpu_share") or 0 for r in pair.values())
            cpu.append(f"Run {run_id} (`{first}` first; others used up to {busy:.0%} of the "
                       f"CPU): {verdict.sentence}, {met(not (verdict.measurable and verdict.ratio < 1))} "
                       f"({fr.basis(ahead, lesson)}).")
    said.append(f"On a CPU, the goal is `{STREAM}` no slower than `lesson`" + (
        ". " + " ".join(cpu) if cpu else ", which has not been recorded yet "
        + recorded_by(f"{RECORD_COMMAND} --devices cpu --pipelines lesson {STREAM}") + "."))
    return " ".join(said)


def chunks_text(path=fr.RESULTS_FILE) -> str:
    """The newest run's chunk shapes and chunk cache: each layout's rate read alone."""
    from gpulesson.experiments.feeding.measure import GROUP

    found = [run for run in fr.RECORDS.runs_in(path).values()
             if any(r.get("group") == GROUP for r in run)]
    if not found:
        return ("The chunk shapes and the chunk cache have not been recorded yet "
                f"{recorded_by(f'{RECORD_COMMAND} --chunks', 'them')}.")
    rows = [r for r in found[-1] if r.get("group") == GROUP]
    head = ["file layout", "images/s read alone: median (range)"]
    return (f"On the {parts.machine(rows)} (run {rows[0]['run_id']}), the generator read alone, "
            f"a window of {rows[0]['window']} blocks:\n\n" + markdown_table(head, [
                [r["layout"], _rate_cell(r)] for r in rows]))


def substitutions(path=fr.RESULTS_FILE) -> dict[str, str]:
    """The episode's values (``ref_feed_*``); episode 5's results file beside ``path`` gives
    the run this page sets beside its own."""
    from gpulesson.experiments.cnn.records import RESULTS_FILE as CNN_FILE
    from gpulesson.experiments.feeding.figures import alt_texts

    path = Path(path)
    records = fr.reference_run(path)
    names = hardware(records)
    provenance = (" ".join(f"{line}." for line in run_lines(records))
                  + " The records are in `results/feeding.jsonl`.")
    return {
        "ref_feed_when": provenance if records else "No reference run has been recorded yet.",
        # The data every CNN number of the page was measured on, named where they are shown.
        "ref_feed_data": data_label(records) if records else LABELS[fr.DATA],
        "ref_feed_goal_gpu": (f"the reference run's GPU ({names['GPU']})" if "GPU" in names
                              else "a data-centre GPU (none is recorded in the reference run "
                                   "yet)"),
        "ref_feed_peaks": gpu_peaks_text(records),
        "ref_feed_gpu": names.get("GPU", NOT_RECORDED),
        "ref_feed_table": table(records),
        "ref_feed_findings": findings(records, path.with_name(CNN_FILE.name)),
        "ref_feed_order": reordered_note(
            [r for r in records if r.get("pipeline") in fr.HDF5_PIPELINES and r.get("mode") == "train"],
            "the batches of the `lesson` pipelines"),
        "ref_feed_reading": reading(records),
        "ref_feed_stream": stream_goals(records, path),
        "ref_feed_chunks": chunks_text(path),
        **dict(zip(ALT_KEYS, alt_texts(records) if records else (NO_FIGURE,), strict=True)),
    }
